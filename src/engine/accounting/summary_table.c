/* summary_table.c: see summary_table.h. One table of fields (column, offset, type) drives
 * the INSERT and the SELECT, so the two cannot disagree on a column's place. */
#include "engine/accounting/summary_table.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    F_INT,     /* int */
    F_I64,     /* int64_t, stored as is */
    F_I64_UNK, /* int64_t, negative = unknown: NULL */
    F_DBL,     /* double, stored as is */
    F_DBL_UNK, /* double, negative = unknown: NULL */
} ftype;

typedef struct {
    const char *col;
    size_t off;
    ftype t;
} field;

#define JS(m) offsetof(gp_job_summary, m)
#define GP(m) (offsetof(gp_job_summary, gp) + offsetof(gp_goodput, m))
#define BK(b) (GP(bucket_gpu_s) + (b) * sizeof(double))

static const field FIELDS[] = {
    {"n_gpus", JS(n_gpus), F_INT},
    {"allocated_gpu_h", JS(allocated_gpu_h), F_DBL},
    {"queue_wait_s", JS(queue_wait_s), F_DBL_UNK},
    {"time_to_ready_s", JS(time_to_ready_s), F_DBL_UNK},
    {"busy_gpu_h", JS(busy_gpu_h), F_DBL_UNK},
    {"mean_gpu_util", JS(mean_gpu_util), F_DBL_UNK},
    {"mean_sm_active", JS(mean_sm_active), F_DBL_UNK},
    {"mean_tensor_active", JS(mean_tensor_active), F_DBL_UNK},
    {"mean_dram_active", JS(mean_dram_active), F_DBL_UNK},
    {"mean_mem_used_frac", JS(mean_mem_used_frac), F_DBL_UNK},
    {"proc_mem_max_bytes", JS(proc_mem_max_bytes), F_DBL_UNK},
    {"energy_kwh", JS(energy_kwh), F_DBL_UNK},
    {"span_s", JS(span_s), F_DBL},
    {"kind", GP(kind), F_INT},
    {"allocated_gpu_s", GP(allocated_gpu_s), F_DBL},
    {"productive_gpu_s", BK(GP_B_PRODUCTIVE), F_DBL},
    {"not_ready_gpu_s", BK(GP_B_NOT_READY), F_DBL},
    {"startup_gpu_s", BK(GP_B_STARTUP), F_DBL},
    {"data_wait_gpu_s", BK(GP_B_DATA_WAIT), F_DBL},
    {"checkpoint_gpu_s", BK(GP_B_CHECKPOINT), F_DBL},
    {"wasted_progress_gpu_s", BK(GP_B_WASTED_PROGRESS), F_DBL},
    {"recovery_gpu_s", BK(GP_B_RECOVERY), F_DBL},
    {"idle_allocated_gpu_s", BK(GP_B_IDLE_ALLOCATED), F_DBL},
    {"other_gpu_s", BK(GP_B_OTHER), F_DBL},
    {"goodput", GP(goodput), F_DBL_UNK},
    {"first_alloc_ns", GP(first_alloc_ns), F_I64_UNK},
    {"ready_ns", GP(ready_ns), F_I64_UNK},
    {"steps", GP(steps), F_I64},
    {"kept_steps", GP(kept_steps), F_I64},
    {"redone_steps", GP(redone_steps), F_I64},
    {"units", GP(units), F_DBL},
    {"median_step_s", GP(median_step_s), F_DBL_UNK},
    {"requests", GP(requests), F_I64},
    {"good_requests", GP(good_requests), F_I64},
    {"failed_requests", GP(failed_requests), F_I64},
    {"tokens", GP(tokens), F_DBL},
    {"good_tokens", GP(good_tokens), F_DBL},
    {"serving_gpu_s", GP(serving_gpu_s), F_DBL},
    {"items", GP(items), F_I64},
    {"busy_gpu_s", GP(busy_gpu_s), F_DBL_UNK},
};
#define N_FIELDS (sizeof FIELDS / sizeof FIELDS[0])
_Static_assert(sizeof(gp_job_kind) == sizeof(int), "kind is stored as an int");
_Static_assert(GP_B__COUNT == 9, "a new bucket needs a column (schema) and a FIELDS row");

int gp_summary_sealed(const gp_job *j, int64_t store_t1_ns) {
    return j->ended_ns > 0 && store_t1_ns >= j->ended_ns + GP_SUMMARY_SEAL_NS;
}

