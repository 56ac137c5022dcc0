/* job_summary.c: joins a job's allocations, events and device samples from the store.
 *
 * Everything goes through one incremental state (gp_job_acct, job_summary.h): a one-shot
 * summary is a fresh state updated once, so "incremental" and "full" share every line of
 * the accounting and can only differ by the order of floating-point additions.
 *
 * What the state keeps, and why it is exact:
 *  - Per allocation, running sums of the signal integrals (weight = time since the
 *    previous sample of that allocation), the first and last energy counter, and the
 *    per-process SM-share sums. These are sums over rows: folding the new rows into them
 *    gives the same totals as a rescan. A cursor per allocation (the last sample folded)
 *    says where the next query starts.
 *  - The merged kernel-activity timeline (one entry per instant: sum and count of the
 *    job's GPUs' gpu_util, and the interval of the first allocation that reported it), so
 *    a refresh merges only the new samples into its tail.
 *  - The job's events of the kinds the accounting reads (hello, step, phase, request,
 *    stage, restart), compact (~100 bytes each, not gp_event's ~700), in the store's
 *    order (ts, id), extended by the rows inserted since the last update (events.id > the
 *    cursor, a rowid range: cost follows what is new).
 * Checkpoints: the labels of old time are decided retroactively (a restart that redoes
 * step N turns an earlier kept step into wasted_progress; the median step time, the gap
 * threshold, moves with every step; a phase begin is open until its end arrives), so a
 * training, inference or pipeline job's state freezes only a prefix that nothing seen so
 * far can relabel (gp_goodput_ckpt, goodput.c "Checkpoints", which also lists what breaks
 * one) and that lies at least freeze_lag_ns behind the job's newest data (a request is
 * stored when it ends: one in flight across the cut but stored after it means a reload),
 * where every GPU's kernel activity is folded (freeze_by). The state then drops the
 * events and activity entries before it and each update labels only the time after it,
 * so a refresh costs what is new, not the job's age; a training prefix keeps 8 bytes per
 * step (its durations, for the median), an inference (pipeline) prefix its request (item)
 * counts and the requests (GPU stage items) in flight across its end. When something new
 * breaks the prefix (a late event before it, a restart that goes back past it, a median
 * that flips one of its long gaps, an allocation before it that changed, a request stored
 * after it that started before it, a stage declared on the GPU after it), the state
 * reloads in full from the store, as on its first update: the result is always what a
 * full computation gives. An activity-only (or never-ready) job, which reports no
 * progress, freezes the same way at the end of an activity entry inside the span its
 * kernel activity labels, keeping that span's activity sums so far (goodput.c,
 * "Checkpoints"): a job on a node without goodput's client holds about freeze_lag of
 * activity entries however long it runs, not 40 bytes per sample instant of its life.
 *
 * Slices: a one-shot summary of a whole history (gp_job_summary_compute) and a state's
 * first update (or reload) read the events slice_events at a time in (ts, id) order and
 * freeze after each slice, as refreshes of a running job would (compute_sliced), so the
 * peak is a slice plus the frozen state, not every event; a slice that breaks the prefix
 * makes that update compute again all at once. The activity is folded whole first.
 *
 * Samples: raw rows where they exist; before a device's raw window (rows retention
 * deleted) its 1-minute rollups, each row one interval of a minute with its mean values
 * and its last energy counter (fold_rollups); before those (rows the rollup retention
 * deleted, agent --rollup-retention, whole hours) its 1-hour rollups, read the same way at
 * an hour's precision: means and busy time over whole hours are those of the minutes they
 * replace (the hour's sums are the minutes' sums), and in an hour where the allocation
 * starts or ends the hour's mean stands for the allocation's part, its energy included
 * (the counter there from the hour's mean power, counter_at; the report says which jobs
 * read hours, report/rollup_note.h). A
 * state that folded raw rows (or minutes) keeps them when retention deletes them: the
 * folded sums do not depend on the rows still being there.
 *
 * Long jobs (an allocation folded over >= gp_summary_opts.rollup_min_ns, default 6 h) read
 * the rollups inside the raw window too, for the whole minutes between each allocation's
 * first and last minute, when no other job holds any of their GPUs (fold_long,
 * job_is_long): a 30-day report
 * of 8 GPUs reads 345,600 bucket rows instead of 4.8 M raw ones behind a 7-day window.
 * The first and the last (partial) minute still come from raw rows, so the energy
 * counters at both ends and the time weights there are the raw ones. What stays the same:
 * allocated GPU-hours (allocations only), the mean signals (a bucket's mean is the mean
 * of its samples: with samples at a regular interval the time-weighted raw fold gives the
 * same sum, up to float rounding; after a gap the raw fold weights the first sample by
 * the gap, the rollup weights its bucket mean), energy (counter differences), busy
 * GPU-hours (an integral, linear in util), and every label that events decide (steps,
 * phases, requests: productive, wasted, checkpoint, ...). What does not: the kernel-
 * activity timeline is one entry per minute, so in time no event labels the split
 * between idle_allocated and other (a threshold on util, not linear) and, for a job
 * without progress events, readiness (the first sample above the threshold) are at
 * one-minute precision, and so is busy time in a minute where one allocation of the job
 * starts or ends while another is read from a rollup. On a shared GPU the job's share
 * needs per-process SM shares, which are not rolled up, so a job with a shared GPU keeps
 * reading raw rows. Tests:
 * tests/unit/test_job_summary_rollup.c.
 *
 * The state resets itself (a full reload) when the past it folded may have changed: the
 * window start moved (rows older than the store's first arrived; retention does not move
 * it, the store's start being read from the rollups, which retention keeps), an allocation was
 * added before or removed from the ones folded, an allocation now ends before rows already folded,
 * the window end moved backwards, or another job's allocations on the same GPUs changed (they
 * decide how a shared GPU's activity is attributed). It assumes what the agent guarantees: a
 * device's samples are inserted in time order (a sample older than the last one folded for an
 * allocation, or one replaced in place, is not seen until the next reset). Late events are always
 * seen (by id, not by time). */
#include "engine/accounting/job_summary.h"

#include "engine/accounting/acct_prefix.h"
#include "engine/accounting/alloc_split.h"
#include "engine/accounting/job_acct_state.h"
#include "store/rollup.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the store's time span ---- */

/* min/max of ts_ns over samples and events, via their (uuid, ts_ns) and (job_id, ts_ns)
 * indexes: a loose index scan over the distinct leading keys (recursive CTE), then an
 * indexed min/max per key. A plain min(ts_ns) would read every row of both tables. */
#define SPAN_RAW                                                                                   \
    " su(u) AS (SELECT (SELECT min(uuid) FROM samples) UNION ALL"                                  \
    "  SELECT (SELECT min(uuid) FROM samples WHERE uuid > su.u) FROM su"                           \
    "  WHERE su.u IS NOT NULL)"
/* ...then index lookups (schema migration 6) of events and allocations: one per bound,
 * however many jobs. */
#define SPAN_TAIL                                                                                  \
    "  SELECT (SELECT min(ts_ns) FROM samples WHERE uuid = su.u) AS a,"                            \
    "   (SELECT max(ts_ns) FROM samples WHERE uuid = su.u) AS b FROM su"                           \
    "   WHERE su.u IS NOT NULL"                                                                    \
    "  UNION ALL SELECT (SELECT min(ts_ns) FROM events), (SELECT max(ts_ns) FROM events)"          \
    "  UNION ALL SELECT (SELECT min(from_ns) FROM allocations),"                                   \
    "   (SELECT max(COALESCE(to_ns, from_ns)) FROM allocations))"

/* The rollups count too: retention deletes raw rows and 1-minute rollups but never the
 * 1-hour rollups, so the store's start is where its first rollup bucket's first sample
 * was, however much raw history retention has deleted since (a start that moved with
 * retention would reset every incremental state at each retention pass, see the reset
 * rule above). Both tiers are read: a store whose 1-minute rows are all there has the
 * same first sample in both. A store without rollup tables (an older schema opened
 * read-only) falls back to the raw rows. */
