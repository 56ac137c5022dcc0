/* trace.h: profiler traces (Kineto Chrome-trace JSON, plain or gzip; Nsight Systems SQLite)
 * read as a stream into compact per-rank rows, then HTA's analyses (temporal breakdown, idle
 * time per stream, kernel breakdown, comm/comp overlap, launch stats), per-step GPU
 * utilisation, cross-rank stragglers and findings. Definitions: docs/traces.md.
 *
 * Memory: a rank keeps only the rows the analyses need (GPU events, CPU events that carry a
 * correlation id, ProfilerStep annotations, and the CPU ops idle attribution classifies:
 * data loading, syncs, optimizer steps, collectives, profiler overhead), never a DOM of the
 * file. Every struct returned
 * is owned by the caller and freed with the matching *_free function. No threads here; the
 * CLI (cmd_trace.c) runs ranks in parallel. */
#ifndef GP_TRACES_TRACE_H
#define GP_TRACES_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "model/finding.h"

/* Kernel classes, HTA's names and order. */
enum { GP_KT_COMPUTATION = 0, GP_KT_COMMUNICATION = 1, GP_KT_MEMORY = 2, GP_KT_OTHER = 3 };
const char *gp_kernel_type_name(int kt);
/* Class of a kernel name by HTA's matching rules (docs/traces.md). */
int gp_kernel_type(const char *name);

/* Row flags. */
enum {
    GP_TR_GPU_SIDE = 1, /* stream >= 0 and correlation >= 0, or an Event/Context Sync */
    GP_TR_KCAT = 2,     /* category kernel/gpu_memcpy/gpu_memset (and 2021-era names) */
    GP_TR_LAUNCH = 4,   /* cudaLaunchKernel / cudaLaunchKernelExC */
    GP_TR_MEMLAUNCH = 8 /* cudaMemcpyAsync / cudaMemsetAsync */
};

typedef struct gp_trow {
    double ts, dur; /* microseconds, HTA's rounding applied after load */
    double link_ts; /* start of the launching CPU event as HTA links it (NaN: none) */
    int64_t corr;   /* -1 when none */
    int64_t idx;    /* position in traceEvents */
    int32_t stream; /* -1 on the CPU */
    uint32_t name;  /* index into gp_trace_rank.names */
    uint8_t flags;
    uint8_t hclass; /* GP_HC_* of a CPU-side row (0 none); fits the struct's padding */
    int32_t tid;    /* thread of a CPU-side row (0 unknown) */
} gp_trow;

/* What a host (CPU) op is, for attributing GPU idle time to host activity (idle_cause.c).
 * Decided once per distinct name (and category) while reading. */
enum {
    GP_HC_NONE = 0,
    GP_HC_DATA = 1,       /* DataLoader, __next__, collate, pin_memory */
    GP_HC_SYNC = 2,       /* cudaMemcpy (blocking), cuda*Synchronize, aten::item, ... */
    GP_HC_OPTIMIZER = 3,  /* Optimizer.step#... */
    GP_HC_COLLECTIVE = 4, /* nccl:*, c10d::*, ProcessGroup* */
    GP_HC_PROFILER = 5,   /* profiler overhead (any thread) */
    GP_HC_COPY = 6,       /* aten::to / _to_copy / copy_: a sync only when one runs inside */
    GP_HC_LAUNCH = 7,     /* a runtime call that enqueues GPU work */
    GP_HC_DUP_STEP = 8    /* on a ProfilerStep row: a repeat of an id already seen */
};
/* Class of a host op by its name (GP_HC_*). */
int gp_host_class(const char *name);

typedef struct gp_trow_vec {
    gp_trow *v;
    size_t n, cap;
} gp_trow_vec;

typedef struct gp_trace_warnings {
    uint64_t bad_duration;     /* negative or > 7 days: dropped */
    uint64_t zero_duration;    /* GPU events with dur == 0 as written: kept (as HTA), counted */
    uint64_t dup_steps;        /* a ProfilerStep#N name seen again: the repeat is not a step */
    int64_t first_bad_idx;     /* traceEvents index of the first bad duration (-1 none) */
    int64_t first_zero_idx;    /* ... of the first zero duration (-1 none) */
    int64_t first_dup_idx;     /* ... of the first repeated step (-1 none) */
    uint64_t missing_fields;   /* complete events without ts */
    uint64_t unknown_category; /* kept, analysed by stream as HTA does */
    uint64_t events;           /* objects seen in traceEvents */
} gp_trace_warnings;

