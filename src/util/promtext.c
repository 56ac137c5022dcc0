/* promtext.c: Prometheus text-format parser (see promtext.h for the grammar).
 *
 * Design: every complete line is copied into one growable buffer and parsed in place:
 * names and label values are NUL-terminated where they stand, and escapes are undone by
 * compacting the value leftwards (an unescaped value is never longer than its escaped
 * form). So a line costs one memcpy and no allocation once the buffers have grown, which
 * is what makes this many times faster than the Python client's parser. */
#include "util/promtext.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gp_prom_parser {
    gp_prom_sample_fn on_sample;
    gp_prom_meta_fn on_meta;
    void *ctx;
    int flags;
    char *line; /* the current line (partial across feeds) */
    size_t len, cap;
    gp_prom_label *labels;
    size_t lcap;
    long lineno, samples, bad;
    char family[256];
    gp_prom_type type;
    char err[256];
};

gp_prom_parser *gp_prom_parser_new(gp_prom_sample_fn on_sample, gp_prom_meta_fn on_meta, void *ctx,
                                   int flags) {
    gp_prom_parser *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->on_sample = on_sample;
    p->on_meta = on_meta;
    p->ctx = ctx;
    p->flags = flags;
    return p;
}

void gp_prom_parser_free(gp_prom_parser *p) {
    if (!p) return;
    free(p->line);
    free(p->labels);
    free(p);
}

const char *gp_prom_error(const gp_prom_parser *p) {
    return p->err;
}
long gp_prom_samples(const gp_prom_parser *p) {
    return p->samples;
}
long gp_prom_bad_lines(const gp_prom_parser *p) {
    return p->bad;
}

static int is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_name_char(char c) {
    return is_name_start(c) || (c >= '0' && c <= '9');
}
static int is_blank(char c) {
    return c == ' ' || c == '\t';
}

int gp_prom_parse_double(const char *s, size_t len, double *out) {
    if (len == 0) return -1;
    const char *t = s;
    size_t n = len;
    int neg = 0;
    if (*t == '+' || *t == '-') {
        neg = *t == '-';
        t++;
        n--;
    }
    if ((n == 3 && !strncmp(t, "Inf", 3)) || (n == 3 && !strncmp(t, "inf", 3)) ||
        (n == 8 && !strncasecmp(t, "infinity", 8))) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (n == 3 && !strncasecmp(t, "nan", 3)) {
        *out = NAN;
        return 0;
    }
    /* Fast path (Clinger): at most 15 significant digits and a power of ten up to 22
     * give a correctly rounded result with one multiplication or division. */
    {
        static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        uint64_t m = 0;
        int digits = 0, frac = 0, seen_dot = 0, any = 0;
        size_t i = 0;
        for (; i < n; i++) {
            char c = t[i];
            if (c >= '0' && c <= '9') {
                any = 1;
                if (m == 0 && c == '0') {
                    if (seen_dot) frac++;
                    continue;
                }
                if (++digits > 15) break;
                m = m * 10 + (uint64_t)(c - '0');
                if (seen_dot) frac++;
            } else if (c == '.' && !seen_dot) {
                seen_dot = 1;
            } else {
                break;
            }
        }
        int e10 = 0, ok = any && digits <= 15;
        if (ok && i < n) {
            if (t[i] != 'e' && t[i] != 'E')
                ok = 0;
            else {
                i++;
                int eneg = 0, ed = 0;
                if (i < n && (t[i] == '+' || t[i] == '-')) eneg = t[i++] == '-';
                for (; i < n && t[i] >= '0' && t[i] <= '9' && ed < 4; i++, ed++)
                    e10 = e10 * 10 + (t[i] - '0');
                if (!ed || i < n) ok = 0;
                if (eneg) e10 = -e10;
            }
        }
        e10 -= frac;
        if (ok && e10 >= -22 && e10 <= 22) {
            double v = (double)m;
            v = e10 < 0 ? v / p10[-e10] : v * p10[e10];
            *out = neg ? -v : v;
            return 0;
        }
    }
    /* Digits, sign, dot, exponent only: no hex floats, no words. */
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'))
            return -1;
    }
    char tmp[64];
    if (len >= sizeof tmp) return -1;
    memcpy(tmp, s, len);
    tmp[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end != tmp + len) return -1;
    *out = v;
    return 0;
}

static int fail(gp_prom_parser *p, const char *what) {
    p->bad++;
    if (!p->err[0]) snprintf(p->err, sizeof p->err, "line %ld: %s", p->lineno, what);
    return (p->flags & GP_PROM_SKIP_BAD) ? 0 : -1;
}

