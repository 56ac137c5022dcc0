/* test_scrape.c: inference-server scraping over real HTTP on loopback. The first page is the
 * real vLLM v0 capture (../shared/data/prom/vllm_v0.txt); the second is derived from it here
 * with known increments, so every rate and percentile below is computed by hand from those
 * increments (Prometheus histogram_quantile arithmetic written out in the comments). */
#include "testutil.h"

#include <microhttpd.h>

#include "ingest/scrape.h"

#define T0 1764400000000000000LL
#define SEC 1000000000LL
#define MODEL "model_name=\"facebook/opt-125m\""

static const char *volatile page; /* what the server answers now; NULL: 404 */

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **ptr) {
    (void)cls, (void)url, (void)method, (void)version, (void)upload, (void)upload_size, (void)ptr;
    const char *p = page;
    struct MHD_Response *r;
    enum MHD_Result ret;
    if (!p || strcmp(url, "/metrics")) {
        r = MHD_create_response_from_buffer(9, (void *)"not found", MHD_RESPMEM_PERSISTENT);
        ret = MHD_queue_response(c, 404, r);
    } else {
        r = MHD_create_response_from_buffer(strlen(p), (void *)p, MHD_RESPMEM_MUST_COPY);
        ret = MHD_queue_response(c, 200, r);
    }
    MHD_destroy_response(r);
    return ret;
}

