/* report.c: turns per-rank trace analyses into the run summary (type totals over ranks,
 * stragglers, findings in the shared vocabulary) and writes it as text, JSON (jansson) or
 * a self-contained HTML page with inline SVG charts (inline script only for the timeline's
 * zoom; nothing loaded from the network), written to a temp file
 * and renamed into place. Thresholds and their reasons are in the table below. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/findings_fmt.h"
#include "report/findings_group.h"
#include "report/svg.h"
#include "traces/report_int.h"
#include "traces/trace.h"
#include "util/term.h"

/* Thresholds (docs/traces.md, "Findings"). */
#define HOST_WAIT_SHARE                                                                            \
    0.5                       /* host_wait over half of all stream idle: the host feeds too slowly \
                               */
#define IDLE_SHARE 0.3        /* GPU idle over 30% of the span is worth explaining */
#define COMM_SHARE 0.4        /* communication alone over 40% of busy time */
#define LOW_OVERLAP_PCTG 50.0 /* less than half of communication hidden under compute */
#define COPY_SHARE 0.1        /* host<->device copies over 10% of span */
#define SHORT_KERNEL_US 10.0  /* mean compute kernel under 10 µs: launch-bound territory */
#define LAUNCH_DELAY_US 100.0 /* HTA's launch_delay_cutoff */
#define COMPUTE_SHARE 0.7     /* compute over 70% of span: healthy */
#define STRAGGLER_RATIO 1.15  /* a rank's compute time 15% above the median */
#define KNOWN_CAUSE_SHARE 0.5 /* host ops explain at least half the idle time: name the cause */

static const char *type_label(int mask, char *buf, size_t len) {
    buf[0] = 0;
    for (int k = 0; k < 3; k++)
        if (mask & (1 << k)) {
            if (buf[0]) strncat(buf, " overlapping ", len - strlen(buf) - 1);
            strncat(buf, gp_kernel_type_name(k), len - strlen(buf) - 1);
        }
    return buf;
}

