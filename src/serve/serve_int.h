/* serve_int.h: what the files of src/serve/ share: the server struct, a request (method,
 * path, query parameters, body), a response, and a growable text buffer. Not public. */
#ifndef GP_SERVE_SERVE_INT_H
#define GP_SERVE_SERVE_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/accounting/job_summary.h"
#include "engine/accounting/summary_table.h"
#include "ingest/ingest.h"
#include "ingest/jobcap.h"
#include "otlp/span.h"
#include "serve/conns.h"
#include "serve/rollup.h"
#include "serve/serve.h"
#include "store/store.h"

#define SRV_MAX_PARAMS 16
#define SRV_MAX_BODY (1u << 20)           /* 1 MiB per POST */
#define SRV_MAX_QUEUE (8u << 20)          /* POSTed lines waiting for the agent */
#define SRV_MAX_POINTS 5000               /* series points per request */
#define SRV_MAX_RANGE_S (31 * 86400.0)    /* series range per request */
#define SRV_MAX_ACCTS 64                  /* running jobs with incremental accounting */
#define SRV_ACCT_MAX_EVENTS 150000        /* per state (~27 MiB with its compact events) */
#define SRV_ACCT_BUDGET_BYTES (48u << 20) /* all states together; see summary_full */
#define SRV_PIPE_CACHE 32                 /* jobs whose pipeline section is kept */
#define SRV_MAX_SPAN_QUEUE 50000          /* OTLP spans waiting for the agent (~20 MiB) */
#define SRV_THREADS 4                     /* libmicrohttpd worker threads */
#define SRV_MAX_CONNS 256                 /* open connections, all clients together */
#define SRV_MAX_WAITING 192               /* of which waiting for headers (conns.h) */
#define SRV_HEADER_DEADLINE_S 5.0         /* connect (or last response) to complete headers */
#define SRV_REQUEST_DEADLINE_S 30.0       /* headers to response sent, body included */
#define SRV_RENDER_DEADLINE_S 10.0        /* one render (store reads): then 503 */
#define SRV_COLD_BUDGET_S 0.25            /* per /metrics render, see cold_until_s */
/* First summaries a render makes whatever its time budget: progress on a slow machine,
 * bounded memory under a flood of large new jobs (reliability_overload). */
#define SRV_COLD_MIN 2

typedef struct srv_buf {
    char *p;
    size_t len, cap;
    int oom;
} srv_buf;