static gp_prom_type type_from_word(const char *w) {
    if (!strcmp(w, "counter")) return GP_PROM_COUNTER;
    if (!strcmp(w, "gauge")) return GP_PROM_GAUGE;
    if (!strcmp(w, "histogram")) return GP_PROM_HISTOGRAM;
    if (!strcmp(w, "summary")) return GP_PROM_SUMMARY;
    if (!strcmp(w, "untyped")) return GP_PROM_UNTYPED;
    return (gp_prom_type)-1;
}

/* Undoes \\ \n (and \" when quote is set) in place; returns the new length. */
static size_t unescape(char *s, size_t n, int quote) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[i + 1];
            if (c == '\\' || c == 'n' || (quote && c == '"')) {
                s[o++] = c == 'n' ? '\n' : c;
                i++;
                continue;
            }
        }
        s[o++] = s[i];
    }
    s[o] = 0;
    return o;
}

static int parse_comment(gp_prom_parser *p, char *s, char *end) {
    s++; /* '#' */
    while (s < end && is_blank(*s))
        s++;
    char kind;
    if (end - s >= 4 && !strncmp(s, "HELP", 4) && (s + 4 == end || is_blank(s[4])))
        kind = 'H';
    else if (end - s >= 4 && !strncmp(s, "TYPE", 4) && (s + 4 == end || is_blank(s[4])))
        kind = 'T';
    else
        return 0; /* an ordinary comment */
    s += 4;
    while (s < end && is_blank(*s))
        s++;
    char *name = s;
    if (s == end || !(is_name_start(*s) || *s == ':'))
        return fail(p,
                    kind == 'H' ? "# HELP without a metric name" : "# TYPE without a metric name");
    while (s < end && (is_name_char(*s) || *s == ':'))
        s++;
    if (s < end && !is_blank(*s)) return fail(p, "bad character in metric name of # HELP/# TYPE");
    char *name_end = s;
    while (s < end && is_blank(*s))
        s++;
    *name_end = 0;
    char *text = s;
    if (kind == 'H') {
        unescape(text, (size_t)(end - text), 0);
    } else {
        char *t = end;
        while (t > text && is_blank(t[-1]))
            t--;
        *t = 0;
        gp_prom_type ty = type_from_word(text);
        if ((int)ty < 0)
            return fail(p, "# TYPE is not counter, gauge, histogram, summary or untyped");
        snprintf(p->family, sizeof p->family, "%s", name);
        p->type = ty;
    }
    if (p->on_meta) return p->on_meta(p->ctx, kind, name, text, p->lineno);
    return 0;
}

static gp_prom_type type_of(const gp_prom_parser *p, const char *name) {
    size_t fl = strlen(p->family);
    if (!fl || strncmp(name, p->family, fl) != 0) return GP_PROM_UNTYPED;
    const char *suf = name + fl;
    if (!*suf) return p->type;
    if (p->type == GP_PROM_HISTOGRAM && (!strcmp(suf, "_bucket") || !strcmp(suf, "_sum") ||
                                         !strcmp(suf, "_count") || !strcmp(suf, "_created")))
        return p->type;
    if (p->type == GP_PROM_SUMMARY &&
        (!strcmp(suf, "_sum") || !strcmp(suf, "_count") || !strcmp(suf, "_created")))
        return p->type;
    if (p->type == GP_PROM_COUNTER && (!strcmp(suf, "_total") || !strcmp(suf, "_created")))
        return p->type;
    return GP_PROM_UNTYPED;
}

static int push_label(gp_prom_parser *p, size_t n, const char *name, const char *value) {
    if (n >= p->lcap) {
        size_t nc = p->lcap ? p->lcap * 2 : 16;
        gp_prom_label *nl = realloc(p->labels, nc * sizeof *nl);
        if (!nl) return -1;
        p->labels = nl;
        p->lcap = nc;
    }
    p->labels[n].name = name;
    p->labels[n].value = value;
    return 0;
}

