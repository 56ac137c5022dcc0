/* test_acct_prefix.c: running jobs' accounting prefixes (engine/accounting/acct_prefix.h).
 *
 * - The demo scenario run by the real agent for 38 minutes (training jobs, one that
 *   shares a GPU, one restarted at 35 min, an inference server, a notebook); the prefix
 *   writer (the agent's sealing child's pass) saves a prefix of every running job older
 *   than 10 minutes, and gp_job_summary_compute then gives, for each, exactly (memcmp)
 *   the summary of the whole computation (GOODPUT_NO_PREFIX=1), reading only the rows
 *   after the prefix (the loaded state's row counts);
 * - a prefix is not saved again within GP_ACCT_PREFIX_EVERY_NS and no claim is left
 *   (tests/integration/acct_prefix.sh runs the agent's child, the triggers and late rows);
 * - train-starved (every step holds a data_wait phase begun at the previous step's end:
 *   its cuts carry that phase, goodput.c "Checkpoints") gets a prefix like the others;
 * - a job that never freezes (train-starved with an "eval" phase begun in its third
 *   minute that never ends, so no cut is allowed after it) holds more than
 *   GP_ACCT_PREFIX_MAX_EVENTS events: the writer declines it
 *   (a 'skip' row, no state), and a state that large stored anyway (as a writer without
 *   the rule did) is not loaded, though it decodes: the summary is the whole computation's;
 * - hostile bytes: a saved state truncated, with a count of its head changed, or under
 *   another job's id, decodes to NULL (the reader then computes the whole history); bytes
 *   flipped at random decode to NULL or to a state that frees cleanly; the state as saved
 *   decodes and encodes to the same bytes. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "agent_run.h"
#include "engine/accounting/acct_prefix.h"

static char *g_dir;
static char g_db[600];

static int setup(void **state) {
    (void)state;
    g_dir = gp_test_tmpdir();
    char err[512];
    if (gp_test_demo_cut(g_dir, "38m", g_db, sizeof g_db, err, sizeof err) != 0) {
        fprintf(stderr, "agent: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    gp_test_tmpdir_remove(g_dir);
    return 0;
}

static int64_t store_end(gp_store *s) {
    int64_t t0, t1;
    assert_int_equal(gp_store_time_span(s, &t0, &t1), 0);
    return t1;
}

/* the integer a query on the store answers (testutil.h) */
static int64_t count(gp_store *s, const char *sql) {
    return gp_test_sql_i64(gp_store_db(s), sql);
}

static void test_resume_equals_whole(void **state) {
    (void)state;
    gp_store *s;
    char err[512];
    assert_int_equal(gp_store_open(g_db, 0, &s, err, sizeof err), 0);
    int64_t now = store_end(s);
    assert_int_equal(gp_acct_prefix_pending(s, now), 1);
    int saved = gp_acct_prefix_pass(s, now, 0, err, sizeof err);
    assert_true(saved >= 5);
    assert_int_equal(count(s, "SELECT count(*) FROM job_prefix WHERE job_id = 'train-starved'"
                              " AND fp != 'skip' AND length(state) > 0"),
                     1);
    assert_int_equal(gp_acct_prefix_pending(s, now), 0); /* not again within 10 minutes */
    assert_int_equal(gp_acct_prefix_pass(s, now, 0, err, sizeof err), 0);
    assert_int_equal(count(s, "SELECT count(*) FROM job_prefix WHERE fp = 'claim'"), 0);
    assert_int_equal(count(s, "SELECT count(*) FROM job_prefix WHERE fp != 'skip'"), saved);
    /* every job with a prefix: the resumed summary is the whole computation's, bit for bit */
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT job_id FROM job_prefix WHERE fp != 'skip'", -1, &st,
                                        NULL),
                     SQLITE_OK);
    int kinds = 0, checked = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char id[GP_JOB_ID_MAX];
        snprintf(id, sizeof id, "%s", (const char *)sqlite3_column_text(st, 0));
        gp_job_summary a, b;
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        unsetenv("GOODPUT_NO_PREFIX");
        assert_int_equal(gp_job_summary_compute(s, id, NULL, &a, err, sizeof err), 0);
        setenv("GOODPUT_NO_PREFIX", "1", 1);
        assert_null(gp_acct_prefix_load(s, id));
        assert_int_equal(gp_job_summary_compute(s, id, NULL, &b, err, sizeof err), 0);
        unsetenv("GOODPUT_NO_PREFIX");
        if (memcmp(&a, &b, sizeof a) != 0)
            fail_msg("%s: resumed goodput %.17g vs whole %.17g", id, a.gp.goodput, b.gp.goodput);
        kinds |= 1 << a.gp.kind;
        /* it was resumed: the state read only what came after it */
        gp_job_acct *p = gp_acct_prefix_load(s, id);
        assert_non_null(p);
        gp_job_summary c;
        assert_int_equal(gp_job_acct_update(p, s, &c, err, sizeof err), 0);
        gp_job_acct_stats ps = gp_job_acct_get_stats(p);
        assert_int_equal(ps.reloads, 0);
        assert_true(ps.sample_rows <= 8 * 200);
        assert_true(ps.event_rows == 0); /* every event was in the store when it was saved */
        gp_job_acct_free(p);
        checked++;
    }
    sqlite3_finalize(st);
    assert_int_equal(checked, saved);
    assert_true(kinds & (1 << GP_JK_TRAINING));
    assert_true(kinds & (1 << GP_JK_INFERENCE));
    gp_store_close(s);
}

