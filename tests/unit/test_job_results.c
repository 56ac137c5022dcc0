/* test_job_results.c: ended jobs' stored results (engine/results/job_results.h), on a store
 * the agent wrote from tests/data/scenarios/results_restarts.conf (a trainer that crashes
 * twice, one of tiny kernels, one never ready, one that ends too late to be sealed):
 *  - the writer stores exactly the sealed jobs, and what a reader gets back is what
 *    computing gives: the report's JSON of every summary and every finding, byte for byte;
 *  - any later row of the job's input deletes its result (event, sample, job row, a
 *    neighbour's allocation), whoever writes it: another connection, raw SQL on the
 *    store's (its TEMP copies of the triggers), the store's own rows one at a time or in
 *    batches (the rule applied by store.c); retention deletes results whose raw samples
 *    it prunes;
 *  - other options (SLO, price, the engine's environment, a window) are never served;
 *  - a store without the table (older) gives no reader, and the report of an older store
 *    prints the same;
 *  - a writer without an open transaction (the agent's sealing child) stores the same rows
 *    byte for byte through its claims, leaves no claim, and the claims a killed one left
 *    are never served and are deleted by gp_job_results_unclaim; jobs handed to a writer
 *    as failed before are not tried;
 *  - event retention (gp_store_retain_events) deletes the events of ended jobs with a
 *    stored result only (never one without, or with a claim), marks them first, and then
 *    their stored result is served whatever engine stored it (not with other options or
 *    struct sizes), while computing them (whole, window, diagnosis input) is refused and
 *    the writer never stores them again. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_run.h"
#include "engine/results/job_results.h"
#include "report/findings_fmt.h"
#include "report/job_report.h"

#define S 1000000000LL
#define SCENARIO "tests/data/scenarios/results_restarts.conf"

int gp_report_run(const char *db, const char *job, int json, const gp_slo *slo, FILE *out,
                  int width); /* cmd_report.c */

static void exec_sql(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
}

/* sql run by another writer: a connection of its own (the store's own connection refuses
 * raw inserts into samples and proc_samples, store/own_rows.h). */
static void other_sql(const char *path, const char *sql) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    exec_sql(db, sql);
    sqlite3_close(db);
}

static char *g_dir;
static char g_base[512]; /* the agent's store, copied by each test */

static int setup(void **state) {
    (void)state;
    g_dir = gp_test_tmpdir();
    snprintf(g_base, sizeof g_base, "%s/base.db", g_dir);
    char err[256];
    if (gp_test_agent_run(SCENARIO, g_base, err, sizeof err) != 0) {
        fprintf(stderr, "agent: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) return -1;
    free(g_dir);
    return 0;
}

/* A fresh copy of the agent's store at dir/name, opened read-write as the agent opens it
 * (GP_STORE_OWN_ROWS: the sample and process rows' rule applied by the store, the other
 * triggers as TEMP copies; store/own_rows.h). */
static gp_store *copy_store(const char *name, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", g_dir, name);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", g_base, path);
    assert_int_equal(system(cmd), 0);
    gp_store *s;
    char err[256];
    assert_int_equal(gp_store_open(path, GP_STORE_OWN_ROWS, &s, err, sizeof err), 0);
    return s;
}

static int64_t store_end(gp_store *s) {
    int64_t t0, t1;
    assert_int_equal(gp_store_time_span(s, &t0, &t1), 0);
    return t1;
}

static int seal(gp_store *s) {
    gp_job_results_writer *w = gp_job_results_writer_new();
    char err[256];
    gp_store_begin(s);
    int n = gp_job_results_seal(w, s, store_end(s), 0, err, sizeof err);
    assert_int_equal(gp_store_commit(s), 0);
    gp_job_results_writer_free(w);
    return n;
}

static int has_result(gp_store *s, const char *job) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT 1 FROM job_results WHERE job_id = ?1", -1, &st,
                                        NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, job, -1, SQLITE_STATIC);
    int r = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return r;
}

static char *dump(json_t *j) {
    char *s = json_dumps(j, JSON_REAL_PRECISION(17) | JSON_SORT_KEYS);
    json_decref(j);
    return s;
}

/* The findings of every job, as JSON text, with or without the stored results. */
static char *findings_text(gp_store *s, gp_job_results *r) {
    gp_diag_opts o = {.no_write = 1};
    gp_job_results_use(&o, r);
    gp_finding *f = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(gp_diagnose_all(s, &o, &f, &n, err, sizeof err), 0);
    char *t = dump(gp_findings_json(f, n, 0));
    free(f);
    return t;
}

