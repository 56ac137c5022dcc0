/* analyze.c: HTA's analyses over one rank's rows, with HTA's definitions (docs/traces.md):
 * temporal breakdown, idle time per stream, kernel breakdown by type and by name, comm/comp
 * overlap, CUDA launch stats, plus per-step GPU utilisation. Where HTA's result depends on
 * the order pandas leaves tied rows in (sort_values uses numpy's unstable introsort), we sort
 * with the same algorithm (gp_np_argsort) so ties land where they land in HTA. Every pass is
 * O(n log n) over the rank's GPU rows; nothing here allocates per event beyond index arrays. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/stable_sort.h"
#include "traces/trace.h"

/* ---- numpy's introsort argsort (npysort/quicksort.cpp), NaN sorted last ---- */
static int np_less(double a, double b) {
    return a < b || (b != b && a == a);
}

static void np_aheapsort(const double *v, size_t *tosort, size_t n) {
    size_t *a = tosort - 1, i, j, l, tmp;
    for (l = n >> 1; l > 0; --l) {
        tmp = a[l];
        for (i = l, j = l << 1; j <= n;) {
            if (j < n && np_less(v[a[j]], v[a[j + 1]])) j += 1;
            if (np_less(v[tmp], v[a[j]])) {
                a[i] = a[j];
                i = j;
                j += j;
            } else
                break;
        }
        a[i] = tmp;
    }
    for (; n > 1;) {
        tmp = a[n];
        a[n] = a[1];
        n -= 1;
        for (i = 1, j = 2; j <= n;) {
            if (j < n && np_less(v[a[j]], v[a[j + 1]])) j++;
            if (np_less(v[tmp], v[a[j]])) {
                a[i] = a[j];
                i = j;
                j += j;
            } else
                break;
        }
        a[i] = tmp;
    }
}

#define SWAPI(a, b)                                                                                \
    do {                                                                                           \
        size_t t_ = (a);                                                                           \
        (a) = (b);                                                                                 \
        (b) = t_;                                                                                  \
    } while (0)

void gp_np_argsort(const double *v, size_t *tosort, size_t num) {
    for (size_t i = 0; i < num; i++)
        tosort[i] = i;
    if (num < 2) return;
    /* strictly increasing (no ties, no NaN): the identity is the only sorted order, so it is
     * numpy's too; traces are mostly in time order, and this skips the n log n pass */
    size_t run = 1;
    while (run < num && v[run - 1] < v[run])
        run++;
    if (run == num) return;
    size_t *pl = tosort, *pr = tosort + num - 1;
    size_t *stack[128], **sptr = stack;
    int depth[128], *psdepth = depth;
    int cdepth = 0;
    for (size_t u = num; u >>= 1;)
        cdepth++;
    cdepth *= 2;
    for (;;) {
        if (cdepth < 0) {
            np_aheapsort(v, pl, (size_t)(pr - pl) + 1);
            goto stack_pop;
        }
        while ((pr - pl) > 15) {
            size_t *pm = pl + ((pr - pl) >> 1), *pi, *pj, *pk;
            if (np_less(v[*pm], v[*pl])) SWAPI(*pm, *pl);
            if (np_less(v[*pr], v[*pm])) SWAPI(*pr, *pm);
            if (np_less(v[*pm], v[*pl])) SWAPI(*pm, *pl);
            double vp = v[*pm];
            pi = pl;
            pj = pr - 1;
            SWAPI(*pm, *pj);
            for (;;) {
                do
                    ++pi;
                while (np_less(v[*pi], vp));
                do
                    --pj;
                while (np_less(vp, v[*pj]));
                if (pi >= pj) break;
                SWAPI(*pi, *pj);
            }
            pk = pr - 1;
            SWAPI(*pi, *pk);
            if (pi - pl < pr - pi) {
                *sptr++ = pi + 1;
                *sptr++ = pr;
                pr = pi - 1;
            } else {
                *sptr++ = pl;
                *sptr++ = pi - 1;
                pl = pi + 1;
            }
            *psdepth++ = --cdepth;
        }
        for (size_t *pi = pl + 1; pi <= pr; ++pi) {
            size_t vi = *pi;
            double vp = v[vi];
            size_t *pj = pi, *pk = pi - 1;
            while (pj > pl && np_less(vp, v[*pk]))
                *pj-- = *pk--;
            *pj = vi;
        }
    stack_pop:
        if (sptr == stack) break;
        pr = *(--sptr);
        pl = *(--sptr);
        cdepth = *(--psdepth);
    }
}

/* ---- kernel classes ---- */
static int starts(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

int gp_kernel_type(const char *n) {
    if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || strstr(n, "ncclKernel"))
        return GP_KT_COMMUNICATION;
    if (starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") ||
        starts(n, "hipMemset") || starts(n, "dma"))
        return GP_KT_MEMORY;
    /* the patterns use '.', which stops at a newline */
    size_t first_line = strcspn(n, "\n");
    char *line = strndup(n, first_line);
    if (!line) abort();
    int noncomp = starts(n, "nccl") || strstr(line, "Memcpy") || strstr(line, "Memset") ||
                  strstr(line, "dma") || strstr(line, "Sync") || starts(n, "Stream Wait Event") ||
                  (starts(n, "cuda") && strstr(line + 4, "LaunchKernel")) ||
                  starts(n, "runFunction") || starts(n, "hip") || starts(n, "job_exe") ||
                  starts(n, "packet") || starts(n, "pe_exe") || starts(n, "cpum_exe_subgraph") ||
                  starts(n, "hccl") || starts(n, "collective_subgraph_execution");
    free(line);
    return noncomp ? GP_KT_OTHER : GP_KT_COMPUTATION;
}

