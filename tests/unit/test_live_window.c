/* test_live_window.c: the agent's live findings read the last window's rows
 * (engine/diagnosis/live_window.h) and stay exactly those of the whole-history pass.
 *
 * - Every live pass the agent makes while it runs a scenario (scenario -> agent -> store
 *   -> live findings) is compared, job by job and finding by finding (the whole JSON of
 *   each finding), with gp_diagnose_windows_as_of at the pass's clock: the whole history
 *   loaded from scratch. The scenarios hit the whole-job figures a window reads: restarts
 *   that redo (renumber) per-rank steps, with a straggler; an inference server whose
 *   hello declares its SLOs mid-job (ready after 14 minutes); a job sharing another's
 *   GPU; telemetry gaps (a device's samples deleted as they are stored, before any pass
 *   reads them); not-ready and activity-only jobs; jobs many windows old. The demo
 *   scenario runs the same check.
 * - On a job many windows old, no pass after the first reads more rows than one window
 *   plus its lookback and a minute holds, the job's whole history being several times
 *   that, and the job is read whole only once.
 * - Called pass by pass on a stored job, gp_diagnose_last_window_live equals the whole
 *   history's window; an allocation then closed with an end before the state's frontier
 *   (a process found gone late) makes it read the job whole once more, and still equal.
 * - A 2.5 h job with jittered sample timestamps (nearly every interval distinct at ns) and
 *   1% step jitter, sharing a GPU early and at its end: called pass by pass, the state
 *   stays under 12 KiB and grows under 2 KiB from 30 min to 149 min (sig_hist.h), its
 *   windows equal the whole history's, including those reading thr_alone and one with a
 *   hole that is a gap at the defined resolution of the median interval and not at ns.
 * Expected values are computed from the store, never constants. */
#include "testutil.h"

#include <jansson.h>
#include <sqlite3.h>

#include "agent/agent.h"
#include "cli/agent_live.h"
#include "engine/diagnosis/classify.h"
#include "engine/diagnosis/live_window.h"
#include "engine/diagnosis/sig_hist.h"
#include "engine/diagnosis/windows.h"
#include "report/findings_fmt.h"
#include "store/store.h"

#define NS 1000000000LL

GP_TEST_TMPDIR_GROUP(tmp)

static const char *HARD =
    "[node]\nname = live-node\ngpus = 5\nmodel = H100-SXM\nseed = 7\nduration = 40m\n\n"
    /* per-rank steps, a straggler, two restarts that redo steps */
    "[job ranked]\nkind = training\ngpus = 0-2\ninit = 20s\nper_rank_steps = yes\n"
    "flops_per_step = 60T ; efficiency = 0.5\nallreduce_bytes = 1GB ; overlap = 0.5\n"
    "straggler_rank = 1 ; straggler_slowdown = 1.5 ; straggler_from = 4m\n"
    "checkpoint_every = 300 ; checkpoint_time = 5s\n"
    "restart_at = 12m, 27m ; recovery = 45s ; restore_time = 15s\n\n"
    /* a server that declares its SLOs in a hello 14 minutes into its allocation */
    "[job server]\nkind = inference\ngpus = 3\nready_after = 14m\nrate = 3\n"
    "prompt_tokens = 800 ; output_tokens = 120\nparams = 8B\nslo_ttft = 150ms ; slo_tpot = 12ms\n\n"
    /* shares the ranked job's GPU 0 for 6 minutes */
    "[job sharer]\nkind = training\ngpus = 0\nstart = 17m ; end = 23m\n"
    "flops_per_step = 100T ; efficiency = 0.5\nmem = 20%\n\n"
    "[job late]\nkind = not_ready\ngpus = 4\nstart = 0s ; end = 36m\nready_after = 9m\ninit = 1m\n"
    "flops_per_step = 100T ; efficiency = 0.5\n\n"
    "[job notebook]\nkind = idle\ngpus = 4\nstart = 0s ; end = 30m\nmem = 30%\n"
    "burst_every = 3m ; burst = 3s\n";

