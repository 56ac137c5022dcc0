/* classify.c: rules from features to findings (see classify.h, docs/findings.md).
 *
 * Order of reasoning: first the time the job paid for and did not use at all (not ready,
 * idle), then blocking phases the workload reported (input, checkpoint, communication),
 * then device health (throttling, XID errors), peers (stragglers, interference), and last
 * the utilization profile of the kernels that did run (under-batched, memory capacity,
 * host-, memory- or compute-bound). A job with nothing wrong gets compute_bound, said
 * plainly as healthy. Jobs without progress events are judged from activity alone: such
 * findings say so and carry low confidence. */
#include "engine/diagnosis/classify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/cost.h"
#include "engine/diagnosis/finding_budget.h"
#include "engine/diagnosis/thresholds.h"
#include "store/store.h"

#define NS 1e9

/* A new finding that claims no badput and no headroom yet; the rule states both. */
static gp_finding *add(gp_finding *out, size_t cap, size_t *n, gp_finding_class c,
                       const char *job_id, const gp_features *f, double conf) {
    if (*n >= cap) return NULL;
    gp_finding *x = &out[(*n)++];
    memset(x, 0, sizeof *x);
    gp_finding_claims_clear(x);
    x->cls = c;
    x->scope = GP_SCOPE_JOB;
    snprintf(x->scope_id, sizeof x->scope_id, "%s", job_id);
    snprintf(x->job_id, sizeof x->job_id, "%s", job_id);
    x->t0_ns = f->t0_ns;
    x->t1_ns = f->t1_ns;
    x->confidence = f->activity_only ? (conf < 0.4 ? conf : 0.4) : conf;
    return x;
}

/* Headroom: the share of productive time a fix recovers, and the counterfactual that
 * gives it ("if FIX, steps would take 0.82x as long"). */
static void headroom(gp_finding *x, const gp_features *f, double frac, const char *fix) {
    if (!(frac > 0)) return;
    if (frac > 1) frac = 1;
    x->headroom_frac = frac;
    snprintf(x->counterfactual, sizeof x->counterfactual, "if %s, %s would take %.2fx as long", fix,
             f->has_steps      ? "steps"
             : f->has_requests ? "the same requests"
                               : "the same work",
             1 - frac);
}

/* Badput only: what the fix gives back is time outside productive work. */
static void badput(gp_finding *x, gp_bucket b, double gpu_s, const char *fix) {
    gp_finding_claim(x, b, gpu_s);
    snprintf(x->counterfactual, sizeof x->counterfactual,
             "if %s, the job would get back its %s GPU-time; its steps would not get faster", fix,
             gp_bucket_name(b));
}

/* Productive GPU-seconds estimated from features alone, for callers without the job's
 * accounting (windows): the allocation less the time before ready, idle, and blocking
 * phases. The store-backed diagnosis uses the accounting instead (finding_budget.h). */
static double est_productive(const gp_features *f) {
    if (f->useful_gpu_s >= 0) return f->useful_gpu_s;
    double A = f->alloc_gpu_s, keep = 1;
    if (f->not_ready_s > 0 && f->wall_s > 0) keep *= 1 - f->not_ready_s / f->wall_s;
    if (f->idle_share > 0) keep *= 1 - f->idle_share;
    double blocked = 0;
    if (f->data_wait_share > 0) blocked += f->data_wait_share;
    if (f->checkpoint_share > 0) blocked += f->checkpoint_share;
    if (f->init_share > 0) blocked += f->init_share;
    if (f->comm_share > 0) blocked += f->comm_share;
    keep *= 1 - blocked;
    return A > 0 && keep > 0 ? A * keep : 0;
}

static void ev(gp_finding *x, gp_threshold_id id, double value, const char *src) {
    const gp_threshold *t = gp_threshold_get(id);
    gp_finding_add_evidence(x, t->name, value, t->op, t->value, src);
}

/* Context evidence: added only when the value really is on the flagged side of the
 * threshold, so no line of evidence ever reads as a contradiction. */
static void ev_if(gp_finding *x, gp_threshold_id id, double value, const char *src) {
    const gp_threshold *t = gp_threshold_get(id);
    int holds = !strcmp(t->op, "<")    ? value < t->value
                : !strcmp(t->op, "<=") ? value <= t->value
                : !strcmp(t->op, ">")  ? value > t->value
                                       : value >= t->value;
    if (holds) gp_finding_add_evidence(x, t->name, value, t->op, t->value, src);
}

/* Findings past their thresholds first, minor ones after; within each, badput explained
 * (unknown last), then headroom, then confidence. */
static int cmp_find(const void *a, const void *b) {
    const gp_finding *x = a, *y = b;
    if (x->minor != y->minor) return x->minor - y->minor; /* minor ones after the rest */
    double bx = x->wasted_gpu_s >= 0 ? x->wasted_gpu_s : -1;
    double by = y->wasted_gpu_s >= 0 ? y->wasted_gpu_s : -1;
    if (bx != by) return bx < by ? 1 : -1;
    double hx = x->headroom_gpu_s >= 0 ? x->headroom_gpu_s : -1;
    double hy = y->headroom_gpu_s >= 0 ? y->headroom_gpu_s : -1;
    if (hx != hy) return hx < hy ? 1 : -1;
    return (x->confidence < y->confidence) - (x->confidence > y->confidence);
}

void gp_findings_rank(gp_finding *f, size_t n) {
    if (n > 1) qsort(f, n, sizeof *f, cmp_find);
}

static const char *util_src(const gp_features *f) {
    return f->gpu_util.n ? "nvml" : "dcgm-profiling";
}

static double util_of(const gp_features *f) {
    if (f->gpu_util.n) return f->gpu_util.mean;
    if (f->sm_active.n) return f->sm_active.mean;
    return -1;
}

static int slo_set(const gp_features *f) {
    return f->slo_ttft_s > 0 || f->slo_tpot_s > 0 || f->slo_e2e_s > 0;
}