const char *gp_kernel_type_name(int kt) {
    switch (kt) {
    case GP_KT_COMPUTATION:
        return "COMPUTATION";
    case GP_KT_COMMUNICATION:
        return "COMMUNICATION";
    case GP_KT_MEMORY:
        return "MEMORY";
    default:
        return "OTHER";
    }
}

void gp_trace_options_default(gp_trace_options *o) {
    o->consecutive_kernel_delay_us = 30;
    o->runtime_cutoff_us = 50;
    o->launch_delay_cutoff_us = 100;
    o->num_kernels = 10;
    o->duration_ratio = 0.8;
}

static double np_round(double x, int dec) {
    double m = dec == 1 ? 10.0 : dec == 2 ? 100.0 : 1.0;
    return rint(x * m) / m;
}

/* ---- correlation map ----
 * Kineto's correlation ids count up from some base, so they are usually dense: then the map is
 * a plain array indexed by id - lo (8 bytes a slot, looked up in id order, cache- and
 * page-friendly); otherwise an open-addressed hash. Every fresh page costs a fault, which on a
 * virtual machine with shadow paging is ~18 us (bench/RESULTS.md, "traces"), so the map's
 * size counts as much as its probes. */
typedef struct {
    int32_t last; /* position of the last CPU-side row with this id (in cpu vec), -1 none */
    int32_t kept; /* CPU-side rows kept by the filter */
} cslot;
typedef struct {
    int64_t key;
    cslot v;
} hslot; /* v.kept == -1: empty */
typedef struct {
    cslot *dense; /* ids lo .. lo + span - 1 */
    int64_t lo;
    uint64_t span;
    hslot *s; /* the hash, when ids are sparse */
    size_t cap;
} cmap;

static void cmap_init(cmap *m, const gp_trow_vec *cpu) {
    memset(m, 0, sizeof *m);
    size_t n = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < cpu->n; i++) {
        const gp_trow *c = &cpu->v[i];
        if ((c->flags & GP_TR_GPU_SIDE) || c->corr == -1) continue;
        n++;
        if (c->corr < lo) lo = c->corr;
        if (c->corr > hi) hi = c->corr;
    }
    if (cpu->n >= INT32_MAX) abort(); /* positions are int32: 2^31 rows in one rank */
    uint64_t span = n ? (uint64_t)hi - (uint64_t)lo + 1 : 0;
    if (n && span >= 1 && span <= 6 * (uint64_t)n + 1024) {
        m->dense = malloc(span * sizeof *m->dense);
        if (!m->dense) abort();
        for (uint64_t i = 0; i < span; i++)
            m->dense[i] = (cslot){.last = -1, .kept = 0};
        m->lo = lo;
        m->span = span;
        return;
    }
    m->cap = 64;
    while (m->cap < n * 2 + 64)
        m->cap *= 2;
    m->s = malloc(m->cap * sizeof *m->s);
    if (!m->s) abort();
    for (size_t i = 0; i < m->cap; i++)
        m->s[i].v.kept = -1;
}

static void cmap_free(cmap *m) {
    free(m->dense);
    free(m->s);
}

/* The slot of key, created (last -1, kept 0) when create; NULL when absent. */
static cslot *cmap_get(cmap *m, int64_t key, int create) {
    if (m->dense || !m->s) {
        uint64_t off = (uint64_t)key - (uint64_t)m->lo;
        if (off >= m->span) return NULL;
        cslot *s = &m->dense[off];
        return create || s->last >= 0 ? s : NULL; /* created slots get a position at once */
    }
    uint64_t h = ((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 20;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->s[i].v.kept < 0) {
            if (!create) return NULL;
            m->s[i] = (hslot){.key = key, .v = {.last = -1, .kept = 0}};
            return &m->s[i].v;
        }
        if (m->s[i].key == key) return &m->s[i].v;
    }
}

static int is_step_name(const char *nm) {
    return starts(nm, "ProfilerStep#") && nm[13] >= '0' && nm[13] <= '9';
}

size_t gp_trace_distinct_steps(gp_trace_rank *const *ranks, size_t n) {
    size_t cap = 64, cnt = 0;
    char **seen = malloc(cap * sizeof *seen);
    if (!seen) abort();
    for (size_t k = 0; k < n; k++)
        for (uint32_t i = 0; i < ranks[k]->n_names; i++) {
            const char *nm = ranks[k]->names[i];
            if (!is_step_name(nm)) continue;
            size_t j;
            for (j = 0; j < cnt; j++)
                if (!strcmp(seen[j], nm)) break;
            if (j < cnt) continue;
            if (cnt == cap) {
                cap *= 2;
                seen = realloc(seen, cap * sizeof *seen);
                if (!seen) abort();
            }
            seen[cnt++] = ranks[k]->names[i];
        }
    free(seen);
    return cnt;
}

static void round_rows(gp_trow_vec *v) {
    for (size_t i = 0; i < v->n; i++) {
        gp_trow *r = &v->v[i];
        double end = floor(r->ts + r->dur);
        r->ts = ceil(r->ts);
        r->dur = end - r->ts;
    }
}

/* Whether HTA's step filter would repeat a row: a GPU-side row is kept once per kept CPU
 * row with its correlation id (pandas' merge), so two such CPU rows make two copies. */
