/* demo_hooks.h: what other modules add to `goodput demo` (the dashboard server, the
 * findings). demo_hooks.c calls each in turn; a module adds one call there. */
#ifndef GP_REPORT_DEMO_HOOKS_H
#define GP_REPORT_DEMO_HOOKS_H

#include <stdio.h>

#include "agent/agent.h"

void gp_demo_start(gp_agent *a, FILE *out);           /* after the agent opens */
void gp_demo_live_extra(gp_agent *a, FILE *out);      /* under the live table */
void gp_demo_finish(gp_agent *a, FILE *out);          /* after the run, before close */
void gp_demo_after_report(const char *db, FILE *out); /* after the report */
void gp_demo_end(FILE *out); /* last: may keep serving the dashboard on a terminal */

#endif
