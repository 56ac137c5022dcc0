/* otlp_attr.c: the meaning of the attributes goodput reads (GenAI semantic conventions,
 * resource service.name and host.name), shared by the JSON and protobuf decoders, the
 * gunzip step and the body dispatch (see otlp.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "otlp/otlp.h"

static int key_is(const char *key, size_t klen, const char *want) {
    return strlen(want) == klen && memcmp(key, want, klen) == 0;
}

/* Copies v into dst (cap bytes), cutting at cap - 1 and dropping control bytes, so a
 * hostile value cannot break a text report line. */
static void copy_str(char *dst, size_t cap, const char *v, size_t vlen) {
    size_t n = vlen < cap - 1 ? vlen : cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = (unsigned char)v[i] < 0x20 ? '?' : v[i];
    dst[n] = 0;
}

void gp_otlp_span_str(gp_span *sp, gp_otlp_hints *h, const char *key, size_t klen, const char *v,
                      size_t vlen) {
    if (key_is(key, klen, "gen_ai.operation.name"))
        copy_str(sp->operation, sizeof sp->operation, v, vlen);
    else if (key_is(key, klen, "gen_ai.request.model"))
        copy_str(sp->model, sizeof sp->model, v, vlen);
    else if (key_is(key, klen, "gen_ai.response.model") && !sp->model[0])
        copy_str(sp->model, sizeof sp->model, v, vlen);
    else if (key_is(key, klen, "gen_ai.tool.name"))
        h->has_tool = 1;
    else if (key_is(key, klen, "db.system") || key_is(key, klen, "db.system.name"))
        h->has_db = 1;
    else if (key_is(key, klen, "gen_ai.usage.input_tokens") ||
             key_is(key, klen, "gen_ai.usage.output_tokens")) {
        char tmp[32];
        copy_str(tmp, sizeof tmp, v, vlen);
        char *end;
        long long x = strtoll(tmp, &end, 10);
        if (*end == 0 && end != tmp) gp_otlp_span_int(sp, h, key, klen, x);
    }
}

void gp_otlp_span_int(gp_span *sp, gp_otlp_hints *h, const char *key, size_t klen, int64_t v) {
    (void)h;
    if (v < 0) return;
    if (key_is(key, klen, "gen_ai.usage.input_tokens") ||
        key_is(key, klen, "gen_ai.usage.prompt_tokens"))
        sp->in_tokens = v;
    else if (key_is(key, klen, "gen_ai.usage.output_tokens") ||
             key_is(key, klen, "gen_ai.usage.completion_tokens"))
        sp->out_tokens = v;
}

void gp_otlp_resource_str(char *service, char *host, const char *key, size_t klen, const char *v,
                          size_t vlen) {
    if (key_is(key, klen, "service.name"))
        copy_str(service, 64, v, vlen);
    else if (key_is(key, klen, "host.name"))
        copy_str(host, 64, v, vlen);
}

/* 30 years in ns: later is not a time a span can have. */
#define MAX_TIME_NS 946080000000000000LL * 3

int gp_otlp_span_finish(gp_span *sp, const gp_otlp_hints *h, char *why, size_t whylen) {
    if (strlen(sp->trace_id) != 32 || strspn(sp->trace_id, "0123456789abcdef") != 32 ||
        strspn(sp->trace_id, "0") == 32) {
        snprintf(why, whylen, "span '%s': traceId is not 16 bytes of hex", sp->name);
        return -1;
    }
    if (strlen(sp->span_id) != 16 || strspn(sp->span_id, "0123456789abcdef") != 16 ||
        strspn(sp->span_id, "0") == 16) {
        snprintf(why, whylen, "span '%s': spanId is not 8 bytes of hex", sp->name);
        return -1;
    }
    if (sp->parent_id[0] &&
        (strlen(sp->parent_id) != 16 || strspn(sp->parent_id, "0123456789abcdef") != 16)) {
        snprintf(why, whylen, "span '%s': parentSpanId is not 8 bytes of hex", sp->name);
        return -1;
    }
    if (sp->parent_id[0] && strspn(sp->parent_id, "0") == 16) sp->parent_id[0] = 0;
    if (sp->start_ns <= 0 || sp->end_ns < sp->start_ns || sp->end_ns > MAX_TIME_NS) {
        snprintf(why, whylen,
                 "span '%s': times %lld..%lld are not a span (start > 0, end >= start)", sp->name,
                 (long long)sp->start_ns, (long long)sp->end_ns);
        return -1;
    }
    if (sp->status < 0 || sp->status > 2) sp->status = GP_SPAN_UNSET;
    if (sp->kind < 0 || sp->kind > 5) sp->kind = 0;
    gp_span_classify(sp, h->has_tool, h->has_db);
    return 0;
}

