/* store.h: the SQLite store (WAL mode): devices, jobs, allocations, samples, per-process
 * samples, events, findings. Schema versioned with migrations (store/schema.c).
 *
 * Writes are buffered by the caller between gp_store_begin and gp_store_commit: one
 * transaction per flush, so a crash loses at most the open flush and never corrupts
 * the file (SQLite WAL + synchronous=NORMAL). Lifecycle events (job, alloc, hello) are
 * folded into the jobs and allocations tables as they are stored.
 *
 * Query functions return arrays the caller frees with free(). */
#ifndef GP_STORE_STORE_H
#define GP_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "model/device.h"
#include "model/event.h"
#include "model/finding.h"
#include "model/job.h"
#include "model/sample.h"
#include "store/checkpointer.h"

typedef struct gp_store gp_store;

/* GP_STORE_READONLY never writes: where the store's directory is not writable (a
 * read-only mount) it is opened immutable, and a store one schema version old is read
 * without migrating it. GP_STORE_OWN_ROWS (a writer of many sample and process rows: the
 * agent): the job_results rule of the triggers on those two tables is applied by the
 * store itself, per batch, and the rows are written GP_STORE_BATCH_ROWS per statement
 * (store/own_rows.h); setting it up costs ~1.4 M instructions at open, which a writer of
 * a few rows (the sealing child, a CLI command) does not pay. */
enum { GP_STORE_READONLY = 1, GP_STORE_OWN_ROWS = 2 };

int gp_store_open(const char *path, int flags, gp_store **out, char *err, size_t errlen);
/* Process-wide, before the first store opens (SQLite's configuration takes effect only
 * before it initialises; later it is a no-op returning -1): every page cache, the
 * connections' and each temporary b-tree's (ORDER BY, DISTINCT, IN (SELECT ...)), gets
 * its pages one at a time as it needs them, instead of SQLite's first allocation of 20
 * pages (~88 KiB) that it writes through whole at once. For the agent, whose peak RSS is
 * its budget: a /metrics render opens several such b-trees a second, and each block was
 * resident for the render's length on top of everything else (docs/benchmarks.md, agent
 * --listen, 2026-12-03). 0 ok. */
int gp_store_lean_page_caches(void);
void gp_store_close(gp_store *s);
sqlite3 *gp_store_db(gp_store *s); /* for modules with queries of their own */
/* A statement for sql, prepared on the first call and kept until the store closes, reset
 * and its bindings cleared on each later one: for the agent's passes (retention, the sealing
 * hook's candidates) that run once a minute for years, where preparing each time was most
 * of their cost (bench/agent_cost). sql is the key by pointer: pass a string with static
 * storage, the same one each time. The caller resets it after use (sqlite3_reset) and never
 * finalizes it. NULL when it cannot be prepared (the store's error says why). */
sqlite3_stmt *gp_store_stmt(gp_store *s, const char *sql);
/* Binds a time (ns) to parameter i of such a module's statement: NULL when unknown (< 0). */
void gp_store_bind_time(sqlite3_stmt *st, int i, int64_t v_ns);
/* A memo of the store's time span (engine/accounting/job_summary.h gp_store_time_span,
 * which seeks the first and last row of every device: ~25 ms at 1,000 GPUs, asked for by
 * every job of a report). _get returns 1 with the span set when it was stored at the same
 * content version (no row changed through this connection, sqlite3_total_changes64, and
 * no commit by another, PRAGMA data_version), else 0 and notes the version now; _set
 * stores a span read after that _get under the version _get noted. */
int gp_store_span_memo_get(gp_store *s, int64_t *t0_ns, int64_t *t1_ns);
void gp_store_span_memo_set(gp_store *s, int64_t t0_ns, int64_t t1_ns);
const char *gp_store_path(const gp_store *s);

