/* pipeline_report.c: the pipeline view as text, JSON and HTML (with an SVG of queue length
 * over time per stage), loading from the store, and the `goodput report` section.
 *
 * Everything printed is computed in pipeline.c / pipeline_sim.c; this file only formats.
 * JSON objects returned are new references owned by the caller. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/cost.h"
#include "engine/pipeline/pipeline.h"
#include "store/store.h"
#include "util/term.h"

static const char *res_name(int r) {
    return r == GP_STAGE_GPU ? "gpu" : r == GP_STAGE_CPU ? "cpu" : "cpu?";
}

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static void pools_text(const gp_pipeline *p, const int *w, char *buf, size_t cap) {
    size_t l = 0;
    buf[0] = 0;
    for (int k = 0; k < p->n_stages && l < cap; k++) {
        int n = snprintf(buf + l, cap - l, "%s%s=%d", k ? "," : "", p->stage[k].name, w[k]);
        if (n < 0) break;
        l += (size_t)n;
    }
}

/* The stage table. In 100 columns it is two tables (flow, then service times and queues)
 * with names shortened in the middle; with --wide (width 0) one table. */
static void stage_tables(const gp_pipeline *p, FILE *out, int width) {
    char nm[128];
    if (width <= 0) {
        fprintf(out, "  %-14s %-4s %7s %7s %8s %9s %9s %9s %6s %8s %8s %10s %10s\n", "stage", "res",
                "workers", "items", "items/s", "svc mean", "svc p50", "svc p99", "util", "starved",
                "blocked", "queue avg", "capacity/s");
        for (int k = 0; k < p->n_stages; k++) {
            const gp_pipe_stage *s = &p->stage[k];
            fprintf(out,
                    "  %-14s %-4s %7d %7zu %8.2f %7.1fms %7.1fms %7.1fms %5.0f%% %7.1fs %7.1fs "
                    "%6.1f/%-3.0f %10.2f%s\n",
                    s->name, res_name(s->resource), s->workers, s->n_items, s->throughput_per_s,
                    s->svc_mean_s * 1e3, s->svc_p50_s * 1e3, s->svc_p99_s * 1e3,
                    100 * s->utilization, s->starved_s, s->blocked_s, s->queue_mean, s->queue_max,
                    s->e2e_capacity_per_s, k == p->bottleneck ? "  <- bottleneck" : "");
        }
        return;
    }
    fprintf(out, "  %-14s %-4s %7s %7s %8s %6s %8s %8s %10s\n", "stage", "res", "workers", "items",
            "items/s", "util", "starved", "blocked", "capacity/s");
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *s = &p->stage[k];
        fprintf(out, "  %-14s %-4s %7d %7zu %8.2f %5.0f%% %7.1fs %7.1fs %10.2f%s\n",
                gp_ellipsize(s->name, 14, nm, sizeof nm), res_name(s->resource), s->workers,
                s->n_items, s->throughput_per_s, 100 * s->utilization, s->starved_s, s->blocked_s,
                s->e2e_capacity_per_s, k == p->bottleneck ? "  <- bottleneck" : "");
    }
    fprintf(out, "  %-14s %9s %9s %9s %10s\n", "stage", "svc mean", "svc p50", "svc p99",
            "queue avg");
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *s = &p->stage[k];
        fprintf(out, "  %-14s %7.1fms %7.1fms %7.1fms %6.1f/%-3.0f\n",
                gp_ellipsize(s->name, 14, nm, sizeof nm), s->svc_mean_s * 1e3, s->svc_p50_s * 1e3,
                s->svc_p99_s * 1e3, s->queue_mean, s->queue_max);
    }
}

