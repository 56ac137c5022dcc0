/* pipeline_sim.c: discrete-event simulation of a chain of worker pools (see pipeline.h).
 *
 * Why counts and not items: items in a stage are interchangeable (FIFO order does not change
 * throughput when service times are drawn at service start), so the state of a stage is
 * three integers: waiting in its input queue, in service, and finished but blocked because
 * the next queue is full (blocking after service, as a bounded multiprocessing.Queue.put
 * does). The only events are service completions, kept in a binary heap whose size is the
 * total number of workers, so an item costs about one heap push and pop per stage.
 *
 * After each completion, stages are revisited from the one downstream of it towards the
 * source: a stage starts work while it has input and free workers, which frees room in its
 * queue, which lets the stage before it hand over a blocked item and free a worker, and so
 * on; the walk stops at the first stage upstream of the completion where nothing moved.
 * Service times are resampled uniformly from the measured samples (splitmix64). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pipeline/pipeline.h"

typedef struct {
    double t;
    int s;
} hev;

typedef struct {
    hev *h;
    size_t n;
} heap;

static void heap_push(heap *hp, double t, int s) {
    size_t i = hp->n++;
    hev *h = hp->h;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p].t <= t) break;
        h[i] = h[p];
        i = p;
    }
    h[i].t = t;
    h[i].s = s;
}

static hev heap_pop(heap *hp) {
    hev *h = hp->h, top = h[0], last = h[--hp->n];
    size_t i = 0, n = hp->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1].t < h[c].t) c++;
        if (last.t <= h[c].t) break;
        h[i] = h[c];
        i = c;
    }
    if (n) h[i] = last;
    return top;
}

static inline uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

typedef struct {
    long q, busy, blk, w, cap;
    const double *svc;
    uint32_t n_svc;
    double overhead;
    double busy_sum, blk_int, blk_last;
} sstate;

static inline int can_accept(const sstate *s) {
    return s->cap < 0 || s->q < s->cap || (s->q == 0 && s->busy + s->blk < s->w);
}

static inline int start_all(sstate *s, heap *hp, int idx, double t, uint64_t *rng) {
    int started = 0;
    while (s->q > 0 && s->busy + s->blk < s->w) {
        uint64_t r = splitmix64(rng);
        double d = s->svc[((r >> 32) * s->n_svc) >> 32];
        s->q--;
        s->busy++;
        s->busy_sum += d; /* utilization counts service, not handoff */
        heap_push(hp, t + d + s->overhead, idx);
        started = 1;
    }
    return started;
}

static inline void blk_change(sstate *s, double t, long delta) {
    s->blk_int += (double)s->blk * (t - s->blk_last);
    s->blk_last = t;
    s->blk += delta;
}

/* Quantile tables: a stage with more samples than this draws from QTAB evenly spaced
 * quantiles of its samples instead (inverse-CDF sampling). Why: a random read into a table
 * of 100,000 samples per stage misses the caches and was 70% of the simulation's time;
 * 4,096 quantiles (32 KiB) stay cached and keep the distribution to within 1/4096 in
 * probability. */
#define QTAB 4096

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Fills tab[QTAB] with the quantiles (j + 0.5) / QTAB of x[0..n); 0 or -1 (memory). */
static int quantile_table(const double *x, size_t n, double *tab) {
    double *s = malloc(n * sizeof *s);
    if (!s) return -1;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_d);
    for (int j = 0; j < QTAB; j++) {
        double pos = (j + 0.5) / QTAB * (double)(n - 1);
        size_t i = (size_t)pos;
        tab[j] = i + 1 < n ? s[i] + (pos - (double)i) * (s[i + 1] - s[i]) : s[n - 1];
    }
    free(s);
    return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, int k) {
    if (err && errlen) snprintf(err, errlen, fmt, k);
    return -1;
}

