/* test_trace_input.c: hostile and odd inputs for the trace readers (truncated gzip, invalid
 * JSON with its byte offset, absurd durations, unknown categories, a non-nsys SQLite file),
 * and the Nsight Systems exports in shared/data/nsys checked against independent sqlite3
 * queries over their own tables. */
#include "testutil.h"

#include <sqlite3.h>
#include <zlib.h>

#include "traces/trace.h"
#include "util/dl_deflate.h"
#include "util/dl_isal.h"

static char *write_file(const char *dir, const char *name, const char *text) {
    char *p = malloc(1024);
    snprintf(p, 1024, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const char *good =
    "{\"distributedInfo\": {\"rank\": 3}, \"traceEvents\": ["
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 100, "
    "\"dur\": 5, "
    "\"args\": {\"correlation\": 7}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"ts\": 110, \"dur\": 20, "
    "\"args\": {\"stream\": 7, \"correlation\": 7}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"neg\", \"ts\": 140, \"dur\": -5, "
    "\"args\": {\"stream\": 7, \"correlation\": 8}},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"huge\", \"ts\": 150, \"dur\": 9e12, "
    "\"args\": {\"stream\": 7, \"correlation\": 9}},"
    "{\"ph\": \"X\", \"cat\": \"weird_new_cat\", \"name\": \"x\", \"ts\": 160, \"dur\": 1},"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"no_ts\", \"dur\": 1, \"args\": {\"stream\": "
    "7}}"
    "]}";

static void test_counts_warnings(void **s) {
    (void)s;
    char *d = gp_test_tmpdir(), err[512];
    char *p = write_file(d, "t.json", good);
    gp_trace_rank r;
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(r.rank, 3);
    assert_int_equal(r.gpu.n, 1); /* only gemm survives */
    assert_int_equal(r.warn.bad_duration, 2);
    assert_int_equal(r.warn.unknown_category, 1);
    assert_int_equal(r.warn.missing_fields, 1);
    gp_trace_prepare(&r, 0);
    gp_trace_options o;
    gp_trace_options_default(&o);
    gp_rank_result res;
    assert_int_equal(gp_trace_analyze(&r, &o, &res), 0);
    assert_near(res.span_us, 20, 1e-9);
    assert_near(res.compute_us, 20, 1e-9);
    assert_int_equal(res.n_launches, 1);
    assert_near(res.launches[0].delay, 5, 1e-9); /* 110 - (100 + 5) */
    gp_rank_result_free(&res);
    gp_trace_rank_free(&r);
    unlink(p);
    free(p);
    rmdir(d);
    free(d);
}

static void test_invalid_json_offset(void **s) {
    (void)s;
    char *d = gp_test_tmpdir(), err[512];
    char *p =
        write_file(d, "bad.json", "{\"traceEvents\": [{\"ph\": \"X\",, \"cat\": \"kernel\"}]}");
    gp_trace_rank r;
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "byte 29")); /* the second comma */
    unlink(p);
    free(p);
    rmdir(d);
    free(d);
}

/* Writes a trace of n kernels as gzip members of every kernels each (one member when
 * every >= n), like gzip(1) concatenated files. */
static void write_gz_members(const char *p, int n, int every) {
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fclose(f);
    for (int i0 = 0; i0 < n; i0 += every) {
        gzFile gz = gzopen(p, "ab");
        if (i0 == 0) gzputs(gz, "{\"traceEvents\": [");
        for (int i = i0; i < i0 + every && i < n; i++)
            gzprintf(gz,
                     "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d, "
                     "\"dur\": 3, \"args\": {\"stream\": 7, \"correlation\": %d}}",
                     i ? "," : "", i % 97, i * 10, i);
        if (i0 + every >= n) gzputs(gz, "]}");
        gzclose(gz);
    }
}

/* Reads p with libdeflate (GOODPUT_INFLATE=libdeflate) and with zlib (the default): same
 * outcome, same kernels, same error text. */