void gp_pipeline_print_text(const gp_pipeline *p, const gp_pipe_sizing *sz, const gp_pipe_whatif *w,
                            FILE *out, int width) {
    const int W = width;
    gp_wrap_printf(out, 4, W, "pipeline  job %s  %d stages  window %.1f s  %zu items done",
                   p->job_id, p->n_stages, p->span_s, p->items_done);
    stage_tables(p, out, width);
    if (p->bottleneck >= 0) {
        const gp_pipe_stage *b = &p->stage[p->bottleneck];
        gp_wrap_printf(out, 2, W,
                       "bottleneck: %s (%.2f items/s capacity = %d workers / %.1f ms; the next "
                       "stage has %.2fx that; utilization %.0f%%)",
                       b->name, b->e2e_capacity_per_s, b->workers, b->svc_mean_s * 1e3,
                       p->bn_margin, 100 * b->utilization);
    }
    char per_usd[64] = "";
    if (p->items_per_usd > 0)
        snprintf(per_usd, sizeof per_usd, " -> %.0f items per USD", p->items_per_usd);
    gp_wrap_printf(out, 2, W,
                   "end to end: %.2f items/s = %.0f items/h; %.2f USD/h of workers%s (%.2f "
                   "USD/GPU-h, %.3f USD/CPU-h)",
                   p->e2e_per_s, p->e2e_per_h, p->cost_per_h, per_usd, p->price_gpu_h,
                   p->price_cpu_h);
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *s = &p->stage[k];
        if (s->resource != GP_STAGE_GPU) continue;
        gp_wrap_printf(out, 2, W,
                       "GPU stage %s: busy %.0f%%; of its idle time %.0f%% is starvation (empty "
                       "input queue), %.0f%% backpressure",
                       s->name, 100 * s->utilization, 100 * s->starved_share,
                       100 * s->blocked_share);
    }
    if (sz) {
        char pools[512], lim[160] = "";
        pools_text(p, sz->workers, pools, sizeof pools);
        if (sz->limiting >= 0)
            snprintf(lim, sizeof lim, " (limited by %s)", p->stage[sz->limiting].name);
        gp_wrap_printf(out, 2, W, "sizing (budget %d cpu, %d gpu workers): %s -> %.2f items/s%s",
                       sz->cpu_budget, sz->gpu_budget, pools, sz->rate_per_s, lim);
        if (sz->scale_first >= 0)
            gp_wrap_printf(out, 2, W, "scale first: %s, from %d to %d workers",
                           p->stage[sz->scale_first].name, p->stage[sz->scale_first].workers,
                           sz->scale_first_to);
    }
    if (w && w->have) {
        char pools[512], busy[48] = "";
        pools_text(p, w->cfg.workers, pools, sizeof pools);
        if (w->res.gpu_busy_share >= 0)
            snprintf(busy, sizeof busy, ", GPU busy %.0f%%", 100 * w->res.gpu_busy_share);
        gp_wrap_printf(out, 2, W,
                       "what-if %s: predicted %.2f items/s (steady %.2f) for %zu items, makespan "
                       "%.1f s%s",
                       pools, w->res.throughput_per_s, w->res.steady_per_s, w->res.n_items,
                       w->res.makespan_s, busy);
        gp_wrap_printf(out, 4, W,
                       "  model check: the measured pools simulated give %.2f items/s (measured "
                       "%.2f)",
                       w->base.throughput_per_s, p->e2e_per_s);
    }
    gp_finding f;
    if (gp_pipeline_finding(p, &f)) {
        gp_wrap_printf(out, 2, W, "finding pipeline_bottleneck [%s]: %s", f.scope_id, f.summary);
        gp_wrap_print(out, "  fix: ", 7, f.recommendation, W);
    }
}

static json_t *sim_json(const gp_pipeline *p, const gp_pipe_sim_cfg *c,
                        const gp_pipe_sim_result *r) {
    json_t *o = json_object();
    json_t *pools = json_object();
    for (int k = 0; k < p->n_stages; k++)
        json_object_set_new(pools, p->stage[k].name, json_integer(c->workers[k]));
    json_object_set_new(o, "workers", pools);
    json_object_set_new(o, "items", json_integer((json_int_t)r->n_items));
    json_object_set_new(o, "makespan_s", json_real(r->makespan_s));
    json_object_set_new(o, "throughput_per_s", json_real(r->throughput_per_s));
    json_object_set_new(o, "steady_per_s", json_real(r->steady_per_s));
    json_object_set_new(o, "throughput_per_h", json_real(r->throughput_per_s * 3600));
    json_object_set_new(o, "gpu_busy_share",
                        r->gpu_busy_share >= 0 ? json_real(r->gpu_busy_share) : json_null());
    json_t *u = json_object();
    for (int k = 0; k < p->n_stages; k++)
        json_object_set_new(u, p->stage[k].name, json_real(r->utilization[k]));
    json_object_set_new(o, "utilization", u);
    return o;
}

