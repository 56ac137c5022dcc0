/* scrape.c: inference-server /metrics -> snapshots -> windows (see scrape.h).
 *
 * The parse uses util/promtext (streaming Prometheus text parser). Each sample is looked up
 * in one table of known metric families (vLLM v0/v1, SGLang, TGI) and added into its slot,
 * so series that differ only by labels (model_name, finished_reason, ...) are summed.
 * Histogram buckets are summed by their `le` bound. Families we do not know are ignored.
 *
 * histogram_quantile, as Prometheus implements it for classic histograms
 * (promql/quantile.go, bucketQuantile): buckets sorted by upper bound, the last must be
 * +Inf; counts made monotonic; rank = q * total; the first bucket whose cumulative count
 * reaches rank holds the answer; if that is the +Inf bucket, the answer is the largest
 * finite upper bound; if it is the first bucket and its bound is <= 0, the answer is that
 * bound; otherwise linear interpolation inside the bucket, from its lower bound (the
 * previous bucket's upper bound, or 0 for the first) to its upper bound, by
 * (rank - count below) / (count in bucket). */
#include "ingest/scrape.h"

#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/promtext.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *gp_scrape_flavor_name(gp_scrape_flavor f) {
    switch (f) {
    case GP_SCRAPE_VLLM:
        return "vllm";
    case GP_SCRAPE_SGLANG:
        return "sglang";
    case GP_SCRAPE_TGI:
        return "tgi";
    case GP_SCRAPE_UNKNOWN:
        break;
    }
    return "unknown";
}

/* ---- histogram_quantile ---- */

double gp_hist_quantile(double q, const double *le, const double *cum, int n) {
    if (n < 2 || isnan(q) || !isinf(le[n - 1]) || le[n - 1] < 0) return -1;
    if (q < 0) q = 0; /* Prometheus answers -Inf / +Inf here; we clamp to the range */
    if (q > 1) q = 1;
    /* ensureMonotonic: a bucket never counts fewer than the one below it */
    double c[GP_HIST_MAX_BUCKETS], maxc = 0;
    for (int i = 0; i < n && i < GP_HIST_MAX_BUCKETS; i++) {
        maxc = cum[i] > maxc ? cum[i] : maxc;
        c[i] = maxc;
    }
    double total = c[n - 1];
    if (!(total > 0)) return -1;
    double rank = q * total;
    int b = 0;
    while (b < n - 1 && c[b] < rank)
        b++;
    if (b == n - 1) return le[n - 2];
    if (b == 0 && le[0] <= 0) return le[0];
    double start = 0, end = le[b], count = c[b];
    if (b > 0) {
        start = le[b - 1];
        count -= c[b - 1];
        rank -= c[b - 1];
    }
    if (count <= 0) return end; /* unreachable after the search, kept for safety */
    return start + (end - start) * (rank / count);
}

/* ---- the known families ---- */

typedef enum { K_COUNTER, K_GAUGE, K_HIST, K_FINISHED, K_HIST_SUM_TO } kind;

typedef struct {
    const char *name;
    gp_scrape_flavor flavor;
    kind k;
    int slot;  /* counter / gauge / hist index */
    int alt;   /* 1: used only when the preferred family of the same slot is absent */
    int slot2; /* K_HIST_SUM_TO: also feed this counter with the histogram's sum */
} family;

