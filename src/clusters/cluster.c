/* cluster.c: the cluster report's aggregator, containers and findings (see cluster.h).
 *
 * Everything here is a running sum: a unit (task instance, pod, job) is folded into totals,
 * per-dimension tables, a utilization histogram weighted by allocated GPU-s and a time-
 * binned series as it is read, then forgotten. Findings are computed once at the end from
 * those sums, with thresholds from one table. */
#include "clusters/cluster.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *const gp_cl_dim_names[GP_CL_DIM__COUNT] = {"gpu_type", "user", "group", "workload"};
const char *const gp_cl_count_bucket_names[GP_CL_COUNT_BUCKETS] = {"0",   "<1",  "1",    "2",
                                                                   "3-4", "5-8", "9-16", ">16"};

/* ---- hashing and containers ---- */
uint64_t gp_cl_hash(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    for (size_t k = 0; i < n; i++, k++)
        w |= (uint64_t)(unsigned char)s[i] << (8 * k);
    h = (h ^ w) * 0x94d049bb133111ebull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h ? h : 1;
}

/* Large tables (a join over millions of keys) are mapped with transparent huge pages when
 * the kernel offers them on request (THP "madvise" mode): every lookup there is a cache miss,
 * and with 4 KiB pages a TLB miss too, which prefetching cannot hide. */
#define MAP_BIG_BYTES (4u << 20)

static gp_cl_slot *slots_alloc(size_t cap) {
    size_t bytes = cap * sizeof(gp_cl_slot);
    if (bytes < MAP_BIG_BYTES) return calloc(cap, sizeof(gp_cl_slot));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

static void slots_free(gp_cl_slot *p, size_t cap) {
    if (!p) return;
    if (cap * sizeof(gp_cl_slot) < MAP_BIG_BYTES)
        free(p);
    else
        munmap(p, cap * sizeof(gp_cl_slot));
}

static int map_rehash(gp_cl_map *m, size_t cap) {
    gp_cl_slot *k = slots_alloc(cap);
    if (!k) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key) continue;
        size_t j = m->slots[i].key & (cap - 1);
        while (k[j].key)
            j = (j + 1) & (cap - 1);
        k[j] = m->slots[i];
    }
    slots_free(m->slots, m->cap);
    m->slots = k;
    m->cap = cap;
    return 0;
}

static int map_grow(gp_cl_map *m) {
    return map_rehash(m, m->cap ? m->cap * 2 : 1024);
}

int gp_cl_map_reserve(gp_cl_map *m, size_t n) {
    size_t cap = m->cap ? m->cap : 1024;
    while ((n + 1) * 10 > cap * 7)
        cap *= 2;
    return cap == m->cap ? 0 : map_rehash(m, cap);
}

int gp_cl_map_get(const gp_cl_map *m, uint64_t key, uint32_t *val) {
    if (!m->cap) return 0;
    size_t j = key & (m->cap - 1);
    while (m->slots[j].key) {
        if (m->slots[j].key == key) {
            *val = m->slots[j].val;
            return 1;
        }
        j = (j + 1) & (m->cap - 1);
    }
    return 0;
}

int gp_cl_map_put(gp_cl_map *m, uint64_t key, uint32_t val) {
    if ((m->n + 1) * 10 > m->cap * 7 && map_grow(m) != 0) return -1;
    size_t j = key & (m->cap - 1);
    while (m->slots[j].key && m->slots[j].key != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].key) m->n++;
    m->slots[j].key = key;
    m->slots[j].val = val;
    return 0;
}

void gp_cl_map_free(gp_cl_map *m) {
    slots_free(m->slots, m->cap);
    memset(m, 0, sizeof *m);
}

int32_t gp_cl_intern(gp_cl_strtab *t, const char *s, size_t n) {
    uint64_t h = gp_cl_hash(s, n);
    uint32_t id;
    if (gp_cl_map_get(&t->map, h, &id)) return (int32_t)id;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **ns = realloc(t->s, cap * sizeof *ns);
        if (!ns) return -1;
        t->s = ns;
        t->cap = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy) return -1;
    memcpy(copy, s, n);
    copy[n] = 0;
    t->s[t->n] = copy;
    if (gp_cl_map_put(&t->map, h, (uint32_t)t->n) != 0) {
        free(copy);
        return -1;
    }
    return (int32_t)t->n++;
}

void gp_cl_strtab_free(gp_cl_strtab *t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    gp_cl_map_free(&t->map);
    memset(t, 0, sizeof *t);
}

/* ---- report ---- */
void gp_cl_report_init(gp_cluster_report *r, const char *format, const char *path, double bin_s) {
    memset(r, 0, sizeof *r);
    snprintf(r->format, sizeof r->format, "%s", format);
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->unit_name, sizeof r->unit_name, "units");
    r->series.bin_s = bin_s > 0 ? bin_s : 3600;
    r->t_min = INFINITY;
    r->t_max = -INFINITY;
}

