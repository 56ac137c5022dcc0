/* diagnose.c: the store-backed side of the classifier: load a job's arrays, compute its
 * features, classify, write the findings back (classify.h). Cross-job findings
 * (scale_inefficient across runs of one job name, scheduling_gap while jobs queue) are
 * added by gp_diagnose_all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/heap_trim.h"

#include "engine/diagnosis/classify.h"
#include "engine/accounting/cost.h"
#include "engine/diagnosis/ev_prefix.h"
#include "engine/diagnosis/finding_budget.h"
#include "engine/accounting/job_summary.h"
#include "engine/pipeline/pipeline.h"
#include "engine/diagnosis/scaling.h"
#include "engine/diagnosis/thresholds.h"
#include "store/read_pool.h"
#include "store/rollup.h"
#include "store/store.h"

#include <sqlite3.h>

static int load_deferred(void *ctx);
static void deferred_free(void *ctx);

void gp_job_input_free(gp_job_input *in) {
    if (in->load_series == load_deferred) deferred_free(in->load_ctx);
    free((void *)in->allocs);
    free((void *)in->devices);
    free((void *)in->samples);
    for (size_t i = 0; i < in->n_series; i++)
        free(in->series[i].v);
    free((void *)in->series);
    free((void *)in->procs);
    free((void *)in->events);
    free((void *)in->steps);
    free((void *)in->marks);
    free((void *)in->job_id);
    memset(in, 0, sizeof *in);
}

static int append(void **dst, size_t *n, const void *src, size_t m, size_t sz) {
    if (!m) return 0;
    void *p = realloc(*dst, (*n + m) * sz);
    if (!p) return -1;
    memcpy((char *)p + *n * sz, src, m * sz);
    *dst = p;
    *n += m;
    return 0;
}

/* The job's events as one read: steps, requests and phases as compact records
 * (gp_step_ev, gp_mark_ev), the rest as gp_events, each list in the store's order (time,
 * then id): gp_ev_lists (ev_prefix.h). A gp_event is ~700 bytes: held whole, an inference
 * job's requests were most of `goodput report`'s peak RSS (docs/benchmarks.md, "Start-up
 * and libraries"). */
typedef gp_ev_lists ev_split;
#define split_one gp_ev_lists_add

/* Last raw sample of a device in [lo, hi); -1 when none is kept. rows (NULL: not asked):
 * how many raw samples there are in [lo, hi), in the same query (a deferred series' room,
 * features.h series_fill), else 0. */
static int64_t last_raw_ns(gp_store *s, const char *uuid, int64_t lo, int64_t hi, int64_t *rows) {
    sqlite3_stmt *st;
    int64_t t = -1;
    if (rows) *rows = 0;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           rows ? "SELECT max(ts_ns), count(*) FROM samples WHERE uuid = ?1"
                                  " AND ts_ns >= ?2 AND ts_ns < ?3"
                                : "SELECT max(ts_ns) FROM samples WHERE uuid = ?1 AND ts_ns >= ?2"
                                  " AND ts_ns < ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, lo);
    sqlite3_bind_int64(st, 3, hi);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        t = sqlite3_column_int64(st, 0);
        if (rows) *rows = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return t;
}

/* The rollup rows of one device for the job's span [lo, hi) of it, when that span is
 * GP_SUMMARY_ROLLUP_MIN_NS or more (the accounting's rule for long jobs, job_summary.h):
 * ~60x fewer rows than the raw ones, each the means of its minute, covering
 * (end - 1 min, end]. The features built from them keep means and time shares exact up
 * to the minute at each end; quantiles of a gauge (gp_stat p10/p50/p90, which no rule
 * reads) are quantiles of minute means, and an idle gap shorter than a minute inside a
 * busy minute is not seen (docs/benchmarks.md). GOODPUT_DIAG_RAW=1 in the environment
 * forces raw rows (to compare both paths). Returns 1 with *out filled (*step_ns set), 0
 * when the raw rows are the ones to read (nothing read), -1 on error. */
static int load_device_rollups(gp_store *s, const char *uuid, int64_t lo, int64_t hi, int raw,
                               gp_sample **out, size_t *n, int64_t *step_ns, int64_t *last_out,
                               int64_t *rows_out) {
    const char *env = getenv("GOODPUT_DIAG_RAW");
    int64_t last = -1;
    *out = NULL;
    *n = 0;
    if (!raw && !(env && env[0] == '1')) {
        last = last_raw_ns(s, uuid, lo, hi, rows_out);
        if (last_out) *last_out = last;
        int64_t end = hi != INT64_MAX ? hi : last;
        /* Where the 1-minute rollups were deleted (agent --rollup-retention, whole hours;
         * the raw rows went before them), the span is read from the 1-hour rollups, all
         * of it: one step for the whole series (the features weight each row by the gap
         * to the previous one), and the step says 1 hour (rollup_s 3600). */
        int64_t mb = gp_rollup_minutes_from(gp_store_db(s), uuid);
        int64_t step = mb >= 0 && lo < mb ? GP_ROLLUP_1H_NS : GP_ROLLUP_1M_NS;
        if (end >= 0 && (end - lo >= GP_SUMMARY_ROLLUP_MIN_NS || step == GP_ROLLUP_1H_NS)) {
            /* buckets (end - step, end] that start before hi; an hour that starts at the
             * span's end holds none of its samples */
            int64_t t1 = hi > INT64_MAX - step     ? INT64_MAX
                         : step == GP_ROLLUP_1H_NS ? hi + step - 1
                                                   : hi + step;
            if (gp_rollup_read(gp_store_db(s), step, uuid, lo, t1, out, NULL, n) == 0 && *n > 0) {
                /* the last bucket ends at its step, not at the last sample in it */
                for (size_t i = *n; i-- > 0 && last >= 0 && (*out)[i].ts_ns > last;)
                    (*out)[i].ts_ns =
                        last > (*out)[i].ts_ns - step ? last : (*out)[i].ts_ns - step + 1;
                *step_ns = step;
                return 1;
            }
            free(*out); /* no rollups (older schema): the raw rows */
            *out = NULL;
            *n = 0;
        }
    }
    return 0;
}