static char *read_file(const char *path) {
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

/* Replaces the value of the line "SERIES VALUE" with VALUE + add (and appends extra after the
 * line when given). The series must exist exactly once. */
static char *bump(char *text, const char *series, double add, const char *extra) {
    size_t sl = strlen(series);
    char *p = text, *hit = NULL;
    while ((p = strstr(p, series))) {
        if ((p == text || p[-1] == '\n') && p[sl] == ' ') {
            if (hit) fail_msg("series twice: %s", series);
            hit = p;
        }
        p += sl;
    }
    if (!hit) fail_msg("series missing: %s", series);
    char *vstart = hit + sl + 1, *vend = strchr(vstart, '\n');
    double v = strtod(vstart, NULL);
    size_t n = strlen(text) + 128 + (extra ? strlen(extra) : 0);
    char *out = malloc(n);
    snprintf(out, n, "%.*s%.17g\n%s%s", (int)(vstart - text), text, v + add, extra ? extra : "",
             vend ? vend + 1 : "");
    free(text);
    return out;
}

static char *bump_hist(char *t, const char *fam, const char *const *les, const double *adds, int n,
                       double count, double sum) {
    char series[256];
    for (int i = 0; i < n; i++) {
        snprintf(series, sizeof series, "%s_bucket{le=\"%s\"," MODEL "}", fam, les[i]);
        t = bump(t, series, adds[i], NULL);
    }
    snprintf(series, sizeof series, "%s_count{" MODEL "}", fam);
    t = bump(t, series, count, NULL);
    snprintf(series, sizeof series, "%s_sum{" MODEL "}", fam);
    return bump(t, series, sum, NULL);
}

static char *derive_second(const char *first) {
    char *t = strdup(first);
    t = bump(t, "vllm:prompt_tokens_total{" MODEL "}", 500, NULL);
    t = bump(t, "vllm:generation_tokens_total{" MODEL "}", 1200, NULL);
    t = bump(t, "vllm:request_success_total{finished_reason=\"length\"," MODEL "}", 10,
             "vllm:request_success_total{finished_reason=\"abort\"," MODEL "} 2.0\n");
    t = bump(t, "vllm:num_requests_running{" MODEL "}", 3, NULL);
    t = bump(t, "vllm:num_requests_waiting{" MODEL "}", 4, NULL);
    t = bump(t, "vllm:gpu_cache_usage_perc{" MODEL "}", 0.25, NULL);
    /* TTFT: 12 new requests: 3 in (0.04, 0.06], 5 in (0.06, 0.08], 4 in (0.1, 0.25] */
    static const char *const ttft_le[] = {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06",
                                          "0.08",  "0.1",   "0.25", "0.5",  "0.75", "1.0",
                                          "2.5",   "5.0",   "7.5",  "10.0", "+Inf"};
    static const double ttft_add[] = {0, 0, 0, 0, 0, 3, 8, 8, 12, 12, 12, 12, 12, 12, 12, 12, 12};
    t = bump_hist(t, "vllm:time_to_first_token_seconds", ttft_le, ttft_add, 17, 12, 1.2);
    /* TPOT: 100 new tokens: 60 in (0.025, 0.05], 40 in (0.05, 0.075] */
    static const char *const itl_le[] = {"0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2",
                                         "0.3",  "0.4",   "0.5",  "0.75",  "1.0", "2.5",  "+Inf"};
    static const double itl_add[] = {0,   0,   60,  100, 100, 100, 100,
                                     100, 100, 100, 100, 100, 100, 100};
    t = bump_hist(t, "vllm:time_per_output_token_seconds", itl_le, itl_add, 14, 100, 5.0);
    /* e2e: 12 requests: 10 in (1, 2.5], 2 in (2.5, 5] */
    static const char *const e2e_le[] = {"1.0",  "2.5",  "5.0",  "10.0", "15.0", "20.0",
                                         "30.0", "40.0", "50.0", "60.0", "+Inf"};
    static const double e2e_add[] = {0, 10, 12, 12, 12, 12, 12, 12, 12, 12, 12};
    return bump_hist(t, "vllm:e2e_request_latency_seconds", e2e_le, e2e_add, 11, 12, 24.0);
}

static void test_vllm_over_http(void **st) {
    (void)st;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/prom/vllm_v0.txt", gp_test_data_dir());
    char *first = read_file(path);
    if (!first) {
        print_message("skip: %s not found\n", path);
        skip();
    }
    char *second = derive_second(first);

    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
                                            NULL, NULL, answer, NULL, MHD_OPTION_END);
    assert_non_null(d);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    int port = di->port;
    char spec[128];
    snprintf(spec, sizeof spec, "127.0.0.1:%d,job=llm-1", port); /* no scheme, no path */
    gp_scraper *s;
    assert_int_equal(gp_scraper_new(spec, &s, err, sizeof err), 0);
    char want_url[128];
    snprintf(want_url, sizeof want_url, "http://127.0.0.1:%d/metrics", port);
    assert_string_equal(gp_scraper_url(s), want_url);
    assert_string_equal(gp_scraper_job(s), "llm-1");

    gp_scrape_window w;
    page = first;
    assert_int_equal(gp_scrape_poll(s, T0, &w, err, sizeof err), 0); /* baseline */
    page = second;
    assert_int_equal(gp_scrape_poll(s, T0 + 10 * SEC, &w, err, sizeof err), 1);
    assert_string_equal(w.job_id, "llm-1");
    assert_int_equal(w.flavor, GP_SCRAPE_VLLM);
    assert_int_equal(w.t0_ns, T0);
    assert_int_equal(w.t1_ns, T0 + 10 * SEC);
    assert_int_equal(w.counter_reset, 0);
    /* 500 prompt and 1200 generated tokens, 10 ok + 2 aborted requests, in 10 s */
    assert_near(w.prompt_tokens_per_s, 50.0, 1e-9);
    assert_near(w.generation_tokens_per_s, 120.0, 1e-9);
    assert_near(w.requests_per_s, 1.2, 1e-9);
    assert_near(w.ok_per_s, 1.0, 1e-9);
    assert_near(w.errors_per_s, 0.2, 1e-9);
    assert_near(w.error_ratio, 2.0 / 12.0, 1e-9);
    assert_near(w.running, 3, 0);
    assert_near(w.waiting, 4, 0);
    assert_near(w.kv_cache_usage, 0.25, 1e-12);
    /* TTFT, 12 observations. p50: rank 6 lies in (0.06, 0.08] holding 5, 3 below:
     * 0.06 + 0.02 * (6 - 3) / 5 = 0.072. p90: rank 10.8 in (0.1, 0.25] holding 4, 8 below:
     * 0.1 + 0.15 * 2.8 / 4 = 0.205. p99: rank 11.88: 0.1 + 0.15 * 3.88 / 4 = 0.2455. */
    assert_near(w.ttft.count, 12, 0);
    assert_near(w.ttft.mean_s, 0.1, 1e-9);
    assert_near(w.ttft.p50_s, 0.072, 1e-9);
    assert_near(w.ttft.p90_s, 0.205, 1e-9);
    assert_near(w.ttft.p99_s, 0.2455, 1e-9);
    /* TPOT, 100 observations. p50: rank 50 in (0.025, 0.05] holding 60: 0.025 + 0.025 * 50/60.
     * p90: rank 90 in (0.05, 0.075] holding 40, 60 below: 0.05 + 0.025 * 30/40 = 0.06875.
     * p99: 0.05 + 0.025 * 39/40 = 0.074375. */
    assert_near(w.itl.count, 100, 0);
    assert_near(w.itl.mean_s, 0.05, 1e-9);
    assert_near(w.itl.p50_s, 0.025 + 0.025 * 50.0 / 60.0, 1e-9);
    assert_near(w.itl.p90_s, 0.06875, 1e-9);
    assert_near(w.itl.p99_s, 0.074375, 1e-9);
    /* e2e, 12 observations. p50: rank 6 in (1, 2.5] holding 10: 1 + 1.5 * 0.6 = 1.9.
     * p90: rank 10.8 in (2.5, 5] holding 2: 2.5 + 2.5 * 0.8 / 2 = 3.5. p99: 2.5 + 2.5 * 1.88/2. */
    assert_near(w.e2e.count, 12, 0);
    assert_near(w.e2e.mean_s, 2.0, 1e-9);
    assert_near(w.e2e.p50_s, 1.9, 1e-9);
    assert_near(w.e2e.p90_s, 3.5, 1e-9);
    assert_near(w.e2e.p99_s, 4.85, 1e-9);

    /* The server restarts: the original page again. Counters went down, so they count from
     * zero (as Prometheus' rate() does): 5 prompt tokens / 10 s; the one TTFT in (0.25, 0.5]
     * gives p50 = 0.25 + 0.25 * 0.5 / 1 = 0.375. */
    page = first;
    assert_int_equal(gp_scrape_poll(s, T0 + 20 * SEC, &w, err, sizeof err), 1);
    assert_int_equal(w.counter_reset, 1);
    assert_near(w.prompt_tokens_per_s, 0.5, 1e-9);
    assert_near(w.generation_tokens_per_s, 0.7, 1e-9);
    assert_near(w.ok_per_s, 0.1, 1e-9);
    assert_near(w.errors_per_s, 0.0, 1e-12);
    assert_near(w.ttft.p50_s, 0.375, 1e-9);
    assert_near(w.ttft.count, 1, 0);

    /* An error answer drops the baseline; the next success is a new baseline. */
    page = NULL;
    assert_int_equal(gp_scrape_poll(s, T0 + 30 * SEC, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "HTTP 404"));
    page = second;
    assert_int_equal(gp_scrape_poll(s, T0 + 40 * SEC, &w, err, sizeof err), 0);
    /* A page with none of the known metrics is an error that says so. */
    page = "# nothing here\nup 1\n";
    assert_int_equal(gp_scrape_poll(s, T0 + 50 * SEC, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "none of the vLLM"));
    gp_scraper_free(s);
    MHD_stop_daemon(d);

    /* Nobody listening: fails quickly, no crash. */
    snprintf(spec, sizeof spec, "http://127.0.0.1:%d/metrics,timeout=500", port);
    assert_int_equal(gp_scraper_new(spec, &s, err, sizeof err), 0);
    char want_job[64];
    snprintf(want_job, sizeof want_job, "127.0.0.1:%d", port);
    assert_string_equal(gp_scraper_job(s), want_job);
    assert_int_equal(gp_scrape_poll(s, T0, &w, err, sizeof err), -1);
    gp_scraper_free(s);
    free(first);
    free(second);
}

