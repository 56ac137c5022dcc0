/* test_checkpointer.c: store/checkpointer.h. Writes are watched below SQLite's unix VFS
 * (xSetSystemCall), with the thread that made each:
 * - A commit that leaves the WAL at GP_CKPT_PAGES or more hands its checkpoint off: every
 *   write into the database file comes from another thread than the writer's, and
 *   gp_ckpt_since_ns() is set when COMMIT returns, 0 again once the eventfd says it ended.
 *   Without the module (SQLite's own checkpoint) the writer's thread writes it: checked.
 * - A writer that begins nothing while the checkpoint runs gets the WAL started over at
 *   its next commit (a write at the WAL's offset 0) and the WAL file stays one cycle long.
 * - Stopping with a checkpoint running waits for it; the close then removes the WAL and
 *   every committed row is there.
 * - The thread blocks SIGTERM and SIGINT, so they reach the writer's thread.
 * - Through the store (gp_store_offload_checkpoints): the same hand-off and its stats. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "store/checkpointer.h"
#include "store/store.h"

GP_TEST_TMPDIR_GROUP(tmp)

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
static pwrite_fn real_pwrite64, real_pwrite;
static pid_t writer_tid;
static struct {
    pthread_mutex_t mu;
    long db_writes_writer, db_writes_other; /* writes into the database file, by thread */
    long wal_restarts;                      /* writes at the WAL's offset 0 */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int fd_ends_with(int fd, const char *suffix) {
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    size_t k = strlen(suffix);
    if (n < (ssize_t)k) return 0;
    target[n] = 0;
    return strcmp(target + n - k, suffix) == 0;
}

static void seen(int fd, off_t off) {
    pid_t tid = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&g.mu);
    if (fd_ends_with(fd, "/ck.db")) {
        if (tid == writer_tid)
            g.db_writes_writer++;
        else
            g.db_writes_other++;
    } else if (fd_ends_with(fd, "-wal") && off == 0) {
        g.wal_restarts++;
    }
    pthread_mutex_unlock(&g.mu);
}
static ssize_t count_pwrite64(int fd, const void *b, size_t n, off_t off) {
    seen(fd, off);
    return real_pwrite64(fd, b, n, off);
}
static ssize_t count_pwrite(int fd, const void *b, size_t n, off_t off) {
    seen(fd, off);
    return real_pwrite(fd, b, n, off);
}

static int hook(void **state) {
    (void)state;
    sqlite3_vfs *u = sqlite3_vfs_find("unix");
    assert_non_null(u);
    real_pwrite64 = (pwrite_fn)u->xGetSystemCall(u, "pwrite64");
    real_pwrite = (pwrite_fn)u->xGetSystemCall(u, "pwrite");
    if (real_pwrite64) u->xSetSystemCall(u, "pwrite64", (sqlite3_syscall_ptr)count_pwrite64);
    if (real_pwrite) u->xSetSystemCall(u, "pwrite", (sqlite3_syscall_ptr)count_pwrite);
    writer_tid = (pid_t)syscall(SYS_gettid);
    g.db_writes_writer = g.db_writes_other = g.wal_restarts = 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/ck.db", tmp);
    unlink(path);
    strcat(path, "-wal");
    unlink(path);
    return 0;
}

static int unhook(void **state) {
    (void)state;
    sqlite3_vfs *u = sqlite3_vfs_find("unix");
    u->xSetSystemCall(u, NULL, NULL); /* every call back to its default */
    return 0;
}

static void db_path(char *out, size_t n, const char *suffix) {
    snprintf(out, n, "%s/ck.db%s", tmp, suffix);
}

static sqlite3 *open_wal_db(void) {
    char path[1024];
    db_path(path, sizeof path, "");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                                  "CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v BLOB)",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    g.db_writes_writer = g.db_writes_other = 0; /* what making the file wrote */
    return db;
}

