/* series_tiers.c: rollups before a device's raw rows in the API's series (series_tiers.h). */
#include "serve/series_tiers.h"

#include <string.h>

#include "store/rollup.h"

void srv_tiers_init(srv_tiers *t) {
    for (int k = 0; k < 2; k++)
        t->from_ns[k] = INT64_MAX, t->to_ns[k] = INT64_MIN;
}

static int64_t first_raw_ns(sqlite3 *db, const char *uuid) {
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "SELECT min(ts_ns) FROM samples WHERE uuid = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return -2;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Rows of one table with bucket end in [a, b), as points at their end. */
static int scan_table(sqlite3 *db, int hour, const char *uuid, int64_t a, int64_t b, srv_row_fn fn,
                      void *ctx, srv_tiers *used) {
    if (b <= a) return 0;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT t1_ns, gpu_util_sum / gpu_util_n, sm_active_sum / sm_active_n,"
             " tensor_active_sum / tensor_active_n, dram_active_sum / dram_active_n,"
             " mem_used_bytes_sum / mem_used_bytes_n / NULLIF(mem_total_bytes, 0),"
             " power_w_sum / power_w_n, temp_c_sum / temp_c_n"
             " FROM %s WHERE uuid = ?1 AND t1_ns >= ?2 AND t1_ns < ?3 ORDER BY t1_ns",
             hour ? "rollup_1h" : "rollup_1m");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0; /* no rollups */
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, a);
    sqlite3_bind_int64(st, 3, b);
    double v[ROLLUP_NSIG];
    int has[ROLLUP_NSIG], rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ts = sqlite3_column_int64(st, 0);
        for (int k = 0; k < ROLLUP_NSIG; k++) {
            has[k] = sqlite3_column_type(st, k + 1) != SQLITE_NULL;
            v[k] = has[k] ? sqlite3_column_double(st, k + 1) : 0;
        }
        int64_t step = hour ? GP_ROLLUP_1H_NS : GP_ROLLUP_1M_NS;
        /* at its bucket's middle: an hour's mean lands in the request bucket that holds
         * most of that hour (its end would put it in the next one) */
        fn(ctx, ts - step / 2, v, has);
        if (ts - step < used->from_ns[hour]) used->from_ns[hour] = ts - step;
        if (ts > used->to_ns[hour]) used->to_ns[hour] = ts;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

int srv_tiers_scan(sqlite3 *db, const char *uuid, int64_t t0, int64_t t1, srv_row_fn fn, void *ctx,
                   srv_tiers *used, int64_t *raw0) {
    int64_t r0 = first_raw_ns(db, uuid);
    if (r0 == -2) return -1;
    *raw0 = r0 < 0 || r0 > t1 ? t1 : r0;
    if (*raw0 <= t0) return 0;
    /* Bucket ends before the raw rows: the minute holding the first raw sample is read
     * raw (its deleted part is lost: at most a minute). */
    int64_t end = *raw0;
    int64_t mb = gp_rollup_minutes_from(db, uuid);
    if (mb > end) mb = end;
    if (mb >= 0 && scan_table(db, 1, uuid, t0, mb + 1, fn, ctx, used) != 0) return -1;
    int64_t m0 = mb >= 0 ? mb + 1 : t0;
    if (m0 < t0) m0 = t0;
    return scan_table(db, 0, uuid, m0, end, fn, ctx, used);
}

void srv_tiers_json(const srv_tiers *t, json_t *o) {
    json_t *a = NULL;
    for (int k = 1; k >= 0; k--) { /* oldest first: hours, then minutes */
        if (t->from_ns[k] > t->to_ns[k]) continue;
        if (!a) a = json_array();
        json_t *e = json_object();
        json_object_set_new(e, "from_s", json_real(t->from_ns[k] / 1e9));
        json_object_set_new(e, "to_s", json_real(t->to_ns[k] / 1e9));
        json_object_set_new(e, "resolution_s", json_integer(k ? 3600 : 60));
        json_array_append_new(a, e);
    }
    if (a) json_object_set_new(o, "rollups", a);
}
