/* test_store.c: store round trip, unknown-stays-unknown, lifecycle folding, migrations,
 * bad files, and crash safety (kill -9 of a writer mid-transaction). */
#include "testutil.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "store/schema.h"
#include "store/store.h"

static char *db_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static void test_round_trip(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "s.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_device d = {.index = 3, .mig_mode = -1};
    strcpy(d.uuid, "GPU-1234");
    strcpy(d.name, "NVIDIA H100 80GB HBM3");
    d.memory_total_bytes = 80ull << 30;
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_store_put_device(s, &d), 0);
    gp_sample x = {0};
    strcpy(x.uuid, "GPU-1234");
    x.ts_ns = 1000;
    x.valid = GP_F_GPU_UTIL | GP_F_ENERGY | GP_F_POWER;
    x.gpu_util = 0.75;
    x.energy_mj = 123456789;
    x.power_w = 350.5;
    x.sm_active = 0.9; /* not valid: must read back unknown */
    assert_int_equal(gp_store_put_sample(s, &x), 0);
    gp_event e;
    gp_event_init(&e, GP_EV_JOB);
    strcpy(e.job_id, "job-1");
    strcpy(e.name, "submitted");
    strcpy(e.user, "alice");
    e.ts_ns = 100;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    strcpy(e.name, "allocated");
    e.ts_ns = 400;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    gp_event_init(&e, GP_EV_ALLOC);
    strcpy(e.job_id, "job-1");
    strcpy(e.uuid, "GPU-1234");
    e.from_ns = 400;
    e.ts_ns = 400;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    gp_event_init(&e, GP_EV_STEP);
    strcpy(e.job_id, "job-1");
    e.step = 1;
    e.units = 64;
    e.step_start_ns = 700;
    e.ts_ns = 900;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    e.step = 2;
    e.step_start_ns = 900;
    e.ts_ns = 1100;
    assert_int_equal(gp_store_put_event(s, &e), 0);
    assert_int_equal(gp_store_commit(s), 0);
    gp_store_close(s);

    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
    gp_device *devs;
    size_t n;
    assert_int_equal(gp_store_list_devices(s, &devs, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(devs[0].uuid, "GPU-1234");
    assert_non_null(devs[0].spec);
    assert_string_equal(devs[0].spec->model, "H100-SXM");
    free(devs);
    gp_sample *xs;
    assert_int_equal(gp_store_device_samples(s, "GPU-1234", 0, 2000, &xs, &n), 0);
    assert_int_equal(n, 1);
    assert_true(gp_has(xs[0].valid, GP_F_GPU_UTIL));
    assert_false(gp_has(xs[0].valid, GP_F_SM_ACTIVE));
    assert_near(xs[0].gpu_util, 0.75, 0);
    assert_true(xs[0].energy_mj == 123456789);
    free(xs);
    gp_job j;
    assert_int_equal(gp_store_get_job(s, "job-1", &j), 1);
    assert_true(j.submitted_ns == 100 && j.allocated_ns == 400);
    assert_true(j.ready_ns == 700); /* first progress = start of the first step */
    assert_string_equal(j.user, "alice");
    gp_alloc *al;
    assert_int_equal(gp_store_job_allocs(s, "job-1", &al, &n), 0);
    assert_int_equal(n, 1);
    assert_true(al[0].to_ns < 0);
    free(al);
    gp_event *evs;
    assert_int_equal(gp_store_job_events(s, "job-1", GP_EV_STEP, &evs, &n), 0);
    assert_int_equal(n, 2);
    assert_true(evs[1].step == 2 && evs[1].step_start_ns == 900 && evs[1].units == 64);
    free(evs);
    assert_int_equal(gp_store_get_job(s, "nope", &j), 0);
    gp_store_close(s);
    free(path);
    free(dir);
}

/* A row stored again under the same key replaces the stored one (the rows are first tried
 * as new, store.c), in the same transaction or a later one; a row the store refuses is an
 * error, not a replacement. */
static void test_same_key_replaces(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "r.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_sample x = {0};
    strcpy(x.uuid, "GPU-r");
    x.ts_ns = 5000;
    x.valid = GP_F_GPU_UTIL | GP_F_POWER;
    x.gpu_util = 0.25;
    x.power_w = 100;
    gp_proc_sample p = {0};
    strcpy(p.uuid, "GPU-r");
    p.ts_ns = 5000;
    p.pid = 42;
    p.valid = GP_P_SM_SHARE;
    p.sm_share = 0.5;
    strcpy(p.job_id, "j1");
    for (int tx = 0; tx < 2; tx++) {
        assert_int_equal(gp_store_begin(s), 0);
        assert_int_equal(gp_store_put_sample_row(s, &x), 0);
        assert_int_equal(gp_store_put_proc(s, &p), 0);
        x.gpu_util += 0.25; /* 0.5, then 0.75 */
        x.valid &= ~GP_F_POWER;
        p.sm_share += 0.25;
        strcpy(p.job_id, tx ? "j3" : "j2");
        assert_int_equal(gp_store_put_sample_row(s, &x), 0); /* same transaction */
        assert_int_equal(gp_store_put_proc(s, &p), 0);
        assert_int_equal(gp_store_commit(s), 0);
    }
    x.uuid[0] = '\0'; /* NULL uuid: refused */
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_store_put_sample_row(s, &x), -1);
    assert_int_equal(gp_store_commit(s), 0);
    gp_sample *xs;
    size_t n;
    assert_int_equal(gp_store_device_samples(s, "GPU-r", 0, 10000, &xs, &n), 0);
    assert_int_equal(n, 1);
    assert_near(xs[0].gpu_util, 0.75, 0);
    assert_false(gp_has(xs[0].valid, GP_F_POWER)); /* the whole row replaced */
    free(xs);
    gp_proc_sample *ps;
    assert_int_equal(gp_store_device_procs(s, "GPU-r", 0, 10000, &ps, &n), 0);
    assert_int_equal(n, 1);
    assert_near(ps[0].sm_share, 1.0, 0);
    assert_string_equal(ps[0].job_id, "j3");
    free(ps);
    gp_store_close(s);
    free(path);
    free(dir);
}

