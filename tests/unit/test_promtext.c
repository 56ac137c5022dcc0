/* test_promtext.c: the Prometheus text parser on real scrapes and on hand-made edge cases. */
#include "testutil.h"

#include "util/promtext.h"

typedef struct {
    int n, helps, types, with_ts;
    char names[64][128];
    double values[64];
    char lab[64][512]; /* "k=v;k=v" */
    long lines[64];
    int64_t ts[64];
    gp_prom_type type[64];
    double sum;
} collect;

static int on_sample(void *ctx, const gp_prom_sample *s) {
    collect *c = ctx;
    if (c->n < 64) {
        snprintf(c->names[c->n], sizeof c->names[0], "%s", s->name);
        c->values[c->n] = s->value;
        c->lines[c->n] = s->line;
        c->type[c->n] = s->type;
        c->ts[c->n] = s->has_ts ? s->ts_ms : -1;
        char *o = c->lab[c->n];
        o[0] = 0;
        for (size_t i = 0; i < s->nlabels; i++) {
            size_t l = strlen(o);
            snprintf(o + l, sizeof c->lab[0] - l, "%s%s=%s", i ? ";" : "", s->labels[i].name,
                     s->labels[i].value);
        }
    }
    if (s->has_ts) c->with_ts++;
    if (isfinite(s->value)) c->sum += s->value;
    c->n++;
    return 0;
}

static int on_meta(void *ctx, char kind, const char *name, const char *text, long line) {
    (void)name, (void)text, (void)line;
    collect *c = ctx;
    if (kind == 'H') c->helps++;
    if (kind == 'T') c->types++;
    return 0;
}

static char *slurp(const char *rel, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", gp_test_data_dir(), rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static int count_lines_starting(const char *b, const char *prefix) {
    int n = 0;
    size_t pl = strlen(prefix);
    for (const char *l = b; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, prefix, pl)) n++;
    return n;
}

/* Real dcgm-exporter scrape: SOURCES.md says 38 families and 38 samples; the last line
 * has no newline. */
static void test_dcgm_file(void **st) {
    (void)st;
    size_t len;
    char *b = slurp("prom/dcgm_exporter_t4.txt", &len);
    collect c = {0};
    char err[256];
    assert_int_equal(gp_prom_parse(b, len, on_sample, on_meta, &c, 0, err, sizeof err), 0);
    assert_int_equal(c.n, 38);
    assert_int_equal(c.types, count_lines_starting(b, "# TYPE "));
    assert_int_equal(c.helps, count_lines_starting(b, "# HELP "));
    assert_string_equal(c.names[0], "DCGM_FI_DEV_SM_CLOCK");
    assert_near(c.values[0], 300, 0);
    assert_true(strstr(c.lab[0], "UUID=GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e") != NULL);
    assert_true(strstr(c.lab[0], "modelName=Tesla T4") != NULL);
    assert_int_equal(c.type[0], GP_PROM_GAUGE);
    assert_int_equal(c.lines[0], 3);
    free(b);
}

/* Real vLLM scrape: 29 families, 120 samples (SOURCES.md); histograms type their
 * _bucket/_sum/_count children. */
static void test_vllm_file(void **st) {
    (void)st;
    size_t len;
    char *b = slurp("prom/vllm_v0.txt", &len);
    collect c = {0};
    char err[256];
    assert_int_equal(gp_prom_parse(b, len, on_sample, on_meta, &c, 0, err, sizeof err), 0);
    assert_int_equal(c.n, 120);
    assert_int_equal(c.types, 29);
    int hist = 0;
    for (int i = 0; i < 64 && i < c.n; i++)
        if (strstr(c.names[i], "_bucket")) {
            assert_int_equal(c.type[i], GP_PROM_HISTOGRAM);
            assert_true(strstr(c.lab[i], "le=") != NULL);
            hist++;
        }
    assert_true(hist > 0);
    free(b);
}

