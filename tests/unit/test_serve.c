/* test_serve.c: the HTTP server (src/serve/) over a store this test fills through store.h
 * with known numbers: /metrics parses as Prometheus text and its buckets sum to the
 * allocated GPU-seconds computed here; job series average the job's GPUs; errors are 4xx
 * JSON; a live server enforces loopback-or-token and bearer tokens, and survives a burst
 * of malformed requests. */
#include "testutil.h"
#include "serve_testutil.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "report/html_report.h"
#include "serve/serve.h"
#include "store/store.h"
#include "util/promtext.h"

#define T0 1700000000000000000LL
#define SEC 1000000000LL
#define DUR_S 600 /* the job holds 2 GPUs for 600 s */

static char dir[64], db[128];

static void fill_store(void) {
    snprintf(dir, sizeof dir, "/tmp/gp-test-serve-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/s.db", dir);
    char err[256];
    gp_store *s;
    assert_int_equal(gp_store_open(db, 0, &s, err, sizeof err), 0);
    gp_store_begin(s);
    const char *uuids[2] = {"GPU-aaaa", "GPU-bbbb"};
    const double util[2] = {0.5, 0.9};
    for (int d = 0; d < 2; d++) {
        gp_device dev = {0};
        snprintf(dev.uuid, sizeof dev.uuid, "%s", uuids[d]);
        dev.index = d;
        snprintf(dev.name, sizeof dev.name, "NVIDIA H100 80GB HBM3");
        dev.spec = gp_spec_lookup(dev.name);
        dev.memory_total_bytes = 80ull << 30;
        assert_int_equal(gp_store_put_device(s, &dev), 0);
        for (int t = 1; t <= DUR_S; t++) {
            gp_sample x = {0};
            snprintf(x.uuid, sizeof x.uuid, "%s", uuids[d]);
            x.ts_ns = T0 + t * SEC;
            x.valid = GP_F_GPU_UTIL | GP_F_POWER | GP_F_ENERGY | GP_F_MEM_USED | GP_F_MEM_TOTAL;
            x.gpu_util = util[d];
            x.power_w = 300;
            x.energy_mj = (uint64_t)t * 300000;
            x.mem_used_bytes = 40ull << 30;
            x.mem_total_bytes = 80ull << 30;
            assert_int_equal(gp_store_put_sample(s, &x), 0);
        }
    }
    gp_job j = {0};
    snprintf(j.id, sizeof j.id, "j1");
    snprintf(j.name, sizeof j.name, "trainer \"quoted\"");
    snprintf(j.user, sizeof j.user, "alice");
    j.origin = GP_ORIGIN_TAG;
    j.submitted_ns = T0 - 10 * SEC;
    j.allocated_ns = T0;
    j.ready_ns = -1;
    j.ended_ns = -1;
    j.exit_code = -1;
    snprintf(j.unit_name, sizeof j.unit_name, "samples");
    assert_int_equal(gp_store_put_job(s, &j), 0);
    for (int d = 0; d < 2; d++) {
        gp_alloc a = {0};
        snprintf(a.job_id, sizeof a.job_id, "j1");
        snprintf(a.uuid, sizeof a.uuid, "%s", uuids[d]);
        a.from_ns = T0;
        a.to_ns = T0 + DUR_S * SEC;
        assert_int_equal(gp_store_put_alloc(s, &a), 0);
    }
    /* 60 s of init, then one step every second carrying 32 samples each. */
    for (int k = 1; k <= DUR_S - 60; k++) {
        gp_event e;
        gp_event_init(&e, GP_EV_STEP);
        snprintf(e.job_id, sizeof e.job_id, "j1");
        e.ts_ns = T0 + (60 + k) * SEC;
        e.step_start_ns = e.ts_ns - SEC;
        e.step = k;
        e.units = 32;
        e.rank = 0;
        assert_int_equal(gp_store_put_event(s, &e), 0);
    }
    gp_finding f = {0};
    f.cls = GP_FC_NOT_READY;
    f.scope = GP_SCOPE_JOB;
    snprintf(f.scope_id, sizeof f.scope_id, "j1");
    f.t0_ns = T0;
    f.t1_ns = T0 + 60 * SEC;
    f.wasted_gpu_s = 120;
    f.wasted_cost = -1;
    f.confidence = 0.9;
    snprintf(f.summary, sizeof f.summary, "60 s before the first step");
    snprintf(f.recommendation, sizeof f.recommendation, "cache the dataset");
    gp_finding_add_evidence(&f, "time_to_ready_s", 60, ">", 30, "events");
    assert_int_equal(gp_store_replace_findings(s, "j1", &f, 1), 0);
    assert_int_equal(gp_store_commit(s), 0);
    gp_store_close(s);
}