/* Samples of one device for the job's span [lo, hi): its rollups (load_device_rollups)
 * or its raw rows. Returns 0 or -1. */
static int load_device_samples(gp_store *s, const char *uuid, int64_t lo, int64_t hi, int raw,
                               gp_sample **out, size_t *n, int64_t *step_ns) {
    int rc = load_device_rollups(s, uuid, lo, hi, raw, out, n, step_ns, NULL, NULL);
    if (rc != 0) return rc < 0 ? -1 : 0;
    return gp_store_device_samples(s, uuid, lo, hi, out, n);
}

/* One device's samples as a series (gp_dev_series), appended row by row: the rows are
 * never held as gp_samples, whose UUID and unread fields are half their size. */
typedef struct series_fill {
    gp_dev_series *d;
    size_t cap;
} series_fill;

static int series_add(void *ctx, const gp_sample *x) {
    series_fill *f = ctx;
    if (f->d->n == f->cap) {
        size_t c = f->cap ? 2 * f->cap : 256;
        gp_feat_sample *p = realloc(f->d->v, c * sizeof *p);
        if (!p) return -1;
        f->d->v = p;
        f->cap = c;
    }
    gp_feat_sample_of(x, &f->d->v[f->d->n++]);
    return 0;
}

/* d's series from x[0..nx) (rollup rows), x freed. Returns 0 or -1. */
static int series_of_samples(gp_dev_series *d, gp_sample *x, size_t nx) {
    d->v = malloc((nx ? nx : 1) * sizeof *d->v);
    if (!d->v) {
        free(x);
        return -1;
    }
    for (size_t i = 0; i < nx; i++)
        gp_feat_sample_of(&x[i], &d->v[i]);
    d->n = nx;
    free(x);
    return 0;
}

/* The series of one device for [lo, hi) (load_device_samples, compact); d->uuid set by
 * the caller, d->v NULL. Returns 0 or -1. */
static int load_device_series(gp_store *s, gp_dev_series *d, int64_t lo, int64_t hi, int raw,
                              int64_t *step_ns) {
    gp_sample *x = NULL;
    size_t nx = 0;
    int rc = load_device_rollups(s, d->uuid, lo, hi, raw, &x, &nx, step_ns, NULL, NULL);
    if (rc < 0) return -1;
    if (rc == 0) {
        series_fill f = {d, 0};
        return gp_store_device_samples_each(s, d->uuid, lo, hi, series_add, &f);
    }
    return series_of_samples(d, x, nx);
}

/* Series read late (gp_job_input_load_deferred, features.h n_deferred): each deferred
 * device's slot in in->series and its rows' range [lo, hi), hi one past the last row
 * that was there when the input was loaded (the window was taken from it). */
typedef struct deferred_dev {
    size_t slot;
    int64_t lo, hi;
    size_t rows; /* counted with the last row's time: the room series_fill allocates */
} deferred_dev;
typedef struct deferred_load {
    gp_store *s;
    gp_job_input *in;
    deferred_dev *dev;
    size_t n, cap;
    gp_worker_obs *obs; /* the steps' observations, taken before the steps are released */
    int n_obs, obs_taken;
    gp_job_input_stream_stats st;
} deferred_load;

static void deferred_free(void *ctx) {
    deferred_load *dl = ctx;
    if (!dl) return;
    free(dl->dev);
    free(dl->obs);
    free(dl);
}

/* Device d's series for [lo, hi) in a deferred input: its rollups now (long spans: few
 * rows), else an empty slot to fill later, with its last raw row's time. Returns 1
 * deferred, 0 (d filled, or no rows: d->n 0), -1 on error. */
static int defer_device_series(gp_store *s, gp_dev_series *d, int64_t lo, int64_t hi, int raw,
                               int64_t *step_ns, gp_job_input *in, deferred_load *dl) {
    gp_sample *x = NULL;
    size_t nx = 0;
    int64_t last = INT64_MIN, rows = 0;
    int rc = load_device_rollups(s, d->uuid, lo, hi, raw, &x, &nx, step_ns, &last, &rows);
    if (rc < 0) return -1;
    if (rc == 1) return series_of_samples(d, x, nx);
    if (last == INT64_MIN) last = last_raw_ns(s, d->uuid, lo, hi, &rows); /* raw rows forced */
    if (last < 0) return 0;
    if (dl->n == dl->cap) {
        size_t c = dl->cap ? 2 * dl->cap : 8;
        deferred_dev *p = realloc(dl->dev, c * sizeof *p);
        if (!p) return -1;
        dl->dev = p;
        dl->cap = c;
    }
    /* [lo, last] holds the rows of [lo, hi): their count is the series' room */
    dl->dev[dl->n++] = (deferred_dev){in->n_series, lo, last + 1, rows > 0 ? (size_t)rows : 0};
    in->deferred_rows += rows > 0 ? (size_t)rows : 0;
    if (!in->n_deferred++ || last > in->deferred_last_ns) in->deferred_last_ns = last;
    return 1;
}

static deferred_dev *deferred_of(deferred_load *dl, size_t slot) {
    for (size_t k = 0; k < dl->n; k++)
        if (dl->dev[k].slot == slot) return &dl->dev[k];
    return NULL;
}

