/* spans.c: see spans.h. One prepared statement per batch, reused for every row (bound,
 * stepped, reset), inside the caller's one transaction per batch, so storing a POST of a
 * thousand spans costs one prepare and a thousand steps. The table is a rowid table with
 * a unique (trace_id, span_id) index (migration 8), which is what makes a step cheap. */
#include "store/spans.h"

#include <stdio.h>
#include <string.h>

static void bind_txt(sqlite3_stmt *st, int i, const char *v) {
    if (v[0])
        sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, i);
}

static void bind_i64(sqlite3_stmt *st, int i, int64_t v) {
    if (v >= 0)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

long gp_store_put_spans(gp_store *s, const gp_span *v, size_t n) {
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR IGNORE INTO spans(trace_id, span_id, parent_id, name, kind,"
                           " step, operation, model, in_tokens, out_tokens, start_ns, end_ns,"
                           " status, service, host)"
                           " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    long stored = 0;
    for (size_t i = 0; i < n; i++) {
        const gp_span *x = &v[i];
        sqlite3_bind_text(st, 1, x->trace_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, x->span_id, -1, SQLITE_STATIC);
        bind_txt(st, 3, x->parent_id);
        sqlite3_bind_text(st, 4, x->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 5, x->kind);
        sqlite3_bind_int(st, 6, x->step);
        bind_txt(st, 7, x->operation);
        bind_txt(st, 8, x->model);
        bind_i64(st, 9, x->in_tokens);
        bind_i64(st, 10, x->out_tokens);
        sqlite3_bind_int64(st, 11, x->start_ns);
        sqlite3_bind_int64(st, 12, x->end_ns);
        sqlite3_bind_int(st, 13, x->status);
        bind_txt(st, 14, x->service);
        bind_txt(st, 15, x->host);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return -1;
        }
        stored += sqlite3_changes(db);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return stored;
}

static void col_txt(sqlite3_stmt *st, int i, char *dst, size_t cap) {
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

int gp_store_load_spans(gp_store *s, int64_t t0_ns, int64_t t1_ns, size_t max_spans,
                        gp_span_set *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s),
                           "SELECT trace_id, span_id, parent_id, name, kind, step, operation,"
                           " model, in_tokens, out_tokens, start_ns, end_ns, status, service, host"
                           " FROM spans WHERE trace_id IN (SELECT DISTINCT trace_id FROM spans"
                           " WHERE end_ns >= ?1 AND end_ns < ?2) ORDER BY trace_id, start_ns",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, t0_ns);
    sqlite3_bind_int64(st, 2, t1_ns);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (max_spans && out->n >= max_spans) {
            out->dropped++;
            continue;
        }
        gp_span *x = gp_span_set_add(out);
        if (!x) {
            sqlite3_finalize(st);
            return -1;
        }
        col_txt(st, 0, x->trace_id, sizeof x->trace_id);
        col_txt(st, 1, x->span_id, sizeof x->span_id);
        col_txt(st, 2, x->parent_id, sizeof x->parent_id);
        col_txt(st, 3, x->name, sizeof x->name);
        x->kind = sqlite3_column_int(st, 4);
        x->step = sqlite3_column_int(st, 5);
        if (x->step < 0 || x->step >= GP_STEP_QUEUE) x->step = GP_STEP_OTHER;
        col_txt(st, 6, x->operation, sizeof x->operation);
        col_txt(st, 7, x->model, sizeof x->model);
        x->in_tokens = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 8);
        x->out_tokens =
            sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9);
        x->start_ns = sqlite3_column_int64(st, 10);
        x->end_ns = sqlite3_column_int64(st, 11);
        x->status = sqlite3_column_int(st, 12);
        col_txt(st, 13, x->service, sizeof x->service);
        col_txt(st, 14, x->host, sizeof x->host);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}
