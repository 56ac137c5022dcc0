/* report_hooks.h: sections other modules add to `goodput report` (findings, pipelines).
 * report_hooks.c calls each section in turn; a module adds one call there. */
#ifndef GP_REPORT_REPORT_HOOKS_H
#define GP_REPORT_REPORT_HOOKS_H

#include <jansson.h>
#include <stdio.h>

#include "store/store.h"

/* acct: the report's accounting, for the findings section (findings_fmt.h); may be NULL */
struct gp_report_acct;
void gp_report_extend_text(gp_store *s, const char *job_id, FILE *out, int width,
                           const struct gp_report_acct *acct);
void gp_report_extend_json(gp_store *s, const char *job_id, json_t *root,
                           const struct gp_report_acct *acct);

#endif