static int repeats(const gp_trace_rank *r, cmap *m) {
    for (size_t i = 0; i < r->gpu.n; i++)
        if (r->gpu.v[i].flags & GP_TR_GPU_SIDE) {
            const cslot *s = cmap_get(m, r->gpu.v[i].corr, 0);
            if (s && s->kept > 1) return 1;
        }
    for (size_t i = 0; i < r->cpu.n; i++)
        if (r->cpu.v[i].flags & GP_TR_GPU_SIDE) {
            const cslot *s = cmap_get(m, r->cpu.v[i].corr, 0);
            if (s && s->kept > 1) return 1;
        }
    return 0;
}

void gp_trace_prepare(gp_trace_rank *r, int filter) {
    if (r->ts_float) {
        round_rows(&r->gpu);
        round_rows(&r->cpu);
        r->ts_float = 0;
        r->rounded = 1;
    }
    cmap m;
    cmap_init(&m, &r->cpu);
    if (r->n_cpu_side == 0) filter = 0; /* HTA leaves a rank without CPU events alone */
    double last_start = -INFINITY;
    if (filter) {
        for (size_t i = 0; i < r->cpu.n; i++)
            if (!(r->cpu.v[i].flags & GP_TR_GPU_SIDE) && is_step_name(r->names[r->cpu.v[i].name]))
                last_start = fmax(last_start, r->cpu.v[i].ts);
        for (size_t i = 0; i < r->gpu.n; i++)
            if (!(r->gpu.v[i].flags & GP_TR_GPU_SIDE) && is_step_name(r->names[r->gpu.v[i].name]))
                last_start = fmax(last_start, r->gpu.v[i].ts);
    }
#define CPU_KEPT(row) (!filter || (row).ts < last_start)
    /* links (computed before filtering, as HTA does at load) and kept counts */
    for (size_t i = 0; i < r->cpu.n; i++) {
        gp_trow *c = &r->cpu.v[i];
        if ((c->flags & GP_TR_GPU_SIDE) || c->corr == -1) continue;
        cslot *s = cmap_get(&m, c->corr, 1);
        s->last = (int32_t)i;
        if (CPU_KEPT(*c)) s->kept++;
    }
    /* event 0 as HTA's row label 0 */
    const gp_trow *ev0 = NULL;
    int ev0_kept = 0;
    for (size_t i = 0; i < r->cpu.n && !ev0; i++)
        if (r->cpu.v[i].idx == 0) ev0 = &r->cpu.v[i];
    for (size_t i = 0; i < r->gpu.n && !ev0; i++)
        if (r->gpu.v[i].idx == 0) ev0 = &r->gpu.v[i];
    if (ev0) {
        if (!(ev0->flags & GP_TR_GPU_SIDE))
            ev0_kept = CPU_KEPT(*ev0);
        else {
            cslot *s = cmap_get(&m, ev0->corr, 0);
            ev0_kept = !filter || (s && s->kept > 0);
        }
    }
    double ev0_ts = ev0 && ev0_kept ? ev0->ts : NAN;
    for (size_t i = 0; i < r->gpu.n; i++) {
        gp_trow *g = &r->gpu.v[i];
        g->link_ts = NAN;
        if (!(g->flags & GP_TR_GPU_SIDE)) {
            if (g->corr >= 0) g->link_ts = ev0_ts;
            continue;
        }
        cslot *s = cmap_get(&m, g->corr, 0);
        if (s && s->last >= 0) {
            const gp_trow *c = &r->cpu.v[s->last];
            g->link_ts = CPU_KEPT(*c) ? c->ts : NAN;
        } else
            g->link_ts = ev0_ts;
    }
    if (filter && !repeats(r, &m)) {
        /* every row is kept at most once: compact in place, in HTA's order (GPU-side rows,
         * then the others), without a second copy of the rows to fault in */
        size_t n_other = 0, w = 0;
        for (size_t i = 0; i < r->gpu.n; i++)
            n_other += !(r->gpu.v[i].flags & GP_TR_GPU_SIDE) && r->gpu.v[i].ts < last_start;
        gp_trow *other = n_other ? malloc(n_other * sizeof *other) : NULL;
        if (n_other && !other) abort();
        n_other = 0;
        for (size_t i = 0; i < r->gpu.n; i++) {
            const gp_trow *g = &r->gpu.v[i];
            if (g->flags & GP_TR_GPU_SIDE) {
                const cslot *s = cmap_get(&m, g->corr, 0);
                if (s && s->kept) r->gpu.v[w++] = *g;
            } else if (g->ts < last_start)
                other[n_other++] = *g;
        }
        if (n_other) memcpy(r->gpu.v + w, other, n_other * sizeof *other);
        r->gpu.n = w + n_other;
        free(other);
        w = 0;
        for (size_t i = 0; i < r->cpu.n; i++) {
            const gp_trow *c = &r->cpu.v[i];
            int keep;
            if (c->flags & GP_TR_GPU_SIDE) {
                const cslot *s = cmap_get(&m, c->corr, 0);
                keep = s && s->kept;
            } else
                keep = c->ts < last_start;
            if (keep) r->cpu.v[w++] = *c;
        }
        r->cpu.n = w;
    } else if (filter) {
        gp_trow_vec ng = {0}, nc = {0};
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < r->gpu.n; i++) {
                gp_trow *g = &r->gpu.v[i];
                int gside = (g->flags & GP_TR_GPU_SIDE) != 0;
                if (pass == 0 && gside) {
                    cslot *s = cmap_get(&m, g->corr, 0);
                    for (int64_t k = 0; s && k < s->kept; k++) {
                        if (ng.n == ng.cap) {
                            ng.cap = ng.cap ? ng.cap * 2 : 1024;
                            ng.v = realloc(ng.v, ng.cap * sizeof *ng.v);
                            if (!ng.v) abort();
                        }
                        ng.v[ng.n++] = *g;
                    }
                } else if (pass == 1 && !gside && g->ts < last_start) {
                    if (ng.n == ng.cap) {
                        ng.cap = ng.cap ? ng.cap * 2 : 1024;
                        ng.v = realloc(ng.v, ng.cap * sizeof *ng.v);
                        if (!ng.v) abort();
                    }
                    ng.v[ng.n++] = *g;
                }
            }
        for (size_t i = 0; i < r->cpu.n; i++) {
            gp_trow *c = &r->cpu.v[i];
            int64_t reps = 0;
            if (c->flags & GP_TR_GPU_SIDE) {
                cslot *s = cmap_get(&m, c->corr, 0);
                reps = s ? s->kept : 0;
            } else
                reps = c->ts < last_start;
            for (int64_t k = 0; k < reps; k++) {
                if (nc.n == nc.cap) {
                    nc.cap = nc.cap ? nc.cap * 2 : 1024;
                    nc.v = realloc(nc.v, nc.cap * sizeof *nc.v);
                    if (!nc.v) abort();
                }
                nc.v[nc.n++] = *c;
            }
        }
        free(r->gpu.v);
        free(r->cpu.v);
        r->gpu = ng;
        r->cpu = nc;
    }
    if (filter) {
        size_t kept = 0; /* host ops (attribution only) follow the CPU rule */
        for (size_t i = 0; i < r->host.n; i++)
            if (r->host.v[i].ts < last_start) r->host.v[kept++] = r->host.v[i];
        r->host.n = kept;
    }
    cmap_free(&m);
}