/* gp_job_input.series_fill: one deferred device's rows into its slot, room for the rows
 * counted (no doubling's slack). */
static int deferred_fill(void *ctx, size_t slot) {
    deferred_load *dl = ctx;
    deferred_dev *dd = deferred_of(dl, slot);
    gp_dev_series *d = (gp_dev_series *)&dl->in->series[slot];
    if (!dd || d->v) return -1;
    d->n = 0;
    series_fill f = {d, 0};
    if (dd->rows) {
        if (!(d->v = malloc(dd->rows * sizeof *d->v))) return -1;
        f.cap = dd->rows;
    }
    if (gp_store_device_samples_each(dl->s, d->uuid, dd->lo, dd->hi, series_add, &f) < 0) {
        free(d->v);
        d->v = NULL;
        d->n = 0;
        return -1;
    }
    dl->st.rows_read += d->n;
    dl->st.rows_held += d->n;
    if (dl->st.rows_held > dl->st.rows_held_peak) dl->st.rows_held_peak = dl->st.rows_held;
    dl->st.fills++;
    return 0;
}

/* gp_job_input.series_drop: the slot's rows freed again. */
static void deferred_drop(void *ctx, size_t slot) {
    deferred_load *dl = ctx;
    gp_dev_series *d = (gp_dev_series *)&dl->in->series[slot];
    dl->st.rows_held -= d->n;
    free(d->v);
    d->v = NULL;
    d->n = 0;
}

/* gp_job_input.series_fold: the slot's row times, then its rows, one at a time, in one
 * read transaction (features.h). */
typedef struct fold_ctx {
    int (*row_fn)(void *, const gp_feat_sample *);
    void *fn_ctx;
    size_t rows;
} fold_ctx;

static int fold_row(void *ctx, const gp_sample *x) {
    fold_ctx *fc = ctx;
    gp_feat_sample c;
    gp_feat_sample_of(x, &c);
    fc->rows++;
    return fc->row_fn(fc->fn_ctx, &c);
}

static int deferred_fold(void *ctx, size_t slot, int (*ts_fn)(void *, int64_t),
                         int (*row_fn)(void *, const gp_feat_sample *), void *fn_ctx) {
    deferred_load *dl = ctx;
    deferred_dev *dd = deferred_of(dl, slot);
    if (!dd) return -1;
    const char *uuid = dl->in->series[slot].uuid;
    sqlite3 *db = gp_store_db(dl->s);
    int own_txn =
        sqlite3_get_autocommit(db) && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    fold_ctx fc = {row_fn, fn_ctx, 0};
    int rc = gp_store_device_sample_times_each(dl->s, uuid, dd->lo, dd->hi, ts_fn, fn_ctx);
    if (rc == 0) rc = gp_store_device_samples_each(dl->s, uuid, dd->lo, dd->hi, fold_row, &fc);
    if (own_txn) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    dl->st.rows_read += fc.rows;
    dl->st.folds++;
    return rc;
}

/* gp_job_input.series_scan: the slot's rows to fn until it returns 1. */
typedef struct scan_ctx {
    int (*fn)(void *, const gp_feat_sample *);
    void *fn_ctx;
    int stopped;
} scan_ctx;

static int scan_row(void *ctx, const gp_sample *x) {
    scan_ctx *sc = ctx;
    gp_feat_sample c;
    gp_feat_sample_of(x, &c);
    if (sc->fn(sc->fn_ctx, &c) != 1) return 0;
    sc->stopped = 1;
    return -1; /* stops the reading; not an error (stopped) */
}

static int deferred_scan(void *ctx, size_t slot, int (*fn)(void *, const gp_feat_sample *),
                         void *fn_ctx) {
    deferred_load *dl = ctx;
    deferred_dev *dd = deferred_of(dl, slot);
    if (!dd) return -1;
    scan_ctx sc = {fn, fn_ctx, 0};
    int rc = gp_store_device_samples_each(dl->s, dl->in->series[slot].uuid, dd->lo, dd->hi,
                                          scan_row, &sc);
    dl->st.scans++;
    return rc < 0 && !sc.stopped ? -1 : 0;
}

void gp_job_input_stream_stats_of(const gp_job_input *in, gp_job_input_stream_stats *out) {
    const deferred_load *dl = in->load_series == load_deferred ? in->load_ctx : NULL;
    if (dl)
        *out = dl->st;
    else
        memset(out, 0, sizeof *out);
}

/* gp_job_input.load_series of a deferred input: the straggler's observations from the
 * steps, then the steps and marks released (the telemetry reads neither); the telemetry
 * then reads the deferred devices' rows one device at a time (deferred_fill,
 * deferred_drop; features.h series_fill). */
static int load_deferred(void *ctx) {
    deferred_load *dl = ctx;
    gp_job_input *in = dl->in;
    if (!dl->obs_taken) {
        dl->n_obs = gp_step_obs_from_input(in, &dl->obs);
        if (dl->n_obs < 0) return -1;
        dl->obs_taken = 1;
        free((void *)in->steps);
        in->steps = NULL;
        in->n_steps = 0;
        free((void *)in->marks);
        in->marks = NULL;
        in->n_marks = 0;
    }
    in->n_deferred = 0;
    return 0;
}

int gp_job_input_obs(gp_job_input *in, gp_worker_obs **out) {
    deferred_load *dl = in->load_series == load_deferred ? in->load_ctx : NULL;
    if (!dl || !dl->obs_taken) return gp_step_obs_from_input(in, out);
    *out = dl->obs;
    dl->obs = NULL;
    return dl->n_obs;
}

/* The process rows the features read: another job's process using the GPU
 * (interference, features.c). A day of 8 GPUs has ~700 k rows of the job's own. */
