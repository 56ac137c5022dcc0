/* test_store_span_memo.c: gp_store_time_span is remembered per connection (store.h
 * gp_store_span_memo_*) and read again as soon as a row changes: through the same
 * connection (inside or outside a transaction) or committed by another connection. */
#include "testutil.h"

#include "engine/accounting/job_summary.h"
#include "store/store.h"

#define S 1000000000LL

static void put(gp_store *s, const char *uuid, int64_t ts_ns) {
    gp_sample x = {0};
    snprintf(x.uuid, sizeof x.uuid, "%s", uuid);
    x.ts_ns = ts_ns;
    x.valid = GP_F_GPU_UTIL;
    x.gpu_util = 0.5;
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_store_put_sample(s, &x), 0);
    assert_int_equal(gp_store_commit(s), 0);
}

static void span_is(gp_store *s, int64_t t0, int64_t t1) {
    int64_t a, b;
    assert_int_equal(gp_store_time_span(s, &a, &b), 0);
    assert_int_equal(a, t0);
    assert_int_equal(b, t1);
}

static void test_memo(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[512], err[256];
    snprintf(path, sizeof path, "%s/s.db", dir);
    gp_store *s, *other;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    span_is(s, -1, -1); /* empty */
    put(s, "GPU-a", 100 * S);
    put(s, "GPU-a", 160 * S);
    span_is(s, 100 * S, 160 * S);
    span_is(s, 100 * S, 160 * S); /* answered from the memo: same */
    put(s, "GPU-b", 40 * S);      /* this connection */
    span_is(s, 40 * S, 160 * S);
    assert_int_equal(gp_store_open(path, 0, &other, err, sizeof err), 0);
    put(other, "GPU-c", 900 * S); /* another connection's commit */
    span_is(s, 40 * S, 900 * S);
    gp_store_close(other);
    /* inside an open transaction of this connection */
    gp_sample x = {0};
    snprintf(x.uuid, sizeof x.uuid, "GPU-a");
    x.ts_ns = 1000 * S;
    x.valid = GP_F_GPU_UTIL;
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_store_put_sample(s, &x), 0);
    span_is(s, 40 * S, 1000 * S);
    assert_int_equal(gp_store_commit(s), 0);
    span_is(s, 40 * S, 1000 * S);
    gp_store_close(s);
    gp_test_tmpdir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_memo)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
