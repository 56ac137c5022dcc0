/* decode_pb.c: OTLP protobuf ExportTraceServiceRequest -> spans (see otlp.h), with a
 * hand-written reader of the protobuf wire format (varint, fixed64, length-delimited,
 * fixed32) for the few fields goodput needs; every other field is skipped by wire type.
 * No protobuf library: the schema's subset is small and stable (opentelemetry-proto
 * trace/v1, common/v1, resource/v1), and a reader that checks every length against its
 * enclosing message cannot read past the buffer. Nesting is fixed by the schema (depth
 * 5), so hostile input cannot recurse. Field numbers, from opentelemetry-proto:
 *   ExportTraceServiceRequest.resource_spans = 1
 *   ResourceSpans: resource = 1, scope_spans = 2 (instrumentation_library_spans = 1000)
 *   Resource.attributes = 1; ScopeSpans.spans = 2
 *   Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7 (fixed64),
 *         end 8 (fixed64), attributes 9, status 15
 *   Status.code = 3; KeyValue: key 1, value 2
 *   AnyValue: string_value 1, bool 2, int_value 3, double_value 4 (fixed64) */
#include <stdio.h>
#include <string.h>

#include "otlp/otlp.h"

typedef struct pb {
    const uint8_t *p, *end;
    const uint8_t *base; /* start of the whole document, for offsets in errors */
} pb;

typedef struct pb_field {
    uint32_t num;
    int wire;
    uint64_t u;           /* varint, fixed64, fixed32 */
    const uint8_t *bytes; /* length-delimited */
    size_t len;
} pb_field;

