/* scrape.h: what inference servers already publish, turned into per-window outcomes.
 *
 * A scraper GETs the /metrics page of one vLLM (v0 and v1 names; LLM NIMs use the same),
 * SGLang, TGI or Triton (nv_inference_*) server each interval, reduces it to a snapshot of
 * the counters, gauges and histograms that matter, both summed over all label sets and kept
 * apart per (engine, model) label pair, and differences it with the previous snapshot into
 * a window: request and token rates, success and error rates, TTFT / inter-token /
 * end-to-end / queue / prefill / decode latency, preemptions, prefix-cache hit ratio,
 * speculative-decoding acceptance, SLO goodput, and the queue and KV-cache gauges at the
 * window's end, for the whole server and for each engine.
 *
 * Percentiles come from the histogram's bucket deltas interpolated exactly as Prometheus'
 * histogram_quantile() does for classic histograms (gp_hist_quantile). Counter resets (the
 * server restarted) are handled as Prometheus' rate() does: a counter that went down is
 * taken to have restarted from zero, so its increase is its current value.
 *
 * Use from the agent (no threads; each poll blocks for at most the timeout, 2 s default):
 *
 *     gp_scraper *s;  gp_scraper_new("http://127.0.0.1:8000,job=llama", &s, err, sizeof err);
 *     every interval:  gp_scrape_window w;
 *                      int rc = gp_scrape_poll(s, now_ns, &w, err, sizeof err);
 *                      rc == 1: store w;  rc == 0: baseline taken, nothing yet;
 *                      rc < 0: log err once, keep polling (the next success re-baselines).
 *     gp_scraper_free(s);
 *
 * Unknown values are -1 (never 0): a metric the server does not publish, a percentile of a
 * window with no observations. Memory: the scraper owns everything; windows are plain data. */
#ifndef GP_INGEST_SCRAPE_H
#define GP_INGEST_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "model/event.h"

#define GP_HIST_MAX_BUCKETS 64
#define GP_SCRAPE_MAX_SERIES 8   /* (engine, model) label pairs kept apart per page */
#define GP_SCRAPE_MAX_UNKNOWN 32 /* families of a known server that goodput does not read */

typedef enum {
    GP_SCRAPE_UNKNOWN = 0,
    GP_SCRAPE_VLLM,
    GP_SCRAPE_SGLANG,
    GP_SCRAPE_TGI,
    GP_SCRAPE_TRITON, /* NVIDIA Triton and the NIMs built on it: nv_inference_* */
    GP_SCRAPE__FLAVORS
} gp_scrape_flavor;

const char *gp_scrape_flavor_name(gp_scrape_flavor f);

/* A classic Prometheus histogram: cumulative counts per upper bound, sorted, last +Inf. */
typedef struct gp_hist {
    int n; /* buckets; 0 = not published */
    double le[GP_HIST_MAX_BUCKETS];
    double cum[GP_HIST_MAX_BUCKETS];
    double count, sum;
} gp_hist;

enum {
    GP_SC_PROMPT,
    GP_SC_GEN,
    GP_SC_REQ_OK,
    GP_SC_REQ_ERR,
    GP_SC_REQ_TOTAL,
    GP_SC_PREEMPT,     /* vllm:num_preemptions */
    GP_SC_PREFIX_Q,    /* prefix-cache queries, tokens */
    GP_SC_PREFIX_HIT,  /* prefix-cache hits, tokens */
    GP_SC_SPEC_DRAFT,  /* speculative decoding: draft tokens proposed */
    GP_SC_SPEC_ACCEPT, /* ... and accepted */
    GP_SC_INFER,       /* Triton nv_inference_count: inferences (batch items) */
    GP_SC_EXEC,        /* Triton nv_inference_exec_count: model executions (batches) */
    GP_SC_REQ_US,      /* Triton cumulative request / queue / compute time, microseconds */
    GP_SC_QUEUE_US,
    GP_SC_COMPUTE_US,
    GP_SC__COUNT
};
enum { GP_SG_RUNNING, GP_SG_WAITING, GP_SG_KV_USAGE, GP_SG__COUNT };
enum {
    GP_SH_TTFT,
    GP_SH_ITL,
    GP_SH_E2E,
    GP_SH_PROMPT_LEN,
    GP_SH_GEN_LEN,
    GP_SH_QUEUE,
    GP_SH_PREFILL,
    GP_SH_DECODE,
    GP_SH__COUNT
};

