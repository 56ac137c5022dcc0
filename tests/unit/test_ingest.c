/* test_ingest.c: the receiving side. Real sockets in a temp dir: permissions, stale and live
 * sockets, loopback-only UDP, per-transport statistics, bad lines isolated from good ones,
 * and kernel drops counted. */
#include "testutil.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <time.h>

#include "ingest/ingest.h"

#define NOW 1764400000000000000LL

typedef struct {
    int n;
    gp_event ev[64];
} collected;

static void sink(void *ctx, const gp_event *e) {
    collected *c = ctx;
    if (c->n < 64) c->ev[c->n] = *e;
    c->n++;
}

static void send_unix(const char *path, const char *msg, size_t len) {
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s", path);
    assert_int_equal(sendto(fd, msg, len, 0, (struct sockaddr *)&sa, sizeof sa), (ssize_t)len);
    close(fd);
}

static void send_udp(int port, const char *msg, size_t len) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(sendto(fd, msg, len, 0, (struct sockaddr *)&sa, sizeof sa), (ssize_t)len);
    close(fd);
}

static void test_unix_perms_and_lines(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[256], err[256];
    snprintf(path, sizeof path, "%s/sub/goodput.sock", dir);
    gp_ingest *g;
    gp_ingest_opts o = {.unix_path = path};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    assert_string_equal(gp_ingest_unix_path(g), path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISSOCK(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0600);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    assert_int_equal(stat(sub, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);

    /* good, bad, blank and comment lines in one datagram: the bad ones do not hurt the rest */
    const char msg[] = "step job=a step=1 units=8\n"
                       "stepx job=a step=2\n"
                       "\n# comment\r\n"
                       "step job=a step=notanumber\n"
                       "phase job=a name=data_wait edge=begin\r\n"
                       "step job=a step=3";
    send_unix(path, msg, sizeof msg - 1);
    collected c = {0};
    struct pollfd pf[2];
    assert_int_equal(gp_ingest_fds(g, pf, 2), 1);
    assert_int_equal(poll(pf, 1, 1000), 1);
    assert_int_equal(gp_ingest_poll(g, NOW, sink, &c), 3);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.ev[0].step, 1);
    assert_int_equal(c.ev[0].ts_ns, NOW);
    assert_int_equal(c.ev[1].kind, GP_EV_PHASE);
    assert_int_equal(c.ev[2].step, 3);
    const gp_ingest_stats *s = gp_ingest_get_stats(g, GP_TR_UNIX);
    assert_int_equal(s->datagrams, 1);
    assert_int_equal(s->received, 5);
    assert_int_equal(s->parsed, 3);
    assert_int_equal(s->rejected, 2);
    assert_string_equal(s->first_bad_line, "stepx job=a step=2");
    assert_non_null(strstr(s->first_bad_reason, "unknown kind"));
    /* other transports untouched */
    assert_int_equal(gp_ingest_get_stats(g, GP_TR_UDP)->received, 0);

    /* nothing pending: returns 0 without blocking */
    assert_int_equal(gp_ingest_poll(g, NOW, sink, &c), 0);
    gp_ingest_close(g);
    assert_int_equal(stat(path, &sb), -1); /* removed on close */
    free(dir);
}

static void test_stale_live_and_unsafe(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[256], err[256];
    snprintf(path, sizeof path, "%s/goodput.sock", dir);
    gp_ingest_opts o = {.unix_path = path};
    gp_ingest *g, *g2;
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    /* a second agent on the same path is refused while the first listens */
    assert_int_equal(gp_ingest_open(&o, &g2, err, sizeof err), -1);
    assert_non_null(strstr(err, "already receiving"));
    gp_ingest_close(g);

    /* a stale socket (its owner died without unlinking) is replaced */
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%.100s", path);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    gp_ingest_close(g);

    /* a regular file is never replaced */
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a socket"));
    unlink(path);

    /* a directory open to others is refused */
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "open to other users"));
    rmdir(dir);
    free(dir);
}

