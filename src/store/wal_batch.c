/* wal_batch.c: the VFS behind wal_batch.h.
 *
 * Why the flush points are enough (SQLite 3.40, src/wal.c and src/pager.c):
 * - walWriteOneFrame writes a frame's header, then its page, at increasing offsets; a
 *   commit's last frame carries the database size in pages at bytes 4..7 of its header
 *   (zero in every other frame: the WAL file format). After that frame sqlite3WalFrames
 *   publishes the commit with walIndexWriteHdr, which calls xShmBarrier on the database
 *   file between its two header copies; readers take only matching copies. Writing the
 *   buffer at the end of the commit frame makes the error the commit's own; the barrier
 *   and every lock and shared-memory call on the database file are the backstop.
 * - Frames rewritten in place (a page changed twice in one transaction, checksums redone)
 *   are writes elsewhere in the file: the buffer is written first, so the order holds.
 *   walRewriteChecksums rewrites headers only, after the commit frame, each after a read
 *   (which writes the buffer): its last header reaches the file at the barrier.
 * - The pager opens the WAL with a name inside the same allocation as the database's
 *   name, which sqlite3_database_file_object() walks back to the database's sqlite3_file:
 *   this VFS's own object, since both go through it. The pager closes the WAL before the
 *   database file.
 *
 * The buffer stays allocated while the WAL is open (one commit is ~100 KB at 8 GPUs):
 * freeing it each commit would cost a mmap/munmap pair and its page faults, the cost this
 * saves. */
#include "store/wal_batch.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define WB_NAME "goodput-walbatch"
/* The unix VFS writes at most 128 KiB - 1 bytes a call (os_unix.c seekAndWriteFd masks the
 * length with 0x1ffff): a longer write would be cut short. An 8-GPU commit is ~103 KB. */
#define WB_BUF_MAX_BYTES (124 * 1024)
#define WB_BUF_MIN_BYTES (16 * 1024)
#define WAL_FRAME_HDR_BYTES 24
/* The file-control op of gp_wal_batch_reserve, far from SQLite's own (SQLITE_FCNTL_*,
 * small integers), which sqlite3_file_control passes on to the database file unchanged. */
#define WB_FCNTL_RESERVE 0x47500001
#define WB_ZERO_CHUNK_BYTES (64 * 1024)

typedef struct wb_file wb_file;
struct wb_file {
    sqlite3_file base;
    sqlite3_file *real; /* the file of the VFS below, in the same allocation */
    wb_file *wal;       /* a database file: its WAL file while that is open */
    wb_file *db;        /* a WAL file: its database file */
    unsigned char *buf; /* a WAL file: writes not yet made, from buf_off */
    sqlite3_int64 buf_off;
    int buf_len, buf_cap;
    /* Where the page of the last commit frame header written goes: the write there ends
     * the commit; 0 when none (no frame starts at 0). */
    sqlite3_int64 commit_page_off;
    int err; /* a write that failed where nothing could return it */
};

/* The VFS's own object sits in front of the below VFS's, 8-byte aligned. */
#define WB_HDR_BYTES ((int)((sizeof(wb_file) + 7) & ~(size_t)7))
#define REAL(f) (((wb_file *)(f))->real)

static const sqlite3_io_methods wb_db_methods, wb_wal_methods;

/* ---- the WAL file's buffer ---- */

static int wal_flush(wb_file *w) {
    if (w->buf_len == 0) return SQLITE_OK;
    int n = w->buf_len;
    w->buf_len = 0; /* written or failed: a failed write is not retried, as without the buffer */
    return REAL(w)->pMethods->xWrite(REAL(w), w->buf, n, w->buf_off);
}

/* The buffer written, and any earlier failure that could not be returned, as one code. */
static int wal_settle(wb_file *w) {
    int rc = wal_flush(w);
    if (rc == SQLITE_OK && w->err) rc = w->err;
    w->err = 0;
    return rc;
}

/* For calls on the database file: SQLITE_OK, or the failure of writing its WAL's buffer.
 * keep: the call cannot report it (an unlock, a barrier), so the WAL keeps it for the next
 * call that can. */
static int db_settle(wb_file *d, int keep) {
    wb_file *w = d->wal;
    if (!w) return SQLITE_OK;
    if (keep) {
        int rc = wal_flush(w);
        if (rc != SQLITE_OK && !w->err) w->err = rc;
        return SQLITE_OK;
    }
    return wal_settle(w);
}

