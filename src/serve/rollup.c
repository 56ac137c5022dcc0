/* rollup.c: the server's in-memory 10-second rollups, so a day of 1-second samples is
 * charted from 8,640 buckets instead of 86,400 rows.
 *
 * One entry per device (signal sums and counts) or per job (progress: steps, units, output
 * tokens), built lazily on the first series request that needs it and then extended on
 * each request by reading only rows newer than what it holds. Only "sealed" buckets are
 * kept: those ending at least SEAL seconds before the newest row, so rows that reach the
 * store a little late (flush intervals, batched events) are still counted; the unsealed
 * tail is read raw on every request. A row older than the sealed horizon when it arrives
 * (a replay of old events) is missed by the rollup: the raw path (steps under 60 s) sees
 * it. At most ROLLUP_MAX_ENTRIES entries (least recently used evicted), each covering at
 * most ROLLUP_MAX_BUCKETS (3 days); older ranges fall back to raw rows.
 *
 * Server thread only; no locking. */
#include "serve/rollup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEAL_NS (60 * 1000000000LL)

struct srv_rollup {
    char key[GP_UUID_MAX];
    int is_job;
    int64_t base_ns;     /* start of bucket 0, a multiple of ROLLUP_W_NS */
    int64_t sealed_ns;   /* buckets before this are complete */
    int64_t last_row_ns; /* newest row read */
    int n;               /* buckets held */
    float *sum;          /* n x ROLLUP_NSIG */
    uint16_t *cnt;       /* n x ROLLUP_NSIG */
    uint64_t used;       /* LRU clock */
};

static void entry_free(srv_rollup *r) {
    if (!r) return;
    free(r->sum);
    free(r->cnt);
    free(r);
}

void srv_rollups_free(srv_rollup **tab, int n) {
    for (int i = 0; i < n; i++)
        entry_free(tab[i]);
}

/* Device rows: the signals of serve_int's series. Job rows: steps (rank 0), units, output
 * tokens, requests. */
static const char *DEV_SQL =
    "SELECT ts_ns, gpu_util, sm_active, tensor_active, dram_active, "
    "mem_used_bytes * 1.0 / NULLIF(mem_total_bytes, 0), power_w, temp_c "
    "FROM samples WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3 ORDER BY ts_ns";
static const char *JOB_SQL =
    "SELECT ts_ns, kind, units, output_tokens FROM events WHERE job_id = ?1 AND ts_ns >= ?2 "
    "AND ts_ns < ?3 AND ((kind = 2 AND (rank IS NULL OR rank <= 0)) OR kind = 4)";

/* Streams rows of [t0, t1) into fn(ctx, ts, values[ROLLUP_NSIG], has[ROLLUP_NSIG]). Job
 * values: [0] steps, [1] units (has when known), [2] output tokens, [3] requests. */

int srv_rollup_scan(sqlite3 *db, int is_job, const char *key, int64_t t0, int64_t t1, srv_row_fn fn,
                    void *ctx) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, is_job ? JOB_SQL : DEV_SQL, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t0);
    sqlite3_bind_int64(st, 3, t1);
    double v[ROLLUP_NSIG];
    int has[ROLLUP_NSIG];
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t ts = sqlite3_column_int64(st, 0);
        memset(has, 0, sizeof has);
        if (!is_job) {
            for (int k = 0; k < ROLLUP_NSIG; k++) {
                has[k] = sqlite3_column_type(st, k + 1) != SQLITE_NULL;
                v[k] = has[k] ? sqlite3_column_double(st, k + 1) : 0;
            }
        } else {
            memset(v, 0, sizeof v);
            int kind = sqlite3_column_int(st, 1);
            if (kind == 4) { /* request */
                v[2] = sqlite3_column_double(st, 3), has[2] = 1;
                v[3] = 1, has[3] = 1;
            } else {
                v[0] = 1, has[0] = 1;
                if (sqlite3_column_type(st, 2) != SQLITE_NULL)
                    v[1] = sqlite3_column_double(st, 2), has[1] = 1;
            }
        }
        fn(ctx, ts, v, has);
    }
    sqlite3_finalize(st);
    return 0;
}

static void add_row(void *ctx, int64_t ts, const double *v, const int *has) {
    srv_rollup *r = ctx;
    int64_t i = (ts - r->base_ns) / ROLLUP_W_NS;
    if (i < 0 || i >= r->n) return;
    for (int k = 0; k < ROLLUP_NSIG; k++) {
        if (!has[k]) continue;
        r->sum[i * ROLLUP_NSIG + k] += (float)v[k];
        if (r->cnt[i * ROLLUP_NSIG + k] < UINT16_MAX) r->cnt[i * ROLLUP_NSIG + k]++;
    }
    if (ts > r->last_row_ns) r->last_row_ns = ts;
}

