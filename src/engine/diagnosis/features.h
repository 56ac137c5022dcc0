/* features.h: what the classifier looks at, per job and window, computed from arrays in
 * memory (allocations, device samples, per-process samples, events). No I/O, so every
 * rule is testable with hand-built inputs.
 *
 * Telemetry statistics are time-weighted: a sample describes the interval since the
 * previous sample of its device (the first one: the device's median interval), clipped to
 * the job's allocation of that device and to the window. A statistic with n == 0 is
 * unknown (the source never reported it); shares and rates < 0 are unknown. Nothing is
 * ever presented as zero when it was not measured. */
#ifndef GP_ENGINE_FEATURES_H
#define GP_ENGINE_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "engine/accounting/goodput.h"
#include "model/device.h"
#include "model/event.h"
#include "model/job.h"
#include "model/sample.h"

typedef struct gp_stat {
    int n;          /* samples that reported it; 0 = unknown */
    double known_s; /* device-seconds covered */
    double mean, p10, p50, p90, min, max;
} gp_stat;

/* A step event held compactly: 40 bytes instead of a gp_event's ~700. A day of 8 ranks
 * stepping at 10 Hz is ~7 M steps; held as gp_events that alone is gigabytes. */
typedef struct gp_step_ev {
    int64_t ts_ns, step_start_ns, rank, step; /* as in gp_event; step_start_ns < 0 unknown */
    double units;                             /* < 0 unknown */
} gp_step_ev;

/* A request or phase event held compactly: 48 bytes instead of a gp_event's ~700, with
 * only what the features read. An inference job's requests and a training job's phase
 * edges are most of its other events; as gp_events they were most of `goodput report`'s
 * peak memory (docs/benchmarks.md, "Start-up and libraries"). */
typedef enum gp_phase_slot {
    GP_PS_OTHER,      /* a phase no feature reads */
    GP_PS_DATA_WAIT,  /* data_wait */
    GP_PS_CHECKPOINT, /* checkpoint_save, checkpoint_restore */
    GP_PS_INIT,       /* init, compile */
    GP_PS_COMM        /* comm, allreduce, all_reduce, nccl, collective, communication */
} gp_phase_slot;
typedef struct gp_mark_ev {
    int64_t ts_ns, rank;                /* as in gp_event */
    int64_t arrival_ns, first_token_ns; /* request: as in gp_event; phase: unused */
    int64_t output_tokens;              /* request */
    int8_t kind;                        /* GP_EV_REQUEST or GP_EV_PHASE */
    int8_t ok;                          /* request: 1 ok, 0 error */
    int8_t edge;                        /* phase: gp_phase_edge */
    int8_t slot;                        /* phase: gp_phase_slot of its name */
} gp_mark_ev;

/* 1 and *out filled when e is a request or a phase (what gp_mark_ev holds), else 0. */
int gp_mark_of(const gp_event *e, gp_mark_ev *out);

/* A device sample held compactly, with only what the features read: 144 bytes instead of
 * a gp_sample's 288 (its UUID, 96 of them, is the series', and temperature, memory clock,
 * memory utilisation and the fp16/32/64 pipes are not read). One device's samples of a
 * job are one gp_dev_series, in time order. The store loader (gp_job_input_load) gives a
 * job's samples so: held as gp_samples, a training job's samples were most of `goodput
 * report`'s peak memory (docs/benchmarks.md, "Start-up and libraries"). */
typedef struct gp_feat_sample {
    int64_t ts_ns;
    uint32_t valid; /* GP_F_* as in gp_sample */
    double gpu_util, sm_active, sm_occupancy, tensor_active, dram_active;
    uint64_t mem_used_bytes, mem_total_bytes;
    double power_w, sm_clock_mhz;
    uint64_t energy_mj, pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes;
    uint64_t throttle_reasons;
    int64_t xid;
} gp_feat_sample;
typedef struct gp_dev_series {
    char uuid[GP_UUID_MAX];
    gp_feat_sample *v; /* n > 0 samples, ts ascending, no two at one ts */
    size_t n;
} gp_dev_series;
/* The compact form of x (what the features read of it). */
void gp_feat_sample_of(const gp_sample *x, gp_feat_sample *out);

/* What the input of one window, loaded without the job's earlier rows, carries over from
 * them (live_window.h): per device its median sample interval over all of the job's
 * samples (a gap is 5x it), and how many samples the job has in all. */
typedef struct gp_dev_interval {
    char uuid[GP_UUID_MAX];
    int64_t dt_med_ns; /* > 0 */
} gp_dev_interval;
typedef struct gp_input_history {
    const gp_dev_interval *dev; /* a device not listed: from the input's samples */
    size_t n_dev;
    int64_t n_samples; /* the job's samples (n_samples_seen) */
} gp_input_history;

