/* test_sig_hist.c: medians at 4 significant digits (engine/diagnosis/sig_hist.h).
 *
 * - Rounding: half up to 4 significant digits, exact below 10,000 ns and for round
 *   values, within 0.05% everywhere.
 * - The median of a hist fed in pieces (counts merged at random points, a borrowed view
 *   adding a tail of its own) equals gp_quantile(v, n, 0.5) over the rounded values, and
 *   the k-th smallest equals the sorted rounded values' k-th, for every k: the live path
 *   (counts plus a tail) and the whole-history path (one tail) agree.
 * - Jittered values keep few counts: 100,000 sample intervals of 1 s jittered by 10 ms
 *   fill at most ~110 distinct values. */
#include "testutil.h"

#include <math.h>

#include "engine/diagnosis/features.h"
#include "engine/diagnosis/sig_hist.h"

static void test_round(void **state) {
    (void)state;
    assert_true(gp_sig_round_ns(0) == 0);
    assert_true(gp_sig_round_ns(-5) == -5);
    assert_true(gp_sig_round_ns(9999) == 9999);
    assert_true(gp_sig_round_ns(12344) == 12340);
    assert_true(gp_sig_round_ns(12345) == 12350);
    assert_true(gp_sig_round_ns(99995) == 100000);
    assert_true(gp_sig_round_ns(1000000000) == 1000000000);
    assert_true(gp_sig_round_ns(250000000) == 250000000);
    assert_true(gp_sig_round_ns(1004937123) == 1005000000);
    assert_true(gp_sig_round_ns(999949999) == 999900000);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t v = (int64_t)(x % 1000000000000ull) + 1, r = gp_sig_round_ns(v);
        assert_true(fabs((double)(r - v)) <= 0.0005 * (double)v + 0.5);
        assert_true(gp_sig_round_ns(r) == r);
    }
}

static void test_median_in_pieces(void **state) {
    (void)state;
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(round * 37 % 500);
        double *ref = malloc(n * sizeof *ref);
        int64_t *raw = malloc(n * sizeof *raw);
        assert_non_null(ref);
        assert_non_null(raw);
        gp_sig_hist h;
        memset(&h, 0, sizeof h);
        size_t split = n / 2 + (size_t)(round % 7);
        if (split > n) split = n;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* around 0.25 s, 1% jitter, and some repeats */
            raw[i] = round % 3 == 0 && i > 0 && x % 4 == 0 ? raw[i - 1]
                                                           : 247500000 + (int64_t)(x % 5000000);
            ref[i] = (double)gp_sig_round_ns(raw[i]) / 1e9;
        }
        for (size_t i = 0; i < split; i++) {
            assert_int_equal(gp_sig_hist_add(&h, raw[i]), 0);
            if (x % 5 == (uint64_t)i % 5) assert_int_equal(gp_sig_hist_merge(&h), 0);
        }
        assert_int_equal(gp_sig_hist_merge(&h), 0);
        gp_sig_hist c = gp_sig_hist_borrow(&h);
        for (size_t i = split; i < n; i++)
            assert_int_equal(gp_sig_hist_add(&c, raw[i]), 0);
        double want = gp_quantile(ref, n, 0.5); /* sorts ref */
        assert_true(gp_sig_hist_median_s(&c) == want);
        for (size_t k = 0; k < n; k++)
            assert_true((double)gp_sig_hist_kth(&c, k) / 1e9 == ref[k]);
        /* the whole-history way: one tail, no counts */
        gp_sig_hist w;
        memset(&w, 0, sizeof w);
        assert_int_equal(gp_sig_hist_reserve(&w, n), 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(gp_sig_hist_add(&w, raw[i]), 0);
        assert_true(w.tcap == n); /* reserved once, no doubling */
        assert_true(gp_sig_hist_median_s(&w) == want);
        gp_sig_hist_free(&w);
        gp_sig_hist_free(&c);
        gp_sig_hist_free(&h);
        free(ref);
        free(raw);
    }
}

static void test_jitter_keeps_few_counts(void **state) {
    (void)state;
    gp_sig_hist h;
    memset(&h, 0, sizeof h);
    uint64_t x = 12345;
    int64_t prev = 0, t = 0;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t ts = t + (int64_t)(x % 10000000); /* stamped up to 10 ms late */
        if (i) assert_int_equal(gp_sig_hist_add(&h, ts - prev), 0);
        prev = ts;
        t += 1000000000;
        if (i % 60 == 0) assert_int_equal(gp_sig_hist_merge(&h), 0);
    }
    assert_int_equal(gp_sig_hist_merge(&h), 0);
    assert_true(h.n == 99999);
    /* (-10 ms, 0) at 0.1 ms and [1 s, 1.01 s) at 1 ms */
    assert_true(h.nb <= 112);
    assert_true(gp_sig_hist_bytes(&h) <= 112 * sizeof(gp_sig_bin));
    gp_sig_hist_free(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round),
        cmocka_unit_test(test_median_in_pieces),
        cmocka_unit_test(test_jitter_keeps_few_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
