/* test_ray.c: Ray Data Dataset.stats() text (tests/data/ray/, a capture from Ray's docs; see
 * tests/data/SOURCES.md) -> operators, bottleneck and pool size, every number by hand. */
#include "testutil.h"

#include "ingest/ray.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) abort();
    b[n] = 0;
    fclose(f);
    return b;
}

static void test_resnet_capture(void **st) {
    (void)st;
    char *t = slurp("tests/data/ray/resnet_batch_inference.stats.txt");
    assert_non_null(t);
    gp_ray_stats *s = malloc(sizeof *s);
    char err[200];
    assert_int_equal(gp_ray_stats_parse(t, strlen(t), s, err, sizeof err), 0);
    assert_int_equal(s->nops, 2);
    const gp_ray_op *a = &s->ops[0], *b = &s->ops[1];
    assert_string_equal(a->name, "ReadImage->Map(preprocess_image)");
    assert_int_equal(a->tasks, 384);
    assert_int_equal(a->blocks, 386);
    assert_near(a->exec_s, 9.21, 1e-12);
    assert_near(a->wall_total_s, 395.65, 1e-9);
    assert_near(a->cpu_total_s, 632.26, 1e-9);
    assert_near(a->udf_total_s, 376.62, 1e-9); /* "Block transform time" */
    assert_near(a->rows, 9469, 0);
    assert_near(a->bytes, 12168810909.0, 0);
    assert_int_equal(a->nodes, 8);
    assert_near(b->rows_per_s, 345.1533728632648, 1e-9);
    assert_near(s->iter_total_s, 38.53, 1e-12);
    assert_near(s->iter_blocked_s, 19.76, 1e-12);
    assert_int_equal(s->nunknown, 0); /* every line of the capture is understood */
    gp_ray_analyze(s);
    assert_int_equal(s->bottleneck, 1); /* 345 rows/s vs 1028 */
    assert_near(s->bottleneck_share, 345.1533728632648 / 1028.5218637702708, 1e-12);
    /* concurrency = 87.18 s / 27.43 s = 3.178; x 1028.52 / 345.15 = 9.47 -> 10 */
    assert_near(b->concurrency, 87.18 / 27.43, 1e-12);
    assert_int_equal(s->suggested_concurrency, 10);
    assert_near(a->cpu_efficiency, 632.26 / 395.65, 1e-12);
    assert_near(s->consumer_blocked, 19.76 / 38.53, 1e-12);
    free(s);
    free(t);
}

static void test_units_and_unknown(void **st) {
    (void)st;
    const char *t = "Operator 1 ReadRange: 2 tasks executed, 2 blocks produced in 500ms\n"
                    "* Remote wall time: 250us min, 750ms max, 375ms mean, 750ms total\n"
                    "* Output num rows: 5 min, 5 max, 5 mean, 10 total\n"
                    "* Some new line Ray added: 3\n";
    gp_ray_stats *s = malloc(sizeof *s);
    char err[200];
    assert_int_equal(gp_ray_stats_parse(t, strlen(t), s, err, sizeof err), 0);
    assert_near(s->ops[0].exec_s, 0.5, 1e-12);
    assert_near(s->ops[0].wall_total_s, 0.75, 1e-12);
    assert_true(s->ops[0].cpu_total_s < 0); /* not printed: unknown */
    assert_int_equal(s->nunknown, 1);
    assert_string_equal(s->unknown[0], "Some new line Ray added: 3");
    gp_ray_analyze(s);
    assert_near(s->ops[0].rows_per_s, 20, 1e-12); /* no throughput line: rows / wall */
    assert_int_equal(s->bottleneck, 0);
    assert_int_equal(s->suggested_concurrency, -1); /* nothing to compare it with */
    assert_int_equal(gp_ray_stats_parse("hello\n", 6, s, err, sizeof err), -1);
    assert_non_null(strstr(err, "Dataset.stats()"));
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet_capture),
        cmocka_unit_test(test_units_and_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
