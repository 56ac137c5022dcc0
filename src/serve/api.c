/* api.c: the JSON API under /api/v1/ (docs/api.md). Runs on the server thread with its
 * read-only store connection.
 *
 * Series are downsampled in SQL: samples are grouped into `points` buckets of equal width
 * over [from, to) and averaged, so a 24-hour view at 1-second samples returns a few
 * hundred points, not 86,400. A job's series average its GPUs; its progress rate is units
 * (or steps, or output tokens) per second in the same buckets, on the same time axis.
 * Unknown values are null, never 0. Times in requests are Unix seconds. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/accounting/cost.h"
#include "report/rollup_note.h"
#include "report/findings_fmt.h"
#include "report/job_report.h"
#include "serve/serve_int.h"
#include "serve/series_tiers.h"

static void send_json(srv_resp *r, json_t *o) {
    char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(13));
    json_decref(o);
    if (!txt) {
        srv_error(r, 500, "out of memory rendering JSON");
        return;
    }
    r->status = 200;
    r->ctype = "application/json";
    srv_buf_put(&r->body, txt, strlen(txt));
    srv_buf_put(&r->body, "\n", 1);
    free(txt);
}

static double mono_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static json_t *num_or_null(double v) {
    return (v < 0 || !isfinite(v)) ? json_null() : json_real(v);
}
static json_t *sec_or_null(int64_t ns) {
    return ns <= 0 ? json_null() : json_real(ns / 1e9);
}

/* Parses a parameter as a number within [lo, hi]; 1 = present and good, 0 = absent,
 * -1 = bad (error already set). */
static int num_param(const srv_req *q, srv_resp *r, const char *key, double lo, double hi,
                     double *out) {
    const char *v = srv_param(q, key);
    if (!v) return 0;
    char *end;
    double d = strtod(v, &end);
    if (!*v || *end || !isfinite(d) || d < lo || d > hi) {
        srv_error(r, 400, "parameter '%s=%.40s': expected a number in [%g, %g]", key, v, lo, hi);
        return -1;
    }
    *out = d;
    return 1;
}

static double price_for(gp_serve *s) {
    gp_device *devs = NULL;
    size_t nd = 0;
    const gp_gpu_spec *spec = NULL;
    if (gp_store_list_devices(s->store, &devs, &nd) == 0 && nd) spec = devs[0].spec;
    free(devs);
    return gp_price_per_gpu_h(spec, s->o.price_per_gpu_h);
}

static const char *job_state(const gp_job *j, const gp_job_summary *js) {
    if (j->ended_ns > 0) return "ended";
    if (js && js->gp.ready_ns >= 0) return "running";
    return "not_ready";
}

static json_t *job_json(gp_serve *s, const gp_job_summary *js, double price) {
    json_t *o = gp_report_json_job(js);
    /* 1-hour rollups read (rollup_note.h): the report's fields, from the same rule */
    if (js->events_pruned_ns <= 0) gp_report_hourly_json(o, s->store, js->job.id);
    json_object_set_new(o, "state", json_string(job_state(&js->job, js)));
    json_object_set_new(o, "origin", json_string(gp_origin_name(js->job.origin)));
    if (price > 0) {
        json_object_set_new(o, "cost_usd", json_real(js->allocated_gpu_h * price));
        double bad = js->gp.goodput >= 0 ? js->allocated_gpu_h * (1 - js->gp.goodput) : -1;
        json_object_set_new(o, "wasted_cost_usd", num_or_null(bad >= 0 ? bad * price : -1));
    }
    return o;
}

/* ---- fleet ---- */

