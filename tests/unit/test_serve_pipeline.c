/* test_serve_pipeline.c: pipelines where people look. A store holds a deterministic
 * three-stage chain whose numbers are worked out by hand below; the job detail of the API
 * must carry its analysis (bottleneck, utilizations, service times, starvation, sizing),
 * the what-if route must predict the schedule computed here for new pools and answer bad
 * parameters with 4xx JSON, and `goodput report --html` must include the pipeline section.
 *
 * The chain (all times in seconds from T0, N = 20 items, every item enqueued at read at 0):
 *   read   1 cpu worker, 0.1 s: item i runs [0.1 i, 0.1 (i+1))
 *   decode 1 cpu worker, 0.3 s: enqueued at 0.1 (i+1); runs [0.1 + 0.3 i, 0.4 + 0.3 i)
 *   model  1 gpu worker, 0.1 s: enqueued when decode ends; runs [0.4 + 0.3 i, 0.5 + 0.3 i)
 * Window [0, 6.2): busy 2.0, 6.0 and 2.0 s, so utilizations 2/6.2, 6/6.2, 2/6.2; the sink
 * finishes 20 items, 20/6.2 items/s. Capacities 10, 3.33 and 10 items/s: decode is the
 * bottleneck with margin 3. The GPU idles 4.2 s, always with an empty input queue.
 * With decode = 3 workers, item i leaves read at 0.1 (i+1), decode at 0.1 i + 0.4, model at
 * 0.1 i + 0.5: the last at 2.4 s, so 20/2.4 items/s and a GPU busy 2.0/2.4 of the time. */
#include "testutil.h"
#include "serve_testutil.h"

#include <jansson.h>
#include <sys/stat.h>

#include "engine/diagnosis/classify.h"
#include "engine/accounting/cost.h"
#include "engine/pipeline/pipeline.h"
#include "model/event.h"
#include "report/html_report.h"
#include "serve/serve.h"
#include "store/store.h"

#define SEC 1000000000LL
#define MS 1000000LL
#define T0 (1764400000LL * SEC)
#define N 20

static char dir[64], db[128];

static void put_item(gp_store *s, const char *stage, int i, int64_t enq_ms, int64_t start_ms,
                     int64_t end_ms) {
    gp_event e;
    gp_event_init(&e, GP_EV_STAGE);
    snprintf(e.job_id, sizeof e.job_id, "pipe");
    snprintf(e.name, sizeof e.name, "%s", stage);
    snprintf(e.worker, sizeof e.worker, "%s-0", stage);
    e.item = i;
    e.enqueue_ns = T0 + enq_ms * MS;
    e.start_ns = T0 + start_ms * MS;
    e.ts_ns = T0 + end_ms * MS;
    assert_int_equal(gp_store_put_event(s, &e), 0);
}

static void put_decl(gp_store *s, const char *stage, int resource, const char *upstream) {
    gp_event e;
    gp_event_init(&e, GP_EV_STAGE);
    snprintf(e.job_id, sizeof e.job_id, "pipe");
    snprintf(e.name, sizeof e.name, "%s", stage);
    e.step = 1; /* pool size */
    e.edge = resource;
    e.bytes = -1; /* unbounded input queue */
    snprintf(e.worker, sizeof e.worker, "%s", upstream);
    e.ts_ns = T0;
    assert_int_equal(gp_store_put_event(s, &e), 0);
}