/* The class that explains missed SLOs, from the utilization profile. */
static gp_finding_class slo_class(const gp_features *f) {
    double util = util_of(f), mem = f->mem_frac.n ? f->mem_frac.mean : -1;
    double dram = f->dram_active.n ? f->dram_active.mean : -1;
    int tpot_miss = f->slo_tpot_s > 0 && f->tpot_p90_s > f->slo_tpot_s;
    if (dram >= gp_th(GP_TH_DRAM_ACTIVE_HIGH) || (tpot_miss && dram < 0 && util >= 0.9))
        return GP_FC_MEMORY_BOUND; /* decode dominated: each token waits on HBM */
    if (util >= 0 && util <= gp_th(GP_TH_UNDER_UTIL) && mem > gp_th(GP_TH_CAPACITY_MEM))
        return GP_FC_MEMORY_CAPACITY;
    if (util >= 0 && util <= gp_th(GP_TH_UNDER_UTIL)) return GP_FC_UNDER_BATCHED;
    return GP_FC_COMPUTE_BOUND; /* saturated: the load exceeds what the GPUs compute */
}

static void slo_finding(gp_finding *out, size_t cap, size_t *n, const char *job_id,
                        const gp_features *f, double att) {
    gp_finding_class c = slo_class(f);
    gp_finding *x = NULL;
    for (size_t i = 0; i < *n; i++)
        if (out[i].cls == c && out[i].scope == GP_SCOPE_JOB) x = &out[i];
    /* GPU-time spent on requests that missed an SLO: the accounting's "other" bucket */
    double missed = f->useful_gpu_s >= 0 ? f->alloc_gpu_s - f->useful_gpu_s : -1;
    int fresh = !x;
    if (fresh && !(x = add(out, cap, n, c, job_id, f, 0.7))) return;
    ev(x, GP_TH_SLO_ATTAINMENT, att, "events");
    /* the SLOs that the slowest tenth of requests misses (met ones are no evidence) */
    if (f->slo_ttft_s > 0 && f->ttft_p90_s > f->slo_ttft_s)
        gp_finding_add_evidence(x, "ttft_p90_s", f->ttft_p90_s, ">", f->slo_ttft_s, "events");
    if (f->slo_tpot_s > 0 && f->tpot_p90_s > f->slo_tpot_s)
        gp_finding_add_evidence(x, "tpot_p90_s", f->tpot_p90_s, ">", f->slo_tpot_s, "events");
    if (f->slo_e2e_s > 0 && f->e2e_p90_s > f->slo_e2e_s)
        gp_finding_add_evidence(x, "e2e_p90_s", f->e2e_p90_s, ">", f->slo_e2e_s, "events");
    if (missed > x->badput_gpu_s[GP_B_OTHER])
        gp_finding_claim(x, GP_B_OTHER, missed - x->badput_gpu_s[GP_B_OTHER]);
    char prefix[160];
    snprintf(prefix, sizeof prefix,
             "Only %.0f%% of %s's requests meet their SLOs (target %.0f%%). ", 100 * att, job_id,
             100 * gp_th(GP_TH_SLO_ATTAINMENT));
    if (fresh) {
        const char *why = c == GP_FC_MEMORY_BOUND
                              ? "Decode is memory bound: every token waits on reading the "
                                "weights and KV cache."
                          : c == GP_FC_MEMORY_CAPACITY ? "Memory is full, so the batch cannot grow."
                          : c == GP_FC_UNDER_BATCHED
                              ? "The GPU is mostly idle: requests are served in small batches."
                              : "The GPUs are saturated: the load exceeds what they compute.";
        snprintf(x->summary, sizeof x->summary, "%s%s", prefix, why);
        snprintf(x->counterfactual, sizeof x->counterfactual,
                 "if every request met its SLOs, the GPU-time spent on late requests (bucket "
                 "other) would be useful work");
        snprintf(x->recommendation, sizeof x->recommendation, "%s",
                 c == GP_FC_MEMORY_BOUND
                     ? "Do more work per byte read: larger decode batch, KV-cache quantization "
                       "(FP8), paged or flash attention, speculative decoding; or add replicas "
                       "if the batch is already large."
                 : c == GP_FC_MEMORY_CAPACITY
                     ? "Free memory for the KV cache: weight or KV-cache quantization, a "
                       "smaller max context, paged attention, or tensor parallelism across "
                       "more GPUs."
                 : c == GP_FC_UNDER_BATCHED
                     ? "Raise max batch / concurrency and use chunked prefill so requests do "
                       "not queue behind each other; check the scheduler's batching limits."
                     : "Add replicas or GPUs for this load (or shed load), use chunked prefill "
                       "to protect TTFT, and quantize weights to serve more per GPU.");
    } else { /* the profile finding already says why: put the SLO miss first */
        char buf[sizeof prefix + sizeof x->summary];
        snprintf(buf, sizeof buf, "%s%s", prefix, x->summary);
        memcpy(x->summary, buf, sizeof x->summary - 1);
        x->summary[sizeof x->summary - 1] = 0;
    }
}

/* One slow rank: its straggler episodes merged (same cause, same scope: one finding). */
typedef struct {
    int worker, windows, episodes, minor;
    int64_t iter0, iter1, t0_ns, t1_ns; /* first start, last end */
    double ratio, z;                    /* worst window */
    double dur_s;                       /* total time inside the episodes (0 unknown) */
    double excess_s;                    /* total extra time the rank took (peers waited) */
} rank_strag;

/* Merges episodes by worker into out (cap entries, starting at *n). */
static void merge_ranks(const gp_straggler *s, int ns, int minor, rank_strag *out, int cap,
                        int *n) {
    for (int i = 0; i < ns; i++) {
        int k = 0;
        while (k < *n && out[k].worker != s[i].worker)
            k++;
        if (k == *n) {
            if (*n == cap) continue;
            out[(*n)++] = (rank_strag){.worker = s[i].worker,
                                       .minor = minor,
                                       .iter0 = s[i].iter0,
                                       .iter1 = s[i].iter1,
                                       .t0_ns = s[i].t0_ns,
                                       .t1_ns = s[i].t1_ns};
        } else if (out[k].minor != minor) {
            continue; /* a rank already reported as a straggler is not also minor */
        }
        rank_strag *r = &out[k];
        r->episodes++;
        r->windows += s[i].windows;
        if (s[i].iter0 < r->iter0) r->iter0 = s[i].iter0, r->t0_ns = s[i].t0_ns;
        if (s[i].iter1 > r->iter1) r->iter1 = s[i].iter1, r->t1_ns = s[i].t1_ns;
        if (s[i].t1_ns > s[i].t0_ns) r->dur_s += (double)(s[i].t1_ns - s[i].t0_ns) / NS;
        if (s[i].ratio > r->ratio) r->ratio = s[i].ratio, r->z = s[i].z;
        r->excess_s += s[i].excess;
    }
}

/* Stragglers by rank: those past the thresholds, then minor ones (under the ratio
 * threshold, at least 3 windows, costing the peers >= GP_TH_MINOR_SHARE of the run).
 * Returns the count; *out malloc'ed (NULL when none). */
