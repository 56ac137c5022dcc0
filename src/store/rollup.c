/* rollup.c: the 1-minute and 1-hour rollups behind rollup.h.
 *
 * Each device has one open bucket per resolution in memory; a sample past its end writes
 * it (one upsert) and opens the next. gp_rollup_flush writes the open ones before every
 * commit, so the rollups always hold exactly the committed raw samples; the upsert adds
 * to the row a previous flush wrote for the same bucket. Column order is schema.c's
 * migration 6. */
#include "store/rollup.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

/* Gauges: kept as sum and count of the known values. */
static const struct {
    const char *name;
    uint32_t bit;
    size_t off;
    int is_u64;
} gauges[] = {
    {"gpu_util", GP_F_GPU_UTIL, offsetof(gp_sample, gpu_util), 0},
    {"sm_active", GP_F_SM_ACTIVE, offsetof(gp_sample, sm_active), 0},
    {"sm_occupancy", GP_F_SM_OCCUPANCY, offsetof(gp_sample, sm_occupancy), 0},
    {"tensor_active", GP_F_TENSOR_ACTIVE, offsetof(gp_sample, tensor_active), 0},
    {"dram_active", GP_F_DRAM_ACTIVE, offsetof(gp_sample, dram_active), 0},
    {"mem_util", GP_F_MEM_UTIL, offsetof(gp_sample, mem_util), 0},
    {"fp16_active", GP_F_FP16_ACTIVE, offsetof(gp_sample, fp16_active), 0},
    {"fp32_active", GP_F_FP32_ACTIVE, offsetof(gp_sample, fp32_active), 0},
    {"fp64_active", GP_F_FP64_ACTIVE, offsetof(gp_sample, fp64_active), 0},
    {"mem_used_bytes", GP_F_MEM_USED, offsetof(gp_sample, mem_used_bytes), 1},
    {"power_w", GP_F_POWER, offsetof(gp_sample, power_w), 0},
    {"sm_clock_mhz", GP_F_SM_CLOCK, offsetof(gp_sample, sm_clock_mhz), 0},
    {"mem_clock_mhz", GP_F_MEM_CLOCK, offsetof(gp_sample, mem_clock_mhz), 0},
    {"temp_c", GP_F_TEMP, offsetof(gp_sample, temp_c), 0},
};
/* Counters (and memory total): the last known value of the bucket. */
static const struct {
    const char *name;
    uint32_t bit;
    size_t off;
} lasts[] = {
    {"mem_total_bytes", GP_F_MEM_TOTAL, offsetof(gp_sample, mem_total_bytes)},
    {"energy_mj", GP_F_ENERGY, offsetof(gp_sample, energy_mj)},
    {"pcie_tx_bytes", GP_F_PCIE_TX, offsetof(gp_sample, pcie_tx_bytes)},
    {"pcie_rx_bytes", GP_F_PCIE_RX, offsetof(gp_sample, pcie_rx_bytes)},
    {"nvlink_tx_bytes", GP_F_NVLINK_TX, offsetof(gp_sample, nvlink_tx_bytes)},
    {"nvlink_rx_bytes", GP_F_NVLINK_RX, offsetof(gp_sample, nvlink_rx_bytes)},
};
enum { NG = sizeof gauges / sizeof gauges[0], NL = sizeof lasts / sizeof lasts[0] };
enum { NCOL = 5 + 2 * NG + NL + 2 };

typedef struct {
    int64_t t1_ns; /* bucket end; 0 = nothing accumulated */
    uint32_t n;
    int64_t first_ns, last_ns;
    double sum[NG];
    uint32_t cnt[NG];
    uint64_t last[NL];
    uint32_t last_known; /* bit i: last[i] known */
    uint64_t throttle;
    int64_t xid;
    int throttle_known, xid_known;
} bucket;

typedef struct {
    char uuid[GP_UUID_MAX];
    bucket b[2]; /* 1 minute, 1 hour */
} device_acc;

static const int64_t steps_ns[2] = {GP_ROLLUP_1M_NS, GP_ROLLUP_1H_NS};
static const char *const tables[2] = {"rollup_1m", "rollup_1h"};

