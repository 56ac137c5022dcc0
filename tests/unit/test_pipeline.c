/* test_pipeline.c: pipeline analysis and what-if simulation against hand-computed cases:
 * utilization, starvation, backpressure, queue length, the bottleneck and its finding, pool
 * sizing, the stage declaration on the wire, and the discrete-event simulation against
 * deterministic schedules and the exact throughput of a two-station line with a finite
 * buffer and exponential service (a birth-death chain, solved here independently). */
#include "testutil.h"

#include "engine/pipeline/pipeline.h"
#include "ingest/protocol.h"

#define S 1000000000LL /* ns per second */
#define T0 (1764400000LL * S)

static gp_event item(const char *stage, int64_t item_id, double enq, double start, double end,
                     const char *worker) {
    gp_event e;
    gp_event_init(&e, GP_EV_STAGE);
    snprintf(e.job_id, sizeof e.job_id, "j");
    snprintf(e.name, sizeof e.name, "%s", stage);
    snprintf(e.worker, sizeof e.worker, "%s", worker);
    e.item = item_id;
    e.enqueue_ns = enq < 0 ? -1 : T0 + (int64_t)(enq * S);
    e.start_ns = T0 + (int64_t)(start * S);
    e.ts_ns = T0 + (int64_t)(end * S);
    return e;
}

static gp_event decl(const char *stage, int pool, int resource, const char *upstream) {
    gp_event e;
    gp_event_init(&e, GP_EV_STAGE);
    snprintf(e.job_id, sizeof e.job_id, "j");
    snprintf(e.name, sizeof e.name, "%s", stage);
    e.step = pool;
    e.edge = resource;
    snprintf(e.worker, sizeof e.worker, "%s", upstream);
    e.ts_ns = T0;
    return e;
}

/* Stage a (1 worker): items i = 0..3 back to back, [i, i+1). Stage b (1 gpu worker): item i
 * enqueued at i+1 (when a finishes it), served [i+1, i+1.5). Window [0, 4.5). */
static size_t chain(gp_event *ev, int b_blocked) {
    size_t n = 0;
    ev[n++] = decl("b", 1, GP_STAGE_GPU, "a");
    ev[n++] = decl("a", 1, GP_STAGE_CPU, "");
    for (int i = 0; i < 4; i++) {
        ev[n++] = item("a", i, 0, i, i + 1, "a0");
        double enq = i + 1 + (b_blocked ? 0.25 : 0);
        ev[n++] = item("b", i, enq, enq, enq + 0.5, "b0");
    }
    return n;
}

static void test_utilization_starvation(void **state) {
    (void)state;
    gp_event ev[16];
    size_t n = chain(ev, 0);
    gp_pipeline p;
    char err[256];
    assert_int_equal(gp_pipeline_analyze(ev, n, NULL, &p, err, sizeof err), 0);
    assert_int_equal(p.n_stages, 2);
    /* declared upstream puts a first even though b was declared first */
    assert_string_equal(p.stage[0].name, "a");
    assert_string_equal(p.stage[1].name, "b");
    assert_near(p.span_s, 4.5, 1e-9);
    const gp_pipe_stage *a = &p.stage[0], *b = &p.stage[1];
    assert_near(a->utilization, 4.0 / 4.5, 1e-9);
    assert_near(b->utilization, 2.0 / 4.5, 1e-9);
    assert_near(a->svc_mean_s, 1.0, 1e-9);
    assert_near(b->svc_p50_s, 0.5, 1e-9);
    /* b idles 2.5 s, always with an empty queue: all of it is starvation */
    assert_near(b->idle_worker_s, 2.5, 1e-9);
    assert_near(b->starved_worker_s, 2.5, 1e-9);
    assert_near(b->starved_share, 1.0, 1e-9);
    assert_near(b->blocked_s, 0, 1e-12);
    assert_near(a->blocked_s, 0, 1e-12);
    /* a: its 4 items were all enqueued at 0: queue 3,2,1,0 over [0,1),[1,2),[2,3),[3,4.5) */
    assert_near(a->queue_mean, (3 + 2 + 1) / 4.5, 1e-9);
    assert_near(a->queue_max, 4, 1e-9);
    /* capacities 1/s and 2/s: a is the bottleneck with margin 2 */
    assert_int_equal(p.bottleneck, 0);
    assert_near(p.bn_margin, 2.0, 1e-6);
    assert_int_equal(p.items_done, 4);
    assert_near(p.e2e_per_s, 4 / 4.5, 1e-9);
    assert_near(p.gpu_busy_share, 2.0 / 4.5, 1e-9);
    gp_finding f;
    assert_int_equal(gp_pipeline_finding(&p, &f), 1);
    assert_int_equal(f.cls, GP_FC_PIPELINE_BOTTLENECK);
    assert_int_equal(f.scope, GP_SCOPE_STAGE);
    assert_string_equal(f.scope_id, "a");
    /* GPU idle explained by the pipeline: 2.5 GPU-seconds */
    assert_near(f.wasted_gpu_s, 2.5, 1e-9);
    /* the classifier's entry point finds the same from the raw events */
    gp_finding f2;
    assert_int_equal(gp_pipeline_finding_from_events(ev, n, 0, &f2), 1);
    assert_string_equal(f2.scope_id, "a");
    assert_int_equal(gp_pipeline_finding_from_events(ev, 2, 0, &f2), 0); /* declarations only */
    gp_pipeline_free(&p);
}

