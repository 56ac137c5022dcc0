/* span_stages.h: a multi-stage pipeline traced with OpenTelemetry spans, read as the stage
 * events `goodput pipeline` analyses (engine/pipeline/pipeline.h), with no instrumentation
 * beyond the spans.
 *
 * The reading (docs/pipelines.md, "Stages from spans"): each trace is one item; its root
 * span (no parent, or a parent outside the trace) names the pipeline; each direct child of
 * the root is one visit of the item to the stage its span name names. A visit's start and
 * end are the span's; it entered the stage's input queue when the item's previous visit
 * ended (the root's start for the first), never after its own start. Spans deeper than the
 * root's children (an HTTP call inside "infer") are inside their stage and not stages.
 * Traces whose root has no children are not pipeline items and are skipped.
 *
 * What spans do not say, and how it is filled: the pool of a stage is its peak concurrency
 * (the analysis's rule for an undeclared pool; a pool that was never fully busy reads
 * smaller than it is); the resource is GPU for a stage whose spans are model calls (GenAI
 * conventions, otlp/span.h) or that gpu_stages names, else CPU; queues are unbounded;
 * stages form a chain in order of first activity.
 *
 * Output: one gp_span_pipeline per root span name, in order of first appearance, each
 * owning its events (job_id = the root span name cut to GP_JOB_ID_MAX - 1 bytes). */
#ifndef GP_OTLP_SPAN_STAGES_H
#define GP_OTLP_SPAN_STAGES_H

#include <stddef.h>

#include "model/event.h"
#include "otlp/span.h"

typedef struct gp_span_pipeline {
    char name[GP_JOB_ID_MAX];
    gp_event *ev; /* stage declarations, then one item event per stage visit (owned) */
    size_t n_ev;
    size_t n_items; /* traces read as items */
} gp_span_pipeline;

/* gpu_stages: comma-separated stage names to count as GPU stages (NULL or "": none beyond
 * the model-call spans). Returns 0 with *out malloc'd (n_out may be 0: no trace had a root
 * with children), or -1 with err (out of memory, more than 256 pipelines). */
int gp_spans_to_pipelines(const gp_span *v, size_t n, const char *gpu_stages,
                          gp_span_pipeline **out, size_t *n_out, char *err, size_t errlen);
void gp_span_pipelines_free(gp_span_pipeline *p, size_t n);

#endif