static const family families[] = {
    /* vLLM v0 and v1 (NIM exposes the same names) */
    {"vllm:prompt_tokens_total", GP_SCRAPE_VLLM, K_COUNTER, GP_SC_PROMPT, 0, 0},
    {"vllm:generation_tokens_total", GP_SCRAPE_VLLM, K_COUNTER, GP_SC_GEN, 0, 0},
    {"vllm:request_success_total", GP_SCRAPE_VLLM, K_FINISHED, 0, 0, 0},
    {"vllm:num_requests_running", GP_SCRAPE_VLLM, K_GAUGE, GP_SG_RUNNING, 0, 0},
    {"vllm:num_requests_waiting", GP_SCRAPE_VLLM, K_GAUGE, GP_SG_WAITING, 0, 0},
    {"vllm:kv_cache_usage_perc", GP_SCRAPE_VLLM, K_GAUGE, GP_SG_KV_USAGE, 0, 0},
    {"vllm:gpu_cache_usage_perc", GP_SCRAPE_VLLM, K_GAUGE, GP_SG_KV_USAGE, 1, 0},
    {"vllm:time_to_first_token_seconds", GP_SCRAPE_VLLM, K_HIST, GP_SH_TTFT, 0, 0},
    {"vllm:inter_token_latency_seconds", GP_SCRAPE_VLLM, K_HIST, GP_SH_ITL, 0, 0},
    {"vllm:time_per_output_token_seconds", GP_SCRAPE_VLLM, K_HIST, GP_SH_ITL, 1, 0},
    {"vllm:e2e_request_latency_seconds", GP_SCRAPE_VLLM, K_HIST, GP_SH_E2E, 0, 0},
    /* SGLang */
    {"sglang:prompt_tokens_total", GP_SCRAPE_SGLANG, K_COUNTER, GP_SC_PROMPT, 0, 0},
    {"sglang:generation_tokens_total", GP_SCRAPE_SGLANG, K_COUNTER, GP_SC_GEN, 0, 0},
    {"sglang:num_requests_total", GP_SCRAPE_SGLANG, K_COUNTER, GP_SC_REQ_TOTAL, 0, 0},
    {"sglang:num_aborted_requests_total", GP_SCRAPE_SGLANG, K_COUNTER, GP_SC_REQ_ERR, 0, 0},
    {"sglang:num_running_reqs", GP_SCRAPE_SGLANG, K_GAUGE, GP_SG_RUNNING, 0, 0},
    {"sglang:num_queue_reqs", GP_SCRAPE_SGLANG, K_GAUGE, GP_SG_WAITING, 0, 0},
    {"sglang:token_usage", GP_SCRAPE_SGLANG, K_GAUGE, GP_SG_KV_USAGE, 0, 0},
    {"sglang:time_to_first_token_seconds", GP_SCRAPE_SGLANG, K_HIST, GP_SH_TTFT, 0, 0},
    {"sglang:inter_token_latency_seconds", GP_SCRAPE_SGLANG, K_HIST, GP_SH_ITL, 0, 0},
    {"sglang:time_per_output_token_seconds", GP_SCRAPE_SGLANG, K_HIST, GP_SH_ITL, 1, 0},
    {"sglang:e2e_request_latency_seconds", GP_SCRAPE_SGLANG, K_HIST, GP_SH_E2E, 0, 0},
    /* TGI (metrics-rs names: counters without _total) */
    {"tgi_request_success", GP_SCRAPE_TGI, K_COUNTER, GP_SC_REQ_OK, 0, 0},
    {"tgi_request_failure", GP_SCRAPE_TGI, K_COUNTER, GP_SC_REQ_ERR, 0, 0},
    {"tgi_request_count", GP_SCRAPE_TGI, K_COUNTER, GP_SC_REQ_TOTAL, 0, 0},
    {"tgi_batch_current_size", GP_SCRAPE_TGI, K_GAUGE, GP_SG_RUNNING, 0, 0},
    {"tgi_queue_size", GP_SCRAPE_TGI, K_GAUGE, GP_SG_WAITING, 0, 0},
    {"tgi_request_duration", GP_SCRAPE_TGI, K_HIST, GP_SH_E2E, 0, 0},
    {"tgi_request_mean_time_per_token_duration", GP_SCRAPE_TGI, K_HIST, GP_SH_ITL, 0, 0},
    {"tgi_request_input_length", GP_SCRAPE_TGI, K_HIST_SUM_TO, GP_SH_PROMPT_LEN, 0, GP_SC_PROMPT},
    {"tgi_request_generated_tokens", GP_SCRAPE_TGI, K_HIST_SUM_TO, GP_SH_GEN_LEN, 0, GP_SC_GEN},
};
#define NFAM (sizeof families / sizeof families[0])

/* Parse state: one accumulator per family, merged into the snapshot at the end so that an
 * "alt" family is used only when its preferred one is absent. */
typedef struct {
    double counter[NFAM][2]; /* [ok, err] for K_FINISHED; [value] otherwise */
    int seen[NFAM];
    gp_hist hist[NFAM];
    int overflow;
} acc;

static const char *label(const gp_prom_sample *s, const char *name) {
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name)) return s->labels[i].value;
    return NULL;
}

static int suffix(const char *name, size_t fam_len, const char *sfx) {
    return !strcmp(name + fam_len, sfx);
}

static void hist_add_bucket(gp_hist *h, double le, double v, int *overflow) {
    int i = 0;
    while (i < h->n && h->le[i] < le)
        i++;
    if (i < h->n && h->le[i] == le) {
        h->cum[i] += v;
        return;
    }
    if (h->n == GP_HIST_MAX_BUCKETS) {
        *overflow = 1;
        return;
    }
    memmove(h->le + i + 1, h->le + i, (size_t)(h->n - i) * sizeof(double));
    memmove(h->cum + i + 1, h->cum + i, (size_t)(h->n - i) * sizeof(double));
    h->le[i] = le;
    h->cum[i] = v;
    h->n++;
}

