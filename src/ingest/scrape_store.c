/* scrape_store.c: scrape windows in the store and in the report.
 *
 * The report aggregates windows per service: rates are time-weighted means over the
 * windows (total requests / total seconds), latency p50 is the median of the windows'
 * p50s and p99 the worst window's p99 (a percentile of percentiles would be wrong; these
 * two are bounds a reader can trust and are labelled as such). Unknown stays null.
 *
 * A window's percentile whose rank falls above the histogram's largest finite bucket is
 * Prometheus' answer (that bound) but only a floor (gp_latency_is_floor, from the
 * beyond_top columns of migration 12). The median or worst over windows is a floor when a
 * window it is taken from is one: text prints it ">= 30s", JSON keeps the number with a
 * *_is_floor boolean beside it (null for windows stored before migration 12). SLO goodput
 * over windows is unknown when any window's target lay above the largest bucket with
 * observations beyond it (gp_hist_fraction_below): counting the known windows alone would
 * understate it.
 *
 * Each service also lists its engines (scrape_engine_windows: one row per window and
 * (engine, model) label pair) with SLO goodput, queue time, preemptions and prefix-cache
 * hits, so a data-parallel engine that lags is visible instead of averaged away. */
#include "ingest/scrape_store.h"
#include "util/term.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void bind_opt(sqlite3_stmt *st, int i, double v) {
    if (v < 0 || !isfinite(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

#define ENGINE_COLS 43 /* 39, and 4 beyond_top columns of migration 12 */
static int store_engine(gp_store *s, const gp_scrape_window *w, const gp_scrape_engine *e) {
    sqlite3_stmt *st;
    char sql[512];
    int at = snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO scrape_engine_windows VALUES(?1");
    for (int i = 2; i <= ENGINE_COLS; i++)
        at += snprintf(sql + at, sizeof sql - (size_t)at, ",?%d", i);
    snprintf(sql + at, sizeof sql - (size_t)at, ")");
    if (sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, w->job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, w->t1_ns);
    sqlite3_bind_text(st, 3, e->engine, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, e->model, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, w->t0_ns);
    sqlite3_bind_text(st, 6, gp_scrape_flavor_name(w->flavor), -1, SQLITE_STATIC);
    const double v[] = {e->requests_per_s,
                        e->ok_per_s,
                        e->errors_per_s,
                        e->prompt_tokens_per_s,
                        e->generation_tokens_per_s,
                        e->ttft.count,
                        e->ttft.mean_s,
                        e->ttft.p50_s,
                        e->ttft.p99_s,
                        e->itl.count,
                        e->itl.mean_s,
                        e->itl.p50_s,
                        e->itl.p99_s,
                        e->e2e.count,
                        e->e2e.mean_s,
                        e->e2e.p50_s,
                        e->e2e.p99_s,
                        e->queue.count,
                        e->queue.mean_s,
                        e->queue.p99_s,
                        e->prefill.mean_s,
                        e->decode.mean_s,
                        e->running,
                        e->waiting,
                        e->kv_cache_usage,
                        e->preemptions_per_s,
                        e->prefix_cache_hit_ratio,
                        e->spec_accept_ratio,
                        e->batch_size,
                        e->compute_mean_s,
                        e->slo_ttft_frac,
                        e->slo_itl_frac,
                        e->slo_ok_per_s,
                        e->ttft.beyond_top,
                        e->itl.beyond_top,
                        e->e2e.beyond_top,
                        e->queue.beyond_top};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        bind_opt(st, 7 + (int)i, v[i]);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

int gp_scrape_store_window(gp_store *s, const gp_scrape_window *w) {
    gp_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.id, sizeof j.id, "%s", w->job_id);
    j.submitted_ns = j.allocated_ns = j.ready_ns = j.ended_ns = -1;
    j.exit_code = -1;
    snprintf(j.unit_name, sizeof j.unit_name, "tokens");
    if (gp_store_put_job(s, &j) != 0) return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "INSERT OR REPLACE INTO scrape_windows VALUES(?1,?2,?3,?4,?5,?6,?7,?8,"
                           "?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,"
                           "?26,?27,?28,?29,?30,?31,?32)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, w->job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, w->t0_ns);
    sqlite3_bind_int64(st, 3, w->t1_ns);
    sqlite3_bind_text(st, 4, gp_scrape_flavor_name(w->flavor), -1, SQLITE_STATIC);
    bind_opt(st, 5, w->requests_per_s);
    bind_opt(st, 6, w->ok_per_s);
    bind_opt(st, 7, w->errors_per_s);
    bind_opt(st, 8, w->error_ratio);
    bind_opt(st, 9, w->prompt_tokens_per_s);
    bind_opt(st, 10, w->generation_tokens_per_s);
    const gp_latency *lat[3] = {&w->ttft, &w->itl, &w->e2e};
    for (int k = 0; k < 3; k++) {
        bind_opt(st, 11 + k * 5, lat[k]->count);
        bind_opt(st, 12 + k * 5, lat[k]->mean_s);
        bind_opt(st, 13 + k * 5, lat[k]->p50_s);
        bind_opt(st, 14 + k * 5, lat[k]->p90_s);
        bind_opt(st, 15 + k * 5, lat[k]->p99_s);
    }
    bind_opt(st, 26, w->running);
    bind_opt(st, 27, w->waiting);
    bind_opt(st, 28, w->kv_cache_usage);
    sqlite3_bind_int(st, 29, w->counter_reset);
    for (int k = 0; k < 3; k++) /* migration 12 */
        bind_opt(st, 30 + k, lat[k]->beyond_top);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    for (int i = 0; rc == 0 && i < w->n_engines && i < GP_SCRAPE_MAX_SERIES; i++)
        rc = store_engine(s, w, &w->eng[i]);
    return rc;
}

/* A percentile over windows: seconds (-1 unknown) and whether it is a floor (1), a reading
 * (0) or not known to be either (-1: windows stored before migration 12). */
typedef struct {
    double s;
    int floor;
} pct_s;

typedef struct {
    char job[GP_JOB_ID_MAX];
    char flavor[16];
    int windows;
    double span_s, req_per_s, ok_per_s, err_ratio, gen_tok_s, prompt_tok_s, kv_last;
    pct_s ttft_p50, ttft_p99, itl_p50, itl_p99, e2e_p50, e2e_p99;
} service_row;

/* Floors sort after readings of the same value, unknowns between: the element picked at a
 * tie is a floor only when no reading of that value is left to pick. */
static int floor_rank(int f) {
    return f == 1 ? 2 : f < 0 ? 1 : 0;
}

static int cmp_pct(const void *a, const void *b) {
    const pct_s *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    return floor_rank(x->floor) - floor_rank(y->floor);
}

/* Two flags as one: a floor if either is, else unknown if either is. */
static int floor_join(int a, int b) {
    return a == 1 || b == 1 ? 1 : a < 0 || b < 0 ? -1 : 0;
}

/* The median (median = 1) or the largest over windows of one percentile (lat "ttft", pctl
 * 50) of a service (engine NULL) or of one engine, with its floor flag. SQLite has no
 * median: fetch and pick. */
static pct_s window_pct(sqlite3 *db, const char *job, const char *engine, const char *model,
                        const char *lat, int pctl, int median) {
    pct_s r = {-1, -1};
    char sql[320];
    snprintf(sql, sizeof sql,
             "SELECT %s_p%d_s, %s_beyond_top FROM %s WHERE job_id = ?1 AND %s_p%d_s IS NOT NULL%s",
             lat, pctl, lat, engine ? "scrape_engine_windows" : "scrape_windows", lat, pctl,
             engine ? " AND engine = ?2 AND model = ?3" : "");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return r;
    sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
    if (engine) {
        sqlite3_bind_text(st, 2, engine, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, model, -1, SQLITE_TRANSIENT);
    }
    pct_s *v = NULL;
    size_t n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            pct_s *p = realloc(v, cap * sizeof *v);
            if (!p) break;
            v = p;
        }
        double beyond =
            sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 1);
        v[n].s = sqlite3_column_double(st, 0);
        v[n++].floor = gp_latency_is_floor(beyond, pctl / 100.0);
    }
    sqlite3_finalize(st);
    if (n > 0) {
        qsort(v, n, sizeof *v, cmp_pct);
        if (!median) {
            r = v[n - 1];
        } else if (n % 2) {
            r = v[n / 2];
        } else { /* either middle a floor: the true median may be higher */
            r.s = (v[n / 2 - 1].s + v[n / 2].s) / 2;
            r.floor = floor_join(v[n / 2 - 1].floor, v[n / 2].floor);
        }
    }
    free(v);
    return r;
}