static int wal_reserve(wb_file *w, int need) {
    if (need <= w->buf_cap) return 1;
    int cap = w->buf_cap ? w->buf_cap : WB_BUF_MIN_BYTES;
    while (cap < need)
        cap *= 2;
    if (cap > WB_BUF_MAX_BYTES) cap = WB_BUF_MAX_BYTES;
    unsigned char *p = sqlite3_realloc64(w->buf, (sqlite3_uint64)cap);
    if (!p) return 0;
    w->buf = p;
    w->buf_cap = cap;
    return 1;
}

static int wal_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off) {
    wb_file *w = (wb_file *)f;
    int rc = w->err;
    w->err = 0;
    if (rc != SQLITE_OK) return rc;
    int ends_commit = w->commit_page_off && off == w->commit_page_off;
    const unsigned char *b = p;
    w->commit_page_off = n == WAL_FRAME_HDR_BYTES && (b[4] | b[5] | b[6] | b[7]) != 0
                             ? off + WAL_FRAME_HDR_BYTES
                             : 0;
    int appends = w->buf_len > 0 && off == w->buf_off + w->buf_len &&
                  n <= WB_BUF_MAX_BYTES - w->buf_len && wal_reserve(w, w->buf_len + n);
    if (!appends) {
        rc = wal_flush(w);
        if (rc != SQLITE_OK) return rc;
        if (n > WB_BUF_MAX_BYTES || !wal_reserve(w, n))
            return REAL(w)->pMethods->xWrite(REAL(w), p, n, off);
        w->buf_off = off;
    }
    memcpy(w->buf + w->buf_len, p, (size_t)n);
    w->buf_len += n;
    if (ends_commit || w->buf_len == WB_BUF_MAX_BYTES) rc = wal_flush(w);
    return rc;
}

