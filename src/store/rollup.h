/* rollup.h: 1-minute and 1-hour rollups of device samples, written as samples arrive.
 *
 * Promise: every device sample committed to the store is folded into the rollup_1m and
 * rollup_1h rows of its buckets (t1_ns - step, t1_ns]. A bucket's row is written when the
 * bucket closes (the device's first sample past it, or the store's close), the open hour
 * also whenever one of its minutes closed: so a committed row of a closed bucket holds all
 * of its samples, and the rows lag the raw samples by at most the open minute (a reader
 * wanting the newest minute reads the raw rows, which retention keeps for days). Raw
 * samples may be deleted after the retention window without losing what reports over
 * longer spans read. A row written again continues the stored one (a bucket split across
 * commits or agent restarts sums to the same row, bit for bit as when every commit added
 * its part); committed samples a row lacks because the writer died before writing it are
 * folded back by the next connection that stores a sample of that device (samples
 * arrive in time order per device; a device that never reports again keeps those
 * samples in its raw rows only). A row read back is a gp_sample whose ts_ns is the
 * bucket end and whose gauges are the means of the known values (a field no sample of
 * the bucket knew stays unknown); counters (energy, PCIe, NVLink, memory total) are the
 * last value in the bucket, throttle reasons are OR'ed, xid is the largest seen.
 * A raw sample replaced in place (same device and time) is counted twice. */
#ifndef GP_STORE_ROLLUP_H
#define GP_STORE_ROLLUP_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "model/sample.h"

#define GP_ROLLUP_1M_NS 60000000000LL
#define GP_ROLLUP_1H_NS 3600000000000LL

typedef struct gp_rollup gp_rollup;
typedef struct gp_store gp_store;

/* For a writable store; NULL when it has no rollup tables or out of memory. */
gp_rollup *gp_rollup_new(gp_store *s);
void gp_rollup_free(gp_rollup *r);
/* Folds one sample (already inserted) into its open buckets; writes a bucket the sample
 * closes. */
int gp_rollup_add(gp_rollup *r, const gp_sample *x);
/* What gp_rollup_add does first for a device it has not seen on this connection (reading
 * the device's stored rows the rollup rows lack), for a sample not inserted yet: a caller
 * that inserts several samples before folding them (gp_store_put_samples) calls it for
 * each before inserting them, so that read never sees a row that will be folded too. */
int gp_rollup_prepare(gp_rollup *r, const gp_sample *x);
/* Before a commit: the transaction's samples count as committed; the open hour of a device
 * one of whose minutes closed is written (the caller's transaction makes it atomic with
 * the raw rows). */
int gp_rollup_flush(gp_rollup *r);
/* Before the store's last commit: writes every open bucket. */
int gp_rollup_close(gp_rollup *r);
/* The store's rollups (store.c): NULL for a read-only store. */
gp_rollup *gp_store_rollup(gp_store *s);
/* Writes the open buckets holding a sample before before_ns as they stand (INT64_MAX:
 * all), so reads in this connection, or a deletion of raw rows, see every sample stored;
 * they are written again when they close. */
int gp_rollup_sync(gp_rollup *r, int64_t before_ns);
/* After a commit failed: forgets what is held in memory; each device's next sample folds
 * the committed raw samples its rows lack. */
void gp_rollup_forget(gp_rollup *r);

/* Rollup rows of one device at resolution step_ns (GP_ROLLUP_1M_NS or GP_ROLLUP_1H_NS)
 * with t0 <= bucket end < t1, ordered by time; *out freed by the caller. counts (may be
 * NULL) receives a parallel array of the number of raw samples in each bucket. */
int gp_rollup_read(sqlite3 *db, int64_t step_ns, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                   gp_sample **out, uint32_t **counts, size_t *n);

/* Samples of one device for [t0, t1) from the best resolution that answers the range:
 * raw rows when they reach back as far as anything stored for the device (the range
 * starts inside the raw retention window) and the span holds at most max_points seconds
 * (0: no limit); otherwise 1-minute rollups when the span holds at most max_points
 * minutes, else 1-hour rollups; 1-hour rollups too when the range starts where the
 * 1-minute ones were deleted (gp_rollup_retain). *step_ns: 0 for raw rows, else the rollup's step
 * (each sample then covers (ts_ns - step, ts_ns]). Rollup rows are whole buckets: one whose end
 * lies in [t0, t1) may start before t0. Falls back to raw rows when the store has no rollup tables.
 * Returns 0 or -1 (store error or out of memory). */
int gp_store_samples_best(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                          size_t max_points, gp_sample **out, size_t *n, int64_t *step_ns);

/* Rollup retention (agent --rollup-retention): deletes the 1-minute rows of the whole
 * hours before cutoff_ns (bucket end <= cutoff_ns rounded down to the hour), device by
 * device through the key (uuid, t1_ns), so a pass reads only what it deletes; the 1-hour
 * rows stay and answer those hours (readers fall back to them, gp_rollup_minutes_from).
 * Deleting on whole hours leaves no hour half in each tier: the 1-hour part of a read
 * ends where the 1-minute part starts. Stored job results whose range reaches a deleted
 * row (engine/results/job_results.h) go first, as raw retention does with raw rows. A
 * pass with nothing to delete costs one index lookup per device. In the caller's
 * transaction. Returns the 1-minute rows deleted, or -1 on a store error. */
int64_t gp_rollup_retain(gp_store *s, int64_t cutoff_ns);

/* Where a device's 1-minute rollups begin, for readers that fall back to the 1-hour ones
 * before it: -1 when no 1-minute row was deleted (none exist, or the first 1-minute bucket
 * starts at the device's first sample, as its first 1-hour bucket does); else the end of
 * the hour holding the first 1-minute bucket left, or its start when that bucket starts
 * the hour (INT64_MAX when none is left): the rows before it are answered by the 1-hour rollups, at
 * 1-hour resolution. Two index lookups. */
int64_t gp_rollup_minutes_from(sqlite3 *db, const char *uuid);

#endif