static void same_both_ways(const char *p, int want_rc) {
    char e1[512] = "", e2[512] = "";
    gp_trace_rank a, b;
    setenv("GOODPUT_INFLATE", "libdeflate", 1);
    int r1 = gp_kineto_read(p, &a, NULL, NULL, e1, sizeof e1);
    unsetenv("GOODPUT_INFLATE"); /* zlib, the default */
    int r2 = gp_kineto_read(p, &b, NULL, NULL, e2, sizeof e2);
    assert_int_equal(r1, want_rc);
    assert_int_equal(r2, want_rc);
    if (want_rc == 0) {
        assert_int_equal(a.gpu.n, b.gpu.n);
        assert_true(a.bytes == b.bytes);
        for (size_t i = 0; i < a.gpu.n; i++)
            assert_true(a.gpu.v[i].ts == b.gpu.v[i].ts && a.gpu.v[i].dur == b.gpu.v[i].dur);
        gp_trace_rank_free(&a);
        gp_trace_rank_free(&b);
    } else {
        assert_string_equal(e1, e2);
    }
}

/* libdeflate (when installed: util/dl_deflate.h) and zlib read the same bytes: one member,
 * several members (the trailer's size is the last member's only), a cut stream, and a
 * stream followed by garbage. */
static void test_inflate_libdeflate_same_as_zlib(void **s) {
    (void)s;
    /* scripts/deps.d/traces.txt installs libdeflate0: the fast path is what is compared. */
    assert_int_equal(gp_dl_deflate_load(), 0);
    char *d = gp_test_tmpdir(), p[1024];
    snprintf(p, sizeof p, "%s/t.json.gz", d);
    write_gz_members(p, 20000, 20000);
    same_both_ways(p, 0);
    write_gz_members(p, 20000, 3000);
    same_both_ways(p, 0);
    FILE *f = fopen(p, "r+");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    assert_int_equal(ftruncate(fileno(f), n - n / 3), 0);
    fclose(f);
    same_both_ways(p, -1);
    write_gz_members(p, 500, 500);
    f = fopen(p, "ab");
    fputs("trailing bytes that are not gzip", f);
    fclose(f);
    char err[512];
    gp_trace_rank r;
    int rz = gp_kineto_read(p, &r, NULL, NULL, err, sizeof err);
    if (rz == 0) gp_trace_rank_free(&r);
    same_both_ways(p, rz);
    unlink(p);
    rmdir(d);
    free(d);
}

/* Reads p with a fast engine (fast: NULL, the default: ISA-L's inflate when it is there;
 * "zlib-inflate": zlib's inflate with libdeflate's CRC) and with gzread alone
 * (GOODPUT_INFLATE=zlib): same outcome, rows, offsets, error text. */
static void same_engine_and_gzread(const char *p, const char *fast) {
    char e1[512] = "", e2[512] = "";
    gp_trace_rank a, b;
    if (fast) setenv("GOODPUT_INFLATE", fast, 1);
    int r1 = gp_kineto_read(p, &a, NULL, NULL, e1, sizeof e1);
    setenv("GOODPUT_INFLATE", "zlib", 1);
    int r2 = gp_kineto_read(p, &b, NULL, NULL, e2, sizeof e2);
    unsetenv("GOODPUT_INFLATE");
    assert_int_equal(r1, r2);
    if (r1 == 0) {
        assert_int_equal(a.gpu.n, b.gpu.n);
        assert_true(a.bytes == b.bytes);
        for (size_t i = 0; i < a.gpu.n; i++)
            assert_true(a.gpu.v[i].ts == b.gpu.v[i].ts && a.gpu.v[i].corr == b.gpu.v[i].corr);
        gp_trace_rank_free(&a);
        gp_trace_rank_free(&b);
    } else {
        assert_string_equal(e1, e2);
    }
}

/* Both fast engines against gzread. */
static void same_fast_and_gzread(const char *p) {
    same_engine_and_gzread(p, NULL);
    same_engine_and_gzread(p, "zlib-inflate");
}

/* One gzip member written by hand with header flags flg (FEXTRA, FNAME, FCOMMENT, or a
 * reserved bit) around a raw deflate stream of a small trace. */
