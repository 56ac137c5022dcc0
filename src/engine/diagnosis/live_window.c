/* live_window.c: the last window from the last window's rows (see live_window.h). Each
 * figure below is fed the rows in time order, as the whole-job computation in features.c
 * and classify.c (gp_step_obs_from_input) meets them, so it ends where that one does. */
#include "engine/diagnosis/live_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/diagnosis/classify.h"
#include "engine/diagnosis/features.h"
#include "engine/diagnosis/sig_hist.h"
#include "engine/diagnosis/thresholds.h"
#include "store/store.h"

#define NS 1000000000LL
#define SLACK_NS (60 * NS) /* rows stored up to this late still count */
#define MAX_RANKS 256      /* as gp_step_obs_from_input */

typedef struct live_dev {
    char uuid[GP_UUID_MAX];
    int64_t last_ts; /* INT64_MIN: no sample yet */
    /* its sample intervals at 4 significant digits (sig_hist.h): tens of counts for
     * jittered sampling, whatever the job's age; a copy's borrows the state's counts */
    gp_sig_hist dt;
} live_dev;

typedef struct live_rank {
    int64_t rank;
    int64_t prev_ts;   /* end of its previous step; -1 none */
    int64_t offset;    /* iteration renumbering after restarts */
    int64_t last_iter; /* last renumbered iteration; INT64_MIN none */
} live_rank;

typedef struct live_frank {
    int64_t rank;
    int64_t prev_end; /* -1 none */
} live_frank;

struct gp_live_hist {
    int64_t frontier_ns; /* the rows with ts <= frontier are fed; INT64_MIN: none */
    gp_alloc *allocs;    /* the allocations (as of the last call) the rows were fed under */
    size_t n_allocs;
    int64_t t0_filter; /* first allocation; INT64_MIN without allocations */
    int64_t data_lo, data_hi;
    int64_t ready_ns; /* -1 none */
    int has_steps, has_requests;
    int64_t first_active_ns; /* -1 none */
    uint64_t n_samples;
    int64_t hello_ts; /* INT64_MIN: no hello with an SLO */
    gp_slo hello_slo;
    live_rank *ranks; /* the ranks seen, up to MAX_RANKS (a copy has its own) */
    int n_ranks;
    live_dev *devs;
    size_t n_devs;
    /* features.c's thr_alone, the median step time of the steps with no foreign process
     * row within 2 s: per rank the end of its previous step since the first allocation
     * (the features' walk), how many steps shared the GPU and, once a window of the job
     * has shared its GPU (track_alone), the others' durations at 4 significant digits
     * (sig_hist.h: counts per value, ~100 for a step time with 1% jitter; a copy borrows
     * the state's) */
    live_frank *franks;
    size_t n_franks;
    gp_sig_hist alone;
    uint64_t n_shared;
    int track_alone; /* the alone steps are kept: set when a window first needed them */
    uint64_t whole_loads;
};

static void hist_reset(gp_live_hist *h) {
    for (size_t i = 0; i < h->n_devs; i++)
        gp_sig_hist_free(&h->devs[i].dt);
    free(h->devs);
    free(h->allocs);
    free(h->franks);
    free(h->ranks);
    gp_sig_hist_free(&h->alone);
    uint64_t wl = h->whole_loads;
    int ta = h->track_alone;
    memset(h, 0, sizeof *h);
    h->whole_loads = wl;
    h->track_alone = ta;
    h->frontier_ns = INT64_MIN;
    h->t0_filter = INT64_MIN;
    h->data_lo = INT64_MAX;
    h->data_hi = INT64_MIN;
    h->ready_ns = -1;
    h->first_active_ns = -1;
    h->hello_ts = INT64_MIN;
}

void gp_live_hist_free(gp_live_hist *h) {
    if (!h) return;
    hist_reset(h);
    free(h);
}

uint64_t gp_live_hist_whole_loads(const gp_live_hist *h) {
    return h ? h->whole_loads : 0;
}

size_t gp_live_hist_bytes(const gp_live_hist *h) {
    if (!h) return 0;
    size_t b = sizeof *h + h->n_allocs * sizeof *h->allocs + h->n_devs * sizeof *h->devs +
               h->n_franks * sizeof *h->franks + (size_t)h->n_ranks * sizeof *h->ranks +
               gp_sig_hist_bytes(&h->alone);
    for (size_t i = 0; i < h->n_devs; i++)
        b += gp_sig_hist_bytes(&h->devs[i].dt);
    return b;
}

