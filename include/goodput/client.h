/* goodput/client.h: report workload events to a goodput agent from C or C++ (header-only).
 *
 *     #include <goodput/client.h>
 *     gp_client c;
 *     gp_client_open(&c, NULL, NULL);         // default socket, job id from the environment
 *     gp_client_hello(&c, "samples", 6.1e12, 0);
 *     for (...) {
 *         gp_client_phase(&c, "data_wait", 1); load(); gp_client_phase(&c, "data_wait", 0);
 *         train(); gp_client_step(&c, step, 256, -1);
 *     }
 *     gp_client_close(&c);                    // flushes
 *
 * Promises: no call ever blocks or crashes the application, with or without an agent.
 * Lines (docs/protocol.md) are stamped with the wall clock when the call is made and
 * batched into datagrams of up to batch_bytes; a batch goes out when the next line would not
 * fit, when flush_interval_ns has passed since the last send (checked at each call), or on
 * gp_client_flush/close. Sends are non-blocking on an unconnected datagram socket, so an
 * agent that starts or restarts later is found again. When the agent's queue is full the
 * batch is kept and retried at the next call (it grows up to GP_CLIENT_BUF); a datagram
 * that cannot be sent (no agent, or the queue still full with the buffer full) is dropped
 * and its lines are counted in dropped_lines.
 *
 * Target: NULL uses $GOODPUT_SOCKET, else the agent's default path
 * ($XDG_RUNTIME_DIR/goodput.sock, else /tmp/goodput-$UID/goodput.sock); "udp:HOST:PORT" uses
 * UDP; anything else is a unix socket path. Job id: NULL uses $GOODPUT_JOB, $SLURM_JOB_ID,
 * "pod:<uid>" ($POD_UID or the kubepods cgroup), else "pid-PID". Not thread-safe: one
 * gp_client per thread, or a lock around it. All state lives in the struct. */
#ifndef GOODPUT_CLIENT_H
#define GOODPUT_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GP_CLIENT_BUF 65000 /* largest batch (fits a UDP datagram) */
#define GP_CLIENT_LINE_MAX 4096

typedef struct gp_client {
    int fd;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char job[64];
    long long rank;              /* -1: not sent */
    size_t batch_bytes;          /* datagram size goal; default 8192 */
    long long flush_interval_ns; /* default 100 ms; 0: send every line at once */
    long long last_send_ns;
    unsigned long long sent_lines, sent_datagrams, dropped_lines, dropped_datagrams;
    unsigned long long deferred_sends; /* sends retried later because the agent's queue was full */
    int last_errno;                    /* errno of the last failed send, 0 if none */
    size_t len, nlines;
    char buf[GP_CLIENT_BUF];
} gp_client;

static inline long long gp_client_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline int gp_client__valid_id(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              strchr("._:@/-", ch)))
            return 0;
    }
    return 1;
}

/* Fills buf with the job id from the environment (see the header comment). */
static inline void gp_client_job_from_env(char *buf, size_t cap) {
    const char *v = getenv("GOODPUT_JOB");
    if (v && gp_client__valid_id(v)) {
        snprintf(buf, cap, "%s", v);
        return;
    }
    v = getenv("SLURM_JOB_ID");
    if (v && gp_client__valid_id(v)) {
        snprintf(buf, cap, "%s", v);
        return;
    }
    v = getenv("POD_UID");
    if (v && v[0] && strlen(v) < 48) {
        snprintf(buf, cap, "pod:%s", v);
        if (gp_client__valid_id(buf)) return;
    }
    if (getenv("KUBERNETES_SERVICE_HOST")) {
        FILE *f = fopen("/proc/self/cgroup", "r");
        char line[512];
        while (f && fgets(line, sizeof line, f)) {
            char *p = strstr(line, "kubepods");
            if (p) p = strstr(p, "pod");
            while (p && strncmp(p, "pod", 3) == 0 && p[3] &&
                   strchr("0123456789abcdef", p[3]) == NULL)
                p = strstr(p + 3, "pod");
            if (!p) continue;
            char uid[40];
            size_t n = 0;
            for (p += 3; n < 36 && *p && strchr("0123456789abcdef-_", *p); p++)
                uid[n++] = *p == '_' ? '-' : *p;
            uid[n] = 0;
            if (n == 36) {
                snprintf(buf, cap, "pod:%s", uid);
                fclose(f);
                return;
            }
        }
        if (f) fclose(f);
    }
    snprintf(buf, cap, "pid-%ld", (long)getpid());
}

static inline void gp_client_default_path(char *buf, size_t cap) {
    const char *s = getenv("GOODPUT_SOCKET");
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (s && s[0])
        snprintf(buf, cap, "%s", s);
    else if (x && x[0] == '/')
        snprintf(buf, cap, "%s/goodput.sock", x);
    else
        snprintf(buf, cap, "/tmp/goodput-%u/goodput.sock", (unsigned)getuid());
}

