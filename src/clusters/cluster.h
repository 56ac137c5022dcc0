/* cluster.h: the cluster report: fleet-wide GPU-hours requested, allocated and used, and
 * the findings vocabulary (model/finding.h) at cluster scope, from published GPU cluster
 * traces (Alibaba PAI 2020, openb 2023, GenAI 2026; Microsoft Philly; SenseTime Helios).
 *
 * Readers stream their files (csv.h, yajl for Philly's JSON) and feed an aggregator that
 * keeps only fixed-size sums, histograms, a time-binned series and per-key tables for the
 * joins a format needs (hash of the key, not the key). Nothing keeps the rows.
 *
 * Definitions (docs/clusters.md says more):
 * - requested GPU-s: GPUs asked for x the time the unit ran (or would have, when it never ran).
 * - allocated GPU-s: GPUs the scheduler bound to the unit x the time it held them.
 * - used GPU-s: measured GPU utilization (in GPUs) x the time it held them.
 * - utilization of an allocation: used / allocated, clamped to [0, 1].
 * - queue wait: start of execution - submission.
 * Memory the report owns is freed by gp_cl_report_free. */
#ifndef GP_CLUSTERS_CLUSTER_H
#define GP_CLUSTERS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/finding.h"

/* ---- small containers: 64-bit hash -> uint32 map, and an interning string table ---- */
typedef struct gp_cl_slot {
    uint64_t key; /* 0 = empty slot */
    uint32_t val;
} gp_cl_slot; /* key and value side by side: one cache miss per probe in large joins */
typedef struct gp_cl_map {
    gp_cl_slot *slots;
    size_t cap, n;
} gp_cl_map;

uint64_t gp_cl_hash(const char *s, size_t n); /* never 0 */
/* 1 found (*val set), 0 absent. */
int gp_cl_map_get(const gp_cl_map *m, uint64_t key, uint32_t *val);
/* Inserts or replaces; -1 out of memory. */
int gp_cl_map_put(gp_cl_map *m, uint64_t key, uint32_t val);
/* Grows the table once to hold n keys without further rehashing; -1 out of memory. */
int gp_cl_map_reserve(gp_cl_map *m, size_t n);
void gp_cl_map_free(gp_cl_map *m);
/* Hints the cache to load the slot where key's probe starts: callers that look up or insert
 * batches of keys prefetch them all first, so the cache misses of a large join overlap. */
static inline void gp_cl_map_prefetch(const gp_cl_map *m, uint64_t key) {
    if (m->cap) __builtin_prefetch(&m->slots[key & (m->cap - 1)]);
}

typedef struct gp_cl_strtab {
    gp_cl_map map;
    char **s;
    size_t n, cap;
} gp_cl_strtab;
/* Id of the string (added when new); -1 out of memory. */
int32_t gp_cl_intern(gp_cl_strtab *t, const char *s, size_t n);
void gp_cl_strtab_free(gp_cl_strtab *t);

/* ---- the report ---- */
typedef struct gp_cl_agg {
    int64_t n;
    double requested_gpu_s, allocated_gpu_s, used_gpu_s;
    double measured_alloc_gpu_s; /* allocated GPU-s of the units whose usage is known */
} gp_cl_agg;

enum { GP_CL_DIM_TYPE, GP_CL_DIM_USER, GP_CL_DIM_GROUP, GP_CL_DIM_WORKLOAD, GP_CL_DIM__COUNT };
extern const char *const gp_cl_dim_names[GP_CL_DIM__COUNT];

#define GP_CL_WAIT_BINS 320 /* log-spaced: 16 per octave from 1 s; bin 0 = under 1 s */
typedef struct gp_cl_wait {
    int64_t n;
    double sum_s, max_s;
    uint32_t hist[GP_CL_WAIT_BINS];
} gp_cl_wait;
/* GPU-count buckets for queue wait: 0, (0,1), 1, 2, 3-4, 5-8, 9-16, >16 */
#define GP_CL_COUNT_BUCKETS 8
extern const char *const gp_cl_count_bucket_names[GP_CL_COUNT_BUCKETS];
int gp_cl_count_bucket(double gpus);
/* Adds one wait of s seconds. */
void gp_cl_wait_add(gp_cl_wait *w, double s);
/* q-quantile from the log histogram (upper edge of the bin; about 4% resolution). */
double gp_cl_wait_quantile(const gp_cl_wait *w, double q);