#define FOREIGN_SM_SHARE 0.05

static int load_input(gp_store *s, const char *job_id, int raw, int compact, int64_t from_ns,
                      int64_t to_ns, gp_job_input *in, deferred_load *dl, char *err, size_t errlen);

int gp_job_input_load(gp_store *s, const char *job_id, gp_job_input *in, char *err, size_t errlen) {
    return load_input(s, job_id, 0, 1, INT64_MIN, INT64_MAX, in, NULL, err, errlen);
}

int gp_job_input_load_deferred(gp_store *s, const char *job_id, gp_job_input *in, char *err,
                               size_t errlen) {
    deferred_load *dl = calloc(1, sizeof *dl);
    if (!dl) {
        memset(in, 0, sizeof *in);
        snprintf(err, errlen, "job %s: out of memory", job_id);
        return -1;
    }
    dl->s = s;
    dl->in = in;
    if (load_input(s, job_id, 0, 1, INT64_MIN, INT64_MAX, in, dl, err, errlen) < 0) {
        deferred_free(dl);
        return -1;
    }
    in->load_series = load_deferred;
    in->load_ctx = dl;
    in->series_fold = deferred_fold;
    in->series_fill = deferred_fill;
    in->series_drop = deferred_drop;
    in->series_scan = deferred_scan;
    return 0;
}

int gp_job_input_load_ex(gp_store *s, const char *job_id, int raw, gp_job_input *in, char *err,
                         size_t errlen) {
    return load_input(s, job_id, raw, 0, INT64_MIN, INT64_MAX, in, NULL, err, errlen);
}

int gp_job_input_load_range(gp_store *s, const char *job_id, int raw, int64_t from_ns,
                            int64_t to_ns, gp_job_input *in, char *err, size_t errlen) {
    return load_input(s, job_id, raw, 0, from_ns, to_ns, in, NULL, err, errlen);
}

/* compact: samples as series (gp_dev_series, one per device), else as gp_samples; dl (compact
 * only): raw rows' series deferred (gp_job_input_load_deferred). */
static int load_input(gp_store *s, const char *job_id, int raw, int compact, int64_t from_ns,
                      int64_t to_ns, gp_job_input *in, deferred_load *dl, char *err,
                      size_t errlen) {
    memset(in, 0, sizeof *in);
    /* Retention deleted its events: a diagnosis of what is left would be wrong, not
     * smaller. Only its stored result is known (engine/results/job_results.h). */
    if (gp_store_events_pruned_err(s, job_id, err, errlen) != 0) return -1;
    int whole = from_ns == INT64_MIN && to_ns == INT64_MAX;
    in->job_id = strdup(job_id);
    gp_alloc *al = NULL;
    size_t nal = 0;
    ev_split ev = {0};
    gp_device *dev = NULL;
    size_t ndev = 0;
    /* A whole history starts from the events the agent saved (ev_prefix.h) and reads only
     * the rows after them, both in one read transaction (a late event deletes the saved
     * ones: the triggers). */
    sqlite3 *db = gp_store_db(s);
    int own_txn = whole && sqlite3_get_autocommit(db) &&
                  sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    int64_t ev_t_ns = INT64_MIN;
    if (whole && gp_ev_prefix_load(s, job_id, &ev, &ev_t_ns) != 1) ev_t_ns = INT64_MIN;
    int bad =
        !in->job_id || gp_store_job_allocs(s, job_id, &al, &nal) < 0 ||
        (whole && ev_t_ns == INT64_MIN
             ? gp_store_job_events_each(s, job_id, split_one, &ev)
             : gp_store_job_events_range_each(s, job_id, whole ? ev_t_ns + 1 : from_ns,
                                              whole ? INT64_MAX : to_ns, split_one, &ev)) < 0 ||
        gp_store_list_devices(s, &dev, &ndev) < 0;
    if (own_txn) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (bad) {
        snprintf(err, errlen, "job %s: cannot read the store: %s", job_id, gp_store_errmsg(s));
        free(al);
        free(ev.ev);
        free(ev.st);
        free(ev.mk);
        free(dev);
        gp_job_input_free(in);
        return -1;
    }
    in->allocs = al;
    in->n_allocs = nal;
    in->events = ev.ev;
    in->n_events = ev.nev;
    in->steps = ev.st;
    in->n_steps = ev.nst;
    in->marks = ev.mk;
    in->n_marks = ev.nmk;
    in->devices = dev;
    in->n_devices = ndev;
    gp_job rec;
    if (gp_store_get_job(s, job_id, &rec) == 1) {
        if (rec.submitted_ns > 0) in->submitted_ns = rec.submitted_ns;
        in->slo = (gp_slo){rec.slo_ttft_s, rec.slo_tpot_s, rec.slo_e2e_s}; /* declared */
    }
    void *smp = NULL, *prc = NULL;
    size_t nsmp = 0, nprc = 0;
    gp_dev_series *ser = compact && nal ? calloc(nal, sizeof *ser) : NULL;
    if (compact && nal && !ser) {
        snprintf(err, errlen, "job %s: out of memory", job_id);
        gp_job_input_free(in);
        return -1;
    }
    in->series = ser; /* freed with in from here on */
    for (size_t i = 0; i < nal; i++) {
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(al[k].uuid, al[i].uuid)) dup = 1;
        if (dup) continue;
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (size_t k = 0; k < nal; k++) {
            if (strcmp(al[k].uuid, al[i].uuid)) continue;
            if (al[k].from_ns < lo) lo = al[k].from_ns;
            int64_t to = al[k].to_ns < 0 ? INT64_MAX : al[k].to_ns + 1;
            if (to > hi) hi = to;
        }
        if (from_ns > lo) lo = from_ns;
        if (to_ns < INT64_MAX && to_ns + 1 < hi) hi = to_ns + 1;
        gp_sample *x = NULL;
        gp_proc_sample *p = NULL;
        size_t nx = 0, np = 0;
        int rc;
        if (ser) { /* a device without samples gets no series */
            gp_dev_series *d = &ser[in->n_series];
            snprintf(d->uuid, sizeof d->uuid, "%s", al[i].uuid);
            rc = dl ? defer_device_series(s, d, lo, hi, raw, &in->samples_step_ns, in, dl)
                    : load_device_series(s, d, lo, hi, raw, &in->samples_step_ns);
            if (d->n || rc == 1) /* rc 1: a deferred slot */
                in->n_series++;
            else {
                free(d->v);
                d->v = NULL;
            }
        } else
            rc = load_device_samples(s, al[i].uuid, lo, hi, raw, &x, &nx, &in->samples_step_ns);
        if (rc >= 0)
            rc = gp_store_device_procs_foreign(s, al[i].uuid, lo, hi, job_id, FOREIGN_SM_SHARE, &p,
                                               &np);
        if (rc >= 0) rc = append(&smp, &nsmp, x, nx, sizeof *x);
        if (rc >= 0) rc = append(&prc, &nprc, p, np, sizeof *p);
        free(x);
        free(p);
        if (rc < 0) {
            snprintf(err, errlen, "job %s: cannot read samples of %s: %s", job_id, al[i].uuid,
                     gp_store_errmsg(s));
            free(smp);
            free(prc);
            gp_job_input_free(in);
            return -1;
        }
    }
    in->samples = smp;
    in->n_samples = nsmp;
    in->procs = prc;
    in->n_procs = nprc;
    return 0;
}

