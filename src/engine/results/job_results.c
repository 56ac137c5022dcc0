/* job_results.c: see job_results.h. A result is kept as the bytes of the structs the
 * engine returns (gp_job_summary; the diagnosis' head and its findings), not as columns:
 * a reader gets back exactly what was computed, every double to the bit, and the engine
 * version plus the struct sizes in the fingerprints say the layout is the one this build
 * reads (a store moved to another build recomputes). */
#include "engine/results/job_results.h"

#include "store/rollup.h"
#include "util/cpu_clock.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How far before a job's start raw samples still count as read by its result (the
 * samples just before an allocation weigh its first interval): retention that prunes a
 * sample after this deletes the result (gp_store_retain). */
#define RAW_MARGIN_NS (3600LL * 1000000000LL)

/* The diagnosis of one job as gp_diagnose_one returns it; n findings follow. */
typedef struct diag_head {
    size_t n;
    double price;
    gp_goodput acct;
    gp_features feat;
} diag_head;

static int sizes(char *buf, size_t cap) {
    int k =
        snprintf(buf, cap, "%s;%zu/%zu/%zu/%zu/%zu", gp_engine_version, sizeof(gp_job_summary),
                 sizeof(gp_finding), sizeof(gp_features), sizeof(gp_goodput), sizeof(diag_head));
    return k < 0 || (size_t)k >= cap ? -1 : k;
}

int gp_job_results_sum_fp(const gp_summary_opts *so, char *buf, size_t cap) {
    int k = sizes(buf, cap);
    if (k < 0) return -1;
    /* Every option (job_summary.h), even those said not to change the result: a reader
     * with other options computes rather than trust that. */
    int m = snprintf(buf + k, cap - (size_t)k, ";s;%lld/%lld;slo=%a,%a,%a;r=%lld;f=%lld/%d;sl=%lld",
                     (long long)so->t0_ns, (long long)so->t1_ns, so->slo.ttft_s, so->slo.tpot_s,
                     so->slo.e2e_s, (long long)so->rollup_min_ns, (long long)so->freeze_lag_ns,
                     so->freeze_steps, (long long)so->slice_events);
    return m < 0 || (size_t)m >= cap - (size_t)k ? -1 : 0;
}

int gp_job_results_diag_fp(const gp_diag_opts *o, char *buf, size_t cap) {
    int k = sizes(buf, cap);
    if (k < 0) return -1;
    /* The environment the engine reads (cost.c, diagnose.c) counts as options. */
    const char *price_env = getenv("GOODPUT_PRICE_PER_GPU_HOUR");
    const char *raw_env = getenv("GOODPUT_DIAG_RAW");
    int m = snprintf(buf + k, cap - (size_t)k, ";d;p=%a;slo=%a,%a,%a;pe=%s;raw=%s",
                     o->price_per_gpu_h, o->slo.ttft_s, o->slo.tpot_s, o->slo.e2e_s,
                     price_env ? price_env : "-", raw_env ? raw_env : "-");
    return m < 0 || (size_t)m >= cap - (size_t)k ? -1 : 0;
}

/* ---- writer ---- */

struct gp_job_results_writer {
    gp_job_results_stats st;
    char (*failed)[GP_JOB_ID_MAX]; /* jobs whose computation failed: not tried again */
    size_t n_failed, cap_failed;
};

gp_job_results_writer *gp_job_results_writer_new(void) {
    return calloc(1, sizeof(gp_job_results_writer));
}

void gp_job_results_writer_free(gp_job_results_writer *w) {
    if (!w) return;
    free(w->failed);
    free(w);
}

gp_job_results_stats gp_job_results_writer_stats(const gp_job_results_writer *w) {
    return w->st;
}

static int failed_before(const gp_job_results_writer *w, const char *id) {
    for (size_t i = 0; i < w->n_failed; i++)
        if (!strcmp(w->failed[i], id)) return 1;
    return 0;
}

