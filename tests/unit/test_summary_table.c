/* test_summary_table.c: ended jobs' stored summaries (engine/accounting/summary_table.h).
 * A row holds exactly what gp_job_summary_compute gave (every field, unknowns included),
 * is used only for the same end and accounting version, and a store without the table
 * (older, read-only) gives no reader, so callers compute. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "engine/accounting/summary_table.h"
#include "ingest/protocol.h"
#include "store/store.h"

#define S 1000000000LL
#define T0 (1700000000LL * S)

static void put_line(gp_store *s, const char *line) {
    gp_event e;
    char err[200];
    assert_int_equal(gp_proto_parse_line(line, strlen(line), 0, 1, &e, err, sizeof err), 1);
    assert_true(gp_store_put_event(s, &e) >= 0);
}

/* Job tj: 100 s on one GPU, an init phase, 8 steps, ended; samples every 5 s without
 * energy (energy unknown). Job ti: hello only (goodput unknown). */
static gp_store *make_store(const char *dir) {
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/gp.db", dir);
    gp_store *s = NULL;
    char err[256];
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_store_begin(s);
    snprintf(line, sizeof line, "job job=tj state=allocated ts=%lld", T0);
    put_line(s, line);
    snprintf(line, sizeof line, "alloc job=tj uuid=GPU-a from=%lld to=%lld", T0, T0 + 100 * S);
    put_line(s, line);
    snprintf(line, sizeof line, "phase job=tj name=init edge=begin ts=%lld", T0);
    put_line(s, line);
    snprintf(line, sizeof line, "phase job=tj name=init edge=end ts=%lld", T0 + 15 * S);
    put_line(s, line);
    for (int k = 1; k <= 8; k++) {
        snprintf(line, sizeof line, "step job=tj step=%d units=16 ts=%lld", k,
                 T0 + (15 + 10 * k) * S);
        put_line(s, line);
    }
    snprintf(line, sizeof line, "job job=tj state=ended exit=0 ts=%lld", T0 + 100 * S);
    put_line(s, line);
    put_line(s, "hello job=ti v=1 unit=samples");
    for (int t = 0; t <= 200; t += 5) {
        gp_sample x;
        memset(&x, 0, sizeof x);
        snprintf(x.uuid, sizeof x.uuid, "GPU-a");
        x.ts_ns = T0 + t * S;
        x.gpu_util = t < 20 ? 0 : 0.75;
        x.valid = GP_F_GPU_UTIL;
        assert_int_equal(gp_store_put_sample(s, &x), 0);
    }
    assert_int_equal(gp_store_commit(s), 0);
    return s;
}

static void assert_same(const gp_job_summary *a, const gp_job_summary *b) {
#define EQ(f) assert_true(memcmp(&a->f, &b->f, sizeof a->f) == 0)
    EQ(n_gpus), EQ(allocated_gpu_h), EQ(queue_wait_s), EQ(time_to_ready_s), EQ(busy_gpu_h);
    EQ(mean_gpu_util), EQ(mean_sm_active), EQ(mean_tensor_active), EQ(mean_dram_active);
    EQ(mean_mem_used_frac), EQ(proc_mem_max_bytes), EQ(energy_kwh), EQ(span_s);
    EQ(gp.kind), EQ(gp.allocated_gpu_s), EQ(gp.bucket_gpu_s), EQ(gp.goodput);
    EQ(gp.first_alloc_ns), EQ(gp.ready_ns), EQ(gp.steps), EQ(gp.kept_steps);
    EQ(gp.redone_steps), EQ(gp.units), EQ(gp.median_step_s), EQ(gp.requests);
    EQ(gp.good_requests), EQ(gp.failed_requests), EQ(gp.tokens), EQ(gp.good_tokens);
    EQ(gp.serving_gpu_s), EQ(gp.items), EQ(gp.busy_gpu_s);
    assert_string_equal(a->job.id, b->job.id);
#undef EQ
}

static void round_trip(void **state) {
    (void)state;
    char *dir = gp_test_tmpdir();
    gp_store *s = make_store(dir);
    gp_summary_opts o = {0};
    gp_job_summary js, got;
    char err[256];
    assert_int_equal(gp_job_summary_compute(s, "tj", &o, &js, err, sizeof err), 0);
    assert_true(js.job.ended_ns == T0 + 100 * S);
    assert_true(js.gp.goodput > 0 && js.gp.goodput < 1);
    assert_true(js.energy_kwh < 0); /* unknown: stored as NULL, read back as unknown */
    gp_summary_reader *r = gp_summary_reader_new(s);
    assert_non_null(r);
    assert_int_equal(gp_summary_table_get(r, &js.job, &got), 0); /* no row yet */
    assert_int_equal(gp_summary_table_put(s, &js), 0);
    assert_int_equal(gp_summary_table_get(r, &js.job, &got), 1);
    assert_same(&got, &js);
    /* unknown goodput and never ready survive too */
    gp_job_summary ji, goti;
    assert_int_equal(gp_job_summary_compute(s, "ti", &o, &ji, err, sizeof err), 0);
    assert_true(ji.gp.goodput < 0 && ji.gp.ready_ns < 0);
    ji.job.ended_ns = T0 + 50 * S; /* as if it had ended */
    assert_int_equal(gp_summary_table_put(s, &ji), 0);
    assert_int_equal(gp_summary_table_get(r, &ji.job, &goti), 1);
    assert_same(&goti, &ji);
    /* another end (the job was restarted and ended again): the row is not for it */
    gp_job later = js.job;
    later.ended_ns += S;
    assert_int_equal(gp_summary_table_get(r, &later, &got), 0);
    /* written again for the new end, it replaces the old row */
    js.job = later;
    assert_int_equal(gp_summary_table_put(s, &js), 0);
    assert_int_equal(gp_summary_table_get(r, &later, &got), 1);
    assert_int_equal(gp_summary_table_get(r, &ji.job, &goti), 1);
    gp_summary_reader_free(r);
    /* an older store without the table: no reader, callers compute */
    assert_int_equal(sqlite3_exec(gp_store_db(s), "DROP TABLE job_summaries", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_null(gp_summary_reader_new(s));
    gp_store_close(s);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void sealing(void **state) {
    (void)state;
    gp_job j = {.ended_ns = T0};
    assert_false(gp_summary_sealed(&j, T0));
    assert_false(gp_summary_sealed(&j, T0 + GP_SUMMARY_SEAL_NS - 1));
    assert_true(gp_summary_sealed(&j, T0 + GP_SUMMARY_SEAL_NS));
    j.ended_ns = -1; /* running */
    assert_false(gp_summary_sealed(&j, T0 * 2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(sealing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
