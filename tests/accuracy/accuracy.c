/* accuracy.c: the engine accuracy suite (issue 6). Draws randomized simulator runs, one
 * target job each, whose scenario parameters produce a known problem (or two at once);
 * the generator keeps the labels, the engine sees only what a real deployment would
 * show it: device samples, per-process rows and the event lines (parsed by the protocol
 * parser), never the scenario. Prints a confusion matrix (label vs top finding for
 * single-problem runs) and per-class and macro precision/recall over every finding.
 *
 *   accuracy [-n RUNS] [-s SEED] [-v] [--min P]   exit 1 when macro P or R < min
 *
 * Variation: GPU counts, efficiencies, step noise, run length (8 to 30 minutes), profiling
 * fields present or missing (for classes that do not need them), and co-located jobs. */
/* accuracy.c: the engine accuracy suite (issues 6, 18, 19). Draws randomized scenarios,
 * one target job "t" each, whose parameters produce a known problem (or two at once, or
 * one sitting just beside a threshold); the generator keeps the labels. Each scenario runs
 * the path users run: scenario file -> the real agent (source sim:FILE, speed 0, its own
 * attribution from the simulated node) -> a fresh store -> gp_diagnose_job, the diagnosis
 * `goodput diagnose` runs. The engine never sees labels or the scenario. The simulator's
 * ground truth (gp_sim_job_truth, what `goodput sim --summary --json` prints) scores the
 * GPU-seconds each finding claims.
 *
 *   accuracy [-n RUNS] [-s SEED] [-v] [--min P] [--grey-min P] [--waste-max PTS]
 *   exit 1 when a minimum is not met: macro P/R on clear runs < min, per-class P/R on the
 *   grey-zone runs < grey-min, worst waste error > waste-max points, any finding on a
 *   healthy job, a missed SLO or a straggler not located.
 *
 * Run kinds (i % 41): 0-18 clear problems and mixtures (the values sit far from the
 * thresholds), 19-20 mixtures (starved AND comm-bound; interference on a starved job),
 * 21-40 grey zone: data_wait_share, checkpoint_share, not_ready (floor and share),
 * interference loss, straggler ratio, interconnect peak share (an exposed all-reduce),
 * throttle share (a power cap over part of the run), SM activity (kernels whose grids fill
 * k x 0.5 of the SMs: host_bound below), DRAM activity (latency-bound kernels moving k x 0.6
 * of the HBM bandwidth: memory_bound above) and tensor activity (HBM-bound kernels whose
 * arithmetic intensity keeps the tensor pipes k x 0.3 busy: memory_bound below) at 0.8x
 * and 1.2x of the threshold (0.8x of a ratio threshold means 0.8x its excess: 1.2 for
 * 1.25). The kernel profiles are set as physics (scenario keys sm_fill and hbm_bytes, a
 * roofline in the simulator); the agent sees them only as DCGM profiling fields. On the
 * problem-free side the class must not be reported as a finding, but when the loss is >= 5%
 * of the job's time it must be a minor finding (issue 19 item 6). Harvest gaps are only
 * exercised by the clear runs.
 *
 * Variation: GPU counts, efficiencies, step noise (lognormal sigma up to 0.35: signal
 * noise), run length (10 to 20 minutes), DCGM profiling fields present or missing
 * (`profiling = no`), co-located bystanders. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent_run.h"
#include "engine/diagnosis/classify.h"
#include "engine/accounting/goodput.h"
#include "engine/diagnosis/thresholds.h"
#include "sim/scenario.h"
#include "sim/sim.h"
#include "store/store.h"

enum {
    L_COMPUTE,
    L_INPUT,
    L_CHECKPOINT,
    L_COMM,
    L_HOST,
    L_NOT_READY,
    L_IDLE,
    L_MEMORY_BOUND,
    L_UNDER_BATCHED,
    L_MEMORY_CAPACITY,
    L_HARVESTABLE,
    L_INTERFERENCE,
    L_STRAGGLER,
    L_THROTTLED,
    L__N
};
static const gp_finding_class lab_class[L__N] = {
    GP_FC_COMPUTE_BOUND, GP_FC_INPUT_BOUND,     GP_FC_CHECKPOINT_BOUND, GP_FC_COMMUNICATION_BOUND,
    GP_FC_HOST_BOUND,    GP_FC_NOT_READY,       GP_FC_IDLE_ALLOCATED,   GP_FC_MEMORY_BOUND,
    GP_FC_UNDER_BATCHED, GP_FC_MEMORY_CAPACITY, GP_FC_HARVESTABLE,      GP_FC_INTERFERENCE,
    GP_FC_STRAGGLER,     GP_FC_THROTTLED,
};

/* What the generator knows beyond the labels. */
typedef struct {
    int rank;                  /* planted straggler rank; < 0 none */
    int64_t from_ns, until_ns; /* relative to the simulation start; until = end of run */
    int slo_missed;            /* the service declared SLOs it cannot meet */
    int grey;                  /* grey-zone threshold index + 1 (0: a clear run) */
    int grey_hi;               /* 1: placed at 1.2x the threshold, 0: at 0.8x */
    double grey_share;         /* the loss it aims at, as a share of the job's time */
    int profiling_off;         /* `profiling = no` */
    int noisy;                 /* step noise sigma >= 0.25 */
} gen_info;

#define N_GREY 10
static const char *grey_name[N_GREY] = {"data_wait_share", "checkpoint_share",
                                        "not_ready",       "interference_ratio",
                                        "straggler_ratio", "interconnect_peak_share",
                                        "throttle_share",  "sm_active",
                                        "dram_active",     "tensor_active"};
