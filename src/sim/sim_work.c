/* sim_work.c: the workload models that drive the simulator's timelines.
 *
 * Each model appends segments (constant kernel mixes) and event lines to its job, one step
 * or one iteration at a time, and is run lazily up to the time the caller asks for.
 *
 * Training, per step (per rank, all ranks in lock step):
 *   load      = batch x sample_cpu / loader_workers (the loader prefetches while the GPU
 *               works, so the GPU waits max(0, load - previous step's GPU time))
 *   copy      = batch x sample_bytes / PCIe bandwidth (copy engine: no kernel, util 0)
 *   compute   = flops_per_step / (peak bf16 x efficiency) x lognormal noise x contention
 *   all-reduce= ring: 2(n-1)/n x bytes / link bandwidth; `overlap` of it hides under
 *               compute, the rest is exposed NCCL time: gpu_util 1, sm_active ~0.15,
 *               tensor 0 (the "latency mirage")
 *   checkpoint every K steps (GPU idle), restarts (dead time, re-init, restore, redo).
 * Inference: continuous batching; a prefill iteration is compute bound
 *   (2 x params x prompt tokens FLOPs), a decode iteration reads the weights and the KV
 *   cache of the batch from HBM, so it is memory bound.
 * Sharing a GPU: while another busy job runs on one of its GPUs, a job's kernels take
 *   (1 + contention) times longer per such job. */
#include "sim/sim_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ST_WAIT_READY, ST_BOOT, ST_RUN, ST_DEAD, ST_INFER, ST_IDLE };

typedef struct prof {
    float util, sm, occ, tensor, dram, fp16, fp32;
    double rx, tx, nvl;
} prof;

static const prof P_IDLE = {0};

/* Share of the spec's HBM bandwidth that streaming kernels reach (DCGM DRAM activity
 * peaks near 0.8 in practice). */
#define HBM_ACHIEVABLE 0.8

static double peak_flops(const gp_gpu_spec *sp) {
    return sp->bf16_flops > 0 ? sp->bf16_flops : sp->fp16_flops;
}

static double ns_to_s(int64_t ns) {
    return (double)ns / 1e9;
}
/* Seconds to ns, saturating: absurd inputs (1e300 FLOPs) give a very long step, not UB. */
static int64_t s_to_ns(double s) {
    double ns = s * 1e9;
    if (!(ns < 4e18)) return (int64_t)4e18; /* also catches NaN */
    if (ns < 0) return 0;
    return (int64_t)llround(ns);
}

/* 1 + contention x the number of busy jobs sharing a GPU with j at time t. */
static double contention(const gp_sim *s, const sim_job *j, int64_t t) {
    int busy = 0;
    for (int k = 0; k < j->n_co; k++) {
        const sim_job *o = &s->jobs[j->co[k]];
        const gp_scenario_job *c = o->cfg;
        if (c->kind == GP_SJ_IDLE || c->ready_after_ns == GP_SCEN_NEVER) continue;
        if (t >= c->start_ns + c->ready_after_ns && t < o->end) busy++;
    }
    return 1 + s->sc.contention * busy;
}

/* Slowdown of compute-bound kernels on a power-capped GPU: the dynamic power (above idle)
 * the profile would draw, over what the cap allows; the clock, hence the speed, scales by
 * the inverse. 1 when under the cap. */
static double power_slow(const gp_sim *s, const prof *p, int64_t t) {
    const gp_gpu_spec *sp = s->spec;
    double act = 0.10 * p->util + 0.45 * p->sm + 0.30 * p->tensor + 0.25 * p->dram;
    double want = (sp->tdp_w - sp->idle_w) * act, room = sim_cap_w(s, t) - sp->idle_w;
    return want > room && room > 0 ? want / room : 1;
}

/* Where the current segment must stop: the job's end, or its next failure. */
static int64_t limit(const sim_job *j) {
    int64_t lim = j->end;
    if (j->cfg->kind == GP_SJ_TRAINING || j->cfg->kind == GP_SJ_NOT_READY)
        if (j->next_restart < j->cfg->n_restarts && j->cfg->restart_at_ns[j->next_restart] < lim)
            lim = j->cfg->restart_at_ns[j->next_restart];
    return lim;
}

static sim_seg *put(sim_job *j, int64_t t0, int64_t t1, int bucket, const prof *p, float mem,
                    int proc) {
    sim_seg *g = sim_push(j, t0, t1, bucket);
    g->util = p->util;
    g->sm = p->sm;
    g->occ = p->occ;
    g->tensor = p->tensor;
    g->dram = p->dram;
    g->fp16 = p->fp16;
    g->fp32 = p->fp32;
    g->pcie_rx_bps = p->rx;
    g->pcie_tx_bps = p->tx;
    g->nvl_bps = p->nvl;
    g->mem_frac = mem;
    g->proc = (uint8_t)proc;
    /* Without a scheduler nothing holds the GPUs while the job has no process (the dead
     * time after a failure): that time is not allocated, as the agent sees it. */
    if (!proc && j->cfg->scheduler_none) sim_bucket_add(j, bucket, -sim_held_s(j, t0, t1));
    return g;
}