static gp_finding *add_finding(gp_trace_report *rep, gp_finding_class c, const gp_rank_result *r,
                               double t0_us, double t1_us) {
    int rank = r->rank;
    rep->findings = realloc(rep->findings, (rep->n_findings + 1) * sizeof *rep->findings);
    if (!rep->findings) abort();
    gp_finding *f = &rep->findings[rep->n_findings++];
    memset(f, 0, sizeof *f);
    f->cls = c;
    f->scope = GP_SCOPE_RANK;
    if (rep->n_runs > 1)
        snprintf(f->scope_id, sizeof f->scope_id, "run %d rank %d", r->run + 1, rank);
    else
        snprintf(f->scope_id, sizeof f->scope_id, "rank %d", rank);
    f->t0_ns = (int64_t)(t0_us * 1000);
    f->t1_ns = (int64_t)(t1_us * 1000);
    f->wasted_gpu_s = -1;
    f->wasted_cost = -1;
    f->confidence = 0.8;
    return f;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What to do about idle time, by its dominant host cause. */
static const char *const cause_advice[GP_IC__COUNT] = {
    [GP_IC_DATA] = "The input pipeline starves the GPU: raise DataLoader num_workers, set "
                   "pin_memory=True, prefetch (prefetch_factor, persistent_workers), or move "
                   "decoding and augmentation out of the training process.",
    [GP_IC_SYNC] = "The host blocks on the device: take .item(), .cpu() and printing of device "
                   "tensors out of the step (log every N steps), copy with non_blocking=True "
                   "from pinned memory, and avoid ops that synchronise (nonzero, boolean masks).",
    [GP_IC_OPTIMIZER] = "The optimizer step is slow on the host: use a fused or foreach optimizer "
                        "(fused=True / foreach=True), or capture it in a CUDA graph.",
    [GP_IC_LAUNCH] = "Many short kernels wait on the CPU: fuse them (torch.compile), use CUDA "
                     "graphs, or move Python overhead out of the step.",
    [GP_IC_COLLECTIVE] = "The host waits in collectives: look for a straggler rank, overlap "
                         "communication with compute, and avoid blocking collectives in the "
                         "step.",
    [GP_IC_PROFILER] = "Profiler overhead fills the idle time: profile fewer steps, or without "
                       "record_shapes/with_stack, to see the workload's own behaviour.",
};

/* The most expensive op of a cause (NULL when none). */
static const gp_host_op *top_op(const gp_rank_result *r, int cause, int nth) {
    for (size_t i = 0; i < r->n_ops; i++)
        if (r->ops[i].cause == cause && nth-- == 0) return &r->ops[i];
    return NULL;
}

/* Idle time worth explaining: named after the host activity that fills it when the trace
 * shows it (idle_cause.c), else after HTA's host_wait share. Returns 1 when it adds one. */
static int idle_finding(gp_trace_report *rep, const gp_rank_result *r, double idle_share, double hw,
                        double span) {
    if (!(idle_share > IDLE_SHARE)) return 0;
    double tot = 0, known = 0;
    for (int c = 0; c < GP_IC__COUNT; c++) {
        tot += r->idle_cause_us[c];
        if (c != GP_IC_UNKNOWN) known += r->idle_cause_us[c];
    }
    gp_finding *f;
    if (r->attributed && tot > 0 && known / tot >= KNOWN_CAUSE_SHARE) {
        int dom = -1, second = -1;
        for (int c = 0; c < GP_IC__COUNT; c++) {
            if (c == GP_IC_UNKNOWN) continue;
            if (dom < 0 || r->idle_cause_us[c] > r->idle_cause_us[dom])
                second = dom, dom = c;
            else if (second < 0 || r->idle_cause_us[c] > r->idle_cause_us[second])
                second = c;
        }
        gp_finding_class cls = dom == GP_IC_DATA         ? GP_FC_INPUT_BOUND
                               : dom == GP_IC_COLLECTIVE ? GP_FC_COMMUNICATION_BOUND
                                                         : GP_FC_HOST_BOUND;
        f = add_finding(rep, cls, r, 0, span);
        double share = r->idle_cause_us[dom] / tot;
        f->wasted_gpu_s = r->idle_cause_us[dom] / 1e6;
        char metric[48];
        gp_finding_add_evidence(f, "gpu_idle_share", idle_share, ">", IDLE_SHARE, "kineto");
        snprintf(metric, sizeof metric, "idle_share_%s", gp_idle_cause_name(dom));
        gp_finding_add_evidence(f, metric, share, ">",
                                second >= 0 ? r->idle_cause_us[second] / tot : 0, "kineto");
        if (dom == GP_IC_DATA && !isnan(r->data_share))
            gp_finding_add_evidence(f, "dataloader_share_of_step", r->data_share, ">", 0, "kineto");
        for (int k = 0; k < 2; k++) {
            const gp_host_op *op = top_op(r, dom, k);
            if (!op) break;
            snprintf(metric, sizeof metric, "host_op_us:%.36s", op->name);
            gp_finding_add_evidence(f, metric, op->total_us, ">", 0, "kineto");
        }
        const gp_host_op *op = top_op(r, dom, 0);
        char ops[160] = "";
        if (op)
            snprintf(ops, sizeof ops, " (%.80s: %llu calls, %.3f s on the host)", op->name,
                     (unsigned long long)op->count, op->total_us / 1e6);
        snprintf(f->summary, sizeof f->summary, "GPU idle %.0f%% of the span; %.0f%% of it is %s%s",
                 100 * idle_share, 100 * share, gp_idle_cause_name(dom), ops);
        snprintf(f->recommendation, sizeof f->recommendation, "%s", cause_advice[dom]);
        return 1;
    }
    if (!(hw > HOST_WAIT_SHARE)) return 0;
    /* no host ops to go by (Nsight export, CPU side not recorded): HTA's view */
    int many_short =
        r->mean_kernel_us < SHORT_KERNEL_US || r->n_launch_over_delay > r->n_launches / 10;
    f = add_finding(rep, many_short ? GP_FC_HOST_BOUND : GP_FC_INPUT_BOUND, r, 0, span);
    f->wasted_gpu_s = r->idle_us * hw / 1e6;
    gp_finding_add_evidence(f, "gpu_idle_share", idle_share, ">", IDLE_SHARE, "kineto");
    gp_finding_add_evidence(f, "host_wait_share_of_idle", hw, ">", HOST_WAIT_SHARE, "kineto");
    gp_finding_add_evidence(f, "mean_compute_kernel_us", r->mean_kernel_us,
                            many_short ? "<" : ">=", SHORT_KERNEL_US, "kineto");
    snprintf(f->summary, sizeof f->summary,
             "GPU idle %.0f%% of the span, %.0f%% of stream idle waiting for the host to "
             "enqueue work (the trace does not say what the host was doing)",
             100 * idle_share, 100 * hw);
    snprintf(f->recommendation, sizeof f->recommendation, "%s",
             many_short ? cause_advice[GP_IC_LAUNCH]
                        : "The CPU side starves the GPU: check the input pipeline (more "
                          "DataLoader workers, pin_memory, prefetch) and host-side "
                          "synchronisation.");
    return 1;
}

void gp_trace_report_finish(gp_trace_report *rep) {
    memset(rep->type_us, 0, sizeof rep->type_us);
    memset(rep->type_present, 0, sizeof rep->type_present);
    rep->bytes = 0;
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        rep->bytes += r->bytes;
        for (int m = 1; m < 8; m++) {
            rep->type_us[m] += r->type_us[m];
            rep->type_present[m] |= r->type_present[m];
        }
    }
    if (rep->n_runs < 1) rep->n_runs = 1;
    double *comp = malloc((rep->n_ranks + 1) * sizeof *comp);
    double *median_of = calloc((size_t)rep->n_runs, sizeof *median_of);
    size_t *ranks_of = calloc((size_t)rep->n_runs, sizeof *ranks_of);
    if (!comp || !median_of || !ranks_of) abort();
    for (int run = 0; run < rep->n_runs; run++) { /* stragglers are compared within a run */
        size_t m = 0;
        for (size_t i = 0; i < rep->n_ranks; i++)
            if (rep->ranks[i].run == run) comp[m++] = rep->ranks[i].compute_us;
        qsort(comp, m, sizeof *comp, cmp_dbl);
        median_of[run] = m ? comp[m / 2] : 0;
        ranks_of[run] = m;
    }
    free(comp);
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        double median = median_of[r->run];
        size_t run_ranks = ranks_of[r->run];
        if (!r->has_gpu || r->span_us <= 0) continue;
        double span = r->span_us, busy = span - r->idle_us;
        double idle_share = r->idle_us / span;
        double stream_idle = r->host_wait_us + r->kernel_wait_us + r->other_wait_us;
        double hw = stream_idle > 0 ? r->host_wait_us / stream_idle : 0;
        gp_finding *f;
        int idle_found = idle_finding(rep, r, idle_share, hw, span);
        if (busy > 0 && r->comm_us / busy > COMM_SHARE &&
            (isnan(r->overlap_pctg) || r->overlap_pctg < LOW_OVERLAP_PCTG)) {
            f = add_finding(rep, GP_FC_COMMUNICATION_BOUND, r, 0, span);
            f->wasted_gpu_s =
                r->comm_us * (1 - (isnan(r->overlap_ratio) ? 0 : r->overlap_ratio)) / 1e6;
            gp_finding_add_evidence(f, "comm_share_of_busy", r->comm_us / busy, ">", COMM_SHARE,
                                    "kineto");
            gp_finding_add_evidence(f, "comm_comp_overlap_pctg", r->overlap_pctg, "<",
                                    LOW_OVERLAP_PCTG, "kineto");
            snprintf(f->summary, sizeof f->summary,
                     "communication takes %.0f%% of GPU busy time and only %.1f%% of it overlaps "
                     "compute",
                     100 * r->comm_us / busy, r->overlap_pctg);
            snprintf(f->recommendation, sizeof f->recommendation,
                     "Overlap collectives with compute (DDP bucket sizes, FSDP prefetch), compress "
                     "or shard "
                     "gradients, or check the interconnect.");
        }
        if (r->h2d_d2h_us / span > COPY_SHARE) {
            f = add_finding(rep, GP_FC_INPUT_BOUND, r, 0, span);
            f->wasted_gpu_s = r->h2d_d2h_us / 1e6;
            gp_finding_add_evidence(f, "h2d_d2h_share", r->h2d_d2h_us / span, ">", COPY_SHARE,
                                    "kineto");
            snprintf(f->summary, sizeof f->summary, "host<->device copies take %.0f%% of the span",
                     100 * r->h2d_d2h_us / span);
            snprintf(f->recommendation, sizeof f->recommendation,
                     "Keep tensors on the device, use pinned memory with non_blocking copies, and "
                     "batch transfers.");
        }
        if (r->n_launches > 0 && r->mean_kernel_us < SHORT_KERNEL_US && r->launch_delay_mean > 0 &&
            r->n_launch_over_delay > 0 && !idle_found) {
            f = add_finding(rep, GP_FC_HOST_BOUND, r, 0, span);
            gp_finding_add_evidence(f, "mean_compute_kernel_us", r->mean_kernel_us, "<",
                                    SHORT_KERNEL_US, "kineto");
            gp_finding_add_evidence(f, "launches_over_delay_cutoff", (double)r->n_launch_over_delay,
                                    ">", 0, "kineto");
            snprintf(f->summary, sizeof f->summary,
                     "many short kernels (mean %.1f µs) with launch delays", r->mean_kernel_us);
            snprintf(
                f->recommendation, sizeof f->recommendation,
                "Fuse small kernels or capture the step in a CUDA graph to cut launch overhead.");
        }
        if (r->compute_us / span > COMPUTE_SHARE) {
            f = add_finding(rep, GP_FC_COMPUTE_BOUND, r, 0, span);
            f->wasted_gpu_s = 0;
            gp_finding_add_evidence(f, "compute_share", r->compute_us / span, ">", COMPUTE_SHARE,
                                    "kineto");
            snprintf(f->summary, sizeof f->summary,
                     "compute kernels fill %.0f%% of the span: healthy",
                     100 * r->compute_us / span);
            snprintf(f->recommendation, sizeof f->recommendation,
                     "Compute bound: gains now come from faster kernels (mixed precision, fused "
                     "attention).");
        }
        if (run_ranks >= 2 && median > 0 && r->compute_us > STRAGGLER_RATIO * median) {
            f = add_finding(rep, GP_FC_STRAGGLER, r, 0, span);
            f->wasted_gpu_s = (r->compute_us - median) * (double)(run_ranks - 1) / 1e6;
            gp_finding_add_evidence(f, "compute_us_vs_median", r->compute_us / median, ">",
                                    STRAGGLER_RATIO, "kineto");
            snprintf(f->summary, sizeof f->summary,
                     "rank %d computes %.0f%% longer than the median rank; the others wait for it "
                     "in collectives",
                     r->rank, 100 * (r->compute_us / median - 1));
            snprintf(f->recommendation, sizeof f->recommendation,
                     "Balance the work per rank (uneven batches or sequence lengths), or check "
                     "this GPU for "
                     "throttling or a slow host.");
        }
    }
    free(median_of);
    free(ranks_of);
}