/* ---- interval helpers ---- */
typedef struct {
    double ts, end;
} ivl;

#define IVL_LESS(a_, b_) ((a_)->ts < (b_)->ts)
GP_STABLE_SORT(sort_ivl, ivl, IVL_LESS) /* a stable sort by start (stable_sort.h) */

/* merges like HTA: sort by start; a new group starts when ts > max end seen before it */
static size_t merge_ivls(ivl *v, size_t n) {
    if (!n) return 0;
    /* already in start order (usual for a trace) needs no sort; ties in start may come in
     * any order, as the groups below do not depend on it */
    size_t run = 1;
    while (run < n && v[run - 1].ts <= v[run].ts)
        run++;
    if (run < n) sort_ivl(v, n);
    size_t g = 0;
    double cummax = v[0].end;
    ivl cur = v[0];
    for (size_t i = 1; i < n; i++) {
        if (v[i].ts > cummax) {
            v[g++] = cur;
            cur = v[i];
        } else {
            if (v[i].end > cur.end) cur.end = v[i].end;
        }
        if (v[i].end > cummax) cummax = v[i].end;
    }
    v[g++] = cur;
    return g;
}

static double ivl_len(const ivl *v, size_t n) {
    /* per interval: absolute timestamps (~1e15 µs) would lose bits in a running sum */
    double t = 0;
    for (size_t i = 0; i < n; i++)
        t += v[i].end - v[i].ts;
    return t;
}

static double intersect_len(const ivl *a, size_t na, const ivl *b, size_t nb) {
    size_t i = 0, j = 0;
    double tot = 0;
    while (i < na && j < nb) {
        double lo = fmax(a[i].ts, b[j].ts), hi = fmin(a[i].end, b[j].end);
        if (hi > lo) tot += hi - lo;
        if (a[i].end < b[j].end)
            i++;
        else
            j++;
    }
    return tot;
}

/* intersect_len of one window with merged intervals (sorted, disjoint): starts at the first
 * interval ending after the window opens, found by bisection; the ones before add nothing,
 * so the sum (and its rounding) is the same as intersect_len's. */
static double window_len(ivl w, const ivl *b, size_t nb) {
    size_t lo = 0, hi = nb;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[mid].end <= w.ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return intersect_len(&w, 1, b + lo, nb - lo);
}

/* ---- statistics ---- */
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
#define D_LESS(a_, b_) (*(a_) < *(b_))
GP_STABLE_SORT(sort_d, double, D_LESS) /* qsort's order with cmp_d: no NaN reaches it */

/* numpy's linear interpolation (lerp with the t >= 0.5 form) over sorted values */
static double quantile_sorted(const double *v, size_t n, double q) {
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double t = pos - (double)lo, a = v[lo], b = v[hi], d = b - a;
    return t >= 0.5 ? b - d * (1 - t) : a + d * t;
}

static void stats(const double *v, size_t n, double *sum, double *mx, double *mn, double *mean,
                  double *sd) {
    double s = 0, hi = -INFINITY, lo = INFINITY;
    for (size_t i = 0; i < n; i++) {
        s += v[i];
        hi = fmax(hi, v[i]);
        lo = fmin(lo, v[i]);
    }
    double m = n ? s / (double)n : NAN, ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - m) * (v[i] - m);
    *sum = s;
    *mx = hi;
    *mn = lo;
    *mean = m;
    *sd = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
}

/* ---- kernel breakdown by name ---- */
typedef struct {
    uint32_t name;
    double *d;
    size_t n, cap;
} namegroup;

static int cmp_namegroup(const void *a, const void *b, void *ctx) {
    char **names = ctx;
    return strcmp(names[((const namegroup *)a)->name], names[((const namegroup *)b)->name]);
}

typedef struct {
    char *name;
    double sum, max, min, mean, std;
} aggrow;

