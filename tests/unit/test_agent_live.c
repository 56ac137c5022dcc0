/* test_agent_live.c: the agent's live findings (cli/agent_live.h) and the windowed
 * diagnosis "as of" a time (engine/windows.h).
 *
 * - A store the agent filled for 20 simulated minutes, diagnosed as of minute 12, gives the
 *   same last window and the same findings as a store the agent stopped at minute 12: the
 *   as-of view is the store as it stood then.
 * - A live pass made by the agent's hook while it ran holds, per job, the window and the
 *   findings that gp_diagnose_windows_as_of gives afterwards at the pass's clock, each
 *   marked live with its window.
 * - A pass leaves the agent connection's page cache settings as they were (size and
 *   spilling), and leaves at most its own small cache's pages behind, not the 2 MiB of
 *   window pages a pass at the tuned size would keep (agent_live.c).
 * Expected values come from a second run of the same deterministic scenario, never from
 * constants. */
#include "testutil.h"

#include <jansson.h>
#include <sqlite3.h>

#include "agent/agent.h"
#include "cli/agent_live.h"
#include "engine/diagnosis/windows.h"
#include "store/store.h"

#define NS 1000000000LL
#define SCEN "sim:examples/scenarios/demo.conf"

GP_TEST_TMPDIR_GROUP(tmp)

/* Runs the demo for duration_ns at full speed into tmp/name; live (may be NULL) attached.
 * Returns the open agent (its store stays readable) and its clock at the end. */
static gp_agent *run_agent(const char *name, int64_t duration_ns, gp_agent_live *live, char *path,
                           size_t cap) {
    snprintf(path, cap, "%s/%s", tmp, name);
    gp_agent_opts o = {
        .source_spec = SCEN, .db_path = path, .speed = 0, .duration_ns = duration_ns};
    gp_agent *a;
    char err[512];
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) fail_msg("%s", err);
    if (live) assert_int_equal(gp_agent_live_attach(live, a), 0);
    if (gp_agent_run(a, NULL, err, sizeof err) != 0) fail_msg("%s", err);
    return a;
}

static void same_window(const gp_diag_window *x, const gp_diag_window *y) {
    assert_string_equal(x->job_id, y->job_id);
    assert_true(x->t0_ns == y->t0_ns && x->t1_ns == y->t1_ns);
    assert_int_equal(x->n, y->n);
    for (size_t i = 0; i < x->n; i++) {
        assert_int_equal(x->findings[i].cls, y->findings[i].cls);
        assert_true(fabs(x->findings[i].wasted_gpu_s - y->findings[i].wasted_gpu_s) <=
                    0.01 * fabs(y->findings[i].wasted_gpu_s) + 1e-9);
    }
}

static void test_as_of_is_the_store_then(void **state) {
    (void)state;
    char pa[600], pb[600], err[512];
    gp_agent *a = run_agent("short.db", 12 * 60 * NS, NULL, pa, sizeof pa);
    gp_agent *b = run_agent("long.db", 20 * 60 * NS, NULL, pb, sizeof pb);
    int64_t t = gp_agent_now_ns(a);
    assert_true(gp_agent_now_ns(b) > t + 7 * 60 * NS);
    gp_job *jobs = NULL;
    size_t nj = 0;
    assert_int_equal(gp_store_list_jobs(gp_agent_store(a), &jobs, &nj), 0);
    assert_true(nj >= 4);
    size_t with_findings = 0;
    for (size_t i = 0; i < nj; i++) {
        gp_diag_window *wa = NULL, *wb = NULL, *wl = NULL;
        size_t na = 0, nb = 0, nl = 0;
        assert_int_equal(gp_diagnose_windows(gp_agent_store(a), jobs[i].id, NULL, 5 * 60 * NS, 1,
                                             &wa, &na, err, sizeof err),
                         0);
        assert_int_equal(gp_diagnose_windows_as_of(gp_agent_store(b), jobs[i].id, NULL, 5 * 60 * NS,
                                                   1, t, &wb, &nb, err, sizeof err),
                         0);
        assert_int_equal(na, nb);
        for (size_t k = 0; k < na; k++)
            same_window(&wa[k], &wb[k]);
        /* without as-of, the long store's last window ends later */
        assert_int_equal(gp_diagnose_windows(gp_agent_store(b), jobs[i].id, NULL, 5 * 60 * NS, 1,
                                             &wl, &nl, err, sizeof err),
                         0);
        if (na && nl) assert_true(wl[0].t1_ns > wa[0].t1_ns);
        with_findings += na && wa[0].n;
        gp_diag_windows_free(wa, na);
        gp_diag_windows_free(wb, nb);
        gp_diag_windows_free(wl, nl);
    }
    assert_true(with_findings >= 2);
    free(jobs);
    gp_agent_close(a);
    gp_agent_close(b);
}