static void write_gz_flags(const char *p, unsigned char flg) {
    char json[8192];
    int n = snprintf(json, sizeof json, "{\"traceEvents\": [");
    for (int i = 0; i < 40; i++)
        n += snprintf(json + n, sizeof json - (size_t)n,
                      "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d, "
                      "\"dur\": 3, \"args\": {\"stream\": 7, \"correlation\": %d}}",
                      i ? "," : "", i, i * 10, i);
    n += snprintf(json + n, sizeof json - (size_t)n, "]}");
    assert_true(n < (int)sizeof json);
    unsigned char def[8192];
    z_stream zs = {0};
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = (unsigned char *)json;
    zs.avail_in = (uInt)n;
    zs.next_out = def;
    zs.avail_out = sizeof def;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    size_t dn = sizeof def - zs.avail_out;
    deflateEnd(&zs);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    unsigned char hdr[10] = {0x1f, 0x8b, 8, flg, 0, 0, 0, 0, 0, 3};
    fwrite(hdr, 1, 10, f);
    if (flg & 4)
        fwrite("\x04\x00"
               "ab\x01\x00",
               1, 6, f);                         /* FEXTRA: XLEN 4, one subfield */
    if (flg & 8) fwrite("trace.json", 1, 11, f); /* FNAME, with its NUL */
    if (flg & 16) fwrite("a comment", 1, 10, f); /* FCOMMENT */
    fwrite(def, 1, dn, f);
    uint32_t crc = (uint32_t)crc32(0, (const unsigned char *)json, (uInt)n), len = (uint32_t)n;
    unsigned char t[8] = {(unsigned char)crc,         (unsigned char)(crc >> 8),
                          (unsigned char)(crc >> 16), (unsigned char)(crc >> 24),
                          (unsigned char)len,         (unsigned char)(len >> 8),
                          (unsigned char)(len >> 16), (unsigned char)(len >> 24)};
    fwrite(t, 1, 8, f);
    fclose(f);
}

/* Header fields the engines parse themselves (ISA-L reads the gzip header on its own) read
 * as gzread reads them; a reserved flag bit, which zlib refuses, fails with gzread's error. */
static void test_inflate_header_flags_same_as_gzread(void **s) {
    (void)s;
    gp_isal *isal = gp_isal_new(); /* libisal2 and libisal-dev: scripts/deps.d/traces.txt */
    assert_non_null(isal);
    gp_isal_free(isal);
    char *d = gp_test_tmpdir(), p[1024], err[512];
    snprintf(p, sizeof p, "%s/t.json.gz", d);
    const unsigned char flags[] = {0, 1, 4, 8, 16, 4 | 8 | 16, 0x20};
    for (size_t i = 0; i < sizeof flags; i++) {
        write_gz_flags(p, flags[i]);
        same_fast_and_gzread(p);
        gp_trace_rank r;
        int rc = gp_kineto_read(p, &r, NULL, NULL, err, sizeof err);
        assert_int_equal(rc, flags[i] == 0x20 ? -1 : 0);
        if (rc == 0) {
            assert_int_equal(r.gpu.n, 40);
            gp_trace_rank_free(&r);
        }
    }
    unlink(p);
    rmdir(d);
    free(d);
}

/* Flips one bit of the byte at offset off from the end of the file. */
static void flip_from_end(const char *p, long off) {
    FILE *f = fopen(p, "r+");
    assert_non_null(f);
    fseek(f, -off, SEEK_END);
    int c = fgetc(f);
    fseek(f, -off, SEEK_END);
    fputc(c ^ 1, f);
    fclose(f);
}

/* The fast gzip path hands anything odd to gzread, so a bad CRC or length in a trailer, a
 * cut stream, concatenated members and trailing garbage read exactly as with gzread. */
static void test_inflate_fast_crc_same_as_gzread(void **s) {
    (void)s;
    assert_int_equal(gp_dl_deflate_load(), 0); /* libdeflate0: scripts/deps.d/traces.txt */
    char *d = gp_test_tmpdir(), p[1024];
    snprintf(p, sizeof p, "%s/t.json.gz", d);
    write_gz_members(p, 30000, 30000);
    same_fast_and_gzread(p);
    flip_from_end(p, 8); /* the CRC-32 */
    same_fast_and_gzread(p);
    char err[512];
    gp_trace_rank r;
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), -1);
    write_gz_members(p, 30000, 30000);
    flip_from_end(p, 4); /* the length */
    same_fast_and_gzread(p);
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), -1);
    write_gz_members(p, 30000, 7000);
    same_fast_and_gzread(p);
    flip_from_end(p, 1);
    same_fast_and_gzread(p);
    write_gz_members(p, 30000, 30000);
    FILE *f = fopen(p, "r+");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    assert_int_equal(ftruncate(fileno(f), n - 5), 0); /* inside the trailer */
    fclose(f);
    same_fast_and_gzread(p);
    write_gz_members(p, 500, 500);
    f = fopen(p, "ab");
    fputs("\x1f", f);
    fclose(f);
    same_fast_and_gzread(p);
    unlink(p);
    rmdir(d);
    free(d);
}

