/* goodput.c: labels a job's time and integrates allocated GPU-seconds per bucket.
 *
 * Method: build labelled intervals (steps, phases, restarts, readiness), then sweep all
 * interval and allocation boundaries once in time order, keeping a count of open
 * intervals per label and of held GPUs. Each elementary segment takes the highest
 * priority open label and adds duration x held GPUs to it (a split shared GPU counts as
 * the allocation's share of one). O(n log n) in events. */
#include "engine/accounting/goodput.h"

#include "engine/accounting/goodput_ckpt.h"

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

/* The least gap threshold: max_gap = max(1 s, median step). */
#define GAP_MIN_NS 1000000000LL

/* 16 bytes: a training job has two a step, an inference job two a request, and the sweep
 * sorts them (report's peak memory, docs/benchmarks.md "Start-up and libraries"). */
typedef struct {
    int64_t t;
    int32_t alloc; /* L_ALLOC: its allocation's index in gp_goodput_in.allocs (alloc_share) */
    int8_t label;  /* L_* or L_ALLOC */
    int8_t delta;  /* +1 open, -1 close */
} edge;

/* The fraction of a GPU allocation a holds (a shared GPU split), else 1. */
static double alloc_share(const gp_alloc *a) {
    return a->share > 0 && a->share < 1 ? a->share : 1;
}

typedef struct {
    edge *v;
    size_t n, cap;
    int oom;
    int64_t floor; /* resuming after a checkpoint: no interval may start before it */
    int below;     /* one did: the checkpoint is stale */
} edges;

static int edges_reserve(edges *e, size_t more) {
    if (e->n + more > e->cap) {
        size_t nc = e->cap ? e->cap * 2 : 256;
        edge *p = realloc(e->v, nc * sizeof *p);
        if (!p) {
            e->oom = 1;
            return -1;
        }
        e->v = p;
        e->cap = nc;
    }
    return 0;
}

/* [a, b) with label; alloc: L_ALLOC's allocation index, else -1. */
static void add_interval_w(edges *e, int64_t a, int64_t b, int label, int32_t alloc) {
    if (b <= a) return;
    if (a < e->floor) e->below = 1;
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
    e->v[e->n++] = (edge){a, alloc, (int8_t)label, +1};
    e->v[e->n++] = (edge){b, alloc, (int8_t)label, -1};
}

static void add_interval(edges *e, int64_t a, int64_t b, int label) {
    add_interval_w(e, a, b, label, -1);
}

/* The sweep's order: time, closes before opens at the same instant; edges equal in both
 * keep the order they were added in (a stable sort, as glibc's qsort, a merge sort, gave). */
static int edge_before(const edge *x, const edge *y) {
    return x->t != y->t ? x->t < y->t : x->delta < y->delta;
}

static int cmp_edge(const void *a, const void *b) {
    const edge *x = a, *y = b;
    return edge_before(x, y) ? -1 : edge_before(y, x);
}

/* Stable merge sort of v[0..n) by edge_before with buf (room for n / 2 edges): each merge
 * moves only its left half aside, so the sort needs half the array beside it where qsort's
 * merge sort takes a whole copy. */
