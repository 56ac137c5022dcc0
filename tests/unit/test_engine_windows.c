/* test_engine_windows.c: the simulator's straggler model is physically consistent and the
 * engine finds it from per-rank step events; step-time deviation over windows; windowed
 * not-ready clipping; SLO misses become evidence on the right class.
 *
 * Expected values come from the scenario (slowdown, rank, times) and from hand-built
 * events, never from the code under test. */
#include "testutil.h"

#include "engine/diagnosis/classify.h"
#include "engine/diagnosis/windows.h"
#include "ingest/protocol.h"
#include "sim/scenario.h"
#include "sim/sim.h"

#define NS 1000000000LL

typedef struct {
    gp_event *ev;
    size_t n, cap;
    char *text; /* raw lines (for byte comparisons) */
    size_t len, tcap;
} evs;

static void sink(void *ctx, const char *line, size_t len) {
    evs *b = ctx;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->ev = realloc(b->ev, b->cap * sizeof *b->ev);
        assert_non_null(b->ev);
    }
    char err[160];
    if (gp_proto_parse_line(line, len, 0, 1, &b->ev[b->n], err, sizeof err) == 1) b->n++;
    if (b->len + len + 2 > b->tcap) {
        b->tcap = (b->tcap + len + 2) * 2;
        b->text = realloc(b->text, b->tcap);
        assert_non_null(b->text);
    }
    memcpy(b->text + b->len, line, len);
    b->len += len;
    b->text[b->len++] = '\n';
}

typedef struct {
    gp_sample *s; /* [k * n_gpus + g] */
    size_t n_rows;
    int n_gpus;
    evs e;
    int64_t start;
} simrun;

static simrun simulate(const char *text, int64_t interval) {
    simrun r;
    memset(&r, 0, sizeof r);
    gp_scenario sc;
    char err[512];
    if (gp_scenario_parse_string(text, "t.conf", &sc, err, sizeof err) < 0) fail_msg("%s", err);
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    r.n_gpus = sc.n_gpus;
    gp_scenario_free(&sc);
    r.start = gp_sim_start_ns(sim);
    int64_t end = gp_sim_end_ns(sim);
    size_t cap = (size_t)((end - r.start) / interval + 1);
    r.s = calloc(cap * (size_t)r.n_gpus, sizeof *r.s);
    assert_non_null(r.s);
    for (int64_t t = r.start + interval; t <= end; t += interval) {
        size_t n = 0;
        gp_sim_sample(sim, t, r.s + r.n_rows * (size_t)r.n_gpus, (size_t)r.n_gpus, &n);
        gp_sim_drain_events(sim, t, sink, &r.e);
        r.n_rows++;
    }
    gp_sim_drain_events(sim, INT64_MAX, sink, &r.e);
    gp_sim_close(sim);
    return r;
}

static void simrun_free(simrun *r) {
    free(r->s);
    free(r->e.ev);
    free(r->e.text);
}

static const char *STRAGGLER = "[node]\ngpus = 4\nduration = 6m\nseed = 7\n"
                               "[job t]\ngpus = 0-3\nallreduce_bytes = 1GB\nper_rank_steps = yes\n"
                               "straggler_rank = 2\nstraggler_slowdown = 1.5\n"
                               "straggler_from = 2m\nstraggler_until = 5m\n";

/* mean of a field of GPU g over samples whose interval lies in [a, b) (relative s) */
static double mean_sm(const simrun *r, int g, double a, double b, int power) {
    double sum = 0;
    int n = 0;
    for (size_t k = 0; k < r->n_rows; k++) {
        const gp_sample *x = &r->s[k * (size_t)r->n_gpus + (size_t)g];
        double t = (double)(x->ts_ns - r->start) / NS;
        if (t - 10 < a || t > b) continue;
        sum += power ? x->power_w : x->sm_active;
        n++;
    }
    assert_true(n > 0);
    return sum / n;
}

