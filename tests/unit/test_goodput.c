/* test_goodput.c: hand-computed goodput/badput cases for engine/accounting/goodput.c, and the
 * engine against the simulator's ground truth on the simulator's own events and samples
 * (a sparse chat server, every inference job of the shipped scenarios). */
#include "testutil.h"

#include "agent_run.h"
#include "engine/accounting/job_summary.h"

#include <glob.h>

#include "engine/accounting/goodput.h"
#include "ingest/protocol.h"
#include "sim/scenario.h"
#include "sim/sim.h"

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

/* An edge value the accounting does not know, even one that is a known edge's modulo
 * 2^16 (the compact event holds 16 bits), is neither begin nor end: such a phase labels
 * nothing, as with an edge of 3. */
static void test_unknown_phase_edge(void **st) {
    (void)st;
    gp_alloc a[1] = {alloc("GPU-a", 0, 100)};
    int64_t odd[3] = {3, 65536 + GP_PH_BEGIN, -65536 + GP_PH_BEGIN};
    double want = -1;
    for (int k = 0; k < 3; k++) {
        gp_event ev[32];
        size_t n = 0;
        for (int i = 0; i < 10; i++) {
            ev[n++] = phase_ev("data_wait", (int)odd[k], i * 10);
            ev[n++] = phase_ev("data_wait", GP_PH_END, i * 10 + 3);
            ev[n++] = step_ev(i, i * 10, i * 10 + 10);
        }
        gp_goodput_in in = {
            .allocs = a, .n_allocs = 1, .events = ev, .n_events = n, .t0_ns = 0, .t1_ns = 100 * S};
        gp_goodput g;
        assert_int_equal(gp_goodput_compute(&in, &g), 0);
        assert_near(g.bucket_gpu_s[GP_B_DATA_WAIT], 0, 1e-9);
        if (k == 0) want = g.goodput;
        assert_near(g.goodput, want, 1e-12);
    }
    assert_true(want > 0.99);
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
    /* serving: 4 requests x 5 s, 3/4 of the tokens good; the 70 s with nothing in flight
     * are idle, not productive */
    assert_near(g.serving_gpu_s, 20, 1e-9);
    assert_near(g.goodput, 20 * 0.75 / 100, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_OTHER], 5, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 70, 1e-9);
    /* TPOT = (e2e - ttft) / (out - 1) */
    gp_slo tpot = {.tpot_s = (5 - 0.1) / 49.0 + 1e-9};
    assert_true(gp_request_good(&ev[0], &tpot));
    tpot.tpot_s = (5 - 0.1) / 49.0 - 1e-6;
    assert_false(gp_request_good(&ev[0], &tpot));
}

/* Two computations equal at 1e-9: every bucket and count. */
static void same_gp(const gp_goodput *x, const gp_goodput *y) {
    assert_int_equal(x->kind, y->kind);
    for (int b = 0; b < GP_B__COUNT; b++)
        assert_near(x->bucket_gpu_s[b], y->bucket_gpu_s[b], 1e-9);
    assert_near(x->allocated_gpu_s, y->allocated_gpu_s, 1e-9);
    assert_near(x->serving_gpu_s, y->serving_gpu_s, 1e-9);
    assert_near(x->busy_gpu_s, y->busy_gpu_s, 1e-9);
    assert_near(x->goodput, y->goodput, 1e-9);
    assert_near(x->tokens, y->tokens, 1e-9);
    assert_near(x->good_tokens, y->good_tokens, 1e-9);
    assert_int_equal(x->requests, y->requests);
    assert_int_equal(x->good_requests, y->good_requests);
    assert_int_equal(x->failed_requests, y->failed_requests);
    assert_int_equal(x->ready_ns, y->ready_ns);
}

/* An inference job's frozen past: requests of 5 s every 3 s (one is always in flight
 * across a cut), a quiet stretch, some missing the TTFT SLO, kernel activity between
 * requests. Resuming from the checkpoint with only the later events and activity gives
 * the full computation; a late request, a request in flight across the cut that it did
 * not hold, or another SLO says the checkpoint is stale. */
