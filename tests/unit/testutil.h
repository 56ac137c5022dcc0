/* testutil.h: includes every cmocka test needs, plus small helpers shared by tests. */
#ifndef GP_TESTUTIL_H
#define GP_TESTUTIL_H
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/event.h"

/* Path of shared/data (the real data sets), overridable by GOODPUT_DATA. */
static inline const char *gp_test_data_dir(void) {
    const char *d = getenv("GOODPUT_DATA");
    return d ? d : "../shared/data";
}

#define assert_near(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (a), b_ = (b), t_ = (tol);                                                     \
        if (!(fabs(a_ - b_) <= t_)) fail_msg("%s = %.9g, expected %.9g +- %.3g", #a, a_, b_, t_);  \
    } while (0)

/* A fresh temp dir for a test, in $TMPDIR (scripts/run-tests gives each test its own and
 * removes it after), else /tmp; caller frees. */
static inline char *gp_test_tmpdir(void) {
    const char *root = getenv("TMPDIR");
    char *t = malloc(4096);
    if (!t) abort();
    snprintf(t, 4096, "%s/gp-test-XXXXXX", root && *root ? root : "/tmp");
    if (!mkdtemp(t)) abort();
    return t;
}

/* Removes a dir made by gp_test_tmpdir and frees its name (a cmocka teardown's body). */
static inline void gp_test_tmpdir_remove(char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    free(dir);
}
/* A group's temp dir: defines `static char *NAME` and the cmocka group setup/teardown that
 * make it before the group's tests and remove it after them. */
#define GP_TEST_TMPDIR_GROUP(NAME)                                                                 \
    static char *NAME;                                                                             \
    static int setup(void **state) {                                                               \
        (void)state;                                                                               \
        NAME = gp_test_tmpdir();                                                                   \
        return 0;                                                                                  \
    }                                                                                              \
    static int teardown(void **state) {                                                            \
        (void)state;                                                                               \
        gp_test_tmpdir_remove(NAME);                                                               \
        return 0;                                                                                  \
    }
/* The one integer a query on db answers (a count, a max); fails the test otherwise. */
static inline int64_t gp_test_sql_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}
/* A step event of job: step k, units, ending at ts_ns. */
static inline gp_event gp_test_step_event(const char *job, int64_t k, double units, int64_t ts_ns) {
    gp_event e;
    gp_event_init(&e, GP_EV_STEP);
    snprintf(e.job_id, sizeof e.job_id, "%s", job);
    e.step = k;
    e.units = units;
    e.ts_ns = ts_ns;
    return e;
}
#endif