/* Sizes SQLite's page cache for a node of n_devices: each device appends to its own
 * region of the samples B-tree, so the hot leaf pages grow with the device count; a
 * cache that holds them keeps inserts from re-reading pages (GP_STORE_STEADY_CACHE_KIB
 * minimum). From then on a transaction that puts GP_STORE_FLOOD_EVENTS events (an event
 * flood) raises the cache to GP_STORE_FLOOD_CACHE_KIB at once, and GP_STORE_QUIET_COMMITS
 * commits of fewer set it back. */
void gp_store_tune_for_devices(gp_store *s, size_t n_devices);
#define GP_STORE_STEADY_CACHE_KIB 1024
#define GP_STORE_FLOOD_CACHE_KIB 2048
/* a node's steps at 100 a second per GPU are ~800 events a second at 8 GPUs; the overload
 * test (tests/integration/reliability_overload.sh) stores 100,000 and more */
#define GP_STORE_FLOOD_EVENTS 5000u
#define GP_STORE_QUIET_COMMITS 5u

int gp_store_begin(gp_store *s);
int gp_store_commit(gp_store *s);
/* How long a statement waits for another connection's write lock before SQLITE_BUSY. */
#define GP_STORE_BUSY_MS 5000
/* A transaction holding the write lock, for a writer about to write: the open one when it
 * has written already, else a new one (BEGIN IMMEDIATE, waiting at most wait_ms for another
 * writer; an open one that only read is ended first). -1 when another writer held the lock
 * that long (no transaction is then open) or on error: the caller keeps its rows for a
 * later try. The agent waits briefly so that its loop keeps ticking and reading its
 * sockets while the sealing child or a prolog writes. (A deferred BEGIN followed by reads
 * could not write at all once another connection committed in between, SQLITE_BUSY_SNAPSHOT,
 * and would wait the timeout again at every statement.) */
int gp_store_begin_write(gp_store *s, int wait_ms);

int gp_store_put_device(gp_store *s, const gp_device *d);
int gp_store_put_sample(gp_store *s, const gp_sample *x);
/* The raw row alone, without the rollups gp_store_put_sample also folds it into: for
 * analyze's temporary store, which rolls up every sample (gp_rollup_add) but keeps only
 * the raw rows its report reads (analyze/prom_map.h). */
int gp_store_put_sample_row(gp_store *s, const gp_sample *x);
int gp_store_put_proc(gp_store *s, const gp_proc_sample *p);
/* n calls of gp_store_put_sample / gp_store_put_proc in order (the agent writes what it
 * queued between flushes this way): the same rows, rollups and triggers, written
 * GP_STORE_BATCH_ROWS rows per statement. Returns the number of rows not stored (0: all
 * were). */
#define GP_STORE_BATCH_ROWS 8
int gp_store_put_samples(gp_store *s, const gp_sample *x, size_t n);
int gp_store_put_procs(gp_store *s, const gp_proc_sample *p, size_t n);
/* Both at once, as the agent's flush writes them: the results bound is read once for the
 * two (two statements a flush fewer). Returns the samples not stored; *failed_procs the
 * process rows not stored. */
int gp_store_put_rows(gp_store *s, const gp_sample *x, size_t n, const gp_proc_sample *p, size_t np,
                      int *failed_procs);
/* Stores the event; also updates jobs/allocations for hello, job, alloc, and sets a
 * job's ready time at its first progress event (step or request). Returns 0 stored,
 * 1 when the event was already stored (same job and gp_event_key: ignored and counted),
 * -1 on error. Lifecycle folding is idempotent, so a duplicate changes nothing. */
int gp_store_put_event(gp_store *s, const gp_event *e);
/* Wall time of the commits since open (gp_store_commit, rollups included), as a
 * histogram with the upper bounds GP_STORE_COMMIT_BOUNDS_S (the last bucket is +Inf);
 * counts are per bucket, not cumulative. */
/* What a writable store's WAL file is cut back to when SQLite next starts it over after a
 * checkpoint (PRAGMA journal_size_limit). A WAL grows past this while a reader holds an old
 * snapshot (a sealing child computing a day-long job while an agent at --speed 0 writes
 * hours: 3.4 GB in bench/store_month) or under one large transaction; without the limit the
 * file kept that size on disk until the agent exited. */