static const int grey_label[N_GREY] = {1, 2, 5, 11, 12, 3, 13, 4, 7, 7}; /* L_ indices */
/* 1: the problem lies below the threshold (SMs or tensor pipes too idle) */
static const int grey_low[N_GREY] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 1};
#define N_KINDS 41

typedef struct {
    uint64_t s;
} rng;
static double urand(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (double)(r->s >> 11) / 9007199254740992.0;
}
static double uni(rng *r, double a, double b) {
    return a + (b - a) * urand(r);
}
static int iuni(rng *r, int a, int b) {
    return a + (int)(urand(r) * (b - a + 1));
}

#define S 1000000000LL

/* ------------------------------------------------------------------ generator */

static void base_training(gp_scenario_job *t, rng *r, int n) {
    gp_scenario_job_set_gpu_range(t, 0, n);
    t->efficiency = uni(r, 0.35, 0.7);
    t->step_noise = urand(r) < 0.25 ? uni(r, 0.25, 0.35) : uni(r, 0.02, 0.2);
    if (urand(r) < 0.15) { /* a failure and restart: a nuisance, not a labelled problem */
        t->n_restarts = 1;
        t->restart_at_ns[0] = (int64_t)(uni(r, 200, 400) * S);
        t->recovery_ns = (int64_t)(uni(r, 10, 40) * S);
        t->restore_ns = (int64_t)(uni(r, 2, 10) * S);
    }
    if (n > 1) {
        t->allreduce_bytes = uni(r, 0.5e9, 4e9);
        t->overlap = uni(r, 0.85, 1.0);
    }
}

/* Expected step time of a training job on H100-SXM (what the simulator's model gives,
 * without noise): max(loading, compute + exposed all-reduce). Used to size checkpoints so
 * that a labelled checkpoint problem really takes the share we intend. */
static double est_step_s(const gp_scenario_job *t) {
    double peak = 989.5e12, nvl_bw = 450e9;
    double compute = t->flops_per_step / (peak * t->efficiency);
    double comm = 0;
    if (t->n_gpus > 1 && t->allreduce_bytes > 0)
        comm = 2.0 * (t->n_gpus - 1) / t->n_gpus * t->allreduce_bytes / nvl_bw;
    double hidden = comm * t->overlap < compute ? comm * t->overlap : compute;
    double gpu = compute + comm - hidden;
    double load = t->batch_samples * t->sample_cpu_s / t->loader_workers;
    return load > gpu ? load : gpu;
}

/* Checkpoint every k steps, blocking for a share `share` of the time. */
static void set_checkpoint(gp_scenario_job *t, rng *r, double share) {
    t->checkpoint_every = iuni(r, 10, 40);
    double work = t->checkpoint_every * est_step_s(t);
    t->checkpoint_ns = (int64_t)(share / (1 - share) * work * S);
}

/* A data loader that makes the job wait for input a share `share` of each step. */
static void set_loader(gp_scenario_job *t, double share) {
    double keep = t->sample_cpu_s;
    t->sample_cpu_s = 0;
    double gpu = est_step_s(t);
    t->sample_cpu_s = keep;
    double load = gpu / (1 - share);
    t->loader_workers = 2;
    t->sample_cpu_s = load * t->loader_workers / t->batch_samples;
}