int gp_store_time_span(gp_store *s, int64_t *t0_ns, int64_t *t1_ns) {
    sqlite3_stmt *st;
    *t0_ns = *t1_ns = -1;
    if (gp_store_span_memo_get(s, t0_ns, t1_ns)) return 0; /* no row changed since */
    const char *sql =
        "WITH RECURSIVE" SPAN_RAW ","
        " ru(u) AS (SELECT (SELECT min(uuid) FROM rollup_1m) UNION ALL"
        "  SELECT (SELECT min(uuid) FROM rollup_1m WHERE uuid > ru.u) FROM ru"
        "  WHERE ru.u IS NOT NULL)"
        ", rh(u) AS (SELECT (SELECT min(uuid) FROM rollup_1h) UNION ALL"
        "  SELECT (SELECT min(uuid) FROM rollup_1h WHERE uuid > rh.u) FROM rh"
        "  WHERE rh.u IS NOT NULL)"
        " SELECT min(a), max(b) FROM ("
        /* first/last bucket by the primary key (uuid, t1_ns): buckets do not overlap */
        "  SELECT (SELECT first_ts_ns FROM rollup_1m WHERE uuid = ru.u ORDER BY t1_ns LIMIT 1) AS "
        "a,"
        "   (SELECT last_ts_ns FROM rollup_1m WHERE uuid = ru.u ORDER BY t1_ns DESC LIMIT 1) AS b"
        "   FROM ru WHERE ru.u IS NOT NULL UNION ALL"
        "  SELECT (SELECT first_ts_ns FROM rollup_1h WHERE uuid = rh.u ORDER BY t1_ns LIMIT 1),"
        "   (SELECT last_ts_ns FROM rollup_1h WHERE uuid = rh.u ORDER BY t1_ns DESC LIMIT 1)"
        "   FROM rh WHERE rh.u IS NOT NULL UNION ALL" SPAN_TAIL;
    const char *sql_raw = "WITH RECURSIVE" SPAN_RAW " SELECT min(a), max(b) FROM (" SPAN_TAIL;
    if (sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL) != SQLITE_OK &&
        sqlite3_prepare_v2(gp_store_db(s), sql_raw, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *t0_ns = sqlite3_column_int64(st, 0);
        *t1_ns = sqlite3_column_int64(st, 1);
    }
    int rc = sqlite3_finalize(st);
    if (rc == SQLITE_OK) gp_store_span_memo_set(s, *t0_ns, *t1_ns);
    return 0;
}

/* How many jobs hold this device for most of [t0, t1): for an even split of energy. */
static int holders(gp_store *s, const char *uuid, int64_t t0, int64_t t1) {
    sqlite3_stmt *st;
    int n = 1;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT count(DISTINCT job_id) FROM allocations WHERE uuid = ?1 AND"
                           " from_ns < ?3 AND COALESCE(to_ns, ?3) > ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return 1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, t0);
    sqlite3_bind_int64(st, 3, t1);
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n > 0 ? n : 1;
}

static void wm_add(wmean *m, double v, double w) {
    m->sum += v * w;
    m->w += w;
}
static double wm_get(const wmean *m) {
    return m->w > 0 ? m->sum / m->w : -1;
}

/* ---- the incremental state ---- */

gp_job_acct *gp_job_acct_new(const char *job_id, const gp_summary_opts *o) {
    gp_job_acct *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    snprintf(a->job_id, sizeof a->job_id, "%s", job_id);
    if (o) {
        a->opt_t0 = o->t0_ns;
        a->opt_t1 = o->t1_ns;
        a->opt_slo = o->slo;
        a->opt_rollup_min = o->rollup_min_ns;
        a->freeze_lag = o->freeze_lag_ns;
        a->freeze_steps = o->freeze_steps > 0 ? (size_t)o->freeze_steps : 0;
    }
    if (a->opt_rollup_min == 0) a->opt_rollup_min = GP_SUMMARY_ROLLUP_MIN_NS;
    if (a->freeze_lag == 0) a->freeze_lag = GP_SUMMARY_FREEZE_LAG_NS;
    a->slice_lag = a->freeze_lag > 0 ? a->freeze_lag : GP_SUMMARY_FREEZE_LAG_NS;
    a->slice_events = o && o->slice_events ? o->slice_events : GP_SUMMARY_SLICE_EVENTS;
    if (a->slice_events < 0) a->slice_events = 0;
    a->xcur_ts = INT64_MIN;
    a->fold_cap = INT64_MAX;
    if (a->freeze_steps == 0) a->freeze_steps = GP_SUMMARY_FREEZE_STEPS;
    if (a->opt_t0 != 0 || a->opt_t1 != 0) { /* a fixed window: no refresh, no slices */
        a->freeze_lag = -1;
        a->slice_events = 0;
    }
    return a;
}

static void acct_reset(gp_job_acct *a) {
    if (a->started) a->stats.reloads++;
    free(a->al), free(a->act), free(a->act_sum), free(a->act_n), free(a->act_owner);
    free(a->ev), free(a->names), free(a->xev);
    gp_goodput_ckpt_free(&a->ck);
    a->xev = NULL, a->cap_xev = a->n_xev = 0;
    a->xcur_ts = INT64_MIN, a->xcur_id = 0;
    a->al = NULL, a->act = NULL, a->act_sum = NULL, a->act_n = NULL, a->act_owner = NULL;
    a->ev = NULL, a->names = NULL;
    a->n_names = 0;
    a->n_al = a->n_act = a->cap_act = a->n_ev = a->cap_ev = 0;
    a->ev_cursor = 0;
    a->ev_loaded = 0;
    a->started = 0;
}

void gp_job_acct_free(gp_job_acct *a) {
    if (!a) return;
    acct_reset(a);
    free(a);
}

/* New activity entries of one update: (ts, dur, util, alloc index). */
typedef struct {
    int64_t ts, dur;
    double util;
    int owner;
} act_new;

static int cmp_act_new(const void *x, const void *y) {
    const act_new *p = x, *q = y;
    if (p->ts != q->ts) return p->ts < q->ts ? -1 : 1;
    return (p->owner > q->owner) - (p->owner < q->owner);
}

/* Sets the four activity arrays' capacity to cap (>= n_act). On a failure the arrays that
 * moved keep their new size, so the capacity kept is the smaller of old and new: every
 * array has at least that room. */
static int act_set_cap(gp_job_acct *a, size_t cap) {
    gp_activity *p = realloc(a->act, cap * sizeof *p);
    if (p) a->act = p;
    double *q = realloc(a->act_sum, cap * sizeof *q);
    if (q) a->act_sum = q;
    int *r = realloc(a->act_n, cap * sizeof *r);
    if (r) a->act_n = r;
    int *o = realloc(a->act_owner, cap * sizeof *o);
    if (o) a->act_owner = o;
    if (!p || !q || !r || !o) {
        if (cap < a->cap_act) a->cap_act = cap;
        return -1;
    }
    a->cap_act = cap;
    return 0;
}

static int act_reserve(gp_job_acct *a, size_t n) {
    if (n <= a->cap_act) return 0;
    /* By a quarter, not doubled: a running job's state lives as long as the job and grows
     * by one entry per sample instant (40 bytes), so doubling left up to half of it unused
     * for as long again (the agent at 8 GPUs: +320 KiB at once when its jobs passed 1,024
     * instants, docs/benchmarks.md agent --listen 2026-12-03). Still amortised O(1). */
    size_t cap = a->cap_act ? a->cap_act : 1024;
    while (cap < n)
        cap += cap / 4 + 1;
    return act_set_cap(a, cap);
}

/* Merges sorted new entries into the timeline: entries at one instant become one, the
 * mean of the GPUs' util over the interval of the lowest-numbered allocation (what a
 * stable sort of all samples by time, then a merge of equal instants, gives). */
static int act_merge(gp_job_acct *a, act_new *nw, size_t nn) {
    if (!nn) return 0;
    qsort(nw, nn, sizeof *nw, cmp_act_new);
    /* First existing entry at or after the first new one: usually at the very end. */
    size_t p = a->n_act;
    while (p > 0 && a->act[p - 1].ts_ns >= nw[0].ts)
        p--;
    size_t tail = a->n_act - p;
    if (act_reserve(a, a->n_act + nn)) return -1;
    /* Move the old tail aside, then merge it with the new entries from position p. */
    gp_activity *ot = malloc((tail + 1) * sizeof *ot);
    double *os = malloc((tail + 1) * sizeof *os);
    int *on = malloc((tail + 1) * sizeof *on), *oo = malloc((tail + 1) * sizeof *oo);
    if (!ot || !os || !on || !oo) {
        free(ot), free(os), free(on), free(oo);
        return -1;
    }
    memcpy(ot, a->act + p, tail * sizeof *ot);
    memcpy(os, a->act_sum + p, tail * sizeof *os);
    memcpy(on, a->act_n + p, tail * sizeof *on);
    memcpy(oo, a->act_owner + p, tail * sizeof *oo);
    size_t i = 0, j = 0, m = p;
    while (i < tail || j < nn) {
        int64_t ts = (j >= nn || (i < tail && ot[i].ts_ns <= nw[j].ts)) ? ot[i].ts_ns : nw[j].ts;
        int64_t dur = 0;
        double sum = 0;
        int n = 0, owner = -1;
        if (i < tail && ot[i].ts_ns == ts) {
            dur = ot[i].dur_ns, sum = os[i], n = on[i], owner = oo[i];
            i++;
        }
        while (j < nn && nw[j].ts == ts) {
            if (owner < 0 || nw[j].owner < owner) dur = nw[j].dur, owner = nw[j].owner;
            sum += nw[j].util;
            n++;
            j++;
        }
        a->act[m] = (gp_activity){ts, dur, sum / n};
        a->act_sum[m] = sum, a->act_n[m] = n, a->act_owner[m] = owner;
        m++;
    }
    a->n_act = m;
    free(ot), free(os), free(on), free(oo);
    return 0;
}