/* The checks run as agent hooks, around the live hook. */
typedef struct checker {
    gp_agent_live *live;
    int64_t origin_ns;   /* the first tick's clock */
    uint64_t passes;     /* live passes checked */
    uint64_t job_passes; /* (pass, job) pairs compared */
    uint64_t findings;   /* findings compared */
    int gaps;            /* delete a device's samples in two stretches (telemetry gaps) */
    char gap_uuid[96];
    uint64_t deleted;
    uint64_t max_rows_late; /* the most a pass after the first read */
    uint64_t prev_rows;
} checker;

/* Before the live hook: the server's GPU loses its samples over [6 m, 9 m) and
 * [21 m, 21.5 m), every other one over [29 m, 36 m) (a window there sees 2 s intervals,
 * the job's median stays 1 s) and 7 s at 33 m: a gap by the job's median interval (over
 * 5 s), not by the window's own (under 10 s). */
static void gap_hook(gp_agent *a, void *ctx) {
    checker *c = ctx;
    int64_t now = gp_agent_now_ns(a);
    if (!c->origin_ns) c->origin_ns = now;
    if (!c->gaps) return;
    sqlite3 *db = gp_store_db(gp_agent_store(a));
    if (!c->gap_uuid[0]) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT uuid FROM allocations WHERE job_id = 'server'",
                                            -1, &st, NULL),
                         SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(c->gap_uuid, sizeof c->gap_uuid, "%s", sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        if (!c->gap_uuid[0]) return;
    }
    static const char *sql[4] = {
        "DELETE FROM samples WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3",
        "DELETE FROM samples WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3",
        ("DELETE FROM samples WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3 AND"
         " (ts_ns / 1000000000) % 2 = 1"),
        "DELETE FROM samples WHERE uuid = ?1 AND ts_ns >= ?2 AND ts_ns < ?3"};
    int64_t from[4] = {6 * 60, 21 * 60, 29 * 60, 33 * 60},
            to[4] = {9 * 60, 21 * 60 + 30, 36 * 60, 33 * 60 + 7};
    for (int k = 0; k < 4; k++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db, sql[k], -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_text(st, 1, c->gap_uuid, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, c->origin_ns + from[k] * NS);
        sqlite3_bind_int64(st, 3, c->origin_ns + to[k] * NS);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        c->deleted += (uint64_t)sqlite3_changes(db);
    }
}

/* After the live hook: when it made a pass, compare each job's live findings with the
 * whole history's. */
static void check_hook(gp_agent *a, void *ctx) {
    checker *c = ctx;
    gp_agent_live *l = c->live;
    if (l->passes == c->passes) return;
    c->passes = l->passes;
    uint64_t pass_rows = l->rows - c->prev_rows;
    c->prev_rows = l->rows;
    if (l->passes > 1 && pass_rows > c->max_rows_late) c->max_rows_late = pass_rows;
    assert_non_null(l->json);
    json_t *doc = json_loads(l->json, 0, NULL);
    assert_non_null(doc);
    int64_t now = json_integer_value(json_object_get(doc, "as_of_ns"));
    assert_true(now == gp_agent_now_ns(a));
    json_t *all = json_object_get(doc, "findings"), *jobs = json_object_get(doc, "jobs");
    gp_store *st = gp_agent_store(a);
    gp_job *list = NULL;
    size_t nj = 0, live_jobs = 0, k = 0;
    assert_int_equal(gp_store_list_jobs(st, &list, &nj), 0);
    for (size_t i = 0; i < nj; i++) {
        if (list[i].ended_ns > 0 && list[i].ended_ns < now - l->window_ns) continue;
        gp_diag_window *w = NULL;
        size_t nw = 0;
        char err[256];
        assert_int_equal(gp_diagnose_windows_as_of(st, list[i].id, NULL, l->window_ns, 1, now, &w,
                                                   &nw, err, sizeof err),
                         0);
        if (nw == 1 && w[0].t1_ns >= now - l->window_ns) {
            json_t *j = json_array_get(jobs, live_jobs++);
            assert_non_null(j);
            assert_string_equal(json_string_value(json_object_get(j, "job")), list[i].id);
            assert_true(json_integer_value(json_object_get(j, "window_t0_ns")) == w[0].t0_ns);
            assert_true(json_integer_value(json_object_get(j, "window_t1_ns")) == w[0].t1_ns);
            json_t *f = gp_agent_live_findings_json(&w[0]);
            size_t m;
            json_t *x;
            json_array_foreach(f, m, x) {
                json_t *y = json_array_get(all, k++);
                assert_non_null(y);
                if (!json_equal(x, y)) {
                    char *a1 = json_dumps(x, JSON_COMPACT), *b1 = json_dumps(y, JSON_COMPACT);
                    fail_msg("pass %llu, job %s, finding %zu:\nwhole: %s\nlive:  %s",
                             (unsigned long long)l->passes, list[i].id, m, a1, b1);
                }
                c->findings++;
            }
            json_decref(f);
            c->job_passes++;
        }
        gp_diag_windows_free(w, nw);
    }
    assert_int_equal(live_jobs, json_array_size(jobs));
    assert_int_equal(k, json_array_size(all));
    free(list);
    json_decref(doc);
}

