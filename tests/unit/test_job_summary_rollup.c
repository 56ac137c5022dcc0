/* test_job_summary_rollup.c: job summaries past the raw retention window (engine/
 * job_summary.c reads 1-minute rollups where retention deleted the raw rows), and long
 * allocations that read the rollups inside the raw window too (fold_long).
 *
 * A store gets 3 days of samples of one job on two GPUs every 10 s through the store API
 * (so the rollups are written as the agent writes them). Retention at 1 day must leave
 * the job's allocated and busy GPU-hours, mean utilisation and energy as they were before
 * it, within the rollups' precision; an incremental state (gp_job_acct_update) must not
 * reload when retention deletes what it folded, and must equal the full computation.
 *
 * Tolerance (REL_TOL, relative): a 1-minute bucket is the exact mean of its samples
 * (equal 10 s spacing, so the raw time-weighted fold and the bucket means integrate the
 * same), except where the allocation starts inside a bucket: the rollup's mean there
 * includes samples from before the start, and its energy counter there is the bucket's
 * last less what the bucket's mean power gives from the start (job_summary.c counter_at)
 * instead of the first sample after the start. That is at most one minute per GPU
 * out of the job's ~70 h per GPU, 1/4200 = 2.4e-4; the tolerance is 5e-4, twice that.
 * Allocated GPU-hours come from the allocations alone and must be exactly equal. */
#include "testutil.h"

#include "engine/accounting/job_summary.h"
#include "store/store.h"

#define S 1000000000LL
#define H (3600 * S)
/* A minute boundary; the job starts 7 s past one, inside a bucket. */
#define T0 (1767225600LL * S)
#define STEP (10 * S)
#define REL_TOL 5e-4

static double noise(int64_t k, int dev) { /* deterministic in [0, 1) */
    uint64_t x = (uint64_t)k * 2654435761u + (uint64_t)dev * 40503u + 12345u;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    return (double)(x % 10000) / 10000.0;
}

typedef struct {
    gp_store *s;
    char *dir;
    uint64_t energy[2];
    int64_t next_ns; /* the next sample time */
} fixture;

/* Samples of both GPUs in [next_ns, until_ns), committed once per simulated hour. */
static void write_until(fixture *f, int64_t until_ns) {
    gp_store_begin(f->s);
    for (; f->next_ns < until_ns; f->next_ns += STEP) {
        int64_t ts = f->next_ns, k = (ts - T0) / STEP;
        for (int d = 0; d < 2; d++) {
            gp_sample x = {0};
            snprintf(x.uuid, sizeof x.uuid, "GPU-r%d", d);
            x.ts_ns = ts;
            /* busy 80% of a 10-minute cycle, with noise; GPU-1 idles its first hours */
            double u = (k % 60) < 48 ? 0.6 + 0.4 * noise(k, d) : 0.02;
            if (d == 1 && ts < T0 + 5 * H) u = 0.01;
            gp_set_d(&x, GP_F_GPU_UTIL, &x.gpu_util, u);
            gp_set_d(&x, GP_F_SM_ACTIVE, &x.sm_active, 0.8 * u);
            gp_set_d(&x, GP_F_TENSOR_ACTIVE, &x.tensor_active, 0.5 * u);
            gp_set_d(&x, GP_F_DRAM_ACTIVE, &x.dram_active, 0.3 * noise(k, d + 7));
            x.mem_used_bytes = (uint64_t)((10 + 30 * noise(k, d + 3)) * (1 << 30));
            x.mem_total_bytes = 80ull << 30;
            double power_w = 100 + 500 * u;
            f->energy[d] += (uint64_t)(power_w * 10 * 1000); /* 10 s, in mJ */
            x.energy_mj = f->energy[d];
            x.valid |= GP_F_MEM_USED | GP_F_MEM_TOTAL | GP_F_ENERGY;
            assert_int_equal(gp_store_put_sample(f->s, &x), 0);
        }
        if ((ts - T0) % H == 0) {
            assert_int_equal(gp_store_commit(f->s), 0);
            gp_store_begin(f->s);
        }
    }
    assert_int_equal(gp_store_commit(f->s), 0);
}