#define GP_CL_UTIL_BINS 10
/* Time series bins (hourly by default): 50,000 hours is 5.7 years, longer than any public
 * cluster trace; a row whose times stretch past it is corrupt, and bounding the bins keeps
 * a 4 KB input from allocating hundreds of MB of series and JSON (found by fuzz_cluster). */
#define GP_CL_SERIES_MAX_BINS 50000

typedef struct gp_cl_series {
    double bin_s;
    int64_t b0; /* index of the first bin (time / bin_s) */
    size_t n;   /* bins in use from b0 */
    size_t cap; /* bins allocated from b0 (zeroed past n) */
    double *alloc_gpu_s, *busy_gpu_s, *measured_gpu_s, *wait_gpu_s, *online_gpu_s;
} gp_cl_series;

typedef struct gp_cl_unit {
    const char *dim[GP_CL_DIM__COUNT]; /* NULL or "" = unknown */
    double request_gpus;               /* < 0 unknown */
    double alloc_gpus;                 /* GPUs bound while it ran; 0 when never placed */
    double used_gpus;                  /* mean measured use in GPUs over its run; < 0 unknown */
    double start_s, end_s;             /* run interval; < 0 unknown */
    int failed;                        /* ended in failure */
    int never_ran;                     /* held GPUs (alloc > 0) yet never did work (see readers) */
    int stable_dims; /* dim strings are interned and outlive the read: cached by address */
} gp_cl_unit;

typedef struct gp_cluster_report {
    char format[16];
    char path[512];
    char unit_name[24]; /* "task instances", "pods", "jobs", "containers", ... */
    struct {
        char name[64];
        int64_t rows;
    } tables[10];
    int n_tables;
    int64_t n_jobs, n_units, n_skipped;

    gp_cl_agg total;
    gp_cl_strtab dim_names[GP_CL_DIM__COUNT];
    gp_cl_agg *dim[GP_CL_DIM__COUNT];
    size_t dim_cap[GP_CL_DIM__COUNT];
    /* name address -> row id, for units whose dim strings are interned (stable_dims): PAI
     * skips hashing four strings per unit. Valid while the reader's strings live. */
    struct {
        const char *s;
        int32_t id;
    } dim_cache[GP_CL_DIM__COUNT][256];

    double util_gpu_s[GP_CL_UTIL_BINS]; /* allocated GPU-s by utilization decile */
    int64_t util_n[GP_CL_UTIL_BINS];
    int64_t n_plan_measured, n_plan_exceeds; /* units with request and usage; request > usage */
    double idle_alloc_gpu_s;                 /* allocated GPU-s at utilization < 1% */
    double under_batched_gpu_s;              /* allocated GPU-s at utilization <= 50% */

    gp_cl_wait wait_count[GP_CL_COUNT_BUCKETS];
    gp_cl_strtab wait_type_names;
    gp_cl_wait *wait_type;
    size_t wait_type_cap;
    gp_cl_wait wait_all;

    /* units that asked for no GPU (openb CPU-only pods): reported apart, never mixed into the
     * GPU queue waits and GPU-hours */
    int64_t n_cpu_only, n_cpu_only_pending;
    gp_cl_wait wait_cpu_only;

    int64_t n_failed, n_held_never_ran, n_waited_never_ran;
    double failed_gpu_s, held_never_ran_gpu_s, waited_never_ran_gpus;

    double capacity_gpus; /* from a machine or node list; 0 = unknown */
    gp_cl_strtab cap_model_names;
    double cap_model_gpus[64];

    /* GPU sharing (openb 2023: gpu_milli) */
    int has_sharing;
    int64_t n_shared_units, n_gpu_units;
    double shared_gpu_s, whole_gpu_s;
    double stranded_gpu_s; /* capacity left in GPUs that hold fractional pods (lower bound) */
    double peak_alloc_gpus, peak_gpus_needed;

    /* time series of per-GPU samples (GenAI 2026, Philly util) */
    int has_ts;
    int64_t ts_samples, ts_na;
    double ts_interval_s;
    double ts_online_gpu_s, ts_busy_gpu_s, ts_idle_gpu_s, ts_low_gpu_s;
    int64_t ts_units;           /* containers or GPUs seen */
    double mem_idle_bytes_mean; /* GenAI: mean memory held by containers that stayed idle */
    int64_t n_idle_units_with_mem;

    gp_cl_series series;
    double sched_gap_gpu_s; /* GPU-s free or idle while demand waited (per bin: min of both) */
    double span_s, t_min, t_max;

    gp_finding *findings;
    int n_findings;
    char verdict[768];
} gp_cluster_report;