/* "a, b, c" of every field's column, after prefix. */
static void columns(char *buf, size_t cap, const char *prefix) {
    size_t n = (size_t)snprintf(buf, cap, "%s", prefix);
    for (size_t i = 0; i < N_FIELDS && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, ", %s", FIELDS[i].col);
}

int gp_summary_table_put(gp_store *s, const gp_job_summary *js) {
    char cols[2048], sql[4096];
    columns(cols, sizeof cols, "job_id, acct_version, ended_ns");
    size_t n = (size_t)snprintf(sql, sizeof sql,
                                "INSERT OR REPLACE INTO job_summaries(%s) VALUES (?, ?, ?", cols);
    for (size_t i = 0; i < N_FIELDS && n < sizeof sql; i++)
        n += (size_t)snprintf(sql + n, sizeof sql - n, ", ?");
    if (n + 2 >= sizeof sql) return -1;
    strcat(sql, ")");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(gp_store_db(s), sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_text(st, 1, js->job.id, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, GP_ACCT_VERSION);
    sqlite3_bind_int64(st, 3, js->job.ended_ns);
    const char *base = (const char *)js;
    for (size_t i = 0; i < N_FIELDS; i++) {
        int k = (int)i + 4;
        const void *p = base + FIELDS[i].off;
        int64_t v64;
        double d;
        int vi;
        switch (FIELDS[i].t) {
        case F_INT:
            memcpy(&vi, p, sizeof vi);
            sqlite3_bind_int(st, k, vi);
            break;
        case F_I64:
        case F_I64_UNK:
            memcpy(&v64, p, sizeof v64);
            if (FIELDS[i].t == F_I64_UNK && v64 < 0)
                sqlite3_bind_null(st, k);
            else
                sqlite3_bind_int64(st, k, v64);
            break;
        case F_DBL:
        case F_DBL_UNK:
            memcpy(&d, p, sizeof d);
            if (FIELDS[i].t == F_DBL_UNK && d < 0)
                sqlite3_bind_null(st, k);
            else
                sqlite3_bind_double(st, k, d);
            break;
        }
    }
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

struct gp_summary_reader {
    sqlite3_stmt *st;
};

gp_summary_reader *gp_summary_reader_new(gp_store *s) {
    char cols[2048], sql[2560];
    columns(cols, sizeof cols, "acct_version, ended_ns");
    snprintf(sql, sizeof sql, "SELECT %s FROM job_summaries WHERE job_id = ?1", cols);
    gp_summary_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (sqlite3_prepare_v3(gp_store_db(s), sql, -1, SQLITE_PREPARE_PERSISTENT, &r->st, NULL) !=
        SQLITE_OK) {
        sqlite3_finalize(r->st);
        free(r);
        return NULL;
    }
    return r;
}

void gp_summary_reader_free(gp_summary_reader *r) {
    if (!r) return;
    sqlite3_finalize(r->st);
    free(r);
}

int gp_summary_table_get(gp_summary_reader *r, const gp_job *j, gp_job_summary *out) {
    sqlite3_stmt *st = r->st;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, j->id, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return -1;
    }
    if (sqlite3_column_int(st, 0) != GP_ACCT_VERSION ||
        sqlite3_column_int64(st, 1) != j->ended_ns) {
        sqlite3_reset(st);
        return 0;
    }
    memset(out, 0, sizeof *out);
    out->job = *j;
    char *base = (char *)out;
    for (size_t i = 0; i < N_FIELDS; i++) {
        int k = (int)i + 2;
        void *p = base + FIELDS[i].off;
        int null = sqlite3_column_type(st, k) == SQLITE_NULL;
        int64_t v64 = null ? -1 : sqlite3_column_int64(st, k);
        double d = null ? -1 : sqlite3_column_double(st, k);
        int vi = (int)v64;
        switch (FIELDS[i].t) {
        case F_INT:
            memcpy(p, &vi, sizeof vi);
            break;
        case F_I64:
        case F_I64_UNK:
            memcpy(p, &v64, sizeof v64);
            break;
        case F_DBL:
        case F_DBL_UNK:
            memcpy(p, &d, sizeof d);
            break;
        }
    }
    sqlite3_reset(st); /* no read transaction left open between lookups */
    return 1;
}