static void test_inference_checkpoint(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, -1);
    enum { NR = 60, NA = 300 };
    gp_event ev[NR + 2];
    int n = 0;
    for (int i = 0; i < NR; i++) {
        int64_t arr = (10 + 3 * i + (i >= 30 ? 20 : 0)) * S; /* quiet 97-117 s */
        gp_event_init(&ev[n], GP_EV_REQUEST);
        strcpy(ev[n].job_id, "j");
        ev[n].arrival_ns = i % 7 == 3 ? -1 : arr; /* then from the first token */
        ev[n].first_token_ns = arr + (i % 5 == 2 ? 2 * S : S / 10);
        ev[n].ts_ns = arr + 5 * S;
        ev[n].output_tokens = 20 + i;
        ev[n].ok = i % 11 != 4;
        n++;
    }
    gp_activity act[NA];
    for (int k = 0; k < NA; k++)
        act[k] = (gp_activity){(k + 1) * S, S, k % 4 == 0 ? 0.01 : 0.6};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = (size_t)n,
                        .act = act,
                        .n_act = NA,
                        .t0_ns = 0,
                        .t1_ns = 250 * S,
                        .slo = {.ttft_s = 1.0}};
    gp_goodput full, g;
    assert_int_equal(gp_goodput_compute(&in, &full), 0);
    assert_int_equal(full.kind, GP_JK_INFERENCE);
    assert_true(full.good_requests > 0 && full.good_requests < full.requests);
    assert_true(full.bucket_gpu_s[GP_B_IDLE_ALLOCATED] > 0);
    gp_goodput_ckpt ck;
    assert_int_equal(gp_goodput_compute_ckpt(&in, NULL, 90 * S, 0, &ck, &g), 0);
    same_gp(&g, &full);
    assert_true(ck.valid);
    assert_int_equal(ck.kind, GP_JK_INFERENCE);
    assert_true(ck.t_ns > 80 * S && ck.t_ns <= 90 * S);
    assert_int_equal(ck.n_span, 1); /* the request before the cut's own is still in flight */
    /* Resume with what the caller keeps: events after ev_cut, activity after t_ns. */
    gp_event later[NR + 2];
    size_t nl = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].ts_ns > ck.ev_cut_ns) later[nl++] = ev[i];
    size_t skip = 0;
    while (skip < NA && act[skip].ts_ns <= ck.t_ns)
        skip++;
    gp_goodput_in rin = in;
    rin.events = later, rin.n_events = nl;
    rin.act = act + skip, rin.n_act = NA - skip;
    assert_true(nl + 20 < (size_t)n); /* those that ended by the cut are dropped */
    gp_goodput_ckpt ck2;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 200 * S, 0, &ck2, &g), 0);
    same_gp(&g, &full);
    assert_true(ck2.valid && ck2.t_ns > 150 * S); /* and freezes further on from it */
    gp_goodput_ckpt_free(&ck2);
    /* A later window end: still equal. */
    rin.t1_ns = in.t1_ns = 260 * S;
    assert_int_equal(gp_goodput_compute(&in, &full), 0);
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 0);
    same_gp(&g, &full);
    /* Stale: a request that ended before the cut, stored late. */
    later[nl] = ev[0];
    later[nl].ts_ns = ck.t_ns - S;
    later[nl].arrival_ns = ck.t_ns - 2 * S;
    rin.n_events = nl + 1;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    /* ... one in flight across the cut that it did not hold */
    later[nl].ts_ns = ck.t_ns + 30 * S;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    /* ... another SLO */
    rin.n_events = nl;
    rin.slo.ttft_s = 2.0;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    gp_goodput_ckpt_free(&ck);
}

/* A training job whose every step holds a data_wait phase begun at the previous step's end
 * (the demo's train-starved): no step start has every phase closed, but the phases begun
 * there are the next step's own. A cut carries them (their begins are dropped with the
 * events at its instant) and resuming gives the full computation, also where a carried
 * phase has no end (a second begin: it runs to the window's end). A late event at the
 * cut's instant or a checkpoint_restore after it says the prefix is stale; a late phase
 * after the cut labels only later time and keeps it. */
enum { CARRY_N = 100 };
static int carry_events(gp_event *ev) {
    int n = 0;
    for (int i = 1; i <= CARRY_N; i++) {
        int64_t start = (9 + i) * S;
        ev[n] = phase_ev("data_wait", GP_PH_BEGIN, 9 + i);
        n++;
        if (i != 70) { /* step 70's never ends: the next begin runs it to the window's end */
            ev[n] = phase_ev("data_wait", GP_PH_END, 0);
            ev[n++].ts_ns = start + 300000000LL;
        }
        ev[n++] = step_ev(i, 9 + i, 10 + i);
    }
    return n;
}

