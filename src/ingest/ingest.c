/* ingest.c: receives event lines on a unix datagram socket and/or UDP on loopback.
 *
 * Design: both sockets are non-blocking and owned by the caller's poll loop (no threads).
 * gp_ingest_poll drains each socket with recvmmsg, a batch of datagrams per system call, and
 * hands every line to gp_ingest_feed, which parses it (protocol.c) and calls the sink for
 * each good event. Statistics are per transport; the first rejected line and its reason are
 * kept for the log. A bad line never affects its neighbours: each line is parsed alone.
 *
 * Safety: the unix socket is created 0600 inside a 0700 directory owned by the user; an
 * existing default directory that is not ours or is open to others is refused, a stale
 * socket file (nobody listening) is replaced, a live one is an error. UDP binds to loopback
 * only, since events are not authenticated.
 *
 * Drops: the kernel counts datagrams it discarded because the receive queue was full; the
 * UDP socket reports that counter through SO_RXQ_OVFL and we keep it as stats.dropped (in
 * datagrams). A unix datagram sender instead sees EAGAIN and counts its own drops (the
 * clients do), so nothing is lost silently on either path.
 *
 * Arrival times: with gp_ingest_opts.arrival_scale > 0 the sockets carry the kernel's
 * receive timestamp (SO_TIMESTAMPNS) and a line without ts is stamped when its datagram
 * arrived, not when it was read; the caller may then batch its reads (gp_ingest_hold_ns)
 * and no event's time moves. (The kernel turns stamping on for the host from a work
 * queue: a datagram in the first moments after the first stamping socket opens may carry
 * its read time instead, as every datagram did before.) */
#include "ingest/ingest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ingest/jobcap.h"
#include "ingest/protocol.h"

#define BATCH 16
#define DGRAM_MAX 65536
#define RCVBUF_BYTES (8 << 20)
#define MAX_DGRAMS_PER_POLL 65536 /* bounds one poll call under a flood */

struct gp_ingest {
    int ufd, udpfd;
    int max_jobs;
    gp_jobcap jobs[GP_TR__COUNT]; /* unix and UDP; HTTP is capped by the server */
    gp_time_bounds bounds;
    int udp_port;
    char upath[sizeof(((struct sockaddr_un *)0)->sun_path)];
    uint32_t udp_ovfl;    /* last SO_RXQ_OVFL value seen */
    double arrival_scale; /* gp_ingest_opts.arrival_scale: 0 = stamp at the read */
    size_t rcvbuf_bytes;  /* the smallest receive buffer of the open sockets */
    /* The last gp_ingest_poll_budget call: what it read, and whether it stopped at its
     * budget with datagrams maybe left (gp_ingest_hold_ns). */
    uint64_t last_dgrams, last_bytes;
    int last_full;
    gp_ingest_stats st[GP_TR__COUNT];
    char bufs[BATCH][DGRAM_MAX];
};

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void gp_ingest_default_path(char *buf, size_t cap) {
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (x && x[0] == '/')
        snprintf(buf, cap, "%s/goodput.sock", x);
    else
        snprintf(buf, cap, "/tmp/goodput-%u/goodput.sock", (unsigned)getuid());
}

/* Makes sure the socket's directory exists and only we can enter it. A directory we did not
 * create is accepted if it is ours and closed to others, or if it is XDG_RUNTIME_DIR-style
 * (ours, 0700); anything else is refused rather than trusted. */