/* Runs scenario source src into the store at path for duration_ns at speed 0. */
static void run_agent(const char *src, const char *path, int64_t duration_ns) {
    char err[512];
    gp_agent_opts o = {.source_spec = src, .db_path = path, .speed = 0, .duration_ns = duration_ns};
    gp_agent *a;
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) fail_msg("%s", err);
    if (gp_agent_run(a, NULL, err, sizeof err) != 0) fail_msg("%s", err);
    gp_agent_close(a);
}

static void run_checked(const char *scen_path, int64_t duration_ns, int64_t window_ns, int gaps,
                        checker *c, gp_agent_live *live, const char *db) {
    char path[600], err[512];
    snprintf(path, sizeof path, "%s/%s", tmp, db);
    char src[700];
    snprintf(src, sizeof src, "sim:%s", scen_path);
    gp_agent_opts o = {.source_spec = src, .db_path = path, .speed = 0, .duration_ns = duration_ns};
    gp_agent *a;
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) fail_msg("%s", err);
    memset(c, 0, sizeof *c);
    memset(live, 0, sizeof *live);
    live->window_ns = window_ns;
    c->live = live;
    c->gaps = gaps;
    assert_int_equal(gp_agent_set_hook(a, gap_hook, c, 0), 0);
    assert_int_equal(gp_agent_live_attach(live, a), 0);
    assert_int_equal(gp_agent_set_hook(a, check_hook, c, 0), 0);
    if (gp_agent_run(a, NULL, err, sizeof err) != 0) fail_msg("%s", err);
    assert_true(live->passes > 0);
    assert_int_equal(c->passes, live->passes);
    if (getenv("GP_TEST_VERBOSE"))
        fprintf(stderr,
                "%s: passes %llu, job-passes %llu, findings %llu, whole loads %llu, rows %llu, max "
                "%llu, max after the first %llu\n",
                db, (unsigned long long)live->passes, (unsigned long long)c->job_passes,
                (unsigned long long)c->findings,
                (unsigned long long)gp_agent_live_whole_loads(live), (unsigned long long)live->rows,
                (unsigned long long)live->rows_max_pass, (unsigned long long)c->max_rows_late);
    gp_agent_close(a);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

/* NAME.conf holding conf, run through the agent for duration_ns into NAME.db in tmp; the
 * store, opened writable (the tests add rows the agent did not). */
static gp_store *scenario_store(const char *name, const char *conf, int64_t duration_ns) {
    char scen[600], path[600], src[700], err[512];
    snprintf(scen, sizeof scen, "%s/%s.conf", tmp, name);
    write_file(scen, conf);
    snprintf(path, sizeof path, "%s/%s.db", tmp, name);
    snprintf(src, sizeof src, "sim:%s", scen);
    run_agent(src, path, duration_ns);
    gp_store *st = NULL;
    if (gp_store_open(path, 0, &st, err, sizeof err) != 0) fail_msg("%s", err);
    return st;
}