static void resume_later(const gp_goodput_in *in, const gp_goodput_ckpt *ck, gp_event *later,
                         gp_goodput_in *rin) {
    size_t nl = 0;
    for (size_t i = 0; i < in->n_events; i++)
        if (in->events[i].ts_ns > ck->ev_cut_ns) later[nl++] = in->events[i];
    size_t skip = 0;
    while (skip < in->n_act && in->act[skip].ts_ns <= ck->t_ns)
        skip++;
    *rin = *in;
    rin->events = later, rin->n_events = nl;
    rin->act = in->act + skip, rin->n_act = in->n_act - skip;
}

static void test_training_carried_phase_checkpoint(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, -1);
    static gp_event ev[3 * CARRY_N + 4], later[3 * CARRY_N + 4];
    int n = carry_events(ev);
    enum { NA = 120 };
    gp_activity act[NA];
    for (int k = 0; k < NA; k++)
        act[k] = (gp_activity){(k + 1) * S, S, k % 3 == 0 ? 0.02 : 0.7};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = (size_t)n,
                        .act = act,
                        .n_act = NA,
                        .t0_ns = 0,
                        .t1_ns = 115 * S};
    gp_goodput full, g;
    assert_int_equal(gp_goodput_compute(&in, &full), 0);
    assert_int_equal(full.kind, GP_JK_TRAINING);
    assert_true(full.bucket_gpu_s[GP_B_DATA_WAIT] > 35); /* step 70's runs to the end */
    gp_goodput_ckpt ck, ck2;
    assert_int_equal(gp_goodput_compute_ckpt(&in, NULL, 40 * S, 0, &ck, &g), 0);
    same_gp(&g, &full);
    assert_true(ck.valid);             /* no cut without carried phases */
    assert_int_equal(ck.t_ns, 39 * S); /* step 30's start, step 29's end */
    assert_int_equal(ck.ev_cut_ns, ck.t_ns);
    assert_int_equal(ck.n_carry, 1);
    assert_string_equal(ck.carry[0].name, "data_wait");
    gp_goodput_in rin;
    resume_later(&in, &ck, later, &rin);
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 90 * S, 0, &ck2, &g), 0);
    same_gp(&g, &full);
    /* the latest cut: step 70, whose data_wait never ends (step 71's begin breaks later ones) */
    assert_true(ck2.valid);
    assert_int_equal(ck2.t_ns, 79 * S);
    assert_int_equal(ck2.n_carry, 1);
    static gp_event later2[3 * CARRY_N + 4];
    gp_goodput_in rin2;
    resume_later(&in, &ck2, later2, &rin2);
    assert_int_equal(gp_goodput_compute_ckpt(&rin2, &ck2, 0, 0, NULL, &g), 0);
    same_gp(&g, &full);
    /* A later window end: still equal. */
    rin.t1_ns = rin2.t1_ns = in.t1_ns = 118 * S;
    assert_int_equal(gp_goodput_compute(&in, &full), 0);
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 0);
    same_gp(&g, &full);
    assert_int_equal(gp_goodput_compute_ckpt(&rin2, &ck2, 0, 0, NULL, &g), 0);
    same_gp(&g, &full);
    /* Late phases between the cut and its step's end (other than checkpoint_restore):
     * kept, and equal to the full computation with them. */
    size_t nl = rin.n_events;
    later[nl] = phase_ev("eval", GP_PH_BEGIN, 0);
    later[nl].ts_ns = ck.t_ns + 400000000LL;
    later[nl + 1] = phase_ev("eval", GP_PH_END, 0);
    later[nl + 1].ts_ns = ck.t_ns + 700000000LL;
    ev[n] = later[nl], ev[n + 1] = later[nl + 1];
    rin.n_events = nl + 2, in.n_events = (size_t)n + 2;
    assert_int_equal(gp_goodput_compute(&in, &full), 0);
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 0);
    same_gp(&g, &full);
    assert_true(full.bucket_gpu_s[GP_B_OTHER] > 0.29);
    /* Stale: a checkpoint_restore there, or an event at the cut's instant. */
    later[nl] = phase_ev("checkpoint_restore", GP_PH_BEGIN, 0);
    later[nl].ts_ns = ck.t_ns + 400000000LL;
    rin.n_events = nl + 1;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    later[nl] = phase_ev("eval", GP_PH_BEGIN, 0);
    later[nl].ts_ns = ck.t_ns;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    gp_goodput_ckpt_free(&ck);
    gp_goodput_ckpt_free(&ck2);
}

static gp_event stage_ev(const char *name, int64_t decl, int res, int64_t start, int64_t end) {
    gp_event e;
    gp_event_init(&e, GP_EV_STAGE);
    strcpy(e.job_id, "p");
    snprintf(e.name, sizeof e.name, "%s", name);
    e.step = decl;
    e.edge = res;
    e.start_ns = start;
    e.ts_ns = end;
    return e;
}