static int secure_dir(const char *path, char *err, size_t errlen) {
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return 0; /* relative name in the current directory: caller's choice */
    if (slash == dir) return 0;
    *slash = 0;
    if (mkdir(dir, 0700) == 0) {
        if (chmod(dir, 0700) < 0) return fail(err, errlen, "chmod %s: %s", dir, strerror(errno));
        return 0;
    }
    if (errno != EEXIST)
        return fail(err, errlen, "cannot create socket directory %s: %s", dir, strerror(errno));
    struct stat sb;
    if (lstat(dir, &sb) < 0) return fail(err, errlen, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return fail(err, errlen, "%s exists and is not a directory", dir);
    if (sb.st_uid != getuid())
        return fail(err, errlen,
                    "socket directory %s belongs to uid %u, not to us (uid %u); remove it or "
                    "choose another path",
                    dir, (unsigned)sb.st_uid, (unsigned)getuid());
    if (sb.st_mode & 077)
        return fail(err, errlen,
                    "socket directory %s is open to other users (mode %03o); chmod 700 it", dir,
                    (unsigned)(sb.st_mode & 0777));
    return 0;
}

/* Arrival stamps when asked for, and the receive buffer the kernel granted (for the hold
 * rule: getsockopt reports the doubled figure the kernel accounts against). */
static void tune_socket(gp_ingest *g, int fd) {
    int one = 1;
    if (g->arrival_scale > 0) (void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    int rcv = 0;
    socklen_t rl = sizeof rcv;
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &rl) == 0 && rcv > 0 &&
        (!g->rcvbuf_bytes || (size_t)rcv < g->rcvbuf_bytes))
        g->rcvbuf_bytes = (size_t)rcv;
}

static int open_unix(gp_ingest *g, const char *path, char *err, size_t errlen) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return fail(err, errlen, "unix socket path %s is longer than %zu bytes", path,
                    sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (secure_dir(path, err, errlen) < 0) return -1;

    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (!S_ISSOCK(sb.st_mode))
            return fail(err, errlen, "%s exists and is not a socket; not replacing it", path);
        int probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
            int live = connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
            close(probe);
            if (live)
                return fail(err, errlen,
                            "another goodput agent is already receiving on %s; stop it or "
                            "choose another path",
                            path);
        }
        unlink(path); /* stale: its owner is gone */
    }

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(err, errlen, "unix socket: %s", strerror(errno));
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, "bind %s: %s", path, strerror(e));
    }
    /* The directory is 0700 already; 0600 on the socket keeps it private if moved. */
    if (chmod(path, 0600) < 0) {
        int e = errno;
        close(fd);
        unlink(path);
        return fail(err, errlen, "chmod %s: %s", path, strerror(e));
    }
    int rcv = RCVBUF_BYTES;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    tune_socket(g, fd);
    g->ufd = fd;
    snprintf(g->upath, sizeof g->upath, "%s", path);
    return 0;
}

static int open_udp(gp_ingest *g, const char *addr, char *err, size_t errlen) {
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1])
        return fail(err, errlen, "UDP address '%s' is not HOST:PORT (e.g. 127.0.0.1:8649)", addr);
    size_t hn = (size_t)(colon - addr);
    if (hn >= sizeof host) return fail(err, errlen, "UDP host in '%s' is too long", addr);
    memcpy(host, addr, hn);
    host[hn] = 0;
    if (host[0] == '[' && hn >= 2 && host[hn - 1] == ']') {
        memmove(host, host + 1, hn - 2);
        host[hn - 2] = 0;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_DGRAM,
                             .ai_flags = AI_NUMERICSERV},
                    *res = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc) return fail(err, errlen, "UDP address '%s': %s", addr, gai_strerror(rc));
    int loop = 0;
    if (res->ai_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)res->ai_addr;
        loop = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (res->ai_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)res->ai_addr;
        loop = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    }
    if (!loop) {
        freeaddrinfo(res);
        return fail(err, errlen,
                    "UDP address '%s' is not loopback; events are unauthenticated, so goodput "
                    "receives UDP on 127.0.0.1 or ::1 only",
                    addr);
    }
    int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        return fail(err, errlen, "UDP socket: %s", strerror(errno));
    }
    if (bind(fd, res->ai_addr, res->ai_addrlen) < 0) {
        int e = errno;
        close(fd);
        freeaddrinfo(res);
        return fail(err, errlen, "bind UDP %s: %s", addr, strerror(e));
    }
    freeaddrinfo(res);
    int one = 1, rcv = RCVBUF_BYTES;
    (void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof rcv) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
    tune_socket(g, fd);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        g->udp_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                    : ((struct sockaddr_in6 *)&ss)->sin6_port);
    g->udpfd = fd;
    return 0;
}

