/* report_hooks.c: the list of extra report sections (see report_hooks.h). */
#include "report/report_hooks.h"

#include "report/findings_fmt.h"
#include "engine/pipeline/pipeline.h"
#include "ingest/scrape_store.h"

void gp_report_extend_text(gp_store *s, const char *job_id, FILE *out, int width,
                           const gp_report_acct *acct) {
    gp_findings_report_text(s, job_id, out, width, acct);
    gp_pipeline_report_text(s, job_id, out);
    gp_scrape_report_text(s, job_id, out);
}

void gp_report_extend_json(gp_store *s, const char *job_id, json_t *root,
                           const gp_report_acct *acct) {
    gp_findings_report_json(s, job_id, root, acct);
    gp_pipeline_report_json(s, job_id, root);
    gp_scrape_report_json(s, job_id, root);
}
