/* features.c: per-job window features (see features.h). One pass over samples sorted by
 * (device, time), one over events; quantiles by sorting copies. */
#include "engine/diagnosis/features.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/diagnosis/sig_hist.h"
#include "engine/diagnosis/thresholds.h"
#include "engine/diagnosis/kth.h"

#define NS 1e9
#define SLOWDOWN_MASK 0xECull /* SW power cap, HW slowdown, SW/HW thermal, power brake */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gp_quantile(double *v, size_t n, double q) {
    if (n == 0) return -1;
    qsort(v, n, sizeof *v, cmp_d);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double fr = pos - (double)i;
    return i + 1 < n ? v[i] * (1 - fr) + v[i + 1] * fr : v[n - 1];
}

GP_KTH_DEFINE(kth, double)

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int gp_features_sample_active(const gp_sample *x) {
    double act = gp_has(x->valid, GP_F_GPU_UTIL)    ? x->gpu_util
                 : gp_has(x->valid, GP_F_SM_ACTIVE) ? x->sm_active
                                                    : -1;
    double memf =
        gp_has(x->valid, GP_F_MEM_USED) && gp_has(x->valid, GP_F_MEM_TOTAL) && x->mem_total_bytes
            ? (double)x->mem_used_bytes / (double)x->mem_total_bytes
            : -1;
    return act >= gp_th(GP_TH_IDLE_UTIL) || memf >= 0.05;
}

size_t gp_features_foreign_ts(const gp_job_input *in, int64_t *out_ts_ns) {
    size_t n = 0;
    for (size_t i = 0; i < in->n_procs; i++) {
        const gp_proc_sample *p = &in->procs[i];
        if (p->job_id[0] && in->job_id && strcmp(p->job_id, in->job_id) &&
            gp_has(p->valid, GP_P_SM_SHARE) && p->sm_share > 0.05)
            out_ts_ns[n++] = p->ts_ns;
    }
    qsort(out_ts_ns, n, sizeof *out_ts_ns, cmp_i64);
    return n;
}

int gp_features_near_foreign(const int64_t *ts_ns, size_t n, int64_t t_ns) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ts_ns[mid] < t_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t best = INT64_MAX;
    if (lo < n) best = llabs(ts_ns[lo] - t_ns);
    if (lo > 0 && llabs(ts_ns[lo - 1] - t_ns) < best) best = llabs(ts_ns[lo - 1] - t_ns);
    return best <= GP_FEATURES_SHARED_NEAR_NS;
}

/* gp_quantile's value (linear interpolation between closest ranks) by selection; v is
 * reordered, not sorted. */
static double sel_quantile(double *v, size_t n, double q) {
    if (n == 0) return -1;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double fr = pos - (double)i;
    double a = kth(v, n, i);
    if (i + 1 >= n) return a;
    double b = v[i + 1]; /* the next rank: the smallest after i */
    for (size_t k = i + 2; k < n; k++)
        if (v[k] < b) b = v[k];
    return a * (1 - fr) + b * fr;
}

double gp_robust_median(double *v, size_t n, double k) {
    if (n == 0) return -1;
    double med = sel_quantile(v, n, 0.5);
    double *dev = malloc(n * sizeof *dev);
    if (!dev) return med;
    for (size_t i = 0; i < n; i++)
        dev[i] = fabs(v[i] - med);
    double mad = sel_quantile(dev, n, 0.5);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (mad <= 0 || fabs(v[i] - med) <= k * mad) dev[m++] = v[i];
    double r = m ? sel_quantile(dev, m, 0.5) : med;
    free(dev);
    return r;
}

/* accumulator for one telemetry field; most: how many values it can get (the job's
 * samples), its first allocation, so that seven of them hold 8 bytes a sample instead of
 * up to twice that after doubling (report's peak RSS, docs/benchmarks.md) */
typedef struct {
    double *v;
    size_t n, cap, most;
    double wsum, vwsum;
} acc;

static int acc_add(acc *a, double v, double w) {
    if (!isfinite(v)) return 0;
    if (a->n == a->cap) {
        size_t c = a->cap ? 2 * a->cap : a->most ? a->most : 256;
        double *nv = realloc(a->v, c * sizeof *nv);
        if (!nv) return -1;
        a->v = nv;
        a->cap = c;
    }
    a->v[a->n++] = v;
    a->wsum += w;
    a->vwsum += v * w;
    return 0;
}

static void acc_finish(acc *a, gp_stat *s) {
    memset(s, 0, sizeof *s);
    s->n = (int)a->n;
    s->known_s = a->wsum;
    if (a->n) {
        s->mean = a->wsum > 0 ? a->vwsum / a->wsum : 0;
        s->min = s->max = a->v[0];
        for (size_t i = 1; i < a->n; i++) {
            if (a->v[i] < s->min) s->min = a->v[i];
            if (a->v[i] > s->max) s->max = a->v[i];
        }
        s->p10 = sel_quantile(a->v, a->n, 0.1);
        s->p50 = sel_quantile(a->v, a->n, 0.5);
        s->p90 = sel_quantile(a->v, a->n, 0.9);
    }
    free(a->v);
    a->v = NULL;
}

static int cmp_sample_ptr(const void *a, const void *b) {
    const gp_sample *x = *(const gp_sample *const *)a, *y = *(const gp_sample *const *)b;
    int c = strcmp(x->uuid, y->uuid);
    if (c) return c;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static int cmp_ev_ptr(const void *a, const void *b) {
    const gp_event *x = *(const gp_event *const *)a, *y = *(const gp_event *const *)b;
    if (x->rank != y->rank) return (x->rank > y->rank) - (x->rank < y->rank);
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

static const gp_gpu_spec *spec_of(const gp_job_input *in, const char *uuid) {
    for (size_t i = 0; i < in->n_devices; i++)
        if (!strcmp(in->devices[i].uuid, uuid)) return in->devices[i].spec;
    return NULL;
}

/* the job's allocation of uuid covering [a, b): clipped overlap in ns */
static int64_t alloc_overlap(const gp_job_input *in, const char *uuid, int64_t a, int64_t b,
                             int64_t t1) {
    if (in->n_allocs == 0) return b - a;
    int64_t tot = 0;
    for (size_t i = 0; i < in->n_allocs; i++) {
        const gp_alloc *al = &in->allocs[i];
        if (strcmp(al->uuid, uuid)) continue;
        int64_t lo = al->from_ns > a ? al->from_ns : a;
        int64_t to = al->to_ns < 0 ? t1 : al->to_ns;
        int64_t hi = to < b ? to : b;
        if (hi > lo) tot += hi - lo;
    }
    return tot;
}

static int is_comm_phase(const char *n) {
    return !strcmp(n, "comm") || !strcmp(n, "allreduce") || !strcmp(n, "all_reduce") ||
           !strcmp(n, "nccl") || !strcmp(n, "collective") || !strcmp(n, "communication");
}

int gp_mark_of(const gp_event *e, gp_mark_ev *out) {
    if (e->kind != GP_EV_REQUEST && e->kind != GP_EV_PHASE) return 0;
    gp_phase_slot slot = GP_PS_OTHER;
    if (e->kind == GP_EV_PHASE)
        slot = !strcmp(e->name, "data_wait") ? GP_PS_DATA_WAIT
               : (!strcmp(e->name, "checkpoint_save") || !strcmp(e->name, "checkpoint_restore"))
                   ? GP_PS_CHECKPOINT
               : (!strcmp(e->name, "init") || !strcmp(e->name, "compile")) ? GP_PS_INIT
               : is_comm_phase(e->name)                                    ? GP_PS_COMM
                                                                           : GP_PS_OTHER;
    *out = (gp_mark_ev){e->ts_ns,         e->rank,         e->arrival_ns,        e->first_token_ns,
                        e->output_tokens, (int8_t)e->kind, (int8_t)(e->ok != 0), (int8_t)e->edge,
                        (int8_t)slot};
    return 1;
}

static int req_good(const gp_mark_ev *r, const gp_slo *slo) {
    if (!r->ok) return 0;
    double ttft = r->first_token_ns >= 0 && r->arrival_ns >= 0
                      ? (double)(r->first_token_ns - r->arrival_ns) / NS
                      : -1;
    double e2e = r->arrival_ns >= 0 ? (double)(r->ts_ns - r->arrival_ns) / NS : -1;
    if (slo->ttft_s > 0 && (ttft < 0 || ttft > slo->ttft_s)) return 0;
    if (slo->e2e_s > 0 && (e2e < 0 || e2e > slo->e2e_s)) return 0;
    if (slo->tpot_s > 0 && r->output_tokens > 1 && ttft >= 0) {
        double tpot = (e2e - ttft) / (double)(r->output_tokens - 1);
        if (tpot > slo->tpot_s) return 0;
    }
    return 1;
}

static void window_of(const gp_job_input *in, int64_t *t0, int64_t *t1) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < in->n_allocs; i++) {
        if (in->allocs[i].from_ns < lo) lo = in->allocs[i].from_ns;
        if (in->allocs[i].to_ns > hi) hi = in->allocs[i].to_ns;
    }
    for (size_t i = 0; !in->n_series && i < in->n_samples; i++) {
        if (in->n_allocs == 0 && in->samples[i].ts_ns < lo) lo = in->samples[i].ts_ns;
        if (in->samples[i].ts_ns > hi) hi = in->samples[i].ts_ns;
    }
    for (size_t d = 0; d < in->n_series; d++) { /* each in time order */
        const gp_dev_series *x = &in->series[d];
        if (!x->n) continue;
        if (in->n_allocs == 0 && x->v[0].ts_ns < lo) lo = x->v[0].ts_ns;
        if (x->v[x->n - 1].ts_ns > hi) hi = x->v[x->n - 1].ts_ns;
    }
    if (in->n_deferred && in->deferred_last_ns > hi) /* the last rows of series read later */
        hi = in->deferred_last_ns;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_event *e = &in->events[i];
        if (e->kind == GP_EV_JOB || e->kind == GP_EV_ALLOC || e->kind == GP_EV_HELLO) continue;
        if (in->n_allocs == 0 && e->ts_ns < lo) lo = e->ts_ns;
        if (e->ts_ns > hi) hi = e->ts_ns;
    }
    for (size_t i = 0; in->steps && i < in->n_steps; i++) {
        if (in->n_allocs == 0 && in->steps[i].ts_ns < lo) lo = in->steps[i].ts_ns;
        if (in->steps[i].ts_ns > hi) hi = in->steps[i].ts_ns;
    }
    for (size_t i = 0; in->marks && i < in->n_marks; i++) {
        if (in->n_allocs == 0 && in->marks[i].ts_ns < lo) lo = in->marks[i].ts_ns;
        if (in->marks[i].ts_ns > hi) hi = in->marks[i].ts_ns;
    }
    *t0 = in->t0_ns || in->t1_ns ? in->t0_ns : (lo == INT64_MAX ? 0 : lo);
    *t1 = in->t0_ns || in->t1_ns ? in->t1_ns : (hi == INT64_MIN ? *t0 : hi);
}

