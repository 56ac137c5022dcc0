/* top.h: `goodput top`, a live view per GPU and per job.
 *
 * A snapshot holds what one refresh shows. Every number in it comes from the engine the
 * report uses (engine/accounting/job_summary.h for jobs, engine/diagnosis/classify.h for findings)
 * or, with
 * --url, from the agent's HTTP API which serves those same objects (docs/api.md), so a
 * job's goodput in `top` is the one `goodput report` prints. Nothing is recomputed here.
 * Unknown stays unknown: a double < 0 prints as '-'. */
#ifndef GP_TOP_TOP_H
#define GP_TOP_TOP_H

#include <stddef.h>
#include <stdio.h>

#include "model/event.h"
#include "model/sample.h"

typedef struct gp_top_gpu {
    char uuid[GP_UUID_MAX];
    int index;
    char name[96];
    double util;                        /* newest sample's gpu_util, [0, 1]; < 0 unknown */
    double mem_used_gib, mem_total_gib; /* < 0 unknown */
    double power_w;                     /* < 0 unknown */
    char jobs[160];                     /* jobs holding it at its newest sample, comma-separated */
    double goodput; /* goodput of the first of those jobs (the report's number); < 0 unknown */
} gp_top_gpu;

typedef struct gp_top_job {
    char id[GP_JOB_ID_MAX];
    char user[GP_NAME_MAX];
    char kind[24];
    char state[12]; /* not_ready, running, ended */
    int gpus;
    double alloc_gpu_h; /* allocated GPU-hours */
    double util;        /* mean gpu_util over the allocation; < 0 unknown */
    double goodput;     /* productive / allocated; < 0 unknown */
    double mem_frac;    /* mean memory used / total; < 0 unknown */
    double energy_kwh;  /* < 0 unknown */
    char finding[400];  /* the top-ranked finding, "class: summary"; "" none */
    char advice[512];   /* its recommendation */
} gp_top_job;

typedef struct gp_top_snap {
    gp_top_gpu *gpus;
    size_t n_gpus;
    gp_top_job *jobs;
    size_t n_jobs;
} gp_top_snap;

void gp_top_snap_free(gp_top_snap *s);

/* Sources. Each read replaces *out (freeing what it held). 0 ok, -1 err filled in. */
typedef struct gp_top_store gp_top_store;
gp_top_store *gp_top_store_open(const char *path, char *err, size_t errlen); /* read-only */
int gp_top_store_read(gp_top_store *t, gp_top_snap *out, char *err, size_t errlen);
void gp_top_store_close(gp_top_store *t);
/* base: http://HOST:PORT (with or without a trailing /); token may be NULL. */
int gp_top_http_read(const char *base, const char *token, gp_top_snap *out, char *err,
                     size_t errlen);

/* Rendering, shared by the terminal view and the plain-text output so both print the
 * same strings. */
typedef enum { GP_TOP_VIEW_GPU, GP_TOP_VIEW_JOB } gp_top_view;
int gp_top_ncols(gp_top_view v);
const char *gp_top_col_name(gp_top_view v, int col);
/* Sorts the view's rows by column col (numbers descending, text ascending; unknown last). */
void gp_top_sort(gp_top_snap *s, gp_top_view v, int col);
/* One line, no newline: the header (sort column marked with '*' when mark) or row i. */
void gp_top_header(char *buf, size_t n, gp_top_view v, int sort_col, int mark);
void gp_top_row(char *buf, size_t n, const gp_top_snap *s, gp_top_view v, size_t i);
/* Both tables, then each job's finding and advice: the --once / not-a-terminal output. In
 * width columns (0: no limit): the job table then leaves out FINDING, and the findings
 * follow it, wrapped, one per job. */
void gp_top_text(FILE *f, const gp_top_snap *s, int width);

/* The interactive view (ncurses, opened with dlopen). read is called every refresh_s. */
typedef int (*gp_top_reader)(void *ctx, gp_top_snap *out, char *err, size_t errlen);
int gp_top_tui(gp_top_reader read, void *ctx, const char *source, double refresh_s, char *err,
               size_t errlen);

#endif
