/* output.c: the cluster report as text, JSON (jansson) and self-contained HTML with inline
 * SVG charts. The HTML is written to a temp file in the target's folder, then renamed. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusters/cluster.h"

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
    fprintf(f, "goodput cluster report: %s (%s)\n", r->format, r->path);
    for (int i = 0; i < r->n_tables; i++)
        fprintf(f, "  read %-28s %lld rows\n", r->tables[i].name, (long long)r->tables[i].rows);
    if (r->n_units > 0 || !r->has_ts)
        fprintf(f, "  %lld %s with a run interval", (long long)r->n_units, r->unit_name);
    else /* per-GPU samples only (GenAI 2026): units are seen in samples, not run intervals */
        fprintf(f, "  %lld %s seen in per-GPU samples", (long long)r->ts_units, r->unit_name);
    if (r->n_skipped) fprintf(f, ", %lld without one", (long long)r->n_skipped);
    if (r->n_jobs) fprintf(f, ", %lld jobs", (long long)r->n_jobs);
    if (r->span_s > 0) fprintf(f, ", span %.1f h", r->span_s / 3600);
    fprintf(f, "\n\nVERDICT: %s\n\n", r->verdict);
    const gp_cl_agg *t = &r->total;
    if (t->n > 0) {
        char used[32], busy[32];
        fprintf(f, "GPU-hours: requested %.1f, allocated %.1f, used %s", h(t->requested_gpu_s),
                h(t->allocated_gpu_s), num_or_dash(used, sizeof used, t, 0));
        if (t->measured_alloc_gpu_s > 0)
            fprintf(f, " (measured on %.1f allocated: %s%% busy)\n", h(t->measured_alloc_gpu_s),
                    num_or_dash(busy, sizeof busy, t, 1));
        else
            fprintf(f, " (this trace does not measure GPU usage)\n");
        if (r->n_cpu_only)
            fprintf(
                f,
                "CPU-only %s (no GPU asked, kept out of GPU-hours and GPU queue wait): %lld ran, "
                "%lld never ran; queue wait p50 %.0f s, p90 %.0f s\n",
                r->unit_name, (long long)r->n_cpu_only, (long long)r->n_cpu_only_pending,
                gp_cl_wait_quantile(&r->wait_cpu_only, 0.5),
                gp_cl_wait_quantile(&r->wait_cpu_only, 0.9));
        if (r->capacity_gpus > 0)
            fprintf(f, "capacity: %.0f GPUs (%.1f GPU-hours over the span; %.1f%% allocated)\n",
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
                fprintf(f, "  %-34.34s %10lld %12.1f %12.1f %12s %7s\n", r->dim_names[d].s[idx[k]],
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
    if (r->has_ts)
        fprintf(f,
                "\ntime series: %lld samples (%lld NA), interval %.0f s: online %.1f GPU-h, busy "
                "%.1f GPU-h (%.1f%%), "
                "idle-but-allocated %.1f GPU-h, under 50%% %.1f GPU-h\n",
                (long long)r->ts_samples, (long long)r->ts_na, r->ts_interval_s,
                h(r->ts_online_gpu_s), h(r->ts_busy_gpu_s),
                pct(r->ts_busy_gpu_s, r->ts_online_gpu_s), h(r->ts_idle_gpu_s), h(r->ts_low_gpu_s));
    if (r->n_idle_units_with_mem)
        fprintf(f,
                "  %lld containers stayed idle the whole trace while holding %.1f GiB of GPU "
                "memory on average\n",
                (long long)r->n_idle_units_with_mem, r->mem_idle_bytes_mean / 1073741824.0);
    if (r->wait_all.n > 0) {
        fprintf(f, "\nqueue wait (s) by GPUs requested\n  %-8s %10s %10s %10s %10s %10s\n", "gpus",
                "jobs", "mean", "p50", "p90", "max");
        for (int b = 0; b < GP_CL_COUNT_BUCKETS; b++) {
            const gp_cl_wait *w = &r->wait_count[b];
            if (!w->n) continue;
            fprintf(f, "  %-8s %10lld %10.0f %10.0f %10.0f %10.0f\n", gp_cl_count_bucket_names[b],
                    (long long)w->n, w->sum_s / (double)w->n, gp_cl_wait_quantile(w, 0.5),
                    gp_cl_wait_quantile(w, 0.9), w->max_s);
        }
        fprintf(f, "queue wait (s) by GPU type\n");
        for (size_t i = 0; i < r->wait_type_names.n; i++) {
            const gp_cl_wait *w = &r->wait_type[i];
            fprintf(f, "  %-8.8s %10lld %10.0f %10.0f %10.0f %10.0f\n", r->wait_type_names.s[i],
                    (long long)w->n, w->sum_s / (double)w->n, gp_cl_wait_quantile(w, 0.5),
                    gp_cl_wait_quantile(w, 0.9), w->max_s);
        }
    }
    fprintf(f,
            "\nineffective occupancy: %lld %s held GPUs and never ran (%.1f GPU-h); %lld waited "
            "and never ran "
            "(%.1f GPUs asked); %lld failed (%.1f GPU-h)\n",
            (long long)r->n_held_never_ran, r->unit_name, h(r->held_never_ran_gpu_s),
            (long long)r->n_waited_never_ran, r->waited_never_ran_gpus, (long long)r->n_failed,
            h(r->failed_gpu_s));
    if (r->has_sharing)
        fprintf(f,
                "GPU sharing: %lld of %lld GPU pods share a GPU; shared %.1f GPU-h, whole %.1f "
                "GPU-h; stranded in "
                "partly used GPUs >= %.1f GPU-h; peak allocated %.1f GPUs, peak GPUs needed %.0f "
                "of %.0f\n",
                (long long)r->n_shared_units, (long long)r->n_gpu_units, h(r->shared_gpu_s),
                h(r->whole_gpu_s), h(r->stranded_gpu_s), r->peak_alloc_gpus, r->peak_gpus_needed,
                r->capacity_gpus);
    if (r->sched_gap_gpu_s > 0)
        fprintf(f, "spare GPU-hours while jobs waited: %.1f\n", h(r->sched_gap_gpu_s));
    fprintf(f, "\nfindings (%d)\n", r->n_findings);
    for (int i = 0; i < r->n_findings; i++) {
        const gp_finding *x = &r->findings[i];
        fprintf(f, "  [%s] %s wasted %.1f GPU-h\n    %s\n", gp_finding_class_name(x->cls),
                gp_scope_name(x->scope), h(x->wasted_gpu_s), x->summary);
        for (int e = 0; e < x->n_evidence; e++)
            fprintf(f, "    evidence: %s = %.4g %s %.4g (%s)\n", x->evidence[e].metric,
                    x->evidence[e].value, x->evidence[e].op, x->evidence[e].threshold,
                    x->evidence[e].source);
        fprintf(f, "    do: %s\n", x->recommendation);
    }
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
    json_t *series = json_array();
    for (size_t i = 0; i < r->series.n; i++) {
        const gp_cl_series *s = &r->series;
        json_array_append_new(series,
                              json_pack("[f,f,f,f]", (double)(s->b0 + (int64_t)i) * s->bin_s,
                                        s->alloc_gpu_s[i] / s->bin_s, s->busy_gpu_s[i] / s->bin_s,
                                        s->wait_gpu_s[i] / s->bin_s));
    }
    json_object_set_new(
        o, "series_columns",
        json_pack("[s,s,s,s]", "t_s", "allocated_gpus", "busy_gpus", "waiting_gpus"));
    json_object_set_new(o, "series_bin_s", json_real(r->series.bin_s));
    json_object_set_new(o, "series", series);
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
    return s;
}

static void esc(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

/* Line chart of up to 3 series columns, downsampled to at most 400 points. */
static void svg_series(FILE *f, const gp_cluster_report *r) {
    const gp_cl_series *s = &r->series;
    if (s->n < 2) return;
    size_t step = (s->n + 399) / 400, np = (s->n + step - 1) / step;
    double maxv = r->capacity_gpus;
    const double *cols[3] = {s->alloc_gpu_s, s->busy_gpu_s, s->wait_gpu_s};
    const char *color[3] = {"#3366cc", "#109618", "#dc3912"};
    const char *name[3] = {"allocated GPUs", "busy GPUs", "waiting GPUs"};
    for (int c = 0; c < 3; c++)
        for (size_t p = 0; p < np; p++) {
            double v = 0;
            size_t k = 0;
            for (size_t i = p * step; i < s->n && i < (p + 1) * step; i++, k++)
                v += cols[c][i];
            v = k ? v / (double)k / s->bin_s : 0;
            if (v > maxv) maxv = v;
        }
    if (maxv <= 0) return;
    const double W = 900, H = 260, L = 50, B = 20;
    fprintf(f,
            "<svg width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\" "
            "font-size=\"11\">\n",
            W + 10, H + 30);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#999\"/>", L, H - B,
            W, H - B);
    fprintf(f, "<text x=\"2\" y=\"12\">%.0f GPUs</text><text x=\"2\" y=\"%.0f\">0</text>\n", maxv,
            H - B);
    if (r->capacity_gpus > 0) {
        double y = (H - B) - (H - B - 10) * r->capacity_gpus / maxv;
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#000\" "
                "stroke-dasharray=\"4\"/>"
                "<text x=\"%.0f\" y=\"%.1f\">capacity</text>\n",
                L, y, W, y, W - 60, y - 3);
    }
    for (int c = 0; c < 3; c++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                color[c]);
        for (size_t p = 0; p < np; p++) {
            double v = 0;
            size_t k = 0;
            for (size_t i = p * step; i < s->n && i < (p + 1) * step; i++, k++)
                v += cols[c][i];
            v = k ? v / (double)k / s->bin_s : 0;
            fprintf(f, "%.1f,%.1f ", L + (W - L) * (double)p / (double)(np - 1),
                    (H - B) - (H - B - 10) * v / maxv);
        }
        fprintf(f, "\"/><text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", L + 160.0 * c, H + 5,
                color[c], name[c]);
    }
    fprintf(f, "</svg>\n");
}