static void api_fleet(gp_serve *s, srv_resp *r) {
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(s->store, &jobs, &nj) != 0) {
        srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
        return;
    }
    double price = price_for(s);
    double alloc = 0, prod = 0, known_alloc = 0, buckets[GP_B__COUNT] = {0};
    int running = 0, not_ready = 0, gpus_held = 0;
    double wasted_per_h = 0;
    for (size_t i = 0; i < nj; i++) {
        gp_job_summary js;
        if (srv_job_summary(s, &jobs[i], &js) != 0) continue;
        alloc += js.gp.allocated_gpu_s;
        if (js.gp.goodput >= 0) {
            known_alloc += js.gp.allocated_gpu_s;
            prod += js.gp.bucket_gpu_s[GP_B_PRODUCTIVE];
            for (int k = 0; k < GP_B__COUNT; k++)
                buckets[k] += js.gp.bucket_gpu_s[k];
        }
        if (jobs[i].ended_ns <= 0 && js.n_gpus > 0) {
            gpus_held += js.n_gpus;
            if (js.gp.ready_ns < 0)
                not_ready++;
            else
                running++;
            /* Jobs whose goodput is unknown are left out, as in wasted_gpu_h. */
            if (js.gp.goodput >= 0)
                wasted_per_h += js.n_gpus * (1 - js.gp.goodput) * (price > 0 ? price : 0);
        }
    }
    json_t *o = json_object();
    json_object_set_new(o, "jobs", json_integer((json_int_t)nj));
    json_object_set_new(o, "jobs_running", json_integer(running));
    json_object_set_new(o, "jobs_not_ready", json_integer(not_ready));
    json_object_set_new(o, "gpus_held", json_integer(gpus_held));
    json_object_set_new(o, "allocated_gpu_h", json_real(alloc / 3600));
    json_object_set_new(o, "goodput",
                        known_alloc > 0 ? json_real(prod / known_alloc) : json_null());
    json_object_set_new(o, "wasted_gpu_h", json_real((known_alloc - prod) / 3600));
    json_t *b = json_object();
    for (int k = 0; k < GP_B__COUNT; k++)
        json_object_set_new(b, gp_bucket_name((gp_bucket)k), json_real(buckets[k]));
    json_object_set_new(o, "gpu_s_by_bucket", b);
    json_object_set_new(o, "price_per_gpu_h", num_or_null(price));
    json_object_set_new(o, "cost_per_h", price > 0 ? json_real(gpus_held * price) : json_null());
    json_object_set_new(o, "wasted_cost_per_h", price > 0 ? json_real(wasted_per_h) : json_null());
    gp_finding *f = NULL;
    size_t nf = 0;
    if (gp_store_list_findings(s->store, NULL, &f, &nf) == 0)
        json_object_set_new(o, "top_findings", gp_findings_json(f, nf, 5));
    free(f);
    pthread_mutex_lock(&s->mu);
    json_object_set_new(o, "agent", json_boolean(s->snap.have_agent));
    json_object_set_new(o, "now_s", s->snap.have_agent ? sec_or_null(s->snap.now_ns) : json_null());
    pthread_mutex_unlock(&s->mu);
    int64_t t0, t1;
    if (gp_store_time_span(s->store, &t0, &t1) == 0) {
        json_object_set_new(o, "first_s", sec_or_null(t0));
        json_object_set_new(o, "last_s", sec_or_null(t1));
    }
    free(jobs);
    send_json(r, o);
}

/* ---- devices ---- */

static const char *SIG_SQL[] = {"gpu_util",
                                "sm_active",
                                "tensor_active",
                                "dram_active",
                                "mem_used_bytes * 1.0 / NULLIF(mem_total_bytes, 0)",
                                "power_w",
                                "temp_c"};
static const char *SIG_NAME[] = {"gpu_util",       "sm_active", "tensor_active", "dram_active",
                                 "mem_used_ratio", "power_w",   "temp_c"};
#define N_SIG 7

static json_t *latest_sample(gp_serve *s, const char *uuid) {
    sqlite3_stmt *st;
    char sql[512] = "SELECT ts_ns";
    for (int k = 0; k < N_SIG; k++) {
        strcat(sql, ",");
        strcat(sql, SIG_SQL[k]);
    }
    strcat(sql, " FROM samples WHERE uuid = ? ORDER BY ts_ns DESC LIMIT 1");
    if (sqlite3_prepare_v2(gp_store_db(s->store), sql, -1, &st, NULL) != SQLITE_OK)
        return json_null();
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    json_t *o = json_null();
    if (sqlite3_step(st) == SQLITE_ROW) {
        o = json_object();
        json_object_set_new(o, "ts_s", json_real(sqlite3_column_int64(st, 0) / 1e9));
        for (int k = 0; k < N_SIG; k++)
            json_object_set_new(o, SIG_NAME[k],
                                sqlite3_column_type(st, k + 1) == SQLITE_NULL
                                    ? json_null()
                                    : json_real(sqlite3_column_double(st, k + 1)));
    }
    sqlite3_finalize(st);
    return o;
}

static json_t *device_allocs(gp_serve *s, const char *uuid) {
    sqlite3_stmt *st;
    json_t *a = json_array();
    if (sqlite3_prepare_v2(
            gp_store_db(s->store),
            "SELECT job_id, from_ns, to_ns FROM allocations WHERE uuid = ? ORDER BY from_ns", -1,
            &st, NULL) != SQLITE_OK)
        return a;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t to = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        json_array_append_new(a, json_pack("{s:s, s:o, s:o}", "job_id",
                                           (const char *)sqlite3_column_text(st, 0), "from_s",
                                           sec_or_null(sqlite3_column_int64(st, 1)), "to_s",
                                           sec_or_null(to)));
    }
    sqlite3_finalize(st);
    return a;
}

