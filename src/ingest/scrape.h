/* scrape.h: what inference servers already publish, turned into per-window outcomes.
 *
 * A scraper GETs the /metrics page of one vLLM (v0 and v1 names; NVIDIA NIM uses the same),
 * SGLang or TGI server each interval, reduces it to a snapshot of the counters, gauges and
 * histograms that matter (summed over label sets such as model_name), and differences it
 * with the previous snapshot into a window: request and token rates, success and error
 * rates, TTFT / inter-token / end-to-end latency percentiles, and the queue and KV-cache
 * gauges at the window's end.
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

typedef enum {
    GP_SCRAPE_UNKNOWN = 0,
    GP_SCRAPE_VLLM,
    GP_SCRAPE_SGLANG,
    GP_SCRAPE_TGI,
} gp_scrape_flavor;

const char *gp_scrape_flavor_name(gp_scrape_flavor f);

/* A classic Prometheus histogram: cumulative counts per upper bound, sorted, last +Inf. */
typedef struct gp_hist {
    int n; /* buckets; 0 = not published */
    double le[GP_HIST_MAX_BUCKETS];
    double cum[GP_HIST_MAX_BUCKETS];
    double count, sum;
} gp_hist;

enum { GP_SC_PROMPT, GP_SC_GEN, GP_SC_REQ_OK, GP_SC_REQ_ERR, GP_SC_REQ_TOTAL, GP_SC__COUNT };
enum { GP_SG_RUNNING, GP_SG_WAITING, GP_SG_KV_USAGE, GP_SG__COUNT };
enum { GP_SH_TTFT, GP_SH_ITL, GP_SH_E2E, GP_SH_PROMPT_LEN, GP_SH_GEN_LEN, GP_SH__COUNT };

/* One /metrics document reduced to what matters. Values < 0: not published. */
typedef struct gp_scrape_snapshot {
    gp_scrape_flavor flavor;
    int64_t ts_ns;
    double counter[GP_SC__COUNT];
    double gauge[GP_SG__COUNT];
    gp_hist hist[GP_SH__COUNT];
} gp_scrape_snapshot;

typedef struct gp_latency {
    double count;  /* observations in the window; -1 unknown */
    double mean_s; /* sum delta / count delta */
    double p50_s, p90_s, p99_s;
} gp_latency;

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
} gp_scrape_window;

/* Prometheus histogram_quantile over cumulative bucket counts (le sorted ascending, last
 * +Inf). Returns -1 when it has no answer (no observations, no +Inf bucket, < 2 buckets). */
double gp_hist_quantile(double q, const double *le, const double *cum, int n);

/* Parses a /metrics document into a snapshot (pure; ts_ns stamped by the caller). Returns 0,
 * or -1 with err when the document is malformed or shows none of the known servers. */
int gp_scrape_parse(const char *text, size_t len, gp_scrape_snapshot *out, char *err,
                    size_t errlen);
/* The window from prev to cur (pure). job_id is left empty. */
void gp_scrape_diff(const gp_scrape_snapshot *prev, const gp_scrape_snapshot *cur,
                    gp_scrape_window *w);

typedef struct gp_scraper gp_scraper;
/* spec: "URL[,job=ID][,timeout=MS]"; URL without a scheme gets http://, without a path
 * /metrics. The job id defaults to "HOST:PORT" of the URL. */
int gp_scraper_new(const char *spec, gp_scraper **out, char *err, size_t errlen);
void gp_scraper_free(gp_scraper *s);
const char *gp_scraper_url(const gp_scraper *s);
const char *gp_scraper_job(const gp_scraper *s);
/* GETs the page, parses it and, when a previous snapshot exists, fills *w. Returns 1 with a
 * window, 0 when this was the baseline, or -1 with err (the previous snapshot is dropped so
 * the next success starts a new baseline instead of spanning the outage). */
int gp_scrape_poll(gp_scraper *s, int64_t now_ns, gp_scrape_window *w, char *err, size_t errlen);

#endif