int gp_job_input_raw_since(gp_store *s, const gp_job_input *in, int64_t from_ns, gp_sample **out,
                           size_t *n) {
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < in->n_allocs; i++) {
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(in->allocs[k].uuid, in->allocs[i].uuid)) dup = 1;
        if (dup) continue;
        gp_sample *x = NULL;
        size_t nx = 0;
        void *acc = *out;
        int rc = gp_store_device_samples(s, in->allocs[i].uuid, from_ns, INT64_MAX, &x, &nx);
        if (rc >= 0) rc = append(&acc, n, x, nx, sizeof *x);
        *out = acc;
        free(x);
        if (rc < 0) {
            free(*out);
            *out = NULL;
            *n = 0;
            return -1;
        }
    }
    return 0;
}

void gp_slo_override(gp_slo *slo, const gp_slo *o) {
    if (!o) return;
    if (o->ttft_s > 0) slo->ttft_s = o->ttft_s;
    if (o->tpot_s > 0) slo->tpot_s = o->tpot_s;
    if (o->e2e_s > 0) slo->e2e_s = o->e2e_s;
}

static const gp_gpu_spec *job_spec(const gp_job_input *in) {
    for (size_t i = 0; i < in->n_allocs; i++)
        for (size_t k = 0; k < in->n_devices; k++)
            if (!strcmp(in->devices[k].uuid, in->allocs[i].uuid) && in->devices[k].spec)
                return in->devices[k].spec;
    return NULL;
}

#define MAX_PER_JOB GP_DIAG_MAX_PER_JOB

/* Clips the job's findings to its buckets with the accounting every output shows
 * (job_summary.h), so a finding never explains more badput than the report lists. *acct:
 * that accounting; its kind is GP_JK_UNKNOWN with goodput < 0 when it could not be
 * computed, and then the findings' badput and headroom are unknown. */
static void budget_job(gp_store *s, const char *job_id, const gp_slo *slo, const gp_diag_opts *o,
                       double price, gp_finding *out, size_t n, gp_goodput *acct) {
    gp_job_summary js;
    gp_summary_opts so = {0};
    so.slo = *slo;
    char e[256];
    const gp_job_summary *given = NULL;
    gp_slo none = {0, 0, 0};
    const gp_slo *oslo = o ? &o->slo : &none;
    for (size_t i = 0; o && o->acct && i < o->n_acct && !given; i++)
        if (!strcmp(o->acct[i].job.id, job_id) && o->acct_slo.ttft_s == oslo->ttft_s &&
            o->acct_slo.tpot_s == oslo->tpot_s && o->acct_slo.e2e_s == oslo->e2e_s)
            given = &o->acct[i];
    if (given) {
        *acct = given->gp;
        gp_findings_budget(out, n, acct, -1, price);
    } else if (gp_job_summary_compute(s, job_id, &so, &js, e, sizeof e) == 0) {
        *acct = js.gp;
        gp_findings_budget(out, n, acct, -1, price);
    } else {
        memset(acct, 0, sizeof *acct);
        acct->goodput = -1;
        for (size_t i = 0; i < n; i++)
            gp_finding_claim_unknown(&out[i]);
        gp_findings_budget(out, n, NULL, -1, price);
    }
    gp_findings_rank(out, n);
}

static int write_findings(gp_store *s, const char *job_id, const gp_finding *f, size_t n, char *err,
                          size_t errlen) {
    if (gp_store_begin(s) < 0 || gp_store_replace_findings(s, job_id, f, n) < 0 ||
        gp_store_commit(s) < 0) {
        snprintf(err, errlen, "job %s: cannot write findings: %s", job_id, gp_store_errmsg(s));
        return -1;
    }
    return 0;
}