void gp_feat_sample_of(const gp_sample *x, gp_feat_sample *out) {
    *out = (gp_feat_sample){.ts_ns = x->ts_ns,
                            .valid = x->valid,
                            .gpu_util = x->gpu_util,
                            .sm_active = x->sm_active,
                            .sm_occupancy = x->sm_occupancy,
                            .tensor_active = x->tensor_active,
                            .dram_active = x->dram_active,
                            .mem_used_bytes = x->mem_used_bytes,
                            .mem_total_bytes = x->mem_total_bytes,
                            .power_w = x->power_w,
                            .sm_clock_mhz = x->sm_clock_mhz,
                            .energy_mj = x->energy_mj,
                            .pcie_tx_bytes = x->pcie_tx_bytes,
                            .pcie_rx_bytes = x->pcie_rx_bytes,
                            .nvlink_tx_bytes = x->nvlink_tx_bytes,
                            .nvlink_rx_bytes = x->nvlink_rx_bytes,
                            .throttle_reasons = x->throttle_reasons,
                            .xid = x->xid};
}

/* The fields of c that the telemetry reads, into x (the others, and x->uuid, untouched:
 * the device's UUID is its series'). */
static void feat_expand(const gp_feat_sample *c, gp_sample *x) {
    x->ts_ns = c->ts_ns;
    x->valid = c->valid;
    x->gpu_util = c->gpu_util;
    x->sm_active = c->sm_active;
    x->sm_occupancy = c->sm_occupancy;
    x->tensor_active = c->tensor_active;
    x->dram_active = c->dram_active;
    x->mem_used_bytes = c->mem_used_bytes;
    x->mem_total_bytes = c->mem_total_bytes;
    x->power_w = c->power_w;
    x->sm_clock_mhz = c->sm_clock_mhz;
    x->energy_mj = c->energy_mj;
    x->pcie_tx_bytes = c->pcie_tx_bytes;
    x->pcie_rx_bytes = c->pcie_rx_bytes;
    x->nvlink_tx_bytes = c->nvlink_tx_bytes;
    x->nvlink_rx_bytes = c->nvlink_rx_bytes;
    x->throttle_reasons = c->throttle_reasons;
    x->xid = c->xid;
}

/* One device's samples in time order, whichever form the input holds them in: sorted
 * pointers into in->samples, or a series. */
typedef struct dev_view {
    const char *uuid;
    const gp_sample *const *p; /* samples: n pointers */
    const gp_feat_sample *v;   /* series: n records */
    size_t n;
    size_t slot; /* series: its index in in->series */
    int lazy;    /* series read only when folded (in->series_fill), v NULL until then */
    int filled;  /* lazy, and read already */
} dev_view;

/* Sample k of d: the sample itself, or the series record expanded into *buf. */
static const gp_sample *view_at(const dev_view *d, size_t k, gp_sample *buf) {
    if (d->p) return d->p[k];
    feat_expand(&d->v[k], buf);
    return buf;
}
static int64_t view_ts(const dev_view *d, size_t k) {
    return d->p ? d->p[k]->ts_ns : d->v[k].ts_ns;
}

static int cmp_series_ptr(const void *a, const void *b) {
    return strcmp((*(const gp_dev_series *const *)a)->uuid,
                  (*(const gp_dev_series *const *)b)->uuid);
}

/* A counter's first and last reading among a device's counted samples. */
typedef struct ctr_span {
    int n;
    int64_t t_first, t_last;
    uint64_t a_first, a_last, b_first, b_last;
} ctr_span;
static void ctr_see(ctr_span *c, int64_t t, uint64_t a, uint64_t b) {
    if (!c->n++) {
        c->t_first = t;
        c->a_first = a;
        c->b_first = b;
    }
    c->t_last = t;
    c->a_last = a;
    c->b_last = b;
}

/* The input's devices in UUID order, each with its samples in time order (*ptrs: the
 * sorted pointers a samples input needs; the caller frees it and *out). Returns the
 * number of devices, or -1 when out of memory. */
static ptrdiff_t device_views(const gp_job_input *in, dev_view **out, const gp_sample ***ptrs) {
    *out = NULL;
    *ptrs = NULL;
    if (in->n_series) {
        const gp_dev_series **o = malloc(in->n_series * sizeof *o);
        dev_view *d = malloc(in->n_series * sizeof *d);
        if (!o || !d) {
            free(o);
            free(d);
            return -1;
        }
        for (size_t i = 0; i < in->n_series; i++)
            o[i] = &in->series[i];
        qsort(o, in->n_series, sizeof *o, cmp_series_ptr);
        for (size_t i = 0; i < in->n_series; i++)
            d[i] = (dev_view){o[i]->uuid,
                              NULL,
                              o[i]->v,
                              o[i]->n,
                              (size_t)(o[i] - in->series),
                              in->series_fill && !o[i]->n,
                              0};
        free(o);
        *out = d;
        return (ptrdiff_t)in->n_series;
    }
    size_t m = in->n_samples;
    const gp_sample **s = malloc(m * sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < m; i++)
        s[i] = &in->samples[i];
    qsort(s, m, sizeof *s, cmp_sample_ptr);
    size_t nd = 0;
    for (size_t i = 0; i < m; i++)
        if (i == 0 || strcmp(s[i]->uuid, s[i - 1]->uuid)) nd++;
    dev_view *d = malloc(nd * sizeof *d);
    if (!d) {
        free(s);
        return -1;
    }
    nd = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && !strcmp(s[j]->uuid, s[i]->uuid))
            j++;
        d[nd++] = (dev_view){s[i]->uuid, s + i, NULL, j - i, 0, 0, 0};
        i = j;
    }
    *out = d;
    *ptrs = s;
    return (ptrdiff_t)nd;
}

/* The first active sample of a streamed device (series_scan): the first loop of
 * telemetry's test, on rows in time order, so the first that passes is the device's
 * earliest. */
typedef struct first_scan {
    const gp_job_input *in;
    const gp_features *f;
    const char *uuid;
    int64_t ts_ns; /* -1: none yet */
} first_scan;

/* Does x count for the job's first activity: in the window, in an allocation of uuid,
 * with kernels or memory in use. */
static int first_active_at(const gp_job_input *in, const gp_features *f, const char *uuid,
                           const gp_sample *x) {
    if (x->ts_ns <= f->t0_ns || x->ts_ns > f->t1_ns) return 0;
    if (alloc_overlap(in, uuid, x->ts_ns - 1, x->ts_ns, f->t1_ns) <= 0) return 0;
    return gp_features_sample_active(x);
}

static int first_scan_row(void *ctx, const gp_feat_sample *c) {
    first_scan *fs = ctx;
    gp_sample x;
    feat_expand(c, &x);
    if (!first_active_at(fs->in, fs->f, fs->uuid, &x)) return 0;
    fs->ts_ns = x.ts_ns;
    return 1;
}

/* What the fold of every device adds to: the gauges and the sampled times. */
typedef struct tele_sums {
    acc *a; /* 7 */
    double thr_s, thr_known, idle_s, act_known;
} tele_sums;

/* One device's fold (telemetry): its samples in time order, one at a time, from a series
 * in memory or as a streamed device's rows are read (series_fold). */
typedef struct dev_fold {
    const gp_job_input *in;
    gp_features *f;
    const char *uuid;
    const gp_gpu_spec *sp;
    const gp_dev_interval *hd; /* the history's median interval, or NULL */
    tele_sums *sums;
    int64_t after, dt_med, prev_ts;
    size_t k; /* samples folded */
    int take_first, rc;
    double run, dev_idle, dev_act;
    ctr_span pc, nv, en;
    /* streamed: the intervals of the times pass, the median taken at the first row */
    gp_sig_hist dh;
    int64_t last_ts;
    size_t n_ts;
    int dt_pending, oom;
} dev_fold;

