/* output.c: the cluster report as text, JSON (jansson) and a self-contained HTML page
 * (findings first, then plan vs usage, GPU-hours by user, the queue-wait CDF, utilization
 * and the GPUs over time, drawn with report/svg.h: no script, no external resource). The
 * HTML is written to a temp file in the target's folder, then renamed. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusters/cluster.h"
#include "report/findings_fmt.h"
#include "report/findings_group.h"
#include "util/term.h"
#include "report/svg.h"

#define TOP_N 10

static double h(double s) {
    return s / 3600.0;
}

/* Indices of the top rows of a dimension by allocated GPU-s (ties by name); n <= TOP_N. */
static int top_rows(const gp_cluster_report *r, int d, size_t *idx) {
    int n = 0;
    for (size_t i = 0; i < r->dim_names[d].n; i++) {
        double v = r->dim[d][i].allocated_gpu_s + r->dim[d][i].requested_gpu_s * 1e-9;
        int pos = n;
        while (pos > 0) {
            double pv = r->dim[d][idx[pos - 1]].allocated_gpu_s +
                        r->dim[d][idx[pos - 1]].requested_gpu_s * 1e-9;
            if (pv >= v) break;
            pos--;
        }
        if (pos >= TOP_N) continue;
        int last = n < TOP_N ? n : TOP_N - 1;
        for (int k = last; k > pos; k--)
            idx[k] = idx[k - 1];
        idx[pos] = i;
        if (n < TOP_N) n++;
    }
    return n;
}

static double pct(double a, double b) {
    return b > 0 ? 100 * a / b : 0;
}

/* used GPU-h (busy=0) or busy% (busy=1) of an aggregate, or "-" when no unit of it had
 * measured usage: a trace that does not measure usage must not read as "used 0.0". */
static const char *num_or_dash(char *buf, size_t n, const gp_cl_agg *a, int busy) {
    if (!(a->measured_alloc_gpu_s > 0))
        snprintf(buf, n, "-");
    else if (busy)
        snprintf(buf, n, "%.1f", pct(a->used_gpu_s, a->measured_alloc_gpu_s));
    else
        snprintf(buf, n, "%.1f", h(a->used_gpu_s));
    return buf;
}

void gp_cl_write_text(const gp_cluster_report *r, FILE *f) {
    gp_cl_write_text_w(r, f, GP_TEXT_WIDTH);
}

