/* presence.h: allocations a node shows without being told, turned into the protocol's
 * `job ... state=allocated` and `alloc` lines (docs/protocol.md), so they travel the same
 * ingest path as a Slurm prolog's or a client's.
 *
 * Two kinds of evidence, fed once per sampling tick:
 *  - scheduler: a job-mapping directory (or another scheduler source) says job J holds
 *    GPU U. The allocation opens when J first appears for U (at the time the caller gives:
 *    the mapping file's mtime, but never before the first tick: what nobody watched is
 *    not accounted) and closes at the first tick J is no longer listed;
 *  - presence: a process owned by J runs on U. Without a scheduler allocation for (J, U)
 *    the allocation opens at max(the process's start, the previous tick) and closes
 *    when J's last process has been gone from U for `grace_ns`, at the first tick it was
 *    missing. With one, presence adds nothing: the scheduler's allocation is the job's.
 * A job whose allocations have all closed may come back: it gets a new allocation row.
 * The caller flushes allocations still open at stop by doing nothing: an open
 * allocation ends at the store's last sample, as the accounting already does. */
#ifndef GP_ATTRIBUTION_PRESENCE_H
#define GP_ATTRIBUTION_PRESENCE_H

#include <stddef.h>
#include <stdint.h>

#include "attribution/resolver.h"

typedef void (*gp_presence_sink)(void *ctx, const char *line, size_t len);
typedef struct gp_presence gp_presence;

typedef struct gp_presence_stats {
    uint64_t opened, closed, open_now;
} gp_presence_stats;

/* watch_from_ns: when watching began (the agent's start); 0 = at the first tick. */
gp_presence *gp_presence_new(int64_t grace_ns, int64_t watch_from_ns); /* NULL: no memory */
void gp_presence_free(gp_presence *p);

/* A tick at now_ns: call begin, then sched()/proc() for everything held now, then end(),
 * which writes the lines for what opened and closed. */
void gp_presence_begin(gp_presence *p, int64_t now_ns);
void gp_presence_sched(gp_presence *p, const char *job_id, const char *uuid, int64_t since_ns);
/* held_elsewhere: something else (a Slurm poller, a prolog's or client's alloc line)
 * already holds (job, GPU) open in the store: the row is tracked but writes no line. */
void gp_presence_proc(gp_presence *p, const gp_proc_owner *o, const char *uuid, int held_elsewhere);
/* 1 when a row for (job, GPU) is tracked now. */
int gp_presence_has(const gp_presence *p, const char *job_id, const char *uuid);
void gp_presence_end(gp_presence *p, gp_presence_sink sink, void *ctx);
gp_presence_stats gp_presence_get_stats(const gp_presence *p);

#endif