static void fold_sample(dev_fold *fd, const gp_sample *x) {
    const gp_job_input *in = fd->in;
    gp_features *f = fd->f;
    tele_sums *t = fd->sums;
    acc *a = t->a;
    const gp_gpu_spec *sp = fd->sp;
    int64_t dt_med = fd->dt_med;
    if (fd->take_first && first_active_at(in, f, fd->uuid, x)) {
        if (f->first_active_ns < 0 || x->ts_ns < f->first_active_ns) f->first_active_ns = x->ts_ns;
        fd->take_first = 0; /* rows in time order: the device's earliest */
    }
    int64_t prev = fd->k > 0 ? fd->prev_ts : x->ts_ns - dt_med;
    fd->k++;
    fd->prev_ts = x->ts_ns;
    if (x->ts_ns - prev > 5 * dt_med) prev = x->ts_ns - dt_med; /* gap: no data */
    int64_t lo = prev > f->t0_ns ? prev : f->t0_ns;
    int64_t hi = x->ts_ns < f->t1_ns ? x->ts_ns : f->t1_ns;
    if (hi <= lo) return;
    double w = (double)alloc_overlap(in, fd->uuid, lo, hi, f->t1_ns) / NS;
    if (w <= 0) return;
    uint32_t v = x->valid;
    int rc = 0;
    if (gp_has(v, GP_F_GPU_UTIL)) rc |= acc_add(&a[0], x->gpu_util, w);
    if (gp_has(v, GP_F_SM_ACTIVE)) rc |= acc_add(&a[1], x->sm_active, w);
    if (gp_has(v, GP_F_SM_OCCUPANCY)) rc |= acc_add(&a[2], x->sm_occupancy, w);
    if (gp_has(v, GP_F_TENSOR_ACTIVE)) rc |= acc_add(&a[3], x->tensor_active, w);
    if (gp_has(v, GP_F_DRAM_ACTIVE)) rc |= acc_add(&a[4], x->dram_active, w);
    if (gp_has(v, GP_F_MEM_USED)) {
        double tot = gp_has(v, GP_F_MEM_TOTAL) ? (double)x->mem_total_bytes
                     : sp                      ? (double)sp->memory_bytes
                                               : 0;
        if (tot > 0) rc |= acc_add(&a[5], (double)x->mem_used_bytes / tot, w);
    }
    if (gp_has(v, GP_F_POWER) && sp && sp->tdp_w > 0)
        rc |= acc_add(&a[6], x->power_w / sp->tdp_w, w);
    fd->rc |= rc;
    if (gp_has(v, GP_F_THROTTLE)) {
        t->thr_known += w;
        /* hardware and thermal slowdown always count; the SW power cap only when it
         * pulls the clock 15% or more under its maximum (at TDP the cap flickers on busy
         * GPUs without costing much) */
        uint64_t tr = x->throttle_reasons;
        int slow = (tr & (SLOWDOWN_MASK & ~0x4ull)) != 0;
        if (!slow && (tr & 0x4) && gp_has(v, GP_F_SM_CLOCK) && sp && sp->max_sm_clock_mhz > 0 &&
            x->sm_clock_mhz < 0.85 * sp->max_sm_clock_mhz)
            slow = 1;
        if (slow) t->thr_s += w;
    }
    if (gp_has(v, GP_F_XID) && x->xid > 0) {
        f->xid_count++;
        f->last_xid = x->xid;
    }
    if (gp_has(v, GP_F_PCIE_TX) && gp_has(v, GP_F_PCIE_RX))
        ctr_see(&fd->pc, x->ts_ns, x->pcie_tx_bytes, x->pcie_rx_bytes);
    if (gp_has(v, GP_F_NVLINK_TX) && gp_has(v, GP_F_NVLINK_RX))
        ctr_see(&fd->nv, x->ts_ns, x->nvlink_tx_bytes, x->nvlink_rx_bytes);
    if (gp_has(v, GP_F_ENERGY)) ctr_see(&fd->en, x->ts_ns, x->energy_mj, 0);
    /* activity */
    double act = gp_has(v, GP_F_GPU_UTIL)    ? x->gpu_util
                 : gp_has(v, GP_F_SM_ACTIVE) ? x->sm_active
                                             : -1;
    if (act >= 0 && x->ts_ns > fd->after) {
        t->act_known += w;
        fd->dev_act += w;
        if (act < gp_th(GP_TH_IDLE_UTIL)) {
            t->idle_s += w;
            fd->dev_idle += w;
            fd->run += w;
        } else {
            if (fd->run >= gp_th(GP_TH_HARVEST_GAP_S)) f->harvest_gpu_s += fd->run;
            fd->run = 0;
        }
    }
}

/* series_fold's passes: the times (the intervals at 4 significant digits, sig_hist.h, as
 * the live pass keeps them), then the rows, the median interval taken before the first. */
static int fold_ts(void *ctx, int64_t ts_ns) {
    dev_fold *fd = ctx;
    if (!fd->dt_pending) return 0;
    if (fd->n_ts++ && gp_sig_hist_add(&fd->dh, ts_ns - fd->last_ts) < 0) {
        fd->oom = 1;
        return -1;
    }
    fd->last_ts = ts_ns;
    return 0;
}

static int fold_streamed(void *ctx, const gp_feat_sample *c) {
    dev_fold *fd = ctx;
    if (fd->dt_pending) {
        if (fd->n_ts >= 2) {
            int64_t v = gp_sig_hist_kth(&fd->dh, (fd->dh.n - 1) / 2);
            if (v > 0) fd->dt_med = v;
        }
        gp_sig_hist_free(&fd->dh);
        fd->dt_pending = 0;
    }
    gp_sample x;
    feat_expand(c, &x);
    fold_sample(fd, &x);
    return 0;
}

static int telemetry(const gp_job_input *in, gp_features *f) {
    size_t m = 0;
    if (in->n_series)
        for (size_t i = 0; i < in->n_series; i++)
            m += in->series[i].n;
    else
        m = in->n_samples;
    m += in->deferred_rows; /* streamed series, read device by device below */
    if (m == 0 && in->history && in->history->n_samples > 0) {
        /* the job has samples, none of them this window's */
        f->first_active_ns = -1;
        f->n_samples_seen = (int)in->history->n_samples;
        return 0;
    }
    if (m == 0) return 0;
    dev_view *dv;
    const gp_sample **s;
    ptrdiff_t ndv = device_views(in, &dv, &s);
    if (ndv < 0) return -1;
    gp_sample buf; /* a series record expanded (view_at) */
    memset(&buf, 0, sizeof buf);
    acc a[7];
    memset(a, 0, sizeof a);
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
        a[k].most = m;
    double pcie = 0, nvl = 0, pk_pcie = 0, pk_nvl = 0, energy = 0;
    int pcie_known = 0, nvl_known = 0, energy_known = 0;
    /* first activity: kernels running or memory held (a process has the GPU). A streamed
     * device's is read here (series_scan) only when the idle time below depends on it (no
     * steps); else it is taken as its rows are folded, below. The only streamed device of
     * a job is read whole here instead (it is folded next: one query, not two). */
    int scan = !f->has_steps && (!f->has_requests || !f->first_request_delayed);
    size_t n_lazy = 0;
    for (ptrdiff_t d = 0; d < ndv; d++)
        n_lazy += dv[d].lazy;
    int rc = 0;
    f->first_active_ns = -1;
    for (ptrdiff_t d = 0; d < ndv; d++) {
        if (dv[d].lazy && scan && n_lazy == 1) {
            if (in->series_fill(in->load_ctx, dv[d].slot) < 0) {
                rc = -1;
                break;
            }
            dv[d].v = in->series[dv[d].slot].v;
            dv[d].n = in->series[dv[d].slot].n;
            dv[d].filled = 1;
        } else if (dv[d].lazy) {
            if (!scan) continue;
            first_scan fs = {in, f, dv[d].uuid, -1};
            if (in->series_scan(in->load_ctx, dv[d].slot, first_scan_row, &fs) < 0) {
                rc = -1;
                break;
            }
            if (fs.ts_ns >= 0 && (f->first_active_ns < 0 || fs.ts_ns < f->first_active_ns))
                f->first_active_ns = fs.ts_ns;
            continue;
        }
        for (size_t k = 0; k < dv[d].n; k++) {
            const gp_sample *x = view_at(&dv[d], k, &buf);
            if (first_active_at(in, f, dv[d].uuid, x))
                if (f->first_active_ns < 0 || x->ts_ns < f->first_active_ns)
                    f->first_active_ns = x->ts_ns;
        }
    }
    int64_t after = f->ready_ns >= 0 ? f->ready_ns : f->t0_ns;
    if (!f->has_steps && !f->has_requests) /* activity only: from the first activity */
        after = f->first_active_ns >= 0 ? f->first_active_ns : INT64_MAX;
    /* a server that served its first request promptly was ready once it held the GPU:
     * the quiet time before the first request is idle, not "not ready" */
    if (f->has_requests && !f->has_steps && !f->first_request_delayed && f->first_active_ns >= 0 &&
        f->first_active_ns < after)
        after = f->first_active_ns;
    size_t seen = 0; /* samples folded */
    tele_sums ts = {a, 0, 0, 0, 0};
    for (ptrdiff_t d = 0; d < ndv && !rc; d++) {
        dev_view *dev = &dv[d];
        /* a streamed device not read yet is folded as it is read (series_fold), else read
         * now and freed at the end of this iteration */
        int stream = dev->lazy && !dev->filled && in->series_fold;
        if (dev->lazy && !dev->filled && !stream) {
            if (in->series_fill(in->load_ctx, dev->slot) < 0) {
                rc = -1;
                break;
            }
            dev->v = in->series[dev->slot].v;
            dev->n = in->series[dev->slot].n;
        }
        dev_fold fd;
        memset(&fd, 0, sizeof fd);
        fd.in = in;
        fd.f = f;
        fd.uuid = dev->uuid;
        fd.sp = spec_of(in, dev->uuid);
        fd.sums = &ts;
        fd.after = after;
        fd.take_first = dev->lazy && !scan; /* its first activity, not read above */
        /* median interval of this device (over the whole job when the input is one
         * window's rows) */
        fd.dt_med = 1000000000;
        for (size_t h = 0; in->history && h < in->history->n_dev && !fd.hd; h++)
            if (!strcmp(in->history->dev[h].uuid, dev->uuid)) fd.hd = &in->history->dev[h];
        if (fd.hd) fd.dt_med = fd.hd->dt_med_ns;
        if (stream) {
            fd.dt_pending = !fd.hd;
            if (in->series_fold(in->load_ctx, dev->slot, fold_ts, fold_streamed, &fd) < 0 || fd.oom)
                rc = -1;
            gp_sig_hist_free(&fd.dh);
            if (rc) break;
        } else {
            size_t nk = dev->n;
            if (!fd.hd && nk >= 2) {
                /* at 4 significant digits (sig_hist.h), as the live pass keeps it */
                int oom = gp_sig_hist_reserve(&fd.dh, nk - 1);
                for (size_t k = 1; k < nk && !oom; k++)
                    oom = gp_sig_hist_add(&fd.dh, view_ts(dev, k) - view_ts(dev, k - 1));
                if (!oom) {
                    int64_t v = gp_sig_hist_kth(&fd.dh, (fd.dh.n - 1) / 2);
                    if (v > 0) fd.dt_med = v;
                }
                gp_sig_hist_free(&fd.dh);
                if (oom) {
                    rc = -1;
                    if (dev->lazy) in->series_drop(in->load_ctx, dev->slot);
                    break;
                }
            }
            for (size_t k = 0; k < nk; k++)
                fold_sample(&fd, view_at(dev, k, &buf));
        }
        seen += fd.k;
        rc |= fd.rc;
        if (fd.run >= gp_th(GP_TH_HARVEST_GAP_S)) f->harvest_gpu_s += fd.run;
        if (fd.dev_act > 0 && fd.dev_idle >= 0.98 * fd.dev_act) f->n_idle_devices++;
        const gp_gpu_spec *sp = fd.sp;
        if (fd.pc.n >= 2) { /* two readings or more: a rate */
            double dt = (double)(fd.pc.t_last - fd.pc.t_first) / NS;
            pcie += (double)((fd.pc.a_last - fd.pc.a_first) + (fd.pc.b_last - fd.pc.b_first)) / dt;
            pcie_known++;
            if (sp && sp->pcie_bytes_s > 0) pk_pcie += 2 * sp->pcie_bytes_s;
        }
        if (fd.nv.n >= 2) {
            double dt = (double)(fd.nv.t_last - fd.nv.t_first) / NS;
            nvl += (double)((fd.nv.a_last - fd.nv.a_first) + (fd.nv.b_last - fd.nv.b_first)) / dt;
            nvl_known++;
            if (sp && sp->nvlink_bytes_s > 0) pk_nvl += sp->nvlink_bytes_s;
        }
        if (fd.en.n >= 2) {
            energy += (double)(fd.en.a_last - fd.en.a_first) / 1000.0;
            energy_known = 1;
        }
        if (dev->lazy && !stream) {
            in->series_drop(in->load_ctx, dev->slot);
            dev->v = NULL;
        }
    }
    double thr_s = ts.thr_s, thr_known = ts.thr_known, idle_s = ts.idle_s, act_known = ts.act_known;
    acc_finish(&a[0], &f->gpu_util);
    acc_finish(&a[1], &f->sm_active);
    acc_finish(&a[2], &f->sm_occupancy);
    acc_finish(&a[3], &f->tensor_active);
    acc_finish(&a[4], &f->dram_active);
    acc_finish(&a[5], &f->mem_frac);
    acc_finish(&a[6], &f->power_frac);
    f->throttle_share = thr_known > 0 ? thr_s / thr_known : -1;
    f->idle_share = act_known > 0 ? idle_s / act_known : -1;
    f->idle_gpu_s = idle_s;
    f->pcie_bytes_s = pcie_known ? pcie / pcie_known : -1;
    f->nvlink_bytes_s = nvl_known ? nvl / nvl_known : -1;
    double sh = -1;
    if (pcie_known && pk_pcie > 0) sh = pcie / pk_pcie;
    if (nvl_known && pk_nvl > 0 && nvl / pk_nvl > sh) sh = nvl / pk_nvl;
    f->interconnect_peak_share = sh;
    f->energy_j = energy_known ? energy : -1;
    f->n_samples_seen = in->history ? (int)in->history->n_samples : (int)seen;
    free(dv);
    free(s);
    return rc ? -1 : 0;
}

