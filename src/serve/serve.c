/* serve.c: the libmicrohttpd daemon behind serve.h: binding and its safety rules, bearer
 * tokens, body limits, routing, the POST queue, and the pump that runs on the agent's
 * thread. See serve.h for the threading model; metrics.c and api.c render documents. */
#include "serve/serve_int.h"
#include "engine/results/job_results.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "util/heap_trim.h"
#include "ingest/protocol.h"

/* ---- buffers and small helpers shared by the serve files ---- */

void srv_buf_put(srv_buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void srv_buf_printf(srv_buf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        srv_buf_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    srv_buf_put(b, big, (size_t)n);
    free(big);
}

void srv_buf_label(srv_buf *b, const char *s) {
    for (; *s; s++) {
        if (*s == '\\')
            srv_buf_put(b, "\\\\", 2);
        else if (*s == '"')
            srv_buf_put(b, "\\\"", 2);
        else if (*s == '\n')
            srv_buf_put(b, "\\n", 2);
        else
            srv_buf_put(b, s, 1);
    }
}

const char *srv_param(const srv_req *r, const char *key) {
    for (int i = 0; i < r->n_params; i++)
        if (strcmp(r->keys[i], key) == 0) return r->vals[i];
    return NULL;
}

void srv_error(srv_resp *r, int status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *o = json_pack("{s:s, s:i}", "error", msg, "status", status);
    if (!o) { /* the message quotes bytes that are not UTF-8 (a hostile path): mask them */
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20) *p = '?';
        o = json_pack("{s:s, s:i}", "error", msg, "status", status);
    }
    char *txt = json_dumps(o, JSON_COMPACT);
    r->body.len = 0;
    r->status = status;
    r->ctype = "application/json";
    if (txt) srv_buf_put(&r->body, txt, strlen(txt));
    srv_buf_put(&r->body, "\n", 1);
    free(txt);
    json_decref(o);
}

/* ---- the POST queue ---- */

/* Checks each line on the server thread (so the client hears about bad lines at once), by
 * the agent's rule and clock (the snapshot of its last pump: at most a pump interval old),
 * and queues every line for the agent's ingest, which stores the good ones and counts the
 * bad ones by reason like any transport's. The cap of live job ids (ingest/jobcap.h) is
 * applied here too, under render_mu: a line naming a new job past it is not queued. The
 * answer lists each rejected line (number, reason, message), up to MAX_POST_ERRORS of them;
 * "accepted" counts exactly the lines the agent will take. */
