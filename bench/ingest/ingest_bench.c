/* ingest_bench.c: throughput and loss of the event receiver (gp_ingest) and a paced sender
 * that speaks either the goodput protocol or StatsD, so the same sender drives both goodput
 * and the statsd daemon at equal batching (lines per datagram).
 *
 *   ingest_bench recv (--unix PATH | --udp ADDR) [--idle-ms N]
 *       receives until N ms pass without data after the first datagram (default 1500), then
 *       prints "events=E datagrams=D dropped=X rejected=R busy_s=S": busy_s is the CPU time
 *       the receiver used (it runs on one core), so E / busy_s is events per core-second.
 *   ingest_bench send (--unix PATH | --udp ADDR) --events N [--rate EV_PER_S] [--batch L]
 *       [--statsd] [--block] [--client]
 *       sends N events in datagrams of L lines, paced to the rate (0: as fast as possible).
 *       --block uses blocking sends (unix socket back-pressure: nothing is lost, so the rate
 *       achieved is the receiver's capacity). --client sends through the C client
 *       (include/goodput/client.h) with its default batching instead of raw datagrams.
 *       Prints "sent=N send_errors=E wall_s=W".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <goodput/client.h>

#include "ingest/ingest.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void count(void *ctx, const gp_event *e) {
    (void)e;
    ++*(uint64_t *)ctx;
}

static int do_recv(const char *unix_path, const char *udp, int idle_ms) {
    gp_ingest_opts o = {.unix_path = unix_path, .udp_addr = udp};
    gp_ingest *g;
    char err[256];
    if (gp_ingest_open(&o, &g, err, sizeof err) < 0) {
        fprintf(stderr, "recv: %s\n", err);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    uint64_t events = 0;
    double last = 0, c0 = 0;
    int started = 0;
    for (;;) {
        struct pollfd pf[2];
        int n = gp_ingest_fds(g, pf, 2);
        int r = poll(pf, (nfds_t)n, 50);
        if (r > 0) {
            if (!started) {
                started = 1;
                c0 = cpu_s();
            }
            gp_ingest_poll(g, wall_ns(), count, &events);
            last = now_s();
        } else if (started && (now_s() - last) * 1000 > idle_ms) {
            break;
        }
    }
    double busy = cpu_s() - c0;
    gp_transport tr = unix_path ? GP_TR_UNIX : GP_TR_UDP;
    const gp_ingest_stats *s = gp_ingest_get_stats(g, tr);
    printf("events=%llu datagrams=%llu dropped=%llu rejected=%llu busy_s=%.3f\n",
           (unsigned long long)events, (unsigned long long)s->datagrams,
           (unsigned long long)s->dropped, (unsigned long long)s->rejected, busy);
    gp_ingest_close(g);
    return 0;
}

/* The real C client (include/goodput/client.h) with its default batching, paced per event. */
static int do_send_client(const char *unix_path, const char *udp, long events, double rate) {
    static gp_client c;
    char target[300];
    if (unix_path)
        snprintf(target, sizeof target, "%s", unix_path);
    else
        snprintf(target, sizeof target, "udp:%s", udp);
    if (gp_client_open(&c, target, "bench-1") < 0) return 1;
    double t0 = now_s();
    for (long i = 0; i < events; i++) {
        if (rate > 0 && (i & 63) == 0) {
            double ahead = t0 + (double)i / rate - now_s();
            if (ahead > 0.0002) {
                struct timespec ts = {0, (long)(ahead * 1e9)};
                nanosleep(&ts, NULL);
            }
        }
        gp_client_step(&c, i, 256, -1);
    }
    gp_client_close(&c);
    printf("sent=%llu send_errors=%llu wall_s=%.3f datagrams=%llu deferred=%llu\n", c.sent_lines,
           c.dropped_lines, now_s() - t0, c.sent_datagrams, c.deferred_sends);
    return 0;
}

