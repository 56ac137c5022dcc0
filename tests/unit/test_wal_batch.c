/* test_wal_batch.c: the WAL VFS of store/wal_batch.h. The writes that reach the WAL file are
 * counted (and made to fail) below SQLite's unix VFS, through its system-call table
 * (xSetSystemCall: pwrite64/pwrite/write).
 * - A commit of many pages reaches the WAL with one write; without the VFS
 *   (GOODPUT_NO_WAL_BATCH=1) it is two per page and the test fails. Also through
 *   gp_store_open, the agent's path.
 * - What a connection commits with it is on disk when COMMIT returns: another connection
 *   of the process and a forked process read every commit's rows at once, through
 *   checkpoints (run by the writer and by the reader), WAL restarts, and transactions that
 *   spill pages to the WAL and change them again (rewritten in place).
 * - A write that fails fails the commit (injected EIO; a file-size limit in a child), and
 *   the store stays whole.
 * - gp_wal_batch_reserve extends the WAL with zeros and nothing else: the frames before
 *   are byte for byte the same, later commits write inside the reserved size, and a copy
 *   of the files as a crash leaves them (no shared memory) recovers every committed row.
 *   The store reserves the size its checkpointer cycles through; under a file-size limit
 *   below it, the reserve stops at the limit and the store commits as without it. */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "store/store.h"
#include "store/wal_batch.h"

GP_TEST_TMPDIR_GROUP(tmp)

/* ---- counting below the unix VFS ---- */

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
static pwrite_fn real_pwrite64, real_pwrite;
static write_fn real_write;
static struct {
    long wal_writes;     /* writes that reached a -wal file */
    long wal_hdr_writes; /* of them, at offset 0: a new WAL (a restart) */
    int fail_wal;        /* nonzero: writes to a -wal file fail with this errno */
} g;

static int is_wal_fd(int fd) {
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 4) return 0;
    target[n] = 0;
    return strcmp(target + n - 4, "-wal") == 0;
}

static int wal_write_seen(int fd, off_t off) {
    if (!is_wal_fd(fd)) return 0;
    if (g.fail_wal) {
        errno = g.fail_wal;
        return -1;
    }
    g.wal_writes++;
    if (off == 0) g.wal_hdr_writes++;
    return 0;
}

static ssize_t count_pwrite64(int fd, const void *b, size_t n, off_t off) {
    return wal_write_seen(fd, off) ? -1 : real_pwrite64(fd, b, n, off);
}
static ssize_t count_pwrite(int fd, const void *b, size_t n, off_t off) {
    return wal_write_seen(fd, off) ? -1 : real_pwrite(fd, b, n, off);
}
static ssize_t count_write(int fd, const void *b, size_t n) {
    return wal_write_seen(fd, -1) ? -1 : real_write(fd, b, n);
}

static int hook(void **state) {
    (void)state;
    sqlite3_vfs *u = sqlite3_vfs_find("unix");
    assert_non_null(u);
    real_pwrite64 = (pwrite_fn)u->xGetSystemCall(u, "pwrite64");
    real_pwrite = (pwrite_fn)u->xGetSystemCall(u, "pwrite");
    real_write = (write_fn)u->xGetSystemCall(u, "write");
    if (real_pwrite64) u->xSetSystemCall(u, "pwrite64", (sqlite3_syscall_ptr)count_pwrite64);
    if (real_pwrite) u->xSetSystemCall(u, "pwrite", (sqlite3_syscall_ptr)count_pwrite);
    if (real_write) u->xSetSystemCall(u, "write", (sqlite3_syscall_ptr)count_write);
    memset(&g, 0, sizeof g);
    return 0;
}

static int unhook(void **state) {
    (void)state;
    sqlite3_vfs *u = sqlite3_vfs_find("unix");
    u->xSetSystemCall(u, NULL, NULL); /* every call back to its default */
    return 0;
}

/* ---- helpers ---- */

static void exec_ok(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) fail_msg("%s: %s", sql, msg ? msg : sqlite3_errstr(rc));
}

static sqlite3 *open_db(const char *path, const char *vfs) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
    assert_int_equal(rc, SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    exec_ok(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL");
    return db;
}

static void db_path(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", tmp, name);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -f '%s' '%s-wal' '%s-shm'", out, out, out);
    assert_int_equal(system(cmd), 0);
}

static long long file_bytes(const char *path, const char *suffix) {
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return stat(p, &sb) == 0 ? (long long)sb.st_size : 0;
}