static void emit_phase(gp_sim *s, sim_job *j, const char *name, const char *edge, int64_t t) {
    if (j->cfg->per_rank_steps) { /* every rank reports its own phases */
        for (int r = 0; r < j->cfg->n_gpus; r++)
            sim_emit(s, j, t, "phase job=%s rank=%d name=%s edge=%s ts=%lld", j->cfg->id, r, name,
                     edge, (long long)(s->origin + t));
        return;
    }
    sim_emit(s, j, t, "phase job=%s name=%s edge=%s ts=%lld", j->cfg->id, name, edge,
             (long long)(s->origin + t));
}

/* The straggler's slowdown at time t (1 when none). */
static double straggler_factor(const gp_scenario_job *c, int64_t t) {
    if (c->straggler_rank < 0 || c->straggler_slowdown <= 1 || t < c->straggler_from_ns) return 1;
    if (c->straggler_until_ns >= 0 && t >= c->straggler_until_ns) return 1;
    return c->straggler_slowdown;
}

/* per_rank_steps: one step event per rank. ts is the rank's own compute-finish time (as a
 * per-rank timer or profiler reports it): the straggler's is late by its slowdown, the
 * others' carry 1% rank-to-rank jitter (from their own generator, so the job's timeline
 * does not change). Emitted in time order. */
static void emit_rank_steps(gp_sim *s, sim_job *j, int64_t step_start, int64_t c0, int64_t cns,
                            double slow, int64_t step_end) {
    const gp_scenario_job *c = j->cfg;
    int n = c->n_gpus;
    int64_t *fin = malloc((size_t)n * sizeof *fin);
    int *ord = malloc((size_t)n * sizeof *ord);
    if (!fin || !ord) abort();
    for (int r = 0; r < n; r++) {
        double f = r == c->straggler_rank ? slow : exp(0.01 * sim_rng_normal(&j->rank_rng));
        if (f > slow) f = slow; /* nobody finishes after the straggler */
        int64_t t = c0 + s_to_ns((double)cns / 1e9 * f);
        if (t > step_end) t = step_end;
        if (t <= step_start) t = step_start + 1;
        fin[r] = t;
        int k = r;
        while (k > 0 && fin[ord[k - 1]] > t) {
            ord[k] = ord[k - 1];
            k--;
        }
        ord[k] = r;
    }
    for (int i = 0; i < n; i++) {
        int r = ord[i];
        sim_emit(s, j, fin[r], "step job=%s rank=%d step=%lld units=%lld start=%lld ts=%lld", c->id,
                 r, (long long)j->step, (long long)c->batch_samples,
                 (long long)(s->origin + step_start), (long long)(s->origin + fin[r]));
    }
    free(fin);
    free(ord);
}

static void finish(gp_sim *s, sim_job *j) {
    j->done = 1;
    j->gen = j->end;
    if (!j->ended_ev) return;
    int64_t te = s->origin + j->end;
    /* The workload's own last word (a client's atexit). Where the GPUs were held, and
     * until when, is for the agent to see (sim_node.c), not for the simulator to say. */
    sim_emit(s, j, j->end, "job job=%s state=ended exit=0 ts=%lld", j->cfg->id, (long long)te);
}

/* Pushes [gen, gen + dur) clipped to the limit, with an optional phase around it.
 * Returns 1 when the span completed, 0 when the limit cut it (gen is then the limit). */
static int span(gp_sim *s, sim_job *j, int64_t dur, int bucket, const prof *p, const char *phase,
                float mem, int proc) {
    int64_t lim = limit(j), t0 = j->gen, t1 = t0 + dur;
    if (t1 > lim) t1 = lim;
    if (t1 < t0) t1 = t0;
    if (phase) emit_phase(s, j, phase, "begin", t0);
    if (t1 > t0) put(j, t0, t1, bucket, p, mem, proc);
    j->gen = t1;
    if (phase) emit_phase(s, j, phase, "end", t1);
    return t0 + dur < lim;
}

/* After a span was cut: either the job's end or a failure. */
static void on_cut(gp_sim *s, sim_job *j, double partial_prod) {
    if (j->gen >= j->end) {
        j->truth.productive_s -= partial_prod;
        j->truth.other_s += partial_prod;
        finish(s, j);
        return;
    }
    /* failure: the computation of the steps since the last checkpoint and of the cut step
     * is lost. The data waits inside those steps keep their bucket: the failure lost the
     * steps' computation, not the wait the job would have spent without it (docs/goodput.md,
     * wasted_progress: "a blocking phase inside a lost step keeps its own label", as the
     * accounting labels them) */
    double lost = j->prod_since_ckpt + partial_prod;
    j->truth.productive_s -= lost;
    j->truth.wasted_s += lost;
    j->truth.steps_redone += j->step - j->last_ckpt;
    j->truth.restarts++;
    j->prod_since_ckpt = 0;
    j->next_restart++;
    if (j->n_fail < GP_SCEN_MAX_RESTARTS) j->fail_t[j->n_fail++] = j->gen;
    j->state = ST_DEAD;
}