/* A pipeline's frozen past: "infer" declared on the GPU, items of 2 s every 1.5 s (one in
 * flight across a cut), "decode" items on the CPU before them. Resuming equals the full
 * computation; declaring decode on the GPU later (it relabels decode's earlier items) or
 * an item that starts before the cut and was not held says the checkpoint is stale. */
static void test_pipeline_checkpoint(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, -1);
    gp_event ev[210];
    int n = 0;
    ev[n++] = stage_ev("decode", 4, GP_STAGE_CPU, -1, S);
    ev[n++] = stage_ev("infer", 1, GP_STAGE_GPU, -1, S);
    for (int i = 0; i < 100; i++) {
        int64_t t = 5 * S + i * 3 * S / 2;
        ev[n++] = stage_ev("decode", -1, 0, t - S, t - S / 2);
        if (i % 9 != 4) ev[n++] = stage_ev("infer", -1, 0, t, t + 2 * S);
    }
    gp_activity act[200];
    for (int k = 0; k < 200; k++)
        act[k] = (gp_activity){(k + 1) * S, S, k % 5 == 0 ? 0.0 : 0.7};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = (size_t)n,
                        .act = act,
                        .n_act = 200,
                        .t0_ns = 0,
                        .t1_ns = 200 * S};
    gp_goodput full, g;
    assert_int_equal(gp_goodput_compute(&in, &full), 0);
    assert_int_equal(full.kind, GP_JK_PIPELINE);
    gp_goodput_ckpt ck;
    assert_int_equal(gp_goodput_compute_ckpt(&in, NULL, 100 * S, 0, &ck, &g), 0);
    same_gp(&g, &full);
    assert_int_equal(g.items, full.items);
    assert_true(ck.valid);
    assert_int_equal(ck.kind, GP_JK_PIPELINE);
    assert_int_equal(ck.n_gpu_stage, 1);
    assert_int_equal(ck.n_span, 1);
    gp_event later[212];
    size_t nl = 0;
    for (int i = 0; i < n; i++)
        if (ev[i].ts_ns > ck.ev_cut_ns) later[nl++] = ev[i];
    size_t skip = 0;
    while (skip < 200 && act[skip].ts_ns <= ck.t_ns)
        skip++;
    gp_goodput_in rin = in;
    rin.events = later, rin.n_events = nl;
    rin.act = act + skip, rin.n_act = 200 - skip;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 0);
    same_gp(&g, &full);
    assert_int_equal(g.items, full.items);
    /* decode declared on the GPU after the cut: stale (the full computation moves) */
    later[nl] = stage_ev("decode", 4, GP_STAGE_GPU, -1, 190 * S);
    rin.n_events = nl + 1;
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    ev[n] = later[nl];
    in.n_events = (size_t)n + 1;
    gp_goodput moved;
    assert_int_equal(gp_goodput_compute(&in, &moved), 0);
    assert_true(moved.bucket_gpu_s[GP_B_PRODUCTIVE] > full.bucket_gpu_s[GP_B_PRODUCTIVE] + 1);
    /* an infer item from before the cut, stored after it */
    later[nl] = stage_ev("infer", -1, 0, ck.t_ns - S / 2, 190 * S);
    assert_int_equal(gp_goodput_compute_ckpt(&rin, &ck, 0, 0, NULL, &g), 1);
    gp_goodput_ckpt_free(&ck);
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

/* ---------------------------------------------------------------- against the simulator */

/* What the agent would know about one job of a simulated node: its event lines (parsed by
 * the protocol parser), its allocations (from its alloc events), the kernel activity of
 * its GPUs (mean gpu_util per sample), and the SLOs its hello declares. */
typedef struct simrun {
    gp_event *ev;
    size_t n_ev, cap_ev;
    gp_sample *smp;
    size_t n_smp, cap_smp;
    int64_t start_ns, end_ns, step_ns;
    gp_sim_truth truth[64];
    int n_jobs;
} simrun;

static void sim_sink(void *ctx, const char *line, size_t len) {
    simrun *r = ctx;
    if (r->n_ev == r->cap_ev) {
        r->cap_ev = r->cap_ev ? 2 * r->cap_ev : 4096;
        r->ev = realloc(r->ev, r->cap_ev * sizeof *r->ev);
        assert_non_null(r->ev);
    }
    char err[160];
    int rc = gp_proto_parse_line(line, len, 0, 1, &r->ev[r->n_ev], err, sizeof err);
    if (rc < 0) fail_msg("simulator line rejected: %s: %.*s", err, (int)len, line);
    if (rc == 1) r->n_ev++;
}