static void sort_edges_run(edge *v, size_t n, edge *buf) {
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            edge x = v[i];
            size_t j = i;
            for (; j > 0 && edge_before(&x, &v[j - 1]); j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    sort_edges_run(v, h, buf);
    sort_edges_run(v + h, n - h, buf);
    if (!edge_before(&v[h], &v[h - 1])) return; /* already in order */
    memcpy(buf, v, h * sizeof *v);
    size_t i = 0, j = h, k = 0; /* k <= j: the writes never pass the right half's reads */
    while (i < h && j < n)
        v[k++] = edge_before(&v[j], &buf[i]) ? v[j++] : buf[i++];
    while (i < h)
        v[k++] = buf[i++];
}

static void sort_edges(edge *v, size_t n) {
    edge *buf = n > 16 ? malloc(n / 2 * sizeof *buf) : NULL;
    if (n > 16 && !buf) { /* out of memory: qsort, as before */
        qsort(v, n, sizeof *v, cmp_edge);
        return;
    }
    sort_edges_run(v, n, buf);
    free(buf);
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

/* The fields of an event the accounting reads; name: i, e's index in the input's events
 * (gp_acct_event_name), when it has one. */
static gp_acct_event acct_event_of(const gp_event *e, int32_t i) {
    gp_acct_event a = {.ts_ns = e->ts_ns,
                       .rank = e->rank,
                       .name = e->name[0] ? i : -1,
                       .edge = gp_acct_edge(e->edge),
                       .kind = (int8_t)e->kind,
                       .ok = (int8_t)(e->ok != 0)};
    gp_acct_event_fill(&a, e->step, e->kind == GP_EV_STAGE ? e->start_ns : e->step_start_ns,
                       e->units, e->arrival_ns, e->first_token_ns, e->output_tokens);
    return a;
}

int gp_request_good(const gp_event *r, const gp_slo *slo) {
    gp_acct_event a = acct_event_of(r, -1);
    return request_good(&a, slo);
}

static int phase_label(const char *name) {
    if (!strcmp(name, "data_wait")) return L_DATA_WAIT;
    if (!strncmp(name, "checkpoint", 10)) return L_CHECKPOINT;
    if (!strcmp(name, "init") || !strcmp(name, "compile") || !strcmp(name, "startup"))
        return L_STARTUP;
    return L_OTHER_PHASE;
}

/* A segment's kernel activity: covered, busy (util-weighted) and idle nanoseconds. */
typedef struct {
    double covered, busy, idle;
} act_sums;

/* Adds to *x the kernel activity over [a, b) of the entries that end in (max(a, after),
 * until], in order: a segment's sums taken in two parts (before and after a checkpoint
 * at `until`, then `after`) are the same additions as in one. edges_idle: a sample that
 * is not wholly inside [a, b) counts as idle (for a server between requests: a 1 s
 * sample straddling a request's end shows that request's kernels, not work outside it). */
static void activity_add(const gp_goodput_in *in, act_sums *x, int64_t a, int64_t b, int64_t after,
                         int64_t until, int edges_idle) {
    double thr = in->idle_util > 0 ? in->idle_util : 0.05;
    int64_t from = a > after ? a : after;
    /* First sample whose interval ends after from. */
    size_t lo = 0, hi = in->n_act;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (in->act[mid].ts_ns <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < in->n_act && in->act[i].ts_ns <= until; i++) {
        int64_t s0 = in->act[i].ts_ns - in->act[i].dur_ns, s1 = in->act[i].ts_ns;
        if (s0 >= b) break;
        int64_t o0 = s0 > a ? s0 : a, o1 = s1 < b ? s1 : b;
        if (o1 <= o0) continue;
        double d = (double)(o1 - o0);
        x->covered += d;
        x->busy += d * in->act[i].util;
        if (in->act[i].util < thr || (edges_idle && (s0 < a || s1 > b))) x->idle += d;
    }
}

/* The mean kernel activity of sums, or < 0 when no sample covers the segment; *idle_frac:
 * the share of it with no kernels. */
static double activity_mean(const act_sums *x, double *idle_frac) {
    if (x->covered <= 0) return -1;
    *idle_frac = x->idle / x->covered;
    return x->busy / x->covered;
}

/* Mean kernel activity over [a, b), or < 0 when no sample covers it. *idle_frac: the share
 * of [a, b) with no kernels (edges_idle: activity_add). */
static double activity_over(const gp_goodput_in *in, int64_t a, int64_t b, double *idle_frac,
                            int edges_idle) {
    act_sums x = {0, 0, 0};
    activity_add(in, &x, a, b, INT64_MIN, INT64_MAX, edges_idle);
    return activity_mean(&x, idle_frac);
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
            v[i] = acct_event_of(&in->events[i], (int32_t)i);
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
 * held-GPU edges of the sweep. Resuming after a checkpoint at `from` (else INT64_MIN), the
 * edges before it are in the checkpoint's sweep state, closes at `from` included. */
static void add_allocs(const gp_goodput_in *in, gp_goodput *out, edges *E, int64_t from) {
    for (size_t i = 0; i < in->n_allocs; i++) {
        int64_t a = in->allocs[i].from_ns,
                b = in->allocs[i].to_ns < 0 ? in->t1_ns : in->allocs[i].to_ns;
        if (a < in->t0_ns) a = in->t0_ns;
        if (b > in->t1_ns) b = in->t1_ns;
        if (b <= a) continue;
        if (out->first_alloc_ns < 0 || a < out->first_alloc_ns) out->first_alloc_ns = a;
        double share = alloc_share(&in->allocs[i]);
        out->allocated_gpu_s += (b - a) / 1e9 * share;
        if (a >= from) {
            int64_t fl = E->floor;
            E->floor = INT64_MIN;
            add_interval_w(E, a, b, L_ALLOC, (int32_t)i);
            E->floor = fl;
        } else if (b > from && edges_reserve(E, 1) == 0) {
            E->v[E->n++] = (edge){b, (int32_t)i, L_ALLOC, -1};
        }
    }
}

/* Phases: pair begin/end per (name, rank); an unclosed begin runs to the window end.
 * Resuming after a training prefix, the phases it carries began at its instant: each ends
 * at the next event of its name and rank when that is an end, as any begin. */
static void add_phases(const gp_goodput_in *in, const gp_acct_event **ev, edges *E,
                       const gp_goodput_ckpt *from) {
    for (int c = 0; from && c < from->n_carry; c++) {
        int64_t end = in->t1_ns;
        for (size_t j = 0; j < in->n_events; j++) {
            const gp_acct_event *e = ev[j];
            if (e->kind == GP_EV_PHASE && e->rank == from->carry[c].rank &&
                !strcmp(gp_acct_event_name(in, e), from->carry[c].name)) {
                if (e->edge == GP_PH_END) end = e->ts_ns;
                break;
            }
        }
        add_interval(E, from->t_ns, end, phase_label(from->carry[c].name));
    }
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *b = ev[i];
        if (b->kind != GP_EV_PHASE || b->edge != GP_PH_BEGIN) continue;
        int64_t end = in->t1_ns;
        for (size_t j = i + 1; j < in->n_events; j++) {
            const gp_acct_event *e = ev[j];
            if (e->kind == GP_EV_PHASE && e->rank == b->rank &&
                !strcmp(gp_acct_event_name(in, e), gp_acct_event_name(in, b))) {
                if (e->edge == GP_PH_END) end = e->ts_ns;
                break; /* a second begin without an end closes the first at... its end */
            }
        }
        add_interval(E, b->ts_ns, end, phase_label(gp_acct_event_name(in, b)));
    }
}

/* ---- training ---- */

/* The steps of a training job as the accounting reads them: the lowest rank's, one per
 * delivery, each with its start and duration. */
typedef struct {
    const gp_acct_event **st;
    int64_t *start;
    double *durs;
    size_t *pos; /* index in the sorted events */
    size_t n;
    int64_t rank0;
} step_list;

/* Checkpoints of one computation (gp_goodput_compute_ckpt). */
typedef struct ck_ctx {
    const gp_goodput_ckpt *from; /* resume after this frozen prefix; NULL: from the start */
    gp_goodput_ckpt *to;         /* freeze a new one here when a cut is found; NULL: none */
    int64_t freeze_by;           /* the new cut's first step ends by this */
    size_t min_steps;            /* ... with at least this many steps before it */
    int broken;                  /* `from` no longer holds */
    size_t cut;                  /* the new cut: index of its first step; 0 = none */
    int64_t cut_t;               /* its start: where the sweep state is taken */
    int snapped;                 /* the sweep reached cut_t */
    int snap_bad;                /* ... with labels open there that the new one does not hold */
    int act_cut;                 /* an activity-only cut at cut_t (inside a segment) */
} ck_ctx;

/* Collects steps of the lowest rank that reports steps (all ranks progress in lockstep;
 * counting each rank would multiply progress). A step without a start starts at the
 * previous step's end (not across a restart), else at its own end. After a checkpoint its
 * rank and last step's end carry on; a step of a lower rank breaks it. */
static void collect_rank_steps(const gp_goodput_in *in, const gp_acct_event **ev, step_list *sl,
                               ck_ctx *ck) {
    int64_t rank0 = INT64_MAX;
    for (size_t i = 0; i < in->n_events; i++)
        if (ev[i]->kind == GP_EV_STEP && ev[i]->rank < rank0) rank0 = ev[i]->rank;
    int64_t prev_end = -1;
    if (ck->from) {
        if (rank0 < ck->from->rank0) ck->broken = 1;
        rank0 = ck->from->rank0;
        prev_end = ck->from->prev_end_ns;
    }
    sl->rank0 = rank0;
    size_t ns = 0;
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
        sl->pos[ns] = i;
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
            !strcmp(gp_acct_event_name(in, ev[i]), "checkpoint_restore"))
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
                           edges *E, ck_ctx *ck) {
    size_t ns = sl->n;
    const gp_acct_event **st = sl->st;
    for (size_t k = 0; k < ns; k++) {
        if (ck->cut && k == ck->cut) { /* the new checkpoint's counts: the steps before it */
            ck->to->steps = out->steps;
            ck->to->kept_steps = out->kept_steps;
            ck->to->redone_steps = out->redone_steps;
            ck->to->units = out->units;
        }
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
        /* A gap the median decides, before the new cut: the checkpoint keeps its length. */
        if (ck->cut && k + 1 < ck->cut && !restart_between &&
            next_start - st[k]->ts_ns > GAP_MIN_NS)
            ck->to->gaps[ck->to->n_gaps++] = next_start - st[k]->ts_ns;
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

/* ---- checkpoints ----
 *
 * A running training, inference or pipeline job's refresh labels only the time after a
 * frozen prefix, so its cost follows what is new, not the job's age. Training: The prefix ends at
 * the start T of a step k (the cut): the sweep's state there (open labels, held GPUs, bucket sums,
 * busy time) and the counts of the steps before k are kept, with what the labelling of the later
 * time needs from before T: the lowest rank, the last step's end (a step without a start starts
 * there), readiness, the largest step id, every step duration (the median) and the long gaps. The
 * prefix is final while nothing new can relabel it, which the cut's choice (choose_cut) and every
 * later computation (the checks in label_training, alloc_print, the edges' floor) ensure:
 *  - restarts: a step before the cut is wasted_progress only when a later step has a
 *    smaller id or repeats its id after restart evidence. Every step after the cut has an
 *    id above all before it (else: recompute), and the evidence of a repeat before the
 *    cut lies before it too. No restart lies between steps k-1 and k.
 *  - the median: a gap longer than 1 s (the least gap threshold) between steps before
 *    the cut is labelled by the median; each one's length is kept, and a later median
 *    that puts one on the other side of the threshold breaks the checkpoint. The gap
 *    between steps k-1 and k is at most 1 s: productive whatever the median.
 *  - phases: none is open at the cut (each begin before it met its end before it; a
 *    begin followed by a second begin runs to the window's end, so no cut after it), but
 *    those begun at T itself when T is step k-1's end (a step's data_wait from the previous
 *    step's end): their intervals start at T, after the prefix. The caller drops their
 *    begins with the events at T, so the prefix carries their names and ranks (at most
 *    GP_CKPT_CARRY, no checkpoint_restore) and a later computation labels each from T to
 *    the next event of its name and rank, as the pairing of all events would: no other
 *    event of theirs lies at T after them (an end would have closed one, a begin broken
 *    the cut), and every event after T is that computation's. A phase that began before
 *    T met its end by T, so no later event pairs with it.
 *  - late events: the caller drops the events up to step k-1's end, and a new event up
 *    to step k's end (other than a step of a higher rank, which the accounting ignores,
 *    or a phase after T other than checkpoint_restore: it labels only time after T and
 *    pairs with no begin before it) breaks the checkpoint; so does a step of a lower
 *    rank. Between steps k-1 and k there is no event but steps and such phases.
 *  - allocations and kernel activity: the pieces held before T must stay the same
 *    (gp_ckpt_alloc_print), and freeze_by (the caller's) keeps the cut where every GPU's
 *    activity is final.
 *  - every interval labelled after the cut starts at or after T (the edges' floor).
 * Inference (busy_cut, label_inference): a ready server's time is serving while a
 * request is in flight (the union of [start, end]), else idle or other by kernel
 * activity, and the serving GPU-seconds split by good tokens at the end. Nothing there
 * is decided retroactively but by events that reach back, so the prefix ends at the
 * arrival T (an open edge of the sweep) of a request that ends after it:
 *  - the counts (requests, tokens, good and failed ones) of the requests that ended by T
 *    are sums: kept; the split by good tokens is taken over the totals after the sweep.
 *  - a request in flight across T has its open in the sweep's state: the (start, end)
 *    pairs of those are kept, and a later computation adds only their closes. A request
 *    that starts before T must be one of them: one stored after the cut (it was in
 *    flight, unseen, or it is late) breaks the checkpoint.
 *  - late events: the caller drops the events up to T; any event at or before T breaks
 *    it (a late request or phase), and so does another SLO or idle threshold (they
 *    decide the counts and the labels of the prefix) or a step (the job's kind changes).
 *  - phases: none but the requests' label is open at T (checked at the snapshot), and
 *    no event other than requests is stamped at T. Readiness lies at or before T.
 *  - allocations and kernel activity: as for training.
 * Pipelines (label_pipeline) freeze by the same rule, their GPU stages' items in place of
 * requests (the item count is kept). Which stages are on the GPU is decided by
 * declarations at any time, so the checkpoint keeps the declared GPU stages and a stage
 * newly declared on the GPU after it breaks it (it would relabel that stage's earlier
 * items), as does an item that starts before its readiness.
 * Activity-only and never-ready jobs (act_cut, label_activity_only): no event labels
 * their time after readiness; kernel activity does, per elementary segment of the sweep
 * (the time between two label or allocation edges: idle_allocated and other by the share
 * of the segment's covered time below the idle threshold, busy by its mean). A job that
 * holds GPUs for days without reporting progress (any job on a node without goodput's
 * client) has one such segment per allocation, so the prefix cannot end at an edge; it
 * ends at the end T of an activity entry inside a segment instead:
 *  - the sweep's state is taken where the segment holding T begins (no edge at T), with
 *    the segment's activity sums over the entries that end by T (activity_add, the same
 *    additions in the same order); a later computation resumes the segment with them and
 *    adds the entries after T, so the segment's mean is the same double.
 *  - readiness: the first entry at or above the idle threshold (or an init phase's end).
 *    Known by T, it is kept. Unknown by T, not_ready is open at T (when the first
 *    allocation began before it) and a later computation adds its close at readiness;
 *    no entry after T may begin before T then (readiness there would fall before T).
 *  - phases: none is open at T (checked at the snapshot); an event at or before T
 *    breaks the checkpoint, and so does a step, request or pipeline item (the kind).
 *  - allocations and kernel activity: as for training.
 * When one of these breaks, gp_goodput_compute_ckpt says so and the caller computes
 * everything again: correct first, fast when nothing reaches back. */

/* The new cut: the latest step k (k >= min_steps) that ended by freeze_by and where the
 * prefix before its start is final (the list at the top of this section). 0 = none. */
static size_t choose_cut(const gp_goodput_in *in, const gp_acct_event **ev, const step_list *sl,
                         const int64_t *restarts, size_t nr, int64_t ready, ck_ctx *ck) {
    size_t ns = sl->n, cut = 0;
    const gp_acct_event **st = sl->st;
    if (ns < 2 || ck->min_steps >= ns) return 0;
    int64_t *smin = malloc(ns * sizeof *smin), *sst = malloc(ns * sizeof *sst);
    char *ok = gp_ckpt_phases_closed(in, ev, in->n_events, ck->from);
    size_t cut_i = 0; /* the cut's last event at step k-1's end */
    if (!smin || !sst || !ok) goto out;
    for (size_t k = ns; k-- > 0;) { /* smallest id and start from k on */
        smin[k] = k + 1 < ns && smin[k + 1] < st[k]->step ? smin[k + 1] : st[k]->step;
        sst[k] = k + 1 < ns && sst[k + 1] < sl->start[k] ? sst[k + 1] : sl->start[k];
    }
    int64_t pmax = ck->from ? ck->from->max_step : INT64_MIN; /* largest id before k */
    size_t first = ck->min_steps > 1 ? ck->min_steps : 1;
    for (size_t k = 0; k < first; k++)
        if (st[k]->step > pmax) pmax = st[k]->step;
    for (size_t k = first; k < ns && st[k]->ts_ns <= ck->freeze_by; k++) {
        const gp_acct_event *p = st[k - 1], *q = st[k];
        int64_t t = sl->start[k];
        int good = q->ts_ns > p->ts_ns && t >= p->ts_ns && t - p->ts_ns <= GAP_MIN_NS &&
                   q->ts_ns > t && pmax < smin[k] && sst[k] >= t && ready <= t && t < in->t1_ns;
        if (good) { /* no restart from step k-1's end to step k's end */
            size_t lo = 0, hi = nr;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (restarts[mid] < p->ts_ns)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            good = !(lo < nr && restarts[lo] <= q->ts_ns);
        }
        size_t i = sl->pos[k - 1]; /* no phase open after step k-1's instant ... */
        while (i + 1 < in->n_events && ev[i + 1]->ts_ns == p->ts_ns)
            i++;
        /* ... but those begun there when step k starts there (carried) */
        good = good &&
               (ok[i] == GP_CKPT_PHASES_NONE || (ok[i] == GP_CKPT_PHASES_NOW && t == p->ts_ns));
        for (size_t j = i + 1; good && j < in->n_events && ev[j]->ts_ns <= q->ts_ns; j++)
            good =
                ev[j]->kind == GP_EV_STEP || /* nothing but steps in between, or phases after t */
                (ev[j]->kind == GP_EV_PHASE && ev[j]->ts_ns > t && !gp_ckpt_is_restore(in, ev[j]));
        if (good) cut = k, cut_i = i;
        if (q->step > pmax) pmax = q->step;
    }
    if (cut && ok[cut_i] == GP_CKPT_PHASES_NOW)
        gp_ckpt_phases_carry(in, ev, cut_i, ck->from, ck->to);
out:
    free(smin), free(sst), free(ok);
    return cut;
}

/* In a computation that resumes after a checkpoint: events it must not see (one at or
 * before the checkpoint's last instant, other than a higher rank's step or the first
 * later step), or a steps' start, ids or median that reach into the frozen prefix. */
static int resumed_breaks(const gp_goodput_in *in, const gp_acct_event **ev, const step_list *sl,
                          int64_t max_gap, const gp_goodput_ckpt *c) {
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->ts_ns > c->late_ns) break;
        int fine = (e->kind == GP_EV_STEP &&
                    (e->rank > c->rank0 || (e->rank == c->rank0 && e->ts_ns == c->late_ns))) ||
                   (e->kind == GP_EV_PHASE && e->ts_ns > c->t_ns && !gp_ckpt_is_restore(in, e));
        if (!fine) return 1;
    }
    if (sl->n == 0 || sl->start[0] != c->t_ns || sl->st[0]->ts_ns != c->late_ns) return 1;
    for (size_t k = 0; k < sl->n; k++)
        if (sl->st[k]->step <= c->max_step) return 1;
    return gp_ckpt_gaps_within(c->gaps, c->n_gaps, max_gap) !=
           gp_ckpt_gaps_within(c->gaps, c->n_gaps, c->max_gap_ns);
}

/* Training: productive time is the span between consecutive starts of kept steps, minus
 * the blocking phases inside it (they rank above it in the sweep). *ready: the first
 * step's start. Returns -1 on OOM. */
static int label_training(const gp_goodput_in *in, const gp_acct_event **ev, size_t n_steps,
                          gp_goodput *out, edges *E, int64_t *ready, ck_ctx *ck) {
    out->kind = GP_JK_TRAINING;
    step_list sl = {malloc(n_steps * sizeof *sl.st),
                    malloc(n_steps * sizeof *sl.start),
                    malloc(n_steps * sizeof *sl.durs),
                    malloc(n_steps * sizeof *sl.pos),
                    0,
                    0};
    int64_t *restarts = malloc((in->n_events + 1) * sizeof *restarts);
    int64_t *restored = malloc((in->n_events + 1) * sizeof *restored);
    char *kept = malloc(n_steps + 1);
    double *durs = NULL;
    int rc = -1;
    if (!sl.st || !sl.start || !sl.durs || !sl.pos || !restarts || !restored || !kept) goto out;
    collect_rank_steps(in, ev, &sl, ck);
    const gp_goodput_ckpt *from = ck->from;
    if (from) {
        if (!(durs = malloc((sl.n + 1) * sizeof *durs))) goto out;
        memcpy(durs, sl.durs, sl.n * sizeof *durs);
        out->median_step_s = gp_ckpt_median(from, durs, sl.n); /* durs now sorted */
        if (out->median_step_s == GP_CKPT_MEDIAN_UNKNOWN) {    /* outside the kept durations */
            ck->broken = 1;
            rc = 0;
            goto out;
        }
    } else {
        out->median_step_s = sl.n ? median_of(sl.durs, sl.n) : -1;
    }
    int64_t max_gap = (int64_t)(fmax(1.0, out->median_step_s) * 1e9);
    if (from && resumed_breaks(in, ev, &sl, max_gap, from)) {
        ck->broken = 1;
        rc = 0;
        goto out;
    }
    *ready = from ? from->ready_ns : sl.start[0];
    if (from) { /* the frozen steps' counts; this computation's add to them */
        out->steps = from->steps, out->kept_steps = from->kept_steps;
        out->redone_steps = from->redone_steps, out->units = from->units;
    }
    size_t nrest = 0, nr = restart_times(in, ev, restarts, restored, &nrest);
    if (mark_redone(&sl, restored, nrest, kept) != 0) goto out;
    if (ck->to) {
        ck->cut = choose_cut(in, ev, &sl, restarts, nr, *ready, ck);
        if (ck->cut) {
            gp_goodput_ckpt *t = ck->to;
            size_t c = ck->cut;
            t->gaps = malloc((c + (from ? from->n_gaps : 0) + 1) * sizeof *t->gaps);
            double *cd = malloc((c + 1) * sizeof *cd);
            if (cd) memcpy(cd, sl.durs, c * sizeof *cd);
            int drc = cd ? gp_ckpt_durs_extend(from, cd, c, t) : -1;
            free(cd);
            if (!t->gaps || drc != 0) goto out;
            t->n_gaps = 0;
            ck->cut_t = sl.start[c];
            t->kind = GP_JK_TRAINING;
            t->t_ns = sl.start[c];
            t->ev_cut_ns = sl.st[c - 1]->ts_ns;
            t->late_ns = sl.st[c]->ts_ns;
            t->rank0 = sl.rank0;
            t->prev_end_ns = sl.st[c - 1]->ts_ns;
            t->ready_ns = *ready;
            t->max_gap_ns = max_gap;
            t->max_step = from ? from->max_step : INT64_MIN;
            for (size_t k = 0; k < c; k++)
                if (sl.st[k]->step > t->max_step) t->max_step = sl.st[k]->step;
        }
    }
    add_step_spans(in, &sl, kept, restarts, nr, max_gap, out, E, ck);
    if (ck->cut) { /* the prefix's long gaps: the checkpoint's and the new ones, sorted */
        gp_goodput_ckpt *t = ck->to;
        if (from && from->n_gaps)
            memcpy(t->gaps + t->n_gaps, from->gaps, from->n_gaps * sizeof *t->gaps);
        t->n_gaps += from ? from->n_gaps : 0;
        qsort(t->gaps, t->n_gaps, sizeof *t->gaps, cmp_i64);
    }
    /* A restart after the last step: recovery until the window ends. */
    for (size_t i = 0; i < in->n_events; i++)
        if (ev[i]->kind == GP_EV_RESTART && sl.n > 0 && ev[i]->ts_ns >= sl.st[sl.n - 1]->ts_ns)
            add_interval(E, sl.st[sl.n - 1]->ts_ns, in->t1_ns, L_RECOVERY);
    rc = 0;
out:
    free(restarts), free(restored), free(kept), free(durs);
    free(sl.st), free(sl.start), free(sl.durs), free(sl.pos);
    return rc;
}

/* ---- inference, pipelines, activity only ---- */

/* A request's start: in flight from arrival to its end (a work-conserving server starts a
 * request's prefill at arrival unless it is busy with others, so the union of
 * [arrival, end] over requests is the time at least one request is in prefill or decode).
 * Without an arrival, from the first token; else only its end. */
static int64_t request_start(const gp_acct_event *e) {
    int64_t arr = e->arrival_ns >= 0       ? e->arrival_ns
                  : e->first_token_ns >= 0 ? e->first_token_ns
                                           : e->ts_ns;
    return arr > e->ts_ns ? e->ts_ns : arr;
}

static int cmp_pair(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* What makes a ready job's time productive outside training: a request in flight
 * (inference), or an item in one of its GPU stages (pipelines: those declared
 * resource=gpu, every stage when none is). */
typedef struct busy_rule {
    const gp_goodput_in *in; /* the events' names */
    int pipeline;
    char (*gpu)[GP_NAME_MAX];
    int n_gpu;
} busy_rule;

/* Is e one of the job's productive intervals? *start: where it starts (it ends at ts). */
static int busy_interval(const busy_rule *r, const gp_acct_event *e, int64_t *start) {
    if (!r->pipeline) {
        if (e->kind != GP_EV_REQUEST) return 0;
        *start = request_start(e);
        return 1;
    }
    if (e->kind != GP_EV_STAGE || e->step >= 0) return 0; /* step >= 0: a declaration */
    int on_gpu = r->n_gpu == 0;
    for (int k = 0; k < r->n_gpu && !on_gpu; k++)
        on_gpu = !strcmp(r->gpu[k], gp_acct_event_name(r->in, e));
    *start = e->start_ns >= 0 ? e->start_ns : e->ts_ns;
    return on_gpu;
}

/* The intervals in flight across t (start < t < end) as sorted (start, end) pairs in
 * *span (NULL when none); -1 on OOM. */
static int busy_across(const gp_goodput_in *in, const gp_acct_event **ev, const busy_rule *r,
                       int64_t t, int64_t **span, size_t *n) {
    *span = NULL;
    *n = 0;
    int64_t *v = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        int64_t a;
        if (!busy_interval(r, e, &a) || e->ts_ns <= t || a >= t) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            int64_t *p = realloc(v, 2 * cap * sizeof *p);
            if (!p) {
                free(v);
                return -1;
            }
            v = p;
        }
        v[2 * *n] = a;
        v[2 * *n + 1] = e->ts_ns;
        (*n)++;
    }
    if (*n) qsort(v, *n, 2 * sizeof *v, cmp_pair);
    *span = v;
    return 0;
}

