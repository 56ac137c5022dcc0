/* test_ray_metrics.c: Ray's ray_data_* / ray_train_* Prometheus metrics -> operators per
 * dataset, the bottleneck and its pool size, and Ray Train runs; every number by hand.
 * tests/data/ray/ray_metrics_data_train.prom is reconstructed from Ray's source, not captured
 * (tests/data/SOURCES.md). */
#include "testutil.h"

#include "ingest/ray_metrics.h"

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

static void test_reconstructed_scrape(void **st) {
    (void)st;
    char *t = slurp("tests/data/ray/ray_metrics_data_train.prom");
    assert_non_null(t);
    gp_ray_metrics *m = malloc(sizeof *m);
    char err[300];
    assert_int_equal(gp_ray_metrics_parse(t, strlen(t), m, err, sizeof err), 0);
    assert_int_equal(m->ndatasets, 1);
    assert_string_equal(m->dataset[0], "train_embed_2_0");
    gp_ray_stats *s = &m->ds[0];
    assert_int_equal(s->nops, 3);
    assert_string_equal(s->ops[0].name, "Input");
    assert_int_equal(s->ops[0].index, 0);
    const gp_ray_op *rd = &s->ops[1], *mb = &s->ops[2];
    assert_string_equal(rd->name, "ReadParquet->Map(preprocess)");
    assert_int_equal(rd->index, 1);
    assert_string_equal(mb->name, "MapBatches(EmbeddingModel)");
    assert_int_equal(rd->tasks, 944);
    assert_int_equal(mb->blocks, 768);
    assert_near(rd->rows, 120000, 0);
    assert_near(rd->bytes, 4.8e9, 0);
    assert_near(rd->wall_total_s, 600, 0);
    assert_true(rd->cpu_total_s < 0); /* Ray exports no CPU time */
    assert_true(rd->exec_s < 0);      /* nor an operator wall time */
    assert_near(rd->tasks_running, 16, 0);
    assert_near(rd->backpressure_s, 210.5, 0);
    assert_near(mb->queued_blocks, 37, 0);
    assert_near(mb->gpu_cores, 4, 0);
    /* rows / task time x running: 120000 / 600 x 16 = 3200; 96000 / 480 x 4 = 800 */
    assert_near(rd->rows_per_s, 3200, 1e-9);
    assert_near(mb->rows_per_s, 800, 1e-9);
    assert_near(rd->bytes_per_s, 4.8e9 / 600 * 16, 1e-3);
    assert_true(s->ops[0].rows_per_s < 0); /* the input buffer has no tasks: no rate */
    /* consumer: user 87.5 + blocked 12.5 + initialize 0.4 */
    assert_near(s->iter_total_s, 100.4, 1e-9);
    assert_near(s->iter_blocked_s, 12.5, 0);
    gp_ray_metrics_analyze(m);
    assert_int_equal(s->bottleneck, 2);
    assert_near(s->bottleneck_share, 0.25, 1e-12);
    assert_int_equal(s->suggested_concurrency, 16); /* ceil(4 x 3200 / 800) */
    assert_near(mb->concurrency, 4, 0);
    assert_near(s->consumer_blocked, 12.5 / 100.4, 1e-12);
    /* Ray Train */
    assert_int_equal(m->nruns, 1);
    const gp_ray_train_run *r = &m->runs[0];
    assert_string_equal(r->name, "embed-finetune");
    assert_string_equal(r->state, "RUNNING");
    assert_int_equal(r->workers, 4);
    assert_near(r->start_total_s, 42.7, 1e-12);
    assert_near(r->shutdown_total_s, 0, 0);
    assert_near(r->report_blocked_sum_s, 31.2 + 29.8 + 30.5 + 57.9, 1e-9);
    assert_near(r->report_blocked_max_s, 57.9, 0);
    assert_int_equal(r->report_blocked_max_rank, 3);
    /* families of Ray Data not read are listed; ray_node_* is not Ray Data's: skipped */
    assert_int_equal(m->nunknown, 3);
    assert_string_equal(m->unknown[0], "ray_data_spilled_bytes");
    assert_string_equal(m->unknown[1], "ray_data_num_inputs_received");
    assert_string_equal(m->unknown[2], "ray_data_obj_store_mem_spilled");
    json_t *j = gp_ray_metrics_report_json(m);
    json_t *d0 = json_array_get(json_object_get(j, "datasets"), 0);
    assert_string_equal(json_string_value(json_object_get(d0, "bottleneck")),
                        "MapBatches(EmbeddingModel)");
    json_t *r0 = json_array_get(json_object_get(j, "train_runs"), 0);
    assert_true(json_is_null(json_object_get(r0, "steps")));
    json_decref(j);
    free(m);
    free(t);
}

/* Several scrapes in one file: counters take the last value, tasks running the largest; the
 * older operator tag without '_'; the task-output families when output_rows is absent; two
 * datasets kept apart; a histogram family not read is named once. */
