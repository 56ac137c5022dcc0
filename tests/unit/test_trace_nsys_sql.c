/* test_trace_nsys_sql.c: every Nsight Systems total goodput reports (kernels, memcpy by
 * copyKind, memset, runtime API by name, launch calls) equals the SQL sum over the export,
 * computed here independently with SQLite: on the shared real exports (two exporter
 * versions, 2022.1 and 2024.5: EXPORT_META_DATA vs META_DATA_EXPORT, with and without a
 * MEMSET table) and on a small export built here in an older schema (StringTable, no
 * bytes column, a row with end < start). Also checks the totals survive analysis and reach
 * the JSON output in ns. */
#include "testutil.h"

#include <jansson.h>
#include <sqlite3.h>
#include <unistd.h>

#include "traces/trace.h"

static int64_t q_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int table_exists(sqlite3 *db, const char *t) {
    char q[256];
    snprintf(q, sizeof q, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='%s'", t);
    return q_i64(db, q) > 0;
}

/* the API name without its _vNNNN version suffix, written independently of nsys.c */
static void base_name(const char *in, char *out, size_t cap) {
    snprintf(out, cap, "%s", in ? in : "");
    char *v = out;
    while ((v = strstr(v, "_v")) != NULL) {
        if (v[2] >= '0' && v[2] <= '9') {
            *v = 0;
            return;
        }
        v += 2;
    }
}

static const gp_nsys_sum *find_rt(const gp_nsys_totals *t, const char *name) {
    for (size_t i = 0; i < t->n_runtime; i++)
        if (!strcmp(t->runtime[i].name, name)) return &t->runtime[i];
    return NULL;
}

/* Compares every total of t with SQL over the export at path. strtab/rname: the string
 * table and the runtime name column of this schema. */
static void check_totals(const char *path, const gp_nsys_totals *t, const char *strtab,
                         const char *rname) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    const char *ok = " WHERE \"end\" >= start"; /* reversed rows are reported, not summed */
    char q[512];
    snprintf(q, sizeof q, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL%s", ok);
    assert_int_equal(t->kernels.count, q_i64(db, q));
    snprintf(q, sizeof q, "SELECT total(\"end\"-start) FROM CUPTI_ACTIVITY_KIND_KERNEL%s", ok);
    assert_int_equal(t->kernels.sum_ns, q_i64(db, q));

    /* memcpy grouped by copyKind */
    assert_int_equal(t->has_memcpy, table_exists(db, "CUPTI_ACTIVITY_KIND_MEMCPY"));
    if (t->has_memcpy) {
        sqlite3_stmt *st;
        snprintf(q, sizeof q,
                 "SELECT copyKind, count(*), sum(\"end\"-start) FROM CUPTI_ACTIVITY_KIND_MEMCPY%s "
                 "GROUP BY copyKind ORDER BY copyKind",
                 ok);
        assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
        size_t i = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            assert_true(i < t->n_memcpy);
            assert_int_equal(t->memcpy[i].kind, sqlite3_column_int(st, 0));
            assert_int_equal(t->memcpy[i].count, sqlite3_column_int64(st, 1));
            assert_int_equal(t->memcpy[i].sum_ns, sqlite3_column_int64(st, 2));
            i++;
        }
        sqlite3_finalize(st);
        assert_int_equal(i, t->n_memcpy);
    }

    assert_int_equal(t->has_memset, table_exists(db, "CUPTI_ACTIVITY_KIND_MEMSET"));
    if (t->has_memset) {
        snprintf(q, sizeof q, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET%s", ok);
        assert_int_equal(t->memset.count, q_i64(db, q));
        snprintf(q, sizeof q, "SELECT total(\"end\"-start) FROM CUPTI_ACTIVITY_KIND_MEMSET%s", ok);
        assert_int_equal(t->memset.sum_ns, q_i64(db, q));
    }

    /* runtime API joined to the string table, grouped by name without _vNNNN */
    assert_int_equal(t->has_runtime, table_exists(db, "CUPTI_ACTIVITY_KIND_RUNTIME"));
    if (t->has_runtime) {
        snprintf(q, sizeof q,
                 "SELECT s.value, count(*), sum(r.\"end\"-r.start) FROM "
                 "CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN %s s ON s.id = r.%s "
                 "WHERE r.\"end\" >= r.start GROUP BY s.value",
                 strtab, rname);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
        /* merge raw names that share a base name (cudaFoo_v3020, cudaFoo_v11000) */
        char names[256][96];
        int64_t cnt[256] = {0}, sum[256] = {0};
        size_t n = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            char b[96];
            base_name((const char *)sqlite3_column_text(st, 0), b, sizeof b);
            size_t k = 0;
            while (k < n && strcmp(names[k], b))
                k++;
            if (k == n) {
                assert_true(n < 256);
                snprintf(names[n++], sizeof names[0], "%s", b);
            }
            cnt[k] += sqlite3_column_int64(st, 1);
            sum[k] += sqlite3_column_int64(st, 2);
        }
        sqlite3_finalize(st);
        assert_int_equal(n, t->n_runtime);
        int64_t all = 0;
        for (size_t k = 0; k < n; k++) {
            const gp_nsys_sum *m = find_rt(t, names[k]);
            assert_non_null(m);
            assert_int_equal(m->count, cnt[k]);
            assert_int_equal(m->sum_ns, sum[k]);
            all += m->sum_ns;
        }
        /* each runtime row once: the reported rows add up to the whole table */
        snprintf(q, sizeof q, "SELECT total(\"end\"-start) FROM CUPTI_ACTIVITY_KIND_RUNTIME%s", ok);
        assert_int_equal(all, q_i64(db, q));
        /* a kernel launch is one runtime call, counted once */
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN %s s ON s.id = r.%s "
                 "WHERE s.value LIKE 'cudaLaunchKernel%%' AND r.\"end\" >= r.start",
                 strtab, rname);
        int64_t launches = q_i64(db, q);
        assert_int_equal(t->launches, launches);
        int64_t by_name = 0;
        const gp_nsys_sum *lk = find_rt(t, "cudaLaunchKernel");
        const gp_nsys_sum *lx = find_rt(t, "cudaLaunchKernelExC");
        by_name = (lk ? (int64_t)lk->count : 0) + (lx ? (int64_t)lx->count : 0);
        assert_int_equal(by_name, launches);
    }
    sqlite3_close(db);
}