static void svg_hist(FILE *f, const gp_cluster_report *r) {
    double tot = 0, mx = 0;
    for (int b = 0; b < GP_CL_UTIL_BINS; b++) {
        tot += r->util_gpu_s[b];
        if (r->util_gpu_s[b] > mx) mx = r->util_gpu_s[b];
    }
    if (tot <= 0) return;
    fprintf(f, "<svg width=\"520\" height=\"230\" xmlns=\"http://www.w3.org/2000/svg\" "
               "font-size=\"11\">\n");
    for (int b = 0; b < GP_CL_UTIL_BINS; b++) {
        double hh = 180 * r->util_gpu_s[b] / mx;
        fprintf(f,
                "<rect x=\"%d\" y=\"%.1f\" width=\"40\" height=\"%.1f\" "
                "fill=\"%s\"><title>%d-%d%%: %.1f GPU-h</title></rect>"
                "<text x=\"%d\" y=\"215\">%d%%</text><text x=\"%d\" y=\"%.1f\">%.0f%%</text>\n",
                20 + b * 48, 195 - hh, hh, b < 5 ? "#dc3912" : "#3366cc", b * 10, b * 10 + 10,
                h(r->util_gpu_s[b]), 25 + b * 48, b * 10, 22 + b * 48, 190 - hh,
                pct(r->util_gpu_s[b], tot));
    }
    fprintf(f, "</svg>\n");
}

