/* html_report.c: `goodput report --html FILE`: one self-contained page for people.
 *
 * No JavaScript and no external files: styles are inline, charts are inline SVG drawn here
 * (a stacked goodput/badput bar per job, and per job the GPU signals with the progress rate
 * on one time axis). Series come from the same server-side downsampling as the API
 * (serve/api.c, through gp_serve_render on an offline server), so the page and the
 * dashboard show the same numbers. Written to FILE.tmp and renamed, so a reader never sees
 * half a page. */
#include "report/rollup_note.h"
#include "report/html_report.h"
#include "engine/results/job_results.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/findings_fmt.h"
#include "engine/accounting/job_summary.h"
#include "engine/pipeline/pipeline.h"
#include "report/job_report.h"
#include "serve/serve.h"

static const char *BUCKET_COLOR[GP_B__COUNT] = {"#16a34a", "#7c3aed", "#2563eb",
                                                "#f59e0b", "#0d9488", "#dc2626",
                                                "#db2777", "#9ca3af", "#a16207"};

static void esc(FILE *f, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

static void pct(FILE *f, double v) {
    if (v < 0 || !isfinite(v))
        fputs("–", f);
    else
        fprintf(f, "%.1f%%", 100 * v);
}

static void bucket_bar(FILE *f, const gp_goodput *g, int width) {
    fprintf(f, "<svg width=\"%d\" height=\"14\" role=\"img\" aria-label=\"badput breakdown\">",
            width);
    double x = 0;
    for (int k = 0; k < GP_B__COUNT && g->allocated_gpu_s > 0; k++) {
        double w = width * g->bucket_gpu_s[k] / g->allocated_gpu_s;
        if (w <= 0) continue;
        fprintf(f,
                "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"14\" fill=\"%s\"><title>%s "
                "%.1f%%</title></rect>",
                x, w, BUCKET_COLOR[k], gp_bucket_name((gp_bucket)k),
                100 * g->bucket_gpu_s[k] / g->allocated_gpu_s);
        x += w;
    }
    fputs("</svg>", f);
}

static void polyline(FILE *f, json_t *t, json_t *v, double t0, double t1, double vmax, int W, int H,
                     const char *color) {
    /* Breaks the line at nulls: unknown is a gap, not a zero. */
    int open = 0;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_number(x)) {
            if (open) fputs("\"/>", f);
            open = 0;
            continue;
        }
        double tx = json_number_value(json_array_get(t, i));
        double px = 40 + (W - 90) * (tx - t0) / (t1 - t0 > 0 ? t1 - t0 : 1);
        double py = 10 + (H - 30) * (1 - json_number_value(x) / (vmax > 0 ? vmax : 1));
        if (!open)
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.3\" points=\"",
                    color);
        fprintf(f, "%.1f,%.1f ", px, py);
        open = 1;
    }
    if (open) fputs("\"/>", f);
}

