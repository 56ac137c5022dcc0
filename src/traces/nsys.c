/* nsys.c: Nsight Systems SQLite exports (`nsys export --type sqlite`) read into the same
 * per-rank rows as Kineto traces, so every analysis applies unchanged. Kernels, memcpys and
 * memsets become GPU rows on their stream; runtime API calls become CPU rows with their
 * correlation id. Schema versions differ (about 2.9 to 3.13, exporters 2022.1 to 2024.5):
 * the kernel name lives in demangledName, shortName or name; MEMSET or RUNTIME may be
 * absent; runtime names carry a _vNNNN suffix; StringIds may be called StringTable. Columns
 * are discovered with PRAGMA table_info, so a missing one is handled rather than guessed.
 *
 * Units: the export's times are integer ns. The totals (gp_nsys_totals: kernels, memcpy by
 * copyKind, memset, runtime API by name) are summed in int64 ns from the rows as read, so
 * each equals SUM(end - start) in SQL exactly (tests/unit/test_trace_nsys_sql.c checks it);
 * the timeline rows are µs (double) like Kineto's. A kernel launch is one runtime row
 * (cudaLaunchKernel) plus one kernel row: its CPU time is counted once, under runtime API,
 * and its GPU time once, under kernels. */
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traces/kineto_int.h"
#include "traces/report_int.h"
#include "util/term.h"
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

static gp_nsys_sum *memcpy_slot(gp_nsys_totals *t, int kind) {
    for (size_t i = 0; i < t->n_memcpy; i++)
        if (t->memcpy[i].kind == kind) return &t->memcpy[i];
    t->memcpy = realloc(t->memcpy, (t->n_memcpy + 1) * sizeof *t->memcpy);
    if (!t->memcpy) abort();
    gp_nsys_sum *m = &t->memcpy[t->n_memcpy++];
    memset(m, 0, sizeof *m);
    m->kind = kind;
    snprintf(m->name, sizeof m->name, "%s", copy_kind(kind));
    return m;
}

/* runtime totals while reading, indexed by interned name id */
typedef struct rt_acc {
    gp_nsys_sum *by_name;
    size_t cap;
} rt_acc;

static gp_nsys_sum *rt_slot(rt_acc *a, uint32_t id) {
    if (id >= a->cap) {
        size_t nc = a->cap ? a->cap : 64;
        while (nc <= id)
            nc *= 2;
        a->by_name = realloc(a->by_name, nc * sizeof *a->by_name);
        if (!a->by_name) abort();
        memset(a->by_name + a->cap, 0, (nc - a->cap) * sizeof *a->by_name);
        a->cap = nc;
    }
    return &a->by_name[id];
}

static void add_sum(gp_nsys_sum *m, int64_t dur_ns, const sqlite3_value *bytes) {
    m->count++;
    m->sum_ns += dur_ns;
    if (!bytes || sqlite3_value_type((sqlite3_value *)bytes) == SQLITE_NULL)
        m->bytes = -1;
    else if (m->bytes >= 0)
        m->bytes += sqlite3_value_int64((sqlite3_value *)bytes);
}

/* runs q; each row: start, end, stream, corr, name text, copyKind, bytes.
 * kind: 0 kernel or runtime, 1 memcpy, 2 memset */
static int read_rows(sqlite3 *db, const char *q, gp_trace_rank *r, int gpu, int kind, rt_acc *rt,
                     char *err, size_t errlen) {
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
        int64_t dur_ns = e - s;
        sqlite3_value *bytes = sqlite3_column_count(st) > 6 ? sqlite3_column_value(st, 6) : NULL;
        if (!gpu) {
            gp_nsys_sum *m = rt_slot(rt, row.name);
            if (!m->count) snprintf(m->name, sizeof m->name, "%.*s", (int)nl, nm);
            add_sum(m, dur_ns, NULL);
            m->bytes = -1;
        } else if (kind == 1) {
            add_sum(memcpy_slot(r->nsys, sqlite3_column_int(st, 5)), dur_ns, bytes);
        } else if (kind == 2) {
            add_sum(&r->nsys->memset, dur_ns, bytes);
        } else {
            r->nsys->kernels.count++;
            r->nsys->kernels.sum_ns += dur_ns;
        }
        if (gpu) {
            row.flags = GP_TR_KCAT | (row.stream >= 0 && row.corr >= 0 ? GP_TR_GPU_SIDE : 0);
            push(&r->gpu, &row);
        } else {
            if (!strcmp(nm, "cudaLaunchKernel") || !strcmp(nm, "cudaLaunchKernelExC")) {
                row.flags |= GP_TR_LAUNCH;
                r->nsys->launches++;
            }
            if (!strcmp(nm, "cudaMemcpyAsync") || !strcmp(nm, "cudaMemsetAsync"))
                row.flags |= GP_TR_MEMLAUNCH;
            r->n_cpu_side++;
            push(&r->cpu, &row);
        }
    }
    sqlite3_finalize(st);
    return 0;
}

