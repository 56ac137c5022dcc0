/* workflows.h: OpenTelemetry traces as workflows, joined to the GPUs that served them.
 *
 * A workflow is one trace; its kind is the root span's name. Per workflow: end-to-end
 * time, success (root status not ERROR), a partition of its end-to-end time by step kind
 * (each instant goes to the first kind with a span in flight in the order model, tool,
 * retrieval, other; the rest is "queue": the workflow's own time with no step running),
 * tokens, and, when engines are given, GPU-seconds and joules.
 *
 * GPU join: a model-call span runs on the engine (a job of the store) whose service is
 * the span's service.name (the job's id or name) on the span's host.name (the host of
 * the job's GPUs; either side empty matches). Between consecutive start/end instants of
 * the engine's model calls, the GPU-seconds the engine's GPUs were busy (gpu_util x time,
 * from its samples) and their energy are split among the calls in flight by token share:
 * each call weighs its tokens per second of its duration (equal weights when any call
 * lacks token counts). Instants with no call in flight are engine idle time, split by
 * what the engine's workflows were doing: a tool in flight ("waiting on tools"), else a
 * retrieval ("waiting on retrieval"), else a workflow open ("waiting on the client"),
 * else "no work"; in GPU-seconds of the engine's GPUs.
 *
 * Findings (model/finding.h): tool_bound (a kind whose end-to-end time is mostly tool
 * time; names the step that takes the most), serial_steps (sibling tool or retrieval
 * steps run one after another with no model call between them, so nothing in the trace
 * says one needs the other; the saving if overlapped = their summed time - the longest),
 * retry_waste (GPU-seconds, or model-call seconds when GPUs are unknown, of model calls
 * in failed workflows and of failed model calls in workflows that succeeded). */
#ifndef GP_OTLP_WORKFLOWS_H
#define GP_OTLP_WORKFLOWS_H

#include <jansson.h>
#include <stdio.h>

#include "model/finding.h"
#include "otlp/span.h"

/* One device's cumulative busy GPU-seconds and energy at sample times (ascending). */
typedef struct gp_wf_series {
    int64_t *t_ns;
    double *busy_gpu_s, *energy_j; /* energy_j NULL: unknown */
    size_t n;
} gp_wf_series;

typedef struct gp_wf_engine {
    char job_id[64], name[64], host[64];
    gp_wf_series *dev; /* one per GPU the engine holds */
    int n_dev;
    /* outputs */
    double attributed_gpu_s, busy_gpu_s, attributed_j;
    double idle_gpu_s[4]; /* tools, retrieval, client, no work */
    int64_t calls;
} gp_wf_engine;

enum { GP_WF_WAIT_TOOLS, GP_WF_WAIT_RETRIEVAL, GP_WF_WAIT_CLIENT, GP_WF_NO_WORK };

typedef struct gp_wf {
    size_t first, n; /* the trace's spans in report->spans */
    size_t root;
    int kind; /* index in report->kinds */
    int ok;
    double e2e_s, time_s[GP_STEP__COUNT];
    double gpu_s, energy_j; /* < 0 unknown */
    double retry_gpu_s;     /* model-call GPU-s counted as retry waste; < 0 unknown */
    double retry_call_s;    /* model-call seconds counted as retry waste */
    int64_t tokens;         /* < 0 none reported */
    double serial_saving_s;
    char serial_pair[128];
} gp_wf;

typedef struct gp_wf_step_stat {
    char name[64];
    int kind;
    int64_t count;
    double total_s;
} gp_wf_step_stat;

typedef struct gp_wf_kind {
    char name[64];
    int64_t count, ok;
    double e2e_p50_s, e2e_p95_s;
    double time_s[GP_STEP__COUNT]; /* summed over the kind's workflows */
    double gpu_s, energy_j;        /* summed; < 0 unknown */
    double retry_gpu_s, retry_call_s;
    int64_t tokens;
    double usd_per_ok, j_per_ok, gpu_s_per_ok; /* < 0 unknown */
    double serial_saving_s;                    /* summed */
    int64_t serial_count;
    char serial_pair[128];
    gp_wf_step_stat *steps;
    size_t n_steps;
    size_t typical, slow; /* workflow indices: nearest p50, nearest p95 */
    char critical_path[512];
} gp_wf_kind;

typedef struct gp_wf_report {
    gp_span *spans; /* owned, sorted by trace then start */
    size_t n_spans;
    gp_wf *wf;
    size_t n_wf;
    gp_wf_kind *kinds;
    size_t n_kinds;
    gp_finding findings[32];
    size_t n_findings;
    int gpu_known;          /* engines were given and at least one model call joined one */
    double price_per_gpu_h; /* <= 0 unknown */
    int64_t orphans;        /* spans whose trace has no root */
} gp_wf_report;

/* Builds the report from spans (copied) and engines (may be NULL/0; their outputs are
 * filled). price_per_gpu_h <= 0: $ unknown. 0, or -1 when out of memory. */
int gp_wf_analyze(const gp_span *spans, size_t n, gp_wf_engine *engines, size_t n_engines,
                  double price_per_gpu_h, gp_wf_report *out);
void gp_wf_report_free(gp_wf_report *r);

/* Outputs (workflows_fmt.c). */
void gp_wf_print(FILE *out, const gp_wf_report *r, const gp_wf_engine *e, size_t n_e,
                 int width); /* width 0: no limit (--wide) */
json_t *gp_wf_json(const gp_wf_report *r, const gp_wf_engine *e, size_t n_e);
/* A self-contained HTML page: the table, findings and a waterfall of a typical and a
 * slow workflow of each kind. 0 or -1 (errno). */
int gp_wf_html(FILE *out, const gp_wf_report *r, const gp_wf_engine *e, size_t n_e);

#endif