/* A new inference or pipeline cut (see "Checkpoints"): the latest start T by freeze_by
 * of a productive interval that ends after it (its open edge at T is where the sweep's
 * state is taken), after the window's start, readiness and the previous cut, with no
 * event but intervals of the same kind stamped at T (the caller drops the events up to
 * T). The intervals in flight across T are kept; at most GP_CKPT_SPAN_MAX of them, else
 * no cut. Returns 0 (cut or none), -1 on OOM. */
#define GP_CKPT_SPAN_MAX 4096
static int busy_cut(const gp_goodput_in *in, const gp_acct_event **ev, const busy_rule *r,
                    int64_t ready, ck_ctx *ck) {
    int64_t T = INT64_MIN;
    int64_t lo = ck->from ? ck->from->t_ns : in->t0_ns;
    int kind = r->pipeline ? GP_EV_STAGE : GP_EV_REQUEST;
    for (size_t i = 0; i < in->n_events; i++) {
        int64_t a;
        if (busy_interval(r, ev[i], &a) && a < ev[i]->ts_ns && a > T && a <= ck->freeze_by &&
            a > lo && a >= ready && a < in->t1_ns)
            T = a;
    }
    if (T == INT64_MIN) return 0;
    for (size_t i = 0; i < in->n_events; i++) /* sorted by time */
        if (ev[i]->ts_ns == T && (ev[i]->kind != kind || (r->pipeline && ev[i]->step >= 0)))
            return 0; /* a declaration at T would be dropped */
    gp_goodput_ckpt *t = ck->to;
    if (busy_across(in, ev, r, T, &t->span, &t->n_span) != 0) return -1;
    if (t->n_span > GP_CKPT_SPAN_MAX) {
        free(t->span);
        t->span = NULL;
        t->n_span = 0;
        return 0;
    }
    t->kind = r->pipeline ? GP_JK_PIPELINE : GP_JK_INFERENCE;
    t->t_ns = t->ev_cut_ns = t->late_ns = T;
    t->ready_ns = ready;
    for (int k = 0; k < r->n_gpu; k++)
        memcpy(t->gpu_stage[k], r->gpu[k], GP_NAME_MAX);
    t->n_gpu_stage = r->n_gpu;
    for (size_t i = 0; i < in->n_events && ev[i]->ts_ns <= T; i++) {
        const gp_acct_event *e = ev[i];
        int64_t a;
        if (r->pipeline) {
            t->items += busy_interval(r, e, &a);
            continue;
        }
        if (e->kind != GP_EV_REQUEST || !in_window(e->ts_ns, in->t0_ns, in->t1_ns)) continue;
        double tok = e->output_tokens > 0 ? (double)e->output_tokens : 0;
        t->requests++;
        t->tokens += tok;
        if (!e->ok) t->failed_requests++;
        if (request_good(e, &in->slo)) {
            t->good_requests++;
            t->good_tokens += tok;
        }
    }
    if (ck->from) { /* the frozen counts carry on */
        const gp_goodput_ckpt *f = ck->from;
        t->requests += f->requests, t->failed_requests += f->failed_requests;
        t->good_requests += f->good_requests;
        t->tokens += f->tokens, t->good_tokens += f->good_tokens;
        t->items += f->items;
    }
    ck->cut = 1;
    ck->cut_t = T;
    return 0;
}