static void add_failed(gp_job_results_writer *w, const char *id) {
    if (w->n_failed == w->cap_failed) {
        size_t cap = w->cap_failed ? 2 * w->cap_failed : 16;
        void *p = realloc(w->failed, cap * sizeof *w->failed);
        if (!p) return; /* tried again next pass: slower, not wrong */
        w->failed = p;
        w->cap_failed = cap;
    }
    snprintf(w->failed[w->n_failed++], GP_JOB_ID_MAX, "%s", id);
}

static void remember_failed(gp_job_results_writer *w, const char *id) {
    w->st.failed++;
    add_failed(w, id);
}

void gp_job_results_writer_skip(gp_job_results_writer *w, const char *job_id) {
    if (!failed_before(w, job_id)) add_failed(w, job_id);
}

const char *gp_job_results_writer_failed(const gp_job_results_writer *w, size_t i) {
    return i < w->n_failed ? w->failed[i] : NULL;
}

/* One row of a one-row query with the job id as ?1; columns as int64 (-1 when NULL). */
static int row_i64(sqlite3 *db, const char *sql, const char *id, int64_t *v, int n) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    for (int i = 0; i < n; i++)
        v[i] = rc == SQLITE_ROW && sqlite3_column_type(st, i) != SQLITE_NULL
                   ? sqlite3_column_int64(st, i)
                   : -1;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static void widen(int64_t *t0, int64_t *t1, int64_t v) {
    if (v < 0) return;
    if (*t0 < 0 || v < *t0) *t0 = v;
    if (*t1 < 0 || v > *t1) *t1 = v;
}

/* The job's time range [t0, t1] (its times, allocations and events) and whether it is
 * sealed at now_ns (job_results.h). 1 sealed, 0 not yet, -1 store error. */
static int job_range(sqlite3 *db, const gp_job *j, int64_t now_ns, int64_t lag_ns, int64_t *t0,
                     int64_t *t1) {
    int64_t al[3], ev[2];
    if (row_i64(db,
                "SELECT min(from_ns), max(COALESCE(to_ns, from_ns)), sum(to_ns IS NULL)"
                " FROM allocations WHERE job_id = ?1",
                j->id, al, 3) != 0 ||
        row_i64(db, "SELECT min(ts_ns), max(ts_ns) FROM events WHERE job_id = ?1", j->id, ev, 2) !=
            0)
        return -1;
    if (al[2] > 0) return 0; /* an open allocation ends at the store's last sample */
    *t0 = *t1 = -1;
    widen(t0, t1, j->submitted_ns);
    widen(t0, t1, j->allocated_ns);
    widen(t0, t1, j->ready_ns);
    widen(t0, t1, j->ended_ns);
    widen(t0, t1, al[0]);
    widen(t0, t1, al[1]);
    widen(t0, t1, ev[0]);
    widen(t0, t1, ev[1]);
    return *t1 >= 0 && now_ns - *t1 >= lag_ns;
}

/* The first raw sample (device or process row) of the job's devices from RAW_MARGIN_NS
 * before t0 to t1; -1 when none. */
static int64_t raw_first(sqlite3 *db, const char *id, int64_t t0, int64_t t1) {
    static const char *const sql[] = {
        "SELECT min((SELECT min(ts_ns) FROM samples s WHERE s.uuid = a.uuid AND s.ts_ns >= ?2"
        " AND s.ts_ns <= ?3)) FROM (SELECT DISTINCT uuid FROM allocations WHERE job_id = ?1) a",
        "SELECT min((SELECT min(ts_ns) FROM proc_samples s WHERE s.uuid = a.uuid AND s.ts_ns >= "
        "?2 AND s.ts_ns <= ?3)) FROM (SELECT DISTINCT uuid FROM allocations WHERE job_id = ?1) a"};
    int64_t best = -1;
    for (size_t i = 0; i < 2; i++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql[i], -1, &st, NULL) != SQLITE_OK) return t0 - RAW_MARGIN_NS;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, t0 - RAW_MARGIN_NS);
        sqlite3_bind_int64(st, 3, t1);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            int64_t v = sqlite3_column_int64(st, 0);
            if (best < 0 || v < best) best = v;
        }
        sqlite3_finalize(st);
    }
    return best;
}