int gp_otlp_gunzip(const void *in, size_t len, size_t max_out, char **out, size_t *out_len,
                   char *err, size_t errlen) {
    *out = NULL;
    *out_len = 0;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) { /* +32: gzip or zlib header */
        snprintf(err, errlen, "gzip: cannot start inflate");
        return -1;
    }
    size_t cap = len * 4 + 1024 < max_out ? len * 4 + 1024 : max_out;
    char *buf = malloc(cap + 1);
    if (!buf) {
        inflateEnd(&z);
        snprintf(err, errlen, "gzip: out of memory");
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    int rc;
    for (;;) {
        z.next_out = (Bytef *)buf + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) break;
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            snprintf(err, errlen, "gzip: corrupt stream at input byte %lu (%s)",
                     (unsigned long)z.total_in, z.msg ? z.msg : "inflate error");
            goto fail;
        }
        if (z.avail_out == 0) {
            if (cap >= max_out) {
                snprintf(err, errlen, "gzip: inflates to more than %zu bytes", max_out);
                goto fail;
            }
            size_t ncap = cap * 2 < max_out ? cap * 2 : max_out;
            char *p = realloc(buf, ncap + 1);
            if (!p) {
                snprintf(err, errlen, "gzip: out of memory");
                goto fail;
            }
            buf = p;
            cap = ncap;
        } else if (z.avail_in == 0) {
            snprintf(err, errlen, "gzip: stream ends early at input byte %lu",
                     (unsigned long)z.total_in);
            goto fail;
        }
    }
    *out_len = z.total_out;
    buf[*out_len] = 0;
    *out = buf;
    inflateEnd(&z);
    return 0;
fail:
    free(buf);
    inflateEnd(&z);
    return -1;
}

int gp_otlp_decode_body(const void *body, size_t len, const char *content_type,
                        const char *content_encoding, gp_span_set *out, char *err, size_t errlen) {
    char *plain = NULL;
    size_t plen = len;
    const void *doc = body;
    if (content_encoding && strcmp(content_encoding, "identity") != 0) {
        if (strcmp(content_encoding, "gzip") != 0) {
            snprintf(err, errlen, "Content-Encoding %.40s: only gzip or identity",
                     content_encoding);
            return -1;
        }
        if (gp_otlp_gunzip(body, len, GP_OTLP_MAX_DOC, &plain, &plen, err, errlen) != 0) return -1;
        doc = plain;
    }
    int rc;
    if (content_type && strncmp(content_type, "application/json", 16) == 0)
        rc = gp_otlp_decode_json(doc, plen, out, err, errlen);
    else if (!content_type || strncmp(content_type, "application/x-protobuf", 22) == 0 ||
             strncmp(content_type, "application/protobuf", 20) == 0)
        rc = gp_otlp_decode_pb(doc, plen, out, err, errlen);
    else {
        snprintf(err, errlen,
                 "Content-Type %.60s: OTLP/HTTP takes application/json or application/x-protobuf",
                 content_type);
        rc = -1;
    }
    free(plain);
    return rc;
}