void gp_cl_write_text_w(const gp_cluster_report *r, FILE *f, int width) {
    const int W = width;
    char nm[256];
    gp_wrap_printf(f, 4, W, "goodput cluster report: %s (%s)", r->format, r->path);
    for (int i = 0; i < r->n_tables; i++)
        fprintf(f, "  read %-28s %lld rows\n", r->tables[i].name, (long long)r->tables[i].rows);
    if (r->n_units > 0 || !r->has_ts)
        fprintf(f, "  %lld %s with a run interval", (long long)r->n_units, r->unit_name);
    else /* per-GPU samples only (GenAI 2026): units are seen in samples, not run intervals */
        fprintf(f, "  %lld %s seen in per-GPU samples", (long long)r->ts_units, r->unit_name);
    if (r->n_skipped) fprintf(f, ", %lld without one", (long long)r->n_skipped);
    if (r->n_jobs) fprintf(f, ", %lld jobs", (long long)r->n_jobs);
    if (r->span_s > 0) fprintf(f, ", span %.1f h", r->span_s / 3600);
    fprintf(f, "\n\n");
    gp_style st = gp_style_for(f);
    char head[48];
    snprintf(head, sizeof head, "%sVERDICT:%s ", st.bold, st.off);
    /* the escape codes take no columns: indent by what shows */
    gp_wrap_print(f, head, 9, r->verdict, W > 0 ? W + (int)(strlen(head) - 9) : 0);
    fputc('\n', f);
    const gp_cl_agg *t = &r->total;
    if (t->n > 0) {
        char used[32], busy[32];
        char how[96];
        if (t->measured_alloc_gpu_s > 0)
            snprintf(how, sizeof how, "(measured on %.1f allocated: %s%% busy)",
                     h(t->measured_alloc_gpu_s), num_or_dash(busy, sizeof busy, t, 1));
        else
            snprintf(how, sizeof how, "(this trace does not measure GPU usage)");
        gp_wrap_printf(f, 2, W, "GPU-hours: requested %.1f, allocated %.1f, used %s %s",
                       h(t->requested_gpu_s), h(t->allocated_gpu_s),
                       num_or_dash(used, sizeof used, t, 0), how);
        if (r->n_cpu_only)
            gp_wrap_printf(
                f, 2, W,
                "CPU-only %s (no GPU asked, kept out of GPU-hours and GPU queue wait): %lld ran, "
                "%lld never ran; queue wait p50 %.0f s, p90 %.0f s",
                r->unit_name, (long long)r->n_cpu_only, (long long)r->n_cpu_only_pending,
                gp_cl_wait_quantile(&r->wait_cpu_only, 0.5),
                gp_cl_wait_quantile(&r->wait_cpu_only, 0.9));
        if (r->capacity_gpus > 0)
            gp_wrap_printf(f, 2, W,
                           "capacity: %.0f GPUs (%.1f GPU-hours over the span; %.1f%% allocated)",
                           r->capacity_gpus, h(r->capacity_gpus * r->span_s),
                           pct(t->allocated_gpu_s, r->capacity_gpus * r->span_s));
        for (int d = 0; d < GP_CL_DIM__COUNT; d++) {
            if (r->dim_names[d].n == 0) continue;
            size_t idx[TOP_N];
            int n = top_rows(r, d, idx);
            fprintf(f, "\nby %s (top %d of %zu by allocated GPU-hours)\n", gp_cl_dim_names[d], n,
                    r->dim_names[d].n);
            fprintf(f, "  %-34s %10s %12s %12s %12s %7s\n", gp_cl_dim_names[d], "units",
                    "requested_h", "allocated_h", "used_h", "busy%");
            for (int k = 0; k < n; k++) {
                const gp_cl_agg *a = &r->dim[d][idx[k]];
                char used[32], busy[32];
                fprintf(f, "  %-34s %10lld %12.1f %12.1f %12s %7s\n",
                        gp_ellipsize(r->dim_names[d].s[idx[k]], W > 0 ? 34 : 0, nm, sizeof nm),
                        (long long)a->n, h(a->requested_gpu_s), h(a->allocated_gpu_s),
                        num_or_dash(used, sizeof used, a, 0), num_or_dash(busy, sizeof busy, a, 1));
            }
        }
    }
    double tot = 0;
    for (int b = 0; b < GP_CL_UTIL_BINS; b++)
        tot += r->util_gpu_s[b];
    if (tot > 0) {
        fprintf(f, "\nmeasured utilization, weighted by GPU-hours\n");
        for (int b = 0; b < GP_CL_UTIL_BINS; b++) {
            int bar = (int)lround(40 * r->util_gpu_s[b] / tot);
            fprintf(f, "  %3d-%3d%%  %10.1f GPU-h %5.1f%%  %.*s\n", b * 10, b * 10 + 10,
                    h(r->util_gpu_s[b]), pct(r->util_gpu_s[b], tot), bar,
                    "########################################");
        }
    }
    if (r->n_plan_measured > 0)
        fprintf(f, "\nrequest exceeds measured use: %lld of %lld %s (%.1f%%)\n",
                (long long)r->n_plan_exceeds, (long long)r->n_plan_measured, r->unit_name,
                pct((double)r->n_plan_exceeds, (double)r->n_plan_measured));
    if (r->has_ts) fputc('\n', f);
    if (r->has_ts)
        gp_wrap_printf(
            f, 2, W,
            "time series: %lld samples (%lld NA), interval %.0f s: online %.1f GPU-h, busy "
            "%.1f GPU-h (%.1f%%), "
            "idle-but-allocated %.1f GPU-h, under 50%% %.1f GPU-h",
            (long long)r->ts_samples, (long long)r->ts_na, r->ts_interval_s, h(r->ts_online_gpu_s),
            h(r->ts_busy_gpu_s), pct(r->ts_busy_gpu_s, r->ts_online_gpu_s), h(r->ts_idle_gpu_s),
            h(r->ts_low_gpu_s));
    if (r->n_idle_units_with_mem)
        gp_wrap_printf(
            f, 4, W,
            "  %lld containers stayed idle the whole trace while holding %.1f GiB of GPU "
            "memory on average",
            (long long)r->n_idle_units_with_mem, r->mem_idle_bytes_mean / 1073741824.0);
    if (r->wait_all.n > 0) {
        fprintf(f, "\nqueue wait (s) by GPUs requested\n  %-12s %10s %10s %10s %10s %10s\n", "gpus",
                "jobs", "mean", "p50", "p90", "max");
        for (int b = 0; b < GP_CL_COUNT_BUCKETS; b++) {
            const gp_cl_wait *w = &r->wait_count[b];
            if (!w->n) continue;
            fprintf(f, "  %-12s %10lld %10.0f %10.0f %10.0f %10.0f\n", gp_cl_count_bucket_names[b],
                    (long long)w->n, w->sum_s / (double)w->n, gp_cl_wait_quantile(w, 0.5),
                    gp_cl_wait_quantile(w, 0.9), w->max_s);
        }
        fprintf(f, "queue wait (s) by GPU type\n");
        for (size_t i = 0; i < r->wait_type_names.n; i++) {
            const gp_cl_wait *w = &r->wait_type[i];
            fprintf(f, "  %-12s %10lld %10.0f %10.0f %10.0f %10.0f\n",
                    gp_ellipsize(r->wait_type_names.s[i], W > 0 ? 12 : 0, nm, sizeof nm),
                    (long long)w->n, w->sum_s / (double)w->n, gp_cl_wait_quantile(w, 0.5),
                    gp_cl_wait_quantile(w, 0.9), w->max_s);
        }
    }
    fputc('\n', f);
    gp_wrap_printf(
        f, 2, W,
        "ineffective occupancy: %lld %s held GPUs and never ran (%.1f GPU-h); %lld waited "
        "and never ran "
        "(%.1f GPUs asked); %lld failed (%.1f GPU-h)",
        (long long)r->n_held_never_ran, r->unit_name, h(r->held_never_ran_gpu_s),
        (long long)r->n_waited_never_ran, r->waited_never_ran_gpus, (long long)r->n_failed,
        h(r->failed_gpu_s));
    if (r->has_sharing)
        gp_wrap_printf(
            f, 2, W,
            "GPU sharing: %lld of %lld GPU pods share a GPU; shared %.1f GPU-h, whole %.1f "
            "GPU-h; stranded in "
            "partly used GPUs >= %.1f GPU-h; peak allocated %.1f GPUs, peak GPUs needed %.0f "
            "of %.0f",
            (long long)r->n_shared_units, (long long)r->n_gpu_units, h(r->shared_gpu_s),
            h(r->whole_gpu_s), h(r->stranded_gpu_s), r->peak_alloc_gpus, r->peak_gpus_needed,
            r->capacity_gpus);
    if (r->sched_gap_gpu_s > 0)
        fprintf(f, "spare GPU-hours while jobs waited: %.1f\n", h(r->sched_gap_gpu_s));
    fprintf(f, "\nfindings (%d, grouped by class and fix, ranked by GPU-hours wasted)\n",
            r->n_findings);
    gp_group_text_opts go = {
        .unit_s = 3600, .unit = "GPU-h", .evidence = 1, .fix = "do", .width = W};
    gp_findings_print_grouped(f, r->findings, (size_t)r->n_findings, &go);
}

