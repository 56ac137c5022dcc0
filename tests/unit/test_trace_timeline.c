/* test_trace_timeline.c: the timeline capture keeps the median-length step's GPU events,
 * at most GP_TL_MAX_EVENTS of them (the earliest, the rest counted), and the shared SVG
 * module draws unknown values as "unknown", never as 0; the timeline SVG draws every
 * span once and merges only spans too small to tell apart. */
#include "testutil.h"

#include "report/svg.h"
#include "traces/trace.h"

static size_t count(const char *s, const char *needle) {
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Three ProfilerSteps of 1000, 60000 and 30000 µs (the median is the last one, #3), with
 * n_in_median kernels of 1 µs (whole µs: HTA's rounding keeps them) alternating between
 * two streams inside step #3, and one kernel in each of the others. */
static char *write_trace(const char *dir, size_t n_in_median) {
    char *p = malloc(1024);
    snprintf(p, 1024, "%s/t.json", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"traceEvents\": [\n"
          "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"ts\":0,"
          "\"dur\":1000},\n"
          "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"ts\":1000,"
          "\"dur\":60000},\n"
          "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#3\",\"ts\":61000,"
          "\"dur\":30000},\n"
          "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"first\",\"ts\":10,\"dur\":5,"
          "\"args\":{\"stream\":7,\"correlation\":1}},\n"
          "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"second\",\"ts\":1010,\"dur\":5,"
          "\"args\":{\"stream\":7,\"correlation\":2}}",
          f);
    /* written latest first: the capture must sort */
    for (size_t i = n_in_median; i-- > 0;)
        fprintf(f,
                ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"ts\":%zu,\"dur\":1,"
                "\"args\":{\"stream\":%d,\"correlation\":%zu}}",
                i % 2 ? "ncclKernel_AllReduce" : "gemm", 61000 + i, i % 2 ? 20 : 7, i + 10);
    fputs("]}\n", f);
    fclose(f);
    return p;
}

static void analyse(const char *p, gp_rank_result *res) {
    gp_trace_rank r;
    char err[512];
    assert_int_equal(gp_kineto_read(p, &r, NULL, NULL, err, sizeof err), 0);
    gp_trace_prepare(&r, 0);
    gp_trace_options o;
    gp_trace_options_default(&o);
    assert_int_equal(gp_trace_analyze(&r, &o, res), 0);
    gp_trace_rank_free(&r);
}

static void test_median_step_and_bound(void **s) {
    (void)s;
    char *d = gp_test_tmpdir();
    size_t n = GP_TL_MAX_EVENTS + 5000;
    char *p = write_trace(d, n);
    gp_rank_result res;
    analyse(p, &res);
    assert_string_equal(res.tl_step, "ProfilerStep#3");
    assert_int_equal(res.n_tl, GP_TL_MAX_EVENTS);
    assert_int_equal(res.tl_dropped, 5000);
    assert_int_equal(res.n_tl_names, 2); /* first and second lie outside the step */
    for (size_t i = 1; i < res.n_tl; i++)
        assert_true(res.tl[i].t0_us >= res.tl[i - 1].t0_us);
    /* the earliest are kept: the last kept is event GP_TL_MAX_EVENTS - 1 */
    assert_near(res.tl[res.n_tl - 1].t0_us, 61000 + GP_TL_MAX_EVENTS - 1, 1e-9);
    assert_near(res.tl_t0_us, 61000, 1e-9);
    assert_near(res.tl_t1_us, 61000 + GP_TL_MAX_EVENTS, 1e-9); /* cut with the events */
    int comm = 0;
    for (size_t i = 0; i < res.n_tl; i++) {
        const char *nm = res.tl_names[res.tl[i].name];
        assert_int_equal(res.tl[i].kt,
                         strcmp(nm, "gemm") ? GP_KT_COMMUNICATION : GP_KT_COMPUTATION);
        assert_int_equal(res.tl[i].stream, strcmp(nm, "gemm") ? 20 : 7);
        comm += res.tl[i].kt == GP_KT_COMMUNICATION;
    }
    assert_int_equal(comm, GP_TL_MAX_EVENTS / 2);
    /* the page: every section, the bound said, one rect per drawn span at most */
    gp_trace_report rep = {.ranks = &res, .n_ranks = 1, .n_runs = 1};
    gp_trace_report_finish(&rep);
    char html[1100], err[256];
    snprintf(html, sizeof html, "%s/t.html", d);
    assert_int_equal(gp_trace_write_html(&rep, html, err, sizeof err), 0);
    FILE *f = fopen(html, "r");
    assert_non_null(f);
    static char page[4 << 20];
    size_t len = fread(page, 1, sizeof page - 1, f);
    page[len] = 0;
    fclose(f);
    for (const char *id = "temporal\0kernel-types\0top-kernels\0step-time\0timeline\0"; *id;
         id += strlen(id) + 1) {
        char want[64];
        snprintf(want, sizeof want, "id=\"%s\"", id);
        assert_non_null(strstr(page, want));
    }
    assert_non_null(strstr(page, "the 5000 later ones are left out"));
    assert_true(count(page, "data-n=") <= GP_TL_MAX_EVENTS);
    unlink(html);
    free(rep.findings);
    gp_rank_result_free(&res);
    unlink(p);
    free(p);
    rmdir(d);
    free(d);
}

static char *render(void (*fn)(FILE *, const void *), const void *arg) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fn(f, arg);
    fclose(f);
    return buf;
}
static void bars_fn(FILE *f, const void *a) {
    gp_svg_bars_write(f, a);
}
static void tl_fn(FILE *f, const void *a) {
    gp_svg_timeline_write(f, a);
}

static void test_unknown_is_unknown(void **s) {
    (void)s;
    static const char *const rows[] = {"a <b>", "c"}, *const segs[] = {"requested", "used"},
                             *const cols[] = {"#111", "#222"};
    double grouped[] = {10, NAN, 5, 2};
    char *out = render(bars_fn, &(gp_svg_bars){"t", 2, 2, rows, segs, cols, grouped, 0, "h", 1});
    assert_int_equal(count(out, ">unknown</text>"), 1);
    assert_non_null(strstr(out, ">2 h</text>"));
    assert_non_null(strstr(out, "a &lt;b&gt;")); /* escaped */
    free(out);
    double single[] = {NAN, 3};
    out = render(bars_fn, &(gp_svg_bars){"t", 2, 1, rows, segs, cols, single, 0, "%", 0});
    assert_int_equal(count(out, ">unknown</text>"), 1);
    assert_null(strstr(out, ">0 %"));
    free(out);
}

static void test_timeline_rects(void **s) {
    (void)s;
    static const char *const lanes[] = {"stream 7", "stream 20"}, *const labels[] = {"k0", "k1"},
                             *const cn[] = {"compute", "comm"}, *const cc[] = {"#0a0", "#00a"};
    /* window 0..1000: two far-apart spans on lane 0, then 50 spans of 0.001 packed
     * together on lane 1 (under 1/20000 of the window apart): drawn as one rect */
    gp_svg_span sp[52];
    sp[0] = (gp_svg_span){0, 100, 0, 0, 0};
    sp[1] = (gp_svg_span){500, 600, 0, 0, 0};
    for (int i = 0; i < 50; i++)
        sp[2 + i] = (gp_svg_span){700 + 0.002 * i, 700.001 + 0.002 * i, 1, 1, 1};
    char *out = render(
        tl_fn, &(gp_svg_timeline){"t", 2, lanes, 52, sp, 2, labels, 2, cn, cc, 0, 1000, "µs"});
    assert_int_equal(count(out, "<rect "), 3);
    assert_non_null(strstr(out, "data-c=\"50\""));
    assert_non_null(strstr(out, "viewBox=\"0 0 1000.000 "));
    assert_non_null(strstr(out, "<li>k1</li>"));
    free(out);
}

int main(void) {
    const struct CMUnitTest t[] = {
        cmocka_unit_test(test_median_step_and_bound),
        cmocka_unit_test(test_unknown_is_unknown),
        cmocka_unit_test(test_timeline_rects),
    };
    return cmocka_run_group_tests(t, NULL, NULL);
}
