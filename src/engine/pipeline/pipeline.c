/* pipeline.c: per-stage measurements, the bottleneck, the pipeline_bottleneck finding and
 * pool sizing from a job's stage events (definitions in pipeline.h and docs/pipelines.md).
 *
 * Design: one pass groups item events by stage (a linear scan over at most
 * GP_PIPE_MAX_STAGES names, with a one-entry cache since events of a stage cluster), then
 * each stage is a sweep over its enqueue/start/end points sorted by time, which gives
 * queue length, busy workers and starvation exactly (piecewise-constant integrals) in
 * O(n log n). Backpressure needs the next stage's enqueue of the same item: items are
 * matched by id with a binary search over the downstream stage's items sorted by id.
 * Stage order comes from declared upstream stages (Kahn's algorithm), else from the time
 * each stage first started work, which for a chain is its position. */
#include "engine/pipeline/pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/cost.h"

/* Why these values: a stage is "the" bottleneck when its capacity is at least 15% below
 * the next one (less is within run-to-run noise of service times on shared machines); a
 * GPU idle a quarter of its time for lack of input is worth a finding on its own (the
 * input_bound "ghost GPU" threshold family uses the same order of magnitude). */
#define BN_MARGIN_MIN 1.15
#define GPU_STARVED_SHARE_MIN 0.25
#define BUSY_UTIL_HIGH 0.8
/* Fewer handoff samples than this and a stage's median handoff is not trusted. */
#define HANDOFF_MIN_SAMPLES 5

typedef struct {
    int64_t item, enq, start, end;
    int w; /* worker index in the stage's worker names; -1 unnamed */
} rec;

typedef struct {
    char name[GP_NAME_MAX];
    rec *r;
    size_t n, cap;
    char (*workers)[GP_NAME_MAX];
    int n_workers, workers_overflow;
    int64_t first_start;
    int declared, pool, resource, queue;
    char upstream[GP_NAME_MAX];
    int n_up, up[GP_PIPE_MAX_UPSTREAM];
    rec *by_item; /* copy sorted by item id (items with an id only) */
    size_t n_by_item;
} acc;

#define MAX_WORKER_NAMES 256

static int fail(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return -1;
}

static int find_acc(acc *a, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(a[i].name, name)) return i;
    return -1;
}

static int cmp_rec_item(const void *x, const void *y) {
    const rec *a = x, *b = y;
    return (a->item > b->item) - (a->item < b->item);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static const rec *find_item(const acc *a, int64_t item) {
    size_t lo = 0, hi = a->n_by_item;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->by_item[mid].item < item)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < a->n_by_item && a->by_item[lo].item == item ? &a->by_item[lo] : NULL;
}

/* Index of worker w in the stage's names, adding it; -1 when unnamed or too many. */
static int note_worker(acc *a, const char *w) {
    if (!w[0] || a->workers_overflow) return -1;
    for (int i = 0; i < a->n_workers; i++)
        if (!strcmp(a->workers[i], w)) return i;
    if (!a->workers) a->workers = calloc(MAX_WORKER_NAMES, sizeof *a->workers);
    if (!a->workers || a->n_workers >= MAX_WORKER_NAMES) {
        a->workers_overflow = 1;
        return -1;
    }
    snprintf(a->workers[a->n_workers], GP_NAME_MAX, "%s", w);
    return a->n_workers++;
}

static int cmp_rec_worker(const void *x, const void *y) {
    const rec *a = x, *b = y;
    if (a->w != b->w) return (a->w > b->w) - (a->w < b->w);
    return (a->start > b->start) - (a->start < b->start);
}

/* Handoff overhead of a stage: the median time a worker takes, after it is free (its item
 * finished and handed downstream), to start the next item that was already waiting. This
 * is the per-item cost outside start..end (dequeue, IPC, reporting) that still occupies a
 * worker; the simulator adds it to each service time. down: the first downstream stage. */