struct gp_rollup {
    sqlite3 *db;
    sqlite3_stmt *upsert[2];
    device_acc *dev;
    size_t n_dev, cap_dev, hint; /* hint: where the next device probably is */
};

/* The upsert for one table: new rows as they are, an existing row merged (sums added,
 * the later counter value kept, throttle bits OR'ed, the larger xid). */
static char *upsert_sql(const char *table) {
    size_t cap = 8192, len = 0;
    char *q = malloc(cap);
    if (!q) return NULL;
#define PUT(...) len += (size_t)snprintf(q + len, len < cap ? cap - len : 0, __VA_ARGS__)
    PUT("INSERT INTO %s VALUES(", table);
    for (int i = 1; i <= NCOL; i++)
        PUT("%s?%d", i > 1 ? "," : "", i);
    PUT(") ON CONFLICT(uuid, t1_ns) DO UPDATE SET n = n + excluded.n,"
        " first_ts_ns = min(first_ts_ns, excluded.first_ts_ns),"
        " last_ts_ns = max(last_ts_ns, excluded.last_ts_ns)");
    for (int i = 0; i < NG; i++)
        PUT(", %1$s_sum = COALESCE(%1$s_sum + excluded.%1$s_sum, %1$s_sum, excluded.%1$s_sum),"
            " %1$s_n = %1$s_n + excluded.%1$s_n",
            gauges[i].name);
    for (int i = 0; i < NL; i++)
        PUT(", %1$s = CASE WHEN excluded.%1$s IS NULL THEN %1$s WHEN %1$s IS NULL THEN"
            " excluded.%1$s WHEN excluded.last_ts_ns >= last_ts_ns THEN excluded.%1$s ELSE %1$s"
            " END",
            lasts[i].name);
    PUT(", throttle_reasons = CASE WHEN throttle_reasons IS NULL THEN excluded.throttle_reasons"
        " WHEN excluded.throttle_reasons IS NULL THEN throttle_reasons"
        " ELSE throttle_reasons | excluded.throttle_reasons END,"
        " xid = CASE WHEN xid IS NULL THEN excluded.xid WHEN excluded.xid IS NULL THEN xid"
        " ELSE max(xid, excluded.xid) END");
#undef PUT
    if (len >= cap) {
        free(q);
        return NULL;
    }
    return q;
}

gp_rollup *gp_rollup_new(sqlite3 *db) {
    gp_rollup *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->db = db;
    for (int k = 0; k < 2; k++) {
        char *q = upsert_sql(tables[k]);
        if (!q || sqlite3_prepare_v3(db, q, -1, SQLITE_PREPARE_PERSISTENT, &r->upsert[k], NULL) !=
                      SQLITE_OK) {
            free(q);
            gp_rollup_free(r);
            return NULL;
        }
        free(q);
    }
    return r;
}

void gp_rollup_free(gp_rollup *r) {
    if (!r) return;
    for (int k = 0; k < 2; k++)
        sqlite3_finalize(r->upsert[k]);
    free(r->dev);
    free(r);
}

static int write_bucket(gp_rollup *r, int k, const char *uuid, bucket *b) {
    if (!b->t1_ns) return 0;
    sqlite3_stmt *st = r->upsert[k];
    int c = 1;
    sqlite3_bind_text(st, c++, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, c++, b->t1_ns);
    sqlite3_bind_int64(st, c++, b->n);
    sqlite3_bind_int64(st, c++, b->first_ns);
    sqlite3_bind_int64(st, c++, b->last_ns);
    for (int i = 0; i < NG; i++) {
        if (b->cnt[i])
            sqlite3_bind_double(st, c, b->sum[i]);
        else
            sqlite3_bind_null(st, c);
        sqlite3_bind_int64(st, c + 1, b->cnt[i]);
        c += 2;
    }
    for (int i = 0; i < NL; i++, c++)
        if (b->last_known & (1u << i))
            sqlite3_bind_int64(st, c, (int64_t)b->last[i]);
        else
            sqlite3_bind_null(st, c);
    if (b->throttle_known)
        sqlite3_bind_int64(st, c, (int64_t)b->throttle);
    else
        sqlite3_bind_null(st, c);
    c++;
    if (b->xid_known)
        sqlite3_bind_int64(st, c, b->xid);
    else
        sqlite3_bind_null(st, c);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    memset(b, 0, sizeof *b);
    return rc == SQLITE_DONE ? 0 : -1;
}