static int setup(void **state) {
    (void)state;
    fill_store();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static gp_serve *offline(void) {
    return serve_offline(db);
}

static json_t *get_json(gp_serve *s, const char *path, const char *query, int want_status) {
    return serve_get_json(s, path, query, want_status);
}

typedef struct {
    double bucket_sum, allocated, goodput;
    int info_seen, device_util_seen;
} prom_ctx;

static int on_sample(void *vctx, const gp_prom_sample *x) {
    prom_ctx *c = vctx;
    const char *job = NULL;
    for (size_t i = 0; i < x->nlabels; i++)
        if (!strcmp(x->labels[i].name, "job_id")) job = x->labels[i].value;
    if (!strcmp(x->name, "goodput_job_gpu_seconds_total") && job && !strcmp(job, "j1")) {
        assert_int_equal(x->type, GP_PROM_COUNTER);
        c->bucket_sum += x->value;
    }
    if (!strcmp(x->name, "goodput_job_allocated_gpu_seconds_total") && job) c->allocated = x->value;
    if (!strcmp(x->name, "goodput_job_goodput_ratio") && job) c->goodput = x->value;
    if (!strcmp(x->name, "goodput_job_info")) {
        for (size_t i = 0; i < x->nlabels; i++)
            if (!strcmp(x->labels[i].name, "name"))
                assert_string_equal(x->labels[i].value, "trainer \"quoted\"");
        c->info_seen = 1;
    }
    if (!strcmp(x->name, "goodput_device_gpu_utilization_ratio")) {
        assert_int_equal(x->type, GP_PROM_GAUGE);
        c->device_util_seen++;
    }
    return 0;
}

static void test_metrics(void **state) {
    (void)state;
    gp_serve *s = offline();
    char *body;
    size_t len;
    const char *ct;
    assert_int_equal(gp_serve_render(s, "GET", "/metrics", NULL, &body, &len, &ct), 200);
    assert_non_null(strstr(ct, "text/plain"));
    prom_ctx c = {0};
    char err[256] = "";
    int rc = gp_prom_parse(body, len, on_sample, NULL, &c, 0, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    /* Every counter family ends in _total. */
    for (char *p = strstr(body, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
        char name[128], type[32];
        assert_int_equal(sscanf(p, "# TYPE %127s %31s", name, type), 2);
        if (!strcmp(type, "counter")) assert_non_null(strstr(name, "_total"));
    }
    free(body);
    assert_true(c.info_seen);
    assert_int_equal(c.device_util_seen, 2);
    double alloc = 2.0 * DUR_S; /* 2 GPUs x 600 s */
    assert_true(fabs(c.allocated - alloc) < 1e-6 * alloc + 2.0);
    assert_true(fabs(c.bucket_sum - c.allocated) < 1e-6 * alloc);
    /* 60 s of the 600 before the first step cannot be productive. */
    assert_true(c.goodput > 0 && c.goodput <= (DUR_S - 60.0) / DUR_S + 1e-9);
    gp_serve_stop(s);
}

static void test_api(void **state) {
    (void)state;
    gp_serve *s = offline();
    json_t *o = get_json(s, "/api/v1/jobs", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(o, "jobs")), 1);
    json_decref(o);

    o = get_json(s, "/api/v1/jobs/j1", "windows=4", 200);
    /* At most 4 windows of a round width: 600 s / 4 rounds up to 300 s, so 2. */
    assert_int_equal(json_array_size(json_object_get(o, "windows")), 2);
    assert_int_equal(json_array_size(json_object_get(o, "allocations")), 2);
    assert_int_equal(json_array_size(json_object_get(o, "findings")), 1);
    json_t *lc = json_object_get(o, "lifecycle");
    assert_true(fabs(json_real_value(json_object_get(lc, "allocated_s")) - T0 / 1e9) < 1e-3);
    /* The first window (0-300 s) holds the 60 s not-ready stretch on 2 GPUs. */
    json_t *w0 =
        json_object_get(json_array_get(json_object_get(o, "windows"), 0), "gpu_s_by_bucket");
    assert_true(json_real_value(json_object_get(w0, "not_ready")) > 100);
    json_decref(o);

    /* Series: 10 buckets of 60 s; GPU util averages 0.5 and 0.9 = 0.7; progress after 60 s
     * is 32 samples per second. */
    char q[160];
    snprintf(q, sizeof q, "from=%.0f&to=%.0f&points=10", T0 / 1e9, T0 / 1e9 + DUR_S);
    o = get_json(s, "/api/v1/jobs/j1/series", q, 200);
    json_t *t = json_object_get(o, "t");
    json_t *u = json_object_get(json_object_get(o, "signals"), "gpu_util");
    json_t *rate = json_object_get(json_object_get(o, "progress"), "rate_per_s");
    assert_int_equal(json_array_size(t), 10);
    assert_int_equal(json_array_size(u), 10);
    /* 60 s buckets come from the 10-second rollups (float sums: 1e-6), the last minute
     * from raw rows; a bucket counted twice would show as a rate over 32. */
    for (size_t i = 0; i < 10; i++)
        assert_true(fabs(json_real_value(json_array_get(u, i)) - 0.7) < 1e-6);
    assert_true(fabs(json_real_value(json_array_get(rate, 0)) - 0) < 1e-9);
    for (size_t i = 2; i < 10; i++)
        assert_true(fabs(json_real_value(json_array_get(rate, i)) - 32) < 1e-4);
    json_decref(o);
    /* Again (the rollup now exists and is extended, not rebuilt), and with 6 s buckets
     * (raw rows only). */
    for (int pass = 0; pass < 2; pass++) {
        snprintf(q, sizeof q, "from=%.0f&to=%.0f&points=%d", T0 / 1e9, T0 / 1e9 + DUR_S,
                 pass ? 100 : 10);
        o = get_json(s, "/api/v1/jobs/j1/series", q, 200);
        u = json_object_get(json_object_get(o, "signals"), "gpu_util");
        rate = json_object_get(json_object_get(o, "progress"), "rate_per_s");
        size_t nb = json_array_size(u);
        assert_int_equal(nb, pass ? 100 : 10);
        for (size_t i = 0; i < nb; i++)
            assert_true(fabs(json_real_value(json_array_get(u, i)) - 0.7) < 1e-6);
        for (size_t i = nb / 5 + 1; i < nb; i++)
            assert_true(fabs(json_real_value(json_array_get(rate, i)) - 32) < 1e-4);
        json_decref(o);
    }

    o = get_json(s, "/api/v1/devices/GPU-bbbb/series", "points=5", 200);
    u = json_object_get(json_object_get(o, "signals"), "gpu_util");
    assert_int_equal(json_array_size(u), 5);
    assert_true(fabs(json_real_value(json_array_get(u, 2)) - 0.9) < 1e-9);
    json_decref(o);

    o = get_json(s, "/api/v1/devices", NULL, 200);
    assert_int_equal(json_array_size(json_object_get(o, "devices")), 2);
    json_decref(o);
    o = get_json(s, "/api/v1/fleet", NULL, 200);
    assert_true(fabs(json_real_value(json_object_get(o, "allocated_gpu_h")) - 2.0 * DUR_S / 3600) <
                1e-3);
    json_decref(o);
    o = get_json(s, "/api/v1/findings", "class=not_ready", 200);
    assert_int_equal(json_array_size(json_object_get(o, "findings")), 1);
    /* no agent pass: live is null and there are no live findings */
    assert_true(json_is_null(json_object_get(o, "live")));
    assert_int_equal(json_array_size(json_object_get(o, "live_findings")), 0);
    json_decref(o);
    /* a live pass as the agent hands it over (cli/agent_live.c), filtered like the rest */
    gp_serve_set_live(s, "{\"as_of_ns\": 7, \"window_s\": 600.0, \"jobs\": [], \"findings\": ["
                         "{\"job\": \"a\", \"class\": \"input_bound\", \"live\": true},"
                         "{\"job\": \"b\", \"class\": \"input_bound\", \"live\": true},"
                         "{\"job\": \"b\", \"class\": \"not_ready\", \"live\": true}]}");
    o = get_json(s, "/api/v1/findings", "job=b", 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "live"), "as_of_ns")),
                     7);
    assert_int_equal(json_array_size(json_object_get(o, "live_findings")), 2);
    json_decref(o);
    o = get_json(s, "/api/v1/findings", "class=input_bound&limit=1", 200);
    json_t *lf = json_object_get(o, "live_findings");
    assert_int_equal(json_array_size(lf), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(lf, 0), "job")), "a");
    json_decref(o);
    gp_serve_stop(s);
}