#define MAX_POST_ERRORS 1000
static void post_events(gp_serve *s, const srv_req *q, srv_resp *r) {
    pthread_mutex_lock(&s->mu);
    int open = s->attached && !s->detached;
    int64_t now = s->snap.now_ns;
    gp_time_bounds bounds = s->snap.bounds;
    int max_jobs = s->snap.max_jobs;
    pthread_mutex_unlock(&s->mu);
    if (!open) {
        srv_error(r, 503,
                  "no agent is receiving events on this server (it serves a stored database)");
        return;
    }
    srv_buf good = {0};
    json_t *errors = json_array();
    size_t accepted = 0, rejected = 0, overflow = 0, lineno = 0;
    const char *p = q->body, *end = q->body + q->body_len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t len = (size_t)(le - p);
        lineno++;
        if (len && p[len - 1] == '\r') len--;
        gp_event ev;
        char err[200] = "";
        gp_reject_reason why = GP_REJ_MALFORMED;
        int rc = len > GP_PROTO_MAX_LINE
                     ? -1
                     : gp_proto_parse_line_ex(p, len, now, &bounds, &ev, &why, err, sizeof err);
        if (len > GP_PROTO_MAX_LINE)
            snprintf(err, sizeof err, "line longer than %d bytes", GP_PROTO_MAX_LINE);
        if (rc > 0) {
            s->post_jobs.max_jobs = max_jobs;
            if (!gp_jobcap_admit(&s->post_jobs, ev.job_id, now)) {
                rc = -1;
                why = GP_REJ__COUNT; /* not a line's fault: the cap's (counted apart) */
                snprintf(err, sizeof err,
                         "job '%.64s' is new and %d job ids are live on this transport "
                         "(goodput_ingest_jobs_overflow_total)",
                         ev.job_id, max_jobs > 0 ? max_jobs : GP_INGEST_MAX_JOBS);
                overflow++;
            }
        }
        /* Lines that fail the time rule go to the agent too (it counts them by reason);
         * lines refused by the cap do not (counted here). */
        if (rc != 0 && len <= GP_PROTO_MAX_LINE && why != GP_REJ__COUNT) {
            srv_buf_put(&good, p, len);
            srv_buf_put(&good, "\n", 1);
        }
        if (rc > 0) {
            accepted++;
        } else if (rc < 0) {
            rejected++;
            if (json_array_size(errors) < MAX_POST_ERRORS)
                json_array_append_new(
                    errors,
                    json_pack("{s:I, s:s, s:s}", "line", (json_int_t)lineno, "reason",
                              why == GP_REJ__COUNT ? "jobs_overflow" : gp_reject_reason_name(why),
                              "error", err));
        }
        p = nl ? nl + 1 : end;
    }
    int full = 0;
    pthread_mutex_lock(&s->mu);
    if (s->queue.len + good.len > SRV_MAX_QUEUE) {
        full = 1;
        s->queue_full++;
    } else if (good.len) {
        srv_buf_put(&s->queue, good.p, good.len);
        s->queued_lines += accepted;
    }
    pthread_mutex_unlock(&s->mu);
    free(good.p);
    if (overflow && !s->post_jobs.logged) {
        s->post_jobs.logged = 1;
        fprintf(stderr,
                "goodput: ingest: http: more than %d live job ids; lines for new jobs are "
                "refused and counted (goodput_ingest_jobs_overflow_total)\n",
                max_jobs > 0 ? max_jobs : GP_INGEST_MAX_JOBS);
    }
    if (!full) s->post_jobs_overflow += overflow;
    if (full) {
        json_decref(errors);
        srv_error(r, 503, "the agent has not caught up with earlier events; retry in a second");
        return;
    }
    json_t *o = json_pack("{s:I, s:I, s:o}", "accepted", (json_int_t)accepted, "rejected",
                          (json_int_t)rejected, "errors", errors);
    r->status = 202;
    if (accepted == 0 && rejected > 0) {
        /* Nothing good: 400, with the same per-line list as a partial success. */
        json_t *first = json_array_get(errors, 0);
        char msg[300];
        snprintf(msg, sizeof msg, "no valid event line; line %lld: %s",
                 (long long)json_integer_value(json_object_get(first, "line")),
                 json_string_value(json_object_get(first, "error")));
        json_object_set_new(o, "error", json_string(msg));
        json_object_set_new(o, "status", json_integer(400));
        r->status = 400;
    }
    char *txt = json_dumps(o, JSON_COMPACT);
    r->ctype = "application/json";
    if (txt) srv_buf_put(&r->body, txt, strlen(txt));
    srv_buf_put(&r->body, "\n", 1);
    free(txt);
    json_decref(o);
}

/* ---- routing ---- */

static void route(gp_serve *s, const srv_req *q, srv_resp *r) {
    r->status = 200;
    int get = strcmp(q->method, "GET") == 0 || strcmp(q->method, "HEAD") == 0;
    int post = strcmp(q->method, "POST") == 0;
    if (strcmp(q->path, "/api/v1/events") == 0) {
        if (post)
            post_events(s, q, r);
        else
            srv_error(r, 405, "POST protocol lines to /api/v1/events (docs/protocol.md)");
        return;
    }
    if (strcmp(q->path, "/v1/traces") == 0) {
        if (post)
            srv_post_traces(s, q, r);
        else
            srv_error(r, 405, "POST OTLP/HTTP traces to /v1/traces (docs/workflows.md)");
        return;
    }
    if (!get) {
        srv_error(r, 405, "method %s is not allowed on %s (only GET, HEAD)", q->method, q->path);
        return;
    }
    if (strcmp(q->path, "/metrics") == 0) {
        srv_metrics(s, q, r);
        return;
    }
    if (strcmp(q->path, "/api/v1/workflows") == 0) {
        srv_api_workflows(s, q, r);
        return;
    }
    if (strncmp(q->path, "/api/", 5) == 0) {
        srv_api(s, q, r);
        return;
    }
    /* An empty path (a hostile request line) must not step past its terminator. */
    const char *name = strcmp(q->path, "/") == 0 ? "index.html" : q->path[0] ? q->path + 1 : "";
    const unsigned char *data;
    size_t len;
    const char *ctype;
    if (gp_web_asset(name, &data, &len, &ctype) == 0) {
        r->static_body = data;
        r->static_len = len;
        r->ctype = ctype;
        r->cache = "no-cache";
        return;
    }
    srv_error(r, 404, "no route %s; try /, /metrics or /api/v1/ (docs/api.md)", q->path);
}

