/* promql_client.c: Prometheus HTTP API client (see promql_client.h).
 *
 * One libcurl easy handle is kept for the whole run (connection reuse), and a second one
 * for the query sent ahead (gp_prom_prefetch) by a thread. Each answer is read into one
 * buffer. Range answers ("status":"success", a matrix) in Prometheus's own layout are read
 * by hand (fast_matrix); in any other layout with yajl events: each series' labels become
 * a small jansson object and its points one reused array; no tree of the whole answer is
 * built. Anything else (errors, lists, an answer in an unexpected order) is parsed whole
 * with jansson. Peak memory is two answers' text and one answer's points; the analyzer
 * sizes its ranges so that they stay small. */
#include "analyze/promql_client.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <yajl/yajl_parse.h>

#define MAX_BODY (512L << 20)

/* One answer's text as it arrives. */
typedef struct {
    char *buf;
    size_t len, cap;
    int too_big;
} body_t;

/* The next request, sent on its own connection by a thread while this one's answer is read
 * (gp_prom_prefetch_*): the server evaluates it meanwhile. */
typedef struct {
    CURL *h;
    body_t b;
    char *path, *query; /* what was asked (fetch uses the answer only for the same) */
    long status;
    CURLcode crc;
    char curl_err[CURL_ERROR_SIZE];
    pthread_t th;
    int active; /* a thread was started and not joined, or its answer not taken */
    const struct gp_prom_client *c;
    char *next_path, *next_query; /* asked for ahead while one is active: started by fetch
                                   * once that one's answer is taken */
} prefetch_t;

struct gp_prom_client {
    CURL *h;
    char base[1024];
    char token[4096];
    char userpwd[512];
    char ca[1024];
    long timeout_ms;
    int compress;
    body_t b;
    prefetch_t pf;
    /* fast_matrix's arrays, kept from answer to answer */
    gp_prom_point *fpts;
    size_t fcap;
    struct fseries *fser;
    size_t fscap;
    long requests, splits;
    double wait_s, parse_cpu_s; /* time in curl (mostly the server) and reading answers */
    char curl_err[CURL_ERROR_SIZE];
};

long gp_prom_requests(const gp_prom_client *c) {
    return c->requests;
}
long gp_prom_splits(const gp_prom_client *c) {
    return c->splits;
}
void gp_prom_times(const gp_prom_client *c, double *wait_s, double *parse_cpu_s) {
    *wait_s = c->wait_s;
    *parse_cpu_s = c->parse_cpu_s;
}

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int copy(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) return -1;
    memcpy(d, s, n + 1);
    return 0;
}

