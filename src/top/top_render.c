/* top_render.c: the rows `goodput top` shows, as text. The terminal view and the plain
 * output print these same strings, and percentages use the report's format (one decimal,
 * '-' for unknown), so a row can be compared with `goodput report` as it is. */
#include <stdlib.h>
#include <string.h>

#include "top/top.h"
#include "util/term.h"

static const char *GPU_COLS[] = {"IDX", "NAME", "UTIL", "MEM_GIB", "POWER_W", "GOODPUT", "JOBS"};
static const char *JOB_COLS[] = {"JOB",         "USER", "KIND",    "STATE", "GPUS",
                                 "ALLOC_GPU_H", "UTIL", "GOODPUT", "MEM",   "FINDING"};

int gp_top_ncols(gp_top_view v) {
    return v == GP_TOP_VIEW_GPU ? 7 : 10;
}

const char *gp_top_col_name(gp_top_view v, int col) {
    if (col < 0 || col >= gp_top_ncols(v)) return "";
    return v == GP_TOP_VIEW_GPU ? GPU_COLS[col] : JOB_COLS[col];
}

static void pct(char *b, size_t n, double x) {
    if (x < 0)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.1f%%", 100 * x);
}

static void num(char *b, size_t n, double x, int prec) {
    if (x < 0)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.*f", prec, x);
}

/* ---- sorting: numbers descending (unknown last), text ascending ---- */

static int cmp_num(double a, double b) {
    if (a < 0 && b < 0) return 0;
    if (a < 0) return 1;
    if (b < 0) return -1;
    return a < b ? 1 : a > b ? -1 : 0;
}

static int gpu_col(const gp_top_gpu *a, const gp_top_gpu *b, int col) {
    switch (col) {
    case 0:
        return a->index - b->index;
    case 1:
        return strcmp(a->name, b->name);
    case 2:
        return cmp_num(a->util, b->util);
    case 3:
        return cmp_num(a->mem_used_gib, b->mem_used_gib);
    case 4:
        return cmp_num(a->power_w, b->power_w);
    case 5:
        return cmp_num(a->goodput, b->goodput);
    default:
        return strcmp(a->jobs, b->jobs);
    }
}

static int job_col(const gp_top_job *a, const gp_top_job *b, int col) {
    switch (col) {
    case 0:
        return strcmp(a->id, b->id);
    case 1:
        return strcmp(a->user, b->user);
    case 2:
        return strcmp(a->kind, b->kind);
    case 3:
        return strcmp(a->state, b->state);
    case 4:
        return b->gpus - a->gpus;
    case 5:
        return cmp_num(a->alloc_gpu_h, b->alloc_gpu_h);
    case 6:
        return cmp_num(a->util, b->util);
    case 7:
        return cmp_num(a->goodput, b->goodput);
    case 8:
        return cmp_num(a->mem_frac, b->mem_frac);
    default:
        return strcmp(a->finding, b->finding);
    }
}

/* Ties keep a fixed order (GPU index, job id), so rows do not jump between refreshes. */
static int cmp_gpu(const void *a, const void *b, void *ctx) {
    int c = gpu_col(a, b, *(const int *)ctx);
    return c ? c : gpu_col(a, b, 0);
}

static int cmp_job(const void *a, const void *b, void *ctx) {
    int c = job_col(a, b, *(const int *)ctx);
    return c ? c : job_col(a, b, 0);
}

void gp_top_sort(gp_top_snap *s, gp_top_view v, int col) {
    if (v == GP_TOP_VIEW_GPU)
        qsort_r(s->gpus, s->n_gpus, sizeof *s->gpus, cmp_gpu, &col);
    else
        qsort_r(s->jobs, s->n_jobs, sizeof *s->jobs, cmp_job, &col);
}

/* ---- lines ---- */

#define GPU_FMT "%-4s %-22.22s %6s %13s %8s %8s  %s"
#define JOB_FMT "%-18.18s %-10.10s %-13.13s %-9s %5s %12s %6s %8s %6s  %s"

void gp_top_header(char *buf, size_t n, gp_top_view v, int sort_col_, int mark) {
    char h[10][16];
    int nc = gp_top_ncols(v);
    for (int k = 0; k < nc; k++)
        snprintf(h[k], sizeof h[k], "%s%s", gp_top_col_name(v, k),
                 mark && k == sort_col_ ? "*" : "");
    if (v == GP_TOP_VIEW_GPU)
        snprintf(buf, n, GPU_FMT, h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    else
        snprintf(buf, n, JOB_FMT, h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8], h[9]);
}

