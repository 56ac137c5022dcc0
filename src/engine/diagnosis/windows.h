/* windows.h: diagnosis over rolling windows of a job's data, and step-time deviation over
 * time (issue 6: "rolling windows (1 m, 5 m, 1 h) and whole-job totals"; "step-time
 * deviation over time").
 *
 * A job's span runs from its first allocation to its last data (features.h). Windows of
 * window_ns tile that span from its start; the last one may be shorter. "The last window"
 * is [end - window_ns, end), clipped to the span. Each window is diagnosed on its own
 * (features, per-rank steps and findings of that window only) and compared with the whole
 * job: its median step time against the whole job's ideal step time. A window also reads
 * these whole-job figures, so diagnosing it loads the whole job (rows_read): the span
 * (first allocation, last data); readiness (ready_ns, first_active_ns, activity_only) for
 * gp_features_clip_ready; the median alone step time (thr_alone) when the window shares
 * its GPU; the latest declared SLOs (hello); per rank the previous step and the iteration
 * renumbering after restarts (gp_step_obs_from_input); per device the median sample
 * interval (gap detection) and the sample before the window.
 *
 * Windowed findings are never written to the store (the store keeps whole-job findings).
 * Returned arrays are malloc'ed; free them with gp_diag_windows_free / free. */
#ifndef GP_ENGINE_WINDOWS_H
#define GP_ENGINE_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/diagnosis/classify.h"

struct gp_store;

typedef struct gp_diag_window {
    char job_id[64];
    int64_t t0_ns, t1_ns;
    gp_finding *findings; /* ranked by wasted cost */
    size_t n;
    int64_t steps;        /* step events in the window (all ranks) */
    double median_step_s; /* robust median step time in the window; < 0 unknown */
    double ideal_step_s;  /* the whole job's; < 0 unknown */
    double deviation;     /* median_step_s / ideal_step_s - 1; unknown when either is */
    int deviation_known;
    double gpu_util_mean; /* < 0 unknown */
    uint64_t rows_read;   /* the job's rows loaded from the store to diagnose it (events,
                           * steps, marks, samples, process rows; before any as-of clip):
                           * the cost of a pass, which grows with the job's age */
} gp_diag_window;

/* Diagnoses job_id over windows of window_ns (> 0): every window (last_only = 0) or only
 * the last one. Returns 0 with *out, *n set, or -1 with err filled. */
int gp_diagnose_windows(struct gp_store *s, const char *job_id, const gp_diag_opts *o,
                        int64_t window_ns, int last_only, gp_diag_window **out, size_t *n,
                        char *err, size_t errlen);
/* The same as the store stood at as_of_ns (> 0; 0 = everything stored): only samples,
 * process rows and events with a time <= as_of_ns, allocations begun by then (one that
 * ended later counts as still held). The agent's live findings are this at its clock;
 * `goodput diagnose --window W --as-of T` repeats them from the store afterwards. An
 * allocation the agent closed later with an end before as_of_ns (a process seen gone
 * after the fact) is the one thing that may differ. */
int gp_diagnose_windows_as_of(struct gp_store *s, const char *job_id, const gp_diag_opts *o,
                              int64_t window_ns, int last_only, int64_t as_of_ns,
                              gp_diag_window **out, size_t *n, char *err, size_t errlen);
void gp_diag_windows_free(gp_diag_window *w, size_t n);

/* What gp_diagnose_windows_as_of keeps of a loaded input: samples, process rows and events
 * up to as_of_ns, the allocations begun by then (one that ends later still held). */
void gp_job_input_clip_as_of(gp_job_input *in, int64_t as_of_ns);
/* One window [t0_ns, t1_ns) of a loaded input, judged against the whole job's figures in
 * *whole (t0_ns, t1_ns, ready_ns, first_active_ns, activity_only, ideal_step_s,
 * thr_alone), with the job's step observations obs (renumbered over the whole job; those
 * in the window are used), at the default price. *needs_alone (may be NULL) is set when
 * the window shares its GPU so that whole->thr_alone is read (live_window.c computes that
 * figure only then). w->rows_read is left 0. Returns 0, or -1 with err. */
int gp_diagnose_window_input(gp_job_input *in, const gp_features *whole, const gp_worker_obs *obs,
                             size_t nobs, int64_t t0_ns, int64_t t1_ns, gp_diag_window *w,
                             int *needs_alone, char *err, size_t errlen);

/* One finding per episode (issue 19 item 6): consecutive windows (of one job, in time
 * order) whose findings have the same class on the same scope merge into one finding.
 * Start: the first window's finding's start; end: the last one's end. Totals: badput by
 * bucket, wasted GPU-seconds and cost, headroom GPU-seconds and cost are summed over the
 * windows (unknown in any window: unknown in the total); headroom_frac is the total
 * headroom over the productive time it was a share of. Text and evidence are the worst
 * window's (most badput, then headroom), the summary prefixed with the episode's length;
 * confidence the highest; minor only when every window's finding was minor. A window
 * without the finding ends its episode. Works for every class, stragglers included.
 * Returns the number of episodes, ranked as gp_findings_rank does, *out malloc'ed (NULL
 * when none), or -1 when out of memory. */
int gp_diag_windows_episodes(const gp_diag_window *w, size_t nw, gp_finding **out);

/* Step-time deviation over time, from the job's step events alone (any rank): for each
 * window of window_ns tiling [t0_ns, t1_ns), the median step time and its deviation from
 * ideal_s (median / ideal - 1; ideal_s <= 0: unknown). Windows without steps have
 * steps = 0 and median < 0. Returns the number of windows, *out malloc'ed, or -1. */
typedef struct gp_step_dev {
    int64_t t0_ns, t1_ns;
    int64_t steps;
    double median_step_s; /* < 0 unknown */
    double deviation;     /* valid when median_step_s > 0 and ideal_s > 0 */
} gp_step_dev;
int gp_step_deviation(const gp_event *ev, size_t n, int64_t t0_ns, int64_t t1_ns, int64_t window_ns,
                      double ideal_s, gp_step_dev **out);
/* The same over every step of a job input (its events and its compact steps). */
int gp_step_deviation_input(const gp_job_input *in, int64_t t0_ns, int64_t t1_ns, int64_t window_ns,
                            double ideal_s, gp_step_dev **out);

#endif