static int cmp_aggrow_name(const void *a, const void *b) {
    return strcmp(((const aggrow *)a)->name, ((const aggrow *)b)->name);
}

/* descending sort_values(kind=quicksort) as pandas does it: reverse, argsort, reverse */
static void pandas_sort_desc(const double *vals, size_t n, size_t *order) {
    double *rev = malloc((n ? n : 1) * sizeof *rev);
    size_t *ix = malloc((n ? n : 1) * sizeof *ix);
    if (!rev || !ix) abort();
    for (size_t i = 0; i < n; i++)
        rev[i] = vals[n - 1 - i];
    gp_np_argsort(rev, ix, n); /* ascending of the reversed values */
    for (size_t i = 0; i < n; i++)
        order[n - 1 - i] = n - 1 - ix[i];
    free(rev);
    free(ix);
}

static void add_krow(gp_rank_result *res, const char *name, int kt, double sum, double mx,
                     double mn, double mean, double sd, int top) {
    gp_kernel_row **arr = top ? &res->top : &res->kernels;
    size_t *n = top ? &res->n_top : &res->n_kernels;
    *arr = realloc(*arr, (*n + 1) * sizeof **arr);
    if (!*arr) abort();
    (*arr)[*n] = (gp_kernel_row){strdup(name), kt, sum, mx, mn, isnan(sd) ? 0 : sd, mean};
    (*n)++;
}

static void kernel_breakdown(const gp_trace_rank *r, const int *kt_of, int kt,
                             const gp_trace_options *o, gp_rank_result *res) {
    /* group durations by name id */
    namegroup *g = NULL;
    size_t ng = 0;
    int32_t *slot = malloc((r->n_names ? r->n_names : 1) * sizeof *slot);
    if (!slot) abort();
    for (uint32_t i = 0; i < r->n_names; i++)
        slot[i] = -1;
    for (size_t i = 0; i < r->gpu.n; i++) {
        const gp_trow *e = &r->gpu.v[i];
        if ((kt_of[e->name] & 15) != kt) continue;
        if (slot[e->name] < 0) {
            g = realloc(g, (ng + 1) * sizeof *g);
            if (!g) abort();
            g[ng] = (namegroup){.name = e->name};
            slot[e->name] = (int32_t)ng++;
        }
        namegroup *x = &g[slot[e->name]];
        if (x->n == x->cap) {
            x->cap = x->cap ? x->cap * 2 : 8;
            x->d = realloc(x->d, x->cap * sizeof *x->d);
            if (!x->d) abort();
        }
        x->d[x->n++] = e->dur;
    }
    free(slot);
    if (!ng) return;
    qsort_r(g, ng, sizeof *g, cmp_namegroup, r->names); /* groupby sorts keys */
    aggrow *a = calloc(ng, sizeof *a);
    double *sums = malloc(ng * sizeof *sums);
    size_t *ord = malloc(ng * sizeof *ord);
    if (!a || !sums || !ord) abort();
    for (size_t i = 0; i < ng; i++) {
        a[i].name = r->names[g[i].name];
        stats(g[i].d, g[i].n, &a[i].sum, &a[i].max, &a[i].min, &a[i].mean, &a[i].std);
        sums[i] = a[i].sum;
        add_krow(res, a[i].name, kt, a[i].sum, a[i].max, a[i].min, a[i].mean, a[i].std, 1);
    }
    pandas_sort_desc(sums, ng, ord);
    aggrow *s = malloc(ng * sizeof *s);
    if (!s) abort();
    for (size_t i = 0; i < ng; i++)
        s[i] = a[ord[i]];
    if (ng > (size_t)o->num_kernels) {
        double *cum = malloc(ng * sizeof *cum), *cs = malloc(ng * sizeof *cs);
        if (!cum || !cs) abort();
        double c = 0;
        for (size_t i = 0; i < ng; i++)
            cs[i] = cum[i] = (c += s[i].sum);
        qsort(cs, ng, sizeof *cs, cmp_d);
        double q = quantile_sorted(cs, ng, o->duration_ratio);
        for (size_t i = 0; i < ng; i++)
            if (cum[i] > q || i >= (size_t)o->num_kernels) s[i].name = "others";
        free(cum);
        free(cs);
        /* regroup over the per-name sums (HTA's second groupby) */
        qsort(s, ng, sizeof *s, cmp_aggrow_name);
        for (size_t i = 0; i < ng;) {
            size_t j = i;
            while (j < ng && !strcmp(s[j].name, s[i].name))
                j++;
            double *v = malloc((j - i) * sizeof *v);
            if (!v) abort();
            for (size_t k = i; k < j; k++)
                v[k - i] = s[k].sum;
            double sum, mx, mn, mean, sd;
            stats(v, j - i, &sum, &mx, &mn, &mean, &sd);
            add_krow(res, s[i].name, kt, sum, mx, mn, mean, sd, 0);
            free(v);
            i = j;
        }
    } else {
        for (size_t i = 0; i < ng; i++)
            add_krow(res, s[i].name, kt, s[i].sum, s[i].max, s[i].min, s[i].mean, s[i].std, 0);
    }
    for (size_t i = 0; i < ng; i++)
        free(g[i].d);
    free(g);
    free(a);
    free(s);
    free(sums);
    free(ord);
}

/* ---- kernel breakdown by type: HTA's concat + sort + running sum, ties as numpy leaves them ----
 */