static void test_backpressure(void **state) {
    (void)state;
    gp_event ev[16];
    size_t n = chain(ev, 1); /* b's enqueue comes 0.25 s after a's end: a was blocked */
    gp_pipeline p;
    char err[256];
    assert_int_equal(gp_pipeline_analyze(ev, n, NULL, &p, err, sizeof err), 0);
    assert_near(p.stage[0].blocked_s, 4 * 0.25, 1e-9);
    assert_near(p.stage[1].blocked_s, 0, 1e-12);
    gp_pipeline_free(&p);
}

/* Without declarations the chain order comes from first activity, workers from names. */
static void test_undeclared(void **state) {
    (void)state;
    gp_event ev[32];
    size_t n = 0;
    for (int i = 0; i < 6; i++) { /* x: 2 workers, 2 s each; y: 1 worker, 0.5 s */
        double s0 = (i / 2) * 2.0;
        ev[n++] = item("y", i, s0 + 2, s0 + 2 + (i % 2) * 0.5, s0 + 2.5 + (i % 2) * 0.5, "y0");
        ev[n++] = item("x", i, 0, s0, s0 + 2, i % 2 ? "x1" : "x0");
    }
    gp_pipeline p;
    char err[256];
    assert_int_equal(gp_pipeline_analyze(ev, n, NULL, &p, err, sizeof err), 0);
    assert_string_equal(p.stage[0].name, "x");
    assert_int_equal(p.stage[0].workers, 2);
    assert_int_equal(p.stage[1].workers, 1);
    assert_int_equal(p.stage[1].n_upstream, 1);
    assert_near(p.stage[0].capacity_per_s, 1.0, 1e-9);
    assert_near(p.stage[1].capacity_per_s, 2.0, 1e-9);
    assert_int_equal(p.bottleneck, 0);
    gp_pipeline_free(&p);
    assert_int_equal(gp_pipeline_analyze(ev, 0, NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "no stage item events"));
}

/* A worker that takes 0.1 s after each item before starting the next waiting one: the
 * handoff is 0.1 s and the capacity 1 / 1.1 s. Stage b never has work waiting, so it
 * borrows a's handoff rather than assume none. */
static void test_handoff(void **state) {
    (void)state;
    gp_event ev[32];
    size_t n = 0;
    for (int i = 0; i < 10; i++) {
        double s0 = i * 1.1;
        ev[n++] = item("a", i, 0, s0, s0 + 1, "a0");
        ev[n++] = item("b", i, s0 + 1, s0 + 1, s0 + 1.2, "b0");
    }
    gp_pipeline p;
    char err[256];
    assert_int_equal(gp_pipeline_analyze(ev, n, NULL, &p, err, sizeof err), 0);
    assert_near(p.stage[0].handoff_s, 0.1, 1e-6);
    assert_int_equal(p.stage[0].handoff_borrowed, 0);
    assert_near(p.stage[0].capacity_per_s, 1 / 1.1, 1e-6);
    assert_int_equal(p.stage[1].handoff_borrowed, 1);
    assert_near(p.stage[1].handoff_s, 0.1, 1e-6);
    /* the simulation of the measured pools reproduces the measured makespan */
    gp_pipe_sim_cfg c;
    gp_pipe_sim_result r;
    assert_int_equal(gp_pipeline_sim_cfg(&p, NULL, -1, 0, 1, &c, err, sizeof err), 0);
    assert_int_equal(gp_pipe_simulate(&c, &r, err, sizeof err), 0);
    /* 10 x 1.1 s in a, then b's 0.2 s + its 0.1 s handoff after the last item */
    assert_near(r.makespan_s, 10 * 1.1 + 0.2 + 0.1, 1e-6);
    gp_pipeline_free(&p);
}