static void test_every_pass_is_the_whole_history(void **state) {
    (void)state;
    char scen[600];
    snprintf(scen, sizeof scen, "%s/hard.conf", tmp);
    write_file(scen, HARD);
    checker c;
    gp_agent_live live;
    run_checked(scen, 40 * 60 * NS, 5 * 60 * NS, 1, &c, &live, "hard.db");
    assert_true(c.passes >= 38);
    assert_true(c.deleted > 0);       /* the gaps happened */
    assert_true(c.job_passes >= 150); /* ~5 jobs a pass */
    assert_true(c.findings >= 150);
    /* the comparisons ran on windowed reads: the job was read whole only at the first
     * pass over each of the 5 jobs and at the first window sharing a GPU of each of the 2
     * jobs on GPU 0 (from then on their alone steps are kept) */
    assert_int_equal(gp_agent_live_whole_loads(&live), 7);
    gp_agent_live_free(&live);
}

static void test_demo_every_pass(void **state) {
    (void)state;
    checker c;
    gp_agent_live live;
    run_checked("examples/scenarios/demo.conf", 45 * 60 * NS, 5 * 60 * NS, 0, &c, &live, "demo.db");
    assert_true(c.passes >= 43);
    assert_true(c.findings >= 200);
    assert_true(gp_agent_live_whole_loads(&live) * 3 < c.job_passes);
    gp_agent_live_free(&live);
}

static const char *OLD = "[node]\nname = old-node\ngpus = 2\nmodel = H100-SXM\nseed = 3\n"
                         "duration = 50m\n\n[job old]\nkind = training\ngpus = 0-1\n"
                         "per_rank_steps = yes\nflops_per_step = 60T ; efficiency = 0.5\n"
                         "checkpoint_every = 300 ; checkpoint_time = 5s\n";

static void test_old_job_reads_one_window(void **state) {
    (void)state;
    char scen[600], err[512];
    snprintf(scen, sizeof scen, "%s/old.conf", tmp);
    write_file(scen, OLD);
    checker c;
    gp_agent_live live;
    char path[600];
    snprintf(path, sizeof path, "%s/old.db", tmp);
    int64_t W = 5 * 60 * NS;
    run_checked(scen, 50 * 60 * NS, W, 0, &c, &live, "old.db");
    assert_true(c.passes >= 48);
    /* only the first pass read the job whole */
    assert_int_equal(gp_agent_live_whole_loads(&live), 1);
    gp_store *st = NULL;
    assert_int_equal(gp_store_open(path, GP_STORE_READONLY, &st, err, sizeof err), 0);
    gp_job_input whole, win;
    assert_int_equal(
        gp_job_input_load_range(st, "old", 1, INT64_MIN, INT64_MAX, &whole, err, sizeof err), 0);
    int64_t end = INT64_MIN;
    for (size_t i = 0; i < whole.n_samples; i++)
        if (whole.samples[i].ts_ns > end) end = whole.samples[i].ts_ns;
    /* one window, its lookback (5 sample intervals, 2 s), the minute of lateness it
     * tolerates and the minute between passes */
    assert_int_equal(
        gp_job_input_load_range(st, "old", 1, end - W - 3 * 60 * NS, end, &win, err, sizeof err),
        0);
    uint64_t n_whole =
                 whole.n_events + whole.n_steps + whole.n_marks + whole.n_samples + whole.n_procs,
             n_win = win.n_events + win.n_steps + win.n_marks + win.n_samples + win.n_procs;
    assert_true(n_whole > 5 * n_win);
    assert_true(c.max_rows_late > 0);
    assert_true(c.max_rows_late <= n_win);
    assert_true(live.rows_max_pass <= n_win);
    gp_job_input_free(&whole);
    gp_job_input_free(&win);
    gp_store_close(st);
    gp_agent_live_free(&live);
}

/* Job `old`'s last window at as_of, live (state *h) and from the whole history: the same
 * window and the same findings (whole JSON). */