static double handoff_overhead(const acc *a, const acc *down, size_t *n_samples) {
    *n_samples = 0;
    if (a->n < 2 || a->workers_overflow || a->n_workers == 0) return 0;
    rec *r = malloc(a->n * sizeof *r);
    double *g = malloc(a->n * sizeof *g);
    size_t ng = 0;
    if (!r || !g) {
        free(r);
        free(g);
        return 0;
    }
    memcpy(r, a->r, a->n * sizeof *r);
    qsort(r, a->n, sizeof *r, cmp_rec_worker);
    for (size_t i = 0; i + 1 < a->n; i++) {
        if (r[i].w < 0 || r[i].w != r[i + 1].w) continue;
        int64_t free_at = r[i].end;
        if (down && r[i].item >= 0) {
            const rec *d = find_item(down, r[i].item);
            if (d && d->enq > free_at) free_at = d->enq;
        }
        if (r[i + 1].enq < 0 || r[i + 1].enq > free_at) continue; /* it waited for work */
        int64_t gap = r[i + 1].start - free_at;
        if (gap >= 0) g[ng++] = (double)gap * 1e-9;
    }
    double med = 0;
    if (ng) {
        qsort(g, ng, sizeof *g, cmp_double);
        med = g[ng / 2];
    }
    free(r);
    free(g);
    *n_samples = ng;
    return med;
}

/* Splits "a,b" into upstream names and resolves them against the stages seen. */
static void resolve_upstream(acc *a, int n) {
    for (int i = 0; i < n; i++) {
        char buf[GP_NAME_MAX];
        snprintf(buf, sizeof buf, "%s", a[i].upstream);
        char *save = NULL;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int j = find_acc(a, n, t);
            if (j >= 0 && j != i && a[i].n_up < GP_PIPE_MAX_UPSTREAM) a[i].up[a[i].n_up++] = j;
        }
    }
}

/* Topological order of the stages (ties and undeclared graphs: by first start). Writes
 * order[0..n). Falls back to first-start order on a cycle. */
static void stage_order(acc *a, int n, int *order) {
    int by_time[GP_PIPE_MAX_STAGES];
    for (int i = 0; i < n; i++)
        by_time[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: n <= 32 */
        for (int j = i; j > 0 && a[by_time[j]].first_start < a[by_time[j - 1]].first_start; j--) {
            int t = by_time[j];
            by_time[j] = by_time[j - 1];
            by_time[j - 1] = t;
        }
    int any_up = 0;
    for (int i = 0; i < n; i++)
        any_up |= a[i].n_up > 0;
    if (!any_up) { /* no declared graph: a chain in order of first activity */
        for (int k = 0; k < n; k++) {
            order[k] = by_time[k];
            if (k > 0) {
                a[by_time[k]].n_up = 1;
                a[by_time[k]].up[0] = by_time[k - 1];
            }
        }
        return;
    }
    int indeg[GP_PIPE_MAX_STAGES] = {0}, placed[GP_PIPE_MAX_STAGES] = {0};
    for (int i = 0; i < n; i++)
        indeg[i] = a[i].n_up;
    for (int k = 0; k < n; k++) {
        int pick = -1;
        for (int t = 0; t < n && pick < 0; t++)
            if (!placed[by_time[t]] && indeg[by_time[t]] == 0) pick = by_time[t];
        if (pick < 0) { /* cycle: give up on the graph */
            for (int t = 0; t < n; t++)
                order[t] = by_time[t];
            return;
        }
        placed[pick] = 1;
        order[k] = pick;
        for (int i = 0; i < n; i++)
            for (int u = 0; u < a[i].n_up; u++)
                if (a[i].up[u] == pick) indeg[i]--;
    }
}

typedef struct {
    int64_t t;
    int dq, db;
    int order; /* at equal times: 0 arrival, 1 end, 2 start */
} point;

static int cmp_point(const void *x, const void *y) {
    const point *a = x, *b = y;
    if (a->t != b->t) return (a->t > b->t) - (a->t < b->t);
    /* At equal times: arrivals first (the queue never goes negative), then ends before
     * starts (a worker finishing one item and starting the next is one worker, not two). */
    return a->order - b->order;
}

static double quantile(const double *s, size_t n, double q) {
    if (!n) return 0;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n) return s[n - 1];
    return s[i] + (pos - (double)i) * (s[i + 1] - s[i]);
}

