/* test_job_summary_incremental.c: the incremental job accounting (gp_job_acct,
 * engine/accounting/job_summary.h) gives the same numbers as the full computation.
 *
 * A store is filled second by second with a mixed node (4 GPUs, one sampled half a second
 * off the others): a training job with an init phase, steps (some with explicit starts and
 * gaps), data_wait and checkpoint phases, a restart that redoes steps, a second rank, an
 * allocation added mid-run and a checkpoint left open; an inference job with SLOs and
 * failed requests; an activity-only job sharing a GPU (per-process SM shares split the
 * energy); a job whose allocation is closed after the fact (the state must reload); a late
 * event stored out of time order. At many cut points each job's long-lived incremental
 * state is updated and compared, field by field (1e-9 relative), with (1) a fresh
 * gp_job_summary_compute and (2) the reference: the previous implementation of
 * gp_job_summary_compute, copied below verbatim (it re-reads the whole history with
 * gp_store_device_samples and gp_store_job_events). Windows (gp_job_acct_window) are
 * compared with the reference over the same bounds, and gp_store_time_span with the
 * previous full-scan SQL. */
#include "testutil.h"

#include "engine/accounting/alloc_split.h"
#include "engine/accounting/job_summary.h"
#include "ingest/protocol.h"
#include "sim/scenario.h"
#include "sim/sim.h"
#include "store/store.h"

/* ---- reference: the previous job_summary.c (commit 317e344), names prefixed ref_ ---- */
static int ref_time_span(gp_store *s, int64_t *t0_ns, int64_t *t1_ns) {
    sqlite3_stmt *st;
    *t0_ns = *t1_ns = -1;
    const char *sql =
        "SELECT min(a), max(b) FROM ("
        " SELECT min(ts_ns) - 0 AS a, max(ts_ns) AS b FROM samples"
        " UNION ALL SELECT min(ts_ns), max(ts_ns) FROM events"
        " UNION ALL SELECT min(from_ns), max(COALESCE(to_ns, from_ns)) FROM allocations)";
    if (sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *t0_ns = sqlite3_column_int64(st, 0);
        *t1_ns = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return 0;
}

/* Share of a device's SM time that belongs to job_id over [t0, t1), from per-process
 * rows; < 0 when the source reported none. */
static double ref_proc_share(gp_store *s, const char *uuid, const char *job_id, int64_t t0,
                             int64_t t1) {
    sqlite3_stmt *st;
    double share = -1;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT sum(CASE WHEN job_id = ?2 THEN sm_share ELSE 0 END),"
                           " sum(sm_share) FROM proc_samples WHERE uuid = ?1 AND ts_ns >= ?3"
                           " AND ts_ns < ?4 AND sm_share IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, t0);
    sqlite3_bind_int64(st, 4, t1);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL) {
        double mine = sqlite3_column_double(st, 0), all = sqlite3_column_double(st, 1);
        if (all > 0) share = mine / all;
    }
    sqlite3_finalize(st);
    return share;
}

/* How many jobs hold this device for most of [t0, t1): for an even split of energy. */
/* Jobs holding the GPU at the instant ts (an allocation [from, to] covers it). */
static int ref_holders_at(gp_store *s, const char *uuid, int64_t ts) {
    sqlite3_stmt *st;
    int n = 1;
    sqlite3_prepare_v2(gp_store_db(s),
                       "SELECT count(DISTINCT job_id) FROM allocations WHERE uuid = ?1 AND"
                       " from_ns < ?2 AND (to_ns IS NULL OR to_ns >= ?2)",
                       -1, &st, NULL);
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, ts);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

static int ref_holders(gp_store *s, const char *uuid, int64_t t0, int64_t t1) {
    sqlite3_stmt *st;
    int n = 1;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT count(DISTINCT job_id) FROM allocations WHERE uuid = ?1 AND"
                           " from_ns < ?3 AND COALESCE(to_ns, ?3) > ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return 1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, t0);
    sqlite3_bind_int64(st, 3, t1);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n > 0 ? n : 1;
}

typedef struct {
    double sum, w;
} ref_wmean;
static void ref_wm_add(ref_wmean *m, double v, double w) {
    m->sum += v * w;
    m->w += w;
}
static double ref_wm_get(const ref_wmean *m) {
    return m->w > 0 ? m->sum / m->w : -1;
}