static void test_live_pass_matches_offline(void **state) {
    (void)state;
    char p[600], err[512];
    gp_agent_live live = {.window_ns = 10 * 60 * NS};
    gp_agent *a = run_agent("live.db", 20 * 60 * NS, &live, p, sizeof p);
    /* one pass a minute of source time, the first a minute after the first tick */
    assert_true(live.passes >= 18 && live.passes <= 20);
    assert_non_null(live.json);
    json_t *doc = json_loads(live.json, 0, NULL);
    assert_non_null(doc);
    int64_t as_of = json_integer_value(json_object_get(doc, "as_of_ns"));
    assert_true(as_of > 0 && as_of <= gp_agent_now_ns(a));
    assert_true(json_real_value(json_object_get(doc, "window_s")) == 600.0);
    json_t *jobs = json_object_get(doc, "jobs"), *all = json_object_get(doc, "findings");
    assert_true(json_array_size(jobs) >= 4);
    size_t i, total = 0;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        const char *id = json_string_value(json_object_get(j, "job"));
        gp_diag_window *w = NULL;
        size_t nw = 0;
        assert_int_equal(gp_diagnose_windows_as_of(gp_agent_store(a), id, NULL, live.window_ns, 1,
                                                   as_of, &w, &nw, err, sizeof err),
                         0);
        assert_int_equal(nw, 1);
        assert_true(json_integer_value(json_object_get(j, "window_t0_ns")) == w[0].t0_ns);
        assert_true(json_integer_value(json_object_get(j, "window_t1_ns")) == w[0].t1_ns);
        assert_int_equal(json_integer_value(json_object_get(j, "findings")), w[0].n);
        /* the job's live findings, in rank order, are the offline ones */
        size_t k = 0, m;
        json_t *f;
        json_array_foreach(all, m, f) {
            if (strcmp(json_string_value(json_object_get(f, "job")), id) != 0) continue;
            assert_true(k < w[0].n);
            assert_true(json_is_true(json_object_get(f, "live")));
            assert_true(json_integer_value(json_object_get(f, "window_t0_ns")) == w[0].t0_ns);
            assert_string_equal(json_string_value(json_object_get(f, "class")),
                                gp_finding_class_name(w[0].findings[k].cls));
            assert_true(json_array_size(json_object_get(f, "evidence")) > 0);
            k++;
        }
        assert_int_equal(k, w[0].n);
        total += k;
        gp_diag_windows_free(w, nw);
    }
    assert_int_equal(total, json_array_size(all));
    assert_true(total >= 3);
    /* rows_read: what a pass loads. No pass loaded more than the whole store holds now
     * (every job, no as-of clip), and each pass loaded something. */
    gp_job *every = NULL;
    size_t ne = 0;
    uint64_t stored = 0;
    assert_int_equal(gp_store_list_jobs(gp_agent_store(a), &every, &ne), 0);
    for (size_t e = 0; e < ne; e++) {
        gp_diag_window *w = NULL;
        size_t nw = 0;
        assert_int_equal(gp_diagnose_windows(gp_agent_store(a), every[e].id, NULL, live.window_ns,
                                             1, &w, &nw, err, sizeof err),
                         0);
        if (nw) stored += w[0].rows_read;
        gp_diag_windows_free(w, nw);
    }
    free(every);
    assert_true(live.rows_max_pass > 0 && live.rows_max_pass <= stored);
    assert_true(live.rows >= live.rows_max_pass && live.rows <= live.passes * live.rows_max_pass);
    json_decref(doc);
    gp_agent_live_free(&live);
    gp_agent_close(a);
}

static int pragma(sqlite3 *db, const char *sql) {
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

static int cache_used(sqlite3 *db) {
    int cur = 0, hi = 0;
    assert_int_equal(sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_USED, &cur, &hi, 0), SQLITE_OK);
    return cur;
}

static void test_pass_leaves_the_cache_as_it_was(void **state) {
    (void)state;
    char p[600];
    gp_agent_live live = {.window_ns = 15 * 60 * NS};
    gp_agent *a = run_agent("cache.db", 20 * 60 * NS, &live, p, sizeof p);
    sqlite3 *db = gp_store_db(gp_agent_store(a));
    assert_int_equal(sqlite3_exec(db, "PRAGMA cache_size=-8192", NULL, NULL, NULL), SQLITE_OK);
    /* every page of the store read once: a cache of 8 MiB keeps them */
    assert_int_equal(sqlite3_exec(db,
                                  "SELECT count(*) FROM samples; SELECT count(*) FROM events; "
                                  "SELECT count(*) FROM proc_samples",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    int before = cache_used(db);
    assert_true(before > 2 * GP_LIVE_CACHE_KIB * 1024);
    uint64_t passes = live.passes;
    assert_int_equal(gp_agent_live_pass(&live, a), 0);
    assert_true(live.passes == passes + 1 && live.rows_max_pass > 0);
    /* the pass read through its small cache: the store's pages are gone, its own few left
     * (page headers, the pcache's slots and its hash table are counted too: a margin of a
     * half at this size). Under 100 KiB in all: what the agent carries between passes on
     * top of the ticks' own pages (issue 22; 288 KiB when the pass read through 256 KiB). */
    int after = cache_used(db);
    assert_true(after <= GP_LIVE_CACHE_KIB * 1024 * 3 / 2);
    assert_true(after <= 100 * 1024);
    assert_int_equal(pragma(db, "PRAGMA cache_size"), -8192);
    assert_true(pragma(db, "PRAGMA cache_spill") != 0);
    /* spilling off before: off after */
    assert_int_equal(sqlite3_exec(db, "PRAGMA cache_spill=OFF", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(gp_agent_live_pass(&live, a), 0);
    assert_int_equal(pragma(db, "PRAGMA cache_spill"), 0);
    assert_int_equal(pragma(db, "PRAGMA cache_size"), -8192);
    gp_agent_live_free(&live);
    gp_agent_close(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_as_of_is_the_store_then),
        cmocka_unit_test(test_live_pass_matches_offline),
        cmocka_unit_test(test_pass_leaves_the_cache_as_it_was),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
