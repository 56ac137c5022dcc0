/* sig_hist.c: medians at 4 significant digits from counts (see sig_hist.h). */
#include "engine/diagnosis/sig_hist.h"

#include <stdlib.h>
#include <string.h>

#include "engine/diagnosis/kth.h"

int64_t gp_sig_round_ns(int64_t v_ns) {
    if (v_ns <= 0) return v_ns;
    int64_t lim = 1;
    for (int i = 0; i < GP_SIG_DIGITS; i++)
        lim *= 10;
    int64_t p = 1;
    while (v_ns / p >= lim)
        p *= 10;
    if (p == 1 || v_ns > INT64_MAX - p) return v_ns;
    int64_t q = v_ns / p, r = v_ns % p;
    return (q + (2 * r >= p)) * p;
}

int gp_sig_hist_reserve(gp_sig_hist *h, size_t n) {
    if (h->tcap - h->nt >= n) return 0;
    int64_t *t = realloc(h->tail, (h->nt + n) * sizeof *t);
    if (!t) return -1;
    h->tail = t;
    h->tcap = h->nt + n;
    return 0;
}

int gp_sig_hist_add(gp_sig_hist *h, int64_t v_ns) {
    if (h->nt == h->tcap) {
        size_t c = h->tcap ? 2 * h->tcap : 64;
        int64_t *t = realloc(h->tail, c * sizeof *t);
        if (!t) return -1;
        h->tail = t;
        h->tcap = c;
    }
    h->tail[h->nt++] = gp_sig_round_ns(v_ns);
    h->n++;
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* One pass over the counts and the sorted tail; the tail's buffer is released (the
 * first merge of a job read whole may hold all of its values). */
int gp_sig_hist_merge(gp_sig_hist *h) {
    if (!h->nt) return 0;
    if (h->borrowed) return -1;
    qsort(h->tail, h->nt, sizeof *h->tail, cmp_i64);
    size_t distinct = 0;
    for (size_t j = 0; j < h->nt; j++)
        distinct += j == 0 || h->tail[j] != h->tail[j - 1];
    gp_sig_bin *m = malloc((h->nb + distinct) * sizeof *m);
    if (!m) return -1;
    size_t i = 0, j = 0, k = 0;
    while (i < h->nb || j < h->nt) {
        int64_t v = j >= h->nt || (i < h->nb && h->bins[i].v_ns <= h->tail[j]) ? h->bins[i].v_ns
                                                                               : h->tail[j];
        uint64_t n = 0;
        if (i < h->nb && h->bins[i].v_ns == v) n += h->bins[i++].n;
        while (j < h->nt && h->tail[j] == v)
            n++, j++;
        m[k++] = (gp_sig_bin){v, n};
    }
    if (k < h->nb + distinct) {
        gp_sig_bin *s = realloc(m, k * sizeof *m);
        if (s) m = s;
    }
    free(h->bins);
    h->bins = m;
    h->nb = k;
    free(h->tail);
    h->tail = NULL;
    h->nt = h->tcap = 0;
    return 0;
}

GP_KTH_DEFINE(select_i64, int64_t)

int64_t gp_sig_hist_kth(gp_sig_hist *h, uint64_t k) {
    if (h->nb == 0) return select_i64(h->tail, h->nt, (size_t)k);
    if (h->nt > 1) qsort(h->tail, h->nt, sizeof *h->tail, cmp_i64); /* tail may be NULL */
    uint64_t seen = 0;
    size_t i = 0, j = 0;
    int64_t v = 0;
    while (i < h->nb || j < h->nt) {
        if (j >= h->nt || (i < h->nb && h->bins[i].v_ns <= h->tail[j])) {
            v = h->bins[i].v_ns;
            seen += h->bins[i++].n;
        } else {
            v = h->tail[j++];
            seen++;
        }
        if (seen > k) break;
    }
    return v;
}

double gp_sig_hist_median_s(gp_sig_hist *h) {
    if (h->n == 0) return -1;
    /* gp_quantile's interpolation at q = 0.5: the value at rank (n - 1) / 2, averaged with
     * the next one when n is even */
    double pos = 0.5 * (double)(h->n - 1);
    uint64_t i = (uint64_t)pos;
    double fr = pos - (double)i;
    double a = (double)gp_sig_hist_kth(h, i) / 1e9;
    if (i + 1 >= h->n) return a;
    double b = (double)gp_sig_hist_kth(h, i + 1) / 1e9;
    return a * (1 - fr) + b * fr;
}

gp_sig_hist gp_sig_hist_borrow(const gp_sig_hist *h) {
    gp_sig_hist c = *h;
    c.borrowed = 1;
    c.tail = NULL;
    c.nt = c.tcap = 0;
    c.n = h->n - h->nt; /* the counts only, not h's pending tail */
    return c;
}

size_t gp_sig_hist_bytes(const gp_sig_hist *h) {
    return (h->borrowed ? 0 : h->nb * sizeof *h->bins) + h->tcap * sizeof *h->tail;
}

void gp_sig_hist_free(gp_sig_hist *h) {
    if (!h->borrowed) free(h->bins);
    free(h->tail);
    memset(h, 0, sizeof *h);
}
