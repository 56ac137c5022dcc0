/* job_report.h: text and JSON renderings of job summaries (engine/accounting/job_summary.h). */
#ifndef GP_REPORT_JOB_REPORT_H
#define GP_REPORT_JOB_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "engine/accounting/job_summary.h"

void gp_report_text(FILE *f, const gp_job_summary *js, size_t n, int width); /* 0: --wide */
/* A new JSON object for one job (caller owns the reference). */
json_t *gp_report_json_job(const gp_job_summary *s);
/* GPU-hours held and productive per owner (user). */
void gp_report_owners_text(FILE *f, const gp_job_summary *js, size_t n, int width);
json_t *gp_report_owners_json(const gp_job_summary *js, size_t n);

#endif