static int64_t col_time(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}
static int col_known(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) != SQLITE_NULL;
}

static int act_push(act_new **nw, size_t *nn, size_t *cap, act_new e) {
    if (*nn == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        act_new *p = realloc(*nw, c * sizeof *p);
        if (!p) return -1;
        *nw = p;
        *cap = c;
    }
    (*nw)[(*nn)++] = e;
    return 0;
}

/* One int64 (or -1: NULL, no row, or no such table) for a query on one device. */
static int64_t device_scalar(sqlite3 *db, const char *sql, const char *uuid) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Where a device's raw samples take over from its 1-minute rollups for a fold that
 * starts after cursor_ns: -1 when no raw row after the cursor was deleted (retention
 * deletes a prefix, so that is when the first raw row left is at or before the cursor,
 * or when the first rollup bucket starts at the first raw sample, or there are no
 * rollups): then the raw rows answer, as before rollups existed. Else the end of the
 * bucket holding the first raw sample left (INT64_MAX when none is left): that bucket
 * holds deleted and kept samples alike, so it is read whole from the rollup and the raw
 * rows after it. Two index lookups. */
static int64_t raw_boundary(sqlite3 *db, const char *uuid, int64_t cursor_ns) {
    int64_t raw0 = device_scalar(db, "SELECT min(ts_ns) FROM samples WHERE uuid = ?1", uuid);
    if (raw0 >= 0 && raw0 <= cursor_ns) return -1;
    int64_t roll0 = device_scalar(
        db, "SELECT first_ts_ns FROM rollup_1m WHERE uuid = ?1 ORDER BY t1_ns LIMIT 1", uuid);
    if (roll0 < 0 || (raw0 >= 0 && roll0 >= raw0)) return -1;
    if (raw0 < 0) return INT64_MAX;
    int64_t q = raw0 / GP_ROLLUP_1M_NS + (raw0 % GP_ROLLUP_1M_NS > 0);
    return q * GP_ROLLUP_1M_NS;
}

/* The energy counter at t in a rollup bucket whose last sample (at last_ts, counter e)
 * came after t: e less what the bucket's mean power gives from t (or its first sample,
 * first_ts, when t is before it: as the raw fold, nothing before a first sample) to its
 * last; e itself when the power is unknown. The rollup's precision, as its means stand
 * for the allocation's part of the bucket. */
static uint64_t counter_at(uint64_t e, int64_t t, int64_t first_ts, int64_t last_ts,
                           double power_w) {
    if (power_w < 0 || t >= last_ts) return e;
    if (t < first_ts) t = first_ts;
    double d_mj = power_w * (double)(last_ts - t) / 1e6; /* W x ns = 1e-9 J = 1e-6 mJ */
    return d_mj >= (double)e ? 0 : e - (uint64_t)(d_mj + 0.5);
}

/* Folds allocation k's 1-minute rollup rows of buckets that end after lo (>= the cursor)
 * and by the raw boundary rb, and start before b: each row is one interval from the cursor to
 * its end (clipped at b) with the bucket's mean gauges; the energy counter is the
 * bucket's last one, or where the allocation starts or the fold stops inside a bucket the
 * counter there (counter_at: the first hour of an allocation read from the 1-hour
 * rollups is its part of that hour's energy, not none, and its last is not the whole
 * hour's). Per-process SM shares are not rolled up, so on a GPU other jobs
 * hold too the job's activity before the raw window is the even split among the
 * holders at the bucket's end (gp_util_attributed with shares unknown), and so is its
 * energy there (e_roll, see acct_update). A bucket's means include samples of it that
 * lie outside the allocation: within a minute at each end, the rollup's precision. */
