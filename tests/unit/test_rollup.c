/* test_rollup.c: 1-minute and 1-hour rollups written as samples arrive (store/rollup.h):
 * means of known values only, counters as their last value, throttle bits OR'ed, buckets
 * split across commits and reopenings merged, the migration's backfill equal to the
 * online rollup, and gp_store_samples_best choosing raw rows or rollups. Rows are written
 * when their bucket closes: a writer killed before that loses nothing (the next writer
 * folds the committed raw samples back in), and the sums are the same chain of per-commit
 * additions as when every commit upserted its part. */
#include "testutil.h"

#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/rollup.h"
#include "store/store.h"

#define S 1000000000LL
#define T0 (1700000000LL * S)

static char *db_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* Removes the test's directory (the store and its -wal/-shm). */
static void rm_dir(char *dir) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* Hour-aligned base: bucket ends fall on base + k minutes. */
static int64_t base_ns(void) {
    return (T0 / GP_ROLLUP_1H_NS) * GP_ROLLUP_1H_NS;
}

static gp_sample sample_at(const char *uuid, int64_t i) {
    gp_sample x = {0};
    snprintf(x.uuid, sizeof x.uuid, "%s", uuid);
    x.ts_ns = base_ns() + i * S; /* i = 1..: sample i lies in minute (i - 1) / 60 */
    x.valid = GP_F_GPU_UTIL | GP_F_ENERGY | GP_F_POWER | GP_F_THROTTLE | GP_F_MEM_USED;
    x.gpu_util = (double)(i % 10) / 10.0;
    x.power_w = 100.0 + (double)i;
    x.energy_mj = 1000 + (uint64_t)i * 350;
    x.mem_used_bytes = (uint64_t)i << 20;
    x.throttle_reasons = (i % 60 == 7) ? 0x4 : (i % 60 == 9 ? 0x20 : 0);
    if (i % 3 == 0) { /* known in a third of the samples only */
        x.valid |= GP_F_TEMP;
        x.temp_c = 40.0 + (double)(i % 7);
    }
    return x;
}

/* Writes samples first..last of two devices, committing every `every` samples. */
static void write_range(gp_store *s, int64_t first, int64_t last, int every) {
    assert_int_equal(gp_store_begin(s), 0);
    for (int64_t i = first; i <= last; i++) {
        gp_sample a = sample_at("GPU-a", i), b = sample_at("GPU-b", i);
        assert_int_equal(gp_store_put_sample(s, &a), 0);
        assert_int_equal(gp_store_put_sample(s, &b), 0);
        if ((i - first + 1) % every == 0) {
            assert_int_equal(gp_store_commit(s), 0);
            assert_int_equal(gp_store_begin(s), 0);
        }
    }
    assert_int_equal(gp_store_commit(s), 0);
}

/* Checks minute m (samples 60m+1 .. 60m+60) of GPU-a against a direct computation. */
static void check_minute(const gp_sample *r, uint32_t n, int64_t m) {
    assert_int_equal(r->ts_ns, base_ns() + (m + 1) * GP_ROLLUP_1M_NS);
    assert_int_equal(n, 60);
    double util = 0, power = 0, temp = 0, mem = 0;
    int n_temp = 0;
    uint64_t thr = 0;
    for (int64_t i = 60 * m + 1; i <= 60 * m + 60; i++) {
        gp_sample x = sample_at("GPU-a", i);
        util += x.gpu_util;
        power += x.power_w;
        mem += (double)x.mem_used_bytes;
        thr |= x.throttle_reasons;
        if (x.valid & GP_F_TEMP) {
            temp += x.temp_c;
            n_temp++;
        }
    }
    assert_true(gp_has(r->valid, GP_F_GPU_UTIL | GP_F_POWER | GP_F_TEMP | GP_F_ENERGY));
    assert_true(fabs(r->gpu_util - util / 60) < 1e-9);
    assert_true(fabs(r->power_w - power / 60) < 1e-9);
    assert_true(fabs(r->temp_c - temp / n_temp) < 1e-9); /* mean of the known ones only */
    assert_true(fabs((double)r->mem_used_bytes - mem / 60) < 1.0);
    assert_int_equal(r->energy_mj, sample_at("GPU-a", 60 * m + 60).energy_mj); /* last */
    assert_int_equal(r->throttle_reasons, thr);
    assert_int_equal(thr, 0x24);
    assert_false(r->valid & GP_F_SM_ACTIVE); /* never reported: unknown, not 0 */
    assert_false(r->valid & GP_F_XID);
}