static device_acc *find_device(gp_rollup *r, const char *uuid) {
    /* A source reports its devices in the same order every tick: try the one after the
     * last match first. A bulk load (analyze) writes one device's steps in a row: try the
     * last match itself before that (else each sample would compare every UUID). */
    if (r->hint > 0 && r->hint <= r->n_dev && !strcmp(r->dev[r->hint - 1].uuid, uuid))
        return &r->dev[r->hint - 1];
    for (size_t i = 0; i < r->n_dev; i++) {
        size_t k = (r->hint + i) % r->n_dev;
        if (!strcmp(r->dev[k].uuid, uuid)) {
            r->hint = k + 1;
            return &r->dev[k];
        }
    }
    if (r->n_dev == r->cap_dev) {
        size_t nc = r->cap_dev ? r->cap_dev * 2 : 16;
        device_acc *p = realloc(r->dev, nc * sizeof *p);
        if (!p) return NULL;
        r->dev = p;
        r->cap_dev = nc;
    }
    device_acc *d = &r->dev[r->n_dev++];
    memset(d, 0, sizeof *d);
    snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
    r->hint = r->n_dev;
    return d;
}

static int64_t bucket_end(int64_t ts_ns, int64_t step_ns) {
    int64_t q = ts_ns / step_ns, m = ts_ns % step_ns;
    if (m > 0) q++; /* buckets are (end - step, end] */
    return q * step_ns;
}

int gp_rollup_add(gp_rollup *r, const gp_sample *x) {
    device_acc *d = find_device(r, x->uuid);
    if (!d) return -1;
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        bucket *b = &d->b[k];
        int64_t t1 = bucket_end(x->ts_ns, steps_ns[k]);
        if (b->t1_ns && b->t1_ns != t1 && write_bucket(r, k, d->uuid, b) != 0) rc = -1;
        if (!b->t1_ns) {
            b->t1_ns = t1;
            b->first_ns = x->ts_ns;
        }
        b->n++;
        if (x->ts_ns < b->first_ns) b->first_ns = x->ts_ns;
        if (x->ts_ns > b->last_ns || b->n == 1) b->last_ns = x->ts_ns;
        for (int i = 0; i < NG; i++) {
            if (!(x->valid & gauges[i].bit)) continue;
            const char *p = (const char *)x + gauges[i].off;
            double v;
            if (gauges[i].is_u64) {
                uint64_t u;
                memcpy(&u, p, sizeof u);
                v = (double)u;
            } else {
                memcpy(&v, p, sizeof v);
            }
            b->sum[i] += v;
            b->cnt[i]++;
        }
        for (int i = 0; i < NL; i++) {
            if (!(x->valid & lasts[i].bit) || x->ts_ns < b->last_ns) continue;
            memcpy(&b->last[i], (const char *)x + lasts[i].off, sizeof b->last[i]);
            b->last_known |= 1u << i;
        }
        if (x->valid & GP_F_THROTTLE) {
            b->throttle |= x->throttle_reasons;
            b->throttle_known = 1;
        }
        if ((x->valid & GP_F_XID) && (!b->xid_known || x->xid > b->xid)) {
            b->xid = x->xid;
            b->xid_known = 1;
        }
    }
    return rc;
}

int gp_rollup_flush(gp_rollup *r) {
    int rc = 0;
    for (size_t i = 0; i < r->n_dev; i++)
        for (int k = 0; k < 2; k++)
            if (write_bucket(r, k, r->dev[i].uuid, &r->dev[i].b[k]) != 0) rc = -1;
    return rc;
}

