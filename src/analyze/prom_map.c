/* prom_map.c: Prometheus families -> store rows (see prom_map.h).
 *
 * Per chunk of steps: one range query per present GPU family fills a grid of cells
 * (GPU x step, only the present families' fields: ctx_t.cell_bytes), written to the store
 * one GPU after another (so its inserts append in key order) in one transaction, by a writer
 * thread while the next chunk is read (writer_t); owner runs, pods
 * and serving counters carry across chunks in small tables (a few hundred bytes per GPU or pod), so
 * memory does not grow with the length of the range. A pruned store (prune_raw) rolls up every
 * sample but stores the raw row only where the report may read it (raw_fate); rows whose fate
 * depends on the next chunk are held, packed, per GPU (hold_t: at most PRUNE_TAIL_NS of
 * steps). */
#include "analyze/prom_map.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/accounting/job_summary.h"
#include "ingest/scrape.h"
#include "ingest/scrape_store.h"
#include "store/rollup.h"

#define NS 1000000000LL
#define MIB (1024.0 * 1024.0)
#define MAX_RUNS 8
/* Raw rows a pruned temporary store keeps (gp_prom_map_opts.prune_raw, raw_fate): the
 * first PRUNE_HEAD_NS of every owner run (the report's long-job rule is 6 h,
 * GP_SUMMARY_ROLLUP_MIN_NS: a shorter allocation is read raw whole, and the first minute
 * of a long one is) and its last PRUNE_TAIL_NS (report/findings_fmt.c reads a long job's
 * last 61 minutes raw for its rolling windows; job_summary.c fold_long its last partial
 * minute; diagnose.c the last raw row), each with 4-5 minutes to spare. */
#define PRUNE_HEAD_NS (GP_SUMMARY_ROLLUP_MIN_NS + 300 * NS)
#define PRUNE_TAIL_NS (65 * 60 * NS)

enum { K_RATIO, K_PCT, K_DOUBLE, K_MIB, K_BYTES, K_HZ, K_U64, K_MASK, K_XID, K_RATE };
enum { A_AVG, A_LAST, A_MAX };

typedef struct {
    const char *name;
    uint32_t field;
    int kind, agg;
    size_t off;
    int prio, source; /* source 0 dcgm, 1 nvidia_smi */
} family;

/* Same map as sources/dcgm.c (one name per field, newer names preferred by prio), plus
 * nvidia_gpu_exporter's. Counters and masks take the step's last value, XID its max. */
static const family fams[] = {
    {"DCGM_FI_DEV_GPU_UTIL", GP_F_GPU_UTIL, K_PCT, A_AVG, offsetof(gp_sample, gpu_util), 2, 0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", GP_F_GPU_UTIL, K_RATIO, A_AVG, offsetof(gp_sample, gpu_util),
     1, 0},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", GP_F_MEM_UTIL, K_PCT, A_AVG, offsetof(gp_sample, mem_util), 1, 0},
    {"DCGM_FI_PROF_SM_ACTIVE", GP_F_SM_ACTIVE, K_RATIO, A_AVG, offsetof(gp_sample, sm_active), 1,
     0},
    {"DCGM_FI_PROF_SM_OCCUPANCY", GP_F_SM_OCCUPANCY, K_RATIO, A_AVG,
     offsetof(gp_sample, sm_occupancy), 1, 0},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", GP_F_TENSOR_ACTIVE, K_RATIO, A_AVG,
     offsetof(gp_sample, tensor_active), 1, 0},
    {"DCGM_FI_PROF_DRAM_ACTIVE", GP_F_DRAM_ACTIVE, K_RATIO, A_AVG, offsetof(gp_sample, dram_active),
     1, 0},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", GP_F_FP16_ACTIVE, K_RATIO, A_AVG,
     offsetof(gp_sample, fp16_active), 1, 0},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", GP_F_FP32_ACTIVE, K_RATIO, A_AVG,
     offsetof(gp_sample, fp32_active), 1, 0},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", GP_F_FP64_ACTIVE, K_RATIO, A_AVG,
     offsetof(gp_sample, fp64_active), 1, 0},
    {"DCGM_FI_DEV_FB_USED", GP_F_MEM_USED, K_MIB, A_AVG, offsetof(gp_sample, mem_used_bytes), 1, 0},
    {"DCGM_FI_DEV_FB_TOTAL", GP_F_MEM_TOTAL, K_MIB, A_LAST, offsetof(gp_sample, mem_total_bytes), 1,
     0},
    {"DCGM_FI_DEV_POWER_USAGE", GP_F_POWER, K_DOUBLE, A_AVG, offsetof(gp_sample, power_w), 2, 0},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GP_F_ENERGY, K_U64, A_LAST,
     offsetof(gp_sample, energy_mj), 1, 0},
    {"DCGM_FI_DEV_SM_CLOCK", GP_F_SM_CLOCK, K_DOUBLE, A_AVG, offsetof(gp_sample, sm_clock_mhz), 1,
     0},
    {"DCGM_FI_DEV_MEM_CLOCK", GP_F_MEM_CLOCK, K_DOUBLE, A_AVG, offsetof(gp_sample, mem_clock_mhz),
     1, 0},
    {"DCGM_FI_DEV_GPU_TEMP", GP_F_TEMP, K_DOUBLE, A_AVG, offsetof(gp_sample, temp_c), 1, 0},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", GP_F_PCIE_TX, K_RATE, A_AVG, offsetof(gp_sample, pcie_tx_bytes),
     1, 0},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", GP_F_PCIE_RX, K_RATE, A_AVG, offsetof(gp_sample, pcie_rx_bytes),
     1, 0},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", GP_F_NVLINK_TX, K_RATE, A_AVG,
     offsetof(gp_sample, nvlink_tx_bytes), 1, 0},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", GP_F_NVLINK_RX, K_RATE, A_AVG,
     offsetof(gp_sample, nvlink_rx_bytes), 1, 0},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", GP_F_THROTTLE, K_MASK, A_LAST,
     offsetof(gp_sample, throttle_reasons), 2, 0},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", GP_F_THROTTLE, K_MASK, A_LAST,
     offsetof(gp_sample, throttle_reasons), 1, 0},
    {"DCGM_FI_DEV_XID_ERRORS", GP_F_XID, K_XID, A_MAX, offsetof(gp_sample, xid), 1, 0},
    /* nvidia_gpu_exporter (utkuozdemir): ratios, bytes, watts, hertz */
    {"nvidia_smi_utilization_gpu_ratio", GP_F_GPU_UTIL, K_RATIO, A_AVG,
     offsetof(gp_sample, gpu_util), 1, 1},
    {"nvidia_smi_utilization_memory_ratio", GP_F_MEM_UTIL, K_RATIO, A_AVG,
     offsetof(gp_sample, mem_util), 1, 1},
    {"nvidia_smi_memory_used_bytes", GP_F_MEM_USED, K_BYTES, A_AVG,
     offsetof(gp_sample, mem_used_bytes), 1, 1},
    {"nvidia_smi_memory_total_bytes", GP_F_MEM_TOTAL, K_BYTES, A_LAST,
     offsetof(gp_sample, mem_total_bytes), 1, 1},
    {"nvidia_smi_power_draw_watts", GP_F_POWER, K_DOUBLE, A_AVG, offsetof(gp_sample, power_w), 1,
     1},
    {"nvidia_smi_temperature_gpu", GP_F_TEMP, K_DOUBLE, A_AVG, offsetof(gp_sample, temp_c), 1, 1},
    {"nvidia_smi_clocks_current_sm_clock_hz", GP_F_SM_CLOCK, K_HZ, A_AVG,
     offsetof(gp_sample, sm_clock_mhz), 1, 1},
    {"nvidia_smi_clocks_current_memory_clock_hz", GP_F_MEM_CLOCK, K_HZ, A_AVG,
     offsetof(gp_sample, mem_clock_mhz), 1, 1},
};
#define NFAMS (sizeof fams / sizeof fams[0])

/* Serving: running gauge, finished-request counter, generated and prompt token counters. */
static const struct {
    gp_scrape_flavor flavor;
    const char *running, *requests, *gen, *prompt;
} serving[] = {
    {GP_SCRAPE_VLLM, "vllm:num_requests_running", "vllm:request_success_total",
     "vllm:generation_tokens_total", "vllm:prompt_tokens_total"},
    {GP_SCRAPE_SGLANG, "sglang:num_running_reqs", "sglang:num_requests_total",
     "sglang:generation_tokens_total", "sglang:prompt_tokens_total"},
    {GP_SCRAPE_TGI, "tgi_batch_current_size", "tgi_request_success",
     "tgi_request_generated_tokens_sum", "tgi_request_input_length_sum"},
};
#define NSERVING (sizeof serving / sizeof serving[0])