/* 1 when retention has pruned the raw samples of one of the job's devices up to a point
 * inside the job's range (its first raw sample left is after the device's first rollup
 * and inside [t0 - RAW_MARGIN_NS, t1]): every later pruning would change the result again
 * (gp_store_retain deletes it), so the job is computed on read until the pruning has
 * passed it. */
static int straddles_retention(sqlite3 *db, const char *id, int64_t t0, int64_t t1) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT 1 FROM (SELECT DISTINCT uuid FROM allocations WHERE job_id = ?1) a,"
            " (SELECT (SELECT min(ts_ns) FROM samples s WHERE s.uuid = a2.uuid) AS raw0,"
            "   (SELECT min(first_ts_ns) FROM rollup_1m r WHERE r.uuid = a2.uuid) AS roll0, uuid"
            "  FROM (SELECT DISTINCT uuid FROM allocations WHERE job_id = ?1) a2) d"
            " WHERE d.uuid = a.uuid AND d.roll0 < d.raw0 AND d.raw0 >= ?2 AND d.raw0 <= ?3"
            " LIMIT 1",
            -1, &st, NULL) != SQLITE_OK)
        return 0; /* no rollups (an older store): nothing is pruned under a result */
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t0 - RAW_MARGIN_NS);
    sqlite3_bind_int64(st, 3, t1);
    int r = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (r) return 1;
    /* The same for the 1-minute rollups (gp_rollup_retain, whole hours): one of the job's
     * devices whose 1-minute rows begin inside its range after its 1-hour ones. */
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT uuid FROM allocations WHERE job_id = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    while (!r && sqlite3_step(st) == SQLITE_ROW) {
        int64_t mb = gp_rollup_minutes_from(db, (const char *)sqlite3_column_text(st, 0));
        r = mb >= 0 && mb - GP_ROLLUP_1H_NS <= t1 + GP_ROLLUP_1M_NS && mb >= t0 - RAW_MARGIN_NS;
    }
    sqlite3_finalize(st);
    return r;
}

/* The sum_fp of a claim (below): never a fingerprint (those start with the engine's
 * version), and its empty blobs are never served. */
#define CLAIM_FP "sealing"

/* A writer without an open transaction (the agent's sealing child, agent_results.c)
 * computes between short write transactions of its own, so the agent that writes the
 * store meanwhile is never held up for a computation's length. A row that arrives while
 * it computes must not be missed, so it first commits a claim: the job's row with
 * CLAIM_FP and its range, which the triggers (schema.c, migration 13) delete like a
 * result when a row of its input arrives, and retention like a result too. The result
 * then replaces the claim only if the claim is still there; else the next pass computes
 * it again. 1 claimed, 0 the job's range moved (not claimed), -1 store error. */
static int claim(gp_store *s, const gp_job *j, int64_t now_ns, int64_t t0, int64_t t1,
                 int64_t raw0) {
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO job_results(job_id, sum_fp, diag_fp, t0_ns,"
                           " t1_ns, raw_t0_ns, summary, diag) VALUES(?1,'" CLAIM_FP "','',?2,?3,"
                           "?4,X'',X'')",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t0);
    sqlite3_bind_int64(st, 3, t1);
    gp_store_bind_time(st, 4, raw0);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    if (rc < 0) return -1;
    /* What arrived between reading the range and the claim is not seen by the triggers:
     * read the range again now that the claim is committed. */
    gp_job j2;
    int64_t u0 = -1, u1 = -1;
    int found = gp_store_get_job(s, j->id, &j2);
    int sealed =
        found == 1 ? job_range(db, &j2, now_ns, GP_SUMMARY_FREEZE_LAG_NS, &u0, &u1) : found;
    if (sealed < 0) return -1;
    return sealed && u0 == t0 && u1 == t1 && j2.ended_ns == j->ended_ns;
}

