/* sim_summary.h: `goodput sim --summary`: the simulator's ground truth per job, as a table
 * that fits 100 columns or as one JSON document (the reference the accuracy tests compare
 * `goodput report` with).
 *
 * The simulator's truth (gp_sim_truth) counts requests but does not judge them; which
 * requests were good is decided here from the request lines the simulator emits, against
 * the SLOs the job declared in its hello, with the engine's own rule (gp_request_good), so
 * good_requests means what `goodput report` means by it. Feed every event line the
 * simulator drains to gp_sim_summary_line before printing.
 *
 * JSON (one document): {"start_ns", "end_ns", "jobs": [{"id", "kind", "n_gpus", "queue_s",
 * "allocated_gpu_s", "goodput" (productive / allocated; null when nothing was allocated),
 * "buckets_gpu_s": {the nine gp_bucket names}, "checkpoint_restore_gpu_s" (the part of
 * checkpoint spent restoring after a failure), "ready_s" (first progress after the start;
 * null: never), "steps", "steps_redone", "restarts", "requests", "good_requests",
 * "tokens", "good_tokens"}]}. The buckets partition allocated_gpu_s. */
#ifndef GP_CLI_SIM_SUMMARY_H
#define GP_CLI_SIM_SUMMARY_H

#include <stddef.h>
#include <stdio.h>

#include "sim/sim.h"

typedef struct gp_sim_summary gp_sim_summary;

/* NULL when out of memory. */
gp_sim_summary *gp_sim_summary_new(const gp_sim *sim);
void gp_sim_summary_free(gp_sim_summary *s);
/* One event line as the simulator emits it; lines that are not hello or request are
 * ignored. */
void gp_sim_summary_line(gp_sim_summary *s, const char *line, size_t len);
/* Two tables (jobs, then badput by bucket in % of allocated), each line prefixed with
 * `pre` and at most 100 columns including it. */
void gp_sim_summary_text(const gp_sim_summary *s, const gp_sim *sim, const char *pre, FILE *f,
                         int width); /* width 0: no limit (--wide) */
/* 0, or -1 when out of memory or the write failed. */
int gp_sim_summary_json(const gp_sim_summary *s, const gp_sim *sim, FILE *f);

#endif