/* Runs the whole scenario, sampling every second. */
static void sim_run(gp_scenario *sc, simrun *r) {
    memset(r, 0, sizeof *r);
    char err[512];
    gp_sim *sim;
    if (gp_sim_open(sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    r->step_ns = S;
    r->start_ns = gp_sim_start_ns(sim);
    r->end_ns = gp_sim_end_ns(sim);
    size_t nd = gp_sim_n_devices(sim);
    gp_sim_drain_events(sim, r->start_ns, sim_sink, r);
    for (int64_t now = r->start_ns + r->step_ns; now <= r->end_ns; now += r->step_ns) {
        if (r->n_smp + nd > r->cap_smp) {
            r->cap_smp = (r->cap_smp + nd) * 2;
            r->smp = realloc(r->smp, r->cap_smp * sizeof *r->smp);
            assert_non_null(r->smp);
        }
        size_t n = 0;
        assert_int_equal(gp_sim_sample(sim, now, r->smp + r->n_smp, nd, &n), 0);
        r->n_smp += n;
        gp_sim_drain_events(sim, now, sim_sink, r);
    }
    gp_sim_drain_events(sim, INT64_MAX, sim_sink, r);
    r->n_jobs = gp_sim_n_jobs(sim);
    assert_true(r->n_jobs <= 64);
    for (int i = 0; i < r->n_jobs; i++)
        gp_sim_job_truth_at(sim, i, &r->truth[i]);
    gp_sim_close(sim);
}

static void simrun_free(simrun *r) {
    free(r->ev);
    free(r->smp);
}

/* The simulator's truth as shares of the job's allocated time. */
static double truth_goodput(const gp_sim_truth *t) {
    return t->allocated_s > 0 ? t->productive_s / t->allocated_s : -1;
}

/* ---------------------------------------------------------------- inference, by hand */

static gp_event req_ev(double arr_s, double ttft_s, double end_s, int64_t out_tokens) {
    gp_event e;
    gp_event_init(&e, GP_EV_REQUEST);
    strcpy(e.job_id, "j");
    e.arrival_ns = (int64_t)llround(arr_s * 1e9);
    e.first_token_ns = (int64_t)llround((arr_s + ttft_s) * 1e9);
    e.ts_ns = (int64_t)llround(end_s * 1e9);
    e.prompt_tokens = 100;
    e.output_tokens = out_tokens;
    e.ok = 1;
    return e;
}

/* 1 GPU held [0, 1000) answers two requests, [100, 102) and [500, 503): ready at the first
 * arrival, serving 5 s, the other 895 s ready with nothing in flight are idle_allocated
 * (no activity known): goodput 0.5%, not 90%. */
static void test_inference_sparse_requests(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 1000);
    gp_event ev[2] = {req_ev(100, 0.1, 102, 50), req_ev(500, 0.1, 503, 50)};
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = 2, .t0_ns = 0, .t1_ns = 1000 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.kind, GP_JK_INFERENCE);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 100, 1e-9);
    assert_near(g.serving_gpu_s, 5, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 5, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 895, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_OTHER], 0, 1e-9);
    assert_near(g.goodput, 0.005, 1e-12);
    assert_near(bucket_sum(&g), 1000, 1e-6);
}

/* Back to back: [10, 20) then [20, 30) (one ends as the next arrives) is 20 s of serving,
 * not 20 counted twice nor a gap; a third arriving 1 ns after the second ends leaves a
 * 1 ns hole. With activity known, the idle rest splits by kernels: util 0 idle, util 0.5
 * (kernels without a request in flight, e.g. a warm-up) other. */
static void test_inference_back_to_back(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 100);
    gp_event ev[3] = {req_ev(10, 0.1, 20, 10), req_ev(20, 0.1, 30, 10),
                      req_ev(30.000000001, 0.1, 40, 10)};
    gp_activity act[100];
    for (int i = 0; i < 100; i++)
        act[i] = (gp_activity){(i + 1) * S, S, i >= 80 && i < 90 ? 0.5 : 0.0};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = 3,
                        .act = act,
                        .n_act = 100,
                        .t0_ns = 0,
                        .t1_ns = 100 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.serving_gpu_s, 30 - 1e-9, 1e-12);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 30 - 1e-9, 1e-12);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 10, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_OTHER], 10, 1e-9); /* [80, 90): kernels, no request */
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 50 + 1e-9, 1e-9); /* [40,80) + [90,100) */
    assert_near(bucket_sum(&g), 100, 1e-6);
}