/* workers_i = rate x mean_i: GPU 10 ms (1 GPU) -> 100/s; CPU 10 ms -> 1, 30 ms -> 3. */
static void test_sizing(void **state) {
    (void)state;
    gp_pipeline p;
    memset(&p, 0, sizeof p);
    p.n_stages = 3;
    const double mean[3] = {0.010, 0.030, 0.010};
    const int res[3] = {GP_STAGE_CPU, GP_STAGE_CPU, GP_STAGE_GPU};
    for (int k = 0; k < 3; k++) {
        p.stage[k].svc_mean_s = mean[k];
        p.stage[k].resource = res[k];
        p.stage[k].workers = 1;
        p.stage[k].visit_ratio = 1;
        p.stage[k].e2e_capacity_per_s = 1 / mean[k];
    }
    p.bottleneck = 1;
    gp_pipe_sizing sz;
    gp_pipeline_size(&p, 0, 0, &sz); /* feed the one GPU */
    assert_int_equal(sz.workers[0], 1);
    assert_int_equal(sz.workers[1], 3);
    assert_int_equal(sz.workers[2], 1);
    assert_near(sz.rate_per_s, 100, 1e-6);
    assert_int_equal(sz.cpu_budget, 4);
    assert_int_equal(sz.scale_first, 1);
    assert_int_equal(sz.scale_first_to, 3); /* to reach the next capacity, 100/s */
    gp_pipeline_size(&p, 3, 2, &sz);        /* 3 CPUs, 2 GPUs: parse gets the spare CPU */
    assert_int_equal(sz.workers[0], 1);
    assert_int_equal(sz.workers[1], 2);
    assert_near(sz.rate_per_s, 2 / 0.030, 1e-6);
}

static void test_declaration_wire(void **state) {
    (void)state;
    const char *line = "stage job=j stage=model pool=2 resource=gpu upstream=parse,decode queue=3";
    gp_event e;
    char err[256];
    assert_int_equal(gp_proto_parse_line(line, strlen(line), T0, 0, &e, err, sizeof err), 1);
    assert_int_equal(e.kind, GP_EV_STAGE);
    assert_string_equal(e.name, "model");
    assert_int_equal(e.step, 2);
    assert_int_equal(e.edge, GP_STAGE_GPU);
    assert_string_equal(e.worker, "parse,decode");
    assert_int_equal(e.bytes, 3);
    char buf[512];
    assert_true(gp_proto_format(&e, buf, sizeof buf) > 0);
    gp_event e2;
    assert_int_equal(gp_proto_parse_line(buf, strlen(buf), T0, 0, &e2, err, sizeof err), 1);
    assert_int_equal(e2.step, 2);
    assert_int_equal(e2.edge, GP_STAGE_GPU);
    assert_string_equal(e2.worker, "parse,decode");
    const char *bad = "stage job=j stage=model pool=2 resource=tpu";
    assert_int_equal(gp_proto_parse_line(bad, strlen(bad), T0, 0, &e, err, sizeof err), -1);
    assert_non_null(strstr(err, "resource"));
}

static gp_pipe_sim_cfg cfg_const(int k, const int *w, const double *svc) {
    gp_pipe_sim_cfg c;
    memset(&c, 0, sizeof c);
    c.n_stages = k;
    for (int i = 0; i < k; i++) {
        c.workers[i] = w[i];
        c.queue_bound[i] = -1;
        c.svc_s[i] = &svc[i];
        c.n_svc[i] = 1;
    }
    c.seed = 7;
    return c;
}

static void test_sim_deterministic(void **state) {
    (void)state;
    char err[256];
    gp_pipe_sim_result r;
    /* one stage, 2 workers, 1 s each, 10 items: 5 rounds */
    const double one[1] = {1.0};
    const int w2[1] = {2};
    gp_pipe_sim_cfg c = cfg_const(1, w2, one);
    c.n_items = 10;
    assert_int_equal(gp_pipe_simulate(&c, &r, err, sizeof err), 0);
    assert_near(r.makespan_s, 5, 1e-9);
    assert_near(r.throughput_per_s, 2, 1e-9);
    assert_near(r.utilization[0], 1, 1e-9);
    /* tandem 1 s then 2 s, one worker each: makespan 1 + 2N whatever the buffer */
    const double svc[2] = {1.0, 2.0};
    const int w11[2] = {1, 1};
    for (int cap = -1; cap <= 2; cap++) {
        c = cfg_const(2, w11, svc);
        c.n_items = 50;
        c.queue_bound[1] = cap;
        assert_int_equal(gp_pipe_simulate(&c, &r, err, sizeof err), 0);
        assert_near(r.makespan_s, 1 + 2 * 50, 1e-9);
        /* with a rendezvous (cap 0), stage 0 finishes items 1..49 one second before
         * stage 1 frees (it restarts only when it hands over): blocked 49 x 1 s */
        if (cap == 0) assert_near(r.blocked_s[0], 49.0, 1e-6);
    }
    /* a handoff overhead occupies the worker: 1 s + 0.25 s */
    c = cfg_const(1, w2, one);
    c.n_items = 10;
    c.overhead_s[0] = 0.25;
    assert_int_equal(gp_pipe_simulate(&c, &r, err, sizeof err), 0);
    assert_near(r.makespan_s, 5 * 1.25, 1e-9);
    assert_near(r.utilization[0], 10.0 / (2 * 6.25), 1e-9);
}