/* Builds scenario i; returns the label bitmask of target job "t". */
static unsigned generate(int i, uint64_t seed, gp_scenario *sc, gen_info *st) {
    rng r = {seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 7919 + 1};
    for (int k = 0; k < 5; k++)
        urand(&r);
    gp_scenario_init(sc);
    sc->seed = seed * 1000 + (uint64_t)i;
    sc->n_gpus = 8;
    sc->duration_ns = (int64_t)(uni(&r, 10, 20) * 60 * S);
    int kind = i % N_KINDS;
    memset(st, 0, sizeof *st);
    st->rank = -1;
    unsigned lab = 0;
    int needs_profiling = 0;
    (void)grey_name;
    gp_scenario_job *t = NULL;
    int n = iuni(&r, 1, 4);
    double dur_s = (double)sc->duration_ns / S;
    switch (kind) {
    case 0: /* healthy */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, n);
        lab = 1u << L_COMPUTE;
        break;
    case 1:  /* input bound */
    case 12: /* + checkpoint */
    case 13: /* + not ready */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, n);
        t->loader_workers = iuni(&r, 1, 3);
        t->sample_cpu_s = uni(&r, 0.004, 0.012) * t->loader_workers;
        lab = 1u << L_INPUT;
        if (kind == 12) {
            set_checkpoint(t, &r, uni(&r, 0.15, 0.35));
            lab |= 1u << L_CHECKPOINT;
        }
        if (kind == 13) {
            t->ready_after_ns = (int64_t)(uni(&r, 0.2, 0.4) * dur_s * S);
            if (t->ready_after_ns < 120 * S) t->ready_after_ns = 120 * S;
            lab |= 1u << L_NOT_READY;
        }
        break;
    case 2:  /* checkpoint bound */
    case 14: /* + communication */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, kind == 14 ? iuni(&r, 4, 8) : n);
        lab = 1u << L_CHECKPOINT;
        if (kind == 14) {
            t->allreduce_bytes = uni(&r, 80e9, 200e9);
            t->overlap = uni(&r, 0, 0.3);
            lab |= 1u << L_COMM;
        }
        set_checkpoint(t, &r, uni(&r, 0.15, 0.4));
        break;
    case 3: /* communication bound */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, iuni(&r, 4, 8));
        t->allreduce_bytes = uni(&r, 80e9, 200e9);
        t->overlap = uni(&r, 0, 0.3);
        lab = 1u << L_COMM;
        break;
    case 4: /* host bound: many small kernels */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, n);
        t->small_kernels = 1;
        t->kernels_per_step = iuni(&r, 60000, 200000);
        t->launch_overhead_s = uni(&r, 8e-6, 15e-6);
        lab = 1u << L_HOST;
        needs_profiling = 1;
        break;
    case 5: /* not ready (never, or late) */
        if (urand(&r) < 0.5) {
            t = gp_scenario_add_job(sc, "t", GP_SJ_NOT_READY);
            gp_scenario_job_set_gpu_range(t, 0, n);
        } else {
            t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
            base_training(t, &r, n);
            t->ready_after_ns = (int64_t)(uni(&r, 0.2, 0.5) * dur_s * S);
            if (t->ready_after_ns < 120 * S) t->ready_after_ns = 120 * S;
        }
        lab = 1u << L_NOT_READY;
        break;
    case 6: /* idle notebook */
        t = gp_scenario_add_job(sc, "t", GP_SJ_IDLE);
        gp_scenario_job_set_gpu_range(t, 0, iuni(&r, 1, 2));
        t->burst_every_ns = (int64_t)(uni(&r, 60, 240) * S);
        t->burst_ns = (int64_t)(uni(&r, 1, 5) * S);
        lab = 1u << L_IDLE;
        break;
    case 7: /* memory-bound decode */
        t = gp_scenario_add_job(sc, "t", GP_SJ_INFERENCE);
        gp_scenario_job_set_gpu_range(t, 0, iuni(&r, 1, 2));
        t->rate = uni(&r, 3, 8);
        t->output_tokens = uni(&r, 200, 500);
        t->prompt_tokens = uni(&r, 200, 1500);
        lab = 1u << L_MEMORY_BOUND;
        needs_profiling = 1;
        if (urand(&r) < 0.5) { /* a TPOT SLO under the time one decode step reads the
                                  weights from HBM: no request can meet it */
            t->slo_tpot_ns = 1000000;
            st->slo_missed = 1;
        }
        break;
    case 8: /* under-batched: light traffic, little memory */
    case 9: /* memory capacity: light traffic, memory full */
        t = gp_scenario_add_job(sc, "t", GP_SJ_INFERENCE);
        gp_scenario_job_set_gpu_range(t, 0, 1);
        t->rate = uni(&r, 0.03, 0.08);
        t->output_tokens = uni(&r, 100, 300);
        t->mem_frac = kind == 8 ? uni(&r, 0.15, 0.45) : uni(&r, 0.85, 0.95);
        lab = 1u << (kind == 8 ? L_UNDER_BATCHED : L_MEMORY_CAPACITY);
        if (urand(&r) < 0.5) { /* a TTFT SLO under any prefill's compute time */
            t->slo_ttft_ns = 1000000;
            st->slo_missed = 1;
        }
        break;
    case 10: /* harvestable: a service with long idle gaps */
        t = gp_scenario_add_job(sc, "t", GP_SJ_INFERENCE);
        gp_scenario_job_set_gpu_range(t, 0, 1);
        sc->duration_ns = (int64_t)uni(&r, 40, 60) * 60 * S;
        t->rate = uni(&r, 0.0015, 0.003);
        lab = 1u << L_HARVESTABLE;
        break;
    case 19: /* starved AND communication bound */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, iuni(&r, 4, 8));
        t->allreduce_bytes = uni(&r, 80e9, 200e9);
        t->overlap = uni(&r, 0, 0.3);
        set_loader(t, uni(&r, 0.25, 0.4));
        lab = 1u << L_INPUT | 1u << L_COMM;
        break;
    case 20: { /* interference on a starved job */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, n);
        double s = uni(&r, 0.25, 0.4);
        set_loader(t, s);
        lab = 1u << L_INPUT | 1u << L_INTERFERENCE;
        /* the neighbour must slow the steps past the loader's pace (GPU time x (1 + c) >
         * load / 0.75, a throughput ratio under 0.75): a slowdown the loader hides costs
         * the job nothing and is no interference */
        double cmin = 1 / (0.75 * (1 - s)) - 1;
        sc->contention = uni(&r, cmin, cmin + 0.4);
        {
            gp_scenario_job *o = gp_scenario_add_job(sc, "neighbour", GP_SJ_TRAINING);
            gp_scenario_job_set_gpu_range(o, 0, n);
            o->start_ns = (int64_t)(uni(&r, 0.2, 0.3) * dur_s * S);
            o->end_ns = (int64_t)(uni(&r, 0.8, 0.9) * dur_s * S);
        }
        break;
    }
    default: { /* grey zone: 0.8x or 1.2x of one threshold */
        int g = (kind - 21) / 2, hi = (kind - 21) % 2; /* hi: 1.2x (then the truth) */
        double k = hi ? 1.2 : 0.8;
        st->grey = g + 1;
        st->grey_hi = hi;
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, g == 4 || g == 5 ? iuni(&r, 4, 8) : n);
        t->n_restarts = 0; /* one loss at a time beside a threshold */
        if (t->step_noise > 0.2) t->step_noise = 0.2;
        if (g == 0) {
            st->grey_share = k * gp_th(GP_TH_DATA_WAIT_SHARE);
            set_loader(t, st->grey_share);
        } else if (g == 1) {
            st->grey_share = k * gp_th(GP_TH_CHECKPOINT_SHARE);
            set_checkpoint(t, &r, st->grey_share);
        } else if (g == 2) { /* the binding one of the floor and the share */
            double floor_s = gp_th(GP_TH_NOT_READY_MIN_S);
            double sh_s = gp_th(GP_TH_NOT_READY_SHARE) * dur_s;
            double at = k * (floor_s > sh_s ? floor_s : sh_s);
            t->ready_after_ns = (int64_t)(at * S);
            st->grey_share = at / dur_s;
        } else if (g == 3) { /* throughput shared / alone = 1 - k x (1 - threshold) */
            double loss = k * (1 - gp_th(GP_TH_INTERFERENCE_RATIO));
            sc->contention = 1 / (1 - loss) - 1;
            gp_scenario_job *o = gp_scenario_add_job(sc, "neighbour", GP_SJ_TRAINING);
            gp_scenario_job_set_gpu_range(o, 0, n);
            o->start_ns = (int64_t)(0.2 * dur_s * S);
            o->end_ns = (int64_t)(0.8 * dur_s * S);
            st->grey_share = 0.6 * loss;
        } else if (g == 4) { /* a rank slower for the whole run: one episode */
            t = &sc->jobs[0];
            t->per_rank_steps = 1;
            t->straggler_rank = iuni(&r, 0, t->n_gpus - 1);
            t->straggler_slowdown = 1 + k * (gp_th(GP_TH_STRAGGLER_RATIO) - 1);
            t->straggler_from_ns = 0;
            t->allreduce_bytes = 0.5e9; /* small: the slow compute shows in step times */
            st->rank = hi ? t->straggler_rank : -1;
            st->from_ns = 0;
            st->until_ns = sc->duration_ns;
            st->grey_share = (t->straggler_slowdown - 1) / t->straggler_slowdown;
        } else if (g == 5) { /* an all-reduce nothing hides: the links busy k x 25% of the
                              * time (full NVLink rate while exposed, idle otherwise) */
            t = &sc->jobs[0];
            t->overlap = 0;
            t->allreduce_bytes = 0;
            double c = est_step_s(t), x = k * gp_th(GP_TH_NVLINK_PEAK_SHARE);
            double e = x * c / (1 - x); /* exposed seconds per step */
            t->allreduce_bytes = e * 450e9 * t->n_gpus / (2.0 * (t->n_gpus - 1));
            /* the loss is productive time (headroom); telemetry alone cannot split exposed
             * from overlapped traffic, so no minor finding is asked for under 25% */
            st->grey_share = 0;
        } else if (g >= 7) { /* the kernels' own profile, set as physics (sm_fill: how many
                              * SMs a kernel's grid keeps busy; hbm_bytes: its HBM traffic,
                              * a roofline against its FLOPs), never as counters */
            needs_profiling = 1;
            double hbm_bw = 3350e9, peak = 989.5e12;
            if (g == 7) { /* small grids: SMs active k x 0.5 while a kernel runs */
                t->sm_fill = k * gp_th(GP_TH_SM_ACTIVE_LOW);
            } else if (g == 8) { /* latency-bound kernels (tensor pipes under 0.25) moving
                                  * k x 0.6 of the HBM bandwidth: still under the roofline */
                t->efficiency = uni(&r, 0.12, 0.25);
                double t_flops = t->flops_per_step / (peak * t->efficiency);
                t->hbm_bytes_per_step = k * gp_th(GP_TH_DRAM_ACTIVE_HIGH) * hbm_bw * t_flops;
            } else { /* memory-bound kernels (HBM streaming at 0.8) whose arithmetic
                      * intensity keeps the tensor pipes busy k x 0.3 of the time */
                t->efficiency = uni(&r, 0.5, 0.7);
                double achieved = k * gp_th(GP_TH_TENSOR_ACTIVE_HEALTHY) / 0.95;
                double t_mem = t->flops_per_step / (peak * achieved);
                t->hbm_bytes_per_step = t_mem * hbm_bw * 0.8;
            }
            /* truth from the physics (the roofline the simulator documents), not from the
             * intent: the side of the threshold the kernels' real activity lies on */
            double t_flops = t->flops_per_step / (peak * t->efficiency), tb = t_flops;
            if (t->hbm_bytes_per_step >= 0 && t->hbm_bytes_per_step / (hbm_bw * 0.8) > tb)
                tb = t->hbm_bytes_per_step / (hbm_bw * 0.8);
            double dram = t->hbm_bytes_per_step >= 0 ? t->hbm_bytes_per_step / (hbm_bw * tb) : 0;
            double tens = 0.95 * t_flops * t->efficiency / tb;
            int problem = g == 7   ? t->sm_fill < gp_th(GP_TH_SM_ACTIVE_LOW)
                          : g == 8 ? dram >= gp_th(GP_TH_DRAM_ACTIVE_HIGH) &&
                                         tens < gp_th(GP_TH_TENSOR_ACTIVE_HEALTHY)
                                   : tens < gp_th(GP_TH_TENSOR_ACTIVE_HEALTHY) &&
                                         dram >= gp_th(GP_TH_DRAM_ACTIVE_HIGH);
            hi = st->grey_hi = problem != grey_low[g];
            st->grey_share = 0; /* headroom, not badput: no minor finding is asked for */
        } else { /* power-capped for k x 10% of the run: clocks held down while computing */
            sc->power_limit_w = 300;
            sc->power_limit_from_ns = (int64_t)(0.3 * dur_s * S);
            sc->power_limit_until_ns =
                sc->power_limit_from_ns + (int64_t)(k * gp_th(GP_TH_THROTTLE_SHARE) * dur_s * S);
            /* the loss: the throttled share x the classifier's 20% slowdown, under 5% */
            st->grey_share = k * gp_th(GP_TH_THROTTLE_SHARE) * 0.2;
        }
        lab = hi != grey_low[g] ? 1u << grey_label[g] : 1u << L_COMPUTE;
        break;
    }
    case 11: /* interference: a neighbour shares the GPUs for part of the run */
    case 15: /* + checkpoint */
    case 16: /* + not ready */ {
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, n);
        lab = 1u << L_INTERFERENCE;
        if (kind == 15) {
            set_checkpoint(t, &r, uni(&r, 0.2, 0.4));
            lab |= 1u << L_CHECKPOINT;
        }
        if (kind == 16) {
            t->ready_after_ns = (int64_t)(uni(&r, 0.15, 0.25) * dur_s * S);
            if (t->ready_after_ns < 120 * S) t->ready_after_ns = 120 * S;
            lab |= 1u << L_NOT_READY;
        }
        sc->contention = uni(&r, 0.5, 1.0);
        gp_scenario_job *o = gp_scenario_add_job(sc, "neighbour", GP_SJ_TRAINING);
        gp_scenario_job_set_gpu_range(o, 0, n);
        o->start_ns = (int64_t)(uni(&r, 0.3, 0.5) * dur_s * S);
        o->end_ns = (int64_t)(uni(&r, 0.7, 0.9) * dur_s * S);
        break;
    }
    case 17: /* straggler: one rank of a data-parallel job computes slower */
    case 18: /* + checkpoint */
        t = gp_scenario_add_job(sc, "t", GP_SJ_TRAINING);
        base_training(t, &r, iuni(&r, 4, 8));
        t->per_rank_steps = 1;
        t->straggler_rank = iuni(&r, 0, t->n_gpus - 1);
        t->straggler_slowdown = uni(&r, 1.4, 1.8);
        t->straggler_from_ns = (int64_t)(uni(&r, 0.1, 0.5) * dur_s * S);
        if (urand(&r) < 0.5) /* it recovers before the end */
            t->straggler_until_ns =
                t->straggler_from_ns + (int64_t)(uni(&r, 0.3, 0.45) * dur_s * S);
        st->rank = t->straggler_rank;
        st->from_ns = t->straggler_from_ns;
        st->until_ns = t->straggler_until_ns >= 0 ? t->straggler_until_ns : sc->duration_ns;
        lab = 1u << L_STRAGGLER;
        if (kind == 18) {
            set_checkpoint(t, &r, uni(&r, 0.15, 0.35));
            lab |= 1u << L_CHECKPOINT;
        }
        break;
    }
    /* healthy ranks reporting per-rank steps: the straggler detector must stay silent */
    t = &sc->jobs[0]; /* adding jobs may have moved it */
    if (t->kind == GP_SJ_TRAINING && t->n_gpus >= 3 && urand(&r) < 0.3) t->per_rank_steps = 1;
    st->noisy = t->kind == GP_SJ_TRAINING && t->step_noise >= 0.25;
    /* a bystander on the next GPUs now and then: the engine must keep jobs apart */
    int used = 0;
    for (int j = 0; j < sc->n_jobs; j++)
        for (int g = 0; g < sc->jobs[j].n_gpus; g++)
            if (sc->jobs[j].gpus[g] + 1 > used) used = sc->jobs[j].gpus[g] + 1;
    if (urand(&r) < 0.3) {
        gp_scenario_job *b = gp_scenario_add_job(sc, "bystander", GP_SJ_TRAINING);
        gp_scenario_job_set_gpu_range(b, used, 1);
        used++;
    }
    sc->n_gpus = used; /* the node has the GPUs the jobs use: agent time grows with GPUs */
    st->profiling_off = !needs_profiling && urand(&r) < 0.3;
    sc->profiling = !st->profiling_off;
    return lab;
}

