/* test_otlp.c: OTLP decoders (protobuf by hand from the .proto field numbers, JSON, gzip)
 * and the workflow analysis (partition, serial steps, tool_bound, GPU join by token share). */
#include "testutil.h"

#include <unistd.h>
#include <zlib.h>

#include "otlp/otlp.h"
#include "otlp/workflows.h"
#include "store/schema.h"
#include "store/spans.h"
#include "otlp_json_ref.h"
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

/* Spans no well-behaved tracer sends, decoded as the user's file is: a child that lasts no
 * time at its parent's end, and two spans that share one id and name it as their parent.
 * The critical path names each span once, leaves only (it used to repeat the instant child
 * 64 times, and shared ids made the walk grow as 64^depth: fuzz_otlp timed out on such a
 * trace). */
static void test_critical_path_degenerate(void **st) {
    (void)st;
#define SPAN(id, parent, name, t0, t1)                                                             \
    "{\"traceId\": \"0102030405060708090a0b0c0d0e0f10\", \"spanId\": \"" id "\", "                 \
    "\"parentSpanId\": \"" parent "\", \"name\": \"" name "\", \"startTimeUnixNano\": \"" t0       \
    "\", \"endTimeUnixNano\": \"" t1 "\"}"
    const char *doc =
        "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": ["
        "{\"traceId\": \"0102030405060708090a0b0c0d0e0f10\", \"spanId\": \"0101010101010101\", "
        "\"name\": \"root\", \"startTimeUnixNano\": \"1700000000000000000\", "
        "\"endTimeUnixNano\": \"1700000001000000000\"}, " SPAN(
            "0202020202020202", "0101010101010101", "instant", "1700000001000000000",
            "1700000001000000000") ", " SPAN("0303030303030303", "0101010101010101", "loop",
                                             "1700000000000000000",
                                             "1700000000900000000") ", " SPAN("040404040404040"
                                                                              "4",
                                                                              "030303030303030"
                                                                              "3",
                                                                              "twin a",
                                                                              "1700000000100000"
                                                                              "000",
                                                                              "1700000000800000"
                                                                              "000") ", " SPAN("040"
                                                                                               "404"
                                                                                               "040"
                                                                                               "404"
                                                                                               "040"
                                                                                               "4",
                                                                                               "040"
                                                                                               "404"
                                                                                               "040"
                                                                                               "404"
                                                                                               "040"
                                                                                               "4",
                                                                                               "twi"
                                                                                               "n "
                                                                                               "b",
                                                                                               "170"
                                                                                               "000"
                                                                                               "000"
                                                                                               "020"
                                                                                               "000"
                                                                                               "000"
                                                                                               "0",
                                                                                               "170"
                                                                                               "000"
                                                                                               "000"
                                                                                               "070"
                                                                                               "000"
                                                                                               "000"
                                                                                               "0") "]}]}]}";
#undef SPAN
    gp_span_set s = {0};
    char err[300] = "";
    assert_int_equal(gp_otlp_decode_json(doc, strlen(doc), &s, err, sizeof err), 0);
    assert_int_equal(s.n, 5);
    gp_wf_report r;
    assert_int_equal(gp_wf_analyze(s.v, s.n, NULL, 0, -1, &r), 0);
    assert_int_equal(r.n_wf, 1);
    assert_true(r.n_kinds >= 1);
    /* root's children latest first: instant (ends at 1.0 s), then loop (0.9 s), which holds
     * twin a, which holds twin b (its parent id is its own, and twin a's): the leaves */
    assert_string_equal(r.kinds[0].critical_path, "twin b 0.500s -> instant 0.000s");
    gp_wf_report_free(&r);
    gp_span_set_free(&s);
}

/* Both decoders on one document: same verdict, same spans field by field. */
static void same_as_ref(const char *doc, size_t len) {
    gp_span_set a = {0}, b = {0};
    char ea[300] = "", eb[300] = "";
    int ra = gp_otlp_decode_json(doc, len, &a, ea, sizeof ea);
    int rb = ref_decode_json(doc, len, &b, eb, sizeof eb);
    if ((ra == 0) != (rb == 0)) fail_msg("verdicts differ (%s | %s) on %.300s", ea, eb, doc);
    if (ra != 0) {
        assert_int_equal(a.n, 0);
        assert_non_null(strstr(ea, "byte"));
    } else {
        assert_int_equal(a.n, b.n);
        assert_int_equal(a.dropped, b.dropped);
        assert_string_equal(ea, eb);
        for (size_t i = 0; i < a.n; i++) {
            const gp_span *x = &a.v[i], *y = &b.v[i];
            assert_string_equal(x->trace_id, y->trace_id);
            assert_string_equal(x->span_id, y->span_id);
            assert_string_equal(x->parent_id, y->parent_id);
            assert_string_equal(x->name, y->name);
            assert_string_equal(x->operation, y->operation);
            assert_string_equal(x->model, y->model);
            assert_string_equal(x->service, y->service);
            assert_string_equal(x->host, y->host);
            assert_int_equal(x->kind, y->kind);
            assert_int_equal(x->step, y->step);
            assert_int_equal(x->status, y->status);
            assert_int_equal(x->start_ns, y->start_ns);
            assert_int_equal(x->end_ns, y->end_ns);
            assert_int_equal(x->in_tokens, y->in_tokens);
            assert_int_equal(x->out_tokens, y->out_tokens);
        }
    }
    gp_span_set_free(&a);
    gp_span_set_free(&b);
}

/* A document with OTLP's variations chosen by r: field order, resource after its spans,
 * ids in upper case or wrong, integers as numbers or strings, doubles, statuses, values
 * that are not what they should be, fields goodput does not read (nested), escapes. */
static unsigned rnd(unsigned *r, unsigned n) {
    *r = *r * 1103515245u + 12345u;
    return (*r >> 16) % n;
}

static size_t gen_doc(char *d, size_t cap, unsigned r) {
#define R(n) rnd(&r, n)
#define P(...) o += (size_t)snprintf(d + o, cap - o, __VA_ARGS__)
    size_t o = 0;
    P("{\"resourceSpans\":[");
    unsigned nrs = 1 + R(3);
    for (unsigned i = 0; i < nrs; i++) {
        char res[400];
        snprintf(
            res, sizeof res,
            "\"resource\":{\"droppedAttributesCount\":0,\"attributes\":[{\"key\":\"service.name\","
            "\"value\":{\"stringValue\":\"svc%u\"}},{\"value\":{\"stringValue\":\"h\\u0031%u\"},"
            "\"key\":\"host.name\"},{\"key\":\"x\",\"value\":{\"arrayValue\":{\"values\":[1]}}}]}",
            i, R(9));
        int after = R(2);
        P("%s{%s%s\"%s\":[{\"scope\":{\"name\":\"s\",\"attributes\":[]},\"spans\":[", i ? "," : "",
          after ? "" : res, after ? "" : ",", R(5) ? "scopeSpans" : "instrumentationLibrarySpans");
        unsigned ns = R(6);
        for (unsigned k = 0; k < ns; k++) {
            if (k) P(",");
            if (R(15) == 0) {
                P("%s", R(2) ? "3" : "[1,{\"a\":2}]"); /* not a span */
                continue;
            }
            P("{");
            if (R(3) == 0) P("\"events\":[{\"name\":\"e\",\"attributes\":[{\"key\":\"k\"}]}],");
            const char *tid[] = {"0102030405060708090A0B0C0D0E0F10",
                                 "0102030405060708090a0b0c0d0e0f1%u", "zz%u",
                                 "00000000000000000000000000000000"};
            unsigned t = R(8);
            P("\"traceId\":\"");
            P(t < 4 ? tid[t] : tid[1], R(10));
            P("\",\"spanId\":\"%016x\",", 1 + R(1000));
            if (R(2)) P("\"parentSpanId\":\"%s\",", R(4) ? "0101010101010101" : "");
            P("\"name\":\"%s\\t%u\\u00e9\",", R(2) ? "chat m" : "execute_tool", R(100));
            if (R(2)) P("\"kind\":%u,", R(7));
            unsigned long long t0 = 1700000000000000000ull + R(1000) * 1000ull;
            if (R(2))
                P("\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":%llu", t0,
                  t0 + R(3) * 1000000ull);
            else
                P("\"endTimeUnixNano\":\"%llu\",\"startTimeUnixNano\":%s", t0 + 5000,
                  R(10) ? "\"1\"" : "null");
            if (R(2)) P(",\"status\":{\"message\":\"m\",\"code\":%u}", R(4));
            if (R(3)) {
                P(",\"attributes\":[");
                unsigned na = R(6);
                for (unsigned a = 0; a < na; a++) {
                    const char *keys[] = {
                        "gen_ai.operation.name",     "gen_ai.request.model",
                        "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                        "gen_ai.tool.name",          "db.system",
                        "gen_ai.response.model",     "gen_ai.usage.prompt_tokens"};
                    const char *vals[] = {"{\"stringValue\":\"chat\"}",
                                          "{\"stringValue\":\"execute_tool\"}",
                                          "{\"intValue\":\"%u\"}",
                                          "{\"intValue\":%u}",
                                          "{\"doubleValue\":%u.75}",
                                          "{\"stringValue\":\"%u\"}",
                                          "{\"boolValue\":true}",
                                          "{\"intValue\":{\"x\":%u},\"doubleValue\":2}",
                                          "{\"stringValue\":7,\"intValue\":\"%u\"}",
                                          "\"%u\""};
                    P("%s{\"key\":\"%s\",\"value\":", a ? "," : "", keys[R(8)]);
                    P(vals[R(10)], R(900));
                    P("}");
                }
                P("]");
            }
            P("}");
        }
        P("]}]%s%s}", after ? "," : "", after ? res : "");
    }
    P("]}");
    return o;
#undef R
#undef P
}

static void test_json_stream(void **st) {
    (void)st;
    size_t len;
    char *seed = slurp("tests/unit/otlp_seed.json", &len);
    same_as_ref(seed, len);
    static char doc[1 << 16];
    for (unsigned r = 1; r <= 400; r++) {
        size_t n = gen_doc(doc, sizeof doc, r);
        assert_true(n < sizeof doc);
        same_as_ref(doc, n);
    }
    /* a resource after its spans still names them */
    size_t n = gen_doc(doc, sizeof doc, 7);
    gp_span_set s = {0};
    char err[300] = "";
    assert_int_equal(gp_otlp_decode_json(doc, n, &s, err, sizeof err), 0);
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(strncmp(s.v[i].service, "svc", 3), 0);
    gp_span_set_free(&s);

    /* every cut of a good document is refused whole with a byte offset, keeping what the
     * set held before */
    gp_span_set keep = {0};
    assert_int_equal(gp_otlp_decode_json(seed, len, &keep, err, sizeof err), 0);
    size_t held = keep.n;
    uint64_t dropped = keep.dropped;
    for (size_t cut = 0; cut < len; cut++) {
        err[0] = 0;
        assert_int_not_equal(gp_otlp_decode_json(seed, cut, &keep, err, sizeof err), 0);
        assert_int_equal(keep.n, held);
        assert_int_equal(keep.dropped, dropped);
        assert_non_null(strstr(err, "OTLP JSON byte "));
    }
    gp_span_set_free(&keep);

    /* malformed or not OTLP: refused, and the offset is where the fault is */
    struct {
        const char *doc;
        size_t at;
    } bad[] = {
        {"{\"resourceSpans\":[{\"scopeSpans\":[x]}]}", 34},
        {"{\"resourceSpans\":3}", 18},
        {"[{\"resourceSpans\":[]}]", 1},
        {"{\"resourceSpans\":[],\"resourceSpans\":[]}", 35},
        {"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"a\",\"spanId\":\"b\"}]}]}]"
         "}",
         65},
        {"{\"resourceSpans\":[]} {}", 22},
        {"{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"kind\":99999999999999999999}]}]}]}",
         71},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_span_set t = {0};
        char want[40];
        snprintf(want, sizeof want, "OTLP JSON byte %zu:", bad[i].at);
        assert_int_not_equal(
            gp_otlp_decode_json(bad[i].doc, strlen(bad[i].doc), &t, err, sizeof err), 0);
        if (!strstr(err, want)) fail_msg("%s: got '%s', want '%s'", bad[i].doc, err, want);
        assert_int_equal(t.n, 0);
        gp_span_set_free(&t);
    }
    assert_int_not_equal(gp_otlp_decode_json("{}", 2, &s, err, sizeof err), 0);
    assert_non_null(strstr(err, "resourceSpans"));
}

/* The span store: a span sent twice is stored once, and a store written before migration
 * 8 (spans as a WITHOUT ROWID table) keeps its spans and that rule after the upgrade. */
static void test_span_store(void **st) {
    (void)st;
    size_t len;
    char *doc = slurp("tests/unit/otlp_seed.json", &len);
    gp_span_set s = {0};
    char err[300] = "";
    assert_int_equal(gp_otlp_decode_json(doc, len, &s, err, sizeof err), 0);
    assert_int_equal(s.n, 4);
    char *dir = gp_test_tmpdir();
    char path[512];
    snprintf(path, sizeof path, "%s/old.db", dir);
    gp_store *db;
    assert_int_equal(gp_store_open(path, 0, &db, err, sizeof err), 0);
    /* make it a version-9 store (before the rowid spans): the old table, one span */
    assert_int_equal(sqlite3_exec(gp_store_db(db),
                                  "DROP TABLE spans;"
                                  "CREATE TABLE spans (trace_id TEXT NOT NULL, span_id TEXT NOT "
                                  "NULL, parent_id TEXT, name TEXT, kind INTEGER, step INTEGER,"
                                  " operation TEXT, model TEXT, in_tokens INTEGER, out_tokens "
                                  "INTEGER, start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
                                  " status INTEGER, service TEXT, host TEXT, PRIMARY KEY "
                                  "(trace_id, span_id)) WITHOUT ROWID;"
                                  "CREATE INDEX spans_end ON spans(end_ns); PRAGMA user_version=9;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(gp_store_begin(db), 0);
    assert_int_equal(gp_store_put_spans(db, s.v, 1), 1);
    assert_int_equal(gp_store_commit(db), 0);
    gp_store_close(db);
    assert_int_equal(gp_store_open(path, 0, &db, err, sizeof err), 0); /* migrates */
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(db), "PRAGMA user_version", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), gp_schema_latest());
    sqlite3_finalize(q);
    assert_int_equal(gp_store_begin(db), 0);
    assert_int_equal(gp_store_put_spans(db, s.v, s.n), 3); /* the first was kept */
    assert_int_equal(gp_store_put_spans(db, s.v, s.n), 0);
    assert_int_equal(gp_store_commit(db), 0);
    gp_span_set back = {0};
    assert_int_equal(gp_store_load_spans(db, 0, INT64_MAX, 0, &back), 0);
    assert_int_equal(back.n, 4);
    for (size_t i = 0; i < back.n; i++) {
        assert_string_equal(back.v[i].span_id, s.v[i].span_id); /* same trace, by start */
        assert_int_equal(back.v[i].start_ns, s.v[i].start_ns);
        assert_int_equal(back.v[i].in_tokens, s.v[i].in_tokens);
        assert_string_equal(back.v[i].service, s.v[i].service);
    }
    gp_span_set_free(&back);
    gp_store_close(db);
    static const char *const tails[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char f[600];
        snprintf(f, sizeof f, "%s%s", path, tails[i]);
        remove(f);
    }
    rmdir(dir);
    free(dir);
    gp_span_set_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pb), cmocka_unit_test(test_json_and_analysis),
        cmocka_unit_test(test_json_stream), cmocka_unit_test(test_span_store),
        cmocka_unit_test(test_critical_path_degenerate)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
