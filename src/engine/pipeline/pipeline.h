/* pipeline.h: multi-stage CPU+GPU pipelines: which stage owns the run, which stage starves
 * which, how to size the worker pools, and what new pool sizes would deliver.
 *
 * Input: a job's GP_EV_STAGE events (docs/protocol.md). Two forms share the kind:
 *  - an item event: stage S processed item I on worker W; enqueue_ns (the item entered S's
 *    input queue), start_ns (a worker took it), ts_ns (it finished);
 *  - a declaration (step >= 0, see model/event.h): pool size (step), resource (edge:
 *    GP_STAGE_CPU/GPU), upstream stages (worker, comma-separated), input queue bound (bytes).
 *
 * Definitions (docs/pipelines.md has the long form). The window is [first start, last end)
 * over all stages, T seconds. Per stage with W workers:
 *   busy = sum of (end - start); utilization = busy / (W x T);
 *   queue(t) = items with enqueue <= t < start; busy(t) = items with start <= t < end;
 *   starved = time with queue(t) = 0 and busy(t) < W (workers idle for lack of input), as
 *             wall seconds and as idle worker-seconds;
 *   blocked = sum over items of (downstream enqueue - end) when positive: the worker held a
 *             finished item because the next queue was full (backpressure);
 *   handoff = median time from a worker being free to its start of an item that was
 *             already waiting (per-item cost outside start..end: dequeue, IPC, reporting);
 *   capacity = W / (mean service + handoff), in this stage's items/s; divided by the visit ratio
 *             (items here / items at the sink) it is in end-to-end items/s.
 * The bottleneck is the stage with the lowest end-to-end capacity.
 *
 * The what-if simulator (pipeline_sim.c) treats the stages as a chain in topological order,
 * each with W servers drawing service times from the measured distribution (resampled), a
 * bounded or unbounded FIFO input queue with blocking-after-service, and a source that
 * always has the next item ready. Items are interchangeable, so state is counts only.
 *
 * Memory: gp_pipeline owns the sorted service-time arrays; release with gp_pipeline_free.
 * No I/O here except in pipeline_report.c (writes to the FILE or json_t it is given). */
#ifndef GP_ENGINE_PIPELINE_H
#define GP_ENGINE_PIPELINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/event.h"
#include "model/finding.h"

#define GP_PIPE_MAX_STAGES 32
#define GP_PIPE_MAX_UPSTREAM 8
#define GP_PIPE_SERIES 48 /* points in the queue-length-over-time series */

typedef struct gp_pipe_stage {
    char name[GP_NAME_MAX];
    int resource;    /* GP_STAGE_CPU, GP_STAGE_GPU; 0 undeclared (counted as cpu) */
    int declared;    /* a declaration was seen */
    int workers;     /* declared pool, else distinct workers seen, else peak concurrency */
    int queue_bound; /* declared input queue bound; -1 unbounded or unknown */
    int n_upstream;
    int upstream[GP_PIPE_MAX_UPSTREAM]; /* stage indices */

    size_t n_items;
    double throughput_per_s;
    double svc_mean_s, svc_p50_s, svc_p90_s, svc_p99_s, svc_max_s, svc_cv;
    double busy_s, utilization;
    double idle_worker_s;    /* W x T - busy */
    double starved_worker_s; /* idle worker-seconds while the input queue was empty */
    double starved_s;        /* wall seconds with an idle worker and an empty queue */
    double blocked_s;        /* worker-seconds holding finished items (backpressure) */
    double starved_share;    /* starved_worker_s / idle_worker_s (GPU: idle explained by
                                upstream starvation); 0 when never idle */
    double blocked_share;    /* blocked_s / idle_worker_s, capped at 1 */
    double queue_mean, queue_max;
    double queue_series[GP_PIPE_SERIES]; /* mean queue length per 1/GP_PIPE_SERIES of T */
    double visit_ratio;                  /* items here / items at the sink */
    double handoff_s;          /* median per-item worker time outside start..end (dequeue, IPC)
                                  when work was waiting; see pipeline.c */
    int handoff_borrowed;      /* too few samples: the median of the other stages' handoffs */
    double capacity_per_s;     /* W / (svc_mean_s + handoff_s), this stage's items per second */
    double e2e_capacity_per_s; /* capacity / visit_ratio */

    double *svc_s; /* sorted service times (owned) */
    size_t n_svc;
} gp_pipe_stage;

typedef struct gp_pipeline {
    char job_id[GP_JOB_ID_MAX];
    int n_stages;
    gp_pipe_stage stage[GP_PIPE_MAX_STAGES]; /* in topological order */
    int64_t t0_ns, t1_ns;
    double span_s;
    int sink;          /* index of the last stage */
    int bottleneck;    /* index; -1 when fewer than one stage has service times */
    double bn_margin;  /* second-lowest e2e capacity / the bottleneck's (>= 1) */
    size_t items_done; /* items finished by the sink */
    double e2e_per_s, e2e_per_h;
    double price_gpu_h, price_cpu_h; /* USD per GPU-hour, per CPU-worker-hour */
    double cost_per_h;               /* sum of workers x price */
    double items_per_usd;            /* < 0 unknown (no cost) */
    double gpu_busy_share;           /* GPU stages' busy / (GPU workers x T); < 0 no GPU stage */
} gp_pipeline;

typedef struct gp_pipe_opts {
    double price_gpu_h; /* <= 0: the engine's price table (cost.h) default */
    double price_cpu_h; /* <= 0: GP_PIPE_DEFAULT_CPU_PRICE */
} gp_pipe_opts;

/* About the on-demand price of one vCPU-hour on the large clouds (2025, USD). */
#define GP_PIPE_DEFAULT_CPU_PRICE 0.04