int gp_prom_client_new(const gp_prom_opts *o, gp_prom_client **out, char *err, size_t errlen) {
    *out = NULL;
    gp_prom_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!o->url || !*o->url || copy(c->base, sizeof c->base, o->url) != 0) {
        snprintf(err, errlen, "--prometheus: expected a URL of at most %zu bytes",
                 sizeof c->base - 1);
        free(c);
        return -1;
    }
    if (!strstr(c->base, "://")) {
        snprintf(err, errlen, "--prometheus '%s': expected http://HOST:PORT or https://...",
                 o->url);
        free(c);
        return -1;
    }
    size_t bl = strlen(c->base);
    while (bl > 0 && c->base[bl - 1] == '/')
        c->base[--bl] = 0;
    if (o->token_file) {
        FILE *f = fopen(o->token_file, "r");
        size_t n = f ? fread(c->token, 1, sizeof c->token - 1, f) : 0;
        int bad = !f || ferror(f) || !feof(f);
        if (f) fclose(f);
        c->token[n] = 0;
        while (n > 0 && isspace((unsigned char)c->token[n - 1]))
            c->token[--n] = 0;
        if (bad || n == 0) {
            snprintf(err, errlen, "--bearer-token-file %s: %s", o->token_file,
                     !f       ? "cannot be read"
                     : n == 0 ? "is empty"
                              : "is longer than 4 KiB");
            free(c);
            return -1;
        }
    }
    if (o->basic_auth &&
        (copy(c->userpwd, sizeof c->userpwd, o->basic_auth) != 0 || !strchr(o->basic_auth, ':'))) {
        snprintf(err, errlen, "--basic-auth: expected USER:PASSWORD (at most 511 bytes)");
        free(c);
        return -1;
    }
    if (o->ca_file && copy(c->ca, sizeof c->ca, o->ca_file) != 0) {
        snprintf(err, errlen, "--ca-file: path too long");
        free(c);
        return -1;
    }
    c->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 120000;
    c->compress = o->compress;
    c->h = curl_easy_init();
    if (!c->h) {
        snprintf(err, errlen, "cannot start libcurl");
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

static void prefetch_drop(gp_prom_client *c);

void gp_prom_client_trim(gp_prom_client *c) {
    if (!c) return;
    prefetch_drop(c);
    free(c->pf.next_path);
    free(c->pf.next_query);
    c->pf.next_path = c->pf.next_query = NULL;
    free(c->pf.b.buf);
    free(c->b.buf);
    free(c->fpts);
    free(c->fser);
    memset(&c->pf.b, 0, sizeof c->pf.b);
    memset(&c->b, 0, sizeof c->b);
    c->fpts = NULL;
    c->fser = NULL;
    c->fcap = c->fscap = 0;
}

void gp_prom_client_free(gp_prom_client *c) {
    if (!c) return;
    prefetch_drop(c);
    free(c->pf.next_path);
    free(c->pf.next_query);
    if (c->pf.h) curl_easy_cleanup(c->pf.h);
    free(c->pf.b.buf);
    free(c->fpts);
    free(c->fser);
    curl_easy_cleanup(c->h);
    free(c->b.buf);
    free(c);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx) {
    body_t *c = ctx;
    size_t n = size * nmemb;
    if (c->len + n + 1 > (size_t)MAX_BODY) {
        c->too_big = 1;
        return 0;
    }
    if (c->len + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 1 << 16;
        while (cap < c->len + n + 1)
            cap *= 2;
        char *b = realloc(c->buf, cap);
        if (!b) return 0;
        c->buf = b;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    c->buf[c->len] = 0;
    return n;
}

int gp_prom_urlencode(const char *s, char *buf, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = strlen(buf);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
            if (o + 2 > cap) return -1;
            buf[o++] = (char)ch;
        } else {
            if (o + 4 > cap) return -1;
            buf[o++] = '%';
            buf[o++] = hex[ch >> 4];
            buf[o++] = hex[ch & 15];
        }
    }
    buf[o] = 0;
    return 0;
}

static int is_sample_limit(const char *msg) {
    return msg && (strstr(msg, "too many samples") || strstr(msg, "max-samples") ||
                   strstr(msg, "maxSamplesPerQuery"));
}

/* GET url on handle h into b; *status the HTTP status. Reads only c's settings, fixed
 * after gp_prom_client_new, so a prefetch thread runs it on its own handle and body. */
static CURLcode perform(const gp_prom_client *c, CURL *h, body_t *b, char *curl_err,
                        const char *url, long *status) {
    b->len = 0;
    b->too_big = 0;
    curl_err[0] = 0;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (c->compress) curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* gzip if offered */
    curl_easy_setopt(h, CURLOPT_USERAGENT, "goodput-analyze");
    if (c->token[0]) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, c->token);
    } else if (c->userpwd[0]) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERPWD, c->userpwd);
    }
    if (c->ca[0]) curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
    CURLcode rc = curl_easy_perform(h);
    *status = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    return rc;
}

static int transport_err(const gp_prom_client *c, const char *path, CURLcode rc, int too_big,
                         const char *curl_err, char *err, size_t errlen) {
    if (too_big)
        snprintf(err, errlen, "Prometheus at %s: the answer to %s exceeds %ld MiB", c->base, path,
                 MAX_BODY >> 20);
    else
        snprintf(err, errlen, "cannot reach Prometheus at %s (%s): %s", c->base, path,
                 curl_err[0] ? curl_err : curl_easy_strerror(rc));
    return -1;
}

static char *make_url(const gp_prom_client *c, const char *path, const char *query) {
    size_t ul = strlen(c->base) + strlen(path) + strlen(query) + 2;
    char *url = malloc(ul);
    if (url) snprintf(url, ul, "%s%s%s%s", c->base, path, *query ? "?" : "", query);
    return url;
}

static void *prefetch_main(void *arg) {
    prefetch_t *pf = arg;
    char *url = make_url(pf->c, pf->path, pf->query);
    pf->status = 0;
    pf->crc =
        url ? perform(pf->c, pf->h, &pf->b, pf->curl_err, url, &pf->status) : CURLE_OUT_OF_MEMORY;
    free(url);
    return NULL;
}

/* Waits for the prefetch and forgets its answer (a request made, not used). */
static void prefetch_drop(gp_prom_client *c) {
    prefetch_t *pf = &c->pf;
    if (!pf->active) return;
    pthread_join(pf->th, NULL);
    pf->active = 0;
    c->requests++;
    free(pf->path);
    free(pf->query);
    pf->path = pf->query = NULL;
}

