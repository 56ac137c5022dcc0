/* wal_batch.h: one write() per WAL commit instead of two per page.
 *
 * SQLite appends a WAL frame as two writes, its 24-byte header and then the page, so the
 * agent's 5 s commit of ~25 pages costs ~51 pwrite syscalls; a perf profile of the steady
 * 8-GPU agent put those writes at ~11% of its CPU, and on this VM 50 alternating 24 B /
 * 4 KiB pwrites cost ~21 us of CPU against ~6 us for one 103 KB pwrite (docs/benchmarks.md,
 * "walbatch"). No SQLite option joins them (the binary links Debian's libsqlite3.a as it
 * is), so this is a VFS over the default one ("unix") that does.
 *
 * What it promises, for files SQLite opens with SQLITE_OPEN_WAL (every other file goes to
 * the VFS below untouched):
 * - Writes are kept in a buffer (at most 124 KiB) while each begins where the last ended,
 *   and reach the file with one write, in the order SQLite made them.
 * - The write that ends a commit (the page of a frame whose header says "commit") writes
 *   the buffer before it returns, and returns that write's error: a commit that could not
 *   be written fails as it would without the buffer, before SQLite publishes it.
 * - The file on disk is what it would be without the buffer whenever SQLite reads the WAL,
 *   syncs, truncates or sizes it, closes it, writes elsewhere in it, and whenever the
 *   database file's locks or shared memory are touched (xLock, xUnlock, xFileControl,
 *   xShm*): a reader in another process or connection can see only what the wal-index says
 *   is committed, and that is on disk first. xShmBarrier returns nothing, so a write that
 *   fails there is returned by the next call on the WAL or by the next lock taken.
 * - A crash with a buffer not yet written loses frames of a transaction not yet committed,
 *   which WAL recovery drops anyway (as a torn write of it).
 *
 * The WAL file finds its database file with sqlite3_database_file_object(), so each
 * connection's pair is linked without a registry; a pair is used by one connection, hence
 * one thread at a time. */
#ifndef GP_STORE_WAL_BATCH_H
#define GP_STORE_WAL_BATCH_H

#include <sqlite3.h>

/* The VFS name to give sqlite3_open_v2 for a store that writes, registered once (not as the
 * default); NULL (the default VFS) when GOODPUT_NO_WAL_BATCH=1 is set at the call, for
 * comparisons, or when it cannot be registered. */
const char *gp_wal_batch_vfs(void);

/* Extends the WAL file of db's main database, opened through this VFS, with zeros up to
 * `bytes` where it is shorter; never writes where the file already has content. Call it
 * inside a write transaction (the WAL's write lock held, so no other connection appends
 * meanwhile). 0 when done or nothing was needed; -1 with no such WAL open or on a write
 * error (the file is then as SQLite's recovery takes any WAL: its frames, then bytes that
 * are not frames).
 *
 * Why: SQLite starts the WAL over from its beginning after each complete checkpoint, so a
 * writer that runs for long writes over the same GP_CKPT_PAGES frames again and again;
 * only until its WAL first reaches that size does each commit extend the file, and on ext4
 * a write that extends a file costs ~2.4x the CPU of one over pages the file has (page
 * cache pages allocated and charged: 32 KB, 21 us against 9 us; docs/benchmarks.md, the
 * 23:30 update of 2026-12-03). Reserving the size once at start makes the first cycle cost
 * what every later one does. Zeros past the last frame
 * are what a restarted WAL has anyway (the older frames): recovery stops at the first
 * frame whose salt or checksum does not match, and readers read only the frames the
 * wal-index names. */
int gp_wal_batch_reserve(sqlite3 *db, sqlite3_int64 bytes);

#endif