static void skip_past_restarts(sim_job *j) {
    while (j->next_restart < j->cfg->n_restarts && j->cfg->restart_at_ns[j->next_restart] <= j->gen)
        j->next_restart++;
}

static void emit_hello(gp_sim *s, sim_job *j) {
    const gp_scenario_job *c = j->cfg;
    char name[160], user[160], host[160];
    sim_quote(name, sizeof name, c->name);
    sim_quote(user, sizeof user, c->user);
    sim_quote(host, sizeof host, s->sc.node_name);
    const char *unit = c->kind == GP_SJ_INFERENCE ? "tokens" : "samples";
    double fpu = c->kind == GP_SJ_INFERENCE ? 2 * c->params : c->flops_per_step / c->batch_samples;
    if (c->kind == GP_SJ_IDLE)
        sim_emit(s, j, j->gen, "hello job=%s v=1 pid=%lld host=%s name=%s user=%s ts=%lld", c->id,
                 (long long)j->pid, host, name, user, (long long)(s->origin + j->gen));
    else if (c->kind == GP_SJ_INFERENCE &&
             (c->slo_ttft_ns > 0 || c->slo_tpot_ns > 0 || c->slo_e2e_ns > 0))
        sim_emit(s, j, j->gen,
                 "hello job=%s v=1 pid=%lld host=%s unit=%s flops_per_unit=%.10g name=%s user=%s "
                 "slo_ttft=%.9g slo_tpot=%.9g slo_e2e=%.9g ts=%lld",
                 c->id, (long long)j->pid, host, unit, fpu, name, user, c->slo_ttft_ns / 1e9,
                 c->slo_tpot_ns / 1e9, c->slo_e2e_ns / 1e9, (long long)(s->origin + j->gen));
    else
        sim_emit(s, j, j->gen,
                 "hello job=%s v=1 pid=%lld host=%s unit=%s flops_per_unit=%.10g name=%s user=%s "
                 "ts=%lld",
                 c->id, (long long)j->pid, host, unit, fpu, name, user,
                 (long long)(s->origin + j->gen));
}

/* ---------------------------------------------------------------- training */