int gp_cl_write_html(const gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s", tmp);
        return -1;
    }
    fprintf(
        f, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>goodput cluster "
           "report</title><style>"
           "body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}"
           "td,th{border:1px solid #ccc;padding:2px "
           "6px;text-align:right}td:first-child{text-align:left}"
           ".verdict{font-size:1.2em;background:#f3f3d0;padding:.6em}</style></head><body>\n");
    fprintf(f, "<h1>Cluster report: ");
    esc(f, r->format);
    fprintf(f, "</h1><p>");
    esc(f, r->path);
    fprintf(f, "</p><p class=\"verdict\">");
    esc(f, r->verdict);
    fprintf(f, "</p>\n<h2>GPU-hours</h2><table><tr><th></th><th>units</th><th>requested</"
               "th><th>allocated</th><th>used</th>"
               "<th>busy %%</th></tr>\n");
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
            esc(f, r->dim_names[d].s[idx[k]]);
            fprintf(f, "</td><td>%lld</td><td>%.1f</td><td>%.1f</td><td>%s</td><td>%s</td></tr>\n",
                    (long long)a->n, h(a->requested_gpu_s), h(a->allocated_gpu_s),
                    num_or_dash(used, sizeof used, a, 0), num_or_dash(busy, sizeof busy, a, 1));
        }
    }
    fprintf(f, "</table>\n<h2>Measured utilization, weighted by GPU-hours</h2>\n");
    svg_hist(f, r);
    fprintf(f, "<h2>Allocated, busy and waiting GPUs over time</h2>\n");
    svg_series(f, r);
    fprintf(f, "<h2>Findings</h2><ul>\n");
    for (int i = 0; i < r->n_findings; i++) {
        const gp_finding *x = &r->findings[i];
        fprintf(f, "<li><b>%s</b> (%.1f GPU-h): ", gp_finding_class_name(x->cls),
                h(x->wasted_gpu_s));
        esc(f, x->summary);
        fprintf(f, "<br><i>");
        esc(f, x->recommendation);
        fprintf(f, "</i></li>\n");
    }
    fprintf(f, "</ul></body></html>\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        snprintf(err, errlen, "cannot write %s", path);
        return -1;
    }
    return 0;
}
