/* alloc_split.c: see alloc_split.h. Per GPU of the job: merge the job's rows into
 * disjoint spans, merge each neighbour's rows the same way (one job counts once however
 * many rows it has), then sweep the neighbours' span edges across the job's spans. An
 * open allocation runs to "for ever" (INT64_MAX) here and comes out open again, so the
 * caller's window decides where it ends, as for any open allocation. */
#include "engine/accounting/alloc_split.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPEN INT64_MAX

typedef struct span {
    int64_t a, b;
    const char *job;
} span;

static int cmp_span(const void *x, const void *y) {
    const span *p = x, *q = y;
    int c = strcmp(p->job, q->job);
    if (c) return c;
    return (p->a > q->a) - (p->a < q->a);
}

/* Sorts by (job, start) and merges overlapping or touching spans of the same job. */
static size_t merge(span *v, size_t n) {
    if (!n) return 0;
    qsort(v, n, sizeof *v, cmp_span);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (!strcmp(v[i].job, v[k].job) && v[i].a <= v[k].b) {
            if (v[i].b > v[k].b) v[k].b = v[i].b;
        } else {
            v[++k] = v[i];
        }
    }
    return k + 1;
}

typedef struct edge {
    int64_t t;
    int d;
} edge;

static int cmp_edge(const void *x, const void *y) {
    const edge *p = x, *q = y;
    if (p->t != q->t) return p->t < q->t ? -1 : 1;
    return p->d - q->d;
}

static int push(gp_alloc **out, size_t *n, size_t *cap, const char *job, const char *uuid,
                int64_t a, int64_t b, int holders) {
    if (b <= a) return 0;
    if (*n && (*out)[*n - 1].to_ns == a && !strcmp((*out)[*n - 1].uuid, uuid) &&
        (*out)[*n - 1].share == 1.0 / holders) {
        (*out)[*n - 1].to_ns = b == OPEN ? -1 : b; /* same share: extend the piece */
        return 0;
    }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        gp_alloc *p = realloc(*out, nc * sizeof *p);
        if (!p) return -1;
        *out = p;
        *cap = nc;
    }
    gp_alloc *x = &(*out)[(*n)++];
    memset(x, 0, sizeof *x);
    memcpy(x->job_id, job, sizeof x->job_id);
    memcpy(x->uuid, uuid, sizeof x->uuid);
    x->from_ns = a;
    x->to_ns = b == OPEN ? -1 : b;
    x->share = 1.0 / holders;
    return 0;
}

int gp_alloc_split(const gp_alloc *mine, size_t n_mine, const gp_alloc *others, size_t n_others,
                   gp_alloc **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    size_t cap = 0;
    span *ms = malloc((n_mine + 1) * sizeof *ms);
    span *os = malloc((n_others + 1) * sizeof *os);
    edge *ev = malloc((2 * n_others + 1) * sizeof *ev);
    char *done = calloc(n_mine + 1, 1);
    int rc = (ms && os && ev && done) ? 0 : -1;
    for (size_t u = 0; rc == 0 && u < n_mine; u++) {
        if (done[u]) continue;
        const char *uuid = mine[u].uuid;
        size_t nm = 0, no = 0;
        for (size_t i = u; i < n_mine; i++)
            if (!strcmp(mine[i].uuid, uuid)) {
                done[i] = 1;
                ms[nm++] = (span){mine[i].from_ns, mine[i].to_ns < 0 ? OPEN : mine[i].to_ns, ""};
            }
        for (size_t i = 0; i < n_others; i++)
            if (!strcmp(others[i].uuid, uuid) && strcmp(others[i].job_id, mine[u].job_id))
                os[no++] = (span){others[i].from_ns, others[i].to_ns < 0 ? OPEN : others[i].to_ns,
                                  others[i].job_id};
        nm = merge(ms, nm);
        no = merge(os, no);
        size_t ne = 0;
        for (size_t i = 0; i < no; i++) {
            ev[ne++] = (edge){os[i].a, +1};
            if (os[i].b != OPEN) ev[ne++] = (edge){os[i].b, -1};
        }
        qsort(ev, ne, sizeof *ev, cmp_edge);
        for (size_t m = 0; rc == 0 && m < nm; m++) {
            int64_t t = ms[m].a;
            int k = 0;
            size_t e = 0;
            for (; e < ne && ev[e].t <= t; e++)
                k += ev[e].d;
            for (; rc == 0 && e < ne && ev[e].t < ms[m].b; e++) {
                rc = push(out, n_out, &cap, mine[u].job_id, uuid, t, ev[e].t, k + 1);
                t = ev[e].t;
                k += ev[e].d;
            }
            if (rc == 0) rc = push(out, n_out, &cap, mine[u].job_id, uuid, t, ms[m].b, k + 1);
        }
    }
    free(ms);
    free(os);
    free(ev);
    free(done);
    if (rc) {
        free(*out);
        *out = NULL;
        *n_out = 0;
    }
    return rc;
}