typedef struct {
    gp_device dev;
    unsigned char *row; /* this chunk's cells (see ctx_t.cell_bytes); NULL when not seen */
    int run_job[MAX_RUNS];
    int64_t run_first[MAX_RUNS], run_last[MAX_RUNS];
    int nrun;
    int64_t closed_last; /* the latest last step of this GPU's closed runs (0: none) */
} dev_t_;

typedef struct {
    char id[GP_JOB_ID_MAX];
    char name[GP_NAME_MAX], user[GP_NAME_MAX];
    gp_origin origin;
    int64_t created_ns, started_ns, ready_ns, first_alloc_ns, last_alloc_ns;
    double gpus_requested; /* < 0 unknown */
    int stored;
    /* serving */
    int flavor;
    double prev[3]; /* requests, gen, prompt counters at prev_ts */
    int64_t prev_ts;
    double *srv; /* this chunk: 4 x nsteps (running, requests, gen, prompt), NaN missing */
    int shared;  /* a run of it overlapped another job's on one GPU (raw_fate keeps its rows) */
} pod_t;

typedef struct {
    gp_prom_client *c;
    const gp_prom_map_opts *o;
    gp_store *s;
    gp_prom_map_result *r;
    char *err;
    size_t errlen;
    dev_t_ *dev;
    size_t ndev, capdev;
    size_t *dhash, dhcap; /* index + 1; 0 empty */
    pod_t *pod;
    size_t npod, cappod;
    size_t *phash, phcap;
    int64_t c0, nsteps; /* current chunk: points at c0 + k * step, k < nsteps */
    const family *fam;  /* family being read */
    int primary;        /* this family carries owners */
    int serving_slot, serving_flavor;
    unsigned char prio[32];
    /* The grid holds, per GPU and step, only the fields of the families present: a cell is
     * the valid bits (8 bytes with padding) and one 8-byte slot per present field (a
     * double, or a uint64/int64 as gp_sample keeps it), 80 bytes for dcgm-exporter's
     * default 9 families instead of a 288-byte gp_sample: 3.6 times the steps per chunk
     * in the same memory, so fewer, longer queries (docs/benchmarks.md). */
    signed char slot_of[32]; /* field bit -> slot, -1 when no present family has it */
    size_t field_off[32];    /* field bit -> offset in gp_sample */
    size_t cell_bytes;
    int owner_labels; /* some GPU series carry owner labels: the others are free GPUs */
    int raw; /* GPU families read as raw samples, aggregated per step here (gp_prom_map_run) */
    /* Allocations closed while a chunk is read wait here for the store (the writer thread
     * may be storing the previous chunk's samples then): flush_allocs writes them. */
    gp_alloc *pend;
    size_t npend, cappend;
} ctx_t;

/* One GPU's cells of a chunk, handed to the writer (write_rows) with the device's row and
 * its owner runs as they stood after the chunk was read (raw_fate decides on them). */
typedef struct {
    size_t idx; /* ctx_t.dev index: the slot of its rate accumulators (writer_t.acc) */
    gp_device dev;
    unsigned char *row; /* NULL: no cells this chunk (only held rows to decide) */
    int nrun;
    int run_job[MAX_RUNS];
    unsigned char run_shared[MAX_RUNS]; /* pod_t.shared of run_job */
    int64_t run_first[MAX_RUNS], run_last[MAX_RUNS], closed_last;
} wdev_t;

/* A GPU's raw rows whose fate waits for the next chunk (raw_fate: FATE_HOLD), packed
 * (pack_row): about PRUNE_TAIL_NS of steps at most. */
typedef struct {
    unsigned char *b;
    size_t n, cap;
} hold_t;

/* The sample rows of one chunk and what storing them needs, owned by the writer thread
 * between pthread_create and pthread_join (gp_prom_map_run): the main thread meanwhile
 * reads the next chunk from the server and touches neither the store nor this. */
typedef struct {
    const ctx_t *x; /* read only: o, s, slot_of, field_off, cell_bytes (fixed during the run) */
    wdev_t *d;
    size_t nd, capd;
    double (*acc)[4]; /* per device: PCIe/NVLink rates integrated into byte counters */
    size_t capacc;
    int prune;       /* gp_prom_map_opts.prune_raw */
    int last;        /* the range's last chunk: nothing is held past it */
    int64_t seen_ns; /* the last step read so far (this chunk's last) */
    hold_t *hold;    /* per device (ctx_t.dev index) */
    size_t caphold;
    unsigned char *pruned; /* per pod (ctx_t.pod index): some raw row of its run dropped */
    size_t cappruned;
    size_t dropped; /* raw rows not stored (rolled up only) */
    int64_t c0, nsteps;
    size_t samples; /* rows stored by this chunk */
    double cpu_s;   /* the writer's CPU time for it */
    int rc;
    char err[512];
    pthread_t th;
    int running;
} writer_t;

static void note(gp_prom_map_result *r, const char *fmt, const char *a) {
    if (r->n_notes >= GP_PROM_MAX_NOTES) return;
    snprintf(r->notes[r->n_notes++], sizeof r->notes[0], fmt, a);
}

