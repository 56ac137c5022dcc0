/* straggler.h: finds workers of one job that are persistently slower than their peers.
 *
 * Method: the iterations are cut into rolling windows of `window` consecutive observed
 * iterations (hop = window/2). In each window every worker's median step time is compared
 * with its peers by a robust z-score, z = (m_w - median) / (1.4826 * MAD), with the MAD
 * floored at 2% of the median so near-identical workers do not make noise look like an
 * outlier. A window flags a worker when z >= GP_TH_STRAGGLER_Z and m_w / median >=
 * GP_TH_STRAGGLER_RATIO; overlapping or adjacent flagged windows merge into one episode,
 * kept when it spans at least GP_TH_STRAGGLER_WINDOWS flagged windows. An open episode
 * stays open (hysteresis) through windows where the worker is still at least half as far
 * above the thresholds (ratio >= 1 + (ratio_th - 1) / 2, z >= z_th / 2): a worker slowed by
 * about the threshold for the whole run, whose windows cross it back and forth with noise,
 * is one episode from its first to its last slow window, not one per crossing. Workers that differ
 * slightly but steadily (a few percent) never pass the ratio test.
 *
 * Pure: arrays in, a malloc'ed array of episodes out (caller frees). */
#ifndef GP_ENGINE_STRAGGLER_H
#define GP_ENGINE_STRAGGLER_H

#include <stddef.h>
#include <stdint.h>

typedef struct gp_worker_obs {
    int worker;
    int64_t iter;  /* iteration (step) number */
    double value;  /* step time (any unit; ratios are unit-free) */
    int64_t ts_ns; /* when the step ended; 0 if unknown */
} gp_worker_obs;

typedef struct gp_straggler {
    int worker;
    int64_t iter0, iter1; /* first and last iteration of the episode */
    int64_t t0_ns, t1_ns; /* their times when known, else 0 */
    int windows;          /* flagged windows merged */
    double ratio;         /* worst window: worker median / peer median */
    double z;             /* worst window's robust z-score */
    double excess;        /* sum over the episode of (worker - peer median) per iteration,
                             in value units x observed iterations */
    double peer_median;   /* peer median step time in the worst window */
} gp_straggler;

typedef struct gp_straggler_opts {
    int window;      /* observed iterations per window; 0 = default 5 */
    double z, ratio; /* 0 = from the threshold table */
    int min_windows; /* 0 = from the threshold table */
} gp_straggler_opts;

/* Returns the number of episodes (>= 0), *out malloc'ed (NULL when none), or -1 on
 * allocation failure. Needs at least 3 workers; fewer gives 0. */
int gp_straggler_detect(const gp_worker_obs *obs, size_t n, const gp_straggler_opts *opts,
                        gp_straggler **out);

/* Reads an Alibaba PAI mini-batch CSV (",worker,gpu,time,batch_time_norm"); returns the
 * number of observations or -1 with err filled. *out malloc'ed. */
int gp_straggler_read_pai_csv(const char *path, gp_worker_obs **out, char *err, size_t errlen);

#endif