static int pb_varint(pb *b, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return -1;
        uint8_t c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* 1 field read, 0 end of message, -1 malformed (err set). */
static int pb_next(pb *b, pb_field *f, char *err, size_t errlen) {
    if (b->p >= b->end) return 0;
    size_t at = (size_t)(b->p - b->base);
    uint64_t tag;
    if (pb_varint(b, &tag) != 0 || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) goto bad;
    f->num = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    switch (f->wire) {
    case 0:
        if (pb_varint(b, &f->u) != 0) goto bad;
        return 1;
    case 1:
        if (b->end - b->p < 8) goto bad;
        f->u = 0;
        for (int i = 7; i >= 0; i--)
            f->u = (f->u << 8) | b->p[i];
        b->p += 8;
        return 1;
    case 2: {
        uint64_t n;
        if (pb_varint(b, &n) != 0 || n > (uint64_t)(b->end - b->p)) goto bad;
        f->bytes = b->p;
        f->len = (size_t)n;
        b->p += n;
        return 1;
    }
    case 5:
        if (b->end - b->p < 4) goto bad;
        f->u = (uint64_t)b->p[0] | (uint64_t)b->p[1] << 8 | (uint64_t)b->p[2] << 16 |
               (uint64_t)b->p[3] << 24;
        b->p += 4;
        return 1;
    default:
        break;
    }
bad:
    snprintf(err, errlen, "OTLP protobuf: malformed field at byte %zu", at);
    return -1;
}

static pb sub(const pb *parent, const pb_field *f) {
    pb s = {f->bytes, f->bytes + f->len, parent->base};
    return s;
}

static void hex(char *dst, size_t cap, const uint8_t *p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    if (n * 2 + 1 > cap) { /* wrong size: fails the id check */
        snprintf(dst, cap, "x");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        dst[2 * i] = digits[p[i] >> 4];
        dst[2 * i + 1] = digits[p[i] & 15];
    }
    dst[2 * n] = 0;
}

/* KeyValue -> (key, AnyValue field). 0 ok, -1 malformed. */
static int pb_keyvalue(pb kv, const char **key, size_t *klen, pb_field *val, int *have_val,
                       char *err, size_t errlen) {
    pb_field f;
    int r;
    *key = NULL;
    *klen = 0;
    *have_val = 0;
    while ((r = pb_next(&kv, &f, err, errlen)) > 0) {
        if (f.num == 1 && f.wire == 2) {
            *key = (const char *)f.bytes;
            *klen = f.len;
        } else if (f.num == 2 && f.wire == 2) {
            pb any = sub(&kv, &f);
            pb_field a;
            int ra;
            while ((ra = pb_next(&any, &a, err, errlen)) > 0) {
                *val = a;
                *have_val = 1;
            }
            if (ra < 0) return -1;
        }
    }
    return r;
}

static int pb_span(pb s, const char *service, const char *host, gp_span_set *out, char *why,
                   size_t whylen, char *err, size_t errlen) {
    gp_span *sp = gp_span_set_add(out);
    if (!sp) {
        snprintf(err, errlen, "OTLP protobuf: out of memory");
        return -1;
    }
    snprintf(sp->service, sizeof sp->service, "%s", service);
    snprintf(sp->host, sizeof sp->host, "%s", host);
    gp_otlp_hints h = {0};
    pb_field f;
    int r;
    while ((r = pb_next(&s, &f, err, errlen)) > 0) {
        switch (f.num) {
        case 1:
            if (f.wire == 2) hex(sp->trace_id, sizeof sp->trace_id, f.bytes, f.len);
            break;
        case 2:
            if (f.wire == 2) hex(sp->span_id, sizeof sp->span_id, f.bytes, f.len);
            break;
        case 4:
            if (f.wire == 2) hex(sp->parent_id, sizeof sp->parent_id, f.bytes, f.len);
            break;
        case 5:
            if (f.wire == 2) {
                size_t n = f.len < sizeof sp->name - 1 ? f.len : sizeof sp->name - 1;
                for (size_t i = 0; i < n; i++)
                    sp->name[i] = f.bytes[i] < 0x20 ? '?' : (char)f.bytes[i];
                sp->name[n] = 0;
            }
            break;
        case 6:
            if (f.wire == 0) sp->kind = f.u <= 5 ? (int)f.u : 0;
            break;
        case 7:
            if (f.wire == 1) sp->start_ns = f.u > INT64_MAX ? -1 : (int64_t)f.u;
            break;
        case 8:
            if (f.wire == 1) sp->end_ns = f.u > INT64_MAX ? -1 : (int64_t)f.u;
            break;
        case 9:
            if (f.wire == 2) {
                const char *key;
                size_t klen;
                pb_field v;
                int hv;
                if (pb_keyvalue(sub(&s, &f), &key, &klen, &v, &hv, err, errlen) < 0) return -1;
                if (!key || !hv) break;
                if (v.num == 1 && v.wire == 2)
                    gp_otlp_span_str(sp, &h, key, klen, (const char *)v.bytes, v.len);
                else if (v.num == 3 && v.wire == 0)
                    gp_otlp_span_int(sp, &h, key, klen, (int64_t)v.u);
                else if (v.num == 4 && v.wire == 1) {
                    double d;
                    memcpy(&d, &v.u, sizeof d);
                    if (d >= 0 && d < 9e18) gp_otlp_span_int(sp, &h, key, klen, (int64_t)d);
                }
            }
            break;
        case 15:
            if (f.wire == 2) {
                pb st = sub(&s, &f);
                pb_field c;
                int rc;
                while ((rc = pb_next(&st, &c, err, errlen)) > 0)
                    if (c.num == 3 && c.wire == 0) sp->status = c.u <= 2 ? (int)c.u : 0;
                if (rc < 0) return -1;
            }
            break;
        default:
            break;
        }
    }
    if (r < 0) return -1;
    if (gp_otlp_span_finish(sp, &h, why, whylen) != 0) {
        out->n--;
        return 1;
    }
    return 0;
}

int gp_otlp_decode_pb(const uint8_t *buf, size_t len, gp_span_set *out, char *err, size_t errlen) {
    pb doc = {buf, buf + len, buf};
    pb_field f;
    int r;
    char first_why[200] = "";
    size_t n0 = out->n;
    uint64_t d0 = out->dropped;
    while ((r = pb_next(&doc, &f, err, errlen)) > 0) {
        if (f.num != 1 || f.wire != 2) continue;
        pb rs = sub(&doc, &f);
        /* The resource may come after the spans on the wire: read it first. */
        char service[64] = "", host[64] = "";
        pb scan = rs;
        pb_field g;
        int rr;
        while ((rr = pb_next(&scan, &g, err, errlen)) > 0) {
            if (g.num != 1 || g.wire != 2) continue;
            pb res = sub(&scan, &g);
            pb_field a;
            int ra;
            while ((ra = pb_next(&res, &a, err, errlen)) > 0) {
                if (a.num != 1 || a.wire != 2) continue;
                const char *key;
                size_t klen;
                pb_field v;
                int hv;
                if (pb_keyvalue(sub(&res, &a), &key, &klen, &v, &hv, err, errlen) < 0) goto fail;
                if (key && hv && v.num == 1 && v.wire == 2)
                    gp_otlp_resource_str(service, host, key, klen, (const char *)v.bytes, v.len);
            }
            if (ra < 0) goto fail;
        }
        if (rr < 0) goto fail;
        scan = rs;
        while ((rr = pb_next(&scan, &g, err, errlen)) > 0) {
            if ((g.num != 2 && g.num != 1000) || g.wire != 2) continue;
            pb ss = sub(&scan, &g);
            pb_field sf;
            int rs2;
            while ((rs2 = pb_next(&ss, &sf, err, errlen)) > 0) {
                if (sf.num != 2 || sf.wire != 2) continue;
                char why[200];
                int k = pb_span(sub(&ss, &sf), service, host, out, why, sizeof why, err, errlen);
                if (k < 0) goto fail;
                if (k > 0) {
                    out->dropped++;
                    if (!first_why[0]) snprintf(first_why, sizeof first_why, "%s", why);
                }
            }
            if (rs2 < 0) goto fail;
        }
        if (rr < 0) goto fail;
    }
    if (r < 0) goto fail;
    if (first_why[0]) snprintf(err, errlen, "%s", first_why);
    return 0;
fail: /* a malformed document is refused whole: nothing from it is kept */
    out->n = n0;
    out->dropped = d0;
    return -1;
}
