/* test_trace_scan.c: the hand-written Kineto scanner (src/traces/kineto_scan.c) against the
 * yajl reference reader (gp_kineto_read_yajl) and strtod. Every real trace in
 * shared/data/kineto and a generated document full of awkward JSON (escapes, UTF-8, nested
 * args, number forms, 19+ digit decimals) must give the same rows, bit for bit, whatever
 * the read size (down to one byte, so every token crosses a buffer boundary); malformed
 * documents must fail in both readers, with the offending byte's offset. Kineto's own key
 * and separator spellings take a shortcut in the scanner (quick_key): documents mixing
 * them with near misses and other spellings must read the same, and every truncation of one
 * must fail at its end. */
#include "testutil.h"

#include <dirent.h>
#include <math.h>
#include <zlib.h>

#include "traces/kineto_int.h"
#include "traces/trace.h"

static void same_rows(const gp_trow_vec *a, const gp_trow_vec *b, const gp_trace_rank *ra,
                      const gp_trace_rank *rb, const char *what) {
    if (a->n != b->n) fail_msg("%s: %zu rows vs %zu", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const gp_trow *x = &a->v[i], *y = &b->v[i];
        /* bit-identical doubles: memcmp, so -0.0 vs 0.0 would show too */
        if (memcmp(&x->ts, &y->ts, sizeof x->ts) || memcmp(&x->dur, &y->dur, sizeof x->dur) ||
            x->corr != y->corr || x->idx != y->idx || x->stream != y->stream ||
            x->flags != y->flags || strcmp(ra->names[x->name], rb->names[y->name]))
            fail_msg("%s row %zu: ts %.17g/%.17g dur %.17g/%.17g corr %lld/%lld stream %d/%d "
                     "name '%s'/'%s'",
                     what, i, x->ts, y->ts, x->dur, y->dur, (long long)x->corr, (long long)y->corr,
                     x->stream, y->stream, ra->names[x->name], rb->names[y->name]);
    }
}

/* Reads path with both readers (the scanner with the given chunk size) and compares. */
static void compare_readers(const char *path, size_t chunk) {
    gp_trace_rank a, b;
    char ea[1024], eb[1024];
    int ra = gp_kineto_read_chunked(path, &a, NULL, NULL, chunk, ea, sizeof ea);
    int rb = gp_kineto_read_yajl(path, &b, NULL, NULL, eb, sizeof eb);
    if (ra != 0 || rb != 0)
        fail_msg("%s: scanner '%s' / yajl '%s'", path, ra ? ea : "ok", rb ? eb : "ok");
    assert_int_equal(a.rank, b.rank);
    assert_int_equal(a.ts_float, b.ts_float);
    assert_int_equal(a.n_cpu_side, b.n_cpu_side);
    assert_int_equal(a.bytes, b.bytes);
    assert_int_equal(a.warn.events, b.warn.events);
    assert_int_equal(a.warn.bad_duration, b.warn.bad_duration);
    assert_int_equal(a.warn.missing_fields, b.warn.missing_fields);
    assert_int_equal(a.warn.unknown_category, b.warn.unknown_category);
    assert_int_equal(a.n_names, b.n_names);
    same_rows(&a.gpu, &b.gpu, &a, &b, path);
    same_rows(&a.cpu, &b.cpu, &a, &b, path);
    gp_trace_rank_free(&a);
    gp_trace_rank_free(&b);
}

static void test_real_traces_identical(void **st) {
    (void)st;
    char dir[2048];
    snprintf(dir, sizeof dir, "%s/kineto", gp_test_data_dir());
    DIR *d = opendir(dir);
    if (!d) skip();
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        DIR *s = opendir(sub);
        if (!s) continue;
        struct dirent *f;
        while ((f = readdir(s)))
            if (strstr(f->d_name, ".json")) {
                char p[8192];
                snprintf(p, sizeof p, "%s/%s", sub, f->d_name);
                compare_readers(p, 0);
                files++;
            }
        closedir(s);
    }
    closedir(d);
    assert_true(files >= 6);
}

