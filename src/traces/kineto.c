/* kineto.c: what both Kineto readers share (name interning, the per-event keep/drop rules
 * of gp_kineto_finish_event) and the reference reader built on yajl's event API.
 * `goodput trace` uses the hand-written scanner in kineto_scan.c (gp_kineto_read), which is
 * 3-4x faster; this yajl reader (gp_kineto_read_yajl) stays as the independent reference the
 * tests compare the scanner with, row by row. It reads plain or gzip (zlib's gzread reads
 * both). yajl's event API drives a small state machine: only the
 * fields HTA reads are kept (cat, name, ts, dur, args.stream, args.correlation, and
 * distributedInfo.rank), one compact row per GPU event or correlated CPU event, so memory
 * grows with the rows the analyses need and never with the JSON text. Numbers arrive as
 * raw text so a float-written timestamp can be told from an integer one (HTA rounds events
 * inward only when the timestamp column is float). Errors name the uncompressed byte
 * offset yajl stopped at. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "traces/kineto_int.h"
#include "traces/trace.h"

#define MAX_DUR_US 604800000000.0 /* 7 days: longer is a corrupt CUPTI timestamp */

/* ---- name interning (open addressing) ---- */
#define NAME_CACHE 256 /* direct-mapped, a power of 2 */
typedef struct {
    uint32_t *slots; /* id + 1, 0 empty */
    uint32_t cap;
    /* Names recur (a step's kernels and ops again and again): a name seen lately is found
     * from its length and first and last 8 bytes, then confirmed with one memcmp, instead
     * of hashing all of it (kernel names run to hundreds of bytes) and probing. */
    struct {
        uint64_t key;
        size_t len;
        uint32_t id1; /* id + 1, 0 empty */
    } recent[NAME_CACHE];
} name_index;

/* Eight bytes a step (kernel names run to hundreds of bytes and every kept event's name is
 * hashed: FNV's byte-at-a-time chain of multiplies cost ~4% of a trace's CPU). */
static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s + i, n - i);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

static uint32_t intern_slow(gp_trace_rank *r, name_index *ix, const char *s, size_t len);

uint32_t gp_trace_intern(gp_trace_rank *r, const char *s, size_t len) {
    const char *nul = memchr(s, 0, len); /* names are C strings: a \u0000 ends one */
    if (nul) len = (size_t)(nul - s);
    name_index *ix = r->name_index;
    if (!ix) {
        ix = calloc(1, sizeof *ix);
        if (!ix) abort();
        r->name_index = ix;
    }
    uint64_t head = 0, tail = 0;
    memcpy(&head, s, len < 8 ? len : 8);
    memcpy(&tail, s + (len < 8 ? 0 : len - 8), len < 8 ? len : 8);
    uint64_t key = (head ^ (tail * 0x9E3779B97F4A7C15ull) ^ len) * 0xff51afd7ed558ccdull;
    size_t slot = (size_t)(key >> 56) & (NAME_CACHE - 1);
    if (ix->recent[slot].id1 && ix->recent[slot].key == key && ix->recent[slot].len == len &&
        memcmp(r->names[ix->recent[slot].id1 - 1], s, len) == 0)
        return ix->recent[slot].id1 - 1;
    uint32_t id = intern_slow(r, ix, s, len);
    ix->recent[slot].key = key;
    ix->recent[slot].len = len;
    ix->recent[slot].id1 = id + 1;
    return id;
}

