/* test_proto.c: the event line protocol (docs/protocol.md): every kind parses into the
 * fields the document names, bad lines are rejected with a reason naming the field, and
 * gp_proto_format round-trips through the parser. */
#include "testutil.h"

#include "ingest/protocol.h"

#define NOW 1764400000000000000LL
#define DAY_NS 86400000000000LL

static int parse(const char *line, gp_event *e, char *err) {
    return gp_proto_parse_line(line, strlen(line), NOW, 0, e, err, 200);
}

static void test_doc_example(void **st) {
    (void)st;
    gp_event e;
    char err[200];
    assert_int_equal(
        parse("hello job=train-7 v=1 pid=4242 unit=samples flops_per_unit=6.1e12", &e, err), 1);
    assert_int_equal(e.kind, GP_EV_HELLO);
    assert_string_equal(e.job_id, "train-7");
    assert_int_equal(e.pid, 4242);
    assert_string_equal(e.name, "samples");
    assert_true(e.flops_per_unit == 6.1e12);
    assert_int_equal(e.ts_ns, NOW); /* stamped on receipt */

    assert_int_equal(
        parse("phase job=train-7 name=data_wait edge=begin ts=1764400000000000000", &e, err), 1);
    assert_int_equal(e.kind, GP_EV_PHASE);
    assert_string_equal(e.name, "data_wait");
    assert_int_equal(e.edge, GP_PH_BEGIN);
    assert_int_equal(e.ts_ns, 1764400000000000000LL);

    assert_int_equal(
        parse("phase job=train-7 name=data_wait edge=end ts=1764400000120000000\r\n", &e, err), 1);
    assert_int_equal(e.edge, GP_PH_END);
    assert_int_equal(e.ts_ns, 1764400000120000000LL);

    assert_int_equal(
        parse("step job=train-7 step=17 units=256 dur=480000000 ts=1764400000600000000\n", &e, err),
        1);
    assert_int_equal(e.kind, GP_EV_STEP);
    assert_int_equal(e.step, 17);
    assert_true(e.units == 256);
    assert_int_equal(e.ts_ns, 1764400000600000000LL);
    assert_int_equal(e.step_start_ns, 1764400000600000000LL - 480000000LL);
}

static void test_all_kinds(void **st) {
    (void)st;
    gp_event e;
    char err[200];
    assert_int_equal(
        parse("request job=srv arrival=1764399999000000000 first_token=1764399999200000000 "
              "prompt=100 output=20 ok=0 rank=3",
              &e, err),
        1);
    assert_int_equal(e.kind, GP_EV_REQUEST);
    assert_int_equal(e.arrival_ns, 1764399999000000000LL);
    assert_int_equal(e.first_token_ns, 1764399999200000000LL);
    assert_int_equal(e.prompt_tokens, 100);
    assert_int_equal(e.output_tokens, 20);
    assert_int_equal(e.ok, 0);
    assert_int_equal(e.rank, 3);

    assert_int_equal(parse("stage job=p stage=decode item=9 enqueue=1764399999000000000 "
                           "start=1764399999500000000 worker=\"w \\\"1\\\"\" bytes=4096",
                           &e, err),
                     1);
    assert_int_equal(e.kind, GP_EV_STAGE);
    assert_string_equal(e.name, "decode");
    assert_int_equal(e.item, 9);
    assert_int_equal(e.enqueue_ns, 1764399999000000000LL);
    assert_int_equal(e.start_ns, 1764399999500000000LL);
    assert_string_equal(e.worker, "w \"1\"");
    assert_int_equal(e.bytes, 4096);

    assert_int_equal(parse("restart job=t step=1200", &e, err), 1);
    assert_int_equal(e.kind, GP_EV_RESTART);
    assert_int_equal(e.step, 1200);

    assert_int_equal(
        parse("job job=slurm-42 state=ended name=\"my run\" user=ana origin=slurm exit=-9", &e,
              err),
        1);
    assert_int_equal(e.kind, GP_EV_JOB);
    assert_string_equal(e.name, "ended");
    assert_string_equal(e.job_name, "my run");
    assert_string_equal(e.user, "ana");
    assert_string_equal(e.origin, "slurm");
    assert_int_equal(e.exit_code, -9);

    /* alloc times are checked like every other time (a far one would inflate the job) */
    char line[200];
    snprintf(line, sizeof line, "alloc job=j uuid=GPU-0a1b from=%lld to=%lld", NOW - DAY_NS,
             NOW - 1000);
    assert_int_equal(parse(line, &e, err), 1);
    assert_int_equal(e.kind, GP_EV_ALLOC);
    assert_string_equal(e.uuid, "GPU-0a1b");
    assert_int_equal(e.from_ns, NOW - DAY_NS);
    assert_int_equal(e.to_ns, NOW - 1000);
    assert_int_equal(parse("alloc job=j uuid=GPU-0a1b from=1000", &e, err), -1);
    /* seq= is the sender's sequence number on any kind */
    assert_int_equal(parse("step job=j step=1 seq=42", &e, err), 1);
    assert_int_equal(e.seq, 42);
    assert_int_equal(parse("step job=j step=1", &e, err), 1);
    assert_int_equal(e.seq, -1);
    assert_int_equal(parse("step job=j step=1 seq=-1", &e, err), -1);
    assert_true(e.to_ns < 0);

    /* step start given explicitly wins over dur; no dur and no start: unknown */
    assert_int_equal(parse("step job=t step=1 start=1764399999000000000 dur=5", &e, err), 1);
    assert_int_equal(e.step_start_ns, 1764399999000000000LL);
    assert_int_equal(parse("step job=t step=2", &e, err), 1);
    assert_true(e.step_start_ns < 0);
    assert_true(e.units < 0);
}

