/* demo_hooks.c: the list of demo extensions (see demo_hooks.h). */
#include "report/demo_hooks.h"

void gp_demo_start(gp_agent *a, FILE *out) { (void)a, (void)out; }
void gp_demo_live_extra(gp_agent *a, FILE *out) { (void)a, (void)out; }
void gp_demo_finish(gp_agent *a, FILE *out) { (void)a, (void)out; }
void gp_demo_after_report(const char *db, FILE *out) { (void)db, (void)out; }
