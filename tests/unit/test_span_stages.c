/* test_span_stages.c: spans of a traced pipeline read as stage events (otlp/span_stages.h):
 * items per trace, visits from the root's children only, enqueue at the previous visit's
 * end, GPU stages from model-call spans and the --gpu-stage list, traces without children
 * or root skipped, pipelines per root name, and the result analysed by the pipeline engine. */
#include "testutil.h"

#include "engine/pipeline/pipeline.h"
#include "otlp/span_stages.h"

#define MS 1000000LL
#define T0 (1764400000LL * 1000 * MS)

static gp_span *add(gp_span_set *s, int trace, int id, int parent, const char *name, double a_ms,
                    double b_ms) {
    gp_span *sp = gp_span_set_add(s);
    assert_non_null(sp);
    snprintf(sp->trace_id, sizeof sp->trace_id, "%032x", trace);
    snprintf(sp->span_id, sizeof sp->span_id, "%016x", id);
    if (parent) snprintf(sp->parent_id, sizeof sp->parent_id, "%016x", parent);
    snprintf(sp->name, sizeof sp->name, "%s", name);
    sp->start_ns = T0 + (int64_t)(a_ms * MS);
    sp->end_ns = T0 + (int64_t)(b_ms * MS);
    sp->step = GP_STEP_OTHER;
    return sp;
}

static const gp_event *find(const gp_span_pipeline *p, const char *stage, int64_t item) {
    for (size_t i = 0; i < p->n_ev; i++)
        if (p->ev[i].step < 0 && p->ev[i].item == item && !strcmp(p->ev[i].name, stage))
            return &p->ev[i];
    return NULL;
}

static const gp_event *decl(const gp_span_pipeline *p, const char *stage) {
    for (size_t i = 0; i < p->n_ev; i++)
        if (p->ev[i].step >= 0 && !strcmp(p->ev[i].name, stage)) return &p->ev[i];
    return NULL;
}

static void test_chain(void **state) {
    (void)state;
    gp_span_set s = {0};
    /* two items, listed out of order; trace 2's root comes after its children */
    add(&s, 2, 3, 1, "decode", 10, 30);
    add(&s, 2, 4, 1, "infer", 40, 60)->step = GP_STEP_MODEL;
    add(&s, 2, 5, 4, "cuda.launch", 41, 59); /* inside a stage: not a stage */
    add(&s, 2, 1, 0, "video", 10, 60);
    add(&s, 1, 1, 0, "video", 0, 50);
    add(&s, 1, 2, 1, "decode", 0, 20);
    add(&s, 1, 3, 1, "infer", 25, 50)->step = GP_STEP_MODEL;
    add(&s, 1, 4, 1, "write", 50, 55); /* past the root's end: still a visit */
    add(&s, 3, 1, 0, "healthz", 0, 1); /* no children: not an item */
    add(&s, 4, 7, 9, "orphan", 0, 5);  /* parent outside the trace: the root */
    add(&s, 4, 8, 7, "step", 1, 4);
    gp_span_pipeline *p;
    size_t n;
    char err[200];
    assert_int_equal(gp_spans_to_pipelines(s.v, s.n, "write", &p, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(p[0].name, "video");
    assert_int_equal(p[0].n_items, 2);
    assert_string_equal(p[1].name, "orphan");
    assert_int_equal(p[1].n_items, 1);
    /* trace 1 sorts first: item 0 */
    const gp_event *e = find(&p[0], "infer", 0);
    assert_non_null(e);
    assert_int_equal(e->enqueue_ns, T0 + 20 * MS); /* decode ended */
    assert_int_equal(e->start_ns, T0 + 25 * MS);
    assert_int_equal(e->ts_ns, T0 + 50 * MS);
    assert_string_equal(e->job_id, "video");
    e = find(&p[0], "decode", 1);
    assert_non_null(e);
    assert_int_equal(e->enqueue_ns, T0 + 10 * MS); /* the root's start */
    assert_null(find(&p[0], "cuda.launch", 1));
    assert_null(find(&p[0], "write", 1));
    assert_int_equal(decl(&p[0], "infer")->edge, GP_STAGE_GPU);
    assert_int_equal(decl(&p[0], "write")->edge, GP_STAGE_GPU); /* named in the list */
    assert_int_equal(decl(&p[0], "decode")->edge, GP_STAGE_CPU);
    assert_int_equal(decl(&p[0], "decode")->step, 0); /* pool undeclared */

    gp_pipeline pl;
    gp_pipe_opts o = {0};
    assert_int_equal(gp_pipeline_analyze(p[0].ev, p[0].n_ev, &o, &pl, err, sizeof err), 0);
    assert_int_equal(pl.n_stages, 3);
    assert_string_equal(pl.stage[0].name, "decode");
    assert_string_equal(pl.stage[1].name, "infer");
    assert_int_equal(pl.stage[1].resource, GP_STAGE_GPU);
    assert_int_equal(pl.stage[0].n_items, 2);
    assert_near(pl.stage[1].svc_mean_s, 0.0225, 1e-9);
    gp_pipeline_free(&pl);
    gp_span_pipelines_free(p, n);
    gp_span_set_free(&s);
}

static void test_nothing(void **state) {
    (void)state;
    gp_span_set s = {0};
    add(&s, 1, 1, 0, "chat", 0, 10);
    gp_span_pipeline *p;
    size_t n = 7;
    char err[200];
    assert_int_equal(gp_spans_to_pipelines(s.v, s.n, NULL, &p, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    gp_span_pipelines_free(p, n);
    assert_int_equal(gp_spans_to_pipelines(NULL, 0, NULL, &p, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    gp_span_pipelines_free(p, n);
    gp_span_set_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_chain),
                                       cmocka_unit_test(test_nothing)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
