/* conns.h: the HTTP server's connection guard. Every connection is tracked from accept to
 * close, in one of two states: waiting for a request's headers, or inside a request (body,
 * render, response). Two promises:
 *  - total deadlines, not idle ones: headers must be complete within header_deadline_s of
 *    the connection opening (or of the previous response on a kept-alive connection), and
 *    a request must be done within request_deadline_s, however slowly a client trickles
 *    bytes (libmicrohttpd's own timeout restarts on every byte);
 *  - slow clients fill only their share: at most max_waiting connections may wait for
 *    headers; a new connection past that cuts the oldest waiting one. A scraper sends its
 *    request at once, so it never waits long enough to be the oldest, and the slots above
 *    max_waiting stay free for requests being served (/metrics, /api).
 * A cut is shutdown(2) on the socket: libmicrohttpd sees the end of the stream and closes
 * the connection itself, so no descriptor is closed behind its back. Thread-safe (the
 * server's thread pool calls in from every worker); a reaper thread enforces deadlines. */
#ifndef GP_SERVE_CONNS_H
#define GP_SERVE_CONNS_H

#include <stdint.h>

typedef struct srv_conns srv_conns;

typedef struct srv_conns_stats {
    uint64_t opened, evicted, header_timeouts, request_timeouts;
    int open, waiting;
} srv_conns_stats;

srv_conns *srv_conns_new(int max_conns, int max_waiting, double header_deadline_s,
                         double request_deadline_s); /* NULL: out of memory or no thread */
void srv_conns_free(srv_conns *g);                   /* stops the reaper */
/* A connection opened (fd) / closed; *ctx is the per-socket context the server keeps. */
void srv_conns_opened(srv_conns *g, int fd, void **ctx);
void srv_conns_closed(srv_conns *g, void **ctx);
/* Its request's headers are complete / its response is done (back to waiting). */
void srv_conns_request(srv_conns *g, void *ctx);
void srv_conns_done(srv_conns *g, void *ctx);
srv_conns_stats srv_conns_get_stats(srv_conns *g);

#endif
