/* test_engine_straggler.c: straggler detection on the real Alibaba PAI mini-batch times
 * (../shared/data/cluster/v2020, see MINI-BATCH-NOTES.md there) and on synthetic data. */
#include "testutil.h"

#include "engine/diagnosis/straggler.h"

static int load(const char *name, gp_worker_obs **obs) {
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/cluster/v2020/%s", gp_test_data_dir(), name);
    if (access(path, R_OK) != 0) return -1;
    int n = gp_straggler_read_pai_csv(path, obs, err, sizeof err);
    if (n < 0) fail_msg("%s", err);
    return n;
}

static void print_eps(const char *job, const gp_straggler *s, int n) {
    for (int i = 0; i < n; i++)
        printf("  %s: worker %d iterations %lld..%lld ratio %.2f z %.1f windows %d\n", job,
               s[i].worker, (long long)s[i].iter0, (long long)s[i].iter1, s[i].ratio, s[i].z,
               s[i].windows);
}

/* job_1: the publisher names one straggler, worker 6, appearing partway through. In the
 * data its batch times jump to 1.5-2.3x its peers' from iteration 1811 to about 1941. */
static void test_job1_worker6(void **state) {
    (void)state;
    gp_worker_obs *obs;
    int n = load("job_1_norm.csv", &obs);
    if (n < 0) skip();
    gp_straggler *s;
    int ns = gp_straggler_detect(obs, (size_t)n, NULL, &s);
    print_eps("job_1", s, ns);
    assert_int_equal(ns, 1);
    assert_int_equal(s[0].worker, 6);
    /* partway through: the episode starts well after the first and ends well before the
     * last iteration (1..2988), around the 1811..1941 excursion seen in the raw rows */
    assert_true(s[0].iter0 >= 1700 && s[0].iter0 <= 1861);
    assert_true(s[0].iter1 >= 1881 && s[0].iter1 <= 2100);
    assert_true(s[0].ratio >= 1.25);
    free(s);
    free(obs);
}

/* job_2: steady, workers differ by a few percent persistently: no straggler. */
static void test_job2_none(void **state) {
    (void)state;
    gp_worker_obs *obs;
    int n = load("job_2_norm.csv", &obs);
    if (n < 0) skip();
    gp_straggler *s;
    int ns = gp_straggler_detect(obs, (size_t)n, NULL, &s);
    print_eps("job_2", s, ns);
    assert_int_equal(ns, 0);
    free(s);
    free(obs);
}

/* job_3 and job_4: "possibly several stragglers". We only require that the detector does
 * not call most of the job slow (a straggler is a minority by definition) and print what
 * it found. */
static void test_job3_job4_minority(void **state) {
    (void)state;
    const char *names[] = {"job_3_norm.csv", "job_4_norm.csv"};
    for (int j = 0; j < 2; j++) {
        gp_worker_obs *obs;
        int n = load(names[j], &obs);
        if (n < 0) skip();
        gp_straggler *s;
        int ns = gp_straggler_detect(obs, (size_t)n, NULL, &s);
        assert_true(ns >= 0);
        print_eps(names[j], s, ns);
        int seen[16] = {0}, distinct = 0;
        for (int i = 0; i < ns; i++)
            if (s[i].worker < 16 && !seen[s[i].worker]++) distinct++;
        assert_true(distinct < 5);
        free(s);
        free(obs);
    }
}

/* Synthetic: 8 workers at 100 +- 3 ms; worker 3 at 160 ms for iterations 400..599. */
static void test_synthetic(void **state) {
    (void)state;
    size_t n = 8 * 1000;
    gp_worker_obs *obs = malloc(n * sizeof *obs);
    unsigned seed = 7;
    size_t k = 0;
    for (int it = 0; it < 1000; it++)
        for (int w = 0; w < 8; w++) {
            double v = 100 + (rand_r(&seed) % 600) / 100.0 - 3;
            if (w == 3 && it >= 400 && it < 600) v *= 1.6;
            obs[k++] = (gp_worker_obs){w, it, v, 0};
        }
    gp_straggler *s;
    int ns = gp_straggler_detect(obs, n, NULL, &s);
    assert_int_equal(ns, 1);
    assert_int_equal(s[0].worker, 3);
    assert_true(s[0].iter0 >= 395 && s[0].iter0 <= 405);
    assert_true(s[0].iter1 >= 594 && s[0].iter1 <= 605);
    assert_near(s[0].ratio, 1.6, 0.1);
    free(s);
    /* no straggler at all */
    for (size_t i = 0; i < n; i++)
        if (obs[i].worker == 3 && obs[i].iter >= 400 && obs[i].iter < 600) obs[i].value /= 1.6;
    ns = gp_straggler_detect(obs, n, NULL, &s);
    assert_int_equal(ns, 0);
    free(s);
    free(obs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job1_worker6),
        cmocka_unit_test(test_job2_none),
        cmocka_unit_test(test_job3_job4_minority),
        cmocka_unit_test(test_synthetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