static int strag_detect(const gp_worker_obs *obs, size_t n_obs, const gp_features *f,
                        rank_strag **out) {
    *out = NULL;
    gp_straggler *s = NULL;
    int ns = gp_straggler_detect(obs, n_obs, NULL, &s);
    double ms = gp_th(GP_TH_MINOR_SHARE);
    gp_straggler_opts mo = {.ratio = 1 / (1 - ms), .min_windows = 3};
    gp_straggler *m = NULL;
    int nm = f->wall_s > 0 ? gp_straggler_detect(obs, n_obs, &mo, &m) : 0;
    int cap = (ns > 0 ? ns : 0) + (nm > 0 ? nm : 0), n = 0;
    rank_strag *r = cap ? calloc((size_t)cap, sizeof *r) : NULL;
    if (r) {
        merge_ranks(s, ns, 0, r, cap, &n);
        merge_ranks(m, nm, 1, r, cap, &n);
        int k = 0; /* drop minor ranks that cost too little */
        for (int i = 0; i < n; i++)
            if (!r[i].minor ||
                (r[i].excess_s >= ms * f->wall_s && r[i].ratio < gp_th(GP_TH_STRAGGLER_RATIO)))
                r[k++] = r[i];
        n = k;
    }
    free(s);
    free(m);
    if (!n) {
        free(r);
        return 0;
    }
    *out = r;
    return n;
}

/* A minor finding: a share of the job's time under the class's threshold but at least
 * GP_TH_MINOR_SHARE. Its evidence line says which side of both it is on. */
/* A minor finding: a share of the job's time lost to one cause, at least
 * GP_TH_MINOR_SHARE but under the class's threshold id. It claims that share of the
 * job's alloc_gpu_s from bucket b ("if fix, ..."); doing says what the job did ("waited
 * for input"), bound names the class as an adjective ("input bound"). */
static void add_minor(gp_finding *out, size_t cap, size_t *n, gp_finding_class c,
                      const char *job_id, const gp_features *f, gp_threshold_id id, double share,
                      double alloc_gpu_s, gp_bucket b, const char *fix, const char *doing,
                      const char *bound, const char *advice) {
    gp_finding *x = add(out, cap, n, c, job_id, f, 0.6);
    if (!x) return;
    x->minor = 1;
    const gp_threshold *t = gp_threshold_get(id);
    gp_finding_add_evidence(x, t->name, share, "<", t->value, "events");
    ev(x, GP_TH_MINOR_SHARE, share, "events");
    badput(x, b, share * alloc_gpu_s, fix);
    snprintf(x->summary, sizeof x->summary,
             "Minor: %s %s %.1f%% of its time (under the %.0f%% that makes it %s).", job_id, doing,
             100 * share, 100 * t->value, bound);
    snprintf(x->recommendation, sizeof x->recommendation, "%s", advice);
}

static int is_minor_share(double share, gp_threshold_id id) {
    return share >= gp_th(GP_TH_MINOR_SHARE) && share < gp_th(id);
}

/* The rules, one per class, in the order gp_classify applies them: each appends its
 * findings to out[*np..cap) and says whether a blocking cause now explains low
 * utilization. */
/* not_ready: allocated until first progress (or a minor finding) */
static int rule_not_ready(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                          size_t *np) {
    size_t n = *np;
    gp_finding *x;
    int explained = 0;
    /* not_ready: allocated until first progress */
    if (f->not_ready_s >= gp_th(GP_TH_NOT_READY_MIN_S) && f->wall_s > 0 &&
        f->not_ready_s / f->wall_s >= gp_th(GP_TH_NOT_READY_SHARE)) {
        int never = f->activity_only ? f->first_active_ns < 0 : f->ready_ns < 0;
        if ((x = add(out, cap, &n, GP_FC_NOT_READY, job_id, f, 0.9))) {
            /* before the first step: not_ready, or startup where an init phase covers it */
            badput(x, GP_B_NOT_READY, f->not_ready_s * f->n_gpus,
                   "the GPUs were granted when the job could start");
            const char *src = f->activity_only ? util_src(f) : "events";
            ev(x, GP_TH_NOT_READY_MIN_S, f->not_ready_s, src);
            ev(x, GP_TH_NOT_READY_SHARE, f->not_ready_s / f->wall_s, src);
            x->t0_ns = f->first_alloc_ns >= 0 ? f->first_alloc_ns : f->t0_ns;
            x->t1_ns = never ? f->t1_ns : f->activity_only ? f->first_active_ns : f->ready_ns;
            snprintf(x->summary, sizeof x->summary,
                     "%s held %d GPU(s) for %.0f s before its first %s%s.", job_id, f->n_gpus,
                     f->not_ready_s,
                     f->activity_only ? "GPU activity (activity-only estimate)" : "step or request",
                     never ? " (it never became ready)" : "");
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Stage data sets, container images and model weights before the GPUs are "
                     "allocated (prefetch to local disk, pre-pulled images); use readiness-aware "
                     "admission so GPUs are granted when the job can start; cache compiled "
                     "kernels (torch.compile cache, TensorRT engines).");
        }
        explained = 1;
    } else if (f->wall_s > 0 && f->not_ready_s / f->wall_s >= gp_th(GP_TH_MINOR_SHARE)) {
        /* under the floor or the share, yet a twentieth of the run */
        double sh = f->not_ready_s / f->wall_s;
        if ((x = add(out, cap, &n, GP_FC_NOT_READY, job_id, f, 0.6))) {
            x->minor = 1;
            badput(x, GP_B_NOT_READY, f->not_ready_s * f->n_gpus,
                   "the GPUs were granted when the job could start");
            const char *src = f->activity_only ? util_src(f) : "events";
            ev_if(x, GP_TH_NOT_READY_MIN_S, f->not_ready_s, src);
            if (sh < gp_th(GP_TH_NOT_READY_SHARE))
                gp_finding_add_evidence(x, "not_ready_share", sh, "<", gp_th(GP_TH_NOT_READY_SHARE),
                                        src);
            else
                gp_finding_add_evidence(x, "not_ready_s", f->not_ready_s, "<",
                                        gp_th(GP_TH_NOT_READY_MIN_S), src);
            ev(x, GP_TH_MINOR_SHARE, sh, src);
            x->t0_ns = f->first_alloc_ns >= 0 ? f->first_alloc_ns : f->t0_ns;
            if (f->ready_ns >= 0 && !f->activity_only) x->t1_ns = f->ready_ns;
            snprintf(x->summary, sizeof x->summary,
                     "Minor: %s held %d GPU(s) for %.0f s (%.1f%% of its run) before its first "
                     "%s.",
                     job_id, f->n_gpus, f->not_ready_s, 100 * sh,
                     f->activity_only ? "GPU activity" : "step or request");
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Stage data, images and weights before the GPUs are allocated.");
        }
    }
    *np = n;
    return explained;
}