static void type_breakdown(ivl *const *m, const size_t *nm, gp_rank_result *res) {
    size_t total = 0;
    for (int k = 0; k < 3; k++)
        total += 2 * nm[k];
    double *time = malloc((total + 1) * sizeof *time), *tt = malloc((total + 1) * sizeof *tt);
    int *st = malloc((total + 1) * sizeof *st), *st2 = malloc((total + 1) * sizeof *st2);
    size_t *ix = malloc((total + 1) * sizeof *ix);
    if (!time || !st || !ix || !tt || !st2) abort();
    size_t n = 0;
    for (int k = 0; k < 3; k++) {
        int val = 1 << k;
        for (size_t i = 0; i < nm[k]; i++)
            time[n] = m[k][i].ts, st[n++] = val;
        for (size_t i = 0; i < nm[k]; i++)
            time[n] = m[k][i].end, st[n++] = -val;
        gp_np_argsort(time, ix, n);
        for (size_t i = 0; i < n; i++)
            tt[i] = time[ix[i]], st2[i] = st[ix[i]];
        memcpy(time, tt, n * sizeof *time);
        memcpy(st, st2, n * sizeof *st);
    }
    int running = 0;
    for (size_t i = 0; i < n; i++) {
        running += st[i];
        if (running > 0 && running < 8 && i + 1 < n) {
            res->type_present[running] = 1;
            res->type_us[running] += trunc(time[i + 1] - time[i]);
        }
    }
    free(time);
    free(tt);
    free(st);
    free(st2);
    free(ix);
}

/* ---- idle time per stream ---- */
static void describe(double *gaps, size_t n, gp_idle_cat *c) {
    c->count = (double)n;
    if (!n) {
        c->mean = c->std = c->min = c->q25 = c->q50 = c->q75 = c->max = NAN;
        return;
    }
    double sum, mx, mn, mean, sd;
    stats(gaps, n, &sum, &mx, &mn, &mean, &sd);
    sort_d(gaps, n);
    c->mean = np_round(mean, 2);
    c->std = np_round(sd, 2);
    c->min = np_round(mn, 2);
    c->max = np_round(mx, 2);
    c->q25 = np_round(quantile_sorted(gaps, n, 0.25), 2);
    c->q50 = np_round(quantile_sorted(gaps, n, 0.5), 2);
    c->q75 = np_round(quantile_sorted(gaps, n, 0.75), 2);
}

static void idle_breakdown(const gp_trace_rank *r, const gp_trace_options *o, gp_rank_result *res) {
    size_t n = 0;
    for (size_t i = 0; i < r->gpu.n; i++)
        if (r->gpu.v[i].flags & GP_TR_KCAT) n++;
    if (!n) return;
    const gp_trow **k = malloc(n * sizeof *k);
    if (!k) abort();
    n = 0;
    for (size_t i = 0; i < r->gpu.n; i++)
        if (r->gpu.v[i].flags & GP_TR_KCAT) k[n++] = &r->gpu.v[i];
    /* streams in order of first appearance */
    int32_t *streams = NULL;
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j;
        for (j = 0; j < ns; j++)
            if (streams[j] == k[i]->stream) break;
        if (j == ns) {
            streams = realloc(streams, (ns + 1) * sizeof *streams);
            if (!streams) abort();
            streams[ns++] = k[i]->stream;
        }
    }
    res->streams = calloc(ns, sizeof *res->streams);
    res->n_streams = ns;
    const gp_trow **s = malloc(n * sizeof *s);
    double *ts = malloc(n * sizeof *ts), *gaps[3];
    size_t *ix = malloc(n * sizeof *ix), ng[3];
    for (int c = 0; c < 3; c++)
        gaps[c] = malloc(n * sizeof(double));
    if (!res->streams || !s || !ts || !ix || !gaps[0] || !gaps[1] || !gaps[2]) abort();
    for (size_t si = 0; si < ns; si++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (k[i]->stream == streams[si]) s[m] = k[i], ts[m++] = k[i]->ts;
        gp_np_argsort(ts, ix, m);
        gp_idle_stream *out = &res->streams[si];
        out->stream = streams[si];
        double sums[3] = {0, 0, 0};
        ng[0] = ng[1] = ng[2] = 0;
        double prev_end = NAN;
        for (size_t i = 0; i < m; i++) {
            const gp_trow *e = s[ix[i]];
            double gap = e->ts - prev_end;
            int cat = 2;
            if (e->link_ts > prev_end)
                cat = 0;
            else if (gap < o->consecutive_kernel_delay_us)
                cat = 1;
            out->cat[cat].present = 1;
            if (!isnan(gap)) {
                sums[cat] += gap;
                gaps[cat][ng[cat]++] = gap;
            }
            prev_end = e->ts + e->dur;
        }
        double total = 0;
        for (int c = 0; c < 3; c++)
            if (out->cat[c].present) total += sums[c];
        for (int c = 0; c < 3; c++) {
            gp_idle_cat *ic = &out->cat[c];
            if (!ic->present) continue;
            ic->raw_sum = sums[c];
            ic->sum = np_round(sums[c], 2);
            ic->ratio = np_round(sums[c] / total, 2);
            describe(gaps[c], ng[c], ic);
            if (c == 0) res->host_wait_us += sums[c];
            if (c == 1) res->kernel_wait_us += sums[c];
            if (c == 2) res->other_wait_us += sums[c];
        }
    }
    for (int c = 0; c < 3; c++)
        free(gaps[c]);
    free(s);
    free(ts);
    free(ix);
    free(k);
    free(streams);
}

/* ---- launch stats ---- */
/* The launch correlation ids, sorted; with a bitmap over their range when they are dense
 * (ids count up from 1 in Kineto), so each CPU and GPU row's look-up is one bit test
 * instead of a binary search. */