static void fx_open(fixture *f) {
    memset(f, 0, sizeof *f);
    f->dir = gp_test_tmpdir();
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/s.db", f->dir);
    if (gp_store_open(path, 0, &f->s, err, sizeof err) != 0) fail_msg("open: %s", err);
    f->next_ns = T0 + STEP;
    gp_job j = {0};
    snprintf(j.id, sizeof j.id, "long");
    snprintf(j.name, sizeof j.name, "long");
    j.submitted_ns = T0 + H;
    j.allocated_ns = T0 + H + 7 * S;
    j.ready_ns = j.ended_ns = -1;
    j.exit_code = -1;
    assert_int_equal(gp_store_put_job(f->s, &j), 0);
    for (int d = 0; d < 2; d++) { /* open: the job runs to the end of the store */
        gp_alloc a = {0};
        snprintf(a.job_id, sizeof a.job_id, "long");
        snprintf(a.uuid, sizeof a.uuid, "GPU-r%d", d);
        a.from_ns = T0 + H + 7 * S;
        a.to_ns = -1;
        assert_int_equal(gp_store_put_alloc(f->s, &a), 0);
    }
}

static void fx_close(fixture *f) {
    char cmd[600];
    gp_store_close(f->s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (system(cmd) != 0) fail_msg("cannot remove %s", f->dir);
    free(f->dir);
}

static void rel_near(double a, double b, double tol, const char *what, const char *ctx) {
    if (!(a >= 0 && b >= 0)) fail_msg("%s: %s unknown (%g, %g)", ctx, what, a, b);
    if (!(fabs(a - b) <= tol * fmax(fabs(a), fabs(b)) + 1e-12))
        fail_msg("%s: %s = %.12g, expected %.12g (rel. tol %g)", ctx, what, a, b, tol);
}

/* The figures the issue names, within tol (allocated GPU-hours always exactly). */
static void same_figures(const gp_job_summary *x, const gp_job_summary *y, double tol,
                         const char *ctx) {
    rel_near(x->allocated_gpu_h, y->allocated_gpu_h, 1e-12, "allocated_gpu_h", ctx);
    rel_near(x->busy_gpu_h, y->busy_gpu_h, tol, "busy_gpu_h", ctx);
    rel_near(x->mean_gpu_util, y->mean_gpu_util, tol, "mean_gpu_util", ctx);
    rel_near(x->mean_sm_active, y->mean_sm_active, tol, "mean_sm_active", ctx);
    rel_near(x->mean_tensor_active, y->mean_tensor_active, tol, "mean_tensor_active", ctx);
    rel_near(x->mean_mem_used_frac, y->mean_mem_used_frac, tol, "mean_mem_used_frac", ctx);
    rel_near(x->energy_kwh, y->energy_kwh, tol, "energy_kwh", ctx);
    rel_near(x->span_s, y->span_s, 1e-12, "span_s", ctx);
}

static int64_t raw_rows(gp_store *s) {
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(gp_store_db(s), "SELECT count(*) FROM samples", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static void test_retention_keeps_figures(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    char err[256];
    gp_job_summary before, after, inc;
    /* An incremental state that folds the first two days from raw rows. */
    gp_job_acct *a = gp_job_acct_new("long", NULL);
    assert_non_null(a);
    write_until(&f, T0 + 24 * H);
    assert_int_equal(gp_job_acct_update(a, f.s, &inc, err, sizeof err), 0);
    write_until(&f, T0 + 48 * H);
    assert_int_equal(gp_job_acct_update(a, f.s, &inc, err, sizeof err), 0);
    write_until(&f, T0 + 72 * H + STEP);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &before, err, sizeof err), 0);
    int64_t n_before = raw_rows(f.s);

    /* Keep one day of raw rows: two thirds of the job are answered from the rollups. */
    assert_int_equal(gp_store_retain(f.s, T0 + 48 * H + 13 * S), 0);
    int64_t n_after = raw_rows(f.s);
    assert_true(n_after > 0 && n_after * 2 < n_before);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &after, err, sizeof err), 0);
    same_figures(&after, &before, REL_TOL, "full, after retention vs before");
    /* The job spans the whole store: the start comes from the rollups, not the raw rows. */
    assert_true(after.allocated_gpu_h > 2 * 70.9);

    /* The state that folded raw rows since deleted: no reload, same figures. */
    assert_int_equal(gp_job_acct_update(a, f.s, &inc, err, sizeof err), 0);
    assert_int_equal(gp_job_acct_get_stats(a).reloads, 0);
    same_figures(&inc, &after, REL_TOL, "incremental (raw past) vs full");

    /* A state started after retention folds the same rollups as the full computation:
     * equal up to the order of additions, also after more rows arrive. */
    gp_job_acct *b = gp_job_acct_new("long", NULL);
    assert_non_null(b);
    assert_int_equal(gp_job_acct_update(b, f.s, &inc, err, sizeof err), 0);
    same_figures(&inc, &after, 1e-9, "fresh incremental vs full");
    write_until(&f, T0 + 73 * H + STEP);
    assert_int_equal(gp_job_acct_update(b, f.s, &inc, err, sizeof err), 0);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &after, err, sizeof err), 0);
    same_figures(&inc, &after, 1e-9, "incremental after new rows vs full");
    assert_true(after.allocated_gpu_h > before.allocated_gpu_h);
    /* Retention runs again (the agent's hourly pass): still no reload, same figures. */
    assert_int_equal(gp_store_retain(f.s, T0 + 49 * H + 13 * S), 0);
    assert_int_equal(gp_job_acct_update(b, f.s, &inc, err, sizeof err), 0);
    assert_int_equal(gp_job_acct_get_stats(b).reloads, 0);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &after, err, sizeof err), 0);
    same_figures(&inc, &after, REL_TOL, "incremental after a second retention vs full");

    gp_job_acct_free(a);
    gp_job_acct_free(b);
    fx_close(&f);
}