/* idle_allocated / harvestable */
static int rule_idle(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                     size_t *np) {
    size_t n = *np;
    gp_finding *x;
    double A = f->alloc_gpu_s;
    int explained = 0;
    /* idle_allocated / harvestable. A job that makes progress and still leaves its GPUs
     * idle is judged by its utilization profile (under_batched, memory_capacity) unless
     * the idle time comes in gaps long enough to lend out, or whole GPUs sit unused. */
    if (f->idle_share >= 0) {
        double idle = f->idle_gpu_s;
        int progress = f->has_steps || f->has_requests;
        if (progress && f->harvest_gpu_s >= gp_th(GP_TH_HARVEST_SHARE) * A && A > 0) {
            if ((x = add(out, cap, &n, GP_FC_HARVESTABLE, job_id, f, 0.7))) {
                /* it explains all of the job's idle time (no other finding does); the
                 * long gaps are the part another job could use, quoted as evidence */
                badput(x, GP_B_IDLE_ALLOCATED, idle,
                       "the service scaled down between bursts and its long gaps were lent out");
                ev(x, GP_TH_HARVEST_SHARE, f->harvest_gpu_s / A, util_src(f));
                gp_finding_add_evidence(x, "harvest_gpu_s", f->harvest_gpu_s, ">",
                                        gp_th(GP_TH_HARVEST_SHARE) * A, util_src(f));
                ev_if(x, GP_TH_UNDER_UTIL, util_of(f), util_src(f));
                snprintf(x->summary, sizeof x->summary,
                         "%s left its GPUs idle in gaps of %.0f s or more: %.2f GPU-h that "
                         "lower-priority work could use.",
                         job_id, gp_th(GP_TH_HARVEST_GAP_S), f->harvest_gpu_s / 3600);
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Lend the idle gaps to preemptible or best-effort jobs (MPS or MIG "
                         "sharing, Kueue/Slurm preemptible partitions), or scale the service "
                         "down between bursts (scale-to-zero, fewer replicas off-peak).");
            }
            explained = 1;
        } else if ((!progress && f->idle_share >= gp_th(GP_TH_IDLE_SHARE)) ||
                   (f->n_idle_devices > 0 && f->n_gpus > 1)) {
            double w = progress ? idle * f->n_idle_devices / f->n_gpus : idle;
            if ((x = add(out, cap, &n, GP_FC_IDLE_ALLOCATED, job_id, f, progress ? 0.8 : 0.6))) {
                badput(x, GP_B_IDLE_ALLOCATED, w, "the idle GPUs were released");
                ev(x, GP_TH_IDLE_SHARE, f->idle_share, util_src(f));
                ev_if(x, GP_TH_UNDER_UTIL, util_of(f), util_src(f));
                if (f->n_idle_devices > 0)
                    gp_finding_add_evidence(x, "idle_devices", f->n_idle_devices, ">=", 1,
                                            util_src(f));
                snprintf(x->summary, sizeof x->summary,
                         "%s's GPUs ran no kernels %.0f%% of the time after it was ready "
                         "(%d of %d GPU(s) idle throughout)%s.",
                         job_id, 100 * f->idle_share, f->n_idle_devices, f->n_gpus,
                         f->activity_only ? "; activity-only estimate, no workload events" : "");
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Release GPUs that are not in use: set an idle timeout for notebooks "
                         "and interactive sessions (culling), request only the GPUs the code "
                         "uses, and check that every allocated GPU is given work (device lists, "
                         "CUDA_VISIBLE_DEVICES).");
            }
            explained = 1;
        }
    }
    *np = n;
    return explained;
}

/* input_bound */
static int rule_input_bound(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                            size_t *np) {
    size_t n = *np;
    gp_finding *x;
    double A = f->alloc_gpu_s;
    int explained = 0;
    /* input_bound */
    if (f->data_wait_share >= gp_th(GP_TH_DATA_WAIT_SHARE)) {
        if ((x = add(out, cap, &n, GP_FC_INPUT_BOUND, job_id, f, 0.9))) {
            badput(x, GP_B_DATA_WAIT, f->data_wait_share * A, "input never blocked the GPUs");
            ev(x, GP_TH_DATA_WAIT_SHARE, f->data_wait_share, "events");
            if (f->gpu_util.n) ev_if(x, GP_TH_UNDER_UTIL, f->gpu_util.mean, "nvml");
            snprintf(x->summary, sizeof x->summary,
                     "%s waited for input %.0f%% of its time: the GPUs starve for data.", job_id,
                     100 * f->data_wait_share);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Feed the GPU faster: more DataLoader workers (num_workers), "
                     "pin_memory=True with non_blocking copies, prefetch_factor and "
                     "persistent_workers, decode on the GPU (NVIDIA DALI, nvJPEG), or "
                     "pre-process the data set offline into a faster format.");
        }
        explained = 1;
    } else if (is_minor_share(f->data_wait_share, GP_TH_DATA_WAIT_SHARE)) {
        add_minor(out, cap, &n, GP_FC_INPUT_BOUND, job_id, f, GP_TH_DATA_WAIT_SHARE,
                  f->data_wait_share, A, GP_B_DATA_WAIT, "input never blocked the GPUs",
                  "waited for input", "input bound",
                  "Add a DataLoader worker or two, or raise prefetch_factor.");
    }
    *np = n;
    return explained;
}

