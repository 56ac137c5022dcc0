/* test_diag_input.c: the diagnosis input's compact samples (gp_dev_series, what
 * gp_job_input_load gives) carry everything the features read: on a store the agent wrote
 * from the demo scenario, every job's features from the compact input are the features
 * from the same rows held as gp_samples (gp_job_input_load_ex), bit for bit; and a
 * hand-built input without allocations gives the same features in either form (devices
 * and the window then come from the samples). */
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

    gp_store *st = NULL;
    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &st, err, sizeof err), 0);
    gp_job *jobs = NULL;
    size_t nj = 0;
    assert_int_equal(gp_store_list_jobs(st, &jobs, &nj), 0);
    assert_true(nj >= 6);
    size_t multi_gpu = 0, with_samples = 0;
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
    free(jobs);
    gp_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_compact_same_features),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