static int fold_rollups(gp_store *s, acct_alloc *x, int k, int64_t step, int64_t lo, int64_t b,
                        int64_t rb, int n_hold, act_new **nw, size_t *nn, size_t *cap,
                        uint64_t *rows) {
    const char *t = step == GP_ROLLUP_1H_NS ? "rollup_1h" : "rollup_1m";
    int64_t hi = b / step + (b % step > 0);
    hi *= step;
    if (rb < hi) hi = rb;
    if (lo < x->cursor) lo = x->cursor;
    if (hi <= lo) return 0;
    char sql[1024];
    char hold[320];
    snprintf(hold, sizeof hold,
             "(SELECT count(DISTINCT a.job_id) FROM allocations a WHERE"
             " a.uuid = %s.uuid AND a.from_ns < min(%s.t1_ns, ?4)"
             " AND (a.to_ns IS NULL OR a.to_ns >= min(%s.t1_ns, ?4)))",
             t, t, t);
    snprintf(sql, sizeof sql,
             "SELECT t1_ns, gpu_util_sum / gpu_util_n, sm_active_sum / sm_active_n,"
             " tensor_active_sum / tensor_active_n, dram_active_sum / dram_active_n,"
             " mem_used_bytes_sum / mem_used_bytes_n, mem_total_bytes, energy_mj, %s,"
             " power_w_sum / power_w_n, first_ts_ns, last_ts_ns"
             " FROM %s WHERE uuid = ?1 AND t1_ns > ?2 AND t1_ns <= ?3 ORDER BY t1_ns",
             n_hold > 1 ? hold : "1", t);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, x->al.uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, lo);
    sqlite3_bind_int64(st, 3, hi);
    if (n_hold > 1) sqlite3_bind_int64(st, 4, b);
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        int64_t t1 = sqlite3_column_int64(st, 0), te = t1 < b ? t1 : b;
        int64_t from = x->cursor;
        (*rows)++;
        double w = (double)(te - x->cursor);
        if (w <= 0) w = 1;
        x->cursor = x->roll_end = te;
        if (col_known(st, 1)) {
            double u = sqlite3_column_double(st, 1);
            wm_add(&x->util, u, w);
            double mine_u = gp_util_attributed(u, sqlite3_column_int(st, 8), 0, 0, 0);
            rc = act_push(nw, nn, cap, (act_new){te, (int64_t)w, mine_u, k});
        }
        if (col_known(st, 2)) wm_add(&x->sm, sqlite3_column_double(st, 2), w);
        if (col_known(st, 3)) wm_add(&x->tensor, sqlite3_column_double(st, 3), w);
        if (col_known(st, 4)) wm_add(&x->dram, sqlite3_column_double(st, 4), w);
        if (col_known(st, 5) && col_known(st, 6)) {
            double used = sqlite3_column_double(st, 5);
            double total = (double)(uint64_t)sqlite3_column_int64(st, 6);
            if (total > 0) wm_add(&x->memf, used / total, w);
        }
        if (col_known(st, 7)) {
            uint64_t e = (uint64_t)sqlite3_column_int64(st, 7);
            double p = col_known(st, 9) ? sqlite3_column_double(st, 9) : -1;
            int64_t ts0 = sqlite3_column_int64(st, 10), ts1 = sqlite3_column_int64(st, 11);
            if (!x->have_e) x->e_first = counter_at(e, from, ts0, ts1, p);
            x->e_last = x->e_roll = counter_at(e, te, ts0, ts1, p);
            x->have_e = x->have_e_roll = 1;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Folds the raw samples of allocation k in (cursor, b] into its sums; appends activity.
 * On a GPU other jobs hold too (n_hold > 1), the job's activity is its share of the
 * kernels (gp_util_attributed): the per-process SM shares and the number of jobs holding
 * the GPU at each sample come along. (Another job's allocation stored later with a start
 * in the past is not re-applied to samples already folded.) */
static int fold_raw(gp_store *s, acct_alloc *x, int k, int64_t b, int n_hold, const char *job_id,
                    act_new **nw, size_t *nn, size_t *cap, uint64_t *rows) {
    sqlite3_stmt *st;
    if (x->cursor >= b) return 0;
    /* Only the columns the summary reads (the row has 24). */
    if (sqlite3_prepare_v2(gp_store_db(s),
                           n_hold > 1
                               ? "SELECT ts_ns, gpu_util, sm_active, tensor_active, dram_active,"
                                 " mem_used_bytes, mem_total_bytes, energy_mj,"
                                 " (SELECT sum(CASE WHEN p.job_id = ?4 THEN p.sm_share ELSE 0 END)"
                                 "  FROM proc_samples p WHERE p.uuid = samples.uuid"
                                 "  AND p.ts_ns = samples.ts_ns AND p.sm_share IS NOT NULL),"
                                 " (SELECT sum(p.sm_share) FROM proc_samples p WHERE"
                                 "  p.uuid = samples.uuid AND p.ts_ns = samples.ts_ns"
                                 "  AND p.sm_share IS NOT NULL),"
                                 " (SELECT count(DISTINCT a.job_id) FROM allocations a WHERE"
                                 "  a.uuid = samples.uuid AND a.from_ns < samples.ts_ns AND"
                                 "  (a.to_ns IS NULL OR a.to_ns >= samples.ts_ns))"
                                 " FROM samples WHERE uuid = ?1 AND ts_ns > ?2 AND ts_ns <= ?3"
                                 " ORDER BY ts_ns"
                               : "SELECT ts_ns, gpu_util, sm_active, tensor_active, dram_active,"
                                 " mem_used_bytes, mem_total_bytes, energy_mj, ?4, NULL, 1"
                                 " FROM samples WHERE uuid = ?1 AND ts_ns > ?2 AND ts_ns <= ?3"
                                 " ORDER BY ts_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, x->al.uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, x->cursor);
    sqlite3_bind_int64(st, 3, b);
    sqlite3_bind_text(st, 4, job_id, -1, SQLITE_STATIC);
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t ts = sqlite3_column_int64(st, 0);
        (*rows)++;
        double w = (double)(ts - x->cursor);
        if (w <= 0) w = 1;
        x->cursor = ts;
        if (col_known(st, 1)) {
            double u = sqlite3_column_double(st, 1);
            wm_add(&x->util, u, w);
            double mine = sqlite3_column_double(st, 8), all = sqlite3_column_double(st, 9);
            /* Holders at this instant: a job alone on the GPU gets all of it. */
            int here = sqlite3_column_int(st, 10);
            double mine_u = gp_util_attributed(u, here, col_known(st, 9), mine, all);
            if (act_push(nw, nn, cap, (act_new){ts, (int64_t)w, mine_u, k}) != 0) {
                rc = -1;
                break;
            }
        }
        if (col_known(st, 2)) wm_add(&x->sm, sqlite3_column_double(st, 2), w);
        if (col_known(st, 3)) wm_add(&x->tensor, sqlite3_column_double(st, 3), w);
        if (col_known(st, 4)) wm_add(&x->dram, sqlite3_column_double(st, 4), w);
        if (col_known(st, 5) && col_known(st, 6)) {
            uint64_t used = (uint64_t)sqlite3_column_int64(st, 5);
            uint64_t total = (uint64_t)sqlite3_column_int64(st, 6);
            if (total > 0) wm_add(&x->memf, (double)used / (double)total, w);
        }
        if (col_known(st, 7)) {
            uint64_t e = (uint64_t)sqlite3_column_int64(st, 7);
            if (!x->have_e) x->e_first = e;
            x->e_last = e;
            x->have_e = 1;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* A long allocation alone on its GPU (fold_long, see the top of the file): the raw rows
 * of the minute after the cursor (the first minute: its first energy counter and time
 * weight are the raw ones; later, the rest of the minute a previous update's raw tail
 * began), then the 1-minute rollups of the whole minutes up to the last one that ends by
 * b, then the raw rows after it. The device's rollups must exist (the store writes them
 * with every sample, rollup.h); without any the raw rows answer. */
static int fold_long(gp_store *s, acct_alloc *x, int k, int64_t b, const char *job_id, act_new **nw,
                     size_t *nn, size_t *cap, uint64_t *rows) {
    const int64_t m = GP_ROLLUP_1M_NS;
    int64_t edge = (x->cursor >= 0 ? x->cursor / m : (x->cursor - m + 1) / m) * m + m;
    /* A fold that stopped on the end of a 1-minute rollup bucket it read, past the first
     * minute (a prefix's fold, capped at a whole minute: acct_prefix.h; or the rollups
     * before the raw window, where retention deleted the raw rows) goes on with the
     * rollups from there, as one fold of the whole history reads those minutes: the same
     * rows, the same sums, wherever the raw boundary or the cap lies. */
    if (x->cursor > x->a && x->cursor == x->roll_end && x->cursor % m == 0) edge = x->cursor;
    int64_t whole = (b >= 0 ? b / m : (b - m + 1) / m) * m;
    if (edge < whole &&
        device_scalar(gp_store_db(s), "SELECT 1 FROM rollup_1m WHERE uuid = ?1 LIMIT 1",
                      x->al.uuid) == 1) {
        if (fold_raw(s, x, k, edge, 1, job_id, nw, nn, cap, rows) != 0) return -1;
        /* Buckets ending in (edge, whole]: the one ending at edge was just read raw, even
         * when its last sample is missing and the cursor stopped short of it. */
        if (fold_rollups(s, x, k, m, edge, b, whole, 1, nw, nn, cap, rows) != 0) return -1;
    }
    return fold_raw(s, x, k, b, 1, job_id, nw, nn, cap, rows);
}

/* Folds the samples of allocation k in (cursor, b] into its sums; appends activity.
 * Before the device's raw window (retention deleted the rows there) the 1-minute
 * rollups stand in (fold_rollups), then the raw rows after them, or for a long
 * allocation alone on its GPU the rollups of its whole minutes (fold_long). */
static int fold_samples(gp_store *s, acct_alloc *x, int k, int64_t b, int rolled,
                        const char *job_id, act_new **nw, size_t *nn, size_t *cap, uint64_t *rows) {
    int n_hold = holders(s, x->al.uuid, x->a, b);
    /* Before the 1-minute rollups (their retention deleted the rows there), the 1-hour
     * ones: each row one interval of an hour, its means those of the hour's samples. */
    int64_t mb = gp_rollup_minutes_from(gp_store_db(s), x->al.uuid);
    if (mb > x->cursor &&
        fold_rollups(s, x, k, GP_ROLLUP_1H_NS, x->cursor, b, mb, n_hold, nw, nn, cap, rows) != 0)
        return -1;
    if (x->cursor >= b) return 0;
    int64_t rb = raw_boundary(gp_store_db(s), x->al.uuid, x->cursor);
    if (rb > x->cursor &&
        fold_rollups(s, x, k, GP_ROLLUP_1M_NS, x->cursor, b, rb, n_hold, nw, nn, cap, rows) != 0)
        return -1;
    if (x->cursor >= b) return 0;
    if (rolled) return fold_long(s, x, k, b, job_id, nw, nn, cap, rows);
    return fold_raw(s, x, k, b, n_hold, job_id, nw, nn, cap, rows);
}

/* One pass over the per-process rows of an allocation's device with ts < hi not yet
 * folded, for two sums with their own cursors:
 *  - the SM shares (rows after proc_cursor with a share): the job's and everyone's, for
 *    splitting energy; folded only once the device reports energy (have_e), as before;
 *  - the peak device memory the job's own processes held (the owner the agent stamped on
 *    each row), rows after mem_cursor.
 * The statement is prepared once per update (proc_rows_prepare) and rebound here. */
static const char proc_rows_sql[] =
    "SELECT sum(CASE WHEN ts_ns > ?3 AND job_id = ?2 THEN sm_share"
    "            WHEN ts_ns > ?3 AND sm_share IS NOT NULL THEN 0 END),"
    " sum(CASE WHEN ts_ns > ?3 THEN sm_share END),"
    " max(CASE WHEN ts_ns > ?3 AND sm_share IS NOT NULL THEN ts_ns END),"
    " max(CASE WHEN ts_ns > ?5 AND job_id = ?2 THEN mem_bytes END),"
    " max(CASE WHEN ts_ns > ?5 AND job_id = ?2 THEN ts_ns END)"
    " FROM proc_samples WHERE uuid = ?1 AND ts_ns > ?6 AND ts_ns < ?4";

static int fold_proc_rows(sqlite3_stmt *st, acct_alloc *x, const char *job_id, int64_t hi) {
    int shares = x->have_e;
    int64_t lo = shares && x->proc_cursor < x->mem_cursor ? x->proc_cursor : x->mem_cursor;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, x->al.uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, x->proc_cursor);
    sqlite3_bind_int64(st, 4, hi);
    sqlite3_bind_int64(st, 5, x->mem_cursor);
    sqlite3_bind_int64(st, 6, lo);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (shares && sqlite3_column_type(st, 1) != SQLITE_NULL) {
            x->share_mine += sqlite3_column_double(st, 0);
            x->share_all += sqlite3_column_double(st, 1);
            x->proc_cursor = sqlite3_column_int64(st, 2);
        }
        if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
            if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
                double m = sqlite3_column_double(st, 3);
                if (m > x->mem_max) x->mem_max = m;
            }
            x->mem_cursor = sqlite3_column_int64(st, 4);
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static int cmp_ev_pos(const cev *e, const cev *f) {
    if (e->ts != f->ts) return e->ts < f->ts ? -1 : 1;
    return (e->id > f->id) - (e->id < f->id);
}

static int32_t name_index(gp_job_acct *a, const unsigned char *nm) {
    if (!nm || !nm[0]) return -1;
    char buf[GP_NAME_MAX];
    snprintf(buf, sizeof buf, "%s", (const char *)nm);
    for (size_t i = 0; i < a->n_names; i++)
        if (strcmp(a->names[i], buf) == 0) return (int32_t)i;
    char(*p)[GP_NAME_MAX] = realloc(a->names, (a->n_names + 1) * sizeof *p);
    if (!p) return -2;
    a->names = p;
    memcpy(a->names[a->n_names], buf, sizeof buf);
    return (int32_t)a->n_names++;
}

/* The events of `from` as goodput.c reads them, in a's buffer (kept between updates,
 * grown as needed; NULL on OOM): the compact form (gp_acct_event, ~90 bytes), names
 * pointing into from->names. Expanding each refresh into freshly allocated 700-byte
 * gp_events was most of a refresh (writing and faulting in ~60 MB for a day-long job at
 * one step per second); the kept buffer costs ~8 MB per such day, as the events do. */
static gp_acct_event *expand_events(gp_job_acct *a, const gp_job_acct *from) {
    if (from->n_ev + 1 > a->cap_xev) {
        size_t c = a->cap_xev ? a->cap_xev : 256;
        while (c < from->n_ev + 1)
            c *= 2;
        gp_acct_event *p = realloc(a->xev, c * sizeof *p);
        if (!p) return NULL;
        a->xev = p;
        a->cap_xev = c;
    }
    gp_acct_event *v = a->xev;
    for (size_t i = 0; i < from->n_ev; i++) {
        const cev *c = &from->ev[i];
        v[i] = (gp_acct_event){.ts_ns = c->ts,
                               .rank = c->rank,
                               .name = c->name, /* into from->names */
                               .edge = gp_acct_edge(c->edge),
                               .kind = (int8_t)c->kind,
                               .ok = (int8_t)(c->ok != 0)};
        gp_acct_event_fill(&v[i], c->step, c->start, c->units, c->arrival, c->first_token,
                           c->output_tokens);
    }
    return v;
}

/* The columns fold_events and fold_events_direct read, in this order. */
#define EV_COLS                                                                                    \
    "SELECT id, ts_ns, kind, rank, step, units, start_ns, name, edge,"                             \
    " arrival_ns, first_token_ns, prompt_tokens, output_tokens, ok"                                \
    " FROM events WHERE "

/* A one-shot summary's events, read in (ts, id) order straight into goodput.c's form and
 * appended to a->xev: the next `limit` of them after (xcur_ts, xcur_id) (0: all), each
 * name as its index into a->names (which may move as names are added: the input takes
 * the table after the reading). Same rows and values as fold_events then expand_events.
 * The rows read, or -1. */
static int64_t fold_events_direct(gp_job_acct *a, gp_store *s, int64_t limit) {
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    const char *sql = EV_COLS "job_id = ?1 AND kind IN (1, 2, 3, 4, 5, 6)"
                              " AND ts_ns >= ?2 AND (ts_ns > ?2 OR id > ?3)"
                              " ORDER BY ts_ns, id LIMIT ?4";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, a->job_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, a->xcur_ts);
    sqlite3_bind_int64(st, 3, a->xcur_id);
    sqlite3_bind_int64(st, 4, limit > 0 ? limit : -1);
    size_t n = a->n_xev;
    int64_t got = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == a->cap_xev) {
            size_t c = a->cap_xev ? a->cap_xev * 2 : 256;
            gp_acct_event *p = realloc(a->xev, c * sizeof *p);
            if (!p) {
                got = -1;
                break;
            }
            a->xev = p;
            a->cap_xev = c;
        }
        int kind = sqlite3_column_int(st, 2);
        int64_t start = col_time(st, 6);
        int32_t name = name_index(a, sqlite3_column_text(st, 7));
        if (name < -1) {
            got = -1;
            break;
        }
        a->xev[n] = (gp_acct_event){
            .ts_ns = sqlite3_column_int64(st, 1),
            .rank = col_time(st, 3),
            .name = name, /* into a->names */
            .edge = gp_acct_edge(col_known(st, 8) ? sqlite3_column_int64(st, 8) : 0),
            .kind = (int8_t)kind,
            .ok = (int8_t)(sqlite3_column_int(st, 13) != 0)};
        gp_acct_event_fill(&a->xev[n], col_time(st, 4), start,
                           col_known(st, 5) ? sqlite3_column_double(st, 5) : -1, col_time(st, 9),
                           col_time(st, 10), col_time(st, 12));
        a->xcur_ts = a->xev[n].ts_ns;
        a->xcur_id = sqlite3_column_int64(st, 0);
        n++;
        got++;
        a->stats.event_rows++;
    }
    sqlite3_finalize(st);
    a->n_xev = n;
    return got;
}