/* Counters, gauges and histograms of one label set (or of all of them). < 0: not published. */
typedef struct gp_scrape_values {
    double counter[GP_SC__COUNT];
    double gauge[GP_SG__COUNT];
    gp_hist hist[GP_SH__COUNT];
} gp_scrape_values;

/* The values of one (engine, model) pair. vLLM v1 labels engine="0".."N-1" under data
 * parallelism; SGLang dp_rank; Triton has no engine (one per model). "" = label absent. */
typedef struct gp_scrape_series {
    char engine[32];
    char model[96];
    gp_scrape_values v;
} gp_scrape_series;

/* One /metrics document reduced to what matters: `all` sums every label set (gauges that
 * are ratios, such as KV-cache usage, take the largest engine instead), `series` keeps each
 * (engine, model) apart. unknown: families of a known server that goodput did not read. */
typedef struct gp_scrape_snapshot {
    gp_scrape_flavor flavor;
    int64_t ts_ns;
    gp_scrape_values all;
    int nseries;
    int series_overflow; /* more pairs than GP_SCRAPE_MAX_SERIES: the rest only in `all` */
    gp_scrape_series series[GP_SCRAPE_MAX_SERIES];
    int nunknown;
    char unknown[GP_SCRAPE_MAX_UNKNOWN][64];
} gp_scrape_snapshot;

typedef struct gp_latency {
    double count;  /* observations in the window; -1 unknown */
    double mean_s; /* sum delta / count delta */
    double p50_s, p90_s, p99_s;
    /* The share of the window's observations above the largest finite bucket bound; -1
     * unknown. A pXX with XX/100 > 1 - beyond_top is that bound, exactly as Prometheus'
     * histogram_quantile answers, but only a floor: the SGLang docs' capture (tests/data/prom/)
     * has 77% of its TTFTs above 30 s, a mean of 214 s and "p50 = 30 s". */
    double beyond_top;
} gp_latency;

/* Whether the q-quantile (0.5 for p50) of a histogram with beyond_top of its observations
 * above the largest finite bound is that bound as a floor (the true value is >= it): 1 when
 * its rank falls above the bound (beyond_top > 1 - q), 0 when it lies inside the buckets, -1
 * when beyond_top is unknown (< 0: windows stored before it was kept). Reports keep
 * Prometheus' number and print it as ">= 30s"; JSON adds a *_is_floor boolean beside it. */
int gp_latency_is_floor(double beyond_top, double q);

/* One engine's window. Ratios in [0, 1]; -1 unknown. */
typedef struct gp_scrape_engine {
    char engine[32];
    char model[96];
    double requests_per_s, ok_per_s, errors_per_s, error_ratio;
    double prompt_tokens_per_s, generation_tokens_per_s;
    gp_latency ttft, itl, e2e;
    gp_latency queue, prefill, decode; /* Triton: queue.mean_s from nv_inference_queue_* */
    double running, waiting, kv_cache_usage;
    double preemptions_per_s;
    double prefix_cache_hit_ratio; /* hit tokens / queried tokens in the window */
    double spec_accept_ratio;      /* accepted / drafted tokens */
    double batch_size;             /* Triton: inferences per execution */
    double compute_mean_s;         /* Triton: compute time per request */
    /* SLO: the fraction of TTFT (ITL) observations at or under the target, read off the
     * histogram as gp_hist_fraction_below does; slo_ok_per_s the requests per second that
     * met both, at least (see gp_scrape_diff_slo). -1 without a target or observations, and
     * when a target lies above the largest finite bucket while some observations do too
     * (whether those met it is not known). */
    double slo_ttft_frac, slo_itl_frac, slo_ok_per_s;
} gp_scrape_engine;