static double col_or_unknown(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_double(st, i);
}

static size_t load_services(gp_store *s, const char *job_id, service_row **out) {
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    *out = NULL;
    const char *sql =
        "SELECT job_id, max(flavor), count(*), sum((t1_ns - t0_ns) / 1e9),"
        " sum(requests_per_s * (t1_ns - t0_ns) / 1e9), sum(ok_per_s * (t1_ns - t0_ns) / 1e9),"
        " sum(errors_per_s * (t1_ns - t0_ns) / 1e9),"
        " sum(generation_tokens_per_s * (t1_ns - t0_ns) / 1e9),"
        " sum(prompt_tokens_per_s * (t1_ns - t0_ns) / 1e9),"
        " (SELECT kv_cache_usage FROM scrape_windows w2 WHERE w2.job_id = w.job_id"
        "  ORDER BY t1_ns DESC LIMIT 1)"
        " FROM scrape_windows w WHERE ?1 IS NULL OR job_id = ?1 GROUP BY job_id ORDER BY job_id";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    if (job_id) sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    size_t n = 0, cap = 0;
    service_row *rows = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            service_row *p = realloc(rows, cap * sizeof *rows);
            if (!p) break;
            rows = p;
        }
        service_row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->job, sizeof r->job, "%s", (const char *)sqlite3_column_text(st, 0));
        const unsigned char *fl = sqlite3_column_text(st, 1);
        snprintf(r->flavor, sizeof r->flavor, "%s", fl ? (const char *)fl : "");
        r->windows = sqlite3_column_int(st, 2);
        r->span_s = sqlite3_column_double(st, 3);
        double req = col_or_unknown(st, 4), ok = col_or_unknown(st, 5), err = col_or_unknown(st, 6);
        double gen = col_or_unknown(st, 7), prompt = col_or_unknown(st, 8);
        r->req_per_s = req >= 0 && r->span_s > 0 ? req / r->span_s : -1;
        r->ok_per_s = ok >= 0 && r->span_s > 0 ? ok / r->span_s : -1;
        r->err_ratio = (req > 0 && err >= 0) ? err / req : -1;
        r->gen_tok_s = gen >= 0 && r->span_s > 0 ? gen / r->span_s : -1;
        r->prompt_tok_s = prompt >= 0 && r->span_s > 0 ? prompt / r->span_s : -1;
        r->kv_last = col_or_unknown(st, 9);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < n; i++) {
        service_row *r = &rows[i];
        r->ttft_p50 = window_pct(db, r->job, NULL, NULL, "ttft", 50, 1);
        r->itl_p50 = window_pct(db, r->job, NULL, NULL, "itl", 50, 1);
        r->e2e_p50 = window_pct(db, r->job, NULL, NULL, "e2e", 50, 1);
        r->ttft_p99 = window_pct(db, r->job, NULL, NULL, "ttft", 99, 0);
        r->itl_p99 = window_pct(db, r->job, NULL, NULL, "itl", 99, 0);
        r->e2e_p99 = window_pct(db, r->job, NULL, NULL, "e2e", 99, 0);
    }
    *out = rows;
    return n;
}

