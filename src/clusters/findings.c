/* findings.c: cluster-scope findings and the capacity verdict, from the report's sums.
 *
 * Thresholds live in one table with the reason for each value. A finding is raised when
 * its wasted GPU-hours pass a share of allocated GPU-hours, so a healthy cluster reports
 * few findings. The verdict answers "more GPUs, or better use of the ones we have?". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/cluster.h"

static const struct {
    const char *name;
    double value;
    const char *why;
} thresholds[] = {
    {"idle_util", 0.01,
     "below 1% utilization a GPU ran no meaningful kernels in the sampling period"},
    {"low_util", 0.50,
     "NVIDIA DCGM guidance: SM activity under 0.5 is ineffective use; ARCHITECTURE.md "
     "under_batched"},
    {"min_share", 0.05, "raise a finding only when it explains at least 5% of allocated GPU-hours"},
    {"busy_cluster", 0.85, "allocation above 85% of capacity leaves little room for bursts"},
    {"long_wait_s", 3600, "a p90 queue wait above one hour delays work noticeably"},
};
enum { T_IDLE, T_LOW, T_SHARE, T_BUSY, T_WAIT };

/* Trace times in seconds -> ns; unknown (-1) when not finite or beyond int64 (a hostile
 * file can say the year 5e12; found by fuzz_cluster). */
static int64_t secs_to_ns(double s) {
    if (!isfinite(s) || s * 1e9 >= 9.2e18 || s * 1e9 <= -9.2e18) return -1;
    return (int64_t)(s * 1e9);
}

int gp_cl_evidence_holds(double v, const char *op, double t) {
    if (!isfinite(v) || !isfinite(t) || !op) return 0;
    if (!strcmp(op, ">")) return v > t;
    if (!strcmp(op, ">=")) return v >= t;
    if (!strcmp(op, "<")) return v < t;
    if (!strcmp(op, "<=")) return v <= t;
    if (!strcmp(op, "==")) return v == t;
    if (!strcmp(op, "!=")) return v != t;
    return 0;
}

/* Evidence is a claim a reader checks by eye: a line such as "p90 = 107.6 > 3600" would be
 * a false statement in the report, so it is refused rather than printed. */
int gp_cl_evidence(gp_finding *f, const char *metric, double value, const char *op,
                   double threshold, const char *source) {
    if (!gp_cl_evidence_holds(value, op, threshold)) return 0;
    gp_finding_add_evidence(f, metric, value, op, threshold, source);
    return 1;
}

static gp_finding *add(gp_cluster_report *r, gp_finding_class c) {
    gp_finding *n = realloc(r->findings, (size_t)(r->n_findings + 1) * sizeof *n);
    if (!n) return NULL;
    r->findings = n;
    gp_finding *f = &n[r->n_findings++];
    memset(f, 0, sizeof *f);
    f->cls = c;
    f->scope = GP_SCOPE_CLUSTER;
    snprintf(f->scope_id, sizeof f->scope_id, "%s", r->format);
    f->t0_ns = secs_to_ns(r->t_min);
    f->t1_ns = secs_to_ns(r->t_max);
    f->wasted_cost = -1;
    f->confidence = 0.8;
    return f;
}

static double scheduling_gap(gp_cluster_report *r) {
    gp_cl_series *s = &r->series;
    double gap = 0;
    for (size_t i = 0; i < s->n; i++) {
        double w = s->wait_gpu_s[i];
        if (w <= 0) continue;
        double spare;
        if (r->capacity_gpus > 0)
            spare = r->capacity_gpus * s->bin_s - s->alloc_gpu_s[i];
        else
            spare = s->measured_gpu_s[i] - s->busy_gpu_s[i];
        if (spare > 0) gap += spare < w ? spare : w;
    }
    return gap;
}

