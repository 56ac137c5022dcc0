/* report_steps.c: the per-step view (ProfilerStep#N: step time, GPU busy, idle by host
 * cause, kernel time by class, data-loading share; then the median and p95 over steps) and
 * the idle-by-cause and runs sections, in text, JSON and HTML. Unknown is unknown: a value
 * that cannot be computed is "-" in text and null in JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/report_int.h"
#include "util/term.h"

/* Step metrics, in the order of the columns. */
enum {
    M_DUR,
    M_BUSY_PCT,
    M_COMPUTE,
    M_COMM,
    M_MEMORY,
    M_DATA_PCT,
    M_IDLE0, /* then one per cause */
    M__COUNT = M_IDLE0 + GP_IC__COUNT
};

static const char *metric_name(int m, char *buf, size_t len) {
    static const char *const n[] = {"dur_us",  "gpu_busy_pct", "compute_us",
                                    "comm_us", "memory_us",    "dataloader_share_pct"};
    if (m < M_IDLE0) return n[m];
    snprintf(buf, len, "idle_%s_us", gp_idle_cause_name(m - M_IDLE0));
    return buf;
}

static double step_metric(const gp_step_util *s, int m) {
    double d = s->t1 - s->t0;
    switch (m) {
    case M_DUR:
        return d;
    case M_BUSY_PCT:
        return d > 0 ? 100 * s->busy_us / d : NAN;
    case M_COMPUTE:
        return s->compute_us;
    case M_COMM:
        return s->comm_us;
    case M_MEMORY:
        return s->memory_us;
    case M_DATA_PCT:
        return d > 0 ? 100 * s->data_us / d : NAN;
    default:
        return s->idle_us[m - M_IDLE0];
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* numpy's default (linear) quantile over the defined values; NaN when none. */
static double quantile(const gp_rank_result *r, int m, double q) {
    double *v = malloc((r->n_steps + 1) * sizeof *v);
    if (!v) abort();
    size_t n = 0;
    for (size_t i = 0; i < r->n_steps; i++) {
        double x = step_metric(&r->steps[i], m);
        if (!isnan(x)) v[n++] = x;
    }
    double out = NAN;
    if (n) {
        qsort(v, n, sizeof *v, cmp_d);
        double pos = q * (double)(n - 1);
        size_t lo = (size_t)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
        out = v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
    }
    free(v);
    return out;
}

static void put(FILE *f, const char *fmt, double v, int width) {
    if (isnan(v))
        fprintf(f, " %*s", width, "-");
    else
        fprintf(f, fmt, width, v);
}

/* Columns of the per-step table: the time split (one table) and the idle causes (a
 * second table when the text must fit 100 columns; one wide table with --wide). */
enum { COLS_TIME = 1, COLS_IDLE = 2 };

static void text_row(FILE *f, int rank, const char *label, const double *v, int cols) {
    fprintf(f, "  %-4d %-18.18s", rank, label);
    if (cols & COLS_TIME) {
        put(f, " %*.0f", v[M_DUR], 10);
        put(f, " %*.1f", v[M_BUSY_PCT], 6);
    }
    if (cols & COLS_IDLE)
        for (int c = 0; c < GP_IC__COUNT; c++)
            put(f, " %*.0f", v[M_IDLE0 + c], 9);
    if (cols & COLS_TIME) {
        put(f, " %*.0f", v[M_COMPUTE], 9);
        put(f, " %*.0f", v[M_COMM], 9);
        put(f, " %*.0f", v[M_MEMORY], 9);
        put(f, " %*.1f", v[M_DATA_PCT], 6);
    }
    fputc('\n', f);
}

static void steps_table(const gp_trace_report *rep, FILE *f, int cols) {
    fprintf(f, "  %-4s %-18s", "rank", "step");
    if (cols & COLS_TIME) fprintf(f, " %10s %6s", "time", "busy%");
    if (cols & COLS_IDLE)
        fprintf(f, " %9s %9s %9s %9s %9s %9s %9s", "i:data", "i:sync", "i:optim", "i:launch",
                "i:coll", "i:prof", "i:unkn");
    if (cols & COLS_TIME) fprintf(f, " %9s %9s %9s %6s", "compute", "comm", "memory", "data%");
    fputc('\n', f);
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        double v[M__COUNT];
        for (size_t s = 0; s < r->n_steps; s++) {
            for (int m = 0; m < M__COUNT; m++)
                v[m] = step_metric(&r->steps[s], m);
            text_row(f, r->rank, r->steps[s].name, v, cols);
        }
        if (r->n_steps < 2) continue;
        for (int q = 0; q < 2; q++) {
            for (int m = 0; m < M__COUNT; m++)
                v[m] = quantile(r, m, q ? 0.95 : 0.5);
            text_row(f, r->rank, q ? "p95" : "median", v, cols);
        }
    }
}

void gp_trace_text_steps(const gp_trace_report *rep, FILE *f, int width) {
    int any = 0;
    for (size_t i = 0; i < rep->n_ranks; i++)
        any |= rep->ranks[i].n_steps > 0;
    if (!any) return;
    if (width <= 0) {
        fprintf(f, "\nPer ProfilerStep (µs; idle split by what the host was doing)\n");
        steps_table(rep, f, COLS_TIME | COLS_IDLE);
        return;
    }
    fprintf(f, "\nPer ProfilerStep (µs)\n");
    steps_table(rep, f, COLS_TIME);
    fprintf(f, "\nPer ProfilerStep: GPU idle by what the host was doing (µs)\n");
    steps_table(rep, f, COLS_IDLE);
}

/* Short column heads for the narrow table, with a legend: whole cause names are 15 wide. */
static const char *const cause_head[GP_IC__COUNT] = {
    [GP_IC_DATA] = "data",      [GP_IC_SYNC] = "sync",       [GP_IC_OPTIMIZER] = "optim",
    [GP_IC_LAUNCH] = "launch",  [GP_IC_COLLECTIVE] = "coll", [GP_IC_PROFILER] = "profiler",
    [GP_IC_UNKNOWN] = "unknown"};

void gp_trace_text_causes(const gp_trace_report *rep, FILE *f, int width) {
    int cw = width > 0 ? 9 : 15;
    fprintf(f, "\nGPU idle by host cause (µs; gaps with no work on any stream)\n");
    if (width > 0)
        fprintf(f, "  (data = data_loading, optim = optimizer, launch = launch_overhead, coll = "
                   "collective)\n");
    fprintf(f, "  %-5s %6s", "rank", "busy%");
    for (int c = 0; c < GP_IC__COUNT; c++)
        fprintf(f, " %*s", cw, width > 0 ? cause_head[c] : gp_idle_cause_name(c));
    fprintf(f, " %7s\n", "data%");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        fprintf(f, "  %-5d", r->rank);
        put(f, " %*.1f", r->span_us > 0 ? 100 * (r->span_us - r->idle_us) / r->span_us : NAN, 6);
        for (int c = 0; c < GP_IC__COUNT; c++)
            put(f, " %*.0f", r->idle_cause_us[c], cw);
        put(f, " %*.1f", 100 * r->data_share, 7);
        fputc('\n', f);
        if (r->rounding_us > 0)
            fprintf(f, "        %-15s %10.0f µs  (opened by rounding float timestamps inward)\n",
                    "rounding", r->rounding_us);
        /* "        data_loading          1101 µs       1 calls  " is 54 columns */
        char nm[256];
        for (size_t k = 0; k < r->n_ops; k++)
            if (r->ops[k].cause != GP_IC_LAUNCH || k == 0)
                fprintf(f, "        %-15s %10.0f µs %7llu calls  %s\n",
                        gp_idle_cause_name(r->ops[k].cause), r->ops[k].total_us,
                        (unsigned long long)r->ops[k].count,
                        gp_ellipsize(r->ops[k].name, width > 0 ? width - 54 : 0, nm, sizeof nm));
    }
}

