/* decode_json.c: OTLP/JSON ExportTraceServiceRequest -> spans (see otlp.h). OTLP's JSON
 * mapping: ids are hex strings, 64-bit integers may be strings or numbers, enums are
 * numbers; field names are lowerCamelCase.
 *
 * Streaming: yajl's event API drives a small state machine (a stack of the OTLP objects
 * we are inside), so no document tree is built and each span is finished as soon as its
 * object closes; 5-10x faster than building a jansson tree and walking it (bench/otlp).
 * Fields may come in any order: a resource that follows its scopeSpans still names the
 * spans before it (they are patched when the resourceSpans object closes). Containers we
 * do not read are skipped by depth counting, never recursed into.
 *
 * A document that is not JSON, or whose root has no resourceSpans array, or that repeats
 * a field goodput reads inside one object, is refused whole (err names the byte offset)
 * and leaves out as it was. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>

#include "otlp/otlp.h"

/* The OTLP objects and arrays the decoder reads; anything else is skipped. */
enum {
    F_ROOT,
    F_RSS,       /* resourceSpans [] */
    F_RS,        /* one ResourceSpans {} */
    F_RES,       /* resource {} */
    F_RES_ATTRS, /* resource.attributes [] */
    F_RES_KV,    /* one resource KeyValue {} */
    F_RES_VAL,   /* its AnyValue {} */
    F_SCOPES,    /* scopeSpans [] */
    F_SCOPE,     /* one ScopeSpans {} */
    F_SPANS,     /* spans [] */
    F_SPAN,      /* one Span {} */
    F_ATTRS,     /* span attributes [] */
    F_KV,        /* one span KeyValue {} */
    F_VAL,       /* its AnyValue {} */
    F_STATUS     /* status {} */
};

/* Field names, per object kind; bit positions in a frame's "seen" mask. */
enum {
    K_NONE = 0,
    K_RESOURCE_SPANS,
    K_RESOURCE,
    K_SCOPE_SPANS,
    K_ILS,
    K_ATTRIBUTES,
    K_KEY,
    K_VALUE,
    K_STRING_VALUE,
    K_INT_VALUE,
    K_DOUBLE_VALUE,
    K_SPANS,
    K_TRACE_ID,
    K_SPAN_ID,
    K_PARENT,
    K_NAME,
    K_KIND,
    K_START,
    K_END,
    K_STATUS,
    K_CODE
};

enum { V_MAP, V_ARR, V_STR, V_NUM, V_OTHER };

#define MAX_FRAMES 16

typedef struct {
    gp_span_set *out;
    yajl_handle h;
    int fr[MAX_FRAMES];
    uint32_t seen[MAX_FRAMES];
    int depth;    /* frames on the stack */
    int key;      /* field of the value that comes next, in the top object */
    long skip;    /* > 0 while inside a container we do not read */
    int have_rss; /* root had a resourceSpans array */
    size_t rs_first;
    char service[64], host[64];
    /* resource KeyValue */
    char rkey[64], rsv[128];
    size_t rklen, rsvlen;
    int rhas_key, rhas_sv;
    /* span */
    gp_otlp_hints hints;
    /* span KeyValue */
    char kkey[64], sv[128];
    size_t klen, svlen;
    int has_key, has_val, has_sv, has_iv, has_dv;
    int64_t iv, dv;
    char first_why[200];
    char err[200]; /* set when a callback stops the parse */
} jctx;

static int key_is(const unsigned char *s, size_t len, const char *want) {
    return strlen(want) == len && memcmp(s, want, len) == 0;
}

static int key_id(int frame, const unsigned char *s, size_t n) {
    switch (frame) {
    case F_ROOT:
        return key_is(s, n, "resourceSpans") ? K_RESOURCE_SPANS : K_NONE;
    case F_RS:
        if (key_is(s, n, "resource")) return K_RESOURCE;
        if (key_is(s, n, "scopeSpans")) return K_SCOPE_SPANS;
        return key_is(s, n, "instrumentationLibrarySpans") ? K_ILS : K_NONE;
    case F_RES:
        return key_is(s, n, "attributes") ? K_ATTRIBUTES : K_NONE;
    case F_RES_KV:
    case F_KV:
        if (key_is(s, n, "key")) return K_KEY;
        return key_is(s, n, "value") ? K_VALUE : K_NONE;
    case F_RES_VAL:
    case F_VAL:
        if (key_is(s, n, "stringValue")) return K_STRING_VALUE;
        if (key_is(s, n, "intValue")) return K_INT_VALUE;
        return key_is(s, n, "doubleValue") ? K_DOUBLE_VALUE : K_NONE;
    case F_SCOPE:
        return key_is(s, n, "spans") ? K_SPANS : K_NONE;
    case F_SPAN:
        switch (n) { /* by length first: this runs for every field of every span */
        case 4:
            if (key_is(s, n, "name")) return K_NAME;
            return key_is(s, n, "kind") ? K_KIND : K_NONE;
        case 6:
            if (key_is(s, n, "spanId")) return K_SPAN_ID;
            return key_is(s, n, "status") ? K_STATUS : K_NONE;
        case 7:
            return key_is(s, n, "traceId") ? K_TRACE_ID : K_NONE;
        case 10:
            return key_is(s, n, "attributes") ? K_ATTRIBUTES : K_NONE;
        case 12:
            return key_is(s, n, "parentSpanId") ? K_PARENT : K_NONE;
        case 15:
            return key_is(s, n, "endTimeUnixNano") ? K_END : K_NONE;
        case 17:
            return key_is(s, n, "startTimeUnixNano") ? K_START : K_NONE;
        default:
            return K_NONE;
        }
    case F_STATUS:
        return key_is(s, n, "code") ? K_CODE : K_NONE;
    default:
        return K_NONE;
    }
}