json_t *gp_pipeline_to_json(const gp_pipeline *p, const gp_pipe_sizing *sz,
                            const gp_pipe_whatif *w) {
    json_t *o = json_object();
    json_object_set_new(o, "job", json_string(p->job_id));
    json_object_set_new(o, "t0_ns", json_integer(p->t0_ns));
    json_object_set_new(o, "t1_ns", json_integer(p->t1_ns));
    json_object_set_new(o, "window_s", json_real(p->span_s));
    json_object_set_new(o, "items_done", json_integer((json_int_t)p->items_done));
    json_object_set_new(o, "throughput_per_s", json_real(p->e2e_per_s));
    json_object_set_new(o, "throughput_per_h", json_real(p->e2e_per_h));
    json_object_set_new(o, "cost_per_h", json_real(p->cost_per_h));
    json_object_set_new(o, "items_per_usd",
                        p->items_per_usd > 0 ? json_real(p->items_per_usd) : json_null());
    json_object_set_new(o, "price_gpu_h", json_real(p->price_gpu_h));
    json_object_set_new(o, "price_cpu_h", json_real(p->price_cpu_h));
    json_object_set_new(o, "gpu_busy_share",
                        p->gpu_busy_share >= 0 ? json_real(p->gpu_busy_share) : json_null());
    json_object_set_new(o, "bottleneck",
                        p->bottleneck >= 0 ? json_string(p->stage[p->bottleneck].name)
                                           : json_null());
    json_object_set_new(o, "bottleneck_margin", json_real(p->bn_margin));
    json_t *arr = json_array();
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *s = &p->stage[k];
        json_t *j = json_object();
        json_object_set_new(j, "name", json_string(s->name));
        json_object_set_new(j, "resource",
                            json_string(s->resource == GP_STAGE_GPU ? "gpu" : "cpu"));
        json_object_set_new(j, "declared", json_boolean(s->declared));
        json_object_set_new(j, "workers", json_integer(s->workers));
        json_object_set_new(j, "queue_bound",
                            s->queue_bound >= 0 ? json_integer(s->queue_bound) : json_null());
        json_t *up = json_array();
        for (int u = 0; u < s->n_upstream; u++)
            json_array_append_new(up, json_string(p->stage[s->upstream[u]].name));
        json_object_set_new(j, "upstream", up);
        json_object_set_new(j, "items", json_integer((json_int_t)s->n_items));
        json_object_set_new(j, "throughput_per_s", json_real(s->throughput_per_s));
        json_t *svc = json_object();
        json_object_set_new(svc, "mean", json_real(s->svc_mean_s));
        json_object_set_new(svc, "p50", json_real(s->svc_p50_s));
        json_object_set_new(svc, "p90", json_real(s->svc_p90_s));
        json_object_set_new(svc, "p99", json_real(s->svc_p99_s));
        json_object_set_new(svc, "max", json_real(s->svc_max_s));
        json_object_set_new(svc, "cv", json_real(s->svc_cv));
        json_object_set_new(svc, "handoff", json_real(s->handoff_s));
        json_object_set_new(svc, "handoff_borrowed", json_boolean(s->handoff_borrowed));
        json_object_set_new(j, "service_s", svc);
        json_object_set_new(j, "busy_s", json_real(s->busy_s));
        json_object_set_new(j, "utilization", json_real(s->utilization));
        json_object_set_new(j, "idle_worker_s", json_real(s->idle_worker_s));
        json_object_set_new(j, "starved_s", json_real(s->starved_s));
        json_object_set_new(j, "starved_worker_s", json_real(s->starved_worker_s));
        json_object_set_new(j, "blocked_s", json_real(s->blocked_s));
        json_object_set_new(j, "idle_starved_share", json_real(s->starved_share));
        json_object_set_new(j, "idle_blocked_share", json_real(s->blocked_share));
        json_object_set_new(j, "queue_mean", json_real(s->queue_mean));
        json_object_set_new(j, "queue_max", json_real(s->queue_max));
        json_t *ser = json_array();
        for (int i = 0; i < GP_PIPE_SERIES; i++)
            json_array_append_new(ser, json_real(s->queue_series[i]));
        json_object_set_new(j, "queue_series", ser);
        json_object_set_new(j, "visit_ratio", json_real(s->visit_ratio));
        json_object_set_new(j, "capacity_per_s", num_or_null(s->e2e_capacity_per_s));
        json_array_append_new(arr, j);
    }
    json_object_set_new(o, "stages", arr);
    if (sz) {
        json_t *z = json_object();
        json_object_set_new(z, "cpu_budget", json_integer(sz->cpu_budget));
        json_object_set_new(z, "gpu_budget", json_integer(sz->gpu_budget));
        json_t *pools = json_object();
        for (int k = 0; k < p->n_stages; k++)
            json_object_set_new(pools, p->stage[k].name, json_integer(sz->workers[k]));
        json_object_set_new(z, "workers", pools);
        json_object_set_new(z, "rate_per_s", num_or_null(sz->rate_per_s));
        json_object_set_new(z, "limited_by",
                            sz->limiting >= 0 ? json_string(p->stage[sz->limiting].name)
                                              : json_null());
        json_object_set_new(z, "scale_first",
                            sz->scale_first >= 0 ? json_string(p->stage[sz->scale_first].name)
                                                 : json_null());
        json_object_set_new(z, "scale_first_to", json_integer(sz->scale_first_to));
        json_object_set_new(o, "sizing", z);
    }
    if (w && w->have) {
        json_t *wi = sim_json(p, &w->cfg, &w->res);
        json_object_set_new(wi, "spec", json_string(w->spec));
        json_object_set_new(wi, "baseline", sim_json(p, &w->cfg, &w->base));
        /* the baseline ran with the measured pools */
        json_t *bw = json_object();
        for (int k = 0; k < p->n_stages; k++)
            json_object_set_new(bw, p->stage[k].name, json_integer(p->stage[k].workers));
        json_object_set(json_object_get(wi, "baseline"), "workers", bw);
        json_decref(bw);
        json_object_set_new(o, "what_if", wi);
    }
    gp_finding f;
    if (gp_pipeline_finding(p, &f)) {
        json_t *jf = json_object();
        json_object_set_new(jf, "class", json_string(gp_finding_class_name(f.cls)));
        json_object_set_new(jf, "scope", json_string(gp_scope_name(f.scope)));
        json_object_set_new(jf, "scope_id", json_string(f.scope_id));
        json_object_set_new(jf, "wasted_gpu_s", json_real(f.wasted_gpu_s));
        json_object_set_new(jf, "wasted_cost", json_real(f.wasted_cost));
        json_object_set_new(jf, "confidence", json_real(f.confidence));
        json_object_set_new(jf, "summary", json_string(f.summary));
        json_object_set_new(jf, "recommendation", json_string(f.recommendation));
        json_t *ev = json_array();
        for (int i = 0; i < f.n_evidence; i++) {
            json_t *e = json_object();
            json_object_set_new(e, "metric", json_string(f.evidence[i].metric));
            json_object_set_new(e, "value", json_real(f.evidence[i].value));
            json_object_set_new(e, "op", json_string(f.evidence[i].op));
            json_object_set_new(e, "threshold", json_real(f.evidence[i].threshold));
            json_object_set_new(e, "source", json_string(f.evidence[i].source));
            json_array_append_new(ev, e);
        }
        json_object_set_new(jf, "evidence", ev);
        json_object_set_new(o, "finding", jf);
    }
    return o;
}

