/* test_fleet_ledger.c: the fleet ledger's spool and its idempotent upserts.
 *
 * The store comes from a real simulated node (examples/scenarios/consumer.conf, run as
 * fast as possible). Spool tests need no database: the ledger points at a socket
 * directory with no server. Upsert tests start a throwaway PostgreSQL on a unix socket
 * only (no TCP) when the Debian packages and root are there, and skip otherwise. */
#include "testutil.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <sys/stat.h>

#include "agent/agent.h"
#include "engine/accounting/job_summary.h"
#include "fleet/fleet_report.h"
#include "fleet/ledger.h"
#include "fleet/ledger_pg.h"

static char *tmp;
static char db_path[512], pg_url[600];
static int have_pg;

static int64_t count(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static long pg_count(const char *sql) {
    PGconn *c = PQconnectdb(pg_url);
    long n = -1;
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return n;
}

static double pg_double(const char *sql) {
    PGconn *c = PQconnectdb(pg_url);
    double v = NAN;
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        v = strtod(PQgetvalue(r, 0, 0), NULL);
    PQclear(r);
    PQfinish(c);
    return v;
}

static void make_node_store(const char *path) {
    gp_agent_opts o = {
        .source_spec = "sim:examples/scenarios/consumer.conf", .db_path = path, .speed = 0};
    gp_agent *a;
    char err[512];
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) fail_msg("%s", err);
    if (gp_agent_run(a, NULL, err, sizeof err) != 0) fail_msg("%s", err);
    gp_agent_close(a);
}

static int start_pg(void) {
    if (getuid() != 0 || access("/usr/lib/postgresql", F_OK) != 0) return 0;
    char cmd[2048];
    snprintf(
        cmd, sizeof cmd,
        "set -e; BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); "
        "mkdir -p %s/pg; chown postgres %s/pg; chmod 755 %s; "
        "runuser -u postgres -- $BIN/initdb -D %s/pg/data -A trust -U postgres >/dev/null 2>&1; "
        "runuser -u postgres -- $BIN/pg_ctl -D %s/pg/data -l %s/pg/log -w "
        "-o \"-c listen_addresses='' -k %s/pg -c fsync=off\" start >/dev/null 2>&1",
        tmp, tmp, tmp, tmp, tmp, tmp, tmp);
    if (system(cmd) != 0) return 0;
    snprintf(pg_url, sizeof pg_url, "postgresql:///postgres?host=%s/pg&user=postgres", tmp);
    return 1;
}

static int setup(void **state) {
    (void)state;
    tmp = gp_test_tmpdir();
    snprintf(db_path, sizeof db_path, "%s/node.db", tmp);
    make_node_store(db_path);
    have_pg = start_pg();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[1200];
    if (have_pg) {
        snprintf(
            cmd, sizeof cmd,
            "BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); "
            "runuser -u postgres -- $BIN/pg_ctl -D %s/pg/data -m immediate stop >/dev/null 2>&1",
            tmp);
        if (system(cmd) != 0) fprintf(stderr, "pg_ctl stop failed\n");
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp);
    free(tmp);
    return 0;
}

static gp_store *copy_store(const char *name, char *path, size_t len) {
    snprintf(path, len, "%s/%s", tmp, name);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp %s %s", db_path, path);
    assert_int_equal(system(cmd), 0);
    gp_store *s;
    char err[512];
    if (gp_store_open(path, 0, &s, err, sizeof err) != 0) fail_msg("%s", err);
    return s;
}

/* Unreachable PostgreSQL: rows wait in the spool, one per key, and an unchanged store
 * spools nothing new. */
