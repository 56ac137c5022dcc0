/* nsys.c: Nsight Systems SQLite exports (`nsys export --type sqlite`) read into the same
 * per-rank rows as Kineto traces, so every analysis applies unchanged. Kernels, memcpys and
 * memsets become GPU rows on their stream; runtime API calls become CPU rows with their
 * correlation id. Schema versions differ (about 2.9 to 3.13): the kernel name lives in
 * demangledName, shortName or name; MEMSET or RUNTIME may be absent; runtime names carry a
 * _vNNNN suffix; StringIds may be called StringTable. Columns are discovered with PRAGMA
 * table_info, so a missing one is handled rather than guessed. Times are ns; rows are µs. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/kineto_int.h"
#include "traces/trace.h"

int gp_trace_is_sqlite(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char hdr[16] = {0};
    size_t n = fread(hdr, 1, 16, f);
    fclose(f);
    return n == 16 && memcmp(hdr, "SQLite format 3", 16) == 0;
}

static int has_table(sqlite3 *db, const char *t) {
    sqlite3_stmt *st;
    int ok = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
        ok = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return ok;
}

static int has_column(sqlite3 *db, const char *t, const char *c) {
    char q[256];
    snprintf(q, sizeof q, "PRAGMA table_info(%s)", t);
    sqlite3_stmt *st;
    int ok = 0;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        if (!strcmp((const char *)sqlite3_column_text(st, 1), c)) ok = 1;
    sqlite3_finalize(st);
    return ok;
}

static void push(gp_trow_vec *v, const gp_trow *r) {
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 1024;
        v->v = realloc(v->v, v->cap * sizeof *v->v);
        if (!v->v) abort();
    }
    v->v[v->n++] = *r;
}

static const char *copy_kind(int k) {
    switch (k) {
    case 1:
        return "Memcpy HtoD";
    case 2:
        return "Memcpy DtoH";
    case 3:
        return "Memcpy HtoA";
    case 4:
        return "Memcpy AtoH";
    case 8:
        return "Memcpy DtoD";
    case 10:
        return "Memcpy PtoP";
    default:
        return "Memcpy";
    }
}

/* runs q; each row: start, end, stream, corr, name text, extra int */
static int read_rows(sqlite3 *db, const char *q, gp_trace_rank *r, int gpu, int kind, char *err,
                     size_t errlen) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", r->path, sqlite3_errmsg(db));
        return -1;
    }
    int64_t idx = (int64_t)(r->gpu.n + r->cpu.n);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
        r->warn.events++;
        if (e < s || e - s > 604800000000000LL) {
            r->warn.bad_duration++;
            continue;
        }
        gp_trow row = {.ts = (double)s / 1000.0, .dur = (double)(e - s) / 1000.0, .idx = idx++};
        row.stream = gpu ? (int32_t)sqlite3_column_int64(st, 2) : -1;
        row.corr = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
        char nb[64];
        const char *nm = (const char *)sqlite3_column_text(st, 4);
        if (kind == 1) nm = copy_kind(sqlite3_column_int(st, 5));
        if (kind == 2) nm = "Memset";
        if (!nm) nm = "";
        size_t nl = strlen(nm);
        if (!gpu) { /* cudaLaunchKernel_v7000 -> cudaLaunchKernel */
            const char *v = strstr(nm, "_v");
            if (v && v[2] >= '0' && v[2] <= '9' && (size_t)(v - nm) < sizeof nb) {
                nl = (size_t)(v - nm);
                memcpy(nb, nm, nl);
                nb[nl] = 0;
                nm = nb;
            }
        }
        row.name = gp_trace_intern(r, nm, nl);
        if (gpu) {
            row.flags = GP_TR_KCAT | (row.stream >= 0 && row.corr >= 0 ? GP_TR_GPU_SIDE : 0);
            push(&r->gpu, &row);
        } else {
            if (!strcmp(nm, "cudaLaunchKernel") || !strcmp(nm, "cudaLaunchKernelExC"))
                row.flags |= GP_TR_LAUNCH;
            if (!strcmp(nm, "cudaMemcpyAsync") || !strcmp(nm, "cudaMemsetAsync"))
                row.flags |= GP_TR_MEMLAUNCH;
            r->n_cpu_side++;
            push(&r->cpu, &row);
        }
    }
    sqlite3_finalize(st);
    return 0;
}

int gp_nsys_read(const char *path, gp_trace_rank *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    gp_kineto_rank_init(out);
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->source, sizeof out->source, "nsys");
    if (!gp_trace_is_sqlite(path)) {
        snprintf(err, errlen, "%s: not an SQLite file", path);
        return -1;
    }
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: cannot open: %s", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return -1;
    }
    const char *strtab = has_table(db, "StringIds")     ? "StringIds"
                         : has_table(db, "StringTable") ? "StringTable"
                                                        : NULL;
    if (!has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL") || !strtab) {
        snprintf(
            err, errlen,
            "%s: not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_KERNEL or StringIds table); "
            "create one with `nsys export --type sqlite`",
            path);
        sqlite3_close(db);
        return -1;
    }
    const char *kname = has_column(db, "CUPTI_ACTIVITY_KIND_KERNEL", "demangledName")
                            ? "demangledName"
                        : has_column(db, "CUPTI_ACTIVITY_KIND_KERNEL", "shortName") ? "shortName"
                                                                                    : "name";
    char q[512];
    int rc = 0;
    snprintf(q, sizeof q,
             "SELECT k.start, k.end, k.streamId, k.correlationId, s.value FROM "
             "CUPTI_ACTIVITY_KIND_KERNEL k "
             "LEFT JOIN %s s ON s.id = k.%s ORDER BY k.start",
             strtab, kname);
    rc |= read_rows(db, q, out, 1, 0, err, errlen);
    if (!rc && has_table(db, "CUPTI_ACTIVITY_KIND_MEMCPY")) {
        snprintf(q, sizeof q,
                 "SELECT start, end, streamId, correlationId, NULL, copyKind FROM "
                 "CUPTI_ACTIVITY_KIND_MEMCPY "
                 "ORDER BY start");
        rc |= read_rows(db, q, out, 1, 1, err, errlen);
    }
    if (!rc && has_table(db, "CUPTI_ACTIVITY_KIND_MEMSET")) {
        snprintf(q, sizeof q,
                 "SELECT start, end, streamId, correlationId, NULL FROM CUPTI_ACTIVITY_KIND_MEMSET "
                 "ORDER BY start");
        rc |= read_rows(db, q, out, 1, 2, err, errlen);
    }
    if (!rc && has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME")) {
        const char *rn =
            has_column(db, "CUPTI_ACTIVITY_KIND_RUNTIME", "nameId") ? "nameId" : "name";
        snprintf(q, sizeof q,
                 "SELECT r.start, r.end, -1, r.correlationId, s.value FROM "
                 "CUPTI_ACTIVITY_KIND_RUNTIME r "
                 "LEFT JOIN %s s ON s.id = r.%s ORDER BY r.start",
                 strtab, rn);
        rc |= read_rows(db, q, out, 0, 0, err, errlen);
    }
    sqlite3_close(db);
    if (rc) gp_trace_rank_free(out);
    return rc;
}