static void test_bad_files(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), err[256];
    gp_store *s;
    assert_true(gp_store_open(dir, 0, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, "directory"));
    char *junk = db_path(dir, "junk.db");
    FILE *f = fopen(junk, "w");
    fputs("this is not a database, just text that is long enough to have a header......\n", f);
    fclose(f);
    assert_true(gp_store_open(junk, 0, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, junk));
    char *missing = db_path(dir, "missing.db");
    assert_true(gp_store_open(missing, GP_STORE_READONLY, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, "no such file"));
    free(junk), free(missing), free(dir);
}

static void test_schema_version(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "v.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(gp_store_db(s), "PRAGMA user_version", -1, &q, NULL);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), gp_schema_latest());
    sqlite3_finalize(q);
    /* A store from a newer goodput is refused, not damaged. */
    sqlite3_exec(gp_store_db(s), "PRAGMA user_version=999", NULL, NULL, NULL);
    gp_store_close(s);
    assert_true(gp_store_open(path, 0, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, "newer"));
    free(path), free(dir);
}

/* The bytes of a file (a store after its writer closed: no -wal content). */
static char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)*n + 1);
    assert_int_equal(fread(b, 1, (size_t)*n, f), (size_t)*n);
    fclose(f);
    return b;
}

/* A read command never writes the store: an older store (a table and a column a later
 * migration added are missing) opens read-only without being migrated, its file stays
 * the same bytes and version, and readers see the missing table empty and the missing
 * column NULL; a store newer than this goodput is refused with a line that says so. */
static void test_old_store_read_as_is(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "old.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO findings(job_id, class, scope) VALUES ('j', 'c', 'job');"
             "ALTER TABLE findings DROP COLUMN counterfactual; DROP TABLE job_prefix;"
             "PRAGMA user_version = %d;",
             gp_schema_latest() - 1);
    assert_int_equal(sqlite3_exec(gp_store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
    gp_store_close(s);
    long n0, n1;
    char *before = slurp(path, &n0);
    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
    assert_int_equal(gp_test_sql_i64(gp_store_db(s), "SELECT count(*) FROM job_prefix"), 0);
    assert_int_equal(gp_test_sql_i64(gp_store_db(s), "SELECT count(*) FROM findings"
                                                     " WHERE counterfactual IS NULL"),
                     1);
    assert_int_equal(gp_test_sql_i64(gp_store_db(s), "PRAGMA main.user_version"),
                     gp_schema_latest() - 1);
    gp_store_close(s);
    char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, (size_t)n0);
    free(before), free(after);

    /* (a plain connection: a writable store open would migrate it first) */
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
    assert_int_equal(sqlite3_exec(raw, "PRAGMA user_version = 999", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    assert_true(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err) < 0);
    assert_non_null(strstr(err, "newer"));
    free(path), free(dir);
}

/* A child writes flushes in a loop; the parent kills it with SIGKILL at varying moments,
 * reopens, and checks integrity and that every committed flush is whole. */
static void test_crash_safety(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "c.db"), err[256];
    for (int round = 0; round < 8; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            gp_store *s;
            if (gp_store_open(path, 0, &s, err, sizeof err) != 0) _exit(2);
            for (int64_t flush = 0;; flush++) {
                gp_store_begin(s);
                for (int k = 0; k < 100; k++) {
                    gp_sample x = {0};
                    snprintf(x.uuid, sizeof x.uuid, "GPU-r%d", round);
                    x.ts_ns = flush * 100 + k;
                    x.valid = GP_F_GPU_UTIL;
                    x.gpu_util = 0.5;
                    gp_store_put_sample(s, &x);
                }
                gp_store_commit(s);
            }
        }
        usleep(20000 + round * 15000);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        gp_store *s;
        assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
        sqlite3_stmt *q;
        sqlite3_prepare_v2(gp_store_db(s), "PRAGMA integrity_check", -1, &q, NULL);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(q, 0), "ok");
        sqlite3_finalize(q);
        /* Flushes are atomic: each device's row count is a multiple of the flush size. */
        sqlite3_prepare_v2(gp_store_db(s), "SELECT uuid, count(*) FROM samples GROUP BY uuid", -1,
                           &q, NULL);
        while (sqlite3_step(q) == SQLITE_ROW)
            assert_int_equal(sqlite3_column_int(q, 1) % 100, 0);
        sqlite3_finalize(q);
        gp_store_close(s);
    }
    free(path), free(dir);
}

