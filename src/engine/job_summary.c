/* job_summary.c: joins a job's allocations, events and device samples from the store. */
#include "engine/job_summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gp_store_time_span(gp_store *s, int64_t *t0_ns, int64_t *t1_ns) {
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
static double proc_share(gp_store *s, const char *uuid, const char *job_id, int64_t t0,
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
static int holders(gp_store *s, const char *uuid, int64_t t0, int64_t t1) {
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
} wmean;
static void wm_add(wmean *m, double v, double w) {
    m->sum += v * w;
    m->w += w;
}
static double wm_get(const wmean *m) {
    return m->w > 0 ? m->sum / m->w : -1;
}

static int cmp_act(const void *a, const void *b) {
    const gp_activity *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

int gp_job_summary_compute(gp_store *s, const char *job_id, const gp_summary_opts *o,
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
        gp_store_time_span(s, &a, &b);
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
    wmean util = {0}, sm = {0}, tensor = {0}, dram = {0}, memf = {0};
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
        int64_t prev_ts = a;
        uint64_t e_first = 0, e_last = 0;
        int have_e = 0;
        for (size_t k = 0; k < nx; k++) {
            const gp_sample *x = &xs[k];
            double w = (double)(x->ts_ns - prev_ts);
            if (w <= 0) w = 1;
            prev_ts = x->ts_ns;
            if (gp_has(x->valid, GP_F_GPU_UTIL)) {
                wm_add(&util, x->gpu_util, w);
                if (n_act + 1 > cap_act) {
                    cap_act = cap_act ? cap_act * 2 : 1024;
                    gp_activity *p = realloc(act, cap_act * sizeof *act);
                    if (!p) break;
                    act = p;
                }
                act[n_act++] = (gp_activity){x->ts_ns, (int64_t)w, x->gpu_util};
            }
            if (gp_has(x->valid, GP_F_SM_ACTIVE)) wm_add(&sm, x->sm_active, w);
            if (gp_has(x->valid, GP_F_TENSOR_ACTIVE)) wm_add(&tensor, x->tensor_active, w);
            if (gp_has(x->valid, GP_F_DRAM_ACTIVE)) wm_add(&dram, x->dram_active, w);
            if (gp_has(x->valid, GP_F_MEM_USED | GP_F_MEM_TOTAL) && x->mem_total_bytes > 0)
                wm_add(&memf, (double)x->mem_used_bytes / (double)x->mem_total_bytes, w);
            if (gp_has(x->valid, GP_F_ENERGY)) {
                if (!have_e) e_first = x->energy_mj;
                e_last = x->energy_mj;
                have_e = 1;
            }
        }
        if (have_e && e_last >= e_first) {
            double share = proc_share(s, allocs[i].uuid, job_id, a, b + 1);
            if (share < 0) share = 1.0 / holders(s, allocs[i].uuid, a, b);
            energy_mj += (double)(e_last - e_first) * share;
            energy_known = 1;
        } else {
            energy_missing = 1;
        }
        free(xs);
    }
    /* Several GPUs' samples share timestamps: merge them into one mean per instant. */
    if (n_act) qsort(act, n_act, sizeof *act, cmp_act); /* act may be NULL when empty */
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

    gp_goodput_in in = {.allocs = allocs,
                        .n_allocs = na,
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
    if (gp_goodput_compute(&in, &out->gp) != 0) {
        snprintf(err, errlen, "out of memory computing goodput for job '%s'", job_id);
        free(allocs), free(events), free(act);
        return -1;
    }
    out->allocated_gpu_h = out->gp.allocated_gpu_s / 3600.0;
    out->busy_gpu_h = out->gp.busy_gpu_s >= 0 ? out->gp.busy_gpu_s / 3600.0 : -1;
    int64_t ready = out->gp.ready_ns >= 0 ? out->gp.ready_ns : j->ready_ns;
    int64_t alloc_at = j->allocated_ns >= 0 ? j->allocated_ns : out->gp.first_alloc_ns;
    out->time_to_ready_s = (ready >= 0 && alloc_at >= 0) ? (ready - alloc_at) / 1e9 : -1;
    out->mean_gpu_util = wm_get(&util);
    out->mean_sm_active = wm_get(&sm);
    out->mean_tensor_active = wm_get(&tensor);
    out->mean_dram_active = wm_get(&dram);
    out->mean_mem_used_frac = wm_get(&memf);
    out->energy_kwh = (energy_known && !energy_missing) ? energy_mj / 3.6e9 : -1;
    out->span_s = (t1 - t0) / 1e9;
    free(allocs), free(events), free(act);
    return 0;
}
