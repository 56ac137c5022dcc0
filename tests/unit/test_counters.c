/* test_counters.c: counter deltas across resets and wraps (engine/accounting/counters.c), values
 * worked out by hand. */
#include "testutil.h"

#include "engine/accounting/counters.h"

/* A counter that only grows: the delta is last - first. */
static void test_monotonic(void **st) {
    (void)st;
    uint64_t v[] = {1000, 1500, 1500, 4000};
    int resets = -1;
    assert_int_equal(gp_counter_delta(v, 4, 0, &resets), 3000);
    assert_int_equal(resets, 0);
    /* fewer than two readings: no interval, no increment */
    assert_int_equal(gp_counter_delta(v, 1, 0, &resets), 0);
    assert_int_equal(gp_counter_delta(NULL, 0, 0, NULL), 0);
}

/* 1000 -> 1500 (+500), reset, 200 (+200 counted from 0), 700 (+500): 1200, never the
 * negative first/last difference (700 - 1000). */
static void test_reset_counts_from_zero(void **st) {
    (void)st;
    uint64_t v[] = {1000, 1500, 200, 700};
    int resets = 0;
    assert_int_equal(gp_counter_delta(v, 4, 0, &resets), 1200);
    assert_int_equal(resets, 1);
    /* two resets in a row, one to exactly 0 */
    uint64_t w[] = {50, 80, 0, 10, 5};
    assert_int_equal(gp_counter_delta(w, 5, 0, &resets), 30 + 0 + 10 + 5);
    assert_int_equal(resets, 2);
    /* a decrease by 1 is a reset too, never a huge unsigned difference */
    uint64_t x[] = {UINT64_MAX, UINT64_MAX - 1};
    assert_int_equal(gp_counter_delta(x, 2, 0, &resets), UINT64_MAX - 1);
    assert_int_equal(resets, 1);
}

/* A 32-bit counter wrapping: 2^32 - 100 -> 50 is +150. A previous reading beyond the
 * width cannot be a wrap: reset semantics. */
static void test_wrap(void **st) {
    (void)st;
    const uint64_t W = 1ULL << 32;
    uint64_t v[] = {W - 300, W - 100, 50, 250};
    int resets = 0;
    assert_int_equal(gp_counter_delta(v, 4, W, &resets), 200 + 150 + 200);
    assert_int_equal(resets, 1);
    uint64_t y[] = {W + 5, 7};
    assert_int_equal(gp_counter_delta(y, 2, W, &resets), 7);
}

/* Folding one reading at a time equals the batch, at every cut. */
static void test_fold_equals_batch(void **st) {
    (void)st;
    uint64_t v[] = {10, 40, 5, 5, 90, 0, 3, 3000, 2999, 3100};
    size_t n = sizeof v / sizeof v[0];
    for (size_t cut = 0; cut <= n; cut++) {
        gp_counter_acc a = {0};
        for (size_t i = 0; i < cut; i++)
            gp_counter_fold(&a, v[i], 0);
        int r = 0;
        assert_int_equal(a.total, gp_counter_delta(v, cut, 0, &r));
        assert_int_equal(a.resets, r);
    }
    gp_counter_acc a = {0};
    for (size_t i = 0; i < n; i++)
        gp_counter_fold(&a, v[i], 0);
    assert_int_equal(a.total, 30 + 5 + 0 + 85 + 0 + 3 + 2997 + 2999 + 101);
    assert_int_equal(a.resets, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic),
        cmocka_unit_test(test_reset_counts_from_zero),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_fold_equals_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
