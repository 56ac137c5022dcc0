/* idle_cause.c: what the host was doing while the GPU was idle. HTA stops at "the stream
 * waited for the host"; this module says why the host was late.
 *
 * Gaps: the device-level idle intervals (no work on any stream between two merged busy
 * intervals), so their sum is the temporal breakdown's idle time. A gap on one stream that
 * another stream fills costs nothing and is not attributed.
 *
 * Thread: the gap is charged to the thread that launched the GPU op ending it (its runtime
 * call shares the op's correlation id); when that op has no launching call, to the thread
 * that launched the most GPU ops.
 *
 * Cause: the gap is cut at the boundaries of the classified host ops on that thread
 * (DataLoader/collate/pin_memory, collectives, blocking copies and syncs, the optimizer step;
 * profiler overhead on any thread), and each piece goes to the highest-priority op covering
 * it: profiler > data > collective > sync > optimizer (an .item() inside the optimizer step is
 * a sync; a pin_memory inside __next__ is data loading). A piece no such op covers goes to
 * sync when the gap opened while the thread was blocked in a sync (the queue drained because
 * the host waited: the .item() loop), else to launch overhead when the thread issued a launch
 * during the gap (Python between launches: truly host bound), else unknown.
 *
 * aten::to / _to_copy / copy_ count as a sync only when a blocking call runs inside them on
 * the same thread (a .cpu() does, a non_blocking .to("cuda") does not).
 *
 * Rounding: on a trace written with float timestamps, HTA's inward rounding (ceil the start,
 * floor the end) opens a gap of 1 µs between two kernels that touch. Such a gap (at most
 * ROUNDING_US on rounded rows) is as long as the rounding itself, so no cause is claimed for
 * it: it goes to rounding_us, beside the causes (causes + rounding = the temporal idle). On a
 * saturated GPU with thousands of back-to-back kernels these slivers would otherwise be most
 * of the "idle" and all of it "unknown".
 *
 * Cost: sorts of the host ops, the launch map and the GPU starts, then per gap a binary search
 * per class and a sort of the pieces inside it: O(n log n) over events. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/stable_sort.h"
#include "traces/trace.h"

#define SYNC_TOL_US 1.0 /* a sync that returned within 1 µs of the drain caused it (rounding) */
#define ROUNDING_US 1.0 /* the longest gap inward rounding opens between touching kernels */
#define IC_ROUNDING GP_IC__COUNT /* add_piece's slot for rounding slivers (not a cause) */
#define TOP_OPS 3                /* ops quoted per cause */
#define WILD_TID INT32_MIN       /* profiler overhead stalls every thread */

const char *gp_idle_cause_name(int c) {
    static const char *const n[GP_IC__COUNT] = {"data_loading",    "sync",       "optimizer",
                                                "launch_overhead", "collective", "profiler",
                                                "unknown"};
    return c >= 0 && c < GP_IC__COUNT ? n[c] : "unknown";
}

static int cause_of(int hc) {
    switch (hc) {
    case GP_HC_DATA:
        return GP_IC_DATA;
    case GP_HC_SYNC:
        return GP_IC_SYNC;
    case GP_HC_OPTIMIZER:
        return GP_IC_OPTIMIZER;
    case GP_HC_COLLECTIVE:
        return GP_IC_COLLECTIVE;
    case GP_HC_PROFILER:
        return GP_IC_PROFILER;
    case GP_HC_LAUNCH:
        return GP_IC_LAUNCH;
    default:
        return -1;
    }
}

/* Classes that cover a gap, highest priority first. */
static const int prio[] = {GP_IC_PROFILER, GP_IC_DATA, GP_IC_COLLECTIVE, GP_IC_SYNC,
                           GP_IC_OPTIMIZER};
#define NPRIO 5

typedef struct {
    double ts, end;
    int32_t tid;
    int8_t cause; /* GP_IC_*, or -1 dropped; copies are GP_IC__COUNT until resolved */
    uint32_t name;
} hop;

typedef struct {
    double ts, end;
} span;

typedef struct {
    int32_t tid;
    int cause;
    size_t off, n; /* into the merged spans */
} group;

