/* scenario.h: what the simulator simulates: one node of GPUs and the jobs that use them.
 *
 * A scenario comes from a small INI-like text file (docs/scenarios.md documents every key,
 * its unit and default) or is built in code:
 *
 *     gp_scenario sc;
 *     gp_scenario_init(&sc);                       // node defaults: 8 x H100-SXM, 1 h
 *     sc.n_gpus = 4;
 *     gp_scenario_job *j = gp_scenario_add_job(&sc, "train-1", GP_SJ_TRAINING);
 *     gp_scenario_job_set_gpu_range(j, 0, 2);      // GPUs 0 and 1
 *     j->loader_workers = 2;                       // every other field has a default
 *     if (gp_scenario_validate(&sc, err, sizeof err) < 0) ...
 *     ... gp_sim_open(&sc, 0, &sim, err, sizeof err) (sim/sim.h) ...
 *     gp_scenario_free(&sc);
 *
 * All times inside a scenario are nanoseconds relative to the simulation start (t = 0);
 * the simulator adds the wall-clock origin. Sizes are bytes, rates per second, ratios in
 * [0, 1]. The struct is plain data: fill it, validate it, hand it to the simulator (which
 * copies what it needs). The scenario owns its jobs array and each job's gpus array;
 * gp_scenario_free releases them. */
#ifndef GP_SOURCES_SCENARIO_H
#define GP_SOURCES_SCENARIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/device.h"
#include "model/event.h"

#define GP_SCEN_MAX_GPUS 4096                    /* node size limit */
#define GP_SCEN_MAX_RESTARTS 16                  /* restart_at entries per job */
#define GP_SCEN_NEVER INT64_MAX                  /* ready_after = never */
#define GP_SCEN_MAX_TIME_NS 946080000000000000LL /* 30 years: any time or duration */

typedef enum {
    GP_SJ_TRAINING = 0, /* data-parallel trainer: load, copy, compute, all-reduce, checkpoint */
    GP_SJ_INFERENCE,    /* LLM server: continuous batching, prefill + decode */
    GP_SJ_IDLE,         /* interactive notebook: holds memory, rare small bursts */
    GP_SJ_NOT_READY,    /* a trainer that holds GPUs before it is ready (default: never) */
} gp_sjob_kind;

typedef struct gp_scenario_job {
    char id[GP_JOB_ID_MAX]; /* [job ID]: 1..63 of [A-Za-z0-9._:@/-] */
    char name[GP_NAME_MAX]; /* display name; default = id */
    char user[GP_NAME_MAX]; /* default "sim" */
    gp_sjob_kind kind;
    int scheduler_none; /* `scheduler = none`: no scheduler knows the job; the node shows
                         * only its processes (default `slurm`: a job-mapping file too) */
    int *gpus;          /* GPU indices on the node (owned; use the setters) */
    int n_gpus;

    /* lifecycle, ns relative to the simulation start */
    int64_t submit_ns;      /* default = start_ns (no queue wait) */
    int64_t start_ns;       /* allocation; default 0 */
    int64_t end_ns;         /* release; < 0 = runs to the scenario end (no "ended" event) */
    int64_t ready_after_ns; /* allocated but doing nothing for this long; GP_SCEN_NEVER = never */
    double mem_frac; /* device memory held while running, fraction of the GPU; <0 = kind default */

    /* training (also not_ready once ready); per GPU (rank) unless said otherwise */
    int64_t init_ns;         /* blocking init before the first step (phase init) */
    int batch_samples;       /* samples per step per GPU */
    double sample_cpu_s;     /* CPU seconds to load+decode one sample */
    int loader_workers;      /* parallel loader processes per GPU */
    double sample_bytes;     /* host-to-device bytes per sample */
    double flops_per_step;   /* per GPU */
    double efficiency;       /* achieved fraction of peak bf16 FLOP/s in compute */
    double allreduce_bytes;  /* gradient bytes reduced per step (0 = none; needs >= 2 GPUs) */
    double overlap;          /* fraction of all-reduce hidden under compute */
    double allreduce_bw;     /* bytes/s per direction; 0 = NVLink (or PCIe) from the spec */
    int checkpoint_every;    /* steps; 0 = never */
    int64_t checkpoint_ns;   /* blocking save time */
    double checkpoint_bytes; /* device-to-host bytes per save; <0 = 1/4 of held memory */
    int64_t restore_ns;      /* blocking restore after a restart */
    int64_t restart_at_ns[GP_SCEN_MAX_RESTARTS]; /* job dies at these times */
    int n_restarts;
    int64_t recovery_ns; /* dead time between the failure and the new process */
    int xid_on_restart;  /* XID error its GPUs report when it fails (0 = none) */
    int small_kernels;   /* 1: host-bound, many small kernels */
    int kernels_per_step;
    double launch_overhead_s; /* host time to launch one kernel */
    /* kernel profile (roofline): HBM bytes the compute kernels move per step (< 0: the
     * default mix) and the fraction of the SMs a kernel's grid keeps busy (< 0: default) */
    double hbm_bytes_per_step;
    double sm_fill;
    double step_noise; /* lognormal sigma of step times */
    int64_t max_steps; /* stop after this step (0 = no limit) */

    /* per-rank step events and a straggler rank (synchronous data parallelism) */
    int per_rank_steps;         /* 1: step and phase events for every rank, with rank= */
    int straggler_rank;         /* rank whose compute is slow; -1 = none */
    double straggler_slowdown;  /* its compute takes this many times as long (>= 1) */
    int64_t straggler_from_ns;  /* slow from this time on (relative) */
    int64_t straggler_until_ns; /* ... until this time; < 0 = to the end */

    /* inference */
    double rate;          /* Poisson arrivals per second (when no trace) */
    char trace[512];      /* Azure LLM trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens) */
    int trace_optional;   /* 1: a missing trace falls back to Poisson arrivals at `rate` */
    double trace_speed;   /* trace time compression: 2 = twice as fast */
    double prompt_tokens; /* Poisson mode: mean prompt length */
    double output_tokens; /* Poisson mode: mean output length */
    int max_batch;        /* running requests per iteration */
    double params;        /* model parameters */
    double weight_bytes;  /* <= 0: 2 bytes x params (bf16) */
    double kv_bytes_per_token;
    double prefill_efficiency; /* fraction of peak bf16 FLOP/s */
    double decode_efficiency;  /* fraction of peak HBM bandwidth */
    int64_t slo_ttft_ns, slo_tpot_ns,
        slo_e2e_ns; /* SLOs the service declares in its hello; 0 = none */

    /* idle */
    int64_t burst_every_ns; /* a small burst of kernels this often */
    int64_t burst_ns;       /* lasting this long */

    int line; /* line of the [job] header in the file (0 when built in code) */
} gp_scenario_job;