typedef struct corrset {
    const int64_t *set;
    size_t n;
    uint64_t *bits; /* bit c - lo, or NULL: binary search */
    int64_t lo;
    uint64_t span;
} corrset;

static void corrset_init(corrset *cs, const int64_t *set, size_t n) {
    *cs = (corrset){.set = set, .n = n};
    if (!n) return;
    uint64_t span = (uint64_t)set[n - 1] - (uint64_t)set[0] + 1;
    if (span == 0 || span > 64 * (uint64_t)n + 4096) return; /* sparse: 8+ bytes an id */
    cs->bits = calloc((size_t)((span + 63) / 64), sizeof *cs->bits);
    if (!cs->bits) abort();
    cs->lo = set[0];
    cs->span = span;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = (uint64_t)set[i] - (uint64_t)cs->lo;
        cs->bits[b / 64] |= UINT64_C(1) << (b % 64);
    }
}

static int has_corr(const corrset *cs, int64_t c) {
    const int64_t *set = cs->set;
    size_t n = cs->n;
    if (!n || c < set[0] || c > set[n - 1]) return 0; /* most CPU ops: no id (-1) */
    if (cs->bits) {
        uint64_t b = (uint64_t)c - (uint64_t)cs->lo; /* < span: c within set[0]..set[n-1] */
        return (int)((cs->bits[b / 64] >> (b % 64)) & 1);
    }
    size_t lo = 0, hi = n; /* set is sorted: is c in it */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (set[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && set[lo] == c;
}

typedef struct {
    int64_t corr;
    size_t pos;
} corrpos;
static int cmp_corrpos(const void *a, const void *b) {
    const corrpos *x = a, *y = b;
    if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
#define I64_LESS(a_, b_) (*(a_) < *(b_))
#define CORRPOS_LESS(a_, b_) (cmp_corrpos(a_, b_) < 0)
GP_STABLE_SORT(sort_i64, int64_t, I64_LESS) /* qsort's orders (stable_sort.h) */
GP_STABLE_SORT(sort_corrpos, corrpos, CORRPOS_LESS)

static void launch_stats(const gp_trace_rank *r, const gp_trace_options *o, gp_rank_result *res) {
    size_t n = 0;
    int64_t *set = malloc((r->cpu.n + r->gpu.n + 1) * sizeof *set);
    if (!set) abort();
    for (size_t i = 0; i < r->cpu.n; i++)
        if (r->cpu.v[i].flags & (GP_TR_LAUNCH | GP_TR_MEMLAUNCH)) set[n++] = r->cpu.v[i].corr;
    for (size_t i = 0; i < r->gpu.n; i++)
        if (r->gpu.v[i].flags & (GP_TR_LAUNCH | GP_TR_MEMLAUNCH)) set[n++] = r->gpu.v[i].corr;
    sort_i64(set, n);
    corrset cs;
    corrset_init(&cs, set, n);
    corrpos *g = malloc((r->gpu.n + 1) * sizeof *g);
    if (!g) abort();
    size_t ngp = 0;
    for (size_t i = 0; i < r->gpu.n; i++)
        if (has_corr(&cs, r->gpu.v[i].corr)) g[ngp++] = (corrpos){r->gpu.v[i].corr, i};
    sort_corrpos(g, ngp);
    size_t cap = 0;
    double dsum = 0, csum = 0;
    for (size_t i = 0; i < r->cpu.n; i++) {
        const gp_trow *c = &r->cpu.v[i];
        if (!has_corr(&cs, c->corr)) continue;
        corrpos key = {c->corr, 0};
        size_t lo = 0, hi = ngp;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cmp_corrpos(&g[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t j = lo; j < ngp && g[j].corr == c->corr; j++) {
            const gp_trow *e = &r->gpu.v[g[j].pos];
            if (res->n_launches == cap) {
                cap = cap ? cap * 2 : 1024;
                res->launches = realloc(res->launches, cap * sizeof *res->launches);
                if (!res->launches) abort();
            }
            double d = e->ts - c->ts - c->dur;
            if (d < 0) d = 0;
            res->launches[res->n_launches++] = (gp_launch_row){c->corr, c->dur, e->dur, d};
            if (c->dur > o->runtime_cutoff_us) res->n_launch_over_runtime++;
            if (d > o->launch_delay_cutoff_us) res->n_launch_over_delay++;
            dsum += d;
            csum += c->dur;
        }
    }
    if (res->n_launches) {
        res->launch_delay_mean = dsum / (double)res->n_launches;
        res->launch_cpu_mean = csum / (double)res->n_launches;
    }
    free(g);
    free(set);
    free(cs.bits);
}

/* ---- per step utilisation ---- */
static int cmp_step(const void *a, const void *b) {
    const gp_step_util *x = a, *y = b;
    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static void step_util(const gp_trace_rank *r, const ivl *all, size_t nall, ivl *const *cls,
                      const size_t *ncls, gp_rank_result *res) {
    for (int pass = 0; pass < 2; pass++) {
        const gp_trow_vec *v = pass ? &r->gpu : &r->cpu;
        for (size_t i = 0; i < v->n; i++) {
            const gp_trow *e = &v->v[i];
            if ((e->flags & GP_TR_GPU_SIDE) || !is_step_name(r->names[e->name])) continue;
            if (e->hclass == GP_HC_DUP_STEP) continue; /* counted in warn.dup_steps */
            res->steps = realloc(res->steps, (res->n_steps + 1) * sizeof *res->steps);
            if (!res->steps) abort();
            gp_step_util *s = &res->steps[res->n_steps++];
            memset(s, 0, sizeof *s);
            snprintf(s->name, sizeof s->name, "%s", r->names[e->name]);
            s->t0 = e->ts;
            s->t1 = e->ts + e->dur;
            ivl w = {s->t0, s->t1};
            s->busy_us = window_len(w, all, nall);
            s->compute_us = window_len(w, cls[GP_KT_COMPUTATION], ncls[GP_KT_COMPUTATION]);
            s->comm_us = window_len(w, cls[GP_KT_COMMUNICATION], ncls[GP_KT_COMMUNICATION]);
            s->memory_us = window_len(w, cls[GP_KT_MEMORY], ncls[GP_KT_MEMORY]);
        }
    }
    if (res->n_steps) qsort(res->steps, res->n_steps, sizeof *res->steps, cmp_step);
}

int gp_trace_analyze(const gp_trace_rank *r, const gp_trace_options *o, gp_rank_result *res) {
    memset(res, 0, sizeof *res);
    res->rank = r->rank;
    snprintf(res->path, sizeof res->path, "%s", r->path);
    snprintf(res->source, sizeof res->source, "%s", r->source);
    res->warn = r->warn;
    res->bytes = r->bytes;
    res->nsys = gp_nsys_totals_dup(r->nsys);
    res->pid = r->pid;
    res->base_time_ns = r->base_time_ns;
    res->world_size = r->world_size;
    res->t_first_us = r->t_first_us;
    res->t_last_us = r->t_last_us;
    res->overlap_pctg = res->overlap_ratio = NAN;
    int *kt_of = malloc((r->n_names ? r->n_names : 1) * sizeof *kt_of);
    if (!kt_of) abort();
    for (uint32_t i = 0; i < r->n_names; i++) {
        kt_of[i] = gp_kernel_type(r->names[i]);
        /* bit 4: a host<->device copy (looked up once per name, not per event) */
        if (kt_of[i] == GP_KT_MEMORY &&
            (strstr(r->names[i], "HtoD") || strstr(r->names[i], "DtoH")))
            kt_of[i] |= 16;
    }
    size_t n = r->gpu.n;
    res->n_gpu_events = n;
    ivl *all = malloc((n + 1) * sizeof *all), *cls[3];
    size_t ncls[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++)
        cls[k] = malloc((n + 1) * sizeof(ivl));
    if (!all || !cls[0] || !cls[1] || !cls[2]) abort();
    double ksum = 0;
    size_t kn = 0;
    for (size_t i = 0; i < n; i++) {
        const gp_trow *e = &r->gpu.v[i];
        ivl v = {e->ts, e->ts + e->dur};
        all[i] = v;
        int kt = kt_of[e->name] & 15;
        if (kt < 3) cls[kt][ncls[kt]++] = v;
        if (kt_of[e->name] & 16) res->h2d_d2h_us += e->dur;
        if (kt == GP_KT_COMPUTATION) ksum += e->dur, kn++;
    }
    res->mean_kernel_us = kn ? ksum / (double)kn : NAN;
    size_t nall = merge_ivls(all, n);
    for (int k = 0; k < 3; k++)
        ncls[k] = merge_ivls(cls[k], ncls[k]);
    if (nall) {
        res->has_gpu = 1;
        res->span_us = all[nall - 1].end - all[0].ts;
        res->idle_us = res->span_us - ivl_len(all, nall);
        res->compute_us = ivl_len(cls[GP_KT_COMPUTATION], ncls[GP_KT_COMPUTATION]);
        res->non_compute_us = res->span_us - res->compute_us - res->idle_us;
        res->idle_pctg = np_round(100 * (res->idle_us / res->span_us), 2);
        res->compute_pctg = np_round(100 * (res->compute_us / res->span_us), 2);
        res->non_compute_pctg = np_round(100 * (res->non_compute_us / res->span_us), 2);
    }
    type_breakdown(cls, ncls, res);
    double comm = ivl_len(cls[GP_KT_COMMUNICATION], ncls[GP_KT_COMMUNICATION]);
    res->comm_us = comm;
    double inter = intersect_len(cls[GP_KT_COMMUNICATION], ncls[GP_KT_COMMUNICATION],
                                 cls[GP_KT_COMPUTATION], ncls[GP_KT_COMPUTATION]);
    if (comm != 0 || inter != 0) {
        res->overlap_ratio = inter / comm;
        res->overlap_pctg = np_round(100 * res->overlap_ratio, 2);
    }
    for (int kt = 0; kt < 3; kt++)
        kernel_breakdown(r, kt_of, kt, o, res);
    idle_breakdown(r, o, res);
    launch_stats(r, o, res);
    step_util(r, all, nall, cls, ncls, res);
    gp_trace_attribute_idle(r, (const double *)all, nall, res);
    gp_trace_capture_timeline(r, kt_of, res);
    free(all);
    for (int k = 0; k < 3; k++)
        free(cls[k]);
    free(kt_of);
    return 0;
}

void gp_rank_result_free(gp_rank_result *res) {
    if (!res) return;
    free(res->streams);
    for (size_t i = 0; i < res->n_kernels; i++)
        free(res->kernels[i].name);
    for (size_t i = 0; i < res->n_top; i++)
        free(res->top[i].name);
    free(res->kernels);
    free(res->top);
    free(res->launches);
    free(res->steps);
    free(res->ops);
    for (size_t i = 0; i < res->n_tl_names; i++)
        free(res->tl_names[i]);
    free(res->tl_names);
    free(res->tl);
    gp_nsys_totals_free(res->nsys);
    memset(res, 0, sizeof *res);
}