/* Reads the job's events with id in (ev_cursor, max id] (all of them on the first call)
 * and merges them into the (ts, id)-ordered array. */
static int fold_events_part(gp_job_acct *a, gp_store *s, int64_t limit, int64_t *got);
static int fold_events(gp_job_acct *a, gp_store *s) {
    int64_t got;
    return fold_events_part(a, s, 0, &got);
}

/* fold_events, where the first load may come in parts: the next `limit` events (0: all) in
 * (ts, id) order after (xcur_ts, xcur_id) among those with id <= the top seen by the first
 * part; ev_loaded once the last part is read. *got: the rows read. */
static int fold_events_part(gp_job_acct *a, gp_store *s, int64_t limit, int64_t *got) {
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    int64_t top = 0;
    *got = 0;
    if (!a->ev_loaded && a->xcur_ts > INT64_MIN) {
        top = a->slice_top; /* a later part of the first load */
    } else {
        if (sqlite3_prepare_v2(db, "SELECT max(id) FROM events", -1, &st, NULL) != SQLITE_OK)
            return -1;
        if (sqlite3_step(st) == SQLITE_ROW) top = col_time(st, 0);
        sqlite3_finalize(st);
        a->slice_top = top;
    }
    if (a->ev_loaded && top <= a->ev_cursor) return 0;
    /* First load: the (job_id, ts_ns) index. Later: the rowid range of new rows, whatever
     * job they belong to (+job_id keeps the planner off the index). */
    const char *cols = EV_COLS;
    const char *cond_all = "job_id = ?1 AND id <= ?3 AND kind IN (1, 2, 3, 4, 5, 6)"
                           " AND ts_ns >= ?4 AND (ts_ns > ?4 OR id > ?5)"
                           " ORDER BY ts_ns, id LIMIT ?6";
    const char *cond_new = "id > ?2 AND id <= ?3 AND +job_id = ?1 AND kind IN (1, 2, 3, 4, 5, 6)"
                           " ORDER BY ts_ns, id";
    char sql[512];
    snprintf(sql, sizeof sql, "%s%s", cols, a->ev_loaded ? cond_new : cond_all);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, a->job_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, a->ev_cursor);
    sqlite3_bind_int64(st, 3, top);
    if (!a->ev_loaded) {
        sqlite3_bind_int64(st, 4, a->xcur_ts);
        sqlite3_bind_int64(st, 5, a->xcur_id);
        sqlite3_bind_int64(st, 6, limit > 0 ? limit : -1);
    }
    size_t first_new = a->n_ev;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (a->n_ev == a->cap_ev) {
            size_t c = a->cap_ev ? a->cap_ev * 2 : 256;
            cev *p = realloc(a->ev, c * sizeof *p);
            if (!p) {
                rc = -1;
                break;
            }
            a->ev = p;
            a->cap_ev = c;
        }
        cev *e = &a->ev[a->n_ev];
        e->id = sqlite3_column_int64(st, 0);
        e->ts = sqlite3_column_int64(st, 1);
        e->kind = sqlite3_column_int(st, 2);
        e->rank = col_time(st, 3);
        e->step = col_time(st, 4);
        e->units = col_known(st, 5) ? sqlite3_column_double(st, 5) : -1;
        e->start = col_time(st, 6);
        e->name = name_index(a, sqlite3_column_text(st, 7));
        if (e->name < -1) {
            rc = -1;
            break;
        }
        e->edge = col_known(st, 8) ? sqlite3_column_int(st, 8) : 0;
        e->arrival = col_time(st, 9);
        e->first_token = col_time(st, 10);
        e->prompt_tokens = col_time(st, 11);
        e->output_tokens = col_time(st, 12);
        e->ok = sqlite3_column_int(st, 13);
        a->n_ev++;
        a->stats.event_rows++;
        (*got)++;
    }
    sqlite3_finalize(st);
    if (rc) return rc;
    if (!a->ev_loaded && limit > 0 && *got == limit) { /* more parts to come */
        a->xcur_ts = a->ev[a->n_ev - 1].ts;
        a->xcur_id = a->ev[a->n_ev - 1].id;
        return 0;
    }
    a->xcur_ts = INT64_MIN, a->xcur_id = 0;
    a->ev_cursor = top;
    a->ev_loaded = 1;
    /* New rows arrive sorted among themselves; usually all after the old ones. */
    size_t nn = a->n_ev - first_new;
    if (nn && first_new > 0 && cmp_ev_pos(&a->ev[first_new - 1], &a->ev[first_new]) > 0) {
        /* A late event: merge the old tail that follows it with the new rows. */
        size_t p = first_new;
        while (p > 0 && cmp_ev_pos(&a->ev[p - 1], &a->ev[first_new]) > 0)
            p--;
        size_t tail = first_new - p, tot = tail + nn;
        cev *te = malloc(tot * sizeof *te);
        if (!te) return -1;
        size_t i = p, j = first_new, m = 0;
        while (i < first_new || j < a->n_ev) {
            int take_old = j >= a->n_ev || (i < first_new && cmp_ev_pos(&a->ev[i], &a->ev[j]) < 0);
            te[m++] = a->ev[take_old ? i++ : j++];
        }
        memcpy(a->ev + p, te, tot * sizeof *te);
        free(te);
    }
    return 0;
}

