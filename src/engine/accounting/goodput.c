/* goodput.c: labels a job's time and integrates allocated GPU-seconds per bucket.
 *
 * Method: build labelled intervals (steps, phases, restarts, readiness), then sweep all
 * interval and allocation boundaries once in time order, keeping a count of open
 * intervals per label and of held GPUs. Each elementary segment takes the highest
 * priority open label and adds duration x held GPUs to it (a split shared GPU counts as
 * the allocation's share of one). O(n log n) in events. */
#include "engine/accounting/goodput.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Labels in priority order: a lower value wins. Recovery (from the last step before a
 * restart to the next step) ranks below the phases the new process reports: its init is
 * startup and its restore is checkpoint, as for a first start; recovery is the dead time
 * nothing else explains. A blocking phase inside a step that was later redone keeps its
 * own bucket: the restart lost the step's computation, not its wait for data or its
 * checkpoint save, which the job would have spent without the failure. */
enum {
    L_CHECKPOINT,
    L_DATA_WAIT,
    L_WASTED,
    L_STARTUP,
    L_RECOVERY,
    L_OTHER_PHASE,
    L_PRODUCTIVE,
    L_NOT_READY,
    L__COUNT,
    L_ALLOC = 100 /* boundary of a held GPU, not a label */
};

static const gp_bucket label_bucket[L__COUNT] = {
    GP_B_CHECKPOINT, GP_B_DATA_WAIT, GP_B_WASTED_PROGRESS, GP_B_STARTUP,
    GP_B_RECOVERY,   GP_B_OTHER,     GP_B_PRODUCTIVE,      GP_B_NOT_READY,
};

typedef struct {
    int64_t t;
    int label;    /* L_* or L_ALLOC */
    int delta;    /* +1 open, -1 close */
    double share; /* L_ALLOC: the fraction of a GPU this allocation holds */
} edge;

typedef struct {
    edge *v;
    size_t n, cap;
    int oom;
} edges;

static void add_interval_w(edges *e, int64_t a, int64_t b, int label, double share) {
    if (b <= a) return;
    if (e->n + 2 > e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 256;
        edge *p = realloc(e->v, nc * sizeof *p);
        if (!p) {
            e->oom = 1;
            return;
        }
        e->v = p;
        e->cap = nc;
    }
    e->v[e->n++] = (edge){a, label, +1, share};
    e->v[e->n++] = (edge){b, label, -1, share};
}

static void add_interval(edges *e, int64_t a, int64_t b, int label) {
    add_interval_w(e, a, b, label, 1);
}

static int cmp_edge(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* closes before opens at the same instant */
}

static int cmp_event_ts(const void *a, const void *b) {
    const gp_acct_event *x = *(const gp_acct_event *const *)a,
                        *y = *(const gp_acct_event *const *)b;
    if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    return 0;
}

typedef struct {
    int64_t step;
    size_t pos;
} step_pos;

static int cmp_step_pos(const void *a, const void *b) {
    const step_pos *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Is there a time in sorted t[0..n) within [a, b]? */
static int any_in(const int64_t *t, size_t n, int64_t a, int64_t b) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t[mid] < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && t[lo] <= b;
}

/* The same step delivered twice (same number, end and start) among the steps collected
 * so far; they are in time order, so a copy sits among the last ones with its end. */
