/* checkpointer.h: a writer connection's WAL checkpoints, run on a thread of their own.
 *
 * SQLite checkpoints the WAL inside the COMMIT that leaves it at 1,000 pages or more, on
 * the connection that commits: the copy back into the database file and its two fsyncs
 * then run on the agent's sampling loop. Under an event flood (reliability_overload.sh)
 * that made the agent's 1 s commits take 100-300 ms against 15-30 ms without the
 * checkpoint, and ticks started up to 150 ms late (docs/reliability.md, "Overload").
 *
 * What it promises, once started on a writer connection:
 * - The writer's own automatic checkpoint is off. After a commit that leaves the WAL at
 *   GP_CKPT_PAGES or more, and none running, a PASSIVE checkpoint runs on the thread's own
 *   connection to the same file. A passive checkpoint never waits for a lock and blocks
 *   neither the writer nor readers; the syncs SQLite makes for it (synchronous=NORMAL: the
 *   WAL before, the database after) are the same as when the commit made them.
 * - gp_ckpt_since_ns() is the monotonic time that commit returned while that checkpoint
 *   runs, 0 otherwise. SQLite starts the WAL over from its beginning only in a write
 *   transaction whose reads began after the WAL was wholly copied back: a writer that
 *   begins no transaction while a checkpoint runs keeps the WAL bounded as the automatic
 *   checkpoint did (journal_size_limit applies then); one that goes on writing meanwhile
 *   loses nothing, and its WAL grows until a later checkpoint finds such a moment.
 * - gp_ckpt_wait() sleeps until the running checkpoint ends (the thread writes an eventfd)
 *   or a timeout: no busy wait.
 * - The thread blocks every signal (a signal to the process reaches the writer's thread).
 * - gp_ckpt_stop() waits for a running checkpoint, closes the thread's connection and
 *   gives the writer its automatic checkpoint back, before the writer closes (the last
 *   connection's close then checkpoints and removes the WAL, as without this module). */
#ifndef GP_STORE_CHECKPOINTER_H
#define GP_STORE_CHECKPOINTER_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#define GP_CKPT_PAGES 1000 /* SQLite's default wal_autocheckpoint */

typedef struct gp_ckpt gp_ckpt;

typedef struct gp_ckpt_stats {
    uint64_t passes;   /* checkpoints run */
    uint64_t complete; /* of those, how many copied the whole WAL back */
    double wall_s;     /* their wall time, and the longest */
    double wall_max_s;
    double cpu_s; /* the thread's CPU time */
} gp_ckpt_stats;

/* writer: an open connection in WAL mode, used by one thread (the caller's). path and vfs
 * (NULL: the default) as it was opened. NULL with err when it cannot start; the writer then
 * keeps its automatic checkpoint. */
gp_ckpt *gp_ckpt_start(sqlite3 *writer, const char *path, const char *vfs, char *err,
                       size_t errlen);
void gp_ckpt_stop(gp_ckpt *c);
int64_t gp_ckpt_since_ns(const gp_ckpt *c);
/* Waits at most timeout_ms for the running checkpoint to end; 1 when none runs on return,
 * 0 when one still does. */
int gp_ckpt_wait(gp_ckpt *c, int timeout_ms);
gp_ckpt_stats gp_ckpt_get_stats(gp_ckpt *c);

#endif
