/* demo_hooks.c: the list of demo extensions (see demo_hooks.h). */
#include "report/demo_hooks.h"

#include "report/findings_fmt.h"
#include "serve/demo_serve.h"

void gp_demo_start(gp_agent *a, FILE *out) {
    gp_serve_demo_start(a, out);
}
void gp_demo_live_extra(gp_agent *a, FILE *out) {
    (void)a;
    gp_serve_demo_live(out);
}
void gp_demo_finish(gp_agent *a, FILE *out) {
    gp_serve_demo_finish(a, out);
}
void gp_demo_after_report(const char *db, FILE *out) {
    gp_findings_demo_summary(db, out);
}
void gp_demo_end(FILE *out) {
    gp_serve_demo_after_report(out);
}