static int stop(jctx *c, const char *what) {
    snprintf(c->err, sizeof c->err, "%s", what);
    return 0;
}

static gp_span *cur_span(jctx *c) {
    return &c->out->v[c->out->n - 1];
}

/* A 64-bit integer given as a JSON number or a decimal string; -1 when neither (or a
 * real out of range). *bad is set for an integer literal that does not fit (refused). */
static int64_t scalar_i64(int type, const unsigned char *s, size_t len, int *bad) {
    char tmp[128];
    if ((type != V_STR && type != V_NUM) || len >= sizeof tmp) return -1;
    memcpy(tmp, s, len);
    tmp[len] = 0;
    if (type == V_NUM && !strpbrk(tmp, ".eE")) {
        errno = 0;
        long long x = strtoll(tmp, NULL, 10);
        if (errno == ERANGE) *bad = 1;
        return x;
    }
    char *end;
    if (type == V_NUM) {
        double d = strtod(tmp, &end);
        return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : -1;
    }
    if (strlen(tmp) != len) return -1; /* a NUL inside the string */
    long long x = strtoll(tmp, &end, 10);
    return end != tmp && *end == 0 ? x : -1;
}

/* Lowercase hex into dst; a string too long for dst fails the id check later. */
static void hex_id(char *dst, size_t cap, const unsigned char *s, size_t len) {
    size_t i = 0;
    for (; i < len && s[i] && i + 1 < cap; i++)
        dst[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] - 'A' + 'a') : (char)s[i];
    dst[i] = 0;
    if (i < len && s[i]) dst[0] = 'x';
}

static void keep(char *dst, size_t cap, size_t *dlen, const unsigned char *s, size_t len) {
    /* only the first cap bytes can matter: the span's fields are shorter */
    *dlen = len < cap ? len : cap;
    memcpy(dst, s, *dlen);
}

static int push(jctx *c, int f) {
    if (c->depth == MAX_FRAMES) return stop(c, "nested too deep");
    c->fr[c->depth] = f;
    c->seen[c->depth] = 0;
    c->depth++;
    switch (f) {
    case F_RS:
        c->rs_first = c->out->n;
        c->service[0] = c->host[0] = 0;
        break;
    case F_RES_KV:
        c->rhas_key = c->rhas_sv = 0;
        break;
    case F_SPAN: {
        gp_span *sp = gp_span_set_add(c->out);
        if (!sp) return stop(c, "out of memory");
        sp->kind = -1;
        sp->start_ns = sp->end_ns = -1;
        memset(&c->hints, 0, sizeof c->hints);
        break;
    }
    case F_KV:
        c->has_key = c->has_val = c->has_sv = c->has_iv = c->has_dv = 0;
        break;
    default:
        break;
    }
    return 1;
}

static void pop(jctx *c) {
    int f = c->fr[--c->depth];
    gp_span_set *o = c->out;
    switch (f) {
    case F_RS:
        for (size_t i = c->rs_first; i < o->n; i++) {
            memcpy(o->v[i].service, c->service, sizeof c->service);
            memcpy(o->v[i].host, c->host, sizeof c->host);
        }
        break;
    case F_RES_KV:
        if (c->rhas_key && c->rhas_sv)
            gp_otlp_resource_str(c->service, c->host, c->rkey, c->rklen, c->rsv, c->rsvlen);
        break;
    case F_KV: {
        gp_span *sp = cur_span(c);
        if (!c->has_key || !c->has_val) break;
        if (c->has_sv)
            gp_otlp_span_str(sp, &c->hints, c->kkey, c->klen, c->sv, c->svlen);
        else if (c->has_iv)
            gp_otlp_span_int(sp, &c->hints, c->kkey, c->klen, c->iv);
        else if (c->has_dv)
            gp_otlp_span_int(sp, &c->hints, c->kkey, c->klen, c->dv);
        break;
    }
    case F_SPAN: {
        gp_span *sp = cur_span(c);
        char why[200];
        if (sp->status < 0) sp->status = 0;
        if (gp_otlp_span_finish(sp, &c->hints, why, sizeof why) != 0) {
            o->n--;
            o->dropped++;
            if (!c->first_why[0]) snprintf(c->first_why, sizeof c->first_why, "%s", why);
        }
        break;
    }
    default:
        break;
    }
}