/* The interning itself (open addressing over every name of the rank). */
static uint32_t intern_slow(gp_trace_rank *r, name_index *ix, const char *s, size_t len) {
    if ((r->n_names + 1) * 2 >= ix->cap) {
        uint32_t nc = ix->cap ? ix->cap * 2 : 1024;
        uint32_t *ns = calloc(nc, sizeof *ns);
        if (!ns) abort();
        for (uint32_t i = 0; i < r->n_names; i++) {
            uint64_t h = name_hash(r->names[i], strlen(r->names[i])) & (nc - 1);
            while (ns[h])
                h = (h + 1) & (nc - 1);
            ns[h] = i + 1;
        }
        free(ix->slots);
        ix->slots = ns;
        ix->cap = nc;
    }
    uint64_t h = name_hash(s, len) & (ix->cap - 1);
    while (ix->slots[h]) {
        const char *c = r->names[ix->slots[h] - 1];
        if (strncmp(c, s, len) == 0 && c[len] == 0) return ix->slots[h] - 1;
        h = (h + 1) & (ix->cap - 1);
    }
    if (r->n_names == r->cap_names) {
        r->cap_names = r->cap_names ? r->cap_names * 2 : 256;
        r->names = realloc(r->names, r->cap_names * sizeof *r->names);
        r->hclass_of = realloc(r->hclass_of, r->cap_names);
        r->step_seen = realloc(r->step_seen, r->cap_names);
        if (!r->names || !r->hclass_of || !r->step_seen) abort();
    }
    char *c = malloc(len + 1);
    if (!c) abort();
    memcpy(c, s, len);
    c[len] = 0;
    r->names[r->n_names] = c;
    r->hclass_of[r->n_names] = (uint8_t)gp_host_class(c); /* once per distinct name */
    r->step_seen[r->n_names] = 0;
    ix->slots[h] = r->n_names + 1;
    return r->n_names++;
}

static void vec_push(gp_trow_vec *v, const gp_trow *row) {
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4096;
        v->v = realloc(v->v, v->cap * sizeof *v->v);
        if (!v->v) abort();
    }
    v->v[v->n++] = *row;
}

void gp_kineto_reserve(gp_trace_rank *r, uint64_t json_bytes) {
    /* Kineto spends 250+ bytes of JSON per event, so no vector can need more rows than
     * this. Reserving is address space only (malloc touches no page, so RSS grows with the
     * rows written, as before) and spares the doubling copies, each of which faulted in a
     * fresh copy of the rows. Capped: a larger trace grows past it as before. */
    if (json_bytes < (4u << 20)) return; /* small: the first 4,096 rows hold most of it */
    size_t rows = (size_t)(json_bytes / 250) + 4096;
    if (rows > ((size_t)64 << 20) / sizeof(gp_trow)) rows = ((size_t)64 << 20) / sizeof(gp_trow);
    gp_trow_vec *v[3] = {&r->gpu, &r->cpu, &r->host};
    for (int i = 0; i < 3; i++) {
        if (v[i]->cap >= rows) continue;
        gp_trow *p = realloc(v[i]->v, rows * sizeof *p);
        if (!p) return; /* only a hint */
        v[i]->v = p;
        v[i]->cap = rows;
    }
}

void gp_trace_rank_free(gp_trace_rank *r) {
    if (!r) return;
    free(r->gpu.v);
    free(r->cpu.v);
    free(r->host.v);
    free(r->hclass_of);
    free(r->step_seen);
    for (uint32_t i = 0; i < r->n_names; i++)
        free(r->names[i]);
    free(r->names);
    name_index *ix = r->name_index;
    if (ix) free(ix->slots);
    free(ix);
    gp_nsys_totals_free(r->nsys);
    memset(r, 0, sizeof *r);
}