static void train_step(gp_sim *s, sim_job *j) {
    const gp_scenario_job *c = j->cfg;
    const gp_gpu_spec *sp = s->spec;
    float mem = (float)j->mem_run;
    int n = c->n_gpus;
    double noise = exp(c->step_noise * sim_rng_normal(&j->rng));
    double lnoise = exp(c->step_noise * sim_rng_normal(&j->rng));
    double load = c->batch_samples * c->sample_cpu_s / c->loader_workers * lnoise;
    double wait = load - j->prev_gpu_s;
    if (wait < 0) wait = 0;
    double copy_bytes = c->batch_samples * c->sample_bytes;
    double copy = copy_bytes / sp->pcie_bytes_s;
    double e = c->efficiency;
    /* roofline: the kernels take the longer of their math (at `efficiency` of peak) and
     * their HBM traffic (at HBM_ACHIEVABLE of the spec's bandwidth); the profile follows
     * from the same two numbers, so a scenario sets physics, never the counters */
    double t_flops = c->flops_per_step / (peak_flops(sp) * e), base = t_flops, dram_frac = -1;
    if (c->hbm_bytes_per_step >= 0 && sp->hbm_bytes_s > 0) {
        double t_mem = c->hbm_bytes_per_step / (sp->hbm_bytes_s * HBM_ACHIEVABLE);
        if (t_mem > base) base = t_mem;
        dram_frac = c->hbm_bytes_per_step / (sp->hbm_bytes_s * base);
    }
    double achieved = e * t_flops / base; /* fraction of peak FLOP/s reached */
    double compute = base * noise * contention(s, j, j->gen);
    double sm_def = 0.6 + 0.35 * e, occ = 0.3 + 0.25 * e;
    prof pc = {1,
               (float)(c->sm_fill > 0 ? c->sm_fill : sm_def),
               (float)(c->sm_fill > 0 ? occ * c->sm_fill / sm_def : occ),
               (float)(0.95 * achieved),
               (float)(dram_frac >= 0 ? dram_frac : 0.2 + 0.25 * (1 - e)),
               0.04f,
               0.06f,
               0,
               0,
               0};
    if (c->small_kernels) {
        double kt = compute / c->kernels_per_step;
        double per = kt > c->launch_overhead_s ? kt : c->launch_overhead_s;
        double u = kt / per;
        compute = per * c->kernels_per_step;
        pc = (prof){(float)u,
                    (float)((c->sm_fill > 0 ? c->sm_fill : 0.3) * u),
                    0.08f,
                    (float)(0.4 * achieved * u),
                    (float)((dram_frac >= 0 ? dram_frac : 0.2) * u),
                    0.02f,
                    (float)(0.05 * u),
                    0,
                    0,
                    0};
    }
    double comm = 0, comm_bytes = 0, bw = 0;
    int via_nvlink = c->allreduce_bw <= 0 && sp->nvlink_bytes_s > 0;
    if (n > 1 && c->allreduce_bytes > 0) {
        bw = c->allreduce_bw > 0 ? c->allreduce_bw
             : via_nvlink        ? sp->nvlink_bytes_s / 2
                                 : sp->pcie_bytes_s;
        comm_bytes = 2.0 * (n - 1) / n * c->allreduce_bytes;
        comm = comm_bytes / bw;
    }
    double hidden = comm * c->overlap;
    if (hidden > compute) hidden = compute;
    double exposed = comm - hidden;
    if (hidden > 0) {
        double rate = comm_bytes * (hidden / comm) / compute;
        if (via_nvlink)
            pc.nvl = rate;
        else
            pc.rx = pc.tx = rate;
    }
    prof pn = {1, 0.15f, 0.05f, 0, 0.12f, 0, 0.02f, 0, 0, 0};
    if (via_nvlink)
        pn.nvl = bw;
    else
        pn.rx = pn.tx = bw;

    int64_t step_start = j->gen;
    double partial = 0;
    int phase = wait > 1e-3;
    int64_t w_ns = s_to_ns(wait);
    if (w_ns > 0) {
        int ok = span(s, j, w_ns, phase ? B_DATA_WAIT : B_PRODUCTIVE, &P_IDLE,
                      phase ? "data_wait" : NULL, mem, 1);
        if (!phase) partial += sim_held_s(j, step_start, j->gen);
        if (!ok) {
            on_cut(s, j, partial);
            return;
        }
    }
    int64_t t = j->gen;
    prof pcopy = P_IDLE;
    if (copy > 0) pcopy.rx = copy_bytes / copy;
    if (!span(s, j, s_to_ns(copy), B_PRODUCTIVE, &pcopy, NULL, mem, 1)) {
        partial += sim_held_s(j, t, j->gen);
        {
            on_cut(s, j, partial);
            return;
        }
    }
    partial += sim_held_s(j, t, j->gen);
    t = j->gen;
    compute *= power_slow(s, &pc, t);
    int64_t compute_ns = s_to_ns(compute) > 0 ? s_to_ns(compute) : 1; /* time always moves */
    int64_t compute_t0 = t;
    double slow = straggler_factor(c, t);
    if (!span(s, j, compute_ns, B_PRODUCTIVE, &pc, NULL, mem, 1)) {
        partial += sim_held_s(j, t, j->gen);
        {
            on_cut(s, j, partial);
            return;
        }
    }
    partial += sim_held_s(j, t, j->gen);
    t = j->gen;
    if (slow > 1) {
        /* a straggler: its compute runs (slow - 1) x longer; synchronous data parallelism
         * makes every other rank wait for it inside the all-reduce (NCCL kernels spin: a
         * kernel is resident, few SMs active, no link traffic yet). With one rank the
         * job simply computes longer. */
        int64_t lag_ns = s_to_ns(compute * (slow - 1));
        prof pw = n > 1 ? (prof){1, 0.15f, 0.05f, 0, 0.05f, 0, 0.02f, 0, 0, 0} : pc;
        int64_t t_lag = j->gen;
        if (lag_ns > 0) {
            int ok = span(s, j, lag_ns, B_PRODUCTIVE, &pw, NULL, mem, 1);
            if (j->gen > t_lag && n > 1) {
                sim_seg *g = &j->segs[j->seg_n - 1];
                g->alt = 1;
                g->alt_util = pc.util;
                g->alt_sm = pc.sm;
                g->alt_occ = pc.occ;
                g->alt_tensor = pc.tensor;
                g->alt_dram = pc.dram;
                g->alt_fp16 = pc.fp16;
                g->alt_fp32 = pc.fp32;
            }
            partial += sim_held_s(j, t, j->gen);
            if (!ok) {
                on_cut(s, j, partial);
                return;
            }
        }
        compute *= slow;
        t = j->gen;
    }
    if (exposed > 0 && !span(s, j, s_to_ns(exposed), B_PRODUCTIVE, &pn, NULL, mem, 1)) {
        partial += sim_held_s(j, t, j->gen);
        {
            on_cut(s, j, partial);
            return;
        }
    }
    partial += sim_held_s(j, t, j->gen);
    /* the step completed */
    j->prev_gpu_s = copy + compute + exposed;
    j->step++;
    j->truth.steps_done++;
    j->prod_since_ckpt += partial;
    if (j->truth.ready_s < 0) j->truth.ready_s = ns_to_s(j->gen);
    if (c->per_rank_steps)
        emit_rank_steps(s, j, step_start, compute_t0, compute_ns, slow, j->gen);
    else
        sim_emit(s, j, j->gen, "step job=%s step=%lld units=%lld start=%lld ts=%lld", c->id,
                 (long long)j->step, (long long)c->batch_samples * n,
                 (long long)(s->origin + step_start), (long long)(s->origin + j->gen));
    if (c->max_steps > 0 && j->step >= c->max_steps) {
        j->end = j->gen;
        j->ended_ev = 1;
        finish(s, j);
        return;
    }
    if (c->checkpoint_every > 0 && j->step % c->checkpoint_every == 0) {
        double bytes = c->checkpoint_bytes >= 0 ? c->checkpoint_bytes
                                                : j->mem_run * (double)sp->memory_bytes / 4;
        prof pk = P_IDLE;
        if (c->checkpoint_ns > 0) pk.tx = bytes / ns_to_s(c->checkpoint_ns);
        if (!span(s, j, c->checkpoint_ns, B_CHECKPOINT, &pk, "checkpoint_save", mem, 1)) {
            on_cut(s, j, 0);
            return;
        }
        j->last_ckpt = j->step;
        j->prod_since_ckpt = 0;
    }
}