static void test_ignored_and_blank(void **st) {
    (void)st;
    gp_event e;
    char err[200];
    assert_int_equal(parse("", &e, err), 0);
    assert_int_equal(parse("   \t ", &e, err), 0);
    assert_int_equal(parse("# a comment", &e, err), 0);
    assert_int_equal(parse("\r\n", &e, err), 0);
    /* unknown keys are ignored (forward compatibility), tabs separate tokens */
    assert_int_equal(parse("step\tjob=t  step=3 future_key=x\tunits=1.5", &e, err), 1);
    assert_int_equal(e.step, 3);
    assert_true(e.units == 1.5);
    /* a key of another kind is unknown here, so ignored */
    assert_int_equal(parse("phase job=t name=eval edge=end units=zzz", &e, err), 1);
}

static void expect_reject(const char *line, const char *needle) {
    gp_event e;
    char err[200] = "";
    int rc = gp_proto_parse_line(line, strlen(line), NOW, 0, &e, err, sizeof err);
    if (rc != -1) fail_msg("accepted: %s", line);
    if (!strstr(err, needle)) fail_msg("reason '%s' lacks '%s' for: %s", err, needle, line);
}

static void test_rejects(void **st) {
    (void)st;
    expect_reject("stepp job=t step=1", "unknown kind 'stepp'");
    expect_reject("step step=1", "missing required field 'job'");
    expect_reject("step job=t", "missing required field 'step'");
    expect_reject("step job=t step=abc", "field 'step': 'abc' is not an integer");
    expect_reject("step job=t step=12x", "field 'step'");
    expect_reject("step job=t step=-1", "negative");
    expect_reject("step job=t step=1 units=NaN", "field 'units'");
    expect_reject("step job=t step=1 units=inf", "field 'units'");
    expect_reject("step job=t step=99999999999999999999999", "field 'step'");
    expect_reject("phase job=t name=x edge=middle", "field 'edge'");
    expect_reject("phase job=t edge=begin", "missing required field 'name'");
    expect_reject("request job=t ok=2", "field 'ok'");
    expect_reject("job job=t state=dancing", "field 'state'");
    expect_reject("alloc job=t uuid=G", "missing required field 'from'");
    expect_reject("step job=bad id step=1", "not key=value");
    expect_reject("step job=t$ step=1", "field 'job'");
    expect_reject("step job=\"\" step=1", "field 'job'");
    expect_reject("step job=t step=", "empty value");
    expect_reject("step job=t step=1 Units=3", "not key=value");
    expect_reject("phase job=t name=\"unterminated edge=begin", "unterminated");
    expect_reject("phase job=t name=\"a\\n\" edge=begin", "bad escape");
    expect_reject("phase job=t name=\"a\"b edge=begin", "after the closing quote");
    /* times far from the receiver's clock */
    char line[200];
    snprintf(line, sizeof line, "step job=t step=1 ts=%lld", NOW - 8 * DAY_NS);
    expect_reject(line, "8.0d behind the receiver's clock (at most 7.0d allowed");
    snprintf(line, sizeof line, "step job=t step=1 ts=%lld", NOW + 2 * DAY_NS);
    expect_reject(line, "2.0d ahead of the receiver's clock (at most 10.0min allowed");
    snprintf(line, sizeof line, "alloc job=t uuid=G from=%lld", NOW + 400 * DAY_NS);
    expect_reject(line, "field 'from': time");
    snprintf(line, sizeof line, "alloc job=t uuid=G from=%lld to=%lld", NOW - DAY_NS, NOW + DAY_NS);
    expect_reject(line, "field 'to': time");
    snprintf(line, sizeof line, "step job=t step=1 dur=%lld", 9 * DAY_NS);
    expect_reject(line, "field 'start': time"); /* start = ts - dur, checked too */
    snprintf(line, sizeof line, "request job=t arrival=%lld", NOW - 30 * DAY_NS);
    expect_reject(line, "field 'arrival'");
    /* names that do not fit are rejected, not truncated */
    char longname[120];
    memset(longname, 'a', sizeof longname);
    longname[100] = 0;
    snprintf(line, sizeof line, "phase job=t name=%s edge=begin", longname);
    expect_reject(line, "longer than 63");
}