/* Inserts n rows k0.. of blob_bytes each (their bytes from k) in one transaction. */
static int insert_rows(sqlite3 *db, int k0, int n, int blob_bytes) {
    static unsigned char blob[4096];
    sqlite3_stmt *st;
    int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t(k, v) VALUES (?, ?)", -1, &st, NULL),
                     SQLITE_OK);
    for (int i = 0; i < n && rc == SQLITE_OK; i++) {
        for (int b = 0; b < blob_bytes; b++)
            blob[b] = (unsigned char)((k0 + i) * 31 + b);
        sqlite3_bind_int(st, 1, k0 + i);
        sqlite3_bind_blob(st, 2, blob, blob_bytes, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return rc;
    }
    return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
}

/* Row count, sum of keys and a checksum of the bytes of every blob with key >= kmin:
 * "n s c". */
static void digest_from(sqlite3 *db, int kmin, char *out, size_t cap) {
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT k, v FROM t WHERE k >= ? ORDER BY k", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_int(st, 1, kmin);
    long long n = 0, sum = 0;
    unsigned long long c = 1469598103934665603ULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        n++;
        sum += sqlite3_column_int64(st, 0);
        const unsigned char *v = sqlite3_column_blob(st, 1);
        for (int i = 0; i < sqlite3_column_bytes(st, 1); i++)
            c = (c ^ v[i]) * 1099511628211ULL;
    }
    if (rc != SQLITE_DONE) fail_msg("reading t: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    snprintf(out, cap, "%lld %lld %llx", n, sum, c);
}

static void digest(sqlite3 *db, char *out, size_t cap) {
    digest_from(db, 0, out, cap);
}

/* ---- one write per commit ---- */

static void test_one_write_per_commit(void **state) {
    (void)state;
    char path[4096];
    db_path(path, sizeof path, "count.db");
    sqlite3 *db = open_db(path, gp_wal_batch_vfs());
    exec_ok(db, "PRAGMA wal_autocheckpoint=0; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    for (int c = 0; c < 20; c++) {
        long w0 = g.wal_writes;
        long long b0 = file_bytes(path, "-wal");
        assert_int_equal(insert_rows(db, c * 100, 100, 300), SQLITE_OK); /* ~30 KB: ~8 pages */
        long frames = (long)((file_bytes(path, "-wal") - b0) / (4096 + 24));
        assert_true(frames >= 8);
        if (g.wal_writes - w0 != 1)
            fail_msg("commit %d: %ld writes to the WAL for %ld frames, expected 1", c,
                     g.wal_writes - w0, frames);
    }
    /* A commit past the buffer (124 KiB) takes a write per buffer, not two per page. */
    long w0 = g.wal_writes;
    long long b0 = file_bytes(path, "-wal");
    assert_int_equal(insert_rows(db, 10000, 1000, 1000), SQLITE_OK); /* ~1 MB */
    long frames = (long)((file_bytes(path, "-wal") - b0) / (4096 + 24));
    assert_true(frames >= 250);
    if (g.wal_writes - w0 > frames / 25)
        fail_msg("a commit of %ld frames took %ld writes", frames, g.wal_writes - w0);
    sqlite3_close(db);
}

/* The agent's own path: a store opened to write, a flush of samples in one transaction. */
static void test_store_commit_one_write(void **state) {
    (void)state;
    char path[4096], err[256];
    db_path(path, sizeof path, "store.db");
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    for (int c = 0; c < 5; c++) {
        enum { N = 8 * 30 }; /* 30 s of 8 GPUs */
        gp_sample *xs = calloc(N, sizeof *xs);
        assert_non_null(xs);
        for (int i = 0; i < N; i++) {
            snprintf(xs[i].uuid, sizeof xs[i].uuid, "GPU-%d", i % 8);
            xs[i].ts_ns = (1700000000LL + c * 30 + i / 8) * 1000000000LL;
            gp_set_d(&xs[i], GP_F_GPU_UTIL, &xs[i].gpu_util, 0.5);
            gp_set_d(&xs[i], GP_F_POWER, &xs[i].power_w, 300.0 + i);
        }
        long w0 = g.wal_writes;
        long long b0 = file_bytes(path, "-wal");
        assert_int_equal(gp_store_begin(s), 0);
        assert_int_equal(gp_store_put_samples(s, xs, N), 0);
        if (gp_store_commit(s) != 0) fail_msg("commit: %s", sqlite3_errmsg(gp_store_db(s)));
        free(xs);
        long frames = (long)((file_bytes(path, "-wal") - b0) / (4096 + 24));
        assert_true(frames >= 4);
        if (g.wal_writes - w0 != 1)
            fail_msg("store commit %d: %ld writes to the WAL for %ld frames, expected 1", c,
                     g.wal_writes - w0, frames);
    }
    gp_store_close(s);
}

