/* test_trace_stable_sort.c: GP_STABLE_SORT (src/traces/stable_sort.h) gives exactly the order
 * glibc's qsort gives with the matching comparator, ties included (the analyses' sums and
 * binary searches depend on which of two tied rows comes first), on inputs with many ties,
 * already sorted, reversed, and at every small size around the insertion-sort cut. */
#include "testutil.h"

#include <stdint.h>

#include "traces/stable_sort.h"

typedef struct {
    int32_t key; /* few distinct values: many ties */
    int32_t pos; /* the input position, to tell tied rows apart */
} row;

static int cmp_row(const void *a, const void *b) {
    const row *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}
#define ROW_LESS(a_, b_) (cmp_row(a_, b_) < 0)
GP_STABLE_SORT(sort_row, row, ROW_LESS)

static void check(row *v, size_t n) {
    row *ref = malloc((n + 1) * sizeof *ref);
    assert_non_null(ref);
    memcpy(ref, v, n * sizeof *v);
    qsort(ref, n, sizeof *ref, cmp_row);
    sort_row(v, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(v[i].key, ref[i].key);
        assert_int_equal(v[i].pos, ref[i].pos);
        if (i) assert_true(v[i - 1].key < v[i].key || v[i - 1].pos < v[i].pos); /* stable */
    }
    free(ref);
}

static void fill(row *v, size_t n, int kind, unsigned *seed) {
    for (size_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        int32_t r = (int32_t)((*seed >> 16) % 7);
        v[i].key = kind == 0 ? r : kind == 1 ? (int32_t)(i / 3) : (int32_t)(n - i) / 2;
        v[i].pos = (int32_t)i;
    }
}

static void test_matches_qsort(void **state) {
    (void)state;
    unsigned seed = 42;
    size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 1000, 4097, 50000};
    row *v = malloc(50000 * sizeof *v);
    assert_non_null(v);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (int kind = 0; kind < 3; kind++) { /* random ties, sorted, reversed */
            fill(v, sizes[s], kind, &seed);
            check(v, sizes[s]);
        }
    free(v);
}

int main(void) {
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_matches_qsort),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
