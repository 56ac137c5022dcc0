/* acct_prefix.c: see acct_prefix.h. A prefix is kept as the bytes of the state's structs
 * and arrays, not as columns: a reader gets back exactly what the writer folded, every
 * double to the bit, and fp (the engine version and the structs' sizes) says the layout
 * is this build's (another build computes the whole history, as for job_results). */
#include "engine/accounting/acct_prefix.h"

#include "engine/accounting/job_acct_state.h"
#include "store/rollup.h"
#include "util/cpu_clock.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Generated at build time (mk/results.mk); declared in engine/results/job_results.h. */
extern const char gp_engine_version[];

/* How far before a job's first allocation raw samples still count as read (the samples
 * before it weigh its first interval): retention that prunes one deletes the prefix. */
#define RAW_MARGIN_NS (3600LL * 1000000000LL)

/* The fp of a claim: never a fingerprint (those start with the engine's version). */
#define CLAIM_FP "claim"
/* ... and of a job the writer declined (retention pruned raw rows that a short job's fold
 * reads after its start: each retention pass would change it; or its state holds more
 * than GP_ACCT_PREFIX_MAX_EVENTS events): never served. */
#define SKIP_FP "skip"

#define MAGIC 0x31505041u /* "APP1" */

typedef struct blob_head {
    uint32_t magic, pad;
    uint64_t n_al, n_act, n_ev, n_names, n_durs, n_gaps, n_allocs, n_span;
} blob_head;

