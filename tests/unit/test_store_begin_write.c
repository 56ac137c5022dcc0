/* test_store_begin_write.c: gp_store_begin_write (store.h) gives a writer a transaction that
 * holds the write lock, or -1 with no transaction open when another connection holds it
 * longer than the wait:
 *  - a deferred transaction that only read, passed by another connection's commit, would
 *    fail its first write at once (SQLITE_BUSY_SNAPSHOT); begin_write ends it and the write
 *    succeeds;
 *  - a transaction that already wrote is kept (its rows commit together);
 *  - another connection holding the lock: -1, nothing open, the store still usable once the
 *    lock is let go. */
#include "testutil.h"

#include "store/store.h"

static gp_event step_event(const char *job, int64_t step) {
    return gp_test_step_event(job, step, 1, 1000 + step);
}

static int64_t count_steps(sqlite3 *db) {
    return gp_test_sql_i64(db, "SELECT count(*) FROM events");
}

static void test_begin_write(void **state) {
    (void)state;
    char *dir = gp_test_tmpdir(), path[512], err[256];
    snprintf(path, sizeof path, "%s/s.db", dir);
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    sqlite3 *other;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    sqlite3_busy_timeout(other, 2000);

    /* A read first, then another connection commits: a plain write in this transaction
     * cannot succeed; begin_write starts afresh. */
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(count_steps(gp_store_db(s)), 0);
    assert_int_equal(sqlite3_exec(other,
                                  "INSERT INTO devices(uuid, idx, name) VALUES('GPU-x', 0, 'x')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    gp_event e = step_event("j", 1);
    assert_int_equal(gp_store_begin_write(s, 100), 0);
    assert_int_equal(gp_store_put_event(s, &e), 0);
    /* Written already: kept, so both rows commit together. */
    assert_int_equal(gp_store_begin_write(s, 100), 0);
    e = step_event("j", 2);
    assert_int_equal(gp_store_put_event(s, &e), 0);
    assert_int_equal(count_steps(other), 0); /* not committed yet */
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(count_steps(other), 2);

    /* Another connection holds the lock: -1 and no transaction open. */
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(gp_store_begin_write(s, 50), -1);
    assert_int_not_equal(sqlite3_get_autocommit(gp_store_db(s)), 0);
    assert_int_equal(gp_store_failed(s, NULL, 0), 0); /* busy is no storage failure */
    assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(gp_store_begin_write(s, 50), 0);
    e = step_event("j", 3);
    assert_int_equal(gp_store_put_event(s, &e), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(count_steps(other), 3);

    sqlite3_close(other);
    gp_store_close(s);
    gp_test_tmpdir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_begin_write)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