static void html_escape(FILE *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '&':
            fputs("&amp;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*s, out);
        }
    }
}

void gp_pipeline_print_html(const gp_pipeline *p, const gp_pipe_sizing *sz, const gp_pipe_whatif *w,
                            FILE *out) {
    fputs("<section class=\"pipeline\"><h2>Pipeline ", out);
    html_escape(out, p->job_id);
    fprintf(out, "</h2>\n<p>%d stages, %.1f s, %zu items: <b>%.2f items/s</b> (%.0f/h)",
            p->n_stages, p->span_s, p->items_done, p->e2e_per_s, p->e2e_per_h);
    if (p->items_per_usd > 0) fprintf(out, ", %.0f items per USD", p->items_per_usd);
    fputs(".</p>\n<table><tr><th>stage</th><th>resource</th><th>workers</th><th>items/s</th>"
          "<th>service mean / p99 (ms)</th><th>utilization</th><th>starved s</th><th>blocked s"
          "</th><th>capacity/s</th><th>input queue over time</th></tr>\n",
          out);
    double qmax = 1;
    for (int k = 0; k < p->n_stages; k++)
        for (int i = 0; i < GP_PIPE_SERIES; i++)
            if (p->stage[k].queue_series[i] > qmax) qmax = p->stage[k].queue_series[i];
    for (int k = 0; k < p->n_stages; k++) {
        const gp_pipe_stage *s = &p->stage[k];
        fprintf(out, "<tr%s><td>", k == p->bottleneck ? " style=\"background:#fde2e2\"" : "");
        html_escape(out, s->name);
        fprintf(out,
                "%s</td><td>%s</td><td>%d</td><td>%.2f</td><td>%.1f / %.1f</td><td>%.0f%%</td>"
                "<td>%.1f</td><td>%.1f</td><td>%.2f</td><td>",
                k == p->bottleneck ? " (bottleneck)" : "", res_name(s->resource), s->workers,
                s->throughput_per_s, s->svc_mean_s * 1e3, s->svc_p99_s * 1e3, 100 * s->utilization,
                s->starved_s, s->blocked_s, s->e2e_capacity_per_s);
        fprintf(out,
                "<svg width=\"200\" height=\"30\" viewBox=\"0 0 %d 30\"><polyline fill=\"none\" "
                "stroke=\"#c33\" points=\"",
                GP_PIPE_SERIES * 4);
        for (int i = 0; i < GP_PIPE_SERIES; i++)
            fprintf(out, "%d,%.1f ", i * 4 + 2, 29 - 28 * s->queue_series[i] / qmax);
        fprintf(out, "\"/></svg> max %.0f</td></tr>\n", s->queue_max);
    }
    fputs("</table>\n", out);
    if (sz) {
        char pools[512];
        pools_text(p, sz->workers, pools, sizeof pools);
        fprintf(out, "<p>Sizing for %d cpu / %d gpu workers: <code>", sz->cpu_budget,
                sz->gpu_budget);
        html_escape(out, pools);
        fprintf(out, "</code> &rarr; %.2f items/s.", sz->rate_per_s);
        if (sz->scale_first >= 0) {
            fputs(" Scale <b>", out);
            html_escape(out, p->stage[sz->scale_first].name);
            fprintf(out, "</b> first, to %d workers.", sz->scale_first_to);
        }
        fputs("</p>\n", out);
    }
    if (w && w->have) {
        fputs("<p>What-if <code>", out);
        html_escape(out, w->spec);
        fprintf(out, "</code>: predicted %.2f items/s", w->res.throughput_per_s);
        if (w->res.gpu_busy_share >= 0)
            fprintf(out, ", GPU busy %.0f%%", 100 * w->res.gpu_busy_share);
        fprintf(out, " (measured pools simulated: %.2f).</p>\n", w->base.throughput_per_s);
    }
    gp_finding f;
    if (gp_pipeline_finding(p, &f)) {
        fputs("<p><b>pipeline_bottleneck</b>: ", out);
        html_escape(out, f.summary);
        fputs("<br>", out);
        html_escape(out, f.recommendation);
        fputs("</p>\n", out);
    }
    fputs("</section>\n", out);
}

