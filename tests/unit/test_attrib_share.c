/* test_attrib_share.c: splitting a shared GPU among owners, and the not_ready finding.
 * Expected numbers are worked out by hand in the comments from the inputs. */
#include "testutil.h"

#include "attribution/share.h"

static gp_proc_sample row(int64_t ts, int64_t pid, const char *job, double sm, uint64_t mem,
                          uint32_t valid) {
    gp_proc_sample p;
    memset(&p, 0, sizeof p);
    snprintf(p.uuid, sizeof p.uuid, "GPU-shared");
    p.ts_ns = ts;
    p.pid = pid;
    snprintf(p.job_id, sizeof p.job_id, "%s", job);
    p.sm_share = sm;
    p.mem_bytes = mem;
    p.valid = valid;
    return p;
}

static const gp_owner_share *get(const gp_owner_share *o, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(o[i].job_id, id)) return &o[i];
    fail_msg("owner %s missing", id);
    return NULL;
}

static void by_sm_share(void **st) {
    (void)st;
    /* Job A has two processes at 0.30 and 0.10, job B one at 0.20: A = 0.4/0.6 = 2/3. */
    gp_proc_sample r[3] = {row(1, 10, "A", 0.30, 0, GP_P_SM_SHARE),
                           row(1, 11, "A", 0.10, 0, GP_P_SM_SHARE),
                           row(1, 20, "B", 0.20, 0, GP_P_SM_SHARE)};
    gp_owner_share o[4];
    gp_split_basis b;
    size_t n = gp_attrib_split(r, 3, o, 4, &b);
    assert_int_equal(n, 2);
    assert_int_equal(b, GP_SPLIT_SM);
    assert_near(get(o, n, "A")->fraction, 2.0 / 3.0, 1e-12);
    assert_near(get(o, n, "B")->fraction, 1.0 / 3.0, 1e-12);
    assert_int_equal(get(o, n, "A")->n_procs, 2);
    assert_string_equal(gp_split_basis_name(b), "sm_share");
}

static void by_memory_then_equal(void **st) {
    (void)st;
    /* No SM shares: 3 GiB vs 1 GiB -> 0.75 / 0.25; an unknown owner is "unknown". */
    gp_proc_sample r[2] = {row(1, 1, "A", 0, 3ull << 30, GP_P_MEM),
                           row(1, 2, "", 0, 1ull << 30, GP_P_MEM)};
    gp_owner_share o[4];
    gp_split_basis b;
    size_t n = gp_attrib_split(r, 2, o, 4, &b);
    assert_int_equal(b, GP_SPLIT_MEM);
    assert_near(get(o, n, "A")->fraction, 0.75, 1e-12);
    assert_near(get(o, n, "unknown")->fraction, 0.25, 1e-12);
    /* Nothing known: equal split between owners (not processes): A, A, B -> 1/2 each. */
    gp_proc_sample e[3] = {row(1, 1, "A", 0, 0, 0), row(1, 2, "A", 0, 0, 0),
                           row(1, 3, "B", 0, 0, 0)};
    n = gp_attrib_split(e, 3, o, 4, &b);
    assert_int_equal(b, GP_SPLIT_EQUAL);
    assert_near(get(o, n, "A")->fraction, 0.5, 1e-12);
    assert_near(get(o, n, "B")->fraction, 0.5, 1e-12);
    assert_int_equal(gp_attrib_split(e, 0, o, 4, &b), 0);
    assert_int_equal(b, GP_SPLIT_NONE);
}

static void fractions_sum_to_one(void **st) {
    (void)st;
    /* Whatever the shares (here pseudo-random), owners' fractions add up to 1. */
    unsigned seed = 7;
    for (int trial = 0; trial < 200; trial++) {
        gp_proc_sample r[8];
        int n = 1 + (int)(rand_r(&seed) % 8);
        for (int i = 0; i < n; i++) {
            char job[8];
            snprintf(job, sizeof job, "J%u", rand_r(&seed) % 3);
            r[i] = row(1, i, job, (rand_r(&seed) % 100) / 100.0, rand_r(&seed) % 1000,
                       (rand_r(&seed) % 2 ? GP_P_SM_SHARE : 0) | GP_P_MEM);
        }
        gp_owner_share o[8];
        size_t k = gp_attrib_split(r, (size_t)n, o, 8, NULL);
        double sum = 0;
        for (size_t i = 0; i < k; i++)
            sum += o[i].fraction;
        assert_near(sum, 1.0, 1e-9);
    }
}

static void series_gpu_seconds(void **st) {
    (void)st;
    /* t=10 s: A alone (covers the first 10 s interval); t=20 s: A 0.6, B 0.2 (10 s:
     * A 7.5, B 2.5); t=25 s: B alone (5 s). A = 10 + 7.5 = 17.5, B = 2.5 + 5 = 7.5, and
     * A + B = 25 s, the time covered. */
    const int64_t S = 1000000000LL;
    gp_proc_sample r[4] = {
        row(10 * S, 1, "A", 0.9, 0, GP_P_SM_SHARE), row(20 * S, 1, "A", 0.6, 0, GP_P_SM_SHARE),
        row(20 * S, 2, "B", 0.2, 0, GP_P_SM_SHARE), row(25 * S, 2, "B", 0.5, 0, GP_P_SM_SHARE)};
    gp_owner_share o[4];
    memset(o, 0, sizeof o);
    size_t n = gp_attrib_split_series(r, 4, 10 * S, o, 4);
    assert_int_equal(n, 2);
    assert_near(get(o, n, "A")->gpu_s, 17.5, 1e-9);
    assert_near(get(o, n, "B")->gpu_s, 7.5, 1e-9);
}

static void not_ready(void **st) {
    (void)st;
    const int64_t S = 1000000000LL;
    gp_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.id, sizeof j.id, "4812");
    j.submitted_ns = 0;
    j.allocated_ns = 100 * S;
    j.ready_ns = -1;
    j.ended_ns = 3700 * S;
    /* Two GPUs from 100 s to 3700 s = 2 x 3600 s = 2 GPU-hours. */
    gp_alloc a[2];
    memset(a, 0, sizeof a);
    for (int i = 0; i < 2; i++) {
        snprintf(a[i].job_id, sizeof a[i].job_id, "4812");
        snprintf(a[i].uuid, sizeof a[i].uuid, "GPU-%d", i);
        a[i].from_ns = 100 * S;
        a[i].to_ns = i == 0 ? 3700 * S : -1; /* still open: runs to the job's end */
    }
    gp_finding f;
    assert_int_equal(gp_attrib_not_ready_finding(&j, a, 2, 9999 * S, &f), 1);
    assert_int_equal(f.cls, GP_FC_NOT_READY);
    assert_near(f.wasted_gpu_s, 7200, 1e-6);
    assert_string_equal(f.scope_id, "4812");
    assert_non_null(strstr(f.summary, "2.00 GPU-hours"));
    j.ready_ns = 200 * S; /* became ready: not this finding */
    assert_int_equal(gp_attrib_not_ready_finding(&j, a, 2, 9999 * S, &f), 0);
    j.ready_ns = -1;
    assert_int_equal(gp_attrib_not_ready_finding(&j, a, 0, 9999 * S, &f), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(by_sm_share),
        cmocka_unit_test(by_memory_then_equal),
        cmocka_unit_test(fractions_sum_to_one),
        cmocka_unit_test(series_gpu_seconds),
        cmocka_unit_test(not_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
