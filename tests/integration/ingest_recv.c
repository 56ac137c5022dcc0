/* ingest_recv.c: a minimal receiver for the client tests: gp_ingest on a unix socket (and
 * optionally UDP), every accepted event printed in canonical form (gp_proto_format) on
 * stdout, then one "#stats" line per transport. Stops on SIGTERM/SIGINT.
 *
 * usage: ingest_recv SOCKET_PATH [UDP_ADDR]
 * Prints "#ready" once listening. Built by tests/integration/ingest_*.sh. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ingest/ingest.h"
#include "ingest/protocol.h"

static volatile sig_atomic_t stop;
static void on_sig(int s) {
    (void)s;
    stop = 1;
}

static void print_event(void *ctx, const gp_event *e) {
    (void)ctx;
    char buf[GP_PROTO_MAX_LINE + 1];
    if (gp_proto_format(e, buf, sizeof buf) > 0) puts(buf);
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ingest_recv SOCKET_PATH [UDP_ADDR]\n");
        return 2;
    }
    gp_ingest_opts o = {.unix_path = argv[1], .udp_addr = argc > 2 ? argv[2] : NULL};
    gp_ingest *g;
    char err[256];
    if (gp_ingest_open(&o, &g, err, sizeof err) < 0) {
        fprintf(stderr, "ingest_recv: %s\n", err);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_sig};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("#ready udp_port=%d\n", gp_ingest_udp_port(g));
    fflush(stdout);
    while (!stop) {
        struct pollfd pf[2];
        int n = gp_ingest_fds(g, pf, 2);
        poll(pf, (nfds_t)n, 50);
        gp_ingest_poll(g, now_ns(), print_event, NULL);
    }
    gp_ingest_poll(g, now_ns(), print_event, NULL);
    const char *names[] = {"unix", "udp"};
    for (int t = 0; t < 2; t++) {
        const gp_ingest_stats *s = gp_ingest_get_stats(g, (gp_transport)t);
        printf("#stats %s datagrams=%llu received=%llu parsed=%llu rejected=%llu dropped=%llu "
               "first_bad=\"%s\" reason=\"%s\"\n",
               names[t], (unsigned long long)s->datagrams, (unsigned long long)s->received,
               (unsigned long long)s->parsed, (unsigned long long)s->rejected,
               (unsigned long long)s->dropped, s->first_bad_line, s->first_bad_reason);
    }
    gp_ingest_close(g);
    return 0;
}
