/* prom_map.h: what a Prometheus holds, mapped into goodput's store, so the report engine
 * (buckets, findings, cost) runs on it unchanged.
 *
 *   GPU telemetry  dcgm-exporter DCGM_FI_* (utilization, profiling, power, energy, memory,
 *                  clocks, temperature, XID, clocks-event reasons) or nvidia_gpu_exporter
 *                  nvidia_smi_*: one gp_sample per GPU UUID per step, each field the mean
 *                  (or last value, for counters and masks) of the raw samples in the step
 *                  (t - step, t].
 *   owners         the GPU series' pod/namespace labels (job "namespace/pod", origin k8s) or
 *                  hpc_job (origin slurm); runs of consecutive steps a GPU shows an owner
 *                  become allocations [first - step, last). GPUs with no owner label are
 *                  accounted to "unattributed/<Hostname>".
 *   lifecycle      kube-state-metrics: kube_pod_created (submitted), kube_pod_start_time,
 *                  kube_pod_container_status_ready, kube_pod_status_phase{phase="Pending"},
 *                  kube_pod_container_resource_requests / _limits (nvidia_com_gpu),
 *                  kube_pod_info (created_by_name as the job name).
 *   outcomes       vLLM, SGLang, TGI: per step with requests in flight or finished, one
 *                  aggregate request event [t - step, t] carrying the step's prompt and
 *                  generated tokens (Prometheus keeps counts, not single requests), and one
 *                  scrape window with request and token rates (ingest/scrape_store.h).
 *
 * The range is read in chunks of steps sized so that one chunk's grid (GPUs x steps) and
 * one query's answer stay within a fixed budget, whatever the range; a writer thread stores
 * one chunk's samples while the next is read (two grids at most). A family that is
 * missing degrades the report and is said once in r->notes; nothing missing is an error
 * except that no GPU telemetry at all is (there is nothing to account).
 *
 * Errors: -1 (transport, server, store; err names it), -3 for bad input (a GPU UUID with
 * conflicting Hostname or modelName labels: two exporters claim one GPU), -4 when a pruned
 * read (prune_raw) must be done again unpruned (a job pruned shares a GPU). On error the
 * caller must not present a report: what was stored is incomplete. */
#ifndef GP_ANALYZE_PROM_MAP_H
#define GP_ANALYZE_PROM_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/promql_client.h"
#include "store/store.h"

#define GP_PROM_MAX_NOTES 12
#define GP_PROM_GRID_BYTES (100000 * sizeof(gp_sample)) /* one chunk's grid, ~28.8 MB */

typedef struct gp_prom_map_opts {
    int64_t t0_s, t1_s, step_s;
    const char *selector; /* "{...}" added to every query; NULL or "" none */
    size_t cell_budget;   /* GPU x step cells per chunk; 0 = as many as fit in
                           * GP_PROM_GRID_BYTES (a cell is 8 bytes plus 8 per field of
                           * the families present: 80 bytes for dcgm-exporter's default 9) */
    void (*progress)(void *ctx, double done);
    void *progress_ctx;
    int no_writer_thread; /* store each chunk before reading the next (default: a writer
                           * thread stores chunk k while chunk k + 1 is read; same rows) */
    /* Store only the raw sample rows the text and JSON reports read (for a temporary store
     * those reports alone read): every sample is rolled up, but inside an allocation of
     * over 6 h of a job alone on its GPUs the raw rows between its first 6 h 5 min and its
     * last 65 min are dropped, as the report reads such a job from the 1-minute rollups
     * and raw rows only near its edges (prom_map.c raw_fate). A kept store (--db, the HTML
     * page, goodput serve) keeps every raw row: their readers may read any. When a job
     * whose rows were dropped turns out to share a GPU, gp_prom_map_run returns -4: read
     * the range again, unpruned, into a new store. */
    int prune_raw;
} gp_prom_map_opts;

typedef struct gp_prom_map_result {
    size_t devices, jobs, samples, allocations, request_windows, chunks;
    char gpu_source[32]; /* "dcgm-exporter", "nvidia_gpu_exporter" */
    int kube_state, serving;
    int raw_samples; /* GPU families read as raw samples (one a step), not per-step functions */
    char notes[GP_PROM_MAX_NOTES][240];
    int n_notes;
    double store_cpu_s; /* CPU seconds writing rows to the store (for the benchmark) */
    size_t raw_dropped; /* raw sample rows only rolled up (prune_raw) */
} gp_prom_map_result;

int gp_prom_map_run(gp_prom_client *c, const gp_prom_map_opts *o, gp_store *s,
                    gp_prom_map_result *r, char *err, size_t errlen);

#endif
