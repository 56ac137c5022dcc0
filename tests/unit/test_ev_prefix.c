/* test_ev_prefix.c: running jobs' saved events (engine/diagnosis/ev_prefix.h).
 *
 * - The demo scenario run by the real agent for 38 minutes (training jobs, one sharing a
 *   GPU, one restarted, an inference server, a notebook); the accounting prefixes and then
 *   the saved events are written (the agent's sealing child's passes). For every job with
 *   saved events, the diagnosis's whole-history input (gp_job_input_load) resumed from
 *   them holds exactly the arrays of reading every row (GOODPUT_NO_PREFIX=1: the same
 *   bytes once encoded) and gives exactly (memcmp) the same features;
 * - saved in two steps, a job's events are two segments, resumed exactly as one;
 * - it was resumed: with the job's saved steps deleted from the store behind the triggers'
 *   back, the resumed input is unchanged while reading every row now differs;
 * - a late event of the job at or before the bound (triggers on) deletes the saved events;
 * - hostile bytes: truncated, a count changed, another job's id or bound: refused (the
 *   loader then reads every row); random flips: refused or freed cleanly; the saved bytes
 *   decode and encode to the same bytes;
 * - the steps' (rank, time) order taken by rank buckets from a time-ordered input
 *   (features.c, sort_steps) gives exactly the features of the merge sort that any other
 *   order takes (the same steps shuffled). */
#include "testutil.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "agent_run.h"
#include "engine/accounting/acct_prefix.h"
#include "engine/diagnosis/classify.h"
#include "engine/diagnosis/ev_prefix.h"

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

static int64_t count(gp_store *s, const char *sql) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static gp_store *open_with_passes(void) {
    gp_store *s;
    char err[512];
    assert_int_equal(gp_store_open(g_db, 0, &s, err, sizeof err), 0);
    int64_t t0, now;
    assert_int_equal(gp_store_time_span(s, &t0, &now), 0);
    gp_acct_prefix_pass(s, now, 0, err, sizeof err);
    int n = gp_ev_prefix_pass(s, now, 0, err, sizeof err);
    assert_true(n >= 0);
    assert_int_equal(gp_ev_prefix_pass(s, now, 0, err, sizeof err), 0); /* nothing newer */
    assert_int_equal(count(s, "SELECT count(*) FROM job_ev_prefix WHERE fp = 'claim'"), 0);
    return s;
}

/* The input's events as the saved bytes would hold them (canonical: equal lists, equal
 * bytes), into *buf. */
static void input_bytes(const gp_job_input *in, unsigned char **buf, size_t *len) {
    gp_ev_lists l = {(gp_event *)in->events,  in->n_events, in->n_events,
                     (gp_step_ev *)in->steps, in->n_steps,  in->n_steps,
                     (gp_mark_ev *)in->marks, in->n_marks,  in->n_marks};
    assert_int_equal(gp_ev_prefix_encode(in->job_id, INT64_MIN, 0, &l, buf, len), 0);
}

/* Loads job id's input and features, resumed (prefix 1) or from every row. */
static void load(gp_store *s, const char *id, int prefix, unsigned char **buf, size_t *len,
                 gp_features *f, size_t *n_steps) {
    char err[512];
    if (prefix)
        unsetenv("GOODPUT_NO_PREFIX");
    else
        setenv("GOODPUT_NO_PREFIX", "1", 1);
    gp_job_input in;
    assert_int_equal(gp_job_input_load(s, id, &in, err, sizeof err), 0);
    unsetenv("GOODPUT_NO_PREFIX");
    input_bytes(&in, buf, len);
    *n_steps = in.n_steps;
    memset(f, 0, sizeof *f);
    assert_int_equal(gp_features_compute(&in, f, err, sizeof err), 0);
    gp_job_input_free(&in);
}

/* Every job with saved events: the resumed input and features are exactly reading every
 * row's. Returns how many jobs; *max_segs: the most segments a job has. */
static int check_all(gp_store *s, int *max_segs) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT job_id, max(t_ns), count(*) FROM job_ev_prefix"
                                        " GROUP BY job_id",
                                        -1, &st, NULL),
                     SQLITE_OK);
    int checked = 0, with_steps = 0, with_marks = 0;
    *max_segs = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char id[GP_JOB_ID_MAX];
        snprintf(id, sizeof id, "%s", (const char *)sqlite3_column_text(st, 0));
        if (sqlite3_column_int(st, 2) > *max_segs) *max_segs = sqlite3_column_int(st, 2);
        gp_ev_lists l;
        int64_t t;
        assert_int_equal(gp_ev_prefix_load(s, id, &l, &t), 1);
        assert_int_equal(t, sqlite3_column_int64(st, 1));
        with_steps += l.nst > 0;
        with_marks += l.nmk > 0;
        gp_ev_lists_free(&l);
        unsigned char *a, *b;
        size_t la, lb, na, nb;
        gp_features fa, fb;
        load(s, id, 1, &a, &la, &fa, &na);
        load(s, id, 0, &b, &lb, &fb, &nb);
        assert_int_equal(na, nb);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        if (memcmp(&fa, &fb, sizeof fa) != 0)
            fail_msg("%s: resumed features differ (ideal step %.17g vs %.17g)", id, fa.ideal_step_s,
                     fb.ideal_step_s);
        free(a);
        free(b);
        checked++;
    }
    sqlite3_finalize(st);
    assert_true(with_steps >= 3);
    assert_true(with_marks >= 1);
    return checked;
}

