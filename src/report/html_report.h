/* html_report.h: `goodput report --html FILE`: a self-contained page (inline CSS and SVG,
 * no JavaScript) with every job's goodput, badput, signals next to progress, and findings.
 * Written to FILE.tmp, then renamed. */
#ifndef GP_REPORT_HTML_REPORT_H
#define GP_REPORT_HTML_REPORT_H

#include <stddef.h>

#include "engine/accounting/goodput.h"

/* job NULL = all jobs; slo may be NULL. 0 ok, -1 with err filled. */
int gp_report_html(const char *db, const char *job, const gp_slo *slo, const char *path, char *err,
                   size_t errlen);

#endif
