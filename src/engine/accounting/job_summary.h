/* job_summary.h: everything the report says about one job, joined from the store:
 * lifecycle (queue wait, time to ready), allocated and busy GPU-hours, mean profiling
 * signals, energy from the counters, progress (steps, units, requests, tokens) and the
 * goodput accounting (engine/accounting/goodput.h).
 *
 * Unknown stays unknown: every double below is < 0 when its inputs are missing. Energy
 * is the sum over the job's devices of the energy-counter delta across the allocation;
 * on a GPU shared with other jobs it is split by per-process SM share when the source
 * reports it, else evenly among the jobs holding the GPU at that time. */
#ifndef GP_ENGINE_JOB_SUMMARY_H
#define GP_ENGINE_JOB_SUMMARY_H

#include "engine/accounting/goodput.h"
#include "model/job.h"
#include "store/store.h"

typedef struct gp_job_summary {
    gp_job job;
    int n_gpus;
    double allocated_gpu_h;
    double queue_wait_s;    /* allocated - submitted */
    double time_to_ready_s; /* ready - allocated */
    double busy_gpu_h;      /* integral of gpu_util over the allocation */
    double mean_gpu_util, mean_sm_active, mean_tensor_active, mean_dram_active;
    double mean_mem_used_frac;
    double proc_mem_max_bytes; /* peak device memory one of the job's processes held on one
                                * GPU (per-process rows); < 0 unknown */
    double energy_kwh;
    double span_s; /* window covered */
    gp_goodput gp;
    /* > 0: retention deleted the job's events before this time, and this is the result
     * stored before it did (engine/results/job_results.h); 0: not pruned. Set on read. */
    int64_t events_pruned_ns;
} gp_job_summary;

typedef struct gp_summary_opts {
    int64_t t0_ns, t1_ns; /* 0/0 = whole history; open allocations end at the last sample */
    gp_slo slo;
    /* An allocation folded over at least this long (after clipping to the window) reads
     * its device's 1-minute rollups for the whole minutes inside the raw window too, when
     * no other job holds the GPU then (job_summary.c says what that changes): 0 = the
     * default GP_SUMMARY_ROLLUP_MIN_NS, < 0 = raw rows wherever they exist. */
    int64_t rollup_min_ns;
    /* Incremental states (gp_job_acct) of a training job freeze the labelled past that lies
     * at least this far behind the newest sample or event (job_summary.c, "Checkpoints"):
     * 0 = the default GP_SUMMARY_FREEZE_LAG_NS, < 0 = never. */
    int64_t freeze_lag_ns;
    /* ... once at least this many steps are past the previous freeze: 0 = the default
     * GP_SUMMARY_FREEZE_STEPS. */
    int freeze_steps;
    /* gp_job_summary_compute of a whole history reads the job's events this many at a time
     * in time order, freezing the labelled past as it goes (freeze_lag_ns behind the
     * newest event read; freeze_steps), so it never holds them all: 0 = the default
     * (GP_SUMMARY_ONESHOT_SLICE_EVENTS for gp_job_summary_compute, GP_SUMMARY_SLICE_EVENTS
     * for an incremental state's first load), < 0 = all at once. The result is the same. */
    int64_t slice_events;
} gp_summary_opts;

#define GP_SUMMARY_SLICE_EVENTS 65536
/* A report's largest job (the demo's train-allreduce: 23,000 events in an hour) is then
 * labelled ~8,000 events at a time instead of whole: its accounting pass 6.6 -> 5.7 MiB
 * for ~1-3% more instructions (docs/benchmarks.md, "Start-up and libraries"). */
#define GP_SUMMARY_ONESHOT_SLICE_EVENTS 8192

#define GP_SUMMARY_FREEZE_LAG_NS (300 * 1000000000LL)
#define GP_SUMMARY_FREEZE_STEPS 256

#define GP_SUMMARY_ROLLUP_MIN_NS (6 * 3600 * 1000000000LL)

int gp_job_summary_compute(gp_store *s, const char *job_id, const gp_summary_opts *o,
                           gp_job_summary *out, char *err, size_t errlen);

/* Incremental accounting of one job, for callers that summarise a running job again and
 * again (the HTTP server): the state keeps the folded past (per-allocation signal sums,
 * energy counters, the merged activity timeline, the job's events) and each update reads
 * only the rows stored since the previous one, then labels time in memory. An update's
 * result equals gp_job_summary_compute on the same store with the same options (up to
 * the order of floating-point additions); gp_job_summary_compute is itself one update of
 * a fresh state. The state reloads itself when the folded past changed (see
 * job_summary.c for the rule). Not thread-safe: one state, one thread at a time. */
typedef struct gp_job_acct gp_job_acct;
gp_job_acct *gp_job_acct_new(const char *job_id, const gp_summary_opts *o); /* NULL: OOM */
/* What a state has read so far: rows decoded and full reloads (for tests and benches);
 * what it holds now: events and bytes; how often it froze its labelled past and how often
 * a frozen past went stale (a full reload followed; counted in reloads too). */
typedef struct gp_job_acct_stats {
    uint64_t sample_rows, event_rows, reloads;
    uint64_t held_events, held_bytes;
    uint64_t freezes, stale_freezes;
    uint64_t slices; /* labellings of a first load read in slices (compute_sliced) */
} gp_job_acct_stats;
gp_job_acct_stats gp_job_acct_get_stats(const gp_job_acct *a);
void gp_job_acct_free(gp_job_acct *a);
/* Whether the state holds a frozen labelled past (and so not the events before it). */
int gp_job_acct_frozen(const gp_job_acct *a);
int gp_job_acct_update(gp_job_acct *a, gp_store *s, gp_job_summary *out, char *err, size_t errlen);
/* The summary over [t0_ns, t1_ns) (as gp_job_summary_compute with those bounds), reusing
 * a's events (folding in only new ones), so n windows read the job's events once, not n
 * times. Reads the window's samples only. A state that froze its past (below) no longer
 * holds the events before it: each window then reads the job's events itself, so a caller
 * with many windows should use a state of its own (gp_job_acct_new, never updated). */
int gp_job_acct_window(gp_job_acct *a, gp_store *s, int64_t t0_ns, int64_t t1_ns,
                       gp_job_summary *out, char *err, size_t errlen);
/* The store's time span: first and last sample or event. */
int gp_store_time_span(gp_store *s, int64_t *t0_ns, int64_t *t1_ns);

#endif
