/* agent_results.c: see agent_results.h. The passes run on the agent's thread and
 * connection, inside its open transaction: a result is committed with the flush that
 * follows, and it has seen every row the agent wrote before it. */
#include "cli/agent_results.h"

#include <stdio.h>
#include <string.h>

static void pass(gp_agent_results *r, gp_agent *a, double budget_cpu_s) {
    char err[256];
    r->last_pass_ns = gp_agent_now_ns(a);
    if (gp_job_results_seal(r->w, gp_agent_store(a), r->last_pass_ns, budget_cpu_s, err,
                            sizeof err) < 0 &&
        !r->said) {
        fprintf(stderr, "goodput agent: ended jobs' results not stored: %s\n", err);
        r->said = 1;
    }
}

static void results_hook(gp_agent *a, void *ctx) {
    gp_agent_results *r = ctx;
    int64_t now = gp_agent_now_ns(a);
    if (r->last_pass_ns && now - r->last_pass_ns < GP_AGENT_RESULTS_EVERY_NS) return;
    pass(r, a, GP_AGENT_RESULTS_CPU_S);
}

int gp_agent_results_attach(gp_agent_results *r, gp_agent *a) {
    memset(r, 0, sizeof *r);
    r->w = gp_job_results_writer_new();
    if (!r->w) return -1;
    /* Every minute of wall time too: the agent writes its queued samples before each hook
     * (agent.c), so a hook called every tick would undo its once-per-flush batching. */
    return gp_agent_set_hook(a, results_hook, r, GP_AGENT_RESULTS_EVERY_NS);
}

void gp_agent_results_finish(gp_agent_results *r, gp_agent *a) {
    if (!r->w) return;
    gp_store_begin(gp_agent_store(a));
    pass(r, a, 0);
    gp_agent_flush(a);
}

void gp_agent_results_free(gp_agent_results *r) {
    gp_job_results_writer_free(r->w);
    r->w = NULL;
}
