/* ev_prefix.c: see ev_prefix.h. The records are written field by field (no padding, a
 * string as its bytes up to its NUL), so equal events give equal bytes, and read back
 * with every field checked that the features branch on (kinds, edges, slots, strings'
 * ends): hostile bytes decode to nothing, never to a record the loader would not give. */
#include "engine/diagnosis/ev_prefix.h"

#include "engine/accounting/acct_prefix.h"
#include "util/cpu_clock.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Generated at build time (mk/results.mk); declared in engine/results/job_results.h. */
extern const char gp_engine_version[];

#define MAGIC 0x31505645u /* "EVP1" */
#define CLAIM_FP "claim"

/* ---- lists ---- */

static int grow(void **p, size_t *cap, size_t n, size_t sz, size_t first) {
    if (n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : first;
    void *q = realloc(*p, c * sz);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

int gp_ev_lists_add(void *ctx, const gp_event *e) {
    gp_ev_lists *x = ctx;
    if (e->kind == GP_EV_STEP) {
        if (grow((void **)&x->st, &x->cap_st, x->nst, sizeof *x->st, 1024) < 0) return -1;
        x->st[x->nst++] = (gp_step_ev){e->ts_ns, e->step_start_ns, e->rank, e->step, e->units};
        return 0;
    }
    gp_mark_ev m;
    if (gp_mark_of(e, &m)) {
        if (grow((void **)&x->mk, &x->cap_mk, x->nmk, sizeof *x->mk, 256) < 0) return -1;
        x->mk[x->nmk++] = m;
        return 0;
    }
    if (grow((void **)&x->ev, &x->cap_ev, x->nev, sizeof *x->ev, 64) < 0) return -1;
    x->ev[x->nev++] = *e;
    return 0;
}

void gp_ev_lists_free(gp_ev_lists *l) {
    free(l->ev);
    free(l->st);
    free(l->mk);
    memset(l, 0, sizeof *l);
}

/* ---- bytes ---- */

int gp_ev_prefix_fp(char *buf, size_t cap) {
    int k = snprintf(buf, cap, "%s;ev/%zu/%zu/%zu", gp_engine_version, sizeof(gp_step_ev),
                     sizeof(gp_mark_ev), sizeof(gp_event));
    return k < 0 || (size_t)k >= cap ? -1 : 0;
}

typedef struct {
    unsigned char *p;
    size_t n, cap;
    int oom;
} wbuf;

static void put(wbuf *w, const void *src, size_t len) {
    if (w->oom) return;
    if (w->n + len > w->cap) {
        size_t c = w->cap ? w->cap : 4096;
        while (c < w->n + len)
            c *= 2;
        unsigned char *q = realloc(w->p, c);
        if (!q) {
            w->oom = 1;
            return;
        }
        w->p = q;
        w->cap = c;
    }
    memcpy(w->p + w->n, src, len);
    w->n += len;
}
#define PUT(w, v) put((w), &(v), sizeof(v))

static void put_str(wbuf *w, const char *s, size_t cap) {
    uint16_t n = (uint16_t)strnlen(s, cap - 1);
    PUT(w, n);
    put(w, s, n);
}

/* Where a segment's bytes are read from: a buffer, or the stored blob itself through a
 * window (gp_ev_prefix_load), so the whole blob is never held next to the lists decoded
 * from it (a column read copies it whole: 0.8-0.9 MB for the 60-minute demo's jobs, at
 * the report's peak). */
typedef struct {
    const unsigned char *p, *end; /* the bytes at hand */
    int bad;
    sqlite3_blob *blob; /* or NULL: every byte is at hand */
    size_t off, len;    /* blob: where the bytes at hand end in it, and its size */
    unsigned char win[4096];
} rbuf;

static size_t rleft(const rbuf *r) {
    return (size_t)(r->end - r->p) + (r->blob ? r->len - r->off : 0);
}

/* get's way through a window's end (or a short read): the next window of the blob. */
static void get_across(rbuf *r, void *dst, size_t len) {
    if (r->bad || rleft(r) < len) {
        r->bad = 1;
        memset(dst, 0, len);
        return;
    }
    unsigned char *d = dst;
    while (len) {
        if (r->p == r->end) { /* the next window of the blob */
            size_t k = r->len - r->off < sizeof r->win ? r->len - r->off : sizeof r->win;
            if (sqlite3_blob_read(r->blob, r->win, (int)k, (int)r->off) != SQLITE_OK) {
                r->bad = 1;
                memset(dst, 0, len);
                return;
            }
            r->p = r->win, r->end = r->win + k, r->off += k;
        }
        size_t k = (size_t)(r->end - r->p) < len ? (size_t)(r->end - r->p) : len;
        memcpy(d, r->p, k);
        r->p += k, d += k, len -= k;
    }
}

/* len bytes into dst, or zeros and r->bad when fewer are left. */
static inline void get(rbuf *r, void *dst, size_t len) {
    if (!r->bad && (size_t)(r->end - r->p) >= len) { /* within the bytes at hand */
        memcpy(dst, r->p, len);
        r->p += len;
        return;
    }
    get_across(r, dst, len);
}
#define GET(r, v) get((r), &(v), sizeof(v))

static void get_str(rbuf *r, char *s, size_t cap) {
    uint16_t n = 0;
    GET(r, n);
    if (n >= cap) r->bad = 1;
    memset(s, 0, cap);
    if (!r->bad) get(r, s, n);
    if (memchr(s, 0, n)) r->bad = 1; /* a NUL inside: not what put_str writes */
}

/* The other events' fields, in one order for both directions. */
// clang-format off
#define EV_FIELDS(I, D, S)                                                                 \
    I(ts_ns) I(rank) I(seq) I(step) D(units) I(step_start_ns) S(name) I(arrival_ns)        \
    I(first_token_ns) I(prompt_tokens) I(output_tokens) I(item) I(enqueue_ns) I(start_ns)  \
    S(worker) I(bytes) I(pid) S(host) D(flops_per_unit) D(bytes_per_unit) D(slo_ttft_s)    \
    D(slo_tpot_s) D(slo_e2e_s) S(uuid) S(user) S(job_name) I(from_ns) I(to_ns)             \
    I(exit_code) S(origin)
// clang-format on

static void put_event(wbuf *w, const gp_event *e) {
    int32_t kind = (int32_t)e->kind, edge = e->edge, ok = e->ok;
    PUT(w, kind);
    PUT(w, edge);
    PUT(w, ok);
#define PI(f) PUT(w, e->f);
#define PS(f) put_str(w, e->f, sizeof e->f);
    EV_FIELDS(PI, PI, PS)
#undef PI
#undef PS
}

static void get_event(rbuf *r, gp_event *e, const char *job_id) {
    int32_t kind = 0, edge = 0, ok = 0;
    gp_event_init(e, GP_EV_HELLO);
    GET(r, kind);
    GET(r, edge);
    GET(r, ok);
#define GI(f) GET(r, e->f);
#define GS(f) get_str(r, e->f, sizeof e->f);
    EV_FIELDS(GI, GI, GS)
#undef GI
#undef GS
    /* steps, requests and phases are never among the others (gp_ev_lists_add) */
    if (kind < GP_EV_HELLO || kind > GP_EV_ALLOC || kind == GP_EV_STEP || kind == GP_EV_PHASE ||
        kind == GP_EV_REQUEST)
        r->bad = 1;
    e->kind = (gp_event_kind)kind;
    e->edge = edge;
    e->ok = ok;
    snprintf(e->job_id, sizeof e->job_id, "%s", job_id);
}

typedef struct head {
    uint32_t magic, id_len;
    uint64_t n_st, n_mk, n_ev;
    int64_t t0_ns, t_ns;
} head;

int gp_ev_prefix_encode(const char *job_id, int64_t t0_ns, int64_t t_ns, const gp_ev_lists *l,
                        unsigned char **buf, size_t *len) {
    wbuf w = {0};
    head h = {MAGIC, (uint32_t)strlen(job_id), l->nst, l->nmk, l->nev, t0_ns, t_ns};
    put(&w, &h.magic, sizeof h.magic);
    put(&w, &h.id_len, sizeof h.id_len);
    put(&w, &h.n_st, sizeof h.n_st);
    put(&w, &h.n_mk, sizeof h.n_mk);
    put(&w, &h.n_ev, sizeof h.n_ev);
    put(&w, &h.t0_ns, sizeof h.t0_ns);
    put(&w, &h.t_ns, sizeof h.t_ns);
    put(&w, job_id, h.id_len);
    for (size_t i = 0; i < l->nst; i++) {
        const gp_step_ev *s = &l->st[i];
        PUT(&w, s->ts_ns);
        PUT(&w, s->step_start_ns);
        PUT(&w, s->rank);
        PUT(&w, s->step);
        PUT(&w, s->units);
    }
    for (size_t i = 0; i < l->nmk; i++) {
        const gp_mark_ev *m = &l->mk[i];
        PUT(&w, m->ts_ns);
        PUT(&w, m->rank);
        PUT(&w, m->arrival_ns);
        PUT(&w, m->first_token_ns);
        PUT(&w, m->output_tokens);
        PUT(&w, m->kind);
        PUT(&w, m->ok);
        PUT(&w, m->edge);
        PUT(&w, m->slot);
    }
    for (size_t i = 0; i < l->nev; i++)
        put_event(&w, &l->ev[i]);
    if (w.oom) {
        free(w.p);
        return -1;
    }
    *buf = w.p;
    *len = w.n;
    return 0;
}

#define STEP_BYTES 40
#define MARK_BYTES 44

static int decode(rbuf *rb, const char *job_id, int64_t t0_ns, int64_t t_ns, gp_ev_lists *l) {
#define r (*rb)
    head h;
    GET(&r, h.magic);
    GET(&r, h.id_len);
    GET(&r, h.n_st);
    GET(&r, h.n_mk);
    GET(&r, h.n_ev);
    GET(&r, h.t0_ns);
    GET(&r, h.t_ns);
    char id[GP_JOB_ID_MAX];
    if (r.bad || h.magic != MAGIC || h.t0_ns != t0_ns || h.t_ns != t_ns ||
        h.id_len != strlen(job_id) || h.id_len >= sizeof id)
        return -1;
    get(&r, id, h.id_len);
    if (r.bad || memcmp(id, job_id, h.id_len) != 0) return -1;
    size_t left = rleft(&r);
    /* the counts must fit the bytes before anything is allocated for them */
    if (h.n_st > left / STEP_BYTES || h.n_mk > (left - h.n_st * STEP_BYTES) / MARK_BYTES ||
        h.n_ev > left)
        return -1;
    l->st = malloc((h.n_st ? h.n_st : 1) * sizeof *l->st);
    l->mk = malloc((h.n_mk ? h.n_mk : 1) * sizeof *l->mk);
    l->ev = malloc((h.n_ev ? h.n_ev : 1) * sizeof *l->ev);
    if (!l->st || !l->mk || !l->ev) goto bad;
    l->cap_st = h.n_st ? h.n_st : 1;
    l->cap_mk = h.n_mk ? h.n_mk : 1;
    l->cap_ev = h.n_ev ? h.n_ev : 1;
    for (uint64_t i = 0; i < h.n_st && !r.bad; i++) {
        gp_step_ev *s = &l->st[i];
        GET(&r, s->ts_ns);
        GET(&r, s->step_start_ns);
        GET(&r, s->rank);
        GET(&r, s->step);
        GET(&r, s->units);
        if (s->ts_ns > t_ns || s->ts_ns <= t0_ns) r.bad = 1;
    }
    for (uint64_t i = 0; i < h.n_mk && !r.bad; i++) {
        gp_mark_ev *m = &l->mk[i];
        memset(m, 0, sizeof *m);
        GET(&r, m->ts_ns);
        GET(&r, m->rank);
        GET(&r, m->arrival_ns);
        GET(&r, m->first_token_ns);
        GET(&r, m->output_tokens);
        GET(&r, m->kind);
        GET(&r, m->ok);
        GET(&r, m->edge);
        GET(&r, m->slot);
        if (m->ts_ns > t_ns || m->ts_ns <= t0_ns ||
            (m->kind != GP_EV_REQUEST && m->kind != GP_EV_PHASE) || (m->ok != 0 && m->ok != 1) ||
            m->slot < GP_PS_OTHER || m->slot > GP_PS_COMM ||
            (m->kind == GP_EV_PHASE && m->edge != GP_PH_BEGIN && m->edge != GP_PH_END))
            r.bad = 1;
    }
    for (uint64_t i = 0; i < h.n_ev && !r.bad; i++) {
        get_event(&r, &l->ev[i], job_id);
        if (l->ev[i].ts_ns > t_ns || l->ev[i].ts_ns <= t0_ns) r.bad = 1;
    }
    if (r.bad || rleft(&r) != 0) goto bad;
    l->nst = h.n_st;
    l->nmk = h.n_mk;
    l->nev = h.n_ev;
    return 0;
bad:
    gp_ev_lists_free(l);
    return -1;
#undef r
}

int gp_ev_prefix_decode(const char *job_id, int64_t t0_ns, int64_t t_ns, const unsigned char *buf,
                        size_t len, gp_ev_lists *l) {
    rbuf *r = malloc(sizeof *r);
    if (!r) return -1;
    r->p = buf, r->end = buf + len, r->bad = 0, r->blob = NULL, r->off = r->len = 0;
    int rc = decode(r, job_id, t0_ns, t_ns, l);
    free(r);
    return rc;
}

/* ---- reader ---- */

static int prefix_off(void) {
    const char *off = getenv("GOODPUT_NO_PREFIX");
    return off && *off && strcmp(off, "0") != 0;
}

/* Appends src's records to dst (src emptied). 0, -1 out of memory. */
static int append_lists(gp_ev_lists *dst, gp_ev_lists *src) {
    if (!dst->nst && !dst->nmk && !dst->nev) {
        gp_ev_lists_free(dst);
        *dst = *src;
        memset(src, 0, sizeof *src);
        return 0;
    }
    gp_step_ev *st = realloc(dst->st, (dst->nst + src->nst + 1) * sizeof *st);
    if (st) dst->st = st;
    gp_mark_ev *mk = st ? realloc(dst->mk, (dst->nmk + src->nmk + 1) * sizeof *mk) : NULL;
    if (mk) dst->mk = mk;
    gp_event *ev = mk ? realloc(dst->ev, (dst->nev + src->nev + 1) * sizeof *ev) : NULL;
    if (ev) dst->ev = ev;
    if (!ev) return -1;
    memcpy(dst->st + dst->nst, src->st, src->nst * sizeof *st);
    memcpy(dst->mk + dst->nmk, src->mk, src->nmk * sizeof *mk);
    memcpy(dst->ev + dst->nev, src->ev, src->nev * sizeof *ev);
    dst->nst += src->nst;
    dst->nmk += src->nmk;
    dst->nev += src->nev;
    dst->cap_st = dst->nst + 1;
    dst->cap_mk = dst->nmk + 1;
    dst->cap_ev = dst->nev + 1;
    gp_ev_lists_free(src);
    return 0;
}

int gp_ev_prefix_load(gp_store *s, const char *job_id, gp_ev_lists *l, int64_t *t_ns) {
    memset(l, 0, sizeof *l);
    if (prefix_off()) return 0;
    char fp[256];
    if (gp_ev_prefix_fp(fp, sizeof fp) != 0) return 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT t0_ns, t_ns, fp, rowid FROM job_ev_prefix WHERE job_id = ?1"
                           " ORDER BY t_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return 0; /* an older store: no table */
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    /* the segments in order, each the rows of (t0_ns, t_ns], the first from the job's start:
     * served up to the first that is not this build's, not contiguous (a claim being
     * written) or not decoded */
    int64_t prev = INT64_MIN;
    int got = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t t0 = sqlite3_column_int64(st, 0), t = sqlite3_column_int64(st, 1);
        const char *f = (const char *)sqlite3_column_text(st, 2);
        if (!f || strcmp(f, fp) != 0 || t0 != prev) break;
        sqlite3_blob *b;
        if (sqlite3_blob_open(gp_store_db(s), "main", "job_ev_prefix", "state",
                              sqlite3_column_int64(st, 3), 0, &b) != SQLITE_OK) {
            sqlite3_blob_close(b);
            break;
        }
        int n = sqlite3_blob_bytes(b);
        rbuf *r = n > 0 ? malloc(sizeof *r) : NULL;
        gp_ev_lists seg = {0};
        int drc = -1;
        if (r) {
            r->p = r->end = r->win, r->bad = 0, r->blob = b, r->off = 0, r->len = (size_t)n;
            drc = decode(r, job_id, t0, t, &seg);
        }
        free(r);
        sqlite3_blob_close(b);
        if (drc != 0) break;
        if (append_lists(l, &seg) != 0) {
            gp_ev_lists_free(&seg);
            got = 0;
            break;
        }
        prev = t;
        got = 1;
    }
    sqlite3_finalize(st);
    if (!got) {
        gp_ev_lists_free(l);
        return 0;
    }
    *t_ns = prev;
    return 1;
}

/* ---- writer ---- */

/* Jobs with an accounting prefix of this build (acct_fp) whose bound is past their saved
 * events' (this build's), with that bound. */
static const char candidates_sql[] =
    "SELECT p.job_id, p.t_ns, p.computed_ns FROM job_prefix p WHERE p.fp = ?1"
    " AND p.t_ns > ifnull((SELECT max(e.t_ns) FROM job_ev_prefix e WHERE e.job_id = p.job_id"
    "  AND e.fp = ?2), -9223372036854775807)"
    " ORDER BY p.computed_ns, p.job_id";

static int exec_id(sqlite3 *db, const char *sql, const char *id) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

/* The end of the job's chain of segments of this build (INT64_MIN: none); a chain that is
 * not one (another build's, a claim left, a gap) is deleted. -2 on a store error. */
static int64_t chain_end(sqlite3 *db, const char *id, const char *fp) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT t0_ns, t_ns, fp FROM job_ev_prefix WHERE job_id = ?1"
                           " ORDER BY t_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -2;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    int64_t prev = INT64_MIN;
    int broken = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *f = (const char *)sqlite3_column_text(st, 2);
        if (!f || strcmp(f, fp) != 0 || sqlite3_column_int64(st, 0) != prev) broken = 1;
        prev = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return -2;
    if (broken) {
        if (exec_id(db, "DELETE FROM job_ev_prefix WHERE job_id = ?1", id) != 0) return -2;
        return INT64_MIN;
    }
    return prev;
}