static void test_hostile_bytes(void **state) {
    (void)state;
    gp_store *s;
    char err[512];
    assert_int_equal(gp_store_open(g_db, 0, &s, err, sizeof err), 0);
    int64_t now = store_end(s);
    gp_acct_prefix_pass(s, now, 0, err, sizeof err);
    gp_job_acct *a = gp_acct_prefix_load(s, "train-healthy");
    assert_non_null(a);
    unsigned char *b = NULL, *c = NULL;
    size_t len = 0, len2 = 0;
    assert_int_equal(gp_acct_prefix_encode(a, &b, &len), 0);
    gp_job_acct *d = gp_acct_prefix_decode("train-healthy", b, len);
    assert_non_null(d);
    assert_int_equal(gp_acct_prefix_encode(d, &c, &len2), 0);
    assert_int_equal(len, len2);
    assert_memory_equal(b, c, len);
    gp_job_acct_free(d);
    free(c);
    assert_null(gp_acct_prefix_decode("train-starved", b, len)); /* another job's */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 3)          /* truncated */
        assert_null(gp_acct_prefix_decode("train-healthy", b, cut));
    /* each count of the head (8 bytes each after 8 of magic) made larger or smaller */
    for (size_t k = 0; k < 8; k++) {
        unsigned char *t = malloc(len);
        assert_non_null(t);
        memcpy(t, b, len);
        uint64_t v;
        memcpy(&v, t + 8 + 8 * k, sizeof v);
        uint64_t alt[] = {v + 1, v ? v - 1 : 7, UINT64_MAX / 3};
        for (size_t i = 0; i < 3; i++) {
            memcpy(t + 8 + 8 * k, &alt[i], sizeof alt[i]);
            assert_null(gp_acct_prefix_decode("train-healthy", t, len));
        }
        free(t);
    }
    /* random bytes flipped anywhere: NULL or a state that frees cleanly (never a crash,
     * never a read outside the blob; run under ASan by `make asan`) */
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < 2000; round++) {
        unsigned char *t = malloc(len);
        assert_non_null(t);
        memcpy(t, b, len);
        for (int f = 0; f < 4; f++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            t[x % len] ^= (unsigned char)(1u << (x >> 60 & 7));
        }
        gp_job_acct *e = gp_acct_prefix_decode("train-healthy", t, len);
        gp_job_acct_free(e);
        free(t);
    }
    free(b);
    gp_job_acct_free(a);
    gp_store_close(s);
}

/* The blob head's event count (acct_prefix.c, blob_head: magic and pad, n_al, n_act,
 * n_ev). */
static uint64_t blob_events(const unsigned char *b, size_t len) {
    uint64_t v;
    assert_true(len >= 32);
    memcpy(&v, b + 24, sizeof v);
    return v;
}