static void test_stored_is_computed(void **state) {
    (void)state;
    char path[600];
    gp_store *s = copy_store("eq.db", path, sizeof path);
    assert_int_equal(seal(s), 3); /* flaky, tiny-kernels, queued; late-runner ends at 38m */
    assert_false(has_result(s, "late-runner"));
    assert_int_equal(seal(s), 0); /* nothing new */
    gp_summary_opts so = {0};
    gp_diag_opts dopt = {0};
    gp_job_results *r = gp_job_results_open(s, &so, &dopt);
    assert_non_null(r);
    const char *jobs[] = {"flaky", "tiny-kernels", "queued"};
    for (size_t i = 0; i < 3; i++) {
        gp_job_summary got, want;
        char err[256];
        assert_int_equal(gp_job_results_summary(r, jobs[i], &got), 1);
        assert_int_equal(gp_job_summary_compute(s, jobs[i], &so, &want, err, sizeof err), 0);
        char *a = dump(gp_report_json_job(&got)), *b = dump(gp_report_json_job(&want));
        assert_string_equal(a, b);
        free(a);
        free(b);
        assert_memory_equal(got.gp.bucket_gpu_s, want.gp.bucket_gpu_s, sizeof got.gp.bucket_gpu_s);
        assert_true(got.span_s == want.span_s);
    }
    gp_job_summary x;
    assert_int_equal(gp_job_results_summary(r, "late-runner", &x), 0);
    char *with = findings_text(s, r), *without = findings_text(s, NULL);
    assert_string_equal(with, without);
    assert_non_null(strstr(with, "flaky")); /* the crashing trainer has findings */
    free(with);
    free(without);
    uint64_t ns, nd;
    gp_job_results_counts(r, &ns, &nd);
    assert_int_equal(ns, 3);
    assert_int_equal(nd, 3);
    gp_job_results_close(r);
    gp_store_close(s);
}

static void test_late_rows_invalidate(void **state) {
    (void)state;
    char path[600];
    gp_store *s = copy_store("late.db", path, sizeof path);
    assert_int_equal(seal(s), 3);
    gp_job j;
    assert_int_equal(gp_store_get_job(s, "flaky", &j), 1);
    /* an event of flaky a second before it ended */
    gp_event e;
    memset(&e, 0, sizeof e);
    snprintf(e.job_id, sizeof e.job_id, "flaky");
    e.kind = GP_EV_PHASE;
    snprintf(e.name, sizeof e.name, "eval");
    e.edge = GP_PH_BEGIN;
    e.ts_ns = j.ended_ns - S;
    gp_store_begin(s);
    assert_true(gp_store_put_event(s, &e) >= 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "flaky"));
    assert_true(has_result(s, "tiny-kernels")); /* ended at 15 m: not its range */
    assert_int_equal(seal(s), 1);               /* computed again with the event */
    assert_true(has_result(s, "flaky"));
    /* a device sample inside tiny-kernels' run (10 min in), from any writer */
    gp_job t;
    assert_int_equal(gp_store_get_job(s, "tiny-kernels", &t), 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO samples(uuid, ts_ns, gpu_util) VALUES('GPU-late', %lld, 0.5)",
             (long long)(t.ended_ns - 5 * 60 * S));
    other_sql(path, sql);
    /* every job running 10 minutes in: all three */
    assert_false(has_result(s, "tiny-kernels"));
    assert_false(has_result(s, "flaky"));
    assert_false(has_result(s, "queued"));
    assert_int_equal(seal(s), 3);
    assert_true(has_result(s, "tiny-kernels"));
    /* the job's own row changes (its end): its result goes */
    j.ended_ns += S;
    gp_store_begin(s);
    assert_int_equal(gp_store_put_job(s, &j), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "flaky"));
    assert_int_equal(seal(s), 1);
    /* retention that prunes a raw sample a result read deletes it */
    int64_t raw0 = -1;
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(gp_store_db(s), "SELECT min(raw_t0_ns) FROM job_results", -1, &st, NULL),
        SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) raw0 = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    assert_true(raw0 > 0);
    gp_store_begin(s);
    assert_int_equal(gp_store_retain(s, raw0 + 1), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT count(*) FROM job_results WHERE raw_t0_ns <= ?1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, raw0);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 0);
    sqlite3_finalize(st);
    /* while the raw boundary lies inside a job, it is not stored again (each retention
     * pass would delete it); once retention has passed the jobs, they are */
    assert_int_equal(seal(s), 0);
    gp_store_begin(s);
    assert_int_equal(gp_store_retain(s, store_end(s) - 60 * S), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(seal(s), 3);
    gp_summary_opts so = {0};
    gp_job_results *r = gp_job_results_open(s, &so, NULL);
    gp_job_summary got, want;
    char err[256];
    assert_int_equal(gp_job_results_summary(r, "flaky", &got), 1);
    assert_int_equal(gp_job_summary_compute(s, "flaky", &so, &want, err, sizeof err), 0);
    char *a = dump(gp_report_json_job(&got)), *b = dump(gp_report_json_job(&want));
    assert_string_equal(a, b); /* from the rollups now, the same as computing */
    free(a);
    free(b);
    gp_job_results_close(r);
    gp_store_close(s);
}

