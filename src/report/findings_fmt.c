/* findings_fmt.c: see findings_fmt.h. */
#include "report/findings_fmt.h"
#include "engine/results/job_results.h"

#include "report/svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/diagnosis/classify.h"
#include "engine/accounting/cost.h"
#include "engine/diagnosis/windows.h"
#include "store/store.h"
#include "report/findings_group.h"
#include "util/term.h"
#include "util/wrap.h"

static void fmt_num(char *buf, size_t cap, double v) {
    if (fabs(v) >= 1e6 || (fabs(v) < 1e-3 && v != 0))
        snprintf(buf, cap, "%.3g", v);
    else if (fabs(v - round(v)) < 1e-9)
        snprintf(buf, cap, "%.0f", v);
    else
        snprintf(buf, cap, "%.3f", v);
}

static void fmt_time(char *buf, size_t cap, int64_t ns) {
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* "0.76 GPU-h ($2.28)"; unknown parts as "-" */
static void fmt_gpu_h(char *buf, size_t cap, double gpu_s, double cost) {
    char h[24], c[24];
    if (gpu_s >= 0)
        snprintf(h, sizeof h, "%.2f", gpu_s / 3600);
    else
        snprintf(h, sizeof h, "-");
    if (cost >= 0)
        snprintf(c, sizeof c, "$%.2f", cost);
    else
        snprintf(c, sizeof c, "$-");
    snprintf(buf, cap, "%s GPU-h (%s)", h, c);
}

/* "not_ready 0.30, startup 0.05" in GPU-h: the buckets the badput comes from */
static void fmt_buckets(char *buf, size_t cap, const gp_finding *x) {
    buf[0] = 0;
    size_t len = 0;
    for (int b = GP_B_PRODUCTIVE + 1; b < GP_B__COUNT && len < cap; b++) {
        if (!(x->badput_gpu_s[b] > 0)) continue;
        int k = snprintf(buf + len, cap - len, "%s%s %.2f", len ? ", " : "",
                         gp_bucket_name((gp_bucket)b), x->badput_gpu_s[b] / 3600);
        if (k < 0) break;
        len += (size_t)k;
    }
}

void gp_findings_print(FILE *out, const gp_finding *f, size_t n, size_t top) {
    gp_findings_print_w(out, f, n, top, GP_TEXT_WIDTH);
}

/* When a class repeats (the same idle_allocated on several jobs), one line per class with
 * its total badput and where, ranked by it, before the findings themselves. */
static void print_classes(FILE *out, const gp_finding *f, size_t n, int width) {
    gp_finding_group *g;
    size_t ng = gp_findings_group(f, n, &g), rep = 0;
    for (size_t k = 0; k < ng; k++)
        rep += g[k].n > 1;
    if (rep) {
        fprintf(out, "By class (repeated findings together, ranked by badput):\n");
        for (size_t k = 0; k < ng; k++) {
            const gp_finding *x = &f[g[k].idx[0]];
            char scopes[1024], bad[48];
            gp_finding_group_scopes(f, &g[k], scopes, sizeof scopes);
            if (g[k].wasted_gpu_s >= 0)
                snprintf(bad, sizeof bad, "%.2f GPU-h", g[k].wasted_gpu_s / 3600);
            else
                snprintf(bad, sizeof bad, "badput unknown");
            gp_wrap_printf(out, 6, width, "  %s on %zu %s%s, %s: %s", gp_finding_class_name(x->cls),
                           g[k].n, gp_scope_name(x->scope), g[k].n == 1 ? "" : "s", bad, scopes);
        }
        fputc('\n', out);
    }
    gp_finding_groups_free(g, ng);
}

void gp_findings_print_w(FILE *out, const gp_finding *f, size_t n, size_t top, int width) {
    if (n == 0) {
        fprintf(out, "No findings.\n");
        return;
    }
    print_classes(out, f, n, width);
    gp_style st = gp_style_for(out); /* the class in colour on a terminal only (NO_COLOR) */
    size_t m = top && top < n ? top : n;
    for (size_t i = 0; i < m; i++) {
        const gp_finding *x = &f[i];
        char t0[32], t1[32], bad[96], head[96], from[192];
        fmt_time(t0, sizeof t0, x->t0_ns);
        fmt_time(t1, sizeof t1, x->t1_ns);
        fmt_gpu_h(bad, sizeof bad, x->wasted_gpu_s, x->wasted_cost);
        fmt_gpu_h(head, sizeof head, x->headroom_gpu_s, x->headroom_cost);
        fmt_buckets(from, sizeof from, x);
        /* Two lines so that long job ids and costs stay inside 100 columns. */
        fprintf(out, "%zu. %s%s%s%s  [%s %s]  confidence %.2f\n   badput %s, headroom %s\n", i + 1,
                st.warn, gp_finding_class_name(x->cls), st.off, x->minor ? " (minor)" : "",
                gp_scope_name(x->scope), x->scope_id, x->confidence, bad, head);
        gp_wrap_print(out, "   ", 3, x->summary, width);
        fprintf(out, "   when: %s .. %s\n", t0, t1);
        if (from[0]) gp_wrap_print(out, "   badput by bucket (GPU-h): ", 5, from, width);
        if (x->counterfactual[0])
            gp_wrap_print(out, "   counterfactual: ", 5, x->counterfactual, width);
        for (int k = 0; k < x->n_evidence; k++) {
            char v[32], th[32];
            fmt_num(v, sizeof v, x->evidence[k].value);
            fmt_num(th, sizeof th, x->evidence[k].threshold);
            gp_wrap_printf(out, 5, width, "   evidence: %s = %s (threshold %s %s; %s)",
                           x->evidence[k].metric, v, x->evidence[k].op, th, x->evidence[k].source);
        }
        gp_wrap_print(out, "   fix: ", 8, x->recommendation, width);
    }
    if (m < n) fprintf(out, "(%zu more; --all to list every finding)\n", n - m);
}

static json_t *num_or_null(double v) {
    return v < 0 ? json_null() : json_real(v);
}

json_t *gp_findings_json(const gp_finding *f, size_t n, size_t top) {
    json_t *arr = json_array();
    size_t m = top && top < n ? top : n;
    for (size_t i = 0; i < m; i++) {
        const gp_finding *x = &f[i];
        json_t *o = json_object(), *e = json_array();
        json_object_set_new(o, "rank", json_integer((json_int_t)(i + 1)));
        json_object_set_new(o, "class", json_string(gp_finding_class_name(x->cls)));
        json_object_set_new(o, "scope", json_string(gp_scope_name(x->scope)));
        json_object_set_new(o, "scope_id", json_string(x->scope_id));
        json_object_set_new(o, "t0_ns", json_integer(x->t0_ns));
        json_object_set_new(o, "t1_ns", json_integer(x->t1_ns));
        json_object_set_new(o, "job", x->job_id[0] ? json_string(x->job_id) : json_null());
        /* badput explained, by bucket and in total, and apart from it the headroom from
         * productive time: two numbers never added (model/finding.h) */
        json_t *bad = json_object();
        for (int b = GP_B_PRODUCTIVE + 1; b < GP_B__COUNT; b++)
            json_object_set_new(bad, gp_bucket_name((gp_bucket)b), num_or_null(x->badput_gpu_s[b]));
        json_object_set_new(bad, "total", num_or_null(x->wasted_gpu_s));
        json_object_set_new(o, "badput_gpu_s", bad);
        json_object_set_new(o, "badput_cost_usd", num_or_null(x->wasted_cost));
        json_object_set_new(o, "headroom_gpu_s", num_or_null(x->headroom_gpu_s));
        json_object_set_new(o, "headroom_cost_usd", num_or_null(x->headroom_cost));
        json_object_set_new(o, "counterfactual",
                            x->counterfactual[0] ? json_string(x->counterfactual) : json_null());
        json_object_set_new(o, "confidence", json_real(x->confidence));
        json_object_set_new(o, "minor", json_boolean(x->minor));
        json_object_set_new(o, "summary", json_string(x->summary));
        json_object_set_new(o, "recommendation", json_string(x->recommendation));
        for (int k = 0; k < x->n_evidence; k++) {
            json_t *ev = json_object();
            json_object_set_new(ev, "metric", json_string(x->evidence[k].metric));
            json_object_set_new(ev, "value", json_real(x->evidence[k].value));
            json_object_set_new(ev, "op", json_string(x->evidence[k].op));
            json_object_set_new(ev, "threshold", json_real(x->evidence[k].threshold));
            json_object_set_new(ev, "source", json_string(x->evidence[k].source));
            json_array_append_new(e, ev);
        }
        json_object_set_new(o, "evidence", e);
        json_array_append_new(arr, o);
    }
    return arr;
}

static int diagnose_for_report(gp_store *s, const char *job_id, const gp_report_acct *acct,
                               gp_finding **f, size_t *n, char *err, size_t errlen) {
    gp_diag_opts o = {0};
    o.no_write = 1;
    if (acct) { /* the report's own accounting: not computed a second time */
        o.acct = acct->sum;
        o.n_acct = acct->n;
        o.acct_slo = acct->slo;
        o.threads = acct->threads;
        gp_job_results_use(&o, acct->stored);
    }
    return job_id ? gp_diagnose_job(s, job_id, &o, f, n, err, errlen)
                  : gp_diagnose_all(s, &o, f, n, err, errlen);
}

void gp_findings_report_text(gp_store *s, const char *job_id, FILE *out, int width,
                             const gp_report_acct *acct) {
    gp_finding *f = NULL;
    size_t n = 0;
    char err[256];
    fprintf(out, "\nFindings, ranked by badput explained, then headroom (goodput diagnose for "
                 "all of them):\n\n");
    if (diagnose_for_report(s, job_id, acct, &f, &n, err, sizeof err) != 0) {
        fprintf(out, "  (no diagnosis: %s)\n", err);
        return;
    }
    gp_findings_print_w(out, f, n, 10, width);
    free(f);
}

void gp_findings_report_json(gp_store *s, const char *job_id, json_t *root,
                             const gp_report_acct *acct) {
    gp_finding *f = NULL;
    size_t n = 0;
    char err[256];
    if (diagnose_for_report(s, job_id, acct, &f, &n, err, sizeof err) != 0) {
        json_object_set_new(root, "findings_error", json_string(err));
        return;
    }
    json_object_set_new(root, "findings", gp_findings_json(f, n, 0));
    free(f);
}

void gp_findings_demo_summary(const char *db, FILE *out) {
    gp_store *s;
    char err[256];
    if (gp_store_open(db, 0, &s, err, sizeof err) != 0) {
        fprintf(out, "diagnosis skipped: %s\n", err);
        return;
    }
    gp_finding *f = NULL;
    size_t n = 0;
    if (gp_diagnose_all(s, NULL, &f, &n, err, sizeof err) != 0) {
        fprintf(out, "diagnosis failed: %s\n", err);
        gp_store_close(s);
        return;
    }
    fprintf(out, "\nTop finding per job (goodput diagnose --db %s for evidence and fixes):\n", db);
    /* findings are ranked by badput, then headroom; the first one seen for a job is its
     * top finding */
    for (size_t i = 0; i < n; i++) {
        char job[96];
        snprintf(job, sizeof job, "%s", f[i].job_id[0] ? f[i].job_id : f[i].scope_id);
        char *slash = strchr(job, '/');
        if (slash) *slash = 0;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++) {
            char other[96];
            snprintf(other, sizeof other, "%s", f[k].job_id[0] ? f[k].job_id : f[k].scope_id);
            char *sl = strchr(other, '/');
            if (sl) *sl = 0;
            seen = !strcmp(other, job);
        }
        if (seen) continue;
        char bad[32], head[32];
        if (f[i].wasted_cost >= 0)
            snprintf(bad, sizeof bad, "$%.2f", f[i].wasted_cost);
        else
            snprintf(bad, sizeof bad, "$-");
        if (f[i].headroom_cost >= 0)
            snprintf(head, sizeof head, "$%.2f", f[i].headroom_cost);
        else
            snprintf(head, sizeof head, "$-");
        char lead[128];
        snprintf(lead, sizeof lead, "  %-17.17s %-20s badput %7s  headroom %7s", job,
                 gp_finding_class_name(f[i].cls), bad, head);
        fprintf(out, "%s\n", lead);
        gp_wrap_print(out, "    ", 4, f[i].summary, GP_TEXT_WIDTH);
    }
    free(f);
    gp_store_close(s);
}