/* ---- host op classes (idle attribution) ---- */
static int has_prefix(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

int gp_host_class(const char *n) {
    /* runtime calls first: their names are exact */
    if (!strcmp(n, "cudaLaunchKernel") || !strcmp(n, "cudaLaunchKernelExC") ||
        !strcmp(n, "cuLaunchKernel") || !strcmp(n, "cuLaunchKernelEx") ||
        !strcmp(n, "cudaMemcpyAsync") || !strcmp(n, "cudaMemsetAsync") ||
        !strcmp(n, "cudaGraphLaunch") || !strcmp(n, "cudaLaunchCooperativeKernel") ||
        !strcmp(n, "hipLaunchKernel") || !strcmp(n, "hipExtModuleLaunchKernel"))
        return GP_HC_LAUNCH;
    /* blocking copies and waits: the host stops until the device drains */
    if (!strcmp(n, "cudaMemcpy") || !strcmp(n, "cudaMemcpy2D") || !strcmp(n, "cudaMemset") ||
        !strcmp(n, "cudaStreamSynchronize") || !strcmp(n, "cudaDeviceSynchronize") ||
        !strcmp(n, "cudaEventSynchronize") || !strcmp(n, "cuStreamSynchronize") ||
        !strcmp(n, "cuCtxSynchronize") || !strcmp(n, "hipStreamSynchronize") ||
        !strcmp(n, "hipDeviceSynchronize") || !strcmp(n, "aten::item") ||
        !strcmp(n, "aten::_local_scalar_dense") || !strcmp(n, "aten::nonzero") ||
        !strcmp(n, "cudaStreamWaitEvent_blocking"))
        return GP_HC_SYNC;
    if (!strcmp(n, "aten::to") || !strcmp(n, "aten::_to_copy") || !strcmp(n, "aten::copy_"))
        return GP_HC_COPY;
    if (has_prefix(n, "Optimizer.step#") || has_prefix(n, "Optimizer.step/"))
        return GP_HC_OPTIMIZER;
    if (has_prefix(n, "nccl:") || has_prefix(n, "c10d::") || has_prefix(n, "ProcessGroup") ||
        has_prefix(n, "record_param_comms") || has_prefix(n, "gloo:"))
        return GP_HC_COLLECTIVE;
    if (strstr(n, "DataLoader") || strstr(n, "dataloader") || strstr(n, "__next__") ||
        strstr(n, "collate") || strstr(n, "pin_memory") || strstr(n, "_next_data"))
        return GP_HC_DATA;
    if (has_prefix(n, "CUPTI") || has_prefix(n, "cupti") || has_prefix(n, "Profiler overhead") ||
        has_prefix(n, "profiler::") || !strcmp(n, "Buffer Flush"))
        return GP_HC_PROFILER;
    return GP_HC_NONE;
}

void gp_kineto_rank_init(gp_trace_rank *r) {
    r->pid = -1;
    r->base_time_ns = -1;
    r->world_size = -1;
    r->t_first_us = r->t_last_us = NAN;
    r->warn.first_bad_idx = r->warn.first_zero_idx = r->warn.first_dup_idx = -1;
}

void gp_kineto_set_base_time(gp_trace_rank *r, double d) {
    if (isfinite(d) && d >= 0 && d < 9.2e18) r->base_time_ns = (int64_t)d;
}

void gp_kineto_set_world_size(gp_trace_rank *r, double d) {
    if (isfinite(d) && d == floor(d) && d >= 0 && d < 2e9) r->world_size = (int)d;
}

/* ---- what both readers share ---- */
static const char *const known_cats[] = {"kernel",
                                         "gpu_memcpy",
                                         "gpu_memset",
                                         "cuda_runtime",
                                         "cuda_driver",
                                         "cpu_op",
                                         "user_annotation",
                                         "gpu_user_annotation",
                                         "ac2g",
                                         "Kernel",
                                         "Memcpy",
                                         "Memset",
                                         "Runtime",
                                         "Operator",
                                         "python_function",
                                         "Trace",
                                         "fwdbwd",
                                         "cuda_sync",
                                         "cuda_profiler_range",
                                         "overhead",
                                         "Python",
                                         "kineto_overhead",
                                         "Activity Buffer Request",
                                         "gpu_mem_copy",
                                         "gpu_mem_set",
                                         "mtia_ccp_events",
                                         "cpu_instant_event",
                                         "python_function",
                                         "Overhead",
                                         "Mem",
                                         "privateuse1_runtime",
                                         "privateuse1_driver",
                                         NULL};

void gp_kineto_event_reset(gp_kev *e) {
    e->has_cat = e->has_ts = e->has_dur = e->ts_is_float = e->cat_trace = e->cat_k = 0;
    e->cat_overhead = 0;
    e->tid = 0;
    e->pid = -1;
    e->cat_known = 1;
    e->stream = -1;
    e->corr = -1;
    e->name = NULL;
    e->name_len = 0;
}

void gp_kineto_set_cat(gp_kev *e, gp_kcat_cache *cache, const char *c, size_t n) {
    e->has_cat = 1;
    for (unsigned i = 0; i < cache->used; i++)
        if (cache->way[i].len == n && (!n || cache->way[i].text[0] == c[0]) &&
            !memcmp(cache->way[i].text, c, n)) {
            e->cat_trace = cache->way[i].trace;
            e->cat_k = cache->way[i].k;
            e->cat_overhead = cache->way[i].overhead;
            e->cat_known = cache->way[i].known;
            return;
        }
    e->cat_trace = (n == 5 && !memcmp(c, "Trace", 5));
    e->cat_k = (n == 6 && (!memcmp(c, "kernel", 6) || !memcmp(c, "Kernel", 6) ||
                           !memcmp(c, "Memset", 6) || !memcmp(c, "Memcpy", 6))) ||
               (n == 10 && (!memcmp(c, "gpu_memset", 10) || !memcmp(c, "gpu_memcpy", 10))) ||
               (n == 15 && !memcmp(c, "mtia_ccp_events", 15));
    e->cat_overhead = (n == 8 && (!memcmp(c, "overhead", 8) || !memcmp(c, "Overhead", 8))) ||
                      (n == 15 && !memcmp(c, "kineto_overhead", 15)) ||
                      (n == 23 && !memcmp(c, "Activity Buffer Request", 23));
    e->cat_known = 0;
    for (int i = 0; known_cats[i]; i++)
        if (n && known_cats[i][0] == c[0] && !strncmp(known_cats[i], c, n) &&
            known_cats[i][n] == 0) {
            e->cat_known = 1;
            break;
        }
    if (n < sizeof cache->way[0].text) {
        unsigned w = cache->used < GP_KCAT_WAYS ? cache->used++ : cache->next++ % GP_KCAT_WAYS;
        memcpy(cache->way[w].text, c, n);
        cache->way[w].len = (uint8_t)n;
        cache->way[w].trace = (uint8_t)e->cat_trace;
        cache->way[w].k = (uint8_t)e->cat_k;
        cache->way[w].overhead = (uint8_t)e->cat_overhead;
        cache->way[w].known = (uint8_t)e->cat_known;
    }
}

/* An integral double that fits int64 (so the conversion is defined). */
static int integral(double d) {
    return fabs(d) < 9.2e18 && d == (double)(int64_t)d; /* NaN fails the range: no call */
}

void gp_kineto_set_stream_num(gp_kev *e, double d) {
    e->stream = (integral(d) && fabs(d) < 2e9) ? (int64_t)d : -1;
}

void gp_kineto_set_corr_num(gp_kev *e, double d) {
    if (integral(d)) e->corr = (int64_t)d;
}

static int parse_int_text(const char *s, size_t n, int64_t *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (end == buf || *end || errno) return 0;
    if (!integral(d)) return 0;
    *out = (int64_t)d;
    return 1;
}

void gp_kineto_set_stream_text(gp_kev *e, const char *s, size_t n) {
    int64_t v;
    e->stream = parse_int_text(s, n, &v) ? v : -1; /* pandas to_numeric(errors=coerce) */
}

void gp_kineto_set_corr_text(gp_kev *e, const char *s, size_t n) {
    int64_t v;
    if (parse_int_text(s, n, &v)) e->corr = v;
}

void gp_kineto_finish_event(gp_trace_rank *r, const gp_kev *e, int64_t idx) {
    r->warn.events++;
    if (!e->has_dur || !e->has_cat) return; /* metadata, flows, counters: HTA drops them */
    if (e->cat_trace) return;
    if (!e->has_ts) {
        r->warn.missing_fields++;
        r->ts_float = 1; /* a missing ts makes HTA's column float */
        return;
    }
    if (e->dur < 0 || e->dur > MAX_DUR_US || !isfinite(e->dur) || !isfinite(e->ts)) {
        if (!r->warn.bad_duration) r->warn.first_bad_idx = idx;
        r->warn.bad_duration++;
        return;
    }
    if (e->dur == 0 && e->stream >= 0) { /* a sub-µs CPU op is normal; a 0-length kernel is not */
        if (!r->warn.zero_duration) r->warn.first_zero_idx = idx;
        r->warn.zero_duration++;
    }
    if (!(r->t_first_us <= e->ts)) r->t_first_us = e->ts;
    if (!(r->t_last_us >= e->ts + e->dur)) r->t_last_us = e->ts + e->dur;
    if (r->pid < 0 && e->stream == -1 && e->pid >= 0) r->pid = e->pid;
    if (!e->cat_known) r->warn.unknown_category++;
    if (e->ts_is_float) r->ts_float = 1;
    gp_trow row = {.ts = e->ts,
                   .dur = e->dur,
                   .corr = e->corr,
                   .idx = idx,
                   .stream = (int32_t)e->stream,
                   .tid = (int32_t)e->tid};
    const char *nm = e->name ? e->name : "";
    size_t nl = e->name ? e->name_len : 0;
    row.name = gp_trace_intern(r, nm, nl);
    if (e->stream == -1) row.hclass = e->cat_overhead ? GP_HC_PROFILER : r->hclass_of[row.name];
    int sync = (nl == 10 && !memcmp(nm, "Event Sync", 10)) ||
               (nl == 12 && !memcmp(nm, "Context Sync", 12));
    if ((e->stream >= 0 && e->corr >= 0) || sync) row.flags |= GP_TR_GPU_SIDE;
    if (e->cat_k) row.flags |= GP_TR_KCAT;
    if ((nl == 16 && !memcmp(nm, "cudaLaunchKernel", 16)) ||
        (nl == 19 && !memcmp(nm, "cudaLaunchKernelExC", 19)))
        row.flags |= GP_TR_LAUNCH;
    if ((nl == 15 && !memcmp(nm, "cudaMemcpyAsync", 15)) ||
        (nl == 15 && !memcmp(nm, "cudaMemsetAsync", 15)))
        row.flags |= GP_TR_MEMLAUNCH;
    if (!(row.flags & GP_TR_GPU_SIDE)) r->n_cpu_side++;
    int is_step = nl > 13 && !memcmp(nm, "ProfilerStep#", 13) && nm[13] >= '0' && nm[13] <= '9';
    if (is_step && e->stream == -1 && !(row.flags & GP_TR_GPU_SIDE)) {
        if (r->step_seen[row.name]) {
            /* the same step id twice (two runs pasted together, or a bad writer): counted,
             * and left out of the per-step view (HTA's filter still sees the name) */
            if (!r->warn.dup_steps) r->warn.first_dup_idx = idx;
            r->warn.dup_steps++;
            row.hclass = GP_HC_DUP_STEP;
        }
        r->step_seen[row.name] = 1;
    }
    if (e->stream != -1)
        vec_push(&r->gpu, &row);
    else if (e->corr != -1 || is_step || idx == 0)
        vec_push(&r->cpu, &row);
    else if (row.hclass != GP_HC_NONE)
        vec_push(&r->host, &row);
}

/* ---- the yajl reference reader ---- */
enum {
    K_NONE,
    K_CAT,
    K_NAME,
    K_TS,
    K_DUR,
    K_ARGS,
    K_STREAM,
    K_CORR,
    K_TRACEEVENTS,
    K_DIST,
    K_RANK,
    K_TID,
    K_PID,
    K_BASETIME,
    K_WORLD
};

typedef struct {
    gp_trace_rank *r;
    int depth;      /* containers open */
    int in_events;  /* depth of the traceEvents array, 0 when outside */
    int in_dist;    /* depth of distributedInfo map */
    int key;        /* meaning of the pending key at the current level */
    int ev_depth;   /* depth of the current event map */
    int args_depth; /* depth of its args map */
    int rank_seen;
    gp_kev ev;
    char *name;
    size_t name_cap;
    int64_t idx;
    gp_kcat_cache cats;
} pstate;

static int cb_start_map(void *ctx) {
    pstate *p = ctx;
    p->depth++;
    if (p->in_events && p->depth == p->in_events + 1) {
        p->ev_depth = p->depth;
        gp_kineto_event_reset(&p->ev);
    } else if (p->ev_depth && p->depth == p->ev_depth + 1 && p->key == K_ARGS) {
        p->args_depth = p->depth;
    } else if (p->depth == 2 && p->key == K_DIST) {
        p->in_dist = p->depth;
    }
    p->key = K_NONE;
    return 1;
}

static int cb_end_map(void *ctx) {
    pstate *p = ctx;
    if (p->ev_depth && p->depth == p->ev_depth) {
        gp_kineto_finish_event(p->r, &p->ev, p->idx++);
        p->ev_depth = 0;
    } else if (p->args_depth && p->depth == p->args_depth) {
        p->args_depth = 0;
    } else if (p->in_dist && p->depth == p->in_dist) {
        p->in_dist = 0;
    }
    p->depth--;
    p->key = K_NONE;
    return 1;
}

static int cb_start_array(void *ctx) {
    pstate *p = ctx;
    p->depth++;
    if (p->depth == 2 && p->key == K_TRACEEVENTS) p->in_events = p->depth;
    p->key = K_NONE;
    return 1;
}

static int cb_end_array(void *ctx) {
    pstate *p = ctx;
    if (p->in_events == p->depth) p->in_events = 0;
    p->depth--;
    p->key = K_NONE;
    return 1;
}

#define KEYIS(lit) (len == sizeof(lit) - 1 && !memcmp(k, lit, sizeof(lit) - 1))

static int cb_map_key(void *ctx, const unsigned char *key, size_t len) {
    pstate *p = ctx;
    const char *k = (const char *)key;
    p->key = K_NONE;
    if (p->ev_depth && p->depth == p->ev_depth) {
        if (KEYIS("cat"))
            p->key = K_CAT;
        else if (KEYIS("name"))
            p->key = K_NAME;
        else if (KEYIS("ts"))
            p->key = K_TS;
        else if (KEYIS("dur"))
            p->key = K_DUR;
        else if (KEYIS("args"))
            p->key = K_ARGS;
        else if (KEYIS("tid"))
            p->key = K_TID;
        else if (KEYIS("pid"))
            p->key = K_PID;
    } else if (p->args_depth && p->depth == p->args_depth) {
        if (KEYIS("stream"))
            p->key = K_STREAM;
        else if (KEYIS("correlation"))
            p->key = K_CORR;
    } else if (p->depth == 1) {
        if (KEYIS("traceEvents"))
            p->key = K_TRACEEVENTS;
        else if (KEYIS("distributedInfo"))
            p->key = K_DIST;
        else if (KEYIS("rank") && !p->rank_seen)
            p->key = K_RANK;
        else if (KEYIS("baseTimeNanoseconds"))
            p->key = K_BASETIME;
    } else if (p->in_dist && p->depth == p->in_dist) {
        if (KEYIS("rank"))
            p->key = K_RANK;
        else if (KEYIS("world_size"))
            p->key = K_WORLD;
    }
    return 1;
}

static int cb_number(void *ctx, const char *s, size_t n) {
    pstate *p = ctx;
    int key = p->key;
    p->key = K_NONE;
    if (key == K_NONE) return 1;
    char buf[64];
    if (n >= sizeof buf) return 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    double d = strtod(buf, NULL);
    int is_float = memchr(s, '.', n) || memchr(s, 'e', n) || memchr(s, 'E', n);
    switch (key) {
    case K_TS:
        p->ev.ts = d;
        p->ev.has_ts = 1;
        p->ev.ts_is_float = is_float;
        break;
    case K_DUR:
        p->ev.dur = d;
        p->ev.has_dur = 1;
        break;
    case K_STREAM:
        gp_kineto_set_stream_num(&p->ev, d);
        break;
    case K_CORR:
        gp_kineto_set_corr_num(&p->ev, d);
        break;
    case K_RANK:
        if (!p->rank_seen && integral(d) && fabs(d) < 2e9) {
            p->r->rank = (int)d;
            p->r->has_dist_rank = 1;
            p->rank_seen = 1;
        }
        break;
    case K_TID:
        if (integral(d) && fabs(d) < 9.2e18) p->ev.tid = (int64_t)d;
        break;
    case K_PID:
        if (integral(d) && d >= 0 && d < 9.2e18) p->ev.pid = (int64_t)d;
        break;
    case K_BASETIME:
        gp_kineto_set_base_time(p->r, d);
        break;
    case K_WORLD:
        gp_kineto_set_world_size(p->r, d);
        break;
    }
    return 1;
}

static int cb_string(void *ctx, const unsigned char *s, size_t n) {
    pstate *p = ctx;
    int key = p->key;
    p->key = K_NONE;
    const char *c = (const char *)s;
    if (key == K_CAT) {
        gp_kineto_set_cat(&p->ev, &p->cats, c, n);
    } else if (key == K_NAME) {
        if (n + 1 > p->name_cap) {
            p->name_cap = n + 64;
            p->name = realloc(p->name, p->name_cap);
            if (!p->name) abort();
        }
        memcpy(p->name, c, n);
        p->name[n] = 0;
        p->ev.name = p->name;
        p->ev.name_len = n;
    } else if (key == K_STREAM) {
        gp_kineto_set_stream_text(&p->ev, c, n);
    } else if (key == K_CORR) {
        gp_kineto_set_corr_text(&p->ev, c, n);
    } else if (key == K_TS) {
        p->r->warn.missing_fields++;
    }
    return 1;
}

static int cb_null(void *ctx) {
    ((pstate *)ctx)->key = K_NONE;
    return 1;
}
static int cb_bool(void *ctx, int b) {
    (void)b;
    ((pstate *)ctx)->key = K_NONE;
    return 1;
}

static const yajl_callbacks callbacks = {cb_null,    cb_bool,        NULL,         NULL,
                                         cb_number,  cb_string,      cb_start_map, cb_map_key,
                                         cb_end_map, cb_start_array, cb_end_array};

int gp_kineto_read_yajl(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                        void *progress_ctx, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    gp_kineto_rank_init(out);
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->source, sizeof out->source, "kineto");
    FILE *raw = fopen(path, "rb");
    if (!raw) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    fclose(raw);
    gzFile gz = gzopen(path, "rb");
    if (!gz) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    gzbuffer(gz, 1 << 18);
    pstate p = {.r = out};
    yajl_handle h = yajl_alloc(&callbacks, NULL, &p);
    if (!h) abort();
    size_t bufsz = 1 << 20;
    unsigned char *buf = malloc(bufsz);
    if (!buf) abort();
    int rc = 0;
    uint64_t off = 0;
    z_off_t last_raw = 0;
    for (;;) {
        int n = gzread(gz, buf, (unsigned)bufsz);
        if (n < 0) {
            int zerr;
            const char *m = gzerror(gz, &zerr);
            snprintf(err, errlen, "%s: gzip data corrupt near uncompressed byte %llu: %s", path,
                     (unsigned long long)off, m);
            rc = -1;
            break;
        }
        if (n == 0) {
            int zerr;
            gzerror(gz, &zerr);
            if (zerr != Z_OK) {
                snprintf(err, errlen, "%s: gzip error near uncompressed byte %llu", path,
                         (unsigned long long)off);
                rc = -1;
            }
            break;
        }
        yajl_status st = yajl_parse(h, buf, (size_t)n);
        if (st != yajl_status_ok) {
            size_t consumed = yajl_get_bytes_consumed(h);
            unsigned char *m = yajl_get_error(h, 0, buf, (size_t)n);
            snprintf(err, errlen, "%s: invalid JSON at byte %llu: %s", path,
                     (unsigned long long)(off + consumed), m ? (char *)m : "parse error");
            err[strcspn(err, "\n")] = 0; /* yajl ends its message with a newline */
            if (m) yajl_free_error(h, m);
            rc = -1;
            break;
        }
        off += (uint64_t)n;
        if (progress) {
            z_off_t now = gzoffset(gz);
            progress(progress_ctx, (uint64_t)(now - last_raw));
            last_raw = now;
        }
    }
    if (rc == 0) {
        /* a truncated gzip stream ends without error from gzread on some zlib versions:
         * gzclose reports it, and yajl_complete_parse catches the cut JSON */
        if (yajl_complete_parse(h) != yajl_status_ok) {
            unsigned char *m = yajl_get_error(h, 0, NULL, 0);
            snprintf(err, errlen, "%s: invalid or truncated JSON at byte %llu: %s", path,
                     (unsigned long long)off, m ? (char *)m : "parse error");
            err[strcspn(err, "\n")] = 0; /* yajl ends its message with a newline */
            if (m) yajl_free_error(h, m);
            rc = -1;
        }
    }
    int cz = gzclose(gz);
    if (rc == 0 && cz != Z_OK) {
        snprintf(err, errlen, "%s: truncated or corrupt gzip stream after %llu bytes", path,
                 (unsigned long long)off);
        rc = -1;
    }
    out->bytes = off;
    yajl_free(h);
    free(buf);
    free(p.name);
    if (rc) gp_trace_rank_free(out);
    return rc;
}