/* Returns 0, or -1 if the target cannot be understood or no socket can be made. Even then
 * the struct is usable: every later call just counts its lines as dropped. */
static inline int gp_client_open(gp_client *c, const char *target, const char *job) {
    memset(c, 0, sizeof *c - sizeof c->buf);
    c->fd = -1;
    c->rank = -1;
    c->batch_bytes = 8192;
    c->flush_interval_ns = 100000000LL;
    c->last_send_ns = gp_client_now_ns();
    if (job && gp_client__valid_id(job))
        snprintf(c->job, sizeof c->job, "%s", job);
    else
        gp_client_job_from_env(c->job, sizeof c->job);
    const char *r = getenv("RANK");
    if (r && *r >= '0' && *r <= '9') c->rank = atoll(r);

    char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
    if (target && strncmp(target, "udp:", 4) == 0) {
        char host[256];
        const char *hp = target + 4, *colon = strrchr(hp, ':');
        if (!colon || (size_t)(colon - hp) >= sizeof host) return -1;
        memcpy(host, hp, (size_t)(colon - hp));
        host[colon - hp] = 0;
        if (host[0] == '[') {
            memmove(host, host + 1, strlen(host));
            char *rb = strchr(host, ']');
            if (rb) *rb = 0;
        }
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_socktype = SOCK_DGRAM;
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
        if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) return -1;
        memcpy(&c->addr, res->ai_addr, res->ai_addrlen);
        c->addrlen = (socklen_t)res->ai_addrlen;
        c->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        freeaddrinfo(res);
        return c->fd < 0 ? -1 : 0;
    }
    if (target) {
        size_t tl = strlen(target);
        if (tl >= sizeof path) return -1;
        memcpy(path, target, tl + 1);
    } else {
        gp_client_default_path(path, sizeof path);
    }
    struct sockaddr_un *sa = (struct sockaddr_un *)&c->addr;
    if (strlen(path) >= sizeof sa->sun_path) return -1;
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, path, strlen(path) + 1);
    c->addrlen = (socklen_t)sizeof *sa;
    c->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    return c->fd < 0 ? -1 : 0;
}

/* Sends what is buffered. A full queue at the agent (EAGAIN) is transient: unless final,
 * the batch is kept and grows (up to GP_CLIENT_BUF) until a later send goes through, so a
 * brief stall of the agent costs nothing. Returns 0 if sent or kept, -1 if dropped. */
static inline int gp_client__send(gp_client *c, int final) {
    if (c->len == 0) return 0;
    ssize_t n = -1;
    int e = EBADF;
    if (c->fd >= 0) {
        do {
            n = sendto(c->fd, c->buf, c->len, MSG_DONTWAIT | MSG_NOSIGNAL,
                       (struct sockaddr *)&c->addr, c->addrlen);
        } while (n < 0 && errno == EINTR);
        e = n < 0 ? errno : EMSGSIZE;
    }
    c->last_send_ns = gp_client_now_ns();
    if (n == (ssize_t)c->len) {
        c->sent_lines += c->nlines;
        c->sent_datagrams++;
        c->last_errno = 0;
        c->len = c->nlines = 0;
        return 0;
    }
    c->last_errno = e;
    if (!final && (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) &&
        c->len + GP_CLIENT_LINE_MAX + 1 <= GP_CLIENT_BUF) {
        c->deferred_sends++;
        return 0;
    }
    c->dropped_lines += c->nlines;
    c->dropped_datagrams++;
    c->len = c->nlines = 0;
    return -1;
}

/* Sends what is buffered now; never waits. Returns 0 if sent, -1 if dropped. */
static inline int gp_client_flush(gp_client *c) {
    return gp_client__send(c, 1);
}

/* Appends one raw protocol line (without newline; job=, rank= and ts= are NOT added).
 * Returns 0, or -1 if the line is too long or a send was dropped. */
static inline int gp_client_line(gp_client *c, const char *line, size_t n) {
    int rc = 0;
    if (n > GP_CLIENT_LINE_MAX) {
        c->dropped_lines++;
        return -1;
    }
    size_t goal = c->batch_bytes < GP_CLIENT_BUF ? c->batch_bytes : GP_CLIENT_BUF;
    if (c->len && c->len + n + 1 > goal && gp_client__send(c, 0) < 0) rc = -1;
    if (c->len + n + 1 > GP_CLIENT_BUF && gp_client__send(c, 1) < 0) rc = -1;
    memcpy(c->buf + c->len, line, n);
    c->len += n;
    c->buf[c->len++] = '\n';
    c->nlines++;
    long long now = gp_client_now_ns();
    if (c->len >= goal || c->flush_interval_ns <= 0 ||
        now - c->last_send_ns >= c->flush_interval_ns)
        if (gp_client__send(c, c->flush_interval_ns <= 0) < 0) rc = -1;
    return rc;
}