void gp_trace_report_free(gp_trace_report *rep) {
    for (size_t i = 0; i < rep->n_ranks; i++)
        gp_rank_result_free(&rep->ranks[i]);
    free(rep->ranks);
    free(rep->findings);
    memset(rep, 0, sizeof *rep);
}

static double type_total(const gp_trace_report *rep) {
    double t = 0;
    for (int m = 1; m < 8; m++)
        t += rep->type_us[m];
    return t;
}

/* v with prec decimals right-aligned in width, or "-" when it is not a number (a ratio
 * over nothing): text output never shows nan or inf. */
static const char *num(char *buf, size_t cap, int width, int prec, double v) {
    if (isfinite(v))
        snprintf(buf, cap, "%*.*f", width, prec, v);
    else
        snprintf(buf, cap, "%*s", width, "-");
    return buf;
}

void gp_trace_write_text(const gp_trace_report *rep, void *file, int width) {
    FILE *f = file;
    fprintf(f, "goodput trace: %zu rank(s), %.1f MB of trace JSON in %.2f s\n\n", rep->n_ranks,
            rep->bytes / 1e6, rep->seconds);
    gp_trace_text_runs(rep, f, width);
    fprintf(f, "Temporal breakdown (µs over the GPU span)\n");
    fprintf(f, "  %-5s %12s %12s %12s %12s %7s %7s %7s\n", "rank", "span", "idle", "compute",
            "non-compute", "idle%", "comp%", "other%");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        char b[7][32];
        fprintf(f, "  %-5d %s %s %s %s %s %s %s\n", r->rank, num(b[0], 32, 12, 0, r->span_us),
                num(b[1], 32, 12, 0, r->idle_us), num(b[2], 32, 12, 0, r->compute_us),
                num(b[3], 32, 12, 0, r->non_compute_us), num(b[4], 32, 7, 2, r->idle_pctg),
                num(b[5], 32, 7, 2, r->compute_pctg), num(b[6], 32, 7, 2, r->non_compute_pctg));
    }
    fprintf(f, "\nKernel time by class (all ranks)\n");
    double tot = type_total(rep);
    char lab[96];
    for (int m = 1; m < 8; m++)
        if (rep->type_present[m])
            fprintf(f, "  %-58s %12.0f µs %5.1f%%\n", type_label(m, lab, sizeof lab),
                    rep->type_us[m], tot > 0 ? rint(1000 * rep->type_us[m] / tot) / 10 : 0.0);
    fprintf(f, "\nIdle time per stream (host_wait / kernel_wait / other, µs)\n");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        for (size_t s = 0; s < r->n_streams; s++) {
            const gp_idle_stream *st = &r->streams[s];
            fprintf(f, "  rank %-3d stream %-4d %12.0f %12.0f %12.0f\n", r->rank, st->stream,
                    st->cat[0].raw_sum, st->cat[1].raw_sum, st->cat[2].raw_sum);
        }
    }
    fprintf(f, "\nComm/comp overlap and launches\n");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        char b[32];
        fprintf(f,
                "  rank %-3d overlap %s%%  launches %zu (cpu > 50 µs: %zu, delay > 100 µs: %zu)\n",
                r->rank, num(b, sizeof b, 6, 2, r->overlap_pctg), r->n_launches,
                r->n_launch_over_runtime, r->n_launch_over_delay);
    }
    gp_nsys_totals_text(rep, f, width);
    fprintf(f, "\nTop kernels\n");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        const gp_kernel_row *best[5] = {0};
        for (size_t k = 0; k < r->n_top; k++)
            for (int b = 0; b < 5; b++)
                if (!best[b] || r->top[k].sum > best[b]->sum) {
                    memmove(&best[b + 1], &best[b], (4 - b) * sizeof best[0]);
                    best[b] = &r->top[k];
                    break;
                }
        /* "  rank 0   COMMUNICATION       3999 µs  " is 40 columns: the name gets the rest,
         * shortened in the middle */
        char nm[256];
        for (int b = 0; b < 5 && best[b]; b++)
            fprintf(f, "  rank %-3d %-13s %10.0f µs  %s\n", r->rank,
                    gp_kernel_type_name(best[b]->kt), best[b]->sum,
                    gp_ellipsize(best[b]->name, width ? width - 40 : 0, nm, sizeof nm));
    }
    gp_trace_text_causes(rep, f, width);
    gp_trace_text_steps(rep, f, width);
    fprintf(f, "\nFindings (%zu, grouped by class and fix, ranked by GPU time wasted)\n",
            rep->n_findings);
    gp_group_text_opts go = {.unit_s = 1, .unit = "GPU-s", .fix = "fix", .width = width};
    gp_findings_print_grouped(f, rep->findings, rep->n_findings, &go);
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_trace_warnings *w = &rep->ranks[i].warn;
        char msg[1400];
        if (w->bad_duration || w->missing_fields || w->unknown_category) {
            snprintf(msg, sizeof msg,
                     "%s: %llu events with negative or absurd durations dropped (first at "
                     "traceEvents[%lld]), %llu missing fields, %llu unknown categories",
                     rep->ranks[i].path, (unsigned long long)w->bad_duration,
                     (long long)w->first_bad_idx, (unsigned long long)w->missing_fields,
                     (unsigned long long)w->unknown_category);
            gp_wrap_print(f, "\nwarning: ", 4, msg, width);
        }
        if (w->zero_duration) {
            snprintf(msg, sizeof msg,
                     "%s: %llu GPU events with zero duration (first at traceEvents[%lld])",
                     rep->ranks[i].path, (unsigned long long)w->zero_duration,
                     (long long)w->first_zero_idx);
            gp_wrap_print(f, "warning: ", 4, msg, width);
        }
        if (w->dup_steps) {
            snprintf(msg, sizeof msg,
                     "%s: %llu repeated ProfilerStep ids (first at traceEvents[%lld]), left out "
                     "of the per-step view",
                     rep->ranks[i].path, (unsigned long long)w->dup_steps,
                     (long long)w->first_dup_idx);
            gp_wrap_print(f, "warning: ", 4, msg, width);
        }
    }
}