static void signals_chart(FILE *f, json_t *series) {
    const int W = 900, H = 220;
    json_t *t = json_object_get(series, "t"), *sig = json_object_get(series, "signals");
    json_t *rate = json_object_get(json_object_get(series, "progress"), "rate_per_s");
    const char *unit =
        json_string_value(json_object_get(json_object_get(series, "progress"), "unit"));
    size_t n = json_array_size(t);
    if (n < 2) return;
    double t0 = json_number_value(json_array_get(t, 0)),
           t1 = json_number_value(json_array_get(t, n - 1));
    double rmax = 0;
    size_t i;
    json_t *x;
    json_array_foreach(rate, i, x) if (json_is_number(x) && json_number_value(x) > rmax) rmax =
        json_number_value(x);
    fprintf(f,
            "<svg viewBox=\"0 0 %d %d\" width=\"100%%\" role=\"img\" aria-label=\"GPU signals and "
            "progress\">",
            W, H);
    for (int g = 0; g <= 4; g++) {
        double y = 10 + (H - 30) * g / 4.0;
        fprintf(f, "<line x1=\"40\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e7eb\"/>", W - 50,
                y, y);
        fprintf(f, "<text x=\"36\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%d%%</text>",
                y + 3, 100 - 25 * g);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\">%.4g</text>", W - 46, y + 3,
                rmax * (4 - g) / 4);
    }
    fprintf(f,
            "<text x=\"40\" y=\"%d\" font-size=\"10\">%.0f min</text><text x=\"%d\" y=\"%d\" "
            "font-size=\"10\" "
            "text-anchor=\"end\">%.0f min</text>",
            H - 4, 0.0, W - 50, H - 4, (t1 - t0) / 60);
    static const char *names[] = {"gpu_util", "sm_active", "tensor_active", "dram_active",
                                  "mem_used_ratio"};
    static const char *colors[] = {"#2563eb", "#16a34a", "#7c3aed", "#f59e0b", "#6b7280"};
    for (int k = 0; k < 5; k++)
        polyline(f, t, json_object_get(sig, names[k]), t0, t1, 1, W, H, colors[k]);
    polyline(f, t, rate, t0, t1, rmax, W, H, "#111827");
    fputs("</svg><div class=\"legend\">", f);
    for (int k = 0; k < 5; k++)
        fprintf(f, "<span><i style=\"background:%s\"></i>%s</span>", colors[k], names[k]);
    fprintf(f, "<span><i style=\"background:#111827\"></i>progress (%s/s, right axis)</span></div>",
            unit ? unit : "units");
}

static void findings_html(FILE *f, json_t *arr) {
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        fputs("<div class=\"finding\"><b>", f);
        esc(f, json_string_value(json_object_get(x, "class")));
        fputs("</b> ", f);
        /* badput explained and headroom side by side, never summed (model/finding.h) */
        json_t *w = json_object_get(json_object_get(x, "badput_gpu_s"), "total");
        json_t *h = json_object_get(x, "headroom_gpu_s");
        fputs("<span class=\"muted\">badput ", f);
        if (json_is_number(w))
            fprintf(f, "%.2f GPU-h", json_number_value(w) / 3600);
        else
            fputs("- GPU-h", f);
        fputs(" · headroom ", f);
        if (json_is_number(h))
            fprintf(f, "%.2f GPU-h", json_number_value(h) / 3600);
        else
            fputs("- GPU-h", f);
        fputs("</span><div>", f);
        esc(f, json_string_value(json_object_get(x, "summary")));
        fputs("</div>", f);
        const char *cf = json_string_value(json_object_get(x, "counterfactual"));
        if (cf) {
            fputs("<div class=\"muted\">Counterfactual: ", f);
            esc(f, cf);
            fputs("</div>", f);
        }
        json_t *ev = json_object_get(x, "evidence");
        if (json_array_size(ev)) {
            fputs("<table><tr><th>evidence</th><th>value</th><th></th><th>threshold</"
                  "th><th>source</th></tr>",
                  f);
            size_t k;
            json_t *e;
            json_array_foreach(ev, k, e) {
                fputs("<tr><td>", f);
                esc(f, json_string_value(json_object_get(e, "metric")));
                fprintf(f, "</td><td>%.4g</td><td>",
                        json_number_value(json_object_get(e, "value")));
                esc(f, json_string_value(json_object_get(e, "op")));
                fprintf(f, "</td><td>%.4g</td><td>",
                        json_number_value(json_object_get(e, "threshold")));
                esc(f, json_string_value(json_object_get(e, "source")));
                fputs("</td></tr>", f);
            }
            fputs("</table>", f);
        }
        fputs("<div><b>Fix:</b> ", f);
        esc(f, json_string_value(json_object_get(x, "recommendation")));
        fputs("</div></div>", f);
    }
}

static const char *CSS =
    "body{font-family:system-ui,sans-serif;color:#1d2330;max-width:1000px;margin:20px "
    "auto;padding:0 16px;font-size:14px}"
    "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px "
    "6px;border-bottom:1px solid #e5e7eb}"
    "th{font-size:12px;color:#6b7280}.muted{color:#6b7280}.legend{font-size:12px;margin:4px 0}"
    ".legend span{margin-right:12px}.legend "
    "i{display:inline-block;width:10px;height:10px;margin-right:4px}"
    ".finding{border-left:4px solid #d97706;padding:6px 10px;margin:8px 0;background:#fffbeb}"
    "h2{margin-top:28px;border-bottom:1px solid #e5e7eb}";