int gp_acct_prefix_fp(char *buf, size_t cap) {
    int k = snprintf(buf, cap, "%s;acct/%zu/%zu/%zu/%zu/%zu/%zu", gp_engine_version,
                     sizeof(gp_job_acct), sizeof(acct_alloc), sizeof(cev), sizeof(gp_goodput_ckpt),
                     sizeof(gp_activity), sizeof(blob_head));
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

/* ---- bytes ---- */

typedef struct {
    unsigned char *p;
    size_t n;
} wbuf;

static void put(wbuf *w, const void *src, size_t len) {
    if (len) memcpy(w->p + w->n, src, len);
    w->n += len;
}

int gp_acct_prefix_encode(const gp_job_acct *a, unsigned char **buf, size_t *len) {
    blob_head h = {.magic = MAGIC,
                   .n_al = a->n_al,
                   .n_act = a->n_act,
                   .n_ev = a->n_ev,
                   .n_names = a->n_names,
                   .n_durs = a->ck.n_durs,
                   .n_gaps = a->ck.n_gaps,
                   .n_allocs = a->ck.n_allocs,
                   .n_span = a->ck.n_span};
    size_t total = sizeof h + sizeof *a + a->n_al * sizeof *a->al +
                   a->n_act * (sizeof *a->act + sizeof *a->act_sum + 2 * sizeof(int)) +
                   a->n_ev * sizeof *a->ev + a->n_names * sizeof *a->names +
                   a->ck.n_durs * sizeof(double) +
                   (a->ck.n_gaps + 3 * a->ck.n_allocs + 2 * a->ck.n_span) * sizeof(int64_t);
    wbuf w = {calloc(1, total), 0};
    if (!w.p) return -1;
    put(&w, &h, sizeof h);
    /* The struct without what only lives in this process (pointers, capacities, one
     * update's buffers, counters): the same state gives the same bytes. */
    gp_job_acct c;
    memcpy(&c, a, sizeof c);
    c.al = NULL, c.act = NULL, c.act_sum = NULL, c.act_n = NULL, c.act_owner = NULL;
    c.ev = NULL, c.names = NULL, c.borrow = NULL, c.xev = NULL;
    c.ck.durs = NULL, c.ck.gaps = NULL, c.ck.allocs = NULL, c.ck.span = NULL;
    c.cap_act = c.cap_ev = c.cap_xev = c.n_xev = 0;
    c.xcur_ts = INT64_MIN, c.xcur_id = 0, c.oneshot = 0, c.fold_cap = INT64_MAX;
    memset(&c.stats, 0, sizeof c.stats);
    put(&w, &c, sizeof c);
    put(&w, a->al, a->n_al * sizeof *a->al);
    put(&w, a->act, a->n_act * sizeof *a->act);
    put(&w, a->act_sum, a->n_act * sizeof *a->act_sum);
    put(&w, a->act_n, a->n_act * sizeof(int));
    put(&w, a->act_owner, a->n_act * sizeof(int));
    put(&w, a->ev, a->n_ev * sizeof *a->ev);
    put(&w, a->names, a->n_names * sizeof *a->names);
    put(&w, a->ck.durs, a->ck.n_durs * sizeof(double));
    put(&w, a->ck.gaps, a->ck.n_gaps * sizeof(int64_t));
    put(&w, a->ck.allocs, 3 * a->ck.n_allocs * sizeof(int64_t));
    put(&w, a->ck.span, 2 * a->ck.n_span * sizeof(int64_t));
    *buf = w.p;
    *len = w.n;
    return 0;
}

/* Where a state's bytes are read from: a buffer (gp_acct_prefix_decode) or the stored
 * blob itself (gp_acct_prefix_load: each array read straight into its own allocation, so
 * no copy of the whole blob is held next to the state). */
typedef struct src {
    const unsigned char *buf; /* or NULL: */
    sqlite3_blob *blob;
    size_t off; /* the next byte to read */
    int bad;    /* a read failed */
} src;

static void rd(src *in, void *dst, size_t len) {
    if (len && in->buf) {
        memcpy(dst, in->buf + in->off, len);
    } else if (len && (len > INT32_MAX || in->off > INT32_MAX ||
                       sqlite3_blob_read(in->blob, dst, (int)len, (int)in->off) != SQLITE_OK)) {
        memset(dst, 0, len);
        in->bad = 1;
    }
    in->off += len;
}

/* A copy of the next len bytes (at least one byte allocated, so an empty array is not
 * NULL); NULL on OOM or a failed read. */
static void *take(src *in, size_t len) {
    void *q = malloc(len ? len : 1);
    if (q)
        rd(in, q, len);
    else
        in->off += len;
    if (in->bad) {
        free(q);
        return NULL;
    }
    return q;
}

/* The state of len bytes read from in (its head first); NULL: not a state of this layout
 * (or max_events < its event count, or out of memory). */
static gp_job_acct *decode_src(const char *job_id, src *in, size_t len, uint64_t max_events) {
    blob_head h;
    if (len < sizeof h + sizeof(gp_job_acct)) return NULL;
    rd(in, &h, sizeof h);
    if (in->bad || h.magic != MAGIC || h.n_ev > max_events) return NULL;
    /* Every count is bounded by the blob's length before any product is formed. */
    uint64_t c[] = {h.n_al, h.n_act, h.n_ev, h.n_names, h.n_durs, h.n_gaps, h.n_allocs, h.n_span};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (c[i] > len) return NULL;
    size_t want = sizeof h + sizeof(gp_job_acct) + h.n_al * sizeof(acct_alloc) +
                  h.n_act * (sizeof(gp_activity) + sizeof(double) + 2 * sizeof(int)) +
                  h.n_ev * sizeof(cev) + h.n_names * GP_NAME_MAX + h.n_durs * sizeof(double) +
                  (h.n_gaps + 3 * h.n_allocs + 2 * h.n_span) * sizeof(int64_t);
    if (want != len) return NULL;
    gp_job_acct *a = malloc(sizeof *a);
    if (!a) return NULL;
    rd(in, a, sizeof *a);
    if (in->bad || strncmp(a->job_id, job_id, sizeof a->job_id) != 0 || !a->started ||
        !a->ev_loaded || a->n_al != h.n_al || a->n_act != h.n_act || a->n_ev != h.n_ev ||
        a->n_names != h.n_names || a->ck.n_durs != h.n_durs || a->ck.n_gaps != h.n_gaps ||
        a->ck.n_allocs != h.n_allocs || a->ck.n_span != h.n_span || a->ck.n_gpu_stage < 0 ||
        a->ck.n_gpu_stage > GP_CKPT_STAGES || a->ck.n_carry < 0 || a->ck.n_carry > GP_CKPT_CARRY) {
        free(a);
        return NULL;
    }
    /* What only lives for one update, or points into the writer's memory. */
    a->borrow = NULL;
    a->xev = NULL;
    a->cap_xev = a->n_xev = 0;
    a->oneshot = 0;
    a->xcur_ts = INT64_MIN, a->xcur_id = 0;
    a->fold_cap = INT64_MAX;
    memset(&a->stats, 0, sizeof a->stats);
    a->al = take(in, h.n_al * sizeof *a->al);
    a->act = take(in, h.n_act * sizeof *a->act);
    a->act_sum = take(in, h.n_act * sizeof *a->act_sum);
    a->act_n = take(in, h.n_act * sizeof(int));
    a->act_owner = take(in, h.n_act * sizeof(int));
    a->cap_act = h.n_act;
    a->ev = take(in, h.n_ev * sizeof *a->ev);
    a->cap_ev = h.n_ev;
    a->names = take(in, h.n_names * sizeof *a->names);
    a->ck.durs = take(in, h.n_durs * sizeof(double));
    a->ck.gaps = take(in, h.n_gaps * sizeof(int64_t));
    a->ck.allocs = take(in, 3 * h.n_allocs * sizeof(int64_t));
    a->ck.span = take(in, 2 * h.n_span * sizeof(int64_t));
    if (!a->al || !a->act || !a->act_sum || !a->act_n || !a->act_owner || !a->ev || !a->names ||
        !a->ck.durs || !a->ck.gaps || !a->ck.allocs || !a->ck.span) {
        gp_job_acct_free(a);
        return NULL;
    }
    /* Names are copied whole but must end inside their slot. */
    for (size_t i = 0; i < a->n_names; i++)
        a->names[i][GP_NAME_MAX - 1] = 0;
    for (int i = 0; i < GP_CKPT_STAGES; i++)
        a->ck.gpu_stage[i][GP_NAME_MAX - 1] = 0;
    for (int i = 0; i < GP_CKPT_CARRY; i++)
        a->ck.carry[i].name[GP_NAME_MAX - 1] = 0;
    for (size_t i = 0; i < a->n_ev; i++)
        if (a->ev[i].name >= (int32_t)a->n_names || a->ev[i].name < -1) {
            gp_job_acct_free(a);
            return NULL;
        }
    for (size_t i = 0; i < a->n_act; i++)
        if (a->act_owner[i] < 0 || (size_t)a->act_owner[i] >= a->n_al) {
            gp_job_acct_free(a);
            return NULL;
        }
    return a;
}

gp_job_acct *gp_acct_prefix_decode(const char *job_id, const unsigned char *buf, size_t len) {
    src in = {.buf = buf};
    return decode_src(job_id, &in, len, UINT64_MAX);
}

/* ---- readers ---- */

gp_job_acct *gp_acct_prefix_load(gp_store *s, const char *job_id) {
    const char *off = getenv("GOODPUT_NO_PREFIX");
    if (off && *off && strcmp(off, "0") != 0) return NULL;
    char fp[256];
    if (gp_acct_prefix_fp(fp, sizeof fp) != 0) return NULL;
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT rowid FROM job_prefix WHERE job_id = ?1 AND fp = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        return NULL; /* an older store: no table */
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_int64 rowid = found ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (!found) return NULL;
    /* Read through the blob handle, not as a column (which would hold the whole blob
     * while the state is copied out of it). */
    sqlite3_blob *b;
    if (sqlite3_blob_open(db, "main", "job_prefix", "state", rowid, 0, &b) != SQLITE_OK) {
        sqlite3_blob_close(b);
        return NULL;
    }
    /* The head first: a state with more events than GP_ACCT_PREFIX_MAX_EVENTS (stored by
     * a writer of this layout without the rule) is not read further. */
    src in = {.blob = b};
    int n = sqlite3_blob_bytes(b);
    gp_job_acct *a = n > 0 ? decode_src(job_id, &in, (size_t)n, GP_ACCT_PREFIX_MAX_EVENTS) : NULL;
    sqlite3_blob_close(b);
    return a;
}

/* ---- writer ---- */

/* Running jobs (an allocation still open, events not pruned) older than
 * GP_ACCT_PREFIX_MIN_AGE_NS without a prefix of this build saved since now_ns -
 * GP_ACCT_PREFIX_EVERY_NS, oldest save first; with each its first allocation's start. A
 * declined job (SKIP_FP) is looked at again once it has doubled its age at the decline
 * (GP_ACCT_PREFIX_EVERY_NS at least): each look computes it whole, so a job that never
 * freezes costs about two whole computations over its life, not one every 10 minutes. */
static const char candidates_sql[] =
    "SELECT j.id, (SELECT min(from_ns) FROM allocations a WHERE a.job_id = j.id) AS t0"
    " FROM jobs j WHERE EXISTS (SELECT 1 FROM allocations a WHERE a.job_id = j.id"
    "  AND a.to_ns IS NULL)"
    " AND NOT EXISTS (SELECT 1 FROM job_events_pruned p WHERE p.job_id = j.id)"
    " AND NOT EXISTS (SELECT 1 FROM job_prefix p WHERE p.job_id = j.id"
    "  AND ((p.fp = ?1 AND p.computed_ns > ?2) OR (p.fp = '" SKIP_FP "'"
    "  AND p.computed_ns > ?4 - max(?5, p.computed_ns - (SELECT min(from_ns) FROM allocations a"
    "  WHERE a.job_id = j.id)))))"
    " AND t0 <= ?3"
    " ORDER BY (SELECT computed_ns FROM job_prefix p WHERE p.job_id = j.id), j.id";

static int candidates(gp_store *s, int64_t now_ns, const char *fp, char (**ids)[GP_JOB_ID_MAX],
                      int64_t **t0s, size_t *n_out) {
    sqlite3_stmt *st;
    *ids = NULL;
    *t0s = NULL;
    *n_out = 0;
    if (!(st = gp_store_stmt(s, candidates_sql))) return -1;
    sqlite3_bind_text(st, 1, fp, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, now_ns - GP_ACCT_PREFIX_EVERY_NS);
    sqlite3_bind_int64(st, 3, now_ns - GP_ACCT_PREFIX_MIN_AGE_NS);
    sqlite3_bind_int64(st, 4, now_ns);
    sqlite3_bind_int64(st, 5, GP_ACCT_PREFIX_EVERY_NS);
    int rc = gp_store_collect_ids(st, ids, t0s, n_out);
    sqlite3_reset(st); /* kept by the store (gp_store_stmt) */
    return rc;
}

int gp_acct_prefix_pending(gp_store *s, int64_t now_ns) {
    char fp[256];
    if (gp_acct_prefix_fp(fp, sizeof fp) != 0) return -1;
    char(*ids)[GP_JOB_ID_MAX];
    int64_t *t0s;
    size_t n;
    int rc = candidates(s, now_ns, fp, &ids, &t0s, &n);
    free(ids);
    free(t0s);
    return rc < 0 ? -1 : n > 0;
}

static int exec_job(sqlite3 *db, const char *sql, const char *id) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

/* The raw_t0_ns of the job's saved prefix of this build; -1 none. */
static int64_t saved_raw_t0(sqlite3 *db, const char *id, const char *fp) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "SELECT raw_t0_ns FROM job_prefix WHERE job_id = ?1 AND fp = ?2", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Whether retention has pruned the raw samples of the job's devices at its start (a
 * device's first raw sample left is after alloc0_ns and after its first rollup, or none is
 * left): 0 on none, 1 some, 2 all of them. A fold then reads rollups up to the raw
 * boundary (job_summary.c, fold_samples). */