void gp_trace_text_runs(const gp_trace_report *rep, FILE *f, int width) {
    if (rep->n_runs <= 1) return;
    fprintf(f, "Runs: %d (files of the same rank from different runs are kept apart, not summed)\n",
            rep->n_runs);
    for (int run = 0; run < rep->n_runs; run++)
        for (size_t i = 0; i < rep->n_ranks; i++) {
            const gp_rank_result *r = &rep->ranks[i];
            if (r->run != run) continue;
            char line[1200];
            snprintf(line, sizeof line, "run %d rank %-3d pid %-8lld start %.0f µs  %s", run + 1,
                     r->rank, (long long)r->pid, r->t_first_us, r->path);
            gp_wrap_print(f, "  ", 6, line, width);
        }
    fputc('\n', f);
}

static json_t *jnull_or(double v) {
    return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

void gp_trace_json_rank_extra(const gp_rank_result *r, json_t *o) {
    char buf[48];
    json_object_set_new(o, "run", json_integer(r->run + 1));
    json_object_set_new(o, "pid", r->pid >= 0 ? json_integer((json_int_t)r->pid) : json_null());
    json_object_set_new(o, "base_time_ns",
                        r->base_time_ns >= 0 ? json_integer((json_int_t)r->base_time_ns)
                                             : json_null());
    json_object_set_new(o, "start_us", jnull_or(r->t_first_us));
    json_t *ic = json_object();
    json_object_set_new(ic, "attributed", json_boolean(r->attributed));
    json_object_set_new(
        ic, "gpu_busy_pctg",
        jnull_or(r->span_us > 0 ? 100 * (r->span_us - r->idle_us) / r->span_us : NAN));
    double tot = 0;
    for (int c = 0; c < GP_IC__COUNT; c++)
        tot += r->idle_cause_us[c];
    json_t *us = json_object(), *share = json_object();
    for (int c = 0; c < GP_IC__COUNT; c++) {
        json_object_set_new(us, gp_idle_cause_name(c), jnull_or(r->idle_cause_us[c]));
        json_object_set_new(share, gp_idle_cause_name(c),
                            jnull_or(tot > 0 ? r->idle_cause_us[c] / tot : NAN));
    }
    json_object_set_new(ic, "idle_us", us);
    /* not a cause: the idle HTA's inward rounding of float timestamps opened (causes plus this
     * are the temporal idle); 0 on traces with integer timestamps */
    json_object_set_new(ic, "rounding_us", jnull_or(r->rounding_us));
    json_object_set_new(ic, "idle_share", share);
    json_object_set_new(ic, "dataloader_share_of_step", jnull_or(r->data_share));
    json_t *ops = json_array();
    for (size_t k = 0; k < r->n_ops; k++) {
        json_t *x = json_object();
        json_object_set_new(x, "cause", json_string(gp_idle_cause_name(r->ops[k].cause)));
        json_object_set_new(x, "name", json_string(r->ops[k].name));
        json_object_set_new(x, "count", json_integer((json_int_t)r->ops[k].count));
        json_object_set_new(x, "total_us", jnull_or(r->ops[k].total_us));
        json_array_append_new(ops, x);
    }
    json_object_set_new(ic, "top_ops", ops);
    json_object_set_new(o, "idle_causes", ic);
    json_t *steps = json_array();
    for (size_t s = 0; s < r->n_steps; s++) {
        const gp_step_util *st = &r->steps[s];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(st->name));
        json_object_set_new(x, "gpu_busy_us", jnull_or(st->busy_us)); /* kept for older readers */
        for (int m = 0; m < M__COUNT; m++)
            json_object_set_new(x, metric_name(m, buf, sizeof buf), jnull_or(step_metric(st, m)));
        json_object_set_new(x, "idle_rounding_us", jnull_or(st->rounding_us));
        json_array_append_new(steps, x);
    }
    json_object_set_new(o, "steps", steps);
    json_t *sum = json_object();
    for (int q = 0; q < 2; q++) {
        json_t *x = json_object();
        for (int m = 0; m < M__COUNT; m++)
            json_object_set_new(x, metric_name(m, buf, sizeof buf),
                                jnull_or(quantile(r, m, q ? 0.95 : 0.5)));
        json_object_set_new(sum, q ? "p95" : "median", x);
    }
    json_object_set_new(o, "step_summary", sum);
}