static void parse_query(char *qs, srv_req *q) {
    char *save = NULL;
    for (char *kv = strtok_r(qs, "&", &save); kv && q->n_params < SRV_MAX_PARAMS;
         kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (eq) *eq = 0;
        q->keys[q->n_params] = kv;
        q->vals[q->n_params] = eq ? eq + 1 : "";
        q->n_params++;
    }
}

int gp_serve_render(gp_serve *s, const char *method, const char *path, const char *query,
                    char **out, size_t *len, const char **content_type) {
    srv_req q = {.method = method, .path = path};
    char *qs = strdup(query ? query : "");
    if (qs) parse_query(qs, &q);
    srv_resp r = {0};
    pthread_mutex_lock(&s->render_mu);
    route(s, &q, &r);
    pthread_mutex_unlock(&s->render_mu);
    free(qs);
    if (r.static_body) {
        *out = malloc(r.static_len + 1);
        if (*out) {
            memcpy(*out, r.static_body, r.static_len);
            (*out)[r.static_len] = 0;
        }
        *len = r.static_len;
        free(r.body.p);
    } else {
        *out = r.body.p ? r.body.p : strdup("");
        *len = r.body.len;
    }
    if (content_type) *content_type = r.ctype ? r.ctype : "application/json";
    return r.status;
}

/* ---- libmicrohttpd glue ---- */

typedef struct conn_ctx {
    srv_buf body;
    int too_large;
    void *sock; /* conns.c's record of the connection */
} conn_ctx;

static double mono_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* SQLite calls this every 1000 VM steps of the server's connection: 1 interrupts. */
static int render_progress(void *cls) {
    gp_serve *s = cls;
    if (s->stopping) return 1;
    return s->render_deadline_s > 0 && mono_now_s() > s->render_deadline_s;
}

static void render(gp_serve *s, const srv_req *q, srv_resp *r) {
    pthread_mutex_lock(&s->render_mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->render_mu);
        srv_error(r, 503, "the server is stopping");
        return;
    }
    s->render_deadline_s = mono_now_s() + SRV_RENDER_DEADLINE_S;
    route(s, q, r);
    if (s->o.trim_heap) gp_heap_trim();
    int late = mono_now_s() > s->render_deadline_s || s->stopping;
    s->render_deadline_s = 0;
    pthread_mutex_unlock(&s->render_mu);
    if (late) {
        free(r->body.p);
        *r = (srv_resp){0};
        srv_error(r, 503, "the request ran past its %.0f s deadline (or the server is stopping)",
                  SRV_RENDER_DEADLINE_S);
    }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    gp_serve *s = cls;
    if (!s->conns) return;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) srv_conns_opened(s->conns, ci->connect_fd, socket_context);
    } else {
        srv_conns_closed(s->conns, socket_context);
    }
}

static enum MHD_Result collect_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
    (void)kind;
    srv_req *q = cls;
    if (q->n_params >= SRV_MAX_PARAMS) return MHD_NO;
    q->keys[q->n_params] = key;
    q->vals[q->n_params] = value ? value : "";
    q->n_params++;
    return MHD_YES;
}