/* The GPU model a job's GPU workers run on, for the price table (cost.c): the model of a
 * GPU the job holds, else of the first GPU in the store (a stage-only job reports no
 * allocation but runs on the node's GPUs), else NULL (the table's default row). The same
 * lookup as diagnose and compare, so every output prices the job's GPUs alike. */
static const gp_gpu_spec *job_gpu_spec(gp_store *s, const char *job_id) {
    gp_device *devs = NULL;
    size_t nd = 0;
    if (gp_store_list_devices(s, &devs, &nd) != 0 || nd == 0) {
        free(devs);
        return NULL;
    }
    const gp_gpu_spec *spec = NULL;
    gp_alloc *al = NULL;
    size_t na = 0;
    if (gp_store_job_allocs(s, job_id, &al, &na) == 0)
        for (size_t i = 0; i < na && !spec; i++)
            for (size_t k = 0; k < nd && !spec; k++)
                if (!strcmp(devs[k].uuid, al[i].uuid)) spec = devs[k].spec;
    for (size_t k = 0; k < nd && !spec; k++)
        spec = devs[k].spec;
    free(al);
    free(devs);
    return spec;
}

int gp_pipeline_load(struct gp_store *s, const char *job_id, const gp_pipe_opts *o,
                     gp_pipeline *out, char *err, size_t errlen) {
    gp_event *ev = NULL;
    size_t n = 0;
    memset(out, 0, sizeof *out);
    if (gp_store_job_events(s, job_id, GP_EV_STAGE, &ev, &n) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: reading stage events of job '%s': %s", gp_store_path(s),
                     job_id, gp_store_errmsg(s));
        return -1;
    }
    int has_item = 0;
    for (size_t i = 0; i < n && !has_item; i++)
        has_item = ev[i].step < 0;
    if (!has_item) {
        free(ev);
        return 0;
    }
    gp_pipe_opts po = {0};
    if (o) po = *o;
    if (po.price_gpu_h <= 0) po.price_gpu_h = gp_price_per_gpu_h(job_gpu_spec(s, job_id), 0);
    int rc = gp_pipeline_analyze(ev, n, &po, out, err, errlen);
    free(ev);
    return rc < 0 ? -1 : 1;
}

