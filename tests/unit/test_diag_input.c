/* test_diag_input.c: the diagnosis input's compact samples (gp_dev_series, what
 * gp_job_input_load gives) carry everything the features read: on a store the agent wrote
 * from the demo scenario, every job's features from the compact input are the features
 * from the same rows held as gp_samples (gp_job_input_load_ex), bit for bit; and a
 * hand-built input without allocations gives the same features in either form (devices
 * and the window then come from the samples). The deferred input
 * (gp_job_input_load_deferred: series read after the event features, steps released, one
 * device at a time) gives the same features and straggler observations, and holds no
 * device's rows but the one a job's only device is read into whole: the others are folded
 * as their rows are read (series_fold, after a pass over their times). */
#include "testutil.h"

#include "agent/agent.h"
#include "engine/diagnosis/classify.h"
#include "engine/diagnosis/features.h"
#include "store/store.h"

#define NS 1000000000LL

GP_TEST_TMPDIR_GROUP(tmp)

static void features_of(const gp_job_input *in, gp_features *f) {
    char err[256];
    assert_int_equal(gp_features_compute(in, f, err, sizeof err), 0);
}

/* in's samples as series, one per UUID in first-seen order, each in the samples' order. */
static gp_dev_series *to_series(const gp_job_input *in, size_t *n) {
    gp_dev_series *d = calloc(in->n_samples ? in->n_samples : 1, sizeof *d);
    assert_non_null(d);
    *n = 0;
    for (size_t i = 0; i < in->n_samples; i++) {
        const gp_sample *x = &in->samples[i];
        size_t k = 0;
        while (k < *n && strcmp(d[k].uuid, x->uuid))
            k++;
        if (k == *n) {
            snprintf(d[k].uuid, sizeof d[k].uuid, "%s", x->uuid);
            d[k].v = malloc(in->n_samples * sizeof *d[k].v);
            assert_non_null(d[k].v);
            (*n)++;
        }
        gp_feat_sample_of(x, &d[k].v[d[k].n++]);
    }
    return d;
}

/* Steps or marks in (rank, time) order, ties in their given order (a stable sort), for an
 * input the features need not index (features.c in_order). */
typedef struct {
    int64_t rank, ts_ns;
    size_t i;
} rank_key;
static int cmp_rank_key(const void *a, const void *b) {
    const rank_key *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}
static rank_key *rank_order(size_t n) {
    rank_key *k = malloc((n ? n : 1) * sizeof *k);
    assert_non_null(k);
    return k;
}

/* in's features equal those of the same input with its steps and marks handed over
 * already in (rank, time) order. */
static void same_features_presorted(const gp_job_input *in, const gp_features *want,
                                    const char *job) {
    rank_key *ks = rank_order(in->n_steps), *km = rank_order(in->n_marks);
    for (size_t i = 0; i < in->n_steps; i++)
        ks[i] = (rank_key){in->steps[i].rank, in->steps[i].ts_ns, i};
    for (size_t i = 0; i < in->n_marks; i++)
        km[i] = (rank_key){in->marks[i].rank, in->marks[i].ts_ns, i};
    qsort(ks, in->n_steps, sizeof *ks, cmp_rank_key);
    qsort(km, in->n_marks, sizeof *km, cmp_rank_key);
    gp_step_ev *st = malloc((in->n_steps ? in->n_steps : 1) * sizeof *st);
    gp_mark_ev *mk = malloc((in->n_marks ? in->n_marks : 1) * sizeof *mk);
    assert_non_null(st);
    assert_non_null(mk);
    for (size_t i = 0; i < in->n_steps; i++)
        st[i] = in->steps[ks[i].i];
    for (size_t i = 0; i < in->n_marks; i++)
        mk[i] = in->marks[km[i].i];
    gp_job_input p = *in;
    p.steps = st;
    p.marks = mk;
    gp_features f;
    features_of(&p, &f);
    if (memcmp(&f, want, sizeof f) != 0)
        fail_msg("job %s: features of its steps and marks in (rank, time) order differ", job);
    free(st);
    free(mk);
    free(ks);
    free(km);
}

