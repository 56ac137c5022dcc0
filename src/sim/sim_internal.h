/* sim_internal.h: state shared by the simulator's files (sim.c: node, sampling, events,
 * the source backend; sim_work.c: the workload models). Not a public header.
 *
 * Each job owns a timeline: a queue of segments that covers its allocation without gaps,
 * each segment a constant activity profile (the kernel mix running then) and the ground
 * truth bucket it belongs to. Workload models append segments and event lines; sampling
 * integrates segments over each interval and frees what it consumed. */
#ifndef GP_SOURCES_SIM_INTERNAL_H
#define GP_SOURCES_SIM_INTERNAL_H

#include <stdint.h>

#include "sim/sim.h"

enum {
    B_NOT_READY,
    B_INIT,
    B_DATA_WAIT,
    B_CHECKPOINT,
    B_RESTORE,
    B_RECOVERY,
    B_PRODUCTIVE,
    B_IDLE,
    B_OTHER,
};

typedef struct sim_seg {
    int64_t t0, t1; /* relative ns */
    float util, sm, occ, tensor, dram, fp16, fp32;
    float mem_frac; /* of the GPU's memory; the process is alive when proc */
    double pcie_rx_bps, pcie_tx_bps, nvl_bps; /* bytes/s each direction */
    uint8_t proc;
    /* alt: on the job's straggler rank this segment runs the alt_* kernel mix instead
     * (the slow rank computes while its peers wait in the all-reduce) */
    uint8_t alt;
    float alt_util, alt_sm, alt_occ, alt_tensor, alt_dram, alt_fp16, alt_fp32;
} sim_seg;

typedef struct sim_ev {
    int64_t ts; /* absolute ns */
    uint64_t seq;
    char *line;
} sim_ev;

typedef struct sim_req {
    int64_t arrival, first_token; /* relative ns */
    int32_t prompt, output, generated;
} sim_req;

typedef struct sim_rng {
    uint64_t s[4];
} sim_rng;

typedef struct sim_job {
    gp_scenario_job *cfg; /* in the sim's own scenario copy */
    const struct gp_sim *sim;
    int idx;
    int64_t pid;
    int64_t end;  /* effective end (relative): cfg end or scenario end */
    int ended_ev; /* emit "ended" (end inside the scenario) */
    sim_rng rng;
    double mem_run; /* fraction held while running */

    sim_seg *segs;
    size_t seg_head, seg_n, seg_cap;
    sim_ev *evs;
    size_t ev_head, ev_n, ev_cap;

    int64_t gen; /* the timeline is generated up to here */
    int state;
    int done;

    /* training */
    int64_t step, last_ckpt, next_restart;
    double prev_gpu_s, prod_since_ckpt;
    int64_t steps_since_ckpt;
    /* inference */
    int64_t *arr_t; /* arrivals (relative ns), trace mode */
    int32_t *arr_p, *arr_o;
    size_t arr_n, arr_next;
    int64_t poisson_next;
    sim_req *wait;
    size_t wait_head, wait_n, wait_cap;
    sim_req *run;
    int run_n;

    int64_t fail_t[GP_SCEN_MAX_RESTARTS]; /* failures that happened (relative ns) */
    int n_fail;

    int *co; /* indices of co-located jobs (share a GPU) */
    int n_co;

    gp_sim_truth truth;

    /* per-sample accumulation */
    double a_util, a_sm, a_occ, a_tensor, a_dram, a_fp16, a_fp32;
    double a_pcie_rx, a_pcie_tx, a_nvl;
    float mem_now;
    int proc_now;
    /* the job's processes as the node shows them: one per rank, PIDs pid_base + rank,
     * alive since proc_since (relative ns); a restart is a new incarnation (new PIDs) */
    int prev_proc, live;
    int64_t proc_since, pid_base, live_since;
    /* the same integrals as seen by the straggler rank's GPU (alt segments applied) */
    double r_util, r_sm, r_occ, r_tensor, r_dram, r_fp16, r_fp32;
    sim_rng rank_rng; /* per-rank timer jitter (per_rank_steps only) */
} sim_job;

typedef struct sim_gpu {
    int index;
    char uuid[GP_UUID_MAX];
    int *jobs;
    int n_jobs;
    sim_rng rng;
    double energy_mj;
    double temp_c;
    uint64_t pcie_tx, pcie_rx, nvl_tx, nvl_rx;
    double pcie_rx_f, pcie_tx_f, nvl_f; /* fractional byte carry */
    int *rank;                          /* per job on this GPU: its rank there */
} sim_gpu;

struct gp_sim {
    gp_scenario sc; /* deep copy */
    const gp_gpu_spec *spec;
    double cap_w;   /* power cap: power_limit or TDP (inside power_limit_from..until) */
    int64_t origin; /* absolute ns of t = 0 */
    int64_t last;   /* relative ns of the last sample */
    int64_t last_abs;
    double last_dt; /* seconds of the last sampled interval */
    sim_gpu *gpus;
    sim_job *jobs;
    int n_jobs;
    uint64_t ev_seq;
    int64_t next_pid;
    struct sim_node *node; /* the fake /proc and job-mapping directory; NULL = not shown */
};
/* the node as the agent sees it (sim_node.c) */
void sim_node_update(gp_sim *s);
void sim_node_free(gp_sim *s);

/* rng (xoshiro256**) */
void sim_rng_seed(sim_rng *r, uint64_t seed);
double sim_rng_u01(sim_rng *r);
double sim_rng_normal(sim_rng *r);
uint64_t sim_hash(const char *s, uint64_t h);

/* timeline building (sim.c) */
sim_seg *sim_push(sim_job *j, int64_t t0, int64_t t1, int bucket);
void sim_emit(gp_sim *s, sim_job *j, int64_t ts_rel, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sim_quote(char *dst, size_t cap, const char *s);
void sim_bucket_add(sim_job *j, int bucket, double sec);
/* The job's share of its GPUs over [t0, t1) in seconds per GPU (a shared GPU counts
 * 1/holders), as the accounting splits it. */
double sim_held_s(const sim_job *j, int64_t t0, int64_t t1);

/* workload models (sim_work.c) */
int sim_work_init(gp_sim *s, sim_job *j, char *err, size_t errlen);
void sim_work_advance(gp_sim *s, sim_job *j, int64_t until);
/* The power cap at relative time t: power_limit inside power_limit_from..until, else TDP. */
double sim_cap_w(const gp_sim *s, int64_t t);
void sim_work_free(sim_job *j);

#endif