static void test_sim_straggler_signals(void **state) {
    (void)state;
    simrun r = simulate(STRAGGLER, 10 * NS);
    /* before and after the episode every GPU looks the same */
    for (int g = 0; g < 4; g++) {
        assert_near(mean_sm(&r, g, 0, 110, 0), mean_sm(&r, 0, 0, 110, 0), 0.05);
        assert_near(mean_sm(&r, g, 310, 360, 0), mean_sm(&r, 0, 310, 360, 0), 0.05);
    }
    /* during it the slow rank's GPU computes while its peers wait with idle SMs */
    double slow = mean_sm(&r, 2, 130, 290, 0);
    for (int g = 0; g < 4; g++) {
        if (g == 2) continue;
        double peer = mean_sm(&r, g, 130, 290, 0);
        assert_true(slow > peer + 0.1);
        assert_true(mean_sm(&r, 2, 130, 290, 1) > mean_sm(&r, g, 130, 290, 1) + 10);
        /* the straggler's own activity is what every GPU showed before the episode */
        assert_near(slow, mean_sm(&r, g, 0, 110, 0), 0.05);
    }
    /* per-rank step events: the same steps on every rank; the slow rank's compute time is
     * 1.5 x its peers' inside the episode (copy time is small next to compute) */
    int64_t count[4] = {0};
    double ratio_sum = 0;
    int ratio_n = 0;
    for (size_t i = 0; i < r.e.n; i++) {
        const gp_event *e = &r.e.ev[i];
        if (e->kind != GP_EV_STEP) continue;
        assert_true(e->rank >= 0 && e->rank < 4);
        count[e->rank]++;
        if (e->rank != 2) continue;
        double t = (double)(e->ts_ns - r.start) / NS;
        if (t < 130 || t > 290) continue;
        for (size_t k = 0; k < r.e.n; k++) /* rank 0's same step */
            if (r.e.ev[k].kind == GP_EV_STEP && r.e.ev[k].rank == 0 && r.e.ev[k].step == e->step &&
                r.e.ev[k].step_start_ns == e->step_start_ns) {
                ratio_sum += (double)(e->ts_ns - e->step_start_ns) /
                             (double)(r.e.ev[k].ts_ns - r.e.ev[k].step_start_ns);
                ratio_n++;
                break;
            }
    }
    assert_true(count[0] > 100);
    for (int k = 1; k < 4; k++)
        assert_int_equal(count[k], count[0]);
    assert_true(ratio_n > 50);
    assert_near(ratio_sum / ratio_n, 1.5, 0.05);

    /* the engine finds rank 2 over [2m, 5m] from the events alone */
    gp_worker_obs *obs = NULL;
    int no = gp_step_obs_from_events(r.e.ev, r.e.n, &obs);
    assert_true(no > 0);
    gp_straggler *st = NULL;
    int ns = gp_straggler_detect(obs, (size_t)no, NULL, &st);
    assert_int_equal(ns, 1);
    assert_int_equal(st[0].worker, 2);
    assert_near((double)(st[0].t0_ns - r.start) / NS, 120, 10);
    assert_near((double)(st[0].t1_ns - r.start) / NS, 300, 10);
    assert_near(st[0].ratio, 1.5, 0.08);
    free(st);
    free(obs);
    simrun_free(&r);
}

