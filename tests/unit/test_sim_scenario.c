/* test_sim_scenario.c: the scenario format: values, defaults, errors naming file:line and
 * key, the in-code builder, and the shipped example scenarios. */
#include "testutil.h"

#include <time.h>

#include "sim/scenario.h"
#include "sim/sim.h"

static void expect_error(const char *text, const char *needle1, const char *needle2) {
    gp_scenario sc;
    char err[512] = "";
    int rc = gp_scenario_parse_string(text, "t.conf", &sc, err, sizeof err);
    if (rc == 0) fail_msg("parsed, expected an error containing '%s'", needle1);
    if (!strstr(err, needle1)) fail_msg("error '%s' lacks '%s'", err, needle1);
    if (needle2 && !strstr(err, needle2)) fail_msg("error '%s' lacks '%s'", err, needle2);
}

static void test_parse_values(void **st) {
    (void)st;
    const char *text = "# a comment\n"
                       "[node]\n"
                       "name = n1   # trailing comment\n"
                       "gpus = 4\n"
                       "model = A100-SXM4-80GB\n"
                       "seed = 7 ; duration = 90m\n"
                       "profiling = no\n"
                       "start = 2026-03-01T12:00:00Z\n"
                       "[job a]\n"
                       "kind = training\n"
                       "gpus = 0-2\n"
                       "submit = -5m ; start = 30s ; end = 1h\n"
                       "sample_cpu = 2ms\n"
                       "sample_bytes = 600KB\n"
                       "flops_per_step = 2.5T\n"
                       "allreduce_bytes = 1GiB\n"
                       "allreduce_bw = 25GB/s\n"
                       "restart_at = 20m, 40m\n"
                       "mem = 50%\n"
                       "launch_overhead = 10us\n"
                       "[job b]\n"
                       "kind = inference ; gpus = 3 ; params = 7B ; rate = 3.5\n"
                       "[job c]\n"
                       "kind = not_ready ; gpus = 3\n";
    gp_scenario sc;
    char err[512] = "";
    int rc = gp_scenario_parse_string(text, "t.conf", &sc, err, sizeof err);
    if (rc < 0) fail_msg("%s", err);
    assert_string_equal(sc.node_name, "n1");
    assert_int_equal(sc.n_gpus, 4);
    assert_non_null(sc.spec);
    assert_string_equal(sc.spec->model, "A100-SXM4-80GB");
    assert_int_equal(sc.seed, 7);
    assert_true(sc.duration_ns == 90LL * 60 * 1000000000LL);
    assert_int_equal(sc.profiling, 0);
    /* 2026-03-01T12:00:00Z = 2026-01-01 + 59 days + 12 h */
    assert_true(sc.start_epoch_ns == GP_SIM_EPOCH_NS + (59LL * 86400 + 12 * 3600) * 1000000000LL);
    assert_int_equal(sc.n_jobs, 3);
    gp_scenario_job *a = &sc.jobs[0];
    assert_int_equal(a->n_gpus, 3);
    assert_int_equal(a->gpus[2], 2);
    assert_true(a->submit_ns == -300LL * 1000000000LL);
    assert_true(a->start_ns == 30LL * 1000000000LL);
    assert_true(a->end_ns == 3600LL * 1000000000LL);
    assert_near(a->sample_cpu_s, 0.002, 1e-12);
    assert_near(a->sample_bytes, 600e3, 1e-6);
    assert_near(a->flops_per_step, 2.5e12, 1);
    assert_near(a->allreduce_bytes, 1073741824.0, 1e-3);
    assert_near(a->allreduce_bw, 25e9, 1);
    assert_int_equal(a->n_restarts, 2);
    assert_true(a->restart_at_ns[1] == 2400LL * 1000000000LL);
    assert_near(a->mem_frac, 0.5, 1e-12);
    assert_near(a->launch_overhead_s, 10e-6, 1e-15);
    assert_int_equal(sc.jobs[1].kind, GP_SJ_INFERENCE);
    assert_near(sc.jobs[1].params, 7e9, 1);
    assert_near(sc.jobs[1].rate, 3.5, 1e-12);
    assert_int_equal(sc.jobs[2].kind, GP_SJ_NOT_READY);
    assert_true(sc.jobs[2].ready_after_ns == GP_SCEN_NEVER);
    assert_true(sc.jobs[2].submit_ns == 0); /* default: submit = start */
    gp_scenario_free(&sc);
}