/* ------------------------------------------------------------------ running */

/* The class whose badput a finding claims, scored against the truth's bucket (classes
 * whose fix recovers productive time, headroom, have none). */
static int scored_bucket(gp_finding_class c) {
    switch (c) {
    case GP_FC_INPUT_BOUND:
        return GP_B_DATA_WAIT;
    case GP_FC_CHECKPOINT_BOUND:
        return GP_B_CHECKPOINT;
    case GP_FC_NOT_READY:
        return GP_B_NOT_READY;
    case GP_FC_IDLE_ALLOCATED:
    case GP_FC_HARVESTABLE:
        return GP_B_IDLE_ALLOCATED;
    default:
        return -1;
    }
}

/* The truth's buckets in GPU-seconds, as `goodput sim --summary --json` names them. */
static void truth_buckets(const gp_sim_truth *t, double b[GP_B__COUNT]) {
    double g = t->n_gpus;
    b[GP_B_PRODUCTIVE] = t->productive_s * g;
    b[GP_B_NOT_READY] = t->not_ready_s * g;
    b[GP_B_STARTUP] = t->init_s * g;
    b[GP_B_DATA_WAIT] = t->data_wait_s * g;
    b[GP_B_CHECKPOINT] = (t->checkpoint_s + t->restore_s) * g;
    b[GP_B_WASTED_PROGRESS] = t->wasted_s * g;
    b[GP_B_RECOVERY] = t->recovery_s * g;
    b[GP_B_IDLE_ALLOCATED] = t->idle_s * g;
    b[GP_B_OTHER] = t->other_s * g;
}