/* ---- what is committed is on disk ---- */

/* A process forked before the writer opens: reads the table when asked, answers its digest. */
static pid_t reader_child(const char *path, int *to, int *from) {
    int down[2], up[2];
    assert_int_equal(pipe(down), 0);
    assert_int_equal(pipe(up), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        sqlite3 *db = NULL;
        char c, d[128];
        while (read(down[0], &c, 1) == 1) {
            if (!db && sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
                _exit(2);
            sqlite3_busy_timeout(db, 5000);
            digest(db, d, sizeof d);
            if (write(up[1], d, sizeof d) != (ssize_t)sizeof d) _exit(3);
        }
        sqlite3_close(db);
        _exit(0);
    }
    close(down[0]);
    close(up[1]);
    *to = down[1];
    *from = up[0];
    return pid;
}

static void test_commits_visible_at_once(void **state) {
    (void)state;
    char path[4096];
    db_path(path, sizeof path, "vis.db");
    {
        sqlite3 *db = open_db(path, NULL);
        exec_ok(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
        sqlite3_close(db);
    }
    int to, from;
    pid_t child = reader_child(path, &to, &from);
    sqlite3 *a = open_db(path, gp_wal_batch_vfs());
    /* Checkpoints and restarts often; a cache of 8 pages spills large transactions. */
    exec_ok(a, "PRAGMA wal_autocheckpoint=16; PRAGMA cache_size=8");
    sqlite3 *b = open_db(path, NULL);
    exec_ok(b, "PRAGMA wal_autocheckpoint=0");
    long hdr0 = g.wal_hdr_writes;
    int k = 0;
    for (int c = 0; c < 300; c++) {
        int n = 1 + (c * 7) % 40, bytes = 100 + (c * 131) % 1500;
        assert_int_equal(insert_rows(a, k, n, bytes), SQLITE_OK);
        k += n;
        if (c % 30 == 29) { /* pages spilled, then changed again in the transaction */
            char sql[256];
            snprintf(sql, sizeof sql,
                     "BEGIN; UPDATE t SET v = zeroblob(length(v)) WHERE k %% 5 = %d; "
                     "UPDATE t SET v = v || x'01' WHERE k %% 5 = %d; COMMIT",
                     c % 5, c % 5);
            exec_ok(a, sql);
        }
        /* Every commit: its rows; every 10th and after the rewrites: the whole table. */
        int whole = c % 10 == 0 || c % 30 == 29;
        char da[128], dbb[128];
        digest_from(a, whole ? 0 : k - n, da, sizeof da);
        digest_from(b, whole ? 0 : k - n, dbb, sizeof dbb);
        if (strcmp(da, dbb) != 0) fail_msg("commit %d: writer %s, reader %s", c, da, dbb);
        if (c % 10 == 0) {
            char dc[128];
            assert_int_equal(write(to, "r", 1), 1);
            assert_int_equal(read(from, dc, sizeof dc), (ssize_t)sizeof dc);
            if (strcmp(da, dc) != 0) fail_msg("commit %d: writer %s, other process %s", c, da, dc);
        }
        /* The reader checkpoints too, from what it finds in the file. */
        if (c % 25 == 24)
            exec_ok(b, c % 50 == 49 ? "PRAGMA wal_checkpoint(TRUNCATE)"
                                    : "PRAGMA wal_checkpoint(PASSIVE)");
    }
    assert_true(g.wal_hdr_writes - hdr0 >= 5); /* the WAL restarted, more than once */
    assert_int_equal(gp_test_sql_i64(b, "SELECT count(*) FROM t"), k);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(b, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    close(to);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(from);
    sqlite3_close(b);
    sqlite3_close(a);
}

/* ---- a write that fails fails the commit ---- */

static void test_write_error_fails_commit(void **state) {
    (void)state;
    char path[4096], before[128], after[128];
    db_path(path, sizeof path, "err.db");
    sqlite3 *a = open_db(path, gp_wal_batch_vfs());
    sqlite3 *b = open_db(path, NULL);
    exec_ok(a, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    assert_int_equal(insert_rows(a, 0, 50, 500), SQLITE_OK);
    digest(b, before, sizeof before);
    for (int errno_v = EIO; errno_v; errno_v = errno_v == EIO ? ENOSPC : 0) {
        g.fail_wal = errno_v;
        int rc = insert_rows(a, 1000, 50, 500);
        g.fail_wal = 0;
        if (rc == SQLITE_OK) fail_msg("a commit whose writes failed (errno %d) succeeded", errno_v);
        if (!sqlite3_get_autocommit(a)) exec_ok(a, "ROLLBACK");
        digest(b, after, sizeof after);
        assert_string_equal(before, after); /* nothing of it is visible */
        digest(a, after, sizeof after);
        assert_string_equal(before, after);
    }
    /* The connection goes on. */
    assert_int_equal(insert_rows(a, 1000, 50, 500), SQLITE_OK);
    assert_int_equal(gp_test_sql_i64(b, "SELECT count(*) FROM t"), 100);
    sqlite3_close(b);
    sqlite3_close(a);
}

/* The same with a real failing write(): a file-size limit (EFBIG) in a child process. */
static void test_file_size_limit_fails_commit(void **state) {
    (void)state;
    char path[4096], before[128], after[128];
    db_path(path, sizeof path, "fsize.db");
    sqlite3 *b = open_db(path, NULL);
    exec_ok(b, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    assert_int_equal(insert_rows(b, 0, 20, 500), SQLITE_OK);
    exec_ok(b, "PRAGMA wal_checkpoint(TRUNCATE)");
    assert_true(file_bytes(path, "") < 48 * 1024);
    digest(b, before, sizeof before);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(2);
        sqlite3 *a = NULL;
        if (sqlite3_open_v2(path, &a, SQLITE_OPEN_READWRITE, gp_wal_batch_vfs()) != SQLITE_OK)
            _exit(3);
        sqlite3_exec(a, "PRAGMA wal_autocheckpoint=0", NULL, NULL, NULL);
        int rc = insert_rows(a, 1000, 100, 2000); /* ~200 KB: past the limit */
        sqlite3_close(a);
        _exit(rc == SQLITE_OK ? 1 : 0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 1) fail_msg("a commit past RLIMIT_FSIZE succeeded");
    assert_int_equal(WEXITSTATUS(status), 0);
    digest(b, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(insert_rows(b, 1000, 10, 500), SQLITE_OK);
    assert_int_equal(gp_test_sql_i64(b, "SELECT count(*) FROM t"), 30);
    sqlite3_close(b);
}

/* ---- the WAL reserved ---- */

/* The file's bytes (at most cap), or -1. */
static long read_file(const char *path, unsigned char *buf, long cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, (size_t)cap, f);
    fclose(f);
    return n;
}

static void copy_file(const char *from, const char *to) {
    char cmd[8800];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    assert_int_equal(system(cmd), 0);
}

static void test_reserve(void **state) {
    (void)state;
    enum { RESERVE = 2 << 20 };
    char path[4096], wal[4200];
    db_path(path, sizeof path, "reserve.db");
    snprintf(wal, sizeof wal, "%s-wal", path);
    sqlite3 *db = open_db(path, gp_wal_batch_vfs());
    exec_ok(db, "PRAGMA wal_autocheckpoint=0; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
    assert_int_equal(insert_rows(db, 0, 100, 300), SQLITE_OK);
    long long s0 = file_bytes(path, "-wal");
    assert_true(s0 > 0 && s0 < RESERVE);
    unsigned char *before = malloc(RESERVE), *after = malloc(RESERVE + 1);
    assert_non_null(before);
    assert_non_null(after);
    assert_int_equal(read_file(wal, before, RESERVE), s0);

    /* Zeros after the frames, the frames untouched. */
    exec_ok(db, "BEGIN IMMEDIATE");
    assert_int_equal(gp_wal_batch_reserve(db, RESERVE), 0);
    exec_ok(db, "COMMIT");
    assert_int_equal(read_file(wal, after, RESERVE + 1), RESERVE);
    assert_memory_equal(before, after, (size_t)s0);
    for (long i = (long)s0; i < RESERVE; i++)
        if (after[i]) fail_msg("byte %ld of the reserve is %d, not 0", i, after[i]);
    /* Asking for less than the file has changes nothing. */
    exec_ok(db, "BEGIN IMMEDIATE");
    assert_int_equal(gp_wal_batch_reserve(db, s0 / 2), 0);
    exec_ok(db, "COMMIT");
    assert_int_equal(file_bytes(path, "-wal"), RESERVE);

    /* Later commits write inside the reserve: the file does not grow. */
    for (int c = 1; c <= 20; c++)
        assert_int_equal(insert_rows(db, c * 100, 100, 300), SQLITE_OK);
    assert_int_equal(file_bytes(path, "-wal"), RESERVE);

    /* A crash: the database and its WAL as they are, no shared memory. Recovery reads the
     * frames and stops at the zeros. */
    char crash[4200], crash_wal[4300], d_live[128], d_crash[128];
    snprintf(crash, sizeof crash, "%s/reserve-crash.db", tmp);
    snprintf(crash_wal, sizeof crash_wal, "%s-wal", crash);
    copy_file(path, crash);
    copy_file(wal, crash_wal);
    digest(db, d_live, sizeof d_live);
    sqlite3 *r = open_db(crash, NULL);
    digest(r, d_crash, sizeof d_crash);
    assert_string_equal(d_live, d_crash);
    assert_int_equal(gp_test_sql_i64(r, "SELECT count(*) FROM t"), 2100);
    sqlite3_close(r);
    sqlite3_close(db);

    /* Without this VFS there is no reserve. */
    db_path(path, sizeof path, "reserve-plain.db");
    db = open_db(path, NULL);
    exec_ok(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); BEGIN IMMEDIATE");
    assert_int_equal(gp_wal_batch_reserve(db, RESERVE), -1);
    exec_ok(db, "COMMIT");
    assert_true(file_bytes(path, "-wal") < RESERVE);
    sqlite3_close(db);
    free(before);
    free(after);
}

/* One sample of GPU-0 committed: 0, or -1 at the first step that failed. */
static int store_one_sample(gp_store *s) {
    gp_sample x = {.ts_ns = 1700000000000000000LL};
    snprintf(x.uuid, sizeof x.uuid, "GPU-0");
    if (gp_store_begin(s) != 0 || gp_store_put_samples(s, &x, 1) != 0) return -1;
    return gp_store_commit(s) == 0 ? 0 : -1;
}

/* The store the agent opens reserves the WAL its checkpointer cycles through. */
static void test_store_reserves_checkpoint_size(void **state) {
    (void)state;
    char path[4096], err[256];
    db_path(path, sizeof path, "store-reserve.db");
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    long long plain = file_bytes(path, "-wal");
    assert_true(plain < (long long)GP_CKPT_PAGES * (4096 + 24));
    if (gp_store_offload_checkpoints(s, err, sizeof err) != 0) fail_msg("%s", err);
    long long reserved = file_bytes(path, "-wal");
    assert_true(reserved >= (long long)GP_CKPT_PAGES * (4096 + 24));
    assert_int_equal(store_one_sample(s), 0);
    assert_int_equal(file_bytes(path, "-wal"), reserved);
    assert_int_equal(gp_test_sql_i64(gp_store_db(s), "SELECT count(*) FROM samples"), 1);
    gp_store_close(s);
}

/* Under a file-size limit below the reserve (a child with RLIMIT_FSIZE, SIGXFSZ ignored as
 * the agent does): the reserve stops at the limit, the store opens and commits as it would
 * without it, and its rows are there. */
static void test_reserve_under_file_size_limit(void **state) {
    (void)state;
    enum { LIMIT = 2 << 20 };
    char path[4096];
    db_path(path, sizeof path, "reserve-limit.db");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {LIMIT, LIMIT};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(2);
        gp_store *s;
        char err[256];
        if (gp_store_open(path, 0, &s, err, sizeof err) != 0) _exit(3);
        if (gp_store_offload_checkpoints(s, err, sizeof err) != 0) _exit(4);
        if (file_bytes(path, "-wal") > LIMIT) _exit(5);
        if (store_one_sample(s) != 0) _exit(6);
        gp_store_close(s);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        fail_msg("the child under the limit exited %d", WEXITSTATUS(status));
    sqlite3 *db = open_db(path, NULL);
    assert_int_equal(gp_test_sql_i64(db, "SELECT count(*) FROM samples"), 1);
    sqlite3_close(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_write_per_commit, hook, unhook),
        cmocka_unit_test_setup_teardown(test_store_commit_one_write, hook, unhook),
        cmocka_unit_test_setup_teardown(test_commits_visible_at_once, hook, unhook),
        cmocka_unit_test_setup_teardown(test_write_error_fails_commit, hook, unhook),
        cmocka_unit_test_setup_teardown(test_file_size_limit_fails_commit, hook, unhook),
        cmocka_unit_test_setup_teardown(test_reserve, hook, unhook),
        cmocka_unit_test_setup_teardown(test_store_reserves_checkpoint_size, hook, unhook),
        cmocka_unit_test_setup_teardown(test_reserve_under_file_size_limit, hook, unhook),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