int gp_ingest_open(const gp_ingest_opts *o, gp_ingest **out, char *err, size_t errlen) {
    *out = NULL;
    gp_ingest *g = calloc(1, sizeof *g);
    if (!g) return fail(err, errlen, "out of memory");
    g->ufd = g->udpfd = -1;
    g->bounds.ahead_ns = o && o->max_ahead_ns > 0 ? o->max_ahead_ns : GP_SKEW_AHEAD_DEFAULT_NS;
    g->bounds.behind_ns = o && o->max_behind_ns > 0 ? o->max_behind_ns : GP_SKEW_BEHIND_DEFAULT_NS;
    if (o && o->accept_old) g->bounds.behind_ns = -1;
    g->max_jobs = o && o->max_jobs > 0 ? o->max_jobs : GP_INGEST_MAX_JOBS;
    g->arrival_scale = o && o->arrival_scale > 0 ? o->arrival_scale : 0;
    if (o && o->unix_path) {
        char def[sizeof g->upath];
        const char *p = o->unix_path;
        if (!p[0]) {
            gp_ingest_default_path(def, sizeof def);
            p = def;
        }
        if (open_unix(g, p, err, errlen) < 0) {
            gp_ingest_close(g);
            return -1;
        }
    }
    if (o && o->udp_addr && open_udp(g, o->udp_addr, err, errlen) < 0) {
        gp_ingest_close(g);
        return -1;
    }
    *out = g;
    return 0;
}

void gp_ingest_close(gp_ingest *g) {
    if (!g) return;
    if (g->ufd >= 0) {
        close(g->ufd);
        unlink(g->upath);
    }
    if (g->udpfd >= 0) close(g->udpfd);
    for (int t = 0; t < GP_TR__COUNT; t++)
        gp_jobcap_free(&g->jobs[t]);
    free(g);
}

int gp_ingest_fds(gp_ingest *g, struct pollfd *out, int cap) {
    int n = 0;
    if (g->ufd >= 0 && n < cap) out[n++] = (struct pollfd){.fd = g->ufd, .events = POLLIN};
    if (g->udpfd >= 0 && n < cap) out[n++] = (struct pollfd){.fd = g->udpfd, .events = POLLIN};
    return n;
}

const char *gp_ingest_unix_path(const gp_ingest *g) {
    return g->ufd >= 0 ? g->upath : NULL;
}

int gp_ingest_udp_port(const gp_ingest *g) {
    return g->udpfd >= 0 ? g->udp_port : -1;
}

int gp_ingest_max_jobs(const gp_ingest *g) {
    return g->max_jobs;
}

gp_time_bounds gp_ingest_bounds(const gp_ingest *g) {
    return g->bounds;
}

const gp_ingest_stats *gp_ingest_get_stats(const gp_ingest *g, gp_transport tr) {
    if ((int)tr < 0 || tr >= GP_TR__COUNT) return NULL;
    return &g->st[tr];
}

/* Keeps a printable, bounded copy of the first rejected line. */
static void keep_bad(gp_ingest_stats *s, const char *line, size_t len, const char *why) {
    if (s->first_bad_reason[0]) return;
    size_t n = len < sizeof s->first_bad_line - 1 ? len : sizeof s->first_bad_line - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)line[i];
        s->first_bad_line[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    s->first_bad_line[n] = 0;
    snprintf(s->first_bad_reason, sizeof s->first_bad_reason, "%s", why[0] ? why : "rejected");
}

static void reject(gp_ingest_stats *s, const char *line, size_t len, gp_reject_reason r,
                   const char *why) {
    s->received++;
    s->rejected++;
    s->rejected_by[(int)r >= 0 && r < GP_REJ__COUNT ? r : GP_REJ_MALFORMED]++;
    keep_bad(s, line, len, why);
}