static int duplicate_step(const gp_acct_event *const *st, size_t ns, const gp_acct_event *e) {
    for (size_t p = ns; p > 0 && st[p - 1]->ts_ns == e->ts_ns; p--)
        if (st[p - 1]->step == e->step && st[p - 1]->step_start_ns == e->step_start_ns) return 1;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

const char *gp_bucket_name(gp_bucket b) {
    static const char *const names[GP_B__COUNT] = {
        "productive",      "not_ready", "startup",        "data_wait", "checkpoint",
        "wasted_progress", "recovery",  "idle_allocated", "other"};
    return (b >= 0 && b < GP_B__COUNT) ? names[b] : "unknown";
}

const char *gp_job_kind_name(gp_job_kind k) {
    switch (k) {
    case GP_JK_TRAINING:
        return "training";
    case GP_JK_INFERENCE:
        return "inference";
    case GP_JK_ACTIVITY_ONLY:
        return "activity-only";
    case GP_JK_NEVER_READY:
        return "never-ready";
    case GP_JK_PIPELINE:
        return "pipeline";
    default:
        return "unknown";
    }
}

double gp_util_attributed(double util, int holders, int share_known, double mine, double all) {
    if (holders <= 1) return util;
    if (share_known && all > 0) return util * (mine / all);
    return util / holders;
}

static int request_good(const gp_acct_event *r, const gp_slo *slo) {
    if (!r->ok) return 0;
    double e2e = r->arrival_ns >= 0 ? (r->ts_ns - r->arrival_ns) / 1e9 : -1;
    double ttft = (r->arrival_ns >= 0 && r->first_token_ns >= 0)
                      ? (r->first_token_ns - r->arrival_ns) / 1e9
                      : -1;
    if (slo->e2e_s > 0 && (e2e < 0 || e2e > slo->e2e_s)) return 0;
    if (slo->ttft_s > 0 && (ttft < 0 || ttft > slo->ttft_s)) return 0;
    if (slo->tpot_s > 0) {
        /* TPOT = (e2e - TTFT) / (output tokens - 1), as vLLM's benchmark defines it. */
        if (ttft < 0 || e2e < 0 || r->output_tokens < 0) return 0;
        if (r->output_tokens > 1 && (e2e - ttft) / (double)(r->output_tokens - 1) > slo->tpot_s)
            return 0;
    }
    return 1;
}

/* The fields of an event the accounting reads; name points into e. */
static gp_acct_event acct_event_of(const gp_event *e) {
    return (gp_acct_event){.ts_ns = e->ts_ns,
                           .rank = e->rank,
                           .step = e->step,
                           .step_start_ns = e->step_start_ns,
                           .start_ns = e->start_ns,
                           .arrival_ns = e->arrival_ns,
                           .first_token_ns = e->first_token_ns,
                           .output_tokens = e->output_tokens,
                           .units = e->units,
                           .kind = (int)e->kind,
                           .edge = e->edge,
                           .ok = e->ok,
                           .name = e->name};
}

int gp_request_good(const gp_event *r, const gp_slo *slo) {
    gp_acct_event a = acct_event_of(r);
    return request_good(&a, slo);
}

static int phase_label(const char *name) {
    if (!strcmp(name, "data_wait")) return L_DATA_WAIT;
    if (!strncmp(name, "checkpoint", 10)) return L_CHECKPOINT;
    if (!strcmp(name, "init") || !strcmp(name, "compile") || !strcmp(name, "startup"))
        return L_STARTUP;
    return L_OTHER_PHASE;
}

/* Mean kernel activity over [a, b), or < 0 when no sample covers it. *idle_frac: the share
 * of [a, b) with no kernels. edges_idle: a sample that is not wholly inside [a, b) counts
 * as idle (for a server between requests: a 1 s sample straddling a request's end shows
 * that request's kernels, not work outside it). */
static double activity_over(const gp_goodput_in *in, int64_t a, int64_t b, double *idle_frac,
                            int edges_idle) {
    double covered = 0, busy = 0, idle = 0;
    double thr = in->idle_util > 0 ? in->idle_util : 0.05;
    /* First sample whose interval ends after a. */
    size_t lo = 0, hi = in->n_act;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (in->act[mid].ts_ns <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < in->n_act; i++) {
        int64_t s0 = in->act[i].ts_ns - in->act[i].dur_ns, s1 = in->act[i].ts_ns;
        if (s0 >= b) break;
        int64_t o0 = s0 > a ? s0 : a, o1 = s1 < b ? s1 : b;
        if (o1 <= o0) continue;
        double d = (double)(o1 - o0);
        covered += d;
        busy += d * in->act[i].util;
        if (in->act[i].util < thr || (edges_idle && (s0 < a || s1 > b))) idle += d;
    }
    if (covered <= 0) return -1;
    *idle_frac = idle / covered;
    return busy / covered;
}

/* Whether an event that ended at ts_ns counts in the window [t0, t1]: the window's own
 * progress. The ends are inclusive so the whole-history window (t1 = the last sample or
 * the job's end) keeps an event stamped at that instant. */
static int in_window(int64_t ts_ns, int64_t t0, int64_t t1) {
    return ts_ns >= t0 && ts_ns <= t1;
}

/* The job's events sorted by time (pointers; the input stays untouched), with counts of
 * the kinds that decide the job's kind. NULL on OOM. */
typedef struct {
    size_t steps, requests, phases, stage_items;
} event_counts;

static const gp_acct_event **sort_events(const gp_goodput_in *in, event_counts *c,
                                         gp_acct_event **copy) {
    const gp_acct_event *src = in->acct_events;
    *copy = NULL;
    if (!src && in->n_events) { /* full events: take the fields read, a seventh of the bytes */
        gp_acct_event *v = malloc(in->n_events * sizeof *v);
        if (!v) return NULL;
        for (size_t i = 0; i < in->n_events; i++)
            v[i] = acct_event_of(&in->events[i]);
        src = *copy = v;
    }
    const gp_acct_event **ev = malloc((in->n_events + 1) * sizeof *ev);
    if (!ev) {
        free(*copy);
        return NULL;
    }
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < in->n_events; i++) {
        ev[i] = &src[i];
        c->steps += ev[i]->kind == GP_EV_STEP;
        c->requests += ev[i]->kind == GP_EV_REQUEST;
        c->phases += ev[i]->kind == GP_EV_PHASE || ev[i]->kind == GP_EV_HELLO;
        c->stage_items +=
            ev[i]->kind == GP_EV_STAGE && ev[i]->step < 0; /* step >= 0: a declaration */
    }
    qsort(ev, in->n_events, sizeof *ev, cmp_event_ts);
    return ev;
}

