/* analyze_timeline.c: keeps the GPU events of one representative step per rank, so the HTML
 * report can draw a timeline (kernels per stream) without the trace rows, which are freed
 * after analysis. The step is the median-length ProfilerStep (a typical step, not the
 * warm-up or a stall); with no steps, the window is the whole span. At most
 * GP_TL_MAX_EVENTS events are kept (the earliest), so a rank costs at most ~0.5 MB here
 * however large the trace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"

static int cmp_dur(const void *a, const void *b, void *ctx) {
    const gp_step_util *s = ctx;
    double x = s[*(const size_t *)a].t1 - s[*(const size_t *)a].t0;
    double y = s[*(const size_t *)b].t1 - s[*(const size_t *)b].t0;
    return x < y ? -1 : x > y;
}

static int cmp_t0(const void *a, const void *b) {
    const gp_tl_event *x = a, *y = b;
    if (x->t0_us != y->t0_us) return x->t0_us < y->t0_us ? -1 : 1;
    return x->stream < y->stream ? -1 : x->stream > y->stream;
}

void gp_trace_capture_timeline(const gp_trace_rank *r, const int *kt_of, gp_rank_result *res) {
    double w0 = -INFINITY, w1 = INFINITY;
    if (res->n_steps) {
        size_t *ord = malloc(res->n_steps * sizeof *ord);
        if (!ord) abort();
        for (size_t i = 0; i < res->n_steps; i++)
            ord[i] = i;
        qsort_r(ord, res->n_steps, sizeof *ord, cmp_dur, res->steps);
        const gp_step_util *s = &res->steps[ord[(res->n_steps - 1) / 2]];
        free(ord);
        w0 = s->t0;
        w1 = s->t1;
        snprintf(res->tl_step, sizeof res->tl_step, "%s", s->name);
    }
    /* every event of the window first (temporary, as large as the analysis' own arrays),
     * then sorted and cut to the bound */
    size_t n = 0;
    gp_tl_event *ev = malloc((r->gpu.n + 1) * sizeof *ev);
    int32_t *slot = malloc((r->n_names + 1) * sizeof *slot);
    if (!ev || !slot) abort();
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < r->gpu.n; i++) {
        const gp_trow *e = &r->gpu.v[i];
        if (!(e->dur > 0) || e->stream < 0) continue;
        if (e->ts >= w1 || e->ts + e->dur <= w0) continue;
        ev[n++] = (gp_tl_event){e->ts, e->dur, e->stream, e->name, (uint8_t)(kt_of[e->name] & 15)};
        lo = fmin(lo, e->ts);
        hi = fmax(hi, e->ts + e->dur);
    }
    if (n == 0) {
        free(ev);
        free(slot);
        return;
    }
    qsort(ev, n, sizeof *ev, cmp_t0);
    if (n > GP_TL_MAX_EVENTS) {
        res->tl_dropped = n - GP_TL_MAX_EVENTS;
        n = GP_TL_MAX_EVENTS;
        hi = -INFINITY;
        for (size_t i = 0; i < n; i++)
            hi = fmax(hi, ev[i].t0_us + ev[i].dur_us);
    }
    res->tl_t0_us = isfinite(w0) ? w0 : lo;
    res->tl_t1_us = isfinite(w1) ? (res->tl_dropped ? fmin(w1, hi) : w1) : hi;
    for (uint32_t i = 0; i < r->n_names; i++)
        slot[i] = -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ev[i].name;
        if (slot[id] < 0) {
            res->tl_names = realloc(res->tl_names, (res->n_tl_names + 1) * sizeof *res->tl_names);
            if (!res->tl_names) abort();
            res->tl_names[res->n_tl_names] = strdup(r->names[id]);
            if (!res->tl_names[res->n_tl_names]) abort();
            slot[id] = (int32_t)res->n_tl_names++;
        }
        ev[i].name = (uint32_t)slot[id];
    }
    free(slot);
    res->tl = realloc(ev, n * sizeof *ev);
    if (!res->tl) abort();
    res->n_tl = n;
}