json_t *gp_trace_json_runs(const gp_trace_report *rep) {
    json_t *runs = json_array();
    for (int run = 0; run < rep->n_runs; run++) {
        json_t *x = json_object(), *files = json_array(), *ranks = json_array();
        for (size_t i = 0; i < rep->n_ranks; i++)
            if (rep->ranks[i].run == run) {
                json_array_append_new(files, json_string(rep->ranks[i].path));
                json_array_append_new(ranks, json_integer(rep->ranks[i].rank));
            }
        json_object_set_new(x, "run", json_integer(run + 1));
        json_object_set_new(x, "ranks", ranks);
        json_object_set_new(x, "files", files);
        json_array_append_new(runs, x);
    }
    return runs;
}

static void html_num(FILE *f, const char *fmt, double v) {
    if (isnan(v))
        fputs("<td>-</td>", f);
    else {
        fputs("<td>", f);
        fprintf(f, fmt, v);
        fputs("</td>", f);
    }
}

/* A column name that may wrap after each underscore, so a 14-column table fits the page
 * without cutting names mid-word. */
static void th_wbr(FILE *f, const char *s) {
    fputs("<th>", f);
    for (; *s; s++) {
        fputc(*s, f);
        if (*s == '_') fputs("<wbr>", f);
    }
    fputs("</th>", f);
}