/* Allocations clipped to the window: allocated GPU-seconds, the first one's start, and the
 * held-GPU edges of the sweep. */
static void add_allocs(const gp_goodput_in *in, gp_goodput *out, edges *E) {
    for (size_t i = 0; i < in->n_allocs; i++) {
        int64_t a = in->allocs[i].from_ns,
                b = in->allocs[i].to_ns < 0 ? in->t1_ns : in->allocs[i].to_ns;
        if (a < in->t0_ns) a = in->t0_ns;
        if (b > in->t1_ns) b = in->t1_ns;
        if (b <= a) continue;
        if (out->first_alloc_ns < 0 || a < out->first_alloc_ns) out->first_alloc_ns = a;
        double share = in->allocs[i].share > 0 && in->allocs[i].share < 1 ? in->allocs[i].share : 1;
        out->allocated_gpu_s += (b - a) / 1e9 * share;
        add_interval_w(E, a, b, L_ALLOC, share);
    }
}

/* Phases: pair begin/end per (name, rank); an unclosed begin runs to the window end. */
static void add_phases(const gp_goodput_in *in, const gp_acct_event **ev, edges *E) {
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *b = ev[i];
        if (b->kind != GP_EV_PHASE || b->edge != GP_PH_BEGIN) continue;
        int64_t end = in->t1_ns;
        for (size_t j = i + 1; j < in->n_events; j++) {
            const gp_acct_event *e = ev[j];
            if (e->kind == GP_EV_PHASE && e->rank == b->rank && !strcmp(e->name, b->name)) {
                if (e->edge == GP_PH_END) end = e->ts_ns;
                break; /* a second begin without an end closes the first at... its end */
            }
        }
        add_interval(E, b->ts_ns, end, phase_label(b->name));
    }
}

/* ---- training ---- */

/* The steps of a training job as the accounting reads them: the lowest rank's, one per
 * delivery, each with its start and duration. */
typedef struct {
    const gp_acct_event **st;
    int64_t *start;
    double *durs;
    size_t n;
} step_list;

/* Collects steps of the lowest rank that reports steps (all ranks progress in lockstep;
 * counting each rank would multiply progress). A step without a start starts at the
 * previous step's end (not across a restart), else at its own end. */
static void collect_rank_steps(const gp_goodput_in *in, const gp_acct_event **ev, step_list *sl) {
    int64_t rank0 = INT64_MAX;
    for (size_t i = 0; i < in->n_events; i++)
        if (ev[i]->kind == GP_EV_STEP && ev[i]->rank < rank0) rank0 = ev[i]->rank;
    size_t ns = 0;
    int64_t prev_end = -1;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind == GP_EV_RESTART && e->rank <= rank0) prev_end = -1;
        if (e->kind != GP_EV_STEP || e->rank != rank0) continue;
        if (duplicate_step(sl->st, ns, e)) continue; /* delivered twice: one step */
        int64_t s =
            e->step_start_ns >= 0 ? e->step_start_ns : (prev_end >= 0 ? prev_end : e->ts_ns);
        if (s > e->ts_ns) s = e->ts_ns;
        sl->st[ns] = e;
        sl->start[ns] = s;
        sl->durs[ns] = (e->ts_ns - s) / 1e9;
        ns++;
        prev_end = e->ts_ns;
    }
    sl->n = ns;
}

