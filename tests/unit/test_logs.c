/* test_logs.c: training-log profiles (ingest/logs.h) on real excerpts of each framework
 * (tests/data/logs/, sources in tests/data/SOURCES.md), plus the interpretation rules. */
#include "testutil.h"

#include "ingest/logs.h"
#include "cli/agent_logs.h"

static gp_log_profiles ps;

static int setup(void **st) {
    (void)st;
    char err[256];
    memset(&ps, 0, sizeof ps);
    return gp_log_profiles_builtin(&ps, err, sizeof err);
}
static int teardown(void **st) {
    (void)st;
    gp_log_profiles_free(&ps);
    return 0;
}

static gp_event *read_log(const char *file, const char *profile, size_t *n, int *anchored) {
    char path[256], err[256];
    snprintf(path, sizeof path, "tests/data/logs/%s", file);
    const gp_log_profile *p = gp_log_profile_find(&ps, profile);
    assert_non_null(p);
    gp_event *ev = NULL;
    assert_int_equal(gp_log_read_file(path, p, "j1", &ev, n, anchored, err, sizeof err), 0);
    return ev;
}

static size_t count(const gp_event *ev, size_t n, gp_event_kind k) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ev[i].kind == k;
    return c;
}

static void test_megatron(void **st) {
    (void)st;
    size_t n;
    int anch;
    gp_event *ev = read_log("megatron.log", "megatron", &n, &anch);
    assert_int_equal(n, 4);
    assert_int_equal(anch, 1); /* no timestamps in Megatron's iteration lines */
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    assert_int_equal(s.steps, 4);
    assert_int_equal(s.first_step, 122);
    assert_int_equal(s.last_step, 125);
    /* median of 86545.2, 87871.6, 89474.8, 89075.2 ms */
    assert_near(s.step_p50_s, (87.8716 + 89.0752) / 2, 1e-6);
    /* each step's duration is the log's own elapsed time per iteration */
    assert_int_equal(ev[1].ts_ns - ev[1].step_start_ns, 87871600000LL);
    assert_true(ev[0].units < 0); /* no previous consumed-samples count */
    assert_near(ev[1].units, 1024, 0);
    assert_near(ev[3].units, 1024, 0);
    assert_string_equal(ev[0].job_id, "j1");
    free(ev);
}

static void test_torchtitan(void **st) {
    (void)st;
    size_t n;
    int anch;
    gp_event *ev = read_log("torchtitan.log", "torchtitan", &n, &anch);
    assert_int_equal(anch, 0);
    assert_int_equal(count(ev, n, GP_EV_STEP), 6);
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    assert_int_equal(s.first_step, 200);
    assert_int_equal(s.last_step, 250);
    /* 10 steps per line; gaps 14.648, 13.964, 13.961, 13.974, 13.977 s */
    assert_near(s.step_p50_s, 1.3974, 1e-4);
    free(ev);
}

static void test_deepspeed(void **st) {
    (void)st;
    size_t n;
    int anch;
    gp_event *ev = read_log("deepspeed.log", "deepspeed", &n, &anch);
    assert_int_equal(n, 3); /* the timer lines repeat no step */
    assert_int_equal(ev[0].step, 40);
    assert_int_equal(ev[0].ts_ns, 1646964418985000000LL); /* 2022-03-11 02:06:58,985 UTC */
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    assert_near(s.step_p50_s, 1.51445, 1e-4);
    free(ev);
}

static void test_lightning(void **st) {
    (void)st;
    size_t n;
    int anch;
    gp_event *ev = read_log("lightning.log", "lightning", &n, &anch);
    assert_int_equal(n, 5); /* each step drawn twice, once more with its loss */
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    assert_int_equal(s.last_step, 5);
    assert_near(s.step_p50_s, 4.87, 1e-9);
    free(ev);
}

static void test_lightning_validation_and_epochs(void **st) {
    (void)st;
    size_t n;
    int anch;
    gp_event *ev = read_log("lightning_sagemaker.log", "lightning", &n, &anch);
    /* step 1, eval begin/end, step 2, then epoch 1's first step is global step 3 */
    assert_int_equal(n, 5);
    assert_int_equal(ev[0].kind, GP_EV_STEP);
    assert_int_equal(ev[1].kind, GP_EV_PHASE);
    assert_string_equal(ev[1].name, "eval");
    assert_int_equal(ev[1].edge, GP_PH_BEGIN);
    assert_int_equal(ev[2].edge, GP_PH_END);
    assert_int_equal(ev[3].step, 2);
    assert_int_equal(ev[4].step, 3);
    assert_int_equal(count(ev, n, GP_EV_RESTART), 0); /* the epoch's bar restarting is not */
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    assert_int_equal(s.evals, 1);
    assert_true(s.eval_s < 0); /* no timestamps: its length is unknown, not 0 */
    free(ev);
}