static void test_parse_errors_name_line_and_key(void **st) {
    (void)st;
    expect_error("[node]\ngpus = 2\n[job x]\ngpus = 0\nloader_workers = -3\n",
                 "t.conf:5:", "key 'loader_workers'");
    expect_error("[node]\nmodel = Z9000\n", "t.conf:2:", "key 'model'");
    expect_error("[node]\ngpus = 2\n[job x]\n\ngpus = 0\nfrobnicate = 1\n",
                 "t.conf:6:", "key 'frobnicate'");
    expect_error("gpus = 2\n", "t.conf:1:", "key 'gpus'");
    expect_error("[node]\nduration = 5 parsecs\n", "t.conf:2:", "key 'duration'");
    expect_error("[node]\n[weird]\n", "t.conf:2:", "[weird]");
    expect_error("[node]\ngpus = 2\n[job x]\ngpus = 0 ; efficiency = 1.5\n",
                 "t.conf:4:", "key 'efficiency'");
    /* validation errors point at the job's header line */
    expect_error("[node]\ngpus = 2\n\n[job x]\ngpus = 5\n", "t.conf:4:", "key 'gpus'");
    expect_error("[node]\ngpus = 2\n[job x]\ngpus = 0\n[job x]\ngpus = 1\n",
                 "t.conf:5:", "defined twice");
    expect_error("[node]\ngpus = 2\n[job x]\nkind = training\n", "t.conf:3:", "key 'gpus'");
    expect_error("[node]\ngpus = 2\n[job x]\ngpus = 0 ; sm_fill = 0\n",
                 "t.conf:4:", "key 'sm_fill'");
    expect_error("[node]\ngpus = 2\n[job x]\ngpus = 0 ; hbm_bytes = -1GB\n",
                 "t.conf:4:", "key 'hbm_bytes'");

    gp_scenario sc;
    char err[256];
    assert_int_equal(gp_scenario_load("/nonexistent/x.conf", &sc, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/x.conf"));
    gp_scenario_free(&sc);
}

static void test_build_in_code(void **st) {
    (void)st;
    gp_scenario sc;
    gp_scenario_init(&sc);
    sc.n_gpus = 4;
    gp_scenario_job *j = gp_scenario_add_job(&sc, "t1", GP_SJ_TRAINING);
    assert_non_null(j);
    assert_int_equal(gp_scenario_job_set_gpu_range(j, 0, 2), 0);
    j = gp_scenario_add_job(&sc, "bad id!", GP_SJ_IDLE);
    int g = 3;
    gp_scenario_job_set_gpus(j, &g, 1);
    char err[256];
    assert_int_equal(gp_scenario_validate(&sc, err, sizeof err), -1);
    assert_non_null(strstr(err, "bad id!"));
    snprintf(sc.jobs[1].id, sizeof sc.jobs[1].id, "nb");
    assert_int_equal(gp_scenario_validate(&sc, err, sizeof err), 0);
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    gp_scenario_free(&sc); /* the simulator keeps its own copy */
    assert_true(gp_sim_start_ns(sim) == GP_SIM_EPOCH_NS);
    assert_int_equal(gp_sim_n_devices(sim), 4);
    gp_device d[4];
    size_t n;
    gp_sim_devices(sim, d, 4, &n);
    assert_int_equal(n, 4);
    for (size_t a = 0; a < n; a++) {
        assert_int_equal(strncmp(d[a].uuid, "GPU-", 4), 0);
        assert_non_null(d[a].spec);
        for (size_t b = 0; b < a; b++)
            assert_string_not_equal(d[a].uuid, d[b].uuid);
    }
    char u[96];
    gp_sim_uuid("sim-node", 2, u, sizeof u);
    assert_string_equal(u, d[2].uuid); /* stable: derived from node name and index */
    gp_sim_close(sim);
}

static void test_example_scenarios_load(void **st) {
    (void)st;
    const char *files[] = {"examples/scenarios/demo.conf", "examples/scenarios/consumer.conf",
                           "examples/scenarios/restarts.conf", "examples/scenarios/large.conf"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        gp_scenario sc;
        char err[512];
        if (gp_scenario_load(files[i], &sc, err, sizeof err) < 0) fail_msg("%s", err);
        assert_true(sc.n_jobs > 0);
        gp_sim *sim;
        if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
        gp_sim_close(sim);
        gp_scenario_free(&sc);
    }
}

static void collect(void *ctx, const char *line, size_t len) {
    FILE *f = ctx;
    fwrite(line, 1, len, f);
    fputc('\n', f);
}

/* Runs 10 simulated minutes; returns the event text (caller frees) and fills util. */
static char *run_events(const gp_scenario *sc, double *util, size_t n_util) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gp_sim *sim;
    char err[512];
    if (gp_sim_open(sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    gp_sample smp[16];
    size_t n, k = 0;
    for (int64_t t = gp_sim_start_ns(sim); t < gp_sim_start_ns(sim) + 600 * 1000000000LL;) {
        t += 1000000000LL;
        gp_sim_sample(sim, t, smp, 16, &n);
        for (size_t g = 0; g < n && k < n_util; g++)
            util[k++] = smp[g].gpu_util;
        gp_sim_drain_events(sim, t, collect, f);
    }
    gp_sim_close(sim);
    fclose(f);
    return buf;
}

static void test_write_round_trip(void **st) {
    (void)st;
    gp_scenario a, b;
    char err[512];
    if (gp_scenario_load("examples/scenarios/restarts.conf", &a, err, sizeof err) < 0)
        fail_msg("%s", err);
    a.jobs[0].mem_frac = 0.55;
    a.jobs[1].checkpoint_bytes = 3e9;
    a.jobs[1].hbm_bytes_per_step = 1.5e12; /* memory bound: changes step times */
    a.jobs[1].sm_fill = 0.45;
    a.power_limit_w = 350;
    a.power_limit_from_ns = 60 * 1000000000LL;
    a.power_limit_until_ns = 90 * 1000000000LL;
    char *dir = gp_test_tmpdir(), path[600];
    snprintf(path, sizeof path, "%s/rt.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(gp_scenario_write(&a, f), 0);
    fclose(f);
    if (gp_scenario_load(path, &b, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(a.n_jobs, b.n_jobs);
    assert_int_equal(a.seed, b.seed);
    assert_true(b.power_limit_from_ns == a.power_limit_from_ns);
    assert_true(b.power_limit_until_ns == a.power_limit_until_ns);
    for (int i = 0; i < a.n_jobs; i++) {
        assert_string_equal(a.jobs[i].id, b.jobs[i].id);
        assert_int_equal(a.jobs[i].kind, b.jobs[i].kind);
        assert_int_equal(a.jobs[i].n_gpus, b.jobs[i].n_gpus);
        assert_true(a.jobs[i].ready_after_ns == b.jobs[i].ready_after_ns);
        assert_int_equal(a.jobs[i].n_restarts, b.jobs[i].n_restarts);
        assert_near(a.jobs[i].mem_frac, b.jobs[i].mem_frac, 1e-12);
        assert_near(a.jobs[i].hbm_bytes_per_step, b.jobs[i].hbm_bytes_per_step, 1);
        assert_near(a.jobs[i].sm_fill, b.jobs[i].sm_fill, 1e-12);
    }
    static double ua[16 * 600], ub[16 * 600];
    char *ea = run_events(&a, ua, 16 * 600), *eb = run_events(&b, ub, 16 * 600);
    assert_string_equal(ea, eb); /* the same simulation */
    assert_memory_equal(ua, ub, sizeof ua);
    free(ea);
    free(eb);
    unlink(path);
    rmdir(dir);
    free(dir);
    gp_scenario_free(&a);
    gp_scenario_free(&b);
}

static void test_start_now(void **st) {
    (void)st;
    gp_scenario sc;
    char err[256];
    if (gp_scenario_parse_string("[node]\nstart = now\n[job a]\ngpus = 0\n", "n.conf", &sc, err,
                                 sizeof err) < 0)
        fail_msg("%s", err);
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
    assert_near((double)gp_sim_start_ns(sim), now, 60e9);
    gp_sim_close(sim);
    /* an explicit origin from the caller wins */
    if (gp_sim_open(&sc, 5000000000LL, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    assert_true(gp_sim_start_ns(sim) == 5000000000LL);
    assert_true(gp_sim_end_ns(sim) == 5000000000LL + sc.duration_ns);
    gp_sim_close(sim);
    gp_scenario_free(&sc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_errors_name_line_and_key),
        cmocka_unit_test(test_build_in_code),
        cmocka_unit_test(test_example_scenarios_load),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_start_now),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
