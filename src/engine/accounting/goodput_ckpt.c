/* goodput_ckpt.c: the parts of a frozen labelled prefix (gp_goodput_ckpt, goodput.h) that
 * need nothing of the sweep: its step durations (sorted, merged, the median over them and
 * new ones), its long gaps, the allocation pieces it was labelled with, and where no phase
 * is open. goodput.c ("Checkpoints") says when a prefix is final and uses these. */
#include "engine/accounting/goodput_ckpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
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

/* Where the new durations v[0..n) (sorted) fall against c's kept ones: those before *lo
 * rank below all of them and those from *hi above (unknown among the ones c dropped there,
 * so only counted); with nothing dropped on a side, all of v on that side is merged. */
static void split_new(const gp_goodput_ckpt *c, const double *v, size_t n, size_t *lo, size_t *hi) {
    *lo = 0, *hi = n;
    if (!c || !c->n_durs) return;
    if (c->durs_below)
        while (*lo < n && v[*lo] < c->durs[0])
            (*lo)++;
    if (c->durs_above)
        while (*hi > *lo && v[*hi - 1] > c->durs[c->n_durs - 1])
            (*hi)--;
}

/* The value of rank r among c's durations and v (sorted) together, or NAN when r falls
 * where c dropped its durations. */
static double rank_of(const gp_goodput_ckpt *c, const double *v, size_t lo, size_t hi, size_t r) {
    size_t below = c ? c->durs_below : 0, nw = c ? c->n_durs : 0;
    size_t first = below + lo, count = nw + (hi - lo);
    if (r < first || r >= first + count) return NAN;
    return kth_of_two(c ? c->durs : NULL, nw, v + lo, hi - lo, r - first);
}

double gp_ckpt_median(const gp_goodput_ckpt *c, double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    size_t tot = c->durs_below + c->n_durs + c->durs_above + n;
    if (tot == 0) return -1;
    if (!c->n_durs && (c->durs_below || c->durs_above)) return GP_CKPT_MEDIAN_UNKNOWN;
    size_t lo, hi;
    split_new(c, v, n, &lo, &hi);
    double m = tot % 2 ? rank_of(c, v, lo, hi, tot / 2)
                       : (rank_of(c, v, lo, hi, tot / 2 - 1) + rank_of(c, v, lo, hi, tot / 2)) / 2;
    return isnan(m) ? GP_CKPT_MEDIAN_UNKNOWN : m;
}