int gp_job_results_unclaim(gp_store *s) {
    return sqlite3_exec(gp_store_db(s), "DELETE FROM job_results WHERE sum_fp = '" CLAIM_FP "'",
                        NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}

/* Deletes the job's claim (given up). */
static int unclaim(sqlite3 *db, const char *id) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "DELETE FROM job_results WHERE job_id = ?1 AND sum_fp = '" CLAIM_FP "'",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

/* Computes and stores one job's result. 1 stored, 0 its computation failed, 2 not
 * stored this pass (its input moved while it was computed: tried again next pass), -1
 * store error. */
static int seal_one(gp_store *s, const gp_job *j, int64_t now_ns, int64_t t0, int64_t t1,
                    const char *sum_fp, const char *diag_fp, char *err, size_t errlen) {
    sqlite3 *db = gp_store_db(s);
    /* In the caller's transaction nobody else writes until it commits: no claim needed. */
    int own = sqlite3_get_autocommit(db);
    int64_t raw0 = raw_first(db, j->id, t0, t1);
    if (own) {
        int c = claim(s, j, now_ns, t0, t1, raw0);
        if (c <= 0) {
            if (c < 0 || unclaim(db, j->id) < 0) {
                snprintf(err, errlen, "job_results: %s", sqlite3_errmsg(db));
                return -1;
            }
            return 2;
        }
    }
    gp_summary_opts so = {0};
    gp_job_summary *sum = calloc(1, sizeof *sum);
    size_t blob_sz = sizeof(diag_head) + GP_DIAG_MAX_PER_JOB * sizeof(gp_finding);
    unsigned char *blob = calloc(1, blob_sz);
    char e[256];
    int rc = 0;
    diag_head *h = blob ? (diag_head *)blob : NULL;
    gp_finding *f = blob ? (gp_finding *)(blob + sizeof(diag_head)) : NULL;
    /* The diagnosis clips its findings to this very summary, as the report hands it its
     * own (gp_diag_opts.acct). */
    gp_diag_opts o = {.no_write = 1, .acct = sum, .n_acct = 1};
    if (sum && blob && gp_job_summary_compute(s, j->id, &so, sum, e, sizeof e) == 0 &&
        gp_diagnose_one(s, j->id, &o, f, &h->n, &h->feat, &h->acct, &h->price, e, sizeof e) == 0 &&
        h->n <= GP_DIAG_MAX_PER_JOB) {
        sqlite3_stmt *st;
        /* With a claim, the result replaces it only while it is still there. */
        const char *sql =
            own ? "UPDATE job_results SET sum_fp = ?2, diag_fp = ?3, summary = ?7, diag = ?8"
                  " WHERE job_id = ?1 AND sum_fp = '" CLAIM_FP "' AND t0_ns = ?4 AND t1_ns = ?5"
                  " AND raw_t0_ns IS ?6"
                : "INSERT OR REPLACE INTO job_results(job_id, sum_fp, diag_fp, t0_ns, t1_ns,"
                  " raw_t0_ns, summary, diag) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)";
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "job_results: %s", sqlite3_errmsg(db));
            rc = -1;
        } else {
            sqlite3_bind_text(st, 1, j->id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, sum_fp, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, diag_fp, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, t0);
            sqlite3_bind_int64(st, 5, t1);
            gp_store_bind_time(st, 6, raw0);
            sqlite3_bind_blob(st, 7, sum, (int)sizeof *sum, SQLITE_STATIC);
            sqlite3_bind_blob(st, 8, blob, (int)(sizeof(diag_head) + h->n * sizeof(gp_finding)),
                              SQLITE_STATIC);
            rc = sqlite3_step(st) == SQLITE_DONE ? 1 : -1;
            if (rc < 0) snprintf(err, errlen, "job_results: %s", sqlite3_errmsg(db));
            if (rc == 1 && own && sqlite3_changes(db) == 0) rc = 2; /* the claim went */
            sqlite3_finalize(st);
        }
    } else if (own && unclaim(db, j->id) < 0) {
        snprintf(err, errlen, "job_results: %s", sqlite3_errmsg(db));
        rc = -1;
    }
    free(sum);
    free(blob);
    return rc;
}