static json_t *num(double v) {
    return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

json_t *gp_job_metrics_json(gp_store *s, const char *job_id, const gp_slo *slo,
                            double price_override, char *err, size_t errlen) {
    gp_job_input in;
    if (gp_job_input_load(s, job_id, &in, err, errlen) < 0) return NULL;
    gp_slo_override(&in.slo, slo);
    gp_features f;
    if (gp_features_compute(&in, &f, err, errlen) < 0) {
        gp_job_input_free(&in);
        return NULL;
    }
    const gp_gpu_spec *spec = NULL;
    for (size_t i = 0; i < in.n_allocs && !spec; i++)
        for (size_t k = 0; k < in.n_devices; k++)
            if (!strcmp(in.devices[k].uuid, in.allocs[i].uuid)) spec = in.devices[k].spec;
    gp_job job;
    int have_job = gp_store_get_job(s, job_id, &job) == 1;
    double price = gp_price_per_gpu_h(spec, price_override);
    int tokens = f.has_requests && !f.has_steps;
    double units = tokens ? f.good_tokens : f.units;
    gp_unit_economics ue;
    gp_unit_economics_compute(
        f.alloc_gpu_s, price, units, tokens || (have_job && !strcmp(job.unit_name, "tokens")),
        (double)f.n_steps, f.energy_j, tokens ? f.good_tok_per_s : f.units_per_s, f.n_gpus,
        have_job ? job.flops_per_unit : 0, have_job ? job.bytes_per_unit : 0, spec, &ue);
    json_t *o = json_object(), *tr = json_object(), *inf = json_object(), *ec = json_object(),
           *tel = json_object();
    json_object_set_new(o, "job", json_string(job_id));
    json_object_set_new(o, "activity_only", json_boolean(f.activity_only));
    if (f.activity_only)
        json_object_set_new(o, "note",
                            json_string("no workload events: activity-only estimate "
                                        "(low confidence), not goodput"));
    json_object_set_new(o, "gpus", json_integer(f.n_gpus));
    json_object_set_new(o, "allocated_gpu_s", json_real(f.alloc_gpu_s));
    json_object_set_new(o, "not_ready_s", num(f.not_ready_s));
    json_object_set_new(o, "queue_wait_s", num(f.queue_wait_s));
    json_object_set_new(o, "idle_share", num(f.idle_share));
    json_object_set_new(tel, "gpu_util_mean",
                        f.gpu_util.n ? json_real(f.gpu_util.mean) : json_null());
    json_object_set_new(tel, "sm_active_mean",
                        f.sm_active.n ? json_real(f.sm_active.mean) : json_null());
    json_object_set_new(tel, "tensor_active_mean",
                        f.tensor_active.n ? json_real(f.tensor_active.mean) : json_null());
    json_object_set_new(tel, "dram_active_mean",
                        f.dram_active.n ? json_real(f.dram_active.mean) : json_null());
    json_object_set_new(tel, "mem_used_frac_mean",
                        f.mem_frac.n ? json_real(f.mem_frac.mean) : json_null());
    json_object_set_new(tel, "power_vs_tdp_mean",
                        f.power_frac.n ? json_real(f.power_frac.mean) : json_null());
    json_object_set_new(tel, "throttle_share", num(f.throttle_share));
    json_object_set_new(tel, "interconnect_peak_share", num(f.interconnect_peak_share));
    json_object_set_new(tel, "energy_j", num(f.energy_j));
    /* 60: the telemetry above came from 1-minute rollups (a long allocation, diagnose.c) */
    json_object_set_new(tel, "rollup_s",
                        in.samples_step_ns > 0 ? json_integer(in.samples_step_ns / 1000000000)
                                               : json_null());
    json_object_set_new(o, "telemetry", tel);
    if (f.has_steps) {
        json_object_set_new(tr, "steps", json_integer(f.n_steps));
        json_object_set_new(tr, "ideal_step_s", num(f.ideal_step_s));
        json_object_set_new(tr, "mean_step_s", num(f.mean_step_s));
        json_object_set_new(tr, "step_cv", num(f.step_cv));
        json_object_set_new(tr, "step_drift", num(f.step_drift));
        json_object_set_new(tr, "units_per_s", num(f.units_per_s));
        json_object_set_new(tr, "data_wait_share", num(f.data_wait_share));
        json_object_set_new(tr, "checkpoint_share", num(f.checkpoint_share));
        json_object_set_new(tr, "init_share", num(f.init_share));
        json_object_set_new(tr, "restarts", json_integer(f.n_restarts));
        /* step-time deviation over time: 5-minute windows vs the ideal step time */
        gp_step_dev *sd = NULL;
        int nsd = gp_step_deviation_input(&in, f.t0_ns, f.t1_ns, 300LL * 1000000000LL,
                                          f.ideal_step_s, &sd);
        json_t *dev = json_array();
        for (int i = 0; i < nsd; i++) {
            json_t *x = json_object();
            json_object_set_new(x, "t0_ns", json_integer(sd[i].t0_ns));
            json_object_set_new(x, "t1_ns", json_integer(sd[i].t1_ns));
            json_object_set_new(x, "steps", json_integer(sd[i].steps));
            json_object_set_new(x, "median_step_s", num(sd[i].median_step_s));
            json_object_set_new(x, "deviation",
                                sd[i].median_step_s > 0 && f.ideal_step_s > 0
                                    ? json_real(sd[i].deviation)
                                    : json_null());
            json_array_append_new(dev, x);
        }
        free(sd);
        json_object_set_new(tr, "step_deviation_window_s", json_integer(300));
        json_object_set_new(tr, "step_deviation", dev);
        json_object_set_new(o, "training", tr);
    } else
        json_decref(tr);
    if (f.has_requests) {
        json_object_set_new(inf, "requests", json_integer(f.n_req));
        json_object_set_new(inf, "good_requests", json_integer(f.n_req_good));
        json_object_set_new(inf, "ttft_p50_s", num(f.ttft_p50_s));
        json_object_set_new(inf, "ttft_p90_s", num(f.ttft_p90_s));
        json_object_set_new(inf, "tpot_p50_s", num(f.tpot_p50_s));
        json_object_set_new(inf, "tpot_p90_s", num(f.tpot_p90_s));
        json_object_set_new(inf, "e2e_p50_s", num(f.e2e_p50_s));
        json_object_set_new(inf, "e2e_p90_s", num(f.e2e_p90_s));
        json_object_set_new(inf, "good_req_per_s", json_real(f.good_req_per_s));
        json_object_set_new(inf, "good_tok_per_s", json_real(f.good_tok_per_s));
        json_object_set_new(inf, "useful_gpu_s", num(f.useful_gpu_s));
        json_object_set_new(inf, "peak_req_per_s_1m", json_real(f.peak_req_per_s));
        json_object_set_new(inf, "headroom", num(f.headroom));
        json_object_set_new(o, "inference", inf);
    } else
        json_decref(inf);
    json_object_set_new(ec, "usd_per_gpu_h", json_real(price));
    json_object_set_new(ec, "usd", json_real(price * f.alloc_gpu_s / 3600));
    json_object_set_new(ec, "usd_per_unit", num(ue.usd_per_unit));
    json_object_set_new(ec, "usd_per_1m_tokens", num(ue.usd_per_1m_tokens));
    json_object_set_new(ec, "usd_per_1k_steps", num(ue.usd_per_1k_steps));
    json_object_set_new(ec, "j_per_unit", num(ue.j_per_unit));
    json_object_set_new(ec, "mfu", num(ue.mfu));
    json_object_set_new(ec, "mbu", num(ue.mbu));
    json_object_set_new(o, "economics", ec);
    /* rolling windows ending at the job's last data: 1 m, 5 m, 1 h */
    gp_rolling roll;
    int roll_ok = 0;
    if (f.t1_ns > f.t0_ns && in.samples_step_ns > 0) {
        /* a long job read from 1-minute rollups: the windows read the last hour raw */
        gp_job_input tail = in;
        gp_sample *raw = NULL;
        size_t nraw = 0;
        int64_t from = f.t1_ns - 3600LL * 1000000000 - 60LL * 1000000000;
        if (gp_job_input_raw_since(s, &in, from, &raw, &nraw) == 0) {
            tail.samples = raw;
            tail.n_samples = nraw;
            tail.samples_step_ns = 0;
            roll_ok = gp_features_rolling_with(&tail, f.t1_ns, &f, &roll, err, errlen) == 0;
        }
        free(raw);
    } else if (f.t1_ns > f.t0_ns)
        roll_ok = gp_features_rolling(&in, f.t1_ns, &roll, err, errlen) == 0;
    if (roll_ok) {
        json_t *ro = json_object();
        const gp_features *rf[3] = {&roll.m1, &roll.m5, &roll.h1};
        static const char *names[3] = {"1m", "5m", "1h"};
        for (int i = 0; i < 3; i++) {
            json_t *x = json_object();
            const gp_features *g = rf[i];
            json_object_set_new(x, "t0_ns", json_integer(g->t0_ns));
            json_object_set_new(x, "t1_ns", json_integer(g->t1_ns));
            json_object_set_new(x, "gpu_util_mean",
                                g->gpu_util.n ? json_real(g->gpu_util.mean) : json_null());
            json_object_set_new(x, "idle_share", num(g->idle_share));
            if (f.has_steps) {
                json_object_set_new(x, "steps", json_integer(g->n_steps));
                json_object_set_new(x, "median_step_s", num(g->ideal_step_s));
                json_object_set_new(x, "step_deviation",
                                    g->ideal_step_s > 0 && f.ideal_step_s > 0
                                        ? json_real(g->ideal_step_s / f.ideal_step_s - 1)
                                        : json_null());
                json_object_set_new(x, "units_per_s", num(g->units_per_s));
            }
            if (f.has_requests) {
                json_object_set_new(x, "requests", json_integer(g->n_req));
                json_object_set_new(x, "good_requests", json_integer(g->n_req_good));
                json_object_set_new(x, "good_req_per_s", json_real(g->good_req_per_s));
            }
            json_object_set_new(ro, names[i], x);
        }
        json_object_set_new(o, "rolling", ro);
    }
    gp_job_input_free(&in);
    return o;
}

void gp_finding_html_body(FILE *f, const gp_finding *x) {
    gp_html_esc(f, x->summary);
    fputs("<ul>", f);
    for (int e = 0; e < x->n_evidence; e++) {
        const gp_evidence *v = &x->evidence[e];
        fputs("<li class=\"ev\">", f);
        gp_html_esc(f, v->metric);
        fprintf(f, " = %.4g %s %.4g (", v->value, v->op, v->threshold);
        gp_html_esc(f, v->source);
        fputs(")</li>", f);
    }
    fputs("</ul><p class=\"fix\">Fix: ", f);
    gp_html_esc(f, x->recommendation);
    fputs("</p>", f);
}