static json_t *device_json(gp_serve *s, const gp_device *d, int detail) {
    json_t *o = json_object();
    json_object_set_new(o, "uuid", json_string(d->uuid));
    json_object_set_new(o, "index", json_integer(d->index));
    json_object_set_new(o, "name", json_string(d->name));
    json_object_set_new(o, "model", d->spec ? json_string(d->spec->model) : json_null());
    json_object_set_new(o, "host", json_string(d->host));
    json_object_set_new(o, "memory_total_bytes",
                        d->memory_total_bytes ? json_integer((json_int_t)d->memory_total_bytes)
                                              : json_null());
    json_object_set_new(o, "latest", latest_sample(s, d->uuid));
    json_t *allocs = device_allocs(s, d->uuid);
    json_t *holders = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(allocs, i, v) {
        if (json_is_null(json_object_get(v, "to_s")))
            json_array_append(holders, json_object_get(v, "job_id"));
    }
    json_object_set_new(o, "jobs_now", holders);
    if (detail)
        json_object_set_new(o, "allocations", allocs);
    else
        json_decref(allocs);
    return o;
}

static int find_device(gp_serve *s, const char *uuid, gp_device *out) {
    gp_device *devs = NULL;
    size_t nd = 0;
    int found = 0;
    if (gp_store_list_devices(s->store, &devs, &nd) != 0) return -1;
    for (size_t i = 0; i < nd && !found; i++)
        if (strcmp(devs[i].uuid, uuid) == 0) {
            *out = devs[i];
            found = 1;
        }
    free(devs);
    return found;
}

/* ---- series ---- */

typedef struct series {
    int64_t t0, step;
    int n;
    double *sum[N_SIG];
    int *cnt[N_SIG];
    srv_tiers tiers; /* the rollups read before raw rows (series_tiers.h) */
} series;

static int series_init(series *x, int64_t t0, int64_t step, int n) {
    memset(x, 0, sizeof *x);
    x->t0 = t0, x->step = step, x->n = n;
    srv_tiers_init(&x->tiers);
    for (int k = 0; k < N_SIG; k++) {
        x->sum[k] = calloc((size_t)n, sizeof(double));
        x->cnt[k] = calloc((size_t)n, sizeof(int));
        if (!x->sum[k] || !x->cnt[k]) return -1;
    }
    return 0;
}

static void series_free(series *x) {
    for (int k = 0; k < N_SIG; k++)
        free(x->sum[k]), free(x->cnt[k]);
}

/* Per-request-bucket sums and counts of one source (a device's signals or a job's
 * progress) over [a, b): sealed 10-second rollups where the buckets are 60 s or wider,
 * raw rows for the rest (the unsealed tail, ranges before the rollup, fine buckets). */
typedef struct acc {
    int64_t t0, step;
    int n;
    double *sum, *cnt; /* n x ROLLUP_NSIG */
    srv_tiers *tiers;  /* a device's: its rollups before its raw rows; NULL for a job */
} acc;

static void acc_row(void *ctx, int64_t ts, const double *v, const int *has) {
    acc *x = ctx;
    int64_t j = (ts - x->t0) / x->step;
    if (ts < x->t0 || j >= x->n) return;
    for (int k = 0; k < ROLLUP_NSIG; k++)
        if (has[k]) x->sum[j * ROLLUP_NSIG + k] += v[k], x->cnt[j * ROLLUP_NSIG + k] += 1;
}

static int acc_fill(gp_serve *s, acc *x, int is_job, const char *key, int64_t a, int64_t b) {
    int64_t lo = a > x->t0 ? a : x->t0, hi = x->t0 + x->step * x->n;
    if (b >= 0 && b < hi) hi = b;
    if (hi <= lo) return 0;
    sqlite3 *db = gp_store_db(s->store);
    /* Before the device's raw rows (retention deleted them), its stored rollups. */
    if (!is_job && x->tiers) {
        int64_t raw0;
        if (srv_tiers_scan(db, key, lo, hi, acc_row, x, x->tiers, &raw0) != 0) return -1;
        if (raw0 > lo) lo = raw0;
        if (hi <= lo) return 0;
    }
    srv_rollup *r = NULL;
    if (x->step >= 2 * ROLLUP_W_NS && x->step % ROLLUP_W_NS == 0)
        r = srv_rollup_get(db, s->rollups, &s->n_rollups, &s->rollup_clock, is_job, key);
    if (!r) return srv_rollup_scan(db, is_job, key, lo, hi, acc_row, x);
    /* Rollup buckets start on the 10-second grid; request buckets are whole multiples of
     * it, so with t0 on the grid every rollup bucket falls in exactly one request bucket. */
    int64_t base = srv_rollup_base_ns(r), sealed = srv_rollup_sealed_ns(r);
    int64_t mid_lo = lo > base ? lo : base, mid_hi = hi < sealed ? hi : sealed;
    if (mid_hi <= mid_lo) return srv_rollup_scan(db, is_job, key, lo, hi, acc_row, x);
    /* Align the raw edges to the rollup grid so no bucket is counted twice. */
    mid_lo = base + (mid_lo - base + ROLLUP_W_NS - 1) / ROLLUP_W_NS * ROLLUP_W_NS;
    if (mid_lo > mid_hi) mid_lo = mid_hi;
    if (lo < mid_lo && srv_rollup_scan(db, is_job, key, lo, mid_lo, acc_row, x) != 0) return -1;
    srv_rollup_fold(r, mid_lo, mid_hi, x->t0, x->step, x->n, x->sum, x->cnt);
    if (mid_hi < hi) return srv_rollup_scan(db, is_job, key, mid_hi, hi, acc_row, x);
    return 0;
}

