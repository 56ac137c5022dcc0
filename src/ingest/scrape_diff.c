/* scrape_diff.c: two snapshots -> a window, for the whole server and per engine (scrape.h).
 *
 * histogram_quantile, as Prometheus implements it for classic histograms
 * (promql/quantile.go, bucketQuantile): buckets sorted by upper bound, the last must be
 * +Inf; counts made monotonic; rank = q * total; the first bucket whose cumulative count
 * reaches rank holds the answer; if that is the +Inf bucket, the answer is the largest
 * finite upper bound; if it is the first bucket and its bound is <= 0, the answer is that
 * bound; otherwise linear interpolation inside the bucket, from its lower bound (the
 * previous bucket's upper bound, or 0 for the first) to its upper bound, by
 * (rank - count below) / (count in bucket).
 *
 * SLO fractions run the same interpolation backwards (gp_hist_fraction_below): the share of
 * observations at or under a target x is (count below the bucket holding x + the bucket's
 * count * (x - lower) / (upper - lower)) / total. Observations in the +Inf bucket miss every
 * target up to the largest finite bound; a target above that bound has no answer when any
 * observation lies beyond it (they may or may not meet it), so SLO goodput is unknown there
 * rather than counted (histogram_quantile instead pins them to the largest finite bound, and
 * gp_latency_is_floor marks such a percentile as a floor).
 *
 * Counter resets (the server restarted) are handled as Prometheus' rate() does: a counter
 * that went down is taken to have restarted from zero, so its increase is its current value.
 * An engine that appears only in the newer snapshot has no baseline: its rates are unknown
 * in this window. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ingest/scrape.h"

double gp_hist_quantile(double q, const double *le, const double *cum, int n) {
    if (n < 2 || n > GP_HIST_MAX_BUCKETS || isnan(q) || !isinf(le[n - 1]) || le[n - 1] < 0)
        return -1;
    if (q < 0) q = 0; /* Prometheus answers -Inf / +Inf here; we clamp to the range */
    if (q > 1) q = 1;
    /* ensureMonotonic: a bucket never counts fewer than the one below it */
    double c[GP_HIST_MAX_BUCKETS], maxc = 0;
    for (int i = 0; i < n; i++) {
        maxc = cum[i] > maxc ? cum[i] : maxc;
        c[i] = maxc;
    }
    double total = c[n - 1];
    if (!(total > 0)) return -1;
    double rank = q * total;
    int b = 0;
    while (b < n - 1 && c[b] < rank)
        b++;
    if (b == n - 1) return le[n - 2];
    if (b == 0 && le[0] <= 0) return le[0];
    double start = 0, end = le[b], count = c[b];
    if (b > 0) {
        start = le[b - 1];
        count -= c[b - 1];
        rank -= c[b - 1];
    }
    if (count <= 0) return end; /* unreachable after the search, kept for safety */
    return start + (end - start) * (rank / count);
}

double gp_hist_fraction_below(double x, const double *le, const double *cum, int n) {
    if (n < 2 || n > GP_HIST_MAX_BUCKETS || isnan(x) || !isinf(le[n - 1])) return -1;
    double c[GP_HIST_MAX_BUCKETS], maxc = 0;
    for (int i = 0; i < n; i++) {
        maxc = cum[i] > maxc ? cum[i] : maxc;
        c[i] = maxc;
    }
    double total = c[n - 1];
    if (!(total > 0)) return -1;
    int b = 0;
    while (b < n - 1 && le[b] < x)
        b++;
    if (b == n - 1) /* x above every finite bound: unknown unless nothing lies beyond it */
        return c[n - 1] > c[n - 2] ? -1 : c[n - 2] / total;
    double lower = b > 0 ? le[b - 1] : 0, below = b > 0 ? c[b - 1] : 0;
    if (b == 0 && le[0] <= 0) return x >= le[0] ? c[0] / total : 0;
    if (x <= lower) return below / total;
    double in = c[b] - below;
    return (below + in * (x - lower) / (le[b] - lower)) / total;
}

int gp_latency_is_floor(double beyond_top, double q) {
    if (beyond_top < 0 || isnan(beyond_top)) return -1;
    /* histogram_quantile lands in the +Inf bucket when the count below the top bound is under
     * q * total, i.e. beyond_top > 1 - q; the margin keeps a rank that falls exactly on the
     * bound (an interpolated, exact answer) from reading as a floor through rounding */
    return beyond_top > 1 - q + 1e-9;
}

/* Increase of a counter between two scrapes; a decrease means the server restarted and the
 * counter began again at zero (Prometheus' rate() does the same). -1 when unknown. */
static double increase(double prev, double cur, int *reset) {
    if (cur < 0 || prev < 0) return -1;
    if (cur < prev) {
        *reset = 1;
        return cur;
    }
    return cur - prev;
}

/* The bucket deltas of a histogram over the window into d; returns the count delta, or -1
 * when the histogram is not published. */