static int64_t query_i64(gp_store *s, const char *sql) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL), SQLITE_OK);
    int64_t v = INT64_MIN;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A sample or process row the agent's path stores again under a key already stored (it
 * replaces that row, store.c) deletes the results it is input to, as a new row does. */
static void test_replaced_rows_invalidate(void **state) {
    (void)state;
    char path[600];
    gp_store *s = copy_store("replaced.db", path, sizeof path);
    assert_int_equal(seal(s), 3);
    gp_job t;
    assert_int_equal(gp_store_get_job(s, "tiny-kernels", &t), 1);
    gp_sample x = {0};
    x.ts_ns = t.ended_ns - 5 * 60 * S;
    x.valid = GP_F_GPU_UTIL;
    x.gpu_util = 0.5;
    snprintf(x.uuid, sizeof x.uuid, "GPU-late");
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO samples(uuid, ts_ns, gpu_util) VALUES('GPU-late', %lld, 0.25)",
             (long long)x.ts_ns);
    other_sql(path, sql);
    assert_int_equal(seal(s), 3); /* the new row deleted them; sealed again after it */
    assert_true(has_result(s, "tiny-kernels"));
    gp_store_begin(s);
    assert_int_equal(gp_store_put_sample_row(s, &x), 0); /* the key is stored: replaced */
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(query_i64(s, "SELECT count(*) FROM samples WHERE uuid = 'GPU-late'"), 1);
    assert_int_equal(seal(s), 3);
    gp_proc_sample p = {0};
    snprintf(p.uuid, sizeof p.uuid, "GPU-late");
    p.ts_ns = x.ts_ns;
    p.pid = 7;
    gp_store_begin(s);
    assert_int_equal(gp_store_put_proc(s, &p), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(seal(s), 3);
    gp_store_begin(s);
    assert_int_equal(gp_store_put_proc(s, &p), 0); /* again: replaced */
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(query_i64(s, "SELECT count(*) FROM proc_samples WHERE uuid = 'GPU-late'"), 1);
    gp_store_close(s);
}

/* Migration 14's bound (schema.c): the triggers on samples, process rows and events read
 * job_results_hwm instead of max(t1_ns). It is never below a stored result's t1_ns, however
 * the result got there (the writer, a hand-written row, an update), stays up when results
 * are deleted, and a store whose bound row is gone still deletes a result over a later
 * row, from any writer. */
