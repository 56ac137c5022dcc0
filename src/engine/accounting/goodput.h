/* goodput.h: the goodput accounting of one job over a window (ARCHITECTURE.md,
 * "Definitions"). Pure functions over arrays in memory; no I/O.
 *
 * Every allocated GPU-second lands in exactly one bucket, so goodput plus the badput
 * buckets always sum to the allocated GPU-seconds. Time is labelled by the highest
 * priority that covers it:
 *   checkpoint > data_wait > wasted_progress > startup > recovery > other phase
 *     > productive (kept step spans) > not_ready (before first progress)
 *     > the rest: idle_allocated when the job's GPUs ran no kernels, else other.
 * Training: productive time is the span between consecutive starts of kept steps (the
 * last occurrence of each step number; earlier occurrences were redone after a restart
 * and are wasted_progress, and so is a step followed later by a smaller step id: the
 * job went back past it), minus blocking phases inside it (they keep their bucket). A gap between a
 * step's end and the next start longer than max(1 s, the median step) is not productive. Inference:
 * serving time is the union over requests of [arrival, end] (at least one request in prefill or
 * decode; a work-conserving server queues a request only while it serves others). Its GPU-seconds
 * split by good tokens / all tokens (a request is good when it meets every SLO set): productive,
 * and "other" for the SLO-missing share. Ready time with no request in flight is never productive:
 * idle_allocated where the GPUs ran no kernels or activity is unknown, other where kernels ran.
 * Ready at the first arrival (or the end of a startup phase when earlier). Pipelines (stage events,
 * no steps or requests): productive time is when the GPU stage(s) processed items (the union of
 * their items' [start, end]; every stage when none is declared resource=gpu); ready at the first
 * item's start. A job that reported no progress-bearing events is ready at its first kernel
 * activity (gpu_util >= idle_util): before it, not_ready; after it, an activity-only estimate
 * (idle_allocated vs other) with goodput unknown (< 0). One that never ran a kernel is
 * never-ready: all of its time is not_ready. */
#ifndef GP_ENGINE_GOODPUT_H
#define GP_ENGINE_GOODPUT_H

#include <stddef.h>
#include <stdint.h>

#include "model/event.h"
#include "model/job.h"
#include "model/sample.h"

typedef enum {
    GP_B_PRODUCTIVE,
    GP_B_NOT_READY,
    GP_B_STARTUP,
    GP_B_DATA_WAIT,
    GP_B_CHECKPOINT,
    GP_B_WASTED_PROGRESS,
    GP_B_RECOVERY,
    GP_B_IDLE_ALLOCATED,
    GP_B_OTHER,
    GP_B__COUNT
} gp_bucket;

typedef enum {
    GP_JK_UNKNOWN,       /* nothing known: no events, no activity */
    GP_JK_TRAINING,      /* step events */
    GP_JK_INFERENCE,     /* request events */
    GP_JK_ACTIVITY_ONLY, /* no progress events, but kernels ran: estimate from activity */
    GP_JK_NEVER_READY,   /* no progress events and no kernel activity */
    GP_JK_PIPELINE,      /* stage events: items through a multi-stage pipeline */
} gp_job_kind;

/* SLOs in seconds; 0 = not set. */
typedef struct gp_slo {
    double ttft_s, tpot_s, e2e_s;
} gp_slo;

/* Kernel activity of the job's GPUs: each entry covers (ts_ns - dur_ns, ts_ns]. */
typedef struct gp_activity {
    int64_t ts_ns, dur_ns;
    double util; /* mean gpu_util over the job's GPUs in that interval */
} gp_activity;

/* An event as the accounting reads it: the fields of gp_event that it uses, 48 bytes
 * (gp_event's is ~700; a long job's refresh expands tens of thousands). A request's
 * fields share their bytes with a step's or stage's: the accounting reads arrival,
 * first token and output tokens only of requests, and step, start and units only of
 * steps and stages, so the writer fills one side by kind (gp_acct_event_fill). name: an
 * index into the input's names (gp_acct_event_name), -1 for none. edge: the store's
 * value where it fits 16 bits, else GP_ACCT_EDGE_NONE (gp_acct_edge), which equals no
 * edge or resource, as the value did not. */