/* Feeding the file one byte at a time gives exactly the same samples. */
static void test_chunked_equals_whole(void **st) {
    (void)st;
    size_t len;
    char *b = slurp("prom/vllm_v0.txt", &len);
    collect a = {0}, c = {0};
    char err[256];
    assert_int_equal(gp_prom_parse(b, len, on_sample, on_meta, &a, 0, err, sizeof err), 0);
    gp_prom_parser *p = gp_prom_parser_new(on_sample, on_meta, &c, 0);
    for (size_t i = 0; i < len; i++)
        assert_int_equal(gp_prom_feed(p, b + i, 1), 0);
    assert_int_equal(gp_prom_finish(p), 0);
    assert_int_equal(gp_prom_samples(p), a.n);
    gp_prom_parser_free(p);
    assert_int_equal(c.n, a.n);
    assert_near(c.sum, a.sum, 1e-9 * fabs(a.sum));
    for (int i = 0; i < 64; i++) {
        assert_string_equal(c.names[i], a.names[i]);
        assert_string_equal(c.lab[i], a.lab[i]);
    }
    free(b);
}

static void test_escapes_specials_timestamps(void **st) {
    (void)st;
    const char *t = "# HELP m A \\\\ help\\nline\r\n"
                    "# TYPE m counter\n"
                    "m_total{path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",} 1.5e3 "
                    "1700000000123\r\n"
                    "  \n"
                    "# just a comment\n"
                    "n NaN\n"
                    "o{} +Inf -5\n"
                    "p\t-Inf\n"
                    "q{a=\"}{,=\"} 0x1p3\n"; /* hex floats are not Prometheus numbers */
    collect c = {0};
    char err[256];
    int rc = gp_prom_parse(t, strlen(t), on_sample, on_meta, &c, GP_PROM_SKIP_BAD, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_int_equal(c.n, 4);
    assert_string_equal(c.names[0], "m_total");
    assert_int_equal(c.type[0], GP_PROM_COUNTER);
    assert_string_equal(c.lab[0], "path=C:\\dir;q=say \"hi\";nl=a\nb");
    assert_near(c.values[0], 1500, 0);
    assert_int_equal(c.ts[0], 1700000000123LL);
    assert_true(isnan(c.values[1]));
    assert_int_equal(c.ts[1], -1);
    assert_true(isinf(c.values[2]) && c.values[2] > 0);
    assert_int_equal(c.ts[2], -5);
    assert_true(isinf(c.values[3]) && c.values[3] < 0);
    assert_string_equal(err, "line 9: value is not a number");
}

static void expect_error(const char *text, const char *msg) {
    collect c = {0};
    char err[256];
    int rc = gp_prom_parse(text, strlen(text), on_sample, NULL, &c, 0, err, sizeof err);
    if (rc >= 0) fail_msg("accepted: %s", text);
    if (strcmp(err, msg) != 0) fail_msg("for %s: got '%s', want '%s'", text, err, msg);
}

static void test_malformed_lines(void **st) {
    (void)st;
    expect_error("ok 1\n9bad 1\n", "line 2: metric name must start with a letter, '_' or ':'");
    expect_error("m{a=b} 1", "line 1: label value not quoted");
    expect_error("m{a=\"b} 1", "line 1: label value not closed with '\"'");
    expect_error("m{a=\"b\" c=\"d\"} 1", "line 1: expected ',' or '}' after a label");
    expect_error("m 1 2 3", "line 1: timestamp is not an integer (milliseconds)");
    expect_error("m", "line 1: missing value");
    expect_error("m{a=\"b\"}1", "line 1: expected a space before the value");
    expect_error("m 12abc", "line 1: value is not a number");
    expect_error("# TYPE m bogus\n",
                 "line 1: # TYPE is not counter, gauge, histogram, summary or untyped");
    expect_error("m-x 1", "line 1: bad character in metric name");
}

static int stop_after_two(void *ctx, const gp_prom_sample *s) {
    (void)s;
    return ++*(int *)ctx == 2 ? 7 : 0;
}

