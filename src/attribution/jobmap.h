/* jobmap.h: reads a dcgm-exporter HPC job-mapping directory (--hpc-job-mapping-dir):
 * one file per GPU, named by the GPU's index (or its UUID), holding the ids of the jobs
 * on that GPU, one per line, written by a scheduler's prolog/epilog (contrib/slurm/).
 * The file's mtime is when its list last changed: the start of a job that just
 * appeared. A line's first token is the id (some prologs append the uid); a line whose
 * first token is not a job id ([A-Za-z0-9._:@/-], 1..63 bytes) is skipped. */
#ifndef GP_ATTRIBUTION_JOBMAP_H
#define GP_ATTRIBUTION_JOBMAP_H

#include <stddef.h>
#include <stdint.h>

#include "model/device.h"

typedef void (*gp_jobmap_fn)(void *ctx, const char *job_id, const char *uuid, int64_t mtime_ns);

/* A reader that remembers each file's contents and reads a file again only when its
 * mtime, size or inode changed: a 1,000-GPU node's directory costs one stat per file per
 * scan instead of an open, a read and a close. With inotify (Linux), a scan after which
 * nothing in the directory changed lists it from memory without touching the disk; a
 * full listing is made after any change and at least every GP_JOBMAP_RESCAN_EVERY scans
 * (what inotify cannot see: a network file system written from another host). */
#define GP_JOBMAP_RESCAN_EVERY 60
typedef struct gp_jobmap gp_jobmap;
gp_jobmap *gp_jobmap_new(const char *dir); /* NULL when out of memory */
void gp_jobmap_free(gp_jobmap *m);
/* Calls fn once per (job, GPU) listed. Index-named files map to UUIDs through devs (a
 * file for an index the node does not have is ignored). Returns the number of pairs, or
 * -1 when the directory cannot be read (errno set). */
int gp_jobmap_scan(gp_jobmap *m, const gp_device *devs, size_t n_devs, gp_jobmap_fn fn, void *ctx);
/* Scans that listed the directory, and scans answered from memory. */
typedef struct gp_jobmap_stats {
    uint64_t full, cached;
} gp_jobmap_stats;
gp_jobmap_stats gp_jobmap_get_stats(const gp_jobmap *m);

#endif
