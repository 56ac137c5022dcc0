/* classify.h: turns a job's features into findings (model/finding.h), each with scope,
 * time range, the badput it explains (GPU-seconds by bucket) and, apart from it, the
 * headroom a fix would recover from productive time with its counterfactual, costs of
 * each at the job's price, evidence (metric = value vs threshold, with its source),
 * confidence and a concrete recommendation; ranked by badput explained, then headroom.
 * Every threshold comes from engine/diagnosis/thresholds.h; docs/findings.md explains each rule.
 * The badput claims are clipped to the job's buckets by gp_diagnose_job / _all, which
 * know the job's accounting (engine/diagnosis/finding_budget.h).
 *
 * gp_classify is pure (features and per-rank step observations in, findings out).
 * gp_diagnose_job / gp_diagnose_all read the store, classify, and write the findings back
 * with gp_store_replace_findings. Returned arrays are malloc'ed; the caller frees them. */
#ifndef GP_ENGINE_CLASSIFY_H
#define GP_ENGINE_CLASSIFY_H

#include <stddef.h>

#include "engine/diagnosis/features.h"
#include "engine/diagnosis/straggler.h"
#include "model/finding.h"

struct gp_store;

typedef struct gp_diag_opts {
    double price_per_gpu_h; /* 0 = the default table (engine/accounting/cost.h) */
    gp_slo slo;             /* inference SLOs; 0 = not set */
    double scale_bound;     /* 0 = GP_TH_SCALE_EFFICIENCY */
    int no_write;           /* 1: do not write findings to the store */
    /* The accounting the caller already computed (gp_job_summary_compute with every
     * option at its default but slo = acct_slo), one per job, any order; may be NULL. A
     * job's findings are clipped to its entry instead of computing it again when
     * acct_slo equals slo above (`goodput report` shows the same accounting). */
    const struct gp_job_summary *acct;
    size_t n_acct;
    gp_slo acct_slo;
    /* Stored results of ended jobs (engine/results/job_results.h): when set and it answers
     * 1 for a job, the job's findings (at most cap), features, accounting and price are
     * taken from it instead of computed; they are what computing gives. NULL: compute. */
    int (*stored)(void *ctx, const char *job_id, gp_finding *out, size_t cap, size_t *n,
                  gp_features *feat, gp_goodput *acct, double *price);
    void *stored_ctx;
    /* gp_diagnose_all with no_write: > 1 diagnoses the jobs on that many threads, each
     * with its own read-only connection (store/read_pool.h); the findings are the same,
     * in the same order. 0 or 1: one thread. */
    int threads;
} gp_diag_opts;

/* The most findings one job gets. */
#define GP_DIAG_MAX_PER_JOB 32

/* Pure classification of one job. obs: per-rank step times (may be NULL). Writes at most
 * cap findings to out, ranked by badput then headroom (then confidence); returns how many.
 * Without the job's accounting, badput claims are not clipped and headroom is a share of
 * productive time estimated from the features. */
size_t gp_classify(const char *job_id, const gp_features *f, const gp_worker_obs *obs, size_t n_obs,
                   double price_per_gpu_h, gp_finding *out, size_t cap);

/* Per-rank step observations from step events (step time = ts - start, or the gap since
 * the rank's previous step). *out malloc'ed; returns count or -1. */
int gp_step_obs_from_events(const gp_event *ev, size_t n, gp_worker_obs **out);
/* The same over every step of a job input (its events and its compact steps). */
int gp_step_obs_from_input(const gp_job_input *in, gp_worker_obs **out);

/* Sorts findings: minor ones after the rest; then by badput explained (unknown last),
 * headroom, confidence. */
void gp_findings_rank(gp_finding *f, size_t n);

/* Reads the job from the store, diagnoses it, stores and returns its findings. */
int gp_diagnose_job(struct gp_store *s, const char *job_id, const gp_diag_opts *o, gp_finding **out,
                    size_t *n, char *err, size_t errlen);