static double hist_delta(const gp_hist *p, const gp_hist *c, int *reset, double *d, double *dsum) {
    if (c->n == 0) return -1;
    int same = p->n == c->n && c->count >= p->count;
    for (int i = 0; same && i < c->n; i++)
        if (p->le[i] != c->le[i] || c->cum[i] < p->cum[i]) same = 0;
    if (same) {
        for (int i = 0; i < c->n; i++)
            d[i] = c->cum[i] - p->cum[i];
        *dsum = c->sum - p->sum;
        return c->count - p->count;
    }
    if (p->n) *reset = 1; /* reset or a new bucket layout: count from zero */
    for (int i = 0; i < c->n; i++)
        d[i] = c->cum[i];
    *dsum = c->sum;
    return c->count;
}

static void latency(const gp_hist *p, const gp_hist *c, int *reset, gp_latency *out) {
    out->count = out->mean_s = out->p50_s = out->p90_s = out->p99_s = out->beyond_top = -1;
    double d[GP_HIST_MAX_BUCKETS], dsum;
    double dcount = hist_delta(p, c, reset, d, &dsum);
    out->count = dcount;
    if (dcount <= 0) return;
    out->mean_s = dsum / dcount;
    /* observations above the largest finite bound: a quantile whose rank falls among them is
     * that bound (histogram_quantile's answer), a floor, not a reading */
    if (c->n >= 2 && d[c->n - 1] > 0) out->beyond_top = (d[c->n - 1] - d[c->n - 2]) / d[c->n - 1];
    out->p50_s = gp_hist_quantile(0.50, c->le, d, c->n);
    out->p90_s = gp_hist_quantile(0.90, c->le, d, c->n);
    out->p99_s = gp_hist_quantile(0.99, c->le, d, c->n);
}

static double slo_fraction(const gp_hist *p, const gp_hist *c, double target_s) {
    if (!(target_s > 0)) return -1;
    int reset = 0;
    double d[GP_HIST_MAX_BUCKETS], dsum;
    if (hist_delta(p, c, &reset, d, &dsum) <= 0) return -1;
    return gp_hist_fraction_below(target_s, c->le, d, c->n);
}

static double per_s(double d, double dt) {
    return d < 0 || dt <= 0 ? -1 : d / dt;
}

static double ratio(double num, double den) {
    return num >= 0 && den > 0 ? num / den : -1;
}

/* The window of one set of values (the whole page or one engine). */
static void diff_values(const gp_scrape_values *prev, const gp_scrape_values *cur, double dt,
                        double slo_ttft_s, double slo_itl_s, int *reset, gp_scrape_engine *e) {
    double inc[GP_SC__COUNT];
    for (int i = 0; i < GP_SC__COUNT; i++)
        inc[i] = increase(prev->counter[i], cur->counter[i], reset);
    gp_latency *lat[GP_SH__COUNT] = {
        [GP_SH_TTFT] = &e->ttft,   [GP_SH_ITL] = &e->itl,         [GP_SH_E2E] = &e->e2e,
        [GP_SH_QUEUE] = &e->queue, [GP_SH_PREFILL] = &e->prefill, [GP_SH_DECODE] = &e->decode};
    for (int h = 0; h < GP_SH__COUNT; h++)
        if (lat[h]) latency(&prev->hist[h], &cur->hist[h], reset, lat[h]);

    double ok = inc[GP_SC_REQ_OK], er = inc[GP_SC_REQ_ERR];
    if (ok >= 0 && er < 0) er = 0;     /* a server with no error counter reports none */
    if (ok < 0 && e->e2e.count >= 0) { /* no request counter: completed = e2e observations */
        ok = e->e2e.count;
        er = 0;
    }
    e->ok_per_s = per_s(ok, dt);
    e->errors_per_s = per_s(er, dt);
    e->requests_per_s = ok >= 0 ? per_s(ok + er, dt) : -1;
    e->error_ratio = ok >= 0 && ok + er > 0 ? er / (ok + er) : -1;
    e->prompt_tokens_per_s = per_s(inc[GP_SC_PROMPT], dt);
    e->generation_tokens_per_s = per_s(inc[GP_SC_GEN], dt);
    e->running = cur->gauge[GP_SG_RUNNING];
    e->waiting = cur->gauge[GP_SG_WAITING];
    e->kv_cache_usage = cur->gauge[GP_SG_KV_USAGE];
    e->preemptions_per_s = per_s(inc[GP_SC_PREEMPT], dt);
    /* SGLang counts cached tokens against prompt tokens; vLLM has its own query counter */
    double queried = inc[GP_SC_PREFIX_Q] >= 0 ? inc[GP_SC_PREFIX_Q] : inc[GP_SC_PROMPT];
    e->prefix_cache_hit_ratio = ratio(inc[GP_SC_PREFIX_HIT], queried);
    e->spec_accept_ratio = ratio(inc[GP_SC_SPEC_ACCEPT], inc[GP_SC_SPEC_DRAFT]);
    e->batch_size = ratio(inc[GP_SC_INFER], inc[GP_SC_EXEC]);
    /* Triton publishes cumulative microseconds instead of histograms: means only */
    double nreq = ok >= 0 ? ok + er : -1;
    if (e->e2e.count < 0 && inc[GP_SC_REQ_US] >= 0 && nreq > 0) {
        e->e2e.count = nreq;
        e->e2e.mean_s = inc[GP_SC_REQ_US] / 1e6 / nreq;
    }
    if (e->queue.count < 0 && inc[GP_SC_QUEUE_US] >= 0 && nreq > 0) {
        e->queue.count = nreq;
        e->queue.mean_s = inc[GP_SC_QUEUE_US] / 1e6 / nreq;
    }
    e->compute_mean_s =
        inc[GP_SC_COMPUTE_US] >= 0 && nreq > 0 ? inc[GP_SC_COMPUTE_US] / 1e6 / nreq : -1;
    e->slo_ttft_frac = slo_fraction(&prev->hist[GP_SH_TTFT], &cur->hist[GP_SH_TTFT], slo_ttft_s);
    e->slo_itl_frac = slo_fraction(&prev->hist[GP_SH_ITL], &cur->hist[GP_SH_ITL], slo_itl_s);
    double f1 = e->slo_ttft_frac, f2 = e->slo_itl_frac, both = -1;
    if (slo_ttft_s > 0 && slo_itl_s > 0) {
        if (f1 >= 0 && f2 >= 0) both = f1 + f2 - 1 > 0 ? f1 + f2 - 1 : 0;
    } else if (slo_ttft_s > 0) {
        both = f1;
    } else if (slo_itl_s > 0) {
        both = f2;
    }
    e->slo_ok_per_s = both >= 0 && e->ok_per_s >= 0 ? e->ok_per_s * both : -1;
}

