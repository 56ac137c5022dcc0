/* job_summary.h: everything the report says about one job, joined from the store:
 * lifecycle (queue wait, time to ready), allocated and busy GPU-hours, mean profiling
 * signals, energy from the counters, progress (steps, units, requests, tokens) and the
 * goodput accounting (engine/goodput.h).
 *
 * Unknown stays unknown: every double below is < 0 when its inputs are missing. Energy
 * is the sum over the job's devices of the energy-counter delta across the allocation;
 * on a GPU shared with other jobs it is split by per-process SM share when the source
 * reports it, else evenly among the jobs holding the GPU at that time. */
#ifndef GP_ENGINE_JOB_SUMMARY_H
#define GP_ENGINE_JOB_SUMMARY_H

#include "engine/goodput.h"
#include "model/job.h"
#include "store/store.h"

typedef struct gp_job_summary {
    gp_job job;
    int n_gpus;
    double allocated_gpu_h;
    double queue_wait_s;    /* allocated - submitted */
    double time_to_ready_s; /* ready - allocated */
    double busy_gpu_h;      /* integral of gpu_util over the allocation */
    double mean_gpu_util, mean_sm_active, mean_tensor_active, mean_dram_active;
    double mean_mem_used_frac;
    double energy_kwh;
    double span_s; /* window covered */
    gp_goodput gp;
} gp_job_summary;

typedef struct gp_summary_opts {
    int64_t t0_ns, t1_ns; /* 0/0 = whole history; open allocations end at the last sample */
    gp_slo slo;
} gp_summary_opts;

int gp_job_summary_compute(gp_store *s, const char *job_id, const gp_summary_opts *o,
                           gp_job_summary *out, char *err, size_t errlen);
/* The store's time span: first and last sample or event. */
int gp_store_time_span(gp_store *s, int64_t *t0_ns, int64_t *t1_ns);

#endif