/* A random decimal text of the forms traces use and some they rarely do. */
static void random_number(unsigned *seed, char *o, size_t cap) {
    int form = rand_r(seed) % 8;
    char digits[40];
    int nd = 1 + rand_r(seed) % (form == 7 ? 25 : 19);
    for (int i = 0; i < nd; i++)
        digits[i] = (char)('0' + rand_r(seed) % 10);
    if (digits[0] == '0' && nd > 1) digits[0] = '1';
    digits[nd] = 0;
    switch (form) {
    case 0: /* ns-resolution µs timestamp: 16 digits . 3 digits */
        snprintf(o, cap, "17%014d.%03d", rand_r(seed) % 100000000, rand_r(seed) % 1000);
        break;
    case 1:
        snprintf(o, cap, "%s", digits);
        break;
    case 2:
        snprintf(o, cap, "-%s", digits);
        break;
    case 3: { /* a dot somewhere inside */
        int at = nd > 1 ? 1 + rand_r(seed) % (nd - 1) : 1;
        snprintf(o, cap, "%.*s.%s%s", at, digits, nd > 1 ? digits + at : "", nd > 1 ? "" : "5");
        break;
    }
    case 4:
        snprintf(o, cap, "0.%s", digits);
        break;
    case 5:
        snprintf(o, cap, "%se%d", digits, rand_r(seed) % 40 - 20);
        break;
    case 6:
        snprintf(o, cap, "%d.%dE+%d", rand_r(seed) % 1000, rand_r(seed) % 1000, rand_r(seed) % 5);
        break;
    default:
        snprintf(o, cap, "%s.%s", digits, digits);
        break; /* long: strtod path */
    }
}

static const char *const odd_names[] = {
    "plain",
    "with \\\"quotes\\\" and \\\\ backslash",
    "tab\\there\\nnewline",
    "caf\\u00e9",
    "emoji \\ud83d\\ude00 pair",
    "n\\u0000ul",
    "utf8 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
    "slash \\/ \\b\\f\\r",
    "ProfilerStep#3",
    "cudaLaunchKernel",
    "Event Sync",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"};
static const char *const cats[] = {"kernel",          "cuda_runtime", "gpu_memcpy", "Kernel",
                                   "user_annotation", "ac2g",         "weird_cat",  "Trace",
                                   "cpu_op",          "gpu_memset",   "Runtime",    "Memcpy"};

static char *write_awkward(const char *dir, unsigned seed, int events) {
    char *p = malloc(2048);
    snprintf(p, 2048, "%s/awkward-%u.json", dir, seed);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f,
            " {\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"x\":[1,2,{\"a\":null}]}],"
            "\n\t\"distributedInfo\" : {\"backend\":\"nccl\",\"rank\":%d},\r\n"
            "\"traceEvents\":[\n",
            (int)(seed % 7));
    char num[64], num2[64];
    for (int i = 0; i < events; i++) {
        const char *sp = rand_r(&seed) % 4 ? "" : " \n ";
        fprintf(f, "%s{%s\"ph\":\"X\",%s\"cat\":\"%s\",\"name\":\"%s\"", i ? "," : "", sp, sp,
                cats[rand_r(&seed) % 12], odd_names[rand_r(&seed) % 12]);
        random_number(&seed, num, sizeof num);
        int tsform = rand_r(&seed) % 10;
        if (tsform == 0)
            fprintf(f, ",\"ts\":\"%s\"", num); /* a string: counted, not used */
        else if (tsform != 1)
            fprintf(f, ",\"ts\":%s", num);
        random_number(&seed, num2, sizeof num2);
        if (rand_r(&seed) % 8) fprintf(f, ",\"dur\":%s", num2[0] == '-' ? num2 + 1 : num2);
        int a = rand_r(&seed) % 6;
        if (a == 0)
            fprintf(f,
                    ",\"args\":{\"stream\":%d,\"correlation\":%d,\"grid\":[1,[2,{}],3],"
                    "\"blob\":{\"stream\":99,\"s\":\"\\\"}\"}}",
                    rand_r(&seed) % 30, rand_r(&seed) % 1000);
        else if (a == 1)
            fprintf(f, ",\"args\":{\"stream\":\"%d\",\"correlation\":%d.0,\"x\":true}",
                    rand_r(&seed) % 30, rand_r(&seed) % 1000);
        else if (a == 2)
            fprintf(f, ",\"args\":{\"str\\u0065am\":%d,\"correlation\":\"7x\",\"y\":false}",
                    rand_r(&seed) % 30);
        else if (a == 3)
            fprintf(f, ",\"args\":{\"stream\":7.5,\"correlation\":-1e2,\"External id\":3}");
        else if (a == 4)
            fprintf(f, ",\"args\":{}");
        fprintf(f, "%s}", sp);
        if (i % 97 == 5) fprintf(f, ",[1,2],\"str\",null,12.5e3");
    }
    fprintf(f, "\n],\"rank\":5, \"trailer\":{\"k\":[]}}\n\n");
    fclose(f);
    return p;
}