/* One job, events up to t_ns: 1 saved, 0 not (nothing new, an event at or before t_ns
 * arrived while it was read, or out of memory), -1 store error. It appends one segment,
 * the rows of (end of the chain, t_ns], so the writer holds only the rows since its last
 * save. The chain is checked and the claim (the segment with fp 'claim', empty) written in
 * one write transaction; an event at or before t_ns committed after the claim deletes the
 * job's segments, claim included (the triggers), and the segment replaces the claim only
 * if it is still there. */
static int save_one(gp_store *s, const char *id, int64_t t_ns, int64_t now_ns, const char *fp) {
    sqlite3 *db = gp_store_db(s);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return -1;
    int64_t t_old = chain_end(db, id, fp);
    int rc = t_old == -2 ? -1 : 0;
    sqlite3_stmt *st;
    if (rc == 0 && t_old < t_ns) {
        rc = sqlite3_prepare_v2(db,
                                "INSERT INTO job_ev_prefix(job_id, t_ns, t0_ns, fp, computed_ns,"
                                " state) VALUES(?1,?2,?3,'" CLAIM_FP "',?4,X'')",
                                -1, &st, NULL) == SQLITE_OK
                 ? 0
                 : -1;
        if (rc == 0) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, t_ns);
            sqlite3_bind_int64(st, 3, t_old);
            sqlite3_bind_int64(st, 4, now_ns);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
            sqlite3_finalize(st);
        }
    }
    if (sqlite3_exec(db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK) rc = -1;
    if (rc < 0) return -1;
    if (t_old >= t_ns) return 0;
    int64_t from = t_old == INT64_MIN ? INT64_MIN : t_old + 1;
    gp_ev_lists l = {0};
    unsigned char *blob = NULL;
    size_t len = 0;
    int got = gp_store_job_events_range_each(s, id, from, t_ns, gp_ev_lists_add, &l) == 0 &&
              gp_ev_prefix_encode(id, t_old, t_ns, &l, &blob, &len) == 0;
    gp_ev_lists_free(&l);
    if (got) {
        if (sqlite3_prepare_v2(db,
                               "UPDATE job_ev_prefix SET fp = ?2, state = ?3 WHERE job_id = ?1"
                               " AND fp = '" CLAIM_FP "' AND t_ns = ?4",
                               -1, &st, NULL) != SQLITE_OK)
            rc = -1;
        else {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
            sqlite3_bind_blob64(st, 3, blob, len, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, t_ns);
            rc = sqlite3_step(st) == SQLITE_DONE ? sqlite3_changes(db) > 0 : -1;
            sqlite3_finalize(st);
        }
    }
    free(blob);
    if (rc <= 0 &&
        exec_id(db, "DELETE FROM job_ev_prefix WHERE job_id = ?1 AND fp = '" CLAIM_FP "'", id) != 0)
        rc = -1;
    return rc;
}

