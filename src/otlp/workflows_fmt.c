/* workflows_fmt.c: the workflow report as text, JSON and a self-contained HTML page with
 * waterfalls (see workflows.h). Unknown figures are "-" in text and null in JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "report/findings_fmt.h"
#include "otlp/workflows.h"
#include "util/term.h"

static const char *const wait_names[4] = {"waiting_on_tools", "waiting_on_retrieval",
                                          "waiting_on_client", "no_work"};

static void num(char *b, size_t cap, double v, const char *fmt) {
    if (v < 0)
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, fmt, v);
}

/* Appends printf output to buf (at *len, capped at cap). */
static void cat(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cat(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    if (*len >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (k > 0) *len += (size_t)k < cap - *len ? (size_t)k : cap - *len - 1;
}

void gp_wf_print(FILE *out, const gp_wf_report *r, const gp_wf_engine *e, size_t n_e, int width) {
    const int W = width;
    gp_wrap_printf(out, 2, W, "Workflows: %zu traces, %zu spans%s", r->n_wf, r->n_spans,
                   r->gpu_known ? "" : " (no engine joined: GPU figures unknown)");
    fputc('\n', out);
    char line[4096];
    for (size_t i = 0; i < r->n_kinds; i++) {
        const gp_wf_kind *k = &r->kinds[i];
        double tot = 0;
        for (int s = 0; s < GP_STEP__COUNT; s++)
            tot += k->time_s[s];
        char g[32], usd[32], j[32], gpw[32];
        num(g, sizeof g, k->gpu_s, "%.2f");
        num(gpw, sizeof gpw, k->gpu_s_per_ok, "%.3f");
        num(usd, sizeof usd, k->usd_per_ok, "%.5f");
        num(j, sizeof j, k->j_per_ok, "%.1f");
        gp_wrap_printf(out, 2, W, "%s: %lld workflows, %.1f%% ok, e2e p50 %.3f s p95 %.3f s",
                       k->name, (long long)k->count, 100.0 * (double)k->ok / (double)k->count,
                       k->e2e_p50_s, k->e2e_p95_s);
        size_t len = 0;
        for (int s = 0; s < GP_STEP__COUNT; s++) {
            char v[32];
            num(v, sizeof v, tot > 0 ? 100 * k->time_s[s] / tot : -1, "%.1f%%");
            cat(line, sizeof line, &len, "%s%s %s", s ? ", " : "", gp_step_kind_name(s), v);
        }
        gp_wrap_print(out, "  time by step: ", 4, line, W);
        gp_wrap_printf(out, 4, W,
                       "  GPU-s %s, per successful workflow: GPU-s %s, $ %s, J %s, tokens %lld", g,
                       gpw, usd, j, (long long)k->tokens);
        gp_wrap_print(out, "  critical path (typical): ", 4, k->critical_path, W);
        len = 0;
        for (size_t s = 0; s < k->n_steps; s++)
            cat(line, sizeof line, &len, "%s%s [%s] x%lld mean %.3f s", s ? ", " : "",
                k->steps[s].name, gp_step_kind_name(k->steps[s].kind), (long long)k->steps[s].count,
                k->steps[s].total_s / (double)k->steps[s].count);
        gp_wrap_print(out, "  steps: ", 4, len ? line : "-", W);
        fputc('\n', out);
    }
    for (size_t i = 0; i < n_e; i++) {
        if (!e[i].calls) continue;
        gp_wrap_printf(out, 2, W,
                       "engine %s: %lld calls, busy %.1f GPU-s, idle GPU-s: tools %.1f, retrieval "
                       "%.1f, client %.1f, no work %.1f",
                       e[i].job_id, (long long)e[i].calls, e[i].busy_gpu_s, e[i].idle_gpu_s[0],
                       e[i].idle_gpu_s[1], e[i].idle_gpu_s[2], e[i].idle_gpu_s[3]);
    }
    fprintf(out, "\nFindings:\n");
    gp_findings_print_w(out, r->findings, r->n_findings, 0, W);
}

static json_t *jnum(double v) {
    return v < 0 ? json_null() : json_real(v);
}

static json_t *wf_json(const gp_wf_report *r, size_t w) {
    const gp_wf *x = &r->wf[w];
    json_t *spans = json_array();
    const gp_span *root = &r->spans[x->root];
    for (size_t i = x->first; i < x->first + x->n; i++) {
        const gp_span *s = &r->spans[i];
        json_array_append_new(
            spans, json_pack("{s:s, s:s, s:s, s:f, s:f, s:b, s:s}", "name", s->name, "span_id",
                             s->span_id, "parent_id", s->parent_id, "start_s",
                             (double)(s->start_ns - root->start_ns) / 1e9, "end_s",
                             (double)(s->end_ns - root->start_ns) / 1e9, "ok",
                             s->status != GP_SPAN_ERROR, "step", gp_step_kind_name(s->step)));
    }
    return json_pack("{s:s, s:f, s:b, s:o, s:o}", "trace_id", root->trace_id, "e2e_s", x->e2e_s,
                     "ok", x->ok, "gpu_s", jnum(x->gpu_s), "spans", spans);
}

json_t *gp_wf_json(const gp_wf_report *r, const gp_wf_engine *e, size_t n_e) {
    json_t *kinds = json_array(), *wfs = json_array(), *engines = json_array();
    for (size_t i = 0; i < r->n_kinds; i++) {
        const gp_wf_kind *k = &r->kinds[i];
        json_t *t = json_object(), *steps = json_array();
        for (int s = 0; s < GP_STEP__COUNT; s++)
            json_object_set_new(t, gp_step_kind_name(s), json_real(k->time_s[s]));
        for (size_t s = 0; s < k->n_steps; s++)
            json_array_append_new(steps, json_pack("{s:s, s:s, s:I, s:f}", "name", k->steps[s].name,
                                                   "kind", gp_step_kind_name(k->steps[s].kind),
                                                   "count", (json_int_t)k->steps[s].count,
                                                   "total_s", k->steps[s].total_s));
        json_t *o = json_pack(
            "{s:s, s:I, s:I, s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:f, s:s, "
            "s:o, s:o, s:o}",
            "kind", k->name, "count", (json_int_t)k->count, "ok", (json_int_t)k->ok, "success_rate",
            (double)k->ok / (double)k->count, "e2e_p50_s", k->e2e_p50_s, "e2e_p95_s", k->e2e_p95_s,
            "time_by_step_s", t, "gpu_s", jnum(k->gpu_s), "gpu_s_per_ok", jnum(k->gpu_s_per_ok),
            "usd_per_ok", jnum(k->usd_per_ok), "j_per_ok", jnum(k->j_per_ok), "tokens",
            k->tokens < 0 ? json_null() : json_integer(k->tokens), "retry_gpu_s",
            r->gpu_known ? json_real(k->retry_gpu_s) : json_null(), "retry_model_call_s",
            k->retry_call_s, "serial_saving_s_total", k->serial_saving_s, "critical_path",
            k->critical_path, "steps", steps, "typical", wf_json(r, k->typical), "slow",
            wf_json(r, k->slow));
        json_array_append_new(kinds, o);
    }
    for (size_t w = 0; w < r->n_wf; w++) {
        const gp_wf *x = &r->wf[w];
        json_t *t = json_object();
        for (int s = 0; s < GP_STEP__COUNT; s++)
            json_object_set_new(t, gp_step_kind_name(s), json_real(x->time_s[s]));
        json_array_append_new(wfs, json_pack("{s:s, s:s, s:b, s:f, s:o, s:o, s:o, s:o, s:f, s:f}",
                                             "trace_id", r->spans[x->root].trace_id, "kind",
                                             r->kinds[x->kind].name, "ok", x->ok, "e2e_s", x->e2e_s,
                                             "time_by_step_s", t, "gpu_s", jnum(x->gpu_s),
                                             "energy_j", jnum(x->energy_j), "tokens",
                                             x->tokens < 0 ? json_null() : json_integer(x->tokens),
                                             "retry_model_call_s", x->retry_call_s,
                                             "serial_saving_s", x->serial_saving_s));
        if (x->retry_gpu_s >= 0)
            json_object_set_new(json_array_get(wfs, json_array_size(wfs) - 1), "retry_gpu_s",
                                json_real(x->retry_gpu_s));
    }
    for (size_t i = 0; i < n_e; i++) {
        json_t *idle = json_object();
        for (int k = 0; k < 4; k++)
            json_object_set_new(idle, wait_names[k], json_real(e[i].idle_gpu_s[k]));
        json_array_append_new(engines, json_pack("{s:s, s:s, s:I, s:i, s:f, s:f, s:o}", "job_id",
                                                 e[i].job_id, "host", e[i].host, "calls",
                                                 (json_int_t)e[i].calls, "gpus", e[i].n_dev,
                                                 "busy_gpu_s", e[i].busy_gpu_s, "attributed_gpu_s",
                                                 e[i].attributed_gpu_s, "idle_gpu_s", idle));
    }
    return json_pack("{s:I, s:I, s:I, s:b, s:o, s:o, s:o, s:o}", "traces", (json_int_t)r->n_wf,
                     "spans", (json_int_t)r->n_spans, "orphan_spans", (json_int_t)r->orphans,
                     "gpu_known", r->gpu_known, "kinds", kinds, "engines", engines, "findings",
                     gp_findings_json(r->findings, r->n_findings, 0), "workflows", wfs);
}

static void html_text(FILE *out, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else if (*s == '&')
            fputs("&amp;", out);
        else if (*s == '"')
            fputs("&quot;", out);
        else
            fputc(*s, out);
    }
}

static void waterfall(FILE *out, const gp_wf_report *r, size_t w, const char *title) {
    static const char *const colors[GP_STEP__COUNT] = {"#4c78a8", "#f58518", "#54a24b", "#9d9d9d",
                                                       "#e0e0e0"};
    const gp_wf *x = &r->wf[w];
    const gp_span *root = &r->spans[x->root];
    double total = x->e2e_s > 0 ? x->e2e_s : 1;
    int rowh = 18, width = 700, label = 220;
    fprintf(out, "<h3>");
    html_text(out, title);
    fprintf(out, " (%.3f s, %s)</h3>\n<svg width=\"%d\" height=\"%zu\">\n", x->e2e_s,
            x->ok ? "ok" : "failed", label + width + 10, x->n * (size_t)rowh + 4);
    for (size_t i = 0; i < x->n; i++) {
        const gp_span *s = &r->spans[x->first + i];
        double a = (double)(s->start_ns - root->start_ns) / 1e9 / total * width;
        double b = (double)(s->end_ns - root->start_ns) / 1e9 / total * width;
        int k = &r->spans[x->first + i] == root ? GP_STEP_QUEUE : s->step;
        fprintf(out, "<text x=\"0\" y=\"%zu\" font-size=\"12\">", i * (size_t)rowh + 13);
        html_text(out, s->name);
        fprintf(out,
                "</text><rect x=\"%.1f\" y=\"%zu\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                "stroke=\"%s\"><title>%.3f s</title></rect>\n",
                label + a, i * (size_t)rowh + 2, b - a > 1 ? b - a : 1, rowh - 4, colors[k],
                s->status == GP_SPAN_ERROR ? "#d62728" : "none",
                (double)(s->end_ns - s->start_ns) / 1e9);
    }
    fprintf(out, "</svg>\n");
}

int gp_wf_html(FILE *out, const gp_wf_report *r, const gp_wf_engine *e, size_t n_e) {
    (void)e, (void)n_e;
    fprintf(out, "<!doctype html><html><head><meta charset=\"utf-8\"><title>goodput "
                 "workflows</title><style>body{font-family:sans-serif;margin:2em}"
                 "td,th{padding:2px 8px;text-align:right}td:first-child{text-align:left}"
                 "</style></head><body><h1>Workflows</h1>\n<table><tr><th>kind</th><th>count</th>"
                 "<th>ok</th><th>p50 s</th><th>p95 s</th><th>model</th><th>tool</th>"
                 "<th>retrieval</th><th>other</th><th>queue</th><th>GPU-s/ok</th><th>$/ok</th>"
                 "<th>J/ok</th></tr>\n");
    for (size_t i = 0; i < r->n_kinds; i++) {
        const gp_wf_kind *k = &r->kinds[i];
        double tot = 0;
        for (int s = 0; s < GP_STEP__COUNT; s++)
            tot += k->time_s[s];
        fprintf(out, "<tr><td>");
        html_text(out, k->name);
        fprintf(out, "</td><td>%lld</td><td>%.1f%%</td><td>%.3f</td><td>%.3f</td>",
                (long long)k->count, 100.0 * (double)k->ok / (double)k->count, k->e2e_p50_s,
                k->e2e_p95_s);
        for (int s = 0; s < GP_STEP__COUNT; s++)
            fprintf(out, "<td>%.0f%%</td>", tot > 0 ? 100 * k->time_s[s] / tot : 0);
        char g[32], usd[32], j[32];
        num(g, sizeof g, k->gpu_s_per_ok, "%.3f");
        num(usd, sizeof usd, k->usd_per_ok, "%.5f");
        num(j, sizeof j, k->j_per_ok, "%.1f");
        fprintf(out, "<td>%s</td><td>%s</td><td>%s</td></tr>\n", g, usd, j);
    }
    fprintf(out, "</table>\n<h2>Findings</h2><ul>\n");
    for (size_t i = 0; i < r->n_findings; i++) {
        fprintf(out, "<li><b>%s</b> ", gp_finding_class_name(r->findings[i].cls));
        html_text(out, r->findings[i].summary);
        fprintf(out, "<br><i>");
        html_text(out, r->findings[i].recommendation);
        fprintf(out, "</i></li>\n");
    }
    fprintf(out, "</ul>\n<p>Colours: <span style=\"color:#4c78a8\">model</span>, "
                 "<span style=\"color:#f58518\">tool</span>, <span "
                 "style=\"color:#54a24b\">retrieval</span>, other grey; failed spans outlined "
                 "red.</p>\n");
    for (size_t i = 0; i < r->n_kinds; i++) {
        const gp_wf_kind *k = &r->kinds[i];
        char t[160];
        fprintf(out, "<h2>");
        html_text(out, k->name);
        fprintf(out, "</h2>\n");
        snprintf(t, sizeof t, "typical (p50) %.100s", k->name);
        waterfall(out, r, k->typical, t);
        snprintf(t, sizeof t, "slow (p95) %.100s", k->name);
        waterfall(out, r, k->slow, t);
    }
    fprintf(out, "</body></html>\n");
    return ferror(out) ? -1 : 0;
}
