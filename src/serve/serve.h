/* serve.h: the agent's HTTP server (libmicrohttpd): /metrics for Prometheus, the JSON API
 * under /api/v1/ (docs/api.md) and the dashboard at / (web/, compiled into the binary).
 *
 * Threads: this module runs ONE thread of its own, libmicrohttpd's internal polling
 * thread (MHD_USE_INTERNAL_POLLING_THREAD), which answers every request. That thread opens
 * the store file read-only on its own SQLite connection (WAL lets readers run beside the
 * agent's writer) and never touches the agent. What it needs from the agent (statistics,
 * the clock) is copied under a mutex by gp_serve_pump, which runs on the agent's thread as
 * an agent hook; POST /api/v1/events bodies are checked line by line on the server thread,
 * queued, and fed to the agent's ingest (transport GP_TR_HTTP) by the same pump.
 *
 * Security: binds 127.0.0.1:9464 by default. Another address needs a bearer token file
 * (--token-file; the token is compared in constant time) unless insecure is set. Request
 * bodies are capped (1 MiB), connections time out after 15 s, at most 64 at once.
 *
 * All errors are JSON: {"error": "sentence", "status": code}. */
#ifndef GP_SERVE_SERVE_H
#define GP_SERVE_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

#define GP_SERVE_DEFAULT_LISTEN "127.0.0.1:9464"

typedef struct gp_serve_opts {
    const char *listen;     /* "ADDR:PORT" (port 0 = any free port); NULL = the default */
    const char *token_file; /* NULL: no token (only allowed on loopback unless insecure) */
    int insecure;           /* allow a non-loopback address without a token */
    const char *db_path;    /* the store to read */
    double price_per_gpu_h; /* > 0 overrides the price table (cost per hour) */
    /* The process keeps its own malloc policy (the agent: cli/main.c, its peak RSS is the
     * budget); 0 = gp_serve_start raises glibc's mmap and trim thresholds for a long-lived
     * server's accounting churn (serve.c). */
    int keep_malloc_policy;
    /* Hand the free pages inside the heap back to the kernel after each render
     * (malloc_trim): the agent, whose renders take turns with its ticks in one malloc arena
     * and leave holes the next render does not refill in the same places (docs/
     * benchmarks.md, agent --listen 2026-12-03). 0 = keep them for the next render. */
    int trim_heap;
} gp_serve_opts;

typedef struct gp_serve gp_serve;

int gp_serve_start(const gp_serve_opts *o, gp_serve **out, char *err, size_t errlen);
/* Stops the thread, frees everything. NULL is fine. */
void gp_serve_stop(gp_serve *s);
int gp_serve_port(const gp_serve *s);
/* "http://127.0.0.1:9464/" (owned by the server). */
const char *gp_serve_url(const gp_serve *s);

/* Registers gp_serve_pump as an agent hook (every 250 ms of wall time). */
void gp_serve_attach(gp_serve *s, gp_agent *a);
/* On the agent's thread: snapshot statistics, feed queued POSTed events. */
void gp_serve_pump(gp_serve *s, gp_agent *a);
/* On the agent's thread: the live findings of its last pass, as a JSON document
 * {"as_of_ns", "window_s", "findings": [...]} (cli/agent_live.h); copied under the
 * snapshot's mutex, shown by GET /api/v1/findings. NULL clears them. */
void gp_serve_set_live(gp_serve *s, const char *json_text);
/* The agent is about to close: POST answers 503 from now on; GETs keep working. */
void gp_serve_detach(gp_serve *s);

/* Renders documents without a server (tests, benchmarks). Caller frees *out. The
 * status is the HTTP status the server would answer; body is JSON or text. */
int gp_serve_render(gp_serve *s, const char *method, const char *path, const char *query,
                    char **out, size_t *len, const char **content_type);

#endif