static void test_spool_while_unreachable(void **state) {
    (void)state;
    char path[600], err[512];
    gp_store *s = copy_store("spool.db", path, sizeof path);
    char url[700];
    snprintf(url, sizeof url, "postgresql:///x?host=%s/nowhere&user=postgres", tmp);
    gp_ledger_opts o = {.url = url, .host = "n1", .window_ns = 300000000000LL};
    gp_ledger *l;
    assert_int_equal(gp_ledger_open(&o, s, &l, err, sizeof err), 0);
    assert_int_equal(gp_ledger_collect(l, -1, err, sizeof err), 0);
    sqlite3 *db = gp_store_db(s);
    int64_t jobs = count(db, "SELECT count(*) FROM jobs");
    int64_t allocs = count(db, "SELECT count(*) FROM allocations");
    int64_t spooled = count(db, "SELECT count(*) FROM ledger_spool");
    assert_true(jobs > 0);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool WHERE kind = 'job'"), jobs);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool WHERE kind = 'alloc'"), allocs);
    assert_true(count(db, "SELECT count(*) FROM ledger_spool WHERE kind = 'window'") >= jobs);
    assert_true(gp_ledger_push(l, 1, err, sizeof err) < 0);
    assert_non_null(strstr(err, "cannot connect"));
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool"), spooled);
    /* A second pass over the same store adds nothing. */
    assert_int_equal(gp_ledger_collect(l, -1, err, sizeof err), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool"), spooled);
    assert_int_equal(gp_ledger_get_stats(l)->collected, (uint64_t)spooled);
    /* A changed job replaces its waiting row (same key, newer sequence), never adds one. */
    int64_t seq0 = count(db, "SELECT max(seq) FROM ledger_spool");
    sqlite3_exec(
        db, "UPDATE jobs SET exit_state = 'failed' WHERE rowid = (SELECT min(rowid) FROM jobs)",
        NULL, NULL, NULL);
    assert_int_equal(gp_ledger_collect(l, -1, err, sizeof err), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool"), spooled);
    assert_true(count(db, "SELECT max(seq) FROM ledger_spool WHERE kind = 'job'") > seq0);
    gp_ledger_close(l);
    gp_store_close(s);
}

/* The spool is bounded; rows held back are spooled once there is room. */
static void test_spool_bound(void **state) {
    (void)state;
    char path[600], err[512], url[700];
    gp_store *s = copy_store("bound.db", path, sizeof path);
    snprintf(url, sizeof url, "postgresql:///x?host=%s/nowhere&user=postgres", tmp);
    gp_ledger_opts o = {.url = url, .host = "n1", .window_ns = 300000000000LL, .spool_max_rows = 3};
    gp_ledger *l;
    assert_int_equal(gp_ledger_open(&o, s, &l, err, sizeof err), 0);
    assert_int_equal(gp_ledger_collect(l, -1, err, sizeof err), 0);
    sqlite3 *db = gp_store_db(s);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool"), 3);
    assert_true(gp_ledger_get_stats(l)->spool_full > 0);
    /* Draining the spool by hand (as a push would) makes room for the rest. */
    sqlite3_exec(db, "DELETE FROM ledger_spool", NULL, NULL, NULL);
    assert_int_equal(gp_ledger_collect(l, -1, err, sizeof err), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool"), 3);
    gp_ledger_close(l);
    gp_store_close(s);
}

/* Against a real PostgreSQL: everything arrives once; re-sending changes nothing;
 * findings of a job are replaced as a set; the fleet report sums the jobs. */
static void test_pg_idempotent(void **state) {
    (void)state;
    if (!have_pg) skip();
    char path[600], err[512];
    gp_store *s = copy_store("pg.db", path, sizeof path);
    gp_ledger_opts o = {.url = pg_url, .host = "n1", .window_ns = 300000000000LL, .batch_rows = 7};
    gp_ledger *l;
    assert_int_equal(gp_ledger_open(&o, s, &l, err, sizeof err), 0);
    gp_finding f[2] = {
        {.cls = GP_FC_INPUT_BOUND, .scope = GP_SCOPE_JOB, .wasted_gpu_s = 100, .confidence = 0.5},
        {.cls = GP_FC_IDLE_ALLOCATED,
         .scope = GP_SCOPE_JOB,
         .wasted_gpu_s = 50,
         .confidence = 0.9}};
    gp_finding_add_evidence(&f[0], "sm_active", 0.2, "<", 0.5, "sim");
    gp_job *jobs;
    size_t nj;
    assert_int_equal(gp_store_list_jobs(s, &jobs, &nj), 0);
    assert_true(nj > 0);
    gp_store_replace_findings(s, jobs[0].id, f, 2);
    if (gp_ledger_drain(l, 20000000000LL, err, sizeof err) != 0) fail_msg("%s", err);
    sqlite3 *db = gp_store_db(s);
    assert_int_equal(count(db, "SELECT count(*) FROM ledger_spool"), 0);
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_jobs"), (long)nj);
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_allocations"),
                     (long)count(db, "SELECT count(*) FROM allocations"));
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_findings"), 2);
    long windows = pg_count("SELECT count(*) FROM gp_ledger_windows");
    assert_true(windows >= (long)nj);
    /* Windows add up to each job's allocated GPU-seconds. */
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_jobs j WHERE abs(j.allocated_gpu_s - "
                              "(SELECT sum(allocated_gpu_s) FROM gp_ledger_windows w WHERE "
                              "w.host = j.host AND w.job_id = j.job_id)) > 1e-6"),
                     0);
    /* Re-send everything (as after a crash between commit and spool delete). */
    sqlite3_exec(db, "DELETE FROM ledger_sent", NULL, NULL, NULL);
    gp_ledger_close(l);
    assert_int_equal(gp_ledger_open(&o, s, &l, err, sizeof err), 0);
    assert_int_equal(gp_ledger_drain(l, 20000000000LL, err, sizeof err), 0);
    assert_true(gp_ledger_get_stats(l)->sent > 0);
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_jobs"), (long)nj);
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_windows"), windows);
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_findings"), 2);
    /* Findings are a set per job: one left in the store, one in the ledger. */
    gp_store_replace_findings(s, jobs[0].id, &f[1], 1);
    assert_int_equal(gp_ledger_drain(l, 20000000000LL, err, sizeof err), 0);
    assert_int_equal(pg_count("SELECT count(*) FROM gp_ledger_findings"), 1);
    assert_int_equal(
        pg_count("SELECT count(*) FROM gp_ledger_findings WHERE class = 'idle_allocated'"), 1);
    /* The fleet report's total is the sum of the job rows, computed here from the store. */
    double alloc = 0;
    for (size_t i = 0; i < nj; i++) {
        gp_job_summary js;
        gp_summary_opts so = {0};
        assert_int_equal(gp_job_summary_compute(s, jobs[i].id, &so, &js, err, sizeof err), 0);
        alloc += js.gp.allocated_gpu_s;
    }
    assert_near(pg_double("SELECT sum(allocated_gpu_s) FROM gp_ledger_jobs"), alloc, 1e-6 * alloc);
    char out_path[700];
    snprintf(out_path, sizeof out_path, "%s/report.json", tmp);
    FILE *out = fopen(out_path, "w");
    gp_fleet_report_opts ro = {.url = pg_url, .group_by = "user", .json = 1};
    assert_int_equal(gp_fleet_report(&ro, out, err, sizeof err), 0);
    fclose(out);
    json_error_t je;
    json_t *root = json_load_file(out_path, 0, &je);
    assert_non_null(root);
    json_t *total = json_object_get(root, "total");
    assert_near(json_real_value(json_object_get(total, "allocated_gpu_s")), alloc, 1e-6 * alloc);
    assert_int_equal(json_integer_value(json_object_get(total, "jobs")), (json_int_t)nj);
    json_decref(root);
    ro.group_by = "nonsense";
    assert_true(gp_fleet_report(&ro, stdout, err, sizeof err) < 0);
    free(jobs);
    gp_ledger_close(l);
    gp_store_close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spool_while_unreachable),
        cmocka_unit_test(test_spool_bound),
        cmocka_unit_test(test_pg_idempotent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