static void test_awkward_document_identical(void **st) {
    (void)st;
    char *d = gp_test_tmpdir();
    for (unsigned seed = 1; seed <= 2; seed++) {
        char *p = write_awkward(d, seed, 3000);
        static const size_t chunks[] = {0, 1, 3, 64, 4093};
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
            compare_readers(p, chunks[c]);
        /* the same bytes gzipped */
        char gzp[2100];
        snprintf(gzp, sizeof gzp, "%s.gz", p);
        FILE *in = fopen(p, "rb");
        gzFile gz = gzopen(gzp, "wb");
        char buf[8192];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            gzwrite(gz, buf, (unsigned)n);
        fclose(in);
        gzclose(gz);
        compare_readers(gzp, 0);
        compare_readers(gzp, 5);
        unlink(gzp);
        unlink(p);
        free(p);
    }
    rmdir(d);
    free(d);
}

/* Many numbers through the scanner, each checked against strtod directly. */
static void test_numbers_match_strtod(void **st) {
    (void)st;
    char *d = gp_test_tmpdir(), p[2048], err[512];
    snprintf(p, sizeof p, "%s/nums.json", d);
    enum { N = 30000 };
    static char texts[N][64];
    unsigned seed = 42;
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\"traceEvents\":[");
    for (int i = 0; i < N; i++) {
        random_number(&seed, texts[i], sizeof texts[i]);
        if (i < 8) /* halfway cases and extremes of the 128-bit path */
            snprintf(texts[i], sizeof texts[i], "%s",
                     (const char *[]){"9007199254740993", "9007199254740993.0",
                                      "1712195495519689.047", "1.0000000000000002220",
                                      "18446744073709551615", "9999999999999999999",
                                      "0.0000000000000000001", "-0"}[i]);
        fprintf(f,
                "%s{\"cat\":\"kernel\",\"name\":\"k\",\"ts\":%s,\"dur\":1,"
                "\"args\":{\"stream\":1,\"correlation\":%d}}",
                i ? "," : "", texts[i], i);
    }
    fprintf(f, "]}");
    fclose(f);
    gp_trace_rank r;
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), 0);
    size_t checked = 0;
    for (size_t i = 0; i < r.gpu.n; i++) {
        double want = strtod(texts[r.gpu.v[i].corr], NULL);
        if (memcmp(&want, &r.gpu.v[i].ts, sizeof want))
            fail_msg("'%s': scanner %.17g, strtod %.17g", texts[r.gpu.v[i].corr], r.gpu.v[i].ts,
                     want);
        checked++;
    }
    assert_true(checked > N / 2); /* the rest had absurd values and were dropped, as counted */
    assert_int_equal(checked + r.warn.bad_duration, N);
    gp_trace_rank_free(&r);
    unlink(p);
    rmdir(d);
    free(d);
}

/* A key written as Kineto writes it ("k": ) or, at random, another way that must not take
 * the scanner's shortcut wrongly: no space, a space before ':', two spaces after, an escaped
 * first letter (the same key), a longer or shorter key (another key). */
static void put_key(FILE *f, unsigned *seed, const char *k) {
    switch (rand_r(seed) % 10) {
    case 0:
        fprintf(f, "\"%s\":", k);
        break;
    case 1:
        fprintf(f, "\"%s\" : ", k);
        break;
    case 2:
        fprintf(f, "\"%s\":  ", k);
        break;
    case 3:
        fprintf(f, "\"\\u%04x%s\": ", (unsigned)k[0], k + 1);
        break;
    case 4:
        fprintf(f, "\"%sx\": ", k);
        break;
    case 5:
        fprintf(f, "\"%.*s\": ", (int)strlen(k) - 1, k);
        break;
    default:
        fprintf(f, "\"%s\": ", k);
        break;
    }
}