/* Whether the job's allocations read the rollups of their whole minutes (fold_long): one
 * of them is folded over at least opt_rollup_min and none shares its GPU with another
 * job. All or none: the merged activity timeline takes entries of one resolution (an
 * instant's entries are merged, but a minute's entry would overlap another GPU's 1 s
 * entries, and the overlap would count twice). */
static int job_is_long(const gp_job_acct *a, gp_store *s, const gp_alloc *al, size_t na, int64_t t0,
                       int64_t t1) {
    if (a->opt_rollup_min <= 0) return 0;
    int is_long = 0;
    for (size_t i = 0; i < na; i++) {
        int64_t lo = al[i].from_ns > t0 ? al[i].from_ns : t0;
        int64_t b = al[i].to_ns < 0 || al[i].to_ns > t1 ? t1 : al[i].to_ns;
        if (b <= lo) continue;
        if (holders(s, al[i].uuid, lo, b) > 1) return 0;
        if (b - lo >= a->opt_rollup_min) is_long = 1;
    }
    return is_long;
}

/* Is the folded past still what the store says? Allocations may gain an end or be
 * appended; anything else means a reload. */
static int allocs_compatible(const gp_job_acct *a, const gp_alloc *al, size_t na, int64_t t1) {
    if (na < a->n_al) return 0;
    for (size_t i = 0; i < a->n_al; i++) {
        const acct_alloc *x = &a->al[i];
        if (strcmp(x->al.uuid, al[i].uuid) || x->al.from_ns != al[i].from_ns) return 0;
        int64_t b = al[i].to_ns < 0 || al[i].to_ns > t1 ? t1 : al[i].to_ns;
        if (x->cursor > b || x->proc_cursor > b) return 0;
    }
    return 1;
}

/* A fingerprint of the other jobs' allocations on this job's GPUs: how many GPUs each
 * sample is shared with depends on them, so when they change (a neighbour's allocation
 * ends or appears after the fact) the folded activity is stale. */
static void neighbour_sig(gp_store *s, const char *job_id, double sig[3]) {
    sqlite3_stmt *st;
    sig[0] = sig[1] = sig[2] = 0;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT count(*), total(from_ns), total(COALESCE(to_ns, -1))"
                           " FROM allocations WHERE job_id != ?1 AND uuid IN"
                           " (SELECT uuid FROM allocations WHERE job_id = ?1)",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < 3; i++)
            sig[i] = sqlite3_column_double(st, i);
    sqlite3_finalize(st);
}

static void set_err(char *err, size_t errlen, gp_store *s, const char *job_id, const char *what) {
    snprintf(err, errlen, "store: %s while %s job '%s'", gp_store_errmsg(s), what, job_id);
}

static int64_t freeze_by(const gp_job_acct *a, const gp_alloc *al, size_t na, int64_t t1);
static void freeze(gp_job_acct *a, gp_goodput_ckpt *nck);
static gp_acct_event *expand_events(gp_job_acct *a, const gp_job_acct *from);

/* A one-shot summary, or a running state's first update, in slices: the events read a
 * slice at a time in time order, each slice labelled after the frozen past and frozen
 * slice_lag behind its newest event (for a running state, also no later than freeze_by),
 * as a running job's refreshes would be; the activity is all folded already. The last
 * slice's result is the summary (a running state freezes there by freeze_by, as an update
 * all at once would). gp_goodput_compute_ckpt's return (1: a slice reached into the frozen
 * past; the caller computes again all at once). */
static int compute_sliced(gp_job_acct *a, gp_store *s, gp_goodput_in *in, const gp_alloc *al,
                          size_t na, int64_t t1, gp_goodput *out) {
    int64_t limit = a->slice_events; /* this slice's events */
    for (;;) {
        int64_t got;
        if (a->oneshot) {
            got = fold_events_direct(a, s, limit);
            if (got < 0) return -1;
            in->acct_events = a->xev;
            in->n_events = a->n_xev;
        } else {
            if (fold_events_part(a, s, limit, &got) != 0) return -1;
            if (!(in->acct_events = expand_events(a, a))) return -1;
            in->n_events = a->n_ev;
        }
        in->names = (const char(*)[GP_NAME_MAX])a->names; /* may have moved */
        int last = got < limit;
        a->stats.slices++;
        int64_t newest = in->n_events ? in->acct_events[in->n_events - 1].ts_ns : INT64_MIN;
        int64_t by = a->oneshot ? INT64_MIN : freeze_by(a, al, na, t1);
        if (!last) {
            int64_t cap = newest > INT64_MIN ? newest - a->slice_lag : INT64_MIN;
            if (a->oneshot || cap < by) by = cap;
        }
        in->act = a->act;
        in->n_act = a->n_act;
        gp_goodput_ckpt nck;
        int grc = gp_goodput_compute_ckpt(in, a->ck.valid ? &a->ck : NULL, by, a->freeze_steps,
                                          by > INT64_MIN ? &nck : NULL, out);
        if (grc != 0) return grc;
        if (by > INT64_MIN && nck.valid) {
            freeze(a, &nck);
            limit = a->slice_events;
        } else if (limit < INT64_MAX / 2) {
            /* Nothing frozen: the events so far are all still held and the next slice
             * labels them again. Reading as many again as are held keeps that to about
             * twice a whole computation for a job with no cut (a phase open across
             * every step's start, goodput.c "Checkpoints"), instead of once a slice. */
            limit *= 2;
        }
        if (last) return 0;
    }
}