/* One engine over all windows: rates are time-weighted, latency means weighted by their
 * observation counts (exact), p99 the worst window's, SLO fractions weighted by counts
 * (exact: counts add across windows; unknown when one window's is, see the top). */
typedef struct {
    char engine[32], model[96];
    int windows;
    double span_s, req_per_s, ok_per_s, gen_tok_s, slo_ok_per_s, slo_ttft_frac, slo_itl_frac;
    double ttft_mean, itl_mean, e2e_mean, queue_mean;
    pct_s ttft_p99, itl_p99, e2e_p99, queue_p99;
    double prefill_mean, decode_mean, preempt_per_s, prefix_hit, spec_accept, batch, kv_last;
    double running_last, waiting_last;
} engine_row;

/* A window whose SLO fraction is unknown although it has observations and the target is set
 * (other windows have a fraction): the target lay above the largest finite bucket. */
#define SLO_UNKNOWN(x)                                                                             \
    "(max(slo_" x "_frac IS NULL AND " x "_count > 0) AND count(slo_" x "_frac) > 0)"

static size_t load_engines(sqlite3 *db, const char *job, engine_row **out) {
    *out = NULL;
    const char *sql =
        "SELECT engine, model, count(*), sum((t1_ns - t0_ns) / 1e9),"
        " sum(requests_per_s * (t1_ns - t0_ns) / 1e9), sum(ok_per_s * (t1_ns - t0_ns) / 1e9),"
        " sum(generation_tokens_per_s * (t1_ns - t0_ns) / 1e9),"
        " CASE WHEN " SLO_UNKNOWN("ttft") " OR " SLO_UNKNOWN(
            "itl") " THEN NULL"
                   "   ELSE sum(slo_ok_per_s * (t1_ns - t0_ns) / 1e9) END,"
                   " CASE WHEN " SLO_UNKNOWN(
                       "ttft") " THEN NULL ELSE"
                               "   sum(slo_ttft_frac * ttft_count) / sum(CASE WHEN slo_ttft_frac "
                               "IS NOT NULL"
                               "   THEN ttft_count END) END,"
                               " CASE WHEN " SLO_UNKNOWN(
                                   "itl") " THEN NULL ELSE"
                                          "   sum(slo_itl_frac * itl_count) / sum(CASE WHEN "
                                          "slo_itl_frac IS NOT NULL"
                                          "   THEN itl_count END) END,"
                                          " sum(ttft_mean_s * ttft_count) / sum(CASE WHEN "
                                          "ttft_mean_s IS NOT NULL"
                                          "   THEN ttft_count END), max(ttft_p99_s),"
                                          " sum(itl_mean_s * itl_count) / sum(CASE WHEN itl_mean_s "
                                          "IS NOT NULL"
                                          "   THEN itl_count END), max(itl_p99_s),"
                                          " sum(e2e_mean_s * e2e_count) / sum(CASE WHEN e2e_mean_s "
                                          "IS NOT NULL"
                                          "   THEN e2e_count END), max(e2e_p99_s),"
                                          " sum(queue_mean_s * queue_count) / sum(CASE WHEN "
                                          "queue_mean_s IS NOT NULL"
                                          "   THEN queue_count END), max(queue_p99_s),"
                                          " avg(prefill_mean_s), avg(decode_mean_s),"
                                          " sum(preemptions_per_s * (t1_ns - t0_ns) / 1e9),"
                                          " avg(prefix_cache_hit_ratio), avg(spec_accept_ratio), "
                                          "avg(batch_size),"
                                          " (SELECT kv_cache_usage FROM scrape_engine_windows x "
                                          "WHERE x.job_id = w.job_id AND"
                                          "  x.engine = w.engine AND x.model = w.model ORDER BY "
                                          "t1_ns DESC LIMIT 1),"
                                          " (SELECT running FROM scrape_engine_windows x WHERE "
                                          "x.job_id = w.job_id AND"
                                          "  x.engine = w.engine AND x.model = w.model ORDER BY "
                                          "t1_ns DESC LIMIT 1),"
                                          " (SELECT waiting FROM scrape_engine_windows x WHERE "
                                          "x.job_id = w.job_id AND"
                                          "  x.engine = w.engine AND x.model = w.model ORDER BY "
                                          "t1_ns DESC LIMIT 1)"
                                          " FROM scrape_engine_windows w WHERE job_id = ?1 GROUP "
                                          "BY engine, model"
                                          " ORDER BY engine, model";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, job, -1, SQLITE_TRANSIENT);
    size_t n = 0, cap = 0;
    engine_row *rows = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            engine_row *p = realloc(rows, cap * sizeof *rows);
            if (!p) break;
            rows = p;
        }
        engine_row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->engine, sizeof r->engine, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(r->model, sizeof r->model, "%s", (const char *)sqlite3_column_text(st, 1));
        r->windows = sqlite3_column_int(st, 2);
        r->span_s = sqlite3_column_double(st, 3);
        double span = r->span_s;
        double req = col_or_unknown(st, 4), ok = col_or_unknown(st, 5);
        double gen = col_or_unknown(st, 6), good = col_or_unknown(st, 7);
        r->req_per_s = req >= 0 && span > 0 ? req / span : -1;
        r->ok_per_s = ok >= 0 && span > 0 ? ok / span : -1;
        r->gen_tok_s = gen >= 0 && span > 0 ? gen / span : -1;
        r->slo_ok_per_s = good >= 0 && span > 0 ? good / span : -1;
        r->slo_ttft_frac = col_or_unknown(st, 8);
        r->slo_itl_frac = col_or_unknown(st, 9);
        r->ttft_mean = col_or_unknown(st, 10);
        r->itl_mean = col_or_unknown(st, 12);
        r->e2e_mean = col_or_unknown(st, 14);
        r->queue_mean = col_or_unknown(st, 16);
        r->prefill_mean = col_or_unknown(st, 18);
        r->decode_mean = col_or_unknown(st, 19);
        double pre = col_or_unknown(st, 20);
        r->preempt_per_s = pre >= 0 && span > 0 ? pre / span : -1;
        r->prefix_hit = col_or_unknown(st, 21);
        r->spec_accept = col_or_unknown(st, 22);
        r->batch = col_or_unknown(st, 23);
        r->kv_last = col_or_unknown(st, 24);
        r->running_last = col_or_unknown(st, 25);
        r->waiting_last = col_or_unknown(st, 26);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < n; i++) { /* the worst p99s again, with their floor flags */
        engine_row *r = &rows[i];
        r->ttft_p99 = window_pct(db, job, r->engine, r->model, "ttft", 99, 0);
        r->itl_p99 = window_pct(db, job, r->engine, r->model, "itl", 99, 0);
        r->e2e_p99 = window_pct(db, job, r->engine, r->model, "e2e", 99, 0);
        r->queue_p99 = window_pct(db, job, r->engine, r->model, "queue", 99, 0);
    }
    *out = rows;
    return n;
}