int gp_step_next(const gp_job_input *in, gp_step_iter *it, gp_step_ev *out) {
    for (; it->i < in->n_events; it->i++) {
        const gp_event *e = &in->events[it->i];
        if (e->kind != GP_EV_STEP) continue;
        *out = (gp_step_ev){e->ts_ns, e->step_start_ns, e->rank, e->step, e->units};
        it->i++;
        return 1;
    }
    if (!in->steps || it->k >= in->n_steps) return 0;
    *out = in->steps[it->k++];
    return 1;
}

static int step_before(const gp_step_ev *a, const gp_step_ev *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->ts_ns < b->ts_ns;
}

static int step_idx_before(const void *base, size_t a, size_t b) {
    const gp_step_ev *sv = base;
    return step_before(&sv[a], &sv[b]);
}

static int mark_idx_before(const void *base, size_t a, size_t b) {
    const gp_mark_ev *x = &((const gp_mark_ev *)base)[a], *y = &((const gp_mark_ev *)base)[b];
    return x->rank != y->rank ? x->rank < y->rank : x->ts_ns < y->ts_ns;
}

/* Is base[0..n) in before()'s order already? Then a stable sort is the identity and the
 * index is not needed: a single rank's steps and marks come from the store in time order,
 * and a long job's index was 8 bytes a step (report's peak RSS, docs/benchmarks.md). */
static int in_order(const void *base, int (*before)(const void *, size_t, size_t), size_t n) {
    for (size_t k = 1; k < n; k++)
        if (before(base, k, k - 1)) return 0;
    return 1;
}

/* ord[k], or k when there is no index (in_order). */
static size_t idx_at(const size_t *ord, size_t k) {
    return ord ? ord[k] : k;
}

/* Stable merge sort of the indices ord[0..n) of base by before() (rank, time): steps of
 * one rank at one time keep their order, which decides which is "the previous step";
 * phase edges of one rank at one time keep theirs, which decides what a begin closes. */
static int sort_idx(const void *base, int (*before)(const void *, size_t, size_t), size_t *ord,
                    size_t n) {
    if (!ord) return 0; /* in order already (in_order) */
    size_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return -1;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                tmp[k++] = before(base, ord[b], ord[a]) ? ord[b++] : ord[a++];
            while (a < mid)
                tmp[k++] = ord[a++];
            while (b < hi)
                tmp[k++] = ord[b++];
        }
        memcpy(ord, tmp, n * sizeof *ord);
    }
    free(tmp);
    return 0;
}

