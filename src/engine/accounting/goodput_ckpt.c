/* goodput_ckpt.c: the parts of a frozen labelled prefix (gp_goodput_ckpt, goodput.h) that
 * need nothing of the sweep: its step durations (sorted, merged, the median over them and
 * new ones), its long gaps, the allocation pieces it was labelled with, and where no phase
 * is open. goodput.c ("Checkpoints") says when a prefix is final and uses these. */
#include "engine/accounting/goodput_ckpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorted merge of a[0..na) and sorted-in-place b[0..nb) into a new array; NULL on OOM. */
double *gp_ckpt_merge_durs(const double *a, size_t na, double *b, size_t nb) {
    qsort(b, nb, sizeof *b, cmp_double);
    double *m = malloc((na + nb + 1) * sizeof *m);
    if (!m) return NULL;
    size_t i = 0, j = 0, k = 0;
    while (i < na || j < nb)
        m[k++] = (j >= nb || (i < na && a[i] <= b[j])) ? a[i++] : b[j++];
    return m;
}

/* The k-th smallest (from 0) of two sorted arrays together. */
static double kth_of_two(const double *a, size_t na, const double *b, size_t nb, size_t k) {
    size_t lo = k + 1 > nb ? k + 1 - nb : 0, hi = k + 1 < na ? k + 1 : na;
    while (lo < hi) { /* the fewest taken from a such that a[i] >= b[j - 1] */
        size_t i = lo + (hi - lo) / 2, j = k + 1 - i;
        if (j > 0 && i < na && a[i] < b[j - 1])
            lo = i + 1;
        else
            hi = i;
    }
    size_t i = lo, j = k + 1 - lo;
    double x = i > 0 ? a[i - 1] : -INFINITY, y = j > 0 ? b[j - 1] : -INFINITY;
    return x > y ? x : y;
}

/* The median of the checkpoint's durations and these (unsorted; sorted here). */
double gp_ckpt_median(const gp_goodput_ckpt *c, double *v, size_t n) {
    size_t tot = c->n_durs + n;
    qsort(v, n, sizeof *v, cmp_double);
    if (tot == 0) return -1;
    if (tot % 2) return kth_of_two(c->durs, c->n_durs, v, n, tot / 2);
    return (kth_of_two(c->durs, c->n_durs, v, n, tot / 2 - 1) +
            kth_of_two(c->durs, c->n_durs, v, n, tot / 2)) /
           2;
}

/* How many of the sorted gaps are at most max_gap. */
size_t gp_ckpt_gaps_within(const int64_t *g, size_t n, int64_t max_gap) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g[mid] <= max_gap)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

typedef struct {
    const char *name;
    int64_t rank;
    int open;
} phase_key;

/* ok[i]: after the events ev[0..i], no phase is open, and none ever ran to the window's
 * end (a begin followed by another begin of the same name and rank). NULL on OOM. */
char *gp_ckpt_phases_closed(const gp_goodput_in *in, const gp_acct_event *const *ev, size_t n) {
    char *ok = malloc(n + 1);
    if (!ok) return NULL;
    phase_key key[64];
    int nk = 0, n_open = 0, broken = 0;
    for (size_t i = 0; i < n; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind == GP_EV_PHASE) {
            int k = 0;
            const char *name = gp_acct_event_name(in, e);
            while (k < nk && (key[k].rank != e->rank || strcmp(key[k].name, name)))
                k++;
            if (k == nk) {
                if (nk == 64)
                    broken = 1; /* too many kinds to follow: no cut */
                else
                    key[nk++] = (phase_key){name, e->rank, 0};
            }
            if (k < nk && e->edge == GP_PH_BEGIN) {
                if (key[k].open) broken = 1;
                key[k].open = 1, n_open++;
            } else if (k < nk && e->edge == GP_PH_END && key[k].open) {
                key[k].open = 0, n_open--;
            }
        }
        ok[i] = !broken && n_open == 0;
    }
    return ok;
}

/* The allocation pieces before t (the window's start to min(end, t), share): a
 * checkpoint's held GPUs are right while these stay the same. *n = 0 and NULL when none;
 * -1 on OOM. */
int gp_ckpt_alloc_print(const gp_goodput_in *in, int64_t t, int64_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    int64_t *v = malloc((3 * in->n_allocs + 1) * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < in->n_allocs; i++) {
        int64_t a = in->allocs[i].from_ns,
                b = in->allocs[i].to_ns < 0 ? in->t1_ns : in->allocs[i].to_ns;
        if (a < in->t0_ns) a = in->t0_ns;
        if (b > in->t1_ns) b = in->t1_ns;
        if (b <= a || a >= t) continue;
        double share = in->allocs[i].share > 0 && in->allocs[i].share < 1 ? in->allocs[i].share : 1;
        v[3 * *n] = a;
        v[3 * *n + 1] = b < t ? b : t;
        memcpy(&v[3 * *n + 2], &share, sizeof share);
        (*n)++;
    }
    *out = v;
    return 0;
}

void gp_goodput_ckpt_free(gp_goodput_ckpt *c) {
    if (!c) return;
    free(c->durs), free(c->gaps), free(c->allocs), free(c->span);
    memset(c, 0, sizeof *c);
}