#define GP_STORE_WAL_LIMIT_BYTES (64LL << 20)
#define GP_STORE_COMMIT_BUCKETS 12
#define GP_STORE_COMMIT_BOUNDS_S                                                                   \
    { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0 }
typedef struct gp_store_commit_hist {
    uint64_t count[GP_STORE_COMMIT_BUCKETS];
    uint64_t n;
    double sum_s;
} gp_store_commit_hist;
gp_store_commit_hist gp_store_commit_stats(const gp_store *s);
/* A writable store's WAL checkpoints on a thread of their own (store/checkpointer.h)
 * instead of inside the commit that grows the WAL past GP_CKPT_PAGES: for a writer that
 * must not stall (the agent's loop). 0, or -1 with err, the commits then checkpointing as
 * before. While gp_store_checkpoint_since_ns() is not 0 (the monotonic time the commit
 * that started the running checkpoint returned), a writer that begins no transaction lets
 * SQLite start the WAL over after it; gp_store_checkpoint_wait() sleeps until it ends (or
 * timeout_ms; 1: none runs now). The WAL is also reserved at the size it then cycles
 * through (store/wal_batch.h, gp_wal_batch_reserve), when the store is not busy. */
int gp_store_offload_checkpoints(gp_store *s, char *err, size_t errlen);
int64_t gp_store_checkpoint_since_ns(const gp_store *s);
int gp_store_checkpoint_wait(gp_store *s, int timeout_ms);
gp_ckpt_stats gp_store_checkpoint_stats(const gp_store *s); /* zeros when not offloaded */
/* Events ignored as duplicates since open. */
uint64_t gp_store_duplicates(const gp_store *s);
int gp_store_put_job(gp_store *s, const gp_job *j); /* upsert, keeps known fields */
int gp_store_put_alloc(gp_store *s, const gp_alloc *a);
int gp_store_replace_findings(gp_store *s, const char *job_id, const gp_finding *f, size_t n);

/* Deletes raw device and per-process samples older than cutoff_ns; the 1 min / 1 h
 * rollups (store/rollup.h) and events are kept. */
int gp_store_retain(gp_store *s, int64_t cutoff_ns);
/* Event retention (schema 15, docs/reliability.md "Ended jobs' results"): the events of an
 * ended job may go only once its result is stored (job_results, by the agent's sealing
 * child) and everything of it (range, end) lies before cutoff_ns, and never a running
 * job's, a job's without a stored result, or one with stage events. The result first
 * moves to job_events_pruned (the mark every reader checks), then at most max_rows of
 * such jobs' events are deleted (<= 0: all). In the caller's transaction. Returns the
 * events deleted, or -1 on a store error. */
int64_t gp_store_retain_events(gp_store *s, int64_t cutoff_ns, int64_t now_ns, int64_t max_rows);
/* 1 when retention deleted job_id's events (*before_ns: those before it are gone), 0 when
 * not (or a store without the table), -1 on a store error. */
int gp_store_events_pruned(gp_store *s, const char *job_id, int64_t *before_ns);
/* The condition, on a job_events_pruned row p, that the job has nothing past its moved
 * result: no event at or after p.before_ns, no allocation open or reaching past p.t1_ns,
 * and the job ended by then. Only then is that result the job's whole history; a later run
 * under the same id makes the job unknown (its earlier events are gone), never the old
 * result served as if nothing had happened. */
#define GP_PRUNED_STILL_SQL                                                                        \
    "NOT EXISTS (SELECT 1 FROM events e WHERE e.job_id = p.job_id AND e.ts_ns >= p.before_ns)"     \
    " AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.job_id = p.job_id"                       \
    "  AND (a.to_ns IS NULL OR a.to_ns > p.t1_ns))"                                                \
    " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = p.job_id"                                  \
    "  AND (j.ended_ns IS NULL OR j.ended_ns <= 0 OR j.ended_ns > p.t1_ns))"