static void test_spec_errors(void **st) {
    (void)st;
    gp_scraper *s;
    char err[256];
    assert_int_equal(gp_scraper_new("", &s, err, sizeof err), -1);
    assert_int_equal(gp_scraper_new("http://h:1,job=bad id", &s, err, sizeof err), -1);
    assert_int_equal(gp_scraper_new("http://h:1,color=red", &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown option"));
    assert_int_equal(gp_scraper_new("ftp://h/metrics", &s, err, sizeof err), -1);
    assert_int_equal(gp_scraper_new("http://10.1.2.3:8000/m", &s, err, sizeof err), 0);
    assert_string_equal(gp_scraper_job(s), "10.1.2.3:8000");
    assert_string_equal(gp_scraper_url(s), "http://10.1.2.3:8000/m");
    gp_scraper_free(s);
}

/* vLLM v1 names: inter_token_latency wins over the deprecated time_per_output_token. */
static void test_vllm_v1_names(void **st) {
    (void)st;
    const char *a = "vllm:inter_token_latency_seconds_bucket{le=\"0.1\"} 0\n"
                    "vllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} 0\n"
                    "vllm:inter_token_latency_seconds_count 0\n"
                    "vllm:inter_token_latency_seconds_sum 0\n"
                    "vllm:time_per_output_token_seconds_bucket{le=\"0.1\"} 0\n"
                    "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 0\n"
                    "vllm:kv_cache_usage_perc 0.5\n";
    const char *b = "vllm:inter_token_latency_seconds_bucket{le=\"0.1\"} 4\n"
                    "vllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} 4\n"
                    "vllm:inter_token_latency_seconds_count 4\n"
                    "vllm:inter_token_latency_seconds_sum 0.2\n"
                    "vllm:time_per_output_token_seconds_bucket{le=\"0.1\"} 0\n"
                    "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 9\n"
                    "vllm:kv_cache_usage_perc 0.75\n";
    gp_scrape_snapshot p, c;
    gp_scrape_window w;
    char err[200];
    assert_int_equal(gp_scrape_parse(a, strlen(a), &p, err, sizeof err), 0);
    assert_int_equal(gp_scrape_parse(b, strlen(b), &c, err, sizeof err), 0);
    p.ts_ns = 0;
    c.ts_ns = 2 * SEC;
    gp_scrape_diff(&p, &c, &w);
    assert_near(w.itl.count, 4, 0);
    assert_near(w.itl.p50_s, 0.05, 1e-12); /* rank 2 of 4 in (0, 0.1] */
    assert_near(w.kv_cache_usage, 0.75, 0);
    assert_true(w.prompt_tokens_per_s < 0); /* not published: unknown, not 0 */
    assert_true(w.requests_per_s < 0);
    assert_true(w.ttft.p50_s < 0);
}

static void test_sglang_and_tgi(void **st) {
    (void)st;
    const char *sa = "sglang:prompt_tokens_total{model_name=\"m\"} 100\n"
                     "sglang:generation_tokens_total{model_name=\"m\"} 1000\n"
                     "sglang:num_requests_total{model_name=\"m\"} 10\n"
                     "sglang:num_aborted_requests_total{model_name=\"m\"} 0\n"
                     "sglang:num_running_reqs{model_name=\"m\"} 1\n"
                     "sglang:num_queue_reqs{model_name=\"m\"} 0\n"
                     "sglang:token_usage{model_name=\"m\"} 0.1\n";
    const char *sb = "sglang:prompt_tokens_total{model_name=\"m\"} 300\n"
                     "sglang:generation_tokens_total{model_name=\"m\"} 1400\n"
                     "sglang:num_requests_total{model_name=\"m\"} 30\n"
                     "sglang:num_aborted_requests_total{model_name=\"m\"} 5\n"
                     "sglang:num_running_reqs{model_name=\"m\"} 7\n"
                     "sglang:num_queue_reqs{model_name=\"m\"} 2\n"
                     "sglang:token_usage{model_name=\"m\"} 0.6\n";
    gp_scrape_snapshot p, c;
    gp_scrape_window w;
    char err[200];
    assert_int_equal(gp_scrape_parse(sa, strlen(sa), &p, err, sizeof err), 0);
    assert_int_equal(gp_scrape_parse(sb, strlen(sb), &c, err, sizeof err), 0);
    assert_int_equal(c.flavor, GP_SCRAPE_SGLANG);
    p.ts_ns = 0;
    c.ts_ns = 4 * SEC;
    gp_scrape_diff(&p, &c, &w);
    assert_near(w.prompt_tokens_per_s, 50, 1e-9);      /* 200 / 4 */
    assert_near(w.generation_tokens_per_s, 100, 1e-9); /* 400 / 4 */
    assert_near(w.requests_per_s, 5, 1e-9);            /* 20 / 4 */
    assert_near(w.errors_per_s, 1.25, 1e-9);           /* 5 / 4 */
    assert_near(w.ok_per_s, 3.75, 1e-9);
    assert_near(w.running, 7, 0);
    assert_near(w.waiting, 2, 0);
    assert_near(w.kv_cache_usage, 0.6, 0);

    /* TGI: counters without _total; tokens from the length histograms' sums */
    const char *ta =
        "tgi_request_count 11\ntgi_request_success 10\ntgi_request_failure{err=\"x\"} 1\n"
        "tgi_request_input_length_bucket{le=\"100\"} 5\n"
        "tgi_request_input_length_bucket{le=\"+Inf\"} 10\n"
        "tgi_request_input_length_sum 100\ntgi_request_input_length_count 10\n"
        "tgi_request_generated_tokens_sum 1000\ntgi_request_generated_tokens_count 10\n"
        "tgi_request_duration_bucket{le=\"1\"} 5\ntgi_request_duration_bucket{le=\"2\"} 10\n"
        "tgi_request_duration_bucket{le=\"+Inf\"} 10\n"
        "tgi_request_duration_sum 12\ntgi_request_duration_count 10\n"
        "tgi_queue_size 3\ntgi_batch_current_size 8\n";
    const char *tb =
        "tgi_request_count 16\ntgi_request_success 14\ntgi_request_failure{err=\"x\"} 2\n"
        "tgi_request_input_length_bucket{le=\"100\"} 6\n"
        "tgi_request_input_length_bucket{le=\"+Inf\"} 14\n"
        "tgi_request_input_length_sum 300\ntgi_request_input_length_count 14\n"
        "tgi_request_generated_tokens_sum 1500\ntgi_request_generated_tokens_count 14\n"
        "tgi_request_duration_bucket{le=\"1\"} 5\ntgi_request_duration_bucket{le=\"2\"} 14\n"
        "tgi_request_duration_bucket{le=\"+Inf\"} 15\n"
        "tgi_request_duration_sum 20\ntgi_request_duration_count 15\n"
        "tgi_queue_size 1\ntgi_batch_current_size 9\n";
    assert_int_equal(gp_scrape_parse(ta, strlen(ta), &p, err, sizeof err), 0);
    assert_int_equal(gp_scrape_parse(tb, strlen(tb), &c, err, sizeof err), 0);
    assert_int_equal(c.flavor, GP_SCRAPE_TGI);
    p.ts_ns = 0;
    c.ts_ns = 10 * SEC;
    gp_scrape_diff(&p, &c, &w);
    assert_near(w.ok_per_s, 0.4, 1e-9);
    assert_near(w.errors_per_s, 0.1, 1e-9);
    assert_near(w.error_ratio, 0.2, 1e-9);
    assert_near(w.prompt_tokens_per_s, 20, 1e-9);
    assert_near(w.generation_tokens_per_s, 50, 1e-9);
    /* e2e: 5 new, 4 in (1, 2] and 1 above 2. p50: rank 2.5 in (1, 2]: 1 + 2.5/4 = 1.625;
     * p99: rank 4.95 falls in +Inf: the largest finite bound, 2. */
    assert_near(w.e2e.count, 5, 0);
    assert_near(w.e2e.mean_s, 8.0 / 5.0, 1e-9);
    assert_near(w.e2e.p50_s, 1.625, 1e-9);
    assert_near(w.e2e.p99_s, 2.0, 1e-9);
    assert_true(w.ttft.count < 0); /* TGI publishes no TTFT histogram */
    assert_near(w.waiting, 1, 0);
    assert_near(w.running, 9, 0);
}

static void test_quantile_edges(void **st) {
    (void)st;
    double le[] = {0.5, 1, INFINITY}, cum[] = {0, 0, 0};
    assert_true(gp_hist_quantile(0.5, le, cum, 3) < 0); /* no observations */
    double le2[] = {0.5, 1}, cum2[] = {1, 2};
    assert_true(gp_hist_quantile(0.5, le2, cum2, 2) < 0); /* no +Inf bucket */
    double neg[] = {-0.5, 0, INFINITY}, cn[] = {4, 4, 4};
    assert_near(gp_hist_quantile(0.5, neg, cn, 3), -0.5, 0); /* first bucket bound <= 0 */
    /* non-monotonic counts are made monotonic first: {2, 1, 4} acts as {2, 2, 4}; p50 is
     * rank 2 in the first bucket: 0 + 1 * 2/2 = 1 */
    double le3[] = {1, 2, INFINITY}, c3[] = {2, 1, 4};
    assert_near(gp_hist_quantile(0.5, le3, c3, 3), 1.0, 1e-12);
    /* p75: rank 3 lands in +Inf: the largest finite bound */
    assert_near(gp_hist_quantile(0.75, le3, c3, 3), 2.0, 1e-12);
    assert_near(gp_hist_quantile(0.0, le3, c3, 3), 0.0, 1e-12);
}

/* Window percentiles equal Prometheus' own histogram_quantile over the same bucket deltas:
 * two vLLM pages (two data-parallel engines, the bucket bounds of the real v0 capture) go
 * through gp_scrape_parse and gp_scrape_diff; the same counts become promtool's input
 * series, and `promtool test rules` (the real Prometheus engine, Debian's prometheus package)
 * must find histogram_quantile(q, sum by (le) (b - b offset 1m)) equal to our value. */
static void test_quantiles_match_prometheus(void **st) {
    (void)st;
    if (system("command -v promtool > /dev/null 2>&1") != 0)
        fail_msg("promtool missing (scripts/install-deps installs Debian's prometheus)");
    static const char *const le[] = {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06",
                                     "0.08",  "0.1",   "0.25", "0.5",  "0.75", "1.0",
                                     "2.5",   "5.0",   "7.5",  "10.0", "+Inf"};
    enum { NB = sizeof le / sizeof le[0] };
    char *page[2], *tmpdir = gp_test_tmpdir(), path[600];
    double cum[2][2][NB]; /* [scrape][engine][bucket] */
    unsigned x = 12345;
    for (int e = 0; e < 2; e++) {
        double c0 = 0, c1 = 0;
        for (int b = 0; b < NB; b++) {
            x = x * 1103515245u + 12345u;
            c0 += (x >> 16) % 7;
            x = x * 1103515245u + 12345u;
            c1 += (b < 4 ? 0 : (x >> 16) % 23); /* the window's observations */
            cum[0][e][b] = c0;
            cum[1][e][b] = c0 + c1;
        }
    }
    for (int k = 0; k < 2; k++) {
        size_t cap = 8192, n = 0;
        page[k] = malloc(cap);
        for (int e = 0; e < 2; e++) {
            for (int b = 0; b < NB; b++)
                n += (size_t)snprintf(
                    page[k] + n, cap - n,
                    "vllm:time_to_first_token_seconds_bucket{engine=\"%d\",le=\"%s\","
                    "model_name=\"m\"} %.0f\n",
                    e, le[b], cum[k][e][b]);
            n += (size_t)snprintf(page[k] + n, cap - n,
                                  "vllm:time_to_first_token_seconds_count{engine=\"%d\",model_name="
                                  "\"m\"} %.0f\n",
                                  e, cum[k][e][NB - 1]);
        }
    }
    gp_scrape_snapshot p, c;
    gp_scrape_window w;
    char err[200];
    assert_int_equal(gp_scrape_parse(page[0], strlen(page[0]), &p, err, sizeof err), 0);
    assert_int_equal(gp_scrape_parse(page[1], strlen(page[1]), &c, err, sizeof err), 0);
    p.ts_ns = 0;
    c.ts_ns = 60 * SEC;
    gp_scrape_diff(&p, &c, &w);
    assert_true(w.ttft.count > 0);
    snprintf(path, sizeof path, "%s/q_test.yml", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "evaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n");
    for (int e = 0; e < 2; e++)
        for (int b = 0; b < NB; b++)
            fprintf(f,
                    "      - series: 'ttft_bucket{engine=\"%d\",le=\"%s\"}'\n        values: '%.0f "
                    "%.0f'\n",
                    e, le[b], cum[0][e][b], cum[1][e][b]);
    fprintf(f, "    promql_expr_test:\n");
    const double q[3] = {0.5, 0.9, 0.99}, ours[3] = {w.ttft.p50_s, w.ttft.p90_s, w.ttft.p99_s};
    for (int i = 0; i < 3; i++)
        fprintf(
            f,
            "      - expr: histogram_quantile(%g, sum by (le) (ttft_bucket - ttft_bucket offset "
            "1m))\n        eval_time: 1m\n        exp_samples:\n          - labels: '{}'\n"
            "            value: %.17g\n",
            q[i], ours[i]);
    fclose(f);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "cd %s && promtool test rules q_test.yml > out.txt 2>&1", tmpdir);
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat %s/out.txt", tmpdir);
        if (system(cmd) != 0) rc = -1;
    }
    assert_int_equal(rc, 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fail_msg("cannot remove %s", tmpdir);
    free(tmpdir);
    free(page[0]);
    free(page[1]);
}

/* vLLM v1 with two data-parallel engines (tests/data/prom/vllm_v1_dp2_{a,b}.txt, written from
 * vllm/v1/metrics/loggers.py names). Page a is all zero; page b, 10 s later, holds these
 * increments, so every value below is computed by hand. */
static void test_vllm_v1_engines(void **st) {
    (void)st;
    char *a = read_file("tests/data/prom/vllm_v1_dp2_a.txt");
    char *b = read_file("tests/data/prom/vllm_v1_dp2_b.txt");
    assert_non_null(a);
    assert_non_null(b);
    gp_scrape_snapshot *p = malloc(sizeof *p), *c = malloc(sizeof *c);
    gp_scrape_window *w = malloc(sizeof *w);
    char err[200];
    assert_int_equal(gp_scrape_parse(a, strlen(a), p, err, sizeof err), 0);
    assert_int_equal(gp_scrape_parse(b, strlen(b), c, err, sizeof err), 0);
    assert_int_equal(c->flavor, GP_SCRAPE_VLLM);
    assert_int_equal(c->nseries, 2);
    /* families of vLLM that goodput does not read are named, not dropped silently */
    int info = 0, iter = 0;
    for (int i = 0; i < c->nunknown; i++) {
        info += !strcmp(c->unknown[i], "vllm:cache_config_info");
        iter += !strcmp(c->unknown[i], "vllm:iteration_tokens_total");
        assert_null(strstr(c->unknown[i], "time_to_first_token"));
        assert_null(strstr(c->unknown[i], "_created"));
    }
    assert_int_equal(info + iter, 2);
    p->ts_ns = 0;
    c->ts_ns = 10 * SEC;
    gp_scrape_diff_slo(p, c, 0.5, 0.05, w);
    /* the whole server: sums, except KV usage (a ratio): the fuller engine */
    assert_near(w->requests_per_s, 2.0, 1e-12); /* 20 requests / 10 s */
    assert_near(w->running, 6, 0);
    assert_near(w->waiting, 8, 0);
    assert_near(w->kv_cache_usage, 0.9, 0);
    assert_int_equal(w->n_engines, 2);
    const gp_scrape_engine *e0 = NULL, *e1 = NULL;
    for (int i = 0; i < w->n_engines; i++) {
        assert_string_equal(w->eng[i].model, "meta-llama/Llama-3.1-8B-Instruct");
        if (!strcmp(w->eng[i].engine, "0")) e0 = &w->eng[i];
        if (!strcmp(w->eng[i].engine, "1")) e1 = &w->eng[i];
    }
    assert_non_null(e0);
    assert_non_null(e1);
    assert_near(e0->running, 4, 0);
    assert_near(e1->waiting, 7, 0);
    assert_near(e1->kv_cache_usage, 0.9, 0);
    assert_near(e0->ok_per_s, 1.0, 1e-12);
    assert_near(e1->preemptions_per_s, 0.5, 1e-12);      /* 5 / 10 s */
    assert_near(e0->preemptions_per_s, 0.0, 0);          /* published and zero: known */
    assert_near(e0->prefix_cache_hit_ratio, 0.5, 1e-12); /* 500 / 1000 tokens */
    assert_near(e1->prefix_cache_hit_ratio, 0.0, 0);
    assert_true(e0->spec_accept_ratio < 0); /* no spec decode: unknown */
    /* queue, engine 1: 10 in (0.5, 1.0]; p50 rank 5: 0.5 + 0.5 * 5/10 = 0.75 */
    assert_near(e1->queue.p50_s, 0.75, 1e-12);
    assert_near(e1->queue.mean_s, 0.75, 1e-12);
    /* engine 0, SLO TTFT 0.5 s: 8 of 10 at or under it (bucket bound); ITL 0.05 s: 90 of 100
     * tokens. Met both, at least: 0.8 + 0.9 - 1 = 0.7 of 1 req/s. */
    assert_near(e0->slo_ttft_frac, 0.8, 1e-12);
    assert_near(e0->slo_itl_frac, 0.9, 1e-12);
    assert_near(e0->slo_ok_per_s, 0.7, 1e-12);
    /* engine 1: every TTFT in the +Inf bucket misses the target: goodput 0 */
    assert_near(e1->slo_ttft_frac, 0.0, 0);
    assert_near(e1->slo_ok_per_s, 0.0, 0);
    /* a target inside a bucket is interpolated like histogram_quantile: 0.175 s is half way
     * through (0.1, 0.25], which holds 8 of engine 0's 10: 4 / 10 */
    gp_scrape_diff_slo(p, c, 0.175, -1, w);
    for (int i = 0; i < w->n_engines; i++)
        if (!strcmp(w->eng[i].engine, "0")) {
            assert_near(w->eng[i].slo_ttft_frac, 0.4, 1e-12);
            assert_near(w->eng[i].slo_ok_per_s, 0.4, 1e-12); /* one target: ok * fraction */
            assert_true(w->eng[i].slo_itl_frac < 0);
        }
    /* an engine that appears only in the newer page has no baseline: unknown, not 0 */
    gp_scrape_snapshot *only0 = malloc(sizeof *only0);
    *only0 = *p;
    only0->nseries = 1;
    gp_scrape_diff_slo(only0, c, 0.5, 0.05, w);
    for (int i = 0; i < w->n_engines; i++)
        if (!strcmp(w->eng[i].engine, "1")) {
            assert_true(w->eng[i].ok_per_s < 0);
            assert_true(w->eng[i].ttft.count < 0);
            assert_true(w->eng[i].slo_ok_per_s < 0);
        }
    free(only0);
    free(p);
    free(c);
    free(w);
    free(a);
    free(b);
}

/* gp_hist_fraction_below inverts gp_hist_quantile inside populated finite buckets. */
static void test_fraction_inverts_quantile(void **st) {
    (void)st;
    const double le[] = {0.1, 0.25, 0.5, 1.0, INFINITY};
    const double cum[] = {3, 8, 8, 19, 20};
    for (double q = 0.01; q < 0.95; q += 0.01) {
        double x = gp_hist_quantile(q, le, cum, 5);
        if (x >= 0.25 && x <= 0.5) continue; /* an empty bucket: quantile jumps over it */
        assert_near(gp_hist_fraction_below(x, le, cum, 5), q, 1e-9);
    }
    /* at the largest finite bound the +Inf bucket's observations miss: exact */
    assert_near(gp_hist_fraction_below(1.0, le, cum, 5), 19.0 / 20, 1e-12);
    /* above it, whether they met the target is unknown (issue 21: never counted) */
    assert_true(gp_hist_fraction_below(5.0, le, cum, 5) < 0);
    const double within[] = {3, 8, 8, 20, 20}; /* nothing beyond: every one is under 5 s */
    assert_near(gp_hist_fraction_below(5.0, le, within, 5), 1, 0);
    assert_near(gp_hist_fraction_below(0.0, le, cum, 5), 0, 0);
    const double none[] = {0, 0, 0, 0, 0};
    assert_true(gp_hist_fraction_below(0.2, le, none, 5) < 0);
}

/* NVIDIA Triton: counters per model, cumulative microseconds; the NIM model label. */
static void test_triton(void **st) {
    (void)st;
    const char *a =
        "nv_inference_request_success{model=\"resnet\",version=\"1\"} 100\n"
        "nv_inference_request_failure{model=\"resnet\",reason=\"REJECTED\","
        "version=\"1\"} 1\n"
        "nv_inference_count{model=\"resnet\",version=\"1\"} 400\n"
        "nv_inference_exec_count{model=\"resnet\",version=\"1\"} 50\n"
        "nv_inference_request_duration_us{model=\"resnet\",version=\"1\"} 1000000\n"
        "nv_inference_queue_duration_us{model=\"resnet\",version=\"1\"} 100000\n"
        "nv_inference_compute_infer_duration_us{model=\"resnet\",version=\"1\"} 500000\n"
        "nv_inference_pending_request_count{model=\"resnet\",version=\"1\"} 0\n"
        "nv_inference_first_response_histogram_ms_count{model=\"resnet\",version=\"1\"} 0\n"
        "nv_gpu_utilization{gpu_uuid=\"GPU-1\"} 0.5\n";
    const char *b =
        "nv_inference_request_success{model=\"resnet\",version=\"1\"} 140\n"
        "nv_inference_request_failure{model=\"resnet\",reason=\"REJECTED\","
        "version=\"1\"} 11\n"
        "nv_inference_count{model=\"resnet\",version=\"1\"} 800\n"
        "nv_inference_exec_count{model=\"resnet\",version=\"1\"} 75\n"
        "nv_inference_request_duration_us{model=\"resnet\",version=\"1\"} 3500000\n"
        "nv_inference_queue_duration_us{model=\"resnet\",version=\"1\"} 600000\n"
        "nv_inference_compute_infer_duration_us{model=\"resnet\",version=\"1\"} 1500000\n"
        "nv_inference_pending_request_count{model=\"resnet\",version=\"1\"} 3\n"
        "nv_inference_first_response_histogram_ms_count{model=\"resnet\",version=\"1\"} 0\n"
        "nv_gpu_utilization{gpu_uuid=\"GPU-1\"} 0.9\n";
    gp_scrape_snapshot *p = malloc(sizeof *p), *c = malloc(sizeof *c);
    gp_scrape_window *w = malloc(sizeof *w);
    char err[200];
    assert_int_equal(gp_scrape_parse(a, strlen(a), p, err, sizeof err), 0);
    assert_int_equal(gp_scrape_parse(b, strlen(b), c, err, sizeof err), 0);
    assert_int_equal(c->flavor, GP_SCRAPE_TRITON);
    assert_string_equal(gp_scrape_flavor_name(c->flavor), "triton");
    assert_int_equal(c->nunknown, 1); /* nv_gpu_* is not a serving family: not listed */
    assert_string_equal(c->unknown[0], "nv_inference_first_response_histogram_ms");
    p->ts_ns = 0;
    c->ts_ns = 10 * SEC;
    gp_scrape_diff(p, c, w);
    assert_near(w->ok_per_s, 4.0, 1e-12);     /* 40 / 10 s */
    assert_near(w->errors_per_s, 1.0, 1e-12); /* 10 / 10 s */
    assert_near(w->waiting, 3, 0);
    assert_int_equal(w->n_engines, 1);
    const gp_scrape_engine *e = &w->eng[0];
    assert_string_equal(e->model, "resnet");
    assert_string_equal(e->engine, "");
    assert_near(e->batch_size, 400.0 / 25, 1e-12); /* inferences per execution */
    assert_near(e->e2e.mean_s, 2.5 / 50, 1e-12);   /* 2.5 s over 50 requests */
    assert_near(e->queue.mean_s, 0.5 / 50, 1e-12);
    assert_near(e->compute_mean_s, 1.0 / 50, 1e-12);
    assert_true(e->e2e.p50_s < 0); /* no histogram: no percentile */
    free(p);
    free(c);
    free(w);
}

/* SGLang's own /metrics capture (tests/data/prom/sglang_docs_llama31_8b.txt, from its docs):
 * _sum before _bucket, a histogram labelled name= instead of model_name=, and most TTFTs above
 * the largest finite bucket. Read as a window since the server started (every counter from 0),
 * the figures are the capture's; quantiles are histogram_quantile's, worked by hand. */
static void test_sglang_docs_capture(void **st) {
    (void)st;
    char *t = read_file("tests/data/prom/sglang_docs_llama31_8b.txt");
    assert_non_null(t);
    gp_scrape_snapshot *c = malloc(sizeof *c), *p = malloc(sizeof *p);
    gp_scrape_window *w = malloc(sizeof *w);
    char err[200];
    assert_int_equal(gp_scrape_parse(t, strlen(t), c, err, sizeof err), 0);
    assert_int_equal(c->flavor, GP_SCRAPE_SGLANG);
    assert_int_equal(c->nseries, 1);
    assert_string_equal(c->series[0].model, "meta-llama/Llama-3.1-8B-Instruct");
    assert_near(c->all.counter[GP_SC_PROMPT], 8.128902e6, 0);
    assert_near(c->all.counter[GP_SC_GEN], 7.557572e6, 0);
    assert_near(c->all.gauge[GP_SG_RUNNING], 162, 0);
    assert_near(c->all.gauge[GP_SG_WAITING], 2826, 0);
    assert_near(c->all.gauge[GP_SG_KV_USAGE], 0.28, 0);
    /* families of SGLang goodput does not read: each named once */
    assert_int_equal(c->nunknown, 4);
    assert_string_equal(c->unknown[0], "sglang:cache_hit_rate");
    assert_string_equal(c->unknown[1], "sglang:func_latency_seconds");
    assert_string_equal(c->unknown[2], "sglang:num_used_tokens");
    assert_string_equal(c->unknown[3], "sglang:gen_throughput");
    /* the window since start: the same page with nothing counted yet */
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
    p->ts_ns = 0;
    c->ts_ns = 100 * SEC;
    gp_scrape_diff(p, c, w);
    assert_near(w->prompt_tokens_per_s, 81289.02, 1e-6);
    assert_near(w->ttft.count, 11008, 0);
    assert_near(w->ttft.mean_s, 2.3518979474117756e6 / 11008, 1e-9);
    /* 8495 of 11008 TTFTs are above 30 s: histogram_quantile answers 30 for p50..p99, a floor
     * that beyond_top marks (the mean is 214 s) */
    assert_near(w->ttft.p50_s, 30, 0);
    assert_near(w->ttft.p99_s, 30, 0);
    assert_near(w->ttft.beyond_top, (11008.0 - 2513.0) / 11008.0, 1e-12);
    /* ITL (time_per_output_token): 7400757 tokens.
     * p50 rank 3700378.5 in (0.075, 0.1]: 433413 below, 4516782 inside
     * p90 rank 6660681.3 in (0.1, 0.15]: 4950195 below, 2089240 inside
     * p99 rank 7326749.43 in (0.5, 0.75]: 7312226 below, 27449 inside */
    assert_near(w->itl.p50_s, 0.075 + 0.025 * (3700378.5 - 433413) / 4516782, 1e-12);
    assert_near(w->itl.p90_s, 0.1 + 0.05 * (6660681.3 - 4950195) / 2089240, 1e-12);
    assert_near(w->itl.p99_s, 0.5 + 0.25 * (7326749.43 - 7312226) / 27449, 1e-9);
    assert_near(w->itl.beyond_top, (7400757.0 - 7389414.0) / 7400757.0, 1e-12);
    /* e2e: 9715 of 11228 above 60 s */
    assert_near(w->e2e.p50_s, 60, 0);
    assert_near(w->e2e.beyond_top, (11228.0 - 1513.0) / 11228.0, 1e-12);
    assert_near(w->running, 162, 0);
    assert_near(w->kv_cache_usage, 0.28, 0);
    free(w);
    free(p);
    free(c);
    free(t);
}

/* The SGLang capture's window quantiles (test_sglang_docs_capture) against the real
 * Prometheus: promtool evaluates histogram_quantile over the capture's buckets as a series
 * that went from 0 to the captured counts in one minute. Includes the +Inf-bucket case. */
static void test_sglang_capture_matches_prometheus(void **st) {
    (void)st;
    if (system("command -v promtool > /dev/null 2>&1") != 0)
        fail_msg("promtool missing (scripts/install-deps installs Debian's prometheus)");
    char *t = read_file("tests/data/prom/sglang_docs_llama31_8b.txt");
    assert_non_null(t);
    gp_scrape_snapshot *c = malloc(sizeof *c), *p = malloc(sizeof *p);
    gp_scrape_window *w = malloc(sizeof *w);
    char err[200], path[600], *tmpdir = gp_test_tmpdir();
    assert_int_equal(gp_scrape_parse(t, strlen(t), c, err, sizeof err), 0);
    *p = *c;
    for (int h = 0; h < GP_SH__COUNT; h++) {
        memset(p->all.hist[h].cum, 0, sizeof p->all.hist[h].cum);
        p->all.hist[h].count = p->all.hist[h].sum = 0;
    }
    p->nseries = 0; /* the server's totals only */
    p->ts_ns = 0;
    c->ts_ns = 60 * SEC;
    gp_scrape_diff(p, c, w);
    snprintf(path, sizeof path, "%s/sg_test.yml", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "evaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n");
    const int fam[2] = {GP_SH_TTFT, GP_SH_ITL};
    const char *name[2] = {"ttft_bucket", "itl_bucket"};
    for (int k = 0; k < 2; k++) {
        const gp_hist *h = &c->all.hist[fam[k]];
        for (int b = 0; b < h->n; b++) {
            char le[32];
            if (isinf(h->le[b]))
                snprintf(le, sizeof le, "+Inf");
            else
                snprintf(le, sizeof le, "%.17g", h->le[b]);
            fprintf(f, "      - series: '%s{le=\"%s\"}'\n        values: '0 %.17g'\n", name[k], le,
                    h->cum[b]);
        }
    }
    fprintf(f, "    promql_expr_test:\n");
    const double q[3] = {0.5, 0.9, 0.99};
    const gp_latency *lat[2] = {&w->ttft, &w->itl};
    for (int k = 0; k < 2; k++) {
        const double ours[3] = {lat[k]->p50_s, lat[k]->p90_s, lat[k]->p99_s};
        for (int i = 0; i < 3; i++)
            fprintf(
                f,
                "      - expr: histogram_quantile(%g, %s - %s offset 1m)\n        eval_time: "
                "1m\n        exp_samples:\n          - labels: '{}'\n            value: %.17g\n",
                q[i], name[k], name[k], ours[i]);
    }
    fclose(f);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "cd %s && promtool test rules sg_test.yml > out.txt 2>&1", tmpdir);
    int rc = system(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat %s/out.txt", tmpdir);
        if (system(cmd) != 0) rc = -1;
    }
    assert_int_equal(rc, 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fail_msg("cannot remove %s", tmpdir);
    free(tmpdir);
    free(w);
    free(p);
    free(c);
    free(t);
}

/* Triton's real page (tests/data/prom/triton_resnet50_failure_reasons.txt): failures split by
 * a reason label the docs' examples lack; all of it read, one series per model. */
static void test_triton_real_capture(void **st) {
    (void)st;
    char *t = read_file("tests/data/prom/triton_resnet50_failure_reasons.txt");
    assert_non_null(t);
    gp_scrape_snapshot *c = malloc(sizeof *c);
    char err[200];
    assert_int_equal(gp_scrape_parse(t, strlen(t), c, err, sizeof err), 0);
    assert_int_equal(c->flavor, GP_SCRAPE_TRITON);
    assert_near(c->all.counter[GP_SC_REQ_OK], 2, 0);
    assert_near(c->all.counter[GP_SC_REQ_ERR], 0, 0); /* four reasons, each 0: known, zero */
    assert_near(c->all.counter[GP_SC_INFER], 2, 0);
    assert_near(c->all.counter[GP_SC_EXEC], 2, 0);
    assert_int_equal(c->nseries, 1);
    assert_string_equal(c->series[0].model, "resnet_50");
    assert_int_equal(c->nunknown, 0);
    free(c);
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sglang_docs_capture),
        cmocka_unit_test(test_sglang_capture_matches_prometheus),
        cmocka_unit_test(test_triton_real_capture),
        cmocka_unit_test(test_quantiles_match_prometheus),
        cmocka_unit_test(test_vllm_over_http),
        cmocka_unit_test(test_spec_errors),
        cmocka_unit_test(test_vllm_v1_names),
        cmocka_unit_test(test_sglang_and_tgi),
        cmocka_unit_test(test_quantile_edges),
        cmocka_unit_test(test_vllm_v1_engines),
        cmocka_unit_test(test_fraction_inverts_quantile),
        cmocka_unit_test(test_triton),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