/* Median of v[0..n) (v untouched); < 0 when unknown (OOM). */
static double median_of(const double *v, size_t n) {
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted) return -1;
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    double m = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    free(sorted);
    return m;
}

/* Restart evidence: times of `restart` events (restarts, sorted as the events are) and of
 * those plus checkpoint_restore begins (restored, sorted). Returns the restart count. */
static size_t restart_times(const gp_goodput_in *in, const gp_acct_event **ev, int64_t *restarts,
                            int64_t *restored, size_t *n_restored) {
    size_t nr = 0, nrest = 0;
    for (size_t i = 0; i < in->n_events; i++) {
        if (ev[i]->kind == GP_EV_RESTART) restarts[nr++] = restored[nrest++] = ev[i]->ts_ns;
        if (ev[i]->kind == GP_EV_PHASE && ev[i]->edge == GP_PH_BEGIN &&
            !strcmp(ev[i]->name, "checkpoint_restore"))
            restored[nrest++] = ev[i]->ts_ns;
    }
    qsort(restored, nrest, sizeof *restored, cmp_i64);
    *n_restored = nrest;
    return nr;
}

/* kept[k] = 0 for a step occurrence that was redone (wasted_progress): a later step has
 * a smaller number (the id went back past it), or a later occurrence has the same number
 * AND the job shows it restarted in between: a `restart` event or a checkpoint_restore
 * phase after this occurrence's end and by the last occurrence's start, or the step id
 * going back somewhere between the two. A number seen again without such evidence (a
 * client that reports one step twice) is not waste: both occurrences stay productive.
 * Returns -1 on OOM. */
static int mark_redone(const step_list *sl, const int64_t *restored, size_t nrest, char *kept) {
    size_t ns = sl->n;
    const gp_acct_event **st = sl->st;
    size_t *back = malloc((ns + 1) * sizeof *back); /* step-id decreases up to k */
    step_pos *sp = malloc((ns + 1) * sizeof *sp);
    if (!back || !sp) {
        free(back), free(sp);
        return -1;
    }
    for (size_t k = 0; k < ns; k++) {
        back[k] = k == 0 ? 0 : back[k - 1] + (st[k]->step < st[k - 1]->step);
        sp[k] = (step_pos){st[k]->step, k};
        kept[k] = 1;
    }
    /* An occurrence followed, at any later point, by a smaller step id was lost: the
     * job went back to before it (resumed from an older checkpoint), whether or not it
     * lived long enough to redo this number. */
    int64_t later_min = INT64_MAX;
    for (size_t k = ns; k-- > 0;) {
        if (later_min < st[k]->step) kept[k] = 0;
        if (st[k]->step < later_min) later_min = st[k]->step;
    }
    qsort(sp, ns, sizeof *sp, cmp_step_pos);
    for (size_t k = 0; k < ns; k++) {
        size_t last = k; /* the group's last occurrence */
        while (last + 1 < ns && sp[last + 1].step == sp[k].step)
            last++;
        size_t b = sp[last].pos;
        for (size_t q = k; q < last; q++) { /* earlier occurrences of this number */
            size_t a = sp[q].pos;
            int64_t by = sl->start[b] > st[a]->ts_ns ? sl->start[b] : st[a]->ts_ns;
            int evidence = back[b] > back[a] || any_in(restored, nrest, st[a]->ts_ns, by);
            if (evidence) kept[a] = 0;
        }
        k = last;
    }
    free(back), free(sp);
    return 0;
}

/* Each step's span, productive or wasted: from its start to the next step's start when
 * the gap after it is short and no restart lies in it, else to its own end; a restart
 * between two steps makes the gap recovery. Progress counts in the window its step ended
 * in (a window's cost per unit divides the window's GPU-time by the window's units, not
 * the job's). */
