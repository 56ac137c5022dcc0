/* findings_fmt.h: findings as text for people and JSON for machines, shared by
 * `goodput diagnose`, the report's findings section and the demo. */
#ifndef GP_ENGINE_FINDINGS_FMT_H
#define GP_ENGINE_FINDINGS_FMT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "engine/accounting/goodput.h"
#include "model/finding.h"

struct gp_store;

/* Prints at most top findings (0 = all) in the order given (rank first), in 100 columns. */
void gp_findings_print(FILE *out, const gp_finding *f, size_t n, size_t top);
/* The same in width columns (0: no limit, --wide). */
void gp_findings_print_w(FILE *out, const gp_finding *f, size_t n, size_t top, int width);
/* One JSON object per finding; the caller owns the returned array. */
json_t *gp_findings_json(const gp_finding *f, size_t n, size_t top);

/* Per-job engine metrics as JSON: features that back the findings (ideal step time,
 * drift, shares, SLO goodput, headroom) and unit economics (USD and J per unit, MFU/MBU
 * when FLOPs/bytes per unit were declared). Unknown values are null. Activity-only jobs
 * say so and carry no goodput. NULL on error (err filled). Caller owns the object. */
json_t *gp_job_metrics_json(struct gp_store *s, const char *job_id, const gp_slo *slo,
                            double price_override, char *err, size_t errlen);

/* The report's findings section: diagnoses the job (or every job) without writing to
 * the store (the report opens it read-only) and prints the top findings per job. */
/* acct (may be NULL): the accounting the report computed for its job table (every
 * summary option at its default but slo), reused to clip the findings. */
struct gp_job_results;
typedef struct gp_report_acct {
    const struct gp_job_summary *sum;
    size_t n;
    gp_slo slo;
    struct gp_job_results *stored; /* ended jobs' stored results to use; may be NULL */
    int threads;                   /* the diagnoses on this many threads (gp_diag_opts.threads) */
} gp_report_acct;
void gp_findings_report_text(struct gp_store *s, const char *job_id, FILE *out, int width,
                             const gp_report_acct *acct);
/* Adds "findings": [...] to the report's JSON root. */
void gp_findings_report_json(struct gp_store *s, const char *job_id, json_t *root,
                             const gp_report_acct *acct);
/* After the demo: diagnoses every job in the store at db, stores the findings, and
 * prints each job's top finding in one line. */
void gp_findings_demo_summary(const char *db, FILE *out);

/* A finding's body in the self-contained HTML pages (trace, cluster): its summary, its
 * evidence as a list (metric = value op threshold (source)) and the fix, escaped. */
void gp_finding_html_body(FILE *f, const gp_finding *x);

#endif
