/* test_client.c: the header-only C client (include/goodput/client.h) talking to gp_ingest
 * over real sockets: every call's event arrives intact, lines are batched, nothing blocks or
 * crashes without an agent, drops are counted, and a later agent is found again. */
#include "testutil.h"

#include <goodput/client.h>
#include <time.h>

#include "ingest/ingest.h"

typedef struct {
    int n;
    gp_event ev[256];
} collected;

static void sink(void *ctx, const gp_event *e) {
    collected *c = ctx;
    if (c->n < 256) c->ev[c->n] = *e;
    c->n++;
}

static int64_t now_ns(void) {
    return gp_client_now_ns();
}

static void drain(gp_ingest *g, collected *c, int want) {
    for (int i = 0; i < 100 && c->n < want; i++) {
        struct pollfd pf[2];
        int n = gp_ingest_fds(g, pf, 2);
        poll(pf, (nfds_t)n, 20);
        gp_ingest_poll(g, now_ns(), sink, c);
    }
}

static void test_every_kind_arrives(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[256], err[256];
    snprintf(path, sizeof path, "%s/g.sock", dir);
    gp_ingest_opts o = {.unix_path = path};
    gp_ingest *g;
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);

    gp_client c;
    assert_int_equal(gp_client_open(&c, path, "train-7"), 0);
    c.flush_interval_ns = 1000000000000LL; /* only size or explicit flush sends */
    int64_t t0 = now_ns();
    assert_int_equal(gp_client_hello(&c, "samples", 6.1e12, 0), 0);
    assert_int_equal(gp_client_phase(&c, "data_wait", 1), 0);
    assert_int_equal(gp_client_phase(&c, "data_wait", 0), 0);
    assert_int_equal(gp_client_step(&c, 17, 256, 480000000), 0);
    assert_int_equal(gp_client_request(&c, t0 - 900, t0 - 500, t0, 12, 34, 0), 0);
    assert_int_equal(gp_client_stage(&c, "decode", 9, t0 - 50, t0 - 20, t0, "w1", 4096), 0);
    assert_int_equal(gp_client_restart(&c, 1200), 0);
    assert_int_equal(gp_client_phase(&c, "bad name", 1), -1); /* refused, not sent */
    assert_int_equal(c.sent_datagrams, 0);                    /* all batched so far */
    assert_int_equal(gp_client_flush(&c), 0);
    assert_int_equal(c.sent_datagrams, 1);
    assert_int_equal(c.sent_lines, 7);
    int64_t t1 = now_ns();

    collected got = {0};
    drain(g, &got, 7);
    assert_int_equal(got.n, 7);
    const gp_ingest_stats *s = gp_ingest_get_stats(g, GP_TR_UNIX);
    assert_int_equal(s->datagrams, 1);
    assert_int_equal(s->rejected, 0);
    for (int i = 0; i < 7; i++) {
        assert_string_equal(got.ev[i].job_id, "train-7");
        assert_true(got.ev[i].ts_ns >= t0 && got.ev[i].ts_ns <= t1); /* stamped by the client */
    }
    assert_int_equal(got.ev[0].kind, GP_EV_HELLO);
    assert_int_equal(got.ev[0].pid, getpid());
    assert_string_equal(got.ev[0].name, "samples");
    assert_true(got.ev[0].flops_per_unit == 6.1e12);
    assert_int_equal(got.ev[1].edge, GP_PH_BEGIN);
    assert_int_equal(got.ev[2].edge, GP_PH_END);
    assert_true(got.ev[1].ts_ns <= got.ev[2].ts_ns);
    assert_int_equal(got.ev[3].step, 17);
    assert_true(got.ev[3].units == 256);
    assert_int_equal(got.ev[3].step_start_ns, got.ev[3].ts_ns - 480000000);
    assert_int_equal(got.ev[4].ts_ns, t0);
    assert_int_equal(got.ev[4].arrival_ns, t0 - 900);
    assert_int_equal(got.ev[4].first_token_ns, t0 - 500);
    assert_int_equal(got.ev[4].prompt_tokens, 12);
    assert_int_equal(got.ev[4].output_tokens, 34);
    assert_int_equal(got.ev[4].ok, 0);
    assert_string_equal(got.ev[5].name, "decode");
    assert_string_equal(got.ev[5].worker, "w1");
    assert_int_equal(got.ev[5].bytes, 4096);
    assert_int_equal(got.ev[6].kind, GP_EV_RESTART);
    assert_int_equal(got.ev[6].step, 1200);
    gp_client_close(&c);
    gp_ingest_close(g);
    rmdir(dir);
    free(dir);
}

