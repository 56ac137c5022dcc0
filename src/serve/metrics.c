/* metrics.c: GET /metrics in the Prometheus text format (0.0.4).
 *
 * Names carry units and counters end in _total (promtool check metrics passes). Labels stay
 * low in cardinality: devices by uuid and index, jobs by job_id only, with everything else
 * about a job (name, user, origin, kind, unit) in goodput_job_info. The job label is
 * `job_id`, not `job`, which Prometheus reserves for the scrape job.
 *
 * Per-job GPU-seconds by bucket are exposed as counters: they only grow while a job runs,
 * except when the accounting relabels time after the fact (a restart turns kept steps into
 * wasted_progress), which Prometheus reads as a counter reset on that one series.
 *
 * Cost: one indexed query per device (its last sample) and one job summary per running job
 * per scrape, incremental (only rows stored since the last scrape are read); ended jobs are
 * one indexed lookup each in the store's summary table (engine/accounting/summary_table.h),
 * their rows written once by the agent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine/accounting/acct_prefix.h"
#include "engine/accounting/cost.h"
#include "serve/serve_int.h"
#include "util/cpu_clock.h"
#include "engine/results/job_results.h"

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Ended jobs: see ended_summary below. A running job keeps an incremental accounting
 * state (engine/accounting/job_summary.h), so a summary reads only the samples and events
 * stored since the previous one and labels in memory only the time after the job's frozen
 * past (a training job's; others relabel their history), so a refresh costs about the
 * same at any age (bench/RESULTS.md, "serve"). The result is still reused for ten times
 * what it cost (at most 60 s) when that is long: a first summary, or a job whose past
 * cannot freeze. */
