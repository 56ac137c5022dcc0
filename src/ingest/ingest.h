/* ingest.h: receives workload events (docs/protocol.md) on a unix datagram socket and/or
 * UDP on loopback, or from in-process feeders (the simulator, POST /api/v1/events), and
 * hands parsed events to a sink. A malformed line is rejected and counted; it never
 * affects its neighbours. No threads: the owner polls the fds and calls gp_ingest_poll.
 *
 * Transports are numbered so statistics are kept per transport. */
#ifndef GP_INGEST_INGEST_H
#define GP_INGEST_INGEST_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "ingest/protocol.h"
#include "model/event.h"

typedef enum { GP_TR_UNIX, GP_TR_UDP, GP_TR_HTTP, GP_TR_INPROC, GP_TR__COUNT } gp_transport;

typedef struct gp_ingest_stats {
    uint64_t datagrams, received, parsed, rejected, dropped; /* lines, except datagrams */
    uint64_t rejected_by[GP_REJ__COUNT]; /* rejected lines by reason (sums to rejected) */
    uint64_t jobs_overflow;   /* lines refused: a new job id past the per-transport cap */
    char first_bad_line[160]; /* first rejected line (truncated, sanitised) */
    char first_bad_reason[160];
} gp_ingest_stats;

typedef struct gp_ingest_opts {
    const char *unix_path; /* NULL: no unix socket; "" : the default path */
    const char *udp_addr;  /* NULL: no UDP; "127.0.0.1:8649" */
    int accept_old;        /* 1: accept timestamps far in the past (replays, simulation) */
    int64_t max_ahead_ns;  /* how far ahead of now_ns a time may be; 0 = 10 min */
    int64_t max_behind_ns; /* how far behind; 0 = 7 days (ignored with accept_old) */
    int max_jobs;          /* distinct live job ids per transport; 0 = GP_INGEST_MAX_JOBS */
    /* 0: a line without ts is stamped with the now_ns of the read that takes it. > 0: with
     * its datagram's arrival, as the kernel stamped it (SO_TIMESTAMPNS): now_ns minus the
     * wall time the datagram waited in the socket, times this scale (the caller's clock
     * units per wall ns: 1 for the wall clock), so a caller may leave the sockets unread
     * for a while (gp_ingest_hold_ns) without moving any event's time. */
    double arrival_scale;
} gp_ingest_opts;

/* Each transport tracks at most this many job ids at once (in-process feeders, the
 * simulator, are trusted and not capped). A line naming a new job id past the cap is
 * refused and counted in jobs_overflow (one log line on stderr the first time), so a
 * client cannot make the store, /metrics and the API grow one series per line. A job id
 * silent for GP_INGEST_JOB_IDLE_NS gives its slot back (ingest/jobcap.h). HTTP lines are
 * capped by the server when they are POSTed, so its answer names the refused lines; they
 * reach gp_ingest_feed already admitted. */
#define GP_INGEST_MAX_JOBS 1024
#define GP_INGEST_JOB_IDLE_NS (600LL * 1000000000LL)

typedef void (*gp_event_sink)(void *ctx, const gp_event *e);
typedef struct gp_ingest gp_ingest;

int gp_ingest_open(const gp_ingest_opts *o, gp_ingest **out, char *err, size_t errlen);
void gp_ingest_close(gp_ingest *g);
/* Fills pollfds (POLLIN) for the open sockets; returns how many. */
int gp_ingest_fds(gp_ingest *g, struct pollfd *out, int cap);
/* Reads every pending datagram without blocking; parses; calls sink per good event.
 * now_ns stamps lines without ts and is the clock every time on a line is checked
 * against (gp_ingest_opts bounds). Returns events delivered, or <0 on a socket error. */
int gp_ingest_poll(gp_ingest *g, int64_t now_ns, gp_event_sink sink, void *ctx);
/* The same, reading at most about max_bytes of datagrams per socket (0 = no limit), so a
 * caller with a schedule (the agent's sampling loop) gets control back under a flood; what
 * is left stays queued in the kernel for the next call. */
int gp_ingest_poll_budget(gp_ingest *g, int64_t now_ns, size_t max_bytes, gp_event_sink sink,
                          void *ctx);
/* How long the caller may leave the sockets unread after the poll that just returned, so
 * that one wake-up reads many datagrams (0: poll again at once). since_prev_ns: the time
 * from the end of the previous read to the start of this one, over which this read's
 * datagrams arrived. 0 when that read stopped at its byte budget (a flood: read on), or
 * when the rate it saw would not bring 2 datagrams within max_hold_ns (a hold would only
 * add a wake-up); otherwise at most max_hold_ns, and less where, at that rate, the kernel
 * would hold more than an eighth of the receive buffer (SO_RCVBUF) meanwhile. */
int64_t gp_ingest_hold_ns(const gp_ingest *g, int64_t since_prev_ns, int64_t max_hold_ns);
/* 1 when the last gp_ingest_poll_budget stopped at its byte budget: datagrams may be left
 * (a flood). */
int gp_ingest_last_full(const gp_ingest *g);
/* Parses a buffer of lines that arrived on transport tr (simulator, HTTP body). */
int gp_ingest_feed(gp_ingest *g, gp_transport tr, const char *buf, size_t len, int64_t now_ns,
                   gp_event_sink sink, void *ctx);
const gp_ingest_stats *gp_ingest_get_stats(const gp_ingest *g, gp_transport tr);
/* The time rule every transport applies (fixed at open; safe to read from any thread). */
gp_time_bounds gp_ingest_bounds(const gp_ingest *g);
/* The cap of live job ids per transport (gp_ingest_opts.max_jobs or the default). */
int gp_ingest_max_jobs(const gp_ingest *g);
const char *gp_ingest_unix_path(const gp_ingest *g); /* the bound path, or NULL */
/* The bound UDP port (useful with port 0 in udp_addr), or -1 without UDP. */
int gp_ingest_udp_port(const gp_ingest *g);

/* The default unix socket path ($XDG_RUNTIME_DIR/goodput.sock, else
 * /tmp/goodput-$UID/goodput.sock) into buf. */
void gp_ingest_default_path(char *buf, size_t cap);

#endif