typedef struct gp_acct_event {
    int64_t ts_ns, rank;
    union {
        struct { /* GP_EV_STEP, GP_EV_STAGE, and every kind but requests */
            int64_t step;
            union { /* gp_event's step_start_ns of a step, start_ns of a stage */
                int64_t step_start_ns, start_ns;
            };
            double units;
        };
        struct { /* GP_EV_REQUEST */
            int64_t arrival_ns, first_token_ns, output_tokens;
        };
    };
    int32_t name;    /* gp_acct_event_name; -1: "" */
    int16_t edge;    /* gp_phase_edge, or a stage's resource (gp_acct_edge) */
    int8_t kind, ok; /* gp_event_kind; request ok (0 or 1) */
} gp_acct_event;

#define GP_ACCT_EDGE_NONE INT16_MIN
/* An event's edge as gp_acct_event holds it. */
static inline int16_t gp_acct_edge(int64_t edge) {
    return edge < INT16_MIN + 1 || edge > INT16_MAX ? GP_ACCT_EDGE_NONE : (int16_t)edge;
}

/* The kind-dependent fields of *a, whose kind is set: a request's three, else a step's or
 * stage's (start: the step's step_start_ns, the stage's start_ns). */
static inline void gp_acct_event_fill(gp_acct_event *a, int64_t step, int64_t start_ns,
                                      double units, int64_t arrival_ns, int64_t first_token_ns,
                                      int64_t output_tokens) {
    if (a->kind == GP_EV_REQUEST) {
        a->arrival_ns = arrival_ns;
        a->first_token_ns = first_token_ns;
        a->output_tokens = output_tokens;
    } else {
        a->step = step;
        a->start_ns = start_ns;
        a->units = units;
    }
}

typedef struct gp_goodput_in {
    const gp_alloc *allocs;
    size_t n_allocs;
    const gp_event *events;           /* any order; sorted internally */
    const gp_acct_event *acct_events; /* instead of events when set (any order) */
    const char (*names)[GP_NAME_MAX]; /* acct_events' names: names[e->name] */
    size_t n_events;                  /* of whichever is given */
    const gp_activity *act;           /* sorted by ts; may be NULL */
    size_t n_act;
    int64_t t0_ns, t1_ns; /* window; open allocations end at t1 */
    gp_slo slo;
    double idle_util; /* below this a GPU ran "no kernels"; 0 = default 0.05 */
} gp_goodput_in;

/* e's name: of in->acct_events, names[e->name]; of in->events (e made from the i-th, name i),
 * that event's. "" when none. */
static inline const char *gp_acct_event_name(const gp_goodput_in *in, const gp_acct_event *e) {
    if (e->name < 0) return "";
    return in->acct_events ? in->names[e->name] : in->events[e->name].name;
}

typedef struct gp_goodput {
    gp_job_kind kind;
    double allocated_gpu_s;
    double bucket_gpu_s[GP_B__COUNT];
    double goodput;                   /* productive / allocated, < 0 unknown */
    int64_t first_alloc_ns, ready_ns; /* ready_ns < 0: never ready in the window */
    /* training */
    int64_t steps, kept_steps, redone_steps;
    double units;
    double median_step_s; /* < 0 unknown */
    /* inference */
    int64_t requests, good_requests, failed_requests;
    double tokens, good_tokens;
    double serving_gpu_s; /* GPU-s with at least one request in flight (productive + SLO misses) */
    /* pipeline */
    int64_t items; /* items finished by the GPU stage(s) */
    /* activity-only */
    double busy_gpu_s; /* integral of util over allocations; < 0 unknown */
} gp_goodput;

int gp_goodput_compute(const gp_goodput_in *in, gp_goodput *out);

/* A frozen, labelled prefix of a training, inference, pipeline or activity-only job's
 * time, so that a running job's refresh labels only what came after it (goodput.c, "Checkpoints",
 * says when a prefix is final and what breaks it). Made by gp_goodput_compute_ckpt; owned by the
 * caller. */
#define GP_CKPT_LABELS 8
#define GP_CKPT_STAGES 16 /* the GPU stages a pipeline's labelling follows */
/* Phases a training prefix carries: begun at its instant t_ns, so labelled after it. */
#define GP_CKPT_CARRY 4
/* Step durations a prefix keeps on each side of its median (gp_goodput_ckpt.durs): later
 * computations resume it exactly while fewer than about twice this many steps come
 * after it (a running job's refresh adds minutes of steps). */