/* "12ms", or "-" when unknown (never "-ms") */
static void fmt_ms(char *b, size_t cap, double s) {
    if (s < 0 || !isfinite(s))
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, "%.0fms", s * 1e3);
}

/* A percentile: as fmt_ms, or ">= 30s" when it is a floor (the largest finite bucket bound;
 * seconds from 1 s on, so it fits the same columns: ">= 250ms", ">= 2.5s", ">= 1200s"). */
static void fmt_pct(char *b, size_t cap, pct_s p) {
    if (p.floor != 1 || p.s < 0 || !isfinite(p.s))
        fmt_ms(b, cap, p.s);
    else if (p.s >= 100)
        snprintf(b, cap, ">= %.0fs", p.s);
    else if (p.s >= 1)
        snprintf(b, cap, ">= %.3gs", p.s);
    else
        snprintf(b, cap, ">= %.3gms", p.s * 1e3);
}

static void fmt_num(char *b, size_t cap, const char *fmt, double v) {
    if (v < 0 || !isfinite(v))
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, fmt, v);
}

/* Per-engine lines under a service: printed when the server labels engines or models.
 * Returns 1 when a floor was printed. */
static int engines_text(sqlite3 *db, const char *job, FILE *out) {
    engine_row *e;
    size_t n = load_engines(db, job, &e);
    int floors = 0;
    if (n == 0 || (n == 1 && !e[0].engine[0])) {
        free(e);
        return 0;
    }
    /* 97 columns: short heads for the times (means unless _P99), names shortened in the
     * middle */
    fprintf(out, "    %-14s %6s %8s %7s %7s %7s %7s %7s %9s %7s %4s\n", "ENGINE (MODEL)", "REQ/S",
            "SLO_OK/S", "TTFT", "TTFT99", "ITL", "QUEUE", "QUEUE99", "PREEMPT/S", "PREFIX%", "KV%");
    for (size_t i = 0; i < n; i++) {
        engine_row *r = &e[i];
        char name[160], req[16], good[16], t1[16], t2[16], i1[16], q1[16], q2[16], pre[16], hit[16],
            kv[16];
        snprintf(name, sizeof name, "%s (%s)", r->engine[0] ? r->engine : "-",
                 r->model[0] ? r->model : "-");
        fmt_num(req, sizeof req, "%.2f", r->req_per_s);
        fmt_num(good, sizeof good, "%.2f", r->slo_ok_per_s);
        fmt_ms(t1, sizeof t1, r->ttft_mean);
        fmt_pct(t2, sizeof t2, r->ttft_p99);
        fmt_ms(i1, sizeof i1, r->itl_mean);
        fmt_ms(q1, sizeof q1, r->queue_mean);
        fmt_pct(q2, sizeof q2, r->queue_p99);
        floors |= r->ttft_p99.floor == 1 || r->queue_p99.floor == 1;
        fmt_num(pre, sizeof pre, "%.3f", r->preempt_per_s);
        fmt_num(hit, sizeof hit, "%.0f", r->prefix_hit < 0 ? -1 : r->prefix_hit * 100);
        fmt_num(kv, sizeof kv, "%.0f", r->kv_last < 0 ? -1 : r->kv_last * 100);
        char nm[64];
        fprintf(out, "    %-14s %6s %8s %7s %7s %7s %7s %7s %9s %7s %4s\n",
                gp_ellipsize(name, 14, nm, sizeof nm), req, good, t1, t2, i1, q1, q2, pre, hit, kv);
    }
    free(e);
    return floors;
}