/* The update proper (inside a read transaction when the caller has none open). */
static int acct_update(gp_job_acct *a, gp_store *s, gp_job_summary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int found = gp_store_get_job(s, a->job_id, &out->job);
    if (found < 0) {
        snprintf(err, errlen, "store: %s", gp_store_errmsg(s));
        return -1;
    }
    if (found == 0) {
        snprintf(err, errlen, "job '%s' is not in the store", a->job_id);
        return -1;
    }
    /* Retention deleted its events: what is left would give a wrong number, not a
     * smaller one. Only its stored result is known (engine/results/job_results.h). */
    if (gp_store_events_pruned_err(s, a->job_id, err, errlen) != 0) return -1;
    int64_t t0 = a->opt_t0, t1 = a->opt_t1;
    if (t0 <= 0 && t1 <= 0) {
        int64_t x, y;
        gp_store_time_span(s, &x, &y);
        t0 = x;
        t1 = y;
    }
    gp_alloc *allocs = NULL;
    size_t na = 0;
    if (gp_store_job_allocs(s, a->job_id, &allocs, &na)) {
        set_err(err, errlen, s, a->job_id, "reading allocations of");
        free(allocs);
        return -1;
    }
    double sig[3];
    neighbour_sig(s, a->job_id, sig);
    int neighbours_moved = a->started && memcmp(sig, a->nb_sig, sizeof sig) != 0;
    memcpy(a->nb_sig, sig, sizeof sig);
    /* A job that grew long reads rollups from its start: a fresh fold then gives what
     * gp_job_summary_compute gives. */
    int rolled = job_is_long(a, s, allocs, na, t0, t1);
    if (a->started && (neighbours_moved || t0 != a->t0 || t1 < a->t1 || rolled != a->rolled ||
                       !allocs_compatible(a, allocs, na, t1))) {
        const gp_job_acct *keep = a->borrow;
        acct_reset(a);
        a->borrow = keep;
    }
    if (na > a->n_al) {
        acct_alloc *p = realloc(a->al, na * sizeof *p);
        if (!p) {
            free(allocs);
            snprintf(err, errlen, "out of memory summarising job '%s'", a->job_id);
            return -1;
        }
        a->al = p;
        for (size_t i = a->n_al; i < na; i++) {
            memset(&a->al[i], 0, sizeof a->al[i]);
            int64_t lo = allocs[i].from_ns > t0 ? allocs[i].from_ns : t0;
            a->al[i].a = a->al[i].cursor = a->al[i].roll_end = lo;
            a->al[i].proc_cursor = a->al[i].mem_cursor = lo - 1;
            a->al[i].mem_max = -1;
        }
        a->n_al = na;
    }
    a->rolled = rolled;
    a->started = 1;
    a->t0 = t0;
    a->t1 = t1;

    const gp_job *j = &out->job;
    out->queue_wait_s = (j->submitted_ns >= 0 && j->allocated_ns >= 0)
                            ? (j->allocated_ns - j->submitted_ns) / 1e9
                            : -1;
    act_new *nw = NULL;
    size_t nn = 0, cap_nw = 0;
    int rc = 0;
    out->n_gpus = 0;
    sqlite3_stmt *proc_st = NULL; /* prepared on the first allocation that needs it */
    for (size_t i = 0; i < na && rc == 0; i++) {
        acct_alloc *x = &a->al[i];
        x->al = allocs[i];
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            dup |= !strcmp(allocs[k].uuid, allocs[i].uuid);
        if (!dup) out->n_gpus++;
        int64_t b = allocs[i].to_ns < 0 || allocs[i].to_ns > t1 ? t1 : allocs[i].to_ns;
        if (b <= x->a) continue;
        if (b > a->fold_cap) b = a->fold_cap > x->cursor ? a->fold_cap : x->cursor;
        rc = fold_samples(s, x, (int)i, b, a->rolled, a->job_id, &nw, &nn, &cap_nw,
                          &a->stats.sample_rows);
        if (rc == 0 && !proc_st &&
            sqlite3_prepare_v2(gp_store_db(s), proc_rows_sql, -1, &proc_st, NULL) != SQLITE_OK)
            rc = -1;
        if (rc == 0) rc = fold_proc_rows(proc_st, x, a->job_id, b + 1);
    }
    sqlite3_finalize(proc_st);
    if (rc == 0) rc = act_merge(a, nw, nn);
    free(nw);
    const gp_job_acct *evs = a->borrow ? a->borrow : a;
    int sliced =
        a->slice_events > 0 && !a->borrow && (a->oneshot || (a->freeze_lag >= 0 && !a->ev_loaded));
    if (rc == 0 && !a->borrow && !sliced) {
        if (!a->oneshot)
            rc = fold_events(a, s);
        else if (fold_events_direct(a, s, 0) < 0)
            rc = -1;
    }
    if (rc) {
        set_err(err, errlen, s, a->job_id, "summarising");
        free(allocs);
        acct_reset(a); /* half-folded: start over next time */
        return -1;
    }

    /* Signal means and energy, allocation by allocation. */
    wmean util = {0}, sm = {0}, tensor = {0}, dram = {0}, memf = {0};
    double energy_mj = 0;
    int energy_known = 0, energy_missing = 0;
    out->proc_mem_max_bytes = -1;
    for (size_t i = 0; i < na; i++) {
        acct_alloc *x = &a->al[i];
        int64_t b = allocs[i].to_ns < 0 || allocs[i].to_ns > t1 ? t1 : allocs[i].to_ns;
        if (b <= x->a) continue;
        util.sum += x->util.sum, util.w += x->util.w;
        sm.sum += x->sm.sum, sm.w += x->sm.w;
        tensor.sum += x->tensor.sum, tensor.w += x->tensor.w;
        dram.sum += x->dram.sum, dram.w += x->dram.w;
        memf.sum += x->memf.sum, memf.w += x->memf.w;
        if (x->mem_max > out->proc_mem_max_bytes) out->proc_mem_max_bytes = x->mem_max;
        if (x->have_e && x->e_last >= x->e_first) {
            double share = x->share_all > 0 ? x->share_mine / x->share_all : -1;
            if (share < 0) share = 1.0 / holders(s, x->al.uuid, x->a, b);
            if (x->have_e_roll && x->e_roll >= x->e_first && x->e_last >= x->e_roll) {
                /* Before the raw window no SM shares are stored: the even split there. */
                double even = 1.0 / holders(s, x->al.uuid, x->a, x->roll_end);
                energy_mj += (double)(x->e_roll - x->e_first) * even +
                             (double)(x->e_last - x->e_roll) * share;
            } else {
                energy_mj += (double)(x->e_last - x->e_first) * share;
            }
            energy_known = 1;
        } else {
            energy_missing = 1;
        }
    }

    gp_acct_event *ev = a->oneshot || sliced ? a->xev : expand_events(a, evs);
    size_t n_ev = a->oneshot ? a->n_xev : sliced ? 0 : evs->n_ev;
    if (!ev && n_ev) {
        snprintf(err, errlen, "out of memory summarising job '%s'", a->job_id);
        free(allocs);
        return -1;
    }
    /* A shared GPU's time is split between its holders; the job's own overlapping rows
     * count once (engine/accounting/alloc_split.h). Signals and energy above stay per row: they are
     * already the job's attributed share of the device. */
    gp_alloc *nb = NULL, *pieces = NULL;
    size_t n_nb = 0, n_pieces = 0;
    if (gp_store_neighbour_allocs(s, a->job_id, &nb, &n_nb) != 0 ||
        gp_alloc_split(allocs, na, nb, n_nb, &pieces, &n_pieces) != 0) {
        free(nb);
        free(allocs);
        set_err(err, errlen, s, a->job_id, "splitting the shared GPUs of");
        return -1;
    }
    free(nb);
    gp_goodput_in in = {
        .allocs = pieces,
        .n_allocs = n_pieces,
        .acct_events = ev,
        .names = (const char(*)[GP_NAME_MAX])(a->oneshot || sliced ? a->names : evs->names),
        .n_events = n_ev,
        .act = a->act,
        .n_act = a->n_act,
        .t0_ns = t0,
        .t1_ns = t1};
    /* SLOs: the caller's (report flags) where set, else what the job declared. */
    in.slo = (gp_slo){j->slo_ttft_s, j->slo_tpot_s, j->slo_e2e_s};
    if (a->opt_slo.ttft_s > 0) in.slo.ttft_s = a->opt_slo.ttft_s;
    if (a->opt_slo.tpot_s > 0) in.slo.tpot_s = a->opt_slo.tpot_s;
    if (a->opt_slo.e2e_s > 0) in.slo.e2e_s = a->opt_slo.e2e_s;
    int64_t by = freeze_by(a, allocs, na, t1);
    gp_goodput_ckpt nck;
    int grc = sliced
                  ? compute_sliced(a, s, &in, allocs, na, t1, &out->gp)
                  : gp_goodput_compute_ckpt(&in, a->ck.valid ? &a->ck : NULL, by, a->freeze_steps,
                                            by > INT64_MIN ? &nck : NULL, &out->gp);
    free(pieces);
    if (grc == 1) { /* the frozen past went stale: everything again from the store */
        a->stats.stale_freezes++;
        /* A job whose past keeps going stale (events stored late, restarts reaching far
         * back) freezes further behind: each time is a reload from the store. */
        if (a->freeze_lag < 3600 * 1000000000LL) a->freeze_lag *= 2;
        a->slice_events = 0; /* slices went stale too: all at once */
        free(allocs);
        const gp_job_acct *keep = a->borrow;
        acct_reset(a);
        a->borrow = keep;
        return acct_update(a, s, out, err, errlen); /* no checkpoint now: no second pass */
    }
    if (grc == 0 && !sliced && by > INT64_MIN && nck.valid) freeze(a, &nck);
    if (grc != 0) {
        snprintf(err, errlen, "out of memory computing goodput for job '%s'", a->job_id);
        free(allocs);
        return -1;
    }
    out->allocated_gpu_h = out->gp.allocated_gpu_s / 3600.0;
    out->busy_gpu_h = out->gp.busy_gpu_s >= 0 ? out->gp.busy_gpu_s / 3600.0 : -1;
    int64_t ready = out->gp.ready_ns >= 0 ? out->gp.ready_ns : j->ready_ns;
    int64_t alloc_at = j->allocated_ns >= 0 ? j->allocated_ns : out->gp.first_alloc_ns;
    out->time_to_ready_s = (ready >= 0 && alloc_at >= 0) ? (ready - alloc_at) / 1e9 : -1;
    out->mean_gpu_util = wm_get(&util);
    out->mean_sm_active = wm_get(&sm);
    out->mean_tensor_active = wm_get(&tensor);
    out->mean_dram_active = wm_get(&dram);
    out->mean_mem_used_frac = wm_get(&memf);
    out->energy_kwh = (energy_known && !energy_missing) ? energy_mj / 3.6e9 : -1;
    out->span_s = (t1 - t0) / 1e9;
    free(allocs);
    return 0;
}