#define GP_CKPT_MEDIAN_HALF 32768
typedef struct gp_goodput_ckpt {
    int valid;
    gp_job_kind kind; /* GP_JK_TRAINING, _INFERENCE or _PIPELINE: the labelling it froze */
    gp_slo slo;       /* what it was labelled with: another breaks it */
    double idle_util;
    int64_t t_ns;      /* the sweep is folded up to here: the start of the first later step */
    int64_t ev_cut_ns; /* events at or before this are folded in: the caller may drop them */
    int64_t late_ns;   /* an event at or before this (other than a step of a rank above
                        * rank0, or the first later step itself) means the prefix is stale */
    int64_t rank0, max_step, prev_end_ns, ready_ns;
    int64_t steps, kept_steps, redone_steps;
    double units;
    int64_t max_gap_ns; /* the gap threshold the prefix was labelled with */
    /* The prefix's step durations around their median, sorted (the median needs them): the
     * ones of rank [durs_below, durs_below + n_durs) among all of the prefix's; the
     * durs_below before them are <= durs[0], the durs_above after them >= the last. At most
     * 2 * GP_CKPT_MEDIAN_HALF + 1 are kept, so a prefix does not grow with the job; a
     * median whose rank falls outside them is unknown and breaks the prefix (compute
     * again without it), so the median is always exact. */
    double *durs;
    size_t n_durs, durs_below, durs_above;
    int64_t *gaps; /* the prefix's gaps longer than 1 s between steps (no restart), sorted */
    size_t n_gaps;
    int64_t *allocs; /* allocation pieces before t_ns: (from, min(to, t_ns), share bits) */
    size_t n_allocs;
    /* inference: the counts of the requests that ended by t_ns, and the requests in
     * flight across t_ns (arrival < t_ns < end) as (arrival, end) pairs, sorted */
    int64_t requests, good_requests, failed_requests;
    double tokens, good_tokens;
    int64_t *span;
    size_t n_span;
    /* pipeline: the items of its GPU stages that ended by t_ns (spans as for requests),
     * and the stages declared on the GPU (none: every stage), in declaration order */
    int64_t items;
    char gpu_stage[GP_CKPT_STAGES][GP_NAME_MAX];
    int n_gpu_stage;
    /* training: the phases begun at t_ns (a step's data_wait from the previous step's
     * end), in event order; the events at t_ns are folded in (ev_cut_ns = t_ns), so the
     * later computation labels each from t_ns to the next event of its name and rank */
    struct {
        char name[GP_NAME_MAX];
        int64_t rank;
    } carry[GP_CKPT_CARRY];
    int n_carry;
    /* activity-only (and never-ready): the sweep's segment that holds t_ns (it begins at
     * the last label or allocation edge before t_ns and no edge lies at t_ns), when GPUs
     * were held there: where it began and its kernel activity summed over the entries
     * that end by t_ns, in the order the whole computation adds them (goodput.c,
     * activity_add), so that the segment's mean, taken when it ends, is the same double */
    int has_seg;
    int64_t seg_t0_ns;
    double seg_covered_ns, seg_busy_ns, seg_idle_ns;
    /* the sweep's state at t_ns */
    int open[GP_CKPT_LABELS];
    double held;
    int n_held;
    double bucket_gpu_s[GP_B__COUNT];
    double busy_gpu_s;
    int busy_known;
} gp_goodput_ckpt;

void gp_goodput_ckpt_free(gp_goodput_ckpt *c);
/* gp_goodput_compute resuming after `from` (NULL: from the start; in->events then need
 * only the events after from->ev_cut_ns), and, when `to` is set, freezing a new prefix
 * into it (to->valid): for training at a step that ended by freeze_by_ns with at least
 * min_steps steps of this computation before it, for inference (pipelines) at the
 * arrival (start) by freeze_by_ns of a request (GPU stage item) in flight after it. The result
 * equals gp_goodput_compute over all events. Returns 0, -1 on OOM, 1 when `from` no longer holds (a
 * late or restored event reaches into it, the median flips one of its gaps, an allocation before it
 * changed): then compute again without it. */
int gp_goodput_compute_ckpt(const gp_goodput_in *in, const gp_goodput_ckpt *from,
                            int64_t freeze_by_ns, size_t min_steps, gp_goodput_ckpt *to,
                            gp_goodput *out);
/* The part of a GPU's kernel activity that belongs to one job when `holders` jobs hold
 * it: by the job's per-process SM share at that instant when the source reports shares
 * (mine / all), evenly otherwise. With one holder, all of it. */
double gp_util_attributed(double util, int holders, int share_known, double mine, double all);
const char *gp_bucket_name(gp_bucket b);
const char *gp_job_kind_name(gp_job_kind k);
/* Does a request meet every SLO set? */
int gp_request_good(const gp_event *r, const gp_slo *slo);

#endif