/* Analysis keeps the totals; the JSON output carries them in ns with the unit named. */
static void check_output(gp_trace_rank *r) {
    gp_nsys_totals want = *r->nsys;
    gp_trace_prepare(r, 0);
    gp_trace_options o;
    gp_trace_options_default(&o);
    gp_rank_result res;
    assert_int_equal(gp_trace_analyze(r, &o, &res), 0);
    assert_non_null(res.nsys);
    assert_int_equal(res.nsys->kernels.sum_ns, want.kernels.sum_ns);
    assert_int_equal(res.nsys->n_runtime, want.n_runtime);
    gp_trace_report rep = {.ranks = &res, .n_ranks = 1};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gp_trace_write_json(&rep, f);
    fclose(f);
    json_error_t je;
    json_t *root = json_loads(buf, 0, &je);
    assert_non_null(root);
    json_t *t = json_object_get(json_array_get(json_object_get(root, "ranks"), 0), "nsys_totals");
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "unit")), "ns");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "kernels"), "sum_ns")),
                     want.kernels.sum_ns);
    json_t *mc = json_object_get(t, "memcpy");
    if (want.has_memcpy) {
        assert_int_equal(json_array_size(mc), want.n_memcpy);
        for (size_t i = 0; i < want.n_memcpy; i++)
            assert_int_equal(json_integer_value(json_object_get(json_array_get(mc, i), "sum_ns")),
                             want.memcpy[i].sum_ns);
    } else {
        assert_true(json_is_null(mc));
    }
    assert_true(want.has_memset ? json_is_object(json_object_get(t, "memset"))
                                : json_is_null(json_object_get(t, "memset")));
    json_decref(root);
    free(buf);
    gp_rank_result_free(&res);
}

static void test_real_exports(void **s) {
    (void)s;
    static const char *files[] = {"cloverleaf.sqlite", "con_kernel.sqlite", "profile16.sqlite"};
    int ran = 0, with_memset = 0, without_memset = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char p[1024], err[512];
        snprintf(p, sizeof p, "%s/nsys/%s", gp_test_data_dir(), files[i]);
        if (access(p, R_OK)) continue;
        ran++;
        gp_trace_rank r;
        assert_int_equal(gp_nsys_read(p, &r, err, sizeof err), 0);
        assert_non_null(r.nsys);
        assert_true(r.nsys->kernels.count > 0);
        check_totals(p, r.nsys, "StringIds", "nameId");
        if (r.nsys->has_memset)
            with_memset++;
        else
            without_memset++;
        check_output(&r);
        gp_trace_rank_free(&r);
    }
    if (!ran) {
        printf("skip: no real data at %s/nsys\n", gp_test_data_dir());
        skip();
    }
    if (ran == 3) assert_true(with_memset && without_memset); /* both schema variants seen */
}

/* An export in an older layout: StringTable, runtime "name" column, no MEMSET, no bytes. */
static void test_old_schema(void **s) {
    (void)s;
    char dir[] = "/tmp/gp_nsys_sqlXXXXXX";
    assert_non_null(mkdtemp(dir));
    char p[256], err[512];
    snprintf(p, sizeof p, "%s/old.sqlite", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    const char *sql =
        "CREATE TABLE StringTable(id INTEGER PRIMARY KEY, value TEXT);"
        "INSERT INTO StringTable VALUES(1,'gemm_kernel'),(2,'cudaLaunchKernel_v7000'),"
        "(3,'cudaMemcpyAsync_v3020'),(4,'cudaStreamSynchronize_v3020'),(5,'nccl_allreduce');"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INT, end INT, streamId INT, "
        "correlationId INT, name INT);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(1000,6000,7,1,1),(7000,9500,7,2,1),"
        "(10000,10000,7,3,5),(12000,11000,7,4,1);" /* the last is reversed: not summed */
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INT, end INT, streamId INT, "
        "correlationId INT, copyKind INT);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES(500,900,7,10,1),(9600,9900,7,11,2),"
        "(13000,13700,7,12,1);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INT, end INT, correlationId INT, name "
        "INT);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME "
        "VALUES(400,450,10,3),(800,990,1,2),(6500,6600,2,2),"
        "(9000,9050,3,2),(9550,9600,11,3),(9700,20000,20,4),(11000,11100,4,2),(12500,12600,12,3);";
    char *emsg = NULL;
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, &emsg), SQLITE_OK);
    sqlite3_close(db);
    gp_trace_rank r;
    assert_int_equal(gp_nsys_read(p, &r, err, sizeof err), 0);
    assert_int_equal(r.warn.bad_duration, 1);
    assert_int_equal(r.nsys->kernels.count, 3);
    assert_int_equal(r.nsys->kernels.sum_ns, 5000 + 2500 + 0);
    assert_false(r.nsys->has_memset);
    assert_int_equal(r.nsys->memcpy[0].bytes, -1); /* no bytes column: unknown, not 0 */
    check_totals(p, r.nsys, "StringTable", "name");
    check_output(&r);
    gp_trace_rank_free(&r);
    unlink(p);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_schema),
        cmocka_unit_test(test_real_exports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