void gp_scrape_report_text(gp_store *s, const char *job_id, FILE *out) {
    service_row *rows;
    size_t n = load_services(s, job_id, &rows);
    if (n == 0) return;
    fprintf(
        out,
        "\nInference servers (scraped /metrics; p50 = median of windows, p99 = worst window):\n");
    fprintf(out, "  %-16s %-6s %7s %7s %9s %5s %8s %8s %8s %8s %4s\n", "JOB", "SERVER", "WINDOWS",
            "REQ/S", "GEN_TOK/S", "ERR%", "TTFT_P50", "TTFT_P99", "ITL_P50", "ITL_P99", "KV%");
    int floors = 0;
    for (size_t i = 0; i < n; i++) {
        service_row *r = &rows[i];
        char a[16], b[16], c[16], d[16], req[16], tok[16], er[16], kv[16];
        floors |= r->ttft_p50.floor == 1 || r->ttft_p99.floor == 1 || r->itl_p50.floor == 1 ||
                  r->itl_p99.floor == 1;
        fmt_pct(a, sizeof a, r->ttft_p50);
        fmt_pct(b, sizeof b, r->ttft_p99);
        fmt_pct(c, sizeof c, r->itl_p50);
        fmt_pct(d, sizeof d, r->itl_p99);
        snprintf(req, sizeof req, r->req_per_s < 0 ? "-" : "%.2f", r->req_per_s);
        snprintf(tok, sizeof tok, r->gen_tok_s < 0 ? "-" : "%.1f", r->gen_tok_s);
        snprintf(er, sizeof er, r->err_ratio < 0 ? "-" : "%.2f", r->err_ratio * 100);
        snprintf(kv, sizeof kv, r->kv_last < 0 ? "-" : "%.0f", r->kv_last * 100);
        char jb[64];
        fprintf(out, "  %-16s %-6s %7d %7s %9s %5s %8s %8s %8s %8s %4s\n",
                gp_ellipsize(r->job, 16, jb, sizeof jb), r->flavor, r->windows, req, tok, er, a, b,
                c, d, kv);
        floors |= engines_text(gp_store_db(s), r->job, out);
    }
    if (floors)
        fprintf(out, "  >= : above the server's largest finite histogram bucket; the true value is "
                     "at least this\n");
    free(rows);
}