static void same_as_whole(gp_store *st, gp_live_hist **h, int64_t as_of, int64_t W) {
    char err[256];
    gp_diag_window *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(gp_diagnose_last_window_live(st, "old", W, as_of, h, &a, &na, err, sizeof err),
                     0);
    assert_int_equal(
        gp_diagnose_windows_as_of(st, "old", NULL, W, 1, as_of, &b, &nb, err, sizeof err), 0);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_true(a[i].t0_ns == b[i].t0_ns && a[i].t1_ns == b[i].t1_ns);
        json_t *x = gp_findings_json(a[i].findings, a[i].n, 0),
               *y = gp_findings_json(b[i].findings, b[i].n, 0);
        assert_true(json_array_size(y) > 0);
        assert_true(json_equal(x, y));
        json_decref(x);
        json_decref(y);
    }
    gp_diag_windows_free(a, na);
    gp_diag_windows_free(b, nb);
}

/* An allocation closed after the fact, with an end before the state's frontier (a
 * process found gone late): the rows fed under the open allocation no longer count the
 * same, so the state is rebuilt from a whole load and the window stays the whole
 * history's. */
static void test_late_close_rebuilds(void **state) {
    (void)state;
    gp_store *st = scenario_store("late", OLD, 30 * 60 * NS);
    gp_alloc *al = NULL;
    size_t nal = 0;
    assert_int_equal(gp_store_job_allocs(st, "old", &al, &nal), 0);
    assert_true(nal == 2 && al[0].to_ns < 0);
    int64_t origin = al[0].from_ns, W = 5 * 60 * NS;
    gp_live_hist *h = NULL;
    for (int m = 8; m <= 29; m++)
        same_as_whole(st, &h, origin + m * 60 * NS, W);
    assert_int_equal(gp_live_hist_whole_loads(h), 1);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(st),
                                        "UPDATE allocations SET to_ns = ?1 WHERE job_id = 'old'"
                                        " AND uuid = ?2",
                                        -1, &q, NULL),
                     SQLITE_OK);
    sqlite3_bind_int64(q, 1, origin + 12 * 60 * NS);
    sqlite3_bind_text(q, 2, al[0].uuid, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
    same_as_whole(st, &h, origin + 29 * 60 * NS + NS, W);
    assert_int_equal(gp_live_hist_whole_loads(h), 2);
    same_as_whole(st, &h, origin + 29 * 60 * NS + 2 * NS, W);
    assert_int_equal(gp_live_hist_whole_loads(h), 2);
    gp_live_hist_free(h);
    free(al);
    gp_store_close(st);
}

/* A job hours old with jittered timestamps (samples stamped late by up to 10 ms, as real
 * pollers do, so nearly every sample interval differs at ns; each rank's steps jitter
 * 1%), sharing GPU 0 for 6 minutes early on and again at its end: the state of the live
 * path keeps the sample intervals and the alone steps' durations as counts at 4
 * significant digits (sig_hist.h), so it stays within a few KiB all along instead of
 * growing 16 B a sample and 8 B an alone step, while each window compared stays the
 * whole history's (the shared windows at the end read the job's thr_alone). */
static const char *LONG =
    "[node]\nname = long-node\ngpus = 2\nmodel = H100-SXM\nseed = 5\nduration = 150m\n"
    "sample_jitter = 10ms\n\n"
    "[job long]\nkind = training\ngpus = 0-1\nper_rank_steps = yes\n"
    "flops_per_step = 60T ; efficiency = 0.5\ncheckpoint_every = 600 ; checkpoint_time = 5s\n\n"
    "[job early]\nkind = training\ngpus = 0\nstart = 4m ; end = 10m\n"
    "flops_per_step = 100T ; efficiency = 0.5\nmem = 20%\n\n"
    "[job late]\nkind = training\ngpus = 0\nstart = 140m ; end = 146m\n"
    "flops_per_step = 100T ; efficiency = 0.5\nmem = 20%\n";