/* per-rank step events change the events, never the telemetry */
static void test_per_rank_steps_keep_signals(void **state) {
    (void)state;
    const char *a = "[node]\ngpus = 4\nduration = 3m\n[job t]\ngpus = 0-3\nallreduce_bytes = 1GB\n"
                    "checkpoint_every = 50\ncheckpoint_time = 5s\n";
    char b[512];
    snprintf(b, sizeof b, "%sper_rank_steps = yes\n", a);
    simrun x = simulate(a, 5 * NS), y = simulate(b, 5 * NS);
    assert_int_equal(x.n_rows, y.n_rows);
    assert_memory_equal(x.s, y.s, x.n_rows * (size_t)x.n_gpus * sizeof *x.s);
    size_t sx = 0, sy = 0, px = 0, py = 0;
    for (size_t i = 0; i < x.e.n; i++) {
        sx += x.e.ev[i].kind == GP_EV_STEP;
        px += x.e.ev[i].kind == GP_EV_PHASE;
    }
    for (size_t i = 0; i < y.e.n; i++) {
        sy += y.e.ev[i].kind == GP_EV_STEP;
        py += y.e.ev[i].kind == GP_EV_PHASE;
    }
    assert_true(sx > 0 && px > 0);
    assert_int_equal(sy, 4 * sx); /* one per rank */
    assert_int_equal(py, 4 * px);
    /* no straggler: the detector stays silent */
    gp_worker_obs *obs = NULL;
    int no = gp_step_obs_from_events(y.e.ev, y.e.n, &obs);
    gp_straggler *st = NULL;
    assert_int_equal(gp_straggler_detect(obs, (size_t)no, NULL, &st), 0);
    free(obs);
    free(st);
    simrun_free(&x);
    simrun_free(&y);
}

static gp_event step_ev(int64_t rank, int64_t step, int64_t start, int64_t end) {
    gp_event e;
    gp_event_init(&e, GP_EV_STEP);
    e.rank = rank;
    e.step = step;
    e.step_start_ns = start;
    e.ts_ns = end;
    return e;
}

static void test_step_deviation(void **state) {
    (void)state;
    /* 0..60 s: 1 s steps; 60..120 s: 2 s steps; 120..180 s: nothing */
    gp_event ev[100];
    size_t n = 0;
    int64_t t = 0;
    for (int i = 0; i < 59; i++, t += NS)
        ev[n++] = step_ev(-1, i, t, t + NS);
    for (t = 60 * NS; t + 2 * NS < 120 * NS; t += 2 * NS)
        ev[n] = step_ev(-1, (int64_t)n, -1, t + 2 * NS), n++; /* start from the previous end */
    gp_step_dev *d = NULL;
    int nw = gp_step_deviation(ev, n, 0, 180 * NS, 60 * NS, 1.0, &d);
    assert_int_equal(nw, 3);
    assert_int_equal(d[0].steps, 59);
    assert_near(d[0].median_step_s, 1.0, 1e-9);
    assert_near(d[0].deviation, 0.0, 1e-9);
    assert_near(d[1].median_step_s, 2.0, 1e-9);
    assert_near(d[1].deviation, 1.0, 1e-9);
    assert_int_equal(d[2].steps, 0);
    assert_true(d[2].median_step_s < 0);
    free(d);
}

/* The store loader holds steps as compact records (gp_job_input.steps) and the rest as
 * gp_events; hand-built inputs keep steps among the events. Both forms of one run must
 * give the same features, per-rank observations and step deviation, exactly. */