static int do_send(const char *unix_path, const char *udp, long events, double rate, int batch,
                   int statsd, int block) {
    struct sockaddr_storage ss;
    socklen_t sl;
    int fd;
    memset(&ss, 0, sizeof ss);
    if (unix_path) {
        struct sockaddr_un *sa = (struct sockaddr_un *)&ss;
        sa->sun_family = AF_UNIX;
        snprintf(sa->sun_path, sizeof sa->sun_path, "%s", unix_path);
        sl = sizeof *sa;
        fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    } else {
        struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
        char host[64];
        const char *colon = strrchr(udp, ':');
        snprintf(host, sizeof host, "%.*s", (int)(colon - udp), udp);
        sa->sin_family = AF_INET;
        sa->sin_port = htons((uint16_t)atoi(colon + 1));
        inet_pton(AF_INET, host, &sa->sin_addr);
        sl = sizeof *sa;
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        int sb = 4 << 20;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
    }
    int flags = block ? 0 : MSG_DONTWAIT;
    /* Up to NDG datagrams per sendmmsg call: the sender's system-call cost is the same for
     * both receivers and stays out of the way at high rates. Pacing: each call sends what is
     * due by now, then sleeps until the next datagram is due. */
    enum { NDG = 64, DGMAX = 16384 };
    static char bufs[NDG][DGMAX];
    struct mmsghdr msgs[NDG];
    struct iovec iov[NDG];
    int lines[NDG];
    long sent = 0, errors = 0, step = 0;
    double t0 = now_s();
    while (sent < events) {
        int ndg = NDG;
        if (rate > 0) {
            double due = (now_s() - t0) * rate; /* events due by now */
            if (due <= (double)sent) {
                double wait = ((double)sent + 1) / rate - (now_s() - t0);
                struct timespec ts = {0, (long)(wait * 1e9) + 1000};
                nanosleep(&ts, NULL);
                continue;
            }
            long dg = (long)((due - (double)sent + batch - 1) / batch);
            ndg = dg < NDG ? (int)dg : NDG;
            if (ndg < 1) ndg = 1;
        }
        int m = 0;
        long queued = 0;
        for (; m < ndg && sent + queued < events; m++) {
            size_t len = 0;
            int k = 0;
            for (; k < batch && sent + queued < events && len + 64 < DGMAX; k++, queued++) {
                /* A realistic step line for goodput; the StatsD equivalent is one counter. */
                if (statsd)
                    len += (size_t)sprintf(bufs[m] + len, "train.step:1|c\n");
                else
                    len += (size_t)sprintf(bufs[m] + len, "step job=bench-1 step=%ld units=256\n",
                                           step++);
            }
            lines[m] = k;
            iov[m] = (struct iovec){.iov_base = bufs[m], .iov_len = len};
            memset(&msgs[m], 0, sizeof msgs[m]);
            msgs[m].msg_hdr.msg_name = &ss;
            msgs[m].msg_hdr.msg_namelen = sl;
            msgs[m].msg_hdr.msg_iov = &iov[m];
            msgs[m].msg_hdr.msg_iovlen = 1;
        }
        int done = 0;
        while (done < m) {
            int r = sendmmsg(fd, msgs + done, (unsigned)(m - done), flags);
            if (r <= 0) { /* the first unsent datagram is lost (EAGAIN): count it, go on */
                errors += lines[done];
                done++;
                continue;
            }
            done += r;
        }
        sent += queued;
    }
    double wall = now_s() - t0;
    printf("sent=%ld send_errors=%ld wall_s=%.3f\n", sent, errors, wall);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ingest_bench recv|send ... (see the header comment)\n");
        return 2;
    }
    const char *unix_path = NULL, *udp = NULL;
    long events = 0;
    double rate = 0;
    int batch = 1, statsd = 0, block = 0, idle_ms = 1500, client = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--unix"))
            unix_path = v, i++;
        else if (!strcmp(a, "--udp"))
            udp = v, i++;
        else if (!strcmp(a, "--events"))
            events = atol(v), i++;
        else if (!strcmp(a, "--rate"))
            rate = atof(v), i++;
        else if (!strcmp(a, "--batch"))
            batch = atoi(v), i++;
        else if (!strcmp(a, "--idle-ms"))
            idle_ms = atoi(v), i++;
        else if (!strcmp(a, "--statsd"))
            statsd = 1;
        else if (!strcmp(a, "--block"))
            block = 1;
        else if (!strcmp(a, "--client"))
            client = 1;
        else {
            fprintf(stderr, "unknown argument %s\n", a);
            return 2;
        }
    }
    if (!unix_path == !udp) {
        fprintf(stderr, "give --unix PATH or --udp ADDR\n");
        return 2;
    }
    if (batch < 1 || batch > 1000) batch = 1;
    if (!strcmp(argv[1], "recv")) return do_recv(unix_path, udp, idle_ms);
    if (!strcmp(argv[1], "send") && client) return do_send_client(unix_path, udp, events, rate);
    if (!strcmp(argv[1], "send"))
        return do_send(unix_path, udp, events, rate, batch, statsd, block);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
