/* store.c: the SQLite store behind store.h.
 *
 * WAL mode with synchronous=NORMAL: a commit is atomic and survives a process crash
 * (kill -9) by construction; an OS crash may lose the last commits but never corrupts
 * the file. Hot inserts use statements prepared once at open. Unknown sample fields are
 * bound as NULL, so "not reported" never reads back as zero. */
#include "store/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/checkpointer.h"
#include "store/own_rows.h"
#include "store/rollup.h"
#include "store/schema.h"
#include "store/wal_batch.h"

enum {
    ST_DEVICE,
    ST_SAMPLE,
    ST_SAMPLE_NEW,
    ST_PROC,
    ST_PROC_NEW,
    ST_SAMPLE_BATCH, /* GP_STORE_BATCH_ROWS rows of ST_SAMPLE_NEW in one statement */
    ST_PROC_BATCH,   /* idem, ST_PROC_NEW */
    ST_RESULTS_BOUND,
    ST_RESULTS_UNDO,
    ST_PREFIX_BOUND,
    ST_PREFIX_UNDO,
    ST_EVENT,
    ST_JOB_UPSERT,
    ST_ALLOC,
    ST_JOB_READY,
    ST_ALLOC_CLOSE,
    ST_BEGIN, /* the agent opens and commits a transaction every flush: parsed once */
    ST_BEGIN_WRITE,
    ST_COMMIT,
    ST__COUNT
};

#define SAMPLE_COLS 24 /* parameters of a sample row, a process row */
#define PROC_COLS 6

static const char *const stmt_sql[ST__COUNT] = {
    [ST_BEGIN] = "BEGIN",
    [ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_DEVICE] = "INSERT INTO devices(uuid, idx, name, host, pci_bus_id, memory_total_bytes,"
                  " mig_mode, parent_uuid, model, first_seen_ns, last_seen_ns)"
                  " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?10)"
                  " ON CONFLICT(uuid) DO UPDATE SET idx=?2, name=?3, host=?4, pci_bus_id=?5,"
                  " memory_total_bytes=COALESCE(?6, memory_total_bytes), mig_mode=?7,"
                  " parent_uuid=?8, model=?9, last_seen_ns=?10",
    /* A sample or process row replaces one stored for the same key. The agent's rows are
     * new: they are first tried with OR FAIL (the _NEW statements), which needs no
     * statement journal, and only a primary-key conflict runs OR REPLACE. OR REPLACE
     * turns the NOT NULL checks into ABORT, and an ABORT statement with a trigger (the
     * job_results ones, schema.c) in a transaction copies every page it touches to the
     * statement journal first and opens and closes a savepoint: ~3.8 k of the ~18 k
     * instructions of a sample row, ~3.8 k of ~11 k of a process row (docs/benchmarks.md,
     * agent cost). A constraint is checked before anything is written, so the failed
     * attempt leaves nothing behind, and the row and its trigger are the same either way. */
    [ST_SAMPLE] = "INSERT OR REPLACE INTO samples VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,"
                  "?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)",
    [ST_SAMPLE_NEW] = "INSERT OR FAIL INTO samples VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,"
                      "?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)",
    [ST_PROC] = "INSERT OR REPLACE INTO proc_samples VALUES(?1,?2,?3,?4,?5,?6)",
    [ST_PROC_NEW] = "INSERT OR FAIL INTO proc_samples VALUES(?1,?2,?3,?4,?5,?6)",
    /* ST_SAMPLE_BATCH, ST_PROC_BATCH: built by batch_sql() at open. */
    /* Migration 14's rule for a sample or process row, applied by the store where its
     * triggers are off (own_rows.h): the bound, and the results a row at ?1 deletes. */
    [ST_RESULTS_BOUND] = "SELECT ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),"
                         " 9223372036854775807)",
    [ST_RESULTS_UNDO] = "DELETE FROM job_results WHERE t1_ns >= ?1 AND t0_ns <= ?1",
    /* ... and migration 16's for running jobs' accounting prefixes (acct_prefix.h). */
    [ST_PREFIX_BOUND] = "SELECT ifnull((SELECT t_ns FROM job_prefix_hwm WHERE id = 0),"
                        " 9223372036854775807)",
    [ST_PREFIX_UNDO] = "DELETE FROM job_prefix WHERE t_ns >= ?1",
    /* A duplicate (same job and key) is ignored; the caller learns it from changes().
     * OR FAIL (here and in the other one-row upserts below): a one-row statement has nothing
     * to roll back but its row, so FAIL is ABORT for it, and SQLite then needs no
     * statement journal for the job_results triggers (schema.c, migration 13), which cost
     * ~2.5 us per event with one. */
    [ST_EVENT] =
        "INSERT OR FAIL INTO events(job_id, ts_ns, kind, rank, step, units, start_ns, name,"
        " edge, arrival_ns, first_token_ns, prompt_tokens, output_tokens, ok, item,"
        " enqueue_ns, worker, bytes, dedup_key)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)"
        " ON CONFLICT(job_id, dedup_key) DO NOTHING",
    /* Upsert that only overwrites a column when the new value is known. */
    [ST_JOB_UPSERT] =
        "INSERT OR FAIL INTO jobs(id, name, user, origin, submitted_ns, allocated_ns, ready_ns, "
        "ended_ns,"
        " exit_state, exit_code, unit_name, flops_per_unit, bytes_per_unit, slo_ttft_s,"
        " slo_tpot_s, slo_e2e_s)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)"
        " ON CONFLICT(id) DO UPDATE SET name=COALESCE(?2,name), user=COALESCE(?3,user),"
        " origin=COALESCE(origin,?4), submitted_ns=COALESCE(?5,submitted_ns),"
        " allocated_ns=MIN(COALESCE(?6,allocated_ns),COALESCE(allocated_ns,?6)), "
        "ready_ns=COALESCE(ready_ns,?7),"
        " ended_ns=COALESCE(?8,ended_ns), exit_state=COALESCE(?9,exit_state),"
        " exit_code=COALESCE(?10,exit_code), unit_name=COALESCE(?11,unit_name),"
        " flops_per_unit=COALESCE(?12,flops_per_unit), bytes_per_unit=COALESCE(?13,bytes_per_unit),"
        " slo_ttft_s=COALESCE(?14,slo_ttft_s), slo_tpot_s=COALESCE(?15,slo_tpot_s),"
        " slo_e2e_s=COALESCE(?16,slo_e2e_s)",
    [ST_ALLOC] = "INSERT OR FAIL INTO allocations(job_id, uuid, from_ns, to_ns) VALUES(?1,?2,?3,?4)"
                 " ON CONFLICT(job_id, uuid, from_ns) DO UPDATE SET"
                 " to_ns=MIN(COALESCE(?4,to_ns),COALESCE(to_ns,?4))" /* the earliest end wins */
                 /* an unchanged row is not updated: no job_results trigger runs for it */
                 " WHERE to_ns IS NOT MIN(COALESCE(?4,to_ns),COALESCE(to_ns,?4))",
    /* A job's end closes what it still holds (not rows that start after it: a requeued
     * job's next run). */
    [ST_ALLOC_CLOSE] = "UPDATE allocations SET to_ns = ?2 WHERE job_id = ?1 AND to_ns IS NULL"
                       " AND from_ns <= ?2",
    /* Readiness is the first progress: keep the earliest. Run for every step and request,
     * so a row is updated only when it changes (a job_results trigger runs per update). */
    [ST_JOB_READY] =
        "INSERT OR FAIL INTO jobs(id, ready_ns) VALUES(?1,?2) ON CONFLICT(id) DO UPDATE SET"
        " ready_ns=?2 WHERE ready_ns IS NULL OR ready_ns > ?2",
};

/* A batch statement's parameter as bound last (binder, below). */
typedef struct {
    uint64_t bits;
    int kind; /* 0 nothing bound yet, 1 NULL, 2 a double, 3 an integer */
} bound_val;

struct gp_store {
    sqlite3 *db;
    sqlite3_stmt *st[ST__COUNT];
    char path[1024];
    int in_tx;
    uint64_t duplicates; /* events ignored as already stored */
    int fatal;           /* a write failed for lack of space or a file-size limit */
    int fatal_errno;     /* its errno (EFBIG, ENOSPC), 0 unknown */
    char fatal_msg[128]; /* SQLite's message for it */
    gp_rollup *rollup;   /* 1 min / 1 h rollups of samples (writable stores) */
    int own_rows;        /* the triggers on samples/proc_samples are ours (own_rows.h) */
    gp_own_rows_gate gate;
    /* what the batch statements' parameters hold (binder) */
    bound_val sample_last[GP_STORE_BATCH_ROWS * SAMPLE_COLS];
    bound_val proc_last[GP_STORE_BATCH_ROWS * PROC_COLS];
    gp_store_commit_hist commits;
    /* gp_store_span_memo_*: the time span and the content version it was read at */
    int span_known;
    int64_t span_t0_ns, span_t1_ns;
    sqlite3_int64 span_changes, span_dv, pend_changes, pend_dv;
    /* the agent's page cache (gp_store_tune_for_devices): its steady and flood sizes, the
     * size set now, events put in the open transaction, quiet commits since a flood */
    int cache_steady_kib, cache_flood_kib, cache_kib;
    uint32_t tx_events, quiet_commits;
    /* gp_store_stmt: statements of other modules and of rare passes, prepared once */
    struct {
        const char *sql;
        sqlite3_stmt *st;
    } * cached;
    size_t n_cached, cap_cached;
    gp_ckpt *ckpt;   /* gp_store_offload_checkpoints; NULL: SQLite's, in the commit */
    const char *vfs; /* what the store was opened with (NULL: the default) */
};

/* The agent's flush writes its queued rows GP_STORE_BATCH_ROWS at a time, in one
 * multi-row INSERT OR FAIL each: a statement's own cost (step, cursor open, transaction
 * check, halt, reset) is paid once per batch instead of once per row, while every row
 * still gets the job_results rule of its table's trigger (own_rows.h) and the rows are the
 * same (gp_store_put_samples). Only where that trigger is off on this connection: with a
 * trigger, SQLite copies a multi-row INSERT's rows to a temporary table first, which costs
 * more than the statements it saves. */