static void test_callback_stops(void **st) {
    (void)st;
    int n = 0;
    char err[8];
    assert_int_equal(
        gp_prom_parse("a 1\nb 2\nc 3\n", 12, stop_after_two, NULL, &n, 0, err, sizeof err), 7);
    assert_int_equal(n, 2);
}

/* The fast number path must agree bit for bit with strtod. */
static void test_numbers_match_strtod(void **st) {
    (void)st;
    static const char *fixed[] = {"0",
                                  "-0",
                                  "1",
                                  "0.1",
                                  "8.969000",
                                  "128996013",
                                  "1e-3",
                                  "2.5E+10",
                                  "0.000003",
                                  "123456789012345",
                                  "1234567890123456789",
                                  ".5",
                                  "5.",
                                  "9223372036854775794",
                                  "140737488355328",
                                  "1e22",
                                  "1e23",
                                  "4.9406564584124654e-324",
                                  "1.7976931348623157e308"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        double a, b = strtod(fixed[i], NULL);
        assert_int_equal(gp_prom_parse_double(fixed[i], strlen(fixed[i]), &a), 0);
        if (memcmp(&a, &b, sizeof a)) fail_msg("%s: %.17g vs strtod %.17g", fixed[i], a, b);
    }
    srand(7);
    char buf[64];
    for (int k = 0; k < 200000; k++) {
        int ip = rand() % 8, fp = rand() % 10, ex = rand() % 4 == 0;
        int n = 0;
        if (rand() % 4 == 0) buf[n++] = '-';
        for (int i = 0; i < ip; i++)
            buf[n++] = (char)('0' + rand() % 10);
        if (fp) {
            buf[n++] = '.';
            for (int i = 0; i < fp; i++)
                buf[n++] = (char)('0' + rand() % 10);
        }
        if (!ip && !fp) buf[n++] = '7';
        if (ex) n += snprintf(buf + n, sizeof buf - (size_t)n, "e%d", rand() % 50 - 25);
        buf[n] = 0;
        double a, b = strtod(buf, NULL);
        assert_int_equal(gp_prom_parse_double(buf, (size_t)n, &a), 0);
        if (memcmp(&a, &b, sizeof a)) fail_msg("%s: %.17g vs strtod %.17g", buf, a, b);
    }
    double x;
    assert_int_equal(gp_prom_parse_double("1e", 2, &x), -1);
    assert_int_equal(gp_prom_parse_double("0x10", 4, &x), -1);
    assert_int_equal(gp_prom_parse_double("1.2.3", 5, &x), -1);
}

/* Hostile input: random byte mutations of a real scrape never crash the parser (run under
 * ASan in `make check`), and a strict parse either succeeds or names a line. */
static int nop(void *ctx, const gp_prom_sample *s) {
    (void)ctx, (void)s;
    return 0;
}

static void test_mutations_do_not_crash(void **st) {
    (void)st;
    size_t len;
    char *b = slurp("prom/dcgm_exporter_t4.txt", &len);
    char *m = malloc(len);
    static const char bytes[] = "{}\",= \n\\#\0xe+-.9aZ";
    srand(11);
    for (int k = 0; k < 3000; k++) {
        memcpy(m, b, len);
        for (int j = 0; j < 1 + rand() % 8; j++)
            m[rand() % len] = bytes[rand() % (sizeof bytes - 1)];
        size_t cut = (size_t)rand() % (len + 1);
        char err[256];
        int rc = gp_prom_parse(m, cut, nop, NULL, NULL, 0, err, sizeof err);
        if (rc < 0) assert_true(!strncmp(err, "line ", 5));
        gp_prom_parse(m, cut, nop, NULL, NULL, GP_PROM_SKIP_BAD, err, sizeof err);
    }
    free(m);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dcgm_file),
        cmocka_unit_test(test_vllm_file),
        cmocka_unit_test(test_chunked_equals_whole),
        cmocka_unit_test(test_escapes_specials_timestamps),
        cmocka_unit_test(test_malformed_lines),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_numbers_match_strtod),
        cmocka_unit_test(test_mutations_do_not_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