static void test_hf(void **st) {
    (void)st;
    size_t n;
    int anch;
    gp_event *ev = read_log("hf_trainer.log", "hf", &n, &anch);
    /* three {'loss'} lines before any counter, then the tqdm counter's step 1999; the later
     * loss lines add nothing once numbered steps are seen */
    assert_int_equal(count(ev, n, GP_EV_STEP), 4);
    assert_int_equal(ev[n - 1].step, 1999);
    free(ev);
    ev = read_log("hf_eval.log", "hf", &n, &anch);
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    assert_int_equal(s.evals, 1);
    assert_near(s.eval_s, 1.8421, 1e-9);
    free(ev);
}

typedef struct {
    gp_event ev[16];
    size_t n;
} sink;
static void put(void *ctx, const gp_event *e) {
    sink *k = ctx;
    if (k->n < 16) k->ev[k->n++] = *e;
}

static void test_restart_and_live_clock(void **st) {
    (void)st;
    gp_log_reader r;
    gp_log_reader_init(&r, gp_log_profile_find(&ps, "megatron"), "j2");
    sink k = {.n = 0};
    const char *l1 = " iteration       10/     100 | elapsed time per iteration (ms): 500.0 |";
    const char *l2 = " saving checkpoint at iteration      10 to /ckpt";
    const char *l3 = " iteration        6/     100 | elapsed time per iteration (ms): 400.0 |";
    int64_t now = 1700000000000000000LL;
    gp_log_reader_line(&r, l1, strlen(l1), now, put, &k);
    gp_log_reader_line(&r, l2, strlen(l2), now + 1000000000, put, &k);
    gp_log_reader_line(&r, l3, strlen(l3), now + 5000000000LL, put, &k);
    /* step 10, checkpoint begin, restart from 5, checkpoint end (at step 6's start), step 6 */
    assert_int_equal(k.n, 5);
    assert_int_equal(k.ev[0].ts_ns, now); /* live: stamped on receipt */
    assert_string_equal(k.ev[1].name, "checkpoint_save");
    assert_int_equal(k.ev[2].kind, GP_EV_RESTART);
    assert_int_equal(k.ev[2].step, 5);
    assert_int_equal(k.ev[3].edge, GP_PH_END);
    assert_int_equal(k.ev[3].ts_ns, now + 5000000000LL - 400000000LL);
    assert_int_equal(k.ev[4].step, 6);
}

static void test_profile_file(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/p.conf", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "# mine\nprofile mine my trainer\nstep step=1 dur_s=2 re= it ([0-9]+) took "
               "([0-9.]+)s\ncompile_begin re=compiling\ncompile_end re=compiled\n");
    fclose(f);
    gp_log_profiles mine = {0};
    assert_int_equal(gp_log_profiles_load(&mine, path, err, sizeof err), 0);
    const gp_log_profile *p = gp_log_profile_find(&mine, "mine");
    assert_non_null(p);
    gp_log_reader r;
    gp_log_reader_init(&r, p, "j3");
    sink k = {.n = 0};
    const char *lines[] = {"2024-01-02 03:04:05 compiling graph", "2024-01-02 03:04:35 compiled",
                           "2024-01-02 03:04:37 it 1 took 2.0s"};
    for (int i = 0; i < 3; i++)
        gp_log_reader_line(&r, lines[i], strlen(lines[i]), -1, put, &k);
    assert_int_equal(k.n, 3);
    gp_log_summary s;
    gp_log_summarize(k.ev, k.n, &s);
    assert_near(s.compile_s, 30, 1e-9);
    assert_int_equal(k.ev[2].step_start_ns, k.ev[1].ts_ns);
    gp_log_profiles_free(&mine);

    f = fopen(path, "w");
    fprintf(f, "profile bad\nstep step=1 re=([0-9]+\n");
    fclose(f);
    gp_log_profiles bad = {0};
    assert_int_equal(gp_log_profiles_load(&bad, path, err, sizeof err), -1);
    char want[300];
    snprintf(want, sizeof want, "%s:2: regex", path);
    assert_non_null(strstr(err, want));
    gp_log_profiles_free(&bad);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* The agent's log tails compile their profiles only when a log is followed (or a profile
 * file is checked): an agent without --log holds none of their regular expressions for
 * its life (issue 22: ~0.2 MiB of its heap). A bad profile name is still refused at once. */
static void test_agent_logs_lazy_profiles(void **st) {
    (void)st;
    char err[256];
    gp_agent_logs l;
    assert_int_equal(gp_agent_logs_init(&l, NULL, err, sizeof err), 0);
    assert_int_equal(l.profiles.n, 0);
    assert_int_equal(
        gp_agent_logs_add(&l, "j1=/nonexistent/train.log:nosuchprofile", err, sizeof err), -1);
    assert_true(l.profiles.n > 0); /* loaded to look the name up */
    assert_int_equal(l.n, 0);
    gp_agent_logs_free(&l);
    assert_int_equal(l.profiles.n, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron),
        cmocka_unit_test(test_torchtitan),
        cmocka_unit_test(test_deepspeed),
        cmocka_unit_test(test_lightning),
        cmocka_unit_test(test_lightning_validation_and_epochs),
        cmocka_unit_test(test_hf),
        cmocka_unit_test(test_restart_and_live_clock),
        cmocka_unit_test(test_profile_file),
        cmocka_unit_test(test_agent_logs_lazy_profiles),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