static void same_job_as_whole(gp_store *st, const char *job, gp_live_hist **h, int64_t as_of,
                              int64_t W, int compare) {
    char err[256];
    gp_diag_window *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(gp_diagnose_last_window_live(st, job, W, as_of, h, &a, &na, err, sizeof err),
                     0);
    if (compare) {
        assert_int_equal(
            gp_diagnose_windows_as_of(st, job, NULL, W, 1, as_of, &b, &nb, err, sizeof err), 0);
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
            assert_true(a[i].t0_ns == b[i].t0_ns && a[i].t1_ns == b[i].t1_ns);
            json_t *x = gp_findings_json(a[i].findings, a[i].n, 0),
                   *y = gp_findings_json(b[i].findings, b[i].n, 0);
            assert_true(json_array_size(y) > 0);
            if (!json_equal(x, y)) {
                char *s1 = json_dumps(y, JSON_COMPACT), *s2 = json_dumps(x, JSON_COMPACT);
                fail_msg("as of %lld:\nwhole: %s\nlive:  %s", (long long)as_of, s1, s2);
            }
            json_decref(x);
            json_decref(y);
        }
        gp_diag_windows_free(b, nb);
    }
    gp_diag_windows_free(a, na);
}

static void exec_ii(sqlite3 *db, const char *sql, const char *uuid, int64_t a, int64_t b) {
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    sqlite3_bind_text(q, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 2, a);
    sqlite3_bind_int64(q, 3, b);
    assert_int_equal(sqlite3_step(q), SQLITE_DONE);
    sqlite3_finalize(q);
}

