/* test_store_flood_cache.c: the agent's page cache (store.h gp_store_tune_for_devices) is
 * GP_STORE_STEADY_CACHE_KIB in steady state, rises to GP_STORE_FLOOD_CACHE_KIB within the
 * transaction that puts GP_STORE_FLOOD_EVENTS events, stays there while floods go on, and
 * comes back after GP_STORE_QUIET_COMMITS quiet commits; a large node keeps its per-device
 * size throughout. */
#include "testutil.h"

#include "store/store.h"

static int cache_kib(gp_store *s) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), "PRAGMA cache_size", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v < 0 ? -v : v * 4; /* pages of 4 KiB */
}

/* n step events of job `job` in one transaction; the cache size seen just before the commit */
static int put_steps(gp_store *s, const char *job, unsigned n, int64_t *step) {
    assert_int_equal(gp_store_begin(s), 0);
    for (unsigned i = 0; i < n; i++) {
        gp_event e;
        gp_event_init(&e, GP_EV_STEP);
        snprintf(e.job_id, sizeof e.job_id, "%s", job);
        e.step = ++*step;
        e.units = 1;
        e.ts_ns = 1000 + *step;
        assert_int_equal(gp_store_put_event(s, &e), 0);
    }
    int kib = cache_kib(s);
    assert_int_equal(gp_store_commit(s), 0);
    return kib;
}

static void test_flood_cache(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[512], err[256];
    snprintf(path, sizeof path, "%s/s.db", dir);
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_store_tune_for_devices(s, 8);
    assert_int_equal(cache_kib(s), GP_STORE_STEADY_CACHE_KIB);
    int64_t step = 0;
    assert_int_equal(put_steps(s, "j", GP_STORE_FLOOD_EVENTS - 1, &step),
                     GP_STORE_STEADY_CACHE_KIB);
    assert_int_equal(cache_kib(s), GP_STORE_STEADY_CACHE_KIB);
    /* a flood: raised inside its transaction, before it commits */
    assert_int_equal(put_steps(s, "j", GP_STORE_FLOOD_EVENTS, &step), GP_STORE_FLOOD_CACHE_KIB);
    for (unsigned i = 0; i + 1 < GP_STORE_QUIET_COMMITS; i++) {
        assert_int_equal(put_steps(s, "j", 10, &step), GP_STORE_FLOOD_CACHE_KIB);
        assert_int_equal(cache_kib(s), GP_STORE_FLOOD_CACHE_KIB);
    }
    /* another flood before the quiet ones add up starts the count again */
    assert_int_equal(put_steps(s, "j", GP_STORE_FLOOD_EVENTS + 3, &step), GP_STORE_FLOOD_CACHE_KIB);
    for (unsigned i = 0; i + 1 < GP_STORE_QUIET_COMMITS; i++)
        put_steps(s, "j", 0, &step);
    assert_int_equal(cache_kib(s), GP_STORE_FLOOD_CACHE_KIB);
    put_steps(s, "j", 0, &step); /* the last quiet commit */
    assert_int_equal(cache_kib(s), GP_STORE_STEADY_CACHE_KIB);
    /* a node large enough to need more than the flood size keeps it */
    size_t big = GP_STORE_FLOOD_CACHE_KIB / 12 + 100;
    gp_store_tune_for_devices(s, big);
    assert_int_equal(cache_kib(s), (int)big * 12);
    assert_int_equal(put_steps(s, "k", GP_STORE_FLOOD_EVENTS, &step), (int)big * 12);
    for (unsigned i = 0; i < GP_STORE_QUIET_COMMITS; i++)
        put_steps(s, "k", 0, &step);
    assert_int_equal(cache_kib(s), (int)big * 12);
    gp_store_close(s);
    gp_test_tmpdir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_flood_cache)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