static int cmp_sum_desc(const void *a, const void *b) {
    const gp_nsys_sum *x = a, *y = b;
    if (x->sum_ns != y->sum_ns) return x->sum_ns > y->sum_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}
static int cmp_kind(const void *a, const void *b) {
    const gp_nsys_sum *x = a, *y = b;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

/* runtime sums by name id -> a dense list by time, memcpy kinds in order */
static void finish_totals(gp_nsys_totals *t, rt_acc *rt) {
    size_t n = 0;
    for (size_t i = 0; i < rt->cap; i++)
        if (rt->by_name[i].count) rt->by_name[n++] = rt->by_name[i];
    t->runtime = rt->by_name ? rt->by_name : NULL;
    t->n_runtime = n;
    if (n) qsort(t->runtime, n, sizeof *t->runtime, cmp_sum_desc);
    if (t->n_memcpy) qsort(t->memcpy, t->n_memcpy, sizeof *t->memcpy, cmp_kind);
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
    out->nsys = calloc(1, sizeof *out->nsys);
    if (!out->nsys) abort();
    snprintf(out->nsys->kernels.name, sizeof out->nsys->kernels.name, "kernels");
    snprintf(out->nsys->memset.name, sizeof out->nsys->memset.name, "Memset");
    rt_acc rt = {0};
    char q[512];
    int rc = 0;
    snprintf(q, sizeof q,
             "SELECT k.start, k.end, k.streamId, k.correlationId, s.value FROM "
             "CUPTI_ACTIVITY_KIND_KERNEL k "
             "LEFT JOIN %s s ON s.id = k.%s ORDER BY k.start",
             strtab, kname);
    rc |= read_rows(db, q, out, 1, 0, &rt, err, errlen);
    if (!rc && has_table(db, "CUPTI_ACTIVITY_KIND_MEMCPY")) {
        out->nsys->has_memcpy = 1;
        snprintf(q, sizeof q,
                 "SELECT start, end, streamId, correlationId, NULL, copyKind, %s FROM "
                 "CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start",
                 has_column(db, "CUPTI_ACTIVITY_KIND_MEMCPY", "bytes") ? "bytes" : "NULL");
        rc |= read_rows(db, q, out, 1, 1, &rt, err, errlen);
    }
    if (!rc && has_table(db, "CUPTI_ACTIVITY_KIND_MEMSET")) {
        out->nsys->has_memset = 1;
        snprintf(q, sizeof q,
                 "SELECT start, end, streamId, correlationId, NULL, NULL, %s FROM "
                 "CUPTI_ACTIVITY_KIND_MEMSET ORDER BY start",
                 has_column(db, "CUPTI_ACTIVITY_KIND_MEMSET", "bytes") ? "bytes" : "NULL");
        rc |= read_rows(db, q, out, 1, 2, &rt, err, errlen);
    }
    if (!rc && has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME")) {
        out->nsys->has_runtime = 1;
        const char *rn =
            has_column(db, "CUPTI_ACTIVITY_KIND_RUNTIME", "nameId") ? "nameId" : "name";
        snprintf(q, sizeof q,
                 "SELECT r.start, r.end, -1, r.correlationId, s.value FROM "
                 "CUPTI_ACTIVITY_KIND_RUNTIME r "
                 "LEFT JOIN %s s ON s.id = r.%s ORDER BY r.start",
                 strtab, rn);
        rc |= read_rows(db, q, out, 0, 0, &rt, err, errlen);
    }
    sqlite3_close(db);
    finish_totals(out->nsys, &rt);
    if (rc) gp_trace_rank_free(out);
    return rc;
}

/* ---- totals: copy, free, text and JSON ---------------------------------------------- */

gp_nsys_totals *gp_nsys_totals_dup(const gp_nsys_totals *t) {
    if (!t) return NULL;
    gp_nsys_totals *d = malloc(sizeof *d);
    if (!d) abort();
    *d = *t;
    d->memcpy = malloc((t->n_memcpy + 1) * sizeof *d->memcpy);
    d->runtime = malloc((t->n_runtime + 1) * sizeof *d->runtime);
    if (!d->memcpy || !d->runtime) abort();
    if (t->n_memcpy) memcpy(d->memcpy, t->memcpy, t->n_memcpy * sizeof *d->memcpy);
    if (t->n_runtime) memcpy(d->runtime, t->runtime, t->n_runtime * sizeof *d->runtime);
    return d;
}

void gp_nsys_totals_free(gp_nsys_totals *t) {
    if (!t) return;
    free(t->memcpy);
    free(t->runtime);
    free(t);
}

static json_t *sum_json(const gp_nsys_sum *m, int with_bytes) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(m->name));
    json_object_set_new(o, "count", json_integer((json_int_t)m->count));
    json_object_set_new(o, "sum_ns", json_integer((json_int_t)m->sum_ns));
    if (with_bytes)
        json_object_set_new(o, "bytes",
                            m->bytes >= 0 && m->count ? json_integer(m->bytes) : json_null());
    return o;
}