static void test_compact_steps_same(void **state) {
    (void)state;
    simrun r = simulate(STRAGGLER, 10 * NS);
    gp_event *rest = calloc(r.e.n + 1, sizeof *rest);
    gp_step_ev *st = calloc(r.e.n + 1, sizeof *st);
    assert_true(rest && st);
    size_t nr = 0, ns = 0;
    for (size_t i = 0; i < r.e.n; i++) {
        const gp_event *e = &r.e.ev[i];
        if (e->kind == GP_EV_STEP)
            st[ns++] = (gp_step_ev){e->ts_ns, e->step_start_ns, e->rank, e->step, e->units};
        else
            rest[nr++] = *e;
    }
    assert_true(ns > 1000); /* 4 ranks' steps over 6 minutes */
    gp_job_input a, b;
    memset(&a, 0, sizeof a);
    a.job_id = "t";
    a.events = r.e.ev;
    a.n_events = r.e.n;
    b = a;
    b.events = rest;
    b.n_events = nr;
    b.steps = st;
    b.n_steps = ns;
    gp_features fa, fb;
    char err[128];
    assert_int_equal(gp_features_compute(&a, &fa, err, sizeof err), 0);
    assert_int_equal(gp_features_compute(&b, &fb, err, sizeof err), 0);
    assert_true(fa.has_steps && fa.n_steps == (int64_t)ns);
    assert_int_equal(fb.n_steps, fa.n_steps);
    assert_int_equal(fb.n_ranks, fa.n_ranks);
    assert_int_equal(fb.t0_ns, fa.t0_ns);
    assert_int_equal(fb.t1_ns, fa.t1_ns);
    assert_int_equal(fb.ready_ns, fa.ready_ns);
    assert_true(fb.ideal_step_s == fa.ideal_step_s && fb.mean_step_s == fa.mean_step_s);
    assert_true(fb.step_cv == fa.step_cv && fb.step_drift == fa.step_drift);
    assert_true(fb.units == fa.units && fb.units_per_s == fa.units_per_s);
    assert_true(fb.checkpoint_share == fa.checkpoint_share &&
                fb.data_wait_share == fa.data_wait_share && fb.comm_share == fa.comm_share);
    gp_worker_obs *oa = NULL, *ob = NULL;
    int na = gp_step_obs_from_events(r.e.ev, r.e.n, &oa), nb = gp_step_obs_from_input(&b, &ob);
    assert_true(na > 1000);
    assert_int_equal(nb, na);
    for (int i = 0; i < na; i++) { /* field by field: the struct has padding */
        assert_int_equal(ob[i].worker, oa[i].worker);
        assert_int_equal(ob[i].iter, oa[i].iter);
        assert_int_equal(ob[i].ts_ns, oa[i].ts_ns);
        assert_true(ob[i].value == oa[i].value);
    }
    gp_step_dev *da = NULL, *db = NULL;
    int wa = gp_step_deviation(r.e.ev, r.e.n, fa.t0_ns, fa.t1_ns, 60 * NS, fa.ideal_step_s, &da);
    int wb = gp_step_deviation_input(&b, fa.t0_ns, fa.t1_ns, 60 * NS, fa.ideal_step_s, &db);
    assert_true(wa > 0);
    assert_int_equal(wb, wa);
    assert_memory_equal(da, db, (size_t)wa * sizeof *da);
    free(oa), free(ob), free(da), free(db), free(rest), free(st);
    simrun_free(&r);
}

static void test_clip_ready(void **state) {
    (void)state;
    gp_features whole, w;
    memset(&whole, 0, sizeof whole);
    memset(&w, 0, sizeof w);
    whole.ready_ns = 100 * NS;
    w.first_alloc_ns = 0;
    w.t0_ns = 300 * NS;
    w.t1_ns = 600 * NS;
    w.not_ready_s = 350; /* what a window that saw its first step at 350 s would say */
    w.ready_ns = 350 * NS;
    gp_features_clip_ready(&w, &whole);
    assert_near(w.not_ready_s, 0, 1e-9); /* it was ready long before the window */
    whole.ready_ns = 400 * NS;           /* ready inside the window: 100 s of it */
    w.not_ready_s = 400;
    gp_features_clip_ready(&w, &whole);
    assert_near(w.not_ready_s, 100, 1e-9);
}

/* a service declaring a TPOT SLO no decode can meet: the memory_bound finding carries the
 * attainment; the same service without SLOs carries none */