void gp_cl_report_init(gp_cluster_report *r, const char *format, const char *path, double bin_s);
void gp_cl_report_free(gp_cluster_report *r);
int gp_cl_table_count(gp_cluster_report *r, const char *name, int64_t rows);

int gp_cl_add_unit(gp_cluster_report *r, const gp_cl_unit *u);
/* One queue wait: gpus asked for, type ("" unknown), submitted and started (s). */
int gp_cl_add_wait(gp_cluster_report *r, double gpus, const char *type, double submit_s,
                   double start_s);
/* One waiting unit that never ran (no start). */
void gp_cl_add_never_ran(gp_cluster_report *r, double gpus);
/* One per-GPU (or per-container) sample covering interval_s: online GPUs and busy GPUs. */
int gp_cl_add_sample(gp_cluster_report *r, double t_s, double interval_s, double online_gpus,
                     double busy_gpus);
/* Adds GPUs over [t0, t1) to a series column (0 alloc, 1 busy, 2 measured, 3 wait, 4 online). */
int gp_cl_series_add(gp_cl_series *s, int col, double t0, double t1, double gpus);

/* 1 when "value op threshold" is true (op one of > >= < <= == !=), 0 when false or not a
 * number. The evidence formatter uses it to refuse a false line. */
int gp_cl_evidence_holds(double value, const char *op, double threshold);
/* Adds evidence only when its comparison is true; returns 1 added, 0 refused. */
int gp_cl_evidence(gp_finding *f, const char *metric, double value, const char *op,
                   double threshold, const char *source);

/* Computes findings and the verdict; call once after reading. */
int gp_cl_finish(gp_cluster_report *r);

/* Readers: format is pai2020, openb2023, genai2026, philly, helios, alibaba2025, or auto
 * (gp_cl_detect picks). 0 or -1 with err. */
int gp_cl_read(gp_cluster_report *r, const char *format, const char *path, char *err,
               size_t errlen);
int gp_cl_read_pai2020(gp_cluster_report *r, const char *dir, char *err, size_t errlen);
int gp_cl_read_openb2023(gp_cluster_report *r, const char *path, char *err, size_t errlen);
int gp_cl_read_genai2026(gp_cluster_report *r, const char *path, char *err, size_t errlen);
int gp_cl_read_philly(gp_cluster_report *r, const char *path, char *err, size_t errlen);
int gp_cl_read_helios(gp_cluster_report *r, const char *path, char *err, size_t errlen);
int gp_cl_read_alibaba2025(gp_cluster_report *r, const char *path, char *err, size_t errlen);

/* Picks the format of PATH from its content (file names in a folder, a CSV header, JSON):
 * returns the format name, or NULL with err naming what each format looks like. why gets a
 * short reason ("openb_pod_list_default.csv has the openb pod columns"). */
const char *gp_cl_detect(const char *path, char *why, size_t whylen, char *err, size_t errlen);

/* Outputs. */
void gp_cl_write_text(const gp_cluster_report *r, FILE *f);
/* The same in width columns (0: no limit, --wide); gp_cl_write_text uses 100. */
void gp_cl_write_text_w(const gp_cluster_report *r, FILE *f, int width);
/* JSON document as a malloc'd string; caller frees. */
char *gp_cl_json(const gp_cluster_report *r);
/* Self-contained HTML with inline SVG, written to a temp file and renamed. */
int gp_cl_write_html(const gp_cluster_report *r, const char *path, char *err, size_t errlen);

#endif