/* Exact throughput of a saturated exponential station (rate mu1, 1 server) feeding c
 * exponential servers (rate mu2) through a buffer of B waiting places, blocking after
 * service: a birth-death chain on n = items at station 2 (0..B+c) plus the blocked state. */
static double line_throughput(double mu1, double mu2, int c, int B) {
    int top = B + c + 1;
    double p[256], sum = 0, thr = 0;
    p[0] = 1;
    for (int n = 1; n <= top; n++) {
        int busy = n < c ? n : c;
        p[n] = p[n - 1] * mu1 / (busy * mu2);
    }
    for (int n = 0; n <= top; n++)
        sum += p[n];
    for (int n = 0; n <= top; n++)
        thr += p[n] / sum * (n < c ? n : c) * mu2;
    return thr;
}

static void fill_exp(double *x, size_t n, double mean) {
    for (size_t i = 0; i < n; i++)
        x[i] = -mean * log(1 - (i + 0.5) / (double)n);
}

static void test_sim_finite_buffer_line(void **state) {
    (void)state;
    enum { NS = 200000 };
    double *e1 = malloc(NS * sizeof *e1), *e2 = malloc(NS * sizeof *e2);
    fill_exp(e1, NS, 1.0);
    const struct {
        double mu2;
        int c, B;
    } cases[] = {{1.25, 1, 2}, {1.0, 1, 0}, {0.6, 2, 1}, {0.3, 3, 5}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fill_exp(e2, NS, 1 / cases[k].mu2);
        gp_pipe_sim_cfg c;
        memset(&c, 0, sizeof c);
        c.n_stages = 2;
        c.workers[0] = 1;
        c.workers[1] = cases[k].c;
        c.queue_bound[1] = cases[k].B;
        c.svc_s[0] = e1;
        c.svc_s[1] = e2;
        c.n_svc[0] = c.n_svc[1] = NS;
        c.n_items = 400000;
        c.seed = 11 + k;
        gp_pipe_sim_result r;
        char err[256];
        assert_int_equal(gp_pipe_simulate(&c, &r, err, sizeof err), 0);
        double want = line_throughput(1.0, cases[k].mu2, cases[k].c, cases[k].B);
        printf("  line mu2=%.2f c=%d B=%d: simulated %.4f exact %.4f\n", cases[k].mu2, cases[k].c,
               cases[k].B, r.steady_per_s, want);
        assert_near(r.steady_per_s, want, 0.01 * want);
    }
    free(e1);
    free(e2);
}

static void test_what_if_spec(void **state) {
    (void)state;
    gp_event ev[16];
    size_t n = chain(ev, 0);
    gp_pipeline p;
    char err[256];
    assert_int_equal(gp_pipeline_analyze(ev, n, NULL, &p, err, sizeof err), 0);
    gp_pipe_sim_cfg c;
    assert_int_equal(gp_pipeline_sim_cfg(&p, "a=2,b.queue=3", -1, 100, 1, &c, err, sizeof err), 0);
    assert_int_equal(c.workers[0], 2);
    assert_int_equal(c.workers[1], 1);
    assert_int_equal(c.queue_bound[1], 3);
    gp_pipe_sim_result r;
    assert_int_equal(gp_pipe_simulate(&c, &r, err, sizeof err), 0);
    /* a: 2 workers x 1 s hand b two items each second; b serves them in 0.5 s each: the
     * last pair arrives at 50 s and is done at 51 s */
    assert_near(r.throughput_per_s, 100 / 51.0, 1e-6);
    assert_int_equal(gp_pipeline_sim_cfg(&p, "zz=2", -1, 0, 1, &c, err, sizeof err), -1);
    assert_non_null(strstr(err, "no stage 'zz'"));
    assert_int_equal(gp_pipeline_sim_cfg(&p, "a=x", -1, 0, 1, &c, err, sizeof err), -1);
    assert_int_equal(gp_pipeline_sim_cfg(&p, "a=0", -1, 0, 1, &c, err, sizeof err), -1);
    gp_pipeline_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utilization_starvation),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_undeclared),
        cmocka_unit_test(test_sizing),
        cmocka_unit_test(test_declaration_wire),
        cmocka_unit_test(test_sim_deterministic),
        cmocka_unit_test(test_sim_finite_buffer_line),
        cmocka_unit_test(test_what_if_spec),
        cmocka_unit_test(test_handoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