static int ref_cmp_act(const void *a, const void *b) {
    const gp_activity *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static int ref_summary_compute(gp_store *s, const char *job_id, const gp_summary_opts *o,
                               gp_job_summary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int found = gp_store_get_job(s, job_id, &out->job);
    if (found < 0) {
        snprintf(err, errlen, "store: %s", gp_store_errmsg(s));
        return -1;
    }
    if (found == 0) {
        snprintf(err, errlen, "job '%s' is not in the store", job_id);
        return -1;
    }
    int64_t t0 = o ? o->t0_ns : 0, t1 = o ? o->t1_ns : 0;
    if (t0 <= 0 && t1 <= 0) {
        int64_t a, b;
        ref_time_span(s, &a, &b);
        t0 = a;
        t1 = b;
    }
    gp_alloc *allocs = NULL;
    gp_event *events = NULL;
    size_t na = 0, ne = 0;
    if (gp_store_job_allocs(s, job_id, &allocs, &na) ||
        gp_store_job_events(s, job_id, 0, &events, &ne)) {
        snprintf(err, errlen, "store: %s", gp_store_errmsg(s));
        free(allocs);
        free(events);
        return -1;
    }
    const gp_job *j = &out->job;
    out->queue_wait_s = (j->submitted_ns >= 0 && j->allocated_ns >= 0)
                            ? (j->allocated_ns - j->submitted_ns) / 1e9
                            : -1;

    /* Activity: per-sample mean gpu_util over the job's devices, while allocated. */
    gp_activity *act = NULL;
    size_t n_act = 0, cap_act = 0;
    ref_wmean util = {0}, sm = {0}, tensor = {0}, dram = {0}, memf = {0};
    double energy_mj = 0;
    int energy_known = 0, energy_missing = 0;
    out->n_gpus = 0;
    for (size_t i = 0; i < na; i++) {
        int64_t a = allocs[i].from_ns > t0 ? allocs[i].from_ns : t0;
        int64_t b = allocs[i].to_ns < 0 || allocs[i].to_ns > t1 ? t1 : allocs[i].to_ns;
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            dup |= !strcmp(allocs[k].uuid, allocs[i].uuid);
        if (!dup) out->n_gpus++;
        if (b <= a) continue;
        gp_sample *xs = NULL;
        size_t nx = 0;
        /* Samples whose interval ends in (a, b]. */
        if (gp_store_device_samples(s, allocs[i].uuid, a + 1, b + 1, &xs, &nx) != 0) continue;
        /* Shared GPUs: the job's activity is its attributed share (added after 317e344,
         * written here independently from the per-process rows). */
        int n_hold = ref_holders(s, allocs[i].uuid, a, b);
        gp_proc_sample *ps = NULL;
        size_t np = 0, pi = 0;
        if (n_hold > 1) gp_store_device_procs(s, allocs[i].uuid, a + 1, b + 1, &ps, &np);
        int64_t prev_ts = a;
        uint64_t e_first = 0, e_last = 0;
        int have_e = 0;
        for (size_t k = 0; k < nx; k++) {
            const gp_sample *x = &xs[k];
            double w = (double)(x->ts_ns - prev_ts);
            if (w <= 0) w = 1;
            prev_ts = x->ts_ns;
            if (gp_has(x->valid, GP_F_GPU_UTIL)) {
                ref_wm_add(&util, x->gpu_util, w);
                if (n_act + 1 > cap_act) {
                    cap_act = cap_act ? cap_act * 2 : 1024;
                    gp_activity *p = realloc(act, cap_act * sizeof *act);
                    if (!p) break;
                    act = p;
                }
                double mine = 0, all = 0;
                int known = 0;
                while (pi < np && ps[pi].ts_ns < x->ts_ns)
                    pi++;
                for (size_t q = pi; q < np && ps[q].ts_ns == x->ts_ns; q++) {
                    if (!(ps[q].valid & GP_P_SM_SHARE)) continue;
                    known = 1;
                    all += ps[q].sm_share;
                    if (!strcmp(ps[q].job_id, job_id)) mine += ps[q].sm_share;
                }
                double u = x->gpu_util;
                int here = n_hold > 1 ? ref_holders_at(s, allocs[i].uuid, x->ts_ns) : 1;
                if (here > 1) u = known && all > 0 ? u * mine / all : u / here;
                act[n_act++] = (gp_activity){x->ts_ns, (int64_t)w, u};
            }
            if (gp_has(x->valid, GP_F_SM_ACTIVE)) ref_wm_add(&sm, x->sm_active, w);
            if (gp_has(x->valid, GP_F_TENSOR_ACTIVE)) ref_wm_add(&tensor, x->tensor_active, w);
            if (gp_has(x->valid, GP_F_DRAM_ACTIVE)) ref_wm_add(&dram, x->dram_active, w);
            if (gp_has(x->valid, GP_F_MEM_USED | GP_F_MEM_TOTAL) && x->mem_total_bytes > 0)
                ref_wm_add(&memf, (double)x->mem_used_bytes / (double)x->mem_total_bytes, w);
            if (gp_has(x->valid, GP_F_ENERGY)) {
                if (!have_e) e_first = x->energy_mj;
                e_last = x->energy_mj;
                have_e = 1;
            }
        }
        if (have_e && e_last >= e_first) {
            double share = ref_proc_share(s, allocs[i].uuid, job_id, a, b + 1);
            if (share < 0) share = 1.0 / ref_holders(s, allocs[i].uuid, a, b);
            energy_mj += (double)(e_last - e_first) * share;
            energy_known = 1;
        } else {
            energy_missing = 1;
        }
        free(xs);
        free(ps);
    }
    /* Several GPUs' samples share timestamps: merge them into one mean per instant. */
    if (n_act) qsort(act, n_act, sizeof *act, ref_cmp_act); /* act may be NULL when empty */
    size_t m = 0;
    for (size_t k = 0; k < n_act;) {
        size_t e = k;
        double sum = 0;
        int64_t dur = act[k].dur_ns;
        while (e < n_act && act[e].ts_ns == act[k].ts_ns)
            sum += act[e++].util;
        act[m++] = (gp_activity){act[k].ts_ns, dur, sum / (double)(e - k)};
        k = e;
    }
    n_act = m;

    /* Shared GPUs are split between holders by engine/accounting/alloc_split.h (tested on its own).
     */
    gp_alloc *nb = NULL, *pieces = NULL;
    size_t n_nb = 0, n_pieces = 0;
    if (gp_store_neighbour_allocs(s, job_id, &nb, &n_nb) != 0 ||
        gp_alloc_split(allocs, na, nb, n_nb, &pieces, &n_pieces) != 0) {
        snprintf(err, errlen, "splitting allocations of '%s' failed", job_id);
        free(nb), free(allocs), free(events), free(act);
        return -1;
    }
    free(nb);
    gp_goodput_in in = {.allocs = pieces,
                        .n_allocs = n_pieces,
                        .events = events,
                        .n_events = ne,
                        .act = act,
                        .n_act = n_act,
                        .t0_ns = t0,
                        .t1_ns = t1};
    /* SLOs: the caller's (report flags) where set, else what the job declared. */
    in.slo = (gp_slo){j->slo_ttft_s, j->slo_tpot_s, j->slo_e2e_s};
    if (o && o->slo.ttft_s > 0) in.slo.ttft_s = o->slo.ttft_s;
    if (o && o->slo.tpot_s > 0) in.slo.tpot_s = o->slo.tpot_s;
    if (o && o->slo.e2e_s > 0) in.slo.e2e_s = o->slo.e2e_s;
    int grc = gp_goodput_compute(&in, &out->gp);
    free(pieces);
    if (grc != 0) {
        snprintf(err, errlen, "out of memory computing goodput for job '%s'", job_id);
        free(allocs), free(events), free(act);
        return -1;
    }
    out->allocated_gpu_h = out->gp.allocated_gpu_s / 3600.0;
    out->busy_gpu_h = out->gp.busy_gpu_s >= 0 ? out->gp.busy_gpu_s / 3600.0 : -1;
    int64_t ready = out->gp.ready_ns >= 0 ? out->gp.ready_ns : j->ready_ns;
    int64_t alloc_at = j->allocated_ns >= 0 ? j->allocated_ns : out->gp.first_alloc_ns;
    out->time_to_ready_s = (ready >= 0 && alloc_at >= 0) ? (ready - alloc_at) / 1e9 : -1;
    out->mean_gpu_util = ref_wm_get(&util);
    out->mean_sm_active = ref_wm_get(&sm);
    out->mean_tensor_active = ref_wm_get(&tensor);
    out->mean_dram_active = ref_wm_get(&dram);
    out->mean_mem_used_frac = ref_wm_get(&memf);
    out->energy_kwh = (energy_known && !energy_missing) ? energy_mj / 3.6e9 : -1;
    out->span_s = (t1 - t0) / 1e9;
    free(allocs), free(events), free(act);
    return 0;
}

/* ---- the scenario ---- */

#define S 1000000000LL
#define T_BASE (1767225600LL * S)
#define T_END 160 /* seconds of data */

static gp_store *st_open(char **dir) {
    *dir = gp_test_tmpdir();
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/s.db", *dir);
    gp_store *s = NULL;
    if (gp_store_open(path, 0, &s, err, sizeof err) != 0) fail_msg("open: %s", err);
    return s;
}

static void st_close(gp_store *s, char *dir) {
    char cmd[600];
    gp_store_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fail_msg("cannot remove %s", dir);
    free(dir);
}

static double noise(int64_t k, int dev) { /* deterministic in [0, 1) */
    uint64_t x = (uint64_t)k * 2654435761u + (uint64_t)dev * 40503u + 12345u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (double)(x % 10000) / 10000.0;
}

static void put_job(gp_store *s, const char *id, int64_t alloc_s, double ttft, double tpot) {
    gp_job j = {0};
    snprintf(j.id, sizeof j.id, "%s", id);
    snprintf(j.name, sizeof j.name, "%s", id);
    j.submitted_ns = T_BASE + (alloc_s - 2) * S;
    j.allocated_ns = T_BASE + alloc_s * S;
    j.ready_ns = j.ended_ns = -1;
    j.exit_code = -1;
    j.slo_ttft_s = ttft;
    j.slo_tpot_s = tpot;
    gp_store_put_job(s, &j);
}

static void put_alloc(gp_store *s, const char *id, const char *uuid, int64_t from_s, int64_t to_s) {
    gp_alloc a = {0};
    snprintf(a.job_id, sizeof a.job_id, "%s", id);
    snprintf(a.uuid, sizeof a.uuid, "%s", uuid);
    a.from_ns = T_BASE + from_s * S;
    a.to_ns = to_s < 0 ? -1 : T_BASE + to_s * S;
    gp_store_put_alloc(s, &a);
}

static void put_sample(gp_store *s, int dev, int64_t ts) {
    gp_sample x = {0};
    snprintf(x.uuid, sizeof x.uuid, "GPU-%d", dev);
    x.ts_ns = ts;
    int64_t k = (ts - T_BASE) / (S / 2);
    double u = noise(k, dev);
    if (dev == 1 && k % 40 > 30) u = 0.01;          /* idle stretches */
    if (dev == 5 && ts < T_BASE + 50 * S) u = 0.01; /* idle: not ready before 50 s */
    if (dev == 6) u = 0.02;                         /* nready: never a kernel */
    if (dev == 9 || dev == 10) u = 0.02;            /* nready2: never a kernel */
    if (dev == 11 || (dev == 12 && ts < T_BASE + 119 * S)) u = 0.02; /* wakes: GPU-12 */
    if (k % 13) gp_set_d(&x, GP_F_GPU_UTIL, &x.gpu_util, u);
    gp_set_d(&x, GP_F_SM_ACTIVE, &x.sm_active, 0.8 * u);
    if (dev != 2) gp_set_d(&x, GP_F_TENSOR_ACTIVE, &x.tensor_active, 0.5 * u);
    gp_set_d(&x, GP_F_DRAM_ACTIVE, &x.dram_active, 0.3 * noise(k, dev + 7));
    x.mem_used_bytes = (uint64_t)((10 + 30 * noise(k, dev + 3)) * (1 << 30));
    x.mem_total_bytes = 80ull << 30;
    x.valid |= GP_F_MEM_USED | GP_F_MEM_TOTAL;
    if (dev != 2) { /* GPU-2 reports no energy: the inference job's stays unknown */
        x.energy_mj = (uint64_t)((ts - T_BASE) / 1000000) * (200 + dev * 50);
        x.valid |= GP_F_ENERGY;
    }
    gp_store_put_sample(s, &x);
}

static void put_proc(gp_store *s, int dev, int64_t ts, int pid, const char *job, double share) {
    gp_proc_sample p = {0};
    snprintf(p.uuid, sizeof p.uuid, "GPU-%d", dev);
    p.ts_ns = ts;
    p.pid = pid;
    p.valid = GP_P_SM_SHARE;
    p.sm_share = share;
    snprintf(p.job_id, sizeof p.job_id, "%s", job);
    gp_store_put_proc(s, &p);
}

static void ev_step(gp_store *s, const char *job, int64_t rank, int64_t step, int64_t ts,
                    int64_t start) {
    gp_event e = gp_test_step_event(job, step, 32, ts);
    e.rank = rank;
    e.step_start_ns = start;
    gp_store_put_event(s, &e);
}

static void ev_phase(gp_store *s, const char *job, const char *name, int edge, int64_t ts) {
    gp_event e;
    gp_event_init(&e, GP_EV_PHASE);
    snprintf(e.job_id, sizeof e.job_id, "%s", job);
    snprintf(e.name, sizeof e.name, "%s", name);
    e.rank = 0;
    e.edge = edge;
    e.ts_ns = ts;
    gp_store_put_event(s, &e);
}

static void ev_restart_rank(gp_store *s, const char *job, int64_t rank, int64_t from_step,
                            int64_t ts) {
    gp_event e;
    gp_event_init(&e, GP_EV_RESTART);
    snprintf(e.job_id, sizeof e.job_id, "%s", job);
    e.rank = rank;
    e.step = from_step;
    e.ts_ns = ts;
    gp_store_put_event(s, &e);
}

static void ev_restart(gp_store *s, const char *job, int64_t from_step, int64_t ts) {
    ev_restart_rank(s, job, 0, from_step, ts);
}

static void ev_request(gp_store *s, const char *job, int64_t end, int64_t k) {
    gp_event e;
    gp_event_init(&e, GP_EV_REQUEST);
    snprintf(e.job_id, sizeof e.job_id, "%s", job);
    e.ts_ns = end;
    e.arrival_ns = end - (int64_t)((0.5 + 2 * noise(k, 9)) * S);
    e.first_token_ns = e.arrival_ns + (int64_t)(0.6 * noise(k, 10) * S);
    e.prompt_tokens = 100;
    e.output_tokens = 10 + (int64_t)(100 * noise(k, 11));
    e.ok = k % 11 != 5;
    gp_store_put_event(s, &e);
}

/* An infer request with the given times (-1: not reported), 20 output tokens, ok. */
static void ev_request_at(gp_store *s, int64_t end, int64_t arrival, int64_t first_token) {
    gp_event e;
    gp_event_init(&e, GP_EV_REQUEST);
    snprintf(e.job_id, sizeof e.job_id, "infer");
    e.ts_ns = end;
    e.arrival_ns = arrival;
    e.first_token_ns = first_token;
    e.prompt_tokens = 100;
    e.output_tokens = 20;
    e.ok = 1;
    gp_store_put_event(s, &e);
}

static void ev_stage(gp_store *s, const char *job, const char *name, int64_t decl_pool,
                     int resource, int64_t item, int64_t start, int64_t end) {
    gp_event e;
    gp_event_init(&e, GP_EV_STAGE);
    snprintf(e.job_id, sizeof e.job_id, "%s", job);
    snprintf(e.name, sizeof e.name, "%s", name);
    e.step = decl_pool; /* >= 0: a declaration */
    e.edge = resource;
    e.item = item;
    e.enqueue_ns = start >= 0 ? start - S / 10 : -1;
    e.start_ns = start;
    e.ts_ns = end;
    gp_store_put_event(s, &e);
}

/* Everything stored for second t (data in (t-1, t]). */
static int64_t train_step = 0, train_prev_end = -1;
static void fill_second(gp_store *s, int t) {
    int64_t ts = T_BASE + (int64_t)t * S;
    gp_store_begin(s);
    for (int d = 0; d < 3; d++)
        put_sample(s, d, ts);
    put_sample(s, 4, ts);
    put_sample(s, 3, ts - S / 2); /* GPU-3 samples half a second off */
    /* idle (activity only): GPU-5 with a sampling gap at 100-110 s, and GPU-8 held 70-120 s
     * sampled a third of a second off (its entries overlap GPU-5's) */
    if (t < 100 || t >= 110) put_sample(s, 5, ts);
    if (t >= 70 && t <= 121) put_sample(s, 8, ts - S / 3);
    put_sample(s, 6, ts);
    put_sample(s, 7, ts);
    /* nready2 and wakes: two GPUs each, one sampled half a second off the other (as
     * nvidia-smi's rows are), so an entry spans every cut; wakes' GPU-12 every 5 s, longer
     * than the freeze lag, busy from its entry of 114.5-119.5 s. */
    put_sample(s, 9, ts);
    put_sample(s, 10, ts - S / 2);
    put_sample(s, 11, ts);
    if (t % 5 == 0) put_sample(s, 12, ts - S / 2);
    if (t == 120) ev_phase(s, "idle", "warmup", GP_PH_BEGIN, ts);
    if (t == 125) ev_phase(s, "idle", "warmup", GP_PH_END, ts);
    if (t == 140) { /* a late phase, 85-87 s: before the frozen past by then */
        ev_phase(s, "idle", "eval", GP_PH_BEGIN, T_BASE + 85 * S);
        ev_phase(s, "idle", "eval", GP_PH_END, T_BASE + 87 * S);
    }
    /* turns: activity only until its first step at 100 s, then a step a second */
    if (t >= 100) ev_step(s, "turns", 0, t - 99, ts, -1);
    if (t >= 30 && t < 70 && t % 2 == 0) { /* GPU-1 shared by train and side */
        put_proc(s, 1, ts, 100, "train", 0.3 + 0.4 * noise(t, 20));
        put_proc(s, 1, ts, 200, "side", 0.2 * noise(t, 21));
    }
    /* train */
    if (t == 6) ev_phase(s, "train", "init", GP_PH_BEGIN, ts);
    if (t == 15) ev_phase(s, "train", "init", GP_PH_END, ts);
    if (t == 40) put_alloc(s, "train", "GPU-3", 40, -1); /* a GPU added mid-run */
    if (t == 50) ev_phase(s, "train", "data_wait", GP_PH_BEGIN, ts);
    if (t == 53) ev_phase(s, "train", "data_wait", GP_PH_END, ts);
    if (t == 60) ev_phase(s, "train", "checkpoint_save", GP_PH_BEGIN, ts + S / 4);
    if (t == 64) ev_phase(s, "train", "checkpoint_save", GP_PH_END, ts);
    if (t == 90) { /* crash; resumed from step 60: steps 61.. are redone */
        ev_restart(s, "train", 60, ts);
        train_step = 60;
        train_prev_end = -1;
    }
    if (t == 140) ev_phase(s, "train", "checkpoint_save", GP_PH_BEGIN, ts); /* stays open */
    if (t >= 16 && t != 90 && t != 91 && !(t >= 60 && t < 64)) {
        train_step++;
        int64_t start = -1;
        if (train_step % 10 == 0) start = ts - S / 3; /* explicit start after a gap */
        if (train_step % 17 == 0 && train_prev_end >= 0) start = train_prev_end;
        ev_step(s, "train", 0, train_step, ts, start);
        if (t % 3 == 0) ev_step(s, "train", 1, train_step, ts + 1000, -1); /* ignored rank */
        train_prev_end = ts;
    }
    /* gappy: ten 1 s steps, then 2.5 s steps every 4 s. The median step time rises past the
     * 1.5 s gaps after a while, which relabels every earlier gap as productive. */
    if (t >= 10 && t < 20) ev_step(s, "gappy", 0, t - 9, ts, -1);
    if (t >= 24 && t % 4 == 0) ev_step(s, "gappy", 0, t, ts, ts - 5 * S / 2);
    /* flip: 1 s steps with a 1.5 s gap every ten seconds (longer than the median: not
     * productive), then from 40 s 2 s steps: the median passes 1.5 s (near 100 s) and
     * relabels the early gaps as productive, behind any frozen prefix that holds them. */
    if (t >= 10 && t < 40 && t % 10 != 5) /* step 20 is reported twice (at 20 s and 21 s) */
        ev_step(s, "flip", 0, t == 21 ? 20 : t, ts, t % 10 == 6 ? ts - S / 2 : -1);
    /* ... and a restart of rank 1 at 20 s, stored at 60 s: evidence that the first step 20
     * was redone (wasted_progress), which only the late event itself can show. */
    if (t == 60) ev_restart_rank(s, "flip", 1, 19, T_BASE + 20 * S);
    if (t >= 40 && t % 2 == 0) ev_step(s, "flip", 0, t, ts, -1);
    /* pipe: a CPU stage feeding a GPU stage, items with gaps between them */
    if (t == 12) {
        ev_stage(s, "pipe", "decode", 4, GP_STAGE_CPU, -1, -1, ts);
        ev_stage(s, "pipe", "infer", 1, GP_STAGE_GPU, -1, -1, ts);
    }
    /* ... an infer item of 40 s stored at 85 s (late), and decode declared on the GPU at
     * 100 s: both reach into a frozen past (decode's earlier items turn productive) */
    if (t == 85) ev_stage(s, "pipe", "infer", -1, 0, 40, T_BASE + 39 * S + S / 2, T_BASE + 40 * S);
    if (t == 100) ev_stage(s, "pipe", "decode", 4, GP_STAGE_GPU, -1, -1, ts);
    if (t > 12 && t % 3 != 1) {
        ev_stage(s, "pipe", "decode", -1, 0, t, ts - S / 2, ts);
        ev_stage(s, "pipe", "infer", -1, 0, t, ts - (int64_t)(0.7 * noise(t, 30) * S), ts);
    }
    /* infer */
    if (t == 8) ev_phase(s, "infer", "init", GP_PH_END, ts);
    if (t >= 10 && (t < 140 || t >= 150))
        for (int k = 0; k < 3; k++)
            if ((t * 3 + k) % 4) ev_request(s, "infer", ts - k * (S / 3), t * 3 + k);
    /* ... a request that ended at 50 s, stored at 80 s (a late request: before any frozen
     * past by then); one in flight from 100 s to 118 s, stored when it ends (it was open
     * across the cuts chosen meanwhile, unseen); requests without an arrival (from the
     * first token) or without either (only their end); a quiet stretch 140-150 s with no
     * request in flight (kernel activity decides idle vs other there). */
    if (t == 80) ev_request(s, "infer", T_BASE + 50 * S, 1001);
    if (t == 118) ev_request_at(s, ts, T_BASE + 100 * S, -1);
    if (t % 13 == 0) ev_request_at(s, ts - S / 4, -1, ts - S);
    if (t % 17 == 0) ev_request_at(s, ts - S / 5, -1, -1);
    /* late: held GPU-0 from 100; closed at 130 in the past (noticed at 135) */
    if (t == 135) {
        put_alloc(s, "late", "GPU-0", 100, 130);
        gp_job j = {0};
        snprintf(j.id, sizeof j.id, "late");
        j.submitted_ns = j.allocated_ns = j.ready_ns = -1;
        j.ended_ns = T_BASE + 130 * S;
        j.exit_code = 0;
        gp_store_put_job(s, &j);
    }
    /* a late event: an eval phase at 33..35 delivered at 75 */
    if (t == 75) {
        ev_phase(s, "train", "eval", GP_PH_BEGIN, T_BASE + 33 * S);
        ev_phase(s, "train", "eval", GP_PH_END, T_BASE + 35 * S);
    }
    gp_store_commit(s);
}

static void setup_jobs(gp_store *s) {
    put_job(s, "train", 5, 0, 0);
    put_alloc(s, "train", "GPU-0", 5, -1);
    put_alloc(s, "train", "GPU-1", 5, -1);
    put_job(s, "infer", 3, 0.3, 0.004);
    put_alloc(s, "infer", "GPU-2", 3, -1);
    put_job(s, "side", 30, 0, 0);
    put_alloc(s, "side", "GPU-1", 30, 70);
    put_job(s, "late", 100, 0, 0);
    put_alloc(s, "late", "GPU-0", 100, -1);
    put_job(s, "pipe", 11, 0, 0);
    put_alloc(s, "pipe", "GPU-4", 11, -1);
    put_job(s, "gappy", 9, 0, 0);
    put_alloc(s, "gappy", "GPU-4", 9, -1);
    put_job(s, "flip", 8, 0, 0);
    put_alloc(s, "flip", "GPU-4", 8, -1);
    put_job(s, "idle", 4, 0, 0);
    put_alloc(s, "idle", "GPU-5", 4, -1);
    put_alloc(s, "idle", "GPU-8", 70, 120);
    put_job(s, "nready", 20, 0, 0);
    put_alloc(s, "nready", "GPU-6", 20, -1);
    put_job(s, "turns", 10, 0, 0);
    put_alloc(s, "turns", "GPU-7", 10, -1);
    put_job(s, "nready2", 15, 0, 0);
    put_alloc(s, "nready2", "GPU-9", 15, -1);
    put_alloc(s, "nready2", "GPU-10", 15, -1);
    put_job(s, "wakes", 12, 0, 0);
    put_alloc(s, "wakes", "GPU-11", 12, -1);
    put_alloc(s, "wakes", "GPU-12", 12, -1);
}

static void near(double a, double b, const char *what, const char *ctx) {
    double tol = 1e-9 * fmax(fabs(a), fabs(b)) + 1e-12;
    if (!(fabs(a - b) <= tol) && !(isnan(a) && isnan(b)))
        fail_msg("%s: %s = %.17g, expected %.17g", ctx, what, a, b);
}

static void same(const gp_job_summary *x, const gp_job_summary *y, const char *ctx) {
    assert_string_equal(x->job.id, y->job.id);
    if (x->n_gpus != y->n_gpus) fail_msg("%s: n_gpus %d vs %d", ctx, x->n_gpus, y->n_gpus);
    near(x->allocated_gpu_h, y->allocated_gpu_h, "allocated_gpu_h", ctx);
    near(x->queue_wait_s, y->queue_wait_s, "queue_wait_s", ctx);
    near(x->time_to_ready_s, y->time_to_ready_s, "time_to_ready_s", ctx);
    near(x->busy_gpu_h, y->busy_gpu_h, "busy_gpu_h", ctx);
    near(x->mean_gpu_util, y->mean_gpu_util, "mean_gpu_util", ctx);
    near(x->mean_sm_active, y->mean_sm_active, "mean_sm_active", ctx);
    near(x->mean_tensor_active, y->mean_tensor_active, "mean_tensor_active", ctx);
    near(x->mean_dram_active, y->mean_dram_active, "mean_dram_active", ctx);
    near(x->mean_mem_used_frac, y->mean_mem_used_frac, "mean_mem_used_frac", ctx);
    near(x->energy_kwh, y->energy_kwh, "energy_kwh", ctx);
    near(x->span_s, y->span_s, "span_s", ctx);
    const gp_goodput *g = &x->gp, *h = &y->gp;
    if (g->kind != h->kind) fail_msg("%s: kind %d vs %d", ctx, g->kind, h->kind);
    near(g->allocated_gpu_s, h->allocated_gpu_s, "allocated_gpu_s", ctx);
    for (int b = 0; b < GP_B__COUNT; b++)
        near(g->bucket_gpu_s[b], h->bucket_gpu_s[b], gp_bucket_name((gp_bucket)b), ctx);
    near(g->goodput, h->goodput, "goodput", ctx);
    if (g->first_alloc_ns != h->first_alloc_ns || g->ready_ns != h->ready_ns)
        fail_msg("%s: first_alloc/ready differ", ctx);
    if (g->steps != h->steps || g->kept_steps != h->kept_steps ||
        g->redone_steps != h->redone_steps)
        fail_msg("%s: steps %lld/%lld/%lld vs %lld/%lld/%lld", ctx, (long long)g->steps,
                 (long long)g->kept_steps, (long long)g->redone_steps, (long long)h->steps,
                 (long long)h->kept_steps, (long long)h->redone_steps);
    near(g->units, h->units, "units", ctx);
    near(g->median_step_s, h->median_step_s, "median_step_s", ctx);
    if (g->requests != h->requests || g->good_requests != h->good_requests ||
        g->failed_requests != h->failed_requests)
        fail_msg("%s: requests differ", ctx);
    near(g->tokens, h->tokens, "tokens", ctx);
    if (g->items != h->items)
        fail_msg("%s: items %lld vs %lld", ctx, (long long)g->items, (long long)h->items);
    near(g->good_tokens, h->good_tokens, "good_tokens", ctx);
    near(g->busy_gpu_s, h->busy_gpu_s, "busy_gpu_s", ctx);
}

static const char *const JOBS[] = {"train", "infer", "side",   "late",  "gappy",   "pipe",
                                   "flip",  "idle",  "nready", "turns", "nready2", "wakes"};
#define N_JOBS 12

/* What the frozen-past run saw (test_frozen_equals_full). */
typedef struct {
    int resumed[N_JOBS]; /* updates that labelled only the time after a frozen prefix */
    gp_job_acct_stats st[N_JOBS];
    size_t events[N_JOBS];
    gp_job_acct_stats fresh[N_JOBS]; /* a state made at the end: its first update */
} frozen_seen;

static void run_incremental(const gp_summary_opts *o, frozen_seen *fz) {
    char *dir;
    gp_store *s = st_open(&dir);
    setup_jobs(s);
    train_step = 0, train_prev_end = -1;
    gp_job_acct *acct[N_JOBS];
    for (int k = 0; k < N_JOBS; k++)
        assert_non_null(acct[k] = gp_job_acct_new(JOBS[k], o));
    int checks = 0, restarts_seen = 0, late_closed_seen = 0, median_past_gap = 0;
    char err[256], ctx[96];
    for (int t = 1; t <= T_END; t++) {
        fill_second(s, t);
        /* Cut points: irregular, dense around the restart and the late event. */
        int cut = t % 7 == 0 || t % 11 == 0 || (t >= 88 && t <= 95) || t == 75 || t == 76 ||
                  t == 80 || t == 118 || t == 135 || t == T_END;
        if (!cut) continue;
        for (int k = 0; k < N_JOBS; k++) {
            gp_job_summary inc, full, ref;
            snprintf(ctx, sizeof ctx, "job %s at t=%d", JOBS[k], t);
            gp_job_acct_stats before = gp_job_acct_get_stats(acct[k]);
            assert_int_equal(gp_job_acct_update(acct[k], s, &inc, err, sizeof err), 0);
            gp_job_acct_stats after = gp_job_acct_get_stats(acct[k]);
            if (fz && before.freezes > 0 && after.reloads == before.reloads) fz->resumed[k]++;
            assert_int_equal(gp_job_summary_compute(s, JOBS[k], NULL, &full, err, sizeof err), 0);
            assert_int_equal(ref_summary_compute(s, JOBS[k], NULL, &ref, err, sizeof err), 0);
            same(&full, &ref, ctx);
            /* A one-shot summary that reads the events a few at a time, freezing 3 s behind
             * the newest read (ties of a timestamp split across slices at size 1). */
            static const int64_t slices[] = {1, 7, 40};
            for (int z = 0; z < 3; z++) {
                gp_summary_opts so = {
                    .freeze_lag_ns = 3 * S, .freeze_steps = 2, .slice_events = slices[z]};
                gp_job_summary sl;
                assert_int_equal(gp_job_summary_compute(s, JOBS[k], &so, &sl, err, sizeof err), 0);
                snprintf(ctx, sizeof ctx, "sliced %d: job %s at t=%d", (int)slices[z], JOBS[k], t);
                same(&sl, &ref, ctx);
            }
            snprintf(ctx, sizeof ctx, "job %s at t=%d", JOBS[k], t);
            ctx[0] = 'J'; /* "Job ...": the incremental state's turn */
            same(&inc, &ref, ctx);
            /* An activity-only state resumes its segment's sums: its labels are the whole
             * computation's to the bit (not only within rounding). */
            if (inc.gp.kind == GP_JK_ACTIVITY_ONLY || inc.gp.kind == GP_JK_NEVER_READY) {
                assert_memory_equal(inc.gp.bucket_gpu_s, full.gp.bucket_gpu_s,
                                    sizeof inc.gp.bucket_gpu_s);
                assert_memory_equal(&inc.gp.busy_gpu_s, &full.gp.busy_gpu_s, sizeof(double));
            }
            checks++;
            if (k == 0 && inc.gp.redone_steps > 0) restarts_seen++;
            if (k == 3 && t >= 135) late_closed_seen++;
            if (k == 4 && inc.gp.median_step_s > 1.5) median_past_gap++;
        }
    }
    /* The scenario did reach the cases it claims to cover. */
    assert_true(checks > 100);
    assert_true(restarts_seen > 5);
    assert_true(late_closed_seen > 0);
    assert_true(median_past_gap > 0);
    gp_job_summary js;
    assert_int_equal(gp_job_acct_update(acct[0], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_TRAINING);
    assert_true(js.gp.bucket_gpu_s[GP_B_WASTED_PROGRESS] > 0);
    assert_true(js.gp.bucket_gpu_s[GP_B_RECOVERY] > 0);
    assert_true(js.gp.bucket_gpu_s[GP_B_CHECKPOINT] > 0);
    assert_true(js.gp.bucket_gpu_s[GP_B_DATA_WAIT] > 0);
    assert_true(js.gp.bucket_gpu_s[GP_B_STARTUP] > 0);
    assert_true(js.energy_kwh > 0);
    assert_int_equal(js.n_gpus, 3);
    assert_int_equal(gp_job_acct_update(acct[1], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_INFERENCE);
    assert_true(js.gp.good_requests > 0 && js.gp.good_requests < js.gp.requests);
    assert_true(js.gp.failed_requests > 0);
    assert_true(js.energy_kwh < 0); /* GPU-2 has no energy counter */
    assert_int_equal(gp_job_acct_update(acct[2], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_ACTIVITY_ONLY);
    assert_true(js.energy_kwh > 0);
    assert_int_equal(gp_job_acct_update(acct[5], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_PIPELINE);
    assert_true(js.gp.items > 50);
    assert_int_equal(gp_job_acct_update(acct[7], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_ACTIVITY_ONLY);
    assert_true(js.gp.bucket_gpu_s[GP_B_NOT_READY] > 40 && js.gp.bucket_gpu_s[GP_B_OTHER] > 40);
    assert_true(js.gp.bucket_gpu_s[GP_B_IDLE_ALLOCATED] > 0);
    assert_int_equal(gp_job_acct_update(acct[8], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_NEVER_READY);
    assert_int_equal(gp_job_acct_update(acct[9], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_TRAINING);
    assert_int_equal(gp_job_acct_update(acct[10], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_NEVER_READY);
    assert_int_equal(gp_job_acct_update(acct[11], s, &js, err, sizeof err), 0);
    assert_int_equal(js.gp.kind, GP_JK_ACTIVITY_ONLY);
    assert_true(js.gp.ready_ns == T_BASE + 114 * S + S / 2);
    /* And it was incremental: each row read once, no reloads, except for the job whose
     * allocation was closed behind rows already folded, and train once: its neighbour on
     * GPU-0 (late) had its allocation closed after the fact, which changes how GPU-0's
     * activity splits between them. */
    gp_job_acct_stats tr = gp_job_acct_get_stats(acct[0]), in = gp_job_acct_get_stats(acct[1]),
                      lt = gp_job_acct_get_stats(acct[3]);
    if (fz) { /* the frozen run: its own assertions (test_frozen_equals_full) */
        for (int k = 0; k < N_JOBS; k++) { /* a first update over the whole history */
            gp_job_acct *f = gp_job_acct_new(JOBS[k], o);
            assert_non_null(f);
            gp_job_summary fs, ref;
            assert_int_equal(gp_job_acct_update(f, s, &fs, err, sizeof err), 0);
            assert_int_equal(ref_summary_compute(s, JOBS[k], NULL, &ref, err, sizeof err), 0);
            snprintf(ctx, sizeof ctx, "fresh state of job %s at the end", JOBS[k]);
            same(&fs, &ref, ctx);
            fz->fresh[k] = gp_job_acct_get_stats(f);
            gp_job_acct_free(f);
        }
        for (int k = 0; k < N_JOBS; k++) {
            fz->st[k] = gp_job_acct_get_stats(acct[k]);
            gp_event *all = NULL;
            size_t n = 0;
            assert_int_equal(gp_store_job_events(s, JOBS[k], 0, &all, &n), 0);
            free(all);
            fz->events[k] = n;
            gp_job_acct_free(acct[k]);
        }
        st_close(s, dir);
        return;
    }
    assert_int_equal(tr.reloads, 1);
    assert_int_equal(in.reloads, 0);
    assert_true(lt.reloads >= 1);
    /* train: GPU-0 and GPU-1 from 5 s, GPU-3 from 40 s, sampled every second; read twice */
    assert_true(tr.sample_rows <= 2 * ((T_END - 5) * 2 + (T_END - 40) + 1));
    assert_true(in.sample_rows <= T_END - 3);
    gp_event *ev = NULL;
    size_t ne = 0, kept = 0;
    assert_int_equal(gp_store_job_events(s, "train", 0, &ev, &ne), 0);
    for (size_t i = 0; i < ne; i++)
        kept += ev[i].kind != GP_EV_JOB && ev[i].kind != GP_EV_ALLOC;
    free(ev);
    assert_true(tr.event_rows >= kept && tr.event_rows <= 2 * kept); /* read twice: one reload */
    for (int k = 0; k < N_JOBS; k++)
        gp_job_acct_free(acct[k]);
    st_close(s, dir);
}

static void test_incremental_equals_full(void **state) {
    (void)state;
    run_incremental(NULL, NULL); /* 160 s of data: the default lag (5 min) freezes nothing */
}

/* The same history and cut points with states that freeze their labelled past 3 s behind
 * the newest data, at least 2 steps at a time: every update still equals the full
 * computation and the reference, through each way a frozen past goes stale (train: the
 * late eval phase at 33-35 s delivered at 75 s, the restart at 90 s that resumes from
 * step 60, before the frozen prefix; flip: a late restart of another rank turns a step
 * reported twice into a redone one, the median passing 1.5 s relabels the long gaps
 * before it), and the states did resume from their frozen past in between and hold fewer
 * events than the job has. */
static void test_frozen_equals_full(void **state) {
    (void)state;
    gp_summary_opts o = {.freeze_lag_ns = 3 * S, .freeze_steps = 2};
    frozen_seen fz = {0};
    run_incremental(&o, &fz);
    const int train = 0, infer = 1, flip = 6;
    for (int k = 0; k < N_JOBS; k++)
        print_message(
            "%s: freezes %llu stale %llu reloads %llu resumed %d held %llu of %zu events\n",
            JOBS[k], (unsigned long long)fz.st[k].freezes,
            (unsigned long long)fz.st[k].stale_freezes, (unsigned long long)fz.st[k].reloads,
            fz.resumed[k], (unsigned long long)fz.st[k].held_events, fz.events[k]);
    assert_true(fz.st[train].freezes > 3);
    assert_true(fz.st[train].stale_freezes >= 2); /* the late phase, the restart */
    assert_true(fz.resumed[train] > 10);
    assert_true(fz.st[flip].freezes > 3);
    assert_true(fz.st[flip].stale_freezes >= 2); /* the late restart, the median flip */
    assert_true(fz.resumed[flip] > 10);
    assert_true(fz.st[flip].held_events * 4 < fz.events[flip]);
    assert_true(fz.st[train].held_events * 2 < fz.events[train]);
    /* infer: the requests in flight across each cut are held in it; exactly two things
     * reach into a frozen past: the late request (ended 50 s, stored at 80 s) and the one
     * in flight from 100 s, stored when it ended at 118 s (after cuts 3-6 s behind). */
    assert_true(fz.st[infer].freezes > 3);
    assert_int_equal(fz.st[infer].stale_freezes, 2);
    assert_true(fz.resumed[infer] > 10);
    assert_true(fz.st[infer].held_events * 2 < fz.events[infer]);
    /* pipe: the late item and the stage declared on the GPU later go stale */
    const int pipe = 5;
    assert_true(fz.st[pipe].freezes > 3);
    assert_int_equal(fz.st[pipe].stale_freezes, 2);
    assert_true(fz.resumed[pipe] > 10);
    assert_true(fz.st[pipe].held_events * 4 < fz.events[pipe]);
    /* Activity-only jobs freeze inside a segment: idle (ready at 50 s, two GPUs whose
     * samples interleave, a sampling gap, a phase after readiness, the late eval phase at
     * 85-87 s delivered at 140 s), nready (never ready: not_ready open across each cut),
     * turns (its first step at 100 s: it becomes a training job, its past relabelled). */
    const int idle = 7, nready = 8, turns = 9;
    assert_true(fz.st[idle].freezes > 3);
    assert_true(fz.st[idle].stale_freezes >= 1);
    assert_true(fz.resumed[idle] > 10);
    assert_true(fz.st[nready].freezes > 3);
    assert_int_equal(fz.st[nready].stale_freezes, 0);
    assert_true(fz.resumed[nready] > 10);
    assert_true(fz.st[turns].freezes > 3);
    assert_true(fz.st[turns].stale_freezes >= 1);
    assert_true(fz.resumed[turns] > 10);
    /* nready2: never ready on two GPUs sampled at different instants, so an entry spans
     * every cut (before, it never froze); wakes: the same until GPU-12's entry of
     * 114.5-119.5 s makes it ready, with prefixes taken before and after. */
    const int nready2 = 10, wakes = 11;
    assert_true(fz.st[nready2].freezes > 3);
    assert_int_equal(fz.st[nready2].stale_freezes, 0);
    assert_true(fz.resumed[nready2] > 10);
    assert_true(fz.st[wakes].freezes > 3);
    assert_int_equal(fz.st[wakes].stale_freezes, 0);
    assert_true(fz.resumed[wakes] > 10);
}

/* The same with states whose first update (and each reload) reads the events 3 at a time,
 * freezing after each slice: every update still equals the full computation and the
 * reference, and the states froze and resumed as before. */
static void test_frozen_sliced_equals_full(void **state) {
    (void)state;
    gp_summary_opts o = {.freeze_lag_ns = 3 * S, .freeze_steps = 2, .slice_events = 3};
    frozen_seen fz = {0};
    run_incremental(&o, &fz);
    for (int k = 0; k < N_JOBS; k++)
        print_message("sliced %s: freezes %llu stale %llu reloads %llu resumed %d\n", JOBS[k],
                      (unsigned long long)fz.st[k].freezes,
                      (unsigned long long)fz.st[k].stale_freezes,
                      (unsigned long long)fz.st[k].reloads, fz.resumed[k]);
    const int train = 0, infer = 1, pipe = 5;
    /* A first update over the whole history froze slice after slice (all at once: once). */
    assert_true(fz.fresh[train].freezes > 3);
    assert_true(fz.fresh[infer].freezes > 3);
    assert_true(fz.fresh[pipe].freezes > 3);
    assert_true(fz.st[train].freezes > 3 && fz.resumed[train] > 10);
    assert_true(fz.st[infer].freezes > 3 && fz.resumed[infer] > 10);
    assert_true(fz.st[pipe].freezes > 3 && fz.resumed[pipe] > 10);
}

/* Windows reuse the job's events; each must equal the reference over its bounds, at
 * several moments of a running job (the last window is still open). */
static void test_windows_equal_reference(void **state) {
    (void)state;
    char *dir;
    gp_store *s = st_open(&dir);
    setup_jobs(s);
    train_step = 0, train_prev_end = -1;
    gp_job_acct *a = gp_job_acct_new("train", NULL);
    gp_job_acct *b = gp_job_acct_new("infer", NULL);
    /* A state that froze its past (and dropped its early events): windows read their own. */
    gp_summary_opts fo = {.freeze_lag_ns = 3 * S, .freeze_steps = 2};
    gp_job_acct *f = gp_job_acct_new("train", &fo);
    char err[256], ctx[96];
    for (int t = 1; t <= T_END; t++) {
        fill_second(s, t);
        if (t % 40) continue;
        gp_job_summary js;
        assert_int_equal(gp_job_acct_update(a, s, &js, err, sizeof err), 0);
        assert_int_equal(gp_job_acct_update(f, s, &js, err, sizeof err), 0);
        for (int w = 0; w * 25 < t; w++) {
            gp_summary_opts o = {.t0_ns = T_BASE + w * 25 * S, .t1_ns = T_BASE + (w + 1) * 25 * S};
            gp_job_summary x, y;
            snprintf(ctx, sizeof ctx, "train window %d at t=%d", w, t);
            assert_int_equal(gp_job_acct_window(a, s, o.t0_ns, o.t1_ns, &x, err, sizeof err), 0);
            assert_int_equal(ref_summary_compute(s, "train", &o, &y, err, sizeof err), 0);
            same(&x, &y, ctx);
            snprintf(ctx, sizeof ctx, "frozen train window %d at t=%d", w, t);
            assert_int_equal(gp_job_acct_window(f, s, o.t0_ns, o.t1_ns, &x, err, sizeof err), 0);
            same(&x, &y, ctx);
            /* A state never updated loads the events itself. */
            snprintf(ctx, sizeof ctx, "infer window %d at t=%d", w, t);
            assert_int_equal(gp_job_acct_window(b, s, o.t0_ns, o.t1_ns, &x, err, sizeof err), 0);
            assert_int_equal(ref_summary_compute(s, "infer", &o, &y, err, sizeof err), 0);
            same(&x, &y, ctx);
        }
    }
    assert_true(gp_job_acct_get_stats(f).freezes > 0);
    gp_job_acct_free(a);
    gp_job_acct_free(b);
    gp_job_acct_free(f);
    st_close(s, dir);
}

/* The index-only time span equals the full-scan one, empty store included. */
static void test_time_span(void **state) {
    (void)state;
    char *dir;
    gp_store *s = st_open(&dir);
    int64_t a, b, c, d;
    assert_int_equal(gp_store_time_span(s, &a, &b), 0);
    assert_int_equal(ref_time_span(s, &c, &d), 0);
    assert_true(a == c && b == d && a == -1);
    setup_jobs(s);
    train_step = 0, train_prev_end = -1;
    for (int t = 1; t <= 30; t++) {
        fill_second(s, t);
        assert_int_equal(gp_store_time_span(s, &a, &b), 0);
        assert_int_equal(ref_time_span(s, &c, &d), 0);
        if (a != c || b != d)
            fail_msg("t=%d: span %lld..%lld vs %lld..%lld", t, (long long)a, (long long)b,
                     (long long)c, (long long)d);
    }
    st_close(s, dir);
}

/* Retention deletes raw rows but not the rollups, so the store's start stays where it was
 * (gp_store_time_span reads the rollups too): a state that folded the deleted rows keeps
 * them (no reload) and answers what the reference gives on the same history without
 * retention (a second store filled identically). */
static void test_retention_keeps_state(void **state) {
    (void)state;
    char *dir, *dir2;
    gp_store *s = st_open(&dir), *s2 = st_open(&dir2);
    setup_jobs(s);
    setup_jobs(s2);
    train_step = 0, train_prev_end = -1;
    gp_job_acct *a = gp_job_acct_new("train", NULL);
    char err[256];
    gp_job_summary x, y;
    for (int t = 1; t <= 60; t++)
        fill_second(s, t);
    assert_int_equal(gp_job_acct_update(a, s, &x, err, sizeof err), 0);
    assert_int_equal(gp_store_retain(s, T_BASE + 20 * S), 0);
    for (int t = 61; t <= 70; t++)
        fill_second(s, t);
    assert_int_equal(gp_job_acct_update(a, s, &x, err, sizeof err), 0);
    assert_int_equal(gp_job_acct_get_stats(a).reloads, 0);
    train_step = 0, train_prev_end = -1;
    for (int t = 1; t <= 70; t++)
        fill_second(s2, t);
    assert_int_equal(ref_summary_compute(s2, "train", NULL, &y, err, sizeof err), 0);
    same(&x, &y, "after retention");
    gp_job_acct_free(a);
    st_close(s, dir);
    st_close(s2, dir2);
}

/* A running job's state grows by one activity entry per sample instant for as long as it
 * runs: its arrays' capacity stays within a quarter of what they hold (doubling left up to
 * half unused: 2,048 entries for ~1,200), so the agent serving /metrics at 8 GPUs does not
 * jump by ~320 KiB when its jobs pass 1,024 instants (docs/benchmarks.md, agent --listen
 * 2026-12-03). */
/* An activity-only job (no progress events: any job on a node without goodput's client)
 * sampled every second for 3,000 s, its state updated every 100 s; held bytes at 700,
 * 1,000 and 1,300 s and at the end. */
static void activity_run(const gp_summary_opts *o, uint64_t *held_700, uint64_t *held_1000,
                         uint64_t *held_1300, uint64_t *held_end, gp_job_acct_stats *st) {
    char *dir;
    gp_store *s = st_open(&dir);
    put_job(s, "act", 1, 0, 0);
    put_alloc(s, "act", "GPU-2", 1, -1);
    gp_job_acct *a = gp_job_acct_new("act", o);
    char err[256];
    gp_job_summary x, full;
    for (int t = 1; t <= 3000; t++) {
        gp_store_begin(s);
        put_sample(s, 2, T_BASE + (int64_t)t * S);
        gp_store_commit(s);
        if (t % 100 == 0) {
            assert_int_equal(gp_job_acct_update(a, s, &x, err, sizeof err), 0);
            assert_int_equal(gp_job_summary_compute(s, "act", NULL, &full, err, sizeof err), 0);
            assert_int_equal(x.gp.kind, GP_JK_ACTIVITY_ONLY);
            same(&x, &full, "act");
            /* the state's busy time is the whole computation's to the bit */
            assert_memory_equal(&x.gp.busy_gpu_s, &full.gp.busy_gpu_s, sizeof(double));
            assert_memory_equal(x.gp.bucket_gpu_s, full.gp.bucket_gpu_s, sizeof x.gp.bucket_gpu_s);
        }
        if (t == 700) *held_700 = gp_job_acct_get_stats(a).held_bytes;
        if (t == 1000) *held_1000 = gp_job_acct_get_stats(a).held_bytes;
        if (t == 1300) *held_1300 = gp_job_acct_get_stats(a).held_bytes;
    }
    *st = gp_job_acct_get_stats(a);
    *held_end = st->held_bytes;
    gp_job_acct_free(a);
    st_close(s, dir);
}

/* Without freezing, the activity arrays grow by a quarter when full, not double; with the
 * default freezing (5 minutes behind the newest sample), the state holds about the last
 * five minutes of activity however long the job runs, and every update still equals the
 * whole computation. */
static void test_activity_capacity(void **state) {
    (void)state;
    uint64_t h700, h1000, h1300, never_end, held;
    gp_job_acct_stats st;
    gp_summary_opts never = {.freeze_lag_ns = -1};
    activity_run(&never, &h700, &h1000, &h1300, &never_end, &st);
    const uint64_t entry = sizeof(gp_activity) + sizeof(double) + 2 * sizeof(int);
    /* ~920 entries (no utilisation in one sample of 13) fit the first 1,024; ~1,200 grow
     * them by a quarter, once */
    assert_int_equal(st.freezes, 0);
    assert_true(h1300 > h1000);
    if (h1300 - h1000 > 1024 / 4 * entry + entry)
        fail_msg("held %llu -> %llu bytes for 300 more instants (entry %llu bytes)",
                 (unsigned long long)h1000, (unsigned long long)h1300, (unsigned long long)entry);
    activity_run(NULL, &h700, &h1000, &h1300, &held, &st);
    print_message("activity-only: held %llu bytes at 3,000 s never frozen; frozen %llu times, "
                  "held %llu / %llu / %llu / %llu bytes at 700 / 1,000 / 1,300 / 3,000 s\n",
                  (unsigned long long)never_end, (unsigned long long)st.freezes,
                  (unsigned long long)h700, (unsigned long long)h1000, (unsigned long long)h1300,
                  (unsigned long long)held);
    assert_true(st.freezes >= 20); /* every update from 600 s on */
    assert_int_equal(st.stale_freezes, 0);
    assert_true(held <= h700);         /* flat: what is held does not grow with age */
    assert_true(2 * held < never_end); /* ~5 minutes of 1 s entries, not 50 */
}

/* The simulator's demo node (examples/scenarios/demo.conf: 8 GPUs, an hour, training with
 * checkpoints and a failure that redoes steps, an LLM server, a late starter, a notebook,
 * a GPU shared by two jobs) fed into a store as the agent would, every 10 s; every 10
 * minutes each job's long-lived state is compared with the reference. */
typedef struct {
    gp_store *s;
    int n;
} ev_sink;

static void sink_line(void *ctx, const char *line, size_t len) {
    ev_sink *k = ctx;
    gp_event e;
    char err[160];
    if (gp_proto_parse_line(line, len, 0, 1, &e, err, sizeof err) == 1) {
        gp_store_put_event(k->s, &e);
        k->n++;
    }
}

static void test_sim_demo(void **state) {
    (void)state;
    gp_scenario sc;
    char err[512], ctx[128];
    if (gp_scenario_load("examples/scenarios/demo.conf", &sc, err, sizeof err) < 0) {
        skip(); /* the scenario needs a data set that is not here */
        return;
    }
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    gp_scenario_free(&sc);
    char *dir;
    gp_store *s = st_open(&dir);
    size_t ndev = gp_sim_n_devices(sim);
    gp_device dev[16];
    size_t nd = 0;
    gp_sim_devices(sim, dev, 16, &nd);
    for (size_t i = 0; i < nd; i++)
        gp_store_put_device(s, &dev[i]);
    gp_sample xs[16];
    gp_proc_sample ps[64];
    ev_sink k = {s, 0};
    enum { MAXJ = 32 };
    gp_job_acct *acct[MAXJ] = {0};
    char ids[MAXJ][GP_JOB_ID_MAX];
    int nacct = 0, checks = 0, redone = 0, infer = 0, acts = 0;
    int64_t t0 = gp_sim_start_ns(sim), end = gp_sim_end_ns(sim);
    for (int64_t t = t0 + 10 * S; t <= end; t += 10 * S) {
        size_t n = 0, np = 0;
        gp_store_begin(s);
        gp_sim_sample(sim, t, xs, ndev, &n);
        for (size_t i = 0; i < n; i++)
            gp_store_put_sample(s, &xs[i]);
        gp_sim_processes(sim, ps, 64, &np);
        for (size_t i = 0; i < np; i++)
            gp_store_put_proc(s, &ps[i]);
        gp_sim_drain_events(sim, t, sink_line, &k);
        gp_store_commit(s);
        if ((t - t0) % (600 * S) != 0 && t + 10 * S <= end) continue;
        gp_job *jobs = NULL;
        size_t nj = 0;
        assert_int_equal(gp_store_list_jobs(s, &jobs, &nj), 0);
        for (size_t j = 0; j < nj; j++) {
            int a = -1;
            for (int q = 0; q < nacct; q++)
                if (!strcmp(ids[q], jobs[j].id)) a = q;
            if (a < 0) {
                assert_true(nacct < MAXJ);
                a = nacct++;
                snprintf(ids[a], sizeof ids[a], "%s", jobs[j].id);
                acct[a] = gp_job_acct_new(jobs[j].id, NULL);
            }
            gp_job_summary inc, ref;
            snprintf(ctx, sizeof ctx, "sim job %s at +%llds", jobs[j].id,
                     (long long)((t - t0) / S));
            assert_int_equal(gp_job_acct_update(acct[a], s, &inc, err, sizeof err), 0);
            assert_int_equal(ref_summary_compute(s, jobs[j].id, NULL, &ref, err, sizeof err), 0);
            same(&inc, &ref, ctx);
            /* An activity-only state resumes its segment's sums: its labels are the whole
             * computation's to the bit (not only within rounding). */
            gp_job_summary full;
            assert_int_equal(gp_job_summary_compute(s, jobs[j].id, NULL, &full, err, sizeof err),
                             0);
            if (inc.gp.kind == GP_JK_ACTIVITY_ONLY || inc.gp.kind == GP_JK_NEVER_READY) {
                acts++;
                assert_memory_equal(inc.gp.bucket_gpu_s, full.gp.bucket_gpu_s,
                                    sizeof inc.gp.bucket_gpu_s);
                assert_memory_equal(&inc.gp.busy_gpu_s, &full.gp.busy_gpu_s, sizeof(double));
            }
            checks++;
            redone += inc.gp.redone_steps > 0;
            infer += inc.gp.kind == GP_JK_INFERENCE;
        }
        free(jobs);
    }
    gp_sim_close(sim);
    assert_true(k.n > 1000);
    assert_true(checks > 30);
    assert_true(redone > 0); /* train-allreduce's failure redid steps */
    assert_true(infer > 0);
    assert_true(acts > 0); /* the notebook, the late starter before its first step */
    /* With the default lag (5 min) the training jobs froze their past along the hour. */
    uint64_t freezes = 0, stale = 0;
    for (int q = 0; q < nacct; q++) {
        freezes += gp_job_acct_get_stats(acct[q]).freezes;
        stale += gp_job_acct_get_stats(acct[q]).stale_freezes;
    }
    print_message("sim demo: %llu freezes, %llu stale\n", (unsigned long long)freezes,
                  (unsigned long long)stale);
    assert_true(freezes > 0);
    /* The hour in slices: one-shot summaries (default slices, GP_SUMMARY_ONESHOT_SLICE_EVENTS,
     * and 512 events) and a state's first load (512) equal the reference. A job that
     * freezes labels about a slice at a time, train-starved too (a data_wait phase inside
     * every step, begun at the previous step's end: the cut carries it, goodput.c
     * "Checkpoints"); one that never can reads twice as many each time nothing froze, so
     * it is labelled a few times, not once per 512 events (train-starved with a phase left
     * open, below). */
    int sliced_freezing = 0, starved_froze = 0;
    for (int pass = 0; pass < 2; pass++) {
        int sliced_never = 0;
        for (int q = 0; q < nacct; q++) {
            if (pass == 1 && strcmp(ids[q], "train-starved")) continue;
            gp_job_summary ref, one, one512, first;
            gp_summary_opts o512 = {.slice_events = 512};
            assert_int_equal(ref_summary_compute(s, ids[q], NULL, &ref, err, sizeof err), 0);
            snprintf(ctx, sizeof ctx, "sim job %.64s, one-shot in slices (%d)", ids[q], pass);
            assert_int_equal(gp_job_summary_compute(s, ids[q], NULL, &one, err, sizeof err), 0);
            same(&one, &ref, ctx);
            assert_int_equal(gp_job_summary_compute(s, ids[q], &o512, &one512, err, sizeof err), 0);
            same(&one512, &ref, ctx);
            gp_job_acct *f = gp_job_acct_new(ids[q], &o512);
            assert_int_equal(gp_job_acct_update(f, s, &first, err, sizeof err), 0);
            snprintf(ctx, sizeof ctx, "sim job %.64s, first load in slices (%d)", ids[q], pass);
            same(&first, &ref, ctx);
            gp_job_acct_stats fs = gp_job_acct_get_stats(f);
            uint64_t n_ev = fs.event_rows;
            if (n_ev > 4096 && fs.freezes == 0) {
                /* 512, 1024, 2048, ...: at most log2(n / 512) + 1 slices */
                uint64_t most = 1;
                for (uint64_t c = 512; c < n_ev; c *= 2)
                    most++;
                assert_true(fs.slices <= most);
                sliced_never++;
            } else if (n_ev > 4096) {
                assert_true(fs.slices >= n_ev / 1024); /* frozen as it went: ~a slice each */
                sliced_freezing++;
                starved_froze += !strcmp(ids[q], "train-starved");
            }
            gp_job_acct_free(f);
        }
        if (pass == 1) {
            assert_int_equal(sliced_never, 1);
            break;
        }
        assert_int_equal(sliced_never, 0);
        assert_true(sliced_freezing >= 3); /* train-allreduce, llm-decode, train-starved */
        assert_int_equal(starved_froze, 1);
        /* A phase of train-starved that never ends, from its first minutes: no cut after it. */
        gp_event e;
        gp_event_init(&e, GP_EV_PHASE);
        snprintf(e.job_id, sizeof e.job_id, "train-starved");
        snprintf(e.name, sizeof e.name, "eval");
        e.edge = GP_PH_BEGIN;
        e.ts_ns = t0 + 120 * S;
        assert_int_equal(gp_store_put_event(s, &e), 0);
    }
    for (int q = 0; q < nacct; q++)
        gp_job_acct_free(acct[q]);
    st_close(s, dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incremental_equals_full),
        cmocka_unit_test(test_frozen_equals_full),
        cmocka_unit_test(test_frozen_sliced_equals_full),
        cmocka_unit_test(test_windows_equal_reference),
        cmocka_unit_test(test_time_span),
        cmocka_unit_test(test_retention_keeps_state),
        cmocka_unit_test(test_activity_capacity),
        cmocka_unit_test(test_sim_demo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