void srv_buf_put(srv_buf *b, const char *s, size_t n);
void srv_buf_printf(srv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A Prometheus label value or JSON-free text with \\ \" \n escaped. */
void srv_buf_label(srv_buf *b, const char *s);

typedef struct srv_req {
    const char *method, *path;
    const char *keys[SRV_MAX_PARAMS], *vals[SRV_MAX_PARAMS];
    int n_params;
    const char *body;
    size_t body_len;
    const char *content_type, *content_encoding; /* request headers; NULL absent */
} srv_req;

const char *srv_param(const srv_req *r, const char *key);

typedef struct srv_resp {
    int status;
    const char *ctype;
    srv_buf body;
    const unsigned char *static_body; /* embedded asset: not freed */
    size_t static_len;
    const char *cache; /* Cache-Control value or NULL */
} srv_resp;

void srv_error(srv_resp *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Copied from the agent's thread by gp_serve_pump, read by the server thread. */
typedef struct srv_snapshot {
    int have_agent;
    gp_agent_stats agent;
    gp_ingest_stats ingest[GP_TR__COUNT];
    int64_t now_ns;
    gp_time_bounds bounds;        /* the agent's time rule, so POST answers as the agent will */
    int max_jobs;                 /* the agent's cap of live job ids per transport */
    uint64_t events_duplicate;    /* events the store already held (any transport): ignored */
    gp_store_commit_hist commits; /* the agent's store commits (latency histogram) */
    gp_ckpt_stats ckpt;           /* its WAL checkpoints, off the loop */
} srv_snapshot;

typedef struct srv_job_cache {
    char id[GP_JOB_ID_MAX];
    gp_job_summary sum;
} srv_job_cache;

struct gp_serve {
    gp_serve_opts o;
    char db_path[4096];
    char url[200];
    char token[256];
    size_t token_len;
    int port;
    struct MHD_Daemon *d;
    srv_conns *conns;
    /* Renders (route) run one at a time under render_mu, whatever worker thread took the
     * request; the caches below are the render's. A render past its deadline, or any
     * render once the server stops, is interrupted between two SQLite steps. */
    pthread_mutex_t render_mu;
    double render_deadline_s; /* monotonic; 0 = none (render-only use) */
    _Atomic int stopping;
    gp_store *store; /* read-only; used under render_mu only */
    /* shared with the agent thread */
    pthread_mutex_t mu;
    srv_snapshot snap;
    srv_buf queue; /* POSTed lines for the agent */
    uint64_t queued_lines, queue_full;
    /* POST's job ids (the HTTP transport's cap, applied here so the answer names each line
     * it refuses) and the lines refused by it; under render_mu. */
    gp_jobcap post_jobs;
    uint64_t post_jobs_overflow;
    gp_job_summary *sumq; /* sealed ended jobs' summaries for the agent to store */
    size_t n_sumq, cap_sumq;
    uint64_t summaries_stored;  /* rows the agent wrote (summary table) */
    gp_span_set spans;          /* OTLP spans for the agent (otlp_api.c) */
    uint64_t spans_accepted;    /* queued for the store */
    uint64_t spans_rejected;    /* invalid spans inside good documents */
    uint64_t spans_dropped;     /* refused because the queue was full (503, client retries) */
    uint64_t spans_oom;         /* refused because the queue could not grow (out of memory) */
    uint64_t otlp_bad_requests; /* answered 400: not an ExportTraceServiceRequest */
    uint64_t otlp_overloaded_requests; /* answered 503: the queue was full */
    int attached, detached;
    /* The agent's live findings (gp_serve_set_live): a JSON document, replaced whole on
     * each live pass; NULL until the first. */
    char *live_json;
    /* server thread only */
    uint64_t requests_by_class[6]; /* 1xx..5xx by first digit; [0] unused */
    uint64_t metrics_scrapes;
    double metrics_last_s, metrics_cpu_s_total;
    /* Ended jobs: read from the store's summary table (engine/accounting/summary_table.h)
     * through sum_reader; a job without a row is computed once and kept here until its row
     * is seen (with no agent to write it, `serve --db`, for the server's life). */
    gp_summary_reader *sum_reader;
    double sum_reader_retry_s; /* monotonic: no table yet (older store); try again then */
    /* ... and first from the agent's stored results (engine/results/job_results.h), the
     * very bytes `goodput report` prints from, when they are for this engine */
    struct gp_job_results *results;
    srv_job_cache *ended;
    size_t n_ended, cap_ended;
    /* Running jobs that hold no GPU: their summary changes only with their events, so it is
     * kept with the events' count and last time and reused while those stay the same (a
     * flood of hello-only jobs costs two index lookups per job per scrape). */
    struct srv_quiet {
        srv_job_cache c;
        long long n_events, last_ts_ns;
    } * quiet;
    size_t n_quiet, cap_quiet;
    /* /metrics spends at most SRV_COLD_BUDGET_S on first summaries of GPU-less jobs per
     * render; the rest wait for the next scrape (counted in goodput_jobs_deferred). */
    double cold_until_s; /* monotonic; 0 = no budget (API, reports) */
    int n_deferred;
    int n_cold; /* first summaries made in this render: the first SRV_COLD_MIN ignore the
                 * budget, so a slow machine still makes progress */
    struct srv_running_cache { /* running jobs: reused for 10x their compute time */
        srv_job_cache c;
        double at_s, ttl_s;
    } running[32];
    int next_running;
    /* running jobs' incremental accounting (engine/accounting/job_summary.h): each summary reads
     * only what was stored since the last one; least recently used state evicted */
    struct srv_acct {
        char id[GP_JOB_ID_MAX];
        gp_job_acct *a;
        uint64_t used;
    } accts[SRV_MAX_ACCTS];
    uint64_t acct_clock;
    /* Running jobs whose events outgrew SRV_ACCT_MAX_EVENTS: summarised from the store
     * (no state kept), so memory stays bounded however many events a job sends. */
    char big[SRV_MAX_ACCTS][64];
    int n_big;
    struct srv_window_cache { /* per-window summaries of windows wholly in the past */
        char id[GP_JOB_ID_MAX];
        int64_t t0, t1;
        void *json;     /* json_t *, owned */
        double until_s; /* reuse until (monotonic seconds); 0 = for ever (sealed) */
    } windows[512];
    int n_windows, next_window;
    struct srv_pipe_cache { /* a job's "pipelines" section (pipeline_api.c) */
        char id[GP_JOB_ID_MAX];
        void *json;     /* json_t * array, owned; NULL: the job has no stage events */
        double until_s; /* reuse until (monotonic seconds); 0 = for ever (ended job) */
    } pipes[SRV_PIPE_CACHE];
    int n_pipes, next_pipe;
    srv_rollup *rollups[ROLLUP_MAX_ENTRIES];
    int n_rollups;
    uint64_t rollup_clock;
};

/* Route handlers (server thread). */
void srv_metrics(gp_serve *s, const srv_req *q, srv_resp *r);
void srv_api(gp_serve *s, const srv_req *q, srv_resp *r);
/* Whole-history summary of a job, cached once the job has ended. 0 ok. */
int srv_job_summary(gp_serve *s, const gp_job *j, gp_job_summary *out);
/* The running job's incremental accounting state (created on first use), or NULL when
 * the job has ended or memory ran out. Owned by the server. */
long long srv_job_event_count(gp_serve *s, const char *job_id);
gp_job_acct *srv_job_acct(gp_serve *s, const gp_job *j);
void srv_accts_free(gp_serve *s);
/* Pipelines (pipeline_api.c): adds "pipelines" to a job's detail when it has stage events;
 * GET /api/v1/jobs/{id}/pipeline (the what-if simulation); frees the cache. */
struct json_t;
void srv_job_pipelines(gp_serve *s, const gp_job *j, struct json_t *o);
void srv_api_job_pipeline(gp_serve *s, const srv_req *q, srv_resp *r, const gp_job *j);
void srv_pipeline_cache_free(gp_serve *s);
/* OTLP/HTTP (otlp_api.c): POST /v1/traces; GET /api/v1/workflows; on the agent's thread,
 * stores the queued spans (inside the pump's transaction). */
void srv_post_traces(gp_serve *s, const srv_req *q, srv_resp *r);
void srv_api_workflows(gp_serve *s, const srv_req *q, srv_resp *r);
void srv_store_spans(gp_serve *s, gp_store *st);
/* On the agent's thread: writes the queued ended jobs' summaries (metrics.c). */
void srv_store_summaries(gp_serve *s, gp_store *st);
/* The dashboard's embedded files (generated from web/ by mk/web.mk). */
int gp_web_asset(const char *path, const unsigned char **data, size_t *len, const char **ctype);

#endif