/* Nothing raw left at all (a job far older than the window): still answered. */
static void test_no_raw_left(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    char err[256];
    gp_job_summary before, after;
    write_until(&f, T0 + 6 * H + STEP);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &before, err, sizeof err), 0);
    assert_int_equal(gp_store_retain(f.s, T0 + 7 * H), 0);
    assert_int_equal(raw_rows(f.s), 0);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &after, err, sizeof err), 0);
    /* 5 h per GPU: one minute at the start is 1/300 (3.3e-3); the last bucket ends with
     * the store, so only the start differs. */
    same_figures(&after, &before, 4e-3, "no raw rows left");
    fx_close(&f);
}

static gp_summary_opts raw_only(void) {
    gp_summary_opts o = {0};
    o.rollup_min_ns = -1;
    return o;
}

/* Everything the long fold must keep: the figures above within rounding (10 s samples,
 * equal weights: a bucket mean integrates as its samples do), and the labels events
 * would decide are the same here because there are none; the allocations' time too. */
static void same_long(const gp_job_summary *x, const gp_job_summary *y, const char *ctx) {
    same_figures(x, y, 1e-9, ctx);
    rel_near(x->mean_dram_active, y->mean_dram_active, 1e-9, "mean_dram_active", ctx);
    rel_near(x->time_to_ready_s, y->time_to_ready_s, 1e-12, "time_to_ready_s", ctx);
    rel_near(x->gp.allocated_gpu_s, y->gp.allocated_gpu_s, 1e-12, "allocated_gpu_s", ctx);
}

/* An 8-hour job inside the raw window: the default summary reads the rollups of its
 * whole minutes and must equal the raw-only one, reading a fraction of the rows. */