static void train_boot(gp_sim *s, sim_job *j, int after_failure) {
    const gp_scenario_job *c = j->cfg;
    float mem = (float)j->mem_run;
    if (c->init_ns > 0) {
        prof pi = {0.05f, 0.02f, 0.02f, 0, 0.02f, 0, 0.01f, 0, 0, 0};
        pi.rx = j->mem_run * (double)s->spec->memory_bytes / ns_to_s(c->init_ns);
        if (pi.rx > s->spec->pcie_bytes_s) pi.rx = s->spec->pcie_bytes_s;
        if (!span(s, j, c->init_ns, B_INIT, &pi, "init", mem, 1)) {
            on_cut(s, j, 0);
            return;
        }
    }
    if (after_failure && c->restore_ns > 0) {
        double bytes = c->checkpoint_bytes >= 0 ? c->checkpoint_bytes
                                                : j->mem_run * (double)s->spec->memory_bytes / 4;
        prof pr = {0.05f, 0.02f, 0.02f, 0, 0.05f, 0, 0.01f, 0, 0, 0};
        pr.rx = bytes / ns_to_s(c->restore_ns);
        if (!span(s, j, c->restore_ns, B_RESTORE, &pr, "checkpoint_restore", mem, 1)) {
            on_cut(s, j, 0);
            return;
        }
    }
    j->prev_gpu_s = 0;
    j->state = ST_RUN;
}

/* ---------------------------------------------------------------- inference */

static void wait_push(sim_job *j, sim_req r) {
    if (j->wait_head > 1024 && j->wait_head * 2 > j->wait_n) {
        memmove(j->wait, j->wait + j->wait_head, (j->wait_n - j->wait_head) * sizeof *j->wait);
        j->wait_n -= j->wait_head;
        j->wait_head = 0;
    }
    if (j->wait_n == j->wait_cap) {
        size_t cap = j->wait_cap ? j->wait_cap * 2 : 64;
        sim_req *nw = realloc(j->wait, cap * sizeof *nw);
        if (!nw) abort();
        j->wait = nw;
        j->wait_cap = cap;
    }
    j->wait[j->wait_n++] = r;
}

/* The next arrival time (relative ns) without consuming it; INT64_MAX when none. */
static int64_t next_arrival(sim_job *j) {
    if (j->arr_t) return j->arr_next < j->arr_n ? j->arr_t[j->arr_next] : INT64_MAX;
    return j->poisson_next;
}

static sim_req take_arrival(sim_job *j) {
    sim_req r = {0};
    const gp_scenario_job *c = j->cfg;
    if (j->arr_t) {
        r.arrival = j->arr_t[j->arr_next];
        r.prompt = j->arr_p[j->arr_next];
        r.output = j->arr_o[j->arr_next];
        j->arr_next++;
    } else {
        r.arrival = j->poisson_next;
        double sig = 0.8, mu = log(c->prompt_tokens) - sig * sig / 2;
        double p = exp(mu + sig * sim_rng_normal(&j->rng));
        double u = sim_rng_u01(&j->rng);
        double o = -c->output_tokens * log(u > 1e-12 ? u : 1e-12);
        r.prompt = (int32_t)(p < 1 ? 1 : p > 32768 ? 32768 : llround(p));
        r.output = (int32_t)(o < 1 ? 1 : o > 8192 ? 8192 : llround(o));
        double gap = -log(1 - sim_rng_u01(&j->rng)) / c->rate;
        j->poisson_next += s_to_ns(gap) > 0 ? s_to_ns(gap) : 1;
    }
    if (r.prompt < 1) r.prompt = 1;
    if (r.output < 1) r.output = 1;
    return r;
}

/* Does a request meet every SLO the service declares (vLLM's benchmark goodput; TPOT =
 * (e2e - TTFT) / (output tokens - 1))? */