static void put_job(gp_store *s, const char *id) {
    gp_job j = {0};
    snprintf(j.id, sizeof j.id, "%s", id);
    snprintf(j.name, sizeof j.name, "%s", id);
    snprintf(j.user, sizeof j.user, "bob");
    j.origin = GP_ORIGIN_TAG;
    j.submitted_ns = T0 - SEC;
    j.allocated_ns = T0;
    j.ready_ns = -1;
    j.ended_ns = T0 + 7 * SEC;
    j.exit_code = 0;
    assert_int_equal(gp_store_put_job(s, &j), 0);
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/gp-test-servepipe-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(db, sizeof db, "%s/s.db", dir);
    char err[256];
    gp_store *s;
    if (gp_store_open(db, 0, &s, err, sizeof err) != 0) return -1;
    gp_store_begin(s);
    put_job(s, "pipe");
    put_job(s, "plain");
    /* The node's GPU, which the stage-only job holds no allocation on: its GPU workers are
     * priced by this model (H100-SXM: 3.00 USD/h in cost.c), not the table's default. */
    gp_device d = {0};
    snprintf(d.uuid, sizeof d.uuid, "GPU-pipe-0");
    snprintf(d.name, sizeof d.name, "NVIDIA H100 80GB HBM3");
    d.spec = gp_spec_lookup("H100-SXM");
    assert_non_null(d.spec);
    assert_int_equal(gp_store_put_device(s, &d), 0);
    put_decl(s, "read", GP_STAGE_CPU, "");
    put_decl(s, "decode", GP_STAGE_CPU, "read");
    put_decl(s, "model", GP_STAGE_GPU, "decode");
    for (int i = 0; i < N; i++) {
        put_item(s, "read", i, 0, 100 * i, 100 * (i + 1));
        put_item(s, "decode", i, 100 * (i + 1), 100 + 300 * i, 400 + 300 * i);
        put_item(s, "model", i, 400 + 300 * i, 400 + 300 * i, 500 + 300 * i);
    }
    /* The other job reports steps only: no pipeline section. */
    gp_event e;
    gp_event_init(&e, GP_EV_STEP);
    snprintf(e.job_id, sizeof e.job_id, "plain");
    e.ts_ns = T0 + SEC;
    e.step = 1;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    assert_int_equal(gp_store_commit(s), 0);
    gp_store_close(s);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static gp_serve *offline(void) {
    return serve_offline(db);
}

static json_t *get_json(gp_serve *s, const char *path, const char *query, int want_status) {
    return serve_get_json(s, path, query, want_status);
}

static double num(json_t *o, const char *path) {
    json_t *v = json_object_get(o, path);
    if (!json_is_number(v)) fail_msg("'%s' is not a number", path);
    return json_number_value(v);
}

static json_t *stage(json_t *pl, const char *name) {
    size_t i;
    json_t *st;
    json_array_foreach(json_object_get(pl, "stages"), i, st) {
        if (strcmp(json_string_value(json_object_get(st, "name")), name) == 0) return st;
    }
    fail_msg("no stage %s", name);
    return NULL;
}

static void check_analysis(json_t *pl) {
    assert_string_equal(json_string_value(json_object_get(pl, "bottleneck")), "decode");
    json_t *stages = json_object_get(pl, "stages");
    assert_int_equal(json_array_size(stages), 3);
    const char *order[3] = {"read", "decode", "model"};
    const double busy[3] = {2.0, 6.0, 2.0}, svc[3] = {0.1, 0.3, 0.1};
    for (int k = 0; k < 3; k++) {
        json_t *st = json_array_get(stages, (size_t)k);
        assert_string_equal(json_string_value(json_object_get(st, "name")), order[k]);
        assert_int_equal(json_integer_value(json_object_get(st, "items")), N);
        assert_int_equal(json_integer_value(json_object_get(st, "workers")), 1);
        assert_near(num(st, "utilization"), busy[k] / 6.2, 1e-6);
        json_t *sv = json_object_get(st, "service_s");
        assert_near(num(sv, "p50"), svc[k], 1e-6);
        assert_near(num(sv, "p99"), svc[k], 1e-6);
        assert_near(num(st, "throughput_per_s"), N / 6.2, 1e-6);
        assert_near(num(st, "capacity_per_s"), 1 / svc[k], 1e-3);
    }
    assert_string_equal(json_string_value(json_object_get(stage(pl, "model"), "resource")), "gpu");
    assert_near(num(stage(pl, "model"), "idle_starved_share"), 1.0, 1e-6);
    assert_near(num(stage(pl, "model"), "starved_worker_s"), 4.2, 1e-6);
    assert_near(num(pl, "window_s"), 6.2, 1e-9);
    assert_near(num(pl, "throughput_per_s"), N / 6.2, 1e-6);
    assert_near(num(pl, "gpu_busy_share"), 2.0 / 6.2, 1e-6);
    assert_near(num(pl, "bottleneck_margin"), 3.0, 1e-3);
    json_t *sz = json_object_get(pl, "sizing");
    assert_non_null(sz);
    assert_string_equal(json_string_value(json_object_get(sz, "scale_first")), "decode");
    /* decode needs 3 workers to reach the others' 10 items/s */
    assert_int_equal(json_integer_value(json_object_get(sz, "scale_first_to")), 3);
    json_t *f = json_object_get(pl, "finding");
    assert_non_null(f);
    assert_string_equal(json_string_value(json_object_get(f, "class")), "pipeline_bottleneck");
    assert_string_equal(json_string_value(json_object_get(f, "scope_id")), "decode");
    assert_true(json_array_size(json_object_get(f, "evidence")) >= 1);
    json_t *q = json_object_get(stage(pl, "read"), "queue_series");
    assert_true(json_array_size(q) >= 2);
    /* read's queue starts at 19 waiting items and drains to 0 */
    assert_true(json_number_value(json_array_get(q, 0)) > 10);
    assert_near(json_number_value(json_array_get(q, json_array_size(q) - 1)), 0, 1e-9);
}

static void test_job_detail(void **state) {
    (void)state;
    gp_serve *s = offline();
    for (int round = 0; round < 2; round++) { /* the second answer comes from the cache */
        json_t *o = get_json(s, "/api/v1/jobs/pipe", NULL, 200);
        json_t *pls = json_object_get(o, "pipelines");
        assert_int_equal(json_array_size(pls), 1);
        check_analysis(json_array_get(pls, 0));
        json_decref(o);
        o = get_json(s, "/api/v1/jobs/plain", NULL, 200);
        assert_null(json_object_get(o, "pipelines"));
        json_decref(o);
    }
    gp_serve_stop(s);
}

/* Issue 18: `pipeline` priced an H100-SXM at the table's default 2.00 USD/h, and a
 * stage-only job with no GPUs was called "healthy: its GPUs compute most of the time". */
static void test_price_and_no_gpu_verdict(void **state) {
    (void)state;
    unsetenv("GOODPUT_PRICE_PER_GPU_HOUR");
    char err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(db, 0, &s, err, sizeof err), 0);
    gp_pipeline p;
    assert_int_equal(gp_pipeline_load(s, "pipe", NULL, &p, err, sizeof err), 1);
    double want = gp_price_per_gpu_h(gp_spec_lookup("H100-SXM"), 0);
    assert_true(want != gp_price_per_gpu_h(NULL, 0)); /* the test means something */
    assert_near(p.price_gpu_h, want, 1e-12);
    gp_pipeline_free(&p);
    gp_pipe_opts o = {.price_gpu_h = 7.5}; /* an explicit price still wins */
    assert_int_equal(gp_pipeline_load(s, "pipe", &o, &p, err, sizeof err), 1);
    assert_near(p.price_gpu_h, 7.5, 1e-12);
    gp_pipeline_free(&p);
    gp_finding *f = NULL;
    size_t n = 0;
    assert_int_equal(gp_diagnose_job(s, "pipe", NULL, &f, &n, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++) {
        assert_int_not_equal(f[i].cls, GP_FC_COMPUTE_BOUND);
        assert_null(strstr(f[i].summary, "GPUs compute"));
    }
    free(f);
    gp_store_close(s);
    gp_serve *sv = offline();
    json_t *j = get_json(sv, "/api/v1/jobs/pipe", NULL, 200);
    json_t *pl = json_array_get(json_object_get(j, "pipelines"), 0);
    assert_near(num(pl, "price_gpu_h"), want, 1e-9);
    json_decref(j);
    gp_serve_stop(sv);
}

static void test_what_if(void **state) {
    (void)state;
    gp_serve *s = offline();
    json_t *o = get_json(s, "/api/v1/jobs/pipe/pipeline", "what_if=decode=3", 200);
    check_analysis(o);
    json_t *w = json_object_get(o, "what_if");
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(w, "spec")), "decode=3");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(w, "workers"), "decode")),
                     3);
    assert_int_equal(json_integer_value(json_object_get(w, "items")), N);
    assert_near(num(w, "makespan_s"), 2.4, 1e-6);
    assert_near(num(w, "throughput_per_s"), N / 2.4, 1e-4);
    assert_near(num(w, "gpu_busy_share"), 2.0 / 2.4, 1e-4);
    /* the measured pools, simulated, reproduce the measured run */
    json_t *b = json_object_get(w, "baseline");
    assert_near(num(b, "makespan_s"), 6.2, 1e-6);
    assert_near(num(b, "gpu_busy_share"), 2.0 / 6.2, 1e-4);
    assert_true(num(o, "sim_elapsed_s") < 1.0);
    json_decref(o);

    /* no what_if: the measured pools only; items chosen by the caller */
    o = get_json(s, "/api/v1/jobs/pipe/pipeline", "items=200", 200);
    w = json_object_get(o, "what_if");
    assert_int_equal(json_integer_value(json_object_get(w, "items")), 200);
    /* 200 items through a 0.3 s stage: 0.1 + 200 x 0.3 + 0.1 s */
    assert_near(num(w, "makespan_s"), 60.2, 1e-6);
    json_decref(o);
    gp_serve_stop(s);
}