/* 1: the line's job may be tracked; 0: over the transport's cap. In-process feeders (the
 * simulator) are trusted; HTTP lines were admitted by the server at POST time (jobcap.h). */
static int job_admit(gp_ingest *g, gp_transport tr, const char *job_id, int64_t now_ns) {
    if (tr == GP_TR_INPROC || tr == GP_TR_HTTP) return 1;
    g->jobs[tr].max_jobs = g->max_jobs;
    return gp_jobcap_admit(&g->jobs[tr], job_id, now_ns);
}

static const char *const TR_NAMES[GP_TR__COUNT] = {"unix", "udp", "http", "inproc"};

int gp_ingest_feed(gp_ingest *g, gp_transport tr, const char *buf, size_t len, int64_t now_ns,
                   gp_event_sink sink, void *ctx) {
    if ((int)tr < 0 || tr >= GP_TR__COUNT) return -1;
    gp_ingest_stats *s = &g->st[tr];
    int delivered = 0;
    const char *p = buf, *end = buf + len;
    char err[160];
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t n = (size_t)(le - p);
        gp_event e;
        gp_reject_reason why;
        int rc = gp_proto_parse_line_ex(p, n, now_ns, &g->bounds, &e, &why, err, sizeof err);
        if (rc == 1 && !job_admit(g, tr, e.job_id, now_ns)) {
            s->received++;
            s->jobs_overflow++;
            if (!g->jobs[tr].logged) {
                g->jobs[tr].logged = 1;
                fprintf(stderr,
                        "goodput: ingest: %s: more than %d live job ids; lines for new jobs are "
                        "refused and counted (goodput_ingest_jobs_overflow_total)\n",
                        TR_NAMES[tr], g->max_jobs);
            }
        } else if (rc == 1) {
            s->received++;
            s->parsed++;
            if (sink) sink(ctx, &e);
            delivered++;
        } else if (rc < 0) {
            reject(s, p, n, why, err);
        }
        p = nl ? nl + 1 : end;
    }
    return delivered;
}

/* The time a datagram's lines without ts are stamped with: now_ns, or with arrival stamps
 * on, now_ns moved back by the wall time it waited in the socket (read_rt_ns - its kernel
 * stamp, kept within [0, 60 s] so a clock step cannot throw it far). */
static int64_t arrival_ns(const gp_ingest *g, struct msghdr *h, int64_t now_ns,
                          int64_t read_rt_ns) {
    if (g->arrival_scale <= 0) return now_ns;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            int64_t age = read_rt_ns - ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
            if (age < 0) age = 0;
            if (age > 60000000000LL) age = 60000000000LL;
            return now_ns - (int64_t)((double)age * g->arrival_scale);
        }
    return now_ns;
}

/* Drains one socket, up to max_bytes of datagrams (0 = no limit); returns events delivered
 * or -1. Under a byte budget, datagrams of many lines are taken one at a time, so a call
 * never runs far past its budget (a batch is processed whole once received). */