/* Resuming after an inference or pipeline checkpoint at T: an event at or before T breaks
 * it, and the intervals that start before T must be the ones in flight across T that it
 * holds (their open edge is in its sweep state: only their close is added). */
static int busy_resume_breaks(const gp_goodput_in *in, const gp_acct_event **ev, const busy_rule *r,
                              const gp_goodput_ckpt *f, int *broken) {
    int64_t *span;
    size_t n;
    *broken = 1;
    if (in->n_events && ev[0]->ts_ns <= f->late_ns) return 0; /* a late event */
    if (busy_across(in, ev, r, f->t_ns, &span, &n) != 0) return -1;
    *broken = n != f->n_span || (n && memcmp(span, f->span, 2 * n * sizeof *span) != 0);
    free(span);
    return 0;
}

/* One productive interval: opened in the checkpoint's state when it starts before it. */
static void add_busy(edges *E, const gp_goodput_ckpt *from, int64_t a, int64_t b) {
    if (from && a < from->t_ns) {
        if (edges_reserve(E, 1) == 0) E->v[E->n++] = (edge){b, -1, L_PRODUCTIVE, -1};
    } else {
        add_interval(E, a, b, L_PRODUCTIVE);
    }
}

/* Inference: serving time is the union of requests' [arrival, end]; ready at the first
 * arrival or the end of a startup phase when earlier. Resuming after a checkpoint, its
 * counts and readiness carry on (busy_resume_breaks says when it no longer holds).
 * Returns -1 on OOM. */