typedef struct gp_job_input {
    const char *job_id;
    const gp_alloc *allocs; /* the job's allocations; none: every sample counts */
    size_t n_allocs;
    const gp_device *devices; /* for peak rates (spec); may be NULL */
    size_t n_devices;
    const gp_sample *samples; /* samples of the job's devices, any order */
    size_t n_samples;
    /* The same held compactly, one series per device (gp_dev_series): what the store loader
     * gives (gp_job_input_load), with no samples above; hand-built inputs and the window
     * loaders (gp_job_input_load_ex, _range) give samples. An input holds one form or the
     * other: with any series the features read the series and not samples. */
    const gp_dev_series *series;
    size_t n_series;
    /* Series read late (gp_job_input_load_deferred): n_deferred of the series are empty
     * slots until the event features are done, so their rows and those features' per-step
     * arrays never share the peak. The window needs only their latest sample time
     * (deferred_last_ns). gp_features_compute calls load_series(load_ctx) between the event
     * features and the telemetry: it fills the slots (dropping those left empty, order
     * kept) and may release steps and marks, which the telemetry does not read. */
    size_t n_deferred;
    int64_t deferred_last_ns;
    int (*load_series)(void *load_ctx);
    void *load_ctx;
    /* Deferred series streamed (gp_job_input_load_deferred): when series_fill is set,
     * load_series leaves the deferred slots empty (n 0) (their rows were counted with
     * deferred_last_ns: deferred_rows), and the telemetry reads them one device at a time,
     * in UUID order:
     * series_fill(load_ctx, slot) reads that slot's rows into in->series[slot],
     * series_drop(load_ctx, slot) frees them before the next device, so the input holds
     * one device's series at a time, not all of them (report's peak RSS,
     * docs/benchmarks.md). Where a device's idle time needs the job's first activity over
     * all devices (no steps), it comes first from series_scan: the slot's rows handed to
     * fn one at a time in time order until fn returns 1 (usually a few rows). */
    size_t deferred_rows;
    /* series_fold, when set, is how a deferred device the telemetry folds is read instead
     * of series_fill: the slot's rows are never held, each is handed to row_fn as it is
     * read, after all their times were handed to ts_fn (the device's median interval
     * comes before its first row's weight), both passes in one read transaction (the same
     * rows): the telemetry then holds no device's rows, where a filled series was 144 bytes
     * a row (518 KB for an hour of 1 s samples, report's peak RSS, docs/benchmarks.md).
     * Stops at a fn's first < 0. 0, or -1. */
    int (*series_fold)(void *load_ctx, size_t slot, int (*ts_fn)(void *fn_ctx, int64_t ts_ns),
                       int (*row_fn)(void *fn_ctx, const gp_feat_sample *x), void *fn_ctx);
    int (*series_fill)(void *load_ctx, size_t slot);
    void (*series_drop)(void *load_ctx, size_t slot);
    int (*series_scan)(void *load_ctx, size_t slot,
                       int (*fn)(void *fn_ctx, const gp_feat_sample *x), void *fn_ctx);
    /* 0: samples are raw rows; else some device's are rollup rows of this step, each the
     * means of (ts - step, ts] (gp_job_input_load, long allocations) */
    int64_t samples_step_ns;
    const gp_proc_sample *procs; /* per-process rows of those devices; may be NULL */
    size_t n_procs;
    const gp_event *events; /* the job's events, any order */
    size_t n_events;
    /* Step events held compactly, in time order (ties in the store's order). The store
     * loader (gp_job_input_load) puts every step here and none in events; hand-built
     * inputs may keep steps in events instead. Consumers see both (gp_step_next). */
    const gp_step_ev *steps;
    size_t n_steps;
    /* Request and phase events held compactly (gp_mark_ev), in the store's order. The
     * store loader puts every request and phase here and none in events; hand-built
     * inputs may keep them in events instead. The features read both. */
    const gp_mark_ev *marks;
    size_t n_marks;
    int64_t t0_ns, t1_ns;            /* window; 0, 0 = from the first allocation to the last data */
    gp_slo slo;                      /* 0 fields: the SLOs the job declared in its hello, if any */
    int64_t submitted_ns;            /* from the job record when lifecycle events are not in events;
                                        <= 0 unknown */
    const gp_input_history *history; /* NULL: every figure from this input */
    /* 1: only what the idle time needs (a window's idle_gpu_s: the scheduling-gap finding,
     * diagnose.c): the whole-job step and request quantiles (step_drift, ideal_step_s,
     * thr_shared, thr_alone, ttft/tpot/e2e) are left unknown, every other field as always */
    int idle_only;
} gp_job_input;