/* A container starts (type V_MAP or V_ARR): the frame it becomes, or -1 to skip it. */
static int container(jctx *c, int type) {
    if (c->depth == 0) return type == V_MAP ? F_ROOT : -2;
    int top = c->fr[c->depth - 1];
    int m = type == V_MAP, a = type == V_ARR;
    switch (top) { /* arrays: the element */
    case F_RSS:
        return m ? F_RS : -1;
    case F_RES_ATTRS:
        return m ? F_RES_KV : -1;
    case F_SCOPES:
        return m ? F_SCOPE : -1;
    case F_SPANS:
        if (m) return F_SPAN;
        c->out->dropped++;
        return -1;
    case F_ATTRS:
        return m ? F_KV : -1;
    default:
        break;
    }
    switch (c->key) { /* objects: the field */
    case K_RESOURCE_SPANS:
        return a ? F_RSS : -2;
    case K_RESOURCE:
        return m && top == F_RS ? F_RES : -1;
    case K_SCOPE_SPANS:
        return a ? F_SCOPES : -1;
    case K_ILS: /* the older name, read only when scopeSpans is absent */
        return a && !(c->seen[c->depth - 1] & (1u << K_SCOPE_SPANS)) ? F_SCOPES : -1;
    case K_ATTRIBUTES:
        return a ? (top == F_RES ? F_RES_ATTRS : F_ATTRS) : -1;
    case K_VALUE:
        if (top == F_KV) c->has_val = m;
        return m ? (top == F_KV ? F_VAL : F_RES_VAL) : -1;
    case K_SPANS:
        return a ? F_SPANS : -1;
    case K_STATUS:
        return m ? F_STATUS : -1;
    case K_INT_VALUE:
        if (top == F_VAL) { /* present but not a number: blocks doubleValue, as before */
            c->has_iv = 1;
            c->iv = -1;
        }
        return -1;
    default:
        return -1;
    }
}

static int open_c(jctx *c, int type) {
    if (c->skip) {
        c->skip++;
        return 1;
    }
    int f = container(c, type);
    if (f == -2) return stop(c, "no resourceSpans array (not an ExportTraceServiceRequest)");
    if (f < 0) {
        c->skip = 1;
        return 1;
    }
    if (f == F_RSS) c->have_rss = 1;
    return push(c, f);
}

static int close_c(jctx *c) {
    if (c->skip) {
        c->skip--;
        return 1;
    }
    pop(c);
    return 1;
}

static int scalar(jctx *c, int type, const unsigned char *s, size_t len) {
    if (c->skip) return 1;
    if (c->depth == 0) return stop(c, "no resourceSpans array (not an ExportTraceServiceRequest)");
    int top = c->fr[c->depth - 1];
    int bad = 0;
    switch (top) { /* an array's element: only a span's place counts it */
    case F_SPANS:
        c->out->dropped++;
        return 1;
    case F_RSS:
    case F_RES_ATTRS:
    case F_SCOPES:
    case F_ATTRS:
        return 1;
    default:
        break;
    }
    switch (c->key) {
    case K_RESOURCE_SPANS:
        return stop(c, "no resourceSpans array (not an ExportTraceServiceRequest)");
    case K_KEY:
        if (type != V_STR) break;
        if (top == F_KV) {
            c->has_key = 1;
            keep(c->kkey, sizeof c->kkey, &c->klen, s, len);
        } else {
            c->rhas_key = 1;
            keep(c->rkey, sizeof c->rkey, &c->rklen, s, len);
        }
        break;
    case K_VALUE:
        if (top == F_KV) c->has_val = 0;
        break;
    case K_STRING_VALUE:
        if (type != V_STR) break;
        if (top == F_VAL) {
            c->has_sv = 1;
            keep(c->sv, sizeof c->sv, &c->svlen, s, len);
        } else {
            c->rhas_sv = 1;
            keep(c->rsv, sizeof c->rsv, &c->rsvlen, s, len);
        }
        break;
    case K_INT_VALUE:
        if (top != F_VAL) break;
        c->has_iv = 1;
        c->iv = scalar_i64(type, s, len, &bad);
        break;
    case K_DOUBLE_VALUE:
        if (top != F_VAL || type != V_NUM) break;
        c->has_dv = 1;
        c->dv = scalar_i64(type, s, len, &bad);
        break;
    case K_TRACE_ID:
        if (type == V_STR) hex_id(cur_span(c)->trace_id, sizeof cur_span(c)->trace_id, s, len);
        break;
    case K_SPAN_ID:
        if (type == V_STR) hex_id(cur_span(c)->span_id, sizeof cur_span(c)->span_id, s, len);
        break;
    case K_PARENT:
        if (type == V_STR) hex_id(cur_span(c)->parent_id, sizeof cur_span(c)->parent_id, s, len);
        break;
    case K_NAME:
        if (type == V_STR) {
            char *d = cur_span(c)->name;
            size_t i = 0;
            for (; i < len && s[i] && i + 1 < sizeof cur_span(c)->name; i++)
                d[i] = s[i] < 0x20 ? '?' : (char)s[i];
            d[i] = 0;
        }
        break;
    case K_KIND:
        cur_span(c)->kind = (int)scalar_i64(type, s, len, &bad);
        break;
    case K_START:
        cur_span(c)->start_ns = scalar_i64(type, s, len, &bad);
        break;
    case K_END:
        cur_span(c)->end_ns = scalar_i64(type, s, len, &bad);
        break;
    case K_CODE:
        cur_span(c)->status = (int)scalar_i64(type, s, len, &bad);
        break;
    default:
        break;
    }
    if (bad) return stop(c, "integer does not fit in 64 bits");
    return 1;
}