static int label_inference(const gp_goodput_in *in, const gp_acct_event **ev, gp_goodput *out,
                           edges *E, int64_t *ready, ck_ctx *ck) {
    out->kind = GP_JK_INFERENCE;
    const gp_goodput_ckpt *from = ck->from;
    busy_rule r = {.in = in};
    if (from) {
        if (busy_resume_breaks(in, ev, &r, from, &ck->broken) != 0) return -1;
        if (ck->broken) return 0;
        *ready = from->ready_ns;
        out->requests = from->requests, out->good_requests = from->good_requests;
        out->failed_requests = from->failed_requests;
        out->tokens = from->tokens, out->good_tokens = from->good_tokens;
    }
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind == GP_EV_PHASE && e->edge == GP_PH_END &&
            phase_label(gp_acct_event_name(in, e)) == L_STARTUP &&
            (*ready < 0 || e->ts_ns < *ready))
            *ready = e->ts_ns;
        if (e->kind != GP_EV_REQUEST) continue;
        int64_t arr = request_start(e);
        if (*ready < 0 || arr < *ready) *ready = arr;
        add_busy(E, from, arr, e->ts_ns); /* serving; split by good tokens */
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
    return ck->to ? busy_cut(in, ev, &r, *ready, ck) : 0;
}