static int pruned_at_start(sqlite3 *db, const char *id, int64_t alloc0_ns) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT count(*), total(roll0 IS NOT NULL AND (raw0 IS NULL OR (raw0 > ?2"
            " AND roll0 < raw0))) FROM (SELECT"
            " (SELECT min(ts_ns) FROM samples s WHERE s.uuid = d.uuid) AS raw0,"
            " (SELECT first_ts_ns FROM rollup_1m r WHERE r.uuid = d.uuid ORDER BY t1_ns LIMIT 1)"
            " AS roll0 FROM (SELECT DISTINCT uuid FROM allocations WHERE job_id = ?1) d)",
            -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, alloc0_ns);
    int r = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        int64_t n = sqlite3_column_int64(st, 0), k = (int64_t)sqlite3_column_double(st, 1);
        r = k == 0 ? 0 : k < n ? 1 : 2;
    }
    sqlite3_finalize(st);
    return r;
}

/* One job: 1 saved, 0 not this pass (nothing to save, its input moved while it was
 * computed, its computation failed, or it was declined), -1 store error. Without an open
 * transaction the write lock is never held while computing: a claim (the job's row with
 * CLAIM_FP, bounds t_ns = ev_t_ns = the fold's end) is committed first, which the triggers
 * delete like a prefix when a row for the time it folds arrives, and the state replaces
 * it only if it is still there.
 *
 * raw_t0_ns, the first raw sample the state read (retention pruning one deletes the
 * prefix, store.c): a loaded state keeps its own; a fresh one read raw rows from the job's
 * start, unless retention had pruned them on every device (it then read only rollups up to
 * the cut: a long job's fold, fold_long, continues with rollups from the raw boundary, so
 * no later pruning changes it). A job that is not long (its fold reads raw rows after the
 * raw boundary, which every retention pass moves) is declined once pruned: computed whole,
 * as before. */