static int cmp_hop(const void *a, const void *b) {
    const hop *x = a, *y = b;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->cause != y->cause) return x->cause < y->cause ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_hop_name(const void *a, const void *b) {
    const hop *x = a, *y = b;
    if (x->cause != y->cause) return x->cause < y->cause ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Merges spans sorted by start into disjoint ones, in place; returns how many. */
static size_t merge_sorted(span *v, size_t n) {
    if (!n) return 0;
    size_t g = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].ts <= v[g].end) {
            if (v[i].end > v[g].end) v[g].end = v[i].end;
        } else
            v[++g] = v[i];
    }
    return g + 1;
}

/* First span in v[0..n) that ends after t (n when none). */
static size_t first_ending_after(const span *v, size_t n, double t) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].end <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static double overlap_len(const span *v, size_t n, double a, double b) {
    double t = 0;
    for (size_t i = first_ending_after(v, n, a); i < n && v[i].ts < b; i++)
        t += fmin(v[i].end, b) - fmax(v[i].ts, a);
    return t;
}

static const group *find_group(const group *g, size_t ng, int32_t tid, int cause) {
    size_t lo = 0, hi = ng;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g[mid].tid < tid || (g[mid].tid == tid && g[mid].cause < cause))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ng && g[lo].tid == tid && g[lo].cause == cause ? &g[lo] : NULL;
}

typedef struct {
    int64_t corr;
    int32_t tid;
} corr_tid;

static int cmp_corr_tid(const void *a, const void *b) {
    const corr_tid *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

typedef struct {
    double ts;
    int64_t corr;
} gstart;

static int cmp_gstart(const void *a, const void *b) {
    const gstart *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

typedef struct {
    double pos;
    int delta, cause;
} edge;

static int cmp_edge(const void *a, const void *b) {
    const edge *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Stable sorts in the order qsort gives with the comparators above (stable_sort.h). */
#define HOP_LESS(a_, b_) (cmp_hop(a_, b_) < 0)
#define HOP_NAME_LESS(a_, b_) (cmp_hop_name(a_, b_) < 0)
#define SPAN_LESS(a_, b_) (cmp_span(a_, b_) < 0)
#define CT_LESS(a_, b_) (cmp_corr_tid(a_, b_) < 0)
#define GS_LESS(a_, b_) (cmp_gstart(a_, b_) < 0)
#define EDGE_LESS(a_, b_) (cmp_edge(a_, b_) < 0)
#define I32_LESS(a_, b_) (*(a_) < *(b_))
GP_STABLE_SORT(sort_hop, hop, HOP_LESS)
GP_STABLE_SORT(sort_hop_name, hop, HOP_NAME_LESS)
GP_STABLE_SORT(sort_span, span, SPAN_LESS)
GP_STABLE_SORT(sort_corr_tid, corr_tid, CT_LESS)
GP_STABLE_SORT(sort_gstart, gstart, GS_LESS)
GP_STABLE_SORT(sort_edge, edge, EDGE_LESS)
GP_STABLE_SORT(sort_i32, int32_t, I32_LESS)

/* Adds the piece [a, b) of cause c to the rank and to the steps it falls in. */
static void add_piece(gp_rank_result *res, double a, double b, int c, int rank_too) {
    if (b <= a) return;
    if (rank_too) *(c == IC_ROUNDING ? &res->rounding_us : &res->idle_cause_us[c]) += b - a;
    size_t lo = 0, hi = res->n_steps;
    while (lo < hi) { /* steps are sorted and disjoint: first step ending after a */
        size_t mid = lo + (hi - lo) / 2;
        if (res->steps[mid].t1 <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < res->n_steps && res->steps[k].t0 < b; k++) {
        double x = fmax(a, res->steps[k].t0), y = fmin(b, res->steps[k].t1);
        gp_step_util *st = &res->steps[k];
        if (y > x) *(c == IC_ROUNDING ? &st->rounding_us : &st->idle_us[c]) += y - x;
    }
}

static void push_hop(hop **v, size_t *n, size_t *cap, const gp_trow *row) {
    int hc = row->hclass;
    int c = hc == GP_HC_COPY ? GP_IC__COUNT : cause_of(hc);
    if (c < 0) return;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *v = realloc(*v, *cap * sizeof **v);
        if (!*v) abort();
    }
    (*v)[(*n)++] = (hop){.ts = row->ts,
                         .end = row->ts + row->dur,
                         .tid = c == GP_IC_PROFILER ? WILD_TID : row->tid,
                         .cause = (int8_t)c,
                         .name = row->name};
}

/* Resolves copies: a sync when a blocking call of the same thread starts inside. */
static void resolve_copies(hop *h, size_t n) {
    size_t ns = 0;
    for (size_t i = 0; i < n; i++)
        ns += h[i].cause == GP_IC_SYNC;
    hop *s = malloc((ns + 1) * sizeof *s);
    if (!s) abort();
    ns = 0;
    for (size_t i = 0; i < n; i++)
        if (h[i].cause == GP_IC_SYNC) s[ns++] = h[i];
    sort_hop(s, ns); /* by tid, then start */
    for (size_t i = 0; i < n; i++) {
        if (h[i].cause != GP_IC__COUNT) continue;
        size_t lo = 0, hi = ns;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s[mid].tid < h[i].tid || (s[mid].tid == h[i].tid && s[mid].ts < h[i].ts))
                lo = mid + 1;
            else
                hi = mid;
        }
        int inside = lo < ns && s[lo].tid == h[i].tid && s[lo].ts < h[i].end;
        h[i].cause = inside ? GP_IC_SYNC : -1;
    }
    free(s);
}

/* The top ops per cause by total time, for evidence. */
static void op_totals(const gp_trace_rank *r, hop *h, size_t n, gp_rank_result *res) {
    sort_hop_name(h, n);
    gp_host_op best[GP_IC__COUNT][TOP_OPS];
    memset(best, 0, sizeof best);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double tot = 0;
        while (j < n && h[j].cause == h[i].cause && h[j].name == h[i].name)
            tot += h[j].end - h[j].ts, j++;
        int c = h[i].cause;
        if (c >= 0 && c < GP_IC__COUNT) {
            gp_host_op *b = best[c];
            for (int k = 0; k < TOP_OPS; k++)
                if (!b[k].count || tot > b[k].total_us) {
                    memmove(&b[k + 1], &b[k], (size_t)(TOP_OPS - 1 - k) * sizeof *b);
                    snprintf(b[k].name, sizeof b[k].name, "%s", r->names[h[i].name]);
                    b[k].cause = c;
                    b[k].count = (uint64_t)(j - i);
                    b[k].total_us = tot;
                    break;
                }
        }
        i = j;
    }
    res->ops = calloc(GP_IC__COUNT * TOP_OPS, sizeof *res->ops);
    if (!res->ops) abort();
    for (int c = 0; c < GP_IC__COUNT; c++)
        for (int k = 0; k < TOP_OPS; k++)
            if (best[c][k].count) res->ops[res->n_ops++] = best[c][k];
}