void gp_trace_html_steps(const gp_trace_report *rep, FILE *f) {
    fprintf(f, "<h2 id=\"idle-table\">GPU idle by host cause "
               "(µs)</h2><table><tr><th>rank</th><th>busy %%</th>");
    for (int c = 0; c < GP_IC__COUNT; c++)
        th_wbr(f, gp_idle_cause_name(c));
    fprintf(f, "<th>DataLoader %% of step</th></tr>\n");
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        fprintf(f, "<tr><td>%d</td>", r->rank);
        html_num(f, "%.1f", r->span_us > 0 ? 100 * (r->span_us - r->idle_us) / r->span_us : NAN);
        for (int c = 0; c < GP_IC__COUNT; c++)
            html_num(f, "%.0f", r->idle_cause_us[c]);
        html_num(f, "%.1f", 100 * r->data_share);
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    int any = 0;
    for (size_t i = 0; i < rep->n_ranks; i++)
        any |= rep->ranks[i].n_steps > 0;
    if (!any) return;
    char buf[48];
    fprintf(f, "<h2 id=\"steps\">Per ProfilerStep</h2><table><tr><th>rank</th><th>step</th>");
    for (int m = 0; m < M__COUNT; m++)
        th_wbr(f, metric_name(m, buf, sizeof buf));
    fputs("</tr>\n", f);
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        for (size_t s = 0; s < r->n_steps + (r->n_steps >= 2 ? 2 : 0); s++) {
            const char *label = s < r->n_steps    ? r->steps[s].name
                                : s == r->n_steps ? "median"
                                                  : "p95";
            fprintf(f, "<tr><td>%d</td><td class=\"l\">%s</td>", r->rank, label);
            for (int m = 0; m < M__COUNT; m++)
                html_num(f, "%.1f",
                         s < r->n_steps ? step_metric(&r->steps[s], m)
                                        : quantile(r, m, s == r->n_steps ? 0.5 : 0.95));
            fputs("</tr>\n", f);
        }
    }
    fputs("</table>\n", f);
}
