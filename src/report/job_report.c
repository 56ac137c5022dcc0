/* job_report.c: renders job summaries as a text table or as JSON (jansson).
 * Unknown values print as "-" in text and null in JSON; never as 0. */
#include "report/job_report.h"

#include "util/term.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void fmt_num(char *buf, size_t cap, double v, const char *fmt) {
    if (v < 0 || !isfinite(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, fmt, v);
}

static void fmt_pct(char *buf, size_t cap, double v) {
    if (v < 0 || !isfinite(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.1f%%", v * 100);
}

/* "45s", "27m", "3.4h", "12d"; "-" when unknown. Fits 6 columns. */
static void fmt_dur(char *buf, size_t cap, double s) {
    if (s < 0 || !isfinite(s))
        snprintf(buf, cap, "-");
    else if (s < 120)
        snprintf(buf, cap, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.0fm", s / 60);
    else if (s < 172800)
        snprintf(buf, cap, "%.1fh", s / 3600);
    else
        snprintf(buf, cap, "%.0fd", s / 86400);
}

/* A share as a whole percentage ("97%"): the 100-column table has no room for tenths. */
static void fmt_pct0(char *buf, size_t cap, double v) {
    if (v < 0 || !isfinite(v))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.0f%%", v * 100);
}

/* Badput table headers: whole names where they fit 9 columns, else a short form the
 * legend under the table spells out (never a name cut mid-word). */
static const char *bucket_header(gp_bucket b) {
    switch (b) {
    case GP_B_CHECKPOINT:
        return "CHECKPT";
    case GP_B_WASTED_PROGRESS:
        return "WASTED";
    case GP_B_IDLE_ALLOCATED:
        return "IDLE";
    default:
        break;
    }
    return NULL; /* the bucket's own name, upper-cased by the caller */
}

/* Fits 100 columns: GPU-hours in GPU_H columns, durations humanised, shares in whole
 * percent except goodput. */
void gp_report_text(FILE *f, const gp_job_summary *js, size_t n, int width) {
    /* job ids: 15 columns (17 in the badput table), shortened in the middle; --wide: the
     * longest id */
    int idw = 15;
    for (size_t i = 0; width <= 0 && i < n; i++)
        if ((int)strlen(js[i].job.id) > idw) idw = (int)strlen(js[i].job.id);
    int idw2 = idw + 2;
    char idb[256];
    fprintf(f, "%-*s %-13s %4s %11s %5s %5s %10s %4s %4s %6s %5s %7s\n", idw, "JOB", "KIND", "GPUS",
            "ALLOC_GPU_H", "QUEUE", "READY", "BUSY_GPU_H", "UTIL", "SM", "TENSOR", "KWH",
            "GOODPUT");
    for (size_t i = 0; i < n; i++) {
        const gp_job_summary *s = &js[i];
        char q[16], r[16], busy[16], util[16], sm[16], ten[16], en[16], gp[16];
        fmt_dur(q, sizeof q, s->queue_wait_s);
        fmt_dur(r, sizeof r, s->time_to_ready_s);
        fmt_num(busy, sizeof busy, s->busy_gpu_h, "%.2f");
        fmt_pct0(util, sizeof util, s->mean_gpu_util);
        fmt_pct0(sm, sizeof sm, s->mean_sm_active);
        fmt_pct0(ten, sizeof ten, s->mean_tensor_active);
        fmt_num(en, sizeof en, s->energy_kwh,
                s->energy_kwh < 10     ? "%.3f"
                : s->energy_kwh < 1000 ? "%.1f"
                                       : "%.0f");
        fmt_pct(gp, sizeof gp, s->gp.goodput);
        fprintf(f, "%-*s %-13s %4d %11.2f %5s %5s %10s %4s %4s %6s %5s %7s\n", idw,
                gp_ellipsize(s->job.id, idw, idb, sizeof idb), gp_job_kind_name(s->gp.kind),
                s->n_gpus, s->allocated_gpu_h, q, r, busy, util, sm, ten, en, gp);
    }
    fprintf(f, "\nBadput (share of allocated GPU-time; goodput is the rest):\n%-*s", idw2, "JOB");
    for (int b = 1; b < GP_B__COUNT; b++) {
        const char *h = bucket_header((gp_bucket)b);
        char up[16];
        if (!h) {
            snprintf(up, sizeof up, "%s", gp_bucket_name((gp_bucket)b));
            for (char *c = up; *c; c++)
                if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
            h = up;
        }
        fprintf(f, " %9s", h);
    }
    fprintf(f, "\n");
    for (size_t i = 0; i < n; i++) {
        const gp_job_summary *s = &js[i];
        fprintf(f, "%-*s", idw2, gp_ellipsize(s->job.id, idw2, idb, sizeof idb));
        for (int b = 1; b < GP_B__COUNT; b++) {
            char p[16];
            fmt_pct0(p, sizeof p,
                     s->gp.allocated_gpu_s > 0 ? s->gp.bucket_gpu_s[b] / s->gp.allocated_gpu_s
                                               : -1);
            fprintf(f, " %9s", p);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "(CHECKPT = checkpoint, WASTED = wasted_progress, IDLE = idle_allocated; "
               "docs/goodput.md)\n");
    fprintf(f, "\nProgress:\n");
    for (size_t i = 0; i < n; i++) {
        const gp_job_summary *s = &js[i];
        const gp_goodput *g = &s->gp;
        if (g->kind == GP_JK_TRAINING)
            fprintf(f, "  %-18s %lld steps (%lld kept, %lld redone), %.0f %s, median step %.3f s\n",
                    s->job.id, (long long)g->steps, (long long)g->kept_steps,
                    (long long)g->redone_steps, g->units,
                    s->job.unit_name[0] ? s->job.unit_name : "units", g->median_step_s);
        else if (g->kind == GP_JK_INFERENCE)
            fprintf(
                f,
                "  %-18s %lld requests (%lld good, %lld failed), %.0f output tokens (%.0f good)\n",
                s->job.id, (long long)g->requests, (long long)g->good_requests,
                (long long)g->failed_requests, g->tokens, g->good_tokens);
        else if (g->kind == GP_JK_PIPELINE)
            fprintf(f, "  %-18s %lld items through its GPU stage(s) (goodput pipeline --job %s)\n",
                    s->job.id, (long long)g->items, s->job.id);
        else if (g->kind == GP_JK_NEVER_READY)
            fprintf(f, "  %-18s never made progress while holding %.2f GPU-h\n", s->job.id,
                    s->allocated_gpu_h);
        else
            fprintf(f, "  %-18s sent no progress events: activity-only estimate, goodput unknown\n",
                    s->job.id);
    }
    /* A job whose events retention deleted shows the result stored before (job_results.h):
     * say so, it can no longer be computed again (a window of it is refused). */
    for (size_t i = 0; i < n; i++) {
        if (js[i].events_pruned_ns <= 0) continue;
        time_t t = (time_t)(js[i].events_pruned_ns / 1000000000LL);
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
        fprintf(f,
                "note: %s: events deleted by retention (those before %s); its stored result is"
                " shown\n",
                js[i].job.id, when);
    }
}

static json_t *num_or_null(double v) {
    return (v < 0 || !isfinite(v)) ? json_null() : json_real(v);
}
static json_t *time_or_null(int64_t v) {
    return v < 0 ? json_null() : json_integer(v);
}

json_t *gp_report_json_job(const gp_job_summary *s) {
    const gp_goodput *g = &s->gp;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(s->job.id));
    json_object_set_new(o, "name", json_string(s->job.name));
    json_object_set_new(o, "user", s->job.user[0] ? json_string(s->job.user) : json_null());
    json_object_set_new(o, "kind", json_string(gp_job_kind_name(g->kind)));
    json_object_set_new(o, "gpus", json_integer(s->n_gpus));
    json_object_set_new(o, "submitted_ns", time_or_null(s->job.submitted_ns));
    json_object_set_new(o, "allocated_ns", time_or_null(s->job.allocated_ns));
    json_object_set_new(o, "ready_ns", time_or_null(g->ready_ns));
    json_object_set_new(o, "ended_ns", time_or_null(s->job.ended_ns));
    json_object_set_new(o, "exit_state",
                        s->job.exit_state[0] ? json_string(s->job.exit_state) : json_null());
    json_object_set_new(o, "allocated_gpu_h", json_real(s->allocated_gpu_h));
    json_object_set_new(o, "queue_wait_s", num_or_null(s->queue_wait_s));
    json_object_set_new(o, "time_to_ready_s", num_or_null(s->time_to_ready_s));
    json_object_set_new(o, "busy_gpu_h", num_or_null(s->busy_gpu_h));
    json_object_set_new(o, "mean_gpu_util", num_or_null(s->mean_gpu_util));
    json_object_set_new(o, "mean_sm_active", num_or_null(s->mean_sm_active));
    json_object_set_new(o, "mean_tensor_active", num_or_null(s->mean_tensor_active));
    json_object_set_new(o, "mean_dram_active", num_or_null(s->mean_dram_active));
    json_object_set_new(o, "mean_mem_used_frac", num_or_null(s->mean_mem_used_frac));
    json_object_set_new(o, "proc_mem_max_bytes", num_or_null(s->proc_mem_max_bytes));
    json_object_set_new(o, "energy_kwh", num_or_null(s->energy_kwh));
    json_object_set_new(o, "goodput", num_or_null(g->goodput));
    if (s->events_pruned_ns > 0) /* only then: other jobs' JSON is unchanged */
        json_object_set_new(o, "events_pruned_before_ns", json_integer(s->events_pruned_ns));
    json_t *b = json_object();
    for (int k = 0; k < GP_B__COUNT; k++)
        json_object_set_new(b, gp_bucket_name((gp_bucket)k), json_real(g->bucket_gpu_s[k]));
    json_object_set_new(o, "gpu_s_by_bucket", b);
    json_object_set_new(o, "allocated_gpu_s", json_real(g->allocated_gpu_s));
    if (g->kind == GP_JK_TRAINING) {
        json_object_set_new(o, "steps", json_integer(g->steps));
        json_object_set_new(o, "kept_steps", json_integer(g->kept_steps));
        json_object_set_new(o, "redone_steps", json_integer(g->redone_steps));
        json_object_set_new(o, "units", json_real(g->units));
        json_object_set_new(o, "unit_name",
                            json_string(s->job.unit_name[0] ? s->job.unit_name : "units"));
        json_object_set_new(o, "median_step_s", num_or_null(g->median_step_s));
    } else if (g->kind == GP_JK_PIPELINE) {
        json_object_set_new(o, "items", json_integer(g->items));
    } else if (g->kind == GP_JK_INFERENCE) {
        json_object_set_new(o, "requests", json_integer(g->requests));
        json_object_set_new(o, "good_requests", json_integer(g->good_requests));
        json_object_set_new(o, "failed_requests", json_integer(g->failed_requests));
        json_object_set_new(o, "tokens", json_real(g->tokens));
        json_object_set_new(o, "good_tokens", json_real(g->good_tokens));
    }
    return o;
}

/* Per-owner rollup: GPU-hours held and productive, by user (or "-" when unknown). Jobs
 * without a goodput (activity-only) add to held hours only, so the owner's goodput is
 * over the hours where it is known. */
typedef struct {
    char user[GP_NAME_MAX];
    int jobs;
    double alloc_h, known_h, productive_h;
} owner_row;

static size_t owners(const gp_job_summary *js, size_t n, owner_row *rows) {
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        const char *u = js[i].job.user[0] ? js[i].job.user : "-";
        size_t k = 0;
        while (k < nr && strcmp(rows[k].user, u) != 0)
            k++;
        if (k == nr) {
            memset(&rows[nr], 0, sizeof rows[nr]);
            snprintf(rows[nr].user, sizeof rows[nr].user, "%s", u);
            nr++;
        }
        rows[k].jobs++;
        rows[k].alloc_h += js[i].allocated_gpu_h;
        if (js[i].gp.goodput >= 0) {
            rows[k].known_h += js[i].allocated_gpu_h;
            rows[k].productive_h += js[i].gp.bucket_gpu_s[GP_B_PRODUCTIVE] / 3600.0;
        }
    }
    return nr;
}

void gp_report_owners_text(FILE *f, const gp_job_summary *js, size_t n, int width) {
    (void)width; /* the owner table is 60 columns */
    owner_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return;
    size_t nr = owners(js, n, rows);
    fprintf(f, "\nBy owner:\n  %-16s %5s %11s %16s %8s\n", "USER", "JOBS", "ALLOC_GPU_H",
            "PRODUCTIVE_GPU_H", "GOODPUT");
    for (size_t k = 0; k < nr; k++) {
        char gp[16];
        fmt_pct(gp, sizeof gp, rows[k].known_h > 0 ? rows[k].productive_h / rows[k].known_h : -1);
        fprintf(f, "  %-16s %5d %11.2f %16.2f %8s\n", rows[k].user, rows[k].jobs, rows[k].alloc_h,
                rows[k].productive_h, gp);
    }
    free(rows);
}

json_t *gp_report_owners_json(const gp_job_summary *js, size_t n) {
    json_t *arr = json_array();
    owner_row *rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) return arr;
    size_t nr = owners(js, n, rows);
    for (size_t k = 0; k < nr; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "user", json_string(rows[k].user));
        json_object_set_new(o, "jobs", json_integer(rows[k].jobs));
        json_object_set_new(o, "allocated_gpu_h", json_real(rows[k].alloc_h));
        json_object_set_new(o, "productive_gpu_h", json_real(rows[k].productive_h));
        json_object_set_new(
            o, "goodput",
            num_or_null(rows[k].known_h > 0 ? rows[k].productive_h / rows[k].known_h : -1));
        json_array_append_new(arr, o);
    }
    free(rows);
    return arr;
}