static int acc_init(acc *x, const series *sr) {
    x->t0 = sr->t0, x->step = sr->step, x->n = sr->n;
    x->tiers = NULL;
    x->sum = calloc((size_t)sr->n * ROLLUP_NSIG, sizeof(double));
    x->cnt = calloc((size_t)sr->n * ROLLUP_NSIG, sizeof(double));
    return x->sum && x->cnt ? 0 : -1;
}

/* Adds one device's bucket means over [a, b) (clipped to the series): the series is the
 * mean over GPUs of each GPU's mean. */
static int series_add_device(gp_serve *s, series *x, const char *uuid, int64_t a, int64_t b) {
    acc d;
    int rc = acc_init(&d, x);
    d.tiers = &x->tiers;
    if (rc == 0) rc = acc_fill(s, &d, 0, uuid, a, b);
    for (int i = 0; rc == 0 && i < x->n; i++)
        for (int k = 0; k < N_SIG; k++) {
            double c = d.cnt[i * ROLLUP_NSIG + k];
            if (c > 0) x->sum[k][i] += d.sum[i * ROLLUP_NSIG + k] / c, x->cnt[k][i]++;
        }
    free(d.sum), free(d.cnt);
    return rc;
}

static void series_json(const series *x, json_t *o) {
    json_t *t = json_array();
    for (int i = 0; i < x->n; i++)
        json_array_append_new(t, json_real((x->t0 + x->step * (int64_t)i) / 1e9));
    json_object_set_new(o, "t", t);
    json_t *sig = json_object();
    for (int k = 0; k < N_SIG; k++) {
        json_t *a = json_array();
        for (int i = 0; i < x->n; i++)
            json_array_append_new(a, x->cnt[k][i] ? json_real(x->sum[k][i] / x->cnt[k][i])
                                                  : json_null());
        json_object_set_new(sig, SIG_NAME[k], a);
    }
    json_object_set_new(o, "signals", sig);
}

/* from/to/points with defaults [def_t0, def_t1]; 0 ok, -1 error set. */
static int series_range(const srv_req *q, srv_resp *r, int64_t def_t0, int64_t def_t1, int64_t *t0,
                        int64_t *step, int *n) {
    double from = def_t0 / 1e9, to = def_t1 / 1e9, points = 600;
    if (num_param(q, r, "from", 0, 1e11, &from) < 0 || num_param(q, r, "to", 0, 1e11, &to) < 0 ||
        num_param(q, r, "points", 1, SRV_MAX_POINTS, &points) < 0)
        return -1;
    if (to <= from) {
        if (!srv_param(q, "from") && !srv_param(q, "to"))
            to = from + 1; /* empty store */
        else {
            srv_error(r, 400, "empty range: 'to' (%.3f) must be after 'from' (%.3f)", to, from);
            return -1;
        }
    }
    if (to - from > SRV_MAX_RANGE_S) {
        srv_error(r, 400, "range of %.0f s is over the limit of %.0f s (31 days); ask for less",
                  to - from, SRV_MAX_RANGE_S);
        return -1;
    }
    *t0 = (int64_t)(from * 1e9);
    int64_t span = (int64_t)(to * 1e9) - *t0;
    *n = (int)points;
    *step = (span + *n - 1) / *n;
    if (*step < 1000000) *step = 1000000; /* 1 ms buckets at the finest */
    /* Wide buckets: a whole number of rollup buckets (serve/rollup.h). */
    if (*step >= 2 * ROLLUP_W_NS) *step = (*step + ROLLUP_W_NS - 1) / ROLLUP_W_NS * ROLLUP_W_NS;
    *n = (int)((span + *step - 1) / *step);
    if (*n < 1) *n = 1;
    return 0;
}

static void api_device_series(gp_serve *s, const srv_req *q, srv_resp *r, const char *uuid) {
    gp_device d;
    if (find_device(s, uuid, &d) <= 0) {
        srv_error(r, 404, "no device with uuid '%.100s'", uuid);
        return;
    }
    int64_t a = 0, b = 0, t0, step;
    int n;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s->store),
                           "SELECT (SELECT min(ts_ns) FROM samples WHERE uuid = ?1), (SELECT "
                           "max(ts_ns) FROM samples WHERE uuid = ?1)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            a = sqlite3_column_int64(st, 0), b = sqlite3_column_int64(st, 1) + 1;
        sqlite3_finalize(st);
    }
    if (series_range(q, r, a, b, &t0, &step, &n) != 0) return;
    series x;
    if (series_init(&x, t0, step, n) != 0 || series_add_device(s, &x, uuid, t0, -1) != 0) {
        series_free(&x);
        srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "uuid", json_string(uuid));
    json_object_set_new(o, "step_s", json_real(step / 1e9));
    series_json(&x, o);
    srv_tiers_json(&x.tiers, o);
    series_free(&x);
    send_json(r, o);
}