/* Pipelines: productive while the GPU stage(s) process items (declared resource=gpu; else
 * all of them); ready at the first item's start. Resuming after a checkpoint, its GPU
 * stages, item count and readiness carry on; a stage newly declared on the GPU (it would
 * relabel that stage's earlier items) or an item that starts before its readiness breaks
 * it. Returns -1 on OOM. */
static int label_pipeline(const gp_goodput_in *in, const gp_acct_event **ev, gp_goodput *out,
                          edges *E, int64_t *ready, ck_ctx *ck) {
    out->kind = GP_JK_PIPELINE;
    char gpu_stage[GP_CKPT_STAGES][GP_NAME_MAX];
    busy_rule r = {.in = in, .pipeline = 1, .gpu = gpu_stage, .n_gpu = 0};
    const gp_goodput_ckpt *from = ck->from;
    if (from) {
        memcpy(gpu_stage, from->gpu_stage, sizeof gpu_stage);
        r.n_gpu = from->n_gpu_stage;
        *ready = from->ready_ns;
        out->items = from->items;
    }
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind != GP_EV_STAGE || e->step < 0 || e->edge != GP_STAGE_GPU ||
            r.n_gpu == GP_CKPT_STAGES)
            continue;
        int known = 0;
        for (int k = 0; k < r.n_gpu && !known; k++)
            known = !strcmp(gpu_stage[k], gp_acct_event_name(in, e));
        if (from && !known) {
            ck->broken = 1;
            return 0;
        }
        snprintf(gpu_stage[r.n_gpu++], GP_NAME_MAX, "%s", gp_acct_event_name(in, e));
    }
    if (from) {
        if (busy_resume_breaks(in, ev, &r, from, &ck->broken) != 0) return -1;
        if (ck->broken) return 0;
    }
    for (size_t i = 0; i < in->n_events; i++) {
        const gp_acct_event *e = ev[i];
        if (e->kind != GP_EV_STAGE || e->step >= 0) continue; /* declarations */
        int64_t st0;
        int on_gpu = busy_interval(&r, e, &st0);
        if (from && st0 < from->ready_ns) {
            ck->broken = 1; /* an item before readiness: it moves */
            return 0;
        }
        if (*ready < 0 || st0 < *ready) *ready = st0;
        if (!on_gpu) continue;
        out->items++;
        add_busy(E, from, st0, e->ts_ns);
    }
    return ck->to ? busy_cut(in, ev, &r, *ready, ck) : 0;
}

/* An activity-only cut (see "Checkpoints"): the latest end T of an activity entry by
 * freeze_by, after the window's start and the previous cut, before the window's end, with
 * no later entry ending at T; when readiness is not known by T, no later entry may begin
 * before T. The sweep takes its state there (act_snap). */