static json_t *agg_json(const gp_cl_agg *a) {
    int m = a->measured_alloc_gpu_s > 0; /* usage unknown: null, never 0 */
    return json_pack("{s:I,s:f,s:f,s:o,s:f,s:o}", "units", (json_int_t)a->n, "requested_gpu_h",
                     h(a->requested_gpu_s), "allocated_gpu_h", h(a->allocated_gpu_s), "used_gpu_h",
                     m ? json_real(h(a->used_gpu_s)) : json_null(), "measured_allocated_gpu_h",
                     h(a->measured_alloc_gpu_s), "busy_pct",
                     m ? json_real(pct(a->used_gpu_s, a->measured_alloc_gpu_s)) : json_null());
}

static json_t *wait_json(const gp_cl_wait *w) {
    return json_pack("{s:I,s:f,s:f,s:f,s:f}", "jobs", (json_int_t)w->n, "mean_s",
                     w->n ? w->sum_s / (double)w->n : 0, "p50_s", gp_cl_wait_quantile(w, 0.5),
                     "p90_s", gp_cl_wait_quantile(w, 0.9), "max_s", w->max_s);
}

/* The series (one row per hour bin: 71,684 rows x 4 numbers on openb x20) is written by hand
 * instead of through a jansson tree: allocating and dumping ~290k json_real nodes was half
 * of `cluster openb2023 --json` (bench/RESULTS.md, "cluster readers"). The text is byte for
 * byte what json_dumps(JSON_INDENT(1) | JSON_REAL_PRECISION(10)) wrote: jansson's real
 * format ("%.10g", ".0" added to integers, the exponent without '+' or leading zeros), and a
 * row with a non-finite value left out (json_pack refused it). */
#define SERIES_PLACEHOLDER "@@gp-series@@"