/* The time the job held GPUs; an open allocation ends at its device's newest sample
 * (one indexed lookup each, not a scan of the store). */
static void job_span(gp_serve *s, const gp_alloc *al, size_t na, int64_t *a, int64_t *b) {
    int64_t lo = -1, hi = -1;
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(gp_store_db(s->store), "SELECT max(ts_ns) FROM samples WHERE uuid = ?", -1,
                       &st, NULL);
    for (size_t i = 0; i < na; i++) {
        if (lo < 0 || al[i].from_ns < lo) lo = al[i].from_ns;
        int64_t to = al[i].to_ns;
        if (to < 0 && st) {
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, al[i].uuid, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW) to = sqlite3_column_int64(st, 0) + 1;
        }
        if (to > hi) hi = to;
    }
    sqlite3_finalize(st);
    if (lo < 0) gp_store_time_span(s->store, &lo, &hi);
    *a = lo;
    *b = hi > lo ? hi : lo + 1;
}

static void api_job_series(gp_serve *s, const srv_req *q, srv_resp *r, const gp_job *j) {
    gp_alloc *al = NULL;
    size_t na = 0;
    gp_store_job_allocs(s->store, j->id, &al, &na);
    int64_t a, b, t0, step;
    int n;
    job_span(s, al, na, &a, &b);
    if (series_range(q, r, a, b, &t0, &step, &n) != 0) {
        free(al);
        return;
    }
    series x;
    int bad = series_init(&x, t0, step, n) != 0;
    for (size_t i = 0; !bad && i < na; i++)
        bad = series_add_device(s, &x, al[i].uuid, al[i].from_ns, al[i].to_ns) != 0;
    /* Progress in the same buckets: steps from rank 0 (or unranked) only. */
    double *units = calloc((size_t)n, sizeof *units), *count = calloc((size_t)n, sizeof *count);
    int any_units = 0, inference = 0;
    acc p = {0};
    if (!bad && units && count) {
        bad = acc_init(&p, &x) != 0 || acc_fill(s, &p, 1, j->id, t0, -1) != 0;
        for (int i = 0; !bad && i < n; i++) {
            const double *v = p.sum + i * ROLLUP_NSIG, *c = p.cnt + i * ROLLUP_NSIG;
            count[i] = v[0];
            if (c[1] > 0) any_units = 1;
            if (v[3] > 0) inference = 1;
            units[i] = v[3] > 0 || inference ? v[2] : v[1];
        }
    }
    free(p.sum), free(p.cnt);
    if (bad || !units || !count) {
        series_free(&x);
        free(units), free(count), free(al);
        srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "job_id", json_string(j->id));
    json_object_set_new(o, "step_s", json_real(step / 1e9));
    series_json(&x, o);
    srv_tiers_json(&x.tiers, o);
    const char *unit = inference   ? "tokens"
                       : any_units ? (j->unit_name[0] ? j->unit_name : "units")
                                   : "steps";
    json_t *rate = json_array();
    /* Retention deleted its events: its progress is unknown, not zero. */
    int64_t pruned_before = -1;
    int pruned = gp_store_events_pruned(s->store, j->id, &pruned_before) == 1;
    if (pruned) json_object_set_new(o, "events_pruned_before_ns", json_integer(pruned_before));
    for (int i = 0; i < n && pruned; i++)
        json_array_append_new(rate, json_null());
    for (int i = 0; i < n && !pruned; i++) {
        int64_t bt0 = t0 + step * (int64_t)i;
        int inside = 0; /* null outside the allocations: no progress is unknown there */
        for (size_t k = 0; k < na && !inside; k++)
            inside = bt0 + step > al[k].from_ns && (al[k].to_ns < 0 || bt0 < al[k].to_ns);
        double v = (inference || any_units) ? units[i] : count[i];
        json_array_append_new(rate, inside ? json_real(v / (step / 1e9)) : json_null());
    }
    json_object_set_new(o, "progress", json_pack("{s:s, s:o}", "unit", unit, "rate_per_s", rate));
    series_free(&x);
    free(units), free(count), free(al);
    send_json(r, o);
}

/* ---- jobs ---- */

