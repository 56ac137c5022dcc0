/* agent_live.h: `goodput agent --window D`: the agent's live findings. Every minute of
 * source time (gp_agent_now_ns) the agent diagnoses each job's last window of D (default
 * 15 min) with the windowed diagnosis (engine/windows.h) over what it has stored so far,
 * keeps the result in memory and hands it to the HTTP server (gp_serve_set_live), which
 * shows it at GET /api/v1/findings marked "live". Nothing is written to the store: the
 * store keeps whole-job findings, and `goodput diagnose --window D --as-of T` repeats a
 * live pass from the stored data afterwards (same classes, same badput).
 *
 * A job is live while its data reaches into the last window; a job whose data ended
 * longer ago than D is left out. A pass reads each live job's rows since its last window
 * (engine/diagnosis/live_window.h), not its whole history: the whole-job figures the
 * windowed diagnosis reads are kept here per job between passes, so a pass costs about
 * one window's rows whatever the job's age (docs/benchmarks.md, issue 22). The first pass
 * over a job, and the few windows live_window.h lists, read the job whole. --stats prints
 * the passes, their CPU and the rows they loaded (live_rows, live_rows_max_pass). */
#ifndef GP_CLI_AGENT_LIVE_H
#define GP_CLI_AGENT_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "agent/agent.h"
#include "engine/diagnosis/windows.h"
#include "serve/serve.h"

#define GP_LIVE_DEFAULT_WINDOW_NS (15LL * 60 * 1000000000LL)
#define GP_LIVE_EVERY_NS (60LL * 1000000000LL)
/* The agent connection's page cache during a pass (agent_live.c says why). 64 KiB (~14
 * pages): a pass reads each job's window once, in index order, so a larger cache only
 * kept window pages the ticks never read, resident until the next pass (256 KiB of them
 * at 8 GPUs, docs/benchmarks.md agent --listen 2026-12-03); re-reads come from the
 * kernel's page cache. */
#define GP_LIVE_CACHE_KIB 64

typedef struct gp_agent_live {
    int64_t window_ns;               /* > 0 */
    int64_t every_ns;                /* source time between passes; GP_LIVE_EVERY_NS */
    int64_t last_ns;                 /* source time of the last pass; 0 = none yet */
    gp_serve *srv;                   /* receives each pass; NULL = kept here only */
    char *json;                      /* the last pass's document (owned; NULL before the first) */
    uint64_t passes, jobs, findings; /* totals over every pass */
    double cpu_s;                    /* CPU spent in passes */
    uint64_t rows;                   /* store rows loaded over every pass (rows_read) */
    uint64_t rows_max_pass;          /* the most one pass loaded */
    uint64_t whole_loads;            /* job loads of the whole history (live_window.h) */
    struct gp_live_job *live_jobs;   /* per live job: its whole-job figures (owned) */
    size_t n_live_jobs;
    char last_err[256];
} gp_agent_live;

/* Registers the hook (called every tick; it acts once per every_ns of source time).
 * 0, or -1 when the hook table is full. */
int gp_agent_live_attach(gp_agent_live *l, gp_agent *a);
/* One pass now, at the agent's clock: fills l->json and hands it to l->srv. 0, or -1
 * with l->last_err (the previous document is kept). */
int gp_agent_live_pass(gp_agent_live *l, gp_agent *a);
/* One window's findings as a pass publishes them (the findings' JSON, each marked live
 * with its window's bounds); a new reference. */
json_t *gp_agent_live_findings_json(const gp_diag_window *w);
/* Job loads of the whole history so far, over every job (the first pass over each, and
 * live_window.h's fallbacks). */
uint64_t gp_agent_live_whole_loads(const gp_agent_live *l);
void gp_agent_live_free(gp_agent_live *l);

#endif
