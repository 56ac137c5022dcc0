/* test_ckpt_median.c: a frozen prefix keeps only the step durations around its median
 * (gp_goodput_ckpt.durs, goodput_ckpt.h), and the median over it and new durations is
 * still exact, or known to be unknown, never a wrong number.
 *
 * - 400,000 durations (jittered, with ties and outliers) folded in batches of 5,000 into
 *   a chain of prefixes (gp_ckpt_durs_extend): after every batch the median of the prefix
 *   and the next batch (gp_ckpt_median) equals the median of a sort of everything so far,
 *   to the bit, and the prefix keeps at most 2 * GP_CKPT_MEDIAN_HALF + 1 of them;
 * - a batch far from the median, larger than the kept half-width, moves the median out of
 *   the kept durations: gp_ckpt_median says GP_CKPT_MEDIAN_UNKNOWN (a computation then
 *   computes again without the prefix); a small one still gives the exact median;
 * - a prefix that dropped nothing is the old whole array (below = above = 0). */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/goodput_ckpt.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double exact_median(const double *v, size_t n) {
    double *s = malloc(n * sizeof *s);
    assert_non_null(s);
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_d);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

static uint64_t rng = 88172645463325252ull;
static double next_u(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* A step time near 81 ms with 1% jitter at 1 us resolution (ties), 1 in 500 a slow one. */
static double step_s(void) {
    double d = 0.081 * (1 + 0.01 * (next_u() - 0.5));
    if (next_u() < 0.002) d *= 20;
    return round(d * 1e6) / 1e6;
}

enum { TOTAL = 400000, BATCH = 5000 };

static void test_chain_exact(void **state) {
    (void)state;
    double *all = malloc(TOTAL * sizeof *all), *tmp = malloc(BATCH * sizeof *tmp);
    assert_non_null(all);
    assert_non_null(tmp);
    for (size_t i = 0; i < TOTAL; i++)
        all[i] = step_s();
    gp_goodput_ckpt ck;
    memset(&ck, 0, sizeof ck);
    int dropped = 0;
    for (size_t done = 0; done + BATCH <= TOTAL; done += BATCH) {
        memcpy(tmp, all + done, BATCH * sizeof *tmp);
        double m = gp_ckpt_median(done ? &ck : &(gp_goodput_ckpt){0}, tmp, BATCH);
        assert_true(m == exact_median(all, done + BATCH));
        memcpy(tmp, all + done, BATCH * sizeof *tmp);
        gp_goodput_ckpt nx;
        memset(&nx, 0, sizeof nx);
        assert_int_equal(gp_ckpt_durs_extend(done ? &ck : NULL, tmp, BATCH, &nx), 0);
        assert_true(nx.n_durs <= 2 * GP_CKPT_MEDIAN_HALF + 1);
        assert_int_equal(nx.durs_below + nx.n_durs + nx.durs_above, done + BATCH);
        for (size_t k = 1; k < nx.n_durs; k++)
            assert_true(nx.durs[k - 1] <= nx.durs[k]);
        if (done + BATCH <= 2 * GP_CKPT_MEDIAN_HALF) /* nothing dropped yet: all of them */
            assert_true(nx.durs_below == 0 && nx.durs_above == 0);
        dropped |= nx.durs_below > 0 && nx.durs_above > 0;
        gp_goodput_ckpt_free(&ck);
        ck = nx;
    }
    assert_true(dropped);
    /* A small skewed batch: still exact. */
    double small[100];
    for (size_t i = 0; i < 100; i++)
        small[i] = 10.0 + i;
    double *all2 = malloc((TOTAL + 100) * sizeof *all2);
    assert_non_null(all2);
    memcpy(all2, all, TOTAL * sizeof *all2);
    memcpy(all2 + TOTAL, small, sizeof small);
    assert_true(gp_ckpt_median(&ck, small, 100) == exact_median(all2, TOTAL + 100));
    /* A skewed batch wider than the kept half-width: unknown, not a wrong number. */
    size_t nbig = 3 * GP_CKPT_MEDIAN_HALF;
    double *big = malloc(nbig * sizeof *big);
    assert_non_null(big);
    for (size_t i = 0; i < nbig; i++)
        big[i] = 50.0 + (double)i;
    assert_true(gp_ckpt_median(&ck, big, nbig) == GP_CKPT_MEDIAN_UNKNOWN);
    free(big);
    free(all2);
    gp_goodput_ckpt_free(&ck);
    free(all);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