static int save_one(gp_store *s, const char *id, int64_t alloc0_ns, int64_t now_ns,
                    const char *fp) {
    sqlite3 *db = gp_store_db(s);
    int64_t t0 = -1, t1 = -1;
    if (gp_store_time_span(s, &t0, &t1) != 0 || t1 < 0) return 0;
    const int64_t m = GP_ROLLUP_1M_NS;
    int64_t cut = t1 - GP_ACCT_PREFIX_LAG_NS;
    cut = (cut >= 0 ? cut / m : (cut - m + 1) / m) * m;
    if (cut <= alloc0_ns) return 0;
    gp_job_acct *a = gp_acct_prefix_load(s, id); /* before the claim replaces it */
    int64_t raw0 = a ? saved_raw_t0(db, id, fp) : -1;
    if (!a) a = gp_job_acct_new(id, NULL);
    if (!a) return 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO job_prefix(job_id, fp, t_ns, ev_t_ns, raw_t0_ns,"
                           " computed_ns, state) VALUES(?1,'" CLAIM_FP "',?2,?2,?3,?4,X'')",
                           -1, &st, NULL) != SQLITE_OK) {
        gp_job_acct_free(a);
        return -1;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, cut);
    sqlite3_bind_int64(st, 3, alloc0_ns - RAW_MARGIN_NS);
    sqlite3_bind_int64(st, 4, now_ns);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    if (rc < 0) {
        gp_job_acct_free(a);
        return -1;
    }
    a->fold_cap = cut;
    gp_job_summary out;
    char err[256];
    unsigned char *blob = NULL;
    size_t len = 0;
    int got = gp_job_acct_update(a, s, &out, err, sizeof err) == 0 && a->started && a->ev_loaded &&
              gp_acct_prefix_encode(a, &blob, &len) == 0;
    int pruned = got ? pruned_at_start(db, id, alloc0_ns) : 0;
    if (got && raw0 < 0) raw0 = pruned == 2 ? cut : alloc0_ns;
    /* Declined: a job retention moves under (above), or one whose state would cost a
     * reader more than computing without it (GP_ACCT_PREFIX_MAX_EVENTS). */
    int declined = got && ((pruned && !a->rolled) || a->n_ev > GP_ACCT_PREFIX_MAX_EVENTS);
    const char *sql =
        declined ? "UPDATE job_prefix SET fp = '" SKIP_FP "', t_ns = -1, ev_t_ns = -1,"
                   " raw_t0_ns = 9223372036854775807, state = X'' WHERE job_id = ?1"
                   " AND fp = '" CLAIM_FP "'"
                 : "UPDATE job_prefix SET fp = ?2, ev_t_ns = ?3, state = ?4, raw_t0_ns = ?6"
                   " WHERE job_id = ?1 AND fp = '" CLAIM_FP "' AND t_ns = ?5";
    if (got) {
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
            rc = -1;
        } else {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            if (!declined) {
                sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
                /* Events up to the frozen past's staleness bound break the state; after it
                 * they are merged by id (no frozen past: every event is held). */
                sqlite3_bind_int64(st, 3, a->ck.valid ? a->ck.late_ns : -1);
                sqlite3_bind_blob64(st, 4, blob, len, SQLITE_STATIC);
                sqlite3_bind_int64(st, 5, cut);
                sqlite3_bind_int64(st, 6, raw0);
            }
            rc = sqlite3_step(st) == SQLITE_DONE ? (sqlite3_changes(db) > 0 && !declined) : -1;
            sqlite3_finalize(st);
        }
    }
    if (rc <= 0 && !declined &&
        exec_job(db, "DELETE FROM job_prefix WHERE job_id = ?1 AND fp = '" CLAIM_FP "'", id) != 0)
        rc = -1;
    free(blob);
    gp_job_acct_free(a);
    return rc;
}