static size_t real_str(char *b, size_t cap, double v) {
    /* whole numbers under 1e10 (times, zero bins) print as their digits and ".0" under
     * "%.10g": written directly, as printf's float path was a third of openb --json */
    if (fabs(v) < 1e10 && v == (double)(int64_t)v && !(v == 0 && signbit(v))) {
        char d[16];
        int k = 0;
        int64_t x = (int64_t)v;
        uint64_t u = x < 0 ? (uint64_t)(-x) : (uint64_t)x;
        do {
            d[k++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        size_t n = 0;
        if (x < 0) b[n++] = '-';
        while (k)
            b[n++] = d[--k];
        memcpy(b + n, ".0", 3);
        return n + 2;
    }
    int n = snprintf(b, cap, "%.10g", v);
    if (n < 0 || (size_t)n >= cap - 3) return 0;
    if (!strchr(b, '.') && !strchr(b, 'e')) {
        memcpy(b + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(b, 'e');
    if (e) {
        char *start = e + 1, *end = e + 2;
        if (*start == '-') start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, (size_t)(b + n - end) + 1);
            n -= (int)(end - start);
        }
    }
    return (size_t)n;
}

static char *splice_series(char *doc, const gp_cl_series *s) {
    const char *key = "\"series\": \"" SERIES_PLACEHOLDER "\"";
    char *at = strstr(doc, key);
    if (!at) return doc;
    size_t head = (size_t)(at - doc) + strlen("\"series\": ");
    const char *tail = at + strlen(key);
    size_t tail_len = strlen(tail);
    /* one row: "  [\n" + 4 x ("   " + number <= 24 + ",\n") + "  ],\n" */
    size_t cap = head + tail_len + 16 + s->n * 140;
    char *out = malloc(cap);
    if (!out) {
        free(doc);
        return NULL;
    }
    memcpy(out, doc, head);
    size_t n = head, rows = 0;
    out[n++] = '[';
    for (size_t i = 0; i < s->n; i++) {
        double v[4] = {(double)(s->b0 + (int64_t)i) * s->bin_s, s->alloc_gpu_s[i] / s->bin_s,
                       s->busy_gpu_s[i] / s->bin_s, s->wait_gpu_s[i] / s->bin_s};
        if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]) || !isfinite(v[3])) continue;
        memcpy(out + n, rows ? ",\n  [" : "\n  [", rows ? 5 : 4);
        n += rows ? 5 : 4;
        for (int k = 0; k < 4; k++) {
            memcpy(out + n, k ? ",\n   " : "\n   ", k ? 5 : 4);
            n += k ? 5 : 4;
            n += real_str(out + n, 32, v[k]);
        }
        memcpy(out + n, "\n  ]", 4);
        n += 4;
        rows++;
    }
    if (rows) {
        memcpy(out + n, "\n ", 2);
        n += 2;
    }
    out[n++] = ']';
    memcpy(out + n, tail, tail_len + 1);
    free(doc);
    return out;
}