static json_t *jnum(double v) {
    return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

/* A percentile as two members: NAME_s (Prometheus' number) and NAME_is_floor (true when the
 * number is the largest finite bucket bound and the true value is at least it; null when not
 * known or when the number is). */
static void jpct(json_t *o, const char *name, pct_s p) {
    char key[96];
    snprintf(key, sizeof key, "%s_s", name);
    json_object_set_new(o, key, jnum(p.s));
    snprintf(key, sizeof key, "%s_is_floor", name);
    json_object_set_new(o, key, p.s < 0 || p.floor < 0 ? json_null() : json_boolean(p.floor));
}

static json_t *engines_json(sqlite3 *db, const char *job) {
    engine_row *e;
    size_t n = load_engines(db, job, &e);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        engine_row *r = &e[i];
        json_t *o = json_object();
        json_object_set_new(o, "engine", r->engine[0] ? json_string(r->engine) : json_null());
        json_object_set_new(o, "model", r->model[0] ? json_string(r->model) : json_null());
        json_object_set_new(o, "windows", json_integer(r->windows));
        json_object_set_new(o, "span_s", json_real(r->span_s));
        json_object_set_new(o, "requests_per_s", jnum(r->req_per_s));
        json_object_set_new(o, "ok_per_s", jnum(r->ok_per_s));
        json_object_set_new(o, "generation_tokens_per_s", jnum(r->gen_tok_s));
        json_object_set_new(o, "slo_ok_per_s", jnum(r->slo_ok_per_s));
        json_object_set_new(o, "slo_ttft_fraction", jnum(r->slo_ttft_frac));
        json_object_set_new(o, "slo_itl_fraction", jnum(r->slo_itl_frac));
        json_object_set_new(o, "ttft_mean_s", jnum(r->ttft_mean));
        jpct(o, "ttft_p99_worst", r->ttft_p99);
        json_object_set_new(o, "itl_mean_s", jnum(r->itl_mean));
        jpct(o, "itl_p99_worst", r->itl_p99);
        json_object_set_new(o, "e2e_mean_s", jnum(r->e2e_mean));
        jpct(o, "e2e_p99_worst", r->e2e_p99);
        json_object_set_new(o, "queue_mean_s", jnum(r->queue_mean));
        jpct(o, "queue_p99_worst", r->queue_p99);
        json_object_set_new(o, "prefill_mean_s", jnum(r->prefill_mean));
        json_object_set_new(o, "decode_mean_s", jnum(r->decode_mean));
        json_object_set_new(o, "preemptions_per_s", jnum(r->preempt_per_s));
        json_object_set_new(o, "prefix_cache_hit_ratio_mean", jnum(r->prefix_hit));
        json_object_set_new(o, "spec_decode_acceptance_mean", jnum(r->spec_accept));
        json_object_set_new(o, "batch_size_mean", jnum(r->batch));
        json_object_set_new(o, "kv_cache_usage_last", jnum(r->kv_last));
        json_object_set_new(o, "running_last", jnum(r->running_last));
        json_object_set_new(o, "waiting_last", jnum(r->waiting_last));
        json_array_append_new(arr, o);
    }
    free(e);
    return arr;
}

