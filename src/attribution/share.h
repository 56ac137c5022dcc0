/* share.h: splitting one GPU among several owners, and the readiness gap of a job.
 *
 * A GPU shared by time-slicing or MPS serves several processes at once; NVML reports each
 * process's share of SM time over the last interval (gp_proc_sample.sm_share). The split:
 *  1. group the device's process rows at one timestamp by owner (job_id; "" = "unknown");
 *  2. if any row carries a valid SM share and their sum is > 0, each owner gets
 *     sum(own shares) / sum(all shares): the shares are normalised because NVML's
 *     per-process samples need not add up to the device's utilisation;
 *  3. else, if memory is known for some row, split by device memory held (a process that
 *     holds memory holds the GPU even when idle);
 *  4. else split equally between owners.
 * Over time, each group of rows covers the interval since the previous group (the first
 * covers first_interval_ns), so owners accumulate GPU-seconds that add up to the time the
 * device had any process. MIG instances have their own UUIDs and need no split.
 * docs/attribution.md describes the method with an example. Pure functions. */
#ifndef GP_ATTRIBUTION_SHARE_H
#define GP_ATTRIBUTION_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "model/finding.h"
#include "model/job.h"
#include "model/sample.h"

typedef enum { GP_SPLIT_NONE, GP_SPLIT_SM, GP_SPLIT_MEM, GP_SPLIT_EQUAL } gp_split_basis;

typedef struct gp_owner_share {
    char job_id[64];
    double fraction; /* of the device, in [0, 1]; owners' fractions sum to 1 */
    double gpu_s;    /* accumulated by gp_attrib_split_series */
    int n_procs;
} gp_owner_share;

/* Rows of one device at one timestamp. Fills up to cap owners; returns how many (owners
 * beyond cap are dropped and the rest renormalised), and the basis used. */
size_t gp_attrib_split(const gp_proc_sample *rows, size_t n, gp_owner_share *out, size_t cap,
                       gp_split_basis *basis);

/* Rows of one device ordered by ts (several per ts). Accumulates gpu_s per owner into out
 * (existing entries are added to); returns the number of owners. */
size_t gp_attrib_split_series(const gp_proc_sample *rows, size_t n, int64_t first_interval_ns,
                              gp_owner_share *out, size_t cap);

const char *gp_split_basis_name(gp_split_basis b);

/* A job that held GPUs and never showed progress: fills a not_ready finding whose waste is
 * the GPU-seconds of its allocations from their start to the job's end (or now_ns while
 * it runs), and returns 1; returns 0 when the job became ready or held no GPU.
 * Jobs that became ready late are the engine's to judge (not_ready badput). */
int gp_attrib_not_ready_finding(const gp_job *job, const gp_alloc *allocs, size_t n, int64_t now_ns,
                                gp_finding *out);

#endif