/* The ended jobs without a result of this engine and these options, in the order they are
 * sealed, less those this writer gave up on. *ids is malloc'ed; -1 on a store error. */
static const char candidates_sql[] =
    "SELECT id FROM jobs WHERE ended_ns > 0 AND ended_ns <= ?1"
    " AND NOT EXISTS (SELECT 1 FROM job_results r WHERE r.job_id = jobs.id"
    " AND r.sum_fp = ?2 AND r.diag_fp = ?3)"
    /* events pruned: computing it now would read partial data */
    " AND NOT EXISTS (SELECT 1 FROM job_events_pruned p"
    "  WHERE p.job_id = jobs.id) ORDER BY ended_ns, id";

static int candidates(gp_job_results_writer *w, gp_store *s, int64_t now_ns, const char *sum_fp,
                      const char *diag_fp, char (**ids)[GP_JOB_ID_MAX], size_t *n_out) {
    sqlite3_stmt *st;
    *ids = NULL;
    *n_out = 0;
    if (!(st = gp_store_stmt(s, candidates_sql))) return -1;
    sqlite3_bind_int64(st, 1, now_ns - GP_SUMMARY_FREEZE_LAG_NS);
    sqlite3_bind_text(st, 2, sum_fp, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, diag_fp, -1, SQLITE_STATIC);
    size_t n = 0, cap = 0;
    char(*v)[GP_JOB_ID_MAX] = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (!id || failed_before(w, id)) continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 16;
            void *p = realloc(v, c * sizeof *v);
            if (!p) break;
            v = p;
            cap = c;
        }
        snprintf(v[n++], GP_JOB_ID_MAX, "%s", id);
    }
    sqlite3_reset(st); /* kept by the store (gp_store_stmt) */
    *ids = v;
    *n_out = n;
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -1;
}

int gp_job_results_pending(gp_job_results_writer *w, gp_store *s, int64_t now_ns) {
    char sum_fp[512], diag_fp[512];
    gp_summary_opts so = {0};
    gp_diag_opts dopt = {0};
    if (gp_job_results_sum_fp(&so, sum_fp, sizeof sum_fp) != 0 ||
        gp_job_results_diag_fp(&dopt, diag_fp, sizeof diag_fp) != 0)
        return -1;
    char(*ids)[GP_JOB_ID_MAX];
    size_t n;
    int rc = candidates(w, s, now_ns, sum_fp, diag_fp, &ids, &n);
    free(ids);
    return rc < 0 ? -1 : n > 0;
}

int gp_job_results_seal(gp_job_results_writer *w, gp_store *s, int64_t now_ns, double budget_cpu_s,
                        char *err, size_t errlen) {
    char sum_fp[512], diag_fp[512];
    gp_summary_opts so = {0};
    gp_diag_opts dopt = {0};
    if (gp_job_results_sum_fp(&so, sum_fp, sizeof sum_fp) != 0 ||
        gp_job_results_diag_fp(&dopt, diag_fp, sizeof diag_fp) != 0) {
        snprintf(err, errlen, "job_results: fingerprint too long");
        return -1;
    }
    w->st.passes++;
    const int64_t lag = GP_SUMMARY_FREEZE_LAG_NS;
    sqlite3 *db = gp_store_db(s);
    char(*ids)[GP_JOB_ID_MAX] = NULL;
    size_t n = 0;
    if (candidates(w, s, now_ns, sum_fp, diag_fp, &ids, &n) != 0) {
        free(ids);
        snprintf(err, errlen, "job_results: %s", sqlite3_errmsg(db));
        return -1;
    }
    int stored = 0;
    double c0 = gp_process_cpu_s();
    for (size_t i = 0; i < n; i++) {
        if (budget_cpu_s > 0 && i > 0 && gp_process_cpu_s() - c0 >= budget_cpu_s) break;
        gp_job j;
        int64_t t0 = -1, t1 = -1;
        int found = gp_store_get_job(s, ids[i], &j);
        int sealed = found == 1 ? job_range(db, &j, now_ns, lag, &t0, &t1) : found;
        if (sealed < 0) {
            snprintf(err, errlen, "job_results: %s", sqlite3_errmsg(db));
            stored = -1;
            break;
        }
        if (!sealed || straddles_retention(db, j.id, t0, t1)) continue;
        int k = seal_one(s, &j, now_ns, t0, t1, sum_fp, diag_fp, err, errlen);
        if (k < 0) {
            stored = -1;
            break;
        }
        if (k == 0)
            remember_failed(w, ids[i]);
        else if (k == 1)
            stored++, w->st.stored++;
    }
    w->st.cpu_s += gp_process_cpu_s() - c0;
    free(ids);
    return stored;
}