static int cmp_i64_val(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The steps' (rank, time) order: what sort_idx gives, in O(n log ranks) when the steps are
 * in time order (the store loader's, ties in the store's order) and have few ranks: a
 * stable sort by rank alone of a time-ordered array is its stable sort by (rank, time), the
 * same permutation. A day of an 8-GPU trainer is ~1 M steps: the merge sort was a fifth of
 * a running job's report once its events were saved (ev_prefix.h). Otherwise sort_idx. */
#define RANK_BUCKETS_MAX 4096
static int sort_steps(const gp_step_ev *sv, size_t *ord, size_t n) {
    int timed = 1;
    for (size_t k = 1; k < n && timed; k++)
        timed = sv[k].ts_ns >= sv[k - 1].ts_ns;
    int64_t *rk = timed && n ? malloc(RANK_BUCKETS_MAX * sizeof *rk) : NULL;
    size_t nr = 0;
    for (size_t k = 0; rk && k < n; k++) { /* distinct ranks, sorted; too many: give up */
        if (k && sv[k].rank == sv[k - 1].rank) continue;
        int64_t *hit = bsearch(&sv[k].rank, rk, nr, sizeof *rk, cmp_i64_val);
        if (hit) continue;
        if (nr == RANK_BUCKETS_MAX) {
            free(rk);
            rk = NULL;
            break;
        }
        size_t at = nr;
        while (at > 0 && rk[at - 1] > sv[k].rank) {
            rk[at] = rk[at - 1];
            at--;
        }
        rk[at] = sv[k].rank;
        nr++;
    }
    size_t *start = rk ? calloc(nr + 1, sizeof *start) : NULL;
    uint32_t *bucket = start ? malloc(n * sizeof *bucket) : NULL;
    if (!bucket) {
        free(rk);
        free(start);
        for (size_t k = 0; k < n; k++)
            ord[k] = k;
        return sort_idx(sv, step_idx_before, ord, n);
    }
    for (size_t k = 0; k < n; k++) {
        const int64_t *hit = bsearch(&sv[k].rank, rk, nr, sizeof *rk, cmp_i64_val);
        bucket[k] = (uint32_t)(hit - rk);
        start[bucket[k] + 1]++;
    }
    for (size_t b = 0; b < nr; b++)
        start[b + 1] += start[b];
    for (size_t k = 0; k < n; k++)
        ord[start[bucket[k]]++] = k;
    free(bucket);
    free(start);
    free(rk);
    return 0;
}

/* The steps in (rank, time) order, ties in their order (a stable sort): the array itself
 * (in order already), through an index (ord), or, when the steps are in time order (the
 * store loader's) and have at most RANK_SCAN_MAX ranks, rank by rank with a scan of the
 * array for each (ranks: the distinct ranks ascending): a rank's steps in the array's
 * order are its steps in time order, ties in their order. The scans cost ranks x steps
 * compares a walk, where the index held 8 bytes a step (184 KB at the 60-minute demo's
 * 23,026 steps of 4 ranks, at the report's peak RSS, docs/benchmarks.md). */
#define RANK_SCAN_MAX 16
typedef struct step_order {
    const gp_step_ev *sv;
    size_t ns;
    const size_t *ord;    /* or NULL */
    const int64_t *ranks; /* or NULL; with nr of them */
    size_t nr;
    size_t lo, hi; /* the positions walked: [0, ns), or a window's (dur_walk_start) */
    int timed;     /* sv is in time order (no index): a window's steps are a range of it */
} step_order;

/* A walk of o: cur is the next step, NULL at the end. */
typedef struct step_cursor {
    const step_order *o;
    size_t k, ri;
    const gp_step_ev *cur;
} step_cursor;

static void cursor_advance(step_cursor *c) {
    const step_order *o = c->o;
    if (!o->ranks) {
        c->cur = c->k < o->hi ? &o->sv[idx_at(o->ord, c->k++)] : NULL;
        return;
    }
    for (; c->ri < o->nr; c->ri++, c->k = o->lo)
        while (c->k < o->hi) {
            const gp_step_ev *s = &o->sv[c->k++];
            if (s->rank == o->ranks[c->ri]) {
                c->cur = s;
                return;
            }
        }
    c->cur = NULL;
}

static step_cursor cursor_of(const step_order *o) {
    step_cursor c = {o, o->lo, 0, NULL};
    cursor_advance(&c);
    return c;
}

/* The distinct ranks of sv[0..n), ascending, into ranks (room for RANK_SCAN_MAX) when sv is
 * in time order and has that few: how many; else 0 (an index then). */
static size_t scan_ranks_of(const gp_step_ev *sv, size_t n, int64_t *ranks) {
    size_t nr = 0;
    for (size_t k = 0; k < n; k++) {
        if (k && sv[k].ts_ns < sv[k - 1].ts_ns) return 0;
        if (k && sv[k].rank == sv[k - 1].rank) continue;
        size_t at = 0;
        while (at < nr && ranks[at] < sv[k].rank)
            at++;
        if (at < nr && ranks[at] == sv[k].rank) continue;
        if (nr == RANK_SCAN_MAX) return 0;
        memmove(&ranks[at + 1], &ranks[at], (nr - at) * sizeof *ranks);
        ranks[at] = sv[k].rank;
        nr++;
    }
    return nr;
}

/* The step durations of events()' walk, again: the whole-job step features (drift, robust
 * median, shared and alone medians) select over the durations walked as often as they
 * need (vsrc below) instead of arrays of them (durations, their times, the shared ones, the
 * alone histogram, the median's deviations: 5 x 184 KB at 23,026 steps, the 60-minute
 * report's peak RSS, docs/benchmarks.md). The same steps in the same (rank, time) order
 * with the same rules as the walk: it meets a rank's steps together (every list it merges
 * is in (rank, time) order), a step's start is its own or the previous step's end of its
 * rank inside the window, and only steps inside the window count. */
typedef struct dur_walk {
    step_order o; /* the walk's: time-ordered steps narrowed to the window's positions */
    step_cursor c;
    int64_t t0_ns, t1_ns, rank, prev_end;
} dur_walk;

/* The first position in [lo, hi) of sv (in time order) whose time is >= t (after: > t). */
static size_t first_at(const gp_step_ev *sv, size_t lo, size_t hi, int64_t t, int after) {
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (after ? sv[mid].ts_ns <= t : sv[mid].ts_ns < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* In place (the cursor points into w). A step outside the window neither counts nor is
 * any step's previous one: a window's walk of time-ordered steps starts at its first step
 * (a diagnosis per window walks its own steps, not the job's, times its selections). */
static void dur_walk_start(dur_walk *w, const step_order *o, int64_t t0_ns, int64_t t1_ns) {
    w->o = *o;
    if (o->timed && !o->ord) {
        w->o.lo = first_at(o->sv, o->lo, o->hi, t0_ns, 0);
        w->o.hi = first_at(o->sv, w->o.lo, o->hi, t1_ns, 1);
    }
    w->c = cursor_of(&w->o);
    w->t0_ns = t0_ns;
    w->t1_ns = t1_ns;
    w->rank = INT64_MIN;
    w->prev_end = -1;
}

/* 1 with the next step that has a duration: *d (s), its end and start (ns); 0 at the end. */
static int dur_walk_next(dur_walk *w, double *d, int64_t *end_ns, int64_t *start_ns) {
    while (w->c.cur) {
        const gp_step_ev *sp = w->c.cur;
        cursor_advance(&w->c);
        if (sp->rank != w->rank) {
            w->rank = sp->rank;
            w->prev_end = -1;
        }
        if (sp->ts_ns < w->t0_ns || sp->ts_ns > w->t1_ns) continue;
        int64_t st = sp->step_start_ns >= 0 ? sp->step_start_ns : w->prev_end;
        w->prev_end = sp->ts_ns;
        if (st >= 0 && sp->ts_ns > st) {
            *d = (double)(sp->ts_ns - st) / NS;
            *end_ns = sp->ts_ns;
            *start_ns = st;
            return 1;
        }
    }
    return 0;
}

/* ---- whole-job quantiles without an array of the values ----
 * A quantile needs every value, but not all at once: its value is the multiset's, and the
 * walks give the same multiset as often as asked. The k-th smallest is found by the bits
 * of the values (a radix selection on an order-preserving key of the double): a pass
 * counts the values of the range still holding rank k by their next SEL_DIGIT bits, the
 * next pass looks only inside the bucket holding it, and once the range holds at most
 * SEL_SMALL values a last pass copies them out and selects among them (kth, as
 * sel_quantile does). A few passes over the steps or requests in memory, with 32 KB of
 * stack, instead of an array of 8 bytes a step or request: 184 KB at train-allreduce's
 * 23,026 steps, 155 KB at llm-decode's 19,366 requests, at the 60-minute report's peak RSS
 * (docs/benchmarks.md). The values are sel_quantile's over an array of the same values,
 * bit for bit: the k-th and (k+1)-th smallest of a multiset are its own, and the
 * interpolation is the same (tests/unit/test_feat_walk.c). */

/* Which steps' values (vsrc), and how each step's duration d is mapped */
enum { SV_ALL, SV_BEFORE, SV_AFTER, SV_SHARED, SV_ALONE };
enum { VM_DUR, VM_DEV, VM_KEPT, VM_SIG_NS };
/* Which requests' values */
enum { RV_TTFT, RV_TPOT, RV_E2E };

typedef struct vsrc {
    const step_order *so; /* steps, or NULL: the requests of mv */
    int64_t t0_ns, t1_ns;
    /* steps: all, those ending at or before c_ns (SV_BEFORE), at or after it (SV_AFTER),
     * those that shared their GPU (gp_features_near_foreign with sh[0..nsh)) or not
     * (SV_ALONE); mapped: d, fabs(d - med) (VM_DEV), d where mad <= 0 or fabs(d - med) <=
     * lim (VM_KEPT, the robust median's filter), the duration in ns at 4 significant digits
     * (VM_SIG_NS, sig_hist.h) */
    int which, map;
    int64_t c_ns;
    const int64_t *sh;
    size_t nsh;
    double med, mad, lim;
    /* requests: ttft, tpot or e2e (s) inside the window, as events()' walk counts them */
    const gp_mark_ev *mv;
    size_t nm, mlo; /* mv[mlo, nm): the window's when mv is in time order */
    int rwhich;
    /* bounds of every value, when known (bounded): the selection's first pass is then not
     * needed; any bounds hold, the tighter the fewer passes */
    int bounded;
    double bmin, bmax;
    dur_walk w;
    size_t i;
} vsrc;

static void vsrc_reset(vsrc *s) {
    if (s->so) dur_walk_start(&s->w, s->so, s->t0_ns, s->t1_ns);
    s->i = s->mlo;
}

static int vsrc_next(vsrc *s, double *v) {
    if (s->so) {
        double d;
        int64_t end, st;
        while (dur_walk_next(&s->w, &d, &end, &st)) {
            if ((s->which == SV_BEFORE && end > s->c_ns) || (s->which == SV_AFTER && end < s->c_ns))
                continue;
            if ((s->which == SV_SHARED || s->which == SV_ALONE) &&
                gp_features_near_foreign(s->sh, s->nsh, end) != (s->which == SV_SHARED))
                continue;
            if (s->map == VM_DEV)
                d = fabs(d - s->med);
            else if (s->map == VM_KEPT && !(s->mad <= 0 || fabs(d - s->med) <= s->lim))
                continue;
            else if (s->map == VM_SIG_NS)
                d = (double)gp_sig_round_ns(end - st);
            *v = d;
            return 1;
        }
        return 0;
    }
    while (s->i < s->nm) {
        const gp_mark_ev *mk = &s->mv[s->i++];
        if (mk->kind != GP_EV_REQUEST || mk->ts_ns < s->t0_ns || mk->ts_ns > s->t1_ns ||
            mk->arrival_ns < 0)
            continue;
        double ee = (double)(mk->ts_ns - mk->arrival_ns) / NS;
        if (s->rwhich == RV_E2E) {
            *v = ee;
            return 1;
        }
        if (mk->first_token_ns < 0) continue;
        double tt = (double)(mk->first_token_ns - mk->arrival_ns) / NS;
        if (s->rwhich == RV_TTFT) {
            *v = tt;
            return 1;
        }
        if (mk->output_tokens > 1) {
            *v = (ee - tt) / (double)(mk->output_tokens - 1);
            return 1;
        }
    }
    return 0;
}

static size_t vsrc_count(vsrc *s) {
    size_t n = 0;
    double v;
    vsrc_reset(s);
    while (vsrc_next(s, &v))
        n++;
    return n;
}

/* An order-preserving key of a double (no NaN here; zero always +0, whose key follows the
 * negatives'), and back. */
static uint64_t key_of(double v) {
    if (v == 0) v = 0;
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u >> 63 ? ~u : u | (1ull << 63);
}
static double val_of(uint64_t k) {
    uint64_t u = k >> 63 ? k & ~(1ull << 63) : ~k;
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

#define SEL_DIGIT 10
#define SEL_SMALL 1024 /* values copied out per rank sought (two at most: 16 KB) */

/* The values of s at the ranks quantile q[j] needs (j < nq <= 2): the (i)-th and (i+1)-th
 * smallest, i = floor(q (n - 1)), into a[j] and b[j] (b[j] when i + 1 < n). n: how many
 * values s has, or 0 to count them; returns the count. A first pass counts them and takes
 * the smallest and largest keys (the bits they share are every value's), each further pass
 * narrows every rank's range by the next SEL_DIGIT bits, the last copies each range out (or
 * finds it is one value repeated) with the smallest key above it. */
static size_t vsrc_select(vsrc *s, size_t n, int nq, const double *q, double *a, double *b) {
    size_t hist[2][1u << SEL_DIGIT];
    double small[2][SEL_SMALL];
    uint64_t kmin = UINT64_MAX, kmax = 0;
    size_t count = 0;
    double v;
    if (n && s->bounded) {
        kmin = key_of(s->bmin);
        kmax = key_of(s->bmax);
    } else {
        vsrc_reset(s);
        while (vsrc_next(s, &v)) {
            uint64_t key = key_of(v);
            if (key < kmin) kmin = key;
            if (key > kmax) kmax = key;
            count++;
        }
    }
    if (!n) n = count;
    if (!n) return 0;
    int shift0 = kmin == kmax ? 0 : 64 - __builtin_clzll(kmin ^ kmax);
    uint64_t low_mask0 = shift0 == 64 ? UINT64_MAX : (1ull << shift0) - 1;
    uint64_t lo[2], hi[2], above[2] = {UINT64_MAX, UINT64_MAX};
    size_t kk[2], cnt[2], m[2] = {0, 0};
    int shift[2];
    for (int j = 0; j < nq; j++) {
        double pos = q[j] * (double)(n - 1);
        kk[j] = (size_t)pos;
        lo[j] = kmin & ~low_mask0;
        hi[j] = lo[j] | low_mask0;
        cnt[j] = n;
        shift[j] = shift0;
    }
    for (;;) {
        int go[2] = {0, 0}, any = 0, low[2] = {0, 0};
        for (int j = 0; j < nq; j++)
            if (cnt[j] > SEL_SMALL && shift[j] > 0) {
                go[j] = any = 1;
                int bits = shift[j] >= SEL_DIGIT ? SEL_DIGIT : shift[j];
                low[j] = shift[j] - bits;
                memset(hist[j], 0, sizeof hist[j]);
            }
        if (!any) break;
        vsrc_reset(s);
        while (vsrc_next(s, &v)) {
            uint64_t key = key_of(v);
            for (int j = 0; j < nq; j++)
                if (go[j] && key >= lo[j] && key <= hi[j])
                    hist[j][(key >> low[j]) & (((uint64_t)1 << (shift[j] - low[j])) - 1)]++;
        }
        for (int j = 0; j < nq; j++) {
            if (!go[j]) continue;
            size_t bk = 0;
            while (kk[j] >= hist[j][bk])
                kk[j] -= hist[j][bk++];
            cnt[j] = hist[j][bk];
            lo[j] |= (uint64_t)bk << low[j];
            hi[j] = lo[j] | (low[j] ? ((uint64_t)1 << low[j]) - 1 : 0);
            shift[j] = low[j];
        }
    }
    vsrc_reset(s);
    while (vsrc_next(s, &v)) {
        uint64_t key = key_of(v);
        for (int j = 0; j < nq; j++) {
            if (key >= lo[j] && key <= hi[j]) {
                if (m[j] < SEL_SMALL) small[j][m[j]] = v == 0 ? 0 : v;
                m[j]++;
            } else if (key > hi[j] && key < above[j])
                above[j] = key;
        }
    }
    for (int j = 0; j < nq; j++) {
        if (m[j] > SEL_SMALL) { /* one value repeated (shift 0): the range is that value */
            a[j] = val_of(lo[j]);
            b[j] = kk[j] + 1 < m[j] ? a[j] : val_of(above[j]);
            continue;
        }
        a[j] = kth(small[j], m[j], kk[j]);
        if (kk[j] + 1 < m[j]) {
            double x = small[j][kk[j] + 1]; /* the smallest after kk */
            for (size_t i = kk[j] + 2; i < m[j]; i++)
                if (small[j][i] < x) x = small[j][i];
            b[j] = x;
        } else
            b[j] = val_of(above[j]); /* meaningless when rank i is the largest: unused */
    }
    return n;
}

/* sel_quantile of s's values at q[j] (j < nq <= 2) into out[j]; n as vsrc_select's.
 * Returns the count. */
static size_t vsrc_quantiles(vsrc *s, size_t n, int nq, const double *q, double *out) {
    double a[2], b[2];
    n = vsrc_select(s, n, nq, q, a, b);
    for (int j = 0; j < nq; j++) {
        if (!n) {
            out[j] = -1;
            continue;
        }
        double pos = q[j] * (double)(n - 1);
        size_t i = (size_t)pos;
        double fr = pos - (double)i;
        out[j] = i + 1 >= n ? a[j] : a[j] * (1 - fr) + b[j] * fr;
    }
    return n;
}

static double vsrc_quantile(vsrc *s, size_t n, double q) {
    double r;
    vsrc_quantiles(s, n, 1, &q, &r);
    return r;
}

/* gp_robust_median of the durations of s (map VM_DUR, n of them): the median, the median
 * of the deviations from it, the median of the durations within k of those. */
static double robust_median_src(vsrc *s, size_t n, double k) {
    if (n == 0) return -1;
    double med = vsrc_quantile(s, n, 0.5);
    s->map = VM_DEV;
    s->med = med;
    /* the deviations lie in [0, the larger at the durations' bounds] (fabs(d - med) grows
     * away from med on either side, rounding included) */
    double dmin = s->bmin, dmax = s->bmax;
    int bounded = s->bounded;
    if (bounded) {
        double x = fabs(dmin - med), y = fabs(dmax - med);
        s->bmin = 0;
        s->bmax = x > y ? x : y;
    }
    double mad = vsrc_quantile(s, n, 0.5);
    s->bmin = dmin;
    s->bmax = dmax;
    s->map = VM_KEPT;
    s->mad = mad;
    s->lim = k * mad;
    size_t m = vsrc_count(s);
    /* all kept: the same multiset, the same median */
    double r = m && m < n ? vsrc_quantile(s, m, 0.5) : med;
    s->map = VM_DUR;
    return r;
}

static int events(const gp_job_input *in, gp_features *f) {
    /* Steps are most of a training job's events, requests and phase edges most of the
     * rest: they are walked as compact records (gp_step_ev, gp_mark_ev), each kind in
     * (rank, time) order through an index, merged with the other events sorted as
     * pointers; the loader never expands them into gp_events. */
    size_t n = 0, n_ev_steps = 0, n_ev_marks = 0;
    gp_mark_ev mk_tmp;
    for (size_t i = 0; i < in->n_events; i++) {
        if (in->events[i].kind == GP_EV_STEP)
            n_ev_steps++;
        else if (gp_mark_of(&in->events[i], &mk_tmp))
            n_ev_marks++;
        else
            n++;
    }
    size_t nm = n_ev_marks + (in->marks ? in->n_marks : 0);
    gp_mark_ev *mv_own = NULL;
    const gp_mark_ev *mv = in->marks;
    if (n_ev_marks) { /* hand-built input with marks among the events: theirs, then in->marks */
        mv_own = malloc(nm * sizeof *mv_own);
        if (!mv_own) return -1;
        size_t k = 0;
        for (size_t i = 0; i < in->n_events; i++)
            if (in->events[i].kind != GP_EV_STEP && gp_mark_of(&in->events[i], &mv_own[k])) k++;
        for (size_t i = 0; in->marks && i < in->n_marks; i++)
            mv_own[k++] = in->marks[i];
        mv = mv_own;
    }
    size_t ns = n_ev_steps + (in->steps ? in->n_steps : 0);
    gp_step_ev *sv_own = NULL;
    const gp_step_ev *sv = in->steps;
    if (n_ev_steps) { /* hand-built input with steps among the events: one array of both */
        sv_own = malloc(ns * sizeof *sv_own);
        if (!sv_own) {
            free(mv_own);
            return -1;
        }
        gp_step_iter it = {0, 0};
        size_t k = 0;
        while (k < ns && gp_step_next(in, &it, &sv_own[k]))
            k++;
        sv = sv_own;
    }
    int steps_sorted = in_order(sv, step_idx_before, ns),
        marks_sorted = in_order(mv, mark_idx_before, nm);
    int64_t scan_ranks[RANK_SCAN_MAX];
    size_t n_scan_ranks = steps_sorted ? 0 : scan_ranks_of(sv, ns, scan_ranks);
    size_t *ord = steps_sorted || n_scan_ranks ? NULL : malloc(ns * sizeof *ord);
    size_t *ordm = marks_sorted ? NULL : malloc(nm * sizeof *ordm);
    const gp_event **e = malloc((n ? n : 1) * sizeof *e);
    int64_t *shared_ts = malloc((in->n_procs ? in->n_procs : 1) * sizeof *shared_ts);
    int rc = -1;
    if ((!ord && !steps_sorted && !n_scan_ranks) || (!ordm && !marks_sorted) || !e || !shared_ts)
        goto out;
    if (ord && sort_steps(sv, ord, ns) < 0) goto out;
    int timed = !ord;
    for (size_t k = 1; timed && k < ns; k++)
        timed = sv[k].ts_ns >= sv[k - 1].ts_ns;
    step_order so = {sv, ns, ord, n_scan_ranks ? scan_ranks : NULL, n_scan_ranks, 0, ns, timed};
    step_cursor sc = cursor_of(&so);
    for (size_t k = 0; ordm && k < nm; k++)
        ordm[k] = k;
    if (sort_idx(mv, mark_idx_before, ordm, nm) < 0) goto out;
    size_t m = 0;
    for (size_t i = 0; i < in->n_events; i++)
        if (in->events[i].kind != GP_EV_STEP && !gp_mark_of(&in->events[i], &mk_tmp))
            e[m++] = &in->events[i];
    qsort(e, m, sizeof *e, cmp_ev_ptr);
    int64_t ready = -1, submitted = in->submitted_ns > 0 ? in->submitted_ns : -1,
            req_lo = INT64_MAX, req_hi = INT64_MIN;
    size_t nd = 0, nt = 0, np = 0, ne = 0;
    double dw = 0, ck = 0, ini = 0, comm = 0, rank_time = 0;
    int64_t cur_rank = INT64_MIN, rank_lo = 0, rank_hi = 0;
    int64_t open_dw = -1, open_ck = -1, open_in = -1, open_cm = -1, prev_end = -1;
    /* foreign processes on the job's GPUs (interference) */
    size_t nsh = gp_features_foreign_ts(in, shared_ts);
    size_t nsh_d = 0, nal_d = 0;
    double dur_sum = 0, dur_sq = 0; /* in the walk's order, as always */
    double dur_min = 0, dur_max = 0, req_min[3] = {0, 0, 0}, req_max[3] = {0, 0, 0};
    int64_t dur_min_ns = 0, dur_max_ns = 0;           /* bounds for the selections (vsrc) */
    int64_t dur_tlo = INT64_MAX, dur_thi = INT64_MIN; /* the steps' ends with a duration */
    /* one walk in (rank, time) order over all three: the next of the other events, of the
     * marks or of the steps; an event or mark first when it ties with a step, an event
     * first when it ties with a mark (they touch different state) */
    for (size_t i = 0, j = 0;;) {
        const gp_event *x = NULL;
        const gp_mark_ev *mk = NULL;
        const gp_step_ev *sp = NULL;
        int take_e = i < m && (j >= nm || !(mv[idx_at(ordm, j)].rank != e[i]->rank
                                                ? mv[idx_at(ordm, j)].rank < e[i]->rank
                                                : mv[idx_at(ordm, j)].ts_ns < e[i]->ts_ns));
        int have_ev = i < m || j < nm;
        gp_step_ev ev_key = {0, 0, 0, 0, 0};
        if (have_ev) {
            ev_key.ts_ns = take_e ? e[i]->ts_ns : mv[idx_at(ordm, j)].ts_ns;
            ev_key.rank = take_e ? e[i]->rank : mv[idx_at(ordm, j)].rank;
        }
        if (have_ev && (!sc.cur || !step_before(sc.cur, &ev_key))) {
            if (take_e)
                x = e[i++];
            else
                mk = &mv[idx_at(ordm, j++)];
        } else if (sc.cur) {
            sp = sc.cur;
            cursor_advance(&sc);
        }
        int have = x || mk || sp;
        int64_t x_rank = x    ? x->rank
                         : mk ? mk->rank
                         : sp ? sp->rank
                              : 0,
                x_ts = x    ? x->ts_ns
                       : mk ? mk->ts_ns
                       : sp ? sp->ts_ns
                            : 0;
        gp_event_kind kind = x ? x->kind : mk ? (gp_event_kind)mk->kind : GP_EV_STEP;
        if (!have || x_rank != cur_rank) {
            if (cur_rank != INT64_MIN && rank_hi > rank_lo) {
                rank_time += (double)(rank_hi - rank_lo) / NS;
                f->n_ranks++;
            }
            if (!have) break;
            cur_rank = x_rank;
            rank_lo = INT64_MAX;
            rank_hi = INT64_MIN;
            open_dw = open_ck = open_in = open_cm = prev_end = -1;
        }
        if (x_ts < f->t0_ns || x_ts > f->t1_ns) continue;
        if (kind == GP_EV_JOB) {
            if (!strcmp(x->name, "submitted")) submitted = x_ts;
            continue;
        }
        if (kind == GP_EV_ALLOC || kind == GP_EV_HELLO) continue;
        f->has_events = 1;
        int64_t lo = x_ts;
        if (sp) {
            int64_t st = sp->step_start_ns >= 0 ? sp->step_start_ns : prev_end;
            if (st >= 0 && st < lo) lo = st;
        }
        if (lo < rank_lo) rank_lo = lo;
        if (x_ts > rank_hi) rank_hi = x_ts;
        if (sp) {
            f->has_steps = 1;
            f->n_steps++;
            if (ready < 0 || sp->ts_ns < ready) ready = sp->ts_ns;
            int64_t st = sp->step_start_ns >= 0 ? sp->step_start_ns : prev_end;
            if (st >= 0 && sp->ts_ns > st) { /* the values: dur_walk, after the walk */
                double d = (double)(sp->ts_ns - st) / NS;
                if (!nd || d < dur_min) dur_min = d;
                if (!nd || d > dur_max) dur_max = d;
                if (!nd || sp->ts_ns - st < dur_min_ns) dur_min_ns = sp->ts_ns - st;
                if (!nd || sp->ts_ns - st > dur_max_ns) dur_max_ns = sp->ts_ns - st;
                nd++;
                dur_sum += d;
                dur_sq += d * d;
                if (sp->ts_ns < dur_tlo) dur_tlo = sp->ts_ns;
                if (sp->ts_ns > dur_thi) dur_thi = sp->ts_ns;
                int shared = gp_features_near_foreign(shared_ts, nsh, sp->ts_ns);
                if (shared) {
                    nsh_d++;
                    if (!f->shared_t0_ns || st < f->shared_t0_ns) f->shared_t0_ns = st;
                    if (sp->ts_ns > f->shared_t1_ns) f->shared_t1_ns = sp->ts_ns;
                } else
                    nal_d++;
            }
            if (sp->units >= 0) f->units = (f->units < 0 ? 0 : f->units) + sp->units;
            prev_end = sp->ts_ns;
            continue;
        }
        switch (kind) {
        case GP_EV_PHASE: {
            int64_t *slot = mk->slot == GP_PS_DATA_WAIT    ? &open_dw
                            : mk->slot == GP_PS_CHECKPOINT ? &open_ck
                            : mk->slot == GP_PS_INIT       ? &open_in
                            : mk->slot == GP_PS_COMM       ? &open_cm
                                                           : NULL;
            double *sum = slot == &open_dw   ? &dw
                          : slot == &open_ck ? &ck
                          : slot == &open_in ? &ini
                                             : &comm;
            if (!slot) break;
            if (mk->edge == GP_PH_BEGIN)
                *slot = mk->ts_ns;
            else if (*slot >= 0) {
                *sum += (double)(mk->ts_ns - *slot) / NS;
                *slot = -1;
            }
            break;
        }
        case GP_EV_REQUEST: {
            f->has_requests = 1;
            f->n_req++;
            {
                /* a server is ready when it first serves; a first request that waited
                 * long for its first token arrived before the server was ready */
                int64_t cand = mk->arrival_ns >= 0 ? mk->arrival_ns : mk->ts_ns;
                int delayed = mk->first_token_ns >= 0 && mk->arrival_ns >= 0 &&
                              mk->first_token_ns - mk->arrival_ns > 30LL * 1000000000LL;
                if (delayed) cand = mk->first_token_ns;
                if (ready < 0 || cand < ready) {
                    ready = cand;
                    f->first_request_delayed = delayed;
                }
            }
            if (mk->ok) f->n_req_ok++;
            int good = req_good(mk, &in->slo);
            if (good) f->n_req_good++;
            double out = mk->output_tokens > 0 ? (double)mk->output_tokens : 0;
            f->tokens_out += out;
            if (good) f->good_tokens += out;
            int64_t a0 = mk->arrival_ns >= 0 ? mk->arrival_ns : mk->ts_ns;
            if (a0 < req_lo) req_lo = a0;
            if (mk->ts_ns > req_hi) req_hi = mk->ts_ns;
            if (mk->arrival_ns >= 0) { /* the values: vsrc, after the walk; their bounds */
                double ee = (double)(mk->ts_ns - mk->arrival_ns) / NS;
                if (!ne || ee < req_min[RV_E2E]) req_min[RV_E2E] = ee;
                if (!ne || ee > req_max[RV_E2E]) req_max[RV_E2E] = ee;
                ne++;
                if (mk->first_token_ns >= 0) {
                    double tt = (double)(mk->first_token_ns - mk->arrival_ns) / NS;
                    if (!nt || tt < req_min[RV_TTFT]) req_min[RV_TTFT] = tt;
                    if (!nt || tt > req_max[RV_TTFT]) req_max[RV_TTFT] = tt;
                    nt++;
                    if (mk->output_tokens > 1) {
                        double tp = (ee - tt) / (double)(mk->output_tokens - 1);
                        if (!np || tp < req_min[RV_TPOT]) req_min[RV_TPOT] = tp;
                        if (!np || tp > req_max[RV_TPOT]) req_max[RV_TPOT] = tp;
                        np++;
                    }
                }
            }
            break;
        }
        case GP_EV_RESTART:
            f->n_restarts++;
            break;
        default:
            break;
        }
    }
    f->ready_ns = ready;
    if (f->first_alloc_ns >= 0 && ready >= 0)
        f->not_ready_s = (double)(ready - f->first_alloc_ns) / NS;
    else if (f->first_alloc_ns >= 0 && f->has_events && ready < 0)
        f->not_ready_s = (double)(f->t1_ns - f->first_alloc_ns) / NS; /* never ready */
    if (submitted >= 0 && f->first_alloc_ns >= 0)
        f->queue_wait_s = (double)(f->first_alloc_ns - submitted) / NS;
    if (rank_time > 0) {
        f->data_wait_share = dw / rank_time;
        f->checkpoint_share = ck / rank_time;
        f->init_share = ini / rank_time;
        f->comm_share = comm / rank_time;
    }
    /* the walk's arrays are gone: each whole-job quantile selects over walks (vsrc) */
    vsrc src;
    memset(&src, 0, sizeof src);
    src.so = &so;
    src.t0_ns = f->t0_ns;
    src.t1_ns = f->t1_ns;
    src.bounded = 1; /* every duration's */
    src.bmin = dur_min;
    src.bmax = dur_max;
    int quantiles = !in->idle_only; /* each a few walks (vsrc): none where unread */
    if (nd) {
        /* drift: last third vs first third by time */
        int64_t c1 = dur_tlo + (dur_thi - dur_tlo) / 3, c2 = dur_thi - (dur_thi - dur_tlo) / 3;
        src.which = SV_BEFORE;
        src.c_ns = c1;
        double early = -1, late = -1;
        if (quantiles && vsrc_quantiles(&src, 0, 1, (const double[]){0.5}, &early) < 3) early = -1;
        src.which = SV_AFTER;
        src.c_ns = c2;
        if (quantiles && vsrc_quantiles(&src, 0, 1, (const double[]){0.5}, &late) < 3) late = -1;
        f->step_drift = early > 0 && late > 0 ? late / early : -1;
        f->mean_step_s = dur_sum / (double)nd;
        double var = dur_sq / (double)nd - f->mean_step_s * f->mean_step_s;
        f->step_cv = f->mean_step_s > 0 ? sqrt(var > 0 ? var : 0) / f->mean_step_s : -1;
        src.which = SV_ALL;
        if (quantiles) f->ideal_step_s = robust_median_src(&src, nd, gp_th(GP_TH_STEP_OUTLIER_MAD));
    }
    if (ready >= 0 && f->units >= 0 && f->t1_ns > ready)
        f->units_per_s = f->units / ((double)(f->t1_ns - ready) / NS);
    if (quantiles && nsh_d >= 5 && nal_d >= 5) {
        src.which = SV_SHARED;
        src.sh = shared_ts;
        src.nsh = nsh;
        double ms = vsrc_quantile(&src, nsh_d, 0.5);
        /* the alone median at 4 significant digits: gp_sig_hist_median_s's */
        src.which = SV_ALONE;
        src.map = VM_SIG_NS; /* rounding keeps the order: the bounds' rounded */
        src.bmin = (double)gp_sig_round_ns(dur_min_ns);
        src.bmax = (double)gp_sig_round_ns(dur_max_ns);
        double pos = 0.5 * (double)(nal_d - 1);
        size_t i = (size_t)pos;
        double fr = pos - (double)i, a_ns, b_ns;
        vsrc_select(&src, nal_d, 1, (const double[]){0.5}, &a_ns, &b_ns);
        double ma = a_ns / 1e9;
        if (i + 1 < nal_d) ma = ma * (1 - fr) + b_ns / 1e9 * fr;
        src.map = VM_DUR;
        src.bmin = dur_min;
        src.bmax = dur_max;
        f->thr_shared = ms > 0 ? 1 / ms : -1;
        f->thr_alone = ma > 0 ? 1 / ma : -1;
    }
    if (nsh_d + nal_d > 0) f->shared_share = (double)nsh_d / (double)(nsh_d + nal_d);
    if (f->n_req && quantiles) {
        vsrc rq;
        memset(&rq, 0, sizeof rq);
        rq.t0_ns = f->t0_ns;
        rq.t1_ns = f->t1_ns;
        rq.mv = mv;
        rq.nm = nm;
        int mtimed = 1; /* the window's requests a range of mv */
        for (size_t k = 1; mtimed && k < nm; k++)
            mtimed = mv[k].ts_ns >= mv[k - 1].ts_ns;
        if (mtimed) {
            size_t lo = 0, hi = nm;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (mv[mid].ts_ns < f->t0_ns)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            rq.mlo = lo;
            for (hi = nm; lo < hi;) {
                size_t mid = lo + (hi - lo) / 2;
                if (mv[mid].ts_ns <= f->t1_ns)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            rq.nm = lo;
        }
        rq.bounded = 1;
        static const double q5090[2] = {0.5, 0.9};
        double r[2];
        const struct {
            int which;
            size_t n;
            double *p50, *p90;
        } lat[3] = {{RV_TTFT, nt, &f->ttft_p50_s, &f->ttft_p90_s},
                    {RV_TPOT, np, &f->tpot_p50_s, &f->tpot_p90_s},
                    {RV_E2E, ne, &f->e2e_p50_s, &f->e2e_p90_s}};
        for (int k = 0; k < 3; k++) {
            rq.rwhich = lat[k].which;
            rq.bmin = req_min[lat[k].which];
            rq.bmax = req_max[lat[k].which];
            vsrc_quantiles(&rq, lat[k].n, 2, q5090, r);
            *lat[k].p50 = lat[k].n ? r[0] : -1;
            *lat[k].p90 = lat[k].n ? r[1] : -1;
        }
    }
    if (f->n_req) {
        double span = req_hi > req_lo ? (double)(req_hi - req_lo) / NS : 0;
        if (span > 0) {
            f->req_per_s = (double)f->n_req / span;
            f->good_req_per_s = (double)f->n_req_good / span;
            f->good_tok_per_s = f->good_tokens / span;
        }
        if (f->tokens_out > 0) f->useful_gpu_s = f->alloc_gpu_s * f->good_tokens / f->tokens_out;
        /* best 1-minute window of completions */
        if (span >= 120) {
            size_t nb = (size_t)(span / 60) + 1;
            int *bins = calloc(nb, sizeof *bins);
            if (bins) {
                for (size_t i = 0; i < nm; i++)
                    if (mv[i].kind == GP_EV_REQUEST && mv[i].ts_ns >= req_lo) {
                        size_t b = (size_t)((double)(mv[i].ts_ns - req_lo) / NS / 60);
                        if (b < nb) bins[b]++;
                    }
                int best = 0;
                for (size_t b = 0; b + 1 < nb; b++)
                    if (bins[b] > best) best = bins[b];
                f->peak_req_per_s = best / 60.0;
                if (f->peak_req_per_s > 0) f->headroom = 1 - f->req_per_s / f->peak_req_per_s;
                free(bins);
            }
        }
    }
    rc = 0;
out:
    free(ord);
    free(ordm);
    free(sv_own);
    free(mv_own);
    free(e);
    free(shared_ts);
    return rc;
}

/* The SLOs to judge requests by: the caller's, else the latest the job declared in a
 * hello (field by field). */
static gp_slo effective_slo(const gp_job_input *in) {
    gp_slo s = in->slo, h = {0, 0, 0};
    int64_t best = INT64_MIN;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_event *e = &in->events[i];
        if (e->kind != GP_EV_HELLO || e->ts_ns < best) continue;
        if (e->slo_ttft_s > 0 || e->slo_tpot_s > 0 || e->slo_e2e_s > 0) {
            best = e->ts_ns;
            h = (gp_slo){e->slo_ttft_s, e->slo_tpot_s, e->slo_e2e_s};
        }
    }
    if (s.ttft_s <= 0 && s.tpot_s <= 0 && s.e2e_s <= 0) return h;
    return s;
}

int gp_features_compute(const gp_job_input *in_arg, gp_features *f, char *err, size_t errlen) {
    gp_job_input in_eff = *in_arg;
    in_eff.slo = effective_slo(in_arg);
    const gp_job_input *in = &in_eff;
    memset(f, 0, sizeof *f);
    f->slo_ttft_s = in->slo.ttft_s;
    f->slo_tpot_s = in->slo.tpot_s;
    f->slo_e2e_s = in->slo.e2e_s;
    f->throttle_share = f->pcie_bytes_s = f->nvlink_bytes_s = f->interconnect_peak_share = -1;
    f->energy_j = f->idle_share = f->not_ready_s = f->queue_wait_s = -1;
    f->ideal_step_s = f->mean_step_s = f->step_cv = f->step_drift = f->units = -1;
    f->units_per_s = -1;
    f->data_wait_share = f->checkpoint_share = f->init_share = f->comm_share = -1;
    f->shared_share = f->thr_shared = f->thr_alone = -1;
    f->ttft_p50_s = f->ttft_p90_s = f->tpot_p50_s = f->tpot_p90_s = f->e2e_p50_s = f->e2e_p90_s =
        -1;
    f->useful_gpu_s = f->headroom = -1;
    f->ready_ns = -1;
    window_of(in, &f->t0_ns, &f->t1_ns);
    f->wall_s = (double)(f->t1_ns - f->t0_ns) / NS;
    f->first_alloc_ns = -1;
    for (size_t i = 0; i < in->n_allocs; i++) {
        const gp_alloc *a = &in->allocs[i];
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(in->allocs[k].uuid, a->uuid)) dup = 1;
        if (!dup) f->n_gpus++;
        if (f->first_alloc_ns < 0 || a->from_ns < f->first_alloc_ns) f->first_alloc_ns = a->from_ns;
        int64_t lo = a->from_ns > f->t0_ns ? a->from_ns : f->t0_ns;
        int64_t to = a->to_ns < 0 ? f->t1_ns : a->to_ns;
        int64_t hi = to < f->t1_ns ? to : f->t1_ns;
        if (hi > lo) f->alloc_gpu_s += (double)(hi - lo) / NS;
    }
    if (in->n_allocs == 0) { /* no allocations: the devices seen in samples */
        for (size_t d = 0; d < in->n_series; d++)
            if (in->series[d].n) f->n_gpus++;
        for (size_t i = 0; !in->n_series && i < in->n_samples; i++) {
            int dup = 0;
            for (size_t k = 0; k < i && !dup; k++)
                if (!strcmp(in->samples[k].uuid, in->samples[i].uuid)) dup = 1;
            if (!dup) f->n_gpus++;
        }
        f->alloc_gpu_s = f->wall_s * f->n_gpus;
    }
    if (events(in, f) < 0) {
        snprintf(err, errlen, "features of job %s: out of memory", in->job_id ? in->job_id : "?");
        return -1;
    }
    if (in_arg->n_deferred && in_arg->load_series) { /* the series, now (features.h) */
        if (in_arg->load_series(in_arg->load_ctx) < 0) {
            snprintf(err, errlen, "features of job %s: cannot read its samples",
                     in->job_id ? in->job_id : "?");
            return -1;
        }
        in_eff.series = in_arg->series;
        in_eff.n_series = in_arg->n_series;
        in_eff.steps = in_arg->steps;
        in_eff.n_steps = in_arg->n_steps;
        in_eff.marks = in_arg->marks;
        in_eff.n_marks = in_arg->n_marks;
        in_eff.n_deferred = in_arg->n_deferred;
        in_eff.deferred_rows = in_arg->deferred_rows;
    }
    if (telemetry(in, f) < 0) {
        snprintf(err, errlen, "features of job %s: out of memory", in->job_id ? in->job_id : "?");
        return -1;
    }
    if (f->useful_gpu_s >= 0 && f->tokens_out > 0)
        f->useful_gpu_s = f->alloc_gpu_s * f->good_tokens / f->tokens_out;
    f->activity_only = !f->has_steps && !f->has_requests;
    /* a server whose first request was served promptly was ready before it arrived: no
     * demand is not "not ready". It was ready once it held the GPU (weights loaded). */
    if (f->has_requests && !f->has_steps && !f->first_request_delayed && f->first_active_ns >= 0 &&
        f->first_alloc_ns >= 0 && f->first_active_ns < f->ready_ns)
        f->not_ready_s = (double)(f->first_active_ns - f->first_alloc_ns) / NS;
    if (f->activity_only && f->first_alloc_ns >= 0 && (f->n_samples_seen > 0))
        f->not_ready_s = (double)((f->first_active_ns >= 0 ? f->first_active_ns : f->t1_ns) -
                                  f->first_alloc_ns) /
                         NS;
    return 0;
}

void gp_features_clip_ready(gp_features *w, const gp_features *whole) {
    int64_t ready = whole->activity_only ? whole->first_active_ns : whole->ready_ns;
    if (w->not_ready_s < 0 || w->first_alloc_ns < 0 || w->first_alloc_ns >= w->t0_ns) return;
    if (ready >= 0 && ready <= w->t0_ns) { /* ready before the window began */
        w->not_ready_s = 0;
        if (!w->activity_only && (w->ready_ns < 0 || w->ready_ns > w->t0_ns))
            w->ready_ns = w->t0_ns;
        return;
    }
    /* still not ready when the window began: only the part inside the window counts */
    int64_t end = ready >= 0 && ready < w->t1_ns ? ready : w->t1_ns;
    w->not_ready_s = end > w->t0_ns ? (double)(end - w->t0_ns) / NS : 0;
}

int gp_features_rolling_with(const gp_job_input *in, int64_t t_end_ns, const gp_features *whole,
                             gp_rolling *out, char *err, size_t errlen) {
    gp_job_input w = *in;
    static const int64_t spans[3] = {60LL * 1000000000, 300LL * 1000000000, 3600LL * 1000000000};
    gp_features *dst[3] = {&out->m1, &out->m5, &out->h1};
    out->whole = *whole;
    for (int i = 0; i < 3; i++) {
        w.t0_ns = t_end_ns - spans[i];
        w.t1_ns = t_end_ns;
        if (gp_features_compute(&w, dst[i], err, errlen) < 0) return -1;
        gp_features_clip_ready(dst[i], whole);
    }
    return 0;
}

int gp_features_rolling(const gp_job_input *in, int64_t t_end_ns, gp_rolling *out, char *err,
                        size_t errlen) {
    gp_job_input w = *in;
    static const int64_t spans[3] = {60LL * 1000000000, 300LL * 1000000000, 3600LL * 1000000000};
    gp_features *dst[3] = {&out->m1, &out->m5, &out->h1};
    w.t0_ns = w.t1_ns = 0;
    if (gp_features_compute(&w, &out->whole, err, errlen) < 0) return -1;
    for (int i = 0; i < 3; i++) {
        w.t0_ns = t_end_ns - spans[i];
        w.t1_ns = t_end_ns;
        if (gp_features_compute(&w, dst[i], err, errlen) < 0) return -1;
        gp_features_clip_ready(dst[i], &out->whole);
    }
    return 0;
}