/* Queue, busy and starvation integrals of one stage over [t0, t1). */
static int sweep_stage(const acc *a, const acc *up, gp_pipe_stage *st, int64_t t0, int64_t t1) {
    point *pt = malloc(3 * a->n * sizeof *pt);
    if (!pt) return -1;
    size_t np = 0;
    for (size_t i = 0; i < a->n; i++) {
        const rec *r = &a->r[i];
        int64_t enq = r->enq;
        if (enq < 0 && up && r->item >= 0) {
            const rec *u = find_item(up, r->item);
            if (u) enq = u->end;
        }
        if (enq < 0 || enq > r->start) enq = r->start;
        pt[np++] = (point){enq, +1, 0, 0};
        pt[np++] = (point){r->start, -1, +1, 2};
        pt[np++] = (point){r->end, 0, -1, 1};
    }
    qsort(pt, np, sizeof *pt, cmp_point);
    int peak = 0, b = 0;
    for (size_t i = 0; i < np; i++) {
        b += pt[i].db;
        if (b > peak) peak = b;
    }
    if (st->workers < peak) st->workers = peak;
    if (st->workers < 1) st->workers = 1;
    const double W = st->workers, span = (double)(t1 - t0) * 1e-9;
    const double bw = span / GP_PIPE_SERIES;
    double q_int = 0, qmax = 0;
    long q = 0;
    b = 0;
    int64_t prev = t0;
    for (size_t i = 0; i <= np; i++) {
        int64_t t = i < np ? pt[i].t : t1;
        if (t > t1) t = t1;
        if (t > prev) {
            double x0 = (double)(prev - t0) * 1e-9, x1 = (double)(t - t0) * 1e-9, dt = x1 - x0;
            q_int += (double)q * dt;
            if (q == 0 && b < W) {
                st->starved_worker_s += (W - b) * dt;
                st->starved_s += dt;
            }
            if (q > 0 && bw > 0) {
                int k0 = (int)(x0 / bw), k1 = (int)(x1 / bw);
                if (k1 >= GP_PIPE_SERIES) k1 = GP_PIPE_SERIES - 1;
                for (int k = k0; k <= k1 && k < GP_PIPE_SERIES; k++) {
                    double lo = fmax(x0, k * bw), hi = fmin(x1, (k + 1) * bw);
                    if (hi > lo) st->queue_series[k] += (double)q * (hi - lo);
                }
            }
            prev = t;
        }
        if (i == np) break;
        q += pt[i].dq;
        b += pt[i].db;
        if (q > qmax) qmax = (double)q;
    }
    for (int k = 0; k < GP_PIPE_SERIES; k++)
        st->queue_series[k] = bw > 0 ? st->queue_series[k] / bw : 0;
    st->queue_mean = span > 0 ? q_int / span : 0;
    st->queue_max = qmax;
    free(pt);
    return 0;
}

static void free_accs(acc *a, int n) {
    for (int i = 0; i < n; i++) {
        free(a[i].r);
        free(a[i].workers);
        free(a[i].by_item);
    }
    free(a);
}

int gp_pipeline_find_stage(const gp_pipeline *p, const char *name) {
    for (int i = 0; i < p->n_stages; i++)
        if (!strcmp(p->stage[i].name, name)) return i;
    return -1;
}