typedef struct gp_scenario {
    char path[512];          /* file it came from, "" when built in code */
    char node_name[64];      /* [node] name; UUIDs derive from it */
    int n_gpus;              /* [node] gpus */
    char model[64];          /* [node] model */
    const gp_gpu_spec *spec; /* set by validate from model */
    uint64_t seed;
    int64_t duration_ns;
    int profiling;                /* 0: DCGM profiling fields stay unknown */
    int64_t sample_jitter_ns;     /* a sample's time is late by [0, this) (a poller's jitter) */
    int start_now;                /* start = now: the wall clock at open */
    int64_t start_epoch_ns;       /* start = <ISO time or ns>; 0 = caller's or fixed epoch */
    double contention;            /* slowdown per co-located busy job: time x (1 + contention) */
    double power_limit_w;         /* per-GPU power cap (W); 0 = the model's TDP */
    int64_t power_limit_from_ns;  /* the cap holds from this time on (relative; default 0) */
    int64_t power_limit_until_ns; /* ... until this time; < 0 = to the end (the default) */
    gp_scenario_job *jobs;
    int n_jobs, cap_jobs;
} gp_scenario;

/* 2026-01-01T00:00:00Z: the clock origin when neither the caller nor the scenario sets one. */
#define GP_SIM_EPOCH_NS (1767225600LL * 1000000000LL)

/* Node defaults, no jobs. */
void gp_scenario_init(gp_scenario *sc);
void gp_scenario_free(gp_scenario *sc);
/* Appends a job with every default for its kind; returns it (valid until the next add), or
 * NULL when out of memory. id is truncated to 63 bytes. */
gp_scenario_job *gp_scenario_add_job(gp_scenario *sc, const char *id, gp_sjob_kind kind);
/* Replaces the job's GPU list. 0, or -1 when out of memory. */
int gp_scenario_job_set_gpus(gp_scenario_job *j, const int *idx, int n);
int gp_scenario_job_set_gpu_range(gp_scenario_job *j, int first, int count);
/* Resets the kind-dependent defaults of a job (called by add_job). */
void gp_scenario_job_defaults(gp_scenario_job *j, gp_sjob_kind kind);

/* Checks the whole scenario (model known, GPU indices in range, values sane), resolves
 * spec. 0 or -1 with one sentence in err naming the job (and file:line when parsed). */
int gp_scenario_validate(gp_scenario *sc, char *err, size_t errlen);

/* Parse a scenario file / text. name is used in error messages ("demo.conf:12: ...").
 * On success out is validated and owned by the caller (gp_scenario_free). On error out is
 * freed and err says "FILE:LINE: key 'K': what was expected". */
int gp_scenario_load(const char *path, gp_scenario *out, char *err, size_t errlen);
int gp_scenario_parse_string(const char *text, const char *name, gp_scenario *out, char *err,
                             size_t errlen);

/* Writes the scenario as a file gp_scenario_load reads back to the same values (every key
 * explicit; times in ns). For saving generated scenarios, e.g. one that failed a test.
 * Names and users must not contain '#' or ';'. 0, or -1 on a write error. */
int gp_scenario_write(const gp_scenario *sc, FILE *f);

const char *gp_sjob_kind_name(gp_sjob_kind k);

/* Value parsers shared with the CLI (return 0 or -1). Durations: number + ns/us/ms/s/m/h/d
 * (bare number = seconds). */
int gp_parse_duration_ns(const char *s, int64_t *out);

#endif