static int on_null(void *u) {
    return scalar(u, V_OTHER, NULL, 0);
}
static int on_bool(void *u, int b) {
    (void)b;
    return scalar(u, V_OTHER, NULL, 0);
}
static int on_number(void *u, const char *s, size_t len) {
    return scalar(u, V_NUM, (const unsigned char *)s, len);
}
static int on_string(void *u, const unsigned char *s, size_t len) {
    return scalar(u, V_STR, s, len);
}
static int on_start_map(void *u) {
    return open_c(u, V_MAP);
}
static int on_start_array(void *u) {
    return open_c(u, V_ARR);
}
static int on_end(void *u) {
    return close_c(u);
}

static int on_key(void *u, const unsigned char *s, size_t len) {
    jctx *c = u;
    if (c->skip) return 1;
    int top = c->fr[c->depth - 1];
    c->key = key_id(top, s, len);
    if (c->key != K_NONE) {
        uint32_t bit = 1u << c->key;
        if (c->seen[c->depth - 1] & bit) {
            snprintf(c->err, sizeof c->err, "duplicate field \"%.*s\"", (int)(len < 40 ? len : 40),
                     (const char *)s);
            return 0;
        }
        c->seen[c->depth - 1] |= bit;
    }
    return 1;
}

static const yajl_callbacks CALLBACKS = {on_null,   on_bool,        NULL,         NULL,
                                         on_number, on_string,      on_start_map, on_key,
                                         on_end,    on_start_array, on_end};

int gp_otlp_decode_json(const char *buf, size_t len, gp_span_set *out, char *err, size_t errlen) {
    jctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "OTLP JSON: out of memory");
        return -1;
    }
    size_t n0 = out->n;
    uint64_t d0 = out->dropped;
    c->out = out;
    c->h = yajl_alloc(&CALLBACKS, NULL, c);
    int rc = 0;
    if (!c->h) {
        snprintf(err, errlen, "OTLP JSON: out of memory");
        rc = -1;
        goto done;
    }
    yajl_status s = yajl_parse(c->h, (const unsigned char *)buf, len);
    size_t at = yajl_get_bytes_consumed(c->h);
    if (s == yajl_status_ok) {
        s = yajl_complete_parse(c->h);
        at = len;
    }
    if (s == yajl_status_client_canceled) {
        /* the byte offset is where yajl stood when the field's value ended */
        snprintf(err, errlen, "OTLP JSON byte %zu: %s", at, c->err);
        rc = -1;
    } else if (s != yajl_status_ok) {
        unsigned char *m = yajl_get_error(c->h, 0, (const unsigned char *)buf, len);
        char *nl = m ? strchr((char *)m, '\n') : NULL;
        if (nl) *nl = 0;
        snprintf(err, errlen, "OTLP JSON byte %zu: %s", at, m ? (char *)m : "parse error");
        if (m) yajl_free_error(c->h, m);
        rc = -1;
    } else if (!c->have_rss) {
        snprintf(err, errlen,
                 "OTLP JSON: no resourceSpans array (not an ExportTraceServiceRequest)");
        rc = -1;
    } else if (c->first_why[0])
        snprintf(err, errlen, "%s", c->first_why);
done:
    if (rc != 0) { /* refused whole: keep nothing of this document */
        out->n = n0;
        out->dropped = d0;
    }
    if (c->h) yajl_free(c->h);
    free(c);
    return rc;
}
