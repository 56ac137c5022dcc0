/* test_goodput.c: hand-computed goodput/badput cases for engine/goodput.c. */
#include "testutil.h"

#include "engine/goodput.h"

#define S 1000000000LL

static gp_event step_ev(int64_t step, int64_t start_s, int64_t end_s) {
    gp_event e;
    gp_event_init(&e, GP_EV_STEP);
    strcpy(e.job_id, "j");
    e.step = step;
    e.units = 32;
    e.step_start_ns = start_s * S;
    e.ts_ns = end_s * S;
    return e;
}

static gp_event phase_ev(const char *name, int edge, int64_t t_s) {
    gp_event e;
    gp_event_init(&e, GP_EV_PHASE);
    strcpy(e.job_id, "j");
    snprintf(e.name, sizeof e.name, "%s", name);
    e.edge = edge;
    e.ts_ns = t_s * S;
    return e;
}

static gp_alloc alloc(const char *uuid, int64_t from_s, int64_t to_s) {
    gp_alloc a;
    memset(&a, 0, sizeof a);
    strcpy(a.job_id, "j");
    snprintf(a.uuid, sizeof a.uuid, "%s", uuid);
    a.from_ns = from_s * S;
    a.to_ns = to_s * S;
    return a;
}

static double bucket_sum(const gp_goodput *g) {
    double s = 0;
    for (int b = 0; b < GP_B__COUNT; b++)
        s += g->bucket_gpu_s[b];
    return s;
}

/* 1 GPU allocated 100 s, first step at 20 s, 1-s steps to 100 s: not_ready 20%, goodput 80%. */
static void test_not_ready_then_steps(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 100);
    gp_event ev[80];
    for (int i = 0; i < 80; i++)
        ev[i] = step_ev(i, 20 + i, 21 + i);
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = 80, .t0_ns = 0, .t1_ns = 100 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.kind, GP_JK_TRAINING);
    assert_near(g.allocated_gpu_s, 100, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 20, 1e-9);
    assert_near(g.goodput, 0.80, 1e-9);
    assert_near(bucket_sum(&g), g.allocated_gpu_s, 1e-6);
    assert_int_equal(g.ready_ns, 20 * S);
    assert_near(g.median_step_s, 1.0, 1e-9);
}

/* Steps 0..49 over [0,50); crash; restart resumes from step 39 at 60 s, so steps 40..49 are
 * redone: their first run (10 s) is wasted_progress; 50..60 is recovery. */
static void test_restart_redoes_ten_seconds(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 120);
    gp_event ev[200];
    size_t n = 0;
    for (int i = 0; i < 50; i++)
        ev[n++] = step_ev(i, i, i + 1);
    gp_event r;
    gp_event_init(&r, GP_EV_RESTART);
    strcpy(r.job_id, "j");
    r.step = 39;
    r.ts_ns = 55 * S;
    ev[n++] = r;
    for (int i = 40; i < 100; i++)
        ev[n++] = step_ev(i, 60 + (i - 40), 61 + (i - 40));
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = n, .t0_ns = 0, .t1_ns = 120 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 10, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_RECOVERY], 10, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 100, 1e-9);
    assert_int_equal(g.redone_steps, 10);
    assert_int_equal(g.kept_steps, 100);
    assert_near(bucket_sum(&g), 120, 1e-6);
}

/* 2 GPUs, 10-s steps each with a 3-s data_wait and, every 5th step, a 5-s checkpoint. */
static void test_phases_inside_steps_two_gpus(void **st) {
    (void)st;
    gp_alloc a[2] = {alloc("GPU-a", 0, 100), alloc("GPU-b", 0, 100)};
    gp_event ev[64];
    size_t n = 0;
    for (int i = 0; i < 10; i++) {
        ev[n++] = phase_ev("data_wait", GP_PH_BEGIN, i * 10);
        ev[n++] = phase_ev("data_wait", GP_PH_END, i * 10 + 3);
        if (i % 5 == 4) {
            ev[n++] = phase_ev("checkpoint_save", GP_PH_BEGIN, i * 10 + 5);
            ev[n++] = phase_ev("checkpoint_save", GP_PH_END, i * 10 + 10);
        }
        ev[n++] = step_ev(i, i * 10, i * 10 + 10);
    }
    gp_goodput_in in = {
        .allocs = a, .n_allocs = 2, .events = ev, .n_events = n, .t0_ns = 0, .t1_ns = 100 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.allocated_gpu_s, 200, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_DATA_WAIT], 2 * 30, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_CHECKPOINT], 2 * 10, 1e-9);
    assert_near(g.goodput, (200 - 60 - 20) / 200.0, 1e-9);
    assert_near(bucket_sum(&g), 200, 1e-6);
}