char *gp_cl_json(const gp_cluster_report *r) {
    json_t *o = json_object();
    json_object_set_new(o, "format", json_string(r->format));
    json_object_set_new(o, "path", json_string(r->path));
    json_object_set_new(o, "unit", json_string(r->unit_name));
    json_t *tabs = json_object();
    for (int i = 0; i < r->n_tables; i++)
        json_object_set_new(tabs, r->tables[i].name, json_integer(r->tables[i].rows));
    json_object_set_new(o, "rows", tabs);
    json_object_set_new(o, "units", json_integer(r->n_units));
    json_object_set_new(o, "units_without_interval", json_integer(r->n_skipped));
    json_object_set_new(o, "jobs", json_integer(r->n_jobs));
    json_object_set_new(o, "span_s", json_real(r->span_s));
    json_object_set_new(o, "capacity_gpus", json_real(r->capacity_gpus));
    json_object_set_new(o, "total", agg_json(&r->total));
    json_t *by = json_object();
    for (int d = 0; d < GP_CL_DIM__COUNT; d++) {
        json_t *m = json_object();
        for (size_t i = 0; i < r->dim_names[d].n; i++)
            json_object_set_new(m, r->dim_names[d].s[i], agg_json(&r->dim[d][i]));
        json_object_set_new(by, gp_cl_dim_names[d], m);
    }
    json_object_set_new(o, "by", by);
    json_t *hist = json_array();
    for (int b = 0; b < GP_CL_UTIL_BINS; b++)
        json_array_append_new(hist, json_pack("{s:f,s:f,s:f,s:I}", "util_from", b / 10.0, "util_to",
                                              (b + 1) / 10.0, "gpu_h", h(r->util_gpu_s[b]), "units",
                                              (json_int_t)r->util_n[b]));
    json_object_set_new(o, "utilization_histogram", hist);
    json_object_set_new(o, "request_exceeds_use",
                        json_pack("{s:I,s:I}", "units", (json_int_t)r->n_plan_exceeds, "measured",
                                  (json_int_t)r->n_plan_measured));
    json_object_set_new(o, "idle_allocated_gpu_h",
                        json_real(h(r->has_ts ? r->ts_idle_gpu_s : r->idle_alloc_gpu_s)));
    json_object_set_new(o, "under_50pct_gpu_h",
                        json_real(h(r->has_ts ? r->ts_low_gpu_s : r->under_batched_gpu_s)));
    json_t *wait = json_object();
    json_object_set_new(wait, "all", wait_json(&r->wait_all));
    json_t *wc = json_object();
    for (int b = 0; b < GP_CL_COUNT_BUCKETS; b++)
        if (r->wait_count[b].n)
            json_object_set_new(wc, gp_cl_count_bucket_names[b], wait_json(&r->wait_count[b]));
    json_object_set_new(wait, "by_gpus", wc);
    json_t *wt = json_object();
    for (size_t i = 0; i < r->wait_type_names.n; i++)
        json_object_set_new(wt, r->wait_type_names.s[i], wait_json(&r->wait_type[i]));
    json_object_set_new(wait, "by_gpu_type", wt);
    json_object_set_new(o, "queue_wait", wait);
    if (r->n_cpu_only)
        json_object_set_new(o, "cpu_only",
                            json_pack("{s:I,s:I,s:o}", "ran", (json_int_t)r->n_cpu_only,
                                      "never_ran", (json_int_t)r->n_cpu_only_pending, "queue_wait",
                                      wait_json(&r->wait_cpu_only)));
    json_object_set_new(o, "ineffective",
                        json_pack("{s:I,s:f,s:I,s:f,s:I,s:f}", "held_never_ran",
                                  (json_int_t)r->n_held_never_ran, "held_never_ran_gpu_h",
                                  h(r->held_never_ran_gpu_s), "waited_never_ran",
                                  (json_int_t)r->n_waited_never_ran, "waited_never_ran_gpus",
                                  r->waited_never_ran_gpus, "failed", (json_int_t)r->n_failed,
                                  "failed_gpu_h", h(r->failed_gpu_s)));
    if (r->has_sharing)
        json_object_set_new(o, "sharing",
                            json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f}", "shared_pods",
                                      (json_int_t)r->n_shared_units, "gpu_pods",
                                      (json_int_t)r->n_gpu_units, "shared_gpu_h",
                                      h(r->shared_gpu_s), "whole_gpu_h", h(r->whole_gpu_s),
                                      "stranded_gpu_h", h(r->stranded_gpu_s), "peak_allocated_gpus",
                                      r->peak_alloc_gpus, "peak_gpus_needed", r->peak_gpus_needed));
    if (r->has_ts)
        json_object_set_new(
            o, "time_series",
            json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:f}", "samples",
                      (json_int_t)r->ts_samples, "na", (json_int_t)r->ts_na, "interval_s",
                      r->ts_interval_s, "online_gpu_h", h(r->ts_online_gpu_s), "busy_gpu_h",
                      h(r->ts_busy_gpu_s), "idle_allocated_gpu_h", h(r->ts_idle_gpu_s),
                      "under_50pct_gpu_h", h(r->ts_low_gpu_s), "units", (json_int_t)r->ts_units,
                      "idle_units_with_memory", (json_int_t)r->n_idle_units_with_mem,
                      "idle_units_mean_memory_bytes", r->mem_idle_bytes_mean));
    json_object_set_new(o, "scheduling_gap_gpu_h", json_real(h(r->sched_gap_gpu_s)));
    json_object_set_new(
        o, "series_columns",
        json_pack("[s,s,s,s]", "t_s", "allocated_gpus", "busy_gpus", "waiting_gpus"));
    json_object_set_new(o, "series_bin_s", json_real(r->series.bin_s));
    /* The series is written by write_series below and spliced in at this placeholder. */
    json_object_set_new(o, "series", json_string(SERIES_PLACEHOLDER));
    json_t *fs = json_array();
    for (int i = 0; i < r->n_findings; i++) {
        const gp_finding *x = &r->findings[i];
        json_t *ev = json_array();
        for (int e = 0; e < x->n_evidence; e++)
            json_array_append_new(
                ev, json_pack("{s:s,s:f,s:s,s:f,s:s}", "metric", x->evidence[e].metric, "value",
                              x->evidence[e].value, "op", x->evidence[e].op, "threshold",
                              x->evidence[e].threshold, "source", x->evidence[e].source));
        json_array_append_new(fs, json_pack("{s:s,s:s,s:s,s:f,s:f,s:s,s:s,s:o}", "class",
                                            gp_finding_class_name(x->cls), "scope",
                                            gp_scope_name(x->scope), "scope_id", x->scope_id,
                                            "wasted_gpu_h", h(x->wasted_gpu_s), "confidence",
                                            x->confidence, "summary", x->summary, "recommendation",
                                            x->recommendation, "evidence", ev));
    }
    json_object_set_new(o, "findings", fs);
    json_object_set_new(o, "verdict", json_string(r->verdict));
    char *s = json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(o);
    return s ? splice_series(s, &r->series) : NULL;
}

/* ---- HTML: findings first, then the charts, on the shared SVG module (report/svg.h) ---- */