static void test_online_rollup(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "r.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    write_range(s, 1, 100, 7); /* minute 1 is split across commits */
    gp_store_close(s);
    /* Another agent run continues the same minute. */
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    write_range(s, 101, 180, 13);
    gp_store_close(s);

    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
    gp_sample *r;
    uint32_t *cnt;
    size_t n;
    assert_int_equal(
        gp_rollup_read(gp_store_db(s), GP_ROLLUP_1M_NS, "GPU-a", 0, INT64_MAX, &r, &cnt, &n), 0);
    assert_int_equal(n, 3);
    for (int m = 0; m < 3; m++)
        check_minute(&r[m], cnt[m], m);
    free(r);
    free(cnt);
    /* The hour holds all 180 samples; the energy counter is the last one. */
    assert_int_equal(
        gp_rollup_read(gp_store_db(s), GP_ROLLUP_1H_NS, "GPU-b", 0, INT64_MAX, &r, &cnt, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(cnt[0], 180);
    assert_int_equal(r[0].ts_ns, base_ns() + GP_ROLLUP_1H_NS);
    assert_int_equal(r[0].energy_mj, sample_at("GPU-b", 180).energy_mj);
    free(r);
    free(cnt);
    gp_store_close(s);
    free(path);
    rm_dir(dir);
}

/* Rows stored before the rollup migration are rolled up by it, to the same values. */
static void test_migration_backfill(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "m.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    write_range(s, 1, 180, 50);
    /* Make it a version-8 store (the one before the rollups) whose samples were never rolled up. */
    assert_int_equal(sqlite3_exec(gp_store_db(s),
                                  "DROP TABLE rollup_1m; DROP TABLE rollup_1h;"
                                  " PRAGMA user_version=8;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    gp_store_close(s);
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_sample *r;
    uint32_t *cnt;
    size_t n;
    assert_int_equal(
        gp_rollup_read(gp_store_db(s), GP_ROLLUP_1M_NS, "GPU-a", 0, INT64_MAX, &r, &cnt, &n), 0);
    assert_int_equal(n, 3);
    for (int m = 0; m < 3; m++)
        check_minute(&r[m], cnt[m], m);
    free(r);
    free(cnt);
    gp_store_close(s);
    free(path);
    rm_dir(dir);
}

/* Raw rows for a range inside the retention window, rollups beyond it. */
static void test_samples_best(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "b.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    write_range(s, 1, 7200, 300); /* two hours */
    gp_sample *r;
    size_t n;
    int64_t step;
    int64_t all0 = 0, all1 = INT64_MAX;
    /* Everything is raw: raw rows, unless the span exceeds max_points seconds. */
    assert_int_equal(gp_store_samples_best(s, "GPU-a", all0, all1, 0, &r, &n, &step), 0);
    assert_int_equal(step, 0);
    assert_int_equal(n, 7200);
    free(r);
    int64_t b = base_ns();
    assert_int_equal(gp_store_samples_best(s, "GPU-a", b, b + 7201 * S, 1000, &r, &n, &step), 0);
    assert_int_equal(step, GP_ROLLUP_1M_NS);
    assert_int_equal(n, 120);
    free(r);
    assert_int_equal(gp_store_samples_best(s, "GPU-a", b, b + 7201 * S, 100, &r, &n, &step), 0);
    assert_int_equal(step, GP_ROLLUP_1H_NS);
    assert_int_equal(n, 2);
    free(r);
    /* Retention drops the first hour of raw rows; its rollups stay. */
    assert_int_equal(gp_store_retain(s, b + 3600 * S + 1), 0);
    assert_int_equal(gp_store_samples_best(s, "GPU-a", all0, all1, 0, &r, &n, &step), 0);
    assert_int_equal(step, GP_ROLLUP_1M_NS);
    assert_int_equal(n, 120);
    check_minute(&r[0], 60, 0);
    free(r);
    /* The second hour is still raw. */
    assert_int_equal(
        gp_store_samples_best(s, "GPU-a", b + 3700 * S, b + 7201 * S, 0, &r, &n, &step), 0);
    assert_int_equal(step, 0);
    assert_int_equal(n, 3501);
    free(r);
    gp_store_close(s);
    free(path);
    rm_dir(dir);
}

/* gpu_util_sum of GPU-a's 1-minute row ending at minute m + 1, read with SQL. */
static double util_sum(gp_store *s, int64_t m) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT gpu_util_sum FROM rollup_1m WHERE uuid = 'GPU-a'"
                                        " AND t1_ns = ?1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(st, 1, base_ns() + (m + 1) * GP_ROLLUP_1M_NS);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* A row's sum is the chain of the parts each commit added, in commit order (what the
 * per-commit upserts computed), though the row is written once, when the minute closes. */
static void test_sum_is_commit_chain(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "c.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    write_range(s, 1, 130, 7); /* commits after samples 7, 14, ..., 126 */
    gp_store_close(s);
    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
    for (int64_t m = 0; m < 2; m++) {
        double tot = 0, part = 0;
        int have = 0;
        for (int64_t i = 60 * m + 1; i <= 60 * m + 60; i++) {
            part += sample_at("GPU-a", i).gpu_util;
            /* a commit, or the minute's end (its last part is added when it closes) */
            if (i % 7 == 0 || i == 60 * m + 60) {
                tot = have ? tot + part : part;
                have = 1;
                part = 0;
            }
        }
        assert_true(util_sum(s, m) == tot); /* bit for bit */
    }
    gp_store_close(s);
    free(path);
    rm_dir(dir);
}

/* Number of 1-minute rows of GPU-a, through a connection of its own. */
static int64_t minute_rows(const char *path) {
    gp_store *s;
    char err[256];
    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT count(*) FROM rollup_1m WHERE uuid = 'GPU-a'", -1,
                                        &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    gp_store_close(s);
    return n;
}

/* A writer killed (no close) after committing samples of open buckets: the next writer
 * of those devices folds the committed raw samples its rows lack back in, so every
 * minute and the hour hold all their samples. Killed once in a device's first minute
 * (no row at all yet) and once in its second (a closed minute's row written). */
static void test_killed_writer(void **st) {
    (void)st;
    static const int64_t kill_after[] = {30, 100};
    for (size_t c = 0; c < sizeof kill_after / sizeof kill_after[0]; c++) {
        char *dir = gp_test_tmpdir(), *path = db_path(dir, "k.db"), err[256];
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            gp_store *w;
            if (gp_store_open(path, 0, &w, err, sizeof err) != 0) _exit(2);
            write_range(w, 1, kill_after[c], 7);
            _exit(0); /* no gp_store_close: the open buckets are never written */
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        /* Only closed minutes have rows: the open one waits for its close. */
        assert_int_equal(minute_rows(path), kill_after[c] / 60);
        gp_store *s;
        assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
        write_range(s, kill_after[c] + 1, 180, 13);
        gp_store_close(s);

        assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
        gp_sample *r;
        uint32_t *cnt;
        size_t n;
        assert_int_equal(
            gp_rollup_read(gp_store_db(s), GP_ROLLUP_1M_NS, "GPU-a", 0, INT64_MAX, &r, &cnt, &n),
            0);
        assert_int_equal(n, 3);
        for (int m = 0; m < 3; m++)
            check_minute(&r[m], cnt[m], m);
        free(r);
        free(cnt);
        assert_int_equal(
            gp_rollup_read(gp_store_db(s), GP_ROLLUP_1H_NS, "GPU-b", 0, INT64_MAX, &r, &cnt, &n),
            0);
        assert_int_equal(n, 1);
        assert_int_equal(cnt[0], 180);
        assert_int_equal(r[0].energy_mj, sample_at("GPU-b", 180).energy_mj);
        free(r);
        free(cnt);
        gp_store_close(s);
        free(path);
        rm_dir(dir);
    }
}

/* Count of GPU-a's rows in a rollup table with t1_ns in [a, b]. */
static int64_t rows_between(gp_store *s, const char *table, int64_t a, int64_t b) {
    char q[160];
    snprintf(q, sizeof q,
             "SELECT count(*) FROM %s WHERE uuid = 'GPU-a' AND t1_ns BETWEEN ?1 AND ?2", table);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), q, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Rollup retention (gp_rollup_retain) at its threshold: the minutes of whole hours before
 * the cutoff go (the bucket just outside, ending at the hour, too), the one just inside
 * stays, the 1-hour rows all stay; readers then take the 1-hour rows where the minutes
 * went (gp_rollup_minutes_from, gp_store_samples_best), with the hour's values. */
static void test_rollup_retention_threshold(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "r.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    write_range(s, 1, 3 * 3600, 300); /* three hours */
    int64_t b = base_ns(), H = GP_ROLLUP_1H_NS, M = GP_ROLLUP_1M_NS;
    /* Nothing deleted: the tiers start together. */
    assert_int_equal(gp_rollup_minutes_from(gp_store_db(s), "GPU-a"), -1);
    gp_sample *h0;
    size_t nh0;
    assert_int_equal(gp_rollup_read(gp_store_db(s), H, "GPU-a", 0, INT64_MAX, &h0, NULL, &nh0), 0);
    assert_int_equal(nh0, 3);
    /* A cutoff before the first hour's end deletes nothing. */
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_rollup_retain(s, b + H - 1), 0);
    assert_int_equal(gp_store_commit(s), 0);
    /* (the last minute is still open: written when it closes or the store closes) */
    assert_int_equal(rows_between(s, "rollup_1m", b, b + 3 * H), 179);
    /* Running jobs' saved prefixes: one whose job started in the first hour read minutes
     * about to go, so it goes with them; one whose job starts an hour and a minute after
     * the cut hour read none of them and stays. */
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO allocations(job_id, uuid, from_ns) VALUES ('old', 'GPU-a', %lld),"
             " ('new', 'GPU-a', %lld);"
             "INSERT INTO job_prefix(job_id, fp, t_ns, ev_t_ns, raw_t0_ns, computed_ns, state)"
             " VALUES ('old', 'f', 0, 0, 0, 0, X''), ('new', 'f', 0, 0, 0, 0, X'');",
             (long long)b, (long long)(b + 3 * H + M));
    assert_int_equal(sqlite3_exec(gp_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    /* A cutoff inside the third hour: the first two hours' minutes go (on both devices),
     * the bucket ending at b + 2h (just outside) with them, b + 2h + 1m (just inside) stays. */
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_rollup_retain(s, b + 2 * H + 30 * M), 2 * 120);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(rows_between(s, "rollup_1m", b + 2 * H, b + 2 * H), 0);
    assert_int_equal(rows_between(s, "rollup_1m", b + 2 * H + M, b + 2 * H + M), 1);
    assert_int_equal(rows_between(s, "rollup_1m", b, b + 3 * H), 59);
    assert_int_equal(rows_between(s, "rollup_1h", b, b + 3 * H), 3);
    assert_int_equal(
        gp_test_sql_i64(gp_store_db(s), "SELECT count(*) FROM job_prefix WHERE job_id = 'old'"), 0);
    assert_int_equal(
        gp_test_sql_i64(gp_store_db(s), "SELECT count(*) FROM job_prefix WHERE job_id = 'new'"), 1);
    /* A second pass with the same cutoff has nothing to do. */
    assert_int_equal(gp_rollup_retain(s, b + 2 * H + 30 * M), 0);
    /* The minutes left start the third hour: the 1-hour tier ends at its start. */
    assert_int_equal(gp_rollup_minutes_from(gp_store_db(s), "GPU-a"), b + 2 * H);
    /* Raw rows go first in the agent (--rollup-retention >= --retention). A read reaching
     * back before the minutes is answered by the 1-hour rows, unchanged. */
    assert_int_equal(gp_store_retain(s, b + 2 * H + 30 * M), 0);
    gp_sample *r;
    size_t n;
    int64_t step;
    assert_int_equal(gp_store_samples_best(s, "GPU-a", b, b + 3 * H + 1, 0, &r, &n, &step), 0);
    assert_int_equal(step, H);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(r[i].ts_ns, h0[i].ts_ns);
        assert_true(r[i].gpu_util == h0[i].gpu_util);
        assert_int_equal(r[i].energy_mj, h0[i].energy_mj);
    }
    free(r);
    free(h0);
    /* Inside the minutes kept, before the raw rows: 1-minute rows. */
    assert_int_equal(
        gp_store_samples_best(s, "GPU-a", b + 2 * H + M, b + 3 * H + 1, 0, &r, &n, &step), 0);
    assert_int_equal(step, M);
    free(r);
    /* A cutoff past every minute: the open one is written first (its samples are in the
     * open hour's row then), then none is left, the hours answer everything. */
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_rollup_retain(s, b + 4 * H), 2 * 60);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(gp_rollup_minutes_from(gp_store_db(s), "GPU-a"), INT64_MAX);
    gp_store_close(s);
    free(path);
    rm_dir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_online_rollup),
        cmocka_unit_test(test_migration_backfill),
        cmocka_unit_test(test_samples_best),
        cmocka_unit_test(test_rollup_retention_threshold),
        cmocka_unit_test(test_sum_is_commit_chain),
        cmocka_unit_test(test_killed_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