long long srv_job_event_count(gp_serve *s, const char *job_id) {
    sqlite3_stmt *st;
    long long n = 0;
    if (sqlite3_prepare_v2(gp_store_db(s->store), "SELECT count(*) FROM events WHERE job_id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

gp_job_acct *srv_job_acct(gp_serve *s, const gp_job *j) {
    if (j->ended_ns > 0) return NULL;
    for (int i = 0; i < s->n_big; i++)
        if (strcmp(s->big[i], j->id) == 0) return NULL;
    int slot = -1, lru = 0;
    for (int i = 0; i < SRV_MAX_ACCTS; i++) {
        if (s->accts[i].a && strcmp(s->accts[i].id, j->id) == 0) {
            s->accts[i].used = ++s->acct_clock;
            return s->accts[i].a;
        }
        if (!s->accts[i].a && slot < 0) slot = i;
        if (s->accts[i].used < s->accts[lru].used) lru = i;
    }
    if (slot < 0) {
        slot = lru;
        gp_job_acct_free(s->accts[slot].a);
        s->accts[slot].a = NULL;
    }
    /* The agent's saved prefix of the job, when there is one (engine/accounting/
     * acct_prefix.h): the first update then folds only the rows after it. */
    gp_job_acct *a = gp_acct_prefix_load(s->store, j->id);
    if (!a) a = gp_job_acct_new(j->id, NULL);
    if (!a) return NULL;
    snprintf(s->accts[slot].id, sizeof s->accts[slot].id, "%s", j->id);
    s->accts[slot].a = a;
    s->accts[slot].used = ++s->acct_clock;
    return a;
}

static void acct_drop(gp_serve *s, const char *id) {
    for (int i = 0; i < SRV_MAX_ACCTS; i++)
        if (s->accts[i].a && strcmp(s->accts[i].id, id) == 0) {
            gp_job_acct_free(s->accts[i].a);
            s->accts[i].a = NULL;
            s->accts[i].used = 0;
        }
}

void srv_accts_free(gp_serve *s) {
    for (int i = 0; i < SRV_MAX_ACCTS; i++) {
        gp_job_acct_free(s->accts[i].a);
        s->accts[i].a = NULL;
    }
}

/* 1 with the job's events' count and last time when it holds no GPU (no allocation row);
 * 0 when it holds one; -1 on a store error. Index lookups only; the count (a walk of the
 * job's index entries: 86,400 for a day-long job at a step per second, on every scrape)
 * only for a job without allocations. */
static int quiet_key(gp_serve *s, const char *id, long long *n_events, long long *last_ts_ns) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s->store),
                           "SELECT held, CASE WHEN held THEN 0 ELSE"
                           " (SELECT count(*) FROM events WHERE job_id = ?1) END,"
                           " CASE WHEN held THEN 0 ELSE"
                           " (SELECT max(ts_ns) FROM events WHERE job_id = ?1) END"
                           " FROM (SELECT EXISTS(SELECT 1 FROM allocations WHERE job_id = ?1)"
                           " AS held)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        rc = sqlite3_column_int(st, 0) ? 0 : 1;
        *n_events = sqlite3_column_int64(st, 1);
        *last_ts_ns = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc;
}

static int same_job(const gp_job *a, const gp_job *b) {
    return a->submitted_ns == b->submitted_ns && a->allocated_ns == b->allocated_ns &&
           a->ready_ns == b->ready_ns && a->ended_ns == b->ended_ns &&
           strcmp(a->name, b->name) == 0 && strcmp(a->user, b->user) == 0 &&
           strcmp(a->unit_name, b->unit_name) == 0;
}

static int summary_full(gp_serve *s, const gp_job *j, gp_job_summary *out);

/* 1 when this /metrics render has spent its time on first summaries (none for the API);
 * else counts one more. */
static int cold_spent(gp_serve *s) {
    if (s->cold_until_s <= 0) return 0;
    if (s->n_cold >= SRV_COLD_MIN && mono_s() > s->cold_until_s) return 1;
    s->n_cold++;
    return 0;
}

static srv_job_cache *ended_find(gp_serve *s, const char *id, size_t *at) {
    for (size_t i = 0; i < s->n_ended; i++)
        if (strcmp(s->ended[i].id, id) == 0) {
            *at = i;
            return &s->ended[i];
        }
    return NULL;
}

/* An ended job: its stored row (one indexed lookup), else its summary computed once here
 * (the same gp_job_summary_compute as `goodput report`) and, once the job is sealed (see
 * summary_table.h), handed to the agent to store. A flood of ended jobs without rows (an
 * older store) is filled in over several /metrics renders, each spending at most
 * SRV_COLD_BUDGET_S on them (counted in goodput_jobs_deferred meanwhile). */
static int ended_summary(gp_serve *s, const gp_job *j, gp_job_summary *out) {
    if (!s->sum_reader && mono_s() >= s->sum_reader_retry_s) {
        s->sum_reader = gp_summary_reader_new(s->store);
        if (!s->results) {
            gp_summary_opts so = {0}; /* the server's summaries: every option at its default */
            s->results = gp_job_results_open(s->store, &so, NULL);
        }
        if (!s->sum_reader) s->sum_reader_retry_s = mono_s() + 5; /* the agent may add it */
    }
    size_t at = 0;
    srv_job_cache *c = ended_find(s, j->id, &at);
    if (gp_job_results_summary(s->results, j->id, out) == 1) {
        if (c) s->ended[at] = s->ended[--s->n_ended]; /* stored now: forget our copy */
        return 0;
    }
    if (s->sum_reader && gp_summary_table_get(s->sum_reader, j, out) == 1) {
        if (c) s->ended[at] = s->ended[--s->n_ended]; /* stored now: forget our copy */
        return 0;
    }
    if (c && c->sum.job.ended_ns == j->ended_ns) {
        *out = c->sum;
        out->job = *j;
        return 0;
    }
    if (cold_spent(s)) {
        s->n_deferred++;
        return -3;
    }
    int rc = summary_full(s, j, out);
    /* Sealed by the agent's clock when one feeds us (no query), else by the store's end. */
    pthread_mutex_lock(&s->mu);
    int64_t t0 = 0, t1 = s->attached && !s->detached ? s->snap.now_ns : -1;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0 && t1 < 0 && gp_store_time_span(s->store, &t0, &t1) != 0) t1 = -1;
    if (rc != 0 || !gp_summary_sealed(j, t1))
        return rc; /* just ended: its last samples may still be on their way */
    if (!c) {
        if (s->n_ended == s->cap_ended) {
            size_t cap = s->cap_ended ? s->cap_ended * 2 : 64;
            srv_job_cache *p = realloc(s->ended, cap * sizeof *p);
            if (!p) return 0;
            s->ended = p;
            s->cap_ended = cap;
        }
        c = &s->ended[s->n_ended++];
    }
    snprintf(c->id, sizeof c->id, "%s", j->id);
    c->sum = *out;
    pthread_mutex_lock(&s->mu);
    if (s->attached && !s->detached) {
        if (s->n_sumq == s->cap_sumq) {
            size_t cap = s->cap_sumq ? s->cap_sumq * 2 : 64;
            gp_job_summary *p = realloc(s->sumq, cap * sizeof *p);
            if (p) s->sumq = p, s->cap_sumq = cap;
        }
        if (s->n_sumq < s->cap_sumq) s->sumq[s->n_sumq++] = *out;
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void srv_store_summaries(gp_serve *s, gp_store *st) {
    pthread_mutex_lock(&s->mu);
    gp_job_summary *q = s->sumq;
    size_t n = s->n_sumq, cap = s->cap_sumq;
    s->sumq = NULL;
    s->n_sumq = s->cap_sumq = 0;
    pthread_mutex_unlock(&s->mu);
    if (!n) {
        free(q);
        return;
    }
    /* The server keeps its own copy of a queued summary and never computes it again, so a
     * row that fails to be written (the store held by another writer, e.g. the sealing
     * child on a loaded node) stays queued for the next pump; the first failure stops
     * this one. */
    size_t done = 0;
    if (gp_store_begin_write(st, GP_AGENT_LOCK_WAIT_MS) == 0)
        while (done < n && gp_summary_table_put(st, &q[done]) == 0)
            done++;
    if (gp_store_commit(st) != 0) done = 0; /* rolled back: every row is still to write */
    pthread_mutex_lock(&s->mu);
    s->summaries_stored += done;
    if (done < n) { /* the rest first, then what was queued meanwhile */
        memmove(q, q + done, (n - done) * sizeof *q);
        n -= done;
        if (s->n_sumq && n + s->n_sumq > cap) {
            gp_job_summary *p = realloc(q, (n + s->n_sumq) * sizeof *p);
            if (p) q = p, cap = n + s->n_sumq;
        }
        if (n + s->n_sumq <= cap) {
            if (s->n_sumq) memcpy(q + n, s->sumq, s->n_sumq * sizeof *q);
            free(s->sumq);
            s->sumq = q, s->n_sumq = n + s->n_sumq, s->cap_sumq = cap;
            q = NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(q);
}

int srv_job_summary(gp_serve *s, const gp_job *j, gp_job_summary *out) {
    if (j->ended_ns > 0) return ended_summary(s, j, out);
    long long n_ev = 0, last = 0;
    if (quiet_key(s, j->id, &n_ev, &last) != 1) return summary_full(s, j, out);
    struct srv_quiet *q = NULL;
    for (size_t i = 0; i < s->n_quiet && !q; i++)
        if (strcmp(s->quiet[i].c.id, j->id) == 0) q = &s->quiet[i];
    if (q && q->n_events == n_ev && q->last_ts_ns == last && same_job(&q->c.sum.job, j)) {
        *out = q->c.sum;
        return 0;
    }
    if (!q && cold_spent(s)) {
        s->n_deferred++; /* a flood of new jobs: summarised over the next scrapes */
        return -3;
    }
    int rc = summary_full(s, j, out);
    if (rc != 0) return rc;
    if (!q && s->n_quiet == s->cap_quiet) {
        size_t cap = s->cap_quiet ? s->cap_quiet * 2 : 64;
        struct srv_quiet *p = realloc(s->quiet, cap * sizeof *p);
        if (!p) return 0;
        s->quiet = p;
        s->cap_quiet = cap;
    }
    if (!q) q = &s->quiet[s->n_quiet++];
    snprintf(q->c.id, sizeof q->c.id, "%s", j->id);
    q->c.sum = *out;
    q->n_events = n_ev;
    q->last_ts_ns = last;
    return 0;
}

static int summary_full(gp_serve *s, const gp_job *j, gp_job_summary *out) {
    double now = mono_s();
    for (int i = 0; i < 32 && j->ended_ns <= 0; i++) { /* not a summary from before its end */
        struct srv_running_cache *r = &s->running[i];
        if (r->c.id[0] && strcmp(r->c.id, j->id) == 0 && now - r->at_s < r->ttl_s) {
            *out = r->c.sum;
            return 0;
        }
    }
    char err[256];
    gp_summary_opts o = {0};
    for (int i = 0; i < s->n_big; i++)
        if (strcmp(s->big[i], j->id) == 0) return -2;
    int have_state = 0;
    for (int i = 0; i < SRV_MAX_ACCTS && !have_state; i++)
        have_state = s->accts[i].a && strcmp(s->accts[i].id, j->id) == 0;
    /* Counted once per job, before a state exists; a state that outgrows the bound is
     * dropped after its update below. */
    if (j->ended_ns <= 0 && !have_state && srv_job_event_count(s, j->id) > SRV_ACCT_MAX_EVENTS) {
        /* Labelling time needs all of a job's events in memory; past this many, a live
         * summary would cost the agent hundreds of MiB. `goodput report` still does it on
         * request; here the job is reported as too large (goodput_jobs_unsummarised). */
        if (s->n_big < SRV_MAX_ACCTS) snprintf(s->big[s->n_big++], sizeof s->big[0], "%s", j->id);
        return -2;
    }
    gp_job_acct *a = srv_job_acct(s, j);
    if (a ? gp_job_acct_update(a, s->store, out, err, sizeof err) != 0
          : gp_job_summary_compute(s->store, j->id, &o, out, err, sizeof err) != 0)
        return -1;
    double cost = mono_s() - now;
    if (a && gp_job_acct_get_stats(a).held_events > SRV_ACCT_MAX_EVENTS) {
        /* Holds that many events (a past it could not freeze, job_summary.c "Checkpoints")
         * and grew past the bound while running: stop keeping it. */
        acct_drop(s, j->id);
        if (s->n_big < SRV_MAX_ACCTS) snprintf(s->big[s->n_big++], sizeof s->big[0], "%s", j->id);
    } else if (a) {
        /* Keep the states' memory bounded (bytes held: a training job that froze its past
         * holds ~8 bytes per old step and the events of the last minutes, a day-long job
         * at one step per second under 1 MiB). A state just built that does not fit is not
         * kept: a scrape visits every job in turn, so evicting the least recently used
         * state for it would evict the one the next job needs, and every job would be
         * rebuilt from the store on every scrape (LRU under a cyclic scan). A state already
         * held that grew past the budget evicts the least recently used others. */
        for (;;) {
            uint64_t total = 0;
            int lru = -1;
            for (int i = 0; i < SRV_MAX_ACCTS; i++) {
                if (!s->accts[i].a) continue;
                total += gp_job_acct_get_stats(s->accts[i].a).held_bytes;
                if (s->accts[i].a != a && (lru < 0 || s->accts[i].used < s->accts[lru].used))
                    lru = i;
            }
            if (total <= SRV_ACCT_BUDGET_BYTES) break;
            if (!have_state) {
                acct_drop(s, j->id);
                break;
            }
            if (lru < 0) break;
            gp_job_acct_free(s->accts[lru].a);
            s->accts[lru].a = NULL;
            s->accts[lru].used = 0;
        }
    }
    if (j->ended_ns > 0) {
        acct_drop(s, j->id); /* its state, if it ran while we watched (cached by the caller) */
    } else if (cost * 10 > 0.5) {
        int slot = -1;
        for (int i = 0; i < 32 && slot < 0; i++)
            if (strcmp(s->running[i].c.id, j->id) == 0) slot = i;
        if (slot < 0) slot = s->next_running++ % 32;
        struct srv_running_cache *r = &s->running[slot];
        snprintf(r->c.id, sizeof r->c.id, "%s", j->id);
        r->c.sum = *out;
        r->at_s = now;
        r->ttl_s = cost * 10 < 60 ? cost * 10 : 60;
    }
    return 0;
}

static void head(srv_buf *b, const char *name, const char *type, const char *help) {
    srv_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

typedef struct dev_metric {
    const char *name, *type, *help, *col;
    double scale;
} dev_metric;

/* Columns of the samples table, newest row per device. */
static const dev_metric DEV_METRICS[] = {
    {"goodput_device_gpu_utilization_ratio", "gauge",
     "Fraction of time a kernel ran (NVML utilization.gpu).", "gpu_util", 1},
    {"goodput_device_sm_active_ratio", "gauge",
     "Fraction of time SMs had a warp resident (DCGM PROF_SM_ACTIVE).", "sm_active", 1},
    {"goodput_device_tensor_active_ratio", "gauge",
     "Fraction of cycles the tensor pipe was active.", "tensor_active", 1},
    {"goodput_device_dram_active_ratio", "gauge", "Fraction of cycles device memory was busy.",
     "dram_active", 1},
    {"goodput_device_memory_used_bytes", "gauge", "Device memory in use.", "mem_used_bytes", 1},
    {"goodput_device_memory_total_bytes", "gauge", "Device memory size.", "mem_total_bytes", 1},
    {"goodput_device_power_watts", "gauge", "Power draw.", "power_w", 1},
    {"goodput_device_temperature_celsius", "gauge", "GPU temperature.", "temp_c", 1},
    {"goodput_device_sm_clock_hertz", "gauge", "SM clock.", "sm_clock_mhz", 1e6},
    {"goodput_device_energy_joules_total", "counter", "Energy counter of the device.", "energy_mj",
     1e-3},
    {"goodput_device_pcie_transmit_bytes_total", "counter", "PCIe bytes sent.", "pcie_tx_bytes", 1},
    {"goodput_device_pcie_receive_bytes_total", "counter", "PCIe bytes received.", "pcie_rx_bytes",
     1},
    {"goodput_device_nvlink_transmit_bytes_total", "counter", "NVLink bytes sent.",
     "nvlink_tx_bytes", 1},
    {"goodput_device_nvlink_receive_bytes_total", "counter", "NVLink bytes received.",
     "nvlink_rx_bytes", 1},
};
#define N_DEV_METRICS (sizeof DEV_METRICS / sizeof DEV_METRICS[0])

static void device_metrics(gp_serve *s, srv_buf *b) {
    gp_device *devs = NULL;
    size_t nd = 0;
    if (gp_store_list_devices(s->store, &devs, &nd) != 0) return;
    head(b, "goodput_device_info", "gauge", "GPU facts; value is always 1.");
    for (size_t i = 0; i < nd; i++) {
        srv_buf_printf(b, "goodput_device_info{uuid=\"");
        srv_buf_label(b, devs[i].uuid);
        srv_buf_printf(b, "\",gpu=\"%d\",name=\"", devs[i].index);
        srv_buf_label(b, devs[i].name);
        srv_buf_printf(b, "\",model=\"");
        srv_buf_label(b, devs[i].spec ? devs[i].spec->model : "unknown");
        srv_buf_printf(b, "\",host=\"");
        srv_buf_label(b, devs[i].host);
        srv_buf_printf(b, "\"} 1\n");
    }
    /* Newest sample per device: one indexed lookup each. */
    double(*vals)[N_DEV_METRICS] = calloc(nd ? nd : 1, sizeof *vals);
    unsigned char(*has)[N_DEV_METRICS] = calloc(nd ? nd : 1, sizeof *has);
    sqlite3_stmt *st = NULL;
    char sql[1024] = "SELECT ";
    for (size_t m = 0; m < N_DEV_METRICS; m++) {
        strcat(sql, DEV_METRICS[m].col);
        strcat(sql, m + 1 < N_DEV_METRICS ? "," : "");
    }
    strcat(sql, " FROM samples WHERE uuid = ? ORDER BY ts_ns DESC LIMIT 1");
    if (vals && has && sqlite3_prepare_v2(gp_store_db(s->store), sql, -1, &st, NULL) == SQLITE_OK) {
        for (size_t i = 0; i < nd; i++) {
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, devs[i].uuid, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_ROW) continue;
            for (size_t m = 0; m < N_DEV_METRICS; m++) {
                if (sqlite3_column_type(st, (int)m) == SQLITE_NULL) continue;
                vals[i][m] = sqlite3_column_double(st, (int)m) * DEV_METRICS[m].scale;
                has[i][m] = 1;
            }
        }
    }
    sqlite3_finalize(st);
    for (size_t m = 0; vals && has && m < N_DEV_METRICS; m++) {
        head(b, DEV_METRICS[m].name, DEV_METRICS[m].type, DEV_METRICS[m].help);
        for (size_t i = 0; i < nd; i++) {
            if (!has[i][m]) continue;
            srv_buf_printf(b, "%s{uuid=\"", DEV_METRICS[m].name);
            srv_buf_label(b, devs[i].uuid);
            srv_buf_printf(b, "\",gpu=\"%d\"} %.17g\n", devs[i].index, vals[i][m]);
        }
    }
    free(vals);
    free(has);
    free(devs);
}

static void job_label(srv_buf *b, const char *metric, const char *id) {
    srv_buf_printf(b, "%s{job_id=\"", metric);
    srv_buf_label(b, id);
    srv_buf_put(b, "\"", 1);
}

static void job_metrics(gp_serve *s, srv_buf *b) {
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(s->store, &jobs, &nj) != 0) return;
    gp_job_summary *sum = calloc(nj ? nj : 1, sizeof *sum);
    char *ok = calloc(nj ? nj : 1, 1);
    for (size_t i = 0; sum && ok && i < nj; i++)
        ok[i] = srv_job_summary(s, &jobs[i], &sum[i]) == 0;
    head(b, "goodput_jobs_unsummarised", "gauge",
         "Running jobs with too many events to summarise live (see goodput report).");
    srv_buf_printf(b, "goodput_jobs_unsummarised %d\n", s->n_big);
    head(b, "goodput_jobs_deferred", "gauge",
         "New GPU-less jobs and ended jobs without a stored summary whose first summary waits "
         "for a later scrape (a render spends at most 0.25 s on them).");
    srv_buf_printf(b, "goodput_jobs_deferred %d\n", s->n_deferred);
    /* What the running jobs' incremental states cost this process: each holds its frozen
     * labelled past and the minutes after it (job_summary.c "Checkpoints"), so the bytes
     * stay flat as jobs age; a state that cannot freeze shows here growing. */
    uint64_t state_bytes = 0;
    int n_states = 0, n_frozen = 0;
    for (int i = 0; i < SRV_MAX_ACCTS; i++) {
        if (!s->accts[i].a) continue;
        n_states++;
        n_frozen += gp_job_acct_frozen(s->accts[i].a) != 0;
        state_bytes += gp_job_acct_get_stats(s->accts[i].a).held_bytes;
    }
    head(b, "goodput_job_states", "gauge",
         "Running jobs whose accounting this server keeps incrementally between scrapes.");
    srv_buf_printf(b, "goodput_job_states %d\n", n_states);
    head(b, "goodput_job_states_frozen", "gauge",
         "Of those, the states holding a frozen labelled past (a refresh labels only later time).");
    srv_buf_printf(b, "goodput_job_states_frozen %d\n", n_frozen);
    head(b, "goodput_job_states_bytes", "gauge",
         "Bytes the running jobs' accounting states hold (bounded by 48 MiB together).");
    srv_buf_printf(b, "goodput_job_states_bytes %llu\n", (unsigned long long)state_bytes);
    head(b, "goodput_job_info", "gauge", "Job metadata; value is always 1. Join on job_id.");
    for (size_t i = 0; i < nj; i++) {
        srv_buf_printf(b, "goodput_job_info{job_id=\"");
        srv_buf_label(b, jobs[i].id);
        srv_buf_printf(b, "\",name=\"");
        srv_buf_label(b, jobs[i].name);
        srv_buf_printf(b, "\",user=\"");
        srv_buf_label(b, jobs[i].user);
        srv_buf_printf(b, "\",origin=\"%s\",kind=\"%s\",unit=\"", gp_origin_name(jobs[i].origin),
                       ok && ok[i] ? gp_job_kind_name(sum[i].gp.kind) : "unknown");
        srv_buf_label(b, jobs[i].unit_name);
        srv_buf_printf(b, "\",state=\"%s\"} 1\n",
                       jobs[i].ended_ns > 0   ? "ended"
                       : jobs[i].ready_ns > 0 ? "running"
                                              : "not_ready");
    }
    head(b, "goodput_job_allocated_gpu_seconds_total", "counter",
         "GPU-seconds allocated to the job.");
    for (size_t i = 0; ok && i < nj; i++) {
        if (!ok[i]) continue;
        job_label(b, "goodput_job_allocated_gpu_seconds_total", jobs[i].id);
        srv_buf_printf(b, "} %.17g\n", sum[i].gp.allocated_gpu_s);
    }
    head(b, "goodput_job_gpu_seconds_total", "counter",
         "Allocated GPU-seconds by bucket: productive (goodput) or a badput cause; buckets sum to "
         "allocated.");
    for (size_t i = 0; ok && i < nj; i++) {
        if (!ok[i]) continue;
        for (int k = 0; k < GP_B__COUNT; k++) {
            job_label(b, "goodput_job_gpu_seconds_total", jobs[i].id);
            srv_buf_printf(b, ",bucket=\"%s\"} %.17g\n", gp_bucket_name((gp_bucket)k),
                           sum[i].gp.bucket_gpu_s[k]);
        }
    }
    head(b, "goodput_job_goodput_ratio", "gauge",
         "Productive / allocated GPU-seconds (absent when unknown).");
    for (size_t i = 0; ok && i < nj; i++) {
        if (!ok[i] || sum[i].gp.goodput < 0) continue;
        job_label(b, "goodput_job_goodput_ratio", jobs[i].id);
        srv_buf_printf(b, "} %.17g\n", sum[i].gp.goodput);
    }
    head(b, "goodput_job_gpus", "gauge", "GPUs the job has held.");
    for (size_t i = 0; ok && i < nj; i++) {
        if (!ok[i]) continue;
        job_label(b, "goodput_job_gpus", jobs[i].id);
        srv_buf_printf(b, "} %d\n", sum[i].n_gpus);
    }
    head(b, "goodput_job_not_ready", "gauge",
         "1 while a job holds GPUs but has not made progress yet.");
    srv_buf nr = {0};
    for (size_t i = 0; ok && i < nj; i++) {
        if (!ok[i] || jobs[i].ended_ns > 0 || sum[i].n_gpus == 0) continue;
        int not_ready = sum[i].gp.ready_ns < 0;
        job_label(b, "goodput_job_not_ready", jobs[i].id);
        srv_buf_printf(b, "} %d\n", not_ready);
        if (not_ready) {
            job_label(&nr, "goodput_job_not_ready_seconds", jobs[i].id);
            srv_buf_printf(&nr, "} %.17g\n",
                           sum[i].gp.bucket_gpu_s[GP_B_NOT_READY] / sum[i].n_gpus);
        }
    }
    /* Each family's samples follow its own HELP and TYPE. */
    head(b, "goodput_job_not_ready_seconds", "gauge", "How long a not-ready job has held GPUs.");
    if (nr.len) srv_buf_put(b, nr.p, nr.len);
    free(nr.p);
    free(sum);
    free(ok);
    free(jobs);
}

static void finding_metrics(gp_serve *s, srv_buf *b) {
    gp_finding *f = NULL;
    size_t n = 0;
    double badput[GP_FC__COUNT] = {0}, headroom[GP_FC__COUNT] = {0};
    int count[GP_FC__COUNT] = {0};
    if (gp_store_list_findings(s->store, NULL, &f, &n) == 0) {
        for (size_t i = 0; i < n; i++) {
            if ((int)f[i].cls < 0 || f[i].cls >= GP_FC__COUNT) continue;
            count[f[i].cls]++;
            if (f[i].wasted_gpu_s > 0) badput[f[i].cls] += f[i].wasted_gpu_s;
            if (f[i].headroom_gpu_s > 0) headroom[f[i].cls] += f[i].headroom_gpu_s;
        }
    }
    free(f);
    head(b, "goodput_findings", "gauge", "Open findings by class (docs/findings.md).");
    for (int c = 0; c < GP_FC__COUNT; c++)
        if (count[c])
            srv_buf_printf(b, "goodput_findings{class=\"%s\"} %d\n", gp_finding_class_name(c),
                           count[c]);
    /* two families, never summed: badput the findings explain (bounded per job by its
     * badput buckets) and headroom a fix would recover from productive time */
    head(b, "goodput_findings_badput_gpu_seconds", "gauge",
         "Badput GPU-seconds (not_ready, data_wait, ... buckets) the open findings of a class "
         "explain.");
    for (int c = 0; c < GP_FC__COUNT; c++)
        if (count[c])
            srv_buf_printf(b, "goodput_findings_badput_gpu_seconds{class=\"%s\"} %.17g\n",
                           gp_finding_class_name(c), badput[c]);
    head(b, "goodput_findings_headroom_gpu_seconds", "gauge",
         "Productive GPU-seconds a fix of the open findings of a class would recover.");
    for (int c = 0; c < GP_FC__COUNT; c++)
        if (count[c])
            srv_buf_printf(b, "goodput_findings_headroom_gpu_seconds{class=\"%s\"} %.17g\n",
                           gp_finding_class_name(c), headroom[c]);
}

static const char *TRANSPORTS[GP_TR__COUNT] = {"unix", "udp", "http", "inproc"};

/* The agent's own cost: the whole process (sampling, ingest, store, this server), so an
 * operator sees what leaving it on costs; -1 when the kernel does not say. */
static void self_cost(double *cpu_s, double *rss_bytes, double *peak_bytes) {
    struct rusage ru;
    *cpu_s = *peak_bytes = *rss_bytes = -1;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        *cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        *peak_bytes = (double)ru.ru_maxrss * 1024.0; /* Linux: KiB */
    }
    FILE *f = fopen("/proc/self/statm", "r");
    long size, resident;
    if (f && fscanf(f, "%ld %ld", &size, &resident) == 2)
        *rss_bytes = (double)resident * (double)sysconf(_SC_PAGESIZE);
    if (f) fclose(f);
    /* The kernel updates its high-water mark lazily: never report a peak below now. */
    if (*rss_bytes > *peak_bytes && *peak_bytes >= 0) *peak_bytes = *rss_bytes;
}

static void self_metrics(srv_buf *b, const srv_snapshot *sn) {
    double cpu_s, rss, peak;
    self_cost(&cpu_s, &rss, &peak);
    if (cpu_s >= 0) {
        head(b, "goodput_agent_cpu_seconds_total", "counter",
             "User and system CPU of the agent process (sampling, ingest, store, HTTP).");
        srv_buf_printf(b, "goodput_agent_cpu_seconds_total %.6f\n", cpu_s);
        head(b, "goodput_agent_peak_resident_memory_bytes", "gauge",
             "Largest resident set size of the agent process so far.");
        srv_buf_printf(b, "goodput_agent_peak_resident_memory_bytes %.0f\n", peak);
    }
    if (rss >= 0) {
        head(b, "goodput_agent_resident_memory_bytes", "gauge",
             "Resident set size of the agent process.");
        srv_buf_printf(b, "goodput_agent_resident_memory_bytes %.0f\n", rss);
    }
    /* The agent's child processes, ended and reaped (the sealing of ended jobs' results,
     * cli/agent_results.c; scheduler commands): getrusage of the agent leaves them out,
     * so they are said apart rather than hidden. */
    struct rusage ch;
    if (getrusage(RUSAGE_CHILDREN, &ch) == 0) {
        head(b, "goodput_agent_children_cpu_seconds_total", "counter",
             "User and system CPU of the agent's ended child processes (sealing ended jobs' "
             "results at lower priority, scheduler commands); not in "
             "goodput_agent_cpu_seconds_total.");
        srv_buf_printf(b, "goodput_agent_children_cpu_seconds_total %.6f\n",
                       (double)ch.ru_utime.tv_sec + (double)ch.ru_utime.tv_usec / 1e6 +
                           (double)ch.ru_stime.tv_sec + (double)ch.ru_stime.tv_usec / 1e6);
        head(b, "goodput_agent_children_peak_resident_memory_bytes", "gauge",
             "Largest resident set size of one of the agent's ended child processes; not in "
             "goodput_agent_peak_resident_memory_bytes.");
        srv_buf_printf(b, "goodput_agent_children_peak_resident_memory_bytes %.0f\n",
                       (double)ch.ru_maxrss * 1024.0);
    }
    static const double bounds[] = GP_STORE_COMMIT_BOUNDS_S;
    head(b, "goodput_agent_store_commit_seconds", "histogram",
         "Wall time of the agent's store commits (one per flush; rollups included).");
    uint64_t cum = 0;
    for (int i = 0; i < GP_STORE_COMMIT_BUCKETS; i++) {
        cum += sn->commits.count[i];
        if (i < GP_STORE_COMMIT_BUCKETS - 1)
            srv_buf_printf(b, "goodput_agent_store_commit_seconds_bucket{le=\"%g\"} %llu\n",
                           bounds[i], (unsigned long long)cum);
        else
            srv_buf_printf(b, "goodput_agent_store_commit_seconds_bucket{le=\"+Inf\"} %llu\n",
                           (unsigned long long)cum);
    }
    srv_buf_printf(b, "goodput_agent_store_commit_seconds_sum %.9f\n", sn->commits.sum_s);
    srv_buf_printf(b, "goodput_agent_store_commit_seconds_count %llu\n",
                   (unsigned long long)sn->commits.n);
    head(b, "goodput_agent_store_checkpoints_total", "counter",
         "WAL checkpoints, run on the agent's checkpoint thread (not in the commits).");
    srv_buf_printf(b, "goodput_agent_store_checkpoints_total %llu\n",
                   (unsigned long long)sn->ckpt.passes);
    head(b, "goodput_agent_store_checkpoint_seconds_total", "counter",
         "Wall time of those checkpoints (copying the WAL back, its syncs).");
    srv_buf_printf(b, "goodput_agent_store_checkpoint_seconds_total %.9f\n", sn->ckpt.wall_s);
}

static void agent_metrics(gp_serve *s, srv_buf *b) {
    pthread_mutex_lock(&s->mu);
    srv_snapshot sn = s->snap;
    uint64_t queued = s->queued_lines, full = s->queue_full, stored = s->summaries_stored;
    pthread_mutex_unlock(&s->mu);
    head(b, "goodput_agent_up", "gauge",
         "1 when an agent feeds this server, 0 when it serves a stored database.");
    srv_buf_printf(b, "goodput_agent_up %d\n", sn.have_agent);
    if (sn.have_agent) {
        struct {
            const char *name, *help;
            double v;
        } c[] = {
            {"goodput_agent_ticks_total", "Sampling ticks.", (double)sn.agent.ticks},
            {"goodput_agent_samples_total", "Device samples stored.", (double)sn.agent.samples},
            {"goodput_agent_process_samples_total", "Per-process samples stored.",
             (double)sn.agent.proc_samples},
            {"goodput_agent_events_total", "Workload events stored.", (double)sn.agent.events},
            {"goodput_agent_events_duplicate_total",
             "Workload events ignored because the store already held them (retries, replays).",
             (double)sn.events_duplicate},
            {"goodput_agent_flushes_total", "Store commits.", (double)sn.agent.flushes},
            {"goodput_agent_store_errors_total", "Failed store writes.",
             (double)sn.agent.store_errors},
            {"goodput_agent_store_busy_total",
             "Times the agent found the store held by another writer and kept its samples "
             "and events queued for the next flush.",
             (double)sn.agent.store_busy},
            {"goodput_agent_collect_cpu_seconds_total",
             "CPU of the agent's sampling loop outside the telemetry source's calls: "
             "attribution, store writes, event reads, retention, waking up.",
             sn.agent.collect_cpu_s},
        };
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
            head(b, c[i].name, "counter", c[i].help);
            srv_buf_printf(b, "%s %.17g\n", c[i].name, c[i].v);
        }
        head(b, "goodput_agent_clock_seconds", "gauge",
             "The agent's clock (source time; simulated sources run their own).");
        srv_buf_printf(b, "goodput_agent_clock_seconds %.3f\n", sn.now_ns / 1e9);
        self_metrics(b, &sn);
        head(b, "goodput_ingest_datagrams_total", "counter",
             "Datagrams (or HTTP bodies) received, by transport.");
        for (int t = 0; t < GP_TR__COUNT; t++)
            srv_buf_printf(b, "goodput_ingest_datagrams_total{transport=\"%s\"} %llu\n",
                           TRANSPORTS[t], (unsigned long long)sn.ingest[t].datagrams);
        head(b, "goodput_ingest_lines_total", "counter", "Event lines by transport and result.");
        for (int t = 0; t < GP_TR__COUNT; t++) {
            const gp_ingest_stats *g = &sn.ingest[t];
            srv_buf_printf(b,
                           "goodput_ingest_lines_total{transport=\"%s\",result=\"parsed\"} %llu\n"
                           "goodput_ingest_lines_total{transport=\"%s\",result=\"rejected\"} %llu\n"
                           "goodput_ingest_lines_total{transport=\"%s\",result=\"dropped\"} %llu\n",
                           TRANSPORTS[t], (unsigned long long)g->parsed, TRANSPORTS[t],
                           (unsigned long long)g->rejected, TRANSPORTS[t],
                           (unsigned long long)g->dropped);
        }
        head(b, "goodput_ingest_jobs_overflow_total", "counter",
             "Event lines refused because they named a new job past the per-transport cap of "
             "live job ids (src/ingest/ingest.h).");
        for (int t = 0; t < GP_TR__COUNT; t++)
            srv_buf_printf(b, "goodput_ingest_jobs_overflow_total{transport=\"%s\"} %llu\n",
                           TRANSPORTS[t],
                           (unsigned long long)(sn.ingest[t].jobs_overflow +
                                                (t == GP_TR_HTTP ? s->post_jobs_overflow : 0)));
        head(b, "goodput_ingest_rejected_lines_total", "counter",
             "Rejected event lines by transport and reason (time_ahead/time_behind: a time "
             "outside the agent's allowed clock skew).");
        for (int t = 0; t < GP_TR__COUNT; t++)
            for (int r = 0; r < GP_REJ__COUNT; r++)
                srv_buf_printf(
                    b,
                    "goodput_ingest_rejected_lines_total{transport=\"%s\",reason=\"%s\"} "
                    "%llu\n",
                    TRANSPORTS[t], gp_reject_reason_name((gp_reject_reason)r),
                    (unsigned long long)sn.ingest[t].rejected_by[r]);
    }
    head(b, "goodput_job_summaries_stored_total", "counter",
         "Ended jobs' summaries the agent stored for the server (computed once per job).");
    srv_buf_printf(b, "goodput_job_summaries_stored_total %llu\n", (unsigned long long)stored);
    head(b, "goodput_http_events_queued_total", "counter",
         "Event lines accepted by POST /api/v1/events.");
    srv_buf_printf(b, "goodput_http_events_queued_total %llu\n", (unsigned long long)queued);
    head(b, "goodput_http_events_refused_total", "counter",
         "POST bodies refused because the queue was full.");
    srv_buf_printf(b, "goodput_http_events_refused_total %llu\n", (unsigned long long)full);
    head(b, "goodput_http_responses_total", "counter", "HTTP responses by status class.");
    for (int c = 1; c <= 5; c++)
        srv_buf_printf(b, "goodput_http_responses_total{code=\"%dxx\"} %llu\n", c,
                       (unsigned long long)s->requests_by_class[c]);
    head(b, "goodput_scrapes_total", "counter", "Renders of /metrics.");
    srv_buf_printf(b, "goodput_scrapes_total %llu\n", (unsigned long long)s->metrics_scrapes);
    head(b, "goodput_scrape_cpu_seconds_total", "counter",
         "Server-thread CPU spent rendering /metrics.");
    srv_buf_printf(b, "goodput_scrape_cpu_seconds_total %.9f\n", s->metrics_cpu_s_total);
    head(b, "goodput_scrape_duration_seconds", "gauge",
         "Wall time of the previous /metrics render.");
    srv_buf_printf(b, "goodput_scrape_duration_seconds %.9f\n", s->metrics_last_s);
}

/* OTLP/HTTP ingest (otlp_api.c). Every span in a decoded document is counted once as
 * received, then as accepted (queued for the store) or dropped with its reason; a body that
 * is not an ExportTraceServiceRequest has no countable spans and counts as a rejected
 * request. So received = accepted + the sum of dropped, which a dashboard can check. */
static void otlp_metrics(gp_serve *s, srv_buf *b) {
    pthread_mutex_lock(&s->mu);
    uint64_t acc = s->spans_accepted, bad_span = s->spans_rejected, full = s->spans_dropped,
             oom = s->spans_oom, bad_req = s->otlp_bad_requests,
             busy_req = s->otlp_overloaded_requests, queued = s->spans.n;
    pthread_mutex_unlock(&s->mu);
    head(b, "goodput_otlp_spans_received_total", "counter",
         "Spans in OTLP documents that decoded (POST /v1/traces).");
    srv_buf_printf(b, "goodput_otlp_spans_received_total %llu\n",
                   (unsigned long long)(acc + bad_span + full + oom));
    head(b, "goodput_otlp_spans_accepted_total", "counter", "OTLP spans queued for the store.");
    srv_buf_printf(b, "goodput_otlp_spans_accepted_total %llu\n", (unsigned long long)acc);
    head(b, "goodput_otlp_spans_dropped_total", "counter",
         "OTLP spans not stored, by reason: malformed (bad ids or times inside a good document; "
         "partial_success), queue_full (a flood: the request got 503 and the client retries), "
         "out_of_memory.");
    srv_buf_printf(b,
                   "goodput_otlp_spans_dropped_total{reason=\"malformed\"} %llu\n"
                   "goodput_otlp_spans_dropped_total{reason=\"queue_full\"} %llu\n"
                   "goodput_otlp_spans_dropped_total{reason=\"out_of_memory\"} %llu\n",
                   (unsigned long long)bad_span, (unsigned long long)full, (unsigned long long)oom);
    head(b, "goodput_otlp_requests_rejected_total", "counter",
         "POST /v1/traces refused whole, by status: 400 (not an ExportTraceServiceRequest, the "
         "reason in the body) or 503 (the span queue was full).");
    srv_buf_printf(b,
                   "goodput_otlp_requests_rejected_total{code=\"400\"} %llu\n"
                   "goodput_otlp_requests_rejected_total{code=\"503\"} %llu\n",
                   (unsigned long long)bad_req, (unsigned long long)busy_req);
    head(b, "goodput_otlp_span_queue_spans", "gauge",
         "OTLP spans waiting for the agent to store them (bounded; see SRV_MAX_SPAN_QUEUE).");
    srv_buf_printf(b, "goodput_otlp_span_queue_spans %llu\n", (unsigned long long)queued);
}

void srv_metrics(gp_serve *s, const srv_req *q, srv_resp *r) {
    (void)q;
    double c0 = gp_thread_cpu_s(), w0 = mono_s();
    r->status = 200;
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
    device_metrics(s, &r->body);
    s->n_deferred = s->n_cold = 0;
    s->cold_until_s = w0 + SRV_COLD_BUDGET_S;
    job_metrics(s, &r->body);
    s->cold_until_s = 0;
    finding_metrics(s, &r->body);
    s->metrics_scrapes++;
    agent_metrics(s, &r->body);
    otlp_metrics(s, &r->body);
    s->metrics_cpu_s_total += gp_thread_cpu_s() - c0;
    s->metrics_last_s = mono_s() - w0;
    if (r->body.oom) srv_error(r, 500, "out of memory rendering /metrics");
}