/* ---- readers ---- */

struct gp_job_results {
    gp_store *s;
    sqlite3_stmt *sum_st, *diag_st; /* NULL: that part is not served */
    /* jobs whose events retention deleted (job_events_pruned, schema 15); NULL: an older
     * store, nothing pruned */
    sqlite3_stmt *psum_st, *pdiag_st;
    char sum_fp[512], diag_fp[512];
    uint64_t n_sum, n_diag;
};

gp_job_results *gp_job_results_open(gp_store *s, const gp_summary_opts *so,
                                    const gp_diag_opts *diag) {
    gp_job_results *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->s = s;
    sqlite3 *db = gp_store_db(s);
    int ok = 1;
    if (so && gp_job_results_sum_fp(so, r->sum_fp, sizeof r->sum_fp) == 0)
        ok = sqlite3_prepare_v3(db,
                                "SELECT summary FROM job_results WHERE job_id = ?1 AND sum_fp = ?2",
                                -1, SQLITE_PREPARE_PERSISTENT, &r->sum_st, NULL) == SQLITE_OK;
    if (ok && diag && gp_job_results_diag_fp(diag, r->diag_fp, sizeof r->diag_fp) == 0)
        ok = sqlite3_prepare_v3(db,
                                "SELECT diag FROM job_results WHERE job_id = ?1 AND diag_fp = ?2",
                                -1, SQLITE_PREPARE_PERSISTENT, &r->diag_st, NULL) == SQLITE_OK;
    if (!ok) { /* no table: an older store */
        gp_job_results_close(r);
        return NULL;
    }
    /* A pruned job's result is served whatever engine stored it: computing it again would
     * read what is left of its events. Only the struct sizes and the options (the
     * fingerprint past the engine's version) must match: pruned_fp_ok. And only while the
     * job has nothing past it (GP_PRUNED_STILL_SQL): else it is unknown. */
    if (r->sum_st &&
        sqlite3_prepare_v3(db,
                           "SELECT summary, sum_fp, before_ns FROM job_events_pruned p"
                           " WHERE job_id = ?1 AND " GP_PRUNED_STILL_SQL,
                           -1, SQLITE_PREPARE_PERSISTENT, &r->psum_st, NULL) != SQLITE_OK)
        r->psum_st = NULL;
    if (r->diag_st &&
        sqlite3_prepare_v3(db,
                           "SELECT diag, diag_fp, before_ns FROM job_events_pruned p"
                           " WHERE job_id = ?1 AND " GP_PRUNED_STILL_SQL,
                           -1, SQLITE_PREPARE_PERSISTENT, &r->pdiag_st, NULL) != SQLITE_OK)
        r->pdiag_st = NULL;
    return r;
}

/* Whether a pruned job's stored fingerprint fits want: the same after the engine's
 * version (struct sizes, then options). */
static int pruned_fp_ok(const char *stored, const char *want) {
    const char *a = stored ? strchr(stored, ';') : NULL, *b = strchr(want, ';');
    return a && b && !strcmp(a, b);
}

/* Steps a pruned-job statement (blob, fp, before_ns) for job_id: the blob when its fp fits
 * want and its size [min, max]; *before_ns. The caller resets st after copying. */