static void test_long_reads_rollups(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    char err[256];
    write_until(&f, T0 + 9 * H + 25 * S); /* ends mid-minute: a raw tail */
    gp_job_summary raw, roll;
    gp_summary_opts o = raw_only();
    gp_job_acct *a = gp_job_acct_new("long", &o), *b = gp_job_acct_new("long", NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(gp_job_acct_update(a, f.s, &raw, err, sizeof err), 0);
    assert_int_equal(gp_job_acct_update(b, f.s, &roll, err, sizeof err), 0);
    same_long(&roll, &raw, "rollups vs raw");
    uint64_t n_raw = gp_job_acct_get_stats(a).sample_rows;
    uint64_t n_roll = gp_job_acct_get_stats(b).sample_rows;
    /* 8 h of 10 s samples on 2 GPUs is 5,760 rows; ~480 minutes x 2 plus the ends. */
    assert_true(n_raw >= 5700);
    assert_true(n_roll < 1100);
    /* A short window of the same job (under the 6 h default) stays raw: exact labels. */
    gp_summary_opts w = {.t0_ns = T0 + 2 * H, .t1_ns = T0 + 3 * H};
    gp_job_summary wa, wb;
    w.rollup_min_ns = -1;
    assert_int_equal(gp_job_summary_compute(f.s, "long", &w, &wa, err, sizeof err), 0);
    w.rollup_min_ns = 0;
    assert_int_equal(gp_job_summary_compute(f.s, "long", &w, &wb, err, sizeof err), 0);
    assert_memory_equal(wa.gp.bucket_gpu_s, wb.gp.bucket_gpu_s, sizeof wa.gp.bucket_gpu_s);
    assert_true(wa.mean_gpu_util == wb.mean_gpu_util);
    gp_job_acct_free(a);
    gp_job_acct_free(b);
    fx_close(&f);
}

/* An incremental state that starts short (raw), grows long (one reload, then rollups)
 * and keeps updating with a raw tail inside a minute: equal to a fresh computation. */
static void test_long_incremental(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    char err[256];
    gp_job_summary inc, full;
    gp_job_acct *a = gp_job_acct_new("long", NULL);
    assert_non_null(a);
    write_until(&f, T0 + 4 * H);
    assert_int_equal(gp_job_acct_update(a, f.s, &inc, err, sizeof err), 0);
    write_until(&f, T0 + 8 * H + 35 * S);
    assert_int_equal(gp_job_acct_update(a, f.s, &inc, err, sizeof err), 0);
    assert_int_equal(gp_job_acct_get_stats(a).reloads, 1);
    assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &full, err, sizeof err), 0);
    same_long(&inc, &full, "grown long vs full");
    int64_t ends[] = {T0 + 8 * H + 52 * S, T0 + 8 * H + 13 * 60 * S + 5 * S, T0 + 9 * H};
    for (int i = 0; i < 3; i++) {
        write_until(&f, ends[i]);
        uint64_t before = gp_job_acct_get_stats(a).sample_rows;
        assert_int_equal(gp_job_acct_update(a, f.s, &inc, err, sizeof err), 0);
        assert_int_equal(gp_job_summary_compute(f.s, "long", NULL, &full, err, sizeof err), 0);
        same_long(&inc, &full, "incremental long vs full");
        /* New rows only: at most ~47 minutes of 10 s samples on 2 GPUs. */
        assert_true(gp_job_acct_get_stats(a).sample_rows - before < 600);
    }
    assert_int_equal(gp_job_acct_get_stats(a).reloads, 1);
    gp_job_acct_free(a);
    fx_close(&f);
}

/* A neighbour on one GPU: that GPU's share needs per-process rows, so the job stays raw
 * (both GPUs: the merged activity timeline takes one resolution). */
static void test_long_shared_stays_raw(void **state) {
    (void)state;
    fixture f;
    fx_open(&f);
    char err[256];
    gp_job j = {0};
    snprintf(j.id, sizeof j.id, "other");
    j.submitted_ns = j.allocated_ns = T0 + 2 * H;
    j.ready_ns = j.ended_ns = -1;
    j.exit_code = -1;
    assert_int_equal(gp_store_put_job(f.s, &j), 0);
    gp_alloc al = {0};
    snprintf(al.job_id, sizeof al.job_id, "other");
    snprintf(al.uuid, sizeof al.uuid, "GPU-r1");
    al.from_ns = T0 + 2 * H;
    al.to_ns = T0 + 3 * H;
    assert_int_equal(gp_store_put_alloc(f.s, &al), 0);
    write_until(&f, T0 + 9 * H + 25 * S);
    gp_summary_opts o = raw_only();
    gp_job_summary raw, roll;
    gp_job_acct *a = gp_job_acct_new("long", &o), *b = gp_job_acct_new("long", NULL);
    assert_int_equal(gp_job_acct_update(a, f.s, &raw, err, sizeof err), 0);
    assert_int_equal(gp_job_acct_update(b, f.s, &roll, err, sizeof err), 0);
    assert_memory_equal(&roll.gp, &raw.gp, sizeof roll.gp);
    assert_true(roll.mean_gpu_util == raw.mean_gpu_util && roll.energy_kwh == raw.energy_kwh);
    assert_int_equal(gp_job_acct_get_stats(b).sample_rows, gp_job_acct_get_stats(a).sample_rows);
    gp_job_acct_free(a);
    gp_job_acct_free(b);
    fx_close(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retention_keeps_figures), cmocka_unit_test(test_no_raw_left),
        cmocka_unit_test(test_long_reads_rollups),      cmocka_unit_test(test_long_incremental),
        cmocka_unit_test(test_long_shared_stays_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