static int on_sample(void *ctx, const gp_prom_sample *s) {
    acc *a = ctx;
    for (size_t f = 0; f < NFAM; f++) {
        const family *fm = &families[f];
        size_t fl = strlen(fm->name);
        if (strncmp(s->name, fm->name, fl)) continue;
        if (isnan(s->value)) return 0;
        if (fm->k == K_HIST || fm->k == K_HIST_SUM_TO) {
            gp_hist *h = &a->hist[f];
            if (suffix(s->name, fl, "_bucket")) {
                const char *le = label(s, "le");
                double b;
                if (!le || gp_prom_parse_double(le, strlen(le), &b) < 0) return 0;
                hist_add_bucket(h, b, s->value, &a->overflow);
            } else if (suffix(s->name, fl, "_count")) {
                h->count += s->value;
            } else if (suffix(s->name, fl, "_sum")) {
                h->sum += s->value;
            } else {
                continue;
            }
            a->seen[f] = 1;
            return 0;
        }
        if (s->name[fl]) continue; /* a longer name (e.g. _created) */
        if (fm->k == K_FINISHED) {
            const char *why = label(s, "finished_reason");
            int err = why && (!strcmp(why, "abort") || !strcmp(why, "error"));
            a->counter[f][err] += s->value;
        } else {
            a->counter[f][0] += s->value;
        }
        a->seen[f] = 1;
        return 0;
    }
    return 0;
}

static void snapshot_clear(gp_scrape_snapshot *o) {
    memset(o, 0, sizeof *o);
    for (int i = 0; i < GP_SC__COUNT; i++)
        o->counter[i] = -1;
    for (int i = 0; i < GP_SG__COUNT; i++)
        o->gauge[i] = -1;
}

/* Has a non-alt family of this kind and slot been seen? */
static int preferred_seen(const acc *a, kind k, int slot) {
    for (size_t f = 0; f < NFAM; f++)
        if (a->seen[f] && !families[f].alt && families[f].slot == slot &&
            (families[f].k == k || (k == K_HIST && families[f].k == K_HIST_SUM_TO)))
            return 1;
    return 0;
}

static void add_counter(gp_scrape_snapshot *o, int slot, double v) {
    o->counter[slot] = (o->counter[slot] < 0 ? 0 : o->counter[slot]) + v;
}

int gp_scrape_parse(const char *text, size_t len, gp_scrape_snapshot *out, char *err,
                    size_t errlen) {
    acc *a = calloc(1, sizeof *a);
    if (!a) return fail(err, errlen, "out of memory");
    snapshot_clear(out);
    char perr[200];
    if (gp_prom_parse(text, len, on_sample, NULL, a, GP_PROM_SKIP_BAD, perr, sizeof perr) < 0) {
        free(a);
        return fail(err, errlen, "metrics page: %s", perr);
    }
    int votes[4] = {0};
    for (size_t f = 0; f < NFAM; f++) {
        if (!a->seen[f]) continue;
        const family *fm = &families[f];
        votes[fm->flavor]++;
        if (fm->alt && preferred_seen(a, fm->k, fm->slot)) continue;
        switch (fm->k) {
        case K_COUNTER:
            add_counter(out, fm->slot, a->counter[f][0]);
            break;
        case K_FINISHED:
            add_counter(out, GP_SC_REQ_OK, a->counter[f][0]);
            add_counter(out, GP_SC_REQ_ERR, a->counter[f][1]);
            break;
        case K_GAUGE:
            out->gauge[fm->slot] =
                (out->gauge[fm->slot] < 0 ? 0 : out->gauge[fm->slot]) + a->counter[f][0];
            break;
        case K_HIST_SUM_TO:
            add_counter(out, fm->slot2, a->hist[f].sum);
            out->hist[fm->slot] = a->hist[f];
            break;
        case K_HIST:
            out->hist[fm->slot] = a->hist[f];
            break;
        }
    }
    free(a);
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (votes[i] > votes[best]) best = i;
    if (!votes[best])
        return fail(err, errlen,
                    "metrics page has none of the vLLM, SGLang or TGI metrics goodput knows");
    out->flavor = (gp_scrape_flavor)best;
    /* One success/error split for every server: ok = total - errors where only totals exist */
    if (out->counter[GP_SC_REQ_OK] < 0 && out->counter[GP_SC_REQ_TOTAL] >= 0)
        out->counter[GP_SC_REQ_OK] =
            out->counter[GP_SC_REQ_TOTAL] -
            (out->counter[GP_SC_REQ_ERR] > 0 ? out->counter[GP_SC_REQ_ERR] : 0);
    return 0;
}