/* Overlapping requests on 2 GPUs: [10, 30), [15, 25), [20, 40) are in flight over
 * [10, 40) = 30 s x 2 GPUs = 60 GPU-s. e2e SLO 15 s: only the second (10 s) meets it, 10 of
 * 40 output tokens are good: productive 15, other 45 (SLO misses), idle 200-20-60 = 120. */
static void test_inference_overlap_slo(void **st) {
    (void)st;
    gp_alloc a[2] = {alloc("GPU-a", 0, 100), alloc("GPU-b", 0, 100)};
    gp_event ev[3] = {req_ev(10, 1, 30, 10), req_ev(15, 1, 25, 10), req_ev(20, 1, 40, 20)};
    gp_goodput_in in = {.allocs = a,
                        .n_allocs = 2,
                        .events = ev,
                        .n_events = 3,
                        .t0_ns = 0,
                        .t1_ns = 100 * S,
                        .slo = {.e2e_s = 15}};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_int_equal(g.good_requests, 1);
    assert_near(g.good_tokens, 10, 1e-12);
    assert_near(g.tokens, 40, 1e-12);
    assert_near(g.serving_gpu_s, 60, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 15, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_OTHER], 45, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 20, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 120, 1e-9);
    assert_near(g.goodput, 15 / 200.0, 1e-12);
    /* The SLO edge: e2e exactly at the SLO is good, 1 ns over is not. */
    gp_event e = req_ev(0, 1, 15, 10);
    gp_slo slo = {.e2e_s = 15};
    assert_true(gp_request_good(&e, &slo));
    e.ts_ns += 1;
    assert_false(gp_request_good(&e, &slo));
    slo = (gp_slo){.ttft_s = 1};
    e = req_ev(0, 1, 15, 10);
    assert_true(gp_request_good(&e, &slo));
    e.first_token_ns += 1;
    assert_false(gp_request_good(&e, &slo));
}

/* A window [50, 100) of a GPU held [0, 200): a request [40, 60) started before it and one
 * [90, 110) ends after it. Only their parts inside count: serving [50,60) + [90,100). The
 * job was ready before the window, so nothing in it is not_ready. */
static void test_inference_window_edges(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 200);
    gp_event ev[2] = {req_ev(40, 1, 60, 10), req_ev(90, 1, 110, 10)};
    gp_goodput_in in = {.allocs = &a,
                        .n_allocs = 1,
                        .events = ev,
                        .n_events = 2,
                        .t0_ns = 50 * S,
                        .t1_ns = 100 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.allocated_gpu_s, 50, 1e-9);
    assert_near(g.serving_gpu_s, 20, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 20, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_NOT_READY], 0, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_IDLE_ALLOCATED], 30, 1e-9);
    assert_near(g.goodput, 0.4, 1e-12);
}

/* ---------------------------------------------------------------- wasted_progress edges */

/* Step 5 delivered twice (same start and end: a client retry) and step 7 reported twice at
 * different times with no restart evidence: nothing is wasted; the duplicate is one step. */
static void test_repeated_step_without_restart_is_not_waste(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 20);
    gp_event ev[16];
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        ev[n++] = step_ev(i, i, i + 1);
    ev[n++] = step_ev(5, 5, 6); /* the same step again */
    ev[8] = step_ev(7, 8, 9);   /* step 7 again for [8, 9): the sequence goes 7, 7, 9 */
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = n, .t0_ns = 0, .t1_ns = 20 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 0, 1e-12);
    assert_int_equal(g.redone_steps, 0);
    assert_int_equal(g.steps, 10); /* 0..7, 7 again, 9; the copy of 5 is not a step */
    assert_int_equal(g.kept_steps, 10);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 10, 1e-9);
}

/* Evidence, one kind at a time: steps 0..9 over [0, 10), then 5..9 again over [12, 17).
 *  - the id going back (9 -> 5) alone: steps 5..9's first run (5 s) is wasted;
 *  - a restart event alone, with the redo reported as the same number only (step 9 again,
 *    no decrease): wasted 1 s;
 *  - a checkpoint_restore phase alone, likewise: wasted 1 s. */