int gp_pipeline_analyze(const gp_event *ev, size_t n, const gp_pipe_opts *o, gp_pipeline *out,
                        char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->bottleneck = -1;
    acc *a = calloc(GP_PIPE_MAX_STAGES, sizeof *a);
    if (!a) return fail(err, errlen, "out of memory");
    int na = 0, last = -1;
    size_t n_items = 0;
    for (size_t i = 0; i < n; i++) {
        const gp_event *e = &ev[i];
        if (e->kind != GP_EV_STAGE || !e->name[0]) continue;
        if (!out->job_id[0]) snprintf(out->job_id, sizeof out->job_id, "%s", e->job_id);
        int k = (last >= 0 && !strcmp(a[last].name, e->name)) ? last : find_acc(a, na, e->name);
        if (k < 0) {
            if (na == GP_PIPE_MAX_STAGES) {
                free_accs(a, na);
                if (err && errlen)
                    snprintf(err, errlen, "pipeline has more than %d stages (stage '%s')",
                             GP_PIPE_MAX_STAGES, e->name);
                return -1;
            }
            k = na++;
            snprintf(a[k].name, sizeof a[k].name, "%s", e->name);
            a[k].first_start = INT64_MAX;
            a[k].queue = -1;
        }
        last = k;
        acc *s = &a[k];
        if (e->step >= 0) { /* declaration: the latest wins */
            s->declared = 1;
            s->pool = (int)(e->step > 100000 ? 100000 : e->step);
            s->resource = e->edge == GP_STAGE_GPU ? GP_STAGE_GPU : GP_STAGE_CPU;
            snprintf(s->upstream, sizeof s->upstream, "%s", e->worker);
            s->queue = e->bytes >= 0 && e->bytes < 1000000000 ? (int)e->bytes : -1;
            continue;
        }
        if (e->ts_ns < 0) continue;
        if (s->n == s->cap) {
            size_t nc = s->cap ? 2 * s->cap : 256;
            rec *r = realloc(s->r, nc * sizeof *r);
            if (!r) {
                free_accs(a, na);
                return fail(err, errlen, "out of memory");
            }
            s->r = r;
            s->cap = nc;
        }
        rec *r = &s->r[s->n++];
        r->item = e->item;
        r->end = e->ts_ns;
        r->start = e->start_ns >= 0 && e->start_ns <= e->ts_ns ? e->start_ns : e->ts_ns;
        r->enq = e->enqueue_ns;
        if (r->start < s->first_start) s->first_start = r->start;
        r->w = note_worker(s, e->worker);
        n_items++;
    }
    if (n_items == 0) {
        free_accs(a, na);
        return fail(err, errlen, "no stage item events (stage lines with item, start and ts)");
    }
    resolve_upstream(a, na);
    int order[GP_PIPE_MAX_STAGES], pos[GP_PIPE_MAX_STAGES];
    stage_order(a, na, order);
    for (int k = 0; k < na; k++)
        pos[order[k]] = k;

    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (int i = 0; i < na; i++)
        for (size_t j = 0; j < a[i].n; j++) {
            if (a[i].r[j].start < t0) t0 = a[i].r[j].start;
            if (a[i].r[j].end > t1) t1 = a[i].r[j].end;
        }
    if (t1 <= t0) t1 = t0 + 1;
    out->t0_ns = t0;
    out->t1_ns = t1;
    out->span_s = (double)(t1 - t0) * 1e-9;
    for (int i = 0; i < na; i++) { /* by-item copies for matching across stages */
        acc *s = &a[i];
        s->by_item = malloc((s->n ? s->n : 1) * sizeof *s->by_item);
        if (!s->by_item) {
            free_accs(a, na);
            return fail(err, errlen, "out of memory");
        }
        for (size_t j = 0; j < s->n; j++)
            if (s->r[j].item >= 0) s->by_item[s->n_by_item++] = s->r[j];
        qsort(s->by_item, s->n_by_item, sizeof *s->by_item, cmp_rec_item);
    }

    out->n_stages = na;
    for (int k = 0; k < na; k++) {
        const acc *s = &a[order[k]];
        gp_pipe_stage *st = &out->stage[k];
        snprintf(st->name, sizeof st->name, "%s", s->name);
        st->declared = s->declared;
        st->resource = s->declared ? s->resource : 0;
        st->queue_bound = s->declared ? s->queue : -1;
        st->workers = s->declared && s->pool > 0                   ? s->pool
                      : (s->n_workers > 0 && !s->workers_overflow) ? s->n_workers
                                                                   : 0;
        for (int u = 0; u < s->n_up; u++)
            st->upstream[st->n_upstream++] = pos[s->up[u]];
        st->n_items = s->n;
        st->throughput_per_s = (double)s->n / out->span_s;
        st->svc_s = malloc((s->n ? s->n : 1) * sizeof *st->svc_s);
        if (!st->svc_s) {
            free_accs(a, na);
            gp_pipeline_free(out);
            return fail(err, errlen, "out of memory");
        }
        double sum = 0, sum2 = 0;
        for (size_t j = 0; j < s->n; j++) {
            double d = (double)(s->r[j].end - s->r[j].start) * 1e-9;
            st->svc_s[j] = d;
            sum += d;
            sum2 += d * d;
        }
        st->n_svc = s->n;
        qsort(st->svc_s, st->n_svc, sizeof *st->svc_s, cmp_double);
        if (s->n) {
            st->svc_mean_s = sum / (double)s->n;
            double var = sum2 / (double)s->n - st->svc_mean_s * st->svc_mean_s;
            st->svc_cv = st->svc_mean_s > 0 ? sqrt(var > 0 ? var : 0) / st->svc_mean_s : 0;
            st->svc_p50_s = quantile(st->svc_s, st->n_svc, 0.5);
            st->svc_p90_s = quantile(st->svc_s, st->n_svc, 0.9);
            st->svc_p99_s = quantile(st->svc_s, st->n_svc, 0.99);
            st->svc_max_s = st->svc_s[st->n_svc - 1];
        }
        st->busy_s = sum;
        const acc *up = s->n_up > 0 ? &a[s->up[0]] : NULL;
        if (sweep_stage(s, up, st, t0, t1) < 0) {
            free_accs(a, na);
            gp_pipeline_free(out);
            return fail(err, errlen, "out of memory");
        }
        st->utilization = st->busy_s / (st->workers * out->span_s);
        if (st->utilization > 1) st->utilization = 1;
        st->idle_worker_s = fmax(0, st->workers * out->span_s - st->busy_s);
        if (st->starved_worker_s > st->idle_worker_s) st->starved_worker_s = st->idle_worker_s;
    }
    size_t n_handoff[GP_PIPE_MAX_STAGES] = {0};
    /* Backpressure: a finished item waits for room in the first downstream stage's queue. */
    for (int k = 0; k < na; k++) {
        const acc *s = &a[order[k]];
        int down = -1;
        for (int d = k + 1; d < na && down < 0; d++)
            for (int u = 0; u < out->stage[d].n_upstream; u++)
                if (out->stage[d].upstream[u] == k) down = d;
        if (down < 0) {
            out->stage[k].handoff_s = handoff_overhead(s, NULL, &n_handoff[k]);
            continue;
        }
        const acc *ds = &a[order[down]];
        double blocked = 0;
        for (size_t j = 0; j < s->n; j++) {
            if (s->r[j].item < 0) continue;
            const rec *r = find_item(ds, s->r[j].item);
            if (r && r->enq > s->r[j].end) blocked += (double)(r->enq - s->r[j].end) * 1e-9;
        }
        gp_pipe_stage *st = &out->stage[k];
        st->handoff_s = handoff_overhead(s, ds, &n_handoff[k]);
        st->blocked_s = blocked;
        st->starved_share = st->idle_worker_s > 0 ? st->starved_worker_s / st->idle_worker_s : 0;
        st->blocked_share = st->idle_worker_s > 0 ? fmin(1, blocked / st->idle_worker_s) : 0;
    }
    /* A stage that never had work waiting (a starved GPU stage, typically) shows no handoff;
     * it pays the same dequeue/IPC cost as its neighbours once fed, so borrow the median of
     * the stages that were measured, rather than assume zero. */
    double hm[GP_PIPE_MAX_STAGES];
    int nh = 0;
    for (int k = 0; k < na; k++)
        if (n_handoff[k] >= HANDOFF_MIN_SAMPLES) hm[nh++] = out->stage[k].handoff_s;
    if (nh) {
        qsort(hm, (size_t)nh, sizeof *hm, cmp_double);
        double borrowed = nh % 2 ? hm[nh / 2] : (hm[nh / 2 - 1] + hm[nh / 2]) / 2;
        for (int k = 0; k < na; k++)
            if (n_handoff[k] < HANDOFF_MIN_SAMPLES) {
                out->stage[k].handoff_s = borrowed;
                out->stage[k].handoff_borrowed = 1;
            }
    }
    for (int k = 0; k < na; k++) {
        gp_pipe_stage *st = &out->stage[k];
        st->starved_share = st->idle_worker_s > 0 ? st->starved_worker_s / st->idle_worker_s : 0;
        double cycle = st->svc_mean_s + st->handoff_s;
        st->capacity_per_s = cycle > 0 ? st->workers / cycle : INFINITY;
    }
    free_accs(a, na);

    /* The sink: the last stage in order that feeds no other. */
    out->sink = na - 1;
    out->items_done = out->stage[out->sink].n_items;
    double gpu_busy = 0, gpu_w = 0;
    double price_g = gp_price_per_gpu_h(NULL, o ? o->price_gpu_h : 0);
    double price_c = o && o->price_cpu_h > 0 ? o->price_cpu_h : GP_PIPE_DEFAULT_CPU_PRICE;
    out->price_gpu_h = price_g;
    out->price_cpu_h = price_c;
    double lo = INFINITY, lo2 = INFINITY;
    for (int k = 0; k < na; k++) {
        gp_pipe_stage *st = &out->stage[k];
        st->visit_ratio = out->items_done ? (double)st->n_items / (double)out->items_done : 1;
        if (st->visit_ratio <= 0) st->visit_ratio = 1;
        st->e2e_capacity_per_s = st->capacity_per_s / st->visit_ratio;
        if (st->resource == GP_STAGE_GPU) {
            gpu_busy += st->busy_s;
            gpu_w += st->workers;
            out->cost_per_h += st->workers * price_g;
        } else {
            out->cost_per_h += st->workers * price_c;
        }
        if (st->e2e_capacity_per_s < lo) {
            lo2 = lo;
            lo = st->e2e_capacity_per_s;
            out->bottleneck = k;
        } else if (st->e2e_capacity_per_s < lo2) {
            lo2 = st->e2e_capacity_per_s;
        }
    }
    if (out->bottleneck >= 0 && !isfinite(lo)) out->bottleneck = -1;
    out->bn_margin = out->bottleneck >= 0 && isfinite(lo2) && lo > 0 ? lo2 / lo : 1;
    out->gpu_busy_share = gpu_w > 0 ? fmin(1, gpu_busy / (gpu_w * out->span_s)) : -1;
    out->e2e_per_s = (double)out->items_done / out->span_s;
    out->e2e_per_h = out->e2e_per_s * 3600;
    out->items_per_usd = out->cost_per_h > 0 ? out->e2e_per_h / out->cost_per_h : -1;
    return 0;
}