/* One job's findings (out: room for GP_DIAG_MAX_PER_JOB), features, accounting and price,
 * as gp_diagnose_job and gp_diagnose_all compute them for that job (what stored results
 * keep, engine/results/job_results.h); writes the findings unless o->no_write. */
int gp_diagnose_one(struct gp_store *s, const char *job_id, const gp_diag_opts *o, gp_finding *out,
                    size_t *n, gp_features *feat, gp_goodput *acct, double *price, char *err,
                    size_t errlen);
/* Every job, plus cross-job findings (scale_inefficient, scheduling_gap). */
int gp_diagnose_all(struct gp_store *s, const gp_diag_opts *o, gp_finding **out, size_t *n,
                    char *err, size_t errlen);

/* Loads a job's input from the store (allocs, devices, samples, procs, events); free with
 * gp_job_input_free. Samples come as compact series, one per device (gp_job_input.series,
 * read row by row: never held as gp_samples), steps as compact records
 * (gp_job_input.steps); the _ex and _range forms give gp_samples. Process rows
 * only those of other jobs (the interference the features look for); a device the job
 * held for GP_SUMMARY_ROLLUP_MIN_NS or more (6 h) is read from its 1-minute rollups, as
 * the accounting does (diagnose.c says what that changes; GOODPUT_DIAG_RAW=1 turns it
 * off). The _ex form with raw = 1 always reads raw samples (windows of minutes). */
int gp_job_input_load(struct gp_store *s, const char *job_id, gp_job_input *in, char *err,
                      size_t errlen);
int gp_job_input_load_ex(struct gp_store *s, const char *job_id, int raw, gp_job_input *in,
                         char *err, size_t errlen);
/* The same (raw samples) with only the rows from_ns <= ts <= to_ns: events, steps, marks,
 * samples and process rows; allocations, devices and the job record whole (the agent's
 * live findings read the last window's rows, live_window.h). */
int gp_job_input_load_range(struct gp_store *s, const char *job_id, int raw, int64_t from_ns,
                            int64_t to_ns, gp_job_input *in, char *err, size_t errlen);
/* gp_job_input_load, with the series of raw rows read only when gp_features_compute has
 * done the event features (features.h, n_deferred): what diagnosing a job from the store
 * uses. Before reading them it takes the straggler's observations of the steps and
 * releases the steps and marks: after the features, read the observations with
 * gp_job_input_obs. Same features as gp_job_input_load's input (test_diag_input.c). */
int gp_job_input_load_deferred(struct gp_store *s, const char *job_id, gp_job_input *in, char *err,
                               size_t errlen);
/* The straggler's observations of in's steps (gp_step_obs_from_input), also once a deferred
 * input released its steps; *out is the caller's. Count, or -1 on OOM. */
int gp_job_input_obs(gp_job_input *in, gp_worker_obs **out);
/* What a deferred input's streamed series read (features.h series_fill): rows read, how
 * many rows it held at once at most (one device's when the telemetry streams), the
 * devices read whole and the first-activity scans. All 0 for other inputs. */
typedef struct gp_job_input_stream_stats {
    size_t rows_read, rows_held, rows_held_peak, fills, scans;
    size_t folds; /* devices read by series_fold (rows_read counts their rows, never held) */
} gp_job_input_stream_stats;
void gp_job_input_stream_stats_of(const gp_job_input *in, gp_job_input_stream_stats *out);
void gp_job_input_free(gp_job_input *in);
/* Raw samples of the job's devices from from_ns on (a rolled-up input's recent minutes,
 * for windows shorter than the job); *out malloc'ed. Returns 0 or -1. */
int gp_job_input_raw_since(struct gp_store *s, const gp_job_input *in, int64_t from_ns,
                           gp_sample **out, size_t *n);
/* Sets each SLO of *slo that o sets (> 0): command-line SLOs over the declared ones. */
void gp_slo_override(gp_slo *slo, const gp_slo *o);

#endif