static const char *put_sep(unsigned *seed) {
    static const char *const seps[] = {", ", ", ", ", ", ",", ",\n    ", " , ", ",  ", ", \n"};
    return seps[rand_r(seed) % 8];
}

static char *write_kineto_spelling(const char *dir, unsigned seed, int events) {
    char *p = malloc(2048);
    snprintf(p, 2048, "%s/spelling-%u.json", dir, seed);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n");
    char num[64];
    for (int i = 0; i < events; i++) {
        fprintf(f, "%s  {\n    ", i ? ",\n" : "");
        put_key(f, &seed, "ph");
        fprintf(f, "\"X\"%s", put_sep(&seed));
        put_key(f, &seed, "cat");
        fprintf(f, "\"%s\"%s", cats[rand_r(&seed) % 12], put_sep(&seed));
        put_key(f, &seed, "name");
        fprintf(f, "\"%s\"%s", odd_names[rand_r(&seed) % 12], put_sep(&seed));
        put_key(f, &seed, "pid");
        fprintf(f, "%d%s", rand_r(&seed) % 3 ? 783658 : -2, put_sep(&seed));
        put_key(f, &seed, "tid");
        fprintf(f, "%s%s", rand_r(&seed) % 3 ? "785244" : "1.5", put_sep(&seed));
        put_key(f, &seed, "ts");
        random_number(&seed, num, sizeof num);
        fprintf(f, "%s%s", rand_r(&seed) % 9 ? num : "\"7\"", put_sep(&seed));
        put_key(f, &seed, "dur");
        fprintf(f, "%d%s", rand_r(&seed) % 100, put_sep(&seed));
        put_key(f, &seed, "args");
        fprintf(f, "{\n      ");
        put_key(f, &seed, "stream");
        fprintf(f, "%d%s", rand_r(&seed) % 9, put_sep(&seed));
        put_key(f, &seed, "correlation");
        fprintf(f, "%d,\"External id\": %d,\"Ev Idx\": \"s\\\"}\"\n    }\n  }", rand_r(&seed) % 500,
                i);
    }
    fprintf(f, "\n  ],\n  \"traceName\": \"t\"\n}\n");
    fclose(f);
    return p;
}

static void test_kineto_spelling_identical(void **st) {
    (void)st;
    char *d = gp_test_tmpdir();
    for (unsigned seed = 1; seed <= 3; seed++) {
        char *p = write_kineto_spelling(d, seed, 2000);
        static const size_t chunks[] = {0, 1, 2, 3, 7, 64, 4093};
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
            compare_readers(p, chunks[c]);
        unlink(p);
        free(p);
    }
    rmdir(d);
    free(d);
}

/* Every strict prefix of a Kineto-spelled document is truncated JSON: the scanner says so at
 * the prefix's end, whatever the read size, and yajl refuses it too. */
static void test_kineto_spelling_truncated(void **st) {
    (void)st;
    char *d = gp_test_tmpdir(), *full = write_kineto_spelling(d, 7, 3), p[2100], err[512];
    FILE *f = fopen(full, "rb");
    assert_non_null(f);
    static char text[16384];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    assert_true(len > 200 && len < sizeof text);
    while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
        len--; /* the document ends at its '}' */
    snprintf(p, sizeof p, "%s/prefix.json", d);
    for (size_t n = 1; n < len; n++) {
        f = fopen(p, "wb");
        fwrite(text, 1, n, f);
        fclose(f);
        char want[80];
        snprintf(want, sizeof want,
                 "invalid or truncated JSON at byte %zu: unexpected end of input", n);
        for (size_t chunk = 0; chunk <= 3; chunk += 3) {
            gp_trace_rank r;
            err[0] = 0;
            if (gp_kineto_read_chunked(p, &r, NULL, NULL, chunk, err, sizeof err) != -1)
                fail_msg("prefix %zu accepted by the scanner", n);
            if (!strstr(err, want)) fail_msg("prefix %zu: '%s' lacks '%s'", n, err, want);
        }
        gp_trace_rank r;
        if (gp_kineto_read_yajl(p, &r, NULL, NULL, err, sizeof err) != -1)
            fail_msg("prefix %zu accepted by yajl", n);
    }
    unlink(p);
    unlink(full);
    free(full);
    rmdir(d);
    free(d);
}

