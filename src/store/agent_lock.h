/* agent_lock.h: one agent per store. An agent holds an exclusive flock on PATH.agent.lock
 * (beside the database) for its whole life; the file names the holder's PID so a second
 * agent can say who holds it. The kernel drops the lock when the holder exits, even on
 * kill -9, so a stale file never blocks a restart. Readers (report, serve --db) do not
 * take it: WAL lets them read while the agent writes. */
#ifndef GP_STORE_AGENT_LOCK_H
#define GP_STORE_AGENT_LOCK_H

#include <stddef.h>

/* Returns an fd holding the lock (>= 0); GP_LOCK_BUSY when another process holds it (err
 * names its PID); -1 on another error (err says which). */
#define GP_LOCK_BUSY (-2)
int gp_agent_lock(const char *db_path, char *err, size_t errlen);
/* Releases the lock (closes fd; the file stays, unlocked). fd < 0 is a no-op. */
void gp_agent_unlock(int fd);

#endif