static void html_findings(const gp_cluster_report *r, FILE *f) {
    fputs("<h2 id=\"findings\">Findings</h2>\n", f);
    if (!r->n_findings) fputs("<p>none</p>\n", f);
    for (int i = 0; i < r->n_findings; i++) {
        const gp_finding *x = &r->findings[i];
        fprintf(f, "<div class=\"finding\"><b>%s</b> (%s", gp_finding_class_name(x->cls),
                gp_scope_name(x->scope));
        if (x->wasted_gpu_s >= 0) fprintf(f, ", %.1f GPU-h wasted", h(x->wasted_gpu_s));
        fputs("): ", f);
        gp_finding_html_body(f, x);
        fputs("</div>\n", f);
    }
}

/* The dimension GPU-hours are charted by: user when the trace names users, else the next
 * one it names (group, workload, GPU type). -1 when it names none. */
static int chart_dim(const gp_cluster_report *r) {
    static const int pref[] = {GP_CL_DIM_USER, GP_CL_DIM_GROUP, GP_CL_DIM_WORKLOAD, GP_CL_DIM_TYPE};
    for (size_t k = 0; k < sizeof pref / sizeof pref[0]; k++)
        if (r->dim_names[pref[k]].n) return pref[k];
    return -1;
}

static void html_by_dim(const gp_cluster_report *r, FILE *f) {
    int d = chart_dim(r);
    fputs("<h2 id=\"gpu-hours-by\">GPU-hours by user</h2>\n", f);
    if (d < 0) {
        fputs("<p>This trace names no users, groups, workloads or GPU types.</p>\n", f);
        return;
    }
    size_t idx[TOP_N];
    int n = top_rows(r, d, idx);
    if (d != GP_CL_DIM_USER)
        fprintf(f, "<p>This trace names no users: by %s instead.</p>\n", gp_cl_dim_names[d]);
    fprintf(f, "<p>Top %d of %zu by allocated GPU-hours.</p>\n", n, r->dim_names[d].n);
    const char *labels[TOP_N];
    double v[TOP_N];
    for (int k = 0; k < n; k++) {
        labels[k] = r->dim_names[d].s[idx[k]];
        v[k] = h(r->dim[d][idx[k]].allocated_gpu_s);
    }
    static const char *const nm[] = {"allocated GPU-hours"};
    static const char *const col[] = {"#3b6fd1"};
    gp_svg_bars_write(f, &(gp_svg_bars){"allocated GPU-hours of the top rows", (size_t)n, 1, labels,
                                        nm, col, v, 0, "GPU-h", 0});
}

/* Requested vs allocated vs used GPU-hours: the plan against what the GPUs did. Used is
 * unknown (drawn as "unknown", never 0) where the trace does not measure usage. */
static void html_plan(const gp_cluster_report *r, FILE *f) {
    fputs("<h2 id=\"plan-usage\">Plan vs usage</h2>\n", f);
    const char *labels[TOP_N + 1];
    char lab[TOP_N + 1][80];
    double v[(TOP_N + 1) * 3];
    size_t n = 0;
    if (r->total.n > 0) {
        const gp_cl_agg *a = &r->total;
        snprintf(lab[n], sizeof lab[n], "all %s", r->unit_name);
        v[3 * n] = h(a->requested_gpu_s);
        v[3 * n + 1] = h(a->allocated_gpu_s);
        v[3 * n + 2] = a->measured_alloc_gpu_s > 0 ? h(a->used_gpu_s) : NAN;
        labels[n] = lab[n];
        n++;
        int d = chart_dim(r);
        size_t idx[TOP_N];
        int m = d < 0 ? 0 : top_rows(r, d, idx);
        for (int k = 0; k < m && n < TOP_N + 1; k++) {
            const gp_cl_agg *x = &r->dim[d][idx[k]];
            snprintf(lab[n], sizeof lab[n], "%s", r->dim_names[d].s[idx[k]]);
            v[3 * n] = h(x->requested_gpu_s);
            v[3 * n + 1] = h(x->allocated_gpu_s);
            v[3 * n + 2] = x->measured_alloc_gpu_s > 0 ? h(x->used_gpu_s) : NAN;
            labels[n] = lab[n];
            n++;
        }
    } else if (r->has_ts) { /* per-GPU samples only: online is what was held */
        snprintf(lab[n], sizeof lab[n], "sampled GPUs");
        v[0] = NAN;
        v[1] = h(r->ts_online_gpu_s);
        v[2] = h(r->ts_busy_gpu_s);
        labels[n] = lab[n];
        n++;
    }
    if (!n) {
        fputs("<p>This trace has no GPU requests or allocations.</p>\n", f);
        return;
    }
    if (!(r->total.measured_alloc_gpu_s > 0) && !r->has_ts)
        fputs("<p>This trace does not measure GPU usage: used GPU-hours are unknown.</p>\n", f);
    if (r->n_plan_measured > 0)
        fprintf(f, "<p>The request exceeds measured use for %lld of %lld %s (%.1f%%).</p>\n",
                (long long)r->n_plan_exceeds, (long long)r->n_plan_measured, r->unit_name,
                pct((double)r->n_plan_exceeds, (double)r->n_plan_measured));
    static const char *const nm[] = {"requested", "allocated", "used (measured)"};
    static const char *const col[] = {"#7f8c8d", "#3b6fd1", "#2a9d5c"};
    gp_svg_bars_write(f, &(gp_svg_bars){"requested, allocated and used GPU-hours", n, 3, labels, nm,
                                        col, v, 0, "GPU-h", 1});
}