int gp_pipe_simulate(const gp_pipe_sim_cfg *c, gp_pipe_sim_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    const int K = c->n_stages;
    if (K < 1 || K > GP_PIPE_MAX_STAGES)
        return fail(err, errlen, "simulation needs 1..%d stages", GP_PIPE_MAX_STAGES);
    if (c->n_items == 0) return fail(err, errlen, "simulation needs at least %d item", 1);
    sstate st[GP_PIPE_MAX_STAGES];
    size_t total_w = 0;
    for (int k = 0; k < K; k++) {
        if (c->workers[k] < 1) return fail(err, errlen, "stage %d has no workers", k);
        if (!c->svc_s[k] || c->n_svc[k] == 0 || c->n_svc[k] > UINT32_MAX)
            return fail(err, errlen, "stage %d has no service-time samples", k);
    }
    double *tabs = NULL;
    for (int k = 0; k < K && !tabs; k++)
        if (c->n_svc[k] > QTAB && !(tabs = malloc((size_t)K * QTAB * sizeof *tabs)))
            return fail(err, errlen, "out of memory (%d)", 0);
    for (int k = 0; k < K; k++) {
        st[k] = (sstate){.q = 0,
                         .w = c->workers[k],
                         .cap = k == 0 ? -1 : c->queue_bound[k],
                         .svc = c->svc_s[k],
                         .n_svc = (uint32_t)c->n_svc[k],
                         .overhead = c->overhead_s[k] > 0 ? c->overhead_s[k] : 0};
        total_w += (size_t)c->workers[k];
        if (c->n_svc[k] > QTAB) {
            double *tab = tabs + (size_t)k * QTAB;
            if (quantile_table(c->svc_s[k], c->n_svc[k], tab) < 0) {
                free(tabs);
                return fail(err, errlen, "out of memory (%d)", 0);
            }
            st[k].svc = tab;
            st[k].n_svc = QTAB;
        }
    }
    heap hp = {malloc((total_w + 1) * sizeof(hev)), 0};
    if (!hp.h) {
        free(tabs);
        return fail(err, errlen, "out of memory (%d)", 0);
    }
    uint64_t rng = c->seed ^ 0x5DEECE66DULL;
    st[0].q = (long)c->n_items;
    start_all(&st[0], &hp, 0, 0, &rng);
    size_t done = 0, n10 = (size_t)ceil(0.1 * (double)c->n_items),
           n90 = (size_t)floor(0.9 * (double)c->n_items);
    if (n10 < 1) n10 = 1;
    double t10 = 0, t90 = 0, t = 0;
    uint64_t nev = 0;
    while (hp.n) {
        hev e = heap_pop(&hp);
        t = e.t;
        nev++;
        int i = e.s;
        sstate *s = &st[i];
        s->busy--;
        if (i == K - 1) {
            done++;
            if (done == n10) t10 = t;
            if (done == n90) t90 = t;
        } else if (can_accept(&st[i + 1])) {
            st[i + 1].q++;
        } else {
            blk_change(s, t, +1);
        }
        int top = i + 1 < K ? i + 1 : i;
        for (int k = top; k >= 0; k--) {
            int moved = start_all(&st[k], &hp, k, t, &rng);
            if (k > 0) {
                sstate *u = &st[k - 1];
                while (u->blk > 0 && can_accept(&st[k])) {
                    blk_change(u, t, -1);
                    st[k].q++;
                    start_all(&st[k], &hp, k, t, &rng);
                    moved = 1;
                }
            }
            if (!moved && k <= i) break;
        }
    }
    free(hp.h);
    free(tabs);
    r->n_items = done;
    r->n_events = nev;
    r->makespan_s = t;
    r->throughput_per_s = t > 0 ? (double)done / t : 0;
    r->steady_per_s =
        t90 > t10 && n90 > n10 ? (double)(n90 - n10) / (t90 - t10) : r->throughput_per_s;
    double gb = 0, gw = 0;
    for (int k = 0; k < K; k++) {
        blk_change(&st[k], t, 0);
        r->utilization[k] = t > 0 ? st[k].busy_sum / ((double)st[k].w * t) : 0;
        r->blocked_s[k] = st[k].blk_int;
        if (c->is_gpu[k]) {
            gb += st[k].busy_sum;
            gw += (double)st[k].w;
        }
    }
    r->gpu_busy_share = gw > 0 && t > 0 ? gb / (gw * t) : -1;
    return 0;
}

int gp_pipeline_sim_cfg(const gp_pipeline *p, const char *spec, int queue_bound, size_t n_items,
                        uint64_t seed, gp_pipe_sim_cfg *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->n_stages = p->n_stages;
    c->n_items = n_items ? n_items : p->items_done;
    c->seed = seed;
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *s = &p->stage[k];
        c->workers[k] = s->workers;
        c->queue_bound[k] = queue_bound >= 0 ? queue_bound : s->queue_bound;
        c->svc_s[k] = s->svc_s;
        c->n_svc[k] = s->n_svc;
        c->overhead_s[k] = s->handoff_s;
        c->is_gpu[k] = s->resource == GP_STAGE_GPU;
        if (!s->n_svc) {
            if (err && errlen)
                snprintf(err, errlen, "stage '%s' was declared but processed no items", s->name);
            return -1;
        }
    }
    if (!spec || !spec[0]) return 0;
    char buf[1024];
    if (strlen(spec) >= sizeof buf) {
        if (err && errlen)
            snprintf(err, errlen, "--what-if: longer than %zu bytes", sizeof buf - 1);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        char *end = NULL;
        long v = eq ? strtol(eq + 1, &end, 10) : -1;
        if (!eq || end == eq + 1 || *end || v < 0 || v > 1000000) {
            if (err && errlen)
                snprintf(err, errlen, "--what-if: '%.60s' is not STAGE=N or STAGE.queue=N", tok);
            return -1;
        }
        *eq = 0;
        int is_queue = 0;
        char *dot = strrchr(tok, '.');
        if (dot && !strcmp(dot, ".queue")) {
            *dot = 0;
            is_queue = 1;
        }
        int k = gp_pipeline_find_stage(p, tok);
        if (k < 0) {
            char names[512] = "";
            size_t l = 0;
            for (int j = 0; j < p->n_stages && l < sizeof names; j++) {
                int w =
                    snprintf(names + l, sizeof names - l, "%s%s", j ? ", " : "", p->stage[j].name);
                if (w < 0) break;
                l += (size_t)w;
            }
            if (err && errlen)
                snprintf(err, errlen, "--what-if: no stage '%.60s' (stages: %.400s)", tok, names);
            return -1;
        }
        if (is_queue) {
            c->queue_bound[k] = (int)v;
        } else {
            if (v < 1) {
                if (err && errlen)
                    snprintf(err, errlen, "--what-if: stage '%.60s' needs at least 1 worker", tok);
                return -1;
            }
            c->workers[k] = (int)v;
        }
    }
    return 0;
}
