/* resolver.h: who owns each GPU process the telemetry source lists, resolved once per
 * process and cached by (PID, start time), so a reused PID is never mis-owned.
 *
 * Order of evidence for one process row:
 *  1. owner labels the source itself carries (dcgm-exporter's hpc_job, or namespace/pod):
 *     job "<hpc_job>" (origin slurm) or "<namespace>/<pod>" (origin k8s);
 *  2. with a proc root (the PIDs are this node's): /proc/PID/cgroup and environ
 *     (attribution/owner.h: GOODPUT_JOB, Slurm job, Kubernetes pod, container), else the
 *     process itself: job "pid-PID", origin process, named by its command line, with its
 *     user;
 *  3. without one (a capture replayed from another machine): job "pid-PID" named by the
 *     process name the capture shows;
 *  4. a process the agent cannot see (exited before the lookup, other PID namespace,
 *     unreadable /proc): the one explicit owner "unattributed", never dropped. A warning
 *     names its PID once.
 * Not thread-safe; one resolver per agent loop. */
#ifndef GP_ATTRIBUTION_RESOLVER_H
#define GP_ATTRIBUTION_RESOLVER_H

#include <stdint.h>

#include "model/event.h"
#include "model/job.h"
#include "model/sample.h"

#define GP_UNATTRIBUTED "unattributed"

typedef struct gp_proc_owner {
    char job_id[GP_JOB_ID_MAX];
    gp_origin origin;
    char name[GP_NAME_MAX]; /* only for owners the process alone defines: its command */
    char user[GP_NAME_MAX]; /* idem: its user */
    int64_t start_ns;       /* the process's start (ns since the epoch); -1 unknown */
} gp_proc_owner;

typedef struct gp_resolver_stats {
    uint64_t lookups, cache_hits, resolved, unattributed;
} gp_resolver_stats;

typedef struct gp_resolver gp_resolver;

/* proc_root: where the PIDs live ("/proc"), or NULL when they are not this machine's.
 * Returns NULL when out of memory. */
gp_resolver *gp_resolver_new(const char *proc_root);
void gp_resolver_free(gp_resolver *r);
/* The owner of process row p seen at now_ns. The pointer is valid until the next call. */
const gp_proc_owner *gp_resolver_owner(gp_resolver *r, const gp_proc_sample *p, int64_t now_ns);
/* Forgets processes not seen since before cutoff_ns (keeps the cache the size of the
 * node's GPU process table). */
void gp_resolver_sweep(gp_resolver *r, int64_t cutoff_ns);
gp_resolver_stats gp_resolver_get_stats(const gp_resolver *r);

#endif