/* Parses one sample line [s, end) in place. */
static int parse_sample(gp_prom_parser *p, char *s, char *end) {
    char *name = s;
    if (!(is_name_start(*s) || *s == ':'))
        return fail(p, "metric name must start with a letter, '_' or ':'");
    while (s < end && (is_name_char(*s) || *s == ':'))
        s++;
    char *name_end = s;
    size_t nl = 0;
    while (s < end && is_blank(*s))
        s++;
    if (s < end && *s == '{') {
        *name_end = 0;
        s++;
        for (;;) {
            while (s < end && is_blank(*s))
                s++;
            if (s < end && *s == '}') {
                s++;
                break;
            }
            if (s >= end) return fail(p, "label set not closed with '}'");
            char *ln = s;
            if (!is_name_start(*s)) return fail(p, "label name must start with a letter or '_'");
            while (s < end && is_name_char(*s))
                s++;
            char *ln_end = s;
            while (s < end && is_blank(*s))
                s++;
            if (s >= end || *s != '=') return fail(p, "label name not followed by '='");
            s++;
            while (s < end && is_blank(*s))
                s++;
            if (s >= end || *s != '"') return fail(p, "label value not quoted");
            s++;
            char *lv = s;
            int esc = 0;
            while (s < end && *s != '"') {
                if (*s == '\\') {
                    esc = 1;
                    if (s + 1 >= end) break;
                    s++;
                }
                s++;
            }
            if (s >= end) return fail(p, "label value not closed with '\"'");
            *ln_end = 0;
            if (esc)
                unescape(lv, (size_t)(s - lv), 1);
            else
                *s = 0;
            s++;
            if (push_label(p, nl++, ln, lv) < 0) return fail(p, "out of memory");
            while (s < end && is_blank(*s))
                s++;
            if (s < end && *s == ',') {
                s++;
                continue;
            }
            if (s < end && *s == '}') {
                s++;
                break;
            }
            return fail(p, "expected ',' or '}' after a label");
        }
        if (s < end && !is_blank(*s)) return fail(p, "expected a space before the value");
        while (s < end && is_blank(*s))
            s++;
    } else if (s == name_end && s < end) {
        return fail(p, "bad character in metric name");
    }
    char *v = s;
    while (s < end && !is_blank(*s))
        s++;
    gp_prom_sample x;
    memset(&x, 0, sizeof x);
    if (gp_prom_parse_double(v, (size_t)(s - v), &x.value) < 0)
        return fail(p, v == s ? "missing value" : "value is not a number");
    while (s < end && is_blank(*s))
        s++;
    if (s < end) {
        char *t = s;
        if (*t == '-' || *t == '+') t++;
        char *d = t;
        while (t < end && *t >= '0' && *t <= '9')
            t++;
        char *te = t;
        while (t < end && is_blank(*t))
            t++;
        if (d == te || t != end) return fail(p, "timestamp is not an integer (milliseconds)");
        char tmp[32];
        size_t tl = (size_t)(te - s);
        if (tl >= sizeof tmp) return fail(p, "timestamp out of range");
        memcpy(tmp, s, tl);
        tmp[tl] = 0;
        errno = 0;
        long long ts = strtoll(tmp, NULL, 10);
        if (errno) return fail(p, "timestamp out of range");
        x.has_ts = 1;
        x.ts_ms = ts;
    }
    *name_end = 0;
    x.name = name;
    x.labels = p->labels;
    x.nlabels = nl;
    x.type = type_of(p, name);
    x.line = p->lineno;
    p->samples++;
    return p->on_sample ? p->on_sample(p->ctx, &x) : 0;
}

static int parse_line(gp_prom_parser *p, char *s, size_t n) {
    p->lineno++;
    char *end = s + n;
    if (end > s && end[-1] == '\r') end--;
    *end = 0;
    while (s < end && is_blank(*s))
        s++;
    if (s == end) return 0;
    if (*s == '#') return parse_comment(p, s, end);
    return parse_sample(p, s, end);
}

static int append(gp_prom_parser *p, const char *c, size_t n) {
    if (p->len + n + 1 > p->cap) {
        size_t nc = p->cap ? p->cap : 256;
        while (nc < p->len + n + 1)
            nc *= 2;
        char *nb = realloc(p->line, nc);
        if (!nb) return -1;
        p->line = nb;
        p->cap = nc;
    }
    memcpy(p->line + p->len, c, n);
    p->len += n;
    return 0;
}

int gp_prom_feed(gp_prom_parser *p, const char *chunk, size_t len) {
    const char *c = chunk, *e = chunk + len;
    while (c < e) {
        const char *nl = memchr(c, '\n', (size_t)(e - c));
        if (!nl) {
            if (append(p, c, (size_t)(e - c)) < 0) return fail(p, "out of memory");
            return 0;
        }
        if (append(p, c, (size_t)(nl - c)) < 0) return fail(p, "out of memory");
        size_t n = p->len;
        p->len = 0;
        int rc = parse_line(p, p->line, n);
        if (rc) return rc;
        c = nl + 1;
    }
    return 0;
}

int gp_prom_finish(gp_prom_parser *p) {
    if (p->len == 0) return 0;
    if (append(p, "", 0) < 0) return fail(p, "out of memory");
    size_t n = p->len;
    p->len = 0;
    return parse_line(p, p->line, n);
}

int gp_prom_parse(const char *buf, size_t len, gp_prom_sample_fn on_sample, gp_prom_meta_fn on_meta,
                  void *ctx, int flags, char *err, size_t errlen) {
    gp_prom_parser *p = gp_prom_parser_new(on_sample, on_meta, ctx, flags);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = gp_prom_feed(p, buf, len);
    if (rc == 0) rc = gp_prom_finish(p);
    if (err && errlen) snprintf(err, errlen, "%s", p->err);
    gp_prom_parser_free(p);
    return rc;
}