static void add_step_spans(const gp_goodput_in *in, const step_list *sl, const char *kept,
                           const int64_t *restarts, size_t nr, int64_t max_gap, gp_goodput *out,
                           edges *E) {
    size_t ns = sl->n;
    const gp_acct_event **st = sl->st;
    for (size_t k = 0; k < ns; k++) {
        int64_t next_start = k + 1 < ns ? sl->start[k + 1] : st[k]->ts_ns;
        size_t lo = 0, hi = nr; /* first restart at or after this step's end */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (restarts[mid] < st[k]->ts_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        int restart_between = lo < nr && restarts[lo] <= next_start;
        int64_t span_end = st[k]->ts_ns;
        if (!restart_between && next_start - st[k]->ts_ns <= max_gap) span_end = next_start;
        add_interval(E, sl->start[k], span_end, kept[k] ? L_PRODUCTIVE : L_WASTED);
        if (in_window(st[k]->ts_ns, in->t0_ns, in->t1_ns)) {
            out->steps++;
            if (kept[k]) {
                out->kept_steps++;
                if (st[k]->units > 0) out->units += st[k]->units;
            } else {
                out->redone_steps++;
            }
        }
        if (restart_between && k + 1 < ns)
            add_interval(E, st[k]->ts_ns, sl->start[k + 1], L_RECOVERY);
    }
}

/* Training: productive time is the span between consecutive starts of kept steps, minus
 * the blocking phases inside it (they rank above it in the sweep). *ready: the first
 * step's start. Returns -1 on OOM. */
static int label_training(const gp_goodput_in *in, const gp_acct_event **ev, size_t n_steps,
                          gp_goodput *out, edges *E, int64_t *ready) {
    out->kind = GP_JK_TRAINING;
    step_list sl = {malloc(n_steps * sizeof *sl.st), malloc(n_steps * sizeof *sl.start),
                    malloc(n_steps * sizeof *sl.durs), 0};
    int64_t *restarts = malloc((in->n_events + 1) * sizeof *restarts);
    int64_t *restored = malloc((in->n_events + 1) * sizeof *restored);
    char *kept = malloc(n_steps + 1);
    int rc = -1;
    if (!sl.st || !sl.start || !sl.durs || !restarts || !restored || !kept) goto out;
    collect_rank_steps(in, ev, &sl);
    out->median_step_s = median_of(sl.durs, sl.n);
    int64_t max_gap = (int64_t)(fmax(1.0, out->median_step_s) * 1e9);
    *ready = sl.start[0];
    size_t nrest = 0, nr = restart_times(in, ev, restarts, restored, &nrest);
    if (mark_redone(&sl, restored, nrest, kept) != 0) goto out;
    add_step_spans(in, &sl, kept, restarts, nr, max_gap, out, E);
    /* A restart after the last step: recovery until the window ends. */
    for (size_t i = 0; i < in->n_events; i++)
        if (ev[i]->kind == GP_EV_RESTART && sl.n > 0 && ev[i]->ts_ns >= sl.st[sl.n - 1]->ts_ns)
            add_interval(E, sl.st[sl.n - 1]->ts_ns, in->t1_ns, L_RECOVERY);
    rc = 0;
out:
    free(restarts), free(restored), free(kept);
    free(sl.st), free(sl.start), free(sl.durs);
    return rc;
}

/* ---- inference, pipelines, activity only ---- */

/* Inference: serving time is the union of requests' [arrival, end]; ready at the first
 * arrival or the end of a startup phase when earlier. */
static void label_inference(const gp_goodput_in *in, const gp_acct_event **ev, gp_goodput *out,
                            edges *E, int64_t *ready) {
    out->kind = GP_JK_INFERENCE;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind == GP_EV_PHASE && e->edge == GP_PH_END && phase_label(e->name) == L_STARTUP &&
            (*ready < 0 || e->ts_ns < *ready))
            *ready = e->ts_ns;
        if (e->kind != GP_EV_REQUEST) continue;
        /* In flight from arrival to its end: a work-conserving server starts a request's
         * prefill at arrival unless it is busy with others, so the union of
         * [arrival, end] over requests is the time at least one request is in prefill
         * or decode. Without an arrival, from the first token; else only its end. */
        int64_t arr = e->arrival_ns >= 0       ? e->arrival_ns
                      : e->first_token_ns >= 0 ? e->first_token_ns
                                               : e->ts_ns;
        if (arr > e->ts_ns) arr = e->ts_ns;
        if (*ready < 0 || arr < *ready) *ready = arr;
        add_interval(E, arr, e->ts_ns, L_PRODUCTIVE); /* serving; split by good tokens */
        if (!in_window(e->ts_ns, in->t0_ns, in->t1_ns)) continue; /* counted where it ended */
        out->requests++;
        double tok = e->output_tokens > 0 ? (double)e->output_tokens : 0;
        out->tokens += tok;
        if (!e->ok) out->failed_requests++;
        if (request_good(e, &in->slo)) {
            out->good_requests++;
            out->good_tokens += tok;
        }
    }
}

