/* test_store_hostile.c: the store under unlucky conditions. The same event delivered twice
 * is stored once and counted; one agent per store (the lock names its holder); a store in
 * a directory we may not write is still read; a write past a file-size limit is reported
 * (not a SIGXFSZ death) and what was committed before survives. */
#include "testutil.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "store/agent_lock.h"
#include "store/store.h"

static char *db_path(const char *dir, const char *name) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

static int64_t count(gp_store *s, const char *sql) {
    return gp_test_sql_i64(gp_store_db(s), sql);
}

static gp_event step(const char *job, int64_t k) {
    return gp_test_step_event(job, k, 8, 1000000000LL * (100 + k));
}

static void test_dedup(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "d.db"), err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_store_begin(s);
    for (int pass = 0; pass < 2; pass++) /* a replay of the same 50 steps */
        for (int k = 0; k < 50; k++) {
            gp_event e = step("j", k);
            assert_int_equal(gp_store_put_event(s, &e), pass); /* 0 stored, 1 duplicate */
        }
    /* the same step of another job is another event */
    gp_event o = step("other", 0);
    assert_int_equal(gp_store_put_event(s, &o), 0);
    /* with sequence numbers: a resend of seq 7 is a duplicate even if re-stamped fields
     * differ; seq 8 with the same content is a new event */
    gp_event q = step("q", 1);
    q.seq = 7;
    assert_int_equal(gp_store_put_event(s, &q), 0);
    q.units = 9;
    assert_int_equal(gp_store_put_event(s, &q), 1);
    q.seq = 8;
    assert_int_equal(gp_store_put_event(s, &q), 0);
    gp_store_commit(s);
    assert_int_equal(count(s, "SELECT count(*) FROM events"), 53);
    assert_int_equal(gp_store_duplicates(s), 51);
    gp_store_close(s);
    /* a restarted writer still sees what is stored: no double counting across restarts */
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_event e = step("j", 3);
    assert_int_equal(gp_store_put_event(s, &e), 1);
    assert_int_equal(count(s, "SELECT count(*) FROM events"), 53);
    gp_store_close(s);
    free(path), free(dir);
}

static void test_agent_lock(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "l.db"), err[512];
    int fd = gp_agent_lock(path, err, sizeof err);
    assert_true(fd >= 0);
    /* flock locks belong to open files, so a second lock in this process conflicts too */
    assert_int_equal(gp_agent_lock(path, err, sizeof err), GP_LOCK_BUSY);
    char pid[64];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    if (!strstr(err, pid)) fail_msg("'%s' does not name %s", err, pid);
    assert_non_null(strstr(err, "in use by another goodput agent"));
    gp_agent_unlock(fd);
    /* released: the next agent gets it, even though the file is still there */
    fd = gp_agent_lock(path, err, sizeof err);
    assert_true(fd >= 0);
    gp_agent_unlock(fd);
    /* a holder killed with -9 leaves the file but not the lock */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        if (gp_agent_lock(path, err, sizeof err) < 0) _exit(2);
        if (write(pfd[1], "L", 1) != 1) _exit(3);
        pause();
        _exit(0);
    }
    char c;
    assert_int_equal(read(pfd[0], &c, 1), 1); /* the child holds it now */
    close(pfd[0]), close(pfd[1]);
    assert_int_equal(gp_agent_lock(path, err, sizeof err), GP_LOCK_BUSY);
    snprintf(pid, sizeof pid, "pid %ld", (long)child);
    if (!strstr(err, pid)) fail_msg("'%s' does not name %s", err, pid);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    fd = gp_agent_lock(path, err, sizeof err);
    assert_true(fd >= 0);
    gp_agent_unlock(fd);
    free(path), free(dir);
}

/* Reading a store whose directory we may not write (a read-only mount, another user's
 * directory): the reader must not need a -shm or -wal beside it. Run as an unprivileged
 * user in a child when we are root, since root may write any directory. */
static void test_readonly_dir(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "r.db"), err[512];
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_store_begin(s);
    for (int k = 0; k < 10; k++) {
        gp_event e = step("j", k);
        assert_int_equal(gp_store_put_event(s, &e), 0);
    }
    gp_store_commit(s);
    gp_store_close(s); /* the last close checkpoints and removes -wal and -shm */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chmod(dir, 0555), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
        if (access(dir, W_OK) == 0) _exit(11); /* the premise of the test */
        gp_store *r;
        if (gp_store_open(path, GP_STORE_READONLY, &r, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            _exit(12);
        }
        gp_event *ev;
        size_t n;
        int rc = gp_store_job_events(r, "j", 0, &ev, &n);
        free(ev);
        gp_store_close(r);
        _exit(rc == 0 && n == 10 ? 0 : 13);
    }
    int status;
    waitpid(child, &status, 0);
    chmod(dir, 0700);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* and nothing was created beside it */
    char *shm = db_path(dir, "r.db-shm");
    struct stat sb;
    assert_int_not_equal(stat(shm, &sb), 0);
    free(shm), free(path), free(dir);
}

/* A writer over a file-size limit with SIGXFSZ ignored: the failing commit is reported as
 * such and the store keeps every earlier commit. */
static void test_file_size_limit(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), *path = db_path(dir, "f.db"), err[512];
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(pfd[0]);
        signal(SIGXFSZ, SIG_IGN);
        gp_store *s;
        if (gp_store_open(path, 0, &s, err, sizeof err) != 0) _exit(2);
        struct rlimit rl = {2 << 20, 2 << 20}; /* 2 MiB per file */
        setrlimit(RLIMIT_FSIZE, &rl);
        int64_t flushes = 0;
        for (int64_t f = 0; f < 100000; f++) {
            gp_store_begin(s);
            for (int k = 0; k < 200; k++) {
                gp_event e = step("j", f * 200 + k);
                gp_store_put_event(s, &e);
            }
            if (gp_store_commit(s) != 0 || gp_store_failed(s, err, sizeof err)) break;
            flushes++;
        }
        int failed = gp_store_failed(s, err, sizeof err);
        dprintf(pfd[1], "%lld\n%s\n", (long long)flushes, failed ? err : "(no failure)");
        gp_store_close(s);
        _exit(failed ? 3 : 4);
    }
    close(pfd[1]);
    char out[1024] = "";
    FILE *f = fdopen(pfd[0], "r");
    size_t got = fread(out, 1, sizeof out - 1, f);
    out[got] = 0;
    fclose(f);
    int status;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status)) fail_msg("writer died by signal %d", WTERMSIG(status));
    assert_int_equal(WEXITSTATUS(status), 3);
    long long flushes = atoll(out);
    assert_true(flushes > 0);
    if (!strstr(out, "File too large") || !strstr(out, "ulimit -f"))
        fail_msg("unclear message: %s", out);
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(gp_store_db(s), "PRAGMA integrity_check", -1, &q, NULL);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "ok");
    sqlite3_finalize(q);
    /* every flush that reported success is there, whole */
    assert_int_equal(count(s, "SELECT count(*) FROM events"), flushes * 200);
    gp_store_close(s);
    free(path), free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dedup),
        cmocka_unit_test(test_agent_lock),
        cmocka_unit_test(test_readonly_dir),
        cmocka_unit_test(test_file_size_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