/* The entry with this correlation id, found exactly as glibc's bsearch finds it (the same
 * probes, so the same entry when ids repeat), without a call per comparison. */
static const corr_tid *find_corr(const corr_tid *ct, size_t n, int64_t corr) {
    size_t l = 0, u = n;
    while (l < u) {
        size_t idx = (l + u) / 2;
        if (corr < ct[idx].corr)
            u = idx;
        else if (corr > ct[idx].corr)
            l = idx + 1;
        else
            return &ct[idx];
    }
    return NULL;
}

/* What one attribution pass needs. */
typedef struct {
    const gp_trace_rank *r;
    gp_rank_result *res;
    const group *grp;
    size_t ng;
    const span *sp;
    const gstart *gs;
    const corr_tid *ct;
    size_t nct;
    int32_t main_tid;
    edge *ev;
    size_t evcap;
    size_t gs_at; /* launcher_at's cursor: gaps come in time order */
    double gs_t;  /* the t it was left at */
} actx;

/* The thread that launched the GPU op starting at t (main_tid when none is known). */
static int32_t launcher_at(actx *x, double t) {
    size_t lo = 0, n = x->r->gpu.n;
    if (t >= x->gs_t) { /* the first start >= t, walked on from the last one */
        lo = x->gs_at;
        while (lo < n && x->gs[lo].ts < t)
            lo++;
    } else {
        size_t hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (x->gs[mid].ts < t)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    x->gs_at = lo;
    x->gs_t = t;
    for (size_t k = lo; k < n && x->gs[k].ts == t; k++) {
        const corr_tid *m = find_corr(x->ct, x->nct, x->gs[k].corr);
        if (m) return m->tid;
    }
    return x->main_tid;
}

/* Splits the idle interval [g0, g1) by cause (thread tid); rank_too: it is inside the GPU
 * span and counts in the rank's totals (the edges before the first and after the last GPU op
 * count only in the steps that hold them). */
static void attribute_gap(actx *x, double g0, double g1, int32_t tid, int rank_too) {
    gp_rank_result *res = x->res;
    if (!(g1 > g0)) return;
    if (x->r->rounded && g1 - g0 <= ROUNDING_US) {
        add_piece(res, g0, g1, IC_ROUNDING, rank_too);
        return;
    }
    if (!res->attributed) {
        add_piece(res, g0, g1, GP_IC_UNKNOWN, rank_too);
        return;
    }
    const span *sp = x->sp;
    /* what the rest of the gap is, where no classified op covers it */
    int rest = GP_IC_UNKNOWN;
    const group *gsync = find_group(x->grp, x->ng, tid, GP_IC_SYNC);
    const group *glaunch = find_group(x->grp, x->ng, tid, GP_IC_LAUNCH);
    if (gsync) {
        const span *v = sp + gsync->off;
        size_t k = first_ending_after(v, gsync->n, g0 - SYNC_TOL_US);
        if (k < gsync->n && v[k].ts <= g0) rest = GP_IC_SYNC;
    }
    if (rest == GP_IC_UNKNOWN && glaunch && overlap_len(sp + glaunch->off, glaunch->n, g0, g1) > 0)
        rest = GP_IC_LAUNCH;
    /* the covered pieces */
    size_t ne = 0;
    for (int p = 0; p < NPRIO; p++) {
        const group *g =
            find_group(x->grp, x->ng, prio[p] == GP_IC_PROFILER ? WILD_TID : tid, prio[p]);
        if (!g) continue;
        const span *v = sp + g->off;
        for (size_t k = first_ending_after(v, g->n, g0); k < g->n && v[k].ts < g1; k++) {
            if (ne + 2 > x->evcap) {
                x->evcap = x->evcap ? x->evcap * 2 : 64;
                x->ev = realloc(x->ev, x->evcap * sizeof *x->ev);
                if (!x->ev) abort();
            }
            x->ev[ne++] = (edge){fmax(v[k].ts, g0), 1, prio[p]};
            x->ev[ne++] = (edge){fmin(v[k].end, g1), -1, prio[p]};
        }
    }
    sort_edge(x->ev, ne);
    int cover[GP_IC__COUNT] = {0};
    double cur = g0;
    for (size_t k = 0; k <= ne; k++) {
        double pos = k < ne ? x->ev[k].pos : g1;
        int c = rest;
        for (int p = 0; p < NPRIO; p++)
            if (cover[prio[p]] > 0) {
                c = prio[p];
                break;
            }
        add_piece(res, cur, pos, c, rank_too);
        cur = pos;
        if (k < ne) cover[x->ev[k].cause] += x->ev[k].delta;
    }
}

void gp_trace_attribute_idle(const gp_trace_rank *r, const double *all_se, size_t nall,
                             gp_rank_result *res) {
    const span *all = (const span *)all_se;
    res->data_share = NAN;
    /* host ops, copies resolved */
    hop *h = NULL;
    size_t nh = 0, caph = 0;
    for (size_t i = 0; i < r->cpu.n; i++)
        if (!(r->cpu.v[i].flags & GP_TR_GPU_SIDE)) push_hop(&h, &nh, &caph, &r->cpu.v[i]);
    for (size_t i = 0; i < r->host.n; i++)
        push_hop(&h, &nh, &caph, &r->host.v[i]);
    resolve_copies(h, nh);
    /* launching thread per correlation id */
    corr_tid *ct = malloc((r->cpu.n + 1) * sizeof *ct);
    if (!ct) abort();
    size_t nct = 0;
    for (size_t i = 0; i < r->cpu.n; i++) {
        const gp_trow *c = &r->cpu.v[i];
        if (!(c->flags & GP_TR_GPU_SIDE) && c->corr >= 0 && c->hclass == GP_HC_LAUNCH)
            ct[nct++] = (corr_tid){c->corr, c->tid};
    }
    sort_corr_tid(ct, nct);
    gstart *gs = malloc((r->gpu.n + 1) * sizeof *gs);
    int32_t *ltid = malloc((r->gpu.n + 1) * sizeof *ltid);
    if (!gs || !ltid) abort();
    size_t nls = 0;
    for (size_t i = 0; i < r->gpu.n; i++) {
        gs[i] = (gstart){r->gpu.v[i].ts, r->gpu.v[i].corr};
        const corr_tid *m = find_corr(ct, nct, r->gpu.v[i].corr);
        if (m) ltid[nls++] = m->tid;
    }
    sort_gstart(gs, r->gpu.n);
    int32_t main_tid = 0;
    if (nls) { /* the thread that launched the most GPU ops */
        sort_i32(ltid, nls);
        size_t best = 0;
        for (size_t i = 0; i < nls;) {
            size_t j = i;
            while (j < nls && ltid[j] == ltid[i])
                j++;
            if (j - i > best) best = j - i, main_tid = ltid[i];
            i = j;
        }
        res->attributed = 1;
    }
    free(ltid);
    /* per (thread, cause): merged spans */
    hop *sorted = malloc((nh + 1) * sizeof *sorted);
    span *sp = malloc((nh + 1) * sizeof *sp);
    group *grp = malloc((nh + 1) * sizeof *grp);
    if (!sorted || !sp || !grp) abort();
    if (nh) {
        memcpy(sorted, h, nh * sizeof *h);
        sort_hop(sorted, nh);
    }
    size_t ng = 0, nsp = 0;
    for (size_t i = 0; i < nh;) {
        size_t j = i;
        while (j < nh && sorted[j].tid == sorted[i].tid && sorted[j].cause == sorted[i].cause)
            j++;
        if (sorted[i].cause >= 0) {
            size_t off = nsp;
            for (size_t k = i; k < j; k++)
                sp[nsp++] = (span){sorted[k].ts, sorted[k].end};
            size_t m = merge_sorted(sp + off, j - i);
            nsp = off + m;
            grp[ng++] = (group){sorted[i].tid, sorted[i].cause, off, m};
        }
        i = j;
    }
    /* the gaps inside the GPU span, then the steps' edges outside it */
    actx x = {.r = r,
              .res = res,
              .grp = grp,
              .ng = ng,
              .sp = sp,
              .gs = gs,
              .ct = ct,
              .nct = nct,
              .main_tid = main_tid,
              .gs_t = -INFINITY};
    for (size_t gi = 0; gi + 1 < nall; gi++)
        attribute_gap(&x, all[gi].end, all[gi + 1].ts, launcher_at(&x, all[gi + 1].ts), 1);
    if (nall && res->n_steps) {
        attribute_gap(&x, fmin(res->steps[0].t0, all[0].ts), all[0].ts, launcher_at(&x, all[0].ts),
                      0);
        attribute_gap(&x, all[nall - 1].end,
                      fmax(res->steps[res->n_steps - 1].t1, all[nall - 1].end), main_tid, 0);
    }
    free(x.ev);
    /* data loading's share of step time (all threads: a loader thread stalls the step too) */
    size_t nd = 0;
    for (size_t i = 0; i < nh; i++)
        if (h[i].cause == GP_IC_DATA) sp[nd++] = (span){h[i].ts, h[i].end};
    sort_span(sp, nd);
    nd = merge_sorted(sp, nd);
    double step_us = 0, data_us = 0;
    for (size_t k = 0; k < res->n_steps; k++) {
        gp_step_util *s = &res->steps[k];
        s->data_us = overlap_len(sp, nd, s->t0, s->t1);
        step_us += s->t1 - s->t0;
        data_us += s->data_us;
    }
    if (!res->n_steps && nall) {
        step_us = all[nall - 1].end - all[0].ts;
        data_us = overlap_len(sp, nd, all[0].ts, all[nall - 1].end);
    }
    if (res->attributed && step_us > 0) res->data_share = data_us / step_us;
    op_totals(r, h, nh, res);
    free(sorted);
    free(sp);
    free(grp);
    free(gs);
    free(ct);
    free(h);
}
