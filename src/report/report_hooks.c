/* report_hooks.c: the list of extra report sections (see report_hooks.h). */
#include "report/report_hooks.h"

void gp_report_extend_text(gp_store *s, const char *job_id, FILE *out) {
    (void)s, (void)job_id, (void)out;
}

void gp_report_extend_json(gp_store *s, const char *job_id, json_t *root) {
    (void)s, (void)job_id, (void)root;
}