/* "INSERT OR FAIL INTO table VALUES(?1,...),(...),..." for GP_STORE_BATCH_ROWS rows. */
static void batch_sql(char *buf, size_t cap, const char *table, int ncols) {
    size_t len = (size_t)snprintf(buf, cap, "INSERT OR FAIL INTO %s VALUES", table);
    for (int r = 0; r < GP_STORE_BATCH_ROWS && len < cap; r++)
        for (int c = 0; c < ncols && len < cap; c++)
            len += (size_t)snprintf(buf + len, cap - len, "%s?%d%s",
                                    c   ? ","
                                    : r ? ",("
                                        : "(",
                                    r * ncols + c + 1, c == ncols - 1 ? ")" : "");
}

gp_rollup *gp_store_rollup(gp_store *s) {
    return s->rollup;
}

sqlite3 *gp_store_db(gp_store *s) {
    return s->db;
}

/* PRAGMA data_version: changes when another connection commits; -1 unknown. */
static sqlite3_int64 data_version(sqlite3 *db) {
    sqlite3_stmt *st;
    sqlite3_int64 v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA data_version", -1, &st, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int gp_store_span_memo_get(gp_store *s, int64_t *t0_ns, int64_t *t1_ns) {
    s->pend_dv = data_version(s->db);
    s->pend_changes = sqlite3_total_changes64(s->db);
    if (!s->span_known || s->pend_dv < 0 || s->pend_dv != s->span_dv ||
        s->pend_changes != s->span_changes)
        return 0;
    *t0_ns = s->span_t0_ns;
    *t1_ns = s->span_t1_ns;
    return 1;
}

void gp_store_span_memo_set(gp_store *s, int64_t t0_ns, int64_t t1_ns) {
    s->span_known = s->pend_dv >= 0;
    s->span_dv = s->pend_dv;
    s->span_changes = s->pend_changes;
    s->span_t0_ns = t0_ns;
    s->span_t1_ns = t1_ns;
}
const char *gp_store_path(const gp_store *s) {
    return s->path;
}
const char *gp_store_errmsg(gp_store *s) {
    return sqlite3_errmsg(s->db);
}

/* Oldest schema a read-only open reads without migrating (gp_schema_shadow fills in what
 * later migrations added): 4 added finding columns whose absence readers would not know
 * from a finding of no badput, so older stores are refused with a line saying how to
 * migrate them. */
#define MIN_READABLE_SCHEMA 4
/* SQLite page cache of a read-only open, KiB (the default is 2,000). 64 and 256 ran
 * `report` and `diagnose` in the same CPU time on the demo stores and on a 3-day 8-GPU
 * store at 1 s (305 MB, bench/store_month); 64 is ~0.2 MiB less peak RSS. */
#define GP_STORE_RO_CACHE_KIB 64

/* Whether we may create files beside path (SQLite's -wal and -shm need it). */
static int dir_writable(const char *path) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    return access(dir, W_OK) == 0;
}

/* 1 when path+suffix exists and holds data (an empty -wal holds no commits). */
static int file_has_data(const char *path, const char *suffix) {
    char p[1100];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    struct stat sb;
    return stat(p, &sb) == 0 && sb.st_size > 0;
}

static int file_exists(const char *path, const char *suffix) {
    char p[1100];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* "file:" URI for path with the query q; '%', '?' and '#' are escaped. */
static void file_uri(char *buf, size_t cap, const char *path, const char *q) {
    size_t n = (size_t)snprintf(buf, cap, "file:");
    for (const char *p = path; *p && n + 4 < cap; p++) {
        if (*p == '%' || *p == '?' || *p == '#')
            n += (size_t)snprintf(buf + n, cap - n, "%%%02X", (unsigned char)*p);
        else
            buf[n++] = *p;
    }
    buf[n] = 0;
    snprintf(buf + n, cap - n, "?%s", q);
}

/* Records a write that failed for lack of room (ENOSPC, EFBIG from a file-size limit):
 * the open transaction is lost, the committed ones are intact, and writing on is futile. */
static void note_rc(gp_store *s, int rc) {
    int e = errno; /* the failed write's, if SQLite does not keep it (below) */
    if (s->fatal || ((rc & 0xff) != SQLITE_FULL && (rc & 0xff) != SQLITE_IOERR)) return;
    s->fatal = 1;
    /* Kept now: a later call (the rollback) resets what SQLite remembers. */
    s->fatal_errno = sqlite3_system_errno(s->db);
    if (!s->fatal_errno && (e == EFBIG || e == ENOSPC)) s->fatal_errno = e;
    snprintf(s->fatal_msg, sizeof s->fatal_msg, "%s", sqlite3_errmsg(s->db));
}

int gp_store_failed(const gp_store *s, char *err, size_t errlen) {
    if (!s->fatal) return 0;
    int e = s->fatal_errno;
    snprintf(err, errlen, "store '%s': write failed: %s%s; the last committed flush is kept",
             s->path, e ? strerror(e) : s->fatal_msg,
             e == EFBIG    ? " (a file-size limit: ulimit -f)"
             : e == ENOSPC ? " (the disk is full)"
                           : "");
    return 1;
}

int gp_store_lean_page_caches(void) {
    /* No memory of its own (NULL, 0) and no pages in it (0): pcache1 then allocates no
     * bulk block (its nInitPage is 0), page by page instead. */
    return sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0) == SQLITE_OK ? 0 : -1;
}

