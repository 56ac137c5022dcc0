/* test_feat_walk.c: the whole-job step and request features (features.c: drift, robust
 * median, mean and cv, shared and alone medians; ttft, tpot, e2e quantiles) are computed
 * without per-step or per-request arrays: each quantile selects over the job's steps or
 * requests walked again as often as it needs (dur_walk, vsrc: a radix selection on the
 * values' bits, then a copy of at most 1,024 of them), steps of a few ranks walked rank by
 * rank (report's peak RSS, docs/benchmarks.md). This checks that they are, bit for bit,
 * what whole arrays give: a reference here builds the arrays the old way (every duration,
 * its end, the shared ones, the alone histogram, the ttft/tpot/e2e lists, in one walk in
 * (rank, time) order) and takes the same quantiles of them (gp_quantile sorts,
 * gp_robust_median allocates its deviations), on inputs with ranks interleaved in time
 * (walked rank by rank, or through an index past 16 ranks or when not in time order),
 * steps whose start is the previous step's end, ties, windows that cut a rank's steps,
 * steps next to another job's processes, requests with missing times, more values than
 * the selection copies out at once and thousands of equal values. A walk that forgot the
 * rank's reset, the window, the previous step inside the window or a request's missing
 * time, or a selection off by one, gives other numbers. */
#include "testutil.h"

#include "engine/diagnosis/features.h"
#include "engine/diagnosis/sig_hist.h"
#include "engine/diagnosis/thresholds.h"

#define NS 1000000000LL