json_t *gp_nsys_totals_json(const gp_nsys_totals *t) {
    json_t *o = json_object();
    json_object_set_new(o, "unit", json_string("ns"));
    json_object_set_new(o, "kernels", sum_json(&t->kernels, 0));
    json_t *mc = json_array();
    for (size_t i = 0; i < t->n_memcpy; i++) {
        json_t *x = sum_json(&t->memcpy[i], 1);
        json_object_set_new(x, "copy_kind", json_integer(t->memcpy[i].kind));
        json_array_append_new(mc, x);
    }
    json_object_set_new(o, "memcpy", t->has_memcpy ? mc : (json_decref(mc), json_null()));
    json_object_set_new(o, "memset", t->has_memset ? sum_json(&t->memset, 1) : json_null());
    json_t *ra = json_array();
    for (size_t i = 0; i < t->n_runtime; i++)
        json_array_append_new(ra, sum_json(&t->runtime[i], 0));
    json_object_set_new(o, "runtime_api", t->has_runtime ? ra : (json_decref(ra), json_null()));
    json_object_set_new(o, "kernel_launch_calls",
                        t->has_runtime ? json_integer((json_int_t)t->launches) : json_null());
    return o;
}

/* 84 columns with a 44-column label; a longer label is shortened in the middle (whole
 * with --wide). */
static void text_row(FILE *f, int rank, const char *what, const gp_nsys_sum *m, int width) {
    char nm[160];
    fprintf(f, "  rank %-3d %-44s %8llu %18lld ns\n", rank,
            gp_ellipsize(what, width > 0 ? 44 : 0, nm, sizeof nm), (unsigned long long)m->count,
            (long long)m->sum_ns);
}

void gp_nsys_totals_text(const gp_trace_report *rep, FILE *f, int width) {
    int any = 0;
    for (size_t i = 0; i < rep->n_ranks; i++) {
        const gp_rank_result *r = &rep->ranks[i];
        const gp_nsys_totals *t = r->nsys;
        if (!t) continue;
        if (!any++)
            fprintf(f,
                    "\nNsight Systems totals (ns, summed from the export's rows; a launch is "
                    "one runtime call)\n  %-8s %-44s %8s %21s\n",
                    "rank", "what", "count", "sum");
        text_row(f, r->rank, "kernels", &t->kernels, width);
        char lab[128];
        for (size_t k = 0; k < t->n_memcpy; k++) {
            snprintf(lab, sizeof lab, "memcpy %s", t->memcpy[k].name + 7);
            text_row(f, r->rank, lab, &t->memcpy[k], width);
        }
        if (t->has_memset)
            text_row(f, r->rank, "memset", &t->memset, width);
        else
            fprintf(f, "  rank %-3d %-44s %8s %18s ns\n", r->rank, "memset", "-", "-");
        for (size_t k = 0; k < t->n_runtime; k++) {
            snprintf(lab, sizeof lab, "runtime %s", t->runtime[k].name);
            text_row(f, r->rank, lab, &t->runtime[k], width);
        }
    }
}