static void test_accept_old(void **st) {
    (void)st;
    gp_event e;
    char err[200], line[200];
    snprintf(line, sizeof line, "step job=t step=1 ts=%lld", NOW - 300 * DAY_NS);
    assert_int_equal(gp_proto_parse_line(line, strlen(line), NOW, 1, &e, err, sizeof err), 1);
    assert_int_equal(e.ts_ns, NOW - 300 * DAY_NS);
    /* the future bound still holds */
    snprintf(line, sizeof line, "step job=t step=1 ts=%lld", NOW + 3 * DAY_NS);
    assert_int_equal(gp_proto_parse_line(line, strlen(line), NOW, 1, &e, err, sizeof err), -1);
}

/* The _ex parser applies the caller's bounds and says why it rejected a line. */
static void test_bounds_and_reasons(void **st) {
    (void)st;
    gp_event e;
    gp_reject_reason why;
    char err[300], line[200];
    gp_time_bounds b = {60LL * 1000000000LL, 3600LL * 1000000000LL}; /* 1 min, 1 h */
    snprintf(line, sizeof line, "step job=t step=1 ts=%lld", NOW + 59LL * 1000000000LL);
    assert_int_equal(gp_proto_parse_line_ex(line, strlen(line), NOW, &b, &e, &why, err, 300), 1);
    snprintf(line, sizeof line, "step job=t step=1 ts=%lld", NOW + 61LL * 1000000000LL);
    assert_int_equal(gp_proto_parse_line_ex(line, strlen(line), NOW, &b, &e, &why, err, 300), -1);
    assert_int_equal(why, GP_REJ_TIME_AHEAD);
    assert_string_equal(gp_reject_reason_name(why), "time_ahead");
    snprintf(line, sizeof line, "request job=t arrival=%lld", NOW - 2 * 3600LL * 1000000000LL);
    assert_int_equal(gp_proto_parse_line_ex(line, strlen(line), NOW, &b, &e, &why, err, 300), -1);
    assert_int_equal(why, GP_REJ_TIME_BEHIND);
    assert_non_null(strstr(err, "field 'arrival'"));
    assert_non_null(strstr(err, "--accept-old"));
    assert_int_equal(gp_proto_parse_line_ex("step job=t", 10, NOW, &b, &e, &why, err, 300), -1);
    assert_int_equal(why, GP_REJ_MALFORMED);
    /* no lower bound: any past time; the upper bound still holds */
    b.behind_ns = -1;
    assert_int_equal(gp_proto_parse_line_ex(line, strlen(line), NOW, &b, &e, &why, err, 300), 1);
    /* the clock of a simulated source is "now": its old times are recent to it */
    int64_t sim_now = 1000LL * 1000000000LL;
    b.behind_ns = 3600LL * 1000000000LL;
    snprintf(line, sizeof line, "alloc job=t uuid=G from=%lld", sim_now - 1000000000LL);
    assert_int_equal(gp_proto_parse_line_ex(line, strlen(line), sim_now, &b, &e, &why, err, 300),
                     1);
}