static void test_truncated_gzip(void **s) {
    (void)s;
    char *d = gp_test_tmpdir(), err[512], p[1024];
    snprintf(p, sizeof p, "%s/t.json.gz", d);
    /* a trace big enough that half its gzip stream still decodes to something */
    gzFile gz = gzopen(p, "wb");
    gzputs(gz, "{\"traceEvents\": [");
    for (int i = 0; i < 20000; i++)
        gzprintf(
            gz,
            "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"ts\": %d, \"dur\": 3, "
            "\"args\": {\"stream\": 7, \"correlation\": %d}}",
            i ? "," : "", i % 97, i * 10, i);
    gzputs(gz, "]}");
    gzclose(gz);
    gp_trace_rank r;
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(r.gpu.n, 20000);
    gp_trace_rank_free(&r);
    FILE *f = fopen(p, "r+");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    assert_int_equal(ftruncate(fileno(f), n / 2), 0);
    fclose(f);
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), -1);
    assert_true(strstr(err, "truncated") || strstr(err, "corrupt") || strstr(err, "gzip"));
    unlink(p);
    rmdir(d);
    free(d);
}

static void test_not_nsys(void **s) {
    (void)s;
    char *d = gp_test_tmpdir(), err[512], p[1024];
    snprintf(p, sizeof p, "%s/x.sqlite", d);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "CREATE TABLE t(a); INSERT INTO t VALUES (1);", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    gp_trace_rank r;
    assert_true(gp_trace_is_sqlite(p));
    assert_int_equal(gp_nsys_read(p, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "not an Nsight Systems export"));
    unlink(p);
    rmdir(d);
    free(d);
}