/* Empirical CDF of queue waits from the log histogram, overall and per GPU-count bucket.
 * x: the upper edge of each bin (s, log scale); waits under 1 s sit at 1 s. */
static void html_wait_cdf(const gp_cluster_report *r, FILE *f) {
    fputs("<h2 id=\"queue-wait\">Queue wait</h2>\n", f);
    if (r->wait_all.n == 0) {
        fputs("<p>This trace has no queue waits (no submission and start times).</p>\n", f);
        return;
    }
    fprintf(f,
            "<p>%lld %s waited: p50 %.0f s, p90 %.0f s, max %.0f s. Fraction of %s started "
            "within x seconds (waits under 1 s count at 1 s).</p>\n",
            (long long)r->wait_all.n, r->unit_name, gp_cl_wait_quantile(&r->wait_all, 0.5),
            gp_cl_wait_quantile(&r->wait_all, 0.9), r->wait_all.max_s, r->unit_name);
    const gp_cl_wait *w[1 + GP_CL_COUNT_BUCKETS];
    const char *names[1 + GP_CL_COUNT_BUCKETS];
    char nb[GP_CL_COUNT_BUCKETS][48];
    size_t ns = 0;
    w[ns] = &r->wait_all;
    names[ns++] = "all";
    for (int b = 0; b < GP_CL_COUNT_BUCKETS; b++)
        if (r->wait_count[b].n) {
            snprintf(nb[b], sizeof nb[b], "%s GPUs (%lld)", gp_cl_count_bucket_names[b],
                     (long long)r->wait_count[b].n);
            w[ns] = &r->wait_count[b];
            names[ns++] = nb[b];
        }
    int last = 0;
    for (int b = 0; b < GP_CL_WAIT_BINS; b++)
        if (r->wait_all.hist[b]) last = b;
    size_t np = (size_t)last + 1;
    double *x = malloc(np * sizeof *x), *y = malloc(ns * np * sizeof *y);
    if (x && y) {
        for (size_t b = 0; b < np; b++)
            x[b] = exp2((double)b / 16.0);
        for (size_t s = 0; s < ns; s++) {
            double acc = 0;
            for (size_t b = 0; b < np; b++) {
                acc += w[s]->hist[b];
                y[s * np + b] = acc / (double)w[s]->n;
            }
        }
        gp_svg_lines_write(f,
                           &(gp_svg_lines){"cumulative share of queue waits", np, ns, x, y, names,
                                           NULL, "queue wait (s, log scale)", "share started", 1});
    }
    free(x);
    free(y);
}

static void html_util(const gp_cluster_report *r, FILE *f) {
    double tot = 0, v[GP_CL_UTIL_BINS];
    char lab[GP_CL_UTIL_BINS][16];
    const char *labels[GP_CL_UTIL_BINS];
    for (int b = 0; b < GP_CL_UTIL_BINS; b++) {
        tot += r->util_gpu_s[b];
        v[b] = h(r->util_gpu_s[b]);
        snprintf(lab[b], sizeof lab[b], "%d-%d%%", b * 10, b * 10 + 10);
        labels[b] = lab[b];
    }
    if (tot <= 0) return;
    fputs("<h2 id=\"utilization\">Measured utilization, weighted by GPU-hours</h2>\n", f);
    static const char *const nm[] = {"allocated GPU-hours"};
    static const char *const col[] = {"#2a9d5c"};
    gp_svg_bars_write(f, &(gp_svg_bars){"allocated GPU-hours by measured utilization decile",
                                        GP_CL_UTIL_BINS, 1, labels, nm, col, v, 0, "GPU-h", 0});
}