/* ---- differences ---- */

/* Increase of a counter between two scrapes; a decrease means the server restarted and the
 * counter began again at zero (Prometheus' rate() does the same). -1 when unknown. */
static double increase(double prev, double cur, int *reset) {
    if (cur < 0) return -1;
    if (prev < 0) return -1;
    if (cur < prev) {
        *reset = 1;
        return cur;
    }
    return cur - prev;
}

static void latency(const gp_hist *p, const gp_hist *c, int *reset, gp_latency *out) {
    out->count = out->mean_s = out->p50_s = out->p90_s = out->p99_s = -1;
    if (c->n == 0) return;
    double d[GP_HIST_MAX_BUCKETS];
    double dcount, dsum;
    int same = p->n == c->n && c->count >= p->count;
    for (int i = 0; same && i < c->n; i++)
        if (p->le[i] != c->le[i] || c->cum[i] < p->cum[i]) same = 0;
    if (same) {
        for (int i = 0; i < c->n; i++)
            d[i] = c->cum[i] - p->cum[i];
        dcount = c->count - p->count;
        dsum = c->sum - p->sum;
    } else { /* reset or a new bucket layout: count from zero */
        if (p->n) *reset = 1;
        for (int i = 0; i < c->n; i++)
            d[i] = c->cum[i];
        dcount = c->count;
        dsum = c->sum;
    }
    out->count = dcount;
    if (dcount <= 0) return;
    out->mean_s = dsum / dcount;
    out->p50_s = gp_hist_quantile(0.50, c->le, d, c->n);
    out->p90_s = gp_hist_quantile(0.90, c->le, d, c->n);
    out->p99_s = gp_hist_quantile(0.99, c->le, d, c->n);
}

static double per_s(double d, double dt) {
    return d < 0 || dt <= 0 ? -1 : d / dt;
}

void gp_scrape_diff(const gp_scrape_snapshot *prev, const gp_scrape_snapshot *cur,
                    gp_scrape_window *w) {
    memset(w, 0, sizeof *w);
    w->flavor = cur->flavor;
    w->t0_ns = prev->ts_ns;
    w->t1_ns = cur->ts_ns;
    double dt = (double)(cur->ts_ns - prev->ts_ns) / 1e9;
    int reset = 0;
    double inc[GP_SC__COUNT];
    for (int i = 0; i < GP_SC__COUNT; i++)
        inc[i] = increase(prev->counter[i], cur->counter[i], &reset);
    latency(&prev->hist[GP_SH_TTFT], &cur->hist[GP_SH_TTFT], &reset, &w->ttft);
    latency(&prev->hist[GP_SH_ITL], &cur->hist[GP_SH_ITL], &reset, &w->itl);
    latency(&prev->hist[GP_SH_E2E], &cur->hist[GP_SH_E2E], &reset, &w->e2e);

    double ok = inc[GP_SC_REQ_OK], er = inc[GP_SC_REQ_ERR];
    if (ok >= 0 && er < 0) er = 0;     /* a server with no error counter reports none */
    if (ok < 0 && w->e2e.count >= 0) { /* no request counter: completed = e2e observations */
        ok = w->e2e.count;
        er = 0;
    }
    w->ok_per_s = per_s(ok, dt);
    w->errors_per_s = per_s(er, dt);
    w->requests_per_s = ok >= 0 ? per_s(ok + er, dt) : -1;
    w->error_ratio = ok >= 0 && ok + er > 0 ? er / (ok + er) : -1;
    w->prompt_tokens_per_s = per_s(inc[GP_SC_PROMPT], dt);
    w->generation_tokens_per_s = per_s(inc[GP_SC_GEN], dt);
    w->running = cur->gauge[GP_SG_RUNNING];
    w->waiting = cur->gauge[GP_SG_WAITING];
    w->kv_cache_usage = cur->gauge[GP_SG_KV_USAGE];
    w->counter_reset = reset;
}

/* ---- HTTP ---- */

struct gp_scraper {
    char url[512];
    char job[GP_JOB_ID_MAX];
    long timeout_ms;
    CURL *curl;
    char *body;
    size_t len, cap;
    int have_prev;
    gp_scrape_snapshot prev;
};