/* Starts GET base+path?query (path and query malloc'd, taken) on the prefetch connection
 * (nothing when it cannot start: the request is then made when asked for). */
static void prefetch_start(gp_prom_client *c, char *path, char *query) {
    prefetch_t *pf = &c->pf;
    prefetch_drop(c);
    if (!pf->h) pf->h = curl_easy_init(); /* on this thread: libcurl's global init is done */
    pf->path = path;
    pf->query = query;
    pf->c = c;
    if (!pf->h || !pf->path || pthread_create(&pf->th, NULL, prefetch_main, pf) != 0) {
        free(pf->path);
        free(pf->query);
        pf->path = pf->query = NULL;
        return;
    }
    pf->active = 1;
}

static int fetch_now(gp_prom_client *c, const char *path, const char *query, long *status,
                     char *err, size_t errlen);

/* GET base+path?query into c->b.buf; *status the HTTP status. 0, or -1 with err. The
 * prefetched answer when it is the same request; then the request asked for next, if any,
 * is sent ahead while the caller reads this answer. */
static int fetch(gp_prom_client *c, const char *path, const char *query, long *status, char *err,
                 size_t errlen) {
    int rc = fetch_now(c, path, query, status, err, errlen);
    prefetch_t *pf = &c->pf;
    if (!pf->active && pf->next_path) {
        prefetch_start(c, pf->next_path, pf->next_query);
        pf->next_path = pf->next_query = NULL;
    }
    return rc;
}

static int fetch_now(gp_prom_client *c, const char *path, const char *query, long *status,
                     char *err, size_t errlen) {
    prefetch_t *pf = &c->pf;
    if (pf->active && !strcmp(pf->path, path) && !strcmp(pf->query, query)) {
        double w0 = clock_s(CLOCK_MONOTONIC);
        pthread_join(pf->th, NULL);
        c->wait_s += clock_s(CLOCK_MONOTONIC) - w0;
        pf->active = 0;
        c->requests++;
        free(pf->path);
        free(pf->query);
        pf->path = pf->query = NULL;
        body_t t = c->b; /* the answer becomes this connection's; the old buffer is reused */
        c->b = pf->b;
        pf->b = t;
        *status = pf->status;
        if (pf->crc != CURLE_OK)
            return transport_err(c, path, pf->crc, c->b.too_big, pf->curl_err, err, errlen);
        return 0;
    }
    char *url = make_url(c, path, query);
    if (!url) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->requests++;
    double w0 = clock_s(CLOCK_MONOTONIC);
    CURLcode rc = perform(c, c->h, &c->b, c->curl_err, url, status);
    c->wait_s += clock_s(CLOCK_MONOTONIC) - w0;
    free(url);
    if (rc != CURLE_OK) return transport_err(c, path, rc, c->b.too_big, c->curl_err, err, errlen);
    return 0;
}

/* The answer in c->b.buf (HTTP status), parsed whole: see gp_prom_get. */
static int interpret(gp_prom_client *c, const char *path, long status, json_t **data, char *err,
                     size_t errlen) {
    *data = NULL;
    json_error_t je;
    json_t *root = c->b.len ? json_loadb(c->b.buf, c->b.len, 0, &je) : NULL;
    const char *st = root ? json_string_value(json_object_get(root, "status")) : NULL;
    const char *msg = root ? json_string_value(json_object_get(root, "error")) : NULL;
    if (status >= 400 || (st && strcmp(st, "success") != 0)) {
        int limit = is_sample_limit(msg);
        if (msg)
            snprintf(err, errlen, "Prometheus at %s answered HTTP %ld for %s: %s", c->base, status,
                     path, msg);
        else {
            char snip[160] = "";
            if (c->b.len) {
                size_t n = c->b.len < sizeof snip - 1 ? c->b.len : sizeof snip - 1;
                memcpy(snip, c->b.buf, n);
                snip[n] = 0;
                for (char *p = snip; *p; p++)
                    if (*p == '\n' || *p == '\r') *p = ' ';
            }
            snprintf(err, errlen, "Prometheus at %s answered HTTP %ld for %s%s%s", c->base, status,
                     path, snip[0] ? ": " : "", snip);
        }
        json_decref(root);
        return limit ? -2 : -1;
    }
    json_t *d = root ? json_object_get(root, "data") : NULL;
    if (!root || !st || !d) {
        snprintf(err, errlen,
                 "Prometheus at %s: the answer to %s is not the Prometheus API's JSON%s%s "
                 "(is the URL a Prometheus?)",
                 c->base, path, root ? "" : ": ", root ? "" : je.text);
        json_decref(root);
        return -1;
    }
    *data = json_incref(d);
    json_decref(root);
    return 0;
}

