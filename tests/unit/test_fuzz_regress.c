/* test_fuzz_regress.c: every crash or sanitizer report the fuzzers (fuzz/) found, fed
 * back to the parser that had it. The same inputs live under fuzz/regress/<target>/ and
 * are replayed by `make fuzz-smoke`; here they run in every build (and under ASan+UBSan
 * in `make asan`), with the property that was broken asserted directly. */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusters/cluster.h"
#include "serve/serve.h"
#include "sources/smi.h"
#include "store/store.h"

/* fuzz_smi: a --query-compute-apps CSV row dated in the year 1012 overflowed int64
 * nanoseconds (signed overflow in csv_time). Now the row is a malformed time: an error
 * naming the file and line, no undefined behaviour. */
static void test_smi_time_overflow(void **st) {
    (void)st;
    static const char text[] =
        "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
        "1012/01/01 12:00:00.000, GPU-11111111-2222-3333-4444-555555555555, 4242, python, 1 "
        "MiB\n";
    char err[512] = "";
    gp_smi_log log;
    memset(&log, 0, sizeof log);
    int rc = gp_smi_parse("old.csv", text, sizeof text - 1, &log, err, sizeof err);
    if (rc == 0) {
        /* Accepting it is fine too, as long as the time did not wrap. */
        for (size_t i = 0; i < log.nprocs; i++)
            assert_true(log.procs[i].ts_ns < 0);
        gp_smi_log_free(&log);
    } else {
        assert_non_null(strstr(err, "old.csv:2"));
    }
    /* A fraction that is not a fraction of a second is no time either. */
    static const char frac[] =
        "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
        "2024/01/01 12:00:00.9e99, GPU-11111111-2222-3333-4444-555555555555, 1, p, 1 MiB\n";
    memset(&log, 0, sizeof log);
    if (gp_smi_parse("frac.csv", frac, sizeof frac - 1, &log, err, sizeof err) == 0)
        gp_smi_log_free(&log);
}

/* fuzz_api: a request path with bytes that are not UTF-8 made the error document empty
 * (jansson refuses such strings, so the 404 body was a bare newline); an empty path read
 * past its end. The error must still be one JSON object with the status. */
static void test_api_non_utf8_path(void **st) {
    (void)st;
    char dir[] = "/tmp/gp-fuzzreg-XXXXXX", db[300], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/gp.db", dir);
    gp_store *s;
    assert_int_equal(gp_store_open(db, 0, &s, err, sizeof err), 0);
    gp_store_close(s);
    gp_serve *srv;
    gp_serve_opts o = {.listen = "none", .db_path = db};
    assert_int_equal(gp_serve_start(&o, &srv, err, sizeof err), 0);
    /* "" is the fuzz_api finding "empty-path": the router stepped past its terminator. */
    static const char *const paths[] = {"a/\x8e", "/\xff\xfe", "/api/v1/jobs/\xc3\x28", "/\x01\x02",
                                        ""};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        char *body = NULL;
        size_t len = 0;
        const char *ct = NULL;
        int code = gp_serve_render(srv, "GET", paths[i], NULL, &body, &len, &ct);
        assert_true(code >= 400 && code < 500);
        json_error_t je;
        json_t *doc = json_loadb(body, len, 0, &je);
        assert_non_null(doc);
        assert_int_equal(json_integer_value(json_object_get(doc, "status")), code);
        assert_non_null(json_string_value(json_object_get(doc, "error")));
        json_decref(doc);
        free(body);
    }
    gp_serve_stop(srv);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* fuzz_cluster: a GenAI 2026 table that is empty or cut (a truncated .tar.gz) was closed
 * twice (open_hdr closed it, then the reader's exit path): a use after free. Now one error
 * naming the file. */
static void test_genai_bad_table_closed_once(void **st) {
    (void)st;
    char dir[] = "/tmp/gp-fuzzreg-XXXXXX", path[300], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/duty.csv", dir);
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        if (k == 1) { /* a gzip header and then nothing: the stream is cut */
            static const unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0xd4};
            fwrite(gz, 1, sizeof gz, f);
        }
        fclose(f);
        gp_cluster_report *r = calloc(1, sizeof *r);
        assert_non_null(r);
        gp_cl_report_init(r, "genai2026", path, 3600);
        err[0] = 0;
        assert_int_equal(gp_cl_read(r, "genai2026", path, err, sizeof err), -1);
        assert_non_null(strstr(err, "duty.csv"));
        gp_cl_report_free(r);
        free(r);
    }
    unlink(path);
    rmdir(dir);
}

/* fuzz_cluster: an openb row with a time of 2.8e155 s overflowed the series bin index
 * (double to int64 conversion, undefined). Such a span is refused like any huge one. */
static void test_cluster_series_absurd_time(void **st) {
    (void)st;
    gp_cl_series s;
    memset(&s, 0, sizeof s);
    s.bin_s = 3600;
    assert_int_equal(gp_cl_series_add(&s, 0, 2.79167e155, 2.8e155, 1), -1);
    assert_int_equal(gp_cl_series_add(&s, 0, -1e300, 10, 1), -1);
    assert_int_equal(gp_cl_series_add(&s, 0, 0, 7200, 2), 0);
    assert_near(s.alloc_gpu_s[0 - s.b0] + s.alloc_gpu_s[1 - s.b0], 2 * 7200.0, 1e-9);
    free(s.alloc_gpu_s);
    free(s.busy_gpu_s);
    free(s.measured_gpu_s);
    free(s.wait_gpu_s);
    free(s.online_gpu_s);
}

/* fuzz_smi: a dmon/pmon header without a "gpu" (or "pid") column made the row parser read
 * v[-1]. Every input kept under fuzz/regress/smi/ (tests run from the repo root) is
 * replayed here: it parses or fails with one line naming the file. */
static void test_smi_regress_inputs(void **st) {
    (void)st;
    static const char *const files[] = {"fuzz/regress/smi/dmon-without-gpu-column",
                                        "fuzz/regress/smi/csv-time-overflow"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "rb");
        assert_non_null(f);
        char *buf = malloc(1 << 20);
        assert_non_null(buf);
        size_t n = fread(buf, 1, 1 << 20, f);
        fclose(f);
        gp_smi_log log;
        memset(&log, 0, sizeof log);
        char err[512] = "";
        if (gp_smi_parse("regress.log", buf, n, &log, err, sizeof err) == 0)
            gp_smi_log_free(&log);
        else {
            assert_non_null(strstr(err, "regress.log"));
            assert_null(strchr(err, '\n'));
        }
        free(buf);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smi_time_overflow),
        cmocka_unit_test(test_api_non_utf8_path),
        cmocka_unit_test(test_genai_bad_table_closed_once),
        cmocka_unit_test(test_cluster_series_absurd_time),
        cmocka_unit_test(test_smi_regress_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