#define BODY_MAX (64u << 20) /* a /metrics page larger than this is refused */

static size_t on_body(char *p, size_t sz, size_t nm, void *ctx) {
    gp_scraper *s = ctx;
    size_t n = sz * nm;
    if (s->len + n + 1 > BODY_MAX) return 0;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 65536;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *b = realloc(s->body, cap);
        if (!b) return 0;
        s->body = b;
        s->cap = cap;
    }
    memcpy(s->body + s->len, p, n);
    s->len += n;
    return n;
}

static int valid_job(const char *s) {
    size_t n = strlen(s);
    if (!n || n >= GP_JOB_ID_MAX) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("._:@/-", *s)))
            return 0;
    return 1;
}

int gp_scraper_new(const char *spec, gp_scraper **out, char *err, size_t errlen) {
    *out = NULL;
    gp_scraper *s = calloc(1, sizeof *s);
    if (!s) return fail(err, errlen, "out of memory");
    s->timeout_ms = 2000;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL, *url = strtok_r(buf, ",", &save);
    if (!url || !*url) {
        free(s);
        return fail(err, errlen, "--scrape needs a URL, e.g. http://127.0.0.1:8000/metrics");
    }
    for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
        if (!strncmp(opt, "job=", 4)) {
            if (!valid_job(opt + 4)) {
                free(s);
                return fail(err, errlen,
                            "--scrape %s: job id '%s' is not 1..63 bytes of [A-Za-z0-9._:@/-]",
                            spec, opt + 4);
            }
            snprintf(s->job, sizeof s->job, "%s", opt + 4);
        } else if (!strncmp(opt, "timeout=", 8) && atol(opt + 8) > 0) {
            s->timeout_ms = atol(opt + 8);
        } else {
            free(s);
            return fail(err, errlen, "--scrape %s: unknown option '%s' (job=ID, timeout=MS)", spec,
                        opt);
        }
    }
    const char *scheme = strstr(url, "://") ? "" : "http://";
    const char *hostp = strstr(url, "://") ? strstr(url, "://") + 3 : url;
    const char *path = strchr(hostp, '/');
    snprintf(s->url, sizeof s->url, "%s%s%s", scheme, url, path ? "" : "/metrics");
    if (strncmp(s->url, "http://", 7) && strncmp(s->url, "https://", 8)) {
        free(s);
        return fail(err, errlen, "--scrape %s: only http:// and https:// URLs", spec);
    }
    if (!s->job[0]) {
        size_t hl = path ? (size_t)(path - hostp) : strlen(hostp);
        if (hl >= sizeof s->job) hl = sizeof s->job - 1;
        memcpy(s->job, hostp, hl);
        s->job[hl] = 0;
        if (!valid_job(s->job)) snprintf(s->job, sizeof s->job, "scrape");
    }
    s->curl = curl_easy_init();
    if (!s->curl) {
        free(s);
        return fail(err, errlen, "libcurl could not start");
    }
    *out = s;
    return 0;
}

void gp_scraper_free(gp_scraper *s) {
    if (!s) return;
    if (s->curl) curl_easy_cleanup(s->curl);
    free(s->body);
    free(s);
}

const char *gp_scraper_url(const gp_scraper *s) {
    return s->url;
}
const char *gp_scraper_job(const gp_scraper *s) {
    return s->job;
}

int gp_scrape_poll(gp_scraper *s, int64_t now_ns, gp_scrape_window *w, char *err, size_t errlen) {
    CURL *c = s->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, s->url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms < 1000 ? s->timeout_ms : 1000);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_USERAGENT, "goodput-scrape");
    s->len = 0;
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code != 200) {
        s->have_prev = 0;
        if (rc != CURLE_OK)
            return fail(err, errlen, "scrape %s: %s", s->url, curl_easy_strerror(rc));
        return fail(err, errlen, "scrape %s: HTTP %ld", s->url, code);
    }
    gp_scrape_snapshot cur;
    char perr[256];
    if (gp_scrape_parse(s->body ? s->body : "", s->len, &cur, perr, sizeof perr) < 0) {
        s->have_prev = 0;
        return fail(err, errlen, "scrape %s: %s", s->url, perr);
    }
    cur.ts_ns = now_ns;
    int have = s->have_prev && now_ns > s->prev.ts_ns;
    if (have) {
        gp_scrape_diff(&s->prev, &cur, w);
        snprintf(w->job_id, sizeof w->job_id, "%s", s->job);
    }
    s->prev = cur;
    s->have_prev = 1;
    return have ? 1 : 0;
}
