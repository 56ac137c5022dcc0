/* demo_serve.h: the dashboard server of `goodput demo` (see demo_serve.c). */
#ifndef GP_SERVE_DEMO_SERVE_H
#define GP_SERVE_DEMO_SERVE_H

#include <stdio.h>

#include "agent/agent.h"

void gp_serve_demo_start(gp_agent *a, FILE *out);
void gp_serve_demo_live(FILE *out);
void gp_serve_demo_finish(gp_agent *a, FILE *out);
void gp_serve_demo_after_report(FILE *out);

#endif