static void act_choose_cut(const gp_goodput_in *in, int64_t ready, ck_ctx *ck) {
    int64_t lo = ck->from ? ck->from->t_ns : in->t0_ns;
    int64_t later_s0 = INT64_MAX; /* the least start of the entries after k */
    for (size_t k = in->n_act; k-- > 0;) {
        int64_t t = in->act[k].ts_ns;
        if (t <= lo) break;
        int alone = k + 1 == in->n_act || in->act[k + 1].ts_ns > t;
        if (t <= ck->freeze_by && t < in->t1_ns && alone &&
            ((ready >= 0 && ready < t) || later_s0 >= t)) {
            gp_goodput_ckpt *to = ck->to;
            to->kind = ready >= 0 ? GP_JK_ACTIVITY_ONLY : GP_JK_NEVER_READY;
            to->t_ns = to->ev_cut_ns = to->late_ns = t;
            to->ready_ns = ready >= 0 && ready < t ? ready : -1;
            ck->act_cut = 1;
            ck->cut_t = t;
            return;
        }
        int64_t s0 = t - in->act[k].dur_ns;
        if (s0 < later_s0) later_s0 = s0;
    }
}

/* No progress events: readiness is the first kernel activity (issue: attribution). A job
 * that never ran a kernel never became ready; one that did gets an activity-only estimate
 * with goodput unknown. Resuming after a checkpoint, an event at or before it breaks it;
 * its readiness carries on when it had one. */
static void label_activity_only(const gp_goodput_in *in, const gp_acct_event **ev, size_t n_phase,
                                gp_goodput *out, int64_t *ready, ck_ctx *ck) {
    const gp_goodput_ckpt *from = ck->from;
    if (from) {
        if (in->n_events && ev[0]->ts_ns <= from->late_ns) { /* a late event */
            ck->broken = 1;
            return;
        }
        *ready = from->ready_ns;
    }
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
        if (e->kind == GP_EV_PHASE && e->edge == GP_PH_END &&
            phase_label(gp_acct_event_name(in, e)) == L_STARTUP &&
            (*ready < 0 || e->ts_ns < *ready)) {
            *ready = e->ts_ns > out->first_alloc_ns ? e->ts_ns : out->first_alloc_ns;
            break;
        }
    }
    if (*ready >= 0)
        out->kind = GP_JK_ACTIVITY_ONLY;
    else if (n_phase > 0 || in->n_act > 0 || from)
        out->kind = GP_JK_NEVER_READY;
    else
        out->kind = GP_JK_UNKNOWN;
    if (ck->to && out->kind != GP_JK_UNKNOWN) act_choose_cut(in, *ready, ck);
}

/* ---- the sweep ---- */

/* Folds one elementary segment [a, b) with `gpu_s` held GPU-seconds into its bucket: the
 * highest-priority open label; with none, by kernel activity (idle_allocated where the
 * GPUs ran none, other where they did), or idle_allocated for a ready server whose
 * activity is unknown. Adds the segment's busy GPU-seconds to *busy when known. */