typedef struct gp_features {
    int64_t t0_ns, t1_ns;
    int n_gpus;
    double alloc_gpu_s, wall_s;
    int has_events, has_steps, has_requests, activity_only;
    int n_samples_seen;        /* device samples of the job's GPUs in the window */
    int first_request_delayed; /* inference: the first request waited > 30 s for a token */

    gp_stat gpu_util, sm_active, sm_occupancy, tensor_active, dram_active, mem_frac, power_frac;
    double throttle_share; /* share of sampled time with a slowdown clock reason; <0 unknown */
    int xid_count;         /* samples reporting an XID */
    int64_t last_xid;
    double pcie_bytes_s, nvlink_bytes_s; /* per GPU, tx+rx; < 0 unknown */
    double interconnect_peak_share;      /* max of pcie, nvlink rate / peak; < 0 unknown */
    double energy_j;                     /* < 0 unknown */

    /* activity over time (after ready, or the whole allocation without events) */
    double idle_share;    /* share of sampled device time with no kernels; < 0 unknown */
    double idle_gpu_s;    /* device-seconds idle */
    double harvest_gpu_s; /* device-seconds in idle gaps >= GP_TH_HARVEST_GAP_S */
    int n_idle_devices;   /* devices idle through the whole window */

    /* lifecycle */
    int64_t first_alloc_ns, ready_ns; /* ready < 0: no progress seen */
    int64_t first_active_ns;          /* first sample with kernels or memory in use; < 0 never */
    double not_ready_s;               /* < 0 unknown */
    double queue_wait_s;              /* < 0 unknown */

    /* training */
    int64_t n_steps;
    int n_ranks;
    double ideal_step_s, mean_step_s, step_cv; /* < 0 unknown */
    double step_drift;         /* median step of the last third / first third; < 0 unknown */
    double units, units_per_s; /* < 0 unknown */
    double data_wait_share, checkpoint_share, init_share, comm_share; /* of rank-time, <0 unknown */
    int n_restarts;

    /* interference: this job's throughput while another job ran on its GPUs */
    double shared_share;                /* share of time shared; < 0 unknown */
    double thr_shared, thr_alone;       /* steps/s; < 0 unknown */
    int64_t shared_t0_ns, shared_t1_ns; /* first and last step while shared; 0 none */

    /* inference */
    int64_t n_req, n_req_ok, n_req_good;
    double ttft_p50_s, ttft_p90_s, tpot_p50_s, tpot_p90_s, e2e_p50_s, e2e_p90_s; /* <0 unknown */
    double tokens_out, good_tokens, req_per_s, good_req_per_s, good_tok_per_s;
    double useful_gpu_s;   /* allocated GPU-s x good tokens / tokens; < 0 unknown */
    double peak_req_per_s; /* best 1-minute window */
    double headroom;       /* 1 - mean rate / best sustained rate; < 0 unknown */
    double slo_ttft_s, slo_tpot_s, slo_e2e_s; /* the SLOs requests were judged by; 0 = not
                                                 set (in->slo, else the job's hello) */
} gp_features;

/* Iterates the input's steps: those in events (kind GP_EV_STEP) in their order, then
 * in->steps. Start with it = {0}; returns 1 and fills *out while there is one. */
typedef struct gp_step_iter {
    size_t i, k;
} gp_step_iter;
int gp_step_next(const gp_job_input *in, gp_step_iter *it, gp_step_ev *out);

/* Fills *f. Returns 0, or -1 (out of memory) with err filled. */
int gp_features_compute(const gp_job_input *in, gp_features *f, char *err, size_t errlen);

/* Robust "ideal" of a series: the median after dropping values beyond k MADs of the
 * median (k = GP_TH_STEP_OUTLIER_MAD). Reorders v (selection, not a sort). < 0 when
 * n == 0. */
double gp_robust_median(double *v, size_t n, double k);
/* Weighted quantile helper over (value, weight) pairs; sorts in place. */
double gp_quantile(double *v, size_t n, double q);

/* Rolling windows ending at t_end: 1 m, 5 m, 1 h (and the whole job when whole != NULL). */
typedef struct gp_rolling {
    gp_features m1, m5, h1, whole;
} gp_rolling;
int gp_features_rolling(const gp_job_input *in, int64_t t_end_ns, gp_rolling *out, char *err,
                        size_t errlen);
/* The 1 m, 5 m and 1 h windows of in ending at t_end_ns, judged against whole (the job's
 * features over all of its data, which in may not hold: a long job's raw tail). */
int gp_features_rolling_with(const gp_job_input *in, int64_t t_end_ns, const gp_features *whole,
                             gp_rolling *out, char *err, size_t errlen);
/* A window that starts after the job's first allocation: not-ready time is judged by
 * the whole job (ready before the window: none; still not ready: only the part inside
 * the window), not by the first progress the window happens to see. */
void gp_features_clip_ready(gp_features *window, const gp_features *whole);
/* A sample shows the GPU in use (kernels running above the idle threshold, or 5% of its
 * memory held): what dates a job's first activity, whole-history and live alike. */
int gp_features_sample_active(const gp_sample *x);
/* The times of other jobs' process rows using more than 5% of the SM on the job's GPUs,
 * sorted, into out_ts_ns (room for in->n_procs); returns how many. With
 * gp_features_near_foreign: one rule for the whole-history features and the live state
 * (live_window.c). */
size_t gp_features_foreign_ts(const gp_job_input *in, int64_t *out_ts_ns);
/* A step ending at t_ns shared its GPU when another job's process row (ts_ns[0..n), sorted)
 * lies within GP_FEATURES_SHARED_NEAR_NS of its end. */
#define GP_FEATURES_SHARED_NEAR_NS 2000000000LL
int gp_features_near_foreign(const int64_t *ts_ns, size_t n, int64_t t_ns);

#endif