static const void *lookup_pruned(sqlite3_stmt *st, const char *job_id, const char *want, size_t min,
                                 size_t max, size_t *len, int64_t *before_ns) {
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW) return NULL;
    if (!pruned_fp_ok((const char *)sqlite3_column_text(st, 1), want)) return NULL;
    *before_ns = sqlite3_column_int64(st, 2);
    const void *b = sqlite3_column_blob(st, 0);
    *len = (size_t)sqlite3_column_bytes(st, 0);
    return b && *len >= min && *len <= max ? b : NULL;
}

void gp_job_results_close(gp_job_results *r) {
    if (!r) return;
    sqlite3_finalize(r->sum_st);
    sqlite3_finalize(r->diag_st);
    sqlite3_finalize(r->psum_st);
    sqlite3_finalize(r->pdiag_st);
    free(r);
}

/* Steps st for job_id with fp; the blob when its size fits [min, max] (else NULL). The
 * caller resets st after copying. */
static const void *lookup(sqlite3_stmt *st, const char *job_id, const char *fp, size_t min,
                          size_t max, size_t *len) {
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) return NULL;
    const void *b = sqlite3_column_blob(st, 0);
    *len = (size_t)sqlite3_column_bytes(st, 0);
    return b && *len >= min && *len <= max ? b : NULL;
}

int gp_job_results_summary(gp_job_results *r, const char *job_id, gp_job_summary *out) {
    if (!r || !r->sum_st) return 0;
    size_t len = 0;
    const void *b = lookup(r->sum_st, job_id, r->sum_fp, sizeof *out, sizeof *out, &len);
    if (b) memcpy(out, b, sizeof *out);
    sqlite3_reset(r->sum_st); /* no read transaction left open between lookups */
    if (!b && r->psum_st) {
        int64_t before = -1;
        b = lookup_pruned(r->psum_st, job_id, r->sum_fp, sizeof *out, sizeof *out, &len, &before);
        if (b) {
            memcpy(out, b, sizeof *out);
            out->events_pruned_ns = before > 0 ? before : 1;
        }
        sqlite3_reset(r->psum_st);
    }
    if (!b) return 0;
    /* The store's span, not the job's: what computing it now would say. */
    int64_t t0 = -1, t1 = -1;
    if (gp_store_time_span(r->s, &t0, &t1) != 0) return 0;
    out->span_s = (t1 - t0) / 1e9;
    r->n_sum++;
    return 1;
}

int gp_job_results_diag(void *ctx, const char *job_id, gp_finding *out, size_t cap, size_t *n,
                        gp_features *feat, gp_goodput *acct, double *price) {
    gp_job_results *r = ctx;
    if (!r || !r->diag_st) return 0;
    size_t len = 0;
    const unsigned char *b =
        lookup(r->diag_st, job_id, r->diag_fp, sizeof(diag_head),
               sizeof(diag_head) + GP_DIAG_MAX_PER_JOB * sizeof(gp_finding), &len);
    diag_head h;
    int ok = 0;
    if (!b && r->pdiag_st) {
        sqlite3_reset(r->diag_st);
        int64_t before = -1;
        b = lookup_pruned(r->pdiag_st, job_id, r->diag_fp, sizeof(diag_head),
                          sizeof(diag_head) + GP_DIAG_MAX_PER_JOB * sizeof(gp_finding), &len,
                          &before);
    }
    if (b) {
        memcpy(&h, b, sizeof h);
        ok = h.n <= cap && len == sizeof h + h.n * sizeof(gp_finding);
        if (ok) {
            if (h.n) memcpy(out, b + sizeof h, h.n * sizeof(gp_finding));
            *n = h.n;
            *feat = h.feat;
            *acct = h.acct;
            *price = h.price;
        }
    }
    sqlite3_reset(r->diag_st);
    if (r->pdiag_st) sqlite3_reset(r->pdiag_st);
    if (ok) r->n_diag++;
    return ok;
}

void gp_job_results_use(gp_diag_opts *o, gp_job_results *r) {
    if (!r) return;
    o->stored = gp_job_results_diag;
    o->stored_ctx = r;
}

void gp_job_results_counts(const gp_job_results *r, uint64_t *summaries, uint64_t *diags) {
    *summaries = r ? r->n_sum : 0;
    *diags = r ? r->n_diag : 0;
}