static void expect_error(gp_serve *s, const char *path, const char *query, int status,
                         const char *needle) {
    json_t *o = get_json(s, path, query, status);
    const char *msg = json_string_value(json_object_get(o, "error"));
    assert_non_null(msg);
    if (!strstr(msg, needle)) fail_msg("%s?%s: '%s' lacks '%s'", path, query, msg, needle);
    assert_int_equal(json_integer_value(json_object_get(o, "status")), status);
    json_decref(o);
}

static void test_errors(void **state) {
    (void)state;
    gp_serve *s = offline();
    const char *p = "/api/v1/jobs/pipe/pipeline";
    expect_error(s, p, "what_if=nosuch=2", 400, "no stage 'nosuch'");
    expect_error(s, p, "what_if=decode=0", 400, "at least 1 worker");
    expect_error(s, p, "what_if=decode", 400, "what_if");
    expect_error(s, p, "what_if=decode=x", 400, "what_if");
    expect_error(s, p, "what_if=decode=100000", 400, "workers");
    expect_error(s, p, "items=0", 400, "items");
    expect_error(s, p, "items=abc", 400, "items");
    expect_error(s, p, "items=1000000", 400, "3-stage");
    expect_error(s, p, "queue=-1", 400, "queue");
    expect_error(s, p, "seed=1.5", 400, "seed");
    char longspec[400];
    memset(longspec, 'a', sizeof longspec - 1);
    longspec[0] = 'w', longspec[1] = 'h', longspec[sizeof longspec - 1] = 0;
    memcpy(longspec, "what_if=", 8);
    expect_error(s, p, longspec, 400, "longer");
    expect_error(s, "/api/v1/jobs/plain/pipeline", NULL, 404, "no pipeline stage events");
    expect_error(s, "/api/v1/jobs/nojob/pipeline", NULL, 404, "no job");
    expect_error(s, "/api/v1/jobs/pipe/pipelines", NULL, 404, "pipeline");
    expect_error(s, "/api/v1/devices/GPU-x/pipeline", NULL, 404, "only 'series'");
    gp_serve_stop(s);
}

static void test_html_report(void **state) {
    (void)state;
    char path[160], err[256];
    snprintf(path, sizeof path, "%s/r.html", dir);
    assert_int_equal(gp_report_html(db, NULL, NULL, path, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    /* one pipeline section (the plain job has none), with the bottleneck and a chart */
    const char *sec = strstr(buf, "<section class=\"pipeline\"");
    assert_non_null(sec);
    assert_null(strstr(sec + 1, "<section class=\"pipeline\""));
    assert_non_null(strstr(sec, "decode (bottleneck)"));
    assert_non_null(strstr(sec, "<svg"));
    assert_non_null(strstr(sec, "pipeline_bottleneck"));
    assert_null(strstr(buf, "<script"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_detail),
        cmocka_unit_test(test_what_if),
        cmocka_unit_test(test_price_and_no_gpu_verdict),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_html_report),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
