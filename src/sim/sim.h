/* sim.h: the simulated GPU node, usable without the agent.
 *
 * The simulator turns a scenario (sim/scenario.h) into what real hardware and real
 * workloads would report: per-GPU telemetry computed from the workload's physics (data
 * loading, copies, compute, all-reduce, checkpoints, restarts, prefill/decode), per-process
 * rows, and workload events as protocol lines (docs/protocol.md). Signals are never
 * derived from labels: a data-starved trainer shows gaps in gpu_util because its steps
 * really wait for data in the model.
 *
 * Usage without the agent:
 *     gp_sim *sim;
 *     if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) ...   // copies sc
 *     for (int64_t t = gp_sim_start_ns(sim) + 1e9; t <= gp_sim_end_ns(sim); t += 1e9) {
 *         gp_sim_sample(sim, t, samples, cap, &n);              // one row per GPU
 *         gp_sim_drain_events(sim, t, my_sink, ctx);            // lines with ts <= t
 *     }
 *     gp_sim_job_truth(sim, "train-1", &truth);                 // ground-truth buckets
 *     gp_sim_close(sim);
 *
 * Time: now_ns passed to sample/drain must not decrease. Deterministic: the same scenario
 * (seed included) sampled at the same times gives identical output. Generation is lazy
 * (the model runs ahead of now by at most one step or iteration) and consumed timeline is
 * freed at each sample, so memory stays small when the caller samples regularly.
 * Not thread-safe; one gp_sim per thread. */
#ifndef GP_SOURCES_SIM_H
#define GP_SOURCES_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "model/device.h"
#include "model/sample.h"
#include "sim/scenario.h"
#include "sources/source.h"

typedef struct gp_sim gp_sim;

/* start_ns: clock origin (ns since the Unix epoch). 0 = the scenario's `start` (now or a
 * fixed time), else GP_SIM_EPOCH_NS. The scenario is validated and copied. Trace files are
 * loaded here; errors name the scenario file:line. */
int gp_sim_open(const gp_scenario *sc, int64_t start_ns, gp_sim **out, char *err, size_t errlen);
void gp_sim_close(gp_sim *s);

int64_t gp_sim_start_ns(const gp_sim *s);
int64_t gp_sim_end_ns(const gp_sim *s); /* start + duration */
int64_t gp_sim_now_ns(const gp_sim *s); /* last sampled time (start before the first) */
size_t gp_sim_n_devices(const gp_sim *s);
/* Fills up to cap devices (UUIDs stable for a node name). */
void gp_sim_devices(const gp_sim *s, gp_device *out, size_t cap, size_t *n);

/* One sample per GPU for the interval (previous now, now_ns]. 0, or -1 if now_ns is
 * before the previous call. */
int gp_sim_sample(gp_sim *s, int64_t now_ns, gp_sample *out, size_t cap, size_t *n);
/* Per-process rows for the interval of the last sample (one per job process per GPU). */
int gp_sim_processes(gp_sim *s, gp_proc_sample *out, size_t cap, size_t *n);
/* Shows the node to an agent the way a real node does, and nothing more: each live job
 * process as ROOT/proc/PID/{stat,status,cmdline,environ,cgroup} (start time, user,
 * command, GOODPUT_JOB=<id> as an instrumented workload sets it, a Slurm step or user
 * session cgroup), ROOT/proc/stat (boot time), and for jobs a scheduler holds
 * (`scheduler = slurm`, the default) the dcgm-exporter job-mapping files ROOT/jobmap/<GPU
 * index> listing the job ids on that GPU, with the file's mtime set to the (simulated)
 * time of the last change, as a prolog/epilog would write them. Updated at every sample.
 * root NULL: a fresh directory under $TMPDIR, removed by gp_sim_close. */
int gp_sim_expose(gp_sim *s, const char *root, char *err, size_t errlen);
/* The exposed proc root and job-mapping directory (NULL before gp_sim_expose). */
void gp_sim_node_paths(const gp_sim *s, const char **proc_root, const char **jobmap_dir);
/* Calls sink for every event line with ts <= now_ns not yet drained, in time order (one
 * line each, no newline). Returns the number of lines. */
int gp_sim_drain_events(gp_sim *s, int64_t now_ns, gp_line_sink sink, void *ctx);

/* The stable UUID the simulator gives GPU `index` of node `node`. */
void gp_sim_uuid(const char *node, int index, char *buf, size_t cap);

/* Ground truth of one job, in seconds of wall time (multiply by gpus for GPU-seconds),
 * accumulated as the model has run so far (complete once sampled to gp_sim_end_ns or the
 * job's end). The buckets partition the allocated time [start, end):
 *   allocated = not_ready + init + data_wait + checkpoint + restore + recovery + wasted +
 *               productive + idle + other
 * productive: kept steps' time outside blocking phases (training), time with kernels
 *   running x good tokens / tokens (inference; the SLO-missing share is other), burst
 *   time (idle). wasted: time of steps later redone after a
 *   restart plus the step cut by the failure. recovery: dead time after a failure.
 *   other: a step cut by the job's end, an inference job's SLO-missing share of serving
 *   time. Sub-millisecond data waits are productive. */
typedef struct gp_sim_truth {
    char job_id[GP_JOB_ID_MAX];
    gp_sjob_kind kind;
    int n_gpus;
    double queue_s; /* start - submit (not part of allocated) */
    double allocated_s, not_ready_s, init_s, data_wait_s, checkpoint_s, restore_s, recovery_s,
        wasted_s, productive_s, idle_s, other_s;
    int64_t steps_done, steps_redone, restarts;
    int64_t requests_done, tokens_out;
    int64_t good_requests, good_tokens_out; /* meeting every SLO the service declares */
    double ready_s; /* first progress, relative to the simulation start; < 0 never */
} gp_sim_truth;

/* 0, or -1 when no job has that id. */
int gp_sim_job_truth(const gp_sim *s, const char *job_id, gp_sim_truth *out);
int gp_sim_n_jobs(const gp_sim *s);
/* Truth by index 0..n_jobs-1. */
void gp_sim_job_truth_at(const gp_sim *s, int i, gp_sim_truth *out);

#endif
