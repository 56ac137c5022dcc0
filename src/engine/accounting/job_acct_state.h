/* job_acct_state.h: the incremental accounting state (gp_job_acct, job_summary.h) laid
 * out for the two files that read its insides: job_summary.c, which folds rows into it,
 * and acct_prefix.c, which saves it to the store and loads it back (a running job's
 * prefix, acct_prefix.h). Internal to engine/accounting. */
#ifndef GP_ENGINE_JOB_ACCT_STATE_H
#define GP_ENGINE_JOB_ACCT_STATE_H

#include "engine/accounting/job_summary.h"

#include <stdint.h>

typedef struct {
    double sum, w;
} wmean;

/* An event as the accounting reads it: the fields goodput.c uses (start: step_start_ns, or
 * start_ns for a stage, as the store keeps them in one column), about 100 bytes instead
 * of gp_event's 700, so a running job's state costs ~8 MB per day at one step per
 * second. Expanded into a gp_event array only while goodput is computed. */
typedef struct cev {
    int64_t id, ts, rank, step, start, arrival, first_token, prompt_tokens, output_tokens;
    double units;
    int32_t kind, edge, ok, name; /* name: index into names, -1 = "" */
} cev;

typedef struct acct_alloc {
    gp_alloc al;         /* as stored at the last update */
    int64_t a;           /* folded samples lie in (a, cursor] */
    int64_t cursor;      /* the last sample folded (a when none): also the weight origin */
    int64_t proc_cursor; /* the last per-process row folded (a - 1 when none) */
    int64_t mem_cursor;  /* the last row folded into mem_max (a - 1 when none) */
    double mem_max;      /* peak device memory of the job's processes here; < 0 unknown */
    wmean util, sm, tensor, dram, memf;
    uint64_t e_first, e_last;
    int have_e;
    /* Energy counter where the rollup part ended (the last 1-minute bucket folded before
     * the raw window): the energy before it is split evenly on a shared GPU, per-process
     * SM shares not being rolled up. */
    uint64_t e_roll;
    int have_e_roll;
    int64_t roll_end;             /* end of the rollup part (a when none) */
    double share_mine, share_all; /* sums of sm_share: this job's, everyone's */
} acct_alloc;

struct gp_job_acct {
    char job_id[GP_JOB_ID_MAX];
    double nb_sig[3];       /* neighbour_sig at the last update */
    int64_t opt_t0, opt_t1; /* 0/0: whole history */
    gp_slo opt_slo;
    int64_t opt_rollup_min; /* gp_summary_opts.rollup_min_ns resolved: < 0 never */
    int rolled;             /* long: whole minutes of the raw window from rollups */
    int started;
    int64_t t0, t1; /* the window of the last update */
    acct_alloc *al;
    size_t n_al;
    /* merged activity: act[k].util = act_sum[k] / act_n[k] */
    gp_activity *act;
    double *act_sum;
    int *act_n, *act_owner; /* owner: the allocation whose interval the entry takes */
    size_t n_act, cap_act;
    /* events of the kinds the accounting reads, in (ts, id) order, compact */
    cev *ev;
    size_t n_ev, cap_ev;
    char (*names)[GP_NAME_MAX]; /* distinct non-empty event names (phases) */
    size_t n_names;
    int64_t ev_cursor; /* every event with id <= cursor has been seen */
    int ev_loaded;
    const gp_job_acct *borrow; /* windows: events are this state's */
    gp_acct_event *xev;        /* goodput.c's view of the events, rebuilt per update */
    size_t cap_xev;
    /* One update then freed (gp_job_summary_compute): the events are read straight into
     * xev (n_xev of them) and no compact copy is kept, halving the peak for a long job. */
    int oneshot;
    size_t n_xev;
    int64_t xcur_ts, xcur_id; /* events up to (ts, id) have been read into xev */
    int64_t slice_events;     /* one-shot: read this many at a time, freezing; 0 = all */
    int64_t slice_lag;        /* ... freezing this far behind the newest event read */
    int64_t slice_top;        /* a running state's first load in parts: ids up to this */
    gp_goodput_ckpt ck;       /* the frozen labelled past (ck.valid) */
    int64_t freeze_lag;       /* < 0: never freeze (one-shot summaries, windows) */
    size_t freeze_steps;
    gp_job_acct_stats stats;
    /* Samples and process rows are folded only up to here (INT64_MAX: up to the window's
     * end). A running job's prefix (acct_prefix.c) stops at a whole minute, where a long
     * job's fold continues with the next minute's rollup exactly as one fold of the whole
     * history reads it (fold_long). */
    int64_t fold_cap;
};

#endif
