/* sig_hist.h: medians of durations at a stated resolution, from bounded counts (issue 22).
 *
 * Two whole-job medians the diagnosis reads are defined at 4 significant decimal digits:
 * each duration (ns) is rounded to 4 significant digits (gp_sig_round_ns; relative error
 * <= 0.05%, exact for round values such as 1 s, 250 ms or 10 s) before the median is
 * taken:
 *   - a device's median sample interval (features.c's dt_med, which only decides what is
 *     a gap, an interval over 5x it, and the weight of a device's first sample);
 *   - the median alone step time, whose inverse is thr_alone (the job's speed alone that
 *     a window sharing its GPU is compared with, interference ratio 0.8).
 * A resolution of 0.05% cannot move a gap test or an interference verdict except at a
 * boundary within 0.05%, where the telemetry's own timing jitter (ms) already decides.
 * The reason to round: the counts of distinct rounded values stay bounded (jittered 1 s
 * sampling gives tens of values, not one per sample; a step time with 1% jitter, ~100),
 * so the agent's live findings (live_window.h) keep a job's medians in a few KiB for
 * years, and the whole-history pass (features.c) and the live one compute the same
 * number with the same function here.
 *
 * A gp_sig_hist is a multiset of rounded values: counts per value (sorted) and a tail of
 * values added since the last merge. The counts can be borrowed read only (a copy adds to
 * its own tail). */
#ifndef GP_ENGINE_SIG_HIST_H
#define GP_ENGINE_SIG_HIST_H

#include <stddef.h>
#include <stdint.h>

#define GP_SIG_DIGITS 4

/* v_ns rounded half up to GP_SIG_DIGITS significant digits; v_ns <= 0 unchanged. */
int64_t gp_sig_round_ns(int64_t v_ns);

typedef struct gp_sig_bin {
    int64_t v_ns; /* a rounded value */
    uint64_t n;   /* how many times it occurred */
} gp_sig_bin;

typedef struct gp_sig_hist {
    gp_sig_bin *bins; /* sorted by v_ns, distinct */
    size_t nb;
    int borrowed;  /* bins are another hist's: read only, not freed */
    int64_t *tail; /* rounded values added since the last merge, any order */
    size_t nt, tcap;
    uint64_t n; /* values in bins and tail */
} gp_sig_hist;

/* Room for n more values in the tail, allocated once: a whole job's values (a day of 8
 * ranks' steps is ~1 M) without doubling's slack (report's peak RSS). 0, or -1. */
int gp_sig_hist_reserve(gp_sig_hist *h, size_t n);
/* Adds v_ns rounded (to the tail). 0, or -1 out of memory. */
int gp_sig_hist_add(gp_sig_hist *h, int64_t v_ns);
/* Moves the tail into the counts (not on a borrowed hist). 0, or -1 out of memory. */
int gp_sig_hist_merge(gp_sig_hist *h);
/* The k-th smallest (k < n) of the multiset; reorders the tail. */
int64_t gp_sig_hist_kth(gp_sig_hist *h, uint64_t k);
/* The median as gp_quantile(v, n, 0.5) takes it (the mean of the two middle values when n
 * is even), in seconds; -1 when empty. Reorders the tail. */
double gp_sig_hist_median_s(gp_sig_hist *h);
/* A view of h that shares its counts read only and adds to a tail of its own. */
gp_sig_hist gp_sig_hist_borrow(const gp_sig_hist *h);
/* Heap bytes h holds (counts unless borrowed, and its tail's capacity). */
size_t gp_sig_hist_bytes(const gp_sig_hist *h);
void gp_sig_hist_free(gp_sig_hist *h);

#endif