static int64_t newest_ns(sqlite3 *db, int is_job, const char *key) {
    sqlite3_stmt *st;
    const char *sql = is_job ? "SELECT max(ts_ns) FROM events WHERE job_id = ?"
                             : "SELECT max(ts_ns) FROM samples WHERE uuid = ?";
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int64_t floor_w(int64_t t) {
    int64_t q = t / ROLLUP_W_NS;
    if (t < 0 && q * ROLLUP_W_NS != t) q--;
    return q * ROLLUP_W_NS;
}

/* Brings an entry up to date: seals every bucket ending SEAL before the newest row. */
static int refresh(sqlite3 *db, srv_rollup *r) {
    int64_t newest = newest_ns(db, r->is_job, r->key);
    if (newest < 0) return 0;
    int64_t seal_to = floor_w(newest - SEAL_NS);
    if (seal_to <= r->sealed_ns) return 0;
    int64_t need = (seal_to - r->base_ns) / ROLLUP_W_NS;
    if (need > ROLLUP_MAX_BUCKETS) { /* slide: keep the newest ROLLUP_MAX_BUCKETS */
        int64_t drop = need - ROLLUP_MAX_BUCKETS;
        if (drop >= r->n) {
            memset(r->sum, 0, (size_t)r->n * ROLLUP_NSIG * sizeof *r->sum);
            memset(r->cnt, 0, (size_t)r->n * ROLLUP_NSIG * sizeof *r->cnt);
        } else {
            memmove(r->sum, r->sum + drop * ROLLUP_NSIG,
                    (size_t)(r->n - drop) * ROLLUP_NSIG * sizeof *r->sum);
            memmove(r->cnt, r->cnt + drop * ROLLUP_NSIG,
                    (size_t)(r->n - drop) * ROLLUP_NSIG * sizeof *r->cnt);
            memset(r->sum + (r->n - drop) * ROLLUP_NSIG, 0,
                   (size_t)drop * ROLLUP_NSIG * sizeof *r->sum);
            memset(r->cnt + (r->n - drop) * ROLLUP_NSIG, 0,
                   (size_t)drop * ROLLUP_NSIG * sizeof *r->cnt);
        }
        r->base_ns += drop * ROLLUP_W_NS;
        if (r->sealed_ns < r->base_ns) r->sealed_ns = r->base_ns;
        need = ROLLUP_MAX_BUCKETS;
    }
    if (need > r->n) {
        int n = (int)need;
        float *s = realloc(r->sum, (size_t)n * ROLLUP_NSIG * sizeof *s);
        if (!s) return -1;
        r->sum = s;
        uint16_t *c = realloc(r->cnt, (size_t)n * ROLLUP_NSIG * sizeof *c);
        if (!c) return -1;
        r->cnt = c;
        memset(r->sum + (size_t)r->n * ROLLUP_NSIG, 0,
               (size_t)(n - r->n) * ROLLUP_NSIG * sizeof *s);
        memset(r->cnt + (size_t)r->n * ROLLUP_NSIG, 0,
               (size_t)(n - r->n) * ROLLUP_NSIG * sizeof *c);
        r->n = n;
    }
    if (srv_rollup_scan(db, r->is_job, r->key, r->sealed_ns, seal_to, add_row, r) != 0) return -1;
    r->sealed_ns = seal_to;
    return 0;
}

srv_rollup *srv_rollup_get(sqlite3 *db, srv_rollup **tab, int *n, uint64_t *clock, int is_job,
                           const char *key) {
    srv_rollup *r = NULL;
    for (int i = 0; i < *n && !r; i++)
        if (tab[i]->is_job == is_job && strcmp(tab[i]->key, key) == 0) r = tab[i];
    if (!r) {
        int64_t newest = newest_ns(db, is_job, key);
        if (newest < 0) return NULL;
        r = calloc(1, sizeof *r);
        if (!r) return NULL;
        snprintf(r->key, sizeof r->key, "%s", key);
        r->is_job = is_job;
        sqlite3_stmt *st;
        int64_t oldest = newest;
        const char *sql = is_job ? "SELECT min(ts_ns) FROM events WHERE job_id = ?"
                                 : "SELECT min(ts_ns) FROM samples WHERE uuid = ?";
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW) oldest = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        r->base_ns = floor_w(oldest);
        if (newest - r->base_ns > (int64_t)ROLLUP_MAX_BUCKETS * ROLLUP_W_NS)
            r->base_ns = floor_w(newest - SEAL_NS) - (int64_t)ROLLUP_MAX_BUCKETS * ROLLUP_W_NS;
        r->sealed_ns = r->base_ns;
        if (*n == ROLLUP_MAX_ENTRIES) { /* evict the least recently used */
            int lru = 0;
            for (int i = 1; i < *n; i++)
                if (tab[i]->used < tab[lru]->used) lru = i;
            entry_free(tab[lru]);
            tab[lru] = tab[--*n];
        }
        tab[(*n)++] = r;
    }
    r->used = ++*clock;
    if (refresh(db, r) != 0) return NULL;
    return r;
}

int64_t srv_rollup_sealed_ns(const srv_rollup *r) {
    return r->sealed_ns;
}
int64_t srv_rollup_base_ns(const srv_rollup *r) {
    return r->base_ns;
}

void srv_rollup_fold(const srv_rollup *r, int64_t a, int64_t b, int64_t t0, int64_t step, int nb,
                     double *sum, double *cnt) {
    /* Buckets whose start lies in [a, b), up to the sealed horizon. */
    int64_t lo = a > r->base_ns ? a : r->base_ns, hi = b < r->sealed_ns ? b : r->sealed_ns;
    if (hi <= lo) return;
    int64_t i0 = (lo - r->base_ns + ROLLUP_W_NS - 1) / ROLLUP_W_NS,
            i1 = (hi - r->base_ns + ROLLUP_W_NS - 1) / ROLLUP_W_NS;
    for (int64_t i = i0; i < i1 && i < r->n; i++) {
        int64_t ts = r->base_ns + i * ROLLUP_W_NS;
        int64_t j = (ts - t0) / step;
        if (j < 0 || j >= nb) continue;
        for (int k = 0; k < ROLLUP_NSIG; k++) {
            uint16_t c = r->cnt[i * ROLLUP_NSIG + k];
            if (!c) continue;
            sum[j * ROLLUP_NSIG + k] += r->sum[i * ROLLUP_NSIG + k];
            cnt[j * ROLLUP_NSIG + k] += c;
        }
    }
}