static void api_jobs(gp_serve *s, srv_resp *r) {
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(s->store, &jobs, &nj) != 0) {
        srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
        return;
    }
    double price = price_for(s);
    json_t *a = json_array();
    for (size_t i = 0; i < nj; i++) {
        gp_job_summary js;
        if (srv_job_summary(s, &jobs[i], &js) == 0)
            json_array_append_new(a, job_json(s, &js, price));
    }
    free(jobs);
    send_json(r, json_pack("{s:o}", "jobs", a));
}

static void api_job(gp_serve *s, const srv_req *q, srv_resp *r, const gp_job *j) {
    double windows = 0;
    if (num_param(q, r, "windows", 0, 200, &windows) < 0) return;
    gp_job_summary js;
    int src = srv_job_summary(s, j, &js);
    if (src == -2) {
        srv_error(r, 503,
                  "job '%s' has too many events to summarise live; run goodput report --job %s",
                  j->id, j->id);
        return;
    }
    if (src != 0) {
        /* Its events deleted by retention and no stored result to serve (a later run under
         * the same id, another layout): the data is gone, not the server broken. */
        char why[512];
        if (gp_store_events_pruned_err(s->store, j->id, why, sizeof why) != 0)
            srv_error(r, 410, "%s", why);
        else
            srv_error(r, 500, "cannot summarise job '%s': %s", j->id, gp_store_errmsg(s->store));
        return;
    }
    double price = price_for(s);
    json_t *o = job_json(s, &js, price);
    json_object_set_new(
        o, "lifecycle",
        json_pack("{s:o, s:o, s:o, s:o}", "submitted_s", sec_or_null(j->submitted_ns),
                  "allocated_s",
                  sec_or_null(j->allocated_ns >= 0 ? j->allocated_ns : js.gp.first_alloc_ns),
                  "ready_s", sec_or_null(js.gp.ready_ns), "ended_s", sec_or_null(j->ended_ns)));
    gp_alloc *al = NULL;
    size_t na = 0;
    json_t *aa = json_array();
    if (gp_store_job_allocs(s->store, j->id, &al, &na) == 0)
        for (size_t i = 0; i < na; i++)
            json_array_append_new(
                aa, json_pack("{s:s, s:o, s:o}", "uuid", al[i].uuid, "from_s",
                              sec_or_null(al[i].from_ns), "to_s",
                              al[i].to_ns >= 0 ? sec_or_null(al[i].to_ns) : json_null()));
    json_object_set_new(o, "allocations", aa);
    int64_t a, b;
    job_span(s, al, na, &a, &b);
    free(al);
    json_object_set_new(o, "span", json_pack("{s:f, s:f}", "from_s", a / 1e9, "to_s", b / 1e9));
    json_t *wa = json_array();
    int nw = (int)windows;
    /* Retention deleted its events: a window would be computed from what is left. Its
     * windows are unknown (the whole-job figures above are its stored result). */
    if (js.events_pruned_ns > 0 && nw > 0) {
        nw = 0;
        json_object_set_new(o, "windows_unknown", json_string("events deleted by retention"));
    }
    /* Windows share the job's events: the running job's accounting state, or (ended job,
     * or a running one whose state froze its past and dropped its old events) one made for
     * this request, so n windows read the events once. */
    gp_job_acct *acct = nw > 0 ? srv_job_acct(s, j) : NULL, *tmp_acct = NULL;
    if (acct && gp_job_acct_frozen(acct)) acct = NULL;
    if (nw > 0 && !acct) acct = tmp_acct = gp_job_acct_new(j->id, NULL);
    /* Windows sit on a fixed grid from the job's start with a round width (1 min .. 1 day),
     * so a window wholly in the past never changes and is computed once. */
    static const int64_t widths_s[] = {60,   300,   600,   900,   1800, 3600,
                                       7200, 10800, 21600, 43200, 86400};
    int64_t w_ns = 86400 * 1000000000LL;
    for (size_t k = 0; nw > 0 && k < sizeof widths_s / sizeof widths_s[0]; k++)
        if (widths_s[k] * 1000000000LL * nw >= b - a) {
            w_ns = widths_s[k] * 1000000000LL;
            break;
        }
    for (int w = 0; w < nw && a + w * w_ns < b; w++) {
        int64_t w0 = a + w * w_ns, w1 = w0 + w_ns;
        int sealed = w1 + 60000000000LL <= b || j->ended_ns > 0;
        double now = mono_now_s();
        json_t *hit = NULL;
        for (int c = 0; c < s->n_windows && !hit; c++)
            if (s->windows[c].t0 == w0 && s->windows[c].t1 == w1 &&
                strcmp(s->windows[c].id, j->id) == 0 &&
                (s->windows[c].until_s == 0 || now < s->windows[c].until_s))
                hit = s->windows[c].json;
        if (hit) {
            json_array_append(wa, hit);
            continue;
        }
        gp_summary_opts so = {.t0_ns = w0, .t1_ns = w1 < b ? w1 : b};
        gp_job_summary ws;
        char err[256];
        if (acct ? gp_job_acct_window(acct, s->store, so.t0_ns, so.t1_ns, &ws, err, sizeof err)
                 : gp_job_summary_compute(s->store, j->id, &so, &ws, err, sizeof err))
            continue;
        double cost = mono_now_s() - now;
        json_t *bk = json_object();
        for (int k = 0; k < GP_B__COUNT; k++)
            json_object_set_new(bk, gp_bucket_name((gp_bucket)k), json_real(ws.gp.bucket_gpu_s[k]));
        json_t *wj = json_pack("{s:f, s:f, s:o, s:f, s:o, s:o}", "from_s", w0 / 1e9, "to_s",
                               so.t1_ns / 1e9, "goodput", num_or_null(ws.gp.goodput),
                               "allocated_gpu_s", ws.gp.allocated_gpu_s, "mean_gpu_util",
                               num_or_null(ws.mean_gpu_util), "gpu_s_by_bucket", bk);
        json_array_append_new(wa, wj);
        /* Sealed windows are kept for good; the open one, like a running job's summary,
         * for ten times what it cost (at most 60 s). */
        if ((sealed && so.t1_ns == w1) || cost * 10 > 0.5) {
            int c = -1;
            for (int k = 0; k < s->n_windows && c < 0; k++)
                if (s->windows[k].t0 == w0 && s->windows[k].t1 == w1 &&
                    strcmp(s->windows[k].id, j->id) == 0)
                    c = k;
            if (c < 0) c = s->n_windows < 512 ? s->n_windows++ : (s->next_window++ % 512);
            if (s->windows[c].json) json_decref(s->windows[c].json);
            snprintf(s->windows[c].id, sizeof s->windows[c].id, "%s", j->id);
            s->windows[c].t0 = w0;
            s->windows[c].t1 = w1;
            s->windows[c].until_s =
                sealed && so.t1_ns == w1 ? 0 : now + (cost * 10 < 60 ? cost * 10 : 60);
            s->windows[c].json = json_incref(wj);
        }
    }
    gp_job_acct_free(tmp_acct);
    json_object_set_new(o, "windows", wa);
    gp_finding *f = NULL;
    size_t nf = 0;
    json_object_set_new(o, "findings",
                        gp_store_list_findings(s->store, j->id, &f, &nf) == 0
                            ? gp_findings_json(f, nf, 0)
                            : json_array());
    free(f);
    srv_job_pipelines(s, j, o);
    send_json(r, o);
}