/* The event key: the same event twice has one key; any field changed, another. */
static void test_event_key(void **st) {
    (void)st;
    gp_event a, b;
    char err[200];
    assert_int_equal(parse("request job=s arrival=1764399999000000000 prompt=5 output=7 "
                           "ts=1764400000000000000",
                           &a, err),
                     1);
    assert_int_equal(parse("request job=s  arrival=1764399999000000000 output=7 prompt=5 "
                           "ts=1764400000000000000",
                           &b, err),
                     1);
    assert_true(gp_event_key(&a) == gp_event_key(&b)); /* key order, spacing: same event */
    b.output_tokens = 8;
    assert_true(gp_event_key(&a) != gp_event_key(&b));
    b = a;
    b.ts_ns++;
    assert_true(gp_event_key(&a) != gp_event_key(&b));
    b = a;
    strcpy(b.job_id, "t");
    assert_true(gp_event_key(&a) != gp_event_key(&b));
    /* with seq, identity is (job, rank, seq, ts): two sends of one sequence number match
     * whatever else differs, two sequence numbers never do */
    a.seq = 1;
    b = a;
    b.prompt_tokens = 99;
    assert_true(gp_event_key(&a) == gp_event_key(&b));
    b.seq = 2;
    assert_true(gp_event_key(&a) != gp_event_key(&b));
}

static void test_oversize_and_utf8(void **st) {
    (void)st;
    gp_event e;
    char err[200];
    size_t n = GP_PROTO_MAX_LINE + 10;
    char *big = malloc(n + 1);
    memcpy(big, "phase job=t edge=begin name=", 28);
    memset(big + 28, 'x', n - 28);
    big[n] = 0;
    assert_int_equal(gp_proto_parse_line(big, n, NOW, 0, &e, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than the 4096"));
    free(big);

    /* valid multi-byte UTF-8 in a quoted name is accepted */
    const char *ok = "hello job=t user=\"Jos\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80\"";
    assert_int_equal(gp_proto_parse_line(ok, strlen(ok), NOW, 0, &e, err, sizeof err), 1);
    assert_string_equal(e.user, "Jos\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x98\x80");

    const char *bad[] = {
        "hello job=t user=\xff",             /* not a lead byte */
        "hello job=t user=\xc0\xaf",         /* overlong '/' */
        "hello job=t user=\xed\xa0\x80",     /* surrogate */
        "hello job=t user=\xf4\x90\x80\x80", /* above U+10FFFF */
        "hello job=t user=\xe6\x97",         /* truncated at end of line */
        "hello job=t user=\xe6\x97x",        /* bad continuation */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gp_proto_parse_line(bad[i], strlen(bad[i]), NOW, 0, &e, err, sizeof err),
                         -1);
        assert_non_null(strstr(err, "invalid UTF-8 at byte 17"));
    }
    /* an embedded NUL is rejected rather than silently cutting the line */
    const char nul[] = "step job=t step=1\0 junk";
    assert_int_equal(gp_proto_parse_line(nul, sizeof nul - 1, NOW, 0, &e, err, sizeof err), -1);
}

static void roundtrip(const gp_event *in) {
    char buf[GP_PROTO_MAX_LINE + 1], err[200];
    int n = gp_proto_format(in, buf, sizeof buf);
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(buf));
    gp_event out;
    if (gp_proto_parse_line(buf, (size_t)n, NOW, 0, &out, err, sizeof err) != 1)
        fail_msg("formatted line does not parse: %s (%s)", buf, err);
    assert_memory_equal(in, &out, sizeof out);
}

