/* job.h: a unit of work that owns GPUs, and its allocations (job x device x time).
 * Times are ns since the epoch; < 0 means unknown / not yet. Plain data. */
#ifndef GP_MODEL_JOB_H
#define GP_MODEL_JOB_H

#include <stdint.h>
#include "model/event.h"

typedef enum {
    GP_ORIGIN_UNKNOWN,
    GP_ORIGIN_SLURM,
    GP_ORIGIN_K8S,
    GP_ORIGIN_CONTAINER,
    GP_ORIGIN_PROCESS,
    GP_ORIGIN_TAG, /* declared by the workload (hello / GOODPUT_JOB) or a scenario */
} gp_origin;

typedef struct gp_job {
    char id[GP_JOB_ID_MAX];
    char name[GP_NAME_MAX];
    char user[GP_NAME_MAX];
    gp_origin origin;
    int64_t submitted_ns, allocated_ns, ready_ns, ended_ns;
    char exit_state[32];                      /* "", "completed", "failed", "cancelled", ... */
    int64_t exit_code;                        /* -1 unknown */
    char unit_name[GP_NAME_MAX];              /* "samples", "tokens", ... */
    double flops_per_unit, bytes_per_unit;    /* 0 = not declared */
    double slo_ttft_s, slo_tpot_s, slo_e2e_s; /* declared SLOs (seconds); 0 = not set */
} gp_job;

typedef struct gp_alloc {
    char job_id[GP_JOB_ID_MAX];
    char uuid[96];
    int64_t from_ns, to_ns; /* to < 0: still held */
    double
        share; /* the fraction of the device this job holds over [from, to) when the
                * engine split a shared GPU between its holders (engine/accounting/alloc_split.h);
                * <= 0 means the whole device (what the store keeps). */
} gp_alloc;

const char *gp_origin_name(gp_origin o);
gp_origin gp_origin_parse(const char *s);

#endif