/* Analyses the GP_EV_STAGE events among ev[0..n) (other kinds are skipped). Returns 0, or
 * -1 with err when there are no stage item events or more stages than GP_PIPE_MAX_STAGES. */
int gp_pipeline_analyze(const gp_event *ev, size_t n, const gp_pipe_opts *o, gp_pipeline *out,
                        char *err, size_t errlen);
void gp_pipeline_free(gp_pipeline *p);
int gp_pipeline_find_stage(const gp_pipeline *p, const char *name); /* index or -1 */

/* The pipeline_bottleneck finding: 1 with *f filled when a stage limits the run (its
 * capacity is clearly below the others', or a GPU stage idles for lack of input); else 0. */
int gp_pipeline_finding(const gp_pipeline *p, gp_finding *f);
/* For the classifier (engine/diagnosis/diagnose.c): the same finding from a job's events of any
 * kinds and order; price_gpu_h <= 0 as in gp_pipe_opts. 1 with *f filled, else 0. */
int gp_pipeline_finding_from_events(const gp_event *ev, size_t n, double price_gpu_h,
                                    gp_finding *f);

/* Sizing: the pool sizes that maximise end-to-end capacity with at most cpu_budget CPU
 * workers and gpu_budget GPU workers (a budget <= 0 means: the workers used now), each
 * stage at least one worker: greedily add a worker to the stage with the lowest capacity
 * while its resource has room (optimal for max-min capacity). With GPU stages and no CPU
 * budget, the CPU budget is what it takes to keep the GPU workers busy ("feed the GPUs"). workers_i
 * ~ rate x mean_i x visit_i. scale_first is the current bottleneck, and scale_first_to the pool it
 * needs to stop being the bottleneck (to reach the second-lowest capacity). */
typedef struct gp_pipe_sizing {
    int cpu_budget, gpu_budget;
    int workers[GP_PIPE_MAX_STAGES];
    double rate_per_s; /* min e2e capacity with these workers */
    int limiting;      /* the stage that limits the recommendation */
    int scale_first, scale_first_to;
} gp_pipe_sizing;
void gp_pipeline_size(const gp_pipeline *p, int cpu_budget, int gpu_budget, gp_pipe_sizing *out);

/* ---- discrete-event simulation (pipeline_sim.c) ---- */
typedef struct gp_pipe_sim_cfg {
    int n_stages;
    int workers[GP_PIPE_MAX_STAGES];
    int queue_bound[GP_PIPE_MAX_STAGES];     /* input queue bound; < 0 unbounded; stage 0's is
                                                ignored (the source) */
    const double *svc_s[GP_PIPE_MAX_STAGES]; /* service-time samples to draw from */
    double overhead_s[GP_PIPE_MAX_STAGES];   /* added to every service (worker occupancy) */
    size_t n_svc[GP_PIPE_MAX_STAGES];
    int is_gpu[GP_PIPE_MAX_STAGES];
    size_t n_items;
    uint64_t seed;
} gp_pipe_sim_cfg;

typedef struct gp_pipe_sim_result {
    size_t n_items;
    double makespan_s;
    double throughput_per_s; /* n_items / makespan (fill and drain included) */
    double steady_per_s;     /* completions between 10% and 90% of items / their time */
    double gpu_busy_share;   /* < 0 no GPU stage */
    double utilization[GP_PIPE_MAX_STAGES];
    double blocked_s[GP_PIPE_MAX_STAGES];
    uint64_t n_events;
} gp_pipe_sim_result;

/* Returns 0, or -1 with err for a bad configuration (no stage, a stage without workers or
 * service samples). Deterministic for a given seed. */
int gp_pipe_simulate(const gp_pipe_sim_cfg *c, gp_pipe_sim_result *r, char *err, size_t errlen);

/* Fills a simulation config from a measured pipeline: its pools and declared queue bounds,
 * then applies spec ("STAGE=N,STAGE=N"; NULL or "" = as measured) and queue_bound (>= 0:
 * every stage's input queue; < 0: declared bounds). n_items 0 = the items the sink did. */
int gp_pipeline_sim_cfg(const gp_pipeline *p, const char *spec, int queue_bound, size_t n_items,
                        uint64_t seed, gp_pipe_sim_cfg *c, char *err, size_t errlen);

/* ---- output (pipeline_report.c) ---- */
struct gp_store;
/* Loads and analyses job_id's stage events from a store: 1 done, 0 the job has no stage
 * item events, -1 with err. */
int gp_pipeline_load(struct gp_store *s, const char *job_id, const gp_pipe_opts *o,
                     gp_pipeline *out, char *err, size_t errlen);
/* Report hooks (report/report_hooks.c): a pipeline section when the job has stage events. */
void gp_pipeline_report_text(struct gp_store *s, const char *job_id, FILE *out);
void gp_pipeline_report_json(struct gp_store *s, const char *job_id, json_t *root);

typedef struct gp_pipe_whatif {
    int have;
    char spec[256];
    gp_pipe_sim_cfg cfg;
    gp_pipe_sim_result base; /* the measured pools, simulated: the model's own check */
    gp_pipe_sim_result res;
} gp_pipe_whatif;

void gp_pipeline_print_text(const gp_pipeline *p, const gp_pipe_sizing *sz, const gp_pipe_whatif *w,
                            FILE *out, int width); /* width 0: no limit (--wide) */
json_t *gp_pipeline_to_json(const gp_pipeline *p, const gp_pipe_sizing *sz,
                            const gp_pipe_whatif *w);
/* One <section> with a table and an SVG of queue length over time per stage. */
void gp_pipeline_print_html(const gp_pipeline *p, const gp_pipe_sizing *sz, const gp_pipe_whatif *w,
                            FILE *out);

#endif