static double q1(sqlite3 *db, const char *q) {
    sqlite3_stmt *st;
    double v = NAN;
    if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return NAN;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int table_exists(sqlite3 *db, const char *t) {
    char q[256];
    snprintf(q, sizeof q, "SELECT count(*) FROM sqlite_master WHERE name='%s'", t);
    return q1(db, q) > 0;
}

static void test_nsys_exports(void **s) {
    (void)s;
    const char *files[] = {"cloverleaf.sqlite", "con_kernel.sqlite", "profile16.sqlite"};
    int ran = 0;
    for (int i = 0; i < 3; i++) {
        char p[1024], err[512];
        snprintf(p, sizeof p, "%s/nsys/%s", gp_test_data_dir(), files[i]);
        if (access(p, R_OK)) continue;
        ran++;
        sqlite3 *db;
        assert_int_equal(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        double nk = q1(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        double kus = q1(db, "SELECT sum(end-start)/1000.0 FROM CUPTI_ACTIVITY_KIND_KERNEL");
        double nm = table_exists(db, "CUPTI_ACTIVITY_KIND_MEMCPY")
                        ? q1(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
                        : 0;
        double mus =
            nm ? q1(db, "SELECT sum(end-start)/1000.0 FROM CUPTI_ACTIVITY_KIND_MEMCPY") : 0;
        double ns = table_exists(db, "CUPTI_ACTIVITY_KIND_MEMSET")
                        ? q1(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET")
                        : 0;
        double nr = table_exists(db, "CUPTI_ACTIVITY_KIND_RUNTIME")
                        ? q1(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")
                        : 0;
        double nlaunch =
            q1(db, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = "
                   "r.nameId "
                   "JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
                   "WHERE s.value LIKE 'cudaLaunchKernel%'");
        sqlite3_close(db);
        gp_trace_rank r;
        assert_int_equal(gp_nsys_read(p, &r, err, sizeof err), 0);
        assert_int_equal(r.gpu.n, (size_t)(nk + nm + ns));
        assert_int_equal(r.cpu.n, (size_t)nr);
        double k_sum = 0, m_sum = 0;
        for (size_t j = 0; j < r.gpu.n; j++) {
            int kt = gp_kernel_type(r.names[r.gpu.v[j].name]);
            if (!strncmp(r.names[r.gpu.v[j].name], "Memcpy", 6))
                m_sum += r.gpu.v[j].dur;
            else if (strncmp(r.names[r.gpu.v[j].name], "Memset", 6))
                k_sum += r.gpu.v[j].dur;
            (void)kt;
        }
        assert_near(k_sum, kus, 1e-6 * kus + 1e-6);
        assert_near(m_sum, mus, 1e-6 * mus + 1e-6);
        gp_trace_prepare(&r, 0);
        gp_trace_options o;
        gp_trace_options_default(&o);
        gp_rank_result res;
        assert_int_equal(gp_trace_analyze(&r, &o, &res), 0);
        assert_true(res.has_gpu);
        assert_true(res.idle_us >= 0 && res.idle_us <= res.span_us);
        assert_true(res.n_launches >= (size_t)nlaunch);
        gp_rank_result_free(&res);
        gp_trace_rank_free(&r);
    }
    if (!ran) skip();
}

static void test_kernel_types(void **s) {
    (void)s;
    assert_int_equal(gp_kernel_type("ncclKernel_AllReduce"), GP_KT_COMMUNICATION);
    assert_int_equal(gp_kernel_type("void foo<ncclKernel>()"), GP_KT_COMMUNICATION);
    assert_int_equal(gp_kernel_type("Memcpy HtoD (Pageable -> Device)"), GP_KT_MEMORY);
    assert_int_equal(gp_kernel_type("ampere_sgemm_128x64_nn"), GP_KT_COMPUTATION);
    assert_int_equal(gp_kernel_type("myDeviceSyncKernel"), GP_KT_OTHER);
    assert_int_equal(gp_kernel_type("cudaFooLaunchKernelBar"), GP_KT_OTHER);
}

static void test_np_argsort_matches_sort(void **s) {
    (void)s;
    enum { N = 5000 };
    double *v = malloc(N * sizeof *v);
    size_t *ix = malloc(N * sizeof *ix);
    srand(1);
    for (int i = 0; i < N; i++)
        v[i] = rand() % 100;
    gp_np_argsort(v, ix, N);
    char *seen = calloc(N, 1);
    for (int i = 0; i < N; i++) {
        assert_false(seen[ix[i]]);
        seen[ix[i]] = 1;
        if (i) assert_true(v[ix[i - 1]] <= v[ix[i]]);
    }
    free(seen);
    free(v);
    free(ix);
}

/* numpy's own order, ties and NaN included: the fingerprints are numpy 1.24.2's
 * np.argsort(v, kind="quicksort") on the same generated arrays (h = h * 1000003 + index
 * over the result, mod 2^64), which is what pandas' sort_values gives HTA. */
static void test_np_argsort_numpy_order(void **s) {
    (void)s;
    enum { N = 5000 };
    const uint64_t want[3] = {0xf2ef4779478322aULL, 0x7ed0ebcbb6a586ecULL, 0x712112bb1f667e72ULL};
    double *v = malloc(N * sizeof *v);
    size_t *ix = malloc(N * sizeof *ix);
    for (int kind = 0; kind < 3; kind++) { /* ties; reversed runs of ties; ties and NaN */
        uint32_t x = 12345;
        for (int i = 0; i < N; i++) {
            x = x * 1103515245u + 12345u;
            double r = (double)((x >> 16) % 100);
            v[i] = kind == 0 ? r : kind == 1 ? (double)((N - i) / 3) : (i % 7 ? r : NAN);
        }
        gp_np_argsort(v, ix, N);
        uint64_t h = 0;
        for (int i = 0; i < N; i++)
            h = h * 1000003u + ix[i];
        assert_true(h == want[kind]);
    }
    free(v);
    free(ix);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_warnings),
        cmocka_unit_test(test_invalid_json_offset),
        cmocka_unit_test(test_truncated_gzip),
        cmocka_unit_test(test_inflate_fast_crc_same_as_gzread),
        cmocka_unit_test(test_inflate_libdeflate_same_as_zlib),
        cmocka_unit_test(test_inflate_header_flags_same_as_gzread),
        cmocka_unit_test(test_not_nsys),
        cmocka_unit_test(test_nsys_exports),
        cmocka_unit_test(test_kernel_types),
        cmocka_unit_test(test_np_argsort_matches_sort),
        cmocka_unit_test(test_np_argsort_numpy_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