static void test_bound_kept(void **state) {
    (void)state;
    char path[600], sql[512];
    gp_store *s = copy_store("bound.db", path, sizeof path);
    assert_int_equal(query_i64(s, "SELECT t1_ns FROM job_results_hwm"), -1); /* none yet */
    assert_int_equal(seal(s), 3);
    int64_t max1 = query_i64(s, "SELECT max(t1_ns) FROM job_results");
    assert_int_equal(query_i64(s, "SELECT t1_ns FROM job_results_hwm"), max1);
    /* a row written by hand, later than every result, and an update further on */
    snprintf(sql, sizeof sql,
             "INSERT INTO job_results(job_id, sum_fp, diag_fp, t0_ns, t1_ns, summary, diag)"
             " VALUES ('hand', 'x', 'x', %lld, %lld, x'00', x'00')",
             (long long)(max1 + 10 * S), (long long)(max1 + 20 * S));
    exec_sql(gp_store_db(s), sql);
    assert_int_equal(query_i64(s, "SELECT t1_ns FROM job_results_hwm"), max1 + 20 * S);
    snprintf(sql, sizeof sql, "UPDATE job_results SET t1_ns = %lld WHERE job_id = 'hand'",
             (long long)(max1 + 30 * S));
    exec_sql(gp_store_db(s), sql);
    assert_int_equal(query_i64(s, "SELECT t1_ns FROM job_results_hwm"), max1 + 30 * S);
    /* a sample inside that range, by another writer, deletes it (and only it) */
    snprintf(sql, sizeof sql,
             "INSERT INTO samples(uuid, ts_ns, gpu_util) VALUES('GPU-late', %lld, 0.5)",
             (long long)(max1 + 25 * S));
    other_sql(path, sql);
    assert_false(has_result(s, "hand"));
    assert_true(has_result(s, "flaky"));
    /* deleting results leaves the bound up: no result is kept over a row for that */
    exec_sql(gp_store_db(s), "DELETE FROM job_results WHERE job_id = 'queued'");
    assert_int_equal(query_i64(s, "SELECT t1_ns FROM job_results_hwm"), max1 + 30 * S);
    /* the bound row deleted by hand: every row looks, a process row still deletes */
    exec_sql(gp_store_db(s), "DELETE FROM job_results_hwm");
    gp_job f;
    assert_int_equal(gp_store_get_job(s, "flaky", &f), 1);
    snprintf(
        sql, sizeof sql,
        "INSERT INTO proc_samples(uuid, ts_ns, pid, sm_share) VALUES('GPU-late', %lld, 7, 0.1)",
        (long long)(f.ended_ns - S));
    other_sql(path, sql);
    assert_false(has_result(s, "flaky"));
    /* and an event of a job with a result, after the job's range, still deletes its own */
    assert_true(has_result(s, "tiny-kernels"));
    snprintf(sql, sizeof sql,
             "INSERT INTO events(job_id, ts_ns, kind) VALUES('tiny-kernels', %lld, 1)",
             (long long)(max1 + 3600 * S));
    exec_sql(gp_store_db(s), sql);
    assert_false(has_result(s, "tiny-kernels"));
    gp_store_close(s);
}

static void test_other_options_not_served(void **state) {
    (void)state;
    char path[600];
    gp_store *s = copy_store("opts.db", path, sizeof path);
    assert_int_equal(seal(s), 3);
    gp_job_summary x;
    gp_finding f[GP_DIAG_MAX_PER_JOB];
    gp_features feat;
    gp_goodput acct;
    double price;
    size_t n;
    gp_summary_opts so = {0};
    gp_diag_opts d = {0};
    gp_job_results *r = gp_job_results_open(s, &so, &d);
    assert_int_equal(gp_job_results_summary(r, "flaky", &x), 1);
    assert_int_equal(
        gp_job_results_diag(r, "flaky", f, GP_DIAG_MAX_PER_JOB, &n, &feat, &acct, &price), 1);
    assert_int_equal(gp_job_results_diag(r, "flaky", f, 0, &n, &feat, &acct, &price),
                     n == 0 ? 1 : 0); /* no room: computed */
    gp_job_results_close(r);

    gp_summary_opts slo = {.slo = {.ttft_s = 0.1}};
    gp_summary_opts win = {.t0_ns = 1, .t1_ns = store_end(s)};
    gp_summary_opts roll = {.rollup_min_ns = -1};
    const gp_summary_opts *sos[] = {&slo, &win, &roll};
    for (size_t i = 0; i < 3; i++) {
        r = gp_job_results_open(s, sos[i], NULL);
        assert_int_equal(gp_job_results_summary(r, "flaky", &x), 0);
        assert_int_equal(
            gp_job_results_diag(r, "flaky", f, GP_DIAG_MAX_PER_JOB, &n, &feat, &acct, &price), 0);
        gp_job_results_close(r);
    }
    gp_diag_opts price_d = {.price_per_gpu_h = 3.5};
    gp_diag_opts slo_d = {.slo = {.e2e_s = 2}};
    const gp_diag_opts *ds[] = {&price_d, &slo_d};
    for (size_t i = 0; i < 2; i++) {
        r = gp_job_results_open(s, NULL, ds[i]);
        assert_int_equal(
            gp_job_results_diag(r, "flaky", f, GP_DIAG_MAX_PER_JOB, &n, &feat, &acct, &price), 0);
        gp_job_results_close(r);
    }
    const char *envs[] = {"GOODPUT_PRICE_PER_GPU_HOUR", "GOODPUT_DIAG_RAW"};
    for (size_t i = 0; i < 2; i++) {
        setenv(envs[i], "1", 1);
        r = gp_job_results_open(s, &so, &d);
        assert_int_equal(
            gp_job_results_diag(r, "flaky", f, GP_DIAG_MAX_PER_JOB, &n, &feat, &acct, &price), 0);
        gp_job_results_close(r);
        unsetenv(envs[i]);
    }
    /* the engine's version is part of both fingerprints */
    char fp[512];
    assert_int_equal(gp_job_results_sum_fp(&so, fp, sizeof fp), 0);
    assert_non_null(strstr(fp, gp_engine_version));
    assert_true(strlen(gp_engine_version) >= 8);
    assert_int_equal(gp_job_results_diag_fp(&d, fp, sizeof fp), 0);
    assert_non_null(strstr(fp, gp_engine_version));
    gp_store_close(s);
}