static void test_default_path(void **st) {
    (void)st;
    char buf[256], want[256];
    char *old = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1);
    gp_ingest_default_path(buf, sizeof buf);
    assert_string_equal(buf, "/run/user/1234/goodput.sock");
    unsetenv("XDG_RUNTIME_DIR");
    gp_ingest_default_path(buf, sizeof buf);
    snprintf(want, sizeof want, "/tmp/goodput-%u/goodput.sock", (unsigned)getuid());
    assert_string_equal(buf, want);
    if (old) setenv("XDG_RUNTIME_DIR", old, 1);
    free(old);
}

static void test_udp(void **st) {
    (void)st;
    char err[256];
    gp_ingest *g;
    gp_ingest_opts bad = {.udp_addr = "0.0.0.0:0"};
    assert_int_equal(gp_ingest_open(&bad, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "not loopback"));
    gp_ingest_opts junk = {.udp_addr = "8649"};
    assert_int_equal(gp_ingest_open(&junk, &g, err, sizeof err), -1);

    gp_ingest_opts o = {.udp_addr = "127.0.0.1:0"};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    int port = gp_ingest_udp_port(g);
    assert_true(port > 0);
    assert_null(gp_ingest_unix_path(g));
    const char msg[] = "request job=s prompt=3 output=4 ok=1\nrequest job=s prompt=x";
    send_udp(port, msg, sizeof msg - 1);
    send_udp(port, msg, sizeof msg - 1);
    collected c = {0};
    struct pollfd pf;
    assert_int_equal(gp_ingest_fds(g, &pf, 1), 1);
    assert_int_equal(poll(&pf, 1, 1000), 1);
    usleep(20000); /* let the second datagram land too */
    assert_int_equal(gp_ingest_poll(g, NOW, sink, &c), 2);
    assert_int_equal(c.ev[0].prompt_tokens, 3);
    assert_int_equal(c.ev[0].output_tokens, 4);
    const gp_ingest_stats *s = gp_ingest_get_stats(g, GP_TR_UDP);
    assert_int_equal(s->datagrams, 2);
    assert_int_equal(s->received, 4);
    assert_int_equal(s->rejected, 2);
    assert_int_equal(s->dropped, 0);
    assert_string_equal(s->first_bad_line, "request job=s prompt=x");
    gp_ingest_close(g);
}

/* Fill the UDP receive queue without reading: the kernel's drop counter reaches stats. */
static void test_udp_drops_counted(void **st) {
    (void)st;
    char err[256];
    gp_ingest *g;
    gp_ingest_opts o = {.udp_addr = "127.0.0.1:0"};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)gp_ingest_udp_port(g))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static char big[60000];
    memset(big, '#', sizeof big); /* one comment line: valid, no events */
    int sent = 0;
    for (int i = 0; i < 400; i++)
        if (sendto(fd, big, sizeof big, MSG_DONTWAIT, (struct sockaddr *)&sa, sizeof sa) > 0)
            sent++;
    close(fd);
    /* The drop counter arrives with the next datagram read after the drops: send one more. */
    int fd2 = socket(AF_INET, SOCK_DGRAM, 0);
    assert_int_equal(sendto(fd2, "\n", 1, 0, (struct sockaddr *)&sa, sizeof sa), 1);
    close(fd2);
    usleep(10000);
    gp_ingest_poll(g, NOW, NULL, NULL);
    const gp_ingest_stats *s = gp_ingest_get_stats(g, GP_TR_UDP);
    /* Each 60 kB datagram read is one oversized (rejected) line; 24 MB is more than the
     * queue holds, so some were dropped, and every datagram sent is accounted for. */
    assert_true(s->dropped > 0);
    assert_int_equal(s->rejected + s->dropped, (uint64_t)sent);
    assert_int_equal(s->datagrams, s->rejected + 1);
    gp_ingest_close(g);
}