/* The agent's live findings (gp_serve_set_live), filtered as the stored ones: "live"
 * {"as_of_ns", "window_s"} and "live_findings" [...], or null and [] without an agent
 * pass (a plain `goodput serve`, or before the first minute). */
static void add_live_findings(gp_serve *s, json_t *doc, const char *job, const char *cls,
                              size_t limit) {
    pthread_mutex_lock(&s->mu);
    char *text = s->live_json ? strdup(s->live_json) : NULL;
    pthread_mutex_unlock(&s->mu);
    json_t *live = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *src = live ? json_object_get(live, "findings") : NULL, *out = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(src, i, x) {
        if (limit && json_array_size(out) >= limit) break;
        const char *xj = json_string_value(json_object_get(x, "job"));
        const char *xc = json_string_value(json_object_get(x, "class"));
        if (job && (!xj || strcmp(xj, job) != 0)) continue;
        if (cls && (!xc || strcmp(xc, cls) != 0)) continue;
        json_array_append(out, x);
    }
    json_object_set_new(doc, "live",
                        live ? json_pack("{s:O, s:O, s:O}", "as_of_ns",
                                         json_object_get(live, "as_of_ns"), "window_s",
                                         json_object_get(live, "window_s"), "jobs",
                                         json_object_get(live, "jobs"))
                             : json_null());
    json_object_set_new(doc, "live_findings", out);
    json_decref(live);
}

static void api_findings(gp_serve *s, const srv_req *q, srv_resp *r) {
    const char *job = srv_param(q, "job");
    const char *cls = srv_param(q, "class");
    double limit = 100;
    if (num_param(q, r, "limit", 1, 10000, &limit) < 0) return;
    if (cls && gp_finding_class_parse(cls) < 0) {
        srv_error(r, 400, "parameter 'class=%.40s' is not a finding class (docs/findings.md)", cls);
        return;
    }
    gp_finding *f = NULL;
    size_t nf = 0;
    if (gp_store_list_findings(s->store, job, &f, &nf) != 0) {
        srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < nf; i++)
        if (!cls || (int)f[i].cls == gp_finding_class_parse(cls)) f[k++] = f[i];
    json_t *a = gp_findings_json(f, k, (size_t)limit);
    free(f);
    json_t *doc = json_pack("{s:o}", "findings", a);
    add_live_findings(s, doc, job,
                      cls ? gp_finding_class_name((gp_finding_class)gp_finding_class_parse(cls))
                          : NULL,
                      (size_t)limit);
    send_json(r, doc);
}