/* A read-only open keeps SQLite's page cache small (report's memory budget), and the lists
 * it reads, sized by a count first, hold every row in order: whole, by range, by kind. */
static void test_readonly_lists(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "r.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    assert_int_equal(gp_store_begin(s), 0);
    for (int i = 0; i < 700; i++) {
        gp_sample x = {0};
        strcpy(x.uuid, "GPU-r");
        x.ts_ns = 1000 + i;
        x.valid = GP_F_GPU_UTIL;
        x.gpu_util = i / 1000.0;
        assert_int_equal(gp_store_put_sample(s, &x), 0);
        gp_event e;
        gp_event_init(&e, i % 3 ? GP_EV_STEP : GP_EV_STAGE);
        strcpy(e.job_id, "job-r");
        e.step = i;
        e.ts_ns = 5000 + i;
        assert_int_equal(gp_store_put_event(s, &e), 0);
    }
    assert_int_equal(gp_store_commit(s), 0);
    gp_store_close(s);
    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &s, err, sizeof err), 0);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), "PRAGMA cache_size", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_true(sqlite3_column_int(q, 0) < 0 && sqlite3_column_int(q, 0) >= -512); /* KiB */
    sqlite3_finalize(q);
    gp_sample *x;
    size_t n;
    assert_int_equal(gp_store_device_samples(s, "GPU-r", 0, INT64_MAX, &x, &n), 0);
    assert_int_equal(n, 700);
    for (size_t i = 0; i < n; i++)
        assert_true(x[i].ts_ns == (int64_t)(1000 + i) && x[i].gpu_util == (double)i / 1000.0);
    free(x);
    assert_int_equal(gp_store_device_samples(s, "GPU-r", 1100, 1200, &x, &n), 0);
    assert_int_equal(n, 100);
    assert_true(x[0].ts_ns == 1100 && x[99].ts_ns == 1199);
    free(x);
    gp_event *ev;
    assert_int_equal(gp_store_job_events(s, "job-r", 0, &ev, &n), 0);
    assert_int_equal(n, 700);
    for (size_t i = 0; i < n; i++)
        assert_true(ev[i].ts_ns == (int64_t)(5000 + i) && ev[i].step == (int64_t)i);
    free(ev);
    assert_int_equal(gp_store_job_events(s, "job-r", GP_EV_STAGE, &ev, &n), 0);
    assert_int_equal(n, 234); /* i % 3 == 0 for i < 700 */
    free(ev);
    assert_int_equal(gp_store_job_events(s, "job-none", 0, &ev, &n), 0);
    assert_true(n == 0 && ev == NULL);
    gp_store_close(s);
    unlink(path);
    free(path);
    rmdir(dir);
    free(dir);
}

/* A WAL that grew past GP_STORE_WAL_LIMIT_BYTES (one large transaction here; a reader
 * holding an old snapshot in the agent) is cut back to the limit once SQLite starts it
 * over after a checkpoint, instead of keeping its largest size on disk while the store is
 * open. */
static void test_wal_cut_back(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "w.db"), *wal = db_path(dir, "w.db-wal"),
         err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    sqlite3 *db = gp_store_db(s);
    /* 80 MiB in one transaction: the WAL must hold it all. */
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE big(x); WITH RECURSIVE c(i) AS (SELECT 1 UNION "
                                  "ALL SELECT i + 1 FROM c WHERE i < 80) INSERT INTO big "
                                  "SELECT zeroblob(1048576) FROM c;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    struct stat sb;
    assert_int_equal(stat(wal, &sb), 0);
    assert_true(sb.st_size > 80LL << 20);
    /* Checkpoint, then small writes: the next one starts the WAL over and cuts it back. */
    assert_int_equal(sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL),
                     SQLITE_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(sqlite3_exec(db, "DELETE FROM big WHERE rowid = 1", NULL, NULL, NULL),
                         SQLITE_OK);
    assert_int_equal(stat(wal, &sb), 0);
    assert_true(sb.st_size <= GP_STORE_WAL_LIMIT_BYTES);
    gp_store_close(s);
    free(wal);
    gp_test_tmpdir_remove(dir);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_readonly_lists),
        cmocka_unit_test(test_bad_files),    cmocka_unit_test(test_schema_version),
        cmocka_unit_test(test_crash_safety), cmocka_unit_test(test_same_key_replaces),
        cmocka_unit_test(test_wal_cut_back), cmocka_unit_test(test_old_store_read_as_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
