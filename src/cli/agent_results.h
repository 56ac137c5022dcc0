/* agent_results.h: the agent computes and stores ended jobs' results (summary and
 * findings) once they are sealed, so that reports read them instead of recomputing the
 * jobs' whole histories (engine/results/job_results.h). The computation runs in a
 * short-lived child process (`goodput` itself, hidden command GP_AGENT_RESULTS_CMD), at
 * lower priority, one at a time: the agent's ticks and peak memory never include it (a
 * day-long 8-GPU job: ~82 MiB and ~2 s of CPU, docs/benchmarks.md). */
#ifndef GP_CLI_AGENT_RESULTS_H
#define GP_CLI_AGENT_RESULTS_H

#include <sys/types.h>

#include "agent/agent.h"
#include "engine/results/job_results.h"

/* What the sealing children cost, apart from the agent's own figures (getrusage of the
 * agent process does not include them). */
typedef struct gp_agent_results_stats {
    uint64_t passes;      /* children started */
    uint64_t idle_passes; /* passes with nothing to seal: no child started */
    uint64_t stored;      /* results they stored */
    uint64_t killed;      /* children stopped at the agent's exit (nothing half-written) */
    double cpu_s;         /* their user + system CPU, start-up included */
    long max_rss_kib;     /* the largest child's peak resident set */
} gp_agent_results_stats;

typedef struct gp_agent_results {
    gp_job_results_writer *w; /* the jobs whose computation failed: not tried again */
    int64_t last_pass_ns;     /* source time of the last pass */
    int said;                 /* a store error was said */
    int stopping;             /* the agent stops its child (finish): no error to say */
    pid_t child;              /* the running child, 0 when none */
    int fd;                   /* its stdout (what it stored, what failed), -1 when none */
    size_t out_len;
    char out[16384];
    gp_agent_results_stats st;
} gp_agent_results;

/* Registers the hook: one pass per GP_AGENT_RESULTS_EVERY_NS of source and wall time
 * (a run faster than real time passes once a wall minute; the last pass catches up),
 * each child spending at most GP_AGENT_RESULTS_CPU_S (at least one job). A pass starts
 * only when the last child has ended. 0, or -1 (hook table full or out of memory). */
#define GP_AGENT_RESULTS_EVERY_NS (60LL * 1000000000LL)
#define GP_AGENT_RESULTS_CPU_S 0.5
int gp_agent_results_attach(gp_agent_results *r, gp_agent *a);
/* After the run. last_pass: wait for a running child, then one last pass without a CPU
 * limit, waited for; else (the agent was stopped by a signal) a running child is
 * stopped, and the claims it left are deleted. */
void gp_agent_results_finish(gp_agent_results *r, gp_agent *a, int last_pass);
const gp_agent_results_stats *gp_agent_results_get_stats(const gp_agent_results *r);
void gp_agent_results_free(gp_agent_results *r);

/* The child: `goodput GP_AGENT_RESULTS_CMD DB NOW_NS BUDGET_CPU_S [FAILED_JOB_ID...]`.
 * Prints "stored N", then "failed ID" for each job that failed in this pass, or
 * "error MSG". Not a user command (main.c dispatches it; --help does not list it). */
#define GP_AGENT_RESULTS_CMD "__seal-results"
int gp_agent_results_child(int argc, char **argv);

#endif