/* Totals of an Nsight Systems export, summed in integer ns from the rows as read (exact, so
 * each equals SUM(end - start) over the same rows in SQL). Rows with end < start are not
 * summed (they are counted in warn.bad_duration). */
typedef struct gp_nsys_sum {
    char name[96];  /* kernels: "kernels"; memcpy: "Memcpy HtoD"...; runtime: API name */
    int kind;       /* memcpy: copyKind; otherwise 0 */
    uint64_t count; /* rows */
    int64_t sum_ns; /* sum of end - start */
    int64_t bytes;  /* memcpy/memset: sum of bytes (-1 when the column is absent) */
} gp_nsys_sum;

typedef struct gp_nsys_totals {
    gp_nsys_sum kernels;
    gp_nsys_sum *memcpy; /* one per copyKind, in ascending copyKind */
    size_t n_memcpy;
    int has_memcpy, has_memset, has_runtime; /* the table exists in the export */
    gp_nsys_sum memset;
    gp_nsys_sum *runtime; /* one per API name (_vNNNN suffix dropped), by sum_ns descending */
    size_t n_runtime;
    uint64_t launches; /* runtime rows that launch a kernel (counted once, in runtime) */
} gp_nsys_totals;
gp_nsys_totals *gp_nsys_totals_dup(const gp_nsys_totals *t);
void gp_nsys_totals_free(gp_nsys_totals *t);

typedef struct gp_trace_rank {
    char path[512];
    int rank;
    char source[16];    /* "kineto" or "nsys" */
    gp_trow_vec gpu;    /* stream != -1 */
    gp_trow_vec cpu;    /* stream == -1 rows with a correlation id, ProfilerSteps, event 0 */
    gp_trow_vec host;   /* other CPU rows with a host class (GP_HC_*): attribution only */
    uint8_t *hclass_of; /* per name: GP_HC_* */
    uint8_t *step_seen; /* per name: a CPU ProfilerStep with this name was kept */
    /* run identity (hygiene: one run per file) */
    int64_t pid;                  /* pid of the first CPU event (-1 unknown) */
    int64_t base_time_ns;         /* top-level baseTimeNanoseconds (-1 absent) */
    int world_size;               /* distributedInfo.world_size (-1 absent) */
    int has_dist_rank;            /* the rank came from a "rank" key */
    double t_first_us, t_last_us; /* first start and last end over kept events (NaN none) */
    char **names;
    uint32_t n_names, cap_names;
    void *name_index; /* private */
    int64_t n_cpu_side;
    int ts_float; /* a timestamp was written as a float: HTA rounds inward */
    int rounded;  /* gp_trace_prepare rounded the rows inward (ts_float was set) */
    gp_trace_warnings warn;
    uint64_t bytes;       /* uncompressed bytes read */
    gp_nsys_totals *nsys; /* Nsight Systems exports only (NULL otherwise); owned */
} gp_trace_rank;

/* Progress callback: bytes of input consumed so far (compressed if gzip). May be NULL. */
typedef void (*gp_trace_progress_fn)(void *ctx, uint64_t delta_bytes);

/* Reads one Kineto trace (.json or .json.gz). Returns 0, or -1 with err naming the file and,
 * for malformed JSON, the uncompressed byte offset. */
int gp_kineto_read(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                   void *progress_ctx, char *err, size_t errlen);
/* The same, refusing a gzip trace that inflates past max_inflate_bytes (0: the default,
 * GP_TRACE_MAX_INFLATE_DEFAULT), so a small gzip bomb cannot run for minutes. */
#define GP_TRACE_MAX_INFLATE_DEFAULT (16ULL << 30) /* 16 GiB */
int gp_kineto_read_capped(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                          void *progress_ctx, uint64_t max_inflate_bytes, char *err, size_t errlen);
/* Reads an Nsight Systems SQLite export into the same rows (kernels, memcpy, memset on their
 * streams; runtime calls on the CPU). -1 with err when the file is not an nsys export. */
int gp_nsys_read(const char *path, gp_trace_rank *out, char *err, size_t errlen);
/* True when path looks like an SQLite file (magic header). */
int gp_trace_is_sqlite(const char *path);
void gp_trace_rank_free(gp_trace_rank *r);
uint32_t gp_trace_intern(gp_trace_rank *r, const char *s, size_t len);

/* ---- analyses ---------------------------------------------------------------------- */