static int diagnose_one(gp_store *s, const char *job_id, const gp_diag_opts *o, gp_finding *out,
                        size_t *n, gp_features *feat, gp_goodput *acct, double *price_out,
                        char *err, size_t errlen) {
    if (o && o->stored &&
        o->stored(o->stored_ctx, job_id, out, MAX_PER_JOB, n, feat, acct, price_out) == 1)
        return o->no_write ? 0 : write_findings(s, job_id, out, *n, err, errlen);
    gp_job_input in;
    /* what was freed before this job (the report's summaries, the previous job's
     * accounting) handed back first, as after each job below: the first job's input
     * otherwise lands over ~0.3 MB of freed but resident heap (docs/benchmarks.md) */
    gp_heap_trim();
    /* the series read after the event features (features.h, n_deferred): a long job's
     * samples and its per-step arrays are never held together */
    if (gp_job_input_load_deferred(s, job_id, &in, err, errlen) < 0) return -1;
    gp_slo_override(&in.slo, o ? &o->slo : NULL);
    int rc = gp_features_compute(&in, feat, err, errlen);
    gp_worker_obs *obs = NULL;
    int nobs = rc == 0 ? gp_job_input_obs(&in, &obs) : 0;
    if (rc == 0) {
        double price = gp_price_per_gpu_h(job_spec(&in), o ? o->price_per_gpu_h : 0);
        *n = gp_classify(job_id, feat, obs, nobs > 0 ? (size_t)nobs : 0, price, out, MAX_PER_JOB);
        if (*n < MAX_PER_JOB && /* stage events: the stage that owns the run (pipeline.h) */
            gp_pipeline_finding_from_events(in.events, in.n_events, price, &out[*n]) > 0) {
            /* the GPU stage waiting on the bottleneck: idle GPU-time, not productive */
            gp_finding *x = &out[(*n)++];
            double idle = x->wasted_gpu_s;
            gp_finding_claims_clear(x);
            gp_finding_claim(x, GP_B_IDLE_ALLOCATED, idle);
            snprintf(x->job_id, sizeof x->job_id, "%s", job_id);
            snprintf(x->counterfactual, sizeof x->counterfactual,
                     "if the bottleneck stage kept the GPU stage fed, the GPU-time it waits "
                     "would be useful work");
        }
        /* the accounting reads the job again its own way: free this copy first, so the
         * two never share the peak */
        gp_slo slo = in.slo;
        free(obs);
        obs = NULL;
        gp_job_input_free(&in);
        /* glibc keeps freed heap pages mapped: hand this job's input back before the
         * accounting and the next job's input, so a report's peak is one job's input over
         * what the report holds, not the sum of freed holes (docs/benchmarks.md, "Start-up
         * and libraries") */
        gp_heap_trim();
        budget_job(s, job_id, &slo, o, price, out, *n, acct);
        *price_out = price;
        if ((!o || !o->no_write) && write_findings(s, job_id, out, *n, err, errlen) != 0) rc = -1;
    }
    free(obs);
    gp_job_input_free(&in);
    return rc;
}

int gp_diagnose_one(gp_store *s, const char *job_id, const gp_diag_opts *o, gp_finding *out,
                    size_t *n, gp_features *feat, gp_goodput *acct, double *price, char *err,
                    size_t errlen) {
    *n = 0;
    return diagnose_one(s, job_id, o, out, n, feat, acct, price, err, errlen);
}

int gp_diagnose_job(gp_store *s, const char *job_id, const gp_diag_opts *o, gp_finding **out,
                    size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    gp_job j;
    int found = gp_store_get_job(s, job_id, &j);
    if (found < 0) {
        snprintf(err, errlen, "cannot read job %s: %s", job_id, gp_store_errmsg(s));
        return -1;
    }
    if (found == 0) {
        snprintf(err, errlen, "no job '%s' in %s", job_id, gp_store_path(s));
        return -1;
    }
    gp_finding *f = calloc(MAX_PER_JOB, sizeof *f);
    gp_features feat;
    gp_goodput acct;
    double price = 0;
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (diagnose_one(s, job_id, o, f, n, &feat, &acct, &price, err, errlen) < 0) {
        free(f);
        return -1;
    }
    *out = f;
    return 0;
}

/* The per-job diagnoses of gp_diagnose_all on o->threads threads (no_write only: each
 * thread reads through its own read-only connection, store/read_pool.h). Stored results
 * are looked up first on the caller's thread (their statements and counters belong to the
 * caller's connection); the rest compute in parallel into per-job slots, which are then
 * appended in job order: the same findings, in the same order, as one thread gives, and
 * on failure the same error, the first failing job's. Returns 1 when done, -1 on error. */
typedef struct diag_slot {
    gp_finding *f; /* GP_DIAG_MAX_PER_JOB, malloc'ed by the task */
    size_t n;
    int rc;
    char err[256];
} diag_slot;

typedef struct diag_par {
    const gp_job *jobs;
    const gp_diag_opts *o; /* stored = NULL: the stored ones were served before */
    diag_slot *slot;
    gp_features *feats;
    gp_goodput *accts;
    double *prices;
} diag_par;

static void diag_task(gp_store *conn, size_t i, void *ctx) {
    diag_par *p = ctx;
    diag_slot *d = &p->slot[i];
    if (d->f) return; /* served from the stored results */
    d->f = calloc(MAX_PER_JOB, sizeof *d->f);
    if (!d->f) {
        d->rc = -1;
        snprintf(d->err, sizeof d->err, "out of memory");
        return;
    }
    d->rc = diagnose_one(conn, p->jobs[i].id, p->o, d->f, &d->n, &p->feats[i], &p->accts[i],
                         &p->prices[i], d->err, sizeof d->err);
}

/* Of every job, one whose events retention deleted and whose stored findings do not fit
 * these options (another price, SLOs) has no findings to give: it is left out rather than
 * failing the others (the CLI says which jobs are pruned). */