/* printf-style event: "KIND key=value ..." for the caller's fields; appends job=, rank=, ts=. */
static inline int gp_client_eventf(gp_client *c, long long ts_ns, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int gp_client_eventf(gp_client *c, long long ts_ns, const char *fmt, ...) {
    char line[GP_CLIENT_LINE_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        c->dropped_lines++;
        return -1;
    }
    int m = snprintf(line + n, sizeof line - (size_t)n, " job=%s", c->job);
    if (m > 0) n += m;
    if (c->rank >= 0 && (size_t)n < sizeof line) {
        m = snprintf(line + n, sizeof line - (size_t)n, " rank=%lld", c->rank);
        if (m > 0) n += m;
    }
    if ((size_t)n < sizeof line) {
        m = snprintf(line + n, sizeof line - (size_t)n, " ts=%lld",
                     ts_ns > 0 ? ts_ns : gp_client_now_ns());
        if (m > 0) n += m;
    }
    if ((size_t)n >= sizeof line) {
        c->dropped_lines++;
        return -1;
    }
    return gp_client_line(c, line, (size_t)n);
}

/* A bare word for the protocol: [A-Za-z0-9._:@/-] only, else the call is refused (-1). */
static inline int gp_client__word(const char *s) {
    return s && gp_client__valid_id(s);
}

static inline int gp_client_hello(gp_client *c, const char *unit, double flops_per_unit,
                                  double bytes_per_unit) {
    char extra[160] = "";
    size_t n = 0;
    if (unit && gp_client__word(unit))
        n += (size_t)snprintf(extra + n, sizeof extra - n, " unit=%s", unit);
    if (flops_per_unit > 0 && n < sizeof extra)
        n += (size_t)snprintf(extra + n, sizeof extra - n, " flops_per_unit=%.17g", flops_per_unit);
    if (bytes_per_unit > 0 && n < sizeof extra)
        snprintf(extra + n, sizeof extra - n, " bytes_per_unit=%.17g", bytes_per_unit);
    return gp_client_eventf(c, 0, "hello v=1 pid=%ld%s", (long)getpid(), extra);
}

/* One iteration finished now. units < 0: not sent; dur_ns < 0: not sent (the agent uses
 * the previous step's end as this one's start). */
static inline int gp_client_step(gp_client *c, long long step, double units, long long dur_ns) {
    char u[48] = "", d[40] = "";
    if (units >= 0) snprintf(u, sizeof u, " units=%.17g", units);
    if (dur_ns >= 0) snprintf(d, sizeof d, " dur=%lld", dur_ns);
    return gp_client_eventf(c, 0, "step step=%lld%s%s", step, u, d);
}

static inline int gp_client_phase(gp_client *c, const char *name, int begin) {
    if (!gp_client__word(name)) return -1;
    return gp_client_eventf(c, 0, "phase name=%s edge=%s", name, begin ? "begin" : "end");
}

/* One completed request; times in ns since the epoch (<0: unknown), end_ns <= 0: now. */
static inline int gp_client_request(gp_client *c, long long arrival_ns, long long first_token_ns,
                                    long long end_ns, long long prompt, long long output, int ok) {
    char a[40] = "", f[40] = "", p[32] = "", o[32] = "";
    if (arrival_ns >= 0) snprintf(a, sizeof a, " arrival=%lld", arrival_ns);
    if (first_token_ns >= 0) snprintf(f, sizeof f, " first_token=%lld", first_token_ns);
    if (prompt >= 0) snprintf(p, sizeof p, " prompt=%lld", prompt);
    if (output >= 0) snprintf(o, sizeof o, " output=%lld", output);
    return gp_client_eventf(c, end_ns, "request%s%s%s%s ok=%d", a, f, p, o, ok ? 1 : 0);
}

static inline int gp_client_stage(gp_client *c, const char *stage, long long item,
                                  long long enqueue_ns, long long start_ns, long long end_ns,
                                  const char *worker, long long bytes) {
    if (!gp_client__word(stage)) return -1;
    char i[32] = "", q[40] = "", s[40] = "", w[80] = "", b[32] = "";
    if (item >= 0) snprintf(i, sizeof i, " item=%lld", item);
    if (enqueue_ns >= 0) snprintf(q, sizeof q, " enqueue=%lld", enqueue_ns);
    if (start_ns >= 0) snprintf(s, sizeof s, " start=%lld", start_ns);
    if (worker && gp_client__word(worker)) snprintf(w, sizeof w, " worker=%s", worker);
    if (bytes >= 0) snprintf(b, sizeof b, " bytes=%lld", bytes);
    return gp_client_eventf(c, end_ns, "stage stage=%s%s%s%s%s%s", stage, i, q, s, w, b);
}

static inline int gp_client_restart(gp_client *c, long long step) {
    return gp_client_eventf(c, 0, "restart step=%lld", step);
}

static inline void gp_client_close(gp_client *c) {
    gp_client_flush(c);
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

#endif