void gp_cl_report_free(gp_cluster_report *r) {
    for (int d = 0; d < GP_CL_DIM__COUNT; d++) {
        gp_cl_strtab_free(&r->dim_names[d]);
        free(r->dim[d]);
    }
    gp_cl_strtab_free(&r->wait_type_names);
    gp_cl_strtab_free(&r->cap_model_names);
    free(r->wait_type);
    gp_cl_series *s = &r->series;
    free(s->alloc_gpu_s);
    free(s->busy_gpu_s);
    free(s->measured_gpu_s);
    free(s->wait_gpu_s);
    free(s->online_gpu_s);
    free(r->findings);
    memset(r, 0, sizeof *r);
}

int gp_cl_table_count(gp_cluster_report *r, const char *name, int64_t rows) {
    if (r->n_tables >= (int)(sizeof r->tables / sizeof r->tables[0])) return -1;
    snprintf(r->tables[r->n_tables].name, sizeof r->tables[0].name, "%s", name);
    r->tables[r->n_tables++].rows = rows;
    return 0;
}

/* Row of a dimension by name, NULL out of memory; *skip set when a non-type dimension is
 * unknown (empty: no row). stable: the pointer identifies the string (see gp_cl_unit), so a
 * cache hit needs neither the string nor its hash. */
static gp_cl_agg *dim_row(gp_cluster_report *r, int d, const char *name, int stable, int *skip) {
    size_t slot = (size_t)(((uintptr_t)name * 0x9E3779B97F4A7C15ull) >> 56);
    *skip = 0;
    if (stable && name && r->dim_cache[d][slot].s == name) {
        int32_t id = r->dim_cache[d][slot].id;
        if (id >= 0) return &r->dim[d][id];
        *skip = 1;
        return NULL;
    }
    int32_t id = -1;
    if (!name || !name[0]) {
        if (d != GP_CL_DIM_TYPE) {
            *skip = 1;
            goto cache;
        }
        id = gp_cl_intern(&r->dim_names[d], "(unknown)", 9);
    } else
        id = gp_cl_intern(&r->dim_names[d], name, strlen(name));
    if (id < 0) return NULL;
    if ((size_t)id >= r->dim_cap[d]) {
        size_t cap = r->dim_cap[d] ? r->dim_cap[d] * 2 : 64;
        while (cap <= (size_t)id)
            cap *= 2;
        gp_cl_agg *n = realloc(r->dim[d], cap * sizeof *n);
        if (!n) return NULL;
        memset(n + r->dim_cap[d], 0, (cap - r->dim_cap[d]) * sizeof *n);
        r->dim[d] = n;
        r->dim_cap[d] = cap;
    }
cache:
    if (stable && name) {
        r->dim_cache[d][slot].s = name;
        r->dim_cache[d][slot].id = id; /* -1: unknown, no row */
    }
    return id >= 0 ? &r->dim[d][id] : NULL;
}

static void agg_add(gp_cl_agg *a, double req, double alloc, double used) {
    a->n++;
    a->requested_gpu_s += req;
    a->allocated_gpu_s += alloc;
    if (used >= 0) {
        a->used_gpu_s += used;
        a->measured_alloc_gpu_s += alloc;
    }
}

/* Makes bins lo..hi addressable. Growing upward within the capacity costs nothing (the
 * columns are zeroed past n); otherwise the columns are reallocated to the next power of two
 * and copied. The capacity used to be recomputed and not kept, so a series that grew one
 * bin at a time (pods in time order) was copied whole at every new bin: quadratic, 10% of
 * `cluster openb2023` in memmove/calloc and most of its page faults (bench/RESULTS.md). */
static int series_cover(gp_cl_series *s, int64_t lo, int64_t hi) {
    if (s->n == 0) {
        s->b0 = lo;
    }
    int64_t nlo = s->n ? (lo < s->b0 ? lo : s->b0) : lo;
    int64_t nhi = s->n ? (hi > s->b0 + (int64_t)s->n - 1 ? hi : s->b0 + (int64_t)s->n - 1) : hi;
    size_t nn = (size_t)(nhi - nlo + 1);
    if (nn > GP_CL_SERIES_MAX_BINS) return -1;
    if (s->n && nlo == s->b0 && nn == s->n) return 0;
    if (s->alloc_gpu_s && nlo == s->b0 && nn <= s->cap) {
        s->n = nn;
        return 0;
    }
    double **cols[5] = {&s->alloc_gpu_s, &s->busy_gpu_s, &s->measured_gpu_s, &s->wait_gpu_s,
                        &s->online_gpu_s};
    size_t cap = 1;
    while (cap < nn)
        cap *= 2;
    size_t shift = (size_t)(s->b0 - nlo);
    for (int c = 0; c < 5; c++) {
        double *nb = calloc(cap, sizeof *nb);
        if (!nb) return -1;
        if (s->n) memcpy(nb + shift, *cols[c], s->n * sizeof *nb);
        free(*cols[c]);
        *cols[c] = nb;
    }
    s->b0 = nlo;
    s->n = nn;
    s->cap = cap;
    return 0;
}