/* Malformed documents: both readers refuse them; the scanner names the offending byte. */
static void test_malformed(void **st) {
    (void)st;
    static const struct {
        const char *text;
        long byte; /* 1-based offset of the offending byte; 0: the end (truncated) */
    } cases[] = {
        {"{\"traceEvents\": [{\"ph\": \"X\",, \"cat\": \"kernel\"}]}", 29},
        {"{\"traceEvents\": [{\"name\": \"a\x01\"}]}", 29},
        {"{\"traceEvents\": [{\"name\": \"a\\q\"}]}", 30},
        {"{\"traceEvents\": [{\"name\": \"a\xff\"}]}", 29},
        {"{\"traceEvents\": [{\"name\": \"a\xc3(\"}]}", 30},
        {"{\"traceEvents\": [{\"ts\": 01}]}", 26},
        {"{\"traceEvents\": [{\"ts\": 1.}]}", 27},
        {"{\"traceEvents\": [{\"ts\": -}]}", 26},
        {"{\"traceEvents\": [{\"ts\": tru}]}", 28},
        {"{\"traceEvents\": [{\"ts\": 1e}]}", 27},
        {"{\"traceEvents\": []} x", 21},
        {"{\"traceEvents\": [1 2]}", 20},
        {"{\"traceEvents\": [{\"args\": {\"a\": [1, }]}]}", 37},
        {"{\"a\" 1}", 6},
        /* in Kineto's spelling (the scanner's shortcut) */
        {"{\"traceEvents\": [{\"ts\": , \"dur\": 1}]}", 25},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"k\", }]}", 42},
        {"{\"traceEvents\": [{\"name\": \"a\", \"ts\": 1, \"dur\": 2 \"pid\": 3}]}", 50},
        {"{\"traceEvents\": [{\"args\": {\"stream\": 7, \"correlation\": }}]}", 56},
        {"{\"traceEvents\": [{\"tid\": 1, \"pid\": x}]}", 36},
        {"{\"traceEvents\": [{\"ts\": 1, \"dur", 0},
        {"{\"traceEvents\": [{\"ts\": 1, \"", 0},
        {"{\"traceEvents\": [{\"ts\": ", 0},
        {"{\"traceEvents\": [{\"ts\": 1", 0},
        {"{\"traceEvents\": [{\"name\": \"abc", 0},
        {"", 0},
    };
    char *d = gp_test_tmpdir(), p[2048], err[512];
    snprintf(p, sizeof p, "%s/bad.json", d);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        FILE *f = fopen(p, "w");
        fputs(cases[i].text, f);
        fclose(f);
        gp_trace_rank r;
        for (size_t chunk = 0; chunk <= 3; chunk += 3) {
            err[0] = 0;
            if (gp_kineto_read_chunked(p, &r, NULL, NULL, chunk, err, sizeof err) != -1)
                fail_msg("case %zu accepted by the scanner", i);
            char want[64];
            snprintf(want, sizeof want,
                     "byte %ld:", cases[i].byte ? cases[i].byte : (long)strlen(cases[i].text));
            if (!strstr(err, want)) fail_msg("case %zu: '%s' lacks '%s'", i, err, want);
            if (!cases[i].byte && !strstr(err, "truncated"))
                fail_msg("case %zu: '%s' should say truncated", i, err);
        }
        if (gp_kineto_read_yajl(p, &r, NULL, NULL, err, sizeof err) != -1)
            fail_msg("case %zu accepted by yajl", i);
    }
    unlink(p);
    rmdir(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_traces_identical),
        cmocka_unit_test(test_awkward_document_identical),
        cmocka_unit_test(test_numbers_match_strtod),
        cmocka_unit_test(test_kineto_spelling_identical),
        cmocka_unit_test(test_kineto_spelling_truncated),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