static char *report_text(const char *db, int json) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gp_slo none = {0};
    assert_int_equal(gp_report_run(db, NULL, json, &none, f, 100), 0);
    fclose(f);
    /* the JSON names the store: drop that line */
    char *db_line = json ? strstr(buf, "\"db\"") : NULL;
    if (db_line) {
        char *eol = strchr(db_line, '\n');
        memmove(db_line, eol + 1, strlen(eol + 1) + 1);
    }
    return buf;
}

static void test_old_store_reports(void **state) {
    (void)state;
    char with[600], old[600];
    gp_store *s = copy_store("with.db", with, sizeof with);
    assert_int_equal(seal(s), 3);
    gp_store_close(s);
    s = copy_store("old.db", old, sizeof old);
    /* schema 12: no table (its triggers go with it). A reader on it is NULL: compute. */
    exec_sql(gp_store_db(s), "DROP TABLE job_results; PRAGMA user_version = 12;");
    gp_summary_opts so = {0};
    gp_diag_opts d = {0};
    assert_null(gp_job_results_open(s, &so, &d));
    gp_job_summary x;
    assert_int_equal(gp_job_results_summary(NULL, "flaky", &x), 0);
    gp_store_close(s);
    /* The report opens it (a writable older store is migrated once, store.c: then it has
     * an empty table) and prints what the store with results prints. */
    for (int json = 0; json <= 1; json++) {
        char *a = report_text(with, json), *b = report_text(old, json);
        assert_string_equal(a, b);
        assert_non_null(strstr(a, "flaky"));
        free(a);
        free(b);
    }
}