static void no_line(void *ctx, const char *line, size_t len) {
    (void)ctx, (void)line, (void)len;
}

/* The simulator alone, to its end: the ground truth of job "t". */
static int sim_truth(const gp_scenario *sc, gp_sim_truth *truth, char *err, size_t errlen) {
    gp_sim *sim;
    if (gp_sim_open(sc, 0, &sim, err, errlen) < 0) return -1;
    size_t nd = gp_sim_n_devices(sim), n;
    gp_sample *row = malloc(nd * sizeof *row);
    int64_t end = gp_sim_end_ns(sim);
    for (int64_t t = gp_sim_start_ns(sim) + S;; t += S) {
        if (t > end) t = end;
        gp_sim_sample(sim, t, row, nd, &n);
        gp_sim_drain_events(sim, t, no_line, NULL);
        if (t >= end) break;
    }
    free(row);
    int rc = gp_sim_job_truth(sim, "t", truth);
    if (rc < 0) snprintf(err, errlen, "no truth for job t");
    gp_sim_close(sim);
    return rc;
}

/* Scenario -> agent -> store -> gp_diagnose_job for job "t". *f malloc'ed. */
static int run_one(const gp_scenario *sc, const char *dir, int i, gp_finding **f, size_t *nf,
                   char *err, size_t errlen) {
    char name[32];
    snprintf(name, sizeof name, "run%d", i);
    gp_store *s = gp_test_agent_store(sc, dir, name, err, errlen);
    if (!s) return -1;
    gp_diag_opts o = {.no_write = 1};
    int rc = gp_diagnose_job(s, "t", &o, f, nf, err, errlen);
    gp_store_close(s);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.db", dir, name);
    remove(path);
    snprintf(path, sizeof path, "%s/%s.conf", dir, name);
    remove(path);
    return rc;
}

