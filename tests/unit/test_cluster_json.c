/* test_cluster_json.c: the cluster report's series, written by hand (output.c), is byte for
 * byte what jansson wrote for the same rows: values of every magnitude and sign (exponents,
 * integers, the ".0" jansson adds), an empty series, and a non-finite row left out. */
#include "testutil.h"

#include <jansson.h>

#include "clusters/cluster.h"

/* The "series" member of doc as text, from its '[' to the matching ']'. */
static char *series_text(const char *doc) {
    const char *at = strstr(doc, "\"series\": ");
    if (!at) return NULL;
    at += strlen("\"series\": ");
    int depth = 0;
    const char *p = at;
    do {
        if (*p == '[') depth++;
        if (*p == ']') depth--;
        p++;
    } while (depth > 0 && *p);
    return strndup(at, (size_t)(p - at));
}

/* What json_dumps wrote before: an array of [t, alloc, busy, wait] per bin. */
static char *jansson_series(const gp_cl_series *s) {
    json_t *o = json_object(), *a = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(a,
                              json_pack("[f,f,f,f]", (double)(s->b0 + (int64_t)i) * s->bin_s,
                                        s->alloc_gpu_s[i] / s->bin_s, s->busy_gpu_s[i] / s->bin_s,
                                        s->wait_gpu_s[i] / s->bin_s));
    json_object_set_new(o, "series", a);
    char *d = json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    json_decref(o);
    char *t = series_text(d);
    free(d);
    return t;
}

static void check(gp_cluster_report *r) {
    char *doc = gp_cl_json(r);
    assert_non_null(doc);
    json_error_t je;
    json_t *parsed = json_loads(doc, 0, &je);
    assert_non_null(parsed); /* still one valid JSON document */
    json_decref(parsed);
    char *got = series_text(doc), *want = jansson_series(&r->series);
    assert_non_null(got);
    assert_non_null(want);
    assert_string_equal(got, want);
    free(got);
    free(want);
    free(doc);
}

static void test_series_like_jansson(void **st) {
    (void)st;
    gp_cluster_report *r = calloc(1, sizeof *r);
    gp_cl_report_init(r, "openb2023", "x", 3600);
    check(r); /* empty: [] */
    static const double gpus[] = {1,
                                  0.5,
                                  1e-7,
                                  123456789.0,
                                  3e15,
                                  1.0 / 3,
                                  2.5e-12,
                                  1e20,
                                  0.001,
                                  7,
                                  1e-5,
                                  99999999999.0,
                                  4.2e21,
                                  6.02e23,
                                  1e300,
                                  5e-300,
                                  -2,
                                  -0.25,
                                  9999999999.0 / 3600,
                                  10000000000.0 / 3600};
    double t = 0;
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++, t += 3600) {
        assert_int_equal(gp_cl_series_add(&r->series, 0, t, t + 3600, gpus[i]), 0);
        assert_int_equal(gp_cl_series_add(&r->series, 1, t, t + 1800, gpus[i] / 7), 0);
        assert_int_equal(gp_cl_series_add(&r->series, 3, t + 900, t + 3600, gpus[i] * 3), 0);
    }
    check(r);
    /* whole numbers at the edge of the direct path, negative and -0 */
    r->series.busy_gpu_s[0] = 9999999999.0 * 3600;
    r->series.busy_gpu_s[1] = 10000000000.0 * 3600;
    r->series.busy_gpu_s[2] = -9999999999.0 * 3600;
    r->series.busy_gpu_s[4] = -0.0;
    r->series.wait_gpu_s[5] = -7 * 3600;
    check(r);
    /* a bin with an infinite value: jansson refused the row; so does the writer */
    r->series.alloc_gpu_s[3] = INFINITY;
    check(r);
    gp_cl_report_free(r);
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_series_like_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
