/* ledger.c: store -> spool -> PostgreSQL (see ledger.h for the promises).
 *
 * Change detection is by content: each row is rendered as canonical JSON (sorted keys),
 * and a 64-bit FNV-1a digest of the last spooled version is kept per (kind, key) in
 * ledger_sent. A pass re-derives rows from the store, but only rows whose digest changed
 * reach the spool, so a quiet node sends nothing. Jobs that ended more than a window ago
 * are settled: their totals, allocations and windows are not recomputed (their findings
 * still are, since `goodput diagnose` may write them later). */
#include "fleet/ledger.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/accounting/job_summary.h"
#include "fleet/ledger_pg.h"
#include "sim/scenario.h" /* gp_parse_duration_ns */

/* Running sums of a job's windows: the job row of a running job is their sum. */
typedef struct acc {
    double alloc, buckets[GP_B__COUNT], known_alloc, known_prod, busy, energy_kwh;
    int busy_known, energy_known;
    gp_job_kind kind;
} acc;

typedef struct job_state {
    char id[GP_JOB_ID_MAX];
    acc closed;              /* sums of the closed windows */
    int64_t windows_done_ns; /* windows ending at or before this are final and spooled */
    int settled;
    int exact_sent; /* the ended job's exact row is spooled */
    char gpu_model[64];
    int seen; /* in the current pass */
} job_state;

struct gp_ledger {
    gp_ledger_opts o;
    char host[128], cluster[128], partition[128];
    int has_partition;
    gp_store *s;
    sqlite3 *db;
    sqlite3_stmt *get_digest, *put_spool, *put_digest;
    PGconn *pg;
    int64_t last_try_ns;
    int64_t last_collect_ns; /* source time of the last collect pass (agent hook) */
    job_state *jobs;
    size_t n_jobs, cap_jobs;
    int full; /* the current pass hit the spool bound */
    gp_ledger_stats st;
};

static int64_t mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen) {
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK) return 0;
    snprintf(err, errlen, "ledger spool: %s (is the store older than schema version 2?)",
             sqlite3_errmsg(db));
    return -1;
}

int gp_ledger_open(const gp_ledger_opts *o, gp_store *s, gp_ledger **out, char *err,
                   size_t errlen) {
    *out = NULL;
    if (!o || !o->url || !*o->url) {
        snprintf(err, errlen, "ledger: a PostgreSQL URL is required (postgresql://HOST/DB)");
        return -1;
    }
    gp_ledger *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "ledger: out of memory");
        return -1;
    }
    l->o = *o;
    const char *w = getenv("GOODPUT_LEDGER_WINDOW");
    if (!l->o.window_ns && w && *w &&
        (gp_parse_duration_ns(w, &l->o.window_ns) != 0 || l->o.window_ns <= 0)) {
        snprintf(err, errlen, "GOODPUT_LEDGER_WINDOW='%s': expected a duration like 15m or 1h", w);
        free(l);
        return -1;
    }
    if (!l->o.window_ns) l->o.window_ns = 3600LL * 1000000000LL;
    if (!l->o.spool_max_rows) l->o.spool_max_rows = 200000;
    if (!l->o.batch_rows) l->o.batch_rows = 500;
    if (!l->o.retry_ns) l->o.retry_ns = 5000000000LL;
    if (!l->o.interval_ns) l->o.interval_ns = 300000000000LL;
    if (o->host && *o->host)
        snprintf(l->host, sizeof l->host, "%s", o->host);
    else if (gethostname(l->host, sizeof l->host - 1) != 0)
        snprintf(l->host, sizeof l->host, "localhost");
    const char *c = o->cluster ? o->cluster : getenv("GOODPUT_CLUSTER");
    snprintf(l->cluster, sizeof l->cluster, "%s", c && *c ? c : "default");
    const char *p = o->partition ? o->partition : getenv("GOODPUT_PARTITION");
    if (p && *p) {
        snprintf(l->partition, sizeof l->partition, "%s", p);
        l->has_partition = 1;
    }
    l->s = s;
    l->db = gp_store_db(s);
    if (prep(l->db, "SELECT digest FROM ledger_sent WHERE kind = ?1 AND key = ?2", &l->get_digest,
             err, errlen) != 0 ||
        prep(l->db, "INSERT OR REPLACE INTO ledger_spool (kind, key, payload) VALUES (?1, ?2, ?3)",
             &l->put_spool, err, errlen) != 0 ||
        prep(l->db, "INSERT OR REPLACE INTO ledger_sent (kind, key, digest) VALUES (?1, ?2, ?3)",
             &l->put_digest, err, errlen) != 0) {
        gp_ledger_close(l);
        return -1;
    }
    *out = l;
    return 0;
}