int gp_prom_get(gp_prom_client *c, const char *path, const char *query, json_t **data, char *err,
                size_t errlen) {
    *data = NULL;
    long status;
    if (fetch(c, path, query, &status, err, errlen) != 0) return -1;
    return interpret(c, path, status, data, err, errlen);
}

/* Streaming reader of a successful matrix answer:
 *   {"status":"success","data":{"resultType":"matrix","result":[
 *     {"metric":{"k":"v",...},"values":[[t,"v"],...]}, ...]}, "warnings":[...]}
 * Roles of the containers we are inside; everything else is skipped by depth. */
enum { R_ROOT, R_DATA, R_RESULT, R_SERIES, R_METRIC, R_VALUES, R_POINT, R_SKIP };

typedef struct {
    gp_prom_series_fn fn;
    void *ctx;
    int role[8];
    int depth;     /* containers open (role[depth - 1] is the innermost we track) */
    long skip;     /* > 0 inside a container we do not read */
    char key[32];  /* last key in the innermost object */
    int ok_status; /* "status":"success" seen */
    int matrix;    /* "resultType":"matrix" seen */
    int fallback;  /* something out of the usual order: parse whole instead */
    int called;    /* fn has been called (no fallback possible any more) */
    int fn_rc;
    json_t *metric;
    int has_values;
    gp_prom_point *pts;
    size_t n, cap;
    int pt_i; /* index inside the current [t, "v"] */
    double pt_t;
    char label[256];
} mstream;

static int ms_stop(mstream *m) {
    if (!m->called) m->fallback = 1;
    return 0;
}

static int ms_open(mstream *m, int is_map) {
    if (m->skip) {
        m->skip++;
        return 1;
    }
    int role = R_SKIP;
    int top = m->depth ? m->role[m->depth - 1] : -1;
    if (top < 0)
        role = is_map ? R_ROOT : R_SKIP;
    else if (top == R_ROOT && is_map && !strcmp(m->key, "data"))
        role = R_DATA;
    else if (top == R_DATA && !is_map && !strcmp(m->key, "result")) {
        if (!m->ok_status || !m->matrix) return ms_stop(m);
        role = R_RESULT;
    } else if (top == R_RESULT && is_map) {
        role = R_SERIES;
        m->metric = NULL;
        m->has_values = 0;
        m->n = 0;
    } else if (top == R_SERIES && is_map && !strcmp(m->key, "metric") && !m->metric) {
        m->metric = json_object();
        if (!m->metric) return ms_stop(m);
        role = R_METRIC;
    } else if (top == R_SERIES && !is_map && !strcmp(m->key, "values")) {
        m->has_values = 1;
        role = R_VALUES;
    } else if (top == R_VALUES && !is_map) {
        m->pt_i = 0;
        m->pt_t = 0;
        role = R_POINT;
    }
    if (role == R_SKIP) {
        m->skip = 1;
        return 1;
    }
    if (m->depth == 8) return ms_stop(m);
    m->role[m->depth++] = role;
    m->key[0] = 0;
    return 1;
}

static int ms_close(void *u) {
    mstream *m = u;
    if (m->skip) {
        m->skip--;
        return 1;
    }
    int role = m->role[--m->depth];
    if (role == R_SERIES) {
        /* a series without labels or values (a native histogram) is skipped */
        if (m->metric && m->has_values && !m->fn_rc) {
            m->called = 1;
            m->fn_rc = m->fn(m->ctx, m->metric, m->pts, m->n);
        }
        json_decref(m->metric);
        m->metric = NULL;
        if (m->fn_rc) return 0;
    }
    return 1;
}

/* Plain decimals of at most 15 digits (all times, nearly all values) are read as an
 * integer divided by a power of ten a double holds exactly: IEEE division rounds correctly,
 * so this is strtod's value. A third of the time reading an answer was strtod. */