static void test_feed_and_oversize(void **st) {
    (void)st;
    char err[256];
    gp_ingest *g;
    gp_ingest_opts o = {0};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    assert_int_equal(gp_ingest_fds(g, NULL, 0), 0);
    size_t n = 10000;
    char *buf = malloc(n + 64);
    size_t k = (size_t)sprintf(buf, "step job=a step=1\nphase job=a edge=begin name=");
    memset(buf + k, 'x', n - k);
    k = n;
    k += (size_t)sprintf(buf + k, "\nstep job=a step=2\n");
    collected c = {0};
    assert_int_equal(gp_ingest_feed(g, GP_TR_HTTP, buf, k, NOW, sink, &c), 2);
    const gp_ingest_stats *s = gp_ingest_get_stats(g, GP_TR_HTTP);
    assert_int_equal(s->received, 3);
    assert_int_equal(s->rejected, 1);
    assert_non_null(strstr(s->first_bad_reason, "longer than the 4096"));
    assert_int_equal(strlen(s->first_bad_line), sizeof s->first_bad_line - 1); /* truncated */
    /* the first bad line is kept, later ones only counted; control bytes are sanitised */
    assert_int_equal(gp_ingest_feed(g, GP_TR_INPROC, "bad\x01line\n", 9, NOW, sink, &c), 0);
    assert_int_equal(gp_ingest_feed(g, GP_TR_INPROC, "worse\n", 6, NOW, sink, &c), 0);
    s = gp_ingest_get_stats(g, GP_TR_INPROC);
    assert_string_equal(s->first_bad_line, "bad?line");
    assert_int_equal(s->rejected, 2);
    free(buf);
    gp_ingest_close(g);
}

/* Every transport applies the same time rule and counts rejects by reason; the bounds are
 * the opener's (agent flags), and accept_old lifts the lower one. */
static void test_time_bounds_and_reasons(void **st) {
    (void)st;
    char err[256], buf[512];
    gp_ingest *g;
    gp_ingest_opts o = {.max_ahead_ns = 60LL * 1000000000LL,
                        .max_behind_ns = 3600LL * 1000000000LL};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    gp_time_bounds b = gp_ingest_bounds(g);
    assert_true(b.ahead_ns == 60LL * 1000000000LL && b.behind_ns == 3600LL * 1000000000LL);
    int n = snprintf(buf, sizeof buf,
                     "step job=a step=1 ts=%lld\n"            /* ok */
                     "step job=a step=2 ts=%lld\n"            /* 2 min ahead */
                     "alloc job=a uuid=G from=%lld\n"         /* 400 days ahead */
                     "request job=a arrival=%lld\n"           /* 2 h behind */
                     "alloc job=a uuid=G from=%lld to=%lld\n" /* ok */
                     "step job=a\n",                          /* malformed */
                     NOW, NOW + 120 * 1000000000LL, NOW + 400 * 86400LL * 1000000000LL,
                     NOW - 7200 * 1000000000LL, NOW - 1800 * 1000000000LL, NOW);
    for (gp_transport tr = 0; tr < GP_TR__COUNT; tr++) {
        collected c = {0};
        assert_int_equal(gp_ingest_feed(g, tr, buf, (size_t)n, NOW, sink, &c), 2);
        const gp_ingest_stats *s = gp_ingest_get_stats(g, tr);
        assert_int_equal(s->rejected, 4);
        assert_int_equal(s->rejected_by[GP_REJ_TIME_AHEAD], 2);
        assert_int_equal(s->rejected_by[GP_REJ_TIME_BEHIND], 1);
        assert_int_equal(s->rejected_by[GP_REJ_MALFORMED], 1);
        assert_non_null(strstr(s->first_bad_reason, "ahead of the receiver's clock"));
    }
    gp_ingest_close(g);
    /* defaults: 10 min ahead, 7 days behind; accept_old: no lower bound */
    gp_ingest_opts d = {.accept_old = 1};
    assert_int_equal(gp_ingest_open(&d, &g, err, sizeof err), 0);
    b = gp_ingest_bounds(g);
    assert_true(b.ahead_ns == GP_SKEW_AHEAD_DEFAULT_NS && b.behind_ns < 0);
    n = snprintf(buf, sizeof buf, "step job=a step=1 ts=%lld\nstep job=a step=2 ts=%lld\n",
                 NOW - 300 * 86400LL * 1000000000LL, NOW + 11 * 60 * 1000000000LL);
    collected c = {0};
    assert_int_equal(gp_ingest_feed(g, GP_TR_UDP, buf, (size_t)n, NOW, sink, &c), 1);
    assert_int_equal(gp_ingest_get_stats(g, GP_TR_UDP)->rejected_by[GP_REJ_TIME_AHEAD], 1);
    gp_ingest_close(g);
}

/* The cap on live job ids per transport: known jobs keep flowing, a new one past the cap
 * is refused and counted (not parsed, not rejected), each transport has its own share,
 * the trusted in-process feeder has none, and an id idle for the window frees its slot. */