static void test_never_freezing_not_saved(void **state) {
    (void)state;
    gp_store *s;
    char err[512];
    assert_int_equal(gp_store_open(g_db, 0, &s, err, sizeof err), 0);
    int64_t now = store_end(s);
    /* a phase that never ends, from train-starved's third minute (its prefix goes with it:
     * the store's trigger deletes a prefix an event reaches into) */
    gp_event e;
    gp_event_init(&e, GP_EV_PHASE);
    snprintf(e.job_id, sizeof e.job_id, "train-starved");
    snprintf(e.name, sizeof e.name, "eval");
    e.edge = GP_PH_BEGIN;
    e.ts_ns = count(s, "SELECT min(from_ns) FROM allocations WHERE job_id = 'train-starved'") +
              120000000000LL;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    assert_int_equal(count(s, "SELECT count(*) FROM job_prefix WHERE job_id = 'train-starved'"), 0);
    gp_acct_prefix_pass(s, now, 0, err, sizeof err);
    /* declined by the writer: a 'skip' row without a state, not served */
    assert_int_equal(count(s, "SELECT count(*) FROM job_prefix WHERE job_id = 'train-starved'"
                              " AND fp = 'skip' AND length(state) = 0"),
                     1);
    assert_null(gp_acct_prefix_load(s, "train-starved"));
    /* Looked at again (computed whole) only once the job has doubled its age at the
     * decline: a minute before, the row is left as it is; a minute after, it is renewed. */
    int64_t c0 = count(s, "SELECT computed_ns FROM job_prefix WHERE job_id = 'train-starved'");
    int64_t age =
        c0 - count(s, "SELECT min(from_ns) FROM allocations WHERE job_id = 'train-starved'");
    assert_true(age > GP_ACCT_PREFIX_EVERY_NS + 60000000000LL);
    gp_acct_prefix_pass(s, c0 + age - 60000000000LL, 0, err, sizeof err);
    assert_int_equal(count(s, "SELECT computed_ns FROM job_prefix WHERE job_id = 'train-starved'"),
                     c0);
    gp_acct_prefix_pass(s, c0 + age + 60000000000LL, 0, err, sizeof err);
    assert_int_equal(count(s, "SELECT computed_ns FROM job_prefix WHERE job_id = 'train-starved'"
                              " AND fp = 'skip'"),
                     c0 + age + 60000000000LL);
    /* its whole state, folded by a running accounting (which freezes what it can: nothing
     * here), holds more events than one slice */
    gp_job_acct *a = gp_job_acct_new("train-starved", NULL);
    assert_non_null(a);
    gp_job_summary x;
    assert_int_equal(gp_job_acct_update(a, s, &x, err, sizeof err), 0);
    unsigned char *b = NULL;
    size_t len = 0;
    assert_int_equal(gp_acct_prefix_encode(a, &b, &len), 0);
    gp_job_acct_free(a);
    assert_true(blob_events(b, len) > GP_ACCT_PREFIX_MAX_EVENTS);
    gp_job_acct *d = gp_acct_prefix_decode("train-starved", b, len);
    assert_non_null(d); /* a valid state: only its size keeps the reader off it */
    gp_job_acct_free(d);
    /* stored as a writer without the rule would: the reader does not load it */
    char fp[256];
    assert_int_equal(gp_acct_prefix_fp(fp, sizeof fp), 0);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "INSERT OR REPLACE INTO job_prefix(job_id, fp, t_ns,"
                                        " ev_t_ns, raw_t0_ns, computed_ns, state)"
                                        " VALUES('train-starved', ?1, ?2, -1, 0, ?2, ?3)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, fp, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now);
    sqlite3_bind_blob64(st, 3, b, len, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    free(b);
    assert_int_equal(count(s, "SELECT count(*) FROM job_prefix WHERE job_id = 'train-starved'"
                              " AND length(state) > 0"),
                     1);
    assert_null(gp_acct_prefix_load(s, "train-starved"));
    /* and the summary is the whole computation's */
    gp_job_summary p, w;
    memset(&p, 0, sizeof p);
    memset(&w, 0, sizeof w);
    assert_int_equal(gp_job_summary_compute(s, "train-starved", NULL, &p, err, sizeof err), 0);
    setenv("GOODPUT_NO_PREFIX", "1", 1);
    assert_int_equal(gp_job_summary_compute(s, "train-starved", NULL, &w, err, sizeof err), 0);
    unsetenv("GOODPUT_NO_PREFIX");
    assert_memory_equal(&p, &w, sizeof p);
    gp_store_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_equals_whole),
        cmocka_unit_test(test_never_freezing_not_saved),
        cmocka_unit_test(test_hostile_bytes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
