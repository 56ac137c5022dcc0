/* agent_logs.h: `goodput agent --log JOB=PATH:PROFILE`: tail training logs between the
 * agent's ticks and store what they say as events (ingest/log_tail.h, docs/logs.md). */
#ifndef GP_CLI_AGENT_LOGS_H
#define GP_CLI_AGENT_LOGS_H

#include <stddef.h>

#include "agent/agent.h"
#include "ingest/log_tail.h"

#define GP_AGENT_MAX_LOGS 16

typedef struct gp_agent_logs {
    gp_log_profiles profiles;
    int n;
    gp_log_tail *tail[GP_AGENT_MAX_LOGS];
    char last_err[GP_AGENT_MAX_LOGS][256];
    unsigned long long events;
} gp_agent_logs;

/* Loads the built-in profiles and profile_file now when one is given (NULL: none), so a
 * bad file is reported before the agent opens anything; otherwise the built-in ones are
 * loaded by the first gp_agent_logs_add (an agent that follows no log compiles none).
 * 0, or -1 with err. */
int gp_agent_logs_init(gp_agent_logs *l, const char *profile_file, char *err, size_t errlen);
/* Adds one "JOB=PATH:PROFILE" (PATH may contain ':'; PROFILE follows the last one).
 * 0, or -1 with err. */
int gp_agent_logs_add(gp_agent_logs *l, const char *spec, char *err, size_t errlen);
/* Registers the hook (every 500 ms of wall time). 0, or -1 when the hook table is full. */
int gp_agent_logs_attach(gp_agent_logs *l, gp_agent *a);
/* Polls every tail now (the hook does this between ticks; the CLI once more at exit). */
void gp_agent_logs_poll(gp_agent_logs *l, gp_agent *a);
void gp_agent_logs_free(gp_agent_logs *l);

#endif
