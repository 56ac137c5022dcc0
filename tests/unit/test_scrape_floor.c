/* test_scrape_floor.c: a percentile above the largest finite bucket is a floor (issue 21).
 *
 * SGLang's own /metrics capture (tests/data/prom/sglang_docs_llama31_8b.txt) has 77% of its
 * TTFTs above the 30 s bucket: histogram_quantile says p50 = 30 s under a 214 s mean. The
 * window marks that p50 as a floor, the store keeps beyond_top (migration 12), the report
 * prints ">= 30s" and JSON adds *_is_floor; ITL, inside its buckets, stays a plain reading.
 * SLO goodput with a target above the largest bucket is unknown, not counted. */
#include "testutil.h"

#include <sqlite3.h>

#include "ingest/scrape.h"
#include "ingest/scrape_store.h"
#include "store/schema.h"
#include "store/store.h"

#define SEC 1000000000LL

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    b[n] = 0;
    fclose(f);
    return b;
}

/* The capture as the window since the server started (every count from 0), over 100 s. */
static void sglang_window(double slo_ttft_s, double slo_itl_s, gp_scrape_window *w) {
    char *t = read_file("tests/data/prom/sglang_docs_llama31_8b.txt");
    assert_non_null(t);
    gp_scrape_snapshot *c = malloc(sizeof *c), *p = malloc(sizeof *p);
    char err[200];
    assert_int_equal(gp_scrape_parse(t, strlen(t), c, err, sizeof err), 0);
    *p = *c;
    for (int k = 0; k <= c->nseries; k++) {
        gp_scrape_values *v = k < c->nseries ? &p->series[k].v : &p->all;
        for (int i = 0; i < GP_SC__COUNT; i++)
            if (v->counter[i] > 0) v->counter[i] = 0;
        for (int h = 0; h < GP_SH__COUNT; h++) {
            memset(v->hist[h].cum, 0, sizeof v->hist[h].cum);
            v->hist[h].count = v->hist[h].sum = 0;
        }
    }
    p->ts_ns = 1000 * SEC;
    c->ts_ns = 1100 * SEC;
    gp_scrape_diff_slo(p, c, slo_ttft_s, slo_itl_s, w);
    snprintf(w->job_id, sizeof w->job_id, "sglang");
    free(p);
    free(c);
    free(t);
}

static void test_floor_flags(void **st) {
    (void)st;
    gp_scrape_window *w = malloc(sizeof *w);
    sglang_window(-1, -1, w);
    /* 8495 of 11008 TTFTs above 30 s: p50, p90 and p99 all sit on the bound, floors */
    assert_near(w->ttft.p50_s, 30, 0);
    assert_int_equal(gp_latency_is_floor(w->ttft.beyond_top, 0.50), 1);
    assert_int_equal(gp_latency_is_floor(w->ttft.beyond_top, 0.90), 1);
    assert_int_equal(gp_latency_is_floor(w->ttft.beyond_top, 0.99), 1);
    assert_near(w->e2e.p50_s, 60, 0);
    assert_int_equal(gp_latency_is_floor(w->e2e.beyond_top, 0.50), 1);
    /* ITL: 0.15% above 2.5 s, so even p99 is interpolated inside a bucket: readings */
    assert_true(w->itl.p99_s < 2.5);
    assert_int_equal(gp_latency_is_floor(w->itl.beyond_top, 0.50), 0);
    assert_int_equal(gp_latency_is_floor(w->itl.beyond_top, 0.99), 0);
    /* the per-engine window says the same */
    assert_int_equal(w->n_engines, 1);
    assert_near(w->eng[0].ttft.beyond_top, w->ttft.beyond_top, 0);
    /* unknown share: unknown flag; a rank landing exactly on the bound (10% beyond, p90) is
     * histogram_quantile's interpolation up to the bound, a reading, even though 1 - 0.9
     * rounds below 0.1 */
    assert_int_equal(gp_latency_is_floor(-1, 0.5), -1);
    assert_int_equal(gp_latency_is_floor(0.1, 0.9), 0);
    assert_int_equal(gp_latency_is_floor(0.1000001, 0.9), 1);
    assert_int_equal(gp_latency_is_floor(0, 0.99), 0);
    free(w);
}

static void test_slo_above_top_unknown(void **st) {
    (void)st;
    gp_scrape_window *w = malloc(sizeof *w);
    /* a 60 s TTFT target, above the 30 s bucket with 77% of TTFTs beyond it: unknown */
    sglang_window(60, -1, w);
    assert_true(w->eng[0].slo_ttft_frac < 0);
    assert_true(w->eng[0].slo_ok_per_s < 0);
    /* at the bound itself it is known: 2513 of 11008 at or under 30 s */
    sglang_window(30, -1, w);
    assert_near(w->eng[0].slo_ttft_frac, 2513.0 / 11008, 1e-12);
    assert_true(w->eng[0].slo_ok_per_s >= 0);
    /* an ITL target above 2.5 s with 11343 tokens beyond it: unknown, and so is "met both" */
    sglang_window(20, 3, w);
    assert_true(w->eng[0].slo_ttft_frac >= 0);
    assert_true(w->eng[0].slo_itl_frac < 0);
    assert_true(w->eng[0].slo_ok_per_s < 0);
    free(w);
}