static void test_demo_compact_same_features(void **state) {
    (void)state;
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/demo.db", tmp);
    gp_agent_opts o = {.source_spec = "sim:examples/scenarios/demo.conf",
                       .db_path = path,
                       .speed = 0,
                       .duration_ns = 10 * 60 * NS};
    gp_agent *a;
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) fail_msg("%s", err);
    if (gp_agent_run(a, NULL, err, sizeof err) != 0) fail_msg("%s", err);
    gp_agent_close(a);

    /* train-allreduce's steps again as ranks 0 and 1 (rank 1 a little slower): the demo's
     * steps have no rank, and the straggler's observations need ranked ones */
    gp_store *st = NULL;
    assert_int_equal(gp_store_open(path, 0, &st, err, sizeof err), 0);
    gp_event *ev = NULL;
    size_t nev = 0;
    assert_int_equal(gp_store_job_events(st, "train-allreduce", GP_EV_STEP, &ev, &nev), 0);
    assert_true(nev > 100);
    gp_store_begin(st);
    for (size_t i = 0; i < nev; i++)
        for (int r = 0; r < 2; r++) {
            gp_event e = ev[i];
            e.rank = r;
            e.ts_ns += r * 20000000LL;
            assert_true(gp_store_put_event(st, &e) >= 0);
        }
    assert_int_equal(gp_store_commit(st), 0);
    free(ev);
    gp_store_close(st);

    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &st, err, sizeof err), 0);
    gp_job *jobs = NULL;
    size_t nj = 0;
    assert_int_equal(gp_store_list_jobs(st, &jobs, &nj), 0);
    assert_true(nj >= 6);
    size_t multi_gpu = 0, with_samples = 0, deferred_seen = 0, steps_seen = 0, scans_seen = 0;
    for (size_t j = 0; j < nj; j++) {
        gp_job_input c, w;
        assert_int_equal(gp_job_input_load(st, jobs[j].id, &c, err, sizeof err), 0);
        assert_int_equal(gp_job_input_load_ex(st, jobs[j].id, 0, &w, err, sizeof err), 0);
        /* the compact form holds no gp_samples; the same rows, device by device in time
         * order */
        assert_int_equal(c.n_samples, 0);
        size_t rows = 0;
        for (size_t d = 0; d < c.n_series; d++) {
            assert_true(c.series[d].n > 0);
            for (size_t i = 1; i < c.series[d].n; i++)
                assert_true(c.series[d].v[i].ts_ns > c.series[d].v[i - 1].ts_ns);
            size_t same_uuid = 0;
            for (size_t i = 0; i < w.n_samples; i++)
                same_uuid += !strcmp(w.samples[i].uuid, c.series[d].uuid);
            assert_int_equal(same_uuid, c.series[d].n);
            rows += c.series[d].n;
        }
        assert_int_equal(rows, w.n_samples);
        with_samples += rows > 0;
        multi_gpu += c.n_series > 1;
        gp_features fc, fw;
        features_of(&c, &fc);
        features_of(&w, &fw);
        if (memcmp(&fc, &fw, sizeof fc) != 0) fail_msg("job %s: features differ", jobs[j].id);
        assert_int_equal(fc.n_samples_seen, (int)w.n_samples);
        same_features_presorted(&c, &fc, jobs[j].id);

        /* the series read after the event features (what diagnosing from the store does):
         * the same features and straggler observations */
        gp_job_input df;
        assert_int_equal(gp_job_input_load_deferred(st, jobs[j].id, &df, err, sizeof err), 0);
        assert_int_equal(df.n_deferred, c.n_series); /* raw rows only: every series */
        for (size_t d = 0; d < df.n_series; d++)
            assert_int_equal(df.series[d].n, 0);
        gp_features fd;
        features_of(&df, &fd);
        if (memcmp(&fd, &fc, sizeof fd) != 0)
            fail_msg("job %s: features of the deferred input differ", jobs[j].id);
        assert_int_equal(df.n_deferred, 0);
        assert_int_equal(df.n_series, c.n_series);
        /* streamed: every device read once, one at a time, and released after its fold */
        gp_job_input_stream_stats ss;
        gp_job_input_stream_stats_of(&df, &ss);
        size_t most = 0;
        for (size_t d = 0; d < c.n_series; d++) {
            assert_string_equal(df.series[d].uuid, c.series[d].uuid);
            assert_int_equal(df.series[d].n, 0);
            assert_null(df.series[d].v);
            if (c.series[d].n > most) most = c.series[d].n;
        }
        /* the first activity read ahead, device by device, where the idle time needs it:
         * no steps, and a server's first request served promptly (features.c); a job's
         * only device is read whole first instead (a fill), every other device is folded
         * as its rows are read (series_fold) and never held */
        int ahead = !fc.has_steps && (!fc.has_requests || !fc.first_request_delayed);
        size_t filled = ahead && c.n_series == 1 ? 1 : 0;
        assert_int_equal(ss.rows_read, rows);
        assert_int_equal(ss.fills, filled);
        assert_int_equal(ss.folds, c.n_series - filled);
        assert_int_equal(ss.rows_held, 0);
        assert_int_equal(ss.rows_held_peak, filled ? most : 0); /* no device's rows held but
                                                                    a filled one's */
        assert_int_equal(ss.scans, ahead && c.n_series > 1 ? c.n_series : 0);
        /* ... which a window of train-allreduce before its first step needs (4 GPUs) */
        if (c.n_series > 1 && fc.has_steps && fc.ready_ns > fc.t0_ns + 2 * NS) {
            gp_job_input wc, wd;
            gp_features fwc, fwd;
            assert_int_equal(gp_job_input_load(st, jobs[j].id, &wc, err, sizeof err), 0);
            assert_int_equal(gp_job_input_load_deferred(st, jobs[j].id, &wd, err, sizeof err), 0);
            wc.t0_ns = wd.t0_ns = fc.t0_ns;
            wc.t1_ns = wd.t1_ns = fc.ready_ns - NS;
            features_of(&wc, &fwc);
            features_of(&wd, &fwd);
            assert_false(fwd.has_steps);
            if (memcmp(&fwc, &fwd, sizeof fwc) != 0)
                fail_msg("job %s: features before its first step differ, streamed", jobs[j].id);
            gp_job_input_stream_stats ws;
            gp_job_input_stream_stats_of(&wd, &ws);
            assert_int_equal(ws.scans, c.n_series);
            assert_int_equal(ws.folds, c.n_series);
            assert_int_equal(ws.rows_held_peak, 0);
            scans_seen++;
            gp_job_input_free(&wc);
            gp_job_input_free(&wd);
        }
        deferred_seen += c.n_series > 0;
        /* a window inside the job (the scheduling-gap check's): the same again */
        if (fc.t1_ns - fc.t0_ns > 4 * NS) {
            gp_job_input wc, wd;
            gp_features fwc, fwd;
            assert_int_equal(gp_job_input_load(st, jobs[j].id, &wc, err, sizeof err), 0);
            assert_int_equal(gp_job_input_load_deferred(st, jobs[j].id, &wd, err, sizeof err), 0);
            wc.t0_ns = wd.t0_ns = fc.t0_ns + (fc.t1_ns - fc.t0_ns) / 4;
            wc.t1_ns = wd.t1_ns = fc.t1_ns - (fc.t1_ns - fc.t0_ns) / 4;
            features_of(&wc, &fwc);
            features_of(&wd, &fwd);
            if (memcmp(&fwc, &fwd, sizeof fwc) != 0)
                fail_msg("job %s: features of a window of the deferred input differ", jobs[j].id);
            gp_job_input_free(&wc);
            gp_job_input_free(&wd);
        }
        gp_worker_obs *oc = NULL, *od = NULL;
        int noc = gp_step_obs_from_input(&c, &oc), nod = gp_job_input_obs(&df, &od);
        assert_int_equal(nod, noc);
        for (int k = 0; k < noc; k++) /* field by field: the records have padding */
            if (oc[k].worker != od[k].worker || oc[k].iter != od[k].iter ||
                memcmp(&oc[k].value, &od[k].value, sizeof oc[k].value) != 0 ||
                oc[k].ts_ns != od[k].ts_ns)
                fail_msg("job %s: straggler observation %d differs", jobs[j].id, k);
        steps_seen += noc > 0;
        free(oc);
        free(od);
        gp_job_input_free(&df);

        /* without allocations: devices and window from the samples, either form */
        gp_job_input hw = w, hc = w;
        hw.n_allocs = hc.n_allocs = 0;
        size_t ns = 0;
        gp_dev_series *ser = to_series(&w, &ns);
        hc.samples = NULL;
        hc.n_samples = 0;
        hc.series = ser;
        hc.n_series = ns;
        features_of(&hw, &fw);
        features_of(&hc, &fc);
        if (memcmp(&fc, &fw, sizeof fc) != 0)
            fail_msg("job %s without allocations: features differ", jobs[j].id);
        assert_int_equal(fc.n_gpus, (int)ns);
        for (size_t d = 0; d < ns; d++)
            free(ser[d].v);
        free(ser);
        gp_job_input_free(&c);
        gp_job_input_free(&w);
    }
    /* the store has what the comparison needs: jobs with samples, one on several GPUs */
    assert_true(with_samples >= 5);
    assert_true(multi_gpu >= 1);
    assert_true(deferred_seen >= 5);
    assert_true(steps_seen >= 1); /* train-allreduce: ranked steps */
    assert_true(scans_seen >= 1); /* train-allreduce before its first step */
    free(jobs);
    gp_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_compact_same_features),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