int gp_ckpt_durs_extend(const gp_goodput_ckpt *from, double *add, size_t n_add,
                        gp_goodput_ckpt *to) {
    qsort(add, n_add, sizeof *add, cmp_double);
    size_t lo, hi;
    split_new(from, add, n_add, &lo, &hi);
    size_t nw = from ? from->n_durs : 0, nm = nw + (hi - lo);
    size_t below = (from ? from->durs_below : 0) + lo;
    size_t above = (from ? from->durs_above : 0) + (n_add - hi);
    double *m = malloc((nm + 1) * sizeof *m);
    if (!m) return -1;
    size_t i = 0, j = lo, k = 0;
    while (i < nw || j < hi)
        m[k++] = (j >= hi || (i < nw && from->durs[i] <= add[j])) ? from->durs[i++] : add[j++];
    /* Keep the ranks within GP_CKPT_MEDIAN_HALF of the median's, where kept ones are. */
    size_t tot = below + nm + above, mlo = tot ? (tot - 1) / 2 : 0, mhi = tot / 2;
    size_t r0 = mlo > GP_CKPT_MEDIAN_HALF ? mlo - GP_CKPT_MEDIAN_HALF : 0;
    size_t r1 = mhi + GP_CKPT_MEDIAN_HALF;
    size_t i0 = r0 > below ? r0 - below : 0, i1 = r1 > below ? r1 - below : 0;
    if (i0 > nm) i0 = nm;
    if (i1 > nm) i1 = nm;
    if (i1 < i0) i1 = i0;
    if (i0) memmove(m, m + i0, (i1 - i0) * sizeof *m);
    to->durs = m;
    to->n_durs = i1 - i0;
    to->durs_below = below + i0;
    to->durs_above = above + (nm - i1);
    return 0;
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

int gp_ckpt_is_restore(const gp_goodput_in *in, const gp_acct_event *e) {
    return e->kind == GP_EV_PHASE && !strcmp(gp_acct_event_name(in, e), "checkpoint_restore");
}

/* Phases followed in event order: which (name, rank) are open and since when. */
#define PHASE_KEYS 64
typedef struct {
    const char *name;
    int64_t rank, since; /* since: the open one's begin */
    int open;
} phase_key;

typedef struct {
    phase_key key[PHASE_KEYS];
    int nk, n_open, n_now, n_restore, broken;
    int64_t now; /* the instant of the last event: n_now of the open ones began there */
} phase_state;

static void phases_start(phase_state *s, const gp_goodput_ckpt *from) {
    s->nk = s->n_open = s->n_now = s->n_restore = s->broken = 0;
    s->now = INT64_MIN;
    for (int c = 0; from && c < from->n_carry && c < GP_CKPT_CARRY; c++) {
        s->key[s->nk++] = (phase_key){from->carry[c].name, from->carry[c].rank, from->t_ns, 1};
        s->n_open++;
    }
}

static phase_key *phases_add(phase_state *s, const gp_goodput_in *in, const gp_acct_event *e) {
    if (e->ts_ns != s->now) s->now = e->ts_ns, s->n_now = 0;
    if (e->kind != GP_EV_PHASE) return NULL;
    const char *name = gp_acct_event_name(in, e);
    int k = 0;
    while (k < s->nk && (s->key[k].rank != e->rank || strcmp(s->key[k].name, name)))
        k++;
    if (k == s->nk) {
        if (s->nk == PHASE_KEYS) {
            s->broken = 1; /* too many kinds to follow: no cut */
            return NULL;
        }
        s->key[s->nk++] = (phase_key){name, e->rank, 0, 0};
    }
    phase_key *p = &s->key[k];
    int restore = !strcmp(name, "checkpoint_restore");
    if (e->edge == GP_PH_BEGIN) {
        if (p->open) s->broken = 1;
        p->open = 1, p->since = e->ts_ns;
        s->n_open++, s->n_now++, s->n_restore += restore;
    } else if (e->edge == GP_PH_END && p->open) {
        p->open = 0;
        s->n_open--, s->n_restore -= restore;
        if (p->since == s->now) s->n_now--;
    }
    return p;
}

char *gp_ckpt_phases_closed(const gp_goodput_in *in, const gp_acct_event *const *ev, size_t n,
                            const gp_goodput_ckpt *from) {
    char *ok = malloc(n + 1);
    if (!ok) return NULL;
    phase_state s;
    phases_start(&s, from);
    for (size_t i = 0; i < n; i++) {
        phases_add(&s, in, ev[i]);
        ok[i] = s.broken        ? 0
                : s.n_open == 0 ? GP_CKPT_PHASES_NONE
                : s.n_open == s.n_now && s.n_open <= GP_CKPT_CARRY && !s.n_restore
                    ? GP_CKPT_PHASES_NOW
                    : 0;
    }
    return ok;
}

void gp_ckpt_phases_carry(const gp_goodput_in *in, const gp_acct_event *const *ev, size_t i,
                          const gp_goodput_ckpt *from, gp_goodput_ckpt *to) {
    phase_state s;
    phases_start(&s, from);
    int64_t order[PHASE_KEYS] = {0}; /* each open key's begin: its index in ev */
    for (size_t j = 0; j <= i; j++) {
        phase_key *p = phases_add(&s, in, ev[j]);
        if (p && p->open && ev[j]->edge == GP_PH_BEGIN) order[p - s.key] = (int64_t)j;
    }
    int pick[GP_CKPT_CARRY], np = 0;
    for (int k = 0; k < s.nk; k++) {
        if (!s.key[k].open || s.key[k].since != ev[i]->ts_ns || np == GP_CKPT_CARRY) continue;
        int at = np++; /* in the order they began */
        for (; at > 0 && order[pick[at - 1]] > order[k]; at--)
            pick[at] = pick[at - 1];
        pick[at] = k;
    }
    for (int c = 0; c < np; c++) {
        snprintf(to->carry[c].name, GP_NAME_MAX, "%s", s.key[pick[c]].name);
        to->carry[c].rank = s.key[pick[c]].rank;
    }
    to->n_carry = np;
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