static void test_batching_udp(void **st) {
    (void)st;
    char err[256];
    gp_ingest_opts o = {.udp_addr = "127.0.0.1:0"};
    gp_ingest *g;
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    char target[64];
    snprintf(target, sizeof target, "udp:127.0.0.1:%d", gp_ingest_udp_port(g));
    gp_client c;
    assert_int_equal(gp_client_open(&c, target, "j"), 0);
    c.batch_bytes = 1024;
    c.flush_interval_ns = 1000000000000LL;
    for (int i = 0; i < 200; i++)
        assert_int_equal(gp_client_step(&c, i, 1, -1), 0);
    gp_client_close(&c);
    assert_int_equal(c.sent_lines, 200);
    assert_int_equal(c.dropped_lines, 0);
    /* each line is ~55 bytes: ~18 per 1 kB datagram */
    assert_true(c.sent_datagrams >= 200 * 50 / 1024 && c.sent_datagrams <= 200 * 60 / 900 + 1);
    collected got = {0};
    drain(g, &got, 200);
    assert_int_equal(got.n, 200);
    for (int i = 0; i < 200; i++)
        assert_int_equal(got.ev[i].step, i);
    assert_int_equal(gp_ingest_get_stats(g, GP_TR_UDP)->datagrams, c.sent_datagrams);
    gp_ingest_close(g);
}

static void test_no_agent_never_blocks(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[256], err[256];
    snprintf(path, sizeof path, "%s/none.sock", dir);
    gp_client c;
    assert_int_equal(gp_client_open(&c, path, "j"), 0);
    c.flush_interval_ns = 0; /* every line is its own send attempt */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 10000; i++)
        gp_client_step(&c, i, 1, -1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    assert_true(s < 2.0); /* 10k failed sends are microseconds each, never a wait */
    assert_int_equal(c.dropped_lines, 10000);
    assert_int_equal(c.sent_lines, 0);
    assert_true(c.last_errno == ENOENT || c.last_errno == ECONNREFUSED);

    /* the agent appears later: the same client reaches it */
    gp_ingest_opts o = {.unix_path = path};
    gp_ingest *g;
    assert_int_equal(gp_ingest_open(&o, &g, err, sizeof err), 0);
    assert_int_equal(gp_client_step(&c, 10000, 1, -1), 0);
    collected got = {0};
    drain(g, &got, 1);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.ev[0].step, 10000);

    /* an agent that stops reading: the queue fills, sends fail fast, drops are counted */
    c.flush_interval_ns = 1000000000000LL;
    c.batch_bytes = 60000;
    uint64_t before = c.dropped_lines;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 200000; i++)
        gp_client_step(&c, i, 1, -1);
    gp_client_flush(&c);
    clock_gettime(CLOCK_MONOTONIC, &b);
    s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    assert_true(s < 5.0);
    assert_true(c.dropped_lines > before);
    assert_int_equal(c.sent_lines + c.dropped_lines, 10000 + 1 + 200000);
    /* what was not dropped is all there */
    got.n = 0;
    for (int i = 0; i < 50; i++)
        gp_ingest_poll(g, now_ns(), sink, &got);
    assert_int_equal((uint64_t)got.n, c.sent_lines - 1);
    gp_client_close(&c);
    gp_ingest_close(g);
    rmdir(dir);
    free(dir);
}

static void test_job_from_env(void **st) {
    (void)st;
    char buf[64], want[64];
    unsetenv("GOODPUT_JOB");
    unsetenv("SLURM_JOB_ID");
    unsetenv("POD_UID");
    unsetenv("KUBERNETES_SERVICE_HOST");
    gp_client_job_from_env(buf, sizeof buf);
    snprintf(want, sizeof want, "pid-%ld", (long)getpid());
    assert_string_equal(buf, want);
    setenv("POD_UID", "0f6a6b2e-1111-2222-3333-444455556666", 1);
    gp_client_job_from_env(buf, sizeof buf);
    assert_string_equal(buf, "pod:0f6a6b2e-1111-2222-3333-444455556666");
    setenv("SLURM_JOB_ID", "4242", 1);
    gp_client_job_from_env(buf, sizeof buf);
    assert_string_equal(buf, "4242");
    setenv("GOODPUT_JOB", "has space", 1); /* invalid: falls through */
    gp_client_job_from_env(buf, sizeof buf);
    assert_string_equal(buf, "4242");
    setenv("GOODPUT_JOB", "train-7", 1);
    gp_client_job_from_env(buf, sizeof buf);
    assert_string_equal(buf, "train-7");
    unsetenv("GOODPUT_JOB");
    unsetenv("SLURM_JOB_ID");
    unsetenv("POD_UID");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind_arrives),
        cmocka_unit_test(test_batching_udp),
        cmocka_unit_test(test_no_agent_never_blocks),
        cmocka_unit_test(test_job_from_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