int gp_store_open(const char *path, int flags, gp_store **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "store '%s': is a directory, expected a database file", path);
        return -1;
    }
    if ((flags & GP_STORE_READONLY) && stat(path, &sb) != 0) {
        snprintf(err, errlen, "store '%s': no such file (run `goodput agent --db %s` first)", path,
                 path);
        return -1;
    }
    /* Memory statistics cost a mutex per allocation and nothing here reads them. This is
     * process-wide configuration and only takes effect before SQLite initialises. */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    gp_store *s = calloc(1, sizeof *s);
    if (!s) return -1;
    snprintf(s->path, sizeof s->path, "%s", path);
    int oflags = (flags & GP_STORE_READONLY) ? SQLITE_OPEN_READONLY
                                             : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    /* Read-only where no file may be created beside the store (a read-only directory or
     * mount): SQLite cannot make the -shm it reads a WAL store with, so the store is
     * opened immutable. That is right only when no -wal holds commits the main file
     * lacks (none, or an empty one); with a -wal of commits and its -shm present SQLite
     * reads them read-only itself. */
    const char *name = path;
    char uri[2200];
    int ro_dir = (flags & GP_STORE_READONLY) && !dir_writable(path);
    if (ro_dir && !file_has_data(path, "-wal")) {
        file_uri(uri, sizeof uri, path, "immutable=1");
        name = uri;
        oflags |= SQLITE_OPEN_URI;
    } else if (ro_dir && !file_exists(path, "-shm")) {
        snprintf(err, errlen,
                 "store '%s': its directory is read-only and the store has a -wal file without "
                 "its -shm; copy the store with its -wal to a writable directory",
                 path);
        free(s);
        return -1;
    }
    /* The database holds job names and users: owner-only, like the event socket. */
    mode_t old = umask(077);
    /* A store that writes joins each commit's WAL writes into one (store/wal_batch.h). */
    const char *vfs = (flags & GP_STORE_READONLY) ? NULL : gp_wal_batch_vfs();
    s->vfs = vfs;
    int rc = sqlite3_open_v2(name, &s->db, oflags | SQLITE_OPEN_NOMUTEX, vfs);
    umask(old);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "store '%s': cannot open: %s", path,
                 s->db ? sqlite3_errmsg(s->db) : "out of memory");
        gp_store_close(s);
        return -1;
    }
    sqlite3_busy_timeout(s->db, GP_STORE_BUSY_MS);
    char *msg = NULL;
    /* A file that is not a database fails here with SQLITE_NOTADB. */
    rc = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        if (rc == SQLITE_NOTADB)
            snprintf(err, errlen, "store '%s': not a goodput database (%s)", path, msg);
        else
            snprintf(err, errlen, "store '%s': cannot read it: %s", path,
                     msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        gp_store_close(s);
        return -1;
    }
    if (!(flags & GP_STORE_READONLY)) {
        char wal_sql[128];
        snprintf(wal_sql, sizeof wal_sql,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                 "PRAGMA journal_size_limit=%lld;",
                 GP_STORE_WAL_LIMIT_BYTES);
        if (sqlite3_exec(s->db, wal_sql, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "store '%s': %s", path, msg);
            sqlite3_free(msg);
            gp_store_close(s);
            return -1;
        }
        if (gp_schema_migrate(s->db, err, errlen) != 0) {
            gp_store_close(s);
            return -1;
        }
    } else {
        sqlite3_stmt *v;
        int version = 0;
        if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK) {
            if (sqlite3_step(v) == SQLITE_ROW) version = sqlite3_column_int(v, 0);
            sqlite3_finalize(v);
        }
        if (version >= MIN_READABLE_SCHEMA && version < gp_schema_latest()) {
            /* An older store, read as it is: a read command never writes the store (the
             * agent migrates it when it next opens it). What later migrations add reads
             * as empty tables and NULL columns of this connection's TEMP schema. */
            if (gp_schema_shadow(s->db, err, errlen) != 0) {
                gp_store_close(s);
                return -1;
            }
        } else if (version > gp_schema_latest()) {
            snprintf(err, errlen,
                     "store '%s': schema version %d is newer than this goodput reads (%d): "
                     "read it with the goodput that wrote it",
                     path, version, gp_schema_latest());
            gp_store_close(s);
            return -1;
        } else if (version != gp_schema_latest()) {
            snprintf(err, errlen,
                     "store '%s': schema version %d, expected %d (open it once with goodput "
                     "agent to migrate, or it is not a goodput database)",
                     path, version, gp_schema_latest());
            gp_store_close(s);
            return -1;
        }
    }
    /* Before any statement is prepared: statements are coded with the triggers they see. */
    if (!(flags & GP_STORE_READONLY) && (flags & GP_STORE_OWN_ROWS))
        s->own_rows = gp_own_rows_install(s->db, &s->gate) == 1;
    s->gate.own = 1; /* the store's own statements below */
    char batch_samples[2048], batch_procs[1024];
    batch_sql(batch_samples, sizeof batch_samples, "samples", SAMPLE_COLS);
    batch_sql(batch_procs, sizeof batch_procs, "proc_samples", PROC_COLS);
    for (int i = 0; i < ST__COUNT && !(flags & GP_STORE_READONLY); i++) {
        const char *sql = i == ST_SAMPLE_BATCH ? batch_samples
                          : i == ST_PROC_BATCH ? batch_procs
                                               : stmt_sql[i];
        /* With the triggers on, a multi-row INSERT would go through a temporary table:
         * rows are then written one at a time. */
        if (!s->own_rows && (i == ST_SAMPLE_BATCH || i == ST_PROC_BATCH)) continue;
        if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(err, errlen, "store '%s': prepare: %s", path, sqlite3_errmsg(s->db));
            gp_store_close(s);
            return -1;
        }
    }
    s->gate.own = 0;
    if (flags & GP_STORE_READONLY) {
        /* A reader walks each table once in index order, so SQLite's default 2,000 KiB page
         * cache mostly keeps pages that are never read again; the kernel's page cache
         * serves a re-read. A small cache keeps `goodput report` within its memory budget
         * (docs/benchmarks.md, "Start-up and libraries"); GOODPUT_RO_CACHE_KIB sets another
         * size, for benchmarks that compare. */
        const char *kib = getenv("GOODPUT_RO_CACHE_KIB");
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA cache_size=-%d", kib ? atoi(kib) : GP_STORE_RO_CACHE_KIB);
        sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    }
    if (!(flags & GP_STORE_READONLY) && !(s->rollup = gp_rollup_new(s))) {
        snprintf(err, errlen, "store '%s': rollups: %s", path, sqlite3_errmsg(s->db));
        gp_store_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

void gp_store_close(gp_store *s) {
    if (!s) return;
    if (s->rollup && !s->in_tx) gp_store_begin(s); /* write the open rollup buckets */
    if (s->rollup && s->in_tx) gp_rollup_close(s->rollup);
    if (s->in_tx) gp_store_commit(s);
    gp_rollup_free(s->rollup);
    for (int i = 0; i < ST__COUNT; i++)
        sqlite3_finalize(s->st[i]);
    for (size_t i = 0; i < s->n_cached; i++)
        sqlite3_finalize(s->cached[i].st);
    free(s->cached);
    gp_ckpt_stop(s->ckpt); /* before the close that checkpoints the WAL and removes it */
    sqlite3_close(s->db);
    free(s);
}

/* The WAL's size when the checkpointer starts it over, reserved (store/wal_batch.h): its
 * GP_CKPT_PAGES frames and the commits made while a checkpoint runs. Skipped when the
 * store is busy: it only spares the first cycle its file extensions. */
static void reserve_wal(gp_store *s) {
    sqlite3_int64 page_bytes = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA page_size", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) page_bytes = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (page_bytes <= 0 || gp_store_begin_write(s, 0) != 0) return;
    gp_wal_batch_reserve(s->db, 32 + (GP_CKPT_PAGES + GP_CKPT_PAGES / 4) * (page_bytes + 24));
    gp_store_commit(s);
}

int gp_store_offload_checkpoints(gp_store *s, char *err, size_t errlen) {
    if (s->ckpt) return 0;
    s->ckpt = gp_ckpt_start(s->db, s->path, s->vfs, err, errlen);
    if (s->ckpt) reserve_wal(s);
    return s->ckpt ? 0 : -1;
}

int64_t gp_store_checkpoint_since_ns(const gp_store *s) {
    return gp_ckpt_since_ns(s->ckpt);
}

int gp_store_checkpoint_wait(gp_store *s, int timeout_ms) {
    return gp_ckpt_wait(s->ckpt, timeout_ms);
}

gp_ckpt_stats gp_store_checkpoint_stats(const gp_store *s) {
    return gp_ckpt_get_stats(s->ckpt);
}

sqlite3_stmt *gp_store_stmt(gp_store *s, const char *sql) {
    for (size_t i = 0; i < s->n_cached; i++)
        if (s->cached[i].sql == sql) {
            sqlite3_reset(s->cached[i].st);
            sqlite3_clear_bindings(s->cached[i].st);
            return s->cached[i].st;
        }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
        return NULL;
    if (s->n_cached == s->cap_cached) {
        size_t nc = s->cap_cached ? 2 * s->cap_cached : 8;
        void *p = realloc(s->cached, nc * sizeof *s->cached);
        if (!p) {
            sqlite3_finalize(st);
            return NULL;
        }
        s->cached = p;
        s->cap_cached = nc;
    }
    s->cached[s->n_cached].sql = sql;
    s->cached[s->n_cached++].st = st;
    return st;
}

/* Steps a statement of gp_store_stmt to its end and resets it: 0 done, -1 an error. */
static int step_cached(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static void set_cache_kib(gp_store *s, int kib) {
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA cache_size=-%d", kib);
    sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    s->cache_kib = kib;
}

void gp_store_tune_for_devices(gp_store *s, size_t n_devices) {
    /* ~3 hot leaf pages per device (samples, proc_samples, an events share) of 4 KiB, with
     * a 1 MiB floor in steady state: a larger cache only filled, over minutes, with pages
     * the ticks never read again (retention's deletes, the live pass's and the server's
     * reads between passes): +1.3 MiB of RSS over 20 minutes at 8 GPUs. During an event
     * flood the events dedup index's inserts land all over it, and at 1 MiB its misses made
     * ticks 50-65 ms late (reliability_overload.sh; docs/benchmarks.md, agent cost item 4):
     * a transaction that puts GP_STORE_FLOOD_EVENTS events raises the cache to 2 MiB at
     * once (gp_store_put_event), and GP_STORE_QUIET_COMMITS commits below that set it back,
     * which frees the pages above the smaller size (SQLite's pcache1). */
    size_t kib = n_devices * 12;
    if (kib > 262144) kib = 262144;
    s->cache_steady_kib = kib < GP_STORE_STEADY_CACHE_KIB ? GP_STORE_STEADY_CACHE_KIB : (int)kib;
    s->cache_flood_kib = kib < GP_STORE_FLOOD_CACHE_KIB ? GP_STORE_FLOOD_CACHE_KIB : (int)kib;
    s->tx_events = s->quiet_commits = 0;
    set_cache_kib(s, s->cache_steady_kib);
}

/* One of the transaction statements: prepared on a writable store (the agent runs them
 * every flush), else parsed. */
static int exec_st(gp_store *s, int i, const char *sql) {
    if (!s->st[i]) return sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    int rc = sqlite3_step(s->st[i]);
    int rrc = sqlite3_reset(s->st[i]);
    return rc == SQLITE_DONE ? SQLITE_OK : (rrc != SQLITE_OK ? rrc : rc);
}

int gp_store_begin(gp_store *s) {
    if (s->in_tx) return 0;
    if (exec_st(s, ST_BEGIN, "BEGIN") != SQLITE_OK) return -1;
    s->in_tx = 1;
    return 0;
}

int gp_store_begin_write(gp_store *s, int wait_ms) {
    /* written already (ours, or one a caller opened itself): its rows commit together */
    if (sqlite3_txn_state(s->db, NULL) == SQLITE_TXN_WRITE) return 0;
    if (!sqlite3_get_autocommit(s->db)) {
        /* Nothing written yet: end the reads, whose snapshot another writer may have
         * passed since (a write would then fail at once, SQLITE_BUSY_SNAPSHOT). */
        if (exec_st(s, ST_COMMIT, "COMMIT") != SQLITE_OK)
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    }
    s->in_tx = 0;
    sqlite3_busy_timeout(s->db, wait_ms);
    int rc = exec_st(s, ST_BEGIN_WRITE, "BEGIN IMMEDIATE");
    sqlite3_busy_timeout(s->db, GP_STORE_BUSY_MS);
    if (rc != SQLITE_OK) {
        note_rc(s, rc);
        return -1;
    }
    s->in_tx = 1;
    return 0;
}

int gp_store_commit(gp_store *s) {
    if (!s->in_tx) return 0;
    s->in_tx = 0;
    struct timespec c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &c0);
    /* Rollups of the samples in this transaction commit with them. */
    int rc = s->rollup && gp_rollup_flush(s->rollup) != 0 ? sqlite3_errcode(s->db) : SQLITE_OK;
    if (rc == SQLITE_OK) rc = exec_st(s, ST_COMMIT, "COMMIT");
    clock_gettime(CLOCK_MONOTONIC, &c1);
    double dt = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
    static const double bounds[] = GP_STORE_COMMIT_BOUNDS_S;
    size_t b = 0;
    while (b < sizeof bounds / sizeof bounds[0] && dt > bounds[b])
        b++;
    s->commits.count[b]++;
    s->commits.n++;
    s->commits.sum_s += dt;
    if (s->cache_steady_kib) { /* the flood cache back to steady (gp_store_tune_for_devices) */
        if (s->tx_events >= GP_STORE_FLOOD_EVENTS)
            s->quiet_commits = 0;
        else if (s->cache_kib != s->cache_steady_kib &&
                 ++s->quiet_commits >= GP_STORE_QUIET_COMMITS)
            set_cache_kib(s, s->cache_steady_kib);
        s->tx_events = 0;
    }
    if (rc == SQLITE_OK) return 0;
    note_rc(s, rc);
    /* A failed COMMIT may leave the transaction open: end it, keeping what was committed. */
    if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    /* The rollups held in memory may count samples that were not committed. */
    if (s->rollup) gp_rollup_forget(s->rollup);
    return -1;
}

/* Binding helpers: NULL for unknown. */
static void bind_text(sqlite3_stmt *st, int i, const char *v) {
    if (v && *v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}
/* The same without SQLite's copy, for the rows the agent writes every tick: the text
 * outlives the statement's one step (run() resets it, and every call binds again). */
static void bind_text_row(sqlite3_stmt *st, int i, const char *v) {
    if (v && *v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}
static void bind_i64_known(sqlite3_stmt *st, int i, int64_t v, int known) {
    if (known)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}
void gp_store_bind_time(sqlite3_stmt *st, int i, int64_t v_ns) {
    bind_i64_known(st, i, v_ns, v_ns >= 0);
}
static void bind_d_known(sqlite3_stmt *st, int i, double v, int known) {
    if (known)
        sqlite3_bind_double(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

/* Every parameter is bound on each use (NULL for unknown), so bindings need no clearing. */
static int run(gp_store *s, sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) note_rc(s, rc);
    return rc == SQLITE_DONE ? 0 : -1;
}

int gp_store_put_device(gp_store *s, const gp_device *d) {
    sqlite3_stmt *st = s->st[ST_DEVICE];
    bind_text(st, 1, d->uuid);
    sqlite3_bind_int(st, 2, d->index);
    bind_text(st, 3, d->name);
    bind_text(st, 4, d->host);
    bind_text(st, 5, d->pci_bus_id);
    bind_i64_known(st, 6, (int64_t)d->memory_total_bytes, d->memory_total_bytes > 0);
    bind_i64_known(st, 7, d->mig_mode, d->mig_mode >= 0);
    bind_text(st, 8, d->parent_uuid);
    bind_text(st, 9, d->spec ? d->spec->model : NULL);
    sqlite3_bind_int64(st, 10, 0);
    return run(s, st);
}

int gp_store_put_sample(gp_store *s, const gp_sample *x) {
    if (gp_store_put_sample_row(s, x) != 0) return -1;
    return s->rollup ? gp_rollup_add(s->rollup, x) : 0;
}

/* Where a row's parameters go: a statement, the index before its first parameter and, for
 * the batch statements, what each of their parameters was bound to last. SQLite keeps a
 * binding across resets, so a number equal to the one bound last in that place (a clock,
 * a total, a zero: about half a sample row's fields from one flush to the next) is not
 * bound again: a bind is ~90 instructions, the compare a few. Text is always bound (the
 * row's own bytes, bound without a copy). */
typedef struct {
    sqlite3_stmt *st;
    int base;
    bound_val *last; /* NULL: bind everything */
} binder;

/* Whether parameter base+i already holds (kind, bits); records them when not. */
static int same_as_bound(const binder *b, int i, int kind, uint64_t bits) {
    if (!b->last) return 0;
    bound_val *l = &b->last[b->base + i - 1];
    if (l->kind == kind && (kind == 1 || l->bits == bits)) return 1;
    l->kind = kind;
    l->bits = bits;
    return 0;
}

static void put_d(const binder *b, int i, double v, int known) {
    uint64_t bits = 0;
    if (known) memcpy(&bits, &v, sizeof bits);
    if (!same_as_bound(b, i, known ? 2 : 1, bits)) bind_d_known(b->st, b->base + i, v, known);
}

static void put_i64(const binder *b, int i, int64_t v, int known) {
    if (!same_as_bound(b, i, known ? 3 : 1, known ? (uint64_t)v : 0))
        bind_i64_known(b->st, b->base + i, v, known);
}

static void put_text(const binder *b, int i, const char *v) {
    if (b->last) b->last[b->base + i - 1].kind = 0;
    bind_text_row(b->st, b->base + i, v);
}

static void bind_sample(const binder *b, const void *row) {
    const gp_sample *x = row;
    uint32_t v = x->valid;
    put_text(b, 1, x->uuid);
    put_i64(b, 2, x->ts_ns, 1);
    put_d(b, 3, x->gpu_util, v & GP_F_GPU_UTIL);
    put_d(b, 4, x->sm_active, v & GP_F_SM_ACTIVE);
    put_d(b, 5, x->sm_occupancy, v & GP_F_SM_OCCUPANCY);
    put_d(b, 6, x->tensor_active, v & GP_F_TENSOR_ACTIVE);
    put_d(b, 7, x->dram_active, v & GP_F_DRAM_ACTIVE);
    put_d(b, 8, x->mem_util, v & GP_F_MEM_UTIL);
    put_d(b, 9, x->fp16_active, v & GP_F_FP16_ACTIVE);
    put_d(b, 10, x->fp32_active, v & GP_F_FP32_ACTIVE);
    put_d(b, 11, x->fp64_active, v & GP_F_FP64_ACTIVE);
    put_i64(b, 12, (int64_t)x->mem_used_bytes, v & GP_F_MEM_USED);
    put_i64(b, 13, (int64_t)x->mem_total_bytes, v & GP_F_MEM_TOTAL);
    put_d(b, 14, x->power_w, v & GP_F_POWER);
    put_i64(b, 15, (int64_t)x->energy_mj, v & GP_F_ENERGY);
    put_d(b, 16, x->sm_clock_mhz, v & GP_F_SM_CLOCK);
    put_d(b, 17, x->mem_clock_mhz, v & GP_F_MEM_CLOCK);
    put_i64(b, 18, (int64_t)x->pcie_tx_bytes, v & GP_F_PCIE_TX);
    put_i64(b, 19, (int64_t)x->pcie_rx_bytes, v & GP_F_PCIE_RX);
    put_i64(b, 20, (int64_t)x->nvlink_tx_bytes, v & GP_F_NVLINK_TX);
    put_i64(b, 21, (int64_t)x->nvlink_rx_bytes, v & GP_F_NVLINK_RX);
    put_d(b, 22, x->temp_c, v & GP_F_TEMP);
    put_i64(b, 23, (int64_t)x->throttle_reasons, v & GP_F_THROTTLE);
    put_i64(b, 24, x->xid, v & GP_F_XID);
}

/* The results bound (job_results_hwm.t1_ns; INT64_MAX unknown) where the store applies
 * the rule of the triggers on samples and proc_samples itself; -1 (no row looks) where
 * the triggers run. Read once per batch: only an insert or update of job_results raises
 * it, and none runs between the bound's read and the batch's rows. */
static int64_t bound_of(gp_store *s, int which) {
    sqlite3_stmt *st = s->st[which];
    int64_t b = INT64_MAX; /* unreadable: every row looks */
    if (sqlite3_step(st) == SQLITE_ROW) b = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return b;
}

/* The higher of the results bound and the prefixes' (job_prefix_hwm.t_ns, migration 16):
 * a row after both touches neither table, the usual case (rows arrive in time order). */
static int64_t results_bound(gp_store *s) {
    if (!s->own_rows) return -1;
    int64_t b = bound_of(s, ST_RESULTS_BOUND), p = bound_of(s, ST_PREFIX_BOUND);
    return p > b ? p : b;
}

/* A sample or process row stored at ts_ns: the triggers' rule (each delete has its own
 * condition, so a row before the higher bound runs both). */
static int row_arrived(gp_store *s, int64_t bound, int64_t ts_ns) {
    if (ts_ns > bound) return 0;
    sqlite3_stmt *st = s->st[ST_RESULTS_UNDO];
    sqlite3_bind_int64(st, 1, ts_ns);
    if (run(s, st) != 0) return -1;
    st = s->st[ST_PREFIX_UNDO];
    sqlite3_bind_int64(st, 1, ts_ns);
    return run(s, st);
}

/* Runs the OR FAIL statement fresh; on a primary-key conflict (a row stored for the same
 * key), the OR REPLACE one, bound by bind(); then the results rule for the row. */
static int run_new_or_replace(gp_store *s, sqlite3_stmt *fresh, sqlite3_stmt *replace,
                              void (*bind)(const binder *, const void *), const void *row,
                              int64_t ts_ns, int64_t bound) {
    bind(&(binder){fresh, 0, NULL}, row);
    s->gate.own = 1;
    int rc = sqlite3_step(fresh);
    int conflict =
        rc != SQLITE_DONE && sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_PRIMARYKEY;
    sqlite3_reset(fresh);
    if (rc != SQLITE_DONE && !conflict) {
        s->gate.own = 0;
        note_rc(s, rc);
        return -1;
    }
    if (rc != SQLITE_DONE) {
        bind(&(binder){replace, 0, NULL}, row);
        rc = run(s, replace);
    } else {
        rc = 0;
    }
    s->gate.own = 0;
    return rc == 0 ? row_arrived(s, bound, ts_ns) : -1;
}

/* One row, with the bound read before it (the callers' batches read it once). */
static int put_sample_one(gp_store *s, const gp_sample *x, int64_t bound) {
    return run_new_or_replace(s, s->st[ST_SAMPLE_NEW], s->st[ST_SAMPLE], bind_sample, x, x->ts_ns,
                              bound);
}

int gp_store_put_sample_row(gp_store *s, const gp_sample *x) {
    return put_sample_one(s, x, results_bound(s));
}

static void bind_proc(const binder *b, const void *row) {
    const gp_proc_sample *p = row;
    put_text(b, 1, p->uuid);
    put_i64(b, 2, p->ts_ns, 1);
    put_i64(b, 3, p->pid, 1);
    put_d(b, 4, p->sm_share, p->valid & GP_P_SM_SHARE);
    put_i64(b, 5, (int64_t)p->mem_bytes, p->valid & GP_P_MEM);
    put_text(b, 6, p->job_id);
}

static int put_proc_one(gp_store *s, const gp_proc_sample *p, int64_t bound) {
    return run_new_or_replace(s, s->st[ST_PROC_NEW], s->st[ST_PROC], bind_proc, p, p->ts_ns, bound);
}

int gp_store_put_proc(gp_store *s, const gp_proc_sample *p) {
    return put_proc_one(s, p, results_bound(s));
}

/* Stores GP_STORE_BATCH_ROWS rows (sz bytes apart) with the batch statement st; returns
 * how many were stored, the first ones: all, or those before the row it stopped at (a
 * key already stored, a refused row, an error). OR FAIL keeps the rows inserted before a
 * failing one and SQLite's change count says how many (the triggers' deletes are not
 * counted in it); the caller puts the failing row alone, on the OR REPLACE path. */
static size_t put_batch(gp_store *s, sqlite3_stmt *st, bound_val *last,
                        void (*bind)(const binder *, const void *), int ncols, const char *rows,
                        size_t sz) {
    for (int r = 0; r < GP_STORE_BATCH_ROWS; r++)
        bind(&(binder){st, r * ncols, last}, rows + (size_t)r * sz);
    s->gate.own = 1;
    int rc = sqlite3_step(st);
    sqlite3_int64 done = rc == SQLITE_DONE ? GP_STORE_BATCH_ROWS : sqlite3_changes64(s->db);
    sqlite3_reset(st);
    s->gate.own = 0;
    return done >= 0 && done <= GP_STORE_BATCH_ROWS ? (size_t)done : 0;
}

static int put_samples(gp_store *s, const gp_sample *x, size_t n, int64_t bound) {
    int failed = 0;
    size_t i = 0;
    while (i < n) {
        int batch = s->own_rows && n - i >= GP_STORE_BATCH_ROWS;
        /* A device's first sample on this connection reads its stored rows into the rollup:
         * before the batch's rows are in the table (gp_rollup_prepare). */
        for (size_t k = 0; batch && s->rollup && k < GP_STORE_BATCH_ROWS; k++)
            if (gp_rollup_prepare(s->rollup, &x[i + k]) != 0) batch = 0;
        size_t done = batch ? put_batch(s, s->st[ST_SAMPLE_BATCH], s->sample_last, bind_sample,
                                        SAMPLE_COLS, (const char *)&x[i], sizeof *x)
                            : 0;
        for (size_t k = 0; k < done; k++)
            if (row_arrived(s, bound, x[i + k].ts_ns) != 0 ||
                (s->rollup && gp_rollup_add(s->rollup, &x[i + k]) != 0))
                failed++;
        i += done;
        if (done == GP_STORE_BATCH_ROWS) continue;
        /* A short tail, or the row a batch stopped at: alone (a conflict replaces). */
        if (put_sample_one(s, &x[i], bound) != 0 ||
            (s->rollup && gp_rollup_add(s->rollup, &x[i]) != 0))
            failed++;
        i++;
    }
    return failed;
}

static int put_procs(gp_store *s, const gp_proc_sample *p, size_t n, int64_t bound) {
    int failed = 0;
    size_t i = 0;
    while (i < n) {
        size_t done = s->own_rows && n - i >= GP_STORE_BATCH_ROWS
                          ? put_batch(s, s->st[ST_PROC_BATCH], s->proc_last, bind_proc, PROC_COLS,
                                      (const char *)&p[i], sizeof *p)
                          : 0;
        for (size_t k = 0; k < done; k++)
            if (row_arrived(s, bound, p[i + k].ts_ns) != 0) failed++;
        i += done;
        if (done == GP_STORE_BATCH_ROWS) continue;
        if (put_proc_one(s, &p[i], bound) != 0) failed++;
        i++;
    }
    return failed;
}

int gp_store_put_samples(gp_store *s, const gp_sample *x, size_t n) {
    return put_samples(s, x, n, n ? results_bound(s) : -1);
}

int gp_store_put_procs(gp_store *s, const gp_proc_sample *p, size_t n) {
    return put_procs(s, p, n, n ? results_bound(s) : -1);
}

int gp_store_put_rows(gp_store *s, const gp_sample *x, size_t n, const gp_proc_sample *p, size_t np,
                      int *failed_procs) {
    /* Nothing between the two raises the bound (only a job_results write does). */
    int64_t bound = n + np ? results_bound(s) : -1;
    int failed = put_samples(s, x, n, bound);
    *failed_procs = put_procs(s, p, np, bound);
    return failed;
}

int gp_store_put_job(gp_store *s, const gp_job *j) {
    sqlite3_stmt *st = s->st[ST_JOB_UPSERT];
    bind_text(st, 1, j->id);
    bind_text(st, 2, j->name);
    bind_text(st, 3, j->user);
    bind_text(st, 4, j->origin != GP_ORIGIN_UNKNOWN ? gp_origin_name(j->origin) : NULL);
    gp_store_bind_time(st, 5, j->submitted_ns);
    gp_store_bind_time(st, 6, j->allocated_ns);
    gp_store_bind_time(st, 7, j->ready_ns);
    gp_store_bind_time(st, 8, j->ended_ns);
    bind_text(st, 9, j->exit_state);
    bind_i64_known(st, 10, j->exit_code, j->exit_code >= 0);
    bind_text(st, 11, j->unit_name);
    bind_d_known(st, 12, j->flops_per_unit, j->flops_per_unit > 0);
    bind_d_known(st, 13, j->bytes_per_unit, j->bytes_per_unit > 0);
    bind_d_known(st, 14, j->slo_ttft_s, j->slo_ttft_s > 0);
    bind_d_known(st, 15, j->slo_tpot_s, j->slo_tpot_s > 0);
    bind_d_known(st, 16, j->slo_e2e_s, j->slo_e2e_s > 0);
    return run(s, st);
}

int gp_store_put_alloc(gp_store *s, const gp_alloc *a) {
    sqlite3_stmt *st = s->st[ST_ALLOC];
    bind_text(st, 1, a->job_id);
    bind_text(st, 2, a->uuid);
    sqlite3_bind_int64(st, 3, a->from_ns);
    gp_store_bind_time(st, 4, a->to_ns);
    return run(s, st);
}

static void job_blank(gp_job *j, const char *id) {
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    j->submitted_ns = j->allocated_ns = j->ready_ns = j->ended_ns = -1;
    j->exit_code = -1;
}

/* Folds lifecycle events into jobs/allocations. */
static int fold_lifecycle(gp_store *s, const gp_event *e) {
    gp_job j;
    job_blank(&j, e->job_id);
    switch (e->kind) {
    case GP_EV_HELLO:
        snprintf(j.unit_name, sizeof j.unit_name, "%s", e->name);
        snprintf(j.name, sizeof j.name, "%s", e->job_name);
        snprintf(j.user, sizeof j.user, "%s", e->user);
        j.flops_per_unit = e->flops_per_unit;
        j.bytes_per_unit = e->bytes_per_unit;
        j.slo_ttft_s = e->slo_ttft_s;
        j.slo_tpot_s = e->slo_tpot_s;
        j.slo_e2e_s = e->slo_e2e_s;
        return gp_store_put_job(s, &j);
    case GP_EV_JOB:
        snprintf(j.name, sizeof j.name, "%s", e->job_name);
        snprintf(j.user, sizeof j.user, "%s", e->user);
        if (!strcmp(e->name, "submitted"))
            j.submitted_ns = e->ts_ns;
        else if (!strcmp(e->name, "allocated"))
            j.allocated_ns = e->ts_ns;
        else if (!strcmp(e->name, "ended")) {
            j.ended_ns = e->ts_ns;
            j.exit_code = e->exit_code;
            snprintf(j.exit_state, sizeof j.exit_state, "%s",
                     e->exit_code < 0 ? "ended" : (e->exit_code == 0 ? "completed" : "failed"));
        }
        /* The line says who knows this lifecycle (a Slurm prolog says origin=slurm). */
        j.origin = e->origin[0] ? gp_origin_parse(e->origin) : GP_ORIGIN_TAG;
        if (gp_store_put_job(s, &j) != 0) return -1;
        if (j.ended_ns >= 0) {
            sqlite3_stmt *st = s->st[ST_ALLOC_CLOSE];
            bind_text(st, 1, e->job_id);
            sqlite3_bind_int64(st, 2, j.ended_ns);
            return run(s, st);
        }
        return 0;
    case GP_EV_ALLOC: {
        gp_alloc a;
        snprintf(a.job_id, sizeof a.job_id, "%s", e->job_id);
        snprintf(a.uuid, sizeof a.uuid, "%s", e->uuid);
        a.from_ns = e->from_ns;
        a.to_ns = e->to_ns;
        if (gp_store_put_job(s, &j) != 0) return -1; /* make sure the job row exists */
        return gp_store_put_alloc(s, &a);
    }
    case GP_EV_STEP:
    case GP_EV_REQUEST:
    case GP_EV_STAGE: {
        /* First progress = readiness. For a step, progress starts when the step started. */
        if (e->kind == GP_EV_STAGE && e->step >= 0) return 0; /* a declaration is no progress */
        int64_t t = e->ts_ns;
        if (e->kind == GP_EV_STEP && e->step_start_ns >= 0) t = e->step_start_ns;
        if (e->kind == GP_EV_REQUEST && e->arrival_ns >= 0) t = e->arrival_ns;
        if (e->kind == GP_EV_STAGE && e->start_ns >= 0) t = e->start_ns;
        sqlite3_stmt *st = s->st[ST_JOB_READY];
        bind_text(st, 1, e->job_id);
        sqlite3_bind_int64(st, 2, t);
        return run(s, st);
    }
    default:
        return 0;
    }
}

int gp_store_put_event(gp_store *s, const gp_event *e) {
    if (s->cache_steady_kib && ++s->tx_events == GP_STORE_FLOOD_EVENTS &&
        s->cache_kib != s->cache_flood_kib)
        set_cache_kib(s, s->cache_flood_kib); /* a flood: gp_store_tune_for_devices */
    if (fold_lifecycle(s, e) != 0) return -1;
    if (e->kind == GP_EV_ALLOC || e->kind == GP_EV_JOB) return 0; /* lives in jobs/allocations */
    sqlite3_stmt *st = s->st[ST_EVENT];
    bind_text(st, 1, e->job_id);
    sqlite3_bind_int64(st, 2, e->ts_ns);
    sqlite3_bind_int(st, 3, e->kind);
    bind_i64_known(st, 4, e->rank, e->rank >= 0);
    bind_i64_known(st, 5, e->step, e->step >= 0);
    bind_d_known(st, 6, e->units, e->units >= 0);
    gp_store_bind_time(st, 7, e->kind == GP_EV_STAGE ? e->start_ns : e->step_start_ns);
    bind_text(st, 8, e->name);
    bind_i64_known(st, 9, e->edge, e->edge > 0);
    gp_store_bind_time(st, 10, e->arrival_ns);
    gp_store_bind_time(st, 11, e->first_token_ns);
    bind_i64_known(st, 12, e->prompt_tokens, e->prompt_tokens >= 0);
    bind_i64_known(st, 13, e->output_tokens, e->output_tokens >= 0);
    sqlite3_bind_int(st, 14, e->ok);
    bind_i64_known(st, 15, e->item, e->item >= 0);
    gp_store_bind_time(st, 16, e->enqueue_ns);
    bind_text(st, 17, e->worker);
    bind_i64_known(st, 18, e->bytes, e->bytes >= 0);
    sqlite3_bind_int64(st, 19, (int64_t)gp_event_key(e));
    if (run(s, st) != 0) return -1;
    if (sqlite3_changes(s->db) == 0) {
        s->duplicates++;
        return 1;
    }
    return 0;
}

gp_store_commit_hist gp_store_commit_stats(const gp_store *s) {
    return s->commits;
}

uint64_t gp_store_duplicates(const gp_store *s) {
    return s->duplicates;
}

int gp_store_replace_findings(gp_store *s, const char *job_id, const gp_finding *f, size_t n) {
    sqlite3_stmt *del, *ins;
    if (sqlite3_prepare_v2(s->db, "DELETE FROM findings WHERE job_id IS ?1", -1, &del, NULL) !=
        SQLITE_OK)
        return -1;
    if (job_id) sqlite3_bind_text(del, 1, job_id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(del) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(del);
    if (rc) return rc;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO findings(job_id, class, scope, scope_id, t0_ns, t1_ns,"
                           " wasted_gpu_s, wasted_cost, confidence, summary, recommendation,"
                           " evidence_json, badput_not_ready_gpu_s, badput_startup_gpu_s,"
                           " badput_data_wait_gpu_s, badput_checkpoint_gpu_s,"
                           " badput_wasted_progress_gpu_s, badput_recovery_gpu_s,"
                           " badput_idle_allocated_gpu_s, badput_other_gpu_s, headroom_gpu_s,"
                           " headroom_cost, counterfactual) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,"
                           "?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)",
                           -1, &ins, NULL) != SQLITE_OK)
        return -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const gp_finding *x = &f[i];
        char ev[GP_EVIDENCE_MAX * 200] = "[";
        for (int k = 0; k < x->n_evidence; k++) {
            const gp_evidence *e = &x->evidence[k];
            char one[200];
            snprintf(one, sizeof one,
                     "%s{\"metric\":\"%s\",\"value\":%.9g,\"op\":\"%s\",\"threshold\":%.9g,"
                     "\"source\":\"%s\"}",
                     k ? "," : "", e->metric, e->value, e->op, e->threshold, e->source);
            strncat(ev, one, sizeof ev - strlen(ev) - 2);
        }
        strcat(ev, "]");
        if (job_id) sqlite3_bind_text(ins, 1, job_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(ins, 2, gp_finding_class_name(x->cls), -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 3, gp_scope_name(x->scope), -1, SQLITE_STATIC);
        bind_text(ins, 4, x->scope_id);
        gp_store_bind_time(ins, 5, x->t0_ns);
        gp_store_bind_time(ins, 6, x->t1_ns);
        bind_d_known(ins, 7, x->wasted_gpu_s, x->wasted_gpu_s >= 0);
        bind_d_known(ins, 8, x->wasted_cost, x->wasted_cost >= 0);
        sqlite3_bind_double(ins, 9, x->confidence);
        bind_text(ins, 10, x->summary);
        bind_text(ins, 11, x->recommendation);
        sqlite3_bind_text(ins, 12, ev, -1, SQLITE_TRANSIENT);
        /* buckets 1..8 of model/finding.h (slot 0, productive, is never badput) */
        for (int b = 1; b < GP_FINDING_BUCKETS; b++)
            bind_d_known(ins, 12 + b, x->badput_gpu_s[b], x->badput_gpu_s[b] >= 0);
        bind_d_known(ins, 21, x->headroom_gpu_s, x->headroom_gpu_s >= 0);
        bind_d_known(ins, 22, x->headroom_cost, x->headroom_cost >= 0);
        bind_text(ins, 23, x->counterfactual);
        rc = sqlite3_step(ins) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(ins);
        sqlite3_clear_bindings(ins);
    }
    sqlite3_finalize(ins);
    return rc;
}

int gp_store_retain(gp_store *s, int64_t cutoff_ns) {
    sqlite3_stmt *st;
    /* Events are kept: a report of a job longer than the window needs all its steps,
     * and samples are answered from the rollups (written in the same transaction as the
     * samples, so every row deleted here is rolled up). Spans go with the samples. */
    /* Open rollup buckets (written when they close, rollup.h) that hold a sample about to
     * be deleted are written first. */
    if (s->rollup && gp_rollup_sync(s->rollup, cutoff_ns) != 0) return -1;
        /* A stored job result that read a raw sample deleted here would no longer be what
         * computing it gives (engine/results/job_results.h): it goes first. */
        /* Raw rows by device, through the primary key (uuid, ts_ns): a plain ts_ns < ?1 scans
         * every raw row of the window on every pass (a pass a minute; 4 M rows for 3 days of 8
         * GPUs), this reads only what it deletes. The devices come from a loose index scan. */
#define RETAIN_BY_UUID(t)                                                                          \
    "WITH RECURSIVE su(u) AS (SELECT (SELECT min(uuid) FROM " t ") UNION ALL"                      \
    " SELECT (SELECT min(uuid) FROM " t " WHERE uuid > su.u) FROM su WHERE su.u IS NOT NULL)"      \
    " DELETE FROM " t " WHERE uuid IN (SELECT u FROM su WHERE u IS NOT NULL) AND ts_ns < ?1"
    /* So does a running job's accounting prefix (engine/accounting/acct_prefix.h). */
    static const char *const sql[] = {"DELETE FROM job_results WHERE raw_t0_ns < ?1",
                                      "DELETE FROM job_prefix WHERE raw_t0_ns < ?1",
                                      RETAIN_BY_UUID("samples"), RETAIN_BY_UUID("proc_samples"),
                                      "DELETE FROM spans WHERE end_ns < ?1"};
#undef RETAIN_BY_UUID
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        if (!(st = gp_store_stmt(s, sql[i]))) return -1;
        sqlite3_bind_int64(st, 1, cutoff_ns);
        if (step_cached(st) != 0) return -1;
    }
    return 0;
}

/* Jobs whose events may go (store.h): ended, allocations closed, a stored result (not a
 * sealing child's claim) whose range ends before the cutoff, and no stage event (the
 * report's pipeline section reads those from the events, not from the result). Their
 * result moves to job_events_pruned before any event goes, in the caller's transaction. */
static const char RETAIN_MARK_SQL[] =
    "INSERT OR IGNORE INTO job_events_pruned(job_id, before_ns, pruned_at_ns, sum_fp,"
    " diag_fp, t0_ns, t1_ns, raw_t0_ns, summary, diag)"
    " SELECT r.job_id, r.t1_ns + 1, ?2, r.sum_fp, r.diag_fp, r.t0_ns, r.t1_ns, r.raw_t0_ns,"
    "  r.summary, r.diag FROM job_results r JOIN jobs j ON j.id = r.job_id"
    " WHERE r.t1_ns < ?1 AND r.sum_fp <> 'sealing' AND length(r.summary) > 0"
    "  AND j.ended_ns > 0 AND j.ended_ns < ?1"
    "  AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.job_id = r.job_id AND a.to_ns IS NULL)"
    "  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.job_id = r.job_id AND e.kind = 5)";

/* The moved results leave job_results (one place for each; the sealing writer skips
 * pruned jobs), then at most max_rows of their events go: a pass costs ~2.5 us an event,
 * so a day-long trainer's million events are spread over passes rather than stall one
 * tick for seconds. */
static const char RETAIN_MOVED_SQL[] =
    "DELETE FROM job_results WHERE job_id IN (SELECT job_id FROM job_events_pruned)";
static const char RETAIN_EVENTS_SQL[] =
    /* CROSS JOIN: the few marked jobs outside, each one's events by events_job_ts; the
     * other order scans every event */
    "DELETE FROM events WHERE id IN (SELECT e.id FROM job_events_pruned p"
    " CROSS JOIN events e WHERE e.job_id = p.job_id"
    /* only the range the moved result covers: events of a later run under the same id
     * stay (they make the job unknown, GP_PRUNED_STILL_SQL, not gone) */
    " AND e.ts_ns < p.before_ns LIMIT ?1)";

int64_t gp_store_retain_events(gp_store *s, int64_t cutoff_ns, int64_t now_ns, int64_t max_rows) {
    sqlite3_stmt *st;
    if (!(st = gp_store_stmt(s, RETAIN_MARK_SQL))) return -1;
    sqlite3_bind_int64(st, 1, cutoff_ns);
    sqlite3_bind_int64(st, 2, now_ns);
    if (step_cached(st) != 0) return -1;
    if (!(st = gp_store_stmt(s, RETAIN_MOVED_SQL)) || step_cached(st) != 0) return -1;
    if (!(st = gp_store_stmt(s, RETAIN_EVENTS_SQL))) return -1;
    sqlite3_bind_int64(st, 1, max_rows > 0 ? max_rows : -1);
    if (step_cached(st) != 0) return -1;
    return sqlite3_changes64(s->db);
}

int gp_store_events_pruned(gp_store *s, const char *job_id, int64_t *before_ns) {
    sqlite3_stmt *st;
    *before_ns = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT before_ns FROM job_events_pruned WHERE job_id = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return 0; /* no table: a store from before migration 15, nothing pruned */
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *before_ns = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* 1 when a pruned job has rows past its moved result (an event at or after before_ns, an
 * allocation or an end after the result's t1: a later run under the same id), 0 when not,
 * -1 on a store error. */
static int pruned_job_grew(gp_store *s, const char *job_id) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT 1 FROM job_events_pruned p WHERE p.job_id = ?1 AND NOT (" GP_PRUNED_STILL_SQL
            ")",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

int gp_store_events_pruned_err(gp_store *s, const char *job_id, char *err, size_t errlen) {
    int64_t before = -1;
    int p = gp_store_events_pruned(s, job_id, &before);
    int grew = p > 0 ? pruned_job_grew(s, job_id) : 0;
    if (p < 0 || grew < 0)
        snprintf(err, errlen, "job '%s': store: %s", job_id, gp_store_errmsg(s));
    else if (p > 0) {
        time_t t = (time_t)(before / 1000000000LL);
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
        if (grew)
            snprintf(err, errlen,
                     "job '%s': its events before %s were deleted by the agent's event retention"
                     " and it has rows since (a later run under the same id?): its figures are"
                     " unknown",
                     job_id, when);
        else
            snprintf(err, errlen,
                     "job '%s': its events before %s were deleted by the agent's event retention;"
                     " only its stored whole-history result is known (goodput report)",
                     job_id, when);
    }
    return p != 0 ? -1 : 0;
}

/* ---- queries ---- */

/* Grows *arr (elements of size sz) to hold at least need. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *p = realloc(*arr, nc * sz);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

/* Sizes *arr for the rows the count statement st (prepared and bound; finalized here) says
 * there are, so a long list is allocated once at its size instead of doubling (a doubling
 * array peaks at up to three times the rows while realloc copies). A writer may add rows
 * between the count and the read: the caller still grows past cap. 0, or -1 when out of
 * memory. */
static int presize(sqlite3_stmt *st, void **arr, size_t *cap, size_t sz) {
    if (!st) return 0;
    sqlite3_int64 rows = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rows <= 0) return 0;
    void *p = malloc((size_t)rows * sz);
    if (!p) return -1;
    *arr = p;
    *cap = (size_t)rows;
    return 0;
}

/* Frees a list a query could not finish and reports the failure. */
static int list_failed(void **out, size_t *n) {
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

/* Prepares a query over one device's rows in [t0, t1) (?1 uuid, ?2 t0, ?3 t1). */
static sqlite3_stmt *device_range(gp_store *s, const char *sql, const char *uuid, int64_t t0_ns,
                                  int64_t t1_ns) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, t0_ns);
    sqlite3_bind_int64(st, 3, t1_ns);
    return st;
}

static void col_text(sqlite3_stmt *st, int i, char *dst, size_t cap) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}
static int64_t col_time(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}
static int col_known(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) != SQLITE_NULL;
}

int gp_store_list_devices(gp_store *s, gp_device **out, size_t *n) {
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int oom = 0; /* a list cut short by memory is an error, never a shorter answer */
    if (sqlite3_prepare_v2(s->db,
                           "SELECT uuid, idx, name, host, pci_bus_id, memory_total_bytes, mig_mode,"
                           " parent_uuid, model FROM devices ORDER BY host, idx, uuid",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        gp_device *d = &(*out)[(*n)++];
        memset(d, 0, sizeof *d);
        col_text(st, 0, d->uuid, sizeof d->uuid);
        d->index = sqlite3_column_int(st, 1);
        col_text(st, 2, d->name, sizeof d->name);
        col_text(st, 3, d->host, sizeof d->host);
        col_text(st, 4, d->pci_bus_id, sizeof d->pci_bus_id);
        d->memory_total_bytes = (uint64_t)sqlite3_column_int64(st, 5);
        d->mig_mode = col_known(st, 6) ? sqlite3_column_int(st, 6) : -1;
        col_text(st, 7, d->parent_uuid, sizeof d->parent_uuid);
        char model[64];
        col_text(st, 8, model, sizeof model);
        d->spec = model[0] ? gp_spec_lookup(model) : gp_spec_lookup(d->name);
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

static void read_job(sqlite3_stmt *st, gp_job *j) {
    memset(j, 0, sizeof *j);
    col_text(st, 0, j->id, sizeof j->id);
    col_text(st, 1, j->name, sizeof j->name);
    col_text(st, 2, j->user, sizeof j->user);
    char origin[32];
    col_text(st, 3, origin, sizeof origin);
    j->origin = gp_origin_parse(origin);
    j->submitted_ns = col_time(st, 4);
    j->allocated_ns = col_time(st, 5);
    j->ready_ns = col_time(st, 6);
    j->ended_ns = col_time(st, 7);
    col_text(st, 8, j->exit_state, sizeof j->exit_state);
    j->exit_code = col_known(st, 9) ? sqlite3_column_int64(st, 9) : -1;
    col_text(st, 10, j->unit_name, sizeof j->unit_name);
    j->flops_per_unit = sqlite3_column_double(st, 11);
    j->bytes_per_unit = sqlite3_column_double(st, 12);
    j->slo_ttft_s = sqlite3_column_double(st, 13);
    j->slo_tpot_s = sqlite3_column_double(st, 14);
    j->slo_e2e_s = sqlite3_column_double(st, 15);
}

#define JOB_COLS                                                                                   \
    "id, name, user, origin, submitted_ns, allocated_ns, ready_ns, ended_ns, exit_state,"          \
    " exit_code, unit_name, flops_per_unit, bytes_per_unit, slo_ttft_s, slo_tpot_s, slo_e2e_s"

int gp_store_list_jobs(gp_store *s, gp_job **out, size_t *n) {
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int oom = 0; /* a list cut short by memory is an error, never a shorter answer */
    if (sqlite3_prepare_v2(s->db,
                           "SELECT " JOB_COLS " FROM jobs ORDER BY COALESCE(allocated_ns, "
                           "submitted_ns, ready_ns), id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        read_job(st, &(*out)[(*n)++]);
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

int gp_store_get_job(gp_store *s, const char *id, gp_job *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT " JOB_COLS " FROM jobs WHERE id = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    int found = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        read_job(st, out);
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

static int list_allocs(gp_store *s, const char *sql, const char *job_id, gp_alloc **out,
                       size_t *n) {
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int oom = 0; /* a list cut short by memory is an error, never a shorter answer */
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        gp_alloc *a = &(*out)[(*n)++];
        memset(a, 0, sizeof *a); /* share 0: the whole device, as stored */
        col_text(st, 0, a->job_id, sizeof a->job_id);
        col_text(st, 1, a->uuid, sizeof a->uuid);
        a->from_ns = sqlite3_column_int64(st, 2);
        a->to_ns = col_time(st, 3);
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

int gp_store_job_allocs(gp_store *s, const char *job_id, gp_alloc **out, size_t *n) {
    return list_allocs(s,
                       "SELECT job_id, uuid, from_ns, to_ns FROM allocations WHERE job_id = ?1"
                       " ORDER BY from_ns, uuid",
                       job_id, out, n);
}

int gp_store_neighbour_allocs(gp_store *s, const char *job_id, gp_alloc **out, size_t *n) {
    return list_allocs(s,
                       "SELECT job_id, uuid, from_ns, to_ns FROM allocations WHERE job_id != ?1"
                       " AND uuid IN (SELECT uuid FROM allocations WHERE job_id = ?1)"
                       " ORDER BY uuid, job_id, from_ns",
                       job_id, out, n);
}

int gp_store_open_alloc_exists(gp_store *s, const char *job_id, const char *uuid) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT 1 FROM allocations WHERE job_id = ?1 AND uuid = ?2 AND"
                           " to_ns IS NULL LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, uuid, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return rc;
}

/* The events queries' columns, in the order event_row reads them. */
#define EVENT_SELECT                                                                               \
    "SELECT job_id, ts_ns, kind, rank, step, units, start_ns, name, edge, arrival_ns,"             \
    " first_token_ns, prompt_tokens, output_tokens, ok, item, enqueue_ns, worker, bytes FROM "     \
    "events"

/* One row of an EVENT_SELECT query into *e. */
static void event_row(sqlite3_stmt *st, gp_event *e) {
    gp_event_init(e, (gp_event_kind)sqlite3_column_int(st, 2));
    col_text(st, 0, e->job_id, sizeof e->job_id);
    e->ts_ns = sqlite3_column_int64(st, 1);
    e->rank = col_time(st, 3);
    e->step = col_time(st, 4);
    e->units = col_known(st, 5) ? sqlite3_column_double(st, 5) : -1;
    if (e->kind == GP_EV_STAGE)
        e->start_ns = col_time(st, 6);
    else
        e->step_start_ns = col_time(st, 6);
    col_text(st, 7, e->name, sizeof e->name);
    e->edge = col_known(st, 8) ? sqlite3_column_int(st, 8) : 0;
    e->arrival_ns = col_time(st, 9);
    e->first_token_ns = col_time(st, 10);
    e->prompt_tokens = col_time(st, 11);
    e->output_tokens = col_time(st, 12);
    e->ok = sqlite3_column_int(st, 13);
    e->item = col_time(st, 14);
    e->enqueue_ns = col_time(st, 15);
    col_text(st, 16, e->worker, sizeof e->worker);
    e->bytes = col_time(st, 17);
}

int gp_store_job_events(gp_store *s, const char *job_id, int kind, gp_event **out, size_t *n) {
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int oom = 0; /* a list cut short by memory is an error, never a shorter answer */
    /* Stage events (every report looks for them in every job) through their partial index
     * (schema 13): a trainer's million steps are then not visited twice to find none. A
     * store without the index (older, read as is) falls back to the job's time index. */
    _Static_assert(GP_EV_STAGE == 5, "events_stage is the partial index WHERE kind = 5");
    int stage = kind == GP_EV_STAGE &&
                sqlite3_prepare_v2(s->db,
                                   EVENT_SELECT " INDEXED BY events_stage WHERE job_id = ?1"
                                                " AND kind = 5 AND ?2 = ?2 ORDER BY ts_ns, id",
                                   -1, &st, NULL) == SQLITE_OK;
    if (!stage && sqlite3_prepare_v2(s->db,
                                     EVENT_SELECT " WHERE job_id = ?1"
                                                  " AND (?2 = 0 OR kind = ?2) ORDER BY ts_ns, id",
                                     -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, kind);
    sqlite3_stmt *cnt = NULL;
    if (sqlite3_prepare_v2(s->db,
                           /* the time index: the planner's choice, the dedup index, visits the rows
                            * in random order (4 s instead of 0.3 s for a day of 8 ranks' steps) */
                           stage ? "SELECT count(*) FROM events INDEXED BY events_stage"
                                   " WHERE job_id = ?1 AND kind = 5 AND ?2 = ?2"
                                 : "SELECT count(*) FROM events INDEXED BY events_job_ts"
                                   " WHERE job_id = ?1 AND (?2 = 0 OR kind = ?2)",
                           -1, &cnt, NULL) == SQLITE_OK) {
        sqlite3_bind_text(cnt, 1, job_id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(cnt, 2, kind);
    }
    if (presize(cnt, (void **)out, &cap, sizeof **out)) oom = 1;
    while (!oom && sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        event_row(st, &(*out)[(*n)++]);
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

/* Calls fn on each event a prepared, bound statement selects (EVENT_SELECT); finalizes it. */
static int events_each(sqlite3_stmt *st, int (*fn)(void *ctx, const gp_event *e), void *ctx) {
    gp_event e;
    int rc = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        event_row(st, &e);
        if (fn(ctx, &e) < 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && r != SQLITE_DONE) rc = -1;
    sqlite3_finalize(st);
    return rc;
}

int gp_store_job_events_each(gp_store *s, const char *job_id,
                             int (*fn)(void *ctx, const gp_event *e), void *ctx) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           EVENT_SELECT " WHERE job_id = ?1"
                                        " ORDER BY ts_ns, id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    return events_each(st, fn, ctx);
}

int gp_store_job_events_range_each(gp_store *s, const char *job_id, int64_t t0_ns, int64_t t1_ns,
                                   int (*fn)(void *ctx, const gp_event *e), void *ctx) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           EVENT_SELECT " WHERE job_id = ?1 AND ts_ns >= ?2 AND ts_ns <= ?3"
                                        " ORDER BY ts_ns, id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, t0_ns);
    sqlite3_bind_int64(st, 3, t1_ns);
    return events_each(st, fn, ctx);
}

/* One row of "SELECT * FROM samples" into *x. */
static void sample_row(sqlite3_stmt *st, gp_sample *x) {
    memset(x, 0, sizeof *x);
    col_text(st, 0, x->uuid, sizeof x->uuid);
    x->ts_ns = sqlite3_column_int64(st, 1);
#define RD(col, field, bit)                                                                        \
    if (col_known(st, col)) {                                                                      \
        x->field = sqlite3_column_double(st, col);                                                 \
        x->valid |= bit;                                                                           \
    }
#define RI(col, field, bit)                                                                        \
    if (col_known(st, col)) {                                                                      \
        x->field = (uint64_t)sqlite3_column_int64(st, col);                                        \
        x->valid |= bit;                                                                           \
    }
    RD(2, gpu_util, GP_F_GPU_UTIL)
    RD(3, sm_active, GP_F_SM_ACTIVE)
    RD(4, sm_occupancy, GP_F_SM_OCCUPANCY)
    RD(5, tensor_active, GP_F_TENSOR_ACTIVE)
    RD(6, dram_active, GP_F_DRAM_ACTIVE)
    RD(7, mem_util, GP_F_MEM_UTIL)
    RD(8, fp16_active, GP_F_FP16_ACTIVE)
    RD(9, fp32_active, GP_F_FP32_ACTIVE)
    RD(10, fp64_active, GP_F_FP64_ACTIVE)
    RI(11, mem_used_bytes, GP_F_MEM_USED)
    RI(12, mem_total_bytes, GP_F_MEM_TOTAL)
    RD(13, power_w, GP_F_POWER)
    RI(14, energy_mj, GP_F_ENERGY)
    RD(15, sm_clock_mhz, GP_F_SM_CLOCK)
    RD(16, mem_clock_mhz, GP_F_MEM_CLOCK)
    RI(17, pcie_tx_bytes, GP_F_PCIE_TX)
    RI(18, pcie_rx_bytes, GP_F_PCIE_RX)
    RI(19, nvlink_tx_bytes, GP_F_NVLINK_TX)
    RI(20, nvlink_rx_bytes, GP_F_NVLINK_RX)
    RD(21, temp_c, GP_F_TEMP)
    RI(22, throttle_reasons, GP_F_THROTTLE)
    if (col_known(st, 23)) {
        x->xid = sqlite3_column_int64(st, 23);
        x->valid |= GP_F_XID;
    }
#undef RD
#undef RI
}

#define DEVICE_SAMPLES_SQL                                                                         \
    "SELECT * FROM samples WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3 ORDER BY ts_ns"

int gp_store_device_samples(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                            gp_sample **out, size_t *n) {
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int oom = 0; /* a list cut short by memory is an error, never a shorter answer */
    st = device_range(s, DEVICE_SAMPLES_SQL, uuid, t0_ns, t1_ns);
    if (!st) return -1;
    if (presize(device_range(s,
                             "SELECT count(*) FROM samples WHERE uuid = ?1 AND ts_ns >= ?2"
                             " AND ts_ns < ?3",
                             uuid, t0_ns, t1_ns),
                (void **)out, &cap, sizeof **out))
        oom = 1;
    while (!oom && sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        sample_row(st, &(*out)[(*n)++]);
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

int gp_store_device_samples_each(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                                 int (*fn)(void *ctx, const gp_sample *x), void *ctx) {
    sqlite3_stmt *st = device_range(s, DEVICE_SAMPLES_SQL, uuid, t0_ns, t1_ns);
    if (!st) return -1;
    gp_sample x;
    int rc = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        sample_row(st, &x);
        if (fn(ctx, &x) < 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && r != SQLITE_DONE) rc = -1;
    sqlite3_finalize(st);
    return rc;
}

int gp_store_device_sample_times_each(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                                      int (*fn)(void *ctx, int64_t ts_ns), void *ctx) {
    sqlite3_stmt *st = device_range(s,
                                    "SELECT ts_ns FROM samples WHERE uuid = ?1 AND ts_ns >= ?2"
                                    " AND ts_ns < ?3 ORDER BY ts_ns",
                                    uuid, t0_ns, t1_ns);
    if (!st) return -1;
    int rc = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW)
        if (fn(ctx, sqlite3_column_int64(st, 0)) < 0) {
            rc = -1;
            break;
        }
    if (rc == 0 && r != SQLITE_DONE) rc = -1;
    sqlite3_finalize(st);
    return rc;
}

/* Reads the rows of st (uuid, ts_ns, pid, sm_share, mem_bytes, job_id) onto *out and
 * finalizes it; cap: *out's room (presized or 0). */
static int proc_rows(sqlite3_stmt *st, gp_proc_sample **out, size_t *n, size_t cap, int oom) {
    while (!oom && sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        gp_proc_sample *p = &(*out)[(*n)++];
        memset(p, 0, sizeof *p);
        col_text(st, 0, p->uuid, sizeof p->uuid);
        p->ts_ns = sqlite3_column_int64(st, 1);
        p->pid = sqlite3_column_int64(st, 2);
        if (col_known(st, 3)) {
            p->sm_share = sqlite3_column_double(st, 3);
            p->valid |= GP_P_SM_SHARE;
        }
        if (col_known(st, 4)) {
            p->mem_bytes = (uint64_t)sqlite3_column_int64(st, 4);
            p->valid |= GP_P_MEM;
        }
        col_text(st, 5, p->job_id, sizeof p->job_id);
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

int gp_store_device_procs(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                          gp_proc_sample **out, size_t *n) {
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    sqlite3_stmt *st =
        device_range(s,
                     "SELECT uuid, ts_ns, pid, sm_share, mem_bytes, job_id FROM proc_samples"
                     " WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3 ORDER BY ts_ns, pid",
                     uuid, t0_ns, t1_ns);
    if (!st) return -1;
    /* a list cut short by memory is an error, never a shorter answer */
    int oom =
        presize(device_range(s,
                             "SELECT count(*) FROM proc_samples WHERE uuid = ?1 AND ts_ns >= ?2"
                             " AND ts_ns < ?3",
                             uuid, t0_ns, t1_ns),
                (void **)out, &cap, sizeof **out) != 0;
    return proc_rows(st, out, n, cap, oom);
}

int gp_store_device_procs_foreign(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                                  const char *job_id, double min_sm_share, gp_proc_sample **out,
                                  size_t *n) {
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = device_range(
        s,
        "SELECT uuid, ts_ns, pid, sm_share, mem_bytes, job_id FROM proc_samples"
        " WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3 AND job_id IS NOT NULL AND job_id <> ''"
        " AND job_id <> ?4 AND sm_share > ?5 ORDER BY ts_ns, pid",
        uuid, t0_ns, t1_ns);
    if (!st) return -1;
    sqlite3_bind_text(st, 4, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 5, min_sm_share);
    return proc_rows(st, out, n, 0, 0);
}

int gp_store_list_findings(gp_store *s, const char *job_id, gp_finding **out, size_t *n) {
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int oom = 0; /* a list cut short by memory is an error, never a shorter answer */
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT class, scope, scope_id, t0_ns, t1_ns, wasted_gpu_s, wasted_cost,"
            " confidence, summary, recommendation, job_id, headroom_gpu_s, headroom_cost,"
            " counterfactual, badput_not_ready_gpu_s, badput_startup_gpu_s,"
            " badput_data_wait_gpu_s, badput_checkpoint_gpu_s, badput_wasted_progress_gpu_s,"
            " badput_recovery_gpu_s, badput_idle_allocated_gpu_s, badput_other_gpu_s"
            " FROM findings WHERE ?1 IS NULL OR job_id = ?1"
            " ORDER BY COALESCE(wasted_gpu_s, -1) DESC, COALESCE(headroom_gpu_s, -1) DESC",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (job_id) sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow((void **)out, &cap, *n + 1, sizeof **out)) {
            oom = 1;
            break;
        }
        gp_finding *f = &(*out)[(*n)++];
        memset(f, 0, sizeof *f);
        char name[48];
        col_text(st, 0, name, sizeof name);
        int c = gp_finding_class_parse(name);
        f->cls = c < 0 ? GP_FC__COUNT : (gp_finding_class)c;
        col_text(st, 1, name, sizeof name);
        f->scope = !strcmp(name, "cluster")  ? GP_SCOPE_CLUSTER
                   : !strcmp(name, "device") ? GP_SCOPE_DEVICE
                   : !strcmp(name, "rank")   ? GP_SCOPE_RANK
                   : !strcmp(name, "stage")  ? GP_SCOPE_STAGE
                                             : GP_SCOPE_JOB;
        col_text(st, 2, f->scope_id, sizeof f->scope_id);
        f->t0_ns = col_time(st, 3);
        f->t1_ns = col_time(st, 4);
        f->wasted_gpu_s = col_known(st, 5) ? sqlite3_column_double(st, 5) : -1;
        f->wasted_cost = col_known(st, 6) ? sqlite3_column_double(st, 6) : -1;
        f->confidence = sqlite3_column_double(st, 7);
        col_text(st, 8, f->summary, sizeof f->summary);
        col_text(st, 9, f->recommendation, sizeof f->recommendation);
        col_text(st, 10, f->job_id, sizeof f->job_id);
        f->headroom_gpu_s = col_known(st, 11) ? sqlite3_column_double(st, 11) : -1;
        f->headroom_cost = col_known(st, 12) ? sqlite3_column_double(st, 12) : -1;
        col_text(st, 13, f->counterfactual, sizeof f->counterfactual);
        /* a row from before migration 4 has no buckets: its badput is not split, and
         * its old "wasted" number mixed badput with headroom, so it is not shown as badput */
        int split = 0;
        for (int b = 1; b < GP_FINDING_BUCKETS; b++)
            split |= col_known(st, 13 + b);
        for (int b = 0; b < GP_FINDING_BUCKETS; b++)
            f->badput_gpu_s[b] = !split ? -1
                                 : b == 0 || !col_known(st, 13 + b)
                                     ? 0
                                     : sqlite3_column_double(st, 13 + b);
        if (!split && !col_known(st, 11)) f->wasted_gpu_s = f->wasted_cost = -1;
    }
    sqlite3_finalize(st);
    return oom ? list_failed((void **)out, n) : 0;
}

int gp_store_collect_ids(sqlite3_stmt *st, char (**ids)[GP_JOB_ID_MAX], int64_t **vals,
                         size_t *n_out) {
    size_t n = 0, cap = 0;
    char(*v)[GP_JOB_ID_MAX] = NULL;
    int64_t *t = NULL;
    int rc, oom = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (!id) continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 16;
            void *p = realloc(v, c * sizeof *v);
            if (p) v = p;
            void *q = p ? realloc(t, c * sizeof *t) : NULL;
            if (q) t = q;
            if (!p || !q) {
                oom = 1;
                break;
            }
            cap = c;
        }
        snprintf(v[n], GP_JOB_ID_MAX, "%s", id);
        t[n++] = sqlite3_column_int64(st, 1);
    }
    *ids = v;
    *vals = t;
    *n_out = n;
    return !oom && (rc == SQLITE_DONE || rc == SQLITE_ROW) ? 0 : -1;
}
