/* windows.c: windowed diagnosis and step-time deviation over time (see windows.h).
 * Cost: one feature pass over the job's arrays per window, plus one for the whole job. */
#include "engine/diagnosis/windows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/cost.h"
#include "engine/diagnosis/features.h"
#include "engine/diagnosis/thresholds.h"
#include "store/store.h"

#define MAX_PER_WINDOW 32

void gp_diag_windows_free(gp_diag_window *w, size_t n) {
    for (size_t i = 0; w && i < n; i++)
        free(w[i].findings);
    free(w);
}

static const gp_gpu_spec *spec_of(const gp_job_input *in) {
    for (size_t i = 0; i < in->n_allocs; i++)
        for (size_t k = 0; k < in->n_devices; k++)
            if (!strcmp(in->devices[k].uuid, in->allocs[i].uuid) && in->devices[k].spec)
                return in->devices[k].spec;
    return NULL;
}

/* Diagnoses [t0, t1) of the loaded job into *w. */
static int diagnose_window(gp_job_input *in, const gp_worker_obs *obs, size_t nobs,
                           gp_worker_obs *scratch, double price, const gp_features *whole,
                           int64_t t0, int64_t t1, gp_diag_window *w, int *needs_alone, char *err,
                           size_t errlen) {
    gp_job_input wi = *in;
    wi.t0_ns = t0;
    wi.t1_ns = t1;
    gp_features f;
    double ideal = whole->ideal_step_s;
    if (gp_features_compute(&wi, &f, err, errlen) < 0) return -1;
    gp_features_clip_ready(&f, whole);
    if (needs_alone)
        *needs_alone = (f.thr_shared < 0 && f.shared_share > 0.5 && f.ideal_step_s > 0) ||
                       (f.thr_shared > 0 && f.thr_alone < 0);
    /* a window spent entirely sharing the GPU: compare with the job's own speed alone */
    if (f.thr_shared < 0 && whole->thr_alone > 0 && f.shared_share > 0.5 && f.ideal_step_s > 0)
        f.thr_shared = 1 / f.ideal_step_s;
    if (f.thr_shared > 0 && f.thr_alone < 0 && whole->thr_alone > 0) f.thr_alone = whole->thr_alone;
    size_t m = 0;
    for (size_t i = 0; i < nobs; i++)
        if (obs[i].ts_ns >= t0 && obs[i].ts_ns < t1) scratch[m++] = obs[i];
    w->findings = calloc(MAX_PER_WINDOW, sizeof *w->findings);
    if (!w->findings) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->n = gp_classify(in->job_id, &f, scratch, m, price, w->findings, MAX_PER_WINDOW);
    snprintf(w->job_id, sizeof w->job_id, "%s", in->job_id);
    w->t0_ns = t0;
    w->t1_ns = t1;
    w->steps = f.n_steps;
    w->median_step_s = f.ideal_step_s;
    w->ideal_step_s = ideal;
    w->deviation_known = f.ideal_step_s > 0 && ideal > 0;
    w->deviation = w->deviation_known ? f.ideal_step_s / ideal - 1 : 0;
    w->gpu_util_mean = f.gpu_util.n ? f.gpu_util.mean : f.sm_active.n ? f.sm_active.mean : -1;
    return 0;
}

/* Keeps what the store held at as_of_ns: samples, process rows and events up to it, the
 * allocations begun by then, those that ended later still held. The arrays are the
 * loader's own (malloc'ed), so they are shortened in place. */
void gp_job_input_clip_as_of(gp_job_input *in, int64_t as_of_ns) {
    size_t m = 0;
    gp_sample *smp = (gp_sample *)in->samples;
    for (size_t i = 0; i < in->n_samples; i++)
        if (smp[i].ts_ns <= as_of_ns) smp[m++] = smp[i];
    in->n_samples = m;
    gp_proc_sample *prc = (gp_proc_sample *)in->procs;
    m = 0;
    for (size_t i = 0; i < in->n_procs; i++)
        if (prc[i].ts_ns <= as_of_ns) prc[m++] = prc[i];
    in->n_procs = m;
    gp_event *ev = (gp_event *)in->events;
    m = 0;
    for (size_t i = 0; i < in->n_events; i++)
        if (ev[i].ts_ns <= as_of_ns) ev[m++] = ev[i];
    in->n_events = m;
    gp_step_ev *sv = (gp_step_ev *)in->steps;
    m = 0;
    for (size_t i = 0; sv && i < in->n_steps; i++)
        if (sv[i].ts_ns <= as_of_ns) sv[m++] = sv[i];
    in->n_steps = m;
    gp_mark_ev *mv = (gp_mark_ev *)in->marks;
    m = 0;
    for (size_t i = 0; mv && i < in->n_marks; i++)
        if (mv[i].ts_ns <= as_of_ns) mv[m++] = mv[i];
    in->n_marks = m;
    gp_alloc *al = (gp_alloc *)in->allocs;
    m = 0;
    for (size_t i = 0; i < in->n_allocs; i++) {
        if (al[i].from_ns > as_of_ns) continue;
        al[m] = al[i];
        if (al[m].to_ns > as_of_ns) al[m].to_ns = -1;
        m++;
    }
    in->n_allocs = m;
}