/* Constant time in the length of the expected token: every byte is compared. */
static int token_ok(const gp_serve *s, const char *auth) {
    if (!s->token_len) return 1;
    if (!auth || strncmp(auth, "Bearer ", 7) != 0) return 0;
    const char *given = auth + 7;
    size_t glen = strlen(given);
    unsigned char diff = (unsigned char)(glen != s->token_len);
    for (size_t i = 0; i < s->token_len; i++) {
        unsigned char g = i < glen ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)s->token[i]);
    }
    return diff == 0;
}

static enum MHD_Result send_resp(gp_serve *s, struct MHD_Connection *c, srv_resp *r, int head) {
    struct MHD_Response *resp;
    if (r->static_body)
        resp = MHD_create_response_from_buffer(head ? 0 : r->static_len, (void *)r->static_body,
                                               MHD_RESPMEM_PERSISTENT);
    else if (r->body.p && !head) /* handed over: MHD frees it once sent, no copy of it */
        resp = MHD_create_response_from_buffer(r->body.len, r->body.p, MHD_RESPMEM_MUST_FREE);
    else
        resp = MHD_create_response_from_buffer(0, (char *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp || !r->body.p || head) free(r->body.p);
    r->body.p = NULL;
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(resp, "Cache-Control", r->cache ? r->cache : "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(
        resp, "Content-Security-Policy",
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:");
    if (r->status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    int cls = r->status / 100;
    pthread_mutex_lock(&s->mu);
    if (cls >= 1 && cls <= 5) s->requests_by_class[cls]++;
    pthread_mutex_unlock(&s->mu);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    (void)version;
    gp_serve *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        *con_cls = cc;
        if (s->conns) {
            const union MHD_ConnectionInfo *ci =
                MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
            cc->sock = ci ? ci->socket_context : NULL;
            srv_conns_request(s->conns, cc->sock);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > SRV_MAX_BODY) {
            srv_resp r = {0};
            srv_error(&r, 413, "request body over %u bytes; send events in smaller batches",
                      SRV_MAX_BODY);
            return send_resp(s, c, &r, 0);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (cc->body.len + *upload_size > SRV_MAX_BODY)
            cc->too_large = 1;
        else
            srv_buf_put(&cc->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    srv_resp r = {0};
    int head = strcmp(method, "HEAD") == 0;
    int is_asset =
        strcmp(method, "GET") == 0 && strcmp(url, "/metrics") != 0 && strncmp(url, "/api/", 5) != 0;
    if (cc->too_large) {
        srv_error(&r, 413, "request body over %u bytes; send events in smaller batches",
                  SRV_MAX_BODY);
    } else if (!is_asset &&
               !token_ok(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"))) {
        /* The dashboard's files hold no data, so they are served without the token; the
         * page then sends it on every API call. */
        srv_error(&r, 401, "missing or wrong bearer token (Authorization: Bearer ...)");
    } else {
        srv_req q = {.method = method,
                     .path = url,
                     .body = cc->body.p ? cc->body.p : "",
                     .body_len = cc->body.len};
        q.content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        q.content_encoding = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_param, &q);
        if (strcmp(method, "GET") == 0 && is_asset)
            route(s, &q, &r); /* embedded files: no store, no lock */
        else
            render(s, &q, &r);
    }
    return send_resp(s, c, &r, head);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)c, (void)toe;
    gp_serve *s = cls;
    conn_ctx *cc = *con_cls;
    if (cc) {
        if (s->conns) srv_conns_done(s->conns, cc->sock);
        free(cc->body.p);
        free(cc);
    }
    *con_cls = NULL;
}

/* "127.0.0.1:9464", "[::1]:9464", "localhost:9464", "0.0.0.0:0". */
static int parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *sl, int *loopback,
                        char *host_out, size_t host_cap, char *err, size_t errlen) {
    char host[128];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof host) goto bad;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535) goto bad;
    memset(ss, 0, sizeof *ss);
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 3 || host[n - 1] != ']') goto bad;
        host[n - 1] = 0;
        memmove(host, host + 1, n - 1);
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1) goto bad;
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
        *sl = sizeof *a6;
        snprintf(host_out, host_cap, "[%s]", host);
        return (int)port;
    }
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &a4->sin_addr) != 1) goto bad;
    *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
    *sl = sizeof *a4;
    snprintf(host_out, host_cap, "%s", host);
    return (int)port;