static int pruned_unserved(gp_store *s, const char *job_id) {
    int64_t before;
    return gp_store_events_pruned(s, job_id, &before) == 1;
}

/* Room for n findings in *all (*room of them now; the new ones zeroed, as calloc gave): the
 * findings are a handful a job, so the list grows as they come instead of holding room for
 * every job's most (GP_DIAG_MAX_PER_JOB + 2 each, 0.55 MB for the 60-minute demo's 7 jobs)
 * through the whole diagnosis, where a report peaks (docs/benchmarks.md). -1 on OOM. */
static int findings_room(gp_finding **all, size_t *room, size_t n) {
    if (n <= *room) return 0;
    gp_finding *p = realloc(*all, n * sizeof *p);
    if (!p) return -1;
    memset(p + *room, 0, (n - *room) * sizeof *p);
    *all = p;
    *room = n;
    return 0;
}

static int diagnose_jobs_par(gp_store *s, const gp_job *jobs, size_t nj, const gp_diag_opts *o,
                             gp_finding **all, size_t *room, size_t *tot, gp_features *feats,
                             gp_goodput *accts, double *prices, char *err, size_t errlen) {
    diag_slot *slot = calloc(nj, sizeof *slot);
    if (!slot) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gp_diag_opts po = *o;
    po.stored = NULL;
    for (size_t i = 0; o->stored && i < nj; i++) {
        gp_finding *f = calloc(MAX_PER_JOB, sizeof *f);
        if (f && o->stored(o->stored_ctx, jobs[i].id, f, MAX_PER_JOB, &slot[i].n, &feats[i],
                           &accts[i], &prices[i]) == 1)
            slot[i].f = f;
        else {
            free(f);
            slot[i].n = 0;
        }
    }
    diag_par p = {jobs, &po, slot, feats, accts, prices};
    gp_read_pool_run(s, nj, o->threads, diag_task, &p);
    int rc = 1;
    for (size_t i = 0; i < nj; i++) {
        if (slot[i].rc < 0 && pruned_unserved(s, jobs[i].id)) slot[i].rc = 0, slot[i].n = 0;
        if (rc == 1 && slot[i].rc < 0) {
            snprintf(err, errlen, "%s", slot[i].err);
            rc = -1;
        }
        if (rc == 1 && slot[i].n && findings_room(all, room, *tot + slot[i].n) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
        if (rc == 1 && slot[i].n) {
            memcpy(*all + *tot, slot[i].f, slot[i].n * sizeof **all);
            *tot += slot[i].n;
        }
        free(slot[i].f);
    }
    free(slot);
    return rc;
}

int gp_diagnose_all(gp_store *s, const gp_diag_opts *o, gp_finding **out, size_t *n, char *err,
                    size_t errlen) {
    *out = NULL;
    *n = 0;
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(s, &jobs, &nj) < 0) {
        snprintf(err, errlen, "cannot list jobs: %s", gp_store_errmsg(s));
        return -1;
    }
    size_t cap = (nj + 1) * (MAX_PER_JOB + 2);
    size_t room = MAX_PER_JOB;
    gp_finding *all = calloc(room, sizeof *all);
    gp_features *feats = calloc(nj ? nj : 1, sizeof *feats);
    gp_goodput *accts = calloc(nj ? nj : 1, sizeof *accts);
    double *prices = calloc(nj ? nj : 1, sizeof *prices);
    if (!all || !feats || !accts || !prices) goto oom;
    size_t tot = 0;
    int par = o && o->no_write && o->threads > 1 && nj > 1
                  ? diagnose_jobs_par(s, jobs, nj, o, &all, &room, &tot, feats, accts, prices, err,
                                      errlen)
                  : 0;
    for (size_t i = 0; i < nj && !par; i++) {
        size_t k = 0;
        if (findings_room(&all, &room, tot + MAX_PER_JOB) != 0) {
            snprintf(err, errlen, "out of memory");
            par = -1;
            break;
        }
        if (diagnose_one(s, jobs[i].id, o, all + tot, &k, &feats[i], &accts[i], &prices[i], err,
                         errlen) < 0) {
            if (pruned_unserved(s, jobs[i].id)) {
                memset(&feats[i], 0, sizeof feats[i]);
                continue;
            }
            par = -1;
            break;
        }
        tot += k;
    }
    if (par < 0) {
        free(all);
        free(feats);
        free(accts);
        free(prices);
        free(jobs);
        return -1;
    }
    /* scale_inefficient: runs of one job name at different GPU counts */
    double bound = o && o->scale_bound > 0 ? o->scale_bound : gp_th(GP_TH_SCALE_EFFICIENCY);
    for (size_t i = 0; i < nj; i++) {
        if (!jobs[i].name[0] || feats[i].units_per_s <= 0) continue;
        size_t best = nj;
        for (size_t k = 0; k < nj; k++)
            if (k != i && !strcmp(jobs[k].name, jobs[i].name) && feats[k].units_per_s > 0 &&
                feats[k].n_gpus > 0 && feats[k].n_gpus < feats[i].n_gpus &&
                (best == nj || feats[k].n_gpus < feats[best].n_gpus))
                best = k;
        if (best == nj) continue;
        double eff = gp_scaling_efficiency(feats[i].units_per_s, feats[i].n_gpus,
                                           feats[best].units_per_s, feats[best].n_gpus);
        if (eff < 0 || eff >= bound || tot >= cap) continue;
        if (findings_room(&all, &room, tot + 1) != 0) goto oom;
        gp_finding *x = &all[tot++];
        memset(x, 0, sizeof *x);
        x->cls = GP_FC_SCALE_INEFFICIENT;
        x->scope = GP_SCOPE_JOB;
        snprintf(x->scope_id, sizeof x->scope_id, "%s", jobs[i].id);
        x->t0_ns = feats[i].t0_ns;
        x->t1_ns = feats[i].t1_ns;
        snprintf(x->job_id, sizeof x->job_id, "%s", jobs[i].id);
        /* throughput lost inside productive steps: headroom, never badput */
        gp_finding_claims_clear(x);
        x->headroom_frac = 1 - eff;
        snprintf(x->counterfactual, sizeof x->counterfactual,
                 "if it scaled as %s does, the same work would take %.2fx the GPU-time",
                 jobs[best].id, eff);
        gp_findings_budget(x, 1, &accts[i], -1, prices[i]);
        x->confidence = 0.7;
        gp_finding_add_evidence(x, "scale_efficiency", eff, "<", bound, "events");
        gp_finding_add_evidence(x, "gpus", feats[i].n_gpus, ">", feats[best].n_gpus, "allocs");
        snprintf(x->summary, sizeof x->summary,
                 "%s on %d GPUs delivers %.0f%% of %d x the throughput of %s on %d GPU(s).",
                 jobs[i].id, feats[i].n_gpus, 100 * eff, feats[i].n_gpus / feats[best].n_gpus,
                 jobs[best].id, feats[best].n_gpus);
        snprintf(x->recommendation, sizeof x->recommendation,
                 "Run at the smaller scale, or fix what does not scale first: overlap "
                 "communication, raise the per-GPU batch, shard with FSDP/ZeRO instead of "
                 "replicating, and keep the job inside one NVLink domain.");
    }
    /* scheduling_gap: a job waited to be allocated while other allocated GPUs sat idle */
    for (size_t i = 0; i < nj; i++) {
        if (feats[i].queue_wait_s < gp_th(GP_TH_QUEUE_WAIT_S)) continue;
        /* idle device-seconds of the other jobs' allocations inside the wait */
        int64_t w0 = feats[i].first_alloc_ns - (int64_t)(feats[i].queue_wait_s * 1e9);
        int64_t w1 = feats[i].first_alloc_ns;
        double idle_gpu_s = 0;
        for (size_t k = 0; k < nj; k++) {
            if (k == i || feats[k].first_alloc_ns < 0 || feats[k].first_alloc_ns >= w1 ||
                feats[k].t1_ns <= w0)
                continue;
            gp_job_input in;
            gp_features fk;
            /* streamed as diagnose_one's (features.h series_fill): the same features;
             * the heap freed before handed back first, as there (a whole job's input
             * landing over it was the 60-minute report's peak, docs/benchmarks.md) */
            gp_heap_trim();
            if (gp_job_input_load_deferred(s, jobs[k].id, &in, err, errlen) < 0) continue;
            in.idle_only = 1; /* idle_gpu_s is all it reads */
            in.t0_ns = w0 > feats[k].first_alloc_ns ? w0 : feats[k].first_alloc_ns;
            in.t1_ns = w1 < feats[k].t1_ns ? w1 : feats[k].t1_ns;
            if (in.t1_ns > in.t0_ns && gp_features_compute(&in, &fk, err, errlen) == 0)
                idle_gpu_s += fk.idle_gpu_s;
            gp_job_input_free(&in);
        }
        if (idle_gpu_s < 0.5 * feats[i].queue_wait_s * (feats[i].n_gpus ? feats[i].n_gpus : 1) ||
            tot >= cap)
            continue;
        if (findings_room(&all, &room, tot + 1) != 0) goto oom;
        gp_finding *x = &all[tot++];
        memset(x, 0, sizeof *x);
        x->cls = GP_FC_SCHEDULING_GAP;
        x->scope = GP_SCOPE_CLUSTER;
        snprintf(x->scope_id, sizeof x->scope_id, "%s", jobs[i].id);
        x->t0_ns = feats[i].first_alloc_ns - (int64_t)(feats[i].queue_wait_s * 1e9);
        x->t1_ns = feats[i].first_alloc_ns;
        /* The waiting job's queue time is not allocated time, and the idle GPU-seconds are
         * the other jobs' idle_allocated badput, which their own findings explain: this
         * finding explains no badput of its own (the evidence carries the number). */
        gp_finding_claims_clear(x);
        snprintf(x->counterfactual, sizeof x->counterfactual,
                 "if the idle allocations had been reclaimed, %s could have started %.0f s "
                 "earlier",
                 jobs[i].id, feats[i].queue_wait_s);
        gp_findings_budget(x, 1, NULL, -1, prices[i]);
        x->confidence = 0.5;
        gp_finding_add_evidence(x, "queue_wait_s", feats[i].queue_wait_s,
                                ">=", gp_th(GP_TH_QUEUE_WAIT_S), "events");
        gp_finding_add_evidence(x, "idle_gpu_s_elsewhere", idle_gpu_s, ">", 0, "nvml");
        snprintf(x->summary, sizeof x->summary,
                 "%s waited %.0f s in the queue while allocated GPUs elsewhere sat idle.",
                 jobs[i].id, feats[i].queue_wait_s);
        snprintf(x->recommendation, sizeof x->recommendation,
                 "Reclaim idle allocations (idle timeouts, preemption of idle interactive "
                 "sessions), allow backfill, and pack small jobs to reduce fragmentation.");
    }
    gp_findings_rank(all, tot);
    free(feats);
    free(accts);
    free(prices);
    free(jobs);
    *out = all;
    *n = tot;
    return 0;
oom:
    free(all);
    free(feats);
    free(accts);
    free(prices);
    free(jobs);
    snprintf(err, errlen, "out of memory");
    return -1;
}
