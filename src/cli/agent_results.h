/* agent_results.h: the agent computes and stores ended jobs' results (summary and
 * findings) once they are sealed, between its ticks, so that reports read them instead of
 * recomputing the jobs' whole histories (engine/results/job_results.h). */
#ifndef GP_CLI_AGENT_RESULTS_H
#define GP_CLI_AGENT_RESULTS_H

#include "agent/agent.h"
#include "engine/results/job_results.h"

typedef struct gp_agent_results {
    gp_job_results_writer *w;
    int64_t last_pass_ns; /* source time of the last pass */
    int said;             /* a store error was said */
} gp_agent_results;

/* Registers the hook: one pass per GP_AGENT_RESULTS_EVERY_NS of source and wall time
 * (a run faster than real time passes once a wall minute; the last pass catches up),
 * spending at
 * most GP_AGENT_RESULTS_CPU_S per pass (at least one job), so a tick is late by at most
 * about one job's computation. 0, or -1 (hook table full or out of memory). */
#define GP_AGENT_RESULTS_EVERY_NS (60LL * 1000000000LL)
#define GP_AGENT_RESULTS_CPU_S 0.5
int gp_agent_results_attach(gp_agent_results *r, gp_agent *a);
/* One last pass without a CPU limit after the run, committed. */
void gp_agent_results_finish(gp_agent_results *r, gp_agent *a);
void gp_agent_results_free(gp_agent_results *r);

#endif