static void test_format_roundtrip(void **st) {
    (void)st;
    gp_event e;
    gp_event_init(&e, GP_EV_HELLO);
    strcpy(e.job_id, "train-7");
    e.ts_ns = NOW;
    e.pid = 77;
    strcpy(e.host, "node-1");
    strcpy(e.name, "tokens");
    e.flops_per_unit = 6.1e12;
    e.bytes_per_unit = 0.1;
    strcpy(e.job_name, "llama \"7b\" \\ pretrain");
    strcpy(e.user, "ana");
    roundtrip(&e);

    gp_event_init(&e, GP_EV_STEP);
    strcpy(e.job_id, "a/b:c@d.e_f-g");
    e.ts_ns = NOW;
    e.step = 5;
    e.units = 1.0 / 3.0;
    e.step_start_ns = NOW - 1000;
    e.rank = 2;
    roundtrip(&e);

    gp_event_init(&e, GP_EV_PHASE);
    strcpy(e.job_id, "t");
    e.ts_ns = NOW;
    strcpy(e.name, "checkpoint_save");
    e.edge = GP_PH_END;
    roundtrip(&e);

    gp_event_init(&e, GP_EV_REQUEST);
    strcpy(e.job_id, "srv");
    e.ts_ns = NOW;
    e.arrival_ns = NOW - 900;
    e.first_token_ns = NOW - 500;
    e.prompt_tokens = 12;
    e.output_tokens = 0;
    e.ok = 0;
    roundtrip(&e);

    gp_event_init(&e, GP_EV_STAGE);
    strcpy(e.job_id, "pipe");
    e.ts_ns = NOW;
    strcpy(e.name, "tokenize");
    e.item = 0;
    e.enqueue_ns = NOW - 10;
    e.start_ns = NOW - 5;
    strcpy(e.worker, "w1");
    e.bytes = 0;
    roundtrip(&e);

    gp_event_init(&e, GP_EV_RESTART);
    strcpy(e.job_id, "t");
    e.ts_ns = NOW;
    e.step = 0;
    roundtrip(&e);

    gp_event_init(&e, GP_EV_JOB);
    strcpy(e.job_id, "slurm-1");
    e.ts_ns = NOW;
    strcpy(e.name, "submitted");
    strcpy(e.origin, "slurm");
    e.exit_code = 0;
    roundtrip(&e);

    gp_event_init(&e, GP_EV_ALLOC);
    strcpy(e.job_id, "slurm-1");
    e.ts_ns = NOW;
    strcpy(e.uuid, "GPU-5f0c2f3e-aaaa-bbbb-cccc-000000000001");
    e.from_ns = NOW - DAY_NS;
    e.seq = 9;
    roundtrip(&e);

    /* too small a buffer: -1, never a cut line */
    char small[10];
    assert_int_equal(gp_proto_format(&e, small, sizeof small), -1);
    /* control characters cannot be written */
    gp_event_init(&e, GP_EV_PHASE);
    strcpy(e.job_id, "t");
    strcpy(e.name, "a\nb");
    e.edge = GP_PH_BEGIN;
    char buf[256];
    assert_int_equal(gp_proto_format(&e, buf, sizeof buf), -1);
}

/* Random bytes and random mutations of good lines never crash and never accept a line that
 * re-formats to something the parser rejects. */
static void test_mutations(void **st) {
    (void)st;
    const char *seeds[] = {
        "step job=train-7 step=17 units=256 dur=480000000 ts=1764400000600000000",
        ("request job=srv arrival=1764399999000000000 first_token=1764399999200000000 prompt=1 "
         "output=2 ok=1"),
        "stage job=p stage=\"a b\" item=9 worker=w bytes=1",
    };
    unsigned s = 12345;
    char line[512], buf[GP_PROTO_MAX_LINE + 1], err[200];
    int accepted = 0;
    for (int it = 0; it < 20000; it++) {
        const char *seed = seeds[it % 3];
        size_t n = strlen(seed);
        memcpy(line, seed, n + 1);
        int muts = 1 + (it % 4);
        for (int m = 0; m < muts; m++) {
            s = s * 1103515245u + 12345u;
            size_t at = (s >> 8) % n;
            s = s * 1103515245u + 12345u;
            line[at] = (char)(s >> 16);
        }
        gp_event e;
        int rc = gp_proto_parse_line(line, n, NOW, 0, &e, err, sizeof err);
        assert_true(rc >= -1 && rc <= 1);
        if (rc == 1) {
            accepted++;
            int k = gp_proto_format(&e, buf, sizeof buf);
            if (k > 0) {
                gp_event e2;
                if (gp_proto_parse_line(buf, (size_t)k, NOW, 0, &e2, err, sizeof err) != 1)
                    fail_msg("reformatted line rejected: %s (%s)", buf, err);
            }
        } else if (rc == -1) {
            assert_true(strlen(err) > 0);
        }
    }
    assert_true(accepted > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doc_example),       cmocka_unit_test(test_all_kinds),
        cmocka_unit_test(test_ignored_and_blank), cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_accept_old),        cmocka_unit_test(test_bounds_and_reasons),
        cmocka_unit_test(test_event_key),         cmocka_unit_test(test_oversize_and_utf8),
        cmocka_unit_test(test_format_roundtrip),  cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