static void fold_segment(const gp_goodput_in *in, const int *open, int64_t a, int64_t b,
                         double gpu_s, gp_goodput *out, double *busy, int *busy_known,
                         const act_sums *carry, int64_t after) {
    int label = -1;
    for (int l = 0; l < L__COUNT; l++)
        if (open[l] > 0) {
            label = l;
            break;
        }
    double idle_frac = 0, util = -1;
    if (carry) { /* a checkpoint's segment: its sums up to `after`, then the entries after */
        act_sums x = *carry;
        activity_add(in, &x, a, b, after, INT64_MAX, out->kind == GP_JK_INFERENCE);
        util = activity_mean(&x, &idle_frac);
    } else if (in->n_act) {
        util = activity_over(in, a, b, &idle_frac, out->kind == GP_JK_INFERENCE);
    }
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
_Static_assert(L__COUNT == GP_CKPT_LABELS, "gp_goodput_ckpt.open holds one count per label");

/* The sweep's state at a new checkpoint's instant: every edge before it and the closes at
 * it are folded. */
static void snap(gp_goodput_ckpt *t, const int *open, double held, int n_held, double busy,
                 int busy_known, const gp_goodput *out) {
    memcpy(t->open, open, sizeof t->open);
    t->held = held;
    t->n_held = n_held;
    memcpy(t->bucket_gpu_s, out->bucket_gpu_s, sizeof t->bucket_gpu_s);
    t->busy_gpu_s = busy;
    t->busy_known = busy_known;
}

/* An activity-only cut's snapshot, in the segment [a, ...) that holds ck->cut_t: the
 * state before the segment, and the segment's activity sums over the entries that end by
 * the cut (carry: the sums up to `after`, when the segment is a checkpoint's). */
static void act_snap(const gp_goodput_in *in, ck_ctx *ck, const int *open, double held, int n_held,
                     int64_t a, const act_sums *carry, int64_t after, double busy, int busy_known,
                     const gp_goodput *out) {
    gp_goodput_ckpt *t = ck->to;
    snap(t, open, held, n_held, busy, busy_known, out);
    ck->snapped = 1;
    for (int l = 0; l < L__COUNT; l++) { /* only not_ready, before readiness */
        int want = l == L_NOT_READY && t->ready_ns < 0 && out->first_alloc_ns < ck->cut_t;
        if (open[l] != want) ck->snap_bad = 1;
    }
    int64_t sa = a < in->t0_ns ? in->t0_ns : a;
    if (n_held <= 0 || sa >= ck->cut_t) return; /* no GPU held: nothing to resume */
    act_sums x = {0, 0, 0};
    if (carry) x = *carry;
    activity_add(in, &x, sa, INT64_MAX, carry ? after : INT64_MIN, ck->cut_t,
                 out->kind == GP_JK_INFERENCE);
    t->has_seg = 1;
    t->seg_t0_ns = sa;
    t->seg_covered_ns = x.covered, t->seg_busy_ns = x.busy, t->seg_idle_ns = x.idle;
}

/* One elementary segment [a, b) of the sweep (carry: a checkpoint's, see fold_segment). */
static void sweep_segment(const gp_goodput_in *in, ck_ctx *ck, const int *open, double held,
                          int n_held, int64_t a, int64_t b, const act_sums *carry, int64_t after,
                          gp_goodput *out, double *busy, int *busy_known) {
    if (ck->act_cut && !ck->snapped) {
        if (a == ck->cut_t)
            ck->snap_bad = 1; /* an edge at the cut: the prefix would split no segment */
        else if (a < ck->cut_t && b > ck->cut_t)
            act_snap(in, ck, open, held, n_held, a, carry, after, *busy, *busy_known, out);
    }
    if (b <= a || n_held <= 0) return;
    if (a < in->t0_ns) a = in->t0_ns;
    if (b > in->t1_ns) b = in->t1_ns;
    if (b <= a) return;
    fold_segment(in, open, a, b, (b - a) / 1e9 * held, out, busy, busy_known, carry, after);
}

static void sweep(const gp_goodput_in *in, edges *E, gp_goodput *out, ck_ctx *ck) {
    if (E->n) sort_edges(E->v, E->n); /* E->v is NULL when empty */
    int open[L__COUNT] = {0};
    double held = 0; /* GPUs held, fractional where a shared GPU was split */
    int n_held = 0;  /* open allocations (the float sum is not trusted to reach 0) */
    double busy = 0;
    int busy_known = 0;
    if (ck->from) { /* resume: the frozen prefix's state at its instant */
        const gp_goodput_ckpt *f = ck->from;
        memcpy(open, f->open, sizeof open);
        held = f->held, n_held = f->n_held;
        busy = f->busy_gpu_s, busy_known = f->busy_known;
        memcpy(out->bucket_gpu_s, f->bucket_gpu_s, sizeof out->bucket_gpu_s);
        if (f->has_seg) { /* the segment an activity-only prefix ends inside goes on */
            act_sums carry = {f->seg_covered_ns, f->seg_busy_ns, f->seg_idle_ns};
            sweep_segment(in, ck, open, held, n_held, f->seg_t0_ns, E->n ? E->v[0].t : in->t1_ns,
                          &carry, f->t_ns, out, &busy, &busy_known);
        }
    }
    for (size_t i = 0; i < E->n; i++) {
        edge *e = &E->v[i];
        if (ck->cut && !ck->snapped && (e->t > ck->cut_t || (e->t == ck->cut_t && e->delta > 0))) {
            snap(ck->to, open, held, n_held, busy, busy_known, out);
            ck->snapped = 1;
            if (ck->to->kind != GP_JK_TRAINING) /* only its intervals in flight are open */
                for (int l = 0; l < L__COUNT; l++)
                    if (open[l] != (l == L_PRODUCTIVE ? (int)ck->to->n_span : 0)) ck->snap_bad = 1;
        }
        if (e->label == L_ALLOC) {
            held += e->delta * alloc_share(&in->allocs[e->alloc]);
            n_held += e->delta;
            if (n_held == 0) held = 0;
        } else
            open[e->label] += e->delta;
        int64_t a = e->t, b = i + 1 < E->n ? E->v[i + 1].t : a;
        sweep_segment(in, ck, open, held, n_held, a, b, NULL, INT64_MIN, out, &busy, &busy_known);
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
    return gp_goodput_compute_ckpt(in, NULL, 0, 0, NULL, out);
}

int gp_goodput_compute_ckpt(const gp_goodput_in *in, const gp_goodput_ckpt *from,
                            int64_t freeze_by_ns, size_t min_steps, gp_goodput_ckpt *to,
                            gp_goodput *out) {
    memset(out, 0, sizeof *out);
    out->goodput = -1;
    out->ready_ns = -1;
    out->first_alloc_ns = -1;
    out->median_step_s = -1;
    out->busy_gpu_s = -1;
    if (from && !from->valid) from = NULL;
    if (to) memset(to, 0, sizeof *to);
    ck_ctx ck = {.from = from, .to = to, .freeze_by = freeze_by_ns, .min_steps = min_steps};
    event_counts c;
    gp_acct_event *copy;
    const gp_acct_event **ev = sort_events(in, &c, &copy);
    if (!ev) return -1;
    edges E = {.floor = from ? from->t_ns : INT64_MIN};
    int rc = -1;
    if (from) { /* the held GPUs before the checkpoint must be what they were */
        int64_t *ap;
        size_t nap;
        if (gp_ckpt_alloc_print(in, from->t_ns, &ap, &nap) != 0) goto out;
        int kind_changed = from->kind == GP_JK_TRAINING    ? c.steps == 0
                           : from->kind == GP_JK_INFERENCE ? c.steps > 0
                           : from->kind == GP_JK_PIPELINE
                               ? c.steps > 0 || c.requests > 0
                               : c.steps > 0 || c.requests > 0 || c.stage_items > 0;
        ck.broken = kind_changed || from->t_ns >= in->t1_ns || nap != from->n_allocs ||
                    memcmp(&from->slo, &in->slo, sizeof in->slo) != 0 ||
                    from->idle_util != in->idle_util ||
                    (nap && memcmp(ap, from->allocs, 3 * nap * sizeof *ap) != 0);
        free(ap);
        if (ck.broken) goto out;
    }
    add_allocs(in, out, &E, from ? from->t_ns : INT64_MIN);
    add_phases(in, ev, &E, from);

    int64_t ready = -1;
    if (c.steps > 0) {
        if (label_training(in, ev, c.steps, out, &E, &ready, &ck) != 0 || ck.broken) goto out;
    } else if (c.requests > 0 || (from && from->kind == GP_JK_INFERENCE)) {
        if (label_inference(in, ev, out, &E, &ready, &ck) != 0 || ck.broken) goto out;
    } else if (c.stage_items > 0 || (from && from->kind == GP_JK_PIPELINE)) {
        if (label_pipeline(in, ev, out, &E, &ready, &ck) != 0 || ck.broken) goto out;
    } else {
        label_activity_only(in, ev, c.phases, out, &ready, &ck);
        if (ck.broken) goto out;
    }
    out->ready_ns = ready;
    int64_t nr_end = ready >= 0 ? ready : in->t1_ns;
    if (out->kind != GP_JK_UNKNOWN && out->first_alloc_ns >= 0 && !from) {
        add_interval(&E, out->first_alloc_ns, nr_end, L_NOT_READY);
    } else if (from && from->ready_ns < 0 && out->first_alloc_ns >= 0 &&
               (from->kind == GP_JK_ACTIVITY_ONLY || from->kind == GP_JK_NEVER_READY)) {
        /* an activity-only prefix before readiness: not_ready is open in its state when the
         * first allocation began before it */
        if (out->first_alloc_ns >= from->t_ns)
            add_interval(&E, out->first_alloc_ns, nr_end, L_NOT_READY);
        else if (edges_reserve(&E, 1) == 0)
            E.v[E.n++] = (edge){nr_end, -1, L_NOT_READY, -1};
    }
    if (E.oom) goto out;
    if (E.below) { /* something after the checkpoint labels time before it */
        ck.broken = 1;
        goto out;
    }
    if ((ck.cut || ck.act_cut) &&
        gp_ckpt_alloc_print(in, ck.cut_t, &to->allocs, &to->n_allocs) != 0)
        goto out;
    sweep(in, &E, out, &ck);
    if (out->kind == GP_JK_INFERENCE) split_serving(out);
    if (out->allocated_gpu_s > 0 && out->kind != GP_JK_ACTIVITY_ONLY && out->kind != GP_JK_UNKNOWN)
        out->goodput = out->bucket_gpu_s[GP_B_PRODUCTIVE] / out->allocated_gpu_s;
    rc = 0;
out:
    if (to && (rc != 0 || ck.broken || !ck.snapped || ck.snap_bad)) {
        gp_goodput_ckpt_free(to);
    } else if (to) {
        to->valid = 1;
        to->slo = in->slo;
        to->idle_util = in->idle_util;
    }
    free(E.v);
    free(ev);
    free(copy);
    return ck.broken ? 1 : rc;
}
