/* ray_metrics.h: a scrape of Ray's Prometheus metrics -> Ray Data pipeline operators (one
 * gp_ray_stats per dataset, the model ray.h's Dataset.stats() reader fills) and Ray Train runs.
 *
 * Ray Data: Ray's _StatsActor (python/ray/data/_internal/stats.py) exports gauges named
 * data_<field> for the fields of OpRuntimeMetrics (.../interfaces/op_runtime_metrics.py) with
 * labels `dataset` and `operator`; Ray's exporter prefixes `ray_`. Per operator we read:
 *   rows      ray_data_output_rows, else ray_data_rows_task_outputs_generated
 *   bytes     ray_data_output_bytes, else ray_data_bytes_task_outputs_generated
 *   tasks     ray_data_num_tasks_finished; blocks ray_data_num_task_outputs_generated
 *   task time ray_data_block_generation_time (seconds of tasks generating blocks, summed)
 *   running   ray_data_num_tasks_running (the largest value over the scrapes in the file)
 *   backpressure ray_data_task_submission_backpressure_time (s it could not launch tasks)
 *   queued    ray_data_obj_store_mem_internal_inqueue_blocks (its input queue, in blocks)
 *   cpus/gpus ray_data_cpu_usage_cores, ray_data_gpu_usage_cores (logical allocation)
 * and per dataset ray_data_iter_total_blocked_seconds / ray_data_iter_user_seconds (the
 * consumer). Values are cumulative since the dataset started; with several scrapes in the
 * file the last value of a series wins. Ray exports no CPU time and no operator wall time.
 *
 * Analysis: the metrics have no operator wall time, so an operator's rate is its rate at the
 * concurrency it was running with: rows/s = rows / task time x tasks running. That is the
 * rows/s of Dataset.stats() when the tasks ran that many at once, and gp_ray_analyze then
 * names the bottleneck (lowest rows/s) and its pool size the same way. An operator with no
 * task time or no running task (finished, or the input buffer) has no rate and is never the
 * bottleneck. Backpressure and queued blocks are shown beside as evidence: the bottleneck's
 * input queue fills and the operators above it wait.
 *
 * Ray Train (v2, ray.train.v2._internal.metrics): ray_train_controller_state (one gauge per
 * state, the current one at 1), ray_train_worker_group_start_total_time_s,
 * ray_train_worker_group_shutdown_total_time_s (per run) and
 * ray_train_report_total_blocked_time_s (per worker: label ray_train_worker_world_rank);
 * runs are told apart by ray_train_run_name. Workers = distinct world ranks. Ray Train exports
 * no step counter: steps stay unknown (null); use `goodput logs` or emitted events for steps.
 *
 * ray_data_* and ray_train_* families not read are listed (gp_ray_metrics.unknown), never
 * dropped silently; other families (ray_node_*, ray_tasks, ...) are not Ray Data's or
 * Train's and are skipped. */
#ifndef GP_INGEST_RAY_METRICS_H
#define GP_INGEST_RAY_METRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "ingest/ray.h"

#define GP_RAY_MAX_DATASETS 16
#define GP_RAY_MAX_RUNS 8
#define GP_RAY_MAX_RANKS 4096
#define GP_RAY_MAX_UNKNOWN_FAMILIES 64

typedef struct gp_ray_train_run {
    char name[128];
    char state[32];          /* the controller state whose gauge is 1; "" unknown */
    double start_total_s;    /* worker group start, cumulative; -1 unknown */
    double shutdown_total_s; /* worker group shutdown, cumulative; -1 unknown */
    int workers;             /* distinct world ranks seen */
    double report_blocked_sum_s, report_blocked_max_s; /* over workers; -1 unknown */
    int report_blocked_max_rank;
    double report_s[GP_RAY_MAX_RANKS]; /* per world rank, last value; -1 not seen */
} gp_ray_train_run;

typedef struct gp_ray_metrics {
    int ndatasets;
    char dataset[GP_RAY_MAX_DATASETS][128];
    gp_ray_stats ds[GP_RAY_MAX_DATASETS];
    int nruns;
    gp_ray_train_run runs[GP_RAY_MAX_RUNS];
    long samples_read; /* ray_data_* / ray_train_* samples used */
    int nunknown;      /* distinct families not read */
    char unknown[GP_RAY_MAX_UNKNOWN_FAMILIES][96];
    int dropped_datasets, dropped_ops, dropped_runs; /* over the limits above */
} gp_ray_metrics;

/* Parses Prometheus text. Returns 0, or -1 with err ("line N: ..." for malformed text, or
 * what was expected when the text has neither ray_data_ nor ray_train_ samples). */
int gp_ray_metrics_parse(const char *text, size_t len, gp_ray_metrics *out, char *err,
                         size_t errlen);
/* Runs gp_ray_analyze on every dataset. */
void gp_ray_metrics_analyze(gp_ray_metrics *m);
void gp_ray_metrics_report_text(const gp_ray_metrics *m, int verbose, FILE *out, int width);
json_t *gp_ray_metrics_report_json(const gp_ray_metrics *m);

#endif
