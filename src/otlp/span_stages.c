/* span_stages.c: spans of a traced pipeline into stage events (see span_stages.h).
 *
 * Design: one sort of pointers by (trace, start), then one pass per trace: find its root,
 * walk the root's children in start order as the item's visits. Pipelines are found by
 * a linear scan with a one-entry cache (few pipeline kinds, traces of a kind cluster). */
#include "otlp/span_stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PIPELINES 256
#define MAX_STAGE_NAMES 64 /* beyond the analysis's 32 stages: it reports the excess */

typedef struct {
    gp_span_pipeline p;
    size_t cap;
    int64_t t0_ns;
    char stage[MAX_STAGE_NAMES][GP_NAME_MAX];
    int gpu[MAX_STAGE_NAMES];
    int n_stage;
} build;

static int cmp_trace_start(const void *x, const void *y) {
    const gp_span *a = *(const gp_span *const *)x, *b = *(const gp_span *const *)y;
    int c = strcmp(a->trace_id, b->trace_id);
    if (c) return c;
    if (a->start_ns != b->start_ns)
        return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
    return strcmp(a->span_id, b->span_id);
}

static int fail(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return -1;
}

/* Whether name is one of the comma-separated names in list. */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static gp_event *add_event(build *b) {
    if (b->p.n_ev == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 256;
        gp_event *e = realloc(b->p.ev, nc * sizeof *e);
        if (!e) return NULL;
        b->p.ev = e;
        b->cap = nc;
    }
    return &b->p.ev[b->p.n_ev++];
}

static void note_stage(build *b, const gp_span *c, const char *gpu_stages) {
    for (int i = 0; i < b->n_stage; i++)
        if (strcmp(b->stage[i], c->name) == 0) {
            b->gpu[i] |= c->step == GP_STEP_MODEL;
            return;
        }
    if (b->n_stage == MAX_STAGE_NAMES) return;
    snprintf(b->stage[b->n_stage], GP_NAME_MAX, "%s", c->name);
    b->gpu[b->n_stage] = c->step == GP_STEP_MODEL || in_list(gpu_stages, c->name);
    b->n_stage++;
}

/* The root of trace g[0..k): the first span without a parent, else the first whose parent
 * is not in the trace (a trace exported in part); NULL when every span has a parent in it. */
static const gp_span *trace_root(const gp_span *const *g, size_t k) {
    for (size_t i = 0; i < k; i++)
        if (!g[i]->parent_id[0]) return g[i];
    for (size_t i = 0; i < k; i++) {
        int found = 0;
        for (size_t j = 0; j < k && !found; j++)
            found = strcmp(g[j]->span_id, g[i]->parent_id) == 0;
        if (!found) return g[i];
    }
    return NULL;
}

void gp_span_pipelines_free(gp_span_pipeline *p, size_t n) {
    for (size_t i = 0; p && i < n; i++)
        free(p[i].ev);
    free(p);
}

int gp_spans_to_pipelines(const gp_span *v, size_t n, const char *gpu_stages,
                          gp_span_pipeline **out, size_t *n_out, char *err, size_t errlen) {
    *out = NULL;
    *n_out = 0;
    const gp_span **s = malloc((n ? n : 1) * sizeof *s);
    build *b = calloc(MAX_PIPELINES, sizeof *b);
    int nb = 0, last = -1, rc = 0;
    if (!s || !b) {
        free(s);
        free(b);
        return fail(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        s[i] = &v[i];
    qsort(s, n, sizeof *s, cmp_trace_start);
    for (size_t i = 0, j; i < n && rc == 0; i = j) {
        for (j = i + 1; j < n && strcmp(s[j]->trace_id, s[i]->trace_id) == 0; j++)
            ;
        const gp_span *root = trace_root(s + i, j - i);
        if (!root) continue;
        size_t n_child = 0;
        for (size_t k = i; k < j; k++)
            n_child += strcmp(s[k]->parent_id, root->span_id) == 0;
        if (!n_child) continue;
        int p =
            last >= 0 && strncmp(b[last].p.name, root->name, GP_JOB_ID_MAX - 1) == 0 ? last : -1;
        for (int q = 0; q < nb && p < 0; q++)
            if (strncmp(b[q].p.name, root->name, GP_JOB_ID_MAX - 1) == 0) p = q;
        if (p < 0) {
            if (nb == MAX_PIPELINES) {
                rc = fail(err, errlen, "more than 256 pipelines (root span names) in the spans");
                break;
            }
            p = nb++;
            snprintf(b[p].p.name, sizeof b[p].p.name, "%s", root->name);
            b[p].t0_ns = root->start_ns;
        }
        last = p;
        build *bp = &b[p];
        if (root->start_ns < bp->t0_ns) bp->t0_ns = root->start_ns;
        int64_t item = (int64_t)bp->p.n_items++;
        int64_t prev_end = root->start_ns; /* the item's previous visit ended (chain) */
        for (size_t k = i; k < j; k++) {
            const gp_span *c = s[k];
            if (strcmp(c->parent_id, root->span_id) != 0) continue;
            gp_event *e = add_event(bp);
            if (!e) {
                rc = fail(err, errlen, "out of memory");
                break;
            }
            gp_event_init(e, GP_EV_STAGE);
            snprintf(e->job_id, sizeof e->job_id, "%s", bp->p.name);
            snprintf(e->name, sizeof e->name, "%s", c->name);
            e->item = item;
            e->start_ns = c->start_ns;
            e->ts_ns = c->end_ns;
            e->enqueue_ns = prev_end < c->start_ns ? prev_end : c->start_ns;
            if (c->end_ns > prev_end) prev_end = c->end_ns;
            note_stage(bp, c, gpu_stages);
        }
    }
    /* declarations: the resource only (pool 0 = undeclared, upstream "" = chain by time) */
    for (int p = 0; p < nb && rc == 0; p++)
        for (int k = 0; k < b[p].n_stage && rc == 0; k++) {
            gp_event *e = add_event(&b[p]);
            if (!e) {
                rc = fail(err, errlen, "out of memory");
                break;
            }
            gp_event_init(e, GP_EV_STAGE);
            snprintf(e->job_id, sizeof e->job_id, "%s", b[p].p.name);
            snprintf(e->name, sizeof e->name, "%s", b[p].stage[k]);
            e->step = 0;
            e->edge = b[p].gpu[k] ? GP_STAGE_GPU : GP_STAGE_CPU;
            e->ts_ns = b[p].t0_ns;
        }
    free(s);
    gp_span_pipeline *res = rc == 0 ? malloc((nb ? nb : 1) * sizeof *res) : NULL;
    if (rc == 0 && !res) rc = fail(err, errlen, "out of memory");
    for (int p = 0; p < nb; p++) {
        if (res)
            res[p] = b[p].p;
        else
            free(b[p].p.ev);
    }
    free(b);
    if (rc != 0) return rc;
    *out = res;
    *n_out = (size_t)nb;
    return 0;
}