/* A WAL database at ck.db with the checkpointer started on it; path gets its name. */
static gp_ckpt *start_on_wal_db(sqlite3 **db, char *path, size_t n) {
    *db = open_wal_db();
    char err[256] = "";
    db_path(path, n, "");
    gp_ckpt *c = gp_ckpt_start(*db, path, NULL, err, sizeof err);
    assert_non_null(c);
    return c;
}

/* What sql counts in the database at path, read by a connection of its own. */
static void assert_count(const char *path, const char *sql, int64_t want) {
    sqlite3 *r;
    assert_int_equal(sqlite3_open(path, &r), SQLITE_OK);
    assert_int_equal(gp_test_sql_i64(r, sql), want);
    sqlite3_close(r);
}

/* One transaction of n rows of ~1 page each, keys from *k on. */
static void write_pages(sqlite3 *db, int n, int *k) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(
        sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1, zeroblob(3900))", -1, &st, NULL),
        SQLITE_OK);
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int(st, 1, (*k)++);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
}

/* Waits for the running checkpoint's end, as the agent's loop does (at most 10 s). */
static void wait_end(gp_ckpt *c) {
    for (int i = 0; i < 100 && !gp_ckpt_wait(c, 100); i++)
        ;
    assert_int_equal(gp_ckpt_since_ns(c), 0);
    assert_int_equal(gp_ckpt_wait(c, 0), 1); /* none runs: no wait */
}

static int64_t file_bytes(const char *suffix) {
    char path[1024];
    db_path(path, sizeof path, suffix);
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static void test_commit_hands_checkpoint_off(void **state) {
    (void)state;
    sqlite3 *db;
    char path[1024];
    gp_ckpt *c = start_on_wal_db(&db, path, sizeof path);
    int k = 0;
    write_pages(db, GP_CKPT_PAGES / 2, &k); /* under the threshold: nothing handed off */
    assert_int_equal(gp_ckpt_since_ns(c), 0);
    write_pages(db, GP_CKPT_PAGES / 2 + 50, &k);
    assert_true(gp_ckpt_since_ns(c) > 0); /* set before COMMIT returned */
    wait_end(c);
    gp_ckpt_stats s = gp_ckpt_get_stats(c);
    assert_int_equal(s.passes, 1);
    assert_int_equal(s.complete, 1);
    assert_true(s.wall_s > 0 && s.wall_max_s >= s.wall_s - 1e-9);
    assert_true(g.db_writes_other > 0);      /* the pages went back... */
    assert_int_equal(g.db_writes_writer, 0); /* ...not on the writer's thread */
    gp_ckpt_stop(c);
    sqlite3_close(db);
}

/* The control: SQLite's own checkpoint, in the commit, writes on the writer's thread (the
 * test above would see it). */
static void test_without_it_the_writer_checkpoints(void **state) {
    (void)state;
    sqlite3 *db = open_wal_db();
    int k = 0;
    write_pages(db, GP_CKPT_PAGES + 50, &k);
    assert_true(g.db_writes_writer > 0);
    assert_int_equal(g.db_writes_other, 0);
    sqlite3_close(db);
}

static void test_wal_starts_over(void **state) {
    (void)state;
    sqlite3 *db;
    char path[1024];
    gp_ckpt *c = start_on_wal_db(&db, path, sizeof path);
    int k = 0;
    const int cycles = 5, pages = GP_CKPT_PAGES + 100;
    int64_t wal_max = 0;
    long restarts0 = g.wal_restarts;
    for (int i = 0; i < cycles; i++) {
        write_pages(db, pages, &k);
        int64_t w = file_bytes("-wal");
        if (w > wal_max) wal_max = w;
        wait_end(c); /* the writer begins nothing meanwhile */
    }
    /* Every commit after the first starts the WAL over (one header write each). */
    assert_true(g.wal_restarts - restarts0 >= cycles - 1);
    /* One cycle's pages (+ the b-tree's interior pages and frame headers): not five. */
    assert_true(wal_max < (int64_t)(pages * 2) * 4096);
    gp_ckpt_stats s = gp_ckpt_get_stats(c);
    assert_int_equal(s.passes, cycles);
    assert_int_equal(s.complete, cycles);
    gp_ckpt_stop(c);
    sqlite3_close(db);
    assert_count(path, "SELECT count(*) FROM t", cycles * pages);
}

static void test_stop_while_running(void **state) {
    (void)state;
    sqlite3 *db;
    char path[1024];
    gp_ckpt *c = start_on_wal_db(&db, path, sizeof path);
    int k = 0;
    write_pages(db, GP_CKPT_PAGES + 500, &k);
    gp_ckpt_stop(c);         /* waits for the checkpoint it was handed */
    write_pages(db, 10, &k); /* the writer's own checkpoint is back: still writes */
    sqlite3_close(db);
    assert_int_equal(file_bytes("-wal"), -1); /* the last close removed it */
    assert_count(path, "SELECT count(*) FROM t", k);
}

/* SigBlk of every thread of the process but the caller's, as /proc shows it. */
static int other_threads_block(int sig) {
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    struct dirent *e;
    int others = 0, blocking = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == writer_tid) continue;
        char p[300], line[256];
        snprintf(p, sizeof p, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "SigBlk:", 7)) {
                unsigned long long m = strtoull(line + 7, NULL, 16);
                others++;
                blocking += (int)((m >> (sig - 1)) & 1);
            }
        fclose(f);
    }
    closedir(d);
    return others > 0 && blocking == others;
}