typedef struct gp_idle_cat {
    int present;
    double sum, ratio; /* HTA-rounded (2 decimals) */
    double raw_sum;
    /* describe(): count of defined gaps, mean, std (ddof 1), min, q25, q50, q75, max;
     * NaN where undefined; rounded to 2 decimals as HTA does. */
    double count, mean, std, min, q25, q50, q75, max;
} gp_idle_cat;

typedef struct gp_idle_stream {
    int32_t stream;
    gp_idle_cat cat[3]; /* host_wait, kernel_wait, other */
} gp_idle_stream;

typedef struct gp_kernel_row {
    char *name; /* owned */
    int kt;
    double sum, max, min, std, mean;
} gp_kernel_row;

typedef struct gp_launch_row {
    int64_t corr;
    double cpu_dur, gpu_dur, delay;
} gp_launch_row;

/* Causes of GPU idle time, from the host ops running during each gap (idle_cause.c). */
enum {
    GP_IC_DATA = 0,   /* data loading */
    GP_IC_SYNC,       /* host<->device copy and synchronisation */
    GP_IC_OPTIMIZER,  /* optimizer step on the host */
    GP_IC_LAUNCH,     /* Python/framework overhead between launches: truly host bound */
    GP_IC_COLLECTIVE, /* host waiting in a collective */
    GP_IC_PROFILER,   /* profiler overhead */
    GP_IC_UNKNOWN,
    GP_IC__COUNT
};
const char *gp_idle_cause_name(int c);

typedef struct gp_step_util {
    char name[48];
    double t0, t1;                /* µs, trace clock */
    double busy_us;               /* union of GPU work inside the step */
    double compute_us;            /* union of COMPUTATION work inside the step */
    double comm_us;               /* union of COMMUNICATION work inside the step */
    double memory_us;             /* union of MEMORY work inside the step */
    double idle_us[GP_IC__COUNT]; /* GPU idle inside the step, by cause */
    double rounding_us;           /* idle inside the step made by inward rounding (no cause) */
    double data_us;               /* union of data-loading host ops inside the step */
} gp_step_util;

/* A host op name and its totals (evidence for findings). */
typedef struct gp_host_op {
    char name[96];
    int cause; /* GP_IC_* */
    uint64_t count;
    double total_us;
} gp_host_op;

/* One GPU event of the captured timeline step (analyze_timeline.c). */
typedef struct gp_tl_event {
    double t0_us, dur_us; /* trace clock */
    int32_t stream;
    uint32_t name; /* index into gp_rank_result.tl_names */
    uint8_t kt;    /* GP_KT_* */
} gp_tl_event;
#define GP_TL_MAX_EVENTS 20000 /* per rank: bounds memory and the HTML page */

typedef struct gp_rank_result {
    int rank;
    char path[512];
    char source[16];
    /* temporal breakdown */
    double idle_us, compute_us, non_compute_us, span_us;
    double idle_pctg, compute_pctg, non_compute_pctg;
    int has_gpu;
    /* idle time per stream */
    gp_idle_stream *streams;
    size_t n_streams;
    /* kernel breakdown by type: µs per label mask (1 COMP, 2 COMM, 4 MEM) */
    double type_us[8];
    int type_present[8];
    gp_kernel_row *kernels;
    size_t n_kernels;
    /* top kernels (per name, no folding), for the text report */
    gp_kernel_row *top;
    size_t n_top;
    /* comm/comp overlap: NaN when no communication */
    double overlap_pctg, overlap_ratio;
    double comm_us;
    /* launch stats */
    gp_launch_row *launches;
    size_t n_launches;
    size_t n_launch_over_runtime, n_launch_over_delay; /* cutoffs 50 µs, 100 µs */
    double launch_delay_mean, launch_cpu_mean;
    /* memcpy: host<->device time */
    double h2d_d2h_us;
    size_t n_gpu_events;
    double mean_kernel_us;
    /* host_wait vs all idle (summed over streams) */
    double host_wait_us, kernel_wait_us, other_wait_us;
    gp_step_util *steps;
    size_t n_steps;
    /* idle attribution to host activity: device-level gaps (no GPU work on any stream) */
    int attributed;                     /* launches could be tied to threads */
    double idle_cause_us[GP_IC__COUNT]; /* with rounding_us, sums to the idle inside the span */
    double rounding_us; /* idle that only HTA's inward rounding of float timestamps made */
    double data_share;  /* data-loading ops' share of step time (NaN unknown) */
    gp_host_op *ops;    /* top ops per cause by total time */
    size_t n_ops;
    /* run identity */
    int64_t pid, base_time_ns;
    int world_size;
    double t_first_us, t_last_us;
    int run; /* 0-based run this file belongs to (gp_trace_assign_runs) */
    /* timeline of one representative step (the median-length one; the whole span when the
     * trace has no steps): at most GP_TL_MAX_EVENTS GPU events, earliest first */
    gp_tl_event *tl;
    size_t n_tl;
    char **tl_names; /* owned, distinct names of the captured events */
    size_t n_tl_names;
    double tl_t0_us, tl_t1_us;
    char tl_step[48];  /* step name, "" when the window is the whole span */
    size_t tl_dropped; /* events of the window left out by the bound */
    gp_trace_warnings warn;
    uint64_t bytes;
    gp_nsys_totals *nsys; /* copy of the rank's (NULL for Kineto); owned */
} gp_rank_result;