/* Where a new checkpoint's step must have ended by (INT64_MIN: freeze nothing): freeze_lag
 * behind the job's newest data (and the window's end), and where every allocation's kernel activity
 * is final: a new sample of allocation i lies after its cursor and covers back to it, so entries
 * before the least cursor of the allocations still open cannot change, and neither can the entries
 * after it that do not reach back before the limit. An allocation that ended before the limit does
 * not hold it back (its device's later samples are past its end; samples of a device arrive in time
 * order). */
static int64_t freeze_by(const gp_job_acct *a, const gp_alloc *al, size_t na, int64_t t1) {
    if (a->freeze_lag < 0 || a->borrow) return INT64_MIN;
    /* Behind the job's newest data, not only the window's end: the store's span can end
     * later (another job's allocation that starts ahead), and a request in flight is
     * stored only when it ends, so the lag must trail what this job has reported. */
    int64_t newest = a->n_act ? a->act[a->n_act - 1].ts_ns : INT64_MIN;
    if (a->n_ev && a->ev[a->n_ev - 1].ts > newest) newest = a->ev[a->n_ev - 1].ts;
    if (newest == INT64_MIN || newest > t1) newest = t1;
    int64_t lim = newest - a->freeze_lag, minc = INT64_MAX;
    for (size_t i = 0; i < na && i < a->n_al; i++) {
        int64_t b = al[i].to_ns < 0 || al[i].to_ns > t1 ? t1 : al[i].to_ns;
        if (b <= a->al[i].a || b <= lim) continue;
        if (a->al[i].cursor < minc) minc = a->al[i].cursor;
    }
    if (minc < lim) lim = minc;
    for (size_t k = a->n_act; k-- > 0 && a->act[k].ts_ns > lim;)
        if (a->act[k].ts_ns - a->act[k].dur_ns < lim) lim = a->act[k].ts_ns - a->act[k].dur_ns;
    return lim;
}

/* Shrinks an array's capacity to fit n (plus room) when it holds far less. */
static void *shrink(void *p, size_t *cap, size_t n, size_t size) {
    if (*cap <= 2 * n + 1024) return p;
    size_t c = n + n / 2 + 256;
    void *q = realloc(p, c * size);
    if (!q) return p;
    *cap = c;
    return q;
}

/* Keeps a new checkpoint: the events it folded and the activity before its instant are
 * no longer needed (later updates label only the time after it). */
static void freeze(gp_job_acct *a, gp_goodput_ckpt *nck) {
    gp_goodput_ckpt_free(&a->ck);
    a->ck = *nck;
    a->stats.freezes++;
    if (a->oneshot) { /* a slice: the events read so far are in xev */
        size_t d = 0;
        while (d < a->n_xev && a->xev[d].ts_ns <= a->ck.ev_cut_ns)
            d++;
        if (d) {
            memmove(a->xev, a->xev + d, (a->n_xev - d) * sizeof *a->xev);
        }
        a->n_xev -= d;
    }
    size_t d = 0;
    while (d < a->n_ev && a->ev[d].ts <= a->ck.ev_cut_ns)
        d++;
    if (d) memmove(a->ev, a->ev + d, (a->n_ev - d) * sizeof *a->ev);
    a->n_ev -= d;
    a->ev = shrink(a->ev, &a->cap_ev, a->n_ev, sizeof *a->ev);
    size_t q = 0;
    while (q < a->n_act && a->act[q].ts_ns <= a->ck.t_ns)
        q++;
    size_t left = a->n_act - q;
    if (q) {
        memmove(a->act, a->act + q, left * sizeof *a->act);
        memmove(a->act_sum, a->act_sum + q, left * sizeof *a->act_sum);
        memmove(a->act_n, a->act_n + q, left * sizeof *a->act_n);
        memmove(a->act_owner, a->act_owner + q, left * sizeof *a->act_owner);
    }
    a->n_act = left;
    if (a->cap_act > 2 * left + 1024) /* four arrays of one capacity */
        act_set_cap(a, left + left / 2 + 256);
    if (!a->oneshot && a->cap_xev > 2 * a->n_ev + 1024) { /* rebuilt at the next update */
        free(a->xev);
        a->xev = NULL;
        a->cap_xev = 0;
    }
}

/* One snapshot for all the reads of an update, so rows committed meanwhile are seen by
 * all of them or by none. Inside the caller's transaction, that one is the snapshot. */
static int read_begin(sqlite3 *db) {
    return sqlite3_get_autocommit(db) && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
}
static void read_end(sqlite3 *db, int own_tx) {
    /* A read transaction left open would pin this snapshot for ever: end it either way. */
    if (own_tx && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int gp_job_acct_update(gp_job_acct *a, gp_store *s, gp_job_summary *out, char *err, size_t errlen) {
    sqlite3 *db = gp_store_db(s);
    int own_tx = read_begin(db);
    int rc = acct_update(a, s, out, err, errlen);
    read_end(db, own_tx);
    return rc;
}

int gp_job_acct_frozen(const gp_job_acct *a) {
    return a->ck.valid;
}

gp_job_acct_stats gp_job_acct_get_stats(const gp_job_acct *a) {
    gp_job_acct_stats st = a->stats;
    st.held_events = a->n_ev;
    st.held_bytes = sizeof *a + a->cap_ev * sizeof *a->ev + a->cap_xev * sizeof *a->xev +
                    a->cap_act * (sizeof *a->act + sizeof *a->act_sum + 2 * sizeof(int)) +
                    a->n_names * sizeof *a->names + a->n_al * sizeof *a->al +
                    a->ck.n_durs * sizeof *a->ck.durs + a->ck.n_gaps * sizeof *a->ck.gaps +
                    a->ck.n_allocs * 3 * sizeof *a->ck.allocs;
    return st;
}

int gp_job_acct_window(gp_job_acct *a, gp_store *s, int64_t t0_ns, int64_t t1_ns,
                       gp_job_summary *out, char *err, size_t errlen) {
    sqlite3 *db = gp_store_db(s);
    int own_tx = read_begin(db);
    int rc = 0;
    /* A state that froze its past no longer holds the events before it: the window reads
     * its own. */
    int lend = !a->ck.valid;
    if (lend && fold_events(a, s) != 0) {
        set_err(err, errlen, s, a->job_id, "reading events of");
        rc = -1;
    }
    if (rc == 0) {
        gp_summary_opts o = {
            .t0_ns = t0_ns, .t1_ns = t1_ns, .slo = a->opt_slo, .rollup_min_ns = a->opt_rollup_min};
        gp_job_acct *w = gp_job_acct_new(a->job_id, &o);
        if (!w) {
            snprintf(err, errlen, "out of memory summarising job '%s'", a->job_id);
            rc = -1;
        } else {
            w->borrow = lend ? a : NULL;
            rc = acct_update(w, s, out, err, errlen);
            gp_job_acct_free(w);
        }
    }
    read_end(db, own_tx);
    return rc;
}

/* The options a running job's saved prefix was folded with (acct_prefix.h): all default. */
static int default_opts(const gp_summary_opts *o) {
    return !o || (o->t0_ns == 0 && o->t1_ns == 0 && o->slo.ttft_s == 0 && o->slo.tpot_s == 0 &&
                  o->slo.e2e_s == 0 && o->rollup_min_ns == 0 && o->freeze_lag_ns == 0 &&
                  o->freeze_steps == 0 && o->slice_events == 0);
}

int gp_job_summary_compute(gp_store *s, const char *job_id, const gp_summary_opts *o,
                           gp_job_summary *out, char *err, size_t errlen) {
    /* A running job the agent saved a prefix of: only the rows after it are folded, and the
     * result is the whole history's (acct_prefix.h). In one read transaction with the
     * rows, so the prefix and the rows after it are one snapshot. */
    if (default_opts(o)) {
        sqlite3 *db = gp_store_db(s);
        int own_tx = read_begin(db);
        gp_job_acct *p = gp_acct_prefix_load(s, job_id);
        int rc = -1;
        if (p) {
            p->freeze_lag = -1; /* a reader freezes nothing */
            rc = acct_update(p, s, out, err, errlen);
            gp_job_acct_free(p);
        }
        read_end(db, own_tx);
        if (rc == 0) return 0;
    }
    gp_job_acct *a = gp_job_acct_new(job_id, o);
    if (!a) {
        memset(out, 0, sizeof *out);
        snprintf(err, errlen, "out of memory summarising job '%s'", job_id);
        return -1;
    }
    a->freeze_lag = -1; /* one update: nothing to freeze for */
    a->oneshot = 1;
    /* A whole history read in slices of GP_SUMMARY_ONESHOT_SLICE_EVENTS unless the caller
     * chose (a fixed window has none: slice_events 0) */
    if (a->slice_events > 0 && !(o && o->slice_events))
        a->slice_events = GP_SUMMARY_ONESHOT_SLICE_EVENTS;
    int rc = gp_job_acct_update(a, s, out, err, errlen);
    gp_job_acct_free(a);
    return rc;
}