int gp_rollup_read(sqlite3 *db, int64_t step_ns, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                   gp_sample **out, uint32_t **counts, size_t *n) {
    *out = NULL;
    *n = 0;
    if (counts) *counts = NULL;
    int k = step_ns == GP_ROLLUP_1H_NS ? 1 : 0;
    char q[128];
    snprintf(q, sizeof q,
             "SELECT * FROM %s WHERE uuid = ?1 AND t1_ns >= ?2 AND t1_ns < ?3"
             " ORDER BY t1_ns",
             tables[k]);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t0_ns);
    sqlite3_bind_int64(st, 3, t1_ns);
    size_t cap = 0;
    int rc = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            gp_sample *p = realloc(*out, nc * sizeof *p);
            uint32_t *c = counts ? realloc(*counts, nc * sizeof *c) : NULL;
            if (p) *out = p;
            if (c) *counts = c;
            if (!p || (counts && !c)) {
                rc = -1;
                break;
            }
            cap = nc;
        }
        gp_sample *x = &(*out)[*n];
        memset(x, 0, sizeof *x);
        snprintf(x->uuid, sizeof x->uuid, "%s", uuid);
        x->ts_ns = sqlite3_column_int64(st, 1);
        if (counts) (*counts)[*n] = (uint32_t)sqlite3_column_int64(st, 2);
        int c = 5;
        for (int i = 0; i < NG; i++, c += 2) {
            int64_t cnt = sqlite3_column_int64(st, c + 1);
            if (cnt <= 0 || sqlite3_column_type(st, c) == SQLITE_NULL) continue;
            double mean = sqlite3_column_double(st, c) / (double)cnt;
            char *p = (char *)x + gauges[i].off;
            if (gauges[i].is_u64) {
                uint64_t u = (uint64_t)(mean + 0.5);
                memcpy(p, &u, sizeof u);
            } else {
                memcpy(p, &mean, sizeof mean);
            }
            x->valid |= gauges[i].bit;
        }
        for (int i = 0; i < NL; i++, c++) {
            if (sqlite3_column_type(st, c) == SQLITE_NULL) continue;
            uint64_t u = (uint64_t)sqlite3_column_int64(st, c);
            memcpy((char *)x + lasts[i].off, &u, sizeof u);
            x->valid |= lasts[i].bit;
        }
        if (sqlite3_column_type(st, c) != SQLITE_NULL) {
            x->throttle_reasons = (uint64_t)sqlite3_column_int64(st, c);
            x->valid |= GP_F_THROTTLE;
        }
        c++;
        if (sqlite3_column_type(st, c) != SQLITE_NULL) {
            x->xid = sqlite3_column_int64(st, c);
            x->valid |= GP_F_XID;
        }
        (*n)++;
    }
    if (rc == 0 && step != SQLITE_DONE) rc = -1;
    sqlite3_finalize(st);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        if (counts) {
            free(*counts);
            *counts = NULL;
        }
        *n = 0;
    }
    return rc;
}

/* min(ts) of a device's rows in a table (-1: none or no such table). */
static int64_t first_ts(sqlite3 *db, const char *sql, const char *uuid) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int gp_store_samples_best(gp_store *s, const char *uuid, int64_t t0_ns, int64_t t1_ns,
                          size_t max_points, gp_sample **out, size_t *n, int64_t *step_ns) {
    sqlite3 *db = gp_store_db(s);
    *step_ns = 0;
    int64_t raw0 = first_ts(db, "SELECT min(ts_ns) FROM samples WHERE uuid = ?1", uuid);
    int64_t roll0 = first_ts(db, "SELECT min(first_ts_ns) FROM rollup_1m WHERE uuid = ?1", uuid);
    if (roll0 < 0) return gp_store_device_samples(s, uuid, t0_ns, t1_ns, out, n);
    /* The span the stored data can answer. */
    int64_t a = t0_ns > roll0 ? t0_ns : roll0;
    int64_t span_s = t1_ns > a ? (t1_ns - a) / 1000000000 : 0;
    int raw_covers = raw0 >= 0 && raw0 <= a;
    if (raw_covers && (max_points == 0 || (uint64_t)span_s <= max_points))
        return gp_store_device_samples(s, uuid, t0_ns, t1_ns, out, n);
    *step_ns = (max_points == 0 || (uint64_t)(span_s / 60) <= max_points) ? GP_ROLLUP_1M_NS
                                                                          : GP_ROLLUP_1H_NS;
    return gp_rollup_read(db, *step_ns, uuid, t0_ns, t1_ns, out, NULL, n);
}