bad:
    snprintf(err, errlen,
             "--listen '%s': expected ADDR:PORT with an IPv4 address, [IPv6] or localhost", spec);
    return -1;
}

static int read_token(gp_serve *s, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    size_t n = fread(s->token, 1, sizeof s->token - 1, f);
    int more = fgetc(f) != EOF;
    fclose(f);
    while (n && isspace((unsigned char)s->token[n - 1]))
        n--;
    s->token[n] = 0;
    if (more) {
        snprintf(err, errlen, "--token-file %s: token longer than %zu bytes", path,
                 sizeof s->token - 1);
        return -1;
    }
    if (n < 16) {
        snprintf(err, errlen,
                 "--token-file %s: token shorter than 16 characters; use e.g. "
                 "`head -c 24 /dev/urandom | base64`",
                 path);
        return -1;
    }
    s->token_len = n;
    return 0;
}

int gp_serve_start(const gp_serve_opts *o, gp_serve **out, char *err, size_t errlen) {
    *out = NULL;
#ifdef __GLIBC__
    /* A running job's accounting update allocates and frees arrays of a few MiB each
     * time; with glibc's default thresholds each one is an mmap/munmap pair or a heap trim,
     * which cost a 1-hour job's scrape as much as the accounting itself (bench/RESULTS.md,
     * serve). A long-lived server keeps that memory for the next update instead. Not in
     * the agent (keep_malloc_policy): there the live findings' arrays, grown in the brk
     * heap, raised its peak RSS by ~3 MiB (docs/benchmarks.md, agent --listen). */
    if (!o->keep_malloc_policy) {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
    }
#endif
    gp_serve *s = calloc(1, sizeof *s);
    if (!s) return -1;
    s->o = *o;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->render_mu, NULL);
    snprintf(s->db_path, sizeof s->db_path, "%s", o->db_path ? o->db_path : "");
    s->o.db_path = s->db_path;
    if (gp_store_open(s->db_path, GP_STORE_READONLY, &s->store, err, errlen) != 0) goto fail;
    sqlite3_progress_handler(gp_store_db(s->store), 1000, render_progress, s);
    if (o->token_file && read_token(s, o->token_file, err, errlen) != 0) goto fail;
    const char *listen = o->listen ? o->listen : GP_SERVE_DEFAULT_LISTEN;
    if (strcmp(listen, "none") == 0) { /* render-only: tests and benchmarks */
        *out = s;
        return 0;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    int loopback = 0;
    char host[140];
    if (parse_listen(listen, &ss, &sl, &loopback, host, sizeof host, err, errlen) < 0) goto fail;
    if (!loopback && !s->token_len && !o->insecure) {
        snprintf(err, errlen,
                 "--listen %s is not a loopback address: give --token-file FILE "
                 "(bearer token) or, on a trusted network, --insecure",
                 listen);
        goto fail;
    }
    s->conns = srv_conns_new(SRV_MAX_CONNS, SRV_MAX_WAITING, SRV_HEADER_DEADLINE_S,
                             SRV_REQUEST_DEADLINE_S);
    if (!s->conns) {
        snprintf(err, errlen, "HTTP server: out of memory or threads");
        goto fail;
    }
    /* A pool of workers, so one long render does not hold up other connections; renders
     * themselves take turns (render_mu). No per-address limit: slow connections, from any
     * address, are bounded by conns.c's share and deadlines instead, so a hostile client
     * on the scraper's own address (loopback) cannot lock it out. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    s->d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)SRV_THREADS, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)15, MHD_OPTION_CONNECTION_LIMIT, (unsigned)SRV_MAX_CONNS,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errlen,
                 "cannot listen on %s (address in use or not available; "
                 "choose another with --listen ADDR:PORT)",
                 listen);
        goto fail;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    snprintf(s->url, sizeof s->url, "http://%s:%d/", host, s->port);
    *out = s;
    return 0;
fail:
    gp_serve_stop(s);
    return -1;
}

void gp_serve_stop(gp_serve *s) {
    if (!s) return;
    /* A render in progress stops at its next SQLite step; the workers then join. */
    s->stopping = 1;
    if (s->store) sqlite3_interrupt(gp_store_db(s->store));
    if (s->d) MHD_stop_daemon(s->d);
    srv_conns_free(s->conns);
    gp_summary_reader_free(s->sum_reader); /* its statement first: then the store closes */
    gp_job_results_close(s->results);
    gp_store_close(s->store);
    free(s->queue.p);
    free(s->sumq);
    free(s->live_json);
    free(s->ended);
    free(s->quiet);
    gp_jobcap_free(&s->post_jobs);
    srv_accts_free(s);
    srv_rollups_free(s->rollups, s->n_rollups);
    for (int i = 0; i < s->n_windows; i++)
        json_decref(s->windows[i].json);
    srv_pipeline_cache_free(s);
    gp_span_set_free(&s->spans);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->render_mu);
    free(s);
}

