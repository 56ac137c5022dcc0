/* test_otlp.c: OTLP decoders (protobuf by hand from the .proto field numbers, JSON, gzip)
 * and the workflow analysis (partition, serial steps, tool_bound, GPU join by token share). */
#include "testutil.h"

#include <zlib.h>

#include "otlp/otlp.h"
#include "otlp/workflows.h"
#include "otlp_seed.h"

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

static void test_pb(void **st) {
    (void)st;
    gp_span_set s = {0};
    char err[300] = "";
    assert_int_equal(gp_otlp_decode_pb(otlp_pb_doc, sizeof otlp_pb_doc, &s, err, sizeof err), 0);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.v[0].trace_id, "0102030405060708090a0b0c0d0e0f10");
    assert_string_equal(s.v[1].parent_id, "0101010101010101");
    assert_string_equal(s.v[1].service, "eng");
    assert_string_equal(s.v[1].host, "h1");
    assert_int_equal(s.v[1].step, GP_STEP_MODEL);
    assert_int_equal(s.v[1].in_tokens, 100);
    assert_int_equal(s.v[1].out_tokens, 20);
    assert_int_equal(s.v[2].step, GP_STEP_TOOL);
    assert_int_equal(s.v[2].status, GP_SPAN_ERROR);
    /* every truncation is refused whole, with the byte offset, and keeps nothing */
    for (size_t cut = 1; cut < sizeof otlp_pb_doc; cut++) {
        gp_span_set t = {0};
        int rc = gp_otlp_decode_pb(otlp_pb_doc, cut, &t, err, sizeof err);
        if (rc != 0) {
            assert_int_equal(t.n, 0);
            assert_non_null(strstr(err, "byte"));
        }
        gp_span_set_free(&t);
    }
    /* gzip of the same document through the body dispatch */
    unsigned char gz[1024];
    z_stream z = {0};
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)otlp_pb_doc;
    z.avail_in = sizeof otlp_pb_doc;
    z.next_out = gz;
    z.avail_out = sizeof gz;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t gzlen = z.total_out;
    deflateEnd(&z);
    gp_span_set g = {0};
    assert_int_equal(
        gp_otlp_decode_body(gz, gzlen, "application/x-protobuf", "gzip", &g, err, sizeof err), 0);
    assert_int_equal(g.n, 3);
    assert_int_not_equal(gp_otlp_decode_body(gz, gzlen / 2, NULL, "gzip", &g, err, sizeof err), 0);
    assert_int_not_equal(gp_otlp_decode_body(gz, gzlen, "text/plain", NULL, &g, err, sizeof err),
                         0);
    gp_span_set_free(&g);
    gp_span_set_free(&s);
}

static void test_json_and_analysis(void **st) {
    (void)st;
    size_t len;
    char *doc = slurp("tests/unit/otlp_seed.json", &len);
    gp_span_set s = {0};
    char err[300] = "";
    assert_int_equal(gp_otlp_decode_json(doc, len, &s, err, sizeof err), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(s.dropped, 1); /* the span with traceId "zz" */
    assert_non_null(strstr(err, "traceId"));
    assert_int_not_equal(gp_otlp_decode_json("{\"resourceSpans\":3}", 19, &s, err, sizeof err), 0);

    /* one engine "eng" whose single GPU is busy 50% of the time, steadily */
    int64_t T = 1700000000000000000LL;
    int64_t t[3] = {T - 1000000000LL, T, T + 2000000000LL};
    double busy[3] = {0, 0.5, 1.5};
    gp_wf_series ser = {t, busy, NULL, 3};
    gp_wf_engine e = {.job_id = "eng", .dev = &ser, .n_dev = 1};
    gp_wf_report r;
    assert_int_equal(gp_wf_analyze(s.v, s.n, &e, 1, 3.0, &r), 0);
    assert_int_equal(r.n_wf, 1);
    const gp_wf *w = &r.wf[0];
    assert_float_equal(w->e2e_s, 1.0, 1e-9);
    assert_float_equal(w->time_s[GP_STEP_TOOL], 0.5, 1e-9);
    assert_float_equal(w->time_s[GP_STEP_MODEL], 0.1, 1e-9);
    assert_float_equal(w->time_s[GP_STEP_QUEUE], 0.4, 1e-9);
    assert_float_equal(w->serial_saving_s, 0.2, 1e-9); /* 0.3 + 0.2 - 0.3 */
    assert_float_equal(w->gpu_s, 0.05, 1e-9);          /* 0.1 s x 50% busy, one call */
    assert_float_equal(e.idle_gpu_s[GP_WF_WAIT_TOOLS], 0.5, 1e-9);
    int tool_bound = 0, serial = 0;
    for (size_t i = 0; i < r.n_findings; i++) {
        if (r.findings[i].cls == GP_FC_TOOL_BOUND) {
            tool_bound = 1;
            assert_string_equal(r.findings[i].scope_id, "agent/execute_tool a");
        }
        serial |= r.findings[i].cls == GP_FC_SERIAL_STEPS;
    }
    assert_true(tool_bound && serial);
    json_t *o = gp_wf_json(&r, &e, 1);
    assert_non_null(o);
    json_decref(o);
    gp_wf_report_free(&r);
    gp_span_set_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pb),
                                       cmocka_unit_test(test_json_and_analysis)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
