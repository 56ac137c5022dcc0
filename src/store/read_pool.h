/* read_pool.h: one read-only task per index, run on a few threads, each thread with its
 * own read-only connection to the store's file.
 *
 * A report's per-job work (job summaries, diagnoses) is independent from job to job and
 * only reads the store: on a machine with a free core the report takes about half the wall
 * time when two threads share the jobs (`goodput analyze`, docs/benchmarks.md issue 20).
 * SQLite connections are opened SQLITE_OPEN_NOMUTEX (store.c), which is safe when each is
 * used by one thread only: so every thread gets its own. The engine and the store keep no
 * mutable global state (checked for this module: no writable statics, no strtok or
 * localtime in src/engine, src/store, src/model), so two tasks share nothing but what the
 * caller hands them read-only.
 *
 * Results are the caller's: a task writes only its own slot i, and the caller prints in
 * index order afterwards, so the output does not depend on the thread count. */
#ifndef GP_STORE_READ_POOL_H
#define GP_STORE_READ_POOL_H

#include <stddef.h>

#include "store/store.h"

/* task(conn, i, ctx) for one index; conn is a connection to the same store, read-only for
 * the pool's threads and the caller's own `s` on the caller's thread. It must not write
 * the store nor anything of ctx outside slot i. */
typedef void (*gp_read_task)(gp_store *conn, size_t i, void *ctx);

/* Runs task once for every i in [0, n), the indexes handed out in increasing order. The
 * caller's thread takes part with s; threads - 1 more threads open gp_store_path(s)
 * read-only. A thread that cannot start or open the store leaves its share to the
 * others: each index runs exactly once whatever happens. threads <= 1 runs everything on
 * the caller's thread, in order. */
void gp_read_pool_run(gp_store *s, size_t n, int threads, gp_read_task task, void *ctx);

/* The thread count a report uses: GOODPUT_REPORT_THREADS when set to a number >= 1 (=1
 * forces one thread, whatever the command line), else requested when >= 1, else 1. */
int gp_read_threads(int requested);

/* 2 when the machine has at least two online CPUs, else 1 (analyze's default). */
int gp_read_threads_default(void);

#endif