/* Every stored row, as text (blobs in hex). */
static char *rows_text(gp_store *s) {
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT group_concat(job_id || '|' || sum_fp || '|' || diag_fp || '|' ||"
                           " t0_ns || '|' || t1_ns || '|' || ifnull(raw_t0_ns, '-') || '|' ||"
                           " hex(summary) || '|' || hex(diag), ';') FROM (SELECT * FROM job_results"
                           " ORDER BY job_id)",
                           -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    const char *t = (const char *)sqlite3_column_text(st, 0);
    char *r = strdup(t ? t : "");
    sqlite3_finalize(st);
    return r;
}

static void test_claims(void **state) {
    (void)state;
    char pa[600], pb[600], pc[600];
    gp_store *a = copy_store("claim-a.db", pa, sizeof pa);
    gp_store *b = copy_store("claim-b.db", pb, sizeof pb);
    assert_int_equal(seal(a), 3); /* in the caller's transaction */
    gp_job_results_writer *w = gp_job_results_writer_new();
    char err[256];
    assert_int_equal(gp_job_results_seal(w, b, store_end(b), 0, err, sizeof err), 3); /* claims */
    gp_job_results_writer_free(w);
    char *ta = rows_text(a), *tb = rows_text(b);
    assert_string_equal(ta, tb);
    assert_null(strstr(tb, "sealing"));
    /* A claim a killed writer left: never served, deleted by unclaim, the results stay. */
    exec_sql(gp_store_db(b), "INSERT INTO job_results VALUES('late-runner', 'sealing', '', 0,"
                             " 9000000000000000000, NULL, X'', X'')");
    gp_summary_opts so = {0};
    gp_diag_opts dopt = {0};
    gp_job_results *r = gp_job_results_open(b, &so, &dopt);
    gp_job_summary sum;
    assert_int_equal(gp_job_results_summary(r, "late-runner", &sum), 0);
    assert_int_equal(gp_job_results_summary(r, "flaky", &sum), 1);
    gp_job_results_close(r);
    assert_int_equal(gp_job_results_unclaim(b), 0);
    char *tb2 = rows_text(b);
    assert_string_equal(ta, tb2);
    /* A job that failed in an earlier pass is handed over and not tried. */
    gp_store *c = copy_store("claim-c.db", pc, sizeof pc);
    w = gp_job_results_writer_new();
    gp_job_results_writer_skip(w, "flaky");
    assert_int_equal(gp_job_results_seal(w, c, store_end(c), 0, err, sizeof err), 2);
    assert_false(has_result(c, "flaky"));
    assert_string_equal(gp_job_results_writer_failed(w, 0), "flaky");
    assert_null(gp_job_results_writer_failed(w, 1));
    gp_job_results_writer_free(w);
    free(ta);
    free(tb);
    free(tb2);
    gp_store_close(a);
    gp_store_close(b);
    gp_store_close(c);
}

/* The store's own rows (store/own_rows.h): on its connection the schema's triggers on
 * samples and proc_samples are off and the store applies their rule itself, also to
 * rows written in batches (gp_store_put_samples / _procs, the agent's flush); a raw
 * INSERT there is refused, never stored without the rule; a store whose trigger is not
 * migration 14's keeps the triggers on. */
static void test_own_rows_invalidate(void **state) {
    (void)state;
    char path[600];
    gp_store *s = copy_store("own.db", path, sizeof path);
    assert_int_equal(seal(s), 3);
    gp_job t;
    assert_int_equal(gp_store_get_job(s, "tiny-kernels", &t), 1);
    int64_t bound = query_i64(s, "SELECT t1_ns FROM job_results_hwm");
    assert_true(bound >= t.ended_ns);
    /* refused on the store's connection, for both tables, and nothing stored */
    char sql[256];
    snprintf(sql, sizeof sql, "INSERT INTO samples(uuid, ts_ns) VALUES('GPU-raw', %lld)",
             (long long)(t.ended_ns - 60 * S));
    assert_int_equal(sqlite3_exec(gp_store_db(s), sql, NULL, NULL, NULL), SQLITE_AUTH);
    snprintf(sql, sizeof sql,
             "INSERT INTO proc_samples(uuid, ts_ns, pid) VALUES('GPU-raw', %lld, 1)",
             (long long)(t.ended_ns - 60 * S));
    assert_int_equal(sqlite3_exec(gp_store_db(s), sql, NULL, NULL, NULL), SQLITE_AUTH);
    assert_int_equal(query_i64(s, "SELECT count(*) FROM samples WHERE uuid = 'GPU-raw'"), 0);
    assert_true(has_result(s, "tiny-kernels"));
    /* a batch after every result's range: nothing deleted */
    enum { N = 3 * GP_STORE_BATCH_ROWS + 3 };
    gp_sample xs[N];
    gp_proc_sample ps[N];
    memset(xs, 0, sizeof xs);
    memset(ps, 0, sizeof ps);
    for (int i = 0; i < N; i++) {
        snprintf(xs[i].uuid, sizeof xs[i].uuid, "GPU-own%d", i % 4);
        xs[i].ts_ns = bound + (1 + i / 4) * S;
        xs[i].valid = GP_F_GPU_UTIL;
        xs[i].gpu_util = 0.5;
        snprintf(ps[i].uuid, sizeof ps[i].uuid, "GPU-own%d", i % 4);
        ps[i].ts_ns = xs[i].ts_ns;
        ps[i].pid = 9;
    }
    gp_store_begin(s);
    assert_int_equal(gp_store_put_samples(s, xs, N), 0);
    assert_int_equal(gp_store_put_procs(s, ps, N), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(seal(s), 0);
    assert_true(has_result(s, "tiny-kernels"));
    assert_true(has_result(s, "flaky"));
    /* one sample row in the middle of a batch inside tiny-kernels' run, the row before it
     * a key already stored (replaced): the results of every job running then go */
    xs[GP_STORE_BATCH_ROWS + 2].ts_ns = t.ended_ns - 5 * 60 * S;
    xs[GP_STORE_BATCH_ROWS + 1] = xs[3];
    gp_store_begin(s);
    assert_int_equal(gp_store_put_samples(s, xs, N), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    assert_false(has_result(s, "flaky"));
    assert_int_equal(seal(s), 3);
    /* the same with a process row, in the last full batch */
    ps[2 * GP_STORE_BATCH_ROWS + 5].ts_ns = t.ended_ns - 5 * 60 * S;
    gp_store_begin(s);
    assert_int_equal(gp_store_put_procs(s, ps, N), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(seal(s), 3);
    /* and in the short tail, written alone */
    ps[N - 1].ts_ns = t.ended_ns - 4 * 60 * S;
    gp_store_begin(s);
    assert_int_equal(gp_store_put_procs(s, ps, N), 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(seal(s), 3);
    gp_store_close(s);
    /* a store opened without GP_STORE_OWN_ROWS keeps the triggers: raw inserts run them */
    char err[256];
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    assert_true(has_result(s, "tiny-kernels"));
    snprintf(sql, sizeof sql, "INSERT INTO samples(uuid, ts_ns) VALUES('GPU-plain', %lld)",
             (long long)(t.ended_ns - 60 * S));
    exec_sql(gp_store_db(s), sql);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(seal(s), 3);
    gp_store_close(s);
    /* a trigger that is not migration 14's: the store leaves the triggers on, raw inserts
     * are allowed and run them */
    other_sql(path,
              "DROP TRIGGER job_results_sample;"
              "CREATE TRIGGER job_results_sample AFTER INSERT ON samples BEGIN"
              " DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END;");
    assert_int_equal(gp_store_open(path, GP_STORE_OWN_ROWS, &s, err, sizeof err), 0);
    assert_true(has_result(s, "tiny-kernels"));
    snprintf(sql, sizeof sql, "INSERT INTO samples(uuid, ts_ns) VALUES('GPU-raw', %lld)",
             (long long)(t.ended_ns - 60 * S));
    exec_sql(gp_store_db(s), sql);
    assert_false(has_result(s, "tiny-kernels"));
    assert_int_equal(seal(s), 3);
    gp_store_begin(s);
    assert_int_equal(gp_store_put_samples(s, xs, N), 0); /* one at a time, by the trigger */
    assert_int_equal(gp_store_commit(s), 0);
    assert_false(has_result(s, "tiny-kernels"));
    gp_store_close(s);
}

static int64_t count_i64(gp_store *s, const char *sql) {
    return gp_test_sql_i64(gp_store_db(s), sql);
}

static void test_event_retention(void **state) {
    (void)state;
    char path[600];
    gp_store *s = copy_store("prune.db", path, sizeof path);
    assert_int_equal(seal(s), 3); /* flaky, tiny-kernels, queued; late-runner has none */
    /* queued's result is a sealing child's claim: not a result, never pruned */
    exec_sql(gp_store_db(s), "UPDATE job_results SET sum_fp = 'sealing' WHERE job_id = 'queued'");
    gp_summary_opts so = {0};
    gp_diag_opts dopt = {0};
    gp_job_results *r = gp_job_results_open(s, &so, &dopt);
    gp_job_summary before[2];
    char *fbefore = NULL;
    const char *pruned[] = {"flaky", "tiny-kernels"};
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(gp_job_results_summary(r, pruned[i], &before[i]), 1);
    gp_finding *f = NULL;
    size_t n = 0;
    char err[256];
    gp_job_results_use(&dopt, r);
    assert_int_equal(gp_diagnose_job(s, "flaky", &dopt, &f, &n, err, sizeof err), 0);
    fbefore = dump(gp_findings_json(f, n, 0));
    free(f);
    gp_job_results_close(r);
    int64_t ev_late = count_i64(s, "SELECT count(*) FROM events WHERE job_id = 'late-runner'");
    int64_t ev_queued = count_i64(s, "SELECT count(*) FROM events WHERE job_id = 'queued'");
    int64_t ev_flaky = count_i64(s, "SELECT count(*) FROM events WHERE job_id = 'flaky'");
    assert_true(ev_late > 0 && ev_flaky > 100);
    /* A cutoff before the jobs ended prunes nothing and marks nothing. */
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_store_retain_events(s, 1, 1, 0), 0);
    assert_int_equal(count_i64(s, "SELECT count(*) FROM job_events_pruned"), 0);
    /* 100 events a pass: the mark is there from the first pass on */
    int64_t k = gp_store_retain_events(s, store_end(s) + 1, store_end(s), 100);
    assert_int_equal(k, 100);
    assert_int_equal(count_i64(s, "SELECT count(*) FROM job_events_pruned"), 2);
    int64_t total = k;
    while ((k = gp_store_retain_events(s, store_end(s) + 1, store_end(s), 100)) > 0)
        total += k;
    assert_int_equal(k, 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_true(total >= ev_flaky);
    assert_int_equal(count_i64(s, "SELECT count(*) FROM events WHERE job_id IN ('flaky',"
                                  " 'tiny-kernels')"),
                     0);
    assert_int_equal(count_i64(s, "SELECT count(*) FROM events WHERE job_id = 'late-runner'"),
                     ev_late);
    assert_int_equal(count_i64(s, "SELECT count(*) FROM events WHERE job_id = 'queued'"),
                     ev_queued);
    int64_t b = -1;
    assert_int_equal(gp_store_events_pruned(s, "flaky", &b), 1);
    assert_true(b > 0);
    assert_int_equal(gp_store_events_pruned(s, "late-runner", &b), 0);
    /* An engine that changed (another version, same sizes and options) still serves them,
     * said in the summary; the findings are the same bytes. */
    exec_sql(gp_store_db(s), "UPDATE job_events_pruned SET sum_fp = 'otherbuild' ||"
                             " substr(sum_fp, instr(sum_fp, ';')), diag_fp = 'otherbuild' ||"
                             " substr(diag_fp, instr(diag_fp, ';'))");
    dopt = (gp_diag_opts){0};
    r = gp_job_results_open(s, &so, &dopt);
    for (size_t i = 0; i < 2; i++) {
        gp_job_summary got;
        assert_int_equal(gp_job_results_summary(r, pruned[i], &got), 1);
        assert_true(got.events_pruned_ns > 0);
        got.events_pruned_ns = 0;
        char *x = dump(gp_report_json_job(&got)), *y = dump(gp_report_json_job(&before[i]));
        assert_string_equal(x, y);
        free(x);
        free(y);
    }
    gp_job_results_use(&dopt, r);
    assert_int_equal(gp_diagnose_job(s, "flaky", &dopt, &f, &n, err, sizeof err), 0);
    char *fafter = dump(gp_findings_json(f, n, 0));
    free(f);
    assert_string_equal(fafter, fbefore);
    free(fafter);
    free(fbefore);
    gp_job_results_close(r);
    /* Other options (an SLO), or a window: not served, and computing is refused. */
    gp_summary_opts slo = {.slo = {.ttft_s = 1}};
    r = gp_job_results_open(s, &slo, NULL);
    gp_job_summary x;
    assert_int_equal(gp_job_results_summary(r, "flaky", &x), 0);
    gp_job_results_close(r);
    assert_int_not_equal(gp_job_summary_compute(s, "flaky", &so, &x, err, sizeof err), 0);
    assert_non_null(strstr(err, "retention"));
    gp_summary_opts win = {.t0_ns = store_end(s) - 600 * S, .t1_ns = store_end(s)};
    assert_int_not_equal(gp_job_summary_compute(s, "tiny-kernels", &win, &x, err, sizeof err), 0);
    assert_non_null(strstr(err, "retention"));
    gp_job_input in;
    assert_int_not_equal(gp_job_input_load(s, "flaky", &in, err, sizeof err), 0);
    assert_non_null(strstr(err, "retention"));
    dopt = (gp_diag_opts){.no_write = 1};
    assert_int_not_equal(gp_diagnose_job(s, "flaky", &dopt, &f, &n, err, sizeof err), 0);
    /* Other struct sizes: not served either (the bytes would not be this build's). */
    exec_sql(gp_store_db(s), "UPDATE job_events_pruned SET sum_fp = 'otherbuild;1/2/3'");
    r = gp_job_results_open(s, &so, NULL);
    assert_int_equal(gp_job_results_summary(r, "flaky", &x), 0);
    gp_job_results_close(r);
    /* The writer never stores them again (late-runner ends too late: nothing to store);
     * the claim left on queued is taken over and queued stored. */
    gp_job_results_writer *w = gp_job_results_writer_new();
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_job_results_seal(w, s, store_end(s), 0, err, sizeof err), 1);
    assert_int_equal(gp_store_commit(s), 0);
    gp_job_results_writer_free(w);
    assert_false(has_result(s, "flaky"));
    assert_false(has_result(s, "tiny-kernels"));
    assert_true(has_result(s, "queued"));
    gp_store_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stored_is_computed),
        cmocka_unit_test(test_late_rows_invalidate),
        cmocka_unit_test(test_bound_kept),
        cmocka_unit_test(test_other_options_not_served),
        cmocka_unit_test(test_old_store_reports),
        cmocka_unit_test(test_claims),
        cmocka_unit_test(test_replaced_rows_invalidate),
        cmocka_unit_test(test_own_rows_invalidate),
        cmocka_unit_test(test_event_retention),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