void gp_pipeline_free(gp_pipeline *p) {
    for (int k = 0; k < p->n_stages && k < GP_PIPE_MAX_STAGES; k++) {
        free(p->stage[k].svc_s);
        p->stage[k].svc_s = NULL;
        p->stage[k].n_svc = 0;
    }
}

static double cycle_s(const gp_pipe_stage *st) {
    return st->svc_mean_s + st->handoff_s;
}

static double e2e_cap(const gp_pipe_stage *st, int workers) {
    if (cycle_s(st) <= 0) return INFINITY;
    return workers / (cycle_s(st) * st->visit_ratio);
}

void gp_pipeline_size(const gp_pipeline *p, int cpu_budget, int gpu_budget, gp_pipe_sizing *out) {
    memset(out, 0, sizeof *out);
    int used_c = 0, used_g = 0;
    for (int k = 0; k < p->n_stages; k++) {
        if (p->stage[k].resource == GP_STAGE_GPU)
            used_g += p->stage[k].workers;
        else
            used_c += p->stage[k].workers;
    }
    /* Default budgets: keep the GPUs in use now, and as many CPU workers as it takes to feed
     * them (GPUs are the expensive resource); a CPU-only pipeline rebalances its workers. */
    out->gpu_budget = gpu_budget > 0 ? gpu_budget : used_g;
    out->cpu_budget = cpu_budget > 0 ? cpu_budget : used_g > 0 ? 1000000 : used_c;
    int have_c = 0, have_g = 0;
    for (int k = 0; k < p->n_stages; k++) {
        out->workers[k] = 1;
        if (p->stage[k].resource == GP_STAGE_GPU)
            have_g++;
        else
            have_c++;
    }
    out->limiting = -1;
    for (int iter = 0; iter < 1000000; iter++) {
        int m = -1;
        double mc = INFINITY;
        for (int k = 0; k < p->n_stages; k++) {
            double c = e2e_cap(&p->stage[k], out->workers[k]);
            if (c < mc) mc = c, m = k;
        }
        out->limiting = m;
        out->rate_per_s = mc;
        if (m < 0) break;
        /* Among the stages tied at the minimum, one that cannot grow caps the rate: stop. */
        int stuck = 0;
        for (int k = 0; k < p->n_stages && !stuck; k++) {
            if (e2e_cap(&p->stage[k], out->workers[k]) > mc * (1 + 1e-9)) continue;
            int g = p->stage[k].resource == GP_STAGE_GPU;
            if (g ? have_g >= out->gpu_budget : have_c >= out->cpu_budget)
                stuck = 1, out->limiting = k;
        }
        if (stuck) break;
        int gpu = p->stage[m].resource == GP_STAGE_GPU;
        out->workers[m]++;
        if (gpu)
            have_g++;
        else
            have_c++;
    }
    if (cpu_budget <= 0 && used_g > 0) out->cpu_budget = have_c;
    out->scale_first = p->bottleneck;
    out->scale_first_to = 0;
    if (p->bottleneck >= 0) {
        const gp_pipe_stage *b = &p->stage[p->bottleneck];
        double next = INFINITY;
        for (int k = 0; k < p->n_stages; k++)
            if (k != p->bottleneck && p->stage[k].e2e_capacity_per_s < next)
                next = p->stage[k].e2e_capacity_per_s;
        if (isfinite(next)) {
            double w = ceil(next * cycle_s(b) * b->visit_ratio - 1e-9);
            out->scale_first_to = (int)fmax(w, b->workers + 1);
        } else {
            out->scale_first_to = b->workers + 1;
        }
    }
}