/* Calls fn for the job, or for every job with stage events when job_id is NULL. */
static void each_pipeline(gp_store *s, const char *job_id, void (*fn)(const gp_pipeline *, void *),
                          void *arg) {
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (job_id) {
        gp_pipeline p;
        char err[256];
        if (gp_pipeline_load(s, job_id, NULL, &p, err, sizeof err) == 1) fn(&p, arg);
        gp_pipeline_free(&p);
        return;
    }
    if (gp_store_list_jobs(s, &jobs, &nj) != 0) return;
    for (size_t i = 0; i < nj; i++) {
        gp_pipeline p;
        char err[256];
        if (gp_pipeline_load(s, jobs[i].id, NULL, &p, err, sizeof err) == 1) fn(&p, arg);
        gp_pipeline_free(&p);
    }
    free(jobs);
}

static void text_one(const gp_pipeline *p, void *arg) {
    gp_pipe_sizing sz;
    gp_pipeline_size(p, 0, 0, &sz);
    fputc('\n', (FILE *)arg);
    gp_pipeline_print_text(p, &sz, NULL, (FILE *)arg, GP_TEXT_WIDTH);
}

static void json_one(const gp_pipeline *p, void *arg) {
    gp_pipe_sizing sz;
    gp_pipeline_size(p, 0, 0, &sz);
    json_array_append_new((json_t *)arg, gp_pipeline_to_json(p, &sz, NULL));
}

void gp_pipeline_report_text(struct gp_store *s, const char *job_id, FILE *out) {
    each_pipeline(s, job_id, text_one, out);
}

void gp_pipeline_report_json(struct gp_store *s, const char *job_id, json_t *root) {
    json_t *arr = json_array();
    each_pipeline(s, job_id, json_one, arr);
    if (json_array_size(arr))
        json_object_set_new(root, "pipelines", arr);
    else
        json_decref(arr);
}