int gp_cl_series_add(gp_cl_series *s, int col, double t0, double t1, double gpus) {
    if (!(t1 > t0) || gpus == 0 || !isfinite(t0) || !isfinite(t1)) return 0;
    double flo = floor(t0 / s->bin_s), fhi = floor(t1 / s->bin_s);
    /* Absurd times (a corrupt row) must not overflow the bin index: same as a huge span. */
    if (!(fabs(flo) < 4e18 && fabs(fhi) < 4e18)) return -1;
    int64_t lo = (int64_t)flo, hi = (int64_t)fhi;
    if (hi - lo > GP_CL_SERIES_MAX_BINS) return -1;
    if (s->n == 0 || lo < s->b0 || hi >= s->b0 + (int64_t)s->n) {
        /* keep spare room: capacity is a power of two, n is the used span */
        if (series_cover(s, lo, hi) != 0) return -1;
    }
    double *c = col == 0   ? s->alloc_gpu_s
                : col == 1 ? s->busy_gpu_s
                : col == 2 ? s->measured_gpu_s
                : col == 3 ? s->wait_gpu_s
                           : s->online_gpu_s;
    for (int64_t b = lo; b <= hi; b++) {
        double a = (double)b * s->bin_s, e = a + s->bin_s;
        double ov = (t1 < e ? t1 : e) - (t0 > a ? t0 : a);
        if (ov > 0) c[b - s->b0] += ov * gpus;
    }
    return 0;
}

/* A unit's allocated, busy and measured GPUs over the same interval: the bin overlaps are
 * computed once (the three columns were a tenth of a PAI run as separate calls). */
static int series_add_unit(gp_cl_series *s, double t0, double t1, double alloc, double busy,
                           int measured) {
    if (!(t1 > t0) || !isfinite(t0) || !isfinite(t1)) return 0;
    if (!measured) return gp_cl_series_add(s, 0, t0, t1, alloc);
    int64_t lo = (int64_t)floor(t0 / s->bin_s), hi = (int64_t)floor(t1 / s->bin_s);
    if (hi - lo > GP_CL_SERIES_MAX_BINS) return -1;
    if (s->n == 0 || lo < s->b0 || hi >= s->b0 + (int64_t)s->n) {
        if (series_cover(s, lo, hi) != 0) return -1;
    }
    for (int64_t b = lo; b <= hi; b++) {
        double a = (double)b * s->bin_s, e = a + s->bin_s;
        double ov = (t1 < e ? t1 : e) - (t0 > a ? t0 : a);
        if (ov <= 0) continue;
        size_t i = (size_t)(b - s->b0);
        s->alloc_gpu_s[i] += ov * alloc;
        if (busy != 0) s->busy_gpu_s[i] += ov * busy;
        s->measured_gpu_s[i] += ov * alloc;
    }
    return 0;
}

static void note_time(gp_cluster_report *r, double t0, double t1) {
    if (t0 >= 0 && t0 < r->t_min) r->t_min = t0;
    if (t1 >= 0 && t1 > r->t_max) r->t_max = t1;
}

int gp_cl_add_unit(gp_cluster_report *r, const gp_cl_unit *u) {
    double dur = (u->start_s >= 0 && u->end_s >= u->start_s) ? u->end_s - u->start_s : -1;
    if (dur < 0) {
        r->n_skipped++;
        return 0;
    }
    r->n_units++;
    double req = (u->request_gpus > 0 ? u->request_gpus : 0) * dur;
    double alloc = u->alloc_gpus * dur;
    double used = u->used_gpus >= 0 && u->alloc_gpus > 0 ? u->used_gpus * dur : -1;
    agg_add(&r->total, req, alloc, used);
    for (int d = 0; d < GP_CL_DIM__COUNT; d++) {
        int skip;
        gp_cl_agg *a = dim_row(r, d, u->dim[d], u->stable_dims, &skip);
        if (skip) continue;
        if (!a) return -1;
        agg_add(a, req, alloc, used);
    }
    note_time(r, u->start_s, u->end_s);
    if (u->alloc_gpus > 0) {
        if (series_add_unit(&r->series, u->start_s, u->end_s, u->alloc_gpus,
                            u->used_gpus >= 0 ? u->used_gpus : 0, u->used_gpus >= 0) != 0)
            r->n_skipped++;
        if (u->used_gpus >= 0) {
            double util = u->used_gpus / u->alloc_gpus;
            if (util > 1) util = 1;
            if (util < 0) util = 0;
            int b = (int)(util * GP_CL_UTIL_BINS);
            if (b >= GP_CL_UTIL_BINS) b = GP_CL_UTIL_BINS - 1;
            r->util_gpu_s[b] += alloc;
            r->util_n[b]++;
            if (util < 0.01) r->idle_alloc_gpu_s += alloc;
            if (util <= 0.5) r->under_batched_gpu_s += alloc;
        }
    }
    if (u->request_gpus > 0 && u->used_gpus >= 0) {
        r->n_plan_measured++;
        if (u->request_gpus > u->used_gpus) r->n_plan_exceeds++;
    }
    if (u->failed) {
        r->n_failed++;
        r->failed_gpu_s += alloc;
    }
    if (u->never_ran && u->alloc_gpus > 0) {
        r->n_held_never_ran++;
        r->held_never_ran_gpu_s += alloc;
    }
    return 0;
}