static void test_resume_equals_whole(void **state) {
    (void)state;
    gp_store *s = open_with_passes();
    int64_t saved = count(s, "SELECT count(DISTINCT job_id) FROM job_ev_prefix");
    assert_true(saved >= 4);
    assert_int_equal(saved, count(s, "SELECT count(*) FROM job_prefix WHERE fp NOT IN"
                                     " ('claim', 'skip')"));
    int segs;
    assert_int_equal(check_all(s, &segs), saved);
    gp_store_close(s);
}

/* Saves in two steps (the accounting prefixes' bounds moved 10 minutes back, then restored):
 * two segments a job, resumed exactly as one. */
static void test_segments(void **state) {
    (void)state;
    gp_store *s = open_with_passes();
    sqlite3 *db = gp_store_db(s);
    char err[512];
    assert_int_equal(sqlite3_exec(db,
                                  "DELETE FROM job_ev_prefix;"
                                  " CREATE TEMP TABLE keep AS SELECT job_id, t_ns FROM job_prefix;"
                                  " UPDATE job_prefix SET t_ns = t_ns - 600000000000"
                                  " WHERE fp NOT IN ('claim', 'skip')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    int64_t t0, now;
    assert_int_equal(gp_store_time_span(s, &t0, &now), 0);
    assert_true(gp_ev_prefix_pass(s, now, 0, err, sizeof err) >= 4);
    assert_int_equal(sqlite3_exec(db,
                                  "UPDATE job_prefix SET t_ns = (SELECT t_ns FROM temp.keep k"
                                  " WHERE k.job_id = job_prefix.job_id)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_true(gp_ev_prefix_pass(s, now, 0, err, sizeof err) >= 4);
    assert_int_equal(gp_ev_prefix_pass(s, now, 0, err, sizeof err), 0);
    int segs;
    assert_true(check_all(s, &segs) >= 4);
    assert_int_equal(segs, 2);
    assert_int_equal(count(s, "SELECT count(*) FROM job_ev_prefix WHERE fp = 'claim'"), 0);
    gp_store_close(s);
}

static void test_resumed_and_invalidated(void **state) {
    (void)state;
    gp_store *s = open_with_passes();
    sqlite3 *db = gp_store_db(s);
    const char *id = "train-healthy";
    int64_t t = count(s, "SELECT max(t_ns) FROM job_ev_prefix WHERE job_id = 'train-healthy'");
    unsigned char *a, *b, *c;
    size_t la, lb, lc, na, nb, nc;
    gp_features fa, fb, fc;
    load(s, id, 1, &a, &la, &fa, &na);
    /* the job's first steps deleted behind the triggers' back: the resumed input does not
     * read them, reading every row now misses them */
    assert_int_equal(sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL), SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "DELETE FROM events WHERE job_id = '%s' AND kind = %d AND id IN (SELECT id FROM"
             " events WHERE job_id = '%s' AND kind = %d ORDER BY ts_ns LIMIT 50)",
             id, GP_EV_STEP, id, GP_EV_STEP);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, NULL), SQLITE_OK);
    load(s, id, 1, &b, &lb, &fb, &nb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    load(s, id, 0, &c, &lc, &fc, &nc);
    assert_int_equal(nc + 50, na);
    free(b);
    free(c);
    /* a late event of the job at the bound (another writer, triggers on) deletes them; the
     * loader then reads every row */
    snprintf(sql, sizeof sql,
             "INSERT INTO events(job_id, ts_ns, kind, rank, step, units, start_ns)"
             " VALUES('%s', %lld, %d, 0, 999999, 1, %lld)",
             id, (long long)t, GP_EV_STEP, (long long)(t - 1000000));
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(count(s, "SELECT count(*) FROM job_ev_prefix WHERE job_id = 'train-healthy'"),
                     0);
    load(s, id, 1, &b, &lb, &fb, &nb);
    load(s, id, 0, &c, &lc, &fc, &nc);
    assert_int_equal(nb, na - 50 + 1);
    assert_int_equal(lb, lc);
    assert_memory_equal(b, c, lb);
    assert_memory_equal(&fb, &fc, sizeof fb);
    free(a);
    free(b);
    free(c);
    gp_store_close(s);
}

static void test_hostile_bytes(void **state) {
    (void)state;
    gp_store *s = open_with_passes();
    const char *id = "infer-steady";
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT job_id, t_ns, state, t0_ns FROM job_ev_prefix"
                                        " ORDER BY length(state) LIMIT 1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    char jid[GP_JOB_ID_MAX];
    snprintf(jid, sizeof jid, "%s", (const char *)sqlite3_column_text(st, 0));
    int64_t t = sqlite3_column_int64(st, 1), t0 = sqlite3_column_int64(st, 3);
    size_t len = (size_t)sqlite3_column_bytes(st, 2);
    unsigned char *b = malloc(len);
    assert_non_null(b);
    memcpy(b, sqlite3_column_blob(st, 2), len);
    sqlite3_finalize(st);
    gp_ev_lists l = {0};
    assert_int_equal(gp_ev_prefix_decode(jid, t0, t, b, len, &l), 0);
    assert_true(l.nst + l.nmk + l.nev > 0);
    unsigned char *c;
    size_t len2;
    assert_int_equal(gp_ev_prefix_encode(jid, t0, t, &l, &c, &len2), 0);
    assert_int_equal(len, len2);
    assert_memory_equal(b, c, len);
    free(c);
    gp_ev_lists_free(&l);
    assert_int_equal(gp_ev_prefix_decode(strcmp(jid, id) ? id : "train-healthy", t0, t, b, len, &l),
                     -1);                                                  /* another job's */
    assert_int_equal(gp_ev_prefix_decode(jid, t0, t + 1, b, len, &l), -1); /* another bound */
    for (size_t cut = 0; cut < len; cut += 1 + cut / 3)                    /* truncated */
        assert_int_equal(gp_ev_prefix_decode(jid, t0, t, b, cut, &l), -1);
    /* each count of the head (8 bytes each after 8 of magic and id length) changed */
    for (size_t k = 0; k < 3; k++) {
        unsigned char *x = malloc(len);
        assert_non_null(x);
        memcpy(x, b, len);
        uint64_t v;
        memcpy(&v, x + 8 + 8 * k, sizeof v);
        uint64_t alt[] = {v + 1, v ? v - 1 : 7, UINT64_MAX / 3};
        for (size_t i = 0; i < 3; i++) {
            memcpy(x + 8 + 8 * k, &alt[i], sizeof alt[i]);
            assert_int_equal(gp_ev_prefix_decode(jid, t0, t, x, len, &l), -1);
            assert_null(l.st);
        }
        free(x);
    }
    /* random flips anywhere: refused, or lists that free cleanly (ASan: no read outside) */
    uint64_t r = 88172645463325252ull;
    for (int round = 0; round < 2000; round++) {
        unsigned char *x = malloc(len);
        assert_non_null(x);
        memcpy(x, b, len);
        for (int f = 0; f < 4; f++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            x[r % len] ^= (unsigned char)(1u << (r >> 60 & 7));
        }
        if (gp_ev_prefix_decode(jid, t0, t, x, len, &l) == 0) gp_ev_lists_free(&l);
        free(x);
    }
    free(b);
    gp_store_close(s);
}

static void test_step_order(void **state) {
    (void)state;
    enum { RANKS = 5, PER = 3000 };
    size_t n = RANKS * PER;
    gp_step_ev *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    uint64_t r = 0x9e3779b97f4a7c15ull;
    size_t k = 0;
    for (int i = 0; i < PER; i++) /* time order: rank by rank within one iteration */
        for (int w = 0; w < RANKS; w++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            int64_t ts = 1000000000000LL + (int64_t)i * 100000000LL + w * 1000 + (int64_t)(r % 997);
            a[k++] = (gp_step_ev){ts, i % 7 ? -1 : ts - 90000000LL, (w * 37) % RANKS - 1, i,
                                  i % 11 ? 16 : -1};
        }
    for (size_t i = 1; i < n; i++)
        assert_true(a[i].ts_ns >= a[i - 1].ts_ns);
    memcpy(b, a, n * sizeof *a);
    for (size_t i = n - 1; i > 0; i--) { /* shuffled: the merge sort's path */
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t j = r % (i + 1);
        gp_step_ev t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    gp_features fa, fb;
    char err[256];
    gp_job_input in;
    memset(&in, 0, sizeof in);
    in.job_id = "order";
    in.t0_ns = 1;
    in.t1_ns = 2000000000000LL;
    in.steps = a;
    in.n_steps = n;
    memset(&fa, 0, sizeof fa);
    assert_int_equal(gp_features_compute(&in, &fa, err, sizeof err), 0);
    in.steps = b;
    memset(&fb, 0, sizeof fb);
    assert_int_equal(gp_features_compute(&in, &fb, err, sizeof err), 0);
    assert_int_equal(fa.n_steps, (int64_t)n);
    assert_int_equal(fa.n_ranks, RANKS);
    assert_true(fa.ideal_step_s > 0 && fa.mean_step_s > 0 && fa.step_drift > 0);
    assert_memory_equal(&fa, &fb, sizeof fa);
    free(a);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_equals_whole),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_resumed_and_invalidated),
        cmocka_unit_test(test_hostile_bytes),
        cmocka_unit_test(test_step_order),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