void gp_scrape_report_json(gp_store *s, const char *job_id, json_t *root) {
    service_row *rows;
    size_t n = load_services(s, job_id, &rows);
    if (n == 0) return;
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        service_row *r = &rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "job", json_string(r->job));
        json_object_set_new(o, "server", json_string(r->flavor));
        json_object_set_new(o, "windows", json_integer(r->windows));
        json_object_set_new(o, "span_s", json_real(r->span_s));
        json_object_set_new(o, "requests_per_s", jnum(r->req_per_s));
        json_object_set_new(o, "ok_per_s", jnum(r->ok_per_s));
        json_object_set_new(o, "error_ratio", jnum(r->err_ratio));
        json_object_set_new(o, "generation_tokens_per_s", jnum(r->gen_tok_s));
        json_object_set_new(o, "prompt_tokens_per_s", jnum(r->prompt_tok_s));
        jpct(o, "ttft_p50_median", r->ttft_p50);
        jpct(o, "ttft_p99_worst", r->ttft_p99);
        jpct(o, "itl_p50_median", r->itl_p50);
        jpct(o, "itl_p99_worst", r->itl_p99);
        jpct(o, "e2e_p50_median", r->e2e_p50);
        jpct(o, "e2e_p99_worst", r->e2e_p99);
        json_object_set_new(o, "kv_cache_usage_last", jnum(r->kv_last));
        json_object_set_new(o, "engines", engines_json(gp_store_db(s), r->job));
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "scraped_services", arr);
    free(rows);
}
