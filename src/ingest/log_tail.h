/* log_tail.h: follows a growing training log (like `tail -F`) and turns new lines into
 * events through a log profile (ingest/logs.h).
 *
 * Rotation-safe: each poll stats the path; a new inode (the log was rotated or recreated)
 * drains what is left of the old file, then reads the new one from its start; a file
 * shorter than the offset read so far (truncated in place, copytruncate) is read again
 * from its start. An existing file is followed from its end when the tail opens (what was
 * written before the agent started has no receipt time to give it), a file created later
 * from its start. A partial last line waits for its newline (at most 64 KiB, then it is
 * taken as a line). No threads; the owner polls (the agent calls it between ticks). */
#ifndef GP_INGEST_LOG_TAIL_H
#define GP_INGEST_LOG_TAIL_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/logs.h"

typedef struct gp_log_tail gp_log_tail;

/* from_start: read an existing file from its start instead of its end. The profile must
 * outlive the tail. Never fails for a missing file (it may appear later); -1 with err
 * only for bad arguments or memory. */
int gp_log_tail_open(const char *path, const gp_log_profile *p, const char *job_id, int from_start,
                     gp_log_tail **out, char *err, size_t errlen);
/* Reads what was appended since the last poll; events go to emit. Returns the number of
 * events, or -1 with err when the file cannot be read (said once per distinct error by
 * the caller; the tail retries on the next poll). */
int gp_log_tail_poll(gp_log_tail *t, int64_t now_ns, gp_log_emit emit, void *ctx, char *err,
                     size_t errlen);
const char *gp_log_tail_path(const gp_log_tail *t);
/* Rotations and truncations seen so far. */
uint64_t gp_log_tail_reopens(const gp_log_tail *t);
void gp_log_tail_close(gp_log_tail *t);

#endif
