/* test_store_batch.c: gp_store_put_rows (the agent's flush) on the agent's store
 * (GP_STORE_OWN_ROWS: the flush path, a tick's rows queued and written in runs of 8 per
 * statement) store exactly what the same rows put one at a time on a plain store do: the raw tables
 * and the 1-minute and 1-hour rollups, row for row and value for value, for runs of many lengths,
 * with unknown fields and a row that replaces an earlier one. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

#define NS 1000000000LL

static gp_sample sample(int dev, int64_t t_s, int k) {
    gp_sample x;
    memset(&x, 0, sizeof x);
    snprintf(x.uuid, sizeof x.uuid, "GPU-%d", dev);
    x.ts_ns = 1700000000 * NS + t_s * NS;
    gp_set_d(&x, GP_F_GPU_UTIL, &x.gpu_util, 0.1 * (k % 10) + 0.013);
    gp_set_d(&x, GP_F_POWER, &x.power_w, 300.0 + k * 1.37);
    if (k % 3) gp_set_d(&x, GP_F_SM_ACTIVE, &x.sm_active, 0.01 * (k % 97)); /* some unknown */
    x.energy_mj = 1000000 + (uint64_t)k * 311;
    x.valid |= GP_F_ENERGY;
    if (k % 5 == 0) {
        x.throttle_reasons = (uint64_t)1 << (k % 7);
        x.valid |= GP_F_THROTTLE;
    }
    return x;
}

static gp_proc_sample proc(int dev, int64_t t_s, int k) {
    gp_proc_sample p;
    memset(&p, 0, sizeof p);
    snprintf(p.uuid, sizeof p.uuid, "GPU-%d", dev);
    p.ts_ns = 1700000000 * NS + t_s * NS;
    p.pid = 100 + dev;
    if (k % 4) {
        p.sm_share = 0.25 * (k % 4);
        p.valid |= GP_P_SM_SHARE;
    }
    p.mem_bytes = (uint64_t)k << 20;
    p.valid |= GP_P_MEM;
    snprintf(p.job_id, sizeof p.job_id, "job-%d", dev % 3);
    return p;
}

/* Every row of the tables the two paths write, in key order, as text. */
static char *dump(gp_store *s) {
    static const char *const q[] = {
        "SELECT quote(uuid), ts_ns, quote(gpu_util), quote(sm_active), quote(power_w),"
        " quote(energy_mj), quote(throttle_reasons) FROM samples ORDER BY uuid, ts_ns",
        "SELECT quote(uuid), ts_ns, pid, quote(sm_share), quote(mem_bytes), quote(job_id)"
        " FROM proc_samples ORDER BY uuid, ts_ns, pid",
        "SELECT * FROM rollup_1m ORDER BY uuid, t1_ns",
        "SELECT * FROM rollup_1h ORDER BY uuid, t1_ns",
    };
    size_t cap = 1 << 20, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), q[i], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const unsigned char *v = sqlite3_column_text(st, c);
                len += (size_t)snprintf(out + len, cap - len, "%s|", v ? (const char *)v : "NULL");
            }
            len += (size_t)snprintf(out + len, cap - len, "\n");
            assert_true(len < cap - 256);
        }
        sqlite3_finalize(st);
        len += (size_t)snprintf(out + len, cap - len, "--\n");
    }
    return out;
}

static void test_batch_equals_one_by_one(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    char p1[600], p2[600];
    snprintf(p1, sizeof p1, "%s/one.db", dir);
    snprintf(p2, sizeof p2, "%s/batch.db", dir);
    gp_store *a, *b;
    char err[256];
    /* a: one row at a time with the schema's triggers; b: the agent's store (its own rows'
     * rule, 8 rows per statement, parameters bound again only when they change) */
    assert_int_equal(gp_store_open(p1, 0, &a, err, sizeof err), 0);
    assert_int_equal(gp_store_open(p2, GP_STORE_OWN_ROWS, &b, err, sizeof err), 0);
    /* 3 GPUs over 150 s (minute buckets close inside the runs), flushed in runs of 1 to 29
     * rows; the last run repeats an earlier key (INSERT OR REPLACE: the later row wins). */
    enum { N = 450 };
    gp_sample *xs = calloc(N + 1, sizeof *xs);
    gp_proc_sample *ps = calloc(N + 1, sizeof *ps);
    assert_non_null(xs);
    assert_non_null(ps);
    for (int k = 0; k < N; k++) {
        xs[k] = sample(k % 3, k / 3, k);
        ps[k] = proc(k % 3, k / 3, k);
    }
    xs[N] = sample(1, 149, 7);
    ps[N] = proc(1, 149, 7);
    size_t i = 0, run = 1;
    while (i < N + 1) {
        size_t n = run < N + 1 - i ? run : N + 1 - i;
        gp_store_begin(a);
        gp_store_begin(b);
        for (size_t k = 0; k < n; k++) {
            assert_int_equal(gp_store_put_sample(a, &xs[i + k]), 0);
            assert_int_equal(gp_store_put_proc(a, &ps[i + k]), 0);
        }
        int failed_p = -1; /* as the agent's flush writes them: both at once */
        assert_int_equal(gp_store_put_rows(b, &xs[i], n, &ps[i], n, &failed_p), 0);
        assert_int_equal(failed_p, 0);
        assert_int_equal(gp_store_commit(a), 0);
        assert_int_equal(gp_store_commit(b), 0);
        i += n;
        run = run % 29 + 7; /* 1, 8, 15, 22, 29, 7, 14, ... */
    }
    char *da = dump(a), *db = dump(b);
    assert_true(strlen(da) > 10000); /* the tables are not empty */
    assert_string_equal(da, db);
    free(da);
    free(db);
    free(xs);
    free(ps);
    gp_store_close(a);
    gp_store_close(b);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_equals_one_by_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