/* A copy of *h into *c (the figures at as_of without moving the frontier): the devices'
 * interval counts are borrowed, read only; what the copy is fed goes to its tails. */
static int hist_copy(gp_live_hist *c, const gp_live_hist *h) {
    *c = *h;
    /* nothing of h's owned by c until copied, so hist_reset(c) after a failure here
     * frees only c's own */
    c->allocs = NULL;
    c->n_allocs = 0;
    c->franks = NULL;
    c->n_franks = 0;
    c->ranks = NULL;
    c->n_ranks = 0;
    c->alone = gp_sig_hist_borrow(&h->alone);
    c->devs = h->n_devs ? malloc(h->n_devs * sizeof *c->devs) : NULL;
    if (h->n_devs && !c->devs) {
        c->n_devs = 0;
        return -1;
    }
    for (size_t i = 0; i < h->n_devs; i++) {
        c->devs[i] = h->devs[i];
        c->devs[i].dt = gp_sig_hist_borrow(&h->devs[i].dt);
    }
    c->franks = h->n_franks ? malloc(h->n_franks * sizeof *c->franks) : NULL;
    if (h->n_franks && !c->franks) return -1;
    if (h->n_franks) memcpy(c->franks, h->franks, h->n_franks * sizeof *c->franks);
    c->n_franks = h->n_franks;
    c->ranks = h->n_ranks ? malloc((size_t)h->n_ranks * sizeof *c->ranks) : NULL;
    if (h->n_ranks && !c->ranks) return -1;
    if (h->n_ranks) memcpy(c->ranks, h->ranks, (size_t)h->n_ranks * sizeof *c->ranks);
    c->n_ranks = h->n_ranks;
    return 0;
}

static live_frank *frank_of(gp_live_hist *h, int64_t rank) {
    for (size_t i = 0; i < h->n_franks; i++)
        if (h->franks[i].rank == rank) return &h->franks[i];
    live_frank *x = realloc(h->franks, (h->n_franks + 1) * sizeof *x);
    if (!x) return NULL;
    h->franks = x;
    x = &h->franks[h->n_franks++];
    *x = (live_frank){rank, -1};
    return x;
}

/* features.c's thr_alone of the whole job: 1 / the median alone step time when at least
 * 5 steps shared the GPU and 5 did not, else unknown (-1). */
static double hist_thr_alone(gp_live_hist *h) {
    if (h->n_shared < 5 || h->alone.n < 5) return -1;
    double ma = gp_sig_hist_median_s(&h->alone);
    return ma > 0 ? 1 / ma : -1;
}

static live_dev *dev_of(gp_live_hist *h, const char *uuid) {
    for (size_t i = 0; i < h->n_devs; i++)
        if (!strcmp(h->devs[i].uuid, uuid)) return &h->devs[i];
    live_dev *d = realloc(h->devs, (h->n_devs + 1) * sizeof *d);
    if (!d) return NULL;
    h->devs = d;
    d = &h->devs[h->n_devs++];
    memset(d, 0, sizeof *d);
    snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
    d->last_ts = INT64_MIN;
    return d;
}

/* features.c's median interval: the ((n - 1) / 2)-th smallest at 4 significant digits,
 * 1 s when there is none or it is <= 0 */
static int64_t dev_dt_med(live_dev *d) {
    if (d->dt.n == 0) return NS;
    int64_t v = gp_sig_hist_kth(&d->dt, (d->dt.n - 1) / 2);
    return v > 0 ? v : NS;
}

/* features.c's alloc_overlap(uuid, ts - 1, ts) > 0 with open allocations reaching past
 * every sample (the whole job's end is its last data) */
static int held_at(const gp_alloc *al, size_t nal, const char *uuid, int64_t ts) {
    if (nal == 0) return 1;
    for (size_t i = 0; i < nal; i++)
        if (!strcmp(al[i].uuid, uuid) && al[i].from_ns < ts &&
            (al[i].to_ns < 0 || al[i].to_ns >= ts))
            return 1;
    return 0;
}

/* NULL past MAX_RANKS (as gp_step_obs_from_input, the rank is left out), or with *oom set */
static live_rank *rank_of(gp_live_hist *h, int64_t rank, int *oom) {
    for (int r = 0; r < h->n_ranks; r++)
        if (h->ranks[r].rank == rank) return &h->ranks[r];
    if (h->n_ranks == MAX_RANKS) return NULL;
    live_rank *x = realloc(h->ranks, (size_t)(h->n_ranks + 1) * sizeof *x);
    if (!x) {
        *oom = 1;
        return NULL;
    }
    h->ranks = x;
    x = &h->ranks[h->n_ranks++];
    *x = (live_rank){rank, -1, 0, INT64_MIN};
    return x;
}