static int request_good(const gp_scenario_job *c, const sim_req *r, int64_t end) {
    int64_t e2e = end - r->arrival, ttft = r->first_token - r->arrival;
    if (c->slo_e2e_ns > 0 && e2e > c->slo_e2e_ns) return 0;
    if (c->slo_ttft_ns > 0 && ttft > c->slo_ttft_ns) return 0;
    if (c->slo_tpot_ns > 0 && r->output > 1 &&
        (double)(e2e - ttft) / (r->output - 1) > (double)c->slo_tpot_ns)
        return 0;
    return 1;
}

static void emit_request(gp_sim *s, sim_job *j, const sim_req *r, int64_t end) {
    gp_sim_truth *t = &j->truth;
    t->requests_done++;
    t->tokens_out += r->output;
    if (request_good(j->cfg, r, end)) {
        t->good_requests++;
        t->good_tokens_out += r->output;
    }
    /* Serving time (kernels running) is productive only in the share of good tokens; the
     * SLO-missing share is `other` (ARCHITECTURE.md, Definitions). Re-split the serving
     * time so far at each completed request. */
    double serving = t->productive_s + t->other_s;
    t->productive_s = serving * (double)t->good_tokens_out / (double)t->tokens_out;
    t->other_s = serving - t->productive_s;
    sim_emit(
        s, j, end, "request job=%s arrival=%lld first_token=%lld ts=%lld prompt=%d output=%d ok=1",
        j->cfg->id, (long long)(s->origin + r->arrival), (long long)(s->origin + r->first_token),
        (long long)(s->origin + end), r->prompt, r->output);
}

static void infer_iter(gp_sim *s, sim_job *j) {
    const gp_scenario_job *c = j->cfg;
    const gp_gpu_spec *sp = s->spec;
    float mem = (float)j->mem_run;
    int64_t t = j->gen, lim = limit(j);
    while (next_arrival(j) <= t)
        wait_push(j, take_arrival(j));
    size_t waiting = j->wait_n - j->wait_head;
    if (j->run_n == 0 && waiting == 0) {
        int64_t na = next_arrival(j);
        int64_t t1 = na < lim ? na : lim;
        if (t1 > t) put(j, t, t1, B_IDLE, &P_IDLE, mem, 1);
        j->gen = t1;
        if (t1 >= lim) finish(s, j);
        return;
    }
    int n = c->n_gpus;
    double wb = (c->weight_bytes > 0 ? c->weight_bytes : 2 * c->params) / n;
    double hbm = sp->hbm_bytes_s, peak = peak_flops(sp);
    double slow = contention(s, j, t);
    if (waiting > 0 && j->run_n < c->max_batch) {
        /* prefill a batch of waiting requests (at most 16k prompt tokens, at least one) */
        int m = 0;
        double tokens = 0;
        while (j->wait_head + (size_t)m < j->wait_n && j->run_n + m < c->max_batch) {
            double p = j->wait[j->wait_head + m].prompt;
            if (m > 0 && tokens + p > 16384) break;
            tokens += p;
            m++;
        }
        double comp = 2 * c->params * tokens / n / (peak * c->prefill_efficiency);
        prof nominal = {1, 0.85f, 0.4f, (float)(0.95 * c->prefill_efficiency), 0.3f, 0, 0, 0, 0, 0};
        comp *= power_slow(s, &nominal, j->gen); /* a power cap slows compute, not HBM */
        double bytes = wb + c->kv_bytes_per_token * tokens / n;
        double memt = bytes / (hbm * c->decode_efficiency);
        double dur = (comp > memt ? comp : memt) * slow;
        prof pp = {1,
                   0.85f,
                   0.4f,
                   (float)(0.95 * c->prefill_efficiency * comp / dur),
                   (float)(bytes / (dur * hbm)),
                   0.05f,
                   0.05f,
                   tokens * 4 / dur,
                   0,
                   0};
        int64_t t1 = t + s_to_ns(dur);
        if (t1 <= t) t1 = t + 1;
        if (t1 > lim) {
            put(j, t, lim, B_PRODUCTIVE, &pp, mem, 1);
            finish(s, j);
            return;
        }
        put(j, t, t1, B_PRODUCTIVE, &pp, mem, 1);
        if (j->truth.ready_s < 0) j->truth.ready_s = ns_to_s(t1);
        for (int i = 0; i < m; i++) {
            sim_req r = j->wait[j->wait_head++];
            r.first_token = t1;
            r.generated = 1;
            if (r.output <= 1)
                emit_request(s, j, &r, t1);
            else
                j->run[j->run_n++] = r;
        }
        return;
    }
    /* one decode iteration over the running batch: weights + KV cache from HBM */
    double ctx = 0;
    for (int i = 0; i < j->run_n; i++)
        ctx += j->run[i].prompt + j->run[i].generated;
    double bytes = wb + c->kv_bytes_per_token * ctx / n;
    double memt = bytes / (hbm * c->decode_efficiency);
    double comp = 2 * c->params * j->run_n / n / (peak * c->prefill_efficiency);
    double dur = (comp > memt ? comp : memt) * slow;
    prof pd = {1,
               (float)(0.35 + 0.4 * comp / dur),
               0.25f,
               (float)(0.9 * c->prefill_efficiency * comp / dur),
               (float)(bytes / (dur * hbm)),
               0.03f,
               0.05f,
               j->run_n * 8 / dur,
               j->run_n * 8 / dur,
               0};
    int64_t t1 = t + s_to_ns(dur);
    if (t1 <= t) t1 = t + 1;
    if (t1 > lim) {
        put(j, t, lim, B_PRODUCTIVE, &pd, mem, 1);
        finish(s, j);
        return;
    }
    put(j, t, t1, B_PRODUCTIVE, &pd, mem, 1);
    int k = 0;
    for (int i = 0; i < j->run_n; i++) {
        sim_req r = j->run[i];
        r.generated++;
        if (r.generated >= r.output)
            emit_request(s, j, &r, t1);
        else
            j->run[k++] = r;
    }
    j->run_n = k;
}