static void test_job_cap(void **st) {
    (void)st;
    char err[256], line[128];
    gp_ingest *g;
    gp_ingest_opts o = {.max_jobs = 3, .accept_old = 1};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    collected c = {0};
    for (int i = 0; i < 5; i++) {
        int n = snprintf(line, sizeof line, "step job=j%d step=1\n", i);
        gp_ingest_feed(g, GP_TR_UDP, line, (size_t)n, NOW, sink, &c);
    }
    const gp_ingest_stats *s = gp_ingest_get_stats(g, GP_TR_UDP);
    assert_int_equal(s->parsed, 3);
    assert_int_equal(s->jobs_overflow, 2);
    assert_int_equal(s->rejected, 0);
    assert_int_equal(s->received, 5);
    /* a known job still passes; another transport has its own share */
    assert_int_equal(gp_ingest_feed(g, GP_TR_UDP, "step job=j1 step=2\n", 19, NOW, sink, &c), 1);
    assert_int_equal(gp_ingest_feed(g, GP_TR_UNIX, "step job=j9 step=1\n", 19, NOW, sink, &c), 1);
    for (int i = 0; i < 10; i++) {
        int n = snprintf(line, sizeof line, "step job=sim%d step=1\n", i);
        assert_int_equal(gp_ingest_feed(g, GP_TR_INPROC, line, (size_t)n, NOW, sink, &c), 1);
    }
    /* after the idle window every id was silent long enough: new ones take the slots */
    int64_t later = NOW + GP_INGEST_JOB_IDLE_NS + 1;
    assert_int_equal(gp_ingest_feed(g, GP_TR_UDP, "step job=new1 step=1\n", 21, later, sink, &c),
                     1);
    assert_int_equal(gp_ingest_feed(g, GP_TR_UDP, "step job=new2 step=1\n", 21, later, sink, &c),
                     1);
    assert_int_equal(gp_ingest_feed(g, GP_TR_UDP, "step job=j1 step=3\n", 19, later, sink, &c), 1);
    assert_int_equal(gp_ingest_feed(g, GP_TR_UDP, "step job=new3 step=1\n", 21, later, sink, &c),
                     0);
    assert_int_equal(gp_ingest_get_stats(g, GP_TR_UDP)->jobs_overflow, 3);
    gp_ingest_close(g);
}

static int64_t rt_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* With arrival stamps on, a line without ts read late keeps the time its datagram arrived
 * (the kernel's stamp), on both sockets; a line with ts keeps its own; off (the default,
 * the other tests), it is stamped with the now of the read. */
static void test_arrival_stamps(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[256], err[256];
    snprintf(path, sizeof path, "%s/a.sock", dir);
    gp_ingest *g;
    gp_ingest_opts o = {.unix_path = path, .udp_addr = "127.0.0.1:0", .arrival_scale = 1};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    /* The kernel turns receive stamping on for the whole host from a work queue: a
     * datagram in the first moments after the first such socket is stamped at the read
     * (the old behaviour). Let that pass. */
    usleep(100000);
    int64_t before = rt_ns();
    send_unix(path, "step job=a step=1\n", 18);
    send_udp(gp_ingest_udp_port(g), "step job=a step=2\n", 18);
    char with_ts[64];
    int n = snprintf(with_ts, sizeof with_ts, "step job=a step=3 ts=%lld\n", (long long)before);
    send_udp(gp_ingest_udp_port(g), with_ts, (size_t)n);
    int64_t sent = rt_ns();
    usleep(300000); /* read 300 ms or more after they were sent */
    collected c = {0};
    int64_t now = rt_ns();
    assert_int_equal(gp_ingest_poll_budget(g, now, 8192, sink, &c), 3);
    assert_int_equal(c.n, 3);
    for (int i = 0; i < 2; i++) { /* the arrival, not the read */
        /* (the kernel's stamp and the vDSO clock may differ by microseconds; a loopback
         * UDP datagram is stamped when the softirq delivers it, just after sendto) */
        assert_true(c.ev[i].ts_ns >= before - 1000000);
        assert_true(c.ev[i].ts_ns <= sent + 100000000LL);
        assert_true(c.ev[i].ts_ns <= now - 200000000LL);
    }
    assert_int_equal(c.ev[2].ts_ns, before);
    gp_ingest_close(g);
    /* a scale maps the wait into the caller's clock: at 10 (a source 10x the wall), a wait
     * of >= 200 ms moves the stamp >= 2 s back */
    o.arrival_scale = 10;
    o.unix_path = NULL;
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    usleep(100000);
    send_udp(gp_ingest_udp_port(g), "step job=a step=4\n", 18);
    usleep(200000);
    c.n = 0;
    assert_int_equal(gp_ingest_poll(g, NOW, sink, &c), 1);
    assert_true(c.ev[0].ts_ns <= NOW - 2000000000LL);
    assert_true(c.ev[0].ts_ns >= NOW - 600000000000LL); /* bounded: at most 60 s of wall */
    gp_ingest_close(g);
    free(dir);
}

