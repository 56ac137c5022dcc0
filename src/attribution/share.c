/* share.c: per-owner split of a shared GPU (see share.h for the method). */
#include "attribution/share.h"

#include <stdio.h>
#include <string.h>

const char *gp_split_basis_name(gp_split_basis b) {
    switch (b) {
    case GP_SPLIT_SM:
        return "sm_share";
    case GP_SPLIT_MEM:
        return "memory";
    case GP_SPLIT_EQUAL:
        return "equal";
    default:
        return "none";
    }
}

static const char *owner_key(const gp_proc_sample *p) {
    return p->job_id[0] ? p->job_id : "unknown";
}

static int find_or_add(gp_owner_share *out, size_t *k, size_t cap, const char *id) {
    for (size_t i = 0; i < *k; i++)
        if (!strcmp(out[i].job_id, id)) return (int)i;
    if (*k >= cap) return -1;
    memset(&out[*k], 0, sizeof out[*k]);
    snprintf(out[*k].job_id, sizeof out[*k].job_id, "%s", id);
    return (int)(*k)++;
}

size_t gp_attrib_split(const gp_proc_sample *rows, size_t n, gp_owner_share *out, size_t cap,
                       gp_split_basis *basis) {
    size_t k = 0;
    double sum_sm = 0, sum_mem = 0;
    int any_sm = 0, any_mem = 0;
    for (size_t i = 0; i < n; i++) {
        if (gp_has(rows[i].valid, GP_P_SM_SHARE) && rows[i].sm_share > 0) {
            any_sm = 1;
            sum_sm += rows[i].sm_share;
        }
        if (gp_has(rows[i].valid, GP_P_MEM) && rows[i].mem_bytes > 0) {
            any_mem = 1;
            sum_mem += (double)rows[i].mem_bytes;
        }
    }
    gp_split_basis b = n == 0    ? GP_SPLIT_NONE
                       : any_sm  ? GP_SPLIT_SM
                       : any_mem ? GP_SPLIT_MEM
                                 : GP_SPLIT_EQUAL;
    for (size_t i = 0; i < n; i++) {
        int o = find_or_add(out, &k, cap, owner_key(&rows[i]));
        if (o < 0) continue;
        out[o].n_procs++;
        if (b == GP_SPLIT_SM && gp_has(rows[i].valid, GP_P_SM_SHARE) && rows[i].sm_share > 0)
            out[o].fraction += rows[i].sm_share;
        else if (b == GP_SPLIT_MEM && gp_has(rows[i].valid, GP_P_MEM))
            out[o].fraction += (double)rows[i].mem_bytes;
    }
    double total = 0;
    for (size_t i = 0; i < k; i++) {
        if (b == GP_SPLIT_EQUAL) out[i].fraction = 1;
        total += out[i].fraction;
    }
    (void)sum_sm;
    (void)sum_mem;
    for (size_t i = 0; i < k; i++)
        out[i].fraction = total > 0 ? out[i].fraction / total : 0;
    if (basis) *basis = b;
    return k;
}

size_t gp_attrib_split_series(const gp_proc_sample *rows, size_t n, int64_t first_interval_ns,
                              gp_owner_share *out, size_t cap) {
    size_t k = 0;
    while (k < cap && out[k].job_id[0])
        k++; /* existing entries: caller zeroes the rest */
    int64_t prev_ts = -1;
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && rows[j].ts_ns == rows[i].ts_ns)
            j++;
        gp_owner_share part[64];
        size_t np = gp_attrib_split(rows + i, j - i, part, 64, NULL);
        double dt_s =
            (prev_ts < 0 ? (double)first_interval_ns : (double)(rows[i].ts_ns - prev_ts)) / 1e9;
        for (size_t p = 0; p < np; p++) {
            int o = find_or_add(out, &k, cap, part[p].job_id);
            if (o < 0) continue;
            out[o].gpu_s += part[p].fraction * dt_s;
            out[o].n_procs = part[p].n_procs > out[o].n_procs ? part[p].n_procs : out[o].n_procs;
        }
        prev_ts = rows[i].ts_ns;
        i = j;
    }
    return k;
}

int gp_attrib_not_ready_finding(const gp_job *job, const gp_alloc *allocs, size_t n, int64_t now_ns,
                                gp_finding *out) {
    if (job->ready_ns >= 0 || n == 0) return 0;
    int64_t end = job->ended_ns >= 0 ? job->ended_ns : now_ns;
    double gpu_s = 0;
    int64_t t0 = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t to = allocs[i].to_ns >= 0 ? allocs[i].to_ns : end;
        if (to > allocs[i].from_ns) gpu_s += (double)(to - allocs[i].from_ns) / 1e9;
        if (t0 < 0 || allocs[i].from_ns < t0) t0 = allocs[i].from_ns;
    }
    if (gpu_s <= 0) return 0;
    memset(out, 0, sizeof *out);
    out->cls = GP_FC_NOT_READY;
    out->scope = GP_SCOPE_JOB;
    snprintf(out->scope_id, sizeof out->scope_id, "%s", job->id);
    out->t0_ns = t0;
    out->t1_ns = end;
    out->wasted_gpu_s = gpu_s;
    out->wasted_cost = -1;
    out->confidence = job->ended_ns >= 0 ? 0.9 : 0.6;
    gp_finding_add_evidence(out, "time_to_first_progress_s", (double)(end - t0) / 1e9,
                            ">=", (double)(end - t0) / 1e9, "slurm+events");
    snprintf(out->summary, sizeof out->summary,
             "job %s held %zu GPU allocation(s) for %.2f GPU-hours and never reported progress "
             "or sustained kernel activity",
             job->id, n, gpu_s / 3600.0);
    snprintf(out->recommendation, sizeof out->recommendation,
             "Check the job's start-up (environment, data staging, model load, a hang before "
             "the first step); send step events (goodput emit / the Python client) so "
             "readiness is measured; release GPUs held by jobs that cannot start.");
    return 1;
}