static void test_scrapes_and_forms(void **st) {
    (void)st;
    const char *t =
        "ray_data_rows_task_outputs_generated{dataset=\"a\",operator=\"ReadRange1\"} 100\n"
        "ray_data_block_generation_time{dataset=\"a\",operator=\"ReadRange1\"} 10\n"
        "ray_data_num_tasks_running{dataset=\"a\",operator=\"ReadRange1\"} 8\n"
        "ray_data_rows_task_outputs_generated{dataset=\"a\",operator=\"MapBatches(f)2\"} 100\n"
        "ray_data_block_generation_time{dataset=\"a\",operator=\"MapBatches(f)2\"} 50\n"
        "ray_data_num_tasks_running{dataset=\"a\",operator=\"MapBatches(f)2\"} 2\n"
        "ray_data_task_completion_time_bucket{dataset=\"a\",operator=\"ReadRange1\",le=\"1\"} 3\n"
        "ray_data_task_completion_time_count{dataset=\"a\",operator=\"ReadRange1\"} 3\n"
        "ray_data_output_rows{dataset=\"b\",operator=\"Map(g)_1\"} NaN\n"
        "# second scrape\n"
        "ray_data_rows_task_outputs_generated{dataset=\"a\",operator=\"ReadRange1\"} 400\n"
        "ray_data_block_generation_time{dataset=\"a\",operator=\"ReadRange1\"} 40\n"
        "ray_data_num_tasks_running{dataset=\"a\",operator=\"ReadRange1\"} 4\n"
        "ray_data_rows_task_outputs_generated{dataset=\"a\",operator=\"MapBatches(f)2\"} 300\n"
        "ray_data_block_generation_time{dataset=\"a\",operator=\"MapBatches(f)2\"} 150\n"
        "ray_data_num_tasks_running{dataset=\"a\",operator=\"MapBatches(f)2\"} 3\n"
        "ray_data_output_rows{dataset=\"b\",operator=\"Map(g)_1\"} 5";
    gp_ray_metrics *m = malloc(sizeof *m);
    char err[300];
    assert_int_equal(gp_ray_metrics_parse(t, strlen(t), m, err, sizeof err), 0);
    assert_int_equal(m->ndatasets, 2);
    gp_ray_stats *a = &m->ds[0];
    assert_int_equal(a->nops, 2);
    assert_string_equal(a->ops[0].name, "ReadRange");
    assert_int_equal(a->ops[0].index, 1);
    assert_string_equal(a->ops[1].name, "MapBatches(f)");
    assert_int_equal(a->ops[1].index, 2);
    assert_near(a->ops[0].rows, 400, 0);
    assert_near(a->ops[0].tasks_running, 8, 0);
    /* 400 / 40 x 8 = 80; 300 / 150 x 3 = 6 */
    assert_near(a->ops[0].rows_per_s, 80, 1e-12);
    assert_near(a->ops[1].rows_per_s, 6, 1e-12);
    assert_true(a->iter_total_s < 0);        /* no iterator metrics: unknown */
    assert_near(m->ds[1].ops[0].rows, 5, 0); /* the NaN sample was skipped */
    assert_int_equal(m->ds[1].ops[0].index, 1);
    gp_ray_metrics_analyze(m);
    assert_int_equal(a->bottleneck, 1);
    assert_int_equal(a->suggested_concurrency, 40); /* ceil(3 x 80 / 6) */
    assert_true(a->consumer_blocked < 0);
    assert_int_equal(m->nunknown, 1);
    assert_string_equal(m->unknown[0], "ray_data_task_completion_time");
    assert_int_equal(m->nruns, 0);
    free(m);
}

static void test_errors(void **st) {
    (void)st;
    gp_ray_metrics *m = malloc(sizeof *m);
    char err[300];
    const char *other = "vllm:num_requests_running{model_name=\"x\"} 3\n";
    assert_int_equal(gp_ray_metrics_parse(other, strlen(other), m, err, sizeof err), -1);
    assert_non_null(strstr(err, "ray_data_"));
    const char *bad = "ray_data_output_rows{dataset=\"a\",operator=\"x_1\" 3\n";
    assert_int_equal(gp_ray_metrics_parse(bad, strlen(bad), m, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 1"));
    assert_int_equal(gp_ray_metrics_parse("", 0, m, err, sizeof err), -1);
    free(m);
}

/* A real scrape (Ray 3.0.0.dev0, tests/data/ray/ray3.0dev_task_completion_time.prom) holding
 * only a family goodput does not read: refused, and the refusal names the family (once), not
 * "not a scrape of Ray's metrics". Its labels (Component, NodeAddress, SessionName, Version,
 * WorkerId beside dataset and operator) are those of every Ray metric. */
static void test_real_scrape_unread_family(void **st) {
    (void)st;
    char *t = slurp("tests/data/ray/ray3.0dev_task_completion_time.prom");
    assert_non_null(t);
    gp_ray_metrics *m = malloc(sizeof *m);
    char err[300];
    assert_int_equal(gp_ray_metrics_parse(t, strlen(t), m, err, sizeof err), -1);
    assert_int_equal(m->nunknown, 1); /* three _bucket series, one family */
    assert_string_equal(m->unknown[0], "ray_data_task_completion_time");
    assert_non_null(strstr(err, "none goodput reads"));
    assert_non_null(strstr(err, ": ray_data_task_completion_time"));
    free(m);
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_scrape_unread_family),
        cmocka_unit_test(test_reconstructed_scrape),
        cmocka_unit_test(test_scrapes_and_forms),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