/* Pipelines: productive while the GPU stage(s) process items (declared resource=gpu; else
 * all of them); ready at the first item's start. */
static void label_pipeline(const gp_goodput_in *in, const gp_acct_event **ev, gp_goodput *out,
                           edges *E, int64_t *ready) {
    out->kind = GP_JK_PIPELINE;
    char gpu_stage[16][GP_NAME_MAX];
    int n_gpu_stage = 0;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind == GP_EV_STAGE && e->step >= 0 && e->edge == GP_STAGE_GPU && n_gpu_stage < 16)
            snprintf(gpu_stage[n_gpu_stage++], GP_NAME_MAX, "%s", e->name);
    }
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind != GP_EV_STAGE || e->step >= 0) continue; /* declarations */
        int on_gpu = n_gpu_stage == 0;
        for (int k = 0; k < n_gpu_stage && !on_gpu; k++)
            on_gpu = !strcmp(gpu_stage[k], e->name);
        int64_t st0 = e->start_ns >= 0 ? e->start_ns : e->ts_ns;
        if (*ready < 0 || st0 < *ready) *ready = st0;
        if (!on_gpu) continue;
        out->items++;
        add_interval(E, st0, e->ts_ns, L_PRODUCTIVE);
    }
}

/* No progress events: readiness is the first kernel activity (issue: attribution). A job
 * that never ran a kernel never became ready; one that did gets an activity-only estimate
 * with goodput unknown. */
static void label_activity_only(const gp_goodput_in *in, const gp_acct_event **ev, size_t n_phase,
                                gp_goodput *out, int64_t *ready) {
    double thr = in->idle_util > 0 ? in->idle_util : 0.05;
    for (size_t i = 0; i < in->n_act && *ready < 0; i++) {
        int64_t s0 = in->act[i].ts_ns - in->act[i].dur_ns;
        if (in->act[i].util >= thr && in->act[i].ts_ns > out->first_alloc_ns && s0 < in->t1_ns)
            *ready = s0 > out->first_alloc_ns ? s0 : out->first_alloc_ns;
    }
    /* ... unless it said earlier that it is up (the end of its init phase: a notebook
     * or server that started and waits for work is idle, not "not ready"). */
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind == GP_EV_PHASE && e->edge == GP_PH_END && phase_label(e->name) == L_STARTUP &&
            (*ready < 0 || e->ts_ns < *ready)) {
            *ready = e->ts_ns > out->first_alloc_ns ? e->ts_ns : out->first_alloc_ns;
            break;
        }
    }
    if (*ready >= 0)
        out->kind = GP_JK_ACTIVITY_ONLY;
    else if (n_phase > 0 || in->n_act > 0)
        out->kind = GP_JK_NEVER_READY;
    else
        out->kind = GP_JK_UNKNOWN;
}

/* ---- the sweep ---- */

/* Folds one elementary segment [a, b) with `gpu_s` held GPU-seconds into its bucket: the
 * highest-priority open label; with none, by kernel activity (idle_allocated where the
 * GPUs ran none, other where they did), or idle_allocated for a ready server whose
 * activity is unknown. Adds the segment's busy GPU-seconds to *busy when known. */
static void fold_segment(const gp_goodput_in *in, const int *open, int64_t a, int64_t b,
                         double gpu_s, gp_goodput *out, double *busy, int *busy_known) {
    int label = -1;
    for (int l = 0; l < L__COUNT; l++)
        if (open[l] > 0) {
            label = l;
            break;
        }
    double idle_frac = 0;
    double util =
        in->n_act ? activity_over(in, a, b, &idle_frac, out->kind == GP_JK_INFERENCE) : -1;
    if (util >= 0) {
        *busy += util * gpu_s;
        *busy_known = 1;
    }
    if (label >= 0) {
        out->bucket_gpu_s[label_bucket[label]] += gpu_s;
    } else if (out->kind == GP_JK_INFERENCE && util < 0) {
        /* Ready, no request in flight, activity unknown: holding the GPU is idle. */
        out->bucket_gpu_s[GP_B_IDLE_ALLOCATED] += gpu_s;
    } else if (util >= 0) {
        out->bucket_gpu_s[GP_B_IDLE_ALLOCATED] += gpu_s * idle_frac;
        out->bucket_gpu_s[GP_B_OTHER] += gpu_s * (1 - idle_frac);
    } else {
        out->bucket_gpu_s[GP_B_OTHER] += gpu_s;
    }
}

