/* otlp_json_ref.h: the jansson (whole-document) OTLP/JSON decoder that
 * src/otlp/decode_json.c replaced with a yajl streaming one, kept here only as the
 * reference the streaming decoder must agree with span for span (test_otlp.c). */
#ifndef GP_TEST_OTLP_JSON_REF_H
#define GP_TEST_OTLP_JSON_REF_H
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/otlp.h"

/* A 64-bit integer given as a number or a decimal string; -1 when neither. */
static int64_t ref_i64(const json_t *v) {
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    if (json_is_real(v)) return (int64_t)json_real_value(v);
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        long long x = strtoll(s, &end, 10);
        if (end != s && *end == 0) return x;
    }
    return -1;
}

static void ref_hex_id(char *dst, size_t cap, const json_t *v) {
    const char *s = json_string_value(v);
    size_t i = 0;
    for (; s && s[i] && i + 1 < cap; i++)
        dst[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] - 'A' + 'a') : s[i];
    dst[i] = 0;
    if (s && s[i]) dst[0] = 'x'; /* too long: fails the id check */
}

static void ref_span_attrs(gp_span *sp, gp_otlp_hints *h, const json_t *attrs) {
    size_t i;
    const json_t *kv;
    json_array_foreach(attrs, i, kv) {
        const json_t *k = json_object_get(kv, "key");
        const json_t *val = json_object_get(kv, "value");
        if (!json_is_string(k) || !json_is_object(val)) continue;
        const char *key = json_string_value(k);
        size_t klen = json_string_length(k);
        const json_t *x;
        if ((x = json_object_get(val, "stringValue")) && json_is_string(x))
            gp_otlp_span_str(sp, h, key, klen, json_string_value(x), json_string_length(x));
        else if ((x = json_object_get(val, "intValue")))
            gp_otlp_span_int(sp, h, key, klen, ref_i64(x));
        else if ((x = json_object_get(val, "doubleValue")) && json_is_number(x))
            gp_otlp_span_int(sp, h, key, klen, (int64_t)json_number_value(x));
    }
}

static int ref_decode_span(const json_t *js, const char *service, const char *host,
                           gp_span_set *out, char *why, size_t whylen) {
    gp_span *sp = gp_span_set_add(out);
    if (!sp) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    gp_otlp_hints h = {0};
    ref_hex_id(sp->trace_id, sizeof sp->trace_id, json_object_get(js, "traceId"));
    ref_hex_id(sp->span_id, sizeof sp->span_id, json_object_get(js, "spanId"));
    ref_hex_id(sp->parent_id, sizeof sp->parent_id, json_object_get(js, "parentSpanId"));
    const char *name = json_string_value(json_object_get(js, "name"));
    snprintf(sp->name, sizeof sp->name, "%s", name ? name : "");
    for (char *p = sp->name; *p; p++)
        if ((unsigned char)*p < 0x20) *p = '?';
    snprintf(sp->service, sizeof sp->service, "%s", service);
    snprintf(sp->host, sizeof sp->host, "%s", host);
    sp->kind = (int)ref_i64(json_object_get(js, "kind"));
    sp->start_ns = ref_i64(json_object_get(js, "startTimeUnixNano"));
    sp->end_ns = ref_i64(json_object_get(js, "endTimeUnixNano"));
    const json_t *st = json_object_get(js, "status");
    sp->status = st ? (int)ref_i64(json_object_get(st, "code")) : 0;
    if (sp->status < 0) sp->status = 0;
    ref_span_attrs(sp, &h, json_object_get(js, "attributes"));
    if (gp_otlp_span_finish(sp, &h, why, whylen) != 0) {
        out->n--;
        return 1;
    }
    return 0;
}

static int ref_decode_json(const char *buf, size_t len, gp_span_set *out, char *err,
                           size_t errlen) {
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "OTLP JSON line %d column %d: %s", je.line, je.column, je.text);
        return -1;
    }
    const json_t *rss = json_object_get(root, "resourceSpans");
    if (!json_is_object(root) || !json_is_array(rss)) {
        snprintf(err, errlen,
                 "OTLP JSON: no resourceSpans array (not an ExportTraceServiceRequest)");
        json_decref(root);
        return -1;
    }
    char first_why[200] = "";
    size_t i, j, k;
    const json_t *rs, *ss, *js;
    int rc = 0;
    json_array_foreach(rss, i, rs) {
        char service[64] = "", host[64] = "";
        const json_t *res = json_object_get(rs, "resource");
        const json_t *kv;
        json_array_foreach(json_object_get(res, "attributes"), k, kv) {
            const json_t *key = json_object_get(kv, "key");
            const json_t *sv = json_object_get(json_object_get(kv, "value"), "stringValue");
            if (json_is_string(key) && json_is_string(sv))
                gp_otlp_resource_str(service, host, json_string_value(key), json_string_length(key),
                                     json_string_value(sv), json_string_length(sv));
        }
        const json_t *scopes = json_object_get(rs, "scopeSpans");
        if (!scopes) scopes = json_object_get(rs, "instrumentationLibrarySpans");
        json_array_foreach(scopes, j, ss) {
            json_array_foreach(json_object_get(ss, "spans"), k, js) {
                if (!json_is_object(js)) {
                    out->dropped++;
                    continue;
                }
                char why[200];
                int r = ref_decode_span(js, service, host, out, why, sizeof why);
                if (r < 0) {
                    snprintf(err, errlen, "OTLP JSON: %s", why);
                    rc = -1;
                    goto done;
                }
                if (r > 0) {
                    out->dropped++;
                    if (!first_why[0]) snprintf(first_why, sizeof first_why, "%s", why);
                }
            }
        }
    }
    if (first_why[0]) snprintf(err, errlen, "%s", first_why);
done:
    json_decref(root);
    return rc;
}
#endif
