/* rollup.c: the 1-minute and 1-hour rollups behind rollup.h.
 *
 * Each device has, per resolution, the open bucket's part since the last commit (part)
 * and what the row holds up to that commit (tot). At every commit the part is merged into
 * tot with the rules the rows always had (sums added, the later counter value kept,
 * throttle bits OR'ed, the larger xid): the same additions in the same order as when
 * every commit upserted its part, so the sums are bit for bit what they were. A row is
 * written (replaced with tot) only when its bucket closes (a sample of a later bucket, or
 * the store's close), and the open hour also when one of the device's minutes closed in
 * the transaction: a commit no longer writes 2 rows per device (at 8 GPUs and a 5 s flush
 * that was 192 upserts a minute and the rollup pages dirtied in every commit;
 * docs/benchmarks.md, agent cost). A bucket that opens loads the row already stored for it
 * (an agent restarted within a minute or an hour), so tot continues it as the upserts did.
 * Committed raw samples a row does not hold yet (an agent killed before a bucket closed)
 * are folded back in when a writer opens the store (gp_rollup_new): every raw sample after
 * the last one a device's newest row holds. Column order is schema.c's migration 6. */
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
    int64_t t1_ns; /* bucket end; 0 = nothing accumulated (no row) */
    uint32_t n;
    int64_t first_ns, last_ns;
    double sum[NG];
    uint32_t cnt[NG];
    uint32_t sum_known; /* bit i: sum[i] known (a row read back: its column not NULL) */
    uint64_t last[NL];
    uint32_t last_known; /* bit i: last[i] known */
    uint64_t throttle;
    int64_t xid;
    int throttle_known, xid_known;
} bucket;

typedef struct {
    char uuid[GP_UUID_MAX];
    bucket part[2];     /* 1 minute, 1 hour: samples since the last commit */
    bucket tot[2];      /* the row up to the last commit (written or not yet) */
    int64_t open_t1[2]; /* the open bucket's end; 0 = none */
    int minute_closed;  /* a minute closed since the hour row was last written */
    int recovered;      /* committed samples the rows lacked are folded (recover()) */
    /* The latest bucket end a stored row may have (the newest row at recover(), then every
     * bucket opened since): a bucket past it has no row to load. A bulk load (analyze)
     * opens ~1.5 buckets a sample, and a lookup for each was ~10% of its CPU. */
    int64_t stored_t1[2];
} device_acc;

static const int64_t steps_ns[2] = {GP_ROLLUP_1M_NS, GP_ROLLUP_1H_NS};
static const char *const tables[2] = {"rollup_1m", "rollup_1h"};

struct gp_rollup {
    gp_store *store;
    sqlite3 *db;
    sqlite3_stmt *put[2], *get[2], *newest[2];
    device_acc *dev;
    size_t n_dev, cap_dev, hint; /* hint: where the next device probably is */
};

gp_rollup *gp_rollup_new(gp_store *s) {
    gp_rollup *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->store = s;
    r->db = gp_store_db(s);
    for (int k = 0; k < 2; k++) {
        char q[512];
        int len = snprintf(q, sizeof q, "INSERT OR REPLACE INTO %s VALUES(", tables[k]);
        for (int i = 1; i <= NCOL; i++)
            len += snprintf(q + len, sizeof q - (size_t)len, "%s?%d", i > 1 ? "," : "", i);
        snprintf(q + len, sizeof q - (size_t)len, ")");
        char g[128], w[128];
        snprintf(g, sizeof g, "SELECT * FROM %s WHERE uuid = ?1 AND t1_ns = ?2", tables[k]);
        snprintf(w, sizeof w,
                 "SELECT last_ts_ns, t1_ns FROM %s WHERE uuid = ?1 ORDER BY t1_ns DESC LIMIT 1",
                 tables[k]);
        if (sqlite3_prepare_v3(r->db, q, -1, SQLITE_PREPARE_PERSISTENT, &r->put[k], NULL) !=
                SQLITE_OK ||
            sqlite3_prepare_v3(r->db, g, -1, SQLITE_PREPARE_PERSISTENT, &r->get[k], NULL) !=
                SQLITE_OK ||
            sqlite3_prepare_v3(r->db, w, -1, SQLITE_PREPARE_PERSISTENT, &r->newest[k], NULL) !=
                SQLITE_OK) {
            gp_rollup_free(r);
            return NULL;
        }
    }
    return r;
}