int gp_cl_count_bucket(double g) {
    if (g <= 0) return 0;
    if (g < 1) return 1;
    if (g <= 1) return 2;
    if (g <= 2) return 3;
    if (g <= 4) return 4;
    if (g <= 8) return 5;
    if (g <= 16) return 6;
    return 7;
}

void gp_cl_wait_add(gp_cl_wait *w, double s) {
    w->n++;
    w->sum_s += s;
    if (s > w->max_s) w->max_s = s;
    int b = 0;
    if (s >= 1) {
        b = 1 + (int)floor(log2(s) * 16);
        if (b >= GP_CL_WAIT_BINS) b = GP_CL_WAIT_BINS - 1;
    }
    w->hist[b]++;
}

double gp_cl_wait_quantile(const gp_cl_wait *w, double q) {
    if (w->n == 0) return -1;
    double want = q * (double)w->n;
    double acc = 0;
    for (int b = 0; b < GP_CL_WAIT_BINS; b++) {
        acc += w->hist[b];
        if (acc >= want && w->hist[b]) {
            if (b == 0) return 0;
            double hi = exp2((double)b / 16.0);
            return hi < w->max_s ? hi : w->max_s;
        }
    }
    return w->max_s;
}

int gp_cl_add_wait(gp_cluster_report *r, double gpus, const char *type, double submit_s,
                   double start_s) {
    if (submit_s < 0 || start_s < 0) return 0;
    double s = start_s - submit_s;
    if (s < 0) s = 0;
    gp_cl_wait_add(&r->wait_all, s);
    gp_cl_wait_add(&r->wait_count[gp_cl_count_bucket(gpus)], s);
    if (!type || !type[0]) type = "(unknown)";
    int32_t id = gp_cl_intern(&r->wait_type_names, type, strlen(type));
    if (id < 0) return -1;
    if ((size_t)id >= r->wait_type_cap) {
        size_t cap = r->wait_type_cap ? r->wait_type_cap * 2 : 16;
        while (cap <= (size_t)id)
            cap *= 2;
        gp_cl_wait *n = realloc(r->wait_type, cap * sizeof *n);
        if (!n) return -1;
        memset(n + r->wait_type_cap, 0, (cap - r->wait_type_cap) * sizeof *n);
        r->wait_type = n;
        r->wait_type_cap = cap;
    }
    gp_cl_wait_add(&r->wait_type[id], s);
    if (gpus > 0 && s > 0) gp_cl_series_add(&r->series, 3, submit_s, start_s, gpus);
    return 0;
}

void gp_cl_add_never_ran(gp_cluster_report *r, double gpus) {
    r->n_waited_never_ran++;
    if (gpus > 0) r->waited_never_ran_gpus += gpus;
}

int gp_cl_add_sample(gp_cluster_report *r, double t_s, double interval_s, double online,
                     double busy) {
    r->has_ts = 1;
    r->ts_samples++;
    double on = online * interval_s, b = busy * interval_s;
    r->ts_online_gpu_s += on;
    r->ts_busy_gpu_s += b;
    double util = online > 0 ? busy / online : 0;
    if (util < 0.01) r->ts_idle_gpu_s += on;
    if (util <= 0.5) r->ts_low_gpu_s += on;
    int bin = (int)(util * GP_CL_UTIL_BINS);
    if (bin >= GP_CL_UTIL_BINS) bin = GP_CL_UTIL_BINS - 1;
    if (bin < 0) bin = 0;
    r->util_gpu_s[bin] += on;
    r->util_n[bin]++;
    note_time(r, t_s, t_s + interval_s);
    gp_cl_series_add(&r->series, 4, t_s, t_s + interval_s, online);
    gp_cl_series_add(&r->series, 1, t_s, t_s + interval_s, busy);
    gp_cl_series_add(&r->series, 2, t_s, t_s + interval_s, online);
    return 0;
}