static void test_restart_evidence_kinds(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 20);
    gp_event ev[32];
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        ev[n++] = step_ev(i, i, i + 1);
    for (int i = 5; i < 10; i++)
        ev[n++] = step_ev(i, 12 + (i - 5), 13 + (i - 5));
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = n, .t0_ns = 0, .t1_ns = 20 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 5, 1e-9);
    assert_int_equal(g.redone_steps, 5);

    /* step 9 then step 9 again at [12, 13): no decrease; a restart event at 11 */
    n = 0;
    for (int i = 0; i < 10; i++)
        ev[n++] = step_ev(i, i, i + 1);
    ev[n++] = step_ev(9, 12, 13);
    in.n_events = n;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 0, 1e-12); /* no evidence yet */
    gp_event r;
    gp_event_init(&r, GP_EV_RESTART);
    strcpy(r.job_id, "j");
    r.step = 8;
    r.ts_ns = 11 * S;
    ev[n] = r;
    in.n_events = n + 1;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 1, 1e-9);
    assert_int_equal(g.redone_steps, 1);
    /* the same with a checkpoint_restore phase instead of the restart event */
    ev[n] = phase_ev("checkpoint_restore", GP_PH_BEGIN, 11);
    ev[n + 1] = phase_ev("checkpoint_restore", GP_PH_END, 12);
    in.n_events = n + 2;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 1, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_CHECKPOINT], 1, 1e-9);
    /* a restore phase before the first run of step 9 is no evidence against it */
    ev[n] = phase_ev("checkpoint_restore", GP_PH_BEGIN, 7);
    ev[n + 1] = phase_ev("checkpoint_restore", GP_PH_END, 7);
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 0, 1e-12);
}

/* Steps 0..9 over [0, 10), then the job starts over from step 0 (no checkpoint) and the
 * window ends at step 3 of the second run: all ten steps of the first run were lost, the
 * six it never reached again (4..9) included, as the id going back 9 -> 0 shows. The
 * data wait inside lost step 2 ([2, 3)) stays data_wait: the failure lost the step's
 * computation, not its wait. */
static void test_restart_lost_steps_not_redone(void **st) {
    (void)st;
    gp_alloc a = alloc("GPU-a", 0, 20);
    gp_event ev[32];
    size_t n = 0;
    for (int i = 0; i < 10; i++)
        ev[n++] = step_ev(i, i, i + 1);
    for (int i = 0; i < 4; i++)
        ev[n++] = step_ev(i, 12 + i, 13 + i);
    ev[n++] = phase_ev("data_wait", GP_PH_BEGIN, 2);
    ev[n++] = phase_ev("data_wait", GP_PH_END, 3);
    gp_goodput_in in = {
        .allocs = &a, .n_allocs = 1, .events = ev, .n_events = n, .t0_ns = 0, .t1_ns = 20 * S};
    gp_goodput g;
    assert_int_equal(gp_goodput_compute(&in, &g), 0);
    assert_near(g.bucket_gpu_s[GP_B_WASTED_PROGRESS], 9, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_DATA_WAIT], 1, 1e-9);
    assert_near(g.bucket_gpu_s[GP_B_PRODUCTIVE], 4, 1e-9);
    assert_int_equal(g.redone_steps, 10);
    assert_int_equal(g.kept_steps, 4);
}

/* ---------------------------------------------------------------- against the simulator */

/* What the report says of job `id` after scenario -> agent -> store (agent_run.h). */
static void agent_job(gp_store *s, const char *id, gp_goodput *g) {
    gp_job_summary js;
    char err[512];
    gp_summary_opts o = {0};
    if (gp_job_summary_compute(s, id, &o, &js, err, sizeof err) != 0) fail_msg("%s", err);
    *g = js.gp;
}

/* The sparse chat server of issue 18: 1 H100, 10 requests an hour. The truth is ~99% idle;
 * the report, through the agent and the store, must agree within 2 points. */