int gp_serve_port(const gp_serve *s) {
    return s->port;
}
const char *gp_serve_url(const gp_serve *s) {
    return s->url;
}

static void pump_hook(gp_agent *a, void *ctx) {
    gp_serve_pump(ctx, a);
}

void gp_serve_attach(gp_serve *s, gp_agent *a) {
    pthread_mutex_lock(&s->mu);
    s->attached = 1;
    s->detached = 0;
    pthread_mutex_unlock(&s->mu);
    gp_serve_pump(s, a);
    gp_agent_set_hook(a, pump_hook, s, 250000000);
}

void gp_serve_set_live(gp_serve *s, const char *json_text) {
    if (!s) return;
    char *copy = json_text ? strdup(json_text) : NULL;
    pthread_mutex_lock(&s->mu);
    char *old = s->live_json;
    s->live_json = copy;
    pthread_mutex_unlock(&s->mu);
    free(old);
}

void gp_serve_detach(gp_serve *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->detached = 1;
    s->snap.have_agent = 0;
    pthread_mutex_unlock(&s->mu);
}

void gp_serve_pump(gp_serve *s, gp_agent *a) {
    pthread_mutex_lock(&s->mu);
    if (s->detached) {
        pthread_mutex_unlock(&s->mu);
        return;
    }
    srv_buf q = s->queue;
    memset(&s->queue, 0, sizeof s->queue);
    pthread_mutex_unlock(&s->mu);
    if (q.len) {
        /* Stored as the agent's sockets store theirs (held in order while another writer
         * holds the store), and counted with them. */
        gp_ingest_feed(gp_agent_ingest(a), GP_TR_HTTP, q.p, q.len, gp_agent_now_ns(a),
                       gp_agent_store_event, a);
        gp_agent_flush(a);
    }
    free(q.p);
    if (!gp_agent_store_held(a)) {
        srv_store_spans(s, gp_agent_store(a));
        srv_store_summaries(s, gp_agent_store(a));
    }
    /* The snapshot after the feed, so /metrics counts what was just stored. */
    srv_snapshot sn = {.have_agent = 1};
    sn.agent = *gp_agent_get_stats(a);
    for (int t = 0; t < GP_TR__COUNT; t++)
        sn.ingest[t] = *gp_ingest_get_stats(gp_agent_ingest(a), (gp_transport)t);
    sn.now_ns = gp_agent_now_ns(a);
    sn.bounds = gp_ingest_bounds(gp_agent_ingest(a));
    sn.max_jobs = gp_ingest_max_jobs(gp_agent_ingest(a));
    sn.events_duplicate = gp_store_duplicates(gp_agent_store(a));
    sn.commits = gp_store_commit_stats(gp_agent_store(a));
    sn.ckpt = gp_agent_checkpoint_stats(a);
    pthread_mutex_lock(&s->mu);
    if (!s->detached) s->snap = sn;
    pthread_mutex_unlock(&s->mu);
}