static char *render_text(gp_store *s) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    gp_scrape_report_text(s, NULL, f);
    fclose(f);
    return buf;
}

/* The line of job `job` in the services table, or NULL. */
static const char *service_line(const char *text, const char *job) {
    char key[64];
    snprintf(key, sizeof key, "\n  %s ", job);
    const char *p = strstr(text, key);
    return p ? p + 1 : NULL;
}

/* Column [at, at + width) of a line, right-aligned values: copied without padding. */
static void column(const char *line, int at, int width, char *out, size_t cap) {
    int i = 0;
    while (i < width && line[at + i] == ' ')
        i++;
    snprintf(out, cap, "%.*s", width - i, line + at + i);
}

/* TTFT_P50 and ITL_P50 columns: "  %-16s %-6s %7s %7s %9s %5s %8s %8s %8s ..." */
enum { COL_TTFT_P50 = 58, COL_ITL_P50 = 76 };

static json_t *service_json(gp_store *s, const char *job) {
    json_t *root = json_object();
    gp_scrape_report_json(s, job, root);
    json_t *svc = json_array_get(json_object_get(root, "scraped_services"), 0);
    assert_non_null(svc);
    json_incref(svc);
    json_decref(root);
    return svc;
}

static void test_store_and_report(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[600], err[256];
    snprintf(path, sizeof path, "%s/s.db", dir);
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    gp_scrape_window *w = malloc(sizeof *w);
    sglang_window(60, -1, w);
    assert_int_equal(gp_store_begin(s), 0);
    assert_int_equal(gp_scrape_store_window(s, w), 0);
    assert_int_equal(gp_store_commit(s), 0);

    char *text = render_text(s), col[32];
    const char *head = strstr(text, "  JOB ");
    assert_non_null(head);
    column(head, COL_TTFT_P50, 8, col, sizeof col);
    assert_string_equal(col, "TTFT_P50");
    const char *line = service_line(text, "sglang");
    assert_non_null(line);
    column(line, COL_TTFT_P50, 8, col, sizeof col);
    assert_string_equal(col, ">= 30s");
    column(line, COL_ITL_P50, 8, col, sizeof col);
    assert_string_equal(col, "93ms"); /* 0.0931 s: inside the buckets, a plain reading */
    assert_non_null(strstr(text, "  >= : above the server's largest finite histogram bucket"));
    free(text);

    json_t *svc = service_json(s, "sglang");
    assert_near(json_real_value(json_object_get(svc, "ttft_p50_median_s")), 30, 0);
    assert_true(json_is_true(json_object_get(svc, "ttft_p50_median_is_floor")));
    assert_true(json_is_true(json_object_get(svc, "ttft_p99_worst_is_floor")));
    assert_true(json_is_true(json_object_get(svc, "e2e_p50_median_is_floor")));
    assert_true(json_is_false(json_object_get(svc, "itl_p50_median_is_floor")));
    assert_true(json_is_false(json_object_get(svc, "itl_p99_worst_is_floor")));
    json_t *eng = json_array_get(json_object_get(svc, "engines"), 0);
    assert_true(json_is_true(json_object_get(eng, "ttft_p99_worst_is_floor")));
    assert_true(json_is_false(json_object_get(eng, "itl_p99_worst_is_floor")));
    assert_true(json_is_null(json_object_get(eng, "queue_p99_worst_is_floor"))); /* no queue */
    /* the 60 s target lies above the 30 s bucket: SLO goodput unknown, not counted */
    assert_true(json_is_null(json_object_get(eng, "slo_ok_per_s")));
    assert_true(json_is_null(json_object_get(eng, "slo_ttft_fraction")));
    json_decref(svc);

    /* a row stored before migration 12: not known whether a floor; the number is shown plain */
    assert_int_equal(sqlite3_exec(gp_store_db(s),
                                  "UPDATE scrape_windows SET ttft_beyond_top = NULL;"
                                  "UPDATE scrape_engine_windows SET ttft_beyond_top = NULL;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    svc = service_json(s, "sglang");
    assert_true(json_is_null(json_object_get(svc, "ttft_p50_median_is_floor")));
    assert_true(json_is_false(json_object_get(svc, "itl_p50_median_is_floor")));
    json_decref(svc);
    text = render_text(s);
    line = service_line(text, "sglang");
    assert_non_null(line);
    column(line, COL_TTFT_P50, 8, col, sizeof col);
    assert_string_equal(col, "30000ms");
    free(text);
    gp_store_close(s);
    free(w);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
    free(dir);
}

/* A window with only the fields the median and the worst read. */
static void put(gp_store *s, int64_t t1_s, double p50_s, double p99_s, double beyond) {
    gp_scrape_window w;
    memset(&w, 0, sizeof w);
    snprintf(w.job_id, sizeof w.job_id, "svc");
    w.flavor = GP_SCRAPE_VLLM;
    w.t0_ns = (t1_s - 10) * SEC;
    w.t1_ns = t1_s * SEC;
    gp_latency unk = {-1, -1, -1, -1, -1, -1};
    w.itl = w.e2e = unk;
    w.ttft = (gp_latency){100, p50_s, p50_s, p99_s, p99_s, beyond};
    w.requests_per_s = w.ok_per_s = 10;
    w.errors_per_s = w.error_ratio = w.running = w.waiting = w.kv_cache_usage = -1;
    w.prompt_tokens_per_s = w.generation_tokens_per_s = -1;
    assert_int_equal(gp_scrape_store_window(s, &w), 0);
}

/* Over windows: the median is a floor only when the window(s) it is taken from are; the worst
 * is a floor when a window with that value is one (floors sort after readings at a tie). */
static void test_median_and_worst(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[600], err[256];
    snprintf(path, sizeof path, "%s/m.db", dir);
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    assert_int_equal(gp_store_begin(s), 0);
    put(s, 10, 1, 2, 0);     /* all inside */
    put(s, 20, 2, 3, 0.001); /* p99 inside: 0.1% beyond */
    put(s, 30, 30, 30, 0.7); /* p50 and p99 floors at the 30 s bound */
    assert_int_equal(gp_store_commit(s), 0);
    json_t *svc = service_json(s, "svc");
    assert_near(json_real_value(json_object_get(svc, "ttft_p50_median_s")), 2, 0);
    assert_true(json_is_false(json_object_get(svc, "ttft_p50_median_is_floor")));
    assert_near(json_real_value(json_object_get(svc, "ttft_p99_worst_s")), 30, 0);
    assert_true(json_is_true(json_object_get(svc, "ttft_p99_worst_is_floor")));
    assert_true(json_is_null(json_object_get(svc, "itl_p50_median_is_floor"))); /* none */
    json_decref(svc);
    assert_int_equal(gp_store_begin(s), 0);
    put(s, 40, 30, 30, 0.9); /* now two of four at the bound: the upper middle is a floor */
    put(s, 50, 30, 30, 0);   /* ... and a window whose 30 s is a reading sorts before them */
    assert_int_equal(gp_store_commit(s), 0);
    svc = service_json(s, "svc");
    /* p50s sorted: 1, 2, 30 (reading), 30 (floor), 30 (floor): the middle is the reading */
    assert_near(json_real_value(json_object_get(svc, "ttft_p50_median_s")), 30, 0);
    assert_true(json_is_false(json_object_get(svc, "ttft_p50_median_is_floor")));
    json_decref(svc);
    assert_int_equal(gp_store_begin(s), 0);
    put(s, 60, 30, 30, 0.8); /* six: middles 30 (reading) and 30 (floor): a floor */
    assert_int_equal(gp_store_commit(s), 0);
    svc = service_json(s, "svc");
    assert_true(json_is_true(json_object_get(svc, "ttft_p50_median_is_floor")));
    json_decref(svc);
    gp_store_close(s);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
    free(dir);
}

/* Migration 12 adds the columns to a version-11 store, and also migrates a store rebuilt by
 * hand as version 11 that already has them (ALTER TABLE has no IF NOT EXISTS). */
static void test_migration(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[600], err[256];
    snprintf(path, sizeof path, "%s/v.db", dir);
    gp_store *s;
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    assert_int_equal(gp_store_begin(s), 0);
    put(s, 10, 1, 2, 0);
    assert_int_equal(gp_store_commit(s), 0);
    assert_int_equal(sqlite3_exec(gp_store_db(s),
                                  "ALTER TABLE scrape_windows DROP COLUMN ttft_beyond_top;"
                                  "ALTER TABLE scrape_windows DROP COLUMN itl_beyond_top;"
                                  "ALTER TABLE scrape_windows DROP COLUMN e2e_beyond_top;"
                                  "ALTER TABLE scrape_engine_windows DROP COLUMN ttft_beyond_top;"
                                  "PRAGMA user_version=11;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    gp_store_close(s);
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s),
                                        "SELECT ttft_p50_s, ttft_beyond_top FROM scrape_windows",
                                        -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_near(sqlite3_column_double(q, 0), 1, 0);
    assert_int_equal(sqlite3_column_type(q, 1), SQLITE_NULL); /* old row: unknown */
    sqlite3_finalize(q);
    json_t *svc = service_json(s, "svc");
    assert_true(json_is_null(json_object_get(svc, "ttft_p50_median_is_floor")));
    json_decref(svc);
    assert_int_equal(sqlite3_exec(gp_store_db(s), "PRAGMA user_version=11;", NULL, NULL, NULL),
                     SQLITE_OK);
    gp_store_close(s);
    assert_int_equal(gp_store_open(path, 0, &s, err, sizeof err), 0);
    assert_int_equal(sqlite3_prepare_v2(gp_store_db(s), "PRAGMA user_version", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), gp_schema_latest());
    sqlite3_finalize(q);
    gp_store_close(s);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floor_flags),      cmocka_unit_test(test_slo_above_top_unknown),
        cmocka_unit_test(test_store_and_report), cmocka_unit_test(test_median_and_worst),
        cmocka_unit_test(test_migration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