static void test_sim_sparse_chat(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    char path[256], db[256], err[512];
    snprintf(path, sizeof path, "%s/chat.conf", dir);
    snprintf(db, sizeof db, "%s/chat.db", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[node]\nname = chat-node\ngpus = 1\nmodel = H100-SXM\nduration = 1h\n\n"
          "[job chat]\nkind = inference\ngpus = 0\nrate = 0.0028   # 10 requests an hour\n",
          f);
    fclose(f);
    gp_scenario sc;
    if (gp_scenario_load(path, &sc, err, sizeof err) < 0) fail_msg("%s", err);
    simrun r;
    sim_run(&sc, &r); /* the truth */
    gp_scenario_free(&sc);
    if (gp_test_agent_run(path, db, err, sizeof err) != 0) fail_msg("%s", err);
    gp_store *s;
    if (gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err) != 0) fail_msg("%s", err);
    gp_goodput g;
    agent_job(s, "chat", &g);
    gp_store_close(s);
    const gp_sim_truth *t = &r.truth[0];
    double tg = truth_goodput(t);
    if (getenv("GP_TEST_DEBUG"))
        fprintf(stderr, "sparse chat: %lld requests, truth %.4f engine %.4f idle %.0f/%.0f\n",
                (long long)t->requests_done, tg, g.goodput, g.bucket_gpu_s[GP_B_IDLE_ALLOCATED],
                t->idle_s);
    assert_true(t->requests_done >= 3); /* the scenario really served some requests */
    assert_int_equal(g.requests, t->requests_done);
    assert_true(tg < 0.03);
    assert_near(g.goodput, tg, 0.02);
    assert_true(g.goodput < 0.03);
    /* the allocation the agent found from the job map equals the scenario's */
    assert_near(g.allocated_gpu_s, t->allocated_s, 1.0);
    assert_near(bucket_sum(&g), g.allocated_gpu_s, 1e-6 * g.allocated_gpu_s);
    unlink(path);
    unlink(db);
    rmdir(dir);
    free(dir);
    simrun_free(&r);
}

/* Every inference job of every shipped scenario: the report's goodput (agent -> store)
 * within 2 points of the simulator's truth. */
static void test_sim_shipped_inference(void **st) {
    (void)st;
    glob_t gl;
    assert_int_equal(glob("examples/scenarios/*.conf", 0, NULL, &gl), 0);
    int checked = 0;
    char *dir = gp_test_tmpdir();
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        /* large.conf is the 1,000-GPU overhead benchmark: minutes through the agent, and
         * its server is the same model as the others' */
        if (strstr(gl.gl_pathv[i], "large.conf")) continue;
        gp_scenario sc;
        char err[512], db[300];
        if (gp_scenario_load(gl.gl_pathv[i], &sc, err, sizeof err) < 0) fail_msg("%s", err);
        simrun r;
        sim_run(&sc, &r);
        gp_scenario_free(&sc);
        int any = 0;
        for (int k = 0; k < r.n_jobs; k++)
            any |= r.truth[k].kind == GP_SJ_INFERENCE;
        if (!any) {
            simrun_free(&r);
            continue;
        }
        snprintf(db, sizeof db, "%s/run%zu.db", dir, i);
        if (gp_test_agent_run(gl.gl_pathv[i], db, err, sizeof err) != 0) fail_msg("%s", err);
        gp_store *s;
        if (gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err) != 0) fail_msg("%s", err);
        for (int k = 0; k < r.n_jobs; k++) {
            const gp_sim_truth *t = &r.truth[k];
            if (t->kind != GP_SJ_INFERENCE) continue;
            gp_goodput g;
            agent_job(s, t->job_id, &g);
            if (getenv("GP_TEST_DEBUG"))
                fprintf(stderr, "%s %s: truth %.4f engine %.4f\n", gl.gl_pathv[i], t->job_id,
                        truth_goodput(t), g.goodput);
            assert_int_equal(g.kind, GP_JK_INFERENCE);
            assert_near(g.goodput, truth_goodput(t), 0.02);
            checked++;
        }
        gp_store_close(s);
        unlink(db);
        simrun_free(&r);
    }
    globfree(&gl);
    rmdir(dir);
    free(dir);
    assert_true(checked >= 2); /* consumer, demo */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_ready_then_steps),
        cmocka_unit_test(test_restart_redoes_ten_seconds),
        cmocka_unit_test(test_phases_inside_steps_two_gpus),
        cmocka_unit_test(test_unknown_phase_edge),
        cmocka_unit_test(test_never_ready),
        cmocka_unit_test(test_idle_after_last_step),
        cmocka_unit_test(test_inference_slo),
        cmocka_unit_test(test_inference_checkpoint),
        cmocka_unit_test(test_pipeline_checkpoint),
        cmocka_unit_test(test_training_carried_phase_checkpoint),
        cmocka_unit_test(test_activity_only),
        cmocka_unit_test(test_pipeline_gpu_stage),
        cmocka_unit_test(test_inference_sparse_requests),
        cmocka_unit_test(test_inference_back_to_back),
        cmocka_unit_test(test_inference_overlap_slo),
        cmocka_unit_test(test_inference_window_edges),
        cmocka_unit_test(test_repeated_step_without_restart_is_not_waste),
        cmocka_unit_test(test_restart_evidence_kinds),
        cmocka_unit_test(test_restart_lost_steps_not_redone),
        cmocka_unit_test(test_sim_sparse_chat),
        cmocka_unit_test(test_sim_shipped_inference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