static int drain(gp_ingest *g, int fd, gp_transport tr, int64_t now_ns, gp_event_sink sink,
                 void *ctx, size_t max_bytes) {
    int vlen = max_bytes ? 1 : BATCH;
    size_t bytes = 0;
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    char ctl[BATCH][CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(struct timespec))];
    gp_ingest_stats *s = &g->st[tr];
    int delivered = 0, total = 0, emptied = 0;
    while (total < MAX_DGRAMS_PER_POLL && (!max_bytes || bytes < max_bytes)) {
        for (int i = 0; i < BATCH; i++) {
            iov[i] = (struct iovec){.iov_base = g->bufs[i], .iov_len = DGRAM_MAX};
            msgs[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i],
                                              .msg_iovlen = 1,
                                              .msg_control = ctl[i],
                                              .msg_controllen = sizeof ctl[i]};
            msgs[i].msg_len = 0;
        }
        int asked = vlen;
        int n = recvmmsg(fd, msgs, (unsigned)asked, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                emptied = 1;
                break;
            }
            if (errno == EINTR) continue;
            return -1;
        }
        int64_t read_rt = 0;
        if (g->arrival_scale > 0) {
            struct timespec rt;
            clock_gettime(CLOCK_REALTIME, &rt);
            read_rt = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
        }
        for (int i = 0; i < n; i++) {
            s->datagrams++;
            struct msghdr *h = &msgs[i].msg_hdr;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
                    uint32_t ov;
                    memcpy(&ov, CMSG_DATA(c), sizeof ov);
                    if (ov != g->udp_ovfl) s->dropped += (uint32_t)(ov - g->udp_ovfl);
                    g->udp_ovfl = ov;
                }
            size_t len = msgs[i].msg_len;
            bytes += len;
            if (max_bytes) { /* the next call asks for what fits the rest of the budget */
                size_t fit = bytes < max_bytes ? (max_bytes - bytes) / (len ? len : 1) : 1;
                vlen = fit < 1 ? 1 : fit > BATCH ? BATCH : (int)fit;
            }
            if (h->msg_flags & MSG_TRUNC) {
                /* Only the complete lines before the cut are trusted. */
                const char *b = g->bufs[i];
                const char *last = len ? memrchr(b, '\n', len) : NULL;
                size_t keep = last ? (size_t)(last - b) + 1 : 0;
                reject(s, b + keep, len - keep, GP_REJ_TRUNCATED,
                       "datagram larger than 65536 bytes: tail cut");
                len = keep;
            }
            delivered += gp_ingest_feed(g, tr, g->bufs[i], len, arrival_ns(g, h, now_ns, read_rt),
                                        sink, ctx);
        }
        total += n;
        if (n < asked) { /* (vlen may have grown above: fewer than asked means empty) */
            emptied = 1;
            break;
        }
    }
    g->last_dgrams += (uint64_t)total;
    g->last_bytes += bytes;
    if (!emptied) g->last_full = 1;
    return delivered;
}

int gp_ingest_poll_budget(gp_ingest *g, int64_t now_ns, size_t max_bytes, gp_event_sink sink,
                          void *ctx) {
    int delivered = 0, r;
    g->last_dgrams = g->last_bytes = 0;
    g->last_full = 0;
    if (g->ufd >= 0) {
        if ((r = drain(g, g->ufd, GP_TR_UNIX, now_ns, sink, ctx, max_bytes)) < 0) return -1;
        delivered += r;
    }
    if (g->udpfd >= 0) {
        if ((r = drain(g, g->udpfd, GP_TR_UDP, now_ns, sink, ctx, max_bytes)) < 0) return -1;
        delivered += r;
    }
    return delivered;
}

int64_t gp_ingest_hold_ns(const gp_ingest *g, int64_t since_prev_ns, int64_t max_hold_ns) {
    if (g->last_full || !g->last_dgrams || since_prev_ns <= 0 || max_hold_ns <= 0) return 0;
    double rate = (double)g->last_dgrams / (double)since_prev_ns; /* datagrams per ns */
    if (rate * (double)max_hold_ns < 2) return 0;
    /* What the kernel charges a datagram against the buffer: its bytes and the socket
     * buffer's own size (its truesize: 1-2.3 KiB for a small datagram on loopback; the
     * larger figure, so the estimate errs towards shorter holds). */
    double per_dgram = (double)g->last_bytes / (double)g->last_dgrams + 2304;
    double room = (g->rcvbuf_bytes ? (double)g->rcvbuf_bytes : 212992.0) / 8;
    double hold = room / (rate * per_dgram);
    if (hold > (double)max_hold_ns) hold = (double)max_hold_ns;
    return hold < 1000000 ? 0 : (int64_t)hold; /* under 1 ms saves nothing */
}

int gp_ingest_last_full(const gp_ingest *g) {
    return g->last_full;
}

int gp_ingest_poll(gp_ingest *g, int64_t now_ns, gp_event_sink sink, void *ctx) {
    return gp_ingest_poll_budget(g, now_ns, 0, sink, ctx);
}
