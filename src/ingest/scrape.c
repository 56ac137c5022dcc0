/* scrape.c: the scraper: GET a /metrics page, parse it (scrape_parse.c), difference it
 * with the previous one (scrape_diff.c). See scrape.h.
 *
 */
#include "ingest/scrape.h"

#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    case GP_SCRAPE_TRITON:
        return "triton";
    case GP_SCRAPE_UNKNOWN:
    case GP_SCRAPE__FLAVORS:
        break;
    }
    return "unknown";
}

/* ---- HTTP ---- */

struct gp_scraper {
    char url[512];
    char job[GP_JOB_ID_MAX];
    long timeout_ms;
    CURL *curl;
    char *body;
    size_t len, cap;
    double slo_ttft_s, slo_itl_s; /* <= 0: no target */
    int have_prev;
    gp_scrape_snapshot prev, cur;
    int unknown_told; /* the unknown families were handed out once */
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
        } else if (!strncmp(opt, "slo_ttft=", 9) && atof(opt + 9) > 0) {
            s->slo_ttft_s = atof(opt + 9);
        } else if (!strncmp(opt, "slo_itl=", 8) && atof(opt + 8) > 0) {
            s->slo_itl_s = atof(opt + 8);
        } else {
            free(s);
            return fail(
                err, errlen,
                "--scrape %s: unknown option '%s' (job=ID, timeout=MS, slo_ttft=S, slo_itl=S)",
                spec, opt);
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
    /* the snapshots live in the scraper: each is tens of KiB, too much for a stack frame */
    gp_scrape_snapshot *cur = &s->cur;
    char perr[256];
    if (gp_scrape_parse(s->body ? s->body : "", s->len, cur, perr, sizeof perr) < 0) {
        s->have_prev = 0;
        return fail(err, errlen, "scrape %s: %s", s->url, perr);
    }
    cur->ts_ns = now_ns;
    int have = s->have_prev && now_ns > s->prev.ts_ns;
    if (have) {
        gp_scrape_diff_slo(&s->prev, cur, s->slo_ttft_s, s->slo_itl_s, w);
        snprintf(w->job_id, sizeof w->job_id, "%s", s->job);
    }
    s->prev = *cur;
    s->have_prev = 1;
    return have ? 1 : 0;
}

int gp_scraper_take_unknown(gp_scraper *s, char *buf, size_t cap) {
    if (s->unknown_told || !s->have_prev || s->prev.nunknown == 0 || cap == 0) return 0;
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < s->prev.nunknown && at < cap; i++) {
        int n = snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", s->prev.unknown[i]);
        if (n < 0) break;
        at += (size_t)n;
    }
    s->unknown_told = 1;
    return 1;
}