/* Sweeps all edges in time order, keeping a count of open intervals per label and of
 * held GPUs; each elementary segment inside the window goes to fold_segment. */
static void sweep(const gp_goodput_in *in, edges *E, gp_goodput *out) {
    if (E->n) qsort(E->v, E->n, sizeof *E->v, cmp_edge); /* E->v is NULL when empty */
    int open[L__COUNT] = {0};
    double held = 0; /* GPUs held, fractional where a shared GPU was split */
    int n_held = 0;  /* open allocations (the float sum is not trusted to reach 0) */
    double busy = 0;
    int busy_known = 0;
    for (size_t i = 0; i < E->n; i++) {
        edge *e = &E->v[i];
        if (e->label == L_ALLOC) {
            held += e->delta * e->share;
            n_held += e->delta;
            if (n_held == 0) held = 0;
        } else
            open[e->label] += e->delta;
        int64_t a = e->t, b = i + 1 < E->n ? E->v[i + 1].t : a;
        if (b <= a || n_held <= 0) continue;
        if (a < in->t0_ns) a = in->t0_ns;
        if (b > in->t1_ns) b = in->t1_ns;
        if (b <= a) continue;
        fold_segment(in, open, a, b, (b - a) / 1e9 * held, out, &busy, &busy_known);
    }
    if (busy_known) out->busy_gpu_s = busy;
}

/* Inference: serving GPU-seconds split by good tokens / all tokens (good requests / all
 * without tokens) into productive and other (the SLO-missing share). */
static void split_serving(gp_goodput *out) {
    double frac = out->tokens > 0     ? out->good_tokens / out->tokens
                  : out->requests > 0 ? (double)out->good_requests / (double)out->requests
                                      : 0;
    double serving_s = out->bucket_gpu_s[GP_B_PRODUCTIVE];
    out->serving_gpu_s = serving_s;
    out->bucket_gpu_s[GP_B_PRODUCTIVE] = serving_s * frac;
    out->bucket_gpu_s[GP_B_OTHER] += serving_s * (1 - frac);
}

int gp_goodput_compute(const gp_goodput_in *in, gp_goodput *out) {
    memset(out, 0, sizeof *out);
    out->goodput = -1;
    out->ready_ns = -1;
    out->first_alloc_ns = -1;
    out->median_step_s = -1;
    out->busy_gpu_s = -1;
    event_counts c;
    gp_acct_event *copy;
    const gp_acct_event **ev = sort_events(in, &c, &copy);
    if (!ev) return -1;
    edges E = {0};
    add_allocs(in, out, &E);
    add_phases(in, ev, &E);

    int64_t ready = -1;
    if (c.steps > 0) {
        if (label_training(in, ev, c.steps, out, &E, &ready) != 0) {
            free(ev), free(copy), free(E.v);
            return -1;
        }
    } else if (c.requests > 0) {
        label_inference(in, ev, out, &E, &ready);
    } else if (c.stage_items > 0) {
        label_pipeline(in, ev, out, &E, &ready);
    } else {
        label_activity_only(in, ev, c.phases, out, &ready);
    }
    out->ready_ns = ready;
    if (out->kind != GP_JK_UNKNOWN && out->first_alloc_ns >= 0)
        add_interval(&E, out->first_alloc_ns, ready >= 0 ? ready : in->t1_ns, L_NOT_READY);
    if (E.oom) {
        free(E.v), free(ev), free(copy);
        return -1;
    }
    sweep(in, &E, out);
    if (out->kind == GP_JK_INFERENCE) split_serving(out);
    if (out->allocated_gpu_s > 0 && out->kind != GP_JK_ACTIVITY_ONLY && out->kind != GP_JK_UNKNOWN)
        out->goodput = out->bucket_gpu_s[GP_B_PRODUCTIVE] / out->allocated_gpu_s;
    free(E.v);
    free(ev);
    free(copy);
    return 0;
}