static void api_index(srv_resp *r) {
    send_json(r, json_pack("{s:s, s:[s,s,s,s,s,s,s,s,s,s]}", "doc", "docs/api.md", "routes",
                           "GET /api/v1/fleet", "GET /api/v1/devices", "GET /api/v1/devices/{uuid}",
                           "GET /api/v1/devices/{uuid}/series?from=&to=&points=",
                           "GET /api/v1/jobs", "GET /api/v1/jobs/{id}?windows=N",
                           "GET /api/v1/jobs/{id}/series?from=&to=&points=",
                           "GET /api/v1/jobs/{id}/pipeline?what_if=STAGE=N,...&queue=&items=",
                           "GET /api/v1/findings?job=&class=&limit=", "POST /api/v1/events"));
}

/* Splits "/api/v1/NAME/ID/SUB" (ID is percent-decoded by libmicrohttpd only in the query,
 * so decode %XX here). */
static int pct_decode(const char *in, size_t n, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k + 1 >= cap) return -1;
        if (in[i] == '%' && i + 2 < n + 0 && in[i + 1] && in[i + 2]) {
            char hx[3] = {in[i + 1], in[i + 2], 0};
            char *end;
            long v = strtol(hx, &end, 16);
            if (*end || v <= 0) return -1;
            out[k++] = (char)v;
            i += 2;
        } else
            out[k++] = in[i];
    }
    out[k] = 0;
    return 0;
}

void srv_api(gp_serve *s, const srv_req *q, srv_resp *r) {
    const char *p = q->path;
    if (strncmp(p, "/api/v1", 7) != 0 || (p[7] && p[7] != '/')) {
        srv_error(r, 404, "unknown API version in %s; this server speaks /api/v1/", p);
        return;
    }
    p += 7;
    if (!*p || strcmp(p, "/") == 0) {
        api_index(r);
        return;
    }
    if (strcmp(p, "/fleet") == 0) {
        api_fleet(s, r);
        return;
    }
    if (strcmp(p, "/findings") == 0) {
        api_findings(s, q, r);
        return;
    }
    if (strcmp(p, "/jobs") == 0) {
        api_jobs(s, r);
        return;
    }
    if (strcmp(p, "/devices") == 0) {
        gp_device *devs = NULL;
        size_t nd = 0;
        if (gp_store_list_devices(s->store, &devs, &nd) != 0) {
            srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
            return;
        }
        json_t *a = json_array();
        for (size_t i = 0; i < nd; i++)
            json_array_append_new(a, device_json(s, &devs[i], 0));
        free(devs);
        {
            send_json(r, json_pack("{s:o}", "devices", a));
            return;
        }
    }
    int is_job = strncmp(p, "/jobs/", 6) == 0, is_dev = strncmp(p, "/devices/", 9) == 0;
    if (!is_job && !is_dev) {
        srv_error(r, 404, "no API route %s (see GET /api/v1/)", q->path);
        return;
    }
    const char *id = p + (is_job ? 6 : 9);
    const char *slash = strchr(id, '/');
    size_t idlen = slash ? (size_t)(slash - id) : strlen(id);
    const char *sub = slash ? slash + 1 : "";
    char key[256];
    if (idlen == 0 || pct_decode(id, idlen, key, sizeof key) != 0) {
        srv_error(r, 400, "bad %s id in %s", is_job ? "job" : "device", q->path);
        return;
    }
    if (*sub && strcmp(sub, "series") != 0 && (is_dev || strcmp(sub, "pipeline") != 0)) {
        srv_error(r, 404, "no API route %s (sub-resource '%.40s'; only 'series'%s)", q->path, sub,
                  is_job ? " and 'pipeline'" : "");
        return;
    }
    if (is_dev) {
        if (*sub) {
            api_device_series(s, q, r, key);
            return;
        }
        gp_device d;
        if (find_device(s, key, &d) <= 0) {
            srv_error(r, 404, "no device with uuid '%.100s'", key);
            return;
        }
        {
            send_json(r, device_json(s, &d, 1));
            return;
        }
    }
    gp_job j;
    int found = gp_store_get_job(s->store, key, &j);
    if (found < 0) {
        srv_error(r, 500, "store: %s", gp_store_errmsg(s->store));
        return;
    }
    if (found == 0) {
        srv_error(r, 404, "no job '%.100s' (see GET /api/v1/jobs)", key);
        return;
    }
    if (strcmp(sub, "pipeline") == 0) {
        srv_api_job_pipeline(s, q, r, &j);
        return;
    }
    if (*sub) {
        api_job_series(s, q, r, &j);
        return;
    }
    api_job(s, q, r, &j);
}