/* A budgeted read takes every small datagram queued up to its budget in one call (it used
 * to stop after the first), and says when it stopped at the budget; the hold rule. */
static void test_budget_and_hold(void **st) {
    (void)st;
    char err[256];
    gp_ingest *g;
    gp_ingest_opts o = {.udp_addr = "127.0.0.1:0"};
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    int port = gp_ingest_udp_port(g);
    for (int i = 0; i < 5; i++)
        send_udp(port, "step job=a step=1\nstep job=a step=2\n", 36);
    usleep(20000);
    collected c = {0};
    assert_int_equal(gp_ingest_poll_budget(g, NOW, 8192, sink, &c), 10);
    const int64_t ms = 1000000;
    /* 5 datagrams over 50 ms (100/s): 5 would come within a 50 ms hold, and they take far
     * less than an eighth of any receive buffer: the whole hold */
    assert_int_equal(gp_ingest_hold_ns(g, 50 * ms, 50 * ms), 50 * ms);
    /* 5 over 1 s (5/s): under 2 expected within 50 ms, a hold would only add a wake-up */
    assert_int_equal(gp_ingest_hold_ns(g, 1000 * ms, 50 * ms), 0);
    /* 5 over 1 us: the buffer's eighth fills in less than 1 ms at that rate: no hold */
    assert_int_equal(gp_ingest_hold_ns(g, 1000, 50 * ms), 0);
    /* in between, bounded by the buffer: rcvbuf/8 at (36 + 2304) bytes a datagram */
    struct pollfd pf;
    assert_int_equal(gp_ingest_fds(g, &pf, 1), 1);
    int rcv = 0;
    socklen_t rl = sizeof rcv;
    assert_int_equal(getsockopt(pf.fd, SOL_SOCKET, SO_RCVBUF, &rcv, &rl), 0);
    double per_ns = (rcv / 8.0) / 2340.0 / (20 * ms); /* fills the eighth in 20 ms */
    int64_t since = (int64_t)(5 / per_ns);
    int64_t h = gp_ingest_hold_ns(g, since, 50 * ms);
    assert_true(h > 19 * ms && h < 21 * ms);
    /* nothing read: no hold */
    assert_int_equal(gp_ingest_poll_budget(g, NOW, 8192, sink, &c), 0);
    assert_int_equal(gp_ingest_hold_ns(g, 50 * ms, 50 * ms), 0);
    /* a read that stops at its budget leaves datagrams queued: read again at once */
    for (int i = 0; i < 8; i++)
        send_udp(port, "step job=a step=1\nstep job=a step=2\n", 36);
    usleep(20000);
    c.n = 0;
    int got = gp_ingest_poll_budget(g, NOW, 100, sink, &c);
    assert_true(got >= 2 && got < 16);
    assert_int_equal(gp_ingest_hold_ns(g, 50 * ms, 50 * ms), 0);
    assert_int_equal(gp_ingest_poll(g, NOW, sink, &c), 16 - got); /* the rest, unbudgeted */
    gp_ingest_close(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unix_perms_and_lines),
        cmocka_unit_test(test_stale_live_and_unsafe),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_udp),
        cmocka_unit_test(test_udp_drops_counted),
        cmocka_unit_test(test_feed_and_oversize),
        cmocka_unit_test(test_time_bounds_and_reasons),
        cmocka_unit_test(test_job_cap),
        cmocka_unit_test(test_arrival_stamps),
        cmocka_unit_test(test_budget_and_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
