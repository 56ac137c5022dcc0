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

/* Ray 2.50.0 logging its stats as each dataset finishes (tests/data/ray/etl_ray2.50_autolog.
 * stderr.txt, a real notebook's stderr): the first line of each block sits behind Ray's log
 * prefix, sub-lines are tab-indented, three datasets follow one another and other log lines
 * surround them. The last dataset is kept; every number is the capture's. */
static void test_ray250_autolog(void **st) {
    (void)st;
    char *t = slurp("tests/data/ray/etl_ray2.50_autolog.stderr.txt");
    assert_non_null(t);
    gp_ray_stats *s = malloc(sizeof *s);
    char err[200];
    assert_int_equal(gp_ray_stats_parse(t, strlen(t), s, err, sizeof err), 0);
    assert_int_equal(s->ndatasets, 3);
    assert_string_equal(s->dataset, "dataset_228_0");
    assert_int_equal(s->nops, 1);
    const gp_ray_op *o = &s->ops[0];
    assert_string_equal(o->name, "limit=25");
    assert_int_equal(o->index, 3);
    assert_int_equal(o->tasks, 1);
    assert_int_equal(o->blocks, 1);
    assert_near(o->exec_s, 0.09, 1e-12);
    assert_near(o->wall_total_s, 0.0894, 1e-12);
    assert_near(o->cpu_total_s, 0.18683, 1e-12);
    assert_near(o->udf_total_s, 0, 0); /* "UDF time: 0us ...": Ray 2.50 still says UDF */
    assert_near(o->rows, 25, 0);
    assert_near(o->bytes, 1594, 0);
    assert_int_equal(o->nodes, 1);
    assert_near(o->rows_per_s, 279.62736677939245, 1e-9);
    assert_near(s->dataset_rows_per_s, 13.58305853827714, 1e-9);
    assert_true(s->iter_total_s < 0); /* nobody iterated: unknown, not 0 */
    assert_int_equal(s->nunknown, 0); /* every stats line is understood */
    /* "Registered dataset logger", "Starting execution", "Execution plan" x 2 datasets */
    assert_int_equal(s->nlog_other, 6);
    gp_ray_analyze(s);
    assert_int_equal(s->bottleneck, 0);
    assert_near(o->cpu_efficiency, 0.18683 / 0.0894, 1e-9); /* CPU > wall: threads */
    free(s);
    free(t);
}

/* The docs' verbose stats of the ResNet example: "Extra metrics" dicts (one physical line of
 * ~1.4 kB each), "Runtime Metrics", the prefetch breakdown. */
static void test_verbose_extra_metrics(void **st) {
    (void)st;
    char *t = slurp("tests/data/ray/resnet_batch_inference_verbose.stats.txt");
    assert_non_null(t);
    gp_ray_stats *s = malloc(sizeof *s);
    char err[200];
    assert_int_equal(gp_ray_stats_parse(t, strlen(t), s, err, sizeof err), 0);
    assert_int_equal(s->ndatasets, 1);
    assert_int_equal(s->nops, 2);
    const gp_ray_op *a = &s->ops[0], *b = &s->ops[1];
    assert_near(a->backpressure_s, 7.263684450000142, 1e-12);
    assert_near(a->queued_blocks, 0, 0);
    assert_near(a->tasks_running, 0, 0);
    assert_near(b->tasks_running, 14, 0);
    assert_near(b->queued_blocks, 13, 0);
    assert_near(b->backpressure_s, 0, 0);
    assert_near(b->gpu_cores, 4, 0);
    assert_near(b->cpu_cores, 0, 0);
    assert_near(b->rows_per_s, 328.71474145609153, 1e-9);
    assert_near(s->dataset_rows_per_s, 468.11051989434594, 1e-9);
    assert_near(s->iter_total_s, 42.29, 1e-12);
    assert_near(s->iter_blocked_s, 19.96, 1e-12);
    assert_int_equal(s->nunknown, 0);
    gp_ray_analyze(s);
    assert_int_equal(s->bottleneck, 1);
    /* 87.16 / 28.81 = 3.025 tasks at once; x 997.92 / 328.71 = 9.18 -> 10 */
    assert_int_equal(s->suggested_concurrency, 10);
    free(s);
    free(t);
}

/* Lines not understood are kept once per kind ("Label: ..."), with a count each. */
static void test_unknown_kinds_once(void **st) {
    (void)st;
    const char *t = "Operator 1 ReadRange: 2 tasks executed, 2 blocks produced in 1s\n"
                    "* Spill time: 1s min, 2s max, 1.5s mean, 3s total\n"
                    "* Spill time: 2s min, 2s max, 2s mean, 2s total\n"
                    "* Odd line without a colon\n"
                    "(MapWorker pid=77) * Spill time: 1s\n";
    gp_ray_stats *s = malloc(sizeof *s);
    char err[200];
    assert_int_equal(gp_ray_stats_parse(t, strlen(t), s, err, sizeof err), 0);
    assert_int_equal(s->nunknown, 4);
    assert_int_equal(s->nunknown_kinds, 2);
    assert_string_equal(s->unknown[0], "Spill time: 1s min, 2s max, 1.5s mean, 3s total");
    assert_int_equal(s->unknown_lines[0], 3); /* the worker's prefix is not part of the kind */
    assert_string_equal(s->unknown[1], "Odd line without a colon");
    assert_int_equal(s->unknown_lines[1], 1);
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resnet_capture),     cmocka_unit_test(test_units_and_unknown),
        cmocka_unit_test(test_ray250_autolog),     cmocka_unit_test(test_verbose_extra_metrics),
        cmocka_unit_test(test_unknown_kinds_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