static void test_slo_evidence(void **state) {
    (void)state;
    const char *base = "[node]\ngpus = 1\nduration = 5m\n[job s]\nkind = inference\ngpus = 0\n"
                       "rate = 4\noutput_tokens = 200\n";
    for (int with = 0; with < 2; with++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", base, with ? "slo_tpot = 1ms\n" : "");
        simrun r = simulate(text, 2 * NS);
        gp_job_input in = {0};
        in.job_id = "s";
        in.samples = r.s;
        in.n_samples = r.n_rows;
        in.events = r.e.ev;
        in.n_events = r.e.n;
        gp_features f;
        char err[256];
        assert_int_equal(gp_features_compute(&in, &f, err, sizeof err), 0);
        assert_true(f.n_req >= 20);
        assert_near(f.slo_tpot_s, with ? 0.001 : 0, 1e-12); /* taken from the hello */
        gp_finding fd[16];
        size_t nf = gp_classify("s", &f, NULL, 0, 3.0, fd, 16);
        assert_true(nf >= 1);
        assert_int_equal(fd[0].cls, GP_FC_MEMORY_BOUND);
        int found = 0;
        for (int k = 0; k < fd[0].n_evidence; k++)
            if (!strcmp(fd[0].evidence[k].metric, "slo_attainment")) {
                found = 1;
                /* only one-token requests (no TPOT) can meet 1 ms */
                assert_true(fd[0].evidence[k].value < 0.05);
            }
        assert_int_equal(found, with);
        simrun_free(&r);
    }
}

/* A window finding built by hand: class, scope, its time, badput of bucket b, headroom. */
static gp_finding wf(gp_finding_class c, const char *scope_id, int64_t t0_s, int64_t t1_s, int b,
                     double bad_s, double head_s, int minor) {
    gp_finding f;
    memset(&f, 0, sizeof f);
    f.cls = c;
    f.scope = strchr(scope_id, '/') ? GP_SCOPE_RANK : GP_SCOPE_JOB;
    snprintf(f.scope_id, sizeof f.scope_id, "%s", scope_id);
    snprintf(f.job_id, sizeof f.job_id, "t");
    f.t0_ns = t0_s * NS;
    f.t1_ns = t1_s * NS;
    if (b >= 0) f.badput_gpu_s[b] = bad_s;
    f.wasted_gpu_s = bad_s;
    f.wasted_cost = bad_s / 3600 * 2; /* $2 per GPU-hour */
    f.headroom_frac = head_s > 0 ? 0.1 : -1;
    f.headroom_gpu_s = head_s > 0 ? head_s : -1;
    f.headroom_cost = head_s > 0 ? head_s / 3600 * 2 : -1;
    f.minor = minor;
    f.confidence = minor ? 0.6 : 0.9;
    snprintf(f.summary, sizeof f.summary, "%s in [%lld, %lld)", gp_finding_class_name(c),
             (long long)t0_s, (long long)t1_s);
    return f;
}

/* Issue 19 item 6: consecutive windows with the same cause on the same scope are one
 * finding with its start, end and totals, for every class; a gap ends the episode; other
 * scopes stay apart. Expected totals are the sums of the hand-built windows. */