void gp_rollup_free(gp_rollup *r) {
    if (!r) return;
    for (int k = 0; k < 2; k++) {
        sqlite3_finalize(r->put[k]);
        sqlite3_finalize(r->get[k]);
        sqlite3_finalize(r->newest[k]);
    }
    free(r->dev);
    free(r);
}

/* Replaces bucket b's row with b. */
static int write_row(gp_rollup *r, int k, const char *uuid, const bucket *b) {
    if (!b->t1_ns) return 0;
    sqlite3_stmt *st = r->put[k];
    int c = 1;
    sqlite3_bind_text(st, c++, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, c++, b->t1_ns);
    sqlite3_bind_int64(st, c++, b->n);
    sqlite3_bind_int64(st, c++, b->first_ns);
    sqlite3_bind_int64(st, c++, b->last_ns);
    for (int i = 0; i < NG; i++) {
        if (b->sum_known & (1u << i))
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
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The stored row of bucket t1 into *b (all zero, t1_ns 0, when there is none). */
static int load_row(gp_rollup *r, int k, const char *uuid, int64_t t1, bucket *b) {
    memset(b, 0, sizeof *b);
    sqlite3_stmt *st = r->get[k];
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, t1);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        b->t1_ns = t1;
        b->n = (uint32_t)sqlite3_column_int64(st, 2);
        b->first_ns = sqlite3_column_int64(st, 3);
        b->last_ns = sqlite3_column_int64(st, 4);
        int c = 5;
        for (int i = 0; i < NG; i++, c += 2) {
            if (sqlite3_column_type(st, c) != SQLITE_NULL) {
                b->sum[i] = sqlite3_column_double(st, c);
                b->sum_known |= 1u << i;
            }
            b->cnt[i] = (uint32_t)sqlite3_column_int64(st, c + 1);
        }
        for (int i = 0; i < NL; i++, c++)
            if (sqlite3_column_type(st, c) != SQLITE_NULL) {
                b->last[i] = (uint64_t)sqlite3_column_int64(st, c);
                b->last_known |= 1u << i;
            }
        if ((b->throttle_known = sqlite3_column_type(st, c) != SQLITE_NULL))
            b->throttle = (uint64_t)sqlite3_column_int64(st, c);
        c++;
        if ((b->xid_known = sqlite3_column_type(st, c) != SQLITE_NULL))
            b->xid = sqlite3_column_int64(st, c);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* Merges part p into the row t with the rules the rows always had (those of the upsert
 * every commit used to run, with t the stored row and p the new one): a new row is p as
 * it is; else sums added (a NULL sum is the other one), counts added, the earlier first
 * and the later last time, a counter taken from p when p knows it and t does not or p's
 * last sample is not older than t's, throttle bits OR'ed, the larger xid. */
static void merge(bucket *t, const bucket *p) {
    if (!p->t1_ns) return;
    if (!t->t1_ns) {
        *t = *p;
        return;
    }
    int64_t t_last = t->last_ns;
    t->n += p->n;
    if (p->first_ns < t->first_ns) t->first_ns = p->first_ns;
    if (p->last_ns > t->last_ns) t->last_ns = p->last_ns;
    for (int i = 0; i < NG; i++) {
        uint32_t m = 1u << i;
        if ((p->sum_known & m) && (t->sum_known & m))
            t->sum[i] = t->sum[i] + p->sum[i];
        else if (p->sum_known & m)
            t->sum[i] = p->sum[i];
        t->sum_known |= p->sum_known & m;
        t->cnt[i] += p->cnt[i];
    }
    for (int i = 0; i < NL; i++) {
        uint32_t m = 1u << i;
        if (!(p->last_known & m)) continue;
        if (!(t->last_known & m) || p->last_ns >= t_last) t->last[i] = p->last[i];
        t->last_known |= m;
    }
    if (p->throttle_known) {
        t->throttle = t->throttle_known ? t->throttle | p->throttle : p->throttle;
        t->throttle_known = 1;
    }
    if (p->xid_known && (!t->xid_known || p->xid > t->xid)) {
        t->xid = p->xid;
        t->xid_known = 1;
    }
}

/* Ends device d's open bucket at resolution k: its row, with what this transaction
 * added, is written. */
static int close_bucket(gp_rollup *r, int k, device_acc *d) {
    merge(&d->tot[k], &d->part[k]);
    int rc = write_row(r, k, d->uuid, &d->tot[k]);
    memset(&d->part[k], 0, sizeof d->part[k]);
    memset(&d->tot[k], 0, sizeof d->tot[k]);
    d->open_t1[k] = 0;
    if (k == 0) d->minute_closed = 1;
    return rc;
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

/* Folds x into device d's bucket at resolution k (closing the open one when x lies past
 * it, loading the stored row of the one x opens). */
static int add_one(gp_rollup *r, device_acc *d, int k, const gp_sample *x) {
    int rc = 0;
    int64_t t1 = bucket_end(x->ts_ns, steps_ns[k]);
    if (d->open_t1[k] && d->open_t1[k] != t1 && close_bucket(r, k, d) != 0) rc = -1;
    if (!d->open_t1[k]) {
        d->open_t1[k] = t1;
        if (t1 > d->stored_t1[k]) {
            memset(&d->tot[k], 0, sizeof d->tot[k]);
            d->stored_t1[k] = t1;
        } else if (load_row(r, k, d->uuid, t1, &d->tot[k]) != 0)
            rc = -1;
    }
    bucket *b = &d->part[k];
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
        b->sum_known |= 1u << i;
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
    return rc;
}

/* The device's committed raw samples its rows do not hold yet (an agent killed, or a
 * commit that failed, before a bucket was written): at each resolution, every raw sample
 * after the last one the device's newest row holds (all of them when it has no row), in
 * time order, folded as committed. Samples are assumed to arrive in time order per device
 * (the agent's); skip_ts is the sample being added, already inserted uncommitted. Runs at
 * a device's first sample in this connection, so a writer that stores no samples (and a
 * reader) never folds rows another connection may still hold in memory. */
static int recover(gp_rollup *r, device_acc *d, int64_t skip_ts) {
    d->recovered = 1;
    int64_t after[2];
    for (int k = 0; k < 2; k++) {
        sqlite3_stmt *st = r->newest[k];
        sqlite3_bind_text(st, 1, d->uuid, -1, SQLITE_STATIC);
        int step = sqlite3_step(st);
        after[k] = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : INT64_MIN;
        d->stored_t1[k] = step == SQLITE_ROW ? sqlite3_column_int64(st, 1) : INT64_MIN;
        sqlite3_reset(st);
        if (step != SQLITE_ROW && step != SQLITE_DONE) return -1;
    }
    int64_t from = after[0] < after[1] ? after[0] : after[1];
    if (from == INT64_MAX) return 0;
    /* One read for both resolutions (a query prepared per call: this runs once per device
     * and connection). */
    gp_sample *xs;
    size_t n;
    if (gp_store_device_samples(r->store, d->uuid, from + 1, INT64_MAX, &xs, &n) != 0) return -1;
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < n; i++)
            if (xs[i].ts_ns > after[k] && xs[i].ts_ns != skip_ts && add_one(r, d, k, &xs[i]) != 0)
                rc = -1;
        merge(&d->tot[k], &d->part[k]); /* committed already */
        memset(&d->part[k], 0, sizeof d->part[k]);
    }
    free(xs);
    return rc;
}

int gp_rollup_prepare(gp_rollup *r, const gp_sample *x) {
    device_acc *d = find_device(r, x->uuid);
    if (!d) return -1;
    return !d->recovered && recover(r, d, x->ts_ns) != 0 ? -1 : 0;
}

int gp_rollup_add(gp_rollup *r, const gp_sample *x) {
    device_acc *d = find_device(r, x->uuid);
    if (!d) return -1;
    int rc = 0;
    if (!d->recovered && recover(r, d, x->ts_ns) != 0) rc = -1;
    for (int k = 0; k < 2; k++)
        if (add_one(r, d, k, x) != 0) rc = -1;
    return rc;
}

int gp_rollup_flush(gp_rollup *r) {
    int rc = 0;
    for (size_t i = 0; i < r->n_dev; i++) {
        device_acc *d = &r->dev[i];
        for (int k = 0; k < 2; k++) {
            merge(&d->tot[k], &d->part[k]);
            memset(&d->part[k], 0, sizeof d->part[k]);
        }
        /* The open hour is written whenever a minute closed, so the 1-hour rows lag the
         * raw samples by at most a minute, as the 1-minute ones do. */
        if (d->minute_closed && write_row(r, 1, d->uuid, &d->tot[1]) != 0) rc = -1;
        d->minute_closed = 0;
    }
    return rc;
}

int gp_rollup_close(gp_rollup *r) {
    int rc = 0;
    for (size_t i = 0; i < r->n_dev; i++)
        for (int k = 0; k < 2; k++)
            if (r->dev[i].open_t1[k] && close_bucket(r, k, &r->dev[i]) != 0) rc = -1;
    return rc;
}

int gp_rollup_sync(gp_rollup *r, int64_t before_ns) {
    int rc = 0;
    for (size_t i = 0; i < r->n_dev; i++)
        for (int k = 0; k < 2; k++) {
            const device_acc *d = &r->dev[i];
            if (!d->open_t1[k]) continue;
            /* A copy: the buckets held go on merging in commit order (bit-identical sums). */
            bucket snap = d->tot[k];
            merge(&snap, &d->part[k]);
            if (snap.t1_ns && snap.first_ns < before_ns && write_row(r, k, d->uuid, &snap) != 0)
                rc = -1;
        }
    return rc;
}

void gp_rollup_forget(gp_rollup *r) {
    r->n_dev = 0;
    r->hint = 0;
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
    /* In the connection that writes samples, the open buckets too (they are written when
     * they close): a read there sees every sample it stored, as it always did. */
    gp_rollup *r = gp_store_rollup(s);
    if (r && gp_rollup_sync(r, INT64_MAX) != 0) return -1;
    int64_t raw0 = first_ts(db, "SELECT min(ts_ns) FROM samples WHERE uuid = ?1", uuid);
    int64_t roll0 = first_ts(db, "SELECT min(first_ts_ns) FROM rollup_1h WHERE uuid = ?1", uuid);
    if (roll0 < 0) return gp_store_device_samples(s, uuid, t0_ns, t1_ns, out, n);
    /* The span the stored data can answer. */
    int64_t a = t0_ns > roll0 ? t0_ns : roll0;
    int64_t span_s = t1_ns > a ? (t1_ns - a) / 1000000000 : 0;
    int raw_covers = raw0 >= 0 && raw0 <= a;
    if (raw_covers && (max_points == 0 || (uint64_t)span_s <= max_points))
        return gp_store_device_samples(s, uuid, t0_ns, t1_ns, out, n);
    *step_ns = (max_points == 0 || (uint64_t)(span_s / 60) <= max_points) ? GP_ROLLUP_1M_NS
                                                                          : GP_ROLLUP_1H_NS;
    /* A range that starts where the 1-minute rows were deleted (gp_rollup_retain): the
     * 1-hour rows, the only ones that reach back there. */
    int64_t mb = gp_rollup_minutes_from(db, uuid);
    if (mb >= 0 && t0_ns < mb) *step_ns = GP_ROLLUP_1H_NS;
    return gp_rollup_read(db, *step_ns, uuid, t0_ns, t1_ns, out, NULL, n);
}

int64_t gp_rollup_minutes_from(sqlite3 *db, const char *uuid) {
    int64_t m0 = first_ts(
        db, "SELECT first_ts_ns FROM rollup_1m WHERE uuid = ?1 ORDER BY t1_ns LIMIT 1", uuid);
    int64_t h0 = first_ts(
        db, "SELECT first_ts_ns FROM rollup_1h WHERE uuid = ?1 ORDER BY t1_ns LIMIT 1", uuid);
    /* Both tiers are written from the same samples: their first buckets hold the same
     * first sample until the 1-minute retention deletes a prefix. */
    if (h0 < 0 || (m0 >= 0 && h0 >= m0)) return -1;
    if (m0 < 0) return INT64_MAX;
    /* The hour holding the first minute left: whole (its end) when a minute of it before
     * that one may be gone, else from its start (the retention deletes whole hours). */
    int64_t b0 =
        first_ts(db, "SELECT t1_ns FROM rollup_1m WHERE uuid = ?1 ORDER BY t1_ns LIMIT 1", uuid) -
        GP_ROLLUP_1M_NS;
    return (b0 / GP_ROLLUP_1H_NS + (b0 % GP_ROLLUP_1H_NS > 0)) * GP_ROLLUP_1H_NS;
}

/* The devices of rollup_1m by a loose index scan over its key (uuid, t1_ns). */
#define ROLLUP_1M_DEVICES                                                                          \
    "WITH RECURSIVE su(u) AS (SELECT (SELECT min(uuid) FROM rollup_1m) UNION ALL"                  \
    " SELECT (SELECT min(uuid) FROM rollup_1m WHERE uuid > su.u) FROM su WHERE su.u IS NOT NULL) "

/* One int64 bound to ?1 (and ?2), or -1 (NULL, no row); -2 on a store error. */
static int64_t scalar2(sqlite3 *db, const char *sql, int64_t a, int64_t b) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -2;
    if (sqlite3_bind_parameter_count(st) >= 1) sqlite3_bind_int64(st, 1, a);
    if (sqlite3_bind_parameter_count(st) >= 2) sqlite3_bind_int64(st, 2, b);
    int rc = sqlite3_step(st);
    int64_t v = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL
                    ? sqlite3_column_int64(st, 0)
                    : -1;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) v = -2;
    sqlite3_finalize(st);
    return v;
}