static void test_thread_blocks_signals(void **state) {
    (void)state;
    sqlite3 *db;
    char path[1024];
    gp_ckpt *c = start_on_wal_db(&db, path, sizeof path);
    assert_true(other_threads_block(SIGTERM));
    assert_true(other_threads_block(SIGINT));
    sigset_t mine;
    pthread_sigmask(SIG_SETMASK, NULL, &mine);
    assert_false(sigismember(&mine, SIGTERM)); /* the caller's mask is left as it was */
    gp_ckpt_stop(c);
    sqlite3_close(db);
}

static void test_through_the_store(void **state) {
    (void)state;
    char path[1024], err[256] = "";
    db_path(path, sizeof path, "");
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_ckpt_stats none = gp_store_checkpoint_stats(s);
    assert_int_equal(none.passes, 0);
    assert_int_equal(gp_store_checkpoint_wait(s, 0), 1); /* not offloaded: none runs */
    assert_int_equal(gp_store_offload_checkpoints(s, err, sizeof err), 0);
    g.db_writes_writer = 0; /* what opening and migrating the store wrote */
    /* Events until a commit hands a checkpoint off (a few thousand pages of them). */
    int64_t k = 0;
    while (!gp_store_checkpoint_since_ns(s) && k < 400000) {
        assert_int_equal(gp_store_begin(s), 0);
        for (int i = 0; i < 2000; i++, k++) {
            gp_event e = gp_test_step_event("ck", k, 1, 1000000000LL + k * 1000);
            assert_int_equal(gp_store_put_event(s, &e), 0);
        }
        assert_int_equal(gp_store_commit(s), 0);
    }
    assert_true(gp_store_checkpoint_since_ns(s) > 0);
    assert_int_equal(g.db_writes_writer, 0);
    gp_store_close(s); /* with it running */
    assert_int_equal(file_bytes("-wal"), -1);
    assert_count(path, "SELECT count(*) FROM events WHERE job_id = 'ck'", k);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_hands_checkpoint_off, hook, unhook),
        cmocka_unit_test_setup_teardown(test_without_it_the_writer_checkpoints, hook, unhook),
        cmocka_unit_test_setup_teardown(test_wal_starts_over, hook, unhook),
        cmocka_unit_test_setup_teardown(test_stop_while_running, hook, unhook),
        cmocka_unit_test_setup_teardown(test_thread_blocks_signals, hook, unhook),
        cmocka_unit_test_setup_teardown(test_through_the_store, hook, unhook),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