static int cmp_obs_rank_ts(const void *a, const void *b) {
    const gp_worker_obs *x = a, *y = b;
    if (x->worker != y->worker) return (x->worker > y->worker) - (x->worker < y->worker);
    if (x->ts_ns != y->ts_ns) return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
    return (x->iter > y->iter) - (x->iter < y->iter);
}

/* Feeds h the rows of in with lo_ns < ts <= hi_ns. obs (may be NULL): the step
 * observations of those rows, renumbered over the whole job, sorted by (rank, time) as
 * gp_step_obs_from_input sorts them; *nobs their count. */
static int hist_feed(gp_live_hist *h, const gp_job_input *in, int64_t lo_ns, int64_t hi_ns,
                     gp_worker_obs **obs, size_t *nobs, int merge) {
    int64_t t0f = h->t0_filter;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_event *e = &in->events[i];
        if (e->ts_ns <= lo_ns || e->ts_ns > hi_ns) continue;
        if (e->kind == GP_EV_HELLO) {
            if (e->ts_ns >= h->hello_ts &&
                (e->slo_ttft_s > 0 || e->slo_tpot_s > 0 || e->slo_e2e_s > 0)) {
                h->hello_ts = e->ts_ns;
                h->hello_slo = (gp_slo){e->slo_ttft_s, e->slo_tpot_s, e->slo_e2e_s};
            }
            continue;
        }
        if (e->kind == GP_EV_JOB || e->kind == GP_EV_ALLOC) continue;
        if (e->ts_ns < h->data_lo) h->data_lo = e->ts_ns;
        if (e->ts_ns > h->data_hi) h->data_hi = e->ts_ns;
    }
    for (size_t i = 0; in->marks && i < in->n_marks; i++) {
        const gp_mark_ev *m = &in->marks[i];
        if (m->ts_ns <= lo_ns || m->ts_ns > hi_ns) continue;
        if (m->ts_ns < h->data_lo) h->data_lo = m->ts_ns;
        if (m->ts_ns > h->data_hi) h->data_hi = m->ts_ns;
        if (m->kind != GP_EV_REQUEST || m->ts_ns < t0f) continue;
        h->has_requests = 1;
        int64_t cand = m->arrival_ns >= 0 ? m->arrival_ns : m->ts_ns;
        if (m->first_token_ns >= 0 && m->arrival_ns >= 0 &&
            m->first_token_ns - m->arrival_ns > 30LL * NS)
            cand = m->first_token_ns;
        if (h->ready_ns < 0 || cand < h->ready_ns) h->ready_ns = cand;
    }
    /* foreign processes on the job's GPUs, as features.c picks them */
    int64_t *fts = malloc((in->n_procs ? in->n_procs : 1) * sizeof *fts);
    if (!fts) return -1;
    size_t nf = gp_features_foreign_ts(in, fts);
    size_t ns = 0;
    for (size_t i = 0; in->steps && i < in->n_steps; i++)
        ns += in->steps[i].ts_ns > lo_ns && in->steps[i].ts_ns <= hi_ns;
    gp_worker_obs *o = malloc((ns ? ns : 1) * sizeof *o);
    size_t k = 0;
    if (!o) {
        free(fts);
        return -1;
    }
    for (size_t i = 0; in->steps && i < in->n_steps; i++) {
        const gp_step_ev *sp = &in->steps[i];
        if (sp->ts_ns <= lo_ns || sp->ts_ns > hi_ns) continue;
        if (sp->ts_ns < h->data_lo) h->data_lo = sp->ts_ns;
        if (sp->ts_ns > h->data_hi) h->data_hi = sp->ts_ns;
        if (sp->ts_ns >= t0f) {
            h->has_steps = 1;
            if (h->ready_ns < 0 || sp->ts_ns < h->ready_ns) h->ready_ns = sp->ts_ns;
            live_frank *fr = frank_of(h, sp->rank);
            if (!fr) goto oom;
            int64_t st = sp->step_start_ns >= 0 ? sp->step_start_ns : fr->prev_end;
            fr->prev_end = sp->ts_ns;
            if (st >= 0 && sp->ts_ns > st) {
                if (gp_features_near_foreign(fts, nf, sp->ts_ns))
                    h->n_shared++;
                else if (h->track_alone && gp_sig_hist_add(&h->alone, sp->ts_ns - st) < 0)
                    goto oom;
            }
        }
        if (sp->rank < 0) continue;
        int oom = 0;
        live_rank *r = rank_of(h, sp->rank, &oom);
        if (oom) goto oom;
        if (!r) continue;
        int64_t st = sp->step_start_ns >= 0 ? sp->step_start_ns : r->prev_ts;
        r->prev_ts = sp->ts_ns;
        if (st < 0 || sp->ts_ns <= st) continue;
        o[k++] =
            (gp_worker_obs){(int)sp->rank, sp->step, (double)(sp->ts_ns - st) / 1e9, sp->ts_ns};
    }
    free(fts);
    fts = NULL;
    {
        /* as gp_step_obs_from_input: by (rank, time, step), then each rank's steps
         * renumbered to keep increasing, continuing from the rows fed before */
        qsort(o, k, sizeof *o, cmp_obs_rank_ts);
        for (size_t i = 0; i < k; i++) {
            live_rank *r = NULL;
            for (int x = 0; x < h->n_ranks && !r; x++)
                if ((int)h->ranks[x].rank == o[i].worker) r = &h->ranks[x];
            if (!r) continue;
            if (r->last_iter != INT64_MIN && o[i].iter + r->offset <= r->last_iter)
                r->offset = r->last_iter + 1 - o[i].iter;
            o[i].iter += r->offset;
            r->last_iter = o[i].iter;
        }
        if (obs) {
            *obs = o;
            *nobs = k;
        } else
            free(o);
    }
    for (size_t i = 0; i < in->n_samples; i++) {
        const gp_sample *x = &in->samples[i];
        if (x->ts_ns <= lo_ns || x->ts_ns > hi_ns) continue;
        h->n_samples++;
        if (in->n_allocs == 0 && x->ts_ns < h->data_lo) h->data_lo = x->ts_ns;
        if (x->ts_ns > h->data_hi) h->data_hi = x->ts_ns;
        live_dev *d = dev_of(h, x->uuid);
        if (!d) return -1;
        if (d->last_ts != INT64_MIN && gp_sig_hist_add(&d->dt, x->ts_ns - d->last_ts) < 0)
            return -1;
        d->last_ts = x->ts_ns;
        /* first activity (features.c telemetry): kernels running or memory held */
        if (x->ts_ns <= t0f || !held_at(in->allocs, in->n_allocs, x->uuid, x->ts_ns)) continue;
        if (gp_features_sample_active(x) &&
            (h->first_active_ns < 0 || x->ts_ns < h->first_active_ns))
            h->first_active_ns = x->ts_ns;
    }
    for (size_t i = 0; merge && i < h->n_devs; i++)
        if (gp_sig_hist_merge(&h->devs[i].dt) < 0) return -1;
    if (merge && gp_sig_hist_merge(&h->alone) < 0) return -1;
    return 0;