double gp_prom_num(const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    static const double p10[] = {1,   1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    size_t i = 0, digits = 0, frac = 0;
    int neg = 0, dot = 0;
    uint64_t v = 0;
    if (len && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    for (; i < len; i++) {
        unsigned char ch = s[i];
        if (ch >= '0' && ch <= '9') {
            v = v * 10 + (uint64_t)(ch - '0');
            if (++digits > 15) break;
            frac += (size_t)dot;
        } else if (ch == '.' && !dot) {
            dot = 1;
        } else {
            break;
        }
    }
    if (i == len && digits > 0 && (!dot || frac > 0)) {
        double d = (double)v / p10[frac];
        return neg ? -d : d;
    }
    char tmp[64];
    size_t k = len < sizeof tmp - 1 ? len : sizeof tmp - 1;
    memcpy(tmp, s, k);
    tmp[k] = 0;
    return strtod(tmp, NULL);
}

static int ms_scalar(mstream *m, int is_str, int is_num, const unsigned char *s, size_t len) {
    if (m->skip || !m->depth) return 1;
    int top = m->role[m->depth - 1];
    if (top == R_ROOT && !strcmp(m->key, "status")) {
        m->ok_status = is_str && len == 7 && !memcmp(s, "success", 7);
        if (!m->ok_status) return ms_stop(m);
    } else if (top == R_DATA && !strcmp(m->key, "resultType")) {
        m->matrix = is_str && len == 6 && !memcmp(s, "matrix", 6);
        if (!m->matrix) return ms_stop(m);
    } else if (top == R_METRIC) {
        if (!is_str) return 1;
        if (json_object_set_new(m->metric, m->label, json_stringn((const char *)s, len)) != 0)
            return ms_stop(m);
    } else if (top == R_POINT) {
        if (m->pt_i == 0 && is_num) {
            m->pt_t = gp_prom_num((const char *)s, len);
        } else if (m->pt_i == 1 && is_str) {
            if (m->n == m->cap) {
                size_t nc = m->cap ? m->cap * 2 : 1024;
                gp_prom_point *np = realloc(m->pts, nc * sizeof *np);
                if (!np) return ms_stop(m);
                m->pts = np;
                m->cap = nc;
            }
            m->pts[m->n].t_s = m->pt_t;
            m->pts[m->n].v = gp_prom_num((const char *)s, len);
            m->n++;
        }
        m->pt_i++;
    }
    return 1;
}

static int ms_null(void *u) {
    return ms_scalar(u, 0, 0, NULL, 0);
}
static int ms_bool(void *u, int b) {
    (void)b;
    return ms_scalar(u, 0, 0, NULL, 0);
}
static int ms_number(void *u, const char *s, size_t len) {
    return ms_scalar(u, 0, 1, (const unsigned char *)s, len);
}
static int ms_string(void *u, const unsigned char *s, size_t len) {
    return ms_scalar(u, 1, 0, s, len);
}
static int ms_map(void *u) {
    return ms_open(u, 1);
}
static int ms_arr(void *u) {
    return ms_open(u, 0);
}
static int ms_key(void *u, const unsigned char *s, size_t len) {
    mstream *m = u;
    if (m->skip) return 1;
    if (m->depth && m->role[m->depth - 1] == R_METRIC) {
        if (len >= sizeof m->label) return ms_stop(m); /* a label name that long: be careful */
        memcpy(m->label, s, len);
        m->label[len] = 0;
        return 1;
    }
    size_t k = len < sizeof m->key - 1 ? len : sizeof m->key - 1;
    memcpy(m->key, s, k);
    m->key[k] = 0;
    return 1;
}

static const yajl_callbacks MS_CALLBACKS = {
    ms_null, ms_bool, NULL, NULL, ms_number, ms_string, ms_map, ms_key, ms_close, ms_arr, ms_close};

/* A matrix answer as Prometheus writes it, read without yajl (a third of the CPU of reading
 * an answer was yajl's events): {"status":"success","data":{"resultType":"matrix","result":
 * [{"metric":{...},"values":[[t,"v"],...]},...]}} with no white space, each series' labels
 * parsed by jansson, the points by hand. The whole answer is read before fn sees a series,
 * so anything else (white space, warnings, a native histogram, an escape in a value, an
 * answer that breaks off) returns 1 with nothing handed over, and stream_matrix reads the
 * answer with yajl as before: the same series and points either way. */
struct fseries {
    json_t *metric;
    size_t off, n;
};

/* The end of the JSON object at p ('{'), strings and nesting skipped; NULL if it does not
 * close before e. */
static const char *object_end(const char *p, const char *e) {
    int depth = 0;
    while (p < e) {
        char ch = *p++;
        if (ch == '"') {
            while (p < e && *p != '"')
                p += *p == '\\' ? 2 : 1;
            if (p >= e) return NULL;
            p++;
        } else if (ch == '{')
            depth++;
        else if (ch == '}' && --depth == 0)
            return p;
    }
    return NULL;
}

static int lit(const char **p, const char *e, const char *s, size_t n) {
    if ((size_t)(e - *p) < n || memcmp(*p, s, n) != 0) return 0;
    *p += n;
    return 1;
}
#define LIT(p, e, s) lit(p, e, s, sizeof s - 1)

static int fast_parse(gp_prom_client *c, size_t *nser) {
    const char *p = c->b.buf, *e = c->b.buf + c->b.len;
    size_t ns = 0, np = 0;
    *nser = 0;
    if (!LIT(&p, e, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["))
        return 1;
    if (p < e && *p == ']')
        p++;
    else
        for (;;) {
            if (!LIT(&p, e, "{\"metric\":") || p >= e || *p != '{') return 1;
            const char *me = object_end(p, e);
            if (!me) return 1;
            if (ns == c->fscap) {
                size_t nc = c->fscap ? c->fscap * 2 : 256;
                struct fseries *x = realloc(c->fser, nc * sizeof *x);
                if (!x) return 1;
                c->fser = x;
                c->fscap = nc;
            }
            json_t *m = json_loadb(p, (size_t)(me - p), JSON_DISABLE_EOF_CHECK, NULL);
            if (!m) return 1;
            c->fser[ns++] = (struct fseries){m, np, 0};
            *nser = ns;
            const char *k;
            json_t *v;
            void *tmp;
            json_object_foreach_safe(m, tmp, k, v) {
                if (strlen(k) >= 256) return 1;                /* as ms_key: be careful */
                if (!json_is_string(v)) json_object_del(m, k); /* labels are strings */
            }
            p = me;
            if (!LIT(&p, e, ",\"values\":[")) return 1;
            if (p < e && *p == ']')
                p++;
            else
                for (;;) {
                    if (!LIT(&p, e, "[")) return 1;
                    const char *t0 = p;
                    while (p < e && ((*p >= '0' && *p <= '9') || *p == '.' || *p == '-' ||
                                     *p == '+' || *p == 'e' || *p == 'E'))
                        p++;
                    if (p == t0) return 1;
                    const char *t1 = p;
                    if (!LIT(&p, e, ",\"")) return 1;
                    const char *v0 = p;
                    while (p < e && *p != '"' && *p != '\\')
                        p++;
                    if (p >= e || *p != '"') return 1;
                    const char *v1 = p++;
                    if (!LIT(&p, e, "]")) return 1;
                    if (np == c->fcap) {
                        size_t nc = c->fcap ? c->fcap * 2 : 4096;
                        gp_prom_point *x = realloc(c->fpts, nc * sizeof *x);
                        if (!x) return 1;
                        c->fpts = x;
                        c->fcap = nc;
                    }
                    c->fpts[np].t_s = gp_prom_num(t0, (size_t)(t1 - t0));
                    c->fpts[np].v = gp_prom_num(v0, (size_t)(v1 - v0));
                    np++;
                    if (p < e && *p == ',') {
                        p++;
                        continue;
                    }
                    if (!LIT(&p, e, "]")) return 1;
                    break;
                }
            c->fser[ns - 1].n = np - c->fser[ns - 1].off;
            if (!LIT(&p, e, "}")) return 1;
            if (p < e && *p == ',') {
                p++;
                continue;
            }
            if (!LIT(&p, e, "]")) return 1;
            break;
        }
    if (!LIT(&p, e, "}}")) return 1;
    while (p < e && (*p == '\n' || *p == ' ' || *p == '\r' || *p == '\t'))
        p++;
    return p == e ? 0 : 1;
}

/* 0 (fn's non-zero value when it stopped), or 1: read it with yajl. */
static int fast_matrix(gp_prom_client *c, gp_prom_series_fn fn, void *ctx) {
    size_t ns = 0;
    int rc = fast_parse(c, &ns);
    for (size_t i = 0; i < ns; i++) {
        if (rc == 0) rc = fn(ctx, c->fser[i].metric, c->fpts + c->fser[i].off, c->fser[i].n);
        json_decref(c->fser[i].metric);
    }
    return rc;
}

/* Reads c->b.buf as a successful matrix answer, calling fn per series. Returns 0, fn's
 * non-zero value, 1 when the answer is not in the usual form and nothing was handed to
 * fn yet (the caller parses it whole), or -1 with err. */
static int stream_matrix(gp_prom_client *c, const char *promql, gp_prom_series_fn fn, void *ctx,
                         char *err, size_t errlen) {
    const char *fe = getenv("GOODPUT_ANALYZE_YAJL"); /* tests: the yajl reader only */
    if (!(fe && fe[0] == '1')) {
        int frc = fast_matrix(c, fn, ctx);
        if (frc != 1) return frc;
    }
    mstream m;
    memset(&m, 0, sizeof m);
    m.fn = fn;
    m.ctx = ctx;
    yajl_handle h = yajl_alloc(&MS_CALLBACKS, NULL, &m);
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    yajl_status st = yajl_parse(h, (const unsigned char *)c->b.buf, c->b.len);
    if (st == yajl_status_ok) st = yajl_complete_parse(h);
    int rc;
    if (m.fn_rc)
        rc = m.fn_rc;
    else if (st == yajl_status_ok && m.ok_status && m.matrix)
        rc = 0;
    else if (!m.called)
        rc = 1;
    else {
        snprintf(err, errlen,
                 "Prometheus at %s: the answer to query_range for %s breaks off after byte %zu",
                 c->base, promql, yajl_get_bytes_consumed(h));
        rc = -1;
    }
    json_decref(m.metric);
    free(m.pts);
    yajl_free(h);
    return rc;
}

/* Points of a [[t, "v"], ...] array parsed whole, into *pts (grown as needed). */
static size_t json_points(json_t *values, gp_prom_point **pts, size_t *cap) {
    size_t i, n = 0;
    json_t *pt;
    json_array_foreach(values, i, pt) {
        const char *vs = json_string_value(json_array_get(pt, 1));
        if (!vs) continue;
        if (n == *cap) {
            size_t nc = *cap ? *cap * 2 : 1024;
            gp_prom_point *np = realloc(*pts, nc * sizeof *np);
            if (!np) return n;
            *pts = np;
            *cap = nc;
        }
        (*pts)[n].t_s = json_number_value(json_array_get(pt, 0));
        (*pts)[n].v = strtod(vs, NULL);
        n++;
    }
    return n;
}

/* raw: promql is a series selector, asked for as the instant query promql[W] at t1 with W
 * covering (t0 - step, t1] (Prometheus 2.x range selectors include both ends: W is a
 * millisecond short), so the answer is the raw samples; else a query_range. */
static char *range_query(const char *promql, int raw, int64_t t0, int64_t t1, int64_t step) {
    size_t qcap = strlen(promql) * 3 + 192;
    char *q = malloc(qcap);
    if (!q) return NULL;
    strcpy(q, "query=");
    gp_prom_urlencode(promql, q, qcap);
    size_t l = strlen(q);
    if (raw)
        snprintf(q + l, qcap - l, "%%5B%" PRId64 "ms%%5D&time=%" PRId64,
                 (t1 - t0 + step) * 1000 - 1, t1);
    else
        snprintf(q + l, qcap - l, "&start=%" PRId64 "&end=%" PRId64 "&step=%" PRId64, t0, t1, step);
    return q;
}

static int range_once(gp_prom_client *c, const char *promql, int raw, int64_t t0, int64_t t1,
                      int64_t step, gp_prom_series_fn fn, void *ctx, int depth, char *err,
                      size_t errlen) {
    char *q = range_query(promql, raw, t0, t1, step);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const char *path = raw ? "/api/v1/query" : "/api/v1/query_range";
    json_t *data = NULL;
    long status;
    int rc = fetch(c, path, q, &status, err, errlen);
    free(q);
    if (rc != 0) return -1;
    if (status < 400) {
        /* this thread's CPU: analyze's writer thread stores rows meanwhile (prom_map.c) */
        double p0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        rc = stream_matrix(c, promql, fn, ctx, err, errlen);
        c->parse_cpu_s += clock_s(CLOCK_THREAD_CPUTIME_ID) - p0;
        if (rc != 1) return rc;
    }
    rc = interpret(c, path, status, &data, err, errlen);
    if (rc == -2) {
        int64_t nsteps = (t1 - t0) / step;
        if (nsteps < 1 || depth > 40) {
            size_t l2 = strlen(err);
            snprintf(err + l2, errlen > l2 ? errlen - l2 : 0,
                     " (one step of %s is already over the server's sample limit: narrow "
                     "--selector or raise --query.max-samples)",
                     promql);
            return -1;
        }
        c->splits++;
        int64_t mid = t0 + (nsteps / 2) * step;
        int r = range_once(c, promql, raw, t0, mid, step, fn, ctx, depth + 1, err, errlen);
        if (r != 0) return r;
        return range_once(c, promql, raw, mid + step, t1, step, fn, ctx, depth + 1, err, errlen);
    }
    if (rc != 0) return -1;
    json_t *res = json_object_get(data, "result");
    const char *type = json_string_value(json_object_get(data, "resultType"));
    if (!json_is_array(res) || !type || strcmp(type, "matrix") != 0) {
        snprintf(err, errlen, "Prometheus at %s: %s for %s did not answer a matrix", c->base, path,
                 promql);
        json_decref(data);
        return -1;
    }
    size_t i, cap = 0;
    json_t *series;
    gp_prom_point *pts = NULL;
    int r = 0;
    json_array_foreach(res, i, series) {
        json_t *m = json_object_get(series, "metric"), *v = json_object_get(series, "values");
        if (!json_is_object(m) || !json_is_array(v)) continue; /* native histograms: skipped */
        size_t n = json_points(v, &pts, &cap);
        if ((r = fn(ctx, m, pts, n)) != 0) break;
    }
    free(pts);
    json_decref(data);
    return r;
}

int gp_prom_query_range(gp_prom_client *c, const char *promql, int64_t t0_s, int64_t t1_s,
                        int64_t step_s, gp_prom_series_fn fn, void *ctx, char *err, size_t errlen) {
    if (step_s <= 0 || t1_s < t0_s) {
        snprintf(err, errlen, "query_range: empty range or step");
        return -1;
    }
    return range_once(c, promql, 0, t0_s, t1_s, step_s, fn, ctx, 0, err, errlen);
}

int gp_prom_query_raw(gp_prom_client *c, const char *selector, int64_t t0_s, int64_t t1_s,
                      int64_t step_s, gp_prom_series_fn fn, void *ctx, char *err, size_t errlen) {
    if (step_s <= 0 || t1_s < t0_s) {
        snprintf(err, errlen, "query: empty range or step");
        return -1;
    }
    return range_once(c, selector, 1, t0_s, t1_s, step_s, fn, ctx, 0, err, errlen);
}

void gp_prom_prefetch(gp_prom_client *c, const char *promql, int raw, int64_t t0_s, int64_t t1_s,
                      int64_t step_s) {
    if (step_s <= 0 || t1_s < t0_s) return;
    char *q = range_query(promql, raw, t0_s, t1_s, step_s);
    char *path = strdup(raw ? "/api/v1/query" : "/api/v1/query_range");
    if (!q || !path) {
        free(q);
        free(path);
        return;
    }
    prefetch_t *pf = &c->pf;
    free(pf->next_path);
    free(pf->next_query);
    pf->next_path = pf->next_query = NULL;
    if (!pf->active) {
        prefetch_start(c, path, q);
        return;
    }
    pf->next_path = path; /* after the active one's answer is taken (fetch) */
    pf->next_query = q;
}

static int list_get(gp_prom_client *c, const char *path, const char *match, int64_t t0, int64_t t1,
                    json_t **out, char *err, size_t errlen) {
    size_t qcap = (match ? strlen(match) * 3 : 0) + 128;
    char *q = malloc(qcap);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    q[0] = 0;
    if (match) {
        strcpy(q, "match%5B%5D=");
        gp_prom_urlencode(match, q, qcap);
        strcat(q, "&");
    }
    size_t l = strlen(q);
    snprintf(q + l, qcap - l, "start=%" PRId64 "&end=%" PRId64, t0, t1);
    int rc = gp_prom_get(c, path, q, out, err, errlen);
    free(q);
    if (rc != 0) return -1;
    if (!json_is_array(*out)) {
        snprintf(err, errlen, "Prometheus at %s: %s did not answer a list", c->base, path);
        json_decref(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int gp_prom_metric_names(gp_prom_client *c, int64_t t0_s, int64_t t1_s, json_t **names, char *err,
                         size_t errlen) {
    return list_get(c, "/api/v1/label/__name__/values", NULL, t0_s, t1_s, names, err, errlen);
}

int gp_prom_label_names(gp_prom_client *c, const char *match, int64_t t0_s, int64_t t1_s,
                        json_t **names, char *err, size_t errlen) {
    return list_get(c, "/api/v1/labels", match, t0_s, t1_s, names, err, errlen);
}

int gp_prom_series_count(gp_prom_client *c, const char *match, int64_t t0_s, int64_t t1_s,
                         size_t *n, char *err, size_t errlen) {
    json_t *arr = NULL;
    if (list_get(c, "/api/v1/series", match, t0_s, t1_s, &arr, err, errlen) != 0) return -1;
    *n = json_array_size(arr);
    json_decref(arr);
    return 0;
}