int gp_acct_prefix_pass(gp_store *s, int64_t now_ns, double budget_cpu_s, char *err,
                        size_t errlen) {
    char fp[256];
    if (gp_acct_prefix_fp(fp, sizeof fp) != 0) {
        snprintf(err, errlen, "job_prefix: fingerprint too long");
        return -1;
    }
    sqlite3 *db = gp_store_db(s);
    char(*ids)[GP_JOB_ID_MAX] = NULL;
    int64_t *t0s = NULL;
    size_t n = 0;
    if (candidates(s, now_ns, fp, &ids, &t0s, &n) != 0) {
        free(ids);
        free(t0s);
        snprintf(err, errlen, "job_prefix: %s", sqlite3_errmsg(db));
        return -1;
    }
    int saved = 0;
    double c0 = gp_process_cpu_s();
    for (size_t i = 0; i < n; i++) {
        if (budget_cpu_s > 0 && i > 0 && gp_process_cpu_s() - c0 >= budget_cpu_s) break;
        int k = save_one(s, ids[i], t0s[i], now_ns, fp);
        if (k < 0) {
            snprintf(err, errlen, "job_prefix: %s", sqlite3_errmsg(db));
            saved = -1;
            break;
        }
        saved += k;
    }
    free(ids);
    free(t0s);
    return saved;
}

int gp_acct_prefix_unclaim(gp_store *s) {
    return sqlite3_exec(gp_store_db(s), "DELETE FROM job_prefix WHERE fp = '" CLAIM_FP "'", NULL,
                        NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}