void gp_ledger_close(gp_ledger *l) {
    if (!l) return;
    sqlite3_finalize(l->get_digest);
    sqlite3_finalize(l->put_spool);
    sqlite3_finalize(l->put_digest);
    if (l->pg) PQfinish(l->pg);
    free(l->jobs);
    free(l);
}

const gp_ledger_stats *gp_ledger_get_stats(const gp_ledger *l) {
    return &l->st;
}

static size_t spool_count(gp_ledger *l) {
    sqlite3_stmt *st;
    size_t n = 0;
    if (sqlite3_prepare_v2(l->db, "SELECT count(*) FROM ledger_spool", -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW) n = (size_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* 0 spooled or unchanged, 1 not spooled (spool full), < 0 error. Steals payload. */
static int spool_put(gp_ledger *l, const char *kind, const char *key, json_t *payload) {
    char *text = json_dumps(payload, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(payload);
    if (!text) return -1;
    char digest[24];
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)fnv1a(text));
    int rc = 0;
    sqlite3_bind_text(l->get_digest, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(l->get_digest, 2, key, -1, SQLITE_STATIC);
    int same = sqlite3_step(l->get_digest) == SQLITE_ROW &&
               strcmp((const char *)sqlite3_column_text(l->get_digest, 0), digest) == 0;
    sqlite3_reset(l->get_digest);
    if (same) goto out;
    if (l->st.spool_rows >= l->o.spool_max_rows) {
        l->st.spool_full++;
        l->full = 1;
        rc = 1;
        goto out;
    }
    sqlite3_bind_text(l->put_spool, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(l->put_spool, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(l->put_spool, 3, text, -1, SQLITE_STATIC);
    sqlite3_bind_text(l->put_digest, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(l->put_digest, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(l->put_digest, 3, digest, -1, SQLITE_STATIC);
    if (sqlite3_step(l->put_spool) != SQLITE_DONE || sqlite3_step(l->put_digest) != SQLITE_DONE)
        rc = -1;
    sqlite3_reset(l->put_spool);
    sqlite3_reset(l->put_digest);
    if (rc == 0) {
        l->st.collected++;
        l->st.spool_rows++; /* an upper bound until the pass recounts */
    }
out:
    free(text);
    return rc;
}

static void set_last_error(gp_ledger *l, const char *m) {
    size_t n = strlen(m);
    if (n >= sizeof l->st.last_error) n = sizeof l->st.last_error - 1;
    memcpy(l->st.last_error, m, n);
    l->st.last_error[n] = 0;
}

static json_t *ns_or_null(int64_t ns) {
    return ns >= 0 ? json_integer(ns) : json_null();
}
static json_t *num_or_null(double v) {
    return v >= 0 ? json_real(v) : json_null();
}
static json_t *str_or_null(const char *s) {
    return s && *s ? json_string(s) : json_null();
}

static void put_common(gp_ledger *l, json_t *o, const char *job_id) {
    json_object_set_new(o, "host", json_string(l->host));
    json_object_set_new(o, "job_id", json_string(job_id));
}

static void put_goodput(json_t *o, const gp_job_summary *js) {
    json_object_set_new(o, "allocated_gpu_s", json_real(js->gp.allocated_gpu_s));
    json_object_set_new(o, "goodput", num_or_null(js->gp.goodput));
    for (int b = 0; b < GP_B__COUNT; b++) {
        char name[64];
        snprintf(name, sizeof name, "%s_gpu_s", gp_bucket_name((gp_bucket)b));
        json_object_set_new(o, name, json_real(js->gp.bucket_gpu_s[b]));
    }
    json_object_set_new(o, "busy_gpu_s", num_or_null(js->gp.busy_gpu_s));
    json_object_set_new(o, "n_gpus", json_integer(js->n_gpus));
}

static job_state *job_state_get(gp_ledger *l, const char *id) {
    for (size_t i = 0; i < l->n_jobs; i++)
        if (strcmp(l->jobs[i].id, id) == 0) return &l->jobs[i];
    if (l->n_jobs == l->cap_jobs) {
        size_t cap = l->cap_jobs ? l->cap_jobs * 2 : 64;
        job_state *n = realloc(l->jobs, cap * sizeof *n);
        if (!n) return NULL;
        l->jobs = n;
        l->cap_jobs = cap;
    }
    job_state *j = &l->jobs[l->n_jobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    j->windows_done_ns = INT64_MIN;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(l->db,
                           "SELECT coalesce(nullif(d.model, ''), d.name) FROM allocations a "
                           "JOIN devices d ON d.uuid = a.uuid WHERE a.job_id = ?1 "
                           "ORDER BY a.from_ns LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(j->gpu_model, sizeof j->gpu_model, "%s",
                     (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    return j;
}

static int collect_findings(gp_ledger *l, const char *job_id) {
    gp_finding *f = NULL;
    size_t n = 0;
    if (gp_store_list_findings(l->s, job_id, &f, &n) != 0) return -1;
    json_t *o = json_object(), *arr = json_array();
    put_common(l, o, job_id);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_object(), *ev = json_array();
        json_object_set_new(x, "class", json_string(gp_finding_class_name(f[i].cls)));
        json_object_set_new(x, "scope", json_string(gp_scope_name(f[i].scope)));
        json_object_set_new(x, "scope_id", str_or_null(f[i].scope_id));
        json_object_set_new(x, "t0_ns", ns_or_null(f[i].t0_ns));
        json_object_set_new(x, "t1_ns", ns_or_null(f[i].t1_ns));
        json_object_set_new(x, "wasted_gpu_s", num_or_null(f[i].wasted_gpu_s));
        json_object_set_new(x, "wasted_cost", num_or_null(f[i].wasted_cost));
        json_object_set_new(x, "confidence", json_real(f[i].confidence));
        json_object_set_new(x, "summary", json_string(f[i].summary));
        json_object_set_new(x, "recommendation", json_string(f[i].recommendation));
        for (int e = 0; e < f[i].n_evidence && e < GP_EVIDENCE_MAX; e++) {
            const gp_evidence *v = &f[i].evidence[e];
            json_array_append_new(ev, json_pack("{s:s, s:f, s:s, s:f, s:s}", "metric", v->metric,
                                                "value", v->value, "op", v->op, "threshold",
                                                v->threshold, "source", v->source));
        }
        json_object_set_new(x, "evidence", ev);
        json_array_append_new(arr, x);
    }
    free(f);
    json_object_set_new(o, "findings", arr);
    /* A job without findings sends nothing until it has some. */
    if (n == 0) {
        json_decref(o);
        return 0;
    }
    return spool_put(l, "findings", job_id, o) < 0 ? -1 : 0;
}

static void acc_add(acc *a, const gp_job_summary *w) {
    a->alloc += w->gp.allocated_gpu_s;
    for (int b = 0; b < GP_B__COUNT; b++)
        a->buckets[b] += w->gp.bucket_gpu_s[b];
    if (w->gp.goodput >= 0) {
        a->known_alloc += w->gp.allocated_gpu_s;
        a->known_prod += w->gp.bucket_gpu_s[GP_B_PRODUCTIVE];
    }
    if (w->gp.busy_gpu_s >= 0) a->busy += w->gp.busy_gpu_s, a->busy_known = 1;
    if (w->energy_kwh >= 0) a->energy_kwh += w->energy_kwh, a->energy_known = 1;
    if (w->gp.kind != GP_JK_UNKNOWN) a->kind = w->gp.kind;
}

/* The job row: exact (a whole-history summary, as `goodput report` computes it) when
 * the job has ended or the ledger drains; else the sum of its windows, which costs one
 * window's data per pass instead of the whole history. */
static json_t *job_row(gp_ledger *l, const gp_job *job, const job_state *js,
                       const gp_job_summary *sum, const acc *a, int n_gpus) {
    json_t *o = json_object();
    put_common(l, o, job->id);
    json_object_set_new(o, "cluster", json_string(l->cluster));
    json_object_set_new(o, "partition", l->has_partition ? json_string(l->partition) : json_null());
    json_object_set_new(o, "name", str_or_null(job->name));
    json_object_set_new(o, "user_name", str_or_null(job->user));
    json_object_set_new(o, "origin", json_string(gp_origin_name(job->origin)));
    json_object_set_new(o, "gpu_model", str_or_null(js->gpu_model));
    json_object_set_new(o, "submitted_ns", ns_or_null(job->submitted_ns));
    json_object_set_new(o, "allocated_ns", ns_or_null(job->allocated_ns));
    json_object_set_new(o, "ready_ns", ns_or_null(job->ready_ns));
    json_object_set_new(o, "ended_ns", ns_or_null(job->ended_ns));
    json_object_set_new(o, "exit_state", str_or_null(job->exit_state));
    json_object_set_new(o, "exit_code",
                        job->exit_code >= 0 ? json_integer(job->exit_code) : json_null());
    if (sum) {
        json_object_set_new(o, "kind", json_string(gp_job_kind_name(sum->gp.kind)));
        json_object_set_new(o, "queue_wait_s", num_or_null(sum->queue_wait_s));
        json_object_set_new(o, "energy_kwh", num_or_null(sum->energy_kwh));
        put_goodput(o, sum);
        return o;
    }
    json_object_set_new(o, "kind", json_string(gp_job_kind_name(a->kind)));
    json_object_set_new(o, "queue_wait_s",
                        job->submitted_ns >= 0 && job->allocated_ns >= job->submitted_ns
                            ? json_real((double)(job->allocated_ns - job->submitted_ns) / 1e9)
                            : json_null());
    json_object_set_new(o, "energy_kwh", a->energy_known ? json_real(a->energy_kwh) : json_null());
    json_object_set_new(o, "allocated_gpu_s", json_real(a->alloc));
    json_object_set_new(
        o, "goodput", a->known_alloc > 0 ? json_real(a->known_prod / a->known_alloc) : json_null());
    for (int b = 0; b < GP_B__COUNT; b++) {
        char name[64];
        snprintf(name, sizeof name, "%s_gpu_s", gp_bucket_name((gp_bucket)b));
        json_object_set_new(o, name, json_real(a->buckets[b]));
    }
    json_object_set_new(o, "busy_gpu_s", a->busy_known ? json_real(a->busy) : json_null());
    json_object_set_new(o, "n_gpus", json_integer(n_gpus));
    return o;
}

static int collect_job(gp_ledger *l, const gp_job *job, int64_t now_ns, int exact, char *err,
                       size_t errlen) {
    job_state *js = job_state_get(l, job->id);
    if (!js) return -1;
    js->seen = 1;
    if (collect_findings(l, job->id) != 0) goto store_fail;
    if (js->settled) return 0;
    /* Retention deleted its events (a day after it ended, store.h): its rows went out
     * before, and computing its windows now would read what is left. Settled as it is. */
    int64_t pruned_before;
    if (gp_store_events_pruned(l->s, job->id, &pruned_before) == 1) {
        js->settled = 1;
        return 0;
    }
    int full0 = l->full;
    l->full = 0;

    gp_alloc *al = NULL;
    size_t na = 0;
    if (gp_store_job_allocs(l->s, job->id, &al, &na) != 0) goto store_fail;
    int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
    int n_gpus = 0;
    for (size_t i = 0; i < na; i++) {
        json_t *a = json_object();
        put_common(l, a, job->id);
        json_object_set_new(a, "uuid", json_string(al[i].uuid));
        json_object_set_new(a, "from_ns", json_integer(al[i].from_ns));
        json_object_set_new(a, "to_ns", ns_or_null(al[i].to_ns));
        json_object_set_new(a, "gpu_model", str_or_null(js->gpu_model));
        char key[256];
        snprintf(key, sizeof key, "%s|%s|%lld", job->id, al[i].uuid, (long long)al[i].from_ns);
        if (spool_put(l, "alloc", key, a) < 0) {
            free(al);
            goto store_fail;
        }
        if (al[i].from_ns < first_ns) first_ns = al[i].from_ns;
        int64_t to = al[i].to_ns >= 0 ? al[i].to_ns : now_ns;
        if (to > last_ns) last_ns = to;
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            dup |= strcmp(al[k].uuid, al[i].uuid) == 0;
        n_gpus += !dup;
    }
    free(al);

    /* Windows [ws, ws + W) from the first allocation to now (or the last release). The
     * closed ones are final: computed once, their sums kept in js->closed. */
    const int64_t W = l->o.window_ns;
    acc run = js->closed;
    if (na > 0 && last_ns > first_ns) {
        int64_t ws = first_ns - ((first_ns % W) + W) % W;
        if (js->windows_done_ns > ws) ws = js->windows_done_ns;
        int64_t end = last_ns < now_ns ? last_ns : now_ns;
        for (; ws < end; ws += W) {
            gp_job_summary w;
            gp_summary_opts wo = {.t0_ns = ws, .t1_ns = ws + W < end ? ws + W : end};
            if (gp_job_summary_compute(l->s, job->id, &wo, &w, err, errlen) != 0) return -1;
            int closed = ws + W <= now_ns;
            int spooled = 0;
            if (w.gp.allocated_gpu_s > 0) {
                json_t *x = json_object();
                put_common(l, x, job->id);
                json_object_set_new(x, "window_start_ns", json_integer(ws));
                json_object_set_new(x, "window_end_ns", json_integer(ws + W));
                json_object_set_new(x, "cluster", json_string(l->cluster));
                json_object_set_new(x, "partition",
                                    l->has_partition ? json_string(l->partition) : json_null());
                json_object_set_new(x, "user_name", str_or_null(job->user));
                json_object_set_new(x, "gpu_model", str_or_null(js->gpu_model));
                put_goodput(x, &w);
                char key[128];
                snprintf(key, sizeof key, "%s|%lld", job->id, (long long)ws);
                spooled = spool_put(l, "window", key, x);
                if (spooled < 0) goto store_fail;
                acc_add(&run, &w);
            }
            if (closed && !l->full) {
                js->windows_done_ns = ws + W;
                js->closed = run;
            }
        }
    }

    /* An ended job's exact row is computed once (and again when the ledger drains). */
    int ended = job->ended_ns >= 0 && job->ended_ns <= now_ns;
    if (exact || !ended || !js->exact_sent) {
        gp_job_summary sum;
        if (exact || ended) {
            gp_summary_opts so = {0};
            if (gp_job_summary_compute(l->s, job->id, &so, &sum, err, errlen) != 0) return -1;
        }
        int r = spool_put(l, "job", job->id,
                          job_row(l, job, js, exact || ended ? &sum : NULL, &run, n_gpus));
        if (r < 0) goto store_fail;
        if (ended && r == 0) js->exact_sent = 1;
    }
    if (!l->full && ended && job->ended_ns + W <= now_ns && js->windows_done_ns >= job->ended_ns)
        js->settled = 1;
    l->full |= full0;
    return 0;
store_fail:
    snprintf(err, errlen, "ledger spool: %s", sqlite3_errmsg(l->db));
    return -1;
}

static int collect(gp_ledger *l, int64_t now_ns, int exact, char *err, size_t errlen) {
    if (now_ns < 0) {
        int64_t t0 = 0, t1 = 0;
        if (gp_store_time_span(l->s, &t0, &t1) != 0) return 0;
        now_ns = t1;
    }
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(l->s, &jobs, &nj) != 0) {
        snprintf(err, errlen, "ledger: listing jobs: %s", gp_store_errmsg(l->s));
        return -1;
    }
    gp_store_begin(l->s);
    l->st.spool_rows = spool_count(l);
    l->full = 0;
    int rc = 0;
    for (size_t i = 0; i < nj && rc == 0; i++)
        rc = collect_job(l, &jobs[i], now_ns, exact, err, errlen);
    gp_store_commit(l->s);
    l->st.spool_rows = spool_count(l);
    free(jobs);
    return rc;
}

int gp_ledger_collect(gp_ledger *l, int64_t now_ns, char *err, size_t errlen) {
    return collect(l, now_ns, 0, err, errlen);
}

static void drop_conn(gp_ledger *l, const char *why) {
    if (l->pg) PQfinish(l->pg);
    l->pg = NULL;
    if (l->st.connected)
        fprintf(stderr, "goodput agent: ledger %s; spooling locally until it returns\n", why);
    l->st.connected = 0;
    l->st.failures++;
    set_last_error(l, why);
    l->last_try_ns = mono_now();
}

long gp_ledger_push(gp_ledger *l, int force, char *err, size_t errlen) {
    if (!l->pg) {
        int64_t now = mono_now();
        if (!force && l->last_try_ns && now - l->last_try_ns < l->o.retry_ns) {
            snprintf(err, errlen, "ledger: PostgreSQL unreachable; %zu rows spooled",
                     l->st.spool_rows);
            return -1;
        }
        l->last_try_ns = now;
        l->pg = gp_ledger_pg_connect(l->o.url, err, errlen);
        if (!l->pg) {
            l->st.failures++;
            set_last_error(l, err);
            return -1;
        }
        if (l->st.failures)
            fprintf(stderr, "goodput agent: ledger reconnected; catching up %zu spooled rows\n",
                    spool_count(l));
        l->st.connected = 1;
    }
    sqlite3_stmt *sel = NULL, *del = NULL;
    if (sqlite3_prepare_v2(l->db,
                           "SELECT seq, kind, payload FROM ledger_spool ORDER BY seq LIMIT ?1", -1,
                           &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(l->db, "DELETE FROM ledger_spool WHERE seq <= ?1", -1, &del, NULL) !=
            SQLITE_OK) {
        snprintf(err, errlen, "ledger spool: %s", sqlite3_errmsg(l->db));
        sqlite3_finalize(sel);
        return -1;
    }
    long rc = 0;
    gp_ledger_row *rows = calloc((size_t)l->o.batch_rows, sizeof *rows);
    char **texts = calloc((size_t)l->o.batch_rows * 2, sizeof *texts);
    int64_t t0 = mono_now();
    for (;;) {
        size_t n = 0;
        int64_t max_seq = 0;
        sqlite3_bind_int(sel, 1, l->o.batch_rows);
        while (sqlite3_step(sel) == SQLITE_ROW && n < (size_t)l->o.batch_rows) {
            max_seq = sqlite3_column_int64(sel, 0);
            texts[2 * n] = strdup((const char *)sqlite3_column_text(sel, 1));
            texts[2 * n + 1] = strdup((const char *)sqlite3_column_text(sel, 2));
            rows[n].kind = texts[2 * n];
            rows[n].payload = texts[2 * n + 1];
            n++;
        }
        sqlite3_reset(sel);
        int ok = n == 0 || gp_ledger_pg_apply(l->pg, rows, n, err, errlen) == 0;
        for (size_t i = 0; i < 2 * n; i++)
            free(texts[i]);
        if (!ok) {
            char why[300];
            snprintf(why, sizeof why, "lost PostgreSQL (%s)", err);
            drop_conn(l, why);
            rc = -1;
            break;
        }
        if (n == 0) break;
        /* Only now, with the batch committed in PostgreSQL, leave the spool. */
        sqlite3_bind_int64(del, 1, max_seq);
        sqlite3_step(del);
        sqlite3_reset(del);
        l->st.sent += n;
        l->st.batches++;
        if (mono_now() - t0 > 1000000000LL) break; /* keep the agent loop responsive */
    }
    free(rows);
    free(texts);
    sqlite3_finalize(sel);
    sqlite3_finalize(del);
    l->st.spool_rows = spool_count(l);
    return rc < 0 ? rc : (long)l->st.spool_rows;
}

int gp_ledger_drain(gp_ledger *l, int64_t timeout_ns, char *err, size_t errlen) {
    int64_t t0 = mono_now();
    if (collect(l, -1, 1, err, errlen) != 0) return -1;
    for (;;) {
        long left = gp_ledger_push(l, 1, err, errlen);
        if (left == 0) {
            /* Rows the spool bound held back can be spooled now. */
            if (l->full) {
                if (collect(l, -1, 1, err, errlen) != 0) return -1;
                continue;
            }
            return 0;
        }
        if (mono_now() - t0 >= timeout_ns) return -1;
        if (left < 0) {
            struct timespec ts = {0, 500000000L};
            nanosleep(&ts, NULL);
        }
    }
}

static void ledger_hook(gp_agent *a, void *ctx) {
    gp_ledger *l = ctx;
    char err[512];
    int64_t now = gp_agent_now_ns(a);
    if (l->last_collect_ns && now >= l->last_collect_ns &&
        now - l->last_collect_ns < l->o.interval_ns) {
        if (l->st.spool_rows > 0) gp_ledger_push(l, 0, err, sizeof err);
        return;
    }
    l->last_collect_ns = now;
    if (gp_ledger_collect(l, now, err, sizeof err) != 0) set_last_error(l, err);
    gp_ledger_push(l, 0, err, sizeof err);
}

void gp_ledger_attach(gp_ledger *l, gp_agent *a) {
    gp_agent_set_hook(a, ledger_hook, l, 2000000000LL);
}