static void test_episodes_merge(void **state) {
    (void)state;
    enum { NW = 5 };
    gp_finding f[NW][4];
    gp_diag_window w[NW];
    memset(w, 0, sizeof w);
    for (int k = 0; k < NW; k++) {
        int64_t a = 60 * k, b = 60 * (k + 1);
        size_t n = 0;
        /* input bound in windows 0-2 (the first under the threshold: minor) and again in 4 */
        if (k <= 2 || k == 4)
            f[k][n++] =
                wf(GP_FC_INPUT_BOUND, "t", a, b, GP_B_DATA_WAIT, k == 1 ? 20 : 10 + k, 0, k == 0);
        /* rank 1 straggles in every window, rank 2 only in window 3: two scopes */
        f[k][n++] = wf(GP_FC_STRAGGLER, "t/rank-1", a + 5, b - 5, -1, 0, 4 + k, 0);
        if (k == 3) f[k][n++] = wf(GP_FC_STRAGGLER, "t/rank-2", a, b, -1, 0, 2, 0);
        /* a minor communication loss in windows 3 and 4 only */
        if (k >= 3) f[k][n++] = wf(GP_FC_COMMUNICATION_BOUND, "t", a, b, GP_B_OTHER, 3, 0, 1);
        w[k].findings = f[k];
        w[k].n = n;
        w[k].t0_ns = a * NS;
        w[k].t1_ns = b * NS;
    }
    gp_finding *ep = NULL;
    int ne = gp_diag_windows_episodes(w, NW, &ep);
    assert_int_equal(ne, 5);
    const gp_finding *in1 = NULL, *in2 = NULL, *r1 = NULL, *r2 = NULL, *cm = NULL;
    for (int i = 0; i < ne; i++) {
        const gp_finding *x = &ep[i];
        if (x->cls == GP_FC_INPUT_BOUND && x->t0_ns == 0) in1 = x;
        if (x->cls == GP_FC_INPUT_BOUND && x->t0_ns == 240 * NS) in2 = x;
        if (x->cls == GP_FC_STRAGGLER && !strcmp(x->scope_id, "t/rank-1")) r1 = x;
        if (x->cls == GP_FC_STRAGGLER && !strcmp(x->scope_id, "t/rank-2")) r2 = x;
        if (x->cls == GP_FC_COMMUNICATION_BOUND) cm = x;
    }
    assert_non_null(in1);
    assert_non_null(in2);
    assert_non_null(r1);
    assert_non_null(r2);
    assert_non_null(cm);
    /* windows 0-2: start of the first, end of the last, badput 10 + 20 + 12 */
    assert_int_equal(in1->t1_ns, 180 * NS);
    assert_near(in1->wasted_gpu_s, 42, 1e-9);
    assert_near(in1->badput_gpu_s[GP_B_DATA_WAIT], 42, 1e-9);
    assert_near(in1->wasted_cost, 42.0 / 3600 * 2, 1e-12);
    assert_int_equal(in1->minor, 0); /* past the threshold in two of its windows */
    assert_near(in1->confidence, 0.9, 1e-12);
    assert_non_null(strstr(in1->summary, "Over 3 consecutive windows (180 s)"));
    assert_non_null(strstr(in1->summary, "[60, 120)")); /* the worst window speaks */
    /* window 4 alone: a new episode after the gap */
    assert_int_equal(in2->t1_ns, 300 * NS);
    assert_near(in2->wasted_gpu_s, 14, 1e-9);
    assert_null(strstr(in2->summary, "Over "));
    /* rank 1: one episode over all five windows, headroom 4+5+6+7+8 */
    assert_int_equal(r1->t0_ns, 5 * NS);
    assert_int_equal(r1->t1_ns, 295 * NS);
    assert_near(r1->headroom_gpu_s, 30, 1e-9);
    assert_near(r1->headroom_frac, 0.1, 1e-12); /* each window's share of its productive time */
    assert_near(r1->headroom_cost, 30.0 / 3600 * 2, 1e-12);
    assert_near(r2->headroom_gpu_s, 2, 1e-9);
    /* minor in every window: still minor, totals summed */
    assert_int_equal(cm->minor, 1);
    assert_int_equal(cm->t0_ns, 180 * NS);
    assert_near(cm->badput_gpu_s[GP_B_OTHER], 6, 1e-9);
    /* ranked: major findings first, minor last */
    assert_int_equal(ep[ne - 1].minor, 1);
    free(ep);
    /* unknown in one window is unknown in the total */
    f[1][0].wasted_gpu_s = -1;
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        f[1][0].badput_gpu_s[b] = -1;
    ne = gp_diag_windows_episodes(w, NW, &ep);
    assert_int_equal(ne, 5);
    for (int i = 0; i < ne; i++)
        if (ep[i].cls == GP_FC_INPUT_BOUND && ep[i].t0_ns == 0) {
            assert_true(ep[i].wasted_gpu_s < 0);
            assert_true(ep[i].badput_gpu_s[GP_B_DATA_WAIT] < 0);
        }
    free(ep);
    assert_int_equal(gp_diag_windows_episodes(w, 0, &ep), 0);
    assert_null(ep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_straggler_signals),
        cmocka_unit_test(test_per_rank_steps_keep_signals),
        cmocka_unit_test(test_step_deviation),
        cmocka_unit_test(test_compact_steps_same),
        cmocka_unit_test(test_clip_ready),
        cmocka_unit_test(test_slo_evidence),
        cmocka_unit_test(test_episodes_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