int gp_diagnose_windows(gp_store *s, const char *job_id, const gp_diag_opts *o, int64_t window_ns,
                        int last_only, gp_diag_window **out, size_t *n, char *err, size_t errlen) {
    return gp_diagnose_windows_as_of(s, job_id, o, window_ns, last_only, 0, out, n, err, errlen);
}

int gp_diagnose_windows_as_of(gp_store *s, const char *job_id, const gp_diag_opts *o,
                              int64_t window_ns, int last_only, int64_t as_of_ns,
                              gp_diag_window **out, size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    if (window_ns <= 0) {
        snprintf(err, errlen, "the window must be longer than 0 s");
        return -1;
    }
    gp_job_input in;
    /* raw samples: a window of minutes needs what happened inside its minutes */
    if (gp_job_input_load_ex(s, job_id, 1, &in, err, errlen) < 0) return -1;
    uint64_t rows = (uint64_t)(in.n_events + (in.steps ? in.n_steps : 0) +
                               (in.marks ? in.n_marks : 0) + in.n_samples + in.n_procs);
    if (as_of_ns > 0) gp_job_input_clip_as_of(&in, as_of_ns);
    gp_slo_override(&in.slo, o ? &o->slo : NULL);
    gp_features whole;
    gp_worker_obs *obs = NULL, *scratch = NULL;
    gp_diag_window *w = NULL;
    size_t nw = 0;
    int rc = -1;
    if (gp_features_compute(&in, &whole, err, errlen) < 0) goto done;
    int nobs = gp_step_obs_from_input(&in, &obs);
    if (nobs < 0 || !(scratch = malloc(((size_t)(nobs > 0 ? nobs : 1)) * sizeof *scratch))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    double price = gp_price_per_gpu_h(spec_of(&in), o ? o->price_per_gpu_h : 0);
    int64_t T0 = whole.t0_ns, T1 = whole.t1_ns;
    if (T1 <= T0) { /* no data at all: nothing to diagnose */
        rc = 0;
        goto done;
    }
    int64_t first = last_only ? (T1 - window_ns > T0 ? T1 - window_ns : T0) : T0;
    size_t cap = last_only ? 1 : (size_t)((T1 - T0 + window_ns - 1) / window_ns);
    if (cap > 100000) {
        snprintf(err, errlen, "%zu windows of %.0f s: choose a longer window", cap,
                 (double)window_ns / 1e9);
        goto done;
    }
    w = calloc(cap ? cap : 1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (int64_t a = first; a < T1 && nw < cap; a += window_ns) {
        int64_t b = a + window_ns < T1 ? a + window_ns : T1;
        if (diagnose_window(&in, obs, (size_t)(nobs > 0 ? nobs : 0), scratch, price, &whole, a, b,
                            &w[nw], NULL, err, errlen) < 0) {
            nw++;
            goto done;
        }
        w[nw++].rows_read = rows;
    }
    rc = 0;
done:
    if (rc < 0) {
        gp_diag_windows_free(w, nw);
    } else {
        *out = w;
        *n = nw;
    }
    free(obs);
    free(scratch);
    gp_job_input_free(&in);
    return rc;
}

int gp_diagnose_window_input(gp_job_input *in, const gp_features *whole, const gp_worker_obs *obs,
                             size_t nobs, int64_t t0_ns, int64_t t1_ns, gp_diag_window *w,
                             int *needs_alone, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    gp_worker_obs *scratch = malloc((nobs ? nobs : 1) * sizeof *scratch);
    if (!scratch) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double price = gp_price_per_gpu_h(spec_of(in), 0);
    int rc = diagnose_window(in, obs, nobs, scratch, price, whole, t0_ns, t1_ns, w, needs_alone,
                             err, errlen);
    free(scratch);
    if (rc < 0) {
        free(w->findings);
        w->findings = NULL;
    }
    return rc;
}

/* An episode being merged: the finding shown (the worst window's, totals written at the
 * end) and the running totals. */
typedef struct {
    gp_finding f;
    size_t last;    /* index of the last window that had it */
    size_t windows; /* how many windows */
    int64_t t0, t1; /* first start, last end */
    double badput[GP_FINDING_BUCKETS];
    int badput_unknown; /* some window could not split its badput */
    double wasted_s, wasted_cost, head_s, head_cost, prod_s;
    int wasted_unk, wcost_unk, head_unk, hcost_unk, prod_unk;
    double worst_w, worst_h; /* the shown window's badput and headroom */
    int all_minor;
    double conf;
} episode;

static int same_cause(const gp_finding *a, const gp_finding *b) {
    return a->cls == b->cls && a->scope == b->scope && !strcmp(a->scope_id, b->scope_id) &&
           !strcmp(a->job_id, b->job_id);
}

static int badput_unknown(const gp_finding *f) {
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        if (f->badput_gpu_s[b] < 0) return 1;
    return 0;
}

static void episode_add(episode *e, const gp_finding *f, size_t k, int fresh) {
    double w = f->wasted_gpu_s >= 0 ? f->wasted_gpu_s : -1;
    double h = f->headroom_gpu_s >= 0 ? f->headroom_gpu_s : -1;
    if (fresh) {
        memset(e, 0, sizeof *e);
        e->f = *f;
        e->t0 = f->t0_ns;
        e->t1 = f->t1_ns;
        e->all_minor = 1;
        e->worst_w = w;
        e->worst_h = h;
    } else if (w > e->worst_w || (w == e->worst_w && h > e->worst_h)) {
        e->f = *f; /* the worst window speaks for the episode */
        e->worst_w = w;
        e->worst_h = h;
    }
    e->last = k;
    e->windows++;
    if (f->t0_ns < e->t0) e->t0 = f->t0_ns;
    if (f->t1_ns > e->t1) e->t1 = f->t1_ns;
    if (badput_unknown(f))
        e->badput_unknown = 1;
    else
        for (int b = 0; b < GP_FINDING_BUCKETS; b++)
            e->badput[b] += f->badput_gpu_s[b];
    if (f->wasted_gpu_s >= 0)
        e->wasted_s += f->wasted_gpu_s;
    else
        e->wasted_unk = 1;
    if (f->wasted_cost >= 0)
        e->wasted_cost += f->wasted_cost;
    else
        e->wcost_unk = 1;
    /* headroom: a window that states none adds nothing; one that states it without its
     * GPU-seconds makes the total unknown */
    if (f->headroom_frac > 0) {
        if (f->headroom_gpu_s >= 0) {
            e->head_s += f->headroom_gpu_s;
            e->prod_s += f->headroom_gpu_s / f->headroom_frac;
        } else
            e->head_unk = e->prod_unk = 1;
        if (f->headroom_cost >= 0)
            e->head_cost += f->headroom_cost;
        else
            e->hcost_unk = 1;
    }
    if (!f->minor) e->all_minor = 0;
    if (f->confidence > e->conf) e->conf = f->confidence;
}

static void episode_finish(episode *e) {
    gp_finding *f = &e->f;
    f->t0_ns = e->t0;
    f->t1_ns = e->t1;
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        f->badput_gpu_s[b] = e->badput_unknown ? -1 : e->badput[b];
    f->wasted_gpu_s = e->wasted_unk ? -1 : e->wasted_s;
    f->wasted_cost = e->wcost_unk ? -1 : e->wasted_cost;
    if (f->headroom_frac > 0 || e->head_s > 0 || e->head_unk) {
        f->headroom_gpu_s = e->head_unk ? -1 : e->head_s;
        f->headroom_cost = e->hcost_unk ? -1 : e->head_cost;
        if (!e->prod_unk && e->prod_s > 0) f->headroom_frac = e->head_s / e->prod_s;
    }
    f->minor = e->all_minor;
    f->confidence = e->conf;
    if (e->windows > 1) {
        char buf[sizeof f->summary];
        snprintf(buf, sizeof buf, "Over %zu consecutive windows (%.0f s): %s", e->windows,
                 (double)(e->t1 - e->t0) / 1e9, f->summary);
        memcpy(f->summary, buf, sizeof f->summary);
    }
}

int gp_diag_windows_episodes(const gp_diag_window *w, size_t nw, gp_finding **out) {
    *out = NULL;
    episode *ep = NULL;
    size_t ne = 0, cap = 0;
    size_t *open = NULL, nopen = 0, *next = NULL, nnext = 0, ocap = 0;
    for (size_t k = 0; k < nw; k++) {
        if (w[k].n > ocap || !open) {
            ocap = w[k].n > ocap ? w[k].n : ocap ? ocap : 1;
            size_t *a = realloc(open, ocap * sizeof *a),
                   *b = a ? realloc(next, ocap * sizeof *b) : NULL;
            if (a) open = a;
            if (b) next = b;
            if (!a || !b) goto oom;
        }
        nnext = 0;
        for (size_t i = 0; i < w[k].n; i++) {
            const gp_finding *f = &w[k].findings[i];
            size_t e = ne;
            for (size_t o = 0; o < nopen; o++) /* the episode the previous window left open */
                if (ep[open[o]].last + 1 == k && same_cause(&ep[open[o]].f, f)) e = open[o];
            int fresh = e == ne;
            if (fresh) {
                if (ne == cap) {
                    cap = cap ? 2 * cap : 16;
                    episode *x = realloc(ep, cap * sizeof *x);
                    if (!x) goto oom;
                    ep = x;
                }
                ne++;
            } else if (ep[e].last == k)
                continue; /* a second finding of the same cause in one window: already in */
            episode_add(&ep[e], f, k, fresh);
            next[nnext++] = e;
        }
        size_t *t = open;
        open = next, next = t;
        nopen = nnext;
    }
    free(open);
    free(next);
    if (!ne) {
        free(ep);
        return 0;
    }
    gp_finding *r = malloc(ne * sizeof *r);
    if (!r) {
        free(ep);
        return -1;
    }
    for (size_t e = 0; e < ne; e++) {
        episode_finish(&ep[e]);
        r[e] = ep[e].f;
    }
    free(ep);
    gp_findings_rank(r, ne);
    *out = r;
    return (int)ne;
oom:
    free(ep);
    free(open);
    free(next);
    return -1;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int gp_step_deviation(const gp_event *ev, size_t n, int64_t t0_ns, int64_t t1_ns, int64_t window_ns,
                      double ideal_s, gp_step_dev **out) {
    gp_job_input in;
    memset(&in, 0, sizeof in);
    in.events = ev;
    in.n_events = n;
    return gp_step_deviation_input(&in, t0_ns, t1_ns, window_ns, ideal_s, out);
}

static int cmp_step_ev(const void *a, const void *b) {
    const gp_step_ev *x = a, *y = b;
    if (x->rank != y->rank) return (x->rank > y->rank) - (x->rank < y->rank);
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

int gp_step_deviation_input(const gp_job_input *in, int64_t t0_ns, int64_t t1_ns, int64_t window_ns,
                            double ideal_s, gp_step_dev **out) {
    *out = NULL;
    if (window_ns <= 0 || t1_ns <= t0_ns) return 0;
    size_t nw = (size_t)((t1_ns - t0_ns + window_ns - 1) / window_ns);
    if (nw > 100000) nw = 100000;
    size_t n = in->n_events + (in->steps ? in->n_steps : 0);
    /* step durations (end - start, or the gap since the same rank's previous step) */
    gp_step_ev *st = malloc((n ? n : 1) * sizeof *st);
    double *dur = malloc((n ? n : 1) * sizeof *dur), *v = malloc((n ? n : 1) * sizeof *v);
    int64_t *end = malloc((n ? n : 1) * sizeof *end);
    gp_step_dev *d = calloc(nw, sizeof *d);
    if (!st || !dur || !v || !end || !d) {
        free(st), free(dur), free(v), free(end), free(d);
        return -1;
    }
    size_t ns = 0, nd = 0;
    gp_step_iter it = {0, 0};
    while (ns < n && gp_step_next(in, &it, &st[ns]))
        ns++;
    qsort(st, ns, sizeof *st, cmp_step_ev);
    for (size_t i = 0; i < ns; i++) {
        int64_t s0 = st[i].step_start_ns >= 0                ? st[i].step_start_ns
                     : i > 0 && st[i - 1].rank == st[i].rank ? st[i - 1].ts_ns
                                                             : -1;
        if (s0 < 0 || st[i].ts_ns <= s0) continue;
        dur[nd] = (double)(st[i].ts_ns - s0) / 1e9;
        end[nd++] = st[i].ts_ns;
    }
    for (size_t k = 0; k < nw; k++) {
        int64_t a = t0_ns + (int64_t)k * window_ns;
        int64_t b = a + window_ns < t1_ns ? a + window_ns : t1_ns;
        size_t m = 0;
        for (size_t i = 0; i < nd; i++)
            if (end[i] >= a && end[i] < b) v[m++] = dur[i];
        d[k].t0_ns = a;
        d[k].t1_ns = b;
        d[k].steps = (int64_t)m;
        d[k].median_step_s = -1;
        if (m) {
            qsort(v, m, sizeof *v, cmp_d);
            d[k].median_step_s = m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
        }
        d[k].deviation =
            d[k].median_step_s > 0 && ideal_s > 0 ? d[k].median_step_s / ideal_s - 1 : 0;
    }
    free(st), free(dur), free(v), free(end);
    *out = d;
    return (int)nw;
}