/* checkpoint_bound */
static int rule_checkpoint_bound(const char *job_id, const gp_features *f, gp_finding *out,
                                 size_t cap, size_t *np) {
    size_t n = *np;
    gp_finding *x;
    double A = f->alloc_gpu_s;
    int explained = 0;
    /* checkpoint_bound */
    if (f->checkpoint_share >= gp_th(GP_TH_CHECKPOINT_SHARE)) {
        if ((x = add(out, cap, &n, GP_FC_CHECKPOINT_BOUND, job_id, f, 0.9))) {
            badput(x, GP_B_CHECKPOINT, f->checkpoint_share * A,
                   "checkpoints were saved asynchronously");
            ev(x, GP_TH_CHECKPOINT_SHARE, f->checkpoint_share, "events");
            snprintf(x->summary, sizeof x->summary,
                     "%s spent %.0f%% of its time blocked saving or restoring checkpoints.", job_id,
                     100 * f->checkpoint_share);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Checkpoint asynchronously (torch.distributed.checkpoint.async_save, "
                     "Orbax async, NeMo/Megatron async save), shard the save across ranks, "
                     "write to fast local storage first, and tune the interval to the failure "
                     "rate.");
        }
        explained = 1;
    } else if (is_minor_share(f->checkpoint_share, GP_TH_CHECKPOINT_SHARE)) {
        add_minor(out, cap, &n, GP_FC_CHECKPOINT_BOUND, job_id, f, GP_TH_CHECKPOINT_SHARE,
                  f->checkpoint_share, A, GP_B_CHECKPOINT, "checkpoints were saved asynchronously",
                  "was blocked on checkpoints", "checkpoint bound",
                  "Checkpoint asynchronously or less often.");
    }
    *np = n;
    return explained;
}

/* communication_bound */
static int rule_communication_bound(const char *job_id, const gp_features *f, gp_finding *out,
                                    size_t cap, size_t *np) {
    size_t n = *np;
    gp_finding *x;
    double A = f->alloc_gpu_s;
    int explained = 0;
    /* communication_bound. Interconnect traffic is judged over the time the job was not
     * blocked in a reported phase (checkpoint, data wait, init): a job that also
     * checkpoints moves no gradients while it saves. */
    double blocked = (f->checkpoint_share > 0 ? f->checkpoint_share : 0) +
                     (f->data_wait_share > 0 ? f->data_wait_share : 0) +
                     (f->init_share > 0 ? f->init_share : 0);
    double ic = f->interconnect_peak_share;
    if (ic > 0) ic /= (1 - blocked > 0.2 ? 1 - blocked : 0.2);
    int comm = f->comm_share >= gp_th(GP_TH_COMM_SHARE) ||
               (ic >= gp_th(GP_TH_NVLINK_PEAK_SHARE) && f->n_gpus > 1 &&
                (!f->sm_active.n || f->sm_active.mean < gp_th(GP_TH_SM_ACTIVE_HIGH)));
    if (comm) {
        double share =
            f->comm_share >= gp_th(GP_TH_COMM_SHARE) ? f->comm_share : f->interconnect_peak_share;
        if (share > 1) share = 1;
        if ((x = add(out, cap, &n, GP_FC_COMMUNICATION_BOUND, job_id, f,
                     f->comm_share >= gp_th(GP_TH_COMM_SHARE) ? 0.85 : 0.65))) {
            /* Reported comm phases are their own time (bucket other); traffic seen only on
             * the links is inside the steps, productive time a full overlap would give back. */
            if (f->comm_share >= gp_th(GP_TH_COMM_SHARE))
                badput(x, GP_B_OTHER, share * A, "communication overlapped compute fully");
            else
                headroom(x, f, share, "the all-reduce overlapped compute fully");
            if (f->comm_share >= gp_th(GP_TH_COMM_SHARE))
                ev(x, GP_TH_COMM_SHARE, f->comm_share, "events");
            if (f->interconnect_peak_share >= 0) ev(x, GP_TH_NVLINK_PEAK_SHARE, ic, "nvml");
            if (f->sm_active.n) ev_if(x, GP_TH_SM_ACTIVE_LOW, f->sm_active.mean, "dcgm-profiling");
            snprintf(x->summary, sizeof x->summary,
                     "%s waits on collective communication between its %d GPUs.", job_id,
                     f->n_gpus);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Overlap communication with compute (DDP bucket_cap_mb, FSDP prefetch, "
                     "gradient accumulation to reduce all-reduces), use a smaller "
                     "tensor-parallel degree or keep it inside one NVLink domain, compress or "
                     "reduce gradients in bf16, and check the topology (nvidia-smi topo -m).");
        }
        explained = 1;
    } else if (is_minor_share(f->comm_share, GP_TH_COMM_SHARE)) {
        add_minor(out, cap, &n, GP_FC_COMMUNICATION_BOUND, job_id, f, GP_TH_COMM_SHARE,
                  f->comm_share, A, GP_B_OTHER, "communication overlapped compute fully",
                  "waited on collectives", "communication bound",
                  "Overlap communication with compute (DDP bucket_cap_mb, FSDP prefetch).");
    }
    *np = n;
    return explained;
}

/* throttled */
static void rule_throttled(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                           size_t *np) {
    size_t n = *np;
    gp_finding *x;
    /* throttled */
    if (f->throttle_share >= gp_th(GP_TH_THROTTLE_SHARE)) {
        if ((x = add(out, cap, &n, GP_FC_THROTTLED, job_id, f, 0.8))) {
            /* slower clocks stretch productive work; estimate at 20% slowdown */
            headroom(x, f, f->throttle_share * 0.2, "the clocks were never held down");
            ev(x, GP_TH_THROTTLE_SHARE, f->throttle_share, "nvml");
            if (f->power_frac.n)
                gp_finding_add_evidence(x, "power_vs_tdp", f->power_frac.mean, ">=", 0.95, "nvml");
            snprintf(x->summary, sizeof x->summary,
                     "%s's GPUs had their clocks held down by power or thermal limits %.0f%% of "
                     "the time (headroom is an estimate at 20%% slowdown).",
                     job_id, 100 * f->throttle_share);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Check cooling and airflow, power caps (nvidia-smi -q -d PERFORMANCE,POWER) "
                     "and node power budget; move the job off hot nodes; report persistent "
                     "hardware slowdown to the operators.");
        }
    }
    *np = n;
}

/* gpu_errors */
static void rule_gpu_errors(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                            size_t *np) {
    size_t n = *np;
    gp_finding *x;
    /* gpu_errors */
    if (f->xid_count >= (int)gp_th(GP_TH_XID_COUNT)) {
        if ((x = add(out, cap, &n, GP_FC_GPU_ERRORS, job_id, f, 0.95))) {
            gp_finding_claim_unknown(x); /* the cost of a fault depends on what it broke */
            ev(x, GP_TH_XID_COUNT, f->xid_count, "nvml");
            gp_finding_add_evidence(x, "last_xid", (double)f->last_xid, ">", 0, "nvml");
            snprintf(x->summary, sizeof x->summary,
                     "%s's GPUs reported %d XID error sample(s), last XID %lld.", job_id,
                     f->xid_count, (long long)f->last_xid);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Look the XID up in NVIDIA's XID catalogue; drain the node and run "
                     "diagnostics (dcgmi diag -r 3) for hardware XIDs (48, 63, 64, 74, 79, 94, "
                     "95); fix the application for XID 13/31/43 (illegal access).");
        }
    }
    *np = n;
}