void gp_top_row(char *buf, size_t n, const gp_top_snap *s, gp_top_view v, size_t i) {
    if (v == GP_TOP_VIEW_GPU) {
        const gp_top_gpu *g = &s->gpus[i];
        char idx[8], util[16], mem[32], pw[16], gput[16];
        snprintf(idx, sizeof idx, "%d", g->index);
        pct(util, sizeof util, g->util);
        if (g->mem_used_gib < 0)
            snprintf(mem, sizeof mem, "-");
        else if (g->mem_total_gib < 0)
            snprintf(mem, sizeof mem, "%.1f/-", g->mem_used_gib);
        else
            snprintf(mem, sizeof mem, "%.1f/%.0f", g->mem_used_gib, g->mem_total_gib);
        num(pw, sizeof pw, g->power_w, 0);
        pct(gput, sizeof gput, g->goodput);
        snprintf(buf, n, GPU_FMT, idx, g->name, util, mem, pw, gput, g->jobs[0] ? g->jobs : "-");
    } else {
        const gp_top_job *j = &s->jobs[i];
        char gpus[12], ah[24], util[16], gput[16], mem[16];
        snprintf(gpus, sizeof gpus, "%d", j->gpus);
        num(ah, sizeof ah, j->alloc_gpu_h, 2);
        pct(util, sizeof util, j->util);
        pct(gput, sizeof gput, j->goodput);
        pct(mem, sizeof mem, j->mem_frac);
        snprintf(buf, n, JOB_FMT, j->id, j->user[0] ? j->user : "-", j->kind, j->state, gpus, ah,
                 util, gput, mem, j->finding[0] ? j->finding : "-");
    }
}

/* Where FINDING starts in a job line (JOB_FMT's fixed columns). */
#define JOB_FINDING_COL 98

static void cut_finding(char *line) {
    if (strlen(line) > JOB_FINDING_COL) line[JOB_FINDING_COL] = 0;
    size_t n = strlen(line);
    while (n && line[n - 1] == ' ')
        line[--n] = 0;
}

void gp_top_text(FILE *f, const gp_top_snap *s, int width) {
    char line[1024], jobs[512];
    fprintf(f, "GPUs\n");
    gp_top_header(line, sizeof line, GP_TOP_VIEW_GPU, 0, 0);
    fprintf(f, "%s\n", line);
    for (size_t i = 0; i < s->n_gpus; i++) {
        gp_top_row(line, sizeof line, s, GP_TOP_VIEW_GPU, i);
        /* a long JOBS list: shortened in the middle to the width */
        if (width > 0 && (int)strlen(line) > width) {
            size_t at = (size_t)width - 20;
            while (at > 0 && line[at - 1] != ' ')
                at--;
            if (at > 0) {
                snprintf(jobs, sizeof jobs, "%s", line + at);
                gp_ellipsize(jobs, width - (int)at, line + at, sizeof line - at);
            }
        }
        fprintf(f, "%s\n", line);
    }
    fprintf(f, "\nJobs\n");
    gp_top_header(line, sizeof line, GP_TOP_VIEW_JOB, 0, 0);
    if (width > 0) cut_finding(line);
    fprintf(f, "%s\n", line);
    for (size_t i = 0; i < s->n_jobs; i++) {
        gp_top_row(line, sizeof line, s, GP_TOP_VIEW_JOB, i);
        if (width > 0) cut_finding(line);
        fprintf(f, "%s\n", line);
    }
    int any = 0;
    for (size_t i = 0; width > 0 && i < s->n_jobs; i++) {
        if (!s->jobs[i].finding[0]) continue;
        if (!any++) fprintf(f, "\nTop finding per job\n");
        gp_wrap_printf(f, 19, width, "%-18s %s", s->jobs[i].id, s->jobs[i].finding);
    }
    any = 0;
    for (size_t i = 0; i < s->n_jobs; i++) {
        if (!s->jobs[i].advice[0]) continue;
        if (!any++) fprintf(f, "\nFix first\n");
        gp_wrap_printf(f, 19, width, "%-18s %s", s->jobs[i].id, s->jobs[i].advice);
    }
}