/* What happened between two scrapes. Rates are per second of [t0, t1). */
typedef struct gp_scrape_window {
    char job_id[GP_JOB_ID_MAX];
    gp_scrape_flavor flavor;
    int64_t t0_ns, t1_ns;
    double requests_per_s; /* completed (ok + error) */
    double ok_per_s, errors_per_s;
    double error_ratio; /* errors / completed; -1 when none completed */
    double prompt_tokens_per_s, generation_tokens_per_s;
    gp_latency ttft, itl, e2e; /* itl: inter-token latency (TPOT) */
    double running, waiting;   /* requests, gauges at t1 */
    double kv_cache_usage;     /* ratio in [0, 1] at t1 */
    int counter_reset;         /* 1: some counter went down (server restart) */
    /* Per (engine, model): 0 rows from writers that do not split (analyze --prometheus). */
    int n_engines;
    gp_scrape_engine eng[GP_SCRAPE_MAX_SERIES];
} gp_scrape_window;

/* Prometheus histogram_quantile over cumulative bucket counts (le sorted ascending, last
 * +Inf). Returns -1 when it has no answer (no observations, no +Inf bucket, < 2 buckets). */
double gp_hist_quantile(double q, const double *le, const double *cum, int n);
/* The inverse of gp_hist_quantile: the fraction of observations <= x, interpolated linearly
 * inside the bucket holding x exactly as histogram_quantile interpolates (so
 * gp_hist_quantile(gp_hist_fraction_below(x)) == x inside a populated finite bucket).
 * Observations in the +Inf bucket are above any x up to the largest finite bound; for an x
 * above that bound they may or may not be under it, so the answer is -1 (unknown) when the
 * +Inf bucket holds any (1 when it holds none). -1: no answer. */
double gp_hist_fraction_below(double x, const double *le, const double *cum, int n);

/* Parses a /metrics document into a snapshot (pure; ts_ns stamped by the caller). Returns 0,
 * or -1 with err when the document is malformed or shows none of the known servers. */
int gp_scrape_parse(const char *text, size_t len, gp_scrape_snapshot *out, char *err,
                    size_t errlen);
/* The window from prev to cur (pure). job_id is left empty. */
void gp_scrape_diff(const gp_scrape_snapshot *prev, const gp_scrape_snapshot *cur,
                    gp_scrape_window *w);
/* Same, with SLO targets in seconds (<= 0: none). slo_ok_per_s per engine is
 *   ok_per_s * max(0, f_ttft + f_itl - 1)
 * the lower Frechet bound of "met both" from the two marginal fractions (the histograms
 * do not say which requests were slow on both); with one target it is ok_per_s * f. */
void gp_scrape_diff_slo(const gp_scrape_snapshot *prev, const gp_scrape_snapshot *cur,
                        double slo_ttft_s, double slo_itl_s, gp_scrape_window *w);

typedef struct gp_scraper gp_scraper;
/* spec: "URL[,job=ID][,timeout=MS][,slo_ttft=S][,slo_itl=S]"; URL without a scheme gets
 * http://, without a path /metrics. The job id defaults to "HOST:PORT" of the URL. The SLO
 * targets (seconds) turn on per-engine SLO goodput in every window. */
int gp_scraper_new(const char *spec, gp_scraper **out, char *err, size_t errlen);
void gp_scraper_free(gp_scraper *s);
const char *gp_scraper_url(const gp_scraper *s);
const char *gp_scraper_job(const gp_scraper *s);
/* GETs the page, parses it and, when a previous snapshot exists, fills *w. Returns 1 with a
 * window, 0 when this was the baseline, or -1 with err (the previous snapshot is dropped so
 * the next success starts a new baseline instead of spanning the outage). */
int gp_scrape_poll(gp_scraper *s, int64_t now_ns, gp_scrape_window *w, char *err, size_t errlen);
/* The families of the server's page that goodput does not read ("a, b, c"), once: the first
 * call after a successful poll that saw any returns 1 and fills buf; later calls return 0. */
int gp_scraper_take_unknown(gp_scraper *s, char *buf, size_t cap);

#endif