/* Allocated, busy and waiting GPUs per bin (and capacity), averaged down to <= 400 points. */
static void html_series(const gp_cluster_report *r, FILE *f) {
    const gp_cl_series *s = &r->series;
    if (s->n < 2) return;
    size_t step = (s->n + 399) / 400, np = (s->n + step - 1) / step;
    const double *cols[3] = {s->alloc_gpu_s, s->busy_gpu_s, s->wait_gpu_s};
    int busy_known = r->total.measured_alloc_gpu_s > 0 || r->has_ts;
    size_t nser = 3; /* capacity is stated in the text: a line at 6000 GPUs flattens the rest */
    double *x = malloc(np * sizeof *x), *y = malloc(nser * np * sizeof *y);
    if (x && y) {
        for (size_t p = 0; p < np; p++) {
            x[p] = (double)(p * step) * s->bin_s / 3600.0;
            for (int c = 0; c < 3; c++) {
                double v = 0;
                size_t k = 0;
                for (size_t i = p * step; i < s->n && i < (p + 1) * step; i++, k++)
                    v += cols[c][i];
                /* busy GPUs of a trace that does not measure usage: unknown, not 0 */
                int unknown = (c == 1 && !busy_known) || (c == 2 && r->wait_all.n == 0);
                y[(size_t)c * np + p] = unknown ? NAN : (k ? v / (double)k / s->bin_s : 0);
            }
        }
        static const char *const names[] = {"allocated GPUs", "busy GPUs (measured)",
                                            "waiting GPUs (queued demand)"};
        static const char *const colors[] = {"#3b6fd1", "#2a9d5c", "#c0392b"};
        fputs("<h2 id=\"series\">Allocated, busy and waiting GPUs over time</h2>\n", f);
        if (r->capacity_gpus > 0) fprintf(f, "<p>Capacity: %.0f GPUs.</p>\n", r->capacity_gpus);
        if (!busy_known)
            fputs("<p>Busy GPUs are unknown: this trace does not measure usage.</p>\n", f);
        if (r->wait_all.n == 0)
            fputs("<p>Waiting GPUs are unknown: this trace has no queue times.</p>\n", f);
        gp_svg_lines_write(f, &(gp_svg_lines){"GPUs over time", np, nser, x, y, names, colors,
                                              "hours from the trace start", "GPUs", 0});
    }
    free(x);
    free(y);
}

int gp_cl_write_html(const gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s", tmp);
        return -1;
    }
    fputs("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>goodput cluster "
          "report</title><style>"
          "body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
          "td:first-child{text-align:left}svg.chart{max-width:100%;height:auto;display:block}"
          ".verdict{font-size:1.1em;background:#f3f3d0;padding:.6em}"
          ".finding{border-left:4px solid #c0392b;padding:.2em .8em;margin:.6em 0;"
          "background:#fbf3f2}.fix{color:#245}</style></head><body>\n",
          f);
    fputs("<h1>Cluster report: ", f);
    gp_html_esc(f, r->format);
    fputs("</h1><p>", f);
    gp_html_esc(f, r->path);
    fprintf(f, ": %lld %s", (long long)(r->n_units ? r->n_units : r->ts_units), r->unit_name);
    if (r->span_s > 0) fprintf(f, " over %.1f h", r->span_s / 3600);
    fputs("</p><p class=\"verdict\">", f);
    gp_html_esc(f, r->verdict);
    fputs("</p>\n", f);
    html_findings(r, f);
    html_plan(r, f);
    html_by_dim(r, f);
    html_wait_cdf(r, f);
    html_util(r, f);
    html_series(r, f);
    fputs("<h2 id=\"gpu-hours\">GPU-hours</h2><table><tr><th></th><th>units</th>"
          "<th>requested</th><th>allocated</th><th>used</th><th>busy %</th></tr>\n",
          f);
    const gp_cl_agg *t = &r->total;
    char used[32], busy[32];
    fprintf(f,
            "<tr><td>total</td><td>%lld</td><td>%.1f</td><td>%.1f</td><td>%s</td><td>%s</td></"
            "tr>\n",
            (long long)t->n, h(t->requested_gpu_s), h(t->allocated_gpu_s),
            num_or_dash(used, sizeof used, t, 0), num_or_dash(busy, sizeof busy, t, 1));
    for (int d = 0; d < GP_CL_DIM__COUNT; d++) {
        size_t idx[TOP_N];
        int n = top_rows(r, d, idx);
        for (int k = 0; k < n; k++) {
            const gp_cl_agg *a = &r->dim[d][idx[k]];
            fprintf(f, "<tr><td>%s: ", gp_cl_dim_names[d]);
            gp_html_esc(f, r->dim_names[d].s[idx[k]]);
            fprintf(f, "</td><td>%lld</td><td>%.1f</td><td>%.1f</td><td>%s</td><td>%s</td></tr>\n",
                    (long long)a->n, h(a->requested_gpu_s), h(a->allocated_gpu_s),
                    num_or_dash(used, sizeof used, a, 0), num_or_dash(busy, sizeof busy, a, 1));
        }
    }
    fputs("</table>\n</body></html>\n", f);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write %s", path);
        return -1;
    }
    return 0;
}