typedef struct {
    int tp[L__N], fp[L__N], fn[L__N];
} prc;

static void score(prc *p, unsigned lab, unsigned pred) {
    for (int l = 0; l < L__N; l++) {
        int t = !!(lab & (1u << l)), q = !!(pred & (1u << l));
        p->tp[l] += t && q;
        p->fp[l] += !t && q;
        p->fn[l] += t && !q;
    }
}

/* Prints per-class precision and recall; returns the lowest of them (classes with
 * neither a label nor a prediction are skipped) and sets the macro averages. */
static double print_prc(const char *title, const prc *p, double *macro_p, double *macro_r) {
    printf("\n%-20s %9s %9s %5s %5s %5s\n", title, "precision", "recall", "tp", "fp", "fn");
    double sp = 0, sr = 0, lo = 1;
    int nc = 0;
    for (int l = 0; l < L__N; l++) {
        if (p->tp[l] + p->fn[l] + p->fp[l] == 0) continue;
        double pr = p->tp[l] + p->fp[l] ? (double)p->tp[l] / (p->tp[l] + p->fp[l]) : 1;
        double rc = p->tp[l] + p->fn[l] ? (double)p->tp[l] / (p->tp[l] + p->fn[l]) : 1;
        sp += pr, sr += rc, nc++;
        if (pr < lo) lo = pr;
        if (rc < lo) lo = rc;
        printf("%-20s %9.3f %9.3f %5d %5d %5d\n", gp_finding_class_name(lab_class[l]), pr, rc,
               p->tp[l], p->fp[l], p->fn[l]);
    }
    *macro_p = nc ? sp / nc : 1;
    *macro_r = nc ? sr / nc : 1;
    printf("%-20s %9.3f %9.3f\n", "macro", *macro_p, *macro_r);
    return lo;
}

