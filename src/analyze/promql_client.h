/* promql_client.h: the Prometheus HTTP API as goodput reads it (Prometheus, Thanos, Mimir,
 * VictoriaMetrics speak the same): /api/v1/query_range, /api/v1/series, /api/v1/labels and
 * /api/v1/label/__name__/values, over libcurl (loaded on demand, util/dl.h).
 *
 * Auth: a bearer token read from a file (Authorization: Bearer ...), basic auth
 * ("user:password"), TLS verified against a CA file. Every answer is checked: transport
 * errors, HTTP statuses, bodies that are not the API's JSON and "status":"error" each
 * become one sentence naming the URL path and the server's own message.
 *
 * A range query the server refuses for loading too many samples (Prometheus
 * --query.max-samples; "query processing would load too many samples") is split in two
 * halves on step boundaries and retried, down to a single step; only a single-step query
 * that is still refused is an error. Results are handed to the caller series by series
 * (the JSON of one sub-range at a time), so memory is one answer, not the whole range.
 * Range answers are read with yajl's event parser straight into arrays of points (no
 * JSON tree: the tree of a 100,000-point answer cost more than the rest of the work).
 *
 * A query can be asked for ahead (gp_prom_prefetch): a thread sends it on a second
 * connection while the caller reads the current answer, so the server evaluates the next
 * query meanwhile; the answer is used when the same query is asked for next.
 *
 * Not thread-safe: one client, one thread (the prefetch thread is the client's own). */
#ifndef GP_ANALYZE_PROMQL_CLIENT_H
#define GP_ANALYZE_PROMQL_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_prom_client gp_prom_client;

typedef struct gp_prom_opts {
    const char *url;        /* base URL, e.g. http://prom:9090 (a path prefix is kept) */
    const char *token_file; /* bearer token file; NULL none */
    const char *basic_auth; /* "user:password"; NULL none */
    const char *ca_file;    /* PEM CA bundle for https; NULL = system store */
    long timeout_ms;        /* per request; 0 = 120 s */
    int compress;           /* ask for gzip answers (slow links); off by default: gzip of
                             * a range answer costs the server ~2x its evaluation (measured
                             * in docs/benchmarks.md) and is faster to skip on a LAN */
} gp_prom_opts;

int gp_prom_client_new(const gp_prom_opts *o, gp_prom_client **out, char *err, size_t errlen);
void gp_prom_client_free(gp_prom_client *c);
/* Frees the answer buffers (two answers' text, one answer's points) and drops a query sent
 * ahead and not asked for; the client stays usable (for the counters, or more requests). */
void gp_prom_client_trim(gp_prom_client *c);
/* Requests made and range queries split so far (for the report header and tests). */
long gp_prom_requests(const gp_prom_client *c);
long gp_prom_splits(const gp_prom_client *c);
/* Wall seconds spent in requests (the server evaluating and sending, plus transfer) and CPU
 * seconds spent reading range answers, callbacks included (for the benchmark). */
void gp_prom_times(const gp_prom_client *c, double *wait_s, double *parse_cpu_s);

/* GET base+path with the query string `query` (already encoded). On success *data is a new
 * reference to the answer's "data" member. Returns 0, -1 with err, or -2 (err set) when the
 * server refused the query for loading too many samples. */
int gp_prom_get(gp_prom_client *c, const char *path, const char *query, json_t **data, char *err,
                size_t errlen);

/* Appends the percent-encoding of s (RFC 3986 unreserved kept) to buf. Returns 0, or -1
 * when it does not fit. */
int gp_prom_urlencode(const char *s, char *buf, size_t cap);

/* A time or value as Prometheus writes it (len bytes, not terminated): exactly strtod's
 * result, faster for plain decimals; "NaN", "+Inf", exponents go through strtod. */
double gp_prom_num(const char *s, size_t len);

/* One point of a range answer: its time and its value (Prometheus sends values as strings:
 * "NaN", "+Inf" included). Points whose value is not a string are left out. */
typedef struct gp_prom_point {
    double t_s, v;
} gp_prom_point;

/* Called once per result series: metric is the label object, pts its n points (both
 * borrowed: valid during the call). Return non-zero to stop (that value is returned by
 * gp_prom_query_range). */
typedef int (*gp_prom_series_fn)(void *ctx, json_t *metric, const gp_prom_point *pts, size_t n);

/* Evaluates promql at t0_s, t0_s + step_s, ..., <= t1_s, splitting on sample-limit refusals
 * (see above). Returns 0, the callback's non-zero value, or -1 with err. */
int gp_prom_query_range(gp_prom_client *c, const char *promql, int64_t t0_s, int64_t t1_s,
                        int64_t step_s, gp_prom_series_fn fn, void *ctx, char *err, size_t errlen);

/* The raw samples of a series selector (no function) in (t0_s - step_s, t1_s]: one instant
 * query of selector[W] at t1_s, W covering the range, so the server decodes and sends its
 * samples without evaluating anything per step (a third to a quarter of the CPU of a
 * query_range with *_over_time for the same points, docs/benchmarks.md). Points are the
 * samples' own times; split and retried on sample-limit refusals like
 * gp_prom_query_range. Returns 0, the callback's non-zero value, or -1 with err. */
int gp_prom_query_raw(gp_prom_client *c, const char *selector, int64_t t0_s, int64_t t1_s,
                      int64_t step_s, gp_prom_series_fn fn, void *ctx, char *err, size_t errlen);
/* Sends the query that gp_prom_query_raw (raw = 1) or gp_prom_query_range (raw = 0) with
 * the same arguments will ask for, ahead on a second connection; that call then takes its
 * answer (errors included, as if asked then). A prefetch not asked for is dropped by the
 * next prefetch or gp_prom_client_free (it counts as a request made). */
void gp_prom_prefetch(gp_prom_client *c, const char *promql, int raw, int64_t t0_s, int64_t t1_s,
                      int64_t step_s);

/* Metric names with data in [t0_s, t1_s]; *names is a new reference to a JSON array. */
int gp_prom_metric_names(gp_prom_client *c, int64_t t0_s, int64_t t1_s, json_t **names, char *err,
                         size_t errlen);
/* Label names of series matching `match` in [t0_s, t1_s] (new reference, JSON array). */
int gp_prom_label_names(gp_prom_client *c, const char *match, int64_t t0_s, int64_t t1_s,
                        json_t **names, char *err, size_t errlen);
/* Number of series matching `match` in [t0_s, t1_s]. */
int gp_prom_series_count(gp_prom_client *c, const char *match, int64_t t0_s, int64_t t1_s,
                         size_t *n, char *err, size_t errlen);

#endif