int gp_cl_finish(gp_cluster_report *r) {
    r->span_s = (isfinite(r->t_min) && isfinite(r->t_max)) ? r->t_max - r->t_min : 0;
    r->sched_gap_gpu_s = scheduling_gap(r);
    const char *src = r->format;
    int ts = r->has_ts && r->total.allocated_gpu_s <= 0;
    double alloc = ts ? r->ts_online_gpu_s : r->total.allocated_gpu_s;
    double measured = ts ? r->ts_online_gpu_s : r->total.measured_alloc_gpu_s;
    double used = ts ? r->ts_busy_gpu_s : r->total.used_gpu_s;
    double idle = ts ? r->ts_idle_gpu_s : r->idle_alloc_gpu_s;
    double low = ts ? r->ts_low_gpu_s : r->under_batched_gpu_s;
    double share = thresholds[T_SHARE].value;
    gp_finding *f;

    if (measured > 0 && idle / measured >= share && (f = add(r, GP_FC_IDLE_ALLOCATED))) {
        f->wasted_gpu_s = idle;
        gp_cl_evidence(f, "idle_share_of_measured_gpu_h", idle / measured, ">=", share, src);
        gp_cl_evidence(f, "utilization", 0, "<", thresholds[T_IDLE].value, src);
        snprintf(f->summary, sizeof f->summary,
                 "%.0f GPU-hours (%.1f%% of measured allocated GPU-hours) were held at under 1%% "
                 "utilization.",
                 idle / 3600, 100 * idle / measured);
        snprintf(
            f->recommendation, sizeof f->recommendation,
            "Release idle allocations sooner (idle timeouts for notebooks and interactive jobs, "
            "preemptible reservations) before buying capacity.");
    }
    double low_only = low - idle;
    if (measured > 0 && low_only / measured >= share && (f = add(r, GP_FC_UNDER_BATCHED))) {
        f->wasted_gpu_s = low_only;
        gp_cl_evidence(f, "low_util_share_of_measured_gpu_h", low_only / measured, ">=", share,
                       src);
        gp_cl_evidence(f, "utilization", thresholds[T_LOW].value, "<=", thresholds[T_LOW].value,
                       src);
        snprintf(f->summary, sizeof f->summary,
                 "%.0f GPU-hours (%.1f%%) ran at 1-50%% utilization: work that would fit on fewer "
                 "or shared GPUs.",
                 low_only / 3600, 100 * low_only / measured);
        snprintf(f->recommendation, sizeof f->recommendation,
                 "Raise batch sizes or pack small jobs onto shared GPUs (MPS, MIG, fractional "
                 "scheduling); right-size GPU requests to measured use.");
        if (r->n_plan_measured > 0)
            gp_cl_evidence(f, "share_of_units_request_exceeds_use",
                           (double)r->n_plan_exceeds / (double)r->n_plan_measured, ">", 0.5, src);
    }
    if (r->held_never_ran_gpu_s > 0 && (f = add(r, GP_FC_NOT_READY))) {
        f->wasted_gpu_s = r->held_never_ran_gpu_s;
        gp_cl_evidence(f, "units_held_gpus_never_ran", (double)r->n_held_never_ran, ">", 0, src);
        gp_cl_evidence(f, "share_of_allocated_gpu_h",
                       alloc > 0 ? r->held_never_ran_gpu_s / alloc : 0, ">", 0, src);
        snprintf(f->summary, sizeof f->summary,
                 "%lld %s held GPUs for %.0f GPU-hours yet failed without measured GPU work.",
                 (long long)r->n_held_never_ran, r->unit_name, r->held_never_ran_gpu_s / 3600);
        snprintf(f->recommendation, sizeof f->recommendation,
                 "Validate jobs before they take GPUs (image pull, data mount and a dry step on "
                 "CPU) and "
                 "fail fast: a job that cannot start should give its GPUs back in seconds.");
    }
    if (r->sched_gap_gpu_s > 0 && alloc > 0 && (f = add(r, GP_FC_SCHEDULING_GAP))) {
        f->wasted_gpu_s = r->sched_gap_gpu_s;
        gp_cl_evidence(f, "gpu_h_free_or_idle_while_jobs_waited", r->sched_gap_gpu_s / 3600, ">", 0,
                       src);
        gp_cl_evidence(f, "queue_wait_p90_s", gp_cl_wait_quantile(&r->wait_all, 0.9), ">",
                       thresholds[T_WAIT].value, src);
        snprintf(f->summary, sizeof f->summary,
                 "Jobs waited in the queue while %.0f GPU-hours were %s at the same time.",
                 r->sched_gap_gpu_s / 3600,
                 r->capacity_gpus > 0 ? "unallocated" : "allocated but idle");
        snprintf(
            f->recommendation, sizeof f->recommendation,
            "This is a placement problem, not a capacity one: relax GPU-type constraints, use "
            "backfill and gang scheduling with reservations, and defragment partly used nodes.");
        f->confidence = 0.6;
    }
    if (r->has_sharing && r->stranded_gpu_s > 0 && (f = add(r, GP_FC_SCHEDULING_GAP))) {
        f->wasted_gpu_s = r->stranded_gpu_s;
        double sh = r->shared_gpu_s + r->whole_gpu_s;
        gp_cl_evidence(f, "stranded_share_of_gpu_h", sh > 0 ? r->stranded_gpu_s / sh : 0, ">", 0,
                       src);
        gp_cl_evidence(f, "peak_gpus_needed", r->peak_gpus_needed, "<=", r->capacity_gpus, src);
        snprintf(
            f->summary, sizeof f->summary,
            "GPU sharing fragments capacity: at least %.0f GPU-hours sat in partly used GPUs that "
            "whole-GPU pods could not use.",
            r->stranded_gpu_s / 3600);
        snprintf(
            f->recommendation, sizeof f->recommendation,
            "Pack fractional pods onto the fewest GPUs (fragmentation-aware scheduling such as "
            "FGD) so whole GPUs stay free for whole-GPU pods.");
        f->confidence = 0.6;
    }
    double unused = measured - used;
    if (measured > 0 && unused / measured >= share && (f = add(r, GP_FC_HARVESTABLE))) {
        f->wasted_gpu_s = unused;
        gp_cl_evidence(f, "unused_share_of_measured_gpu_h", unused / measured, ">=", share, src);
        if (r->capacity_gpus > 0 && r->span_s > 0)
            gp_cl_evidence(f, "unallocated_gpu_h",
                           (r->capacity_gpus * r->span_s - r->total.allocated_gpu_s) / 3600, ">", 0,
                           src);
        snprintf(
            f->summary, sizeof f->summary,
            "%.0f allocated GPU-hours did no work (allocated minus used): room for lower-priority "
            "work at no new cost.",
            unused / 3600);
        snprintf(
            f->recommendation, sizeof f->recommendation,
            "Run preemptible or best-effort work (evaluation, batch inference, hyper-parameter "
            "search) on allocated but idle GPUs, with sharing that yields to the owner.");
        f->confidence = 0.5;
    }

    /* verdict */
    double u = measured > 0 ? used / measured : -1;
    double mean_load =
        (r->capacity_gpus > 0 && r->span_s > 0) ? alloc / (r->capacity_gpus * r->span_s) : -1;
    double p90 = gp_cl_wait_quantile(&r->wait_all, 0.9);
    char ev[384];
    if (u >= 0)
        snprintf(ev, sizeof ev, "%.1f%% of measured allocated GPU-hours did work", 100 * u);
    else
        snprintf(ev, sizeof ev, "GPU usage not measured by this trace");
    if (mean_load >= 0) {
        size_t l = strlen(ev);
        snprintf(ev + l, sizeof ev - l, "; allocation averaged %.1f%% of %.0f GPUs",
                 100 * mean_load, r->capacity_gpus);
    }
    if (p90 >= 0) {
        size_t l = strlen(ev);
        snprintf(ev + l, sizeof ev - l, "; queue wait p90 %.0f s", p90);
    }
    if (u >= 0 && u < thresholds[T_LOW].value)
        snprintf(
            r->verdict, sizeof r->verdict,
            "Better use of the GPUs you have: %s. Idle and under-used allocations, not missing "
            "GPUs, are the larger loss.",
            ev);
    else if (r->sched_gap_gpu_s > 0.05 * alloc && alloc > 0)
        snprintf(r->verdict, sizeof r->verdict,
                 "Better scheduling first: %s; jobs waited while %.0f GPU-hours were spare.", ev,
                 r->sched_gap_gpu_s / 3600);
    else if (mean_load >= thresholds[T_BUSY].value || (p90 > thresholds[T_WAIT].value && u >= 0.5))
        snprintf(r->verdict, sizeof r->verdict,
                 "More GPUs: %s; allocations are busy and the queue is long.", ev);
    else if (u < 0)
        snprintf(r->verdict, sizeof r->verdict,
                 "Not decidable from this trace alone (no measured utilization): %s.", ev);
    else
        snprintf(r->verdict, sizeof r->verdict, "Neither is pressing: %s.", ev);
    return 0;
}
