/* ray.h: Ray Data's Dataset.stats() text -> pipeline operators, the bottleneck and pool sizes.
 *
 * Dataset.stats() prints one block per physical operator ("Operator N NAME: T tasks
 * executed, B blocks produced in X s" then "* Remote wall time: ... total", "* Remote cpu
 * time", "* Output num rows[ per block]", "* Output size bytes[ per block]", "* Tasks per
 * node: ...; K nodes used", "* Ray Data throughput: R rows/s") and, when a consumer iterated
 * the dataset, an iterator breakdown ("Total time overall", "... blocked by Ray Data
 * iter_batches"). Durations carry Ray's units (us, ms, s). Lines not understood are counted
 * and each kind remembered once (gp_ray_stats.unknown), never silently dropped.
 *
 * Real outputs differ from the docs (tests/data/ray/): the streaming executor logs the same
 * text behind a log prefix ("2025-10-10 18:57:35,316\tINFO streaming_executor.py:264 --
 * Operator 2 ..."), one block per finished dataset; sub-lines are tab-indented; verbose stats
 * add "* Extra metrics: {...}" (a Python dict, read for backpressure time, queued input blocks,
 * tasks running and CPU/GPU slots), "Runtime Metrics:" and the block transform breakdown.
 *
 * Analysis (docs/ray.md): in a streaming pipeline every operator sees the same rows, so the
 * one with the lowest rows/s owns the run. concurrency = remote wall total / operator wall
 * time (tasks running at once on average); cpu_efficiency = cpu total / wall total (low:
 * waiting on I/O, GPU or the object store); pool sizing for the bottleneck =
 * ceil(concurrency x next-slowest rows/s / its rows/s), the concurrency at which it stops
 * being the bottleneck if it scales linearly. consumer_blocked = share of the consumer's
 * time spent waiting for the next batch.
 *
 * The same struct is filled from the ray_data_* Prometheus metrics (ray_metrics.h): there is
 * no operator wall time, so ROWS/S is the rate at the concurrency seen (see ray_metrics.h).
 *
 * Pure functions over plain structs; no allocation. */
#ifndef GP_INGEST_RAY_H
#define GP_INGEST_RAY_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define GP_RAY_MAX_OPS 32
#define GP_RAY_MAX_UNKNOWN 32 /* distinct kinds of line not understood */

typedef struct gp_ray_op {
    int index;
    char name[160];
    long tasks, blocks;                            /* -1 unknown */
    double exec_s;                                 /* "in X s": the operator's wall time */
    double wall_total_s, cpu_total_s, udf_total_s; /* summed over tasks; -1 unknown */
    double rows, bytes;                            /* output totals; -1 unknown */
    long nodes;
    double rows_per_s; /* Ray's "Ray Data throughput", else rows / exec_s */
    /* only from the ray_data_* metrics (ray_metrics.h); -1 unknown */
    double tasks_running;        /* tasks running at the scrape (the largest over scrapes) */
    double backpressure_s;       /* task_submission_backpressure_time: could not launch tasks */
    double queued_blocks;        /* blocks waiting in its internal input queue */
    double cpu_cores, gpu_cores; /* logical CPUs / GPUs allocated to it */
    /* derived by gp_ray_analyze */
    double concurrency, cpu_efficiency, bytes_per_s;
} gp_ray_op;

typedef struct gp_ray_stats {
    int nops;
    gp_ray_op ops[GP_RAY_MAX_OPS];
    double dataset_rows_per_s;             /* -1 unknown */
    double iter_total_s, iter_blocked_s;   /* consumer side; -1 unknown */
    int nunknown;                          /* lines not understood */
    int nunknown_kinds;                    /* distinct labels among them ("Foo: ..." -> "Foo") */
    char unknown[GP_RAY_MAX_UNKNOWN][96];  /* each kind once, first line of its kind */
    int unknown_lines[GP_RAY_MAX_UNKNOWN]; /* lines of each kind */
    /* A log (Ray prints the stats of every dataset it finishes through its logger when
     * DataContext.enable_auto_log_stats is on) may hold several datasets: only the last is
     * kept, and ndatasets says how many there were. */
    int ndatasets;
    char dataset[64]; /* "dataset_228_0" from "Dataset NAME execution finished"; "" unknown */
    int nlog_other;   /* log lines ("DATE TIME,ms LEVEL file.py:N -- ...") that are not stats */
    /* derived by gp_ray_analyze */
    int bottleneck;            /* op index into ops, -1 none */
    double bottleneck_share;   /* its rows/s relative to the next slowest (< 1) */
    int suggested_concurrency; /* for the bottleneck; -1 unknown */
    double consumer_blocked;   /* ratio; -1 unknown */
    int from_metrics;          /* filled by ray_metrics.c: CONC is tasks running at the scrape */
} gp_ray_stats;

/* Parses stats() text. Returns 0, or -1 with err ("line N: ...") when no operator is found. */
/* An operator with every figure unknown (-1) and the name and index of tag. */
void gp_ray_op_init(gp_ray_op *op, const char *name, int index);
int gp_ray_stats_parse(const char *text, size_t len, gp_ray_stats *out, char *err, size_t errlen);
void gp_ray_analyze(gp_ray_stats *s);
/* verbose: every kind of line not read, once each with its count (else the first only) */
void gp_ray_report_text(const gp_ray_stats *s, FILE *out, int width); /* 0: no limit */
void gp_ray_report_text_v(const gp_ray_stats *s, FILE *out, int width, int verbose);
json_t *gp_ray_report_json(const gp_ray_stats *s);

#endif