int gp_pipeline_finding(const gp_pipeline *p, gp_finding *f) {
    if (p->bottleneck < 0 || p->n_stages < 2) return 0;
    const gp_pipe_stage *b = &p->stage[p->bottleneck];
    int starved_gpu = -1;
    double wasted = 0;
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *st = &p->stage[k];
        if (st->resource != GP_STAGE_GPU) continue;
        wasted += fmin(st->idle_worker_s, st->starved_worker_s + st->blocked_s);
        if (k != p->bottleneck && st->starved_worker_s > 0 &&
            (starved_gpu < 0 || st->starved_share > p->stage[starved_gpu].starved_share))
            starved_gpu = k;
    }
    double gpu_idle_share =
        starved_gpu >= 0 ? 1 - p->stage[starved_gpu].utilization : 0; /* of the GPU's time */
    int gpu_starves = starved_gpu >= 0 &&
                      gpu_idle_share * p->stage[starved_gpu].starved_share >= GPU_STARVED_SHARE_MIN;
    if (p->bn_margin < BN_MARGIN_MIN && !gpu_starves) return 0;
    /* GPUs that own the run and are busy are the state a pipeline should be in: not a
     * problem to report (`goodput pipeline` still names the stage and the sizing). */
    if (b->resource == GP_STAGE_GPU && b->utilization >= BUSY_UTIL_HIGH && !gpu_starves) return 0;

    memset(f, 0, sizeof *f);
    f->cls = GP_FC_PIPELINE_BOTTLENECK;
    f->scope = GP_SCOPE_STAGE;
    snprintf(f->scope_id, sizeof f->scope_id, "%s", b->name);
    f->t0_ns = p->t0_ns;
    f->t1_ns = p->t1_ns;
    f->wasted_gpu_s = wasted;
    f->wasted_cost = wasted / 3600 * p->price_gpu_h;
    gp_finding_add_evidence(f, "stage_utilization", b->utilization, ">=", BUSY_UTIL_HIGH, "events");
    gp_finding_add_evidence(f, "capacity_margin_vs_next", p->bn_margin, ">=", BN_MARGIN_MIN,
                            "events");
    gp_finding_add_evidence(f, "stage_capacity_items_per_s", b->e2e_capacity_per_s,
                            "<=", p->bn_margin * b->e2e_capacity_per_s, "events");
    if (starved_gpu >= 0)
        gp_finding_add_evidence(f, "gpu_idle_starved_share",
                                gpu_idle_share * p->stage[starved_gpu].starved_share,
                                ">=", GPU_STARVED_SHARE_MIN, "events");
    double up_blocked = 0;
    for (int u = 0; u < b->n_upstream; u++)
        up_blocked += p->stage[b->upstream[u]].blocked_s;
    if (up_blocked > 0)
        gp_finding_add_evidence(f, "upstream_blocked_s", up_blocked, ">", 0, "events");
    double conf =
        0.5 + 0.3 * fmin(1, b->utilization / BUSY_UTIL_HIGH) + (p->bn_margin >= 1.3 ? 0.15 : 0.05);
    f->confidence = fmin(0.95, conf);

    gp_pipe_sizing sz;
    gp_pipeline_size(p, 0, 0, &sz);
    int len = snprintf(f->summary, sizeof f->summary,
                       "stage '%s' owns the run: %.3g items/s capacity (%d %s worker%s x %.3g ms) "
                       "vs %.2fx that in the next stage",
                       b->name, b->e2e_capacity_per_s, b->workers,
                       b->resource == GP_STAGE_GPU ? "gpu" : "cpu", b->workers == 1 ? "" : "s",
                       b->svc_mean_s * 1e3, p->bn_margin);
    if (starved_gpu >= 0 && len > 0 && (size_t)len < sizeof f->summary)
        snprintf(f->summary + len, sizeof f->summary - (size_t)len,
                 "; GPU stage '%s' idles %.0f%% of the time for lack of input",
                 p->stage[starved_gpu].name,
                 100 * gpu_idle_share * p->stage[starved_gpu].starved_share);
    char pools[256] = "";
    size_t pl = 0;
    for (int k = 0; k < p->n_stages && pl < sizeof pools; k++) {
        int w = snprintf(pools + pl, sizeof pools - pl, "%s%s=%d", k ? "," : "", p->stage[k].name,
                         sz.workers[k]);
        if (w < 0) break;
        pl += (size_t)w;
    }
    snprintf(f->recommendation, sizeof f->recommendation,
             "Scale '%s' first: from %d to %d workers (workers ~ target rate x %.3g ms per item). "
             "Balanced pools for %d cpu and %d gpu workers: %s, about %.3g items/s. "
             "Check with: goodput pipeline --what-if %s",
             b->name, b->workers, sz.scale_first_to, b->svc_mean_s * 1e3, sz.cpu_budget,
             sz.gpu_budget, pools, sz.rate_per_s, pools);
    return 1;
}

int gp_pipeline_finding_from_events(const gp_event *ev, size_t n, double price_gpu_h,
                                    gp_finding *f) {
    size_t n_items = 0;
    for (size_t i = 0; i < n; i++)
        n_items += ev[i].kind == GP_EV_STAGE && ev[i].step < 0;
    if (!n_items) return 0;
    gp_pipeline p;
    gp_pipe_opts o = {.price_gpu_h = price_gpu_h};
    char err[160];
    if (gp_pipeline_analyze(ev, n, &o, &p, err, sizeof err) < 0) return 0;
    int rc = gp_pipeline_finding(&p, f);
    gp_pipeline_free(&p);
    return rc;
}
