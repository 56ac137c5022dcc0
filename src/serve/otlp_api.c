/* otlp_api.c: OTLP/HTTP traces into the agent (POST /v1/traces) and the workflow report
 * over what it stored (GET /api/v1/workflows).
 *
 * The body is decoded on the server thread (JSON or protobuf, gzip; otlp/otlp.h), so a
 * malformed payload is answered 400 with its reason at once; good spans wait in a bounded
 * queue (SRV_MAX_SPAN_QUEUE) that the agent's pump stores. A full queue refuses the whole
 * request with 503 (OTLP clients retry it) and counts the spans as dropped: memory stays
 * bounded under a flood, and what is refused is counted, never silently lost. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "otlp/otlp.h"
#include "otlp/wf_store.h"
#include "otlp/workflows.h"
#include "serve/serve_int.h"
#include "store/spans.h"

static int is_json(const srv_req *q) {
    return q->content_type && strncmp(q->content_type, "application/json", 16) == 0;
}

void srv_post_traces(gp_serve *s, const srv_req *q, srv_resp *r) {
    pthread_mutex_lock(&s->mu);
    int open = s->attached && !s->detached;
    pthread_mutex_unlock(&s->mu);
    if (!open) {
        srv_error(r, 503,
                  "no agent is receiving spans on this server (it serves a stored database)");
        return;
    }
    gp_span_set got = {0};
    char err[300] = "";
    if (gp_otlp_decode_body(q->body, q->body_len, q->content_type, q->content_encoding, &got, err,
                            sizeof err) != 0) {
        gp_span_set_free(&got);
        pthread_mutex_lock(&s->mu);
        s->otlp_bad_requests++;
        pthread_mutex_unlock(&s->mu);
        srv_error(r, 400, "%s", err);
        return;
    }
    int full = 0;
    pthread_mutex_lock(&s->mu);
    s->spans_rejected += got.dropped; /* invalid spans are refused whether or not there is room */
    if (s->spans.n + got.n > SRV_MAX_SPAN_QUEUE) {
        full = 1;
        s->spans_dropped += got.n;
        s->otlp_overloaded_requests++;
    } else {
        for (size_t i = 0; i < got.n; i++) {
            gp_span *x = gp_span_set_add(&s->spans);
            if (!x) {
                s->spans_oom += got.n - i;
                break;
            }
            *x = got.v[i];
            s->spans_accepted++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    if (full) {
        gp_span_set_free(&got);
        srv_error(r, 503, "the agent has not stored earlier spans yet; retry in a second");
        return;
    }
    r->status = 200;
    if (is_json(q)) {
        json_t *o = json_object();
        if (got.dropped)
            json_object_set_new(o, "partialSuccess",
                                json_pack("{s:I, s:s}", "rejectedSpans", (json_int_t)got.dropped,
                                          "errorMessage", err));
        char *txt = json_dumps(o, JSON_COMPACT);
        r->ctype = "application/json";
        if (txt) srv_buf_put(&r->body, txt, strlen(txt));
        free(txt);
        json_decref(o);
    } else {
        /* ExportTraceServiceResponse; partial_success (field 1): rejected_spans (1), message (2) */
        r->ctype = "application/x-protobuf";
        if (got.dropped) {
            unsigned char buf[400];
            size_t mlen = strlen(err) > 250 ? 250 : strlen(err), n = 0;
            unsigned char inner[300];
            size_t k = 0;
            uint64_t v = got.dropped;
            inner[k++] = 0x08;
            do {
                inner[k++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                v >>= 7;
            } while (v);
            inner[k++] = 0x12;
            inner[k++] = (unsigned char)(mlen & 0x7f);
            if (mlen > 0x7f) inner[k - 1] |= 0x80, inner[k++] = (unsigned char)(mlen >> 7);
            memcpy(inner + k, err, mlen);
            k += mlen;
            buf[n++] = 0x0a;
            buf[n++] = (unsigned char)((k & 0x7f) | (k > 0x7f ? 0x80 : 0));
            if (k > 0x7f) buf[n++] = (unsigned char)(k >> 7);
            memcpy(buf + n, inner, k);
            n += k;
            srv_buf_put(&r->body, (const char *)buf, n);
        }
    }
    gp_span_set_free(&got);
}

void srv_store_spans(gp_serve *s, gp_store *st) {
    pthread_mutex_lock(&s->mu);
    gp_span_set q = s->spans;
    memset(&s->spans, 0, sizeof s->spans);
    pthread_mutex_unlock(&s->mu);
    /* Spans were answered 200 when queued: a batch the store refused (held by another
     * writer, e.g. the sealing child on a loaded node) is queued again, ahead of what came
     * meanwhile, rather than lost. Storing a span twice keeps one row. */
    if (q.n) {
        int ok = gp_store_begin_write(st, GP_AGENT_LOCK_WAIT_MS) == 0;
        ok = ok && gp_store_put_spans(st, q.v, q.n) >= 0;
        ok = gp_store_commit(st) == 0 && ok;
        if (!ok) {
            pthread_mutex_lock(&s->mu);
            for (size_t i = 0; i < s->spans.n; i++) {
                gp_span *sp = gp_span_set_add(&q);
                if (sp)
                    *sp = s->spans.v[i];
                else
                    s->spans_oom++;
            }
            q.dropped += s->spans.dropped;
            gp_span_set_free(&s->spans);
            s->spans = q;
            pthread_mutex_unlock(&s->mu);
            return;
        }
    }
    gp_span_set_free(&q);
}

void srv_api_workflows(gp_serve *s, const srv_req *q, srv_resp *r) {
    const char *since = srv_param(q, "since");
    double since_s = 3600;
    if (since) {
        char *end;
        since_s = strtod(since, &end);
        if (*end || end == since || !(since_s > 0) || since_s > 366 * 86400.0) {
            srv_error(r, 400, "since=%.40s: expected seconds in (0, 31622400]", since);
            return;
        }
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pthread_mutex_lock(&s->mu);
    int64_t now =
        s->snap.now_ns > 0 ? s->snap.now_ns : (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    uint64_t acc = s->spans_accepted, rej = s->spans_rejected, drop = s->spans_dropped,
             oom = s->spans_oom, bad = s->otlp_bad_requests, busy = s->otlp_overloaded_requests;
    pthread_mutex_unlock(&s->mu);
    gp_span_set set = {0};
    /* 200k spans bound the work of one request (~80 MiB); more are counted as cut */
    if (gp_store_load_spans(s->store, now - (int64_t)(since_s * 1e9), INT64_MAX, 200000, &set) !=
        0) {
        gp_span_set_free(&set);
        srv_error(r, 500, "cannot read spans: %s", gp_store_errmsg(s->store));
        return;
    }
    gp_wf_engine *eng = NULL;
    size_t n_eng = 0;
    double price = s->o.price_per_gpu_h;
    char err[300];
    if (gp_wf_engines_from_store(s->store, set.v, set.n, &eng, &n_eng, &price, err, sizeof err) !=
        0) {
        gp_span_set_free(&set);
        srv_error(r, 500, "%s", err);
        return;
    }
    gp_wf_report rep;
    json_t *o;
    if (gp_wf_analyze(set.v, set.n, eng, n_eng, price, &rep) != 0) {
        o = NULL;
    } else {
        o = gp_wf_json(&rep, eng, n_eng);
        gp_wf_report_free(&rep);
    }
    gp_wf_engines_free(eng, n_eng);
    free(eng);
    if (!o) {
        gp_span_set_free(&set);
        srv_error(r, 500, "out of memory");
        return;
    }
    json_object_del(o, "workflows"); /* per-trace rows: the CLI's --json has them */
    json_object_set_new(o, "window_s", json_real(since_s));
    json_object_set_new(o, "spans_cut", json_integer((json_int_t)set.dropped));
    json_object_set_new(o, "ingest",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "spans_accepted",
                                  (json_int_t)acc, "spans_rejected", (json_int_t)rej,
                                  "spans_dropped_queue_full", (json_int_t)drop,
                                  "spans_dropped_out_of_memory", (json_int_t)oom, "bad_requests",
                                  (json_int_t)bad, "overloaded_requests", (json_int_t)busy));
    gp_span_set_free(&set);
    char *txt = json_dumps(o, JSON_COMPACT);
    r->ctype = "application/json";
    if (txt) srv_buf_put(&r->body, txt, strlen(txt));
    srv_buf_put(&r->body, "\n", 1);
    free(txt);
    json_decref(o);
}