static int cmp_ts(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median sample interval of device uuid over the job's samples up to as_of, exact
 * (the ((n - 1) / 2)-th smallest, as features.c takes it) */
static int64_t exact_dt_med(gp_store *st, const char *uuid, int64_t as_of) {
    char err[256];
    gp_job_input in;
    assert_int_equal(gp_job_input_load_range(st, "long", 1, INT64_MIN, as_of, &in, err, sizeof err),
                     0);
    gp_job_input_clip_as_of(&in, as_of);
    int64_t *ts = malloc((in.n_samples + 1) * sizeof *ts);
    assert_non_null(ts);
    size_t n = 0;
    for (size_t i = 0; i < in.n_samples; i++)
        if (!strcmp(in.samples[i].uuid, uuid)) ts[n++] = in.samples[i].ts_ns;
    assert_true(n > 100);
    qsort(ts, n, sizeof *ts, cmp_ts);
    for (size_t i = 0; i + 1 < n; i++)
        ts[i] = ts[i + 1] - ts[i];
    qsort(ts, n - 1, sizeof *ts, cmp_ts);
    int64_t med = ts[(n - 2) / 2];
    free(ts);
    gp_job_input_free(&in);
    return med;
}

static void test_long_jittered_job_state_is_bounded(void **state) {
    (void)state;
    char err[512];
    gp_store *st = scenario_store("long", LONG, 150 * 60 * NS);
    gp_alloc *al = NULL;
    size_t nal = 0;
    assert_int_equal(gp_store_job_allocs(st, "long", &al, &nal), 0);
    assert_true(nal == 2);
    int64_t origin = al[0].from_ns, W = 5 * 60 * NS;
    /* A hole in GPU 1's samples after 60 min whose length lies between 5x the exact median
     * interval (as of 62 min) and 5x that median at 4 significant digits: whether it is a
     * gap (its sample weighted by the median interval, not by the hole) depends on the
     * resolution, and the live and whole-history paths must take the same. The samples
     * over (t, t + 5.5 s) go, and the next one moves into the hole; its two intervals stay
     * above the median, so moving it does not move the median. */
    sqlite3 *db = gp_store_db(st);
    const char *g1 = al[1].uuid;
    int64_t as_of_gap = origin + 62 * 60 * NS, t = INT64_MIN, next = INT64_MIN;
    {
        sqlite3_stmt *q;
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT max(ts_ns) FROM samples WHERE uuid = ?1 AND"
                                            " ts_ns <= ?2",
                                            -1, &q, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(q, 1, g1, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, origin + 60 * 60 * NS);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        t = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        exec_ii(db, "DELETE FROM samples WHERE uuid = ?1 AND ts_ns > ?2 AND ts_ns < ?3", g1, t,
                t + 5 * NS + NS / 2);
        assert_int_equal(sqlite3_changes(db), 5);
        assert_int_equal(sqlite3_prepare_v2(db,
                                            "SELECT min(ts_ns) FROM samples WHERE uuid = ?1 AND"
                                            " ts_ns > ?2",
                                            -1, &q, NULL),
                         SQLITE_OK);
        sqlite3_bind_text(q, 1, g1, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(q, 2, t);
        assert_int_equal(sqlite3_step(q), SQLITE_ROW);
        next = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    exec_ii(db, "UPDATE samples SET ts_ns = ?3 WHERE uuid = ?1 AND ts_ns = ?2", g1, next,
            t + 5 * NS);
    int64_t e = exact_dt_med(st, g1, as_of_gap), r = gp_sig_round_ns(e);
    assert_true(e != r);
    int64_t hole = (5 * e + 5 * r) / 2, lo5 = 5 * (e < r ? e : r), hi5 = 5 * (e < r ? r : e);
    assert_true(hole > lo5 && hole <= hi5);
    exec_ii(db, "UPDATE samples SET ts_ns = ?3 WHERE uuid = ?1 AND ts_ns = ?2", g1, t + 5 * NS,
            t + hole);
    assert_true(exact_dt_med(st, g1, as_of_gap) == e);
    /* the timestamps jitter: the sample intervals of a device are nearly all distinct */
    gp_job_input in;
    assert_int_equal(
        gp_job_input_load_range(st, "long", 1, INT64_MIN, INT64_MAX, &in, err, sizeof err), 0);
    size_t n_int = 0, distinct = 0;
    int64_t *iv = malloc(in.n_samples * sizeof *iv);
    assert_non_null(iv);
    for (size_t i = 1; i < in.n_samples; i++)
        if (!strcmp(in.samples[i].uuid, al[0].uuid) && !strcmp(in.samples[i - 1].uuid, al[0].uuid))
            iv[n_int++] = in.samples[i].ts_ns - in.samples[i - 1].ts_ns;
    for (size_t i = 0; i < n_int; i++) {
        int seen = 0;
        for (size_t k = i > 64 ? i - 64 : 0; k < i && !seen; k++)
            seen = iv[k] == iv[i];
        distinct += !seen;
    }
    assert_true(n_int >= 8000);
    assert_true(distinct * 10 >= n_int * 9);
    free(iv);
    gp_job_input_free(&in);
    gp_live_hist *h = NULL;
    size_t bytes_30m = 0, bytes_max = 0;
    for (int m = 8; m <= 149; m++) {
        /* compared with the whole history every 10 minutes, and every minute of the late
         * sharing (its windows read the job's thr_alone) and of the last minutes */
        int compare = m % 10 == 0 || (m >= 141 && m <= 149) || m <= 12 || (m >= 60 && m <= 66);
        same_job_as_whole(st, "long", &h, origin + m * 60 * NS, W, compare);
        size_t b = gp_live_hist_bytes(h);
        if (m == 30) bytes_30m = b;
        if (b > bytes_max) bytes_max = b;
    }
    size_t bytes_end = gp_live_hist_bytes(h);
    if (getenv("GP_TEST_VERBOSE"))
        fprintf(stderr,
                "long: state %zu B at 30 min, %zu B at 149 min, max %zu B; whole loads %llu\n",
                bytes_30m, bytes_end, bytes_max, (unsigned long long)gp_live_hist_whole_loads(h));
    /* the alone steps are kept (the early sharing started it), and the whole job was read
     * only at the first pass and its first shared window */
    assert_true(gp_live_hist_whole_loads(h) <= 2);
    /* bounded: a few KiB, and two more hours add next to nothing (kept exactly, the 2
     * devices' ~7,000 more intervals each and the ~120,000 more alone steps would add
     * over 1 MB) */
    assert_true(bytes_max <= 12 * 1024);
    assert_true(bytes_end <= bytes_30m + 2048);
    gp_live_hist_free(h);
    free(al);
    gp_store_close(st);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_pass_is_the_whole_history),
        cmocka_unit_test(test_demo_every_pass),
        cmocka_unit_test(test_old_job_reads_one_window),
        cmocka_unit_test(test_late_close_rebuilds),
        cmocka_unit_test(test_long_jittered_job_state_is_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
