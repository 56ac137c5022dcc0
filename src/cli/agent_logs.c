/* agent_logs.c: the agent's log tails (agent_logs.h). Each event a log yields is written
 * as a protocol line and fed through the agent's in-process ingest, the path the
 * simulator's lines take: the same validation, time bounds, de-duplication and counters
 * as events sent over the socket. */
#include "cli/agent_logs.h"

#include <stdio.h>
#include <string.h>

#include "ingest/protocol.h"
#include "store/store.h"

/* The profiles are compiled (regular expressions, ~0.2 MiB of heap for the built-in ones)
 * only when a log is followed or a profile file is to be checked: an agent without --log
 * carries none of it for its whole life (issue 22, the agent's RSS). */
static int load_profiles(gp_agent_logs *l, const char *profile_file, char *err, size_t errlen) {
    if (l->profiles.n) return 0;
    if (gp_log_profiles_builtin(&l->profiles, err, errlen) != 0) return -1;
    if (profile_file && gp_log_profiles_load(&l->profiles, profile_file, err, errlen) != 0)
        return -1;
    return 0;
}

int gp_agent_logs_init(gp_agent_logs *l, const char *profile_file, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    return profile_file ? load_profiles(l, profile_file, err, errlen) : 0;
}

int gp_agent_logs_add(gp_agent_logs *l, const char *spec, char *err, size_t errlen) {
    const char *eq = strchr(spec, '=');
    const char *colon = strrchr(spec, ':');
    if (!eq || !colon || colon < eq || eq == spec || colon == eq + 1 || !colon[1]) {
        snprintf(err, errlen, "'%s': expected JOB=PATH:PROFILE", spec);
        return -1;
    }
    if (l->n == GP_AGENT_MAX_LOGS) {
        snprintf(err, errlen, "at most %d logs", GP_AGENT_MAX_LOGS);
        return -1;
    }
    char job[GP_JOB_ID_MAX], path[4096];
    if ((size_t)(eq - spec) >= sizeof job || (size_t)(colon - eq - 1) >= sizeof path) {
        snprintf(err, errlen, "'%s': job id or path too long", spec);
        return -1;
    }
    snprintf(job, sizeof job, "%.*s", (int)(eq - spec), spec);
    snprintf(path, sizeof path, "%.*s", (int)(colon - eq - 1), eq + 1);
    if (load_profiles(l, NULL, err, errlen) != 0) return -1;
    const gp_log_profile *p = gp_log_profile_find(&l->profiles, colon + 1);
    if (!p) {
        snprintf(err, errlen, "'%s': no profile '%s' (goodput logs --list-profiles)", spec,
                 colon + 1);
        return -1;
    }
    if (gp_log_tail_open(path, p, job, 0, &l->tail[l->n], err, errlen) != 0) return -1;
    l->n++;
    return 0;
}

typedef struct {
    gp_agent *a;
    gp_agent_logs *l;
    int64_t now_ns;
} feed_ctx;

static void store_event(void *vctx, const gp_event *e) {
    feed_ctx *c = vctx;
    if (gp_store_put_event(gp_agent_store(c->a), e) == 0) c->l->events++;
}

static void emit_line(void *vctx, const gp_event *e) {
    feed_ctx *c = vctx;
    char line[GP_PROTO_MAX_LINE];
    int n = gp_proto_format(e, line, sizeof line);
    if (n > 0)
        gp_ingest_feed(gp_agent_ingest(c->a), GP_TR_INPROC, line, (size_t)n, c->now_ns, store_event,
                       c);
}

void gp_agent_logs_poll(gp_agent_logs *l, gp_agent *a) {
    feed_ctx c = {a, l, gp_agent_now_ns(a)};
    gp_store_begin(gp_agent_store(a));
    for (int i = 0; i < l->n; i++) {
        char err[256] = "";
        if (gp_log_tail_poll(l->tail[i], c.now_ns, emit_line, &c, err, sizeof err) < 0) {
            if (strcmp(err, l->last_err[i]) != 0)
                fprintf(stderr, "goodput agent: --log %s (will retry)\n", err);
            snprintf(l->last_err[i], sizeof l->last_err[i], "%s", err);
        } else {
            l->last_err[i][0] = 0;
        }
    }
}

static void logs_hook(gp_agent *a, void *vctx) {
    gp_agent_logs_poll(vctx, a);
}

int gp_agent_logs_attach(gp_agent_logs *l, gp_agent *a) {
    return l->n ? gp_agent_set_hook(a, logs_hook, l, 500000000LL) : 0;
}

void gp_agent_logs_free(gp_agent_logs *l) {
    for (int i = 0; i < l->n; i++)
        gp_log_tail_close(l->tail[i]);
    l->n = 0;
    gp_log_profiles_free(&l->profiles);
}