/* For anything that would compute a job from its events: 0 when they are all there; -1
 * with a one-line err when retention deleted them (or on a store error). */
int gp_store_events_pruned_err(gp_store *s, const char *job_id, char *err, size_t errlen);

int gp_store_list_devices(gp_store *s, gp_device **out, size_t *n);
int gp_store_list_jobs(gp_store *s, gp_job **out, size_t *n);
int gp_store_get_job(gp_store *s, const char *id, gp_job *out); /* 1 found, 0 not, <0 err */
int gp_store_job_allocs(gp_store *s, const char *job_id, gp_alloc **out, size_t *n);
/* Other jobs' allocations on the GPUs job_id ever held (to split shared GPUs). */
int gp_store_neighbour_allocs(gp_store *s, const char *job_id, gp_alloc **out, size_t *n);
/* 1 when job_id holds uuid through an allocation still open, 0 if not, < 0 on error. */
int gp_store_open_alloc_exists(gp_store *s, const char *job_id, const char *uuid);
/* kind 0 = all kinds; ordered by ts. */
int gp_store_job_events(gp_store *s, const char *job_id, int kind, gp_event **out, size_t *n);
/* Calls fn with each of the job's events in the same order, one at a time, so a caller
 * keeps only what it needs (a long job's steps are millions of events). fn returns < 0
 * to stop; the call then returns -1, as on a store error; else 0. */
int gp_store_job_events_each(gp_store *s, const char *job_id,
                             int (*fn)(void *ctx, const gp_event *e), void *ctx);
/* The same for the events with t0 <= ts <= t1 (the agent's live findings read the last
 * window's rows, engine/diagnosis/live_window.h). */
int gp_store_job_events_range_each(gp_store *s, const char *job_id, int64_t t0_ns, int64_t t1_ns,
                                   int (*fn)(void *ctx, const gp_event *e), void *ctx);
/* Samples of one device with t0 <= ts < t1, ordered by ts. */
int gp_store_device_samples(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                            gp_sample **out, size_t *n);
/* The same rows one at a time: fn(ctx, row) for each (the row is fn's to copy, not to keep),
 * so a caller that keeps less than a gp_sample never holds the whole list (the diagnosis
 * input, engine/diagnosis/features.h). Stops at fn's first < 0. Returns 0 or -1. */
int gp_store_device_samples_each(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                                 int (*fn)(void *ctx, const gp_sample *x), void *ctx);
/* Their times only, in order: fn(ctx, ts_ns) for each (a key-only read, no row decoded).
 * Stops at fn's first < 0. Returns 0 or -1. */
int gp_store_device_sample_times_each(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                                      int (*fn)(void *ctx, int64_t ts_ns), void *ctx);
int gp_store_device_procs(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                          gp_proc_sample **out, size_t *n);
/* The rows of other jobs' processes using the device: a known owner other than job_id,
 * an SM share above min_sm_share (interference; the job's own rows are most of them). */
int gp_store_device_procs_foreign(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                                  const char *job_id, double min_sm_share, gp_proc_sample **out,
                                  size_t *n);
int gp_store_list_findings(gp_store *s, const char *job_id, gp_finding **out, size_t *n);

const char *gp_store_errmsg(gp_store *s);
/* 1 (with a sentence in err) once a write has failed for lack of room: the disk is full
 * or a file-size limit was reached (EFBIG; the caller ignores SIGXFSZ so it sees the
 * error instead of dying). What was committed before is intact; stop writing. */
int gp_store_failed(const gp_store *s, char *err, size_t errlen);

/* Steps st to its end, collecting each row's column 0 (a job id; NULL skipped) and column
 * 1 (an integer) into arrays the caller frees: 0, or -1 on a step error or out of memory
 * (what was read is returned as well). st is neither reset nor finalized. */
int gp_store_collect_ids(sqlite3_stmt *st, char (**ids)[GP_JOB_ID_MAX], int64_t **vals,
                         size_t *n_out);

#endif