static json_t *jnum(double v) {
    return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

void gp_trace_write_json(const gp_trace_report *rep, void *file) {
    json_t *root = json_object(), *ranks = json_array();
    char lab[96];
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        json_t *o = json_object();
        json_object_set_new(o, "rank", json_integer(r->rank));
        json_object_set_new(o, "path", json_string(r->path));
        json_object_set_new(o, "source", json_string(r->source));
        json_t *t = json_object();
        json_object_set_new(t, "idle_us", jnum(r->idle_us));
        json_object_set_new(t, "compute_us", jnum(r->compute_us));
        json_object_set_new(t, "non_compute_us", jnum(r->non_compute_us));
        json_object_set_new(t, "span_us", jnum(r->span_us));
        json_object_set_new(t, "idle_pctg", jnum(r->idle_pctg));
        json_object_set_new(t, "compute_pctg", jnum(r->compute_pctg));
        json_object_set_new(t, "non_compute_pctg", jnum(r->non_compute_pctg));
        json_object_set_new(o, "temporal", t);
        json_t *idle = json_array();
        static const char *cn[3] = {"host_wait", "kernel_wait", "other"};
        for (size_t s = 0; s < r->n_streams; s++)
            for (int c = 0; c < 3; c++) {
                const gp_idle_cat *ic = &r->streams[s].cat[c];
                if (!ic->present) continue;
                json_t *x = json_object();
                json_object_set_new(x, "stream", json_integer(r->streams[s].stream));
                json_object_set_new(x, "idle_category", json_string(cn[c]));
                json_object_set_new(x, "idle_time_us", jnum(ic->sum));
                json_object_set_new(x, "idle_time_ratio", jnum(ic->ratio));
                json_object_set_new(x, "count", jnum(ic->count));
                json_object_set_new(x, "mean", jnum(ic->mean));
                json_object_set_new(x, "std", jnum(ic->std));
                json_object_set_new(x, "min", jnum(ic->min));
                json_object_set_new(x, "p25", jnum(ic->q25));
                json_object_set_new(x, "p50", jnum(ic->q50));
                json_object_set_new(x, "p75", jnum(ic->q75));
                json_object_set_new(x, "max", jnum(ic->max));
                json_array_append_new(idle, x);
            }
        json_object_set_new(o, "idle_time", idle);
        json_t *k = json_array();
        for (size_t j = 0; j < r->n_kernels; j++) {
            const gp_kernel_row *kr = &r->kernels[j];
            json_t *x = json_object();
            json_object_set_new(x, "name", json_string(kr->name));
            json_object_set_new(x, "kernel_type", json_string(gp_kernel_type_name(kr->kt)));
            json_object_set_new(x, "sum_us", jnum(kr->sum));
            json_object_set_new(x, "max_us", jnum(kr->max));
            json_object_set_new(x, "min_us", jnum(kr->min));
            json_object_set_new(x, "stddev", jnum(kr->std));
            json_object_set_new(x, "mean_us", jnum(kr->mean));
            json_array_append_new(k, x);
        }
        json_object_set_new(o, "kernels", k);
        json_object_set_new(o, "comp_comm_overlap_pctg", jnum(r->overlap_pctg));
        json_t *l = json_object();
        json_object_set_new(l, "count", json_integer((json_int_t)r->n_launches));
        json_object_set_new(l, "cpu_duration_mean_us", jnum(r->launch_cpu_mean));
        json_object_set_new(l, "launch_delay_mean_us", jnum(r->launch_delay_mean));
        json_object_set_new(l, "over_runtime_cutoff",
                            json_integer((json_int_t)r->n_launch_over_runtime));
        json_object_set_new(l, "over_launch_delay_cutoff",
                            json_integer((json_int_t)r->n_launch_over_delay));
        json_object_set_new(o, "launch_stats", l);
        gp_trace_json_rank_extra(r, o);
        if (r->nsys) json_object_set_new(o, "nsys_totals", gp_nsys_totals_json(r->nsys));
        json_t *w = json_object();
        json_object_set_new(w, "bad_duration", json_integer((json_int_t)r->warn.bad_duration));
        json_object_set_new(w, "missing_fields", json_integer((json_int_t)r->warn.missing_fields));
        json_object_set_new(w, "unknown_category",
                            json_integer((json_int_t)r->warn.unknown_category));
        json_object_set_new(w, "zero_duration", json_integer((json_int_t)r->warn.zero_duration));
        json_object_set_new(w, "duplicate_steps", json_integer((json_int_t)r->warn.dup_steps));
        json_object_set_new(w, "first_bad_duration_index",
                            r->warn.first_bad_idx >= 0 ? json_integer(r->warn.first_bad_idx)
                                                       : json_null());
        json_object_set_new(w, "first_zero_duration_index",
                            r->warn.first_zero_idx >= 0 ? json_integer(r->warn.first_zero_idx)
                                                        : json_null());
        json_object_set_new(w, "first_duplicate_step_index",
                            r->warn.first_dup_idx >= 0 ? json_integer(r->warn.first_dup_idx)
                                                       : json_null());
        json_object_set_new(o, "warnings", w);
        json_array_append_new(ranks, o);
    }
    json_object_set_new(root, "ranks", ranks);
    json_object_set_new(root, "runs", gp_trace_json_runs(rep));
    json_t *types = json_array();
    double tot = type_total(rep);
    for (int m = 1; m < 8; m++)
        if (rep->type_present[m]) {
            json_t *x = json_object();
            json_object_set_new(x, "kernel_type", json_string(type_label(m, lab, sizeof lab)));
            json_object_set_new(x, "sum_us", jnum(rep->type_us[m]));
            json_object_set_new(x, "percentage",
                                jnum(tot > 0 ? rint(1000 * rep->type_us[m] / tot) / 10 : 0));
            json_array_append_new(types, x);
        }
    json_object_set_new(root, "kernel_types", types);
    json_t *fs = json_array();
    for (size_t i = 0; i < rep->n_findings; i++) {
        const gp_finding *x = &rep->findings[i];
        json_t *o = json_object();
        json_object_set_new(o, "class", json_string(gp_finding_class_name(x->cls)));
        json_object_set_new(o, "scope", json_string(gp_scope_name(x->scope)));
        json_object_set_new(o, "scope_id", json_string(x->scope_id));
        json_object_set_new(o, "wasted_gpu_s", jnum(x->wasted_gpu_s < 0 ? NAN : x->wasted_gpu_s));
        json_object_set_new(o, "summary", json_string(x->summary));
        json_object_set_new(o, "recommendation", json_string(x->recommendation));
        json_t *ev = json_array();
        for (int e = 0; e < x->n_evidence; e++) {
            json_t *y = json_object();
            json_object_set_new(y, "metric", json_string(x->evidence[e].metric));
            json_object_set_new(y, "value", jnum(x->evidence[e].value));
            json_object_set_new(y, "op", json_string(x->evidence[e].op));
            json_object_set_new(y, "threshold", jnum(x->evidence[e].threshold));
            json_object_set_new(y, "source", json_string(x->evidence[e].source));
            json_array_append_new(ev, y);
        }
        json_object_set_new(o, "evidence", ev);
        json_array_append_new(fs, o);
    }
    json_object_set_new(root, "findings", fs);
    json_object_set_new(root, "finding_groups",
                        gp_findings_groups_json(rep->findings, rep->n_findings));
    json_dumpf(root, file, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    fputc('\n', file);
    json_decref(root);
}

/* ---- HTML: findings first, then the HTA/TensorBoard-profiler views as inline SVG ---- */

#define MAX_CHART_RANKS 64

static void html_findings(const gp_trace_report *rep, FILE *f) {
    fputs("<h2 id=\"findings\">Findings</h2>\n", f);
    if (!rep->n_findings) fputs("<p>none</p>\n", f);
    /* One box per class (its first, highest-ranked finding), naming where else it holds,
     * so eight ranks with the same problem read as one problem. */
    for (size_t i = 0; i < rep->n_findings; i++) {
        const gp_finding *x = &rep->findings[i];
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = rep->findings[k].cls == x->cls;
        if (seen) continue;
        fprintf(f, "<div class=\"finding\"><b>%s</b> (", gp_finding_class_name(x->cls));
        gp_html_esc(f, x->scope_id);
        for (size_t k = i + 1; k < rep->n_findings; k++)
            if (rep->findings[k].cls == x->cls) {
                fputs(", ", f);
                gp_html_esc(f, rep->findings[k].scope_id);
            }
        fputs("): ", f);
        gp_finding_html_body(f, x);
        fputs("</div>\n", f);
    }
}

static void html_rank_charts(const gp_trace_report *rep, FILE *f) {
    size_t n = rep->n_ranks < MAX_CHART_RANKS ? rep->n_ranks : MAX_CHART_RANKS;
    char lab[MAX_CHART_RANKS][24];
    const char *labels[MAX_CHART_RANKS];
    double tb[MAX_CHART_RANKS * 3], ov[MAX_CHART_RANKS], ic[MAX_CHART_RANKS * GP_IC__COUNT];
    const char *ic_names[GP_IC__COUNT], *ic_col[GP_IC__COUNT];
    for (int c = 0; c < GP_IC__COUNT; c++) {
        ic_names[c] = gp_idle_cause_name(c);
        ic_col[c] = gp_svg_color((size_t)c + 2);
    }
    for (size_t i = 0; i < n; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        snprintf(lab[i], sizeof lab[i], "rank %d", r->rank);
        labels[i] = lab[i];
        tb[3 * i] = r->compute_us;
        tb[3 * i + 1] = r->non_compute_us;
        tb[3 * i + 2] = r->idle_us;
        ov[i] = r->overlap_pctg;
        for (int c = 0; c < GP_IC__COUNT; c++)
            ic[i * GP_IC__COUNT + c] = r->idle_cause_us[c] / 1e3;
    }
    static const char *const tb_names[] = {"compute", "non-compute", "idle"};
    static const char *const tb_col[] = {"#2a9d5c", "#e8912d", "#bbbbbb"};
    fputs("<h2 id=\"temporal\">Temporal breakdown per rank</h2>\n", f);
    gp_svg_bars_write(f, &(gp_svg_bars){"share of each rank's span: compute, non-compute, idle", n,
                                        3, labels, tb_names, tb_col, tb, 1, NULL, 0});
    fputs("<h2 id=\"overlap\">Communication overlapped by compute</h2>\n", f);
    static const char *const ov_names[] = {"comm/compute overlap"};
    static const char *const ov_col[] = {"#3b6fd1"};
    gp_svg_bars_write(f, &(gp_svg_bars){"percent of communication time overlapped by compute", n, 1,
                                        labels, ov_names, ov_col, ov, 0, "%", 0});
    fputs("<h2 id=\"idle-rank\">Idle time by cause per rank</h2>\n", f);
    gp_svg_bars_write(f, &(gp_svg_bars){"GPU idle time per rank, by host cause", n, GP_IC__COUNT,
                                        labels, ic_names, ic_col, ic, 0, "ms", 0});
}

static int cmp_krow_sum_desc(const void *a, const void *b) {
    const gp_kernel_row *x = *(const gp_kernel_row *const *)a,
                        *y = *(const gp_kernel_row *const *)b;
    if (x->sum != y->sum) return x->sum > y->sum ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void html_kernels(const gp_trace_report *rep, FILE *f) {
    char lab[8][96];
    const char *labels[8];
    double v[8];
    size_t n = 0;
    double tot = type_total(rep);
    for (int m = 1; m < 8; m++)
        if (rep->type_present[m]) {
            char full[96]; /* "A overlapping B" shortened to "A + B" to fit the label */
            type_label(m, full, sizeof full);
            lab[n][0] = 0;
            for (const char *p = full; *p;) {
                const char *q = strstr(p, " overlapping ");
                size_t k = q ? (size_t)(q - p) : strlen(p);
                snprintf(lab[n] + strlen(lab[n]), sizeof lab[n] - strlen(lab[n]), "%.*s%s", (int)k,
                         p, q ? " + " : "");
                p = q ? q + 13 : p + k;
            }
            labels[n] = lab[n];
            v[n++] = rep->type_us[m] / 1e3;
        }
    static const char *const nm[] = {"kernel time"};
    static const char *const col[] = {"#2a9d5c"};
    fprintf(f, "<h2 id=\"kernel-types\">Kernel time by type</h2>\n<p>%.1f ms in all.</p>\n",
            tot / 1e3);
    gp_svg_bars_write(
        f, &(gp_svg_bars){"GPU kernel time by type", n, 1, labels, nm, col, v, 0, "ms", 0});
    const gp_rank_result *r = rep->n_ranks ? &rep->ranks[0] : NULL;
    if (!r || !r->n_top) return;
    /* r->top is grouped by type and name (HTA's groupby order), not by time: rank it.
     * sum, mean and max are µs (HTA's "sum (us)"), shown as ms for the total. */
    size_t nt = r->n_top < 15 ? r->n_top : 15;
    const gp_kernel_row **ord = malloc(r->n_top * sizeof *ord);
    char(*kl)[64] = calloc(nt, sizeof *kl);
    const char **kls = calloc(nt, sizeof *kls);
    double *kv = calloc(nt, sizeof *kv);
    if (ord && kl && kls && kv) {
        for (size_t i = 0; i < r->n_top; i++)
            ord[i] = &r->top[i];
        qsort(ord, r->n_top, sizeof *ord, cmp_krow_sum_desc);
        for (size_t i = 0; i < nt; i++) {
            snprintf(kl[i], sizeof kl[i], "%.60s", ord[i]->name);
            kls[i] = kl[i];
            kv[i] = ord[i]->sum / 1e3;
        }
        fprintf(f, "<h2 id=\"top-kernels\">Top kernels (rank %d)</h2>\n", r->rank);
        gp_svg_bars_write(f, &(gp_svg_bars){"total time of the top kernels, ms", nt, 1, kls, nm,
                                            col, kv, 0, "ms", 0});
        fputs("<table><tr><th>kernel</th><th>type</th><th>total ms</th><th>calls</th>"
              "<th>mean µs</th><th>max µs</th></tr>\n",
              f);
        for (size_t i = 0; i < nt; i++) {
            /* mangled C++ names run to thousands of characters: cut, full on hover */
            fputs("<tr><td class=\"l\" title=\"", f);
            gp_html_esc(f, ord[i]->name);
            fputs("\">", f);
            char cut[124];
            size_t nl = strlen(ord[i]->name);
            snprintf(cut, sizeof cut, "%.*s%s", nl > 120 ? 117 : 120, ord[i]->name,
                     nl > 120 ? "..." : "");
            gp_html_esc(f, cut);
            double calls = ord[i]->mean > 0 ? ord[i]->sum / ord[i]->mean : NAN;
            fprintf(f,
                    "</td><td>%s</td><td>%.3f</td><td>%.0f</td><td>%.1f</td><td>%.1f</td></tr>\n",
                    gp_kernel_type_name(ord[i]->kt), ord[i]->sum / 1e3, calls, ord[i]->mean,
                    ord[i]->max);
        }
        fputs("</table>\n", f);
    }
    free(ord);
    free(kl);
    free(kls);
    free(kv);
}

static void html_step_charts(const gp_trace_report *rep, FILE *f) {
    size_t npts = 0, ns = rep->n_ranks < 16 ? rep->n_ranks : 16;
    for (size_t i = 0; i < ns; i++)
        if (rep->ranks[i].n_steps > npts) npts = rep->ranks[i].n_steps;
    if (!npts) return;
    double *y = malloc(ns * npts * sizeof *y);
    char(*nm)[24] = calloc(ns, sizeof *nm);
    const char **names = calloc(ns, sizeof *names);
    const gp_rank_result *r0 = NULL;
    if (y && nm && names) {
        for (size_t i = 0; i < ns; i++) {
            const gp_rank_result *r = &rep->ranks[i];
            if (!r0 && r->n_steps) r0 = r;
            snprintf(nm[i], sizeof nm[i], "rank %d", r->rank);
            names[i] = nm[i];
            for (size_t k = 0; k < npts; k++)
                y[i * npts + k] = k < r->n_steps ? (r->steps[k].t1 - r->steps[k].t0) / 1e3 : NAN;
        }
        fputs("<h2 id=\"step-time\">Step time</h2>\n", f);
        gp_svg_lines_write(f, &(gp_svg_lines){"step duration per rank", npts, ns, NULL, y, names,
                                              NULL, "step (in trace order)", "ms", 0});
    }
    if (r0) { /* idle by cause inside each step, for the first rank with steps */
        size_t n = r0->n_steps < 64 ? r0->n_steps : 64;
        const char *labels[64], *ic_names[GP_IC__COUNT], *ic_col[GP_IC__COUNT];
        double *v = calloc(n * GP_IC__COUNT, sizeof *v);
        for (int c = 0; c < GP_IC__COUNT; c++) {
            ic_names[c] = gp_idle_cause_name(c);
            ic_col[c] = gp_svg_color((size_t)c + 2);
        }
        if (v) {
            for (size_t k = 0; k < n; k++) {
                labels[k] = r0->steps[k].name;
                for (int c = 0; c < GP_IC__COUNT; c++)
                    v[k * GP_IC__COUNT + c] = r0->steps[k].idle_us[c] / 1e3;
            }
            fprintf(f, "<h2 id=\"idle-step\">Idle time by cause per step (rank %d)</h2>\n",
                    r0->rank);
            gp_svg_bars_write(f, &(gp_svg_bars){"GPU idle time inside each step, by cause", n,
                                                GP_IC__COUNT, labels, ic_names, ic_col, v, 0, "ms",
                                                0});
        }
        free(v);
    }
    free(y);
    free(nm);
    free(names);
}

#define MAX_TIMELINE_RANKS 8

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* One step per rank, kernels on their streams (analyze_timeline.c keeps the events). */
static void html_timeline(const gp_trace_report *rep, FILE *f) {
    static const char *const kt_names[] = {"computation", "communication", "memory", "other"};
    static const char *const kt_col[] = {"#2a9d5c", "#3b6fd1", "#e8912d", "#8e44ad"};
    int any = 0;
    for (size_t i = 0; i < rep->n_ranks && i < MAX_TIMELINE_RANKS; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        if (!r->n_tl) continue;
        if (!any)
            fputs("<h2 id=\"timeline\">Timeline of one step per rank</h2>\n<p>Kernels, copies "
                  "and collectives per CUDA stream during the median-length step (the whole "
                  "span when the trace has no steps). Scroll to zoom, drag to pan, hover for "
                  "the kernel.</p>\n",
                  f);
        any = 1;
        int32_t *streams = malloc(r->n_tl * sizeof *streams);
        gp_svg_span *sp = malloc(r->n_tl * sizeof *sp);
        char(*ll)[24] = NULL;
        const char **lanes = NULL;
        if (!streams || !sp) abort();
        for (size_t k = 0; k < r->n_tl; k++)
            streams[k] = r->tl[k].stream;
        qsort(streams, r->n_tl, sizeof *streams, cmp_i32);
        size_t nl = 0;
        for (size_t k = 0; k < r->n_tl; k++)
            if (!nl || streams[nl - 1] != streams[k]) streams[nl++] = streams[k];
        ll = calloc(nl, sizeof *ll);
        lanes = calloc(nl, sizeof *lanes);
        if (!ll || !lanes) abort();
        for (size_t l = 0; l < nl; l++) {
            snprintf(ll[l], sizeof ll[l], "stream %d", (int)streams[l]);
            lanes[l] = ll[l];
        }
        for (size_t k = 0; k < r->n_tl; k++) {
            const gp_tl_event *e = &r->tl[k];
            int32_t *p = bsearch(&e->stream, streams, nl, sizeof *streams, cmp_i32);
            sp[k] = (gp_svg_span){e->t0_us, e->t0_us + e->dur_us, (uint32_t)(p - streams), e->name,
                                  e->kt < 4 ? e->kt : 3};
        }
        fprintf(f, "<h3>rank %d: ", r->rank);
        gp_html_esc(f, r->tl_step[0] ? r->tl_step : "whole span");
        fprintf(f, " (%.3f ms, %zu GPU events", (r->tl_t1_us - r->tl_t0_us) / 1e3, r->n_tl);
        if (r->tl_dropped)
            fprintf(f, "; the %zu later ones are left out to bound the page", r->tl_dropped);
        fputs(")</h3>\n", f);
        char aria[64];
        snprintf(aria, sizeof aria, "timeline of rank %d, kernels per stream", r->rank);
        gp_svg_timeline_write(f, &(gp_svg_timeline){aria, nl, lanes, r->n_tl, sp, r->n_tl_names,
                                                    (const char *const *)r->tl_names, 4, kt_names,
                                                    kt_col, r->tl_t0_us, r->tl_t1_us, "µs"});
        free(streams);
        free(sp);
        free(ll);
        free(lanes);
    }
    if (any) gp_svg_timeline_script(f);
}

int gp_trace_write_html(const gp_trace_report *rep, const char *path, char *err, size_t errlen) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%s: cannot write", tmp);
        return -1;
    }
    fprintf(f,
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>goodput trace</title><style>"
            "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
            "table{font-size:13px}th{max-width:8em}td{white-space:nowrap}"
            "td.l{text-align:left;white-space:normal;min-width:9em;max-width:50em;overflow-wrap:"
            "anywhere}"
            "svg.chart{max-width:100%%;height:auto;display:block}"
            ".finding{border-left:4px solid #c0392b;padding:.2em .8em;margin:.6em 0;"
            "background:#fbf3f2}.fix{color:#245}</style></head><body>\n");
    fprintf(f,
            "<h1>goodput trace</h1><p>%zu rank(s), %.1f MB of trace JSON analysed in %.2f s.</p>\n",
            rep->n_ranks, rep->bytes / 1e6, rep->seconds);
    html_findings(rep, f);
    html_rank_charts(rep, f);
    fprintf(f, "<table><tr><th>rank</th><th>span µs</th><th>idle %%</th><th>compute "
               "%%</th><th>non-compute %%</th>"
               "<th>comm/comp overlap %%</th><th>launches</th></tr>\n");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        fprintf(f,
                "<tr><td>%d</td><td>%.0f</td><td>%.2f</td><td>%.2f</td><td>%.2f</td><td>%.2f</"
                "td><td>%zu</td></tr>\n",
                r->rank, r->span_us, r->idle_pctg, r->compute_pctg, r->non_compute_pctg,
                r->overlap_pctg, r->n_launches);
    }
    fputs("</table>\n", f);
    html_kernels(rep, f);
    html_step_charts(rep, f);
    html_timeline(rep, f);
    gp_trace_html_steps(rep, f);
    fputs("</body></html>\n", f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        snprintf(err, errlen, "%s: cannot write", path);
        return -1;
    }
    return 0;
}