/* stragglers */
static int rule_straggler(const char *job_id, const gp_features *f, const gp_worker_obs *obs,
                          size_t n_obs, gp_finding *out, size_t cap, size_t *np) {
    size_t n = *np;
    gp_finding *x;
    int explained = 0;
    /* straggler: one finding per slow rank, its episodes merged (first start, last end,
     * total slow time); a rank under the ratio threshold that still costs its peers at
     * least GP_MINOR_SHARE of the job's time is a minor finding */
    if (obs && n_obs) {
        rank_strag *st = NULL;
        int ns = strag_detect(obs, n_obs, f, &st);
        double strag_s = 0;
        for (int i = 0; i < ns; i++) {
            double dur = st[i].dur_s > 0 ? st[i].dur_s : f->wall_s;
            if (!st[i].minor) strag_s += dur;
            if ((x = add(out, cap, &n, GP_FC_STRAGGLER, job_id, f, st[i].minor ? 0.6 : 0.85))) {
                x->minor = st[i].minor;
                /* the peers wait inside their steps: productive time, so headroom, the
                 * share of the job's time lost to waiting over the slow stretch */
                double span = f->wall_s > 0 && dur < f->wall_s ? dur / f->wall_s : 1;
                char fix[96];
                snprintf(fix, sizeof fix, "rank %d ran at its peers' speed", st[i].worker);
                headroom(x, f, span * (st[i].ratio - 1) / st[i].ratio, fix);
                x->scope = GP_SCOPE_RANK;
                snprintf(x->scope_id, sizeof x->scope_id, "%s/rank-%d", job_id, st[i].worker);
                if (st[i].t0_ns) x->t0_ns = st[i].t0_ns;
                if (st[i].t1_ns) x->t1_ns = st[i].t1_ns;
                ev_if(x, GP_TH_STRAGGLER_Z, st[i].z, "events");
                if (st[i].minor) {
                    gp_finding_add_evidence(x, "straggler_ratio", st[i].ratio, "<",
                                            gp_th(GP_TH_STRAGGLER_RATIO), "events");
                    ev(x, GP_TH_MINOR_SHARE, st[i].excess_s / f->wall_s, "events");
                } else {
                    ev(x, GP_TH_STRAGGLER_RATIO, st[i].ratio, "events");
                    ev(x, GP_TH_STRAGGLER_WINDOWS, st[i].windows, "events");
                }
                snprintf(x->summary, sizeof x->summary,
                         "%sRank %d of %s is %.2fx slower than its peers over iterations "
                         "%lld-%lld (%d episode(s), %.0f s in all); synchronous training waits "
                         "for it.",
                         st[i].minor ? "Minor: " : "", st[i].worker, job_id, st[i].ratio,
                         (long long)st[i].iter0, (long long)st[i].iter1, st[i].episodes, dur);
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Check the slow rank's node: GPU clocks and throttling, XID errors, "
                         "a noisy neighbour, CPU or NIC contention, or uneven data shards; "
                         "cordon the node and restart the rank elsewhere if it persists.");
            }
        }
        free(st);
        /* the peers' low SM activity while they wait for the straggler in the all-reduce
         * is the straggler's doing, not a utilization profile of its own */
        if (ns > 0 && f->wall_s > 0 && strag_s >= 0.25 * f->wall_s) explained = 1;
    }
    *np = n;
    return explained;
}

/* interference */
static void rule_interference(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                              size_t *np) {
    size_t n = *np;
    gp_finding *x;
    /* interference */
    if (f->thr_shared > 0 && f->thr_alone > 0 &&
        f->thr_shared / f->thr_alone < gp_th(GP_TH_INTERFERENCE_RATIO)) {
        double r = f->thr_shared / f->thr_alone;
        if ((x = add(out, cap, &n, GP_FC_INTERFERENCE, job_id, f, 0.75))) {
            headroom(x, f, f->shared_share * (1 - r), "the job had its GPUs to itself");
            if (f->shared_t0_ns) x->t0_ns = f->shared_t0_ns;
            if (f->shared_t1_ns) x->t1_ns = f->shared_t1_ns;
            ev(x, GP_TH_INTERFERENCE_RATIO, r, "events+procs");
            gp_finding_add_evidence(x, "shared_share", f->shared_share, ">", 0, "procs");
            snprintf(x->summary, sizeof x->summary,
                     "%s runs at %.0f%% of its own speed while another job shares its GPUs.",
                     job_id, 100 * r);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Give the job exclusive GPUs or hard partitions (MIG) instead of time "
                     "slicing; co-locate only with light jobs; set MPS active-thread limits "
                     "for the neighbour.");
        }
    } else if (f->thr_shared > 0 && f->thr_alone > 0 &&
               f->shared_share * (1 - f->thr_shared / f->thr_alone) >= gp_th(GP_TH_MINOR_SHARE)) {
        /* slowed less than the threshold, but long enough to cost a twentieth of the run */
        double r = f->thr_shared / f->thr_alone, loss = f->shared_share * (1 - r);
        if ((x = add(out, cap, &n, GP_FC_INTERFERENCE, job_id, f, 0.6))) {
            x->minor = 1;
            headroom(x, f, loss, "the job had its GPUs to itself");
            if (f->shared_t0_ns) x->t0_ns = f->shared_t0_ns;
            if (f->shared_t1_ns) x->t1_ns = f->shared_t1_ns;
            gp_finding_add_evidence(x, "interference_ratio", r,
                                    ">=", gp_th(GP_TH_INTERFERENCE_RATIO), "events+procs");
            ev(x, GP_TH_MINOR_SHARE, loss, "events+procs");
            snprintf(x->summary, sizeof x->summary,
                     "Minor: %s runs at %.0f%% of its own speed while another job shares its "
                     "GPUs (%.0f%% of its run).",
                     job_id, 100 * r, 100 * f->shared_share);
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Prefer exclusive GPUs or MIG partitions for this job.");
        }
    }
    *np = n;
}

/* the utilization profile (host_bound, memory_capacity, under_batched, memory_bound); returns
 * profile_done */