int gp_ev_prefix_pass(gp_store *s, int64_t now_ns, double budget_cpu_s, char *err, size_t errlen) {
    char fp[256], acct_fp[256];
    if (gp_ev_prefix_fp(fp, sizeof fp) != 0 || gp_acct_prefix_fp(acct_fp, sizeof acct_fp) != 0) {
        snprintf(err, errlen, "job_ev_prefix: fingerprint too long");
        return -1;
    }
    sqlite3 *db = gp_store_db(s);
    /* A job whose result is stored is read from it, not from its events: its saved events
     * (~40 bytes a step, tens of MB for a day-long trainer) would otherwise stay forever.
     * This pass runs in the child that stored the result, right after it ('sealing': a
     * result being computed, job_results.c's claim). */
    if (sqlite3_exec(db,
                     "DELETE FROM job_ev_prefix WHERE job_id IN (SELECT job_id FROM job_results"
                     " WHERE sum_fp != 'sealing' UNION SELECT job_id FROM job_events_pruned)",
                     NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "job_ev_prefix: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, candidates_sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "job_ev_prefix: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_text(st, 1, acct_fp, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
    size_t n = 0;
    char(*ids)[GP_JOB_ID_MAX] = NULL;
    int64_t *ts = NULL;
    int crc = gp_store_collect_ids(st, &ids, &ts, &n);
    sqlite3_finalize(st);
    if (crc != 0) {
        free(ids);
        free(ts);
        snprintf(err, errlen, "job_ev_prefix: %s", sqlite3_errmsg(db));
        return -1;
    }
    int saved = 0;
    double c0 = gp_process_cpu_s();
    for (size_t i = 0; i < n; i++) {
        if (budget_cpu_s > 0 && i > 0 && gp_process_cpu_s() - c0 >= budget_cpu_s) break;
        int k = save_one(s, ids[i], ts[i], now_ns, fp);
        if (k < 0) {
            snprintf(err, errlen, "job_ev_prefix: %s", sqlite3_errmsg(db));
            saved = -1;
            break;
        }
        saved += k;
    }
    free(ids);
    free(ts);
    return saved;
}