static uint64_t fnv(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void scopy(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = 0;
}

static const char *lab(json_t *m, const char *name) {
    return json_string_value(json_object_get(m, name));
}

/* Open-addressing index over names; grows at half full. Returns slot index or -1 OOM. */
static long find_or_add(size_t **hash, size_t *hcap, const char *key, size_t n_items,
                        const char *(*key_of)(void *, size_t), void *base, int *added) {
    if (*hcap < 2 * (n_items + 1)) {
        size_t ncap = *hcap ? *hcap * 2 : 256;
        while (ncap < 2 * (n_items + 1))
            ncap *= 2;
        size_t *nh = calloc(ncap, sizeof *nh);
        if (!nh) return -1;
        for (size_t i = 0; i < n_items; i++) {
            size_t h = fnv(key_of(base, i)) & (ncap - 1);
            while (nh[h])
                h = (h + 1) & (ncap - 1);
            nh[h] = i + 1;
        }
        free(*hash);
        *hash = nh;
        *hcap = ncap;
    }
    size_t h = fnv(key) & (*hcap - 1);
    while ((*hash)[h]) {
        size_t i = (*hash)[h] - 1;
        if (!strcmp(key_of(base, i), key)) {
            *added = 0;
            return (long)i;
        }
        h = (h + 1) & (*hcap - 1);
    }
    (*hash)[h] = n_items + 1;
    *added = 1;
    return (long)n_items;
}

static const char *dev_key(void *b, size_t i) {
    return ((dev_t_ *)b)[i].dev.uuid;
}
static const char *pod_key(void *b, size_t i) {
    return ((pod_t *)b)[i].id;
}

static dev_t_ *device(ctx_t *x, const char *uuid) {
    if (x->ndev == x->capdev) {
        size_t nc = x->capdev ? x->capdev * 2 : 64;
        dev_t_ *nd = realloc(x->dev, nc * sizeof *nd);
        if (!nd) return NULL;
        x->dev = nd;
        x->capdev = nc;
    }
    int added;
    long i = find_or_add(&x->dhash, &x->dhcap, uuid, x->ndev, dev_key, x->dev, &added);
    if (i < 0) return NULL;
    if (added) {
        dev_t_ *d = &x->dev[x->ndev++];
        memset(d, 0, sizeof *d);
        scopy(d->dev.uuid, sizeof d->dev.uuid, uuid);
        d->dev.index = -1;
        d->dev.mig_mode = -1;
    }
    return &x->dev[i];
}

static pod_t *pod(ctx_t *x, const char *id, gp_origin origin, int *idx) {
    if (x->npod == x->cappod) {
        size_t nc = x->cappod ? x->cappod * 2 : 64;
        pod_t *np = realloc(x->pod, nc * sizeof *np);
        if (!np) return NULL;
        x->pod = np;
        x->cappod = nc;
    }
    int added;
    long i = find_or_add(&x->phash, &x->phcap, id, x->npod, pod_key, x->pod, &added);
    if (i < 0) return NULL;
    if (added) {
        pod_t *p = &x->pod[x->npod++];
        memset(p, 0, sizeof *p);
        scopy(p->id, sizeof p->id, id);
        p->origin = origin;
        p->created_ns = p->started_ns = p->ready_ns = p->first_alloc_ns = p->last_alloc_ns = -1;
        p->gpus_requested = -1;
        p->prev_ts = -1;
        p->flavor = -1;
        const char *slash = strchr(id, '/');
        if (slash && origin == GP_ORIGIN_K8S) {
            size_t n = (size_t)(slash - id);
            if (n >= sizeof p->user) n = sizeof p->user - 1;
            memcpy(p->user, id, n); /* the namespace is the owner a cluster bills */
            p->user[n] = 0;
            scopy(p->name, sizeof p->name, slash + 1);
        }
    }
    if (idx) *idx = (int)i;
    return &x->pod[i];
}

/* "namespace/pod" from namespace+pod labels, the hpc_job label, or NULL. */
static const char *owner_of(json_t *m, char *buf, size_t cap, gp_origin *origin) {
    const char *ns = lab(m, "namespace"), *p = lab(m, "pod"), *hj = lab(m, "hpc_job");
    if (!ns) ns = lab(m, "exported_namespace");
    if (!p) p = lab(m, "exported_pod");
    if (hj && *hj) {
        snprintf(buf, cap, "%s", hj);
        *origin = GP_ORIGIN_SLURM;
        return buf;
    }
    if (p && *p) {
        snprintf(buf, cap, "%s/%s", ns && *ns ? ns : "default", p);
        *origin = GP_ORIGIN_K8S;
        return buf;
    }
    return NULL;
}

static int close_run(ctx_t *x, dev_t_ *d, int i) {
    gp_alloc a;
    memset(&a, 0, sizeof a);
    pod_t *p = &x->pod[d->run_job[i]];
    scopy(a.job_id, sizeof a.job_id, p->id);
    scopy(a.uuid, sizeof a.uuid, d->dev.uuid);
    a.from_ns = d->run_first[i] - x->o->step_s * NS;
    a.to_ns = d->run_last[i];
    if (d->run_last[i] > d->closed_last) d->closed_last = d->run_last[i];
    if (p->first_alloc_ns < 0 || a.from_ns < p->first_alloc_ns) p->first_alloc_ns = a.from_ns;
    if (a.to_ns > p->last_alloc_ns) p->last_alloc_ns = a.to_ns;
    d->run_job[i] = d->run_job[--d->nrun];
    d->run_first[i] = d->run_first[d->nrun];
    d->run_last[i] = d->run_last[d->nrun];
    x->r->allocations++;
    if (x->npend == x->cappend) {
        size_t nc = x->cappend ? x->cappend * 2 : 64;
        gp_alloc *p = realloc(x->pend, nc * sizeof *p);
        if (!p) {
            snprintf(x->err, x->errlen, "out of memory");
            return -1;
        }
        x->pend = p;
        x->cappend = nc;
    }
    x->pend[x->npend++] = a;
    return 0;
}

/* Stores the allocations closed since the last call, in the order they closed. */
static int flush_allocs(ctx_t *x) {
    for (size_t i = 0; i < x->npend; i++)
        if (gp_store_put_alloc(x->s, &x->pend[i]) != 0) {
            snprintf(x->err, x->errlen, "cannot store an allocation: %s", gp_store_errmsg(x->s));
            return -1;
        }
    x->npend = 0;
    return 0;
}

/* Marks the jobs of run i and of any other run of the GPU whose allocation overlaps it as
 * sharing a GPU (as job_summary.c holders() counts them). */
static void note_shared(ctx_t *x, const dev_t_ *d, int i) {
    int64_t step = x->o->step_s * NS;
    for (int k = 0; k < d->nrun; k++)
        if (k != i && d->run_job[k] != d->run_job[i] && d->run_first[k] - step < d->run_last[i] &&
            d->run_last[k] > d->run_first[i] - step)
            x->pod[d->run_job[i]].shared = x->pod[d->run_job[k]].shared = 1;
}

/* One owner seen on a GPU at ts: extend its run or start a new one. */
static int owner_point(ctx_t *x, dev_t_ *d, int job, int64_t ts) {
    int64_t step = x->o->step_s * NS;
    for (int i = 0; i < d->nrun; i++) {
        if (d->run_job[i] != job) continue;
        if (ts <= d->run_last[i] + step) {
            if (ts > d->run_last[i]) d->run_last[i] = ts;
            if (d->nrun > 1) note_shared(x, d, i);
            return 0;
        }
        if (close_run(x, d, i) != 0) return -1;
        break;
    }
    if (d->nrun == MAX_RUNS) {
        /* more holders than a GPU plausibly has at once: close the oldest run */
        int oldest = 0;
        for (int i = 1; i < d->nrun; i++)
            if (d->run_last[i] < d->run_last[oldest]) oldest = i;
        if (close_run(x, d, oldest) != 0) return -1;
    }
    d->run_job[d->nrun] = job;
    d->run_first[d->nrun] = d->run_last[d->nrun] = ts;
    d->nrun++;
    if (d->nrun > 1) note_shared(x, d, d->nrun - 1);
    if (d->closed_last > ts - step) x->pod[job].shared = 1; /* a closed run overlaps it */
    return 0;
}

static int conflict(ctx_t *x, const char *uuid, const char *label, const char *a, const char *b) {
    snprintf(x->err, x->errlen,
             "conflicting labels: GPU %s is reported with %s=\"%s\" and %s=\"%s\" (two exporters "
             "claim one GPU: fix the relabelling or narrow --selector)",
             uuid, label, a, label, b);
    return -3;
}

static void put_d(unsigned char *slot, double v) {
    memcpy(slot, &v, sizeof v);
}
static void put_u(unsigned char *slot, uint64_t v) {
    memcpy(slot, &v, sizeof v); /* int64 xid: same bits */
}

/* NaN, infinities and DCGM's blank sentinels (2^47 and up; 2^31 - 16 .. 2^31 - 1 for
 * 32-bit fields): unknown. */
static int blank(const family *f, double v) {
    if (isnan(v) || isinf(v) || v >= 140737488355328.0 * (f->kind == K_U64 ? 65536.0 : 1.0))
        return 1;
    return f->kind != K_U64 && f->kind != K_XID && v >= 2147483632.0 && v <= 2147483647.0;
}

/* The step whose window (end - step, end] holds a time d_ms after the first step's end. */
static int64_t step_of(int64_t d_ms, int64_t step_ms) {
    return d_ms > 0 ? (d_ms + step_ms - 1) / step_ms : -(-d_ms / step_ms);
}

static int on_gpu_series(void *ctx, json_t *m, const gp_prom_point *pts, size_t npts) {
    ctx_t *x = ctx;
    const char *uuid = lab(m, "UUID");
    if (!uuid) uuid = lab(m, "uuid");
    if (!uuid || !*uuid) return 0; /* cannot be keyed to a device: skipped */
    char key[GP_UUID_MAX];
    const char *gi = lab(m, "GPU_I_ID");
    if (gi && *gi)
        snprintf(key, sizeof key, "%s/gi%s", uuid, gi);
    else
        snprintf(key, sizeof key, "%s", uuid);
    dev_t_ *d = device(x, key);
    if (!d) {
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    const char *host = lab(m, "Hostname");
    if (!host) host = lab(m, "hostname");
    const char *model = lab(m, "modelName");
    if (!model) model = lab(m, "name");
    if (host && *host) {
        if (d->dev.host[0] && strcmp(d->dev.host, host) != 0)
            return conflict(x, key, "Hostname", d->dev.host, host);
        scopy(d->dev.host, sizeof d->dev.host, host);
    }
    if (model && *model) {
        if (d->dev.name[0] && strcmp(d->dev.name, model) != 0)
            return conflict(x, key, "modelName", d->dev.name, model);
        scopy(d->dev.name, sizeof d->dev.name, model);
    }
    const char *gpu = lab(m, "gpu");
    if (gpu && !(gi && *gi)) d->dev.index = atoi(gpu);
    if (gi && *gi) {
        scopy(d->dev.parent_uuid, sizeof d->dev.parent_uuid, uuid);
        d->dev.mig_mode = 1;
    }
    if (!d->row) {
        d->row = calloc((size_t)x->nsteps, x->cell_bytes);
        if (!d->row) {
            snprintf(x->err, x->errlen, "out of memory");
            return -1;
        }
    }
    int job = -1;
    if (x->primary) {
        char ob[GP_JOB_ID_MAX];
        gp_origin origin = GP_ORIGIN_UNKNOWN;
        const char *owner = owner_of(m, ob, sizeof ob, &origin);
        if (!owner && !x->owner_labels) {
            snprintf(ob, sizeof ob, "unattributed/%.48s", d->dev.host[0] ? d->dev.host : "unknown");
            owner = ob;
        }
        if (owner && !pod(x, owner, origin, &job)) {
            snprintf(x->err, x->errlen, "out of memory");
            return -1;
        }
    }
    const family *f = x->fam;
    int bit = __builtin_ctz(f->field);
    int64_t step_ns = x->o->step_s * NS, step_ms = x->o->step_s * 1000, c0_ms = x->c0 * 1000;
    for (size_t i = 0; i < npts;) {
        double v;
        int64_t ts, k;
        if (!x->raw) { /* one point per step, already the step's mean, last or max */
            v = pts[i].v;
            ts = (int64_t)llround(pts[i].t_s * 1e3) * 1000000LL;
            k = (ts - x->c0 * NS) / step_ns;
            i++;
        } else { /* raw samples: step k holds (c0 + (k - 1) step, c0 + k step] */
            k = step_of(llround(pts[i].t_s * 1e3) - c0_ms, step_ms);
            double acc = 0;
            size_t n = 0;
            for (; i < npts && step_of(llround(pts[i].t_s * 1e3) - c0_ms, step_ms) == k; i++) {
                double pv = pts[i].v;
                if (blank(f, pv)) continue;
                acc = f->agg == A_AVG    ? acc + pv
                      : f->agg == A_LAST ? pv
                      : n == 0           ? pv
                                         : fmax(acc, pv);
                n++;
            }
            v = n == 0 ? NAN : f->agg == A_AVG ? acc / (double)n : acc;
            ts = (x->c0 + k * x->o->step_s) * NS;
        }
        if (k < 0 || k >= x->nsteps) continue;
        if (job >= 0 && owner_point(x, d, job, ts) != 0) return -1;
        if (blank(f, v)) continue; /* DCGM blank sentinels: unknown */
        unsigned char *cell = d->row + (size_t)k * x->cell_bytes;
        uint32_t valid;
        memcpy(&valid, cell, sizeof valid);
        if ((valid & f->field) && x->prio[bit] > f->prio) continue;
        unsigned char *slot = cell + 8 + 8 * (size_t)x->slot_of[bit];
        switch (f->kind) {
        case K_PCT:
        case K_RATIO: {
            double r = f->kind == K_PCT ? v / 100 : v;
            if (r < 0 || r > 1.0000001) continue;
            put_d(slot, r > 1 ? 1 : r);
            break;
        }
        case K_DOUBLE:
            put_d(slot, v);
            break;
        case K_HZ:
            put_d(slot, v / 1e6);
            break;
        case K_MIB:
        case K_BYTES:
            if (v < 0) continue;
            put_u(slot, (uint64_t)llround(f->kind == K_MIB ? v * MIB : v));
            break;
        case K_U64:
        case K_MASK:
            if (v < 0) continue;
            put_u(slot, (uint64_t)llround(v));
            break;
        case K_XID:
            if (v <= 0) continue; /* 0: no error in the step */
            put_u(slot, (uint64_t)llround(v));
            break;
        case K_RATE:
            if (v < 0) continue;
            /* a rate (bytes/s) over the step: integrate into the counter gp_sample keeps */
            put_d(slot, v); /* converted when the chunk is written */
            break;
        }
        valid |= f->field;
        memcpy(cell, &valid, sizeof valid);
    }
    x->prio[bit] = (unsigned char)(x->prio[bit] > f->prio ? x->prio[bit] : f->prio);
    return 0;
}

static void sel(const ctx_t *x, const char *extra, char *out, size_t cap) {
    const char *s = x->o->selector ? x->o->selector : "";
    while (*s == ' ')
        s++;
    size_t n = strlen(s);
    const char *inner = s;
    if (n >= 2 && s[0] == '{' && s[n - 1] == '}') {
        inner = s + 1;
        n -= 2;
    }
    snprintf(out, cap, "{%s%s%.*s}", extra ? extra : "", extra && n ? "," : "", (int)n, inner);
}

static int query(ctx_t *x, const char *q, gp_prom_series_fn fn) {
    int64_t t0 = x->c0, t1 = x->c0 + (x->nsteps - 1) * x->o->step_s;
    int rc = gp_prom_query_range(x->c, q, t0, t1, x->o->step_s, fn, x, x->err, x->errlen);
    return rc;
}

/* kube-state-metrics: per pod, one value per step */
enum { KS_CREATED, KS_STARTED, KS_READY, KS_REQUESTS, KS_LIMITS, KS_INFO, KS__N };
typedef struct {
    ctx_t *x;
    int what;
} ks_ctx;

static int on_ks_series(void *ctx, json_t *m, const gp_prom_point *pts, size_t npts) {
    ks_ctx *k = ctx;
    ctx_t *x = k->x;
    char ob[GP_JOB_ID_MAX];
    gp_origin origin = GP_ORIGIN_K8S;
    const char *owner = owner_of(m, ob, sizeof ob, &origin);
    if (!owner) return 0;
    pod_t *p = pod(x, owner, GP_ORIGIN_K8S, NULL);
    if (!p) {
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    if (k->what == KS_INFO) {
        const char *cb = lab(m, "created_by_name");
        if (cb && *cb) scopy(p->name, sizeof p->name, cb);
        return 0;
    }
    for (size_t i = 0; i < npts; i++) {
        double t = pts[i].t_s, v = pts[i].v;
        if (isnan(v)) continue;
        int64_t ts = (int64_t)llround(t * 1e3) * 1000000LL;
        switch (k->what) {
        case KS_CREATED:
            if (v > 0 && p->created_ns < 0) p->created_ns = (int64_t)llround(v * 1e3) * 1000000LL;
            break;
        case KS_STARTED:
            if (v > 0 && p->started_ns < 0) p->started_ns = (int64_t)llround(v * 1e3) * 1000000LL;
            break;
        case KS_READY:
            if (v >= 1 && (p->ready_ns < 0 || ts < p->ready_ns)) p->ready_ns = ts;
            break;
        case KS_REQUESTS:
            if (v > p->gpus_requested) p->gpus_requested = v;
            break;
        case KS_LIMITS:
            if (p->gpus_requested < 0 && v > 0) p->gpus_requested = v;
            break;
        }
    }
    return 0;
}

static int on_srv_series(void *ctx, json_t *m, const gp_prom_point *pts, size_t npts) {
    ctx_t *x = ctx;
    char ob[GP_JOB_ID_MAX];
    gp_origin origin = GP_ORIGIN_K8S;
    const char *owner = owner_of(m, ob, sizeof ob, &origin);
    if (!owner) {
        const char *inst = lab(m, "instance");
        snprintf(ob, sizeof ob, "%s@%s", gp_scrape_flavor_name(x->serving_flavor),
                 inst && *inst ? inst : "unknown");
        owner = ob;
        origin = GP_ORIGIN_CONTAINER;
    }
    pod_t *p = pod(x, owner, origin, NULL);
    if (!p) {
        snprintf(x->err, x->errlen, "out of memory");
        return -1;
    }
    p->flavor = x->serving_flavor;
    if (!p->srv) {
        p->srv = malloc(4 * (size_t)x->nsteps * sizeof *p->srv);
        if (!p->srv) {
            snprintf(x->err, x->errlen, "out of memory");
            return -1;
        }
        for (int64_t i = 0; i < 4 * x->nsteps; i++)
            p->srv[i] = NAN;
    }
    for (size_t i = 0; i < npts; i++) {
        double t = pts[i].t_s;
        int64_t ts = (int64_t)llround(t * 1e3) * 1000000LL;
        int64_t k = (ts - x->c0 * NS) / (x->o->step_s * NS);
        if (k < 0 || k >= x->nsteps) continue;
        p->srv[x->serving_slot * x->nsteps + k] = pts[i].v;
    }
    return 0;
}

static int store_job(ctx_t *x, pod_t *p) {
    gp_job j;
    memset(&j, 0, sizeof j);
    scopy(j.id, sizeof j.id, p->id);
    scopy(j.name, sizeof j.name, p->name);
    scopy(j.user, sizeof j.user, p->user);
    j.origin = p->origin;
    j.submitted_ns = p->created_ns;
    /* the first sample of a pod covers the step before it: a pod created within that step
     * did not wait */
    if (p->created_ns > p->first_alloc_ns && p->first_alloc_ns >= 0 &&
        p->created_ns - p->first_alloc_ns <= x->o->step_s * NS)
        j.submitted_ns = p->first_alloc_ns;
    j.allocated_ns = p->first_alloc_ns;
    j.ready_ns = -1; /* the engine finds readiness from progress or kernel activity */
    j.ended_ns = -1;
    if (p->last_alloc_ns > 0 && p->last_alloc_ns < x->o->t1_s * NS - x->o->step_s * NS)
        j.ended_ns = p->last_alloc_ns;
    j.exit_code = -1;
    if (p->flavor >= 0) scopy(j.unit_name, sizeof j.unit_name, "tokens");
    if (gp_store_put_job(x->s, &j) != 0) {
        snprintf(x->err, x->errlen, "cannot store job %s: %s", p->id, gp_store_errmsg(x->s));
        return -1;
    }
    p->stored = 1;
    return 0;
}

/* Serving rows of this chunk -> aggregate request events and scrape windows. */
static int write_serving(ctx_t *x, pod_t *p) {
    int64_t step_ns = x->o->step_s * NS;
    if (!p->stored && store_job(x, p) != 0) return -1;
    for (int64_t k = 0; k < x->nsteps; k++) {
        double run = p->srv[k], cnt[3] = {p->srv[x->nsteps + k], p->srv[2 * x->nsteps + k],
                                          p->srv[3 * x->nsteps + k]};
        int64_t ts = (x->c0 + k * x->o->step_s) * NS;
        if (isnan(cnt[0])) {
            if (!isnan(run)) p->prev_ts = -1;
            continue;
        }
        double d[3];
        int have = p->prev_ts >= 0 && ts - p->prev_ts == step_ns;
        for (int i = 0; i < 3; i++) {
            if (isnan(cnt[i])) {
                d[i] = -1;
                continue;
            }
            d[i] = !have || isnan(p->prev[i]) ? -1
                   : cnt[i] >= p->prev[i]     ? cnt[i] - p->prev[i]
                                              : cnt[i]; /* reset */
        }
        for (int i = 0; i < 3; i++)
            p->prev[i] = cnt[i];
        p->prev_ts = ts;
        if (!have) continue;
        double running = isnan(run) ? 0 : run;
        if (running <= 0 && d[0] <= 0) continue;
        gp_event e;
        gp_event_init(&e, GP_EV_REQUEST);
        scopy(e.job_id, sizeof e.job_id, p->id);
        e.ts_ns = ts;
        e.arrival_ns = ts - step_ns;
        e.first_token_ns = -1;
        e.prompt_tokens = d[2] >= 0 ? llround(d[2]) : -1;
        e.output_tokens = d[1] >= 0 ? llround(d[1]) : -1;
        e.ok = 1;
        if (gp_store_put_event(x->s, &e) < 0) {
            snprintf(x->err, x->errlen, "cannot store an event: %s", gp_store_errmsg(x->s));
            return -1;
        }
        gp_scrape_window w;
        memset(&w, 0, sizeof w);
        scopy(w.job_id, sizeof w.job_id, p->id);
        w.flavor = (gp_scrape_flavor)p->flavor;
        w.t0_ns = ts - step_ns;
        w.t1_ns = ts;
        double sec = (double)x->o->step_s;
        w.requests_per_s = w.ok_per_s = d[0] / sec;
        w.errors_per_s = -1;
        w.error_ratio = -1;
        w.prompt_tokens_per_s = d[2] >= 0 ? d[2] / sec : -1;
        w.generation_tokens_per_s = d[1] >= 0 ? d[1] / sec : -1;
        gp_latency unk = {-1, -1, -1, -1, -1, -1};
        w.ttft = w.itl = w.e2e = unk;
        w.running = isnan(run) ? -1 : run;
        w.waiting = -1;
        w.kv_cache_usage = -1;
        if (gp_scrape_store_window(x->s, &w) != 0) {
            snprintf(x->err, x->errlen, "cannot store a serving window: %s", gp_store_errmsg(x->s));
            return -1;
        }
        x->r->request_windows++;
    }
    return 0;
}

/* What becomes of a GPU's raw row at t in a pruned store (gp_prom_map_opts.prune_raw):
 * dropped (only rolled up) when the report can never read it raw, i.e. t lies inside an
 * owner run of one job J, at least PRUNE_HEAD_NS after the run's first step and
 * PRUNE_TAIL_NS before its last as read so far (the run only grows), and no other run of
 * the GPU overlaps J's allocation [first - step, last]. Such an allocation is over 6 h, so
 * the report reads J from the 1-minute rollups (job_summary.c job_is_long, fold_long;
 * diagnose.c load_device_samples) unless another job shares one of J's GPUs, which
 * gp_prom_map_run checks at the end (pruned_ok). Another job's raw reads of this GPU
 * (findings_fmt.c's last hour, read to the GPU's end) weigh rows by that job's own
 * allocations, which the row is outside. Held (decided with the next chunk) while the run
 * may still end within PRUNE_TAIL_NS of t; kept otherwise. */
enum { FATE_KEEP, FATE_DROP, FATE_HOLD };
static int raw_fate(const writer_t *w, const wdev_t *d, int64_t t, int *job) {
    int64_t step = w->x->o->step_s * NS;
    int in = -1;
    for (int i = 0; i < d->nrun; i++)
        if (d->run_first[i] <= t && t <= d->run_last[i]) {
            if (in >= 0) return FATE_KEEP; /* two holders at t */
            in = i;
        }
    if (in < 0 || d->run_shared[in] || t - d->run_first[in] < PRUNE_HEAD_NS) return FATE_KEEP;
    int64_t from = d->run_first[in] - step, last = d->run_last[in];
    if (d->closed_last > from) return FATE_KEEP;
    for (int i = 0; i < d->nrun; i++)
        if (i != in && d->run_first[i] - step < last && d->run_last[i] > from) return FATE_KEEP;
    *job = d->run_job[in];
    if (last - t >= PRUNE_TAIL_NS) return FATE_DROP;
    /* the step after the run's last was read without J: the run is over, this is its tail */
    return w->seen_ns >= last + step ? FATE_KEEP : FATE_HOLD;
}

/* A held row: ts, valid bits, the present families' slots (as the grid's cells), and the
 * memory total (filled from the device when no family gives it): cell_bytes + 16 bytes. */
static void pack_row(const ctx_t *x, const gp_sample *smp, unsigned char *p) {
    memcpy(p, &smp->ts_ns, 8);
    memcpy(p + 8, &smp->valid, sizeof smp->valid);
    for (uint32_t v = smp->valid; v; v &= v - 1) {
        int bit = __builtin_ctz(v);
        if (x->slot_of[bit] >= 0)
            memcpy(p + 16 + 8 * (size_t)x->slot_of[bit], (const char *)smp + x->field_off[bit], 8);
    }
    memcpy(p + 8 + x->cell_bytes, &smp->mem_total_bytes, 8);
}

static void unpack_row(const ctx_t *x, const unsigned char *p, gp_sample *smp) {
    memcpy(&smp->ts_ns, p, 8);
    memcpy(&smp->valid, p + 8, sizeof smp->valid);
    for (uint32_t v = smp->valid; v; v &= v - 1) {
        int bit = __builtin_ctz(v);
        if (x->slot_of[bit] >= 0)
            memcpy((char *)smp + x->field_off[bit], p + 16 + 8 * (size_t)x->slot_of[bit], 8);
    }
    if (smp->valid & GP_F_MEM_TOTAL) memcpy(&smp->mem_total_bytes, p + 8 + x->cell_bytes, 8);
}

static int mark_pruned(writer_t *w, int job) {
    if ((size_t)job >= w->cappruned) {
        size_t nc = (size_t)job + 64;
        unsigned char *p = realloc(w->pruned, nc);
        if (!p) return -1;
        memset(p + w->cappruned, 0, nc - w->cappruned);
        w->pruned = p;
        w->cappruned = nc;
    }
    w->pruned[job] = 1;
    w->dropped++;
    return 0;
}

/* A new row raw_fate does not keep: rolled up, then dropped or held. */
static int not_kept(writer_t *w, hold_t *h, const gp_sample *smp, int fate, int job) {
    const ctx_t *x = w->x;
    gp_rollup *ru = gp_store_rollup(x->s);
    if (ru && gp_rollup_add(ru, smp) != 0) return -1;
    if (fate == FATE_DROP) return mark_pruned(w, job);
    size_t pk = x->cell_bytes + 16;
    if (h->n == h->cap) { /* first: the most a run's tail holds at one row a step */
        size_t nc = h->cap ? h->cap * 2 : (size_t)(PRUNE_TAIL_NS / (x->o->step_s * NS)) + 8;
        unsigned char *p = realloc(h->b, nc * pk);
        if (!p) return -1;
        h->b = p;
        h->cap = nc;
    }
    pack_row(x, smp, h->b + h->n++ * pk);
    return 0;
}

/* The rows a GPU held from earlier chunks, decided again now: stored (raw row only: they
 * were rolled up when they came), dropped, or held on. */
static int decide_held(writer_t *w, const wdev_t *d, hold_t *h, gp_sample *smp) {
    const ctx_t *x = w->x;
    size_t pk = x->cell_bytes + 16, left = 0;
    for (size_t r = 0; r < h->n; r++) {
        unsigned char *p = h->b + r * pk;
        unpack_row(x, p, smp);
        int job = -1, fate = raw_fate(w, d, smp->ts_ns, &job);
        if (fate == FATE_HOLD && w->last) fate = FATE_KEEP;
        if (fate == FATE_HOLD) {
            memmove(h->b + left++ * pk, p, pk);
        } else if (fate == FATE_DROP) {
            if (mark_pruned(w, job) != 0) return -1;
        } else if (gp_store_put_sample_row(x->s, smp) != 0)
            return -1;
    }
    h->n = left;
    return 0;
}

/* The sample rows of one chunk (w->d, handed over by hand_over): each device once, then its
 * steps in order. Runs on the writer thread or inline; reads only ctx_t's fixed fields. */
static int write_rows(writer_t *w) {
    const ctx_t *x = w->x;
    int64_t step_ns = x->o->step_s * NS;
    static const uint32_t rate_f[4] = {GP_F_PCIE_TX, GP_F_PCIE_RX, GP_F_NVLINK_TX, GP_F_NVLINK_RX};
    static const size_t rate_off[4] = {
        offsetof(gp_sample, pcie_tx_bytes), offsetof(gp_sample, pcie_rx_bytes),
        offsetof(gp_sample, nvlink_tx_bytes), offsetof(gp_sample, nvlink_rx_bytes)};
    for (size_t i = 0; i < w->nd; i++) {
        wdev_t *d = &w->d[i];
        double *acc = w->acc[d->idx];
        hold_t *h = w->prune ? &w->hold[d->idx] : NULL;
        if (gp_store_put_device(x->s, &d->dev) != 0) {
            snprintf(w->err, sizeof w->err, "cannot store a device: %s", gp_store_errmsg(x->s));
            return -1;
        }
        gp_sample one; /* fields not valid in a step are never read (store, rollups) */
        memset(&one, 0, sizeof one);
        gp_sample *smp = &one;
        scopy(smp->uuid, sizeof smp->uuid, d->dev.uuid);
        if (h && h->n && decide_held(w, d, h, smp) != 0) {
            snprintf(w->err, sizeof w->err, "cannot store a sample: %s", gp_store_errmsg(x->s));
            return -1;
        }
        for (int64_t k = 0; d->row && k < w->nsteps; k++) {
            const unsigned char *cell = d->row + (size_t)k * x->cell_bytes;
            memcpy(&smp->valid, cell, sizeof smp->valid);
            if (!smp->valid) continue;
            for (uint32_t v = smp->valid; v; v &= v - 1) {
                int bit = __builtin_ctz(v);
                memcpy((char *)smp + x->field_off[bit], cell + 8 + 8 * (size_t)x->slot_of[bit], 8);
            }
            if ((smp->valid & GP_F_MEM_USED) && !(smp->valid & GP_F_MEM_TOTAL) &&
                d->dev.memory_total_bytes) { /* dcgm-exporter's defaults omit FB_TOTAL */
                smp->mem_total_bytes = d->dev.memory_total_bytes;
                smp->valid |= GP_F_MEM_TOTAL;
            }
            smp->ts_ns = w->c0 * NS + k * step_ns;
            for (int r = 0; r < 4; r++) {
                if (!(smp->valid & rate_f[r])) continue;
                double rate;
                memcpy(&rate, (char *)smp + rate_off[r], sizeof rate);
                acc[r] += rate * (double)x->o->step_s;
                uint64_t cnt = (uint64_t)llround(acc[r]);
                memcpy((char *)smp + rate_off[r], &cnt, sizeof cnt);
            }
            int job = -1, fate = h ? raw_fate(w, d, smp->ts_ns, &job) : FATE_KEEP;
            if (fate == FATE_HOLD && w->last) fate = FATE_KEEP;
            if (fate == FATE_KEEP ? gp_store_put_sample(x->s, smp) != 0
                                  : not_kept(w, h, smp, fate, job) != 0) {
                snprintf(w->err, sizeof w->err, "cannot store a sample: %s", gp_store_errmsg(x->s));
                return -1;
            }
            w->samples++;
        }
        free(d->row);
        d->row = NULL;
    }
    w->nd = 0;
    return 0;
}

static double thread_cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The writer's part of a chunk: its sample rows, then the commit of the chunk's
 * transaction (gp_prom_map_run began it and stored the allocations and serving rows). */
static void *writer_main(void *arg) {
    writer_t *w = arg;
    double c0 = thread_cpu_s();
    w->rc = write_rows(w);
    if (gp_store_commit(w->x->s) != 0 && w->rc == 0) {
        snprintf(w->err, sizeof w->err, "cannot write the store: %s", gp_store_errmsg(w->x->s));
        w->rc = -1;
    }
    for (size_t i = 0; i < w->nd; i++) /* rows left by a failure */
        free(w->d[i].row);
    w->nd = 0;
    w->cpu_s = thread_cpu_s() - c0;
    return NULL;
}

/* Moves this chunk's device rows from ctx_t to the writer (ctx_t's rows are NULL after, so
 * the next chunk's read allocates its own). 0, or -1 when out of memory. */
static int hand_over(ctx_t *x, writer_t *w, int last) {
    if (w->prune && w->caphold < x->ndev) {
        size_t nc = x->ndev + 64;
        hold_t *p = realloc(w->hold, nc * sizeof *p);
        if (!p) return -1;
        memset(p + w->caphold, 0, (nc - w->caphold) * sizeof *p);
        w->hold = p;
        w->caphold = nc;
    }
    if (w->capacc < x->ndev) {
        size_t nc = x->ndev + 64;
        double(*p)[4] = realloc(w->acc, nc * sizeof *p);
        if (!p) return -1;
        memset(p + w->capacc, 0, (nc - w->capacc) * sizeof *p);
        w->acc = p;
        w->capacc = nc;
    }
    if (w->capd < x->ndev) {
        wdev_t *p = realloc(w->d, x->ndev * sizeof *p);
        if (!p) return -1;
        w->d = p;
        w->capd = x->ndev;
    }
    w->nd = 0;
    for (size_t i = 0; i < x->ndev; i++) {
        dev_t_ *d = &x->dev[i];
        if (!d->row && !(w->prune && w->hold[i].n)) continue;
        if (d->dev.name[0] && !d->dev.spec) d->dev.spec = gp_spec_lookup(d->dev.name);
        if (!d->dev.memory_total_bytes && d->dev.spec)
            d->dev.memory_total_bytes = d->dev.spec->memory_bytes;
        wdev_t *wd = &w->d[w->nd++];
        *wd = (wdev_t){.idx = i, .dev = d->dev, .row = d->row, .nrun = d->nrun};
        memcpy(wd->run_job, d->run_job, sizeof d->run_job);
        memcpy(wd->run_first, d->run_first, sizeof d->run_first);
        memcpy(wd->run_last, d->run_last, sizeof d->run_last);
        wd->closed_last = d->closed_last;
        for (int k = 0; k < d->nrun; k++)
            wd->run_shared[k] = (unsigned char)x->pod[d->run_job[k]].shared;
        d->row = NULL;
    }
    w->last = last;
    w->seen_ns = (x->c0 + (x->nsteps - 1) * x->o->step_s) * NS;
    w->c0 = x->c0;
    w->nsteps = x->nsteps;
    w->samples = 0;
    w->rc = 0;
    w->err[0] = 0;
    return 0;
}

/* The serving rows of this chunk (main thread, while the writer is idle). */
static int write_serving_all(ctx_t *x) {
    for (size_t i = 0; i < x->npod; i++) {
        pod_t *p = &x->pod[i];
        if (!p->srv) continue;
        int rc = write_serving(x, p);
        free(p->srv);
        p->srv = NULL;
        if (rc != 0) return -1;
    }
    return 0;
}

static int has_name(json_t *names, const char *n) {
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        const char *s = json_string_value(v);
        if (s && !strcmp(s, n)) return 1;
    }
    return 0;
}

static void free_ctx(ctx_t *x) {
    for (size_t i = 0; i < x->ndev; i++)
        free(x->dev[i].row);
    for (size_t i = 0; i < x->npod; i++)
        free(x->pod[i].srv);
    free(x->dev);
    free(x->dhash);
    free(x->pod);
    free(x->phash);
    free(x->pend);
}

static int run_chunk(ctx_t *x, const int *present, const int *srv_present, int ks, size_t *qdone,
                     size_t qtotal) {
    char q[1024], s[512];
    long win_ms = (long)x->o->step_s * 1000 - 1; /* (t - step, t]: Prometheus 2.x windows
                                                  * include both ends */
    memset(x->prio, 0, sizeof x->prio);
    /* The GPU families' queries, each sent ahead while the one before is read
     * (gp_prom_prefetch): the server evaluates the next while this thread parses. XID:
     * a step without an error is no XID (on_gpu_series drops zeros), and errors are rare:
     * asking only for the steps with one keeps the server from evaluating and sending a
     * zero per GPU and step (1/9 of dcgm-exporter's default points). */
    char gq[NFAMS][1024];
    int graw[NFAMS], gf[NFAMS], ng = 0;
    int64_t t1 = x->c0 + (x->nsteps - 1) * x->o->step_s;
    for (size_t f = 0; f < NFAMS; f++) {
        if (!present[f]) continue;
        x->fam = &fams[f];
        sel(x, NULL, s, sizeof s);
        const char *agg = fams[f].agg == A_AVG    ? "avg_over_time"
                          : fams[f].agg == A_LAST ? "last_over_time"
                                                  : "max_over_time";
        graw[ng] = x->raw && fams[f].kind != K_XID;
        if (graw[ng])
            snprintf(gq[ng], sizeof gq[ng], "%s%s", fams[f].name, s);
        else
            snprintf(gq[ng], sizeof gq[ng], "%s(%s%s[%ldms])%s", agg, fams[f].name, s, win_ms,
                     fams[f].kind == K_XID ? " > 0" : "");
        gf[ng++] = (int)f;
    }
    int primary_done = 0;
    for (int i = 0; i < ng; i++) {
        size_t f = (size_t)gf[i];
        x->fam = &fams[f];
        x->primary = !primary_done && fams[f].field == GP_F_GPU_UTIL;
        if (x->primary) primary_done = 1;
        if (i + 1 < ng) gp_prom_prefetch(x->c, gq[i + 1], graw[i + 1], x->c0, t1, x->o->step_s);
        int rc = graw[i] ? gp_prom_query_raw(x->c, gq[i], x->c0, t1, x->o->step_s, on_gpu_series, x,
                                             x->err, x->errlen)
                         : query(x, gq[i], on_gpu_series);
        if (rc != 0) return rc;
        if (x->o->progress) x->o->progress(x->o->progress_ctx, (double)++*qdone / (double)qtotal);
    }
    if (ks) {
        static const char *const ksq[KS__N] = {
            "max by (namespace,pod) (kube_pod_created%s)",
            "max by (namespace,pod) (kube_pod_start_time%s)",
            "max by (namespace,pod) (last_over_time(kube_pod_container_status_ready%s[%ldms]))",
            ("sum by (namespace,pod) "
             "(last_over_time(kube_pod_container_resource_requests%s[%ldms]))"),
            "sum by (namespace,pod) (last_over_time(kube_pod_container_resource_limits%s[%ldms]))",
            "max by (namespace,pod,created_by_name) (kube_pod_info%s)",
        };
        for (int k = 0; k < KS__N; k++) {
            if (!(ks & (1 << k))) continue;
            sel(x,
                k == KS_REQUESTS || k == KS_LIMITS ? "resource=~\"nvidia_com_gpu|nvidia.com/gpu\""
                                                   : NULL,
                s, sizeof s);
            snprintf(q, sizeof q, ksq[k], s, win_ms);
            ks_ctx kc = {x, k};
            int64_t t0 = x->c0, t1 = x->c0 + (x->nsteps - 1) * x->o->step_s;
            int rc = gp_prom_query_range(x->c, q, t0, t1, x->o->step_s, on_ks_series, &kc, x->err,
                                         x->errlen);
            if (rc != 0) return rc;
            if (x->o->progress)
                x->o->progress(x->o->progress_ctx, (double)++*qdone / (double)qtotal);
        }
    }
    for (size_t f = 0; f < NSERVING; f++) {
        if (!srv_present[f]) continue;
        const char *names[4] = {serving[f].running, serving[f].requests, serving[f].gen,
                                serving[f].prompt};
        x->serving_flavor = serving[f].flavor;
        sel(x, NULL, s, sizeof s);
        for (int k = 0; k < 4; k++) {
            if (!(srv_present[f] & (1 << k))) continue;
            x->serving_slot = k;
            snprintf(q, sizeof q, "sum by (namespace,pod,instance) (%s(%s%s[%ldms]))",
                     k == 0 ? "avg_over_time" : "last_over_time", names[k], s, win_ms);
            int rc = query(x, q, on_srv_series);
            if (rc != 0) return rc;
            if (x->o->progress)
                x->o->progress(x->o->progress_ctx, (double)++*qdone / (double)qtotal);
        }
    }
    return 0;
}

/* Whether every job some of whose raw rows were dropped (raw_fate) holds its GPUs alone:
 * then the report reads it from the rollups (job_summary.c job_is_long: no other job on any
 * of its GPUs during its allocations, checked here on whole allocations, a superset of
 * the report's window). 0 when one does not: the caller reads the range again unpruned. */
static int pruned_ok(ctx_t *x, const unsigned char *pruned, size_t n) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(x->s),
                           "SELECT 1 FROM allocations a JOIN allocations b ON b.uuid = a.uuid"
                           " AND b.job_id != a.job_id"
                           " AND b.from_ns < COALESCE(a.to_ns, 9223372036854775807)"
                           " AND COALESCE(b.to_ns, 9223372036854775807) > a.from_ns"
                           " WHERE a.job_id = ?1 LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    int ok = 1;
    for (size_t j = 0; j < n && j < x->npod && ok; j++) {
        if (!pruned[j]) continue;
        sqlite3_bind_text(st, 1, x->pod[j].id, -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        if (step != SQLITE_DONE) ok = 0; /* a row: shared; an error: not known to be alone */
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return ok;
}

static int on_count(void *ctx, json_t *m, const gp_prom_point *pts, size_t n) {
    (void)m;
    double *c = ctx; /* [0] samples, [1] series */
    if (n > 0 && !isnan(pts[n - 1].v)) c[0] += pts[n - 1].v;
    c[1] += 1;
    return 0;
}

/* Raw samples or per-step functions? When the GPU series hold about one sample a step
 * (scrape interval = step, the usual 30 s), asking for the raw samples (promql_client.h
 * gp_prom_query_raw) gives the same points for a third to a quarter of the server's CPU,
 * and the step's mean, last value or max is taken here. With a scrape interval shorter
 * than the step, raw answers would be several times longer: the server's *_over_time
 * then. Decided once from the sample count of the first (up to) 20 steps of the utilization
 * family; a probe that fails (sample limit, anything) means no raw reading, and a real
 * problem shows in the next query. GOODPUT_ANALYZE_RAW=0 turns raw reading off. */
static int probe_raw(ctx_t *x, const char *match, int64_t chunk) {
    const char *e = getenv("GOODPUT_ANALYZE_RAW");
    if (e && !strcmp(e, "0")) return 0;
    int64_t n = chunk < 20 ? chunk : 20, step = x->o->step_s;
    char q[700], perr[256];
    snprintf(q, sizeof q, "count_over_time(%s[%" PRId64 "ms])", match, n * step * 1000 - 1);
    double cnt[2] = {0, 0};
    int64_t t = x->o->t0_s + (n - 1) * step;
    if (gp_prom_query_range(x->c, q, t, t, step, on_count, cnt, perr, sizeof perr) != 0) return 0;
    return cnt[1] > 0 && cnt[0] / cnt[1] <= 1.25 * (double)n;
}

int gp_prom_map_run(gp_prom_client *c, const gp_prom_map_opts *o, gp_store *s,
                    gp_prom_map_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    ctx_t x = {.c = c, .o = o, .s = s, .r = r, .err = err, .errlen = errlen};
    json_t *names = NULL;
    if (gp_prom_metric_names(c, o->t0_s, o->t1_s, &names, err, errlen) != 0) return -1;
    int present[NFAMS] = {0}, srv_present[NSERVING] = {0}, any_gpu = 0, smi = 0, prof = 0;
    for (size_t f = 0; f < NFAMS; f++) {
        present[f] = has_name(names, fams[f].name);
        if (present[f] && fams[f].field == GP_F_GPU_UTIL) {
            any_gpu = 1;
            if (fams[f].source == 1) smi = 1;
        }
        if (present[f] && !strncmp(fams[f].name, "DCGM_FI_PROF_", 13)) prof = 1;
    }
    /* one GPU source: dcgm-exporter when both are there (richer) */
    for (size_t f = 0; f < NFAMS; f++)
        if (present[f] && fams[f].source == 1 && any_gpu && !smi) present[f] = 0;
    int dcgm_util = present[0] || present[1];
    if (dcgm_util)
        for (size_t f = 0; f < NFAMS; f++)
            if (fams[f].source == 1) present[f] = 0;
    const char *ksn[KS__N] = {"kube_pod_created",
                              "kube_pod_start_time",
                              "kube_pod_container_status_ready",
                              "kube_pod_container_resource_requests",
                              "kube_pod_container_resource_limits",
                              "kube_pod_info"};
    int ks = 0;
    for (int k = 0; k < KS__N; k++)
        if (has_name(names, ksn[k])) ks |= 1 << k;
    for (size_t f = 0; f < NSERVING; f++) {
        const char *nm[4] = {serving[f].running, serving[f].requests, serving[f].gen,
                             serving[f].prompt};
        for (int k = 0; k < 4; k++)
            if (has_name(names, nm[k])) srv_present[f] |= 1 << k;
        if (!(srv_present[f] & 2)) srv_present[f] = 0; /* no request counter: no outcomes */
        if (srv_present[f]) r->serving = 1;
    }
    json_decref(names);
    if (!any_gpu) {
        snprintf(err, errlen,
                 "Prometheus at the given URL has no GPU metrics between --from and --to: neither "
                 "dcgm-exporter (DCGM_FI_DEV_GPU_UTIL) nor nvidia_gpu_exporter "
                 "(nvidia_smi_utilization_gpu_ratio)");
        return -3;
    }
    scopy(r->gpu_source, sizeof r->gpu_source, dcgm_util ? "dcgm-exporter" : "nvidia_gpu_exporter");
    r->kube_state = ks != 0;
    if (dcgm_util && !prof)
        note(r, "%sno DCGM_FI_PROF_* profiling metrics: SM, tensor and DRAM activity are unknown",
             "");
    if (dcgm_util && !present[13])
        note(r, "%sno DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION: energy is unknown", "");
    if (!ks)
        note(r, "%sno kube-state-metrics (kube_pod_*): queue wait and GPU requests are unknown",
             "");
    if (!r->serving)
        note(r,
             "%sno vLLM/SGLang/TGI serving metrics: no request outcomes, goodput of serving pods "
             "is an activity-only estimate",
             "");

    /* owner labels present on the GPU series? */
    const char *util_name = NULL;
    for (size_t f = 0; f < NFAMS && !util_name; f++)
        if (present[f] && fams[f].field == GP_F_GPU_UTIL) util_name = fams[f].name;
    char match[600], sb[512];
    sel(&x, NULL, sb, sizeof sb);
    snprintf(match, sizeof match, "%s%s", util_name, sb);
    json_t *labels = NULL;
    if (gp_prom_label_names(c, match, o->t0_s, o->t1_s, &labels, err, errlen) != 0) return -1;
    x.owner_labels =
        has_name(labels, "pod") || has_name(labels, "hpc_job") || has_name(labels, "exported_pod");
    if (!x.owner_labels)
        note(r,
             "%sthe GPU series carry no pod or hpc_job labels: GPUs are accounted per host as "
             "unattributed/<Hostname> (enable dcgm-exporter's Kubernetes pod mapping)",
             "");
    json_decref(labels);
    size_t nseries = 0;
    if (gp_prom_series_count(c, match, o->t0_s, o->t1_s, &nseries, err, errlen) != 0) return -1;

    /* grid cells: only fields of present families (ctx_t.slot_of) */
    memset(x.slot_of, -1, sizeof x.slot_of);
    int nslots = 0;
    for (size_t f = 0; f < NFAMS; f++) {
        if (!present[f]) continue;
        int bit = __builtin_ctz(fams[f].field);
        if (x.slot_of[bit] < 0) x.slot_of[bit] = (signed char)nslots++;
        x.field_off[bit] = fams[f].off;
    }
    x.cell_bytes = 8 + 8 * (size_t)nslots;
    /* default: the memory 100,000 whole gp_samples took (28.8 MB), whatever the cell size */
    size_t budget = o->cell_budget ? o->cell_budget : GP_PROM_GRID_BYTES / x.cell_bytes;
    int64_t total_steps = (o->t1_s - o->t0_s) / o->step_s + 1;
    int64_t chunk = (int64_t)(budget / (nseries ? nseries : 1));
    if (chunk < 1) chunk = 1;
    if (chunk > total_steps) chunk = total_steps;
    x.raw = r->raw_samples = probe_raw(&x, match, chunk);
    size_t nq = 0;
    for (size_t f = 0; f < NFAMS; f++)
        nq += present[f] != 0;
    for (int k = 0; k < KS__N; k++)
        nq += (ks >> k) & 1;
    for (size_t f = 0; f < NSERVING; f++)
        for (int k = 0; k < 4; k++)
            nq += (srv_present[f] >> k) & 1;
    size_t qtotal = nq * (size_t)((total_steps + chunk - 1) / chunk), qdone = 0;
    /* Chunk k's sample rows are stored by a writer thread while chunk k + 1 is read: the
     * server's answering and goodput's parsing overlap the SQLite inserts (on two cores, the
     * read phase takes about the longer of the two instead of their sum). Allocations and
     * serving rows are stored by this thread between the two, in the chunk's transaction. */
    int threaded = !o->no_writer_thread;
    writer_t w;
    memset(&w, 0, sizeof w);
    w.x = &x;
    w.prune = o->prune_raw;
    int rc = 0;
    for (int64_t k0 = 0; k0 < total_steps && rc == 0; k0 += chunk) {
        x.c0 = o->t0_s + k0 * o->step_s;
        x.nsteps = total_steps - k0 < chunk ? total_steps - k0 : chunk;
        rc = run_chunk(&x, present, srv_present, ks, &qdone, qtotal);
        if (w.running) {
            pthread_join(w.th, NULL);
            w.running = 0;
            r->store_cpu_s += w.cpu_s;
            r->samples += w.samples;
            if (w.rc != 0) {
                if (rc == 0) snprintf(err, errlen, "%s", w.err);
                rc = -1;
            }
        }
        if (rc != 0) break;
        double w0 = thread_cpu_s();
        if (gp_store_begin(s) != 0) {
            snprintf(err, errlen, "cannot write the store: %s", gp_store_errmsg(s));
            rc = -1;
            break;
        }
        rc = flush_allocs(&x);
        if (rc == 0) rc = write_serving_all(&x);
        if (rc == 0 && hand_over(&x, &w, k0 + chunk >= total_steps) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
        r->chunks++;
        if (rc == 0 && threaded && pthread_create(&w.th, NULL, writer_main, &w) == 0) {
            w.running = 1;
            r->store_cpu_s += thread_cpu_s() - w0;
            continue;
        }
        if (rc == 0) { /* no thread (or none could start): the same work inline */
            writer_main(&w);
            r->samples += w.samples;
            if (w.rc != 0) {
                snprintf(err, errlen, "%s", w.err);
                rc = -1;
            }
        } else if (gp_store_commit(s) != 0 && rc == 0) {
            snprintf(err, errlen, "cannot write the store: %s", gp_store_errmsg(s));
            rc = -1;
        }
        r->store_cpu_s += thread_cpu_s() - w0;
    }
    if (w.running) { /* the last chunk's rows (or a failed read of the next) */
        pthread_join(w.th, NULL);
        r->store_cpu_s += w.cpu_s;
        r->samples += w.samples;
        if (w.rc != 0 && rc == 0) {
            snprintf(err, errlen, "%s", w.err);
            rc = -1;
        }
    }
    for (size_t i = 0; i < w.nd; i++)
        free(w.d[i].row);
    free(w.d);
    free(w.acc);
    for (size_t i = 0; i < w.caphold; i++)
        free(w.hold[i].b);
    free(w.hold);
    r->raw_dropped = w.dropped;
    if (rc == 0) {
        if (gp_store_begin(s) != 0) rc = -1;
        for (size_t i = 0; i < x.ndev && rc == 0; i++)
            while (x.dev[i].nrun > 0 && rc == 0)
                rc = close_run(&x, &x.dev[i], 0);
        if (rc == 0) rc = flush_allocs(&x);
        size_t unplaced = 0;
        for (size_t i = 0; i < x.npod && rc == 0; i++) {
            pod_t *p = &x.pod[i];
            if (p->first_alloc_ns < 0 && p->flavor < 0) {
                if (p->gpus_requested > 0) unplaced++;
                if (p->gpus_requested <= 0) continue; /* not a GPU pod */
            }
            rc = store_job(&x, p);
            r->jobs++;
        }
        if (gp_store_commit(s) != 0 && rc == 0) {
            snprintf(err, errlen, "cannot write the store: %s", gp_store_errmsg(s));
            rc = -1;
        }
        if (unplaced) {
            char nb[32];
            snprintf(nb, sizeof nb, "%zu", unplaced);
            note(r,
                 "%s pod(s) requested GPUs but no GPU series was labelled with them (pending, or "
                 "no pod mapping): they hold no GPU-hours in this report",
                 nb);
        }
    }
    if (rc == 0 && w.dropped && !pruned_ok(&x, w.pruned, w.cappruned)) {
        snprintf(err, errlen,
                 "a job whose raw rows were pruned shares a GPU with another job: read again "
                 "with every raw row");
        rc = -4;
    }
    free(w.pruned);
    if (rc == 0 && r->samples == 0) {
        snprintf(err, errlen, "no GPU samples between --from and --to (matching --selector)");
        rc = -3;
    }
    r->devices = x.ndev;
    free_ctx(&x);
    return rc;
}
