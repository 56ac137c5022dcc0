/* dcgm.h: dcgm-exporter as a telemetry source (`--source dcgm=URL` or `dcgm:URL`).
 *
 * Each sample() scrapes URL (the exporter's /metrics, e.g. http://node:9400/metrics)
 * with libcurl and parses the body as it streams in (util/promtext.h). Series are keyed
 * by their UUID label (MIG series by "<UUID>/gi<GPU_I_ID>"); a series without a UUID
 * cannot be attributed to a device and is counted, not guessed. DCGM's blank sentinels
 * (DCGM_INT32_BLANK 0x7ffffff0.., DCGM_INT64_BLANK 0x7ffffffffffffff0.. such as
 * 9223372036854775794 = DCGM_INT64_NOT_SUPPORTED, DCGM_FP64_BLANK 2^47..; dcgmlib
 * dcgm_structs.h) become unknown.
 *
 * Field map (classic and renamed names): see the table in dcgm.c. PROF_PCIE_* and
 * PROF_NVLINK_* are rates (bytes/s); the source integrates them into the byte counters
 * that gp_sample carries (counter += rate x seconds since the previous scrape, starting
 * at 0 at the first scrape), so windows take deltas as for NVML's counters.
 *
 * Ownership hints: labels pod, namespace, container (Kubernetes) and hpc_job (the
 * exporter's HPC job mapping) are kept per device in a side table (gp_dcgm_owners) and
 * also handed out by list_processes as rows with pid = -1 (no process known), no valid
 * bits, and job_id = hpc_job, else "<namespace>/<pod>".
 *
 * The scrape timeout is the sampling interval (at least 0.2 s, at most 10 s; 5 s when
 * no interval is given), overridable with env GOODPUT_DCGM_TIMEOUT_MS. Bodies over 64 MiB
 * are refused. */
#ifndef GP_SOURCES_DCGM_H
#define GP_SOURCES_DCGM_H

#include <stddef.h>

#include "model/sample.h"

typedef struct gp_dcgm_owner {
    char uuid[GP_UUID_MAX];
    char pod[128], ns[128], container[128], hpc_job[64];
} gp_dcgm_owner;

/* The owners seen at the last scrape of a dcgm source's state. */
int gp_dcgm_owners(void *state, gp_dcgm_owner *out, size_t cap, size_t *n);

/* The number of series at the last scrape that had no UUID label (not attributed). */
long gp_dcgm_unattributed(void *state);

#endif