static const gp_scrape_values *prev_series(const gp_scrape_snapshot *p, const gp_scrape_series *s) {
    for (int i = 0; i < p->nseries; i++)
        if (!strcmp(p->series[i].engine, s->engine) && !strcmp(p->series[i].model, s->model))
            return &p->series[i].v;
    return NULL;
}

void gp_scrape_diff_slo(const gp_scrape_snapshot *prev, const gp_scrape_snapshot *cur,
                        double slo_ttft_s, double slo_itl_s, gp_scrape_window *w) {
    memset(w, 0, sizeof *w);
    w->flavor = cur->flavor;
    w->t0_ns = prev->ts_ns;
    w->t1_ns = cur->ts_ns;
    double dt = (double)(cur->ts_ns - prev->ts_ns) / 1e9;
    int reset = 0;
    gp_scrape_engine all;
    memset(&all, 0, sizeof all);
    diff_values(&prev->all, &cur->all, dt, slo_ttft_s, slo_itl_s, &reset, &all);
    w->requests_per_s = all.requests_per_s;
    w->ok_per_s = all.ok_per_s;
    w->errors_per_s = all.errors_per_s;
    w->error_ratio = all.error_ratio;
    w->prompt_tokens_per_s = all.prompt_tokens_per_s;
    w->generation_tokens_per_s = all.generation_tokens_per_s;
    w->ttft = all.ttft;
    w->itl = all.itl;
    w->e2e = all.e2e;
    w->running = all.running;
    w->waiting = all.waiting;
    w->kv_cache_usage = all.kv_cache_usage;
    gp_scrape_values blank; /* the "previous" values of an engine with no baseline */
    memset(&blank, 0, sizeof blank);
    for (int i = 0; i < GP_SC__COUNT; i++)
        blank.counter[i] = -1;
    for (int i = 0; i < GP_SG__COUNT; i++)
        blank.gauge[i] = -1;
    for (int i = 0; i < cur->nseries; i++) {
        const gp_scrape_series *s = &cur->series[i];
        const gp_scrape_values *pv = prev_series(prev, s);
        gp_scrape_engine *e = &w->eng[w->n_engines++];
        snprintf(e->engine, sizeof e->engine, "%s", s->engine);
        snprintf(e->model, sizeof e->model, "%s", s->model);
        int r = 0;
        diff_values(pv ? pv : &blank, &s->v, dt, slo_ttft_s, slo_itl_s, &r, e);
        if (!pv) { /* no baseline: histograms were counted from zero; say unknown instead */
            gp_latency unk = {-1, -1, -1, -1, -1, -1};
            e->ttft = e->itl = e->e2e = e->queue = e->prefill = e->decode = unk;
            e->slo_ttft_frac = e->slo_itl_frac = e->slo_ok_per_s = -1;
        }
    }
    w->counter_reset = reset;
}

void gp_scrape_diff(const gp_scrape_snapshot *prev, const gp_scrape_snapshot *cur,
                    gp_scrape_window *w) {
    gp_scrape_diff_slo(prev, cur, -1, -1, w);
}