static int rule_util_profile(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                             size_t *np, int explained) {
    size_t n = *np;
    gp_finding *x;
    /* utilization profile */
    double util = util_of(f);
    double mem = f->mem_frac.n ? f->mem_frac.mean : -1;
    int profile_done = 0;
    if (!explained && f->sm_active.n && util > 0) {
        double sm = f->sm_active.mean;
        double dram = f->dram_active.n ? f->dram_active.mean : 0;
        if (sm < gp_th(GP_TH_SM_ACTIVE_LOW) && sm / util < 0.5 &&
            dram < gp_th(GP_TH_DRAM_ACTIVE_HIGH) &&
            (f->idle_share < 0 || f->idle_share < gp_th(GP_TH_IDLE_SHARE)) &&
            (f->interconnect_peak_share < gp_th(GP_TH_NVLINK_PEAK_SHARE))) {
            if ((x = add(out, cap, &n, GP_FC_HOST_BOUND, job_id, f, 0.7))) {
                /* launch gaps inside steps: half of the SM idleness, an estimate */
                headroom(x, f, (1 - sm / gp_th(GP_TH_SM_ACTIVE_HIGH)) * 0.5,
                         "launch overhead were cut (CUDA graphs, fused kernels)");
                ev(x, GP_TH_SM_ACTIVE_LOW, sm, "dcgm-profiling");
                gp_finding_add_evidence(x, "sm_active_per_busy", sm / util, "<", 0.5,
                                        "dcgm-profiling+nvml");
                snprintf(x->summary, sizeof x->summary,
                         "%s keeps a kernel running %.0f%% of the time but its SMs are active "
                         "only %.0f%%: many small kernels and launch overhead.",
                         job_id, 100 * util, 100 * sm);
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Cut launch overhead: CUDA graphs (torch.compile "
                         "mode=reduce-overhead), fuse small ops (torch.compile, fused "
                         "optimizers), raise the batch, and remove host syncs (.item(), .cpu(), "
                         "printing tensors) from the training loop.");
            }
            profile_done = 1;
        }
    }
    if (!explained && !profile_done && util >= 0 && util <= gp_th(GP_TH_UNDER_UTIL) && mem >= 0) {
        if (mem > gp_th(GP_TH_CAPACITY_MEM)) {
            if ((x = add(out, cap, &n, GP_FC_MEMORY_CAPACITY, job_id, f, 0.7))) {
                headroom(x, f, (1 - util) * 0.5, "freed memory let the batch grow");
                ev(x, GP_TH_UNDER_UTIL, util, util_src(f));
                ev(x, GP_TH_CAPACITY_MEM, mem, "nvml");
                snprintf(x->summary, sizeof x->summary,
                         "%s keeps its GPUs busy only %.0f%% of the time while using %.0f%% of "
                         "their memory: memory capacity limits the batch.",
                         job_id, 100 * util, 100 * mem);
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Free memory to raise the batch: activation checkpointing, mixed "
                         "precision (bf16), ZeRO/FSDP sharding of optimizer states, 8-bit "
                         "optimizers, or for inference KV-cache quantization and paged "
                         "attention.");
            }
            profile_done = 1;
        } else if (mem <= gp_th(GP_TH_UNDER_MEM)) {
            if ((x = add(out, cap, &n, GP_FC_UNDER_BATCHED, job_id, f, 0.7))) {
                headroom(x, f, (1 - util) * 0.5, "the batch filled the GPU");
                ev(x, GP_TH_UNDER_UTIL, util, util_src(f));
                ev(x, GP_TH_UNDER_MEM, mem, "nvml");
                snprintf(x->summary, sizeof x->summary,
                         "%s keeps its GPUs busy only %.0f%% of the time and uses %.0f%% of "
                         "their memory: the batch is too small for the GPU.",
                         job_id, 100 * util, 100 * mem);
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Raise the batch size (scale the learning rate), or pack several "
                         "small jobs on one GPU (MPS, MIG) or use a smaller GPU; for "
                         "inference raise max batch / concurrency.");
            }
            profile_done = 1;
        }
    }
    if (!explained && !profile_done && f->sm_active.n) {
        double sm = f->sm_active.mean;
        double dram = f->dram_active.n ? f->dram_active.mean : -1;
        double tens = f->tensor_active.n ? f->tensor_active.mean : -1;
        if (dram >= gp_th(GP_TH_DRAM_ACTIVE_HIGH) &&
            (tens < 0 || tens < gp_th(GP_TH_TENSOR_ACTIVE_HEALTHY))) {
            if ((x = add(out, cap, &n, GP_FC_MEMORY_BOUND, job_id, f, 0.75))) {
                headroom(x, f, (tens >= 0 ? 1 - tens / 0.8 : 0.3) * 0.5,
                         "each byte read did more work (larger batch, quantized KV cache)");
                ev(x, GP_TH_DRAM_ACTIVE_HIGH, dram, "dcgm-profiling");
                if (tens >= 0)
                    gp_finding_add_evidence(x, "tensor_active", tens, "<",
                                            gp_th(GP_TH_TENSOR_ACTIVE_HEALTHY), "dcgm-profiling");
                snprintf(x->summary, sizeof x->summary,
                         "%s is limited by memory bandwidth (DRAM active %.2f, tensor pipes "
                         "%.2f).",
                         job_id, dram, tens);
                snprintf(x->recommendation, sizeof x->recommendation,
                         "Do more work per byte read: larger decode batch (more concurrent "
                         "requests), KV-cache quantization (FP8), paged or flash attention, "
                         "speculative decoding, fused kernels, or weight quantization.");
            }
        } else if (sm >= gp_th(GP_TH_SM_ACTIVE_HIGH) ||
                   (tens >= gp_th(GP_TH_TENSOR_ACTIVE_HEALTHY) &&
                    sm >= gp_th(GP_TH_SM_ACTIVE_LOW))) {
            profile_done = 2;
        }
    } else if (!explained && !profile_done && util >= gp_th(GP_TH_GPU_UTIL_BUSY)) {
        profile_done = 3; /* busy, no profiling fields: probably healthy, low confidence */
    }
    *np = n;
    return profile_done;
}