int64_t gp_rollup_retain(gp_store *s, int64_t cutoff_ns) {
    const int64_t H = GP_ROLLUP_1H_NS;
    sqlite3 *db = gp_store_db(s);
    int64_t h = (cutoff_ns >= 0 ? cutoff_ns / H : (cutoff_ns - H + 1) / H) * H;
    /* The oldest 1-minute bucket of any device: one index lookup per device. Nothing to
     * do until the cutoff passes it (once an hour). */
    int64_t old = scalar2(db,
                          ROLLUP_1M_DEVICES "SELECT min((SELECT t1_ns FROM rollup_1m WHERE"
                                            " uuid = su.u ORDER BY t1_ns LIMIT 1)) FROM su"
                                            " WHERE su.u IS NOT NULL",
                          0, 0);
    if (old == -2) return -1;
    if (old < 0 || old > h) return 0;
    /* The open buckets of those hours are written first (rollup.h), so the 1-hour rows
     * hold every sample of the minutes deleted. */
    gp_rollup *r = gp_store_rollup(s);
    if (r && gp_rollup_sync(r, h) != 0) return -1;
    /* A stored job result that read a 1-minute row deleted here would no longer be what
     * computing it gives (it reads 1-hour rows there now): it goes first. Its rows lie in
     * its range, from an hour before it (job_results.c RAW_MARGIN_NS) to a minute after. */
    if (scalar2(db,
                "DELETE FROM job_results WHERE t0_ns - 3600000000000 < ?1"
                " AND t1_ns + 60000000000 >= ?2",
                h, old) == -2)
        return -1;
    /* So does a running job's saved accounting prefix (acct_prefix.h) that read them: a
     * long job's fold reads 1-minute rows from an hour before its first allocation. A job
     * that started after that reads none of the minutes deleted, so its prefix stays. */
    if (scalar2(db,
                "DELETE FROM job_prefix WHERE job_id IN (SELECT job_id FROM allocations"
                " GROUP BY job_id HAVING min(from_ns) - 3600000000000 < ?1)",
                h, 0) == -2)
        return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           ROLLUP_1M_DEVICES "DELETE FROM rollup_1m WHERE uuid IN (SELECT u FROM su"
                                             " WHERE u IS NOT NULL) AND t1_ns <= ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, h);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? sqlite3_changes64(db) : -1;
}
