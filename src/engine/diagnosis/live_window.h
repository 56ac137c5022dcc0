/* live_window.h: a running job's last window diagnosed from the last window's rows
 * (issue 22: the agent's live findings cost grew with the job's age).
 *
 * gp_diagnose_last_window_live gives the window and the findings that
 * gp_diagnose_windows_as_of(s, job, NULL, window_ns, 1, as_of_ns) gives (the same classes,
 * scopes, text and figures), but reads from the store only the rows since the state's
 * frontier: about one window plus a minute and a few sample intervals. The whole-job
 * figures the windowed diagnosis reads (windows.h) are kept in a per-job state, updated
 * from the rows each call reads:
 *   - the span: first allocation (allocations are read whole every call) and last data;
 *   - readiness: the first step end or request (ready_ns), whether the job has steps or
 *     requests (activity_only), the first active sample (first_active_ns);
 *   - the latest SLOs declared in a hello;
 *   - per rank its previous step end and the iteration renumbering after restarts (the
 *     last renumbered iteration and the offset), as gp_step_obs_from_input builds them;
 *   - per device its sample intervals, counted per value at 4 significant digits (the
 *     resolution the engine defines the median interval at, sig_hist.h) and the last
 *     sample, and the job's sample count;
 *   - the steps that shared the GPU (a foreign process row within 2 s), counted, and,
 *     once a window of the job has shared its GPU, the durations of the other steps,
 *     counted per value at 4 significant digits, for the median alone step time
 *     (thr_alone) such a window reads; the first such window reads the job whole to start
 *     keeping them.
 * So the state does not grow with the job's age: a few KiB per job (gp_live_hist_bytes),
 * tens of counts per device for jittered 1 s sampling and ~100 for a step time with 1%
 * jitter, where exact medians kept 16 B a sample and 8 B a step.
 * The state holds the rows up to its frontier, T1 - window - lookback - 60 s (T1: the
 * last data; lookback: 5 median sample intervals + 2 s), so rows stored up to a window and
 * a minute late still count. Each call loads the rows
 * from the frontier to as_of_ns, computes the figures at as_of_ns on a copy of the state,
 * then moves the frontier.
 *
 * Not kept: the whole job's ideal step time, which only the window's deviation fields
 * read (live findings do not show them: w->ideal_step_s and w->deviation are unknown
 * here). A window whose first request arrived before the rows read, an allocation change
 * that reaches back before the frontier, or a sample interval that grew past the lookback
 * falls back to the whole load (gp_diagnose_windows_as_of); gp_live_hist_whole_loads
 * counts those. A row stored later than the frontier's lag, with a time before the
 * frontier, is not seen (the whole load would see it). */
#ifndef GP_ENGINE_LIVE_WINDOW_H
#define GP_ENGINE_LIVE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "engine/diagnosis/windows.h"

struct gp_store;
typedef struct gp_live_hist gp_live_hist;

/* Diagnoses the last window of job_id as of as_of_ns (> 0) into *out (malloc'ed, *n 0 or
 * 1, as gp_diagnose_windows_as_of with last_only). *h is the job's state: NULL the first
 * time (created here, a whole load), kept by the caller between calls, freed with
 * gp_live_hist_free. as_of_ns must not go back between calls with one state.
 * (*out)[0].rows_read: the rows this call read. Returns 0, or -1 with err filled (the
 * state is then reset: the next call reloads the job whole). */
int gp_diagnose_last_window_live(struct gp_store *s, const char *job_id, int64_t window_ns,
                                 int64_t as_of_ns, gp_live_hist **h, gp_diag_window **out,
                                 size_t *n, char *err, size_t errlen);
void gp_live_hist_free(gp_live_hist *h);
/* Calls that read the job whole: the first, and each fallback above. */
uint64_t gp_live_hist_whole_loads(const gp_live_hist *h);
/* Bytes the state holds (the struct and its heap), between calls. */
size_t gp_live_hist_bytes(const gp_live_hist *h);

#endif