static uint64_t next_rand(uint64_t *s) { /* xorshift64* */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

typedef struct {
    gp_step_ev *st;
    size_t ns;
    gp_mark_ev *mk;
    size_t nm;
    gp_proc_sample *pr;
    size_t npr;
} walk_input;

static int cmp_step_ts(const void *a, const void *b) {
    const gp_step_ev *x = a, *y = b;
    if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* ranks' steps in time order across ranks (the store's order: the features index them),
 * most with an unknown start (the previous step's end), some ties; requests of two ranks
 * with arrival or first token unknown now and then; another job's processes in the
 * middle of the run (shared steps). */
static void build_q(uint64_t seed, int ranks, int per_rank, int quantized, walk_input *w) {
    memset(w, 0, sizeof *w);
    w->st = calloc((size_t)(ranks * per_rank), sizeof *w->st);
    assert_non_null(w->st);
    int64_t base = 1000 * NS;
    for (int r = 0; r < ranks; r++) {
        /* the last rank starts after the others ended: its first step with an unknown
         * start has no previous step (a walk that kept the last rank's end would give it
         * one) */
        int64_t t = base + (int64_t)r * 3000000 +
                    (r > 0 && r == ranks - 1 ? (int64_t)per_rank * 400000000 : 0);
        for (int k = 0; k < per_rank; k++) {
            uint64_t x = next_rand(&seed);
            int64_t d = 200000000 + (int64_t)(x % 40000000);           /* 200-240 ms */
            if (k > per_rank / 2) d += 30000000;                       /* drift */
            if (x % 97 == 0) d *= 6;                                   /* outliers */
            if (quantized) d = 200000000 + (int64_t)(x % 3) * 1000000; /* thousands of ties */
            int tie = k > 0 && x % 53 == 0;
            t += tie ? 0 : d;
            gp_step_ev *s = &w->st[w->ns++];
            s->ts_ns = t;
            s->step_start_ns = x % 5 < 3 ? -1 : t - d + (int64_t)(x % 1000);
            s->rank = r * 2 + 1; /* not 0..n: ranks are labels */
            s->step = k;
            s->units = x % 7 ? 32 : -1;
        }
    }
    qsort(w->st, w->ns, sizeof *w->st, cmp_step_ts);
    int64_t t_end = base + (int64_t)per_rank * 230000000;
    w->mk = calloc((size_t)per_rank * 2, sizeof *w->mk);
    assert_non_null(w->mk);
    int64_t t = base;
    for (int k = 0; k < per_rank * 2; k++) {
        uint64_t x = next_rand(&seed);
        t += 100000000 + (int64_t)(x % 50000000);
        gp_mark_ev *m = &w->mk[w->nm++];
        m->kind = GP_EV_REQUEST;
        m->rank = (int64_t)(x % 2);
        m->ts_ns = t;
        m->arrival_ns = x % 11 == 0 ? -1 : t - 500000000 - (int64_t)(x % 900000000);
        m->first_token_ns = x % 7 == 0 ? -1 : m->arrival_ns + 50000000 + (int64_t)(x % 80000000);
        m->output_tokens = (int64_t)(x % 5 == 0 ? x % 2 : 10 + x % 300);
        m->ok = x % 13 != 0;
        if (quantized && m->arrival_ns >= 0) {
            m->arrival_ns = t - 500000000 - (int64_t)(x % 2) * 100000000;
            m->first_token_ns = x % 7 == 0 ? -1 : m->arrival_ns + 50000000;
            m->output_tokens = 11;
        }
    }
    w->pr = calloc(64, sizeof *w->pr);
    assert_non_null(w->pr);
    for (int k = 0; k < 64; k++) {
        gp_proc_sample *p = &w->pr[w->npr++];
        snprintf(p->uuid, sizeof p->uuid, "GPU-0");
        p->ts_ns = base + (t_end - base) / 3 + (int64_t)k * 1500000000;
        p->valid = GP_P_SM_SHARE;
        p->sm_share = 0.4;
        snprintf(p->job_id, sizeof p->job_id, "%s", k % 9 ? "other" : "me");
    }
}

static void build(uint64_t seed, int ranks, int per_rank, walk_input *w) {
    build_q(seed, ranks, per_rank, 0, w);
}

static void free_input(walk_input *w) {
    free(w->st);
    free(w->mk);
    free(w->pr);
}

typedef struct {
    double mean, cv, drift, ideal, thr_shared, thr_alone, shared_share;
    double q[6]; /* ttft p50 p90, tpot p50 p90, e2e p50 p90 */
} ref_features;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double quantile_copy(const double *v, size_t n, double q) {
    double *c = malloc((n ? n : 1) * sizeof *c);
    assert_non_null(c);
    memcpy(c, v, n * sizeof *c);
    double r = gp_quantile(c, n, q);
    free(c);
    return r;
}

/* The old whole-array computation of the same features over [t0, t1]. */
static void reference(const walk_input *w, const char *job, int64_t t0, int64_t t1,
                      ref_features *r) {
    size_t ns = w->ns;
    size_t *ord = malloc((ns ? ns : 1) * sizeof *ord);
    assert_non_null(ord);
    for (size_t i = 0; i < ns; i++) { /* stable insertion sort by (rank, time) */
        size_t j = i;
        while (j > 0 && (w->st[ord[j - 1]].rank != w->st[i].rank
                             ? w->st[ord[j - 1]].rank > w->st[i].rank
                             : w->st[ord[j - 1]].ts_ns > w->st[i].ts_ns)) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    int64_t *fts = malloc((w->npr ? w->npr : 1) * sizeof *fts);
    assert_non_null(fts);
    size_t nf = 0;
    for (size_t i = 0; i < w->npr; i++)
        if (strcmp(w->pr[i].job_id, job) && w->pr[i].sm_share > 0.05) fts[nf++] = w->pr[i].ts_ns;
    qsort(fts, nf, sizeof *fts, cmp_i64);
    double *dur = malloc((ns ? ns : 1) * sizeof *dur), *dsh = malloc((ns ? ns : 1) * sizeof *dsh);
    int64_t *dts = malloc((ns ? ns : 1) * sizeof *dts);
    assert_true(dur && dsh && dts);
    gp_sig_hist alone;
    memset(&alone, 0, sizeof alone);
    size_t nd = 0, nsh = 0, nal = 0;
    int64_t rank = INT64_MIN, prev_end = -1;
    for (size_t k = 0; k < ns; k++) {
        const gp_step_ev *s = &w->st[ord[k]];
        if (s->rank != rank) {
            rank = s->rank;
            prev_end = -1;
        }
        if (s->ts_ns < t0 || s->ts_ns > t1) continue;
        int64_t st = s->step_start_ns >= 0 ? s->step_start_ns : prev_end;
        prev_end = s->ts_ns;
        if (st < 0 || s->ts_ns <= st) continue;
        double d = (double)(s->ts_ns - st) / 1e9;
        dur[nd] = d;
        dts[nd++] = s->ts_ns;
        if (gp_features_near_foreign(fts, nf, s->ts_ns))
            dsh[nsh++] = d;
        else {
            assert_int_equal(gp_sig_hist_add(&alone, s->ts_ns - st), 0);
            nal++;
        }
    }
    memset(r, 0, sizeof *r);
    r->mean = r->cv = r->drift = r->ideal = r->thr_shared = r->thr_alone = r->shared_share = -1;
    if (nd) {
        int64_t tlo = INT64_MAX, thi = INT64_MIN;
        for (size_t i = 0; i < nd; i++) {
            if (dts[i] < tlo) tlo = dts[i];
            if (dts[i] > thi) thi = dts[i];
        }
        int64_t c1 = tlo + (thi - tlo) / 3, c2 = thi - (thi - tlo) / 3;
        double *tmp = malloc(nd * sizeof *tmp);
        assert_non_null(tmp);
        size_t k1 = 0, k2 = 0;
        for (size_t i = 0; i < nd; i++)
            if (dts[i] <= c1) tmp[k1++] = dur[i];
        double early = k1 >= 3 ? gp_quantile(tmp, k1, 0.5) : -1;
        for (size_t i = 0; i < nd; i++)
            if (dts[i] >= c2) tmp[k2++] = dur[i];
        double late = k2 >= 3 ? gp_quantile(tmp, k2, 0.5) : -1;
        free(tmp);
        r->drift = early > 0 && late > 0 ? late / early : -1;
        double sum = 0, sq = 0;
        for (size_t i = 0; i < nd; i++) {
            sum += dur[i];
            sq += dur[i] * dur[i];
        }
        r->mean = sum / (double)nd;
        double var = sq / (double)nd - r->mean * r->mean;
        r->cv = r->mean > 0 ? sqrt(var > 0 ? var : 0) / r->mean : -1;
        r->ideal = gp_robust_median(dur, nd, gp_th(GP_TH_STEP_OUTLIER_MAD));
    }
    if (nsh >= 5 && nal >= 5) {
        double ms = quantile_copy(dsh, nsh, 0.5), ma = gp_sig_hist_median_s(&alone);
        r->thr_shared = ms > 0 ? 1 / ms : -1;
        r->thr_alone = ma > 0 ? 1 / ma : -1;
    }
    if (nsh + nal > 0) r->shared_share = (double)nsh / (double)(nsh + nal);
    double *q[3];
    size_t nq[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        q[i] = malloc((w->nm ? w->nm : 1) * sizeof *q[i]);
        assert_non_null(q[i]);
    }
    size_t n_req = 0;
    for (size_t i = 0; i < w->nm; i++) {
        const gp_mark_ev *m = &w->mk[i];
        if (m->kind != GP_EV_REQUEST || m->ts_ns < t0 || m->ts_ns > t1) continue;
        n_req++;
        if (m->arrival_ns < 0) continue;
        double ee = (double)(m->ts_ns - m->arrival_ns) / 1e9;
        q[2][nq[2]++] = ee;
        if (m->first_token_ns < 0) continue;
        double tt = (double)(m->first_token_ns - m->arrival_ns) / 1e9;
        q[0][nq[0]++] = tt;
        if (m->output_tokens > 1) q[1][nq[1]++] = (ee - tt) / (double)(m->output_tokens - 1);
    }
    for (int i = 0; i < 3; i++) {
        r->q[2 * i] = n_req ? quantile_copy(q[i], nq[i], 0.5) : -1;
        r->q[2 * i + 1] = n_req ? quantile_copy(q[i], nq[i], 0.9) : -1;
        free(q[i]);
    }
    gp_sig_hist_free(&alone);
    free(dur);
    free(dsh);
    free(dts);
    free(fts);
    free(ord);
}

/* a == b bit for bit (memcmp: -0 and NaN would not pass as ==) */
#define assert_same(a, b)                                                                          \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (memcmp(&a_, &b_, sizeof a_))                                                           \
            fail_msg("%s = %.17g, the whole arrays give %.17g", #a, a_, b_);                       \
    } while (0)

static void check_window(const walk_input *w, int64_t t0, int64_t t1) {
    gp_job_input in;
    memset(&in, 0, sizeof in);
    in.job_id = "me";
    in.steps = w->st;
    in.n_steps = w->ns;
    in.marks = w->mk;
    in.n_marks = w->nm;
    in.procs = w->pr;
    in.n_procs = w->npr;
    in.t0_ns = t0;
    in.t1_ns = t1;
    gp_features f;
    char err[256];
    assert_int_equal(gp_features_compute(&in, &f, err, sizeof err), 0);
    ref_features r;
    reference(w, "me", f.t0_ns, f.t1_ns, &r);
    assert_same(f.mean_step_s, r.mean);
    assert_same(f.step_cv, r.cv);
    assert_same(f.step_drift, r.drift);
    assert_same(f.ideal_step_s, r.ideal);
    assert_same(f.thr_shared, r.thr_shared);
    assert_same(f.thr_alone, r.thr_alone);
    assert_same(f.shared_share, r.shared_share);
    assert_same(f.ttft_p50_s, r.q[0]);
    assert_same(f.ttft_p90_s, r.q[1]);
    assert_same(f.tpot_p50_s, r.q[2]);
    assert_same(f.tpot_p90_s, r.q[3]);
    assert_same(f.e2e_p50_s, r.q[4]);
    assert_same(f.e2e_p90_s, r.q[5]);
}

/* The whole job and windows that cut every rank's steps (a rank's first step inside the
 * window has no previous step: no duration), on several random inputs. */
static void test_walks_equal_whole_arrays(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 9; seed++) {
        walk_input w;
        /* one rank (in order already), 4 (walked rank by rank) and 20 (an index) */
        int ranks = seed % 3 == 0 ? 1 : seed % 3 == 1 ? 4 : 20;
        build(seed * 0x9E3779B97F4A7C15ull, ranks, 400 + (int)seed * 37, &w);
        int64_t lo = w.st[0].ts_ns, hi = w.st[w.ns - 1].ts_ns;
        check_window(&w, 0, 0); /* the whole job */
        check_window(&w, lo + (hi - lo) / 5, hi - (hi - lo) / 4);
        check_window(&w, lo + (hi - lo) / 2 + 1234567, hi);
        check_window(&w, lo, lo + (hi - lo) / 3);
        /* the shared steps and the requests' values are there to compare */
        gp_job_input in;
        memset(&in, 0, sizeof in);
        in.job_id = "me";
        in.steps = w.st;
        in.n_steps = w.ns;
        in.marks = w.mk;
        in.n_marks = w.nm;
        in.procs = w.pr;
        in.n_procs = w.npr;
        gp_features f;
        char err[256];
        assert_int_equal(gp_features_compute(&in, &f, err, sizeof err), 0);
        assert_true(f.thr_shared > 0 && f.thr_alone > 0 && f.ideal_step_s > 0);
        assert_true(f.step_drift > 1 && f.tpot_p90_s > 0 && f.ttft_p50_s > 0);
        free_input(&w);
    }
}

/* More values than the selection copies out at once (features.c SEL_SMALL, 1,024: the
 * passes over the values' bits narrow the range first), and thousands of equal values
 * (the range narrows to one value): steps and requests. */
static void test_walks_many_values_and_ties(void **state) {
    (void)state;
    for (int quantized = 0; quantized <= 1; quantized++) {
        walk_input w;
        build_q(4242 + (uint64_t)quantized, 2, 6000, quantized, &w);
        int64_t lo = w.st[0].ts_ns, hi = w.st[w.ns - 1].ts_ns;
        check_window(&w, 0, 0);
        check_window(&w, lo + (hi - lo) / 7, hi - (hi - lo) / 9);
        free_input(&w);
    }
}

/* A median at the end of a run of equal values longer than the selection copies out: the
 * range narrows to that value, and the next rank is the smallest value above it. */
static void test_walks_median_between_runs(void **state) {
    (void)state;
    walk_input w;
    memset(&w, 0, sizeof w);
    w.ns = 10000;
    w.st = calloc(w.ns, sizeof *w.st);
    assert_non_null(w.st);
    for (size_t k = 0; k < w.ns; k++) {
        /* the second half distinct and falling: the first value met above the first run
         * is not the smallest */
        int64_t d = k < w.ns / 2 ? 200000000 : 210000000 + (int64_t)(w.ns - k) * 1000;
        w.st[k].ts_ns = 1000 * NS + (int64_t)k * 300000000;
        w.st[k].step_start_ns = w.st[k].ts_ns - d;
        w.st[k].step = (int64_t)k;
        w.st[k].units = -1;
    }
    check_window(&w, 0, 0);
    free(w.st);
}

/* Steps held among the events (a hand-built input) and as compact records give the same
 * walk: the features index one array of both. */
static void test_walks_steps_in_events(void **state) {
    (void)state;
    walk_input w;
    build(77, 3, 300, &w);
    size_t half = w.ns / 2;
    gp_event *ev = calloc(half, sizeof *ev);
    assert_non_null(ev);
    for (size_t i = 0; i < half; i++) {
        ev[i].kind = GP_EV_STEP;
        ev[i].ts_ns = w.st[i].ts_ns;
        ev[i].step_start_ns = w.st[i].step_start_ns;
        ev[i].rank = w.st[i].rank;
        ev[i].step = w.st[i].step;
        ev[i].units = w.st[i].units;
    }
    gp_job_input in;
    memset(&in, 0, sizeof in);
    in.job_id = "me";
    in.events = ev;
    in.n_events = half;
    in.steps = w.st + half;
    in.n_steps = w.ns - half;
    in.procs = w.pr;
    in.n_procs = w.npr;
    gp_features f;
    char err[256];
    assert_int_equal(gp_features_compute(&in, &f, err, sizeof err), 0);
    walk_input steps_only = w;
    steps_only.nm = 0;
    ref_features r;
    reference(&steps_only, "me", f.t0_ns, f.t1_ns, &r);
    assert_same(f.ideal_step_s, r.ideal);
    assert_same(f.step_drift, r.drift);
    assert_same(f.mean_step_s, r.mean);
    assert_same(f.thr_alone, r.thr_alone);
    assert_same(f.thr_shared, r.thr_shared);
    free(ev);
    free_input(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walks_equal_whole_arrays),
        cmocka_unit_test(test_walks_many_values_and_ties),
        cmocka_unit_test(test_walks_median_between_runs),
        cmocka_unit_test(test_walks_steps_in_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