/* A job that said hello but never stepped: all not_ready. */
static void test_never_ready(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 10, 70);
    gp_event h;
    gp_event_init(&h, GP_EV_HELLO);
    strcpy(h.job_id, "j");
    h.ts_ns = 10 * S;
    gp_activity act[100];
    for (int i = 0; i < 100; i++)
        act[i] = (gp_activity){(i + 1) * S, S, 0.01};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = &h,
                        .n_events = 1,
                        .act = act,
                        .n_act = 100,
                        .t0_ns = 0,
                        .t1_ns = 100 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.kind, GP_JK_NEVER_READY);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 60, 1e-9);
    assert_near(g.goodput, 0, 1e-12);
}

/* After the last step the GPU sits idle (util 0): idle_allocated, decided by activity. */
static void test_idle_after_last_step(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 100);
    gp_event ev[50];
    for (int i = 0; i < 50; i++)
        ev[i] = step_ev(i, i, i + 1);
    gp_activity act[100];
    for (int i = 0; i < 100; i++)
        act[i] = (gp_activity){(i + 1) * S, S, i < 50 ? 0.9 : 0.0};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = 50,
                        .act = act,
                        .n_act = 100,
                        .t0_ns = 0,
                        .t1_ns = 100 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 50, 1e-9);
    assert_near(g.goodput, 0.5, 1e-9);
    assert_near(g.busy_gpu_s, 45, 1e-9);
}

/* Inference: 4 requests, one misses the TTFT SLO: good tokens 3/4 of tokens. */
static void test_inference_slo(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 100);
    gp_event ev[4];
    for (int i = 0; i < 4; i++) {
        gp_event_init(&ev[i], GP_EV_REQUEST);
        strcpy(ev[i].job_id, "j");
        ev[i].arrival_ns = (10 + i * 10) * S;
        ev[i].first_token_ns = ev[i].arrival_ns + (i == 2 ? 3 * S : S / 10);
        ev[i].ts_ns = ev[i].arrival_ns + 5 * S;
        ev[i].prompt_tokens = 100;
        ev[i].output_tokens = 50;
    }
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = 4,
                        .t0_ns = 0,
                        .t1_ns = 100 * S,
                        .slo = {.ttft_s = 1.0}};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.kind, GP_JK_INFERENCE);
    assert_int_equal(g.good_requests, 3);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 10, 1e-9);
    assert_near(g.goodput, 90 * 0.75 / 100, 1e-9);
    /* TPOT = (e2e - ttft) / (out - 1) */
    gp_slo tpot = {.tpot_s = (5 - 0.1) / 49.0 + 1e-9};
    assert_true(gp_request_good(&ev[0], &tpot));
    tpot.tpot_s = (5 - 0.1) / 49.0 - 1e-6;
    assert_false(gp_request_good(&ev[0], &tpot));
}

/* No events at all: activity-only, goodput unknown. */
static void test_activity_only(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 10);
    gp_activity act[10];
    for (int i = 0; i < 10; i++)
        act[i] = (gp_activity){(i + 1) * S, S, i < 4 ? 0.0 : 1.0};
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .act = act, .n_act = 10, .t0_ns = 0, .t1_ns = 10 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.kind, GP_JK_ACTIVITY_ONLY);
    assert_true(g.goodput < 0);
    /* Ready at the first kernel (4 s): not_ready before it, busy after it. */
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 4, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 0, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_OTHER], 6, 1e-9);
    assert_near(g.busy_gpu_s, 6, 1e-9);
    assert_int_equal(g.ready_ns, 4 * S);
}

/* Pipeline: a CPU stage feeds a GPU stage; the GPU stage works [10,20) and [30,35) on a GPU
 * held [0,50): productive 15 s, not_ready until the first item starts (5 s). */
static void test_pipeline_gpu_stage(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 50);
    gp_event ev[5];
    gp_event_init(&ev[0], GP_EV_STAGE); /* declaration: model runs on the GPU */
    strcpy(ev[0].job_id, "j");
    strcpy(ev[0].name, "model");
    ev[0].step = 1;
    ev[0].edge = GP_STAGE_GPU;
    ev[0].ts_ns = 0;
    int64_t items[4][3] = {
        {0, 5, 10}, {0, 25, 30}, {1, 10, 20}, {1, 30, 35}}; /* gpu?, start, end */
    for (int i = 0; i < 4; i++) {
        gp_event *e = &ev[1 + i];
        gp_event_init(e, GP_EV_STAGE);
        strcpy(e->job_id, "j");
        strcpy(e->name, items[i][0] ? "model" : "decode");
        e->item = i;
        e->start_ns = items[i][1] * S;
        e->ts_ns = items[i][2] * S;
    }
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = 5, .t0_ns = 0, .t1_ns = 50 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.kind, GP_JK_PIPELINE);
    assert_int_equal(g.items, 2);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 15, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 5, 1e-9);
    assert_near(bucket_sum(&g), 50, 1e-6);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_ready_then_steps),
        cmocka_unit_test(test_restart_redoes_ten_seconds),
        cmocka_unit_test(test_phases_inside_steps_two_gpus),
        cmocka_unit_test(test_never_ready),
        cmocka_unit_test(test_idle_after_last_step),
        cmocka_unit_test(test_inference_slo),
        cmocka_unit_test(test_activity_only),
        cmocka_unit_test(test_pipeline_gpu_stage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