/* Azure LLM inference trace: TIMESTAMP,ContextTokens,GeneratedTokens */
static int64_t days_from_civil(int y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = (unsigned)(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (int64_t)era * 146097 + (int64_t)doe - 719468;
}

static int load_trace(gp_sim *s, sim_job *j, char *err, size_t errlen) {
    const gp_scenario_job *c = j->cfg;
    char path[1100];
    snprintf(path, sizeof path, "%s", c->trace);
    FILE *f = fopen(path, "r");
    if (!f && c->trace[0] != '/' && s->sc.path[0]) {
        const char *slash = strrchr(s->sc.path, '/');
        if (slash) {
            snprintf(path, sizeof path, "%.*s/%s", (int)(slash - s->sc.path), s->sc.path, c->trace);
            f = fopen(path, "r");
        }
    }
    char where[700];
    if (s->sc.path[0] && c->line > 0)
        snprintf(where, sizeof where, "%s:%d: job '%s'", s->sc.path, c->line, c->id);
    else
        snprintf(where, sizeof where, "job '%s'", c->id);
    if (!f) {
        snprintf(err, errlen, "%s: key 'trace': cannot open '%s': %s", where, c->trace,
                 strerror(errno));
        return -1;
    }
    char line[256];
    size_t cap = 0, n = 0, lineno = 0;
    double first = 0;
    int64_t base = c->start_ns + (c->ready_after_ns == GP_SCEN_NEVER ? 0 : c->ready_after_ns);
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1 && strstr(line, "TIMESTAMP")) continue;
        int Y, M, D, h, m, ctx, gen;
        double sec;
        if (sscanf(line, "%d-%d-%d %d:%d:%lf,%d,%d", &Y, &M, &D, &h, &m, &sec, &ctx, &gen) != 8) {
            snprintf(err, errlen,
                     "%s: trace %s:%zu: expected TIMESTAMP,ContextTokens,GeneratedTokens", where,
                     path, lineno);
            fclose(f);
            return -1;
        }
        double ts =
            (double)days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + sec;
        if (n == 0) first = ts;
        int64_t at = base + s_to_ns((ts - first) / c->trace_speed);
        if (n > 0 && at < j->arr_t[n - 1]) at = j->arr_t[n - 1]; /* keep order */
        if (at >= j->end) break;
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            int64_t *nt = realloc(j->arr_t, cap * sizeof *nt);
            if (nt) j->arr_t = nt;
            int32_t *np = realloc(j->arr_p, cap * sizeof *np);
            if (np) j->arr_p = np;
            int32_t *no = realloc(j->arr_o, cap * sizeof *no);
            if (no) j->arr_o = no;
            if (!nt || !np || !no) {
                fclose(f);
                snprintf(err, errlen, "%s: out of memory reading the trace", where);
                return -1;
            }
        }
        j->arr_t[n] = at;
        j->arr_p[n] = ctx > 0 ? ctx : 1;
        j->arr_o[n] = gen > 0 ? gen : 1;
        n++;
    }
    fclose(f);
    j->arr_n = n;
    if (!j->arr_t) { /* an empty trace: no arrivals at all */
        j->arr_t = malloc(sizeof *j->arr_t);
        if (!j->arr_t) return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- driver */

int sim_work_init(gp_sim *s, sim_job *j, char *err, size_t errlen) {
    const gp_scenario_job *c = j->cfg;
    double dflt = c->kind == GP_SJ_INFERENCE ? 0.9 : c->kind == GP_SJ_IDLE ? 0.3 : 0.6;
    j->mem_run = c->mem_frac >= 0 ? c->mem_frac : dflt;
    j->end = c->end_ns >= 0 && c->end_ns < s->sc.duration_ns ? c->end_ns : s->sc.duration_ns;
    j->ended_ev = c->end_ns >= 0 && c->end_ns <= s->sc.duration_ns;
    j->truth.ready_s = -1;
    j->gen = c->start_ns;
    j->state = ST_WAIT_READY;
    if (c->start_ns >= s->sc.duration_ns) j->done = 1;
    if (c->kind == GP_SJ_INFERENCE) {
        j->run = calloc((size_t)c->max_batch, sizeof *j->run);
        if (!j->run) {
            snprintf(err, errlen, "simulator: out of memory");
            return -1;
        }
        int poisson = !c->trace[0];
        if (c->trace[0] && load_trace(s, j, err, errlen) < 0) {
            if (!c->trace_optional) return -1;
            poisson = 1; /* documented fallback: Poisson arrivals at `rate` */
            free(j->arr_t);
            free(j->arr_p);
            free(j->arr_o);
            j->arr_t = NULL;
            j->arr_p = j->arr_o = NULL;
            j->arr_n = 0;
        }
        if (poisson) {
            int64_t base =
                c->start_ns + (c->ready_after_ns == GP_SCEN_NEVER ? 0 : c->ready_after_ns);
            double gap = -log(1 - sim_rng_u01(&j->rng)) / c->rate;
            j->poisson_next = base + s_to_ns(gap);
        }
    }
    /* The submission, as a scheduler's submit hook records it (the only lifecycle fact
     * the node itself cannot show). Allocations are not said: the agent sees them in the
     * job-mapping files and the processes (sim_node.c). */
    if (!c->scheduler_none) {
        char name[160], user[160];
        sim_quote(name, sizeof name, c->name);
        sim_quote(user, sizeof user, c->user);
        sim_emit(s, j, c->submit_ns,
                 "job job=%s state=submitted name=%s user=%s origin=slurm ts=%lld", c->id, name,
                 user, (long long)(s->origin + c->submit_ns));
    }
    return 0;
}

void sim_work_free(sim_job *j) {
    free(j->arr_t);
    free(j->arr_p);
    free(j->arr_o);
    free(j->wait);
    free(j->run);
}

static void idle_iter(gp_sim *s, sim_job *j) {
    const gp_scenario_job *c = j->cfg;
    float mem = (float)j->mem_run;
    int64_t gap = c->burst_every_ns - c->burst_ns;
    if (gap < 1) gap = 1;
    gap = s_to_ns((double)gap / 1e9 * (0.5 + sim_rng_u01(&j->rng)));
    if (gap < 1) gap = 1;
    if (!span(s, j, gap, B_IDLE, &P_IDLE, NULL, mem, 1)) {
        finish(s, j);
        return;
    }
    prof pb = {0.3f, 0.05f, 0.05f, 0.01f, 0.03f, 0.01f, 0.05f, 1e6, 1e5, 0};
    if (c->burst_ns > 0 && !span(s, j, c->burst_ns, B_OTHER, &pb, NULL, mem, 1)) finish(s, j);
}

static void step_once(gp_sim *s, sim_job *j) {
    const gp_scenario_job *c = j->cfg;
    switch (j->state) {
    case ST_WAIT_READY: {
        if (c->ready_after_ns > 0) {
            int64_t t1 =
                c->ready_after_ns == GP_SCEN_NEVER ? j->end : c->start_ns + c->ready_after_ns;
            if (t1 > j->end) t1 = j->end;
            float ctx = (float)(0.6e9 / (double)s->spec->memory_bytes);
            if (t1 > j->gen) put(j, j->gen, t1, B_NOT_READY, &P_IDLE, ctx, 1);
            j->gen = t1;
            if (t1 >= j->end) {
                finish(s, j);
                return;
            }
        }
        j->state = ST_BOOT;
        return;
    }
    case ST_BOOT:
        emit_hello(s, j);
        skip_past_restarts(j);
        /* A service (or a notebook) says when it is up, as a server logs "startup
         * complete": from here on, waiting for work is idle, not "not ready". */
        if (c->kind == GP_SJ_INFERENCE || c->kind == GP_SJ_IDLE)
            emit_phase(s, j, "init", "end", j->gen);
        if (c->kind == GP_SJ_INFERENCE)
            j->state = ST_INFER;
        else if (c->kind == GP_SJ_IDLE)
            j->state = ST_IDLE;
        else
            train_boot(s, j, 0);
        return;
    case ST_RUN:
        train_step(s, j);
        return;
    case ST_DEAD: {
        int64_t t0 = j->gen, t1 = t0 + c->recovery_ns;
        if (t1 > j->end) t1 = j->end;
        if (t1 > t0) put(j, t0, t1, B_RECOVERY, &P_IDLE, 0, 0);
        j->gen = t1;
        if (t1 >= j->end) {
            finish(s, j);
            return;
        }
        skip_past_restarts(j);
        sim_emit(s, j, j->gen, "restart job=%s step=%lld ts=%lld", c->id, (long long)j->last_ckpt,
                 (long long)(s->origin + j->gen));
        j->step = j->last_ckpt;
        train_boot(s, j, 1);
        return;
    }
    case ST_INFER:
        infer_iter(s, j);
        return;
    case ST_IDLE:
        idle_iter(s, j);
        return;
    }
}

void sim_work_advance(gp_sim *s, sim_job *j, int64_t until) {
    while (!j->done && j->gen < until) {
        if (j->gen >= j->end) {
            finish(s, j);
            break;
        }
        step_once(s, j);
    }
}