int main(int argc, char **argv) {
    int runs = N_KINDS * 2, verbose = 0;
    uint64_t seed = 1;
    double min = 0, grey_min = 0, waste_max = -1;
    const char *dump = NULL; /* --dump DIR: write the scenarios as DIR/runI.conf, run none */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc)
            seed = strtoull(argv[++i], 0, 10);
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--min") && i + 1 < argc)
            min = atof(argv[++i]);
        else if (!strcmp(argv[i], "--grey-min") && i + 1 < argc)
            grey_min = atof(argv[++i]);
        else if (!strcmp(argv[i], "--waste-max") && i + 1 < argc)
            waste_max = atof(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else {
            fprintf(stderr, "usage: accuracy [-n RUNS] [-s SEED] [-v] [--min P] [--grey-min P] "
                            "[--waste-max PTS] [--dump DIR]\n");
            return 2;
        }
    }
    if (dump) { /* the random scenarios for other tests (accounting_truth.sh) */
        for (int i = 0; i < runs; i++) {
            gp_scenario sc;
            gen_info gi;
            generate(i, seed, &sc, &gi);
            char path[1024], err[256];
            snprintf(path, sizeof path, "%s/run%d.conf", dump, i);
            FILE *f = gp_scenario_validate(&sc, err, sizeof err) == 0 ? fopen(path, "w") : NULL;
            int bad = !f || gp_scenario_write(&sc, f) != 0;
            if (f && fclose(f) != 0) bad = 1;
            gp_scenario_free(&sc);
            if (bad) {
                fprintf(stderr, "accuracy: cannot write %s\n", path);
                return 1;
            }
        }
        return 0;
    }
    char dir[] = "/tmp/gp-accuracy-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    prc clear = {0}, grey = {0};
    int conf[L__N][L__N + 1];
    memset(conf, 0, sizeof conf);
    int relabelled = 0, extra = 0, mixtures = 0, mixtures_ok = 0, noprof = 0, noisy = 0, exact = 0;
    int slo_runs = 0, slo_ok = 0, slo_false = 0, healthy = 0, healthy_noisy = 0;
    int strag_runs = 0, strag_rank_ok = 0, strag_range_ok = 0, strag_findings_max = 0;
    int grey_runs = 0, minor_want = 0, minor_found = 0, minor_false = 0;
    double strag_err_s = 0;
    /* waste error per class: |claimed - truth| in points of the job's allocated GPU-time */
    double werr_sum[L__N] = {0}, werr_max[L__N] = {0};
    double werr_gpus_sum[L__N] = {0}, werr_gpus_max[L__N] = {0}; /* the same in GPU-seconds */
    int werr_n[L__N] = {0};
    int fail = 0;
    time_t w0 = time(NULL);
    clock_t c0 = clock();
    for (int i = 0; i < runs; i++) {
        gp_scenario sc;
        gen_info gi;
        unsigned lab = generate(i, seed, &sc, &gi);
        noprof += gi.profiling_off;
        noisy += gi.noisy;
        char err[1024];
        if (gp_scenario_validate(&sc, err, sizeof err) < 0) {
            fprintf(stderr, "run %d: scenario invalid: %s\n", i, err);
            gp_scenario_free(&sc);
            return 1;
        }
        if (getenv("ACC_DUMP") && atoi(getenv("ACC_DUMP")) == i) gp_scenario_write(&sc, stderr);
        gp_sim_truth truth;
        gp_finding *fd = NULL;
        size_t nf = 0;
        if (sim_truth(&sc, &truth, err, sizeof err) < 0 ||
            run_one(&sc, dir, i, &fd, &nf, err, sizeof err) < 0) {
            fprintf(stderr, "run %d: %s\n", i, err);
            gp_scenario_free(&sc);
            return 1;
        }
        int64_t dur_ns = sc.duration_ns;
        gp_scenario_free(&sc);
        double tb[GP_B__COUNT];
        truth_buckets(&truth, tb);
        double alloc = truth.allocated_s * truth.n_gpus;
        /* ground truth over intent: a service whose Poisson draw brought no request at all
         * did no work, and that is idle_allocated, not harvestable */
        if ((lab & (1u << L_HARVESTABLE)) && truth.requests_done == 0) {
            lab = (lab & ~(1u << L_HARVESTABLE)) | (1u << L_IDLE);
            relabelled++;
        }
        /* grey zone, ground truth over intent: the generator aims at 0.8x or 1.2x, noise
         * moves the truth; a share that landed on the other side is labelled as it is */
        if (gi.grey == 1 || gi.grey == 2) {
            double ready_wall = truth.allocated_s - truth.not_ready_s - truth.init_s;
            double sh = ready_wall > 0 ? (gi.grey == 1 ? truth.data_wait_s
                                                       : truth.checkpoint_s + truth.restore_s) /
                                             ready_wall
                                       : 0;
            gp_threshold_id th = gi.grey == 1 ? GP_TH_DATA_WAIT_SHARE : GP_TH_CHECKPOINT_SHARE;
            int hi = sh >= gp_th(th);
            if (hi != gi.grey_hi) {
                relabelled++;
                gi.grey_hi = hi;
                lab = hi ? 1u << grey_label[gi.grey - 1] : 1u << L_COMPUTE;
            }
            gi.grey_share = sh;
        }
        /* predictions: classes of the findings that are not minor */
        unsigned pred = 0, minor = 0;
        int top = -1, slo_ev = 0, n_strag = 0;
        const gp_finding *sf = NULL;
        for (size_t k = 0; k < nf; k++) {
            int l = -1;
            for (int m = 0; m < L__N; m++)
                if (fd[k].cls == lab_class[m]) l = m;
            if (fd[k].minor) {
                if (l >= 0) minor |= 1u << l;
                continue;
            }
            if (l < 0) {
                pred |= 1u << 31; /* a class outside the suite's labels */
                continue;
            }
            pred |= 1u << l;
            if (top < 0) top = l;
            if (fd[k].cls == GP_FC_STRAGGLER) {
                n_strag++;
                if (!sf) sf = &fd[k];
            }
            for (int e = 0; e < fd[k].n_evidence; e++)
                if (!strcmp(fd[k].evidence[e].metric, "slo_attainment")) slo_ev = 1;
            /* waste error of the labelled classes that were found */
            int b = scored_bucket(fd[k].cls);
            if (b >= 0 && (lab & (1u << l)) && alloc > 0 && fd[k].badput_gpu_s[b] >= 0) {
                double e_s = fabs(fd[k].badput_gpu_s[b] - tb[b]);
                double e = 100 * e_s / alloc;
                werr_gpus_sum[l] += e_s;
                if (e_s > werr_gpus_max[l]) werr_gpus_max[l] = e_s;
                werr_sum[l] += e;
                werr_n[l]++;
                if (e > werr_max[l]) werr_max[l] = e;
                if (verbose && e > 5)
                    fprintf(stderr, "  run %d: %s claims %.0f GPU-s of %s, truth %.0f (%.1f pts)\n",
                            i, gp_finding_class_name(fd[k].cls), fd[k].badput_gpu_s[b],
                            gp_bucket_name(b), tb[b], e);
            }
        }
        if (n_strag > strag_findings_max) strag_findings_max = n_strag;
        if (pred & (1u << 31)) extra++;
        if (verbose) {
            fprintf(stderr, "run %d (%d min, %d GPU(s)%s%s%s): labels", i, (int)(dur_ns / S / 60),
                    truth.n_gpus, gi.profiling_off ? ", no profiling" : "",
                    gi.noisy ? ", noisy" : "", gi.grey ? ", grey" : "");
            for (int l = 0; l < L__N; l++)
                if (lab & (1u << l)) fprintf(stderr, " %s", gp_finding_class_name(lab_class[l]));
            fprintf(stderr, "; found");
            for (size_t k = 0; k < nf; k++)
                fprintf(stderr, " %s%s(%.0f)", gp_finding_class_name(fd[k].cls),
                        fd[k].minor ? "/minor" : "", fd[k].wasted_gpu_s);
            fprintf(stderr, "\n");
        }
        /* SLO attainment needs a sample: the engine judges services with >= 20 requests */
        if (truth.requests_done < 20) gi.slo_missed = 0;
        slo_runs += gi.slo_missed;
        slo_ok += gi.slo_missed && slo_ev;
        slo_false += !gi.slo_missed && slo_ev;
        /* a straggler found must be the planted rank, over the planted time range: the
         * episode starts and ends within 60 s (a few rolling windows) of the truth */
        if (gi.rank >= 0) {
            strag_runs++;
            char want[96];
            snprintf(want, sizeof want, "t/rank-%d", gi.rank);
            if (sf && !strcmp(sf->scope_id, want)) {
                strag_rank_ok++;
                int64_t origin = GP_SIM_EPOCH_NS;
                double e0 = (double)(sf->t0_ns - (origin + gi.from_ns)) / S;
                double e1 = (double)(sf->t1_ns - (origin + gi.until_ns)) / S;
                double e = fabs(e0) > fabs(e1) ? fabs(e0) : fabs(e1);
                if (e > strag_err_s) strag_err_s = e;
                strag_range_ok += e <= 60;
                if (verbose && e > 60)
                    fprintf(stderr, "  straggler range off by %.0f s (start %+.0f, end %+.0f)\n", e,
                            e0, e1);
            } else if (verbose)
                fprintf(stderr, "  straggler: wanted %s, found %s\n", want,
                        sf ? sf->scope_id : "none");
        }
        unsigned known = pred & ((1u << L__N) - 1);
        if (gi.grey) {
            grey_runs++;
            score(&grey, lab, known);
            /* under the threshold with a loss of >= 5% of the job's time: a minor finding */
            int l = grey_label[gi.grey - 1];
            if (!gi.grey_hi && gi.grey_share >= gp_th(GP_TH_MINOR_SHARE)) {
                minor_want++;
                minor_found += !!(minor & (1u << l));
            }
        } else {
            score(&clear, lab, known);
            minor_false += __builtin_popcount(minor);
        }
        if (lab == 1u << L_COMPUTE && !gi.grey) {
            healthy++;
            healthy_noisy += gi.noisy;
            if (known != lab || minor) {
                fprintf(stderr, "run %d: healthy job got findings beyond compute_bound\n", i);
                if (min > 0) fail = 1;
            }
        }
        if (known == lab) exact++;
        int nl = __builtin_popcount(lab);
        if (nl == 1 && !gi.grey) {
            conf[__builtin_ctz(lab)][top < 0 ? L__N : top]++;
        } else if (nl > 1) {
            mixtures++;
            mixtures_ok += (known & lab) == lab;
        }
        free(fd);
    }
    rmdir(dir);
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    printf("engine accuracy through scenario -> agent -> store -> diagnose: %d runs (%d grey-zone, "
           "%d mixtures, %d without profiling fields, %d with noisy steps), %.1f s CPU, %ld s "
           "wall\n\n",
           runs, grey_runs, mixtures, noprof, noisy, cpu, (long)(time(NULL) - w0));
    printf("confusion matrix, clear single-problem runs (rows: true class, columns: top "
           "finding)\n%-20s",
           "");
    for (int l = 0; l < L__N; l++)
        printf(" %4.4s", gp_finding_class_name(lab_class[l]));
    printf(" none\n");
    for (int l = 0; l < L__N; l++) {
        printf("%-20s", gp_finding_class_name(lab_class[l]));
        for (int k = 0; k <= L__N; k++)
            printf(" %4d", conf[l][k]);
        printf("\n");
    }
    double cp, cr, gp, gr;
    print_prc("clear runs", &clear, &cp, &cr);
    double grey_lo = print_prc("grey-zone runs", &grey, &gp, &gr);
    printf("\nwaste error (|claimed - truth| in points of allocated GPU-time, labelled finds)\n");
    double werr_worst = 0;
    for (int l = 0; l < L__N; l++) {
        if (!werr_n[l]) continue;
        printf("  %-18s mean %5.2f  max %5.2f  (GPU-s: mean %.1f, max %.1f; %d findings, bucket "
               "%s)\n",
               gp_finding_class_name(lab_class[l]), werr_sum[l] / werr_n[l], werr_max[l],
               werr_gpus_sum[l] / werr_n[l], werr_gpus_max[l], werr_n[l],
               gp_bucket_name(scored_bucket(lab_class[l])));
        if (werr_max[l] > werr_worst) werr_worst = werr_max[l];
    }
    printf("\nexact label sets %d/%d; mixtures with every problem found %d/%d; runs with findings "
           "outside the labels %d; relabelled from ground truth %d\n",
           exact, runs, mixtures_ok, mixtures, extra, relabelled);
    printf("healthy runs %d (%d noisy); minor findings below a threshold with a >= 5%% loss %d/%d; "
           "minor findings on clear runs %d\n",
           healthy, healthy_noisy, minor_found, minor_want, minor_false);
    printf("straggler runs: right rank %d/%d, time range within 60 s %d/%d (worst %.1f s), most "
           "straggler findings in one run %d\n",
           strag_rank_ok, strag_runs, strag_range_ok, strag_runs, strag_err_s, strag_findings_max);
    printf("services missing declared SLOs: SLO attainment evidence %d/%d; on other runs %d\n",
           slo_ok, slo_runs, slo_false);
    if (min > 0 && (slo_ok < slo_runs || slo_false > 0)) {
        printf("FAIL: SLO misses not reported\n");
        fail = 1;
    }
    if (min > 0 && (strag_rank_ok < strag_runs || strag_range_ok * 10 < strag_runs * 9 ||
                    strag_findings_max > 1)) {
        printf("FAIL: stragglers not located as one episode\n");
        fail = 1;
    }
    if (min > 0 && (cp < min || cr < min)) {
        printf("FAIL: clear-run macro precision/recall below %.2f\n", min);
        fail = 1;
    }
    if (grey_min > 0 && grey_lo < grey_min) {
        printf("FAIL: a grey-zone class's precision or recall is below %.2f\n", grey_min);
        fail = 1;
    }
    if (waste_max >= 0 && werr_worst > waste_max) {
        printf("FAIL: waste error %.2f points > %.2f\n", werr_worst, waste_max);
        fail = 1;
    }
    if (min > 0 && minor_found < minor_want) {
        printf("FAIL: grey-zone losses under a threshold not reported as minor findings\n");
        fail = 1;
    }
    return fail;
}