oom:
    free(fts);
    free(o);
    return -1;
}

static int same_alloc(const gp_alloc *a, const gp_alloc *b) {
    return !strcmp(a->uuid, b->uuid) && a->from_ns == b->from_ns;
}

/* Whether the rows fed (ts <= frontier) count the same under the allocations al as under
 * those they were fed under: closed since at or after the frontier, or new ones from after
 * it on a device already held past it (or a new device). Anything else reloads. */
static int allocs_compatible(const gp_live_hist *h, const gp_alloc *al, size_t nal,
                             int64_t t0_filter) {
    int64_t f = h->frontier_ns;
    if (t0_filter != h->t0_filter) return 0;
    for (size_t i = 0; i < h->n_allocs; i++) {
        const gp_alloc *o = &h->allocs[i];
        const gp_alloc *m = NULL;
        for (size_t k = 0; k < nal && !m; k++)
            if (same_alloc(o, &al[k])) m = &al[k];
        if (!m) return 0;
        if (m->to_ns != o->to_ns && !(o->to_ns < 0 && m->to_ns >= f)) return 0;
    }
    for (size_t k = 0; k < nal; k++) {
        int known = 0, held_past = 1;
        for (size_t i = 0; i < h->n_allocs && !known; i++)
            known = same_alloc(&h->allocs[i], &al[k]);
        if (known) continue;
        if (al[k].from_ns <= f) return 0;
        for (size_t i = 0; i < h->n_allocs; i++)
            if (!strcmp(h->allocs[i].uuid, al[k].uuid)) {
                held_past = 0;
                break;
            }
        for (size_t i = 0; i < h->n_allocs && !held_past; i++)
            if (!strcmp(h->allocs[i].uuid, al[k].uuid) &&
                (h->allocs[i].to_ns < 0 || h->allocs[i].to_ns >= f))
                held_past = 1;
        if (!held_past) return 0;
    }
    return 1;
}