/* A pipeline job's stages, bottleneck, queue-length chart and sizing (engine/pipeline/pipeline.h).
 */
static void pipeline_html(FILE *f, gp_store *s, const char *job_id) {
    gp_pipeline p;
    char err[256];
    if (gp_pipeline_load(s, job_id, NULL, &p, err, sizeof err) == 1) {
        gp_pipe_sizing sz;
        gp_pipeline_size(&p, 0, 0, &sz);
        gp_pipeline_print_html(&p, &sz, NULL, f);
    }
    gp_pipeline_free(&p);
}

static int write_page(FILE *f, gp_store *s, gp_serve *srv, const char *db, const char *job,
                      const gp_slo *slo) {
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (job) {
        jobs = calloc(1, sizeof *jobs);
        if (!jobs || gp_store_get_job(s, job, jobs) <= 0) {
            free(jobs);
            return -2;
        }
        nj = 1;
    } else if (gp_store_list_jobs(s, &jobs, &nj) != 0)
        return -1;
    fprintf(f,
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>goodput "
            "report</title>"
            "<meta name=\"viewport\" content=\"width=device-width, "
            "initial-scale=1\"><style>%s</style></head><body>",
            CSS);
    fputs("<h1>goodput report</h1><p class=\"muted\">Store ", f);
    esc(f, db);
    fputs(". Goodput is productive GPU-time over allocated GPU-time; the badput buckets say where "
          "the rest "
          "went, and sum with goodput to 100%.</p><div class=\"legend\">",
          f);
    for (int k = 0; k < GP_B__COUNT; k++)
        fprintf(f, "<span><i style=\"background:%s\"></i>%s</span>", BUCKET_COLOR[k],
                gp_bucket_name((gp_bucket)k));
    fputs("</div><table><tr><th>job</th><th>user</th><th>kind</th><th>GPUs</th><th>GPU-h</"
          "th><th>goodput</th>"
          "<th>mean util</th><th>badput</th></tr>",
          f);
    gp_job_summary *sum = calloc(nj ? nj : 1, sizeof *sum);
    char *ok = calloc(nj ? nj : 1, 1);
    if (!sum || !ok) {
        free(sum), free(ok), free(jobs);
        return -1;
    }
    gp_summary_opts so = {0};
    if (slo) so.slo = *slo;
    /* ended jobs' stored summaries where they are what computing gives (job_results.h) */
    gp_job_results *stored = gp_job_results_open(s, &so, NULL);
    for (size_t i = 0; i < nj; i++) {
        char err[256];
        ok[i] = gp_job_results_summary(stored, jobs[i].id, &sum[i]) == 1 ||
                gp_job_summary_compute(s, jobs[i].id, &so, &sum[i], err, sizeof err) == 0;
        if (!ok[i]) continue;
        fprintf(f, "<tr><td><a href=\"#job-%zu\">", i);
        esc(f, jobs[i].id);
        fputs("</a></td><td>", f);
        esc(f, jobs[i].user);
        fprintf(f, "</td><td>%s</td><td>%d</td><td>%.2f</td><td>", gp_job_kind_name(sum[i].gp.kind),
                sum[i].n_gpus, sum[i].allocated_gpu_h);
        pct(f, sum[i].gp.goodput);
        fputs("</td><td>", f);
        pct(f, sum[i].mean_gpu_util);
        fputs("</td><td>", f);
        bucket_bar(f, &sum[i].gp, 220);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    gp_job_results_close(stored);
    for (size_t i = 0; i < nj; i++) {
        if (!ok[i]) continue;
        const gp_job_summary *js = &sum[i];
        fprintf(f, "<h2 id=\"job-%zu\">", i);
        esc(f, js->job.id);
        fputs(" <span class=\"muted\">", f);
        esc(f, js->job.name);
        fprintf(f, " · %s</span></h2><p>%d GPU(s), %.2f GPU-h allocated; goodput ",
                gp_job_kind_name(js->gp.kind), js->n_gpus, js->allocated_gpu_h);
        pct(f, js->gp.goodput);
        if (js->queue_wait_s >= 0) fprintf(f, "; queued %.0f s", js->queue_wait_s);
        if (js->time_to_ready_s >= 0)
            fprintf(f, "; ready %.0f s after allocation", js->time_to_ready_s);
        if (js->energy_kwh >= 0) fprintf(f, "; %.2f kWh", js->energy_kwh);
        if (js->events_pruned_ns > 0) /* only its stored result is known */
            fputs("; events deleted by retention, its stored result is shown", f);
        else if (gp_job_hourly_until_ns(s, js->job.id) >= 0) /* report/rollup_note.h */
            fputs("; telemetry partly from 1-hour rollups (1-hour resolution)", f);
        fputs(".</p><table><tr>", f);
        for (int k = 0; k < GP_B__COUNT; k++)
            fprintf(f, "<th>%s</th>", gp_bucket_name((gp_bucket)k));
        fputs("</tr><tr>", f);
        for (int k = 0; k < GP_B__COUNT; k++)
            fprintf(f, "<td>%.1f%%</td>",
                    js->gp.allocated_gpu_s > 0
                        ? 100 * js->gp.bucket_gpu_s[k] / js->gp.allocated_gpu_s
                        : 0);
        fputs("</tr></table>", f);
        char path[GP_JOB_ID_MAX * 3 + 32], *body = NULL;
        size_t len;
        char enc[GP_JOB_ID_MAX * 3 + 1];
        size_t k = 0;
        for (const char *p = js->job.id; *p && k + 4 < sizeof enc; p++) {
            unsigned char ch = (unsigned char)*p;
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                strchr("-_.~", ch))
                enc[k++] = (char)ch;
            else
                k += (size_t)snprintf(enc + k, sizeof enc - k, "%%%02X", ch);
        }
        enc[k] = 0;
        snprintf(path, sizeof path, "/api/v1/jobs/%s/series", enc);
        if (gp_serve_render(srv, "GET", path, "points=300", &body, &len, NULL) == 200) {
            json_t *series = json_loadb(body, len, 0, NULL);
            if (series) signals_chart(f, series);
            json_decref(series);
        }
        free(body);
        gp_finding *fs = NULL;
        size_t nf = 0;
        if (gp_store_list_findings(s, js->job.id, &fs, &nf) == 0 && nf) {
            json_t *arr = gp_findings_json(fs, nf, 0);
            fputs("<h3>Findings</h3>", f);
            findings_html(f, arr);
            json_decref(arr);
        }
        free(fs);
        pipeline_html(f, s, js->job.id);
    }
    fputs("<p class=\"muted\">Generated by goodput report --html.</p></body></html>\n", f);
    free(sum), free(ok), free(jobs);
    return 0;
}

int gp_report_html(const char *db, const char *job, const gp_slo *slo, const char *path, char *err,
                   size_t errlen) {
    gp_store *s;
    if (gp_store_open(db, GP_STORE_READONLY, &s, err, errlen) != 0) return -1;
    gp_serve *srv;
    gp_serve_opts so = {.listen = "none", .db_path = db};
    if (gp_serve_start(&so, &srv, err, errlen) != 0) {
        gp_store_close(s);
        return -1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = -1;
    if (!f)
        snprintf(err, errlen, "%s: cannot write", tmp);
    else {
        rc = write_page(f, s, srv, db, job, slo);
        if (fclose(f) != 0 && rc == 0) rc = -1;
        if (rc == -2)
            snprintf(err, errlen, "job '%s' is not in %s", job, db);
        else if (rc != 0)
            snprintf(err, errlen, "%s: cannot write the report (%s)", tmp, gp_store_errmsg(s));
        if (rc == 0 && rename(tmp, path) != 0) {
            snprintf(err, errlen, "cannot rename %s to %s", tmp, path);
            rc = -1;
        }
        if (rc != 0) remove(tmp);
    }
    gp_serve_stop(srv);
    gp_store_close(s);
    return rc == 0 ? 0 : -1;
}