typedef struct gp_trace_options {
    double consecutive_kernel_delay_us; /* 30 */
    double runtime_cutoff_us;           /* 50 */
    double launch_delay_cutoff_us;      /* 100 */
    int num_kernels;                    /* 10 */
    double duration_ratio;              /* 0.8 */
} gp_trace_options;
void gp_trace_options_default(gp_trace_options *o);

/* Number of distinct ProfilerStep#N names over a set of ranks (HTA filters only when >= 2). */
size_t gp_trace_distinct_steps(gp_trace_rank *const *ranks, size_t n);
/* Applies HTA's load steps (inward rounding, iteration filter when filter != 0) in place. */
void gp_trace_prepare(gp_trace_rank *r, int filter);
/* Runs every analysis on one prepared rank. Returns 0 or -1 (out of memory). */
int gp_trace_analyze(const gp_trace_rank *r, const gp_trace_options *o, gp_rank_result *out);
void gp_rank_result_free(gp_rank_result *res);

/* Attributes GPU idle time to host activity and fills the per-step causes (idle_cause.c).
 * all: merged GPU busy intervals (start, end pairs, n of them). */
void gp_trace_attribute_idle(const gp_trace_rank *r, const double *all_se, size_t n,
                             gp_rank_result *res);

/* Captures the GPU events of one representative step into res->tl (after the steps are
 * known). kt_of: GP_KT_* per name id. */
void gp_trace_capture_timeline(const gp_trace_rank *r, const int *kt_of, gp_rank_result *res);

/* Where a file's rank number comes from (--rank-from). */
typedef enum {
    GP_RANK_FROM_TRACE = 0, /* distributedInfo.rank (HTA's rule; 0 when absent) */
    GP_RANK_FROM_FILE,      /* the number after "rank" or "worker" in the file name */
    GP_RANK_FROM_ORDER      /* position in the sorted list of files */
} gp_rank_from;
/* The rank by --rank-from for a file; -1 when the file name has none. */
int gp_rank_from_filename(const char *path);

/* Splits files into runs: files of the same rank never share a run; files of different
 * ranks share one when their time spans overlap (one job's ranks profile the same steps).
 * Sets res[i].run; returns the number of runs. */
int gp_trace_assign_runs(gp_rank_result *res, size_t n);

/* Whole-run summary across ranks. */
typedef struct gp_trace_report {
    gp_rank_result *ranks;
    size_t n_ranks;
    double type_us[8];
    int type_present[8];
    gp_finding *findings;
    size_t n_findings;
    double seconds;
    uint64_t bytes;
    int n_runs;
} gp_trace_report;

/* Fills type totals and findings (stragglers included) from the per-rank results. */
void gp_trace_report_finish(gp_trace_report *rep);
void gp_trace_report_free(gp_trace_report *rep);

/* Outputs (write to f). */
/* Text fits width columns (0: no limit, --wide): long kernel and op names are shortened in
 * the middle, findings grouped by class and fix, advice wrapped. */
void gp_trace_write_text(const gp_trace_report *rep, void *file, int width);
void gp_trace_write_json(const gp_trace_report *rep, void *file);
/* Writes a self-contained HTML page to path via a temp file and rename. */
int gp_trace_write_html(const gp_trace_report *rep, const char *path, char *err, size_t errlen);

/* numpy's argsort(kind="quicksort") order, so ties fall exactly where pandas puts them. */
void gp_np_argsort(const double *v, size_t *idx, size_t n);

#endif
