/* report_int.h: the parts of the trace report written by report_steps.c (private to
 * src/traces/). */
#ifndef GP_TRACES_REPORT_INT_H
#define GP_TRACES_REPORT_INT_H

#include <jansson.h>
#include <stdio.h>

#include "traces/trace.h"

/* Runs (when more than one), idle time by host cause per rank, and the per-step table with
 * its median and p95 rows, as text. */
void gp_trace_text_runs(const gp_trace_report *rep, FILE *f, int width);
void gp_trace_text_causes(const gp_trace_report *rep, FILE *f, int width);
void gp_trace_text_steps(const gp_trace_report *rep, FILE *f, int width);
/* The same into a rank's JSON object: "run", "idle_causes", "steps", "step_summary". */
void gp_trace_json_rank_extra(const gp_rank_result *r, json_t *o);
json_t *gp_trace_json_runs(const gp_trace_report *rep);
/* HTML tables: idle by cause per rank, per-step view. */
void gp_trace_html_steps(const gp_trace_report *rep, FILE *f);

/* Nsight Systems totals (nsys.c), in ns: a text section and a rank's "nsys_totals". */
void gp_nsys_totals_text(const gp_trace_report *rep, FILE *f, int width);
json_t *gp_nsys_totals_json(const gp_nsys_totals *t);

#endif