/* inference SLO misses */
static void rule_slo(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                     size_t *np) {
    size_t n = *np;
    /* inference SLOs: a service whose requests miss their SLOs. The class says why the
     * GPU cannot serve faster at this load (docs/findings.md, "Inference SLOs"): decode
     * reading weights and KV cache (memory_bound), a small batch on an idle GPU
     * (under_batched), memory full (memory_capacity), or a saturated GPU (compute_bound:
     * add replicas). The miss itself is evidence on that finding, not a class of its own. */
    if (f->has_requests && f->n_req >= 20 && f->n_req_good < f->n_req && slo_set(f)) {
        double att = (double)f->n_req_good / (double)f->n_req;
        if (att < gp_th(GP_TH_SLO_ATTAINMENT)) slo_finding(out, cap, &n, job_id, f, att);
    }
    *np = n;
}

/* compute_bound (healthy) when no major finding */
static void rule_healthy(const char *job_id, const gp_features *f, gp_finding *out, size_t cap,
                         size_t *np, int profile_done) {
    size_t n = *np;
    gp_finding *x;
    double util = util_of(f);
    size_t n_major = 0;
    for (size_t i = 0; i < n; i++)
        n_major += !out[i].minor;
    /* healthy by every threshold; minor losses are listed beside it. A job that holds no
     * GPU (a stage-only pipeline job, a CPU job) gets no GPU verdict at all: "its GPUs
     * compute most of the time" would be a claim about GPUs it does not have. */
    if (n_major == 0 && f->n_gpus > 0) {
        double conf = profile_done == 2 ? 0.8 : profile_done == 3 ? 0.4 : 0.3;
        if ((x = add(out, cap, &n, GP_FC_COMPUTE_BOUND, job_id, f, conf))) {
            snprintf(x->counterfactual, sizeof x->counterfactual,
                     "nothing to recover: only cheaper compute (lower precision, fused "
                     "kernels) would make steps shorter");
            if (f->sm_active.n) ev_if(x, GP_TH_SM_ACTIVE_HIGH, f->sm_active.mean, "dcgm-profiling");
            if (util >= 0) ev_if(x, GP_TH_GPU_UTIL_BUSY, util, util_src(f));
            if (f->tensor_active.n)
                ev_if(x, GP_TH_TENSOR_ACTIVE_HEALTHY, f->tensor_active.mean, "dcgm-profiling");
            snprintf(x->summary, sizeof x->summary,
                     "%s is healthy: its GPUs compute most of the time and nothing else "
                     "stands out%s.",
                     job_id,
                     profile_done == 2 ? ""
                                       : " (no profiling fields, so this is a weak judgement)");
            snprintf(x->recommendation, sizeof x->recommendation,
                     "Nothing to fix. To go faster, make the compute itself cheaper: bf16/FP8, "
                     "fused attention (FlashAttention), torch.compile, or more GPUs if it "
                     "scales.");
        }
    }
    *np = n;
}

size_t gp_classify(const char *job_id, const gp_features *f, const gp_worker_obs *obs, size_t n_obs,
                   double price, gp_finding *out, size_t cap) {
    size_t n = 0;
    int explained = 0; /* a blocking cause already explains low utilization */
    explained |= rule_not_ready(job_id, f, out, cap, &n);
    explained |= rule_idle(job_id, f, out, cap, &n);
    explained |= rule_input_bound(job_id, f, out, cap, &n);
    explained |= rule_checkpoint_bound(job_id, f, out, cap, &n);
    explained |= rule_communication_bound(job_id, f, out, cap, &n);
    rule_throttled(job_id, f, out, cap, &n);
    rule_gpu_errors(job_id, f, out, cap, &n);
    explained |= rule_straggler(job_id, f, obs, n_obs, out, cap, &n);
    rule_interference(job_id, f, out, cap, &n);
    int profile_done = rule_util_profile(job_id, f, out, cap, &n, explained);
    rule_slo(job_id, f, out, cap, &n);
    rule_healthy(job_id, f, out, cap, &n, profile_done);
    gp_findings_budget(out, n, NULL, est_productive(f), price);
    gp_findings_rank(out, n);
    return n;
}

static int cmp_obs_rank_ts(const void *a, const void *b) {
    const gp_worker_obs *x = a, *y = b;
    if (x->worker != y->worker) return (x->worker > y->worker) - (x->worker < y->worker);
    if (x->ts_ns != y->ts_ns) return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
    return (x->iter > y->iter) - (x->iter < y->iter);
}

int gp_step_obs_from_events(const gp_event *ev, size_t n, gp_worker_obs **out) {
    gp_job_input in;
    memset(&in, 0, sizeof in);
    in.events = ev;
    in.n_events = n;
    return gp_step_obs_from_input(&in, out);
}

int gp_step_obs_from_input(const gp_job_input *in, gp_worker_obs **out) {
    *out = NULL;
    size_t ns = 0;
    gp_step_iter it = {0, 0};
    gp_step_ev ev;
    while (gp_step_next(in, &it, &ev))
        if (ev.rank >= 0) ns++;
    if (!ns) return 0;
    gp_worker_obs *o = malloc(ns * sizeof *o);
    if (!o) return -1;
    /* previous end per rank: ranks are small integers in practice; map by linear search */
    int64_t ranks[256], prev[256];
    int nr = 0;
    size_t k = 0;
    it = (gp_step_iter){0, 0};
    while (gp_step_next(in, &it, &ev)) {
        const gp_step_ev *e = &ev;
        if (e->rank < 0) continue;
        int r = 0;
        while (r < nr && ranks[r] != e->rank)
            r++;
        if (r == nr) {
            if (nr == 256) continue;
            ranks[nr] = e->rank;
            prev[nr++] = -1;
        }
        int64_t st = e->step_start_ns >= 0 ? e->step_start_ns : prev[r];
        prev[r] = e->ts_ns;
        if (st < 0 || e->ts_ns <= st) continue;
        o[k++] = (gp_worker_obs){(int)e->rank, e->step, (double)(e->ts_ns - st) / NS, e->ts_ns};
    }
    /* Steps redone after a restart repeat their numbers. The straggler's windows follow
     * time, so each rank's iterations are renumbered to keep increasing: a redone step
     * continues after the last one seen (every rank restarts at the same step, so the
     * numbering stays aligned across ranks). A slow rank during work later lost to a
     * failure still cost that time. */
    qsort(o, k, sizeof *o, cmp_obs_rank_ts);
    int64_t offset = 0, last = INT64_MIN;
    for (size_t i = 0; i < k; i++) {
        if (i == 0 || o[i].worker != o[i - 1].worker) offset = 0, last = INT64_MIN;
        if (last != INT64_MIN && o[i].iter + offset <= last) offset = last + 1 - o[i].iter;
        o[i].iter += offset;
        last = o[i].iter;
    }
    *out = o;
    return (int)k;
}