static int whole_load(gp_store *s, const char *job_id, int64_t window_ns, int64_t as_of_ns,
                      gp_live_hist *h, gp_diag_window **out, size_t *n, char *err, size_t errlen) {
    h->whole_loads++;
    return gp_diagnose_windows_as_of(s, job_id, NULL, window_ns, 1, as_of_ns, out, n, err, errlen);
}

int gp_diagnose_last_window_live(gp_store *s, const char *job_id, int64_t window_ns,
                                 int64_t as_of_ns, gp_live_hist **hp, gp_diag_window **out,
                                 size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    if (window_ns <= 0 || as_of_ns <= 0) {
        snprintf(err, errlen, "the window must be longer than 0 s, at a time > 0");
        return -1;
    }
    if (!*hp) {
        if (!(*hp = calloc(1, sizeof **hp))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        hist_reset(*hp);
    }
    gp_live_hist *h = *hp, c;
    memset(&c, 0, sizeof c);
    gp_job_input in;
    memset(&in, 0, sizeof in);
    gp_worker_obs *obs = NULL;
    size_t nobs = 0;
    gp_dev_interval *dti = NULL;
    gp_diag_window *w = NULL;
    int rc = -1, have_copy = 0, retry = 0;
    /* the allocations as of now (few: read whole) decide whether the fed rows still hold */
    gp_alloc *al = NULL;
    size_t nal = 0;
    if (gp_store_job_allocs(s, job_id, &al, &nal) < 0) {
        snprintf(err, errlen, "job %s: cannot read the store: %s", job_id, gp_store_errmsg(s));
        goto done;
    }
    {
        size_t m = 0;
        for (size_t i = 0; i < nal; i++) {
            if (al[i].from_ns > as_of_ns) continue;
            al[m] = al[i];
            if (al[m].to_ns > as_of_ns) al[m].to_ns = -1;
            m++;
        }
        nal = m;
    }
    int64_t t0_filter = INT64_MIN;
    for (size_t i = 0; i < nal; i++)
        if (t0_filter == INT64_MIN || al[i].from_ns < t0_filter) t0_filter = al[i].from_ns;
    if (h->frontier_ns != INT64_MIN && !allocs_compatible(h, al, nal, t0_filter)) hist_reset(h);
    int64_t from = h->frontier_ns;
    if (from == INT64_MIN) h->whole_loads++;
    h->t0_filter = t0_filter;
    /* from 2 s earlier: the foreign process rows near the first steps fed */
    int64_t load_from = from == INT64_MIN ? from : from - 2 * NS;
    if (gp_job_input_load_range(s, job_id, 1, load_from, as_of_ns, &in, err, errlen) < 0) goto done;
    uint64_t rows = (uint64_t)(in.n_events + in.n_steps + in.n_marks + in.n_samples + in.n_procs);
    gp_job_input_clip_as_of(&in, as_of_ns);
    /* the figures at as_of_ns: the state's rows and the ones read since its frontier */
    have_copy = 1;
    if (hist_copy(&c, h) < 0) goto oom;
    if (hist_feed(&c, &in, from, as_of_ns, &obs, &nobs, 0) < 0) goto oom;
    /* the span as features.c's window_of sees the whole job */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < in.n_allocs; i++) {
        if (in.allocs[i].from_ns < lo) lo = in.allocs[i].from_ns;
        if (in.allocs[i].to_ns > hi) hi = in.allocs[i].to_ns;
    }
    if (in.n_allocs == 0 && c.data_lo < lo) lo = c.data_lo;
    if (c.data_hi > hi) hi = c.data_hi;
    int64_t T0 = lo == INT64_MAX ? 0 : lo, T1 = hi == INT64_MIN ? T0 : hi;
    int64_t dt_max = 0;
    if (c.n_devs && !(dti = calloc(c.n_devs, sizeof *dti))) goto oom;
    for (size_t i = 0; i < c.n_devs; i++) {
        snprintf(dti[i].uuid, sizeof dti[i].uuid, "%s", c.devs[i].uuid);
        dti[i].dt_med_ns = dev_dt_med(&c.devs[i]);
        if (dti[i].dt_med_ns > dt_max) dt_max = dti[i].dt_med_ns;
    }
    /* a window's first sample reads the one before it when closer than 5 intervals (a
     * gap otherwise), its steps the foreign process rows within 2 s */
    int64_t lookback = 5 * (dt_max > NS ? dt_max : NS) + 2 * NS;
    if (T1 > T0) {
        int64_t t0 = T1 - window_ns > T0 ? T1 - window_ns : T0;
        int fallback = from != INT64_MIN && t0 - lookback < from;
        /* a request in the window that arrived before the rows read: features.c bins the
         * requests completed since that arrival */
        for (size_t i = 0; !fallback && from != INT64_MIN && i < in.n_marks; i++) {
            const gp_mark_ev *m = &in.marks[i];
            if (m->kind == GP_EV_REQUEST && m->ts_ns >= t0 && m->ts_ns <= T1 &&
                (m->arrival_ns >= 0 ? m->arrival_ns : m->ts_ns) < from)
                fallback = 1;
        }
        if (!fallback) {
            int needs_alone = 0;
            gp_input_history hist = {dti, c.n_devs, (int64_t)c.n_samples};
            in.history = &hist;
            if (in.slo.ttft_s <= 0 && in.slo.tpot_s <= 0 && in.slo.e2e_s <= 0 &&
                c.hello_ts != INT64_MIN)
                in.slo = c.hello_slo; /* the latest declared, as features.c's effective_slo */
            gp_features whole;
            memset(&whole, 0, sizeof whole);
            whole.t0_ns = T0;
            whole.t1_ns = T1;
            whole.ready_ns = c.ready_ns;
            whole.activity_only = !c.has_steps && !c.has_requests;
            /* features.c leaves it 0 for a job without samples */
            whole.first_active_ns = c.n_samples ? c.first_active_ns : 0;
            whole.ideal_step_s = -1; /* not kept (live_window.h) */
            whole.thr_alone = -1;    /* computed below when the window reads it */
            if (!(w = calloc(1, sizeof *w))) goto oom;
            size_t m = 0;
            for (size_t i = 0; i < nobs; i++)
                if (obs[i].ts_ns >= t0 && obs[i].ts_ns < T1) obs[m++] = obs[i];
            if (gp_diagnose_window_input(&in, &whole, obs, m, t0, T1, w, &needs_alone, err,
                                         errlen) < 0)
                goto done;
            /* a window sharing its GPU compares with the job's speed alone: the first
             * time for this job, the alone steps are not kept yet; read the job whole
             * once, keeping them from then on */
            if (needs_alone && !c.track_alone) {
                retry = 1;
                goto done;
            }
            if (needs_alone && (whole.thr_alone = hist_thr_alone(&c)) > 0) {
                gp_diag_windows_free(w, 1);
                if (!(w = calloc(1, sizeof *w))) goto oom;
                if (gp_diagnose_window_input(&in, &whole, obs, m, t0, T1, w, NULL, err, errlen) < 0)
                    goto done;
            }
            in.history = NULL;
            w->rows_read = rows;
        }
        if (fallback) {
            gp_diag_windows_free(w, 1);
            w = NULL;
            size_t nw = 0;
            if (whole_load(s, job_id, window_ns, as_of_ns, h, &w, &nw, err, errlen) < 0) goto done;
            if (nw == 1) w->rows_read += rows;
            *n = nw;
        } else
            *n = 1;
    }
    /* move the frontier: the rows a later window cannot start before */
    int64_t f = T1 - window_ns - lookback - SLACK_NS;
    if (f > as_of_ns) f = as_of_ns;
    if (f > h->frontier_ns) {
        if (hist_feed(h, &in, h->frontier_ns, f, NULL, NULL, 1) < 0) goto oom;
        h->frontier_ns = f;
    }
    free(h->allocs);
    h->allocs = al;
    h->n_allocs = nal;
    al = NULL;
    *out = w;
    w = NULL;
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "job %s: out of memory", job_id);
done:
    if (rc < 0 || retry) {
        hist_reset(h);
        *n = 0;
    }
    if (have_copy) hist_reset(&c); /* its own copies of the devices' intervals */
    gp_diag_windows_free(w, w ? 1 : 0);
    free(al);
    free(dti);
    free(obs);
    gp_job_input_free(&in);
    if (retry) {
        h->track_alone = 1;
        return gp_diagnose_last_window_live(s, job_id, window_ns, as_of_ns, hp, out, n, err,
                                            errlen);
    }
    return rc;
}