static int wal_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off) {
    int rc = wal_settle((wb_file *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}

static int wal_truncate(sqlite3_file *f, sqlite3_int64 size) {
    int rc = wal_settle((wb_file *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int wal_sync(sqlite3_file *f, int flags) {
    int rc = wal_settle((wb_file *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int wal_file_size(sqlite3_file *f, sqlite3_int64 *size) {
    int rc = wal_settle((wb_file *)f);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int wal_file_control(sqlite3_file *f, int op, void *arg) {
    wb_file *w = (wb_file *)f;
    int rc = wal_flush(w);
    if (rc != SQLITE_OK && !w->err) w->err = rc;
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int wal_close(sqlite3_file *f) {
    wb_file *w = (wb_file *)f;
    int rc = wal_settle(w);
    if (w->db) w->db->wal = NULL;
    sqlite3_free(w->buf);
    int crc = REAL(f)->pMethods->xClose(REAL(f));
    return rc != SQLITE_OK ? rc : crc;
}

/* ---- the database file: its WAL's buffer is written before its locks and shared
 * memory are touched ---- */

static int db_close(sqlite3_file *f) {
    wb_file *d = (wb_file *)f;
    if (d->wal) d->wal->db = NULL;
    return REAL(f)->pMethods->xClose(REAL(f));
}

static int db_lock(sqlite3_file *f, int level) {
    int rc = db_settle((wb_file *)f, 0);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xLock(REAL(f), level);
}

static int db_unlock(sqlite3_file *f, int level) {
    db_settle((wb_file *)f, 1);
    return REAL(f)->pMethods->xUnlock(REAL(f), level);
}

/* Zeros from the WAL's end up to `bytes` (gp_wal_batch_reserve). */
static int wal_reserve_file(wb_file *w, sqlite3_int64 bytes) {
    sqlite3_int64 size;
    int rc = wal_settle(w);
    if (rc == SQLITE_OK) rc = REAL(w)->pMethods->xFileSize(REAL(w), &size);
    if (rc != SQLITE_OK || size >= bytes) return rc;
    void *zero = sqlite3_malloc(WB_ZERO_CHUNK_BYTES);
    if (!zero) return SQLITE_NOMEM;
    memset(zero, 0, WB_ZERO_CHUNK_BYTES);
    while (rc == SQLITE_OK && size < bytes) {
        int n = bytes - size < WB_ZERO_CHUNK_BYTES ? (int)(bytes - size) : WB_ZERO_CHUNK_BYTES;
        rc = REAL(w)->pMethods->xWrite(REAL(w), zero, n, size);
        size += n;
    }
    sqlite3_free(zero);
    return rc;
}

static int db_file_control(sqlite3_file *f, int op, void *arg) {
    wb_file *d = (wb_file *)f;
    if (op == WB_FCNTL_RESERVE)
        return d->wal ? wal_reserve_file(d->wal, *(sqlite3_int64 *)arg) : SQLITE_NOTFOUND;
    db_settle(d, 1);
    return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}

static int db_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp) {
    int rc = db_settle((wb_file *)f, 0);
    if (rc != SQLITE_OK) return rc;
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, pp);
}

static int db_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    int rc = db_settle((wb_file *)f, (flags & SQLITE_SHM_UNLOCK) != 0);
    return rc != SQLITE_OK ? rc : REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}

static void db_shm_barrier(sqlite3_file *f) {
    db_settle((wb_file *)f, 1);
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int db_shm_unmap(sqlite3_file *f, int delete_flag) {
    db_settle((wb_file *)f, 1);
    return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}

/* ---- the rest passes through ---- */

static int pass_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off) {
    return REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}
static int pass_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off) {
    return REAL(f)->pMethods->xWrite(REAL(f), p, n, off);
}
static int pass_truncate(sqlite3_file *f, sqlite3_int64 size) {
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int pass_sync(sqlite3_file *f, int flags) {
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int pass_file_size(sqlite3_file *f, sqlite3_int64 *size) {
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}
static int pass_lock(sqlite3_file *f, int level) {
    return REAL(f)->pMethods->xLock(REAL(f), level);
}
static int pass_unlock(sqlite3_file *f, int level) {
    return REAL(f)->pMethods->xUnlock(REAL(f), level);
}
static int pass_check_reserved(sqlite3_file *f, int *out) {
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int pass_sector_size(sqlite3_file *f) {
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int pass_device(sqlite3_file *f) {
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int pass_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp) {
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, pp);
}
static int pass_shm_lock(sqlite3_file *f, int offset, int n, int flags) {
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void pass_shm_barrier(sqlite3_file *f) {
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int pass_shm_unmap(sqlite3_file *f, int delete_flag) {
    return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}
static int pass_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp) {
    *pp = NULL;
    if (REAL(f)->pMethods->iVersion < 3) return SQLITE_OK;
    return REAL(f)->pMethods->xFetch(REAL(f), off, n, pp);
}
static int pass_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p) {
    if (REAL(f)->pMethods->iVersion < 3) return SQLITE_OK;
    return REAL(f)->pMethods->xUnfetch(REAL(f), off, p);
}

static const sqlite3_io_methods wb_db_methods = {
    3,
    db_close,
    pass_read,
    pass_write,
    pass_truncate,
    pass_sync,
    pass_file_size,
    db_lock,
    db_unlock,
    pass_check_reserved,
    db_file_control,
    pass_sector_size,
    pass_device,
    db_shm_map,
    db_shm_lock,
    db_shm_barrier,
    db_shm_unmap,
    pass_fetch,
    pass_unfetch,
};

static const sqlite3_io_methods wb_wal_methods = {
    3,
    wal_close,
    wal_read,
    wal_write,
    wal_truncate,
    wal_sync,
    wal_file_size,
    pass_lock,
    pass_unlock,
    pass_check_reserved,
    wal_file_control,
    pass_sector_size,
    pass_device,
    pass_shm_map,
    pass_shm_lock,
    pass_shm_barrier,
    pass_shm_unmap,
    pass_fetch,
    pass_unfetch,
};

int gp_wal_batch_reserve(sqlite3 *db, sqlite3_int64 bytes) {
    return sqlite3_file_control(db, "main", WB_FCNTL_RESERVE, &bytes) == SQLITE_OK ? 0 : -1;
}

/* ---- the VFS ---- */

#define BELOW(v) ((sqlite3_vfs *)(v)->pAppData)

static int wb_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
                   int *out_flags) {
    sqlite3_vfs *below = BELOW(vfs);
    int wal = (flags & SQLITE_OPEN_WAL) != 0;
    /* Any other file is the below VFS's own object, at the start of the space SQLite gave. */
    if (!wal && !(flags & SQLITE_OPEN_MAIN_DB))
        return below->xOpen(below, name, f, flags, out_flags);
    wb_file *w = (wb_file *)f;
    memset(w, 0, sizeof *w);
    w->real = (sqlite3_file *)((char *)f + WB_HDR_BYTES);
    int rc = below->xOpen(below, name, w->real, flags, out_flags);
    if (rc != SQLITE_OK) return rc; /* pMethods stays NULL: SQLite will not close it */
    w->base.pMethods = wal ? &wb_wal_methods : &wb_db_methods;
    if (wal && name) {
        wb_file *d = (wb_file *)sqlite3_database_file_object(name);
        if (d && d->base.pMethods == &wb_db_methods) {
            w->db = d;
            d->wal = w;
        }
    }
    return SQLITE_OK;
}

static int wb_delete(sqlite3_vfs *v, const char *name, int sync_dir) {
    return BELOW(v)->xDelete(BELOW(v), name, sync_dir);
}
static int wb_access(sqlite3_vfs *v, const char *name, int flags, int *out) {
    return BELOW(v)->xAccess(BELOW(v), name, flags, out);
}
static int wb_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out) {
    return BELOW(v)->xFullPathname(BELOW(v), name, n, out);
}
static void *wb_dl_open(sqlite3_vfs *v, const char *name) {
    return BELOW(v)->xDlOpen(BELOW(v), name);
}
static void wb_dl_error(sqlite3_vfs *v, int n, char *msg) {
    BELOW(v)->xDlError(BELOW(v), n, msg);
}
static void (*wb_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void) {
    return BELOW(v)->xDlSym(BELOW(v), h, sym);
}
static void wb_dl_close(sqlite3_vfs *v, void *h) {
    BELOW(v)->xDlClose(BELOW(v), h);
}
static int wb_randomness(sqlite3_vfs *v, int n, char *out) {
    return BELOW(v)->xRandomness(BELOW(v), n, out);
}
static int wb_sleep(sqlite3_vfs *v, int us) {
    return BELOW(v)->xSleep(BELOW(v), us);
}
static int wb_current_time(sqlite3_vfs *v, double *out) {
    return BELOW(v)->xCurrentTime(BELOW(v), out);
}
static int wb_last_error(sqlite3_vfs *v, int n, char *out) {
    return BELOW(v)->xGetLastError(BELOW(v), n, out);
}
static int wb_current_time64(sqlite3_vfs *v, sqlite3_int64 *out) {
    return BELOW(v)->xCurrentTimeInt64(BELOW(v), out);
}
static int wb_set_syscall(sqlite3_vfs *v, const char *name, sqlite3_syscall_ptr p) {
    return BELOW(v)->xSetSystemCall(BELOW(v), name, p);
}
static sqlite3_syscall_ptr wb_get_syscall(sqlite3_vfs *v, const char *name) {
    return BELOW(v)->xGetSystemCall(BELOW(v), name);
}
static const char *wb_next_syscall(sqlite3_vfs *v, const char *name) {
    return BELOW(v)->xNextSystemCall(BELOW(v), name);
}

/* The registry, set once at the first store open and read-only after. */
static sqlite3_vfs wb_vfs;
static int wb_registered;
static pthread_once_t wb_once = PTHREAD_ONCE_INIT;

static void wb_register(void) {
    sqlite3_vfs *below = sqlite3_vfs_find(NULL);
    if (!below || below->iVersion < 3) return;
    wb_vfs = (sqlite3_vfs){
        .iVersion = 3,
        .szOsFile = WB_HDR_BYTES + below->szOsFile,
        .mxPathname = below->mxPathname,
        .zName = WB_NAME,
        .pAppData = below,
        .xOpen = wb_open,
        .xDelete = wb_delete,
        .xAccess = wb_access,
        .xFullPathname = wb_full_pathname,
        .xDlOpen = wb_dl_open,
        .xDlError = wb_dl_error,
        .xDlSym = wb_dl_sym,
        .xDlClose = wb_dl_close,
        .xRandomness = wb_randomness,
        .xSleep = wb_sleep,
        .xCurrentTime = wb_current_time,
        .xGetLastError = wb_last_error,
        .xCurrentTimeInt64 = wb_current_time64,
        .xSetSystemCall = wb_set_syscall,
        .xGetSystemCall = wb_get_syscall,
        .xNextSystemCall = wb_next_syscall,
    };
    wb_registered = sqlite3_vfs_register(&wb_vfs, 0) == SQLITE_OK;
}

const char *gp_wal_batch_vfs(void) {
    const char *off = getenv("GOODPUT_NO_WAL_BATCH");
    if (off && strcmp(off, "1") == 0) return NULL;
    pthread_once(&wb_once, wb_register);
    return wb_registered ? WB_NAME : NULL;
}