static void test_errors(void **state) {
    (void)state;
    gp_serve *s = offline();
    struct {
        const char *path, *query;
        int status;
    } cases[] = {
        {"/nope", NULL, 404},
        {"/api/v2/jobs", NULL, 404},
        {"/api/v1/jobs/none", NULL, 404},
        {"/api/v1/devices/GPU-zzz", NULL, 404},
        {"/api/v1/jobs/j1/what", NULL, 404},
        {"/api/v1/jobs/j1/series", "points=0", 400},
        {"/api/v1/jobs/j1/series", "points=abc", 400},
        {"/api/v1/jobs/j1/series", "points=1e9", 400},
        {"/api/v1/jobs/j1/series", "from=10&to=5", 400},
        {"/api/v1/jobs/j1/series", "from=0&to=99999999999", 400},
        {"/api/v1/jobs/j1", "windows=-1", 400},
        {"/api/v1/findings", "class=bogus", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *o = get_json(s, cases[i].path, cases[i].query, cases[i].status);
        assert_true(json_is_string(json_object_get(o, "error")));
        assert_int_equal(json_integer_value(json_object_get(o, "status")), cases[i].status);
        json_decref(o);
    }
    char *body;
    size_t len;
    /* No agent attached: POST is refused, not lost. */
    assert_int_equal(gp_serve_render(s, "POST", "/api/v1/events", NULL, &body, &len, NULL), 503);
    free(body);
    assert_int_equal(gp_serve_render(s, "DELETE", "/api/v1/jobs", NULL, &body, &len, NULL), 405);
    free(body);
    gp_serve_stop(s);
}

static size_t sink(char *p, size_t sz, size_t n, void *ctx) {
    (void)p, (void)ctx;
    return sz * n;
}

static long http_get(int port, const char *path, const char *auth) {
    CURL *c = curl_easy_init();
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    struct curl_slist *h = NULL;
    if (auth) h = curl_slist_append(h, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    long code = -1;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return code;
}

static void test_live_and_auth(void **state) {
    (void)state;
    char err[256];
    gp_serve *s;
    /* A non-loopback address needs a token or --insecure. */
    gp_serve_opts o = {.listen = "0.0.0.0:0", .db_path = db};
    assert_int_not_equal(gp_serve_start(&o, &s, err, sizeof err), 0);
    assert_non_null(strstr(err, "token"));
    o.listen = "bogus";
    assert_int_not_equal(gp_serve_start(&o, &s, err, sizeof err), 0);

    o.listen = "127.0.0.1:0";
    assert_int_equal(gp_serve_start(&o, &s, err, sizeof err), 0);
    int port = gp_serve_port(s);
    assert_true(port > 0);
    assert_int_equal(http_get(port, "/metrics", NULL), 200);
    assert_int_equal(http_get(port, "/", NULL), 200);
    assert_int_equal(http_get(port, "/api/v1/jobs/j1/series?points=100000", NULL), 400);
    /* A burst of malformed requests, then the server still answers. */
    for (int i = 0; i < 50; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            const char *junk[] = {
                "GARBAGE\r\n\r\n", "GET /%%%%%zz HTTP/1.1\r\nHost: x\r\n\r\n",
                "POST /api/v1/events HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: x\r\nX: " /* truncated header */};
            ssize_t w = write(fd, junk[i % 4], strlen(junk[i % 4]));
            (void)w;
        }
        close(fd);
    }
    assert_int_equal(http_get(port, "/api/v1/fleet", NULL), 200);
    gp_serve_stop(s);

    /* Tokens: loopback or not, once a token is set every data route needs it. */
    char tok[160];
    snprintf(tok, sizeof tok, "%s/token", dir);
    FILE *f = fopen(tok, "w");
    fputs("s3cret-token-0123456789\n", f);
    fclose(f);
    o.listen = "0.0.0.0:0";
    o.token_file = tok;
    assert_int_equal(gp_serve_start(&o, &s, err, sizeof err), 0);
    port = gp_serve_port(s);
    assert_int_equal(http_get(port, "/metrics", NULL), 401);
    assert_int_equal(http_get(port, "/metrics", "Authorization: Bearer wrong"), 401);
    assert_int_equal(http_get(port, "/metrics", "Authorization: Bearer s3cret-token-012345678"),
                     401);
    assert_int_equal(http_get(port, "/metrics", "Authorization: Bearer s3cret-token-0123456789"),
                     200);
    assert_int_equal(http_get(port, "/", NULL), 200); /* the page itself holds no data */
    gp_serve_stop(s);
    /* A short token is refused. */
    f = fopen(tok, "w");
    fputs("short\n", f);
    fclose(f);
    assert_int_not_equal(gp_serve_start(&o, &s, err, sizeof err), 0);
}

/* goodput report --html: self-contained (no script, no external reference), inline SVG,
 * the job and its finding present, written atomically (no .tmp left behind). */
static void test_html_report(void **state) {
    (void)state;
    char path[160], tmp[170], err[256];
    snprintf(path, sizeof path, "%s/r.html", dir);
    assert_int_equal(gp_report_html(db, NULL, NULL, path, err, sizeof err), 0);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    assert_non_null(strstr(buf, "<svg"));
    assert_non_null(strstr(buf, "<polyline"));
    assert_null(strstr(buf, "<script"));
    assert_null(strstr(buf, "src=\"http"));
    assert_null(strstr(buf, "href=\"http"));
    assert_non_null(strstr(buf, "trainer &quot;quoted&quot;"));
    assert_non_null(strstr(buf, "cache the dataset"));
    assert_int_not_equal(gp_report_html(db, "nope", NULL, path, err, sizeof err), 0);
    assert_non_null(strstr(err, "nope"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics),     cmocka_unit_test(test_api),
        cmocka_unit_test(test_errors),      cmocka_unit_test(test_live_and_auth),
        cmocka_unit_test(test_html_report),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
