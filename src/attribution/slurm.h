/* slurm.h: Slurm job lifecycle and GPU allocations, polled from the Slurm commands.
 *
 * Each gp_slurm_poll runs `squeue --json` (all jobs the controller still remembers), and
 * for jobs that ended or left squeue, `sacct --json` plus `sacct -P` text (the text is
 * trusted for exit codes: 22.05's JSON reports 0 for a job that exited 7). It writes jobs
 * (origin slurm: submitted, allocated, ended, state, exit code) and allocations (job x GPU
 * UUID x [start, end)) to the store. GPU indices (squeue's gres_detail "gpu:2(IDX:0-1)",
 * visible only while a job runs) become UUIDs through the index->UUID map the agent's
 * telemetry source gives (gp_slurm_set_gpus). If a dcgm-exporter HPC job-mapping
 * directory is configured (one file per GPU index or UUID, holding job ids, written by
 * contrib/slurm/ prolog scripts), it fills allocations of jobs too short for a poll to
 * see them running.
 *
 * Readiness: a job's first progress event sets it (the store does that); for jobs that
 * send no events, the poll sets it at the first sustained kernel activity on the job's
 * GPUs (gp_attrib_ready_from_samples).
 *
 * Failures of squeue/sacct (missing, timing out, odd JSON) are returned as errors with a
 * sentence; the caller logs it once and keeps going; nothing already stored is lost.
 * No threads; commands run as child processes with a timeout. */
#ifndef GP_ATTRIBUTION_SLURM_H
#define GP_ATTRIBUTION_SLURM_H

#include <stddef.h>
#include <stdint.h>

#include "model/device.h"
#include "model/job.h"
#include "model/sample.h"
#include "store/store.h"

#define GP_SLURM_MAX_GPUS 64

typedef struct gp_slurm_job {
    gp_job job;     /* id, name, user, origin, times, exit_state, exit_code */
    char state[24]; /* Slurm's word: PENDING, RUNNING, COMPLETED, FAILED, ... */
    char nodes[128];
    int n_gpus; /* GPUs allocated (requested while pending); -1 unknown */
    int gpu_idx[GP_SLURM_MAX_GPUS];
    int n_idx; /* indices known (only while running) */
} gp_slurm_job;

/* Parsers (pure). Arrays are malloc'd; the caller frees *out. Return 0 or -1 with err. */
int gp_slurm_parse_squeue(const char *json, size_t len, gp_slurm_job **out, size_t *n, char *err,
                          size_t errlen);
int gp_slurm_parse_sacct(const char *json, size_t len, gp_slurm_job **out, size_t *n, char *err,
                         size_t errlen);
/* `sacct -P -n -X -o JobIDRaw,State,ExitCode`: updates state, exit_state and exit_code of
 * the matching jobs. Returns how many lines matched. */
int gp_slurm_apply_sacct_text(const char *text, size_t len, gp_slurm_job *jobs, size_t n);
/* "gpu:2(IDX:0-1)", "gpu:a100:3(IDX:0,2-3)", "gpu(IDX:N/A)": fills idx; returns the count,
 * or -1 when the text is not a gres detail. */
int gp_slurm_parse_gres_idx(const char *s, int *idx, int cap);
/* Slurm state word -> our exit_state ("completed", "failed", "cancelled", "timeout",
 * "node_fail", "out_of_memory", "preempted", "boot_fail", "deadline"); "" while live. */
const char *gp_slurm_exit_state(const char *slurm_state);
int gp_slurm_state_is_live(const char *slurm_state); /* pending/running/completing/... */

/* Readiness from telemetry: the start of the first run of samples, all with gpu_util (or
 * sm_active) >= threshold, spanning at least sustain_ns, at or after from_ns. Samples are
 * ordered by ts. Returns the ts of the first sample of that run, or -1. */
int64_t gp_attrib_ready_from_samples(const gp_sample *s, size_t n, int64_t from_ns,
                                     double threshold, int64_t sustain_ns);

typedef struct gp_slurm_opts {
    const char *squeue;       /* executable; NULL = "squeue" */
    const char *sacct;        /* executable; NULL = "sacct"; "" = do not run sacct */
    const char *node;         /* only this node's GPUs are mapped; NULL = every node */
    const char *jobmap_dir;   /* dcgm-exporter HPC job-mapping directory; NULL = none */
    int timeout_ms;           /* per command; 0 = 10000 */
    double ready_util;        /* 0 = 0.05 */
    int64_t ready_sustain_ns; /* 0 = 30 s */
} gp_slurm_opts;

typedef struct gp_slurm_stats {
    uint64_t polls, squeue_failures, sacct_failures, jobs_seen, allocs_written, jobmap_allocs;
    char last_error[512];
} gp_slurm_stats;

typedef struct gp_slurm gp_slurm;

int gp_slurm_open(const gp_slurm_opts *o, gp_slurm **out, char *err, size_t errlen);
/* The map the telemetry source gives: device index (as Slurm and CUDA count them on this
 * node) -> UUID. Replaces the previous map. */
int gp_slurm_set_gpus(gp_slurm *s, const gp_device *devs, size_t n);
/* Polls once and writes what changed to the store in one transaction (gp_store_begin /
 * commit). Returns 0, or -1 with err when a command failed (jobs already known stay as
 * they are; the next poll retries). */
int gp_slurm_poll(gp_slurm *s, gp_store *st, int64_t now_ns, char *err, size_t errlen);
/* Jobs being followed that have not ended (for the agent's "wait until done" loops). */
size_t gp_slurm_live_jobs(const gp_slurm *s);
const gp_slurm_stats *gp_slurm_get_stats(const gp_slurm *s);
void gp_slurm_close(gp_slurm *s);

/* Runs argv with a timeout, capturing stdout (malloc'd, NUL-terminated, caller frees).
 * Returns the exit status (>= 0), or -1 with err (not found, timeout, signal). */
int gp_attrib_run_capture(char *const argv[], int timeout_ms, char **out, size_t *outlen, char *err,
                          size_t errlen);

#endif
