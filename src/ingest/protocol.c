/* protocol.c: the event line protocol (docs/protocol.md), parsing and formatting.
 *
 * Parsing is one pass over the line with no allocation: validate length and UTF-8, read the
 * kind word, then key=value tokens. Each key is looked up in one table that says which kinds
 * accept it, its type and where it lands in gp_event. Unknown keys are ignored (new keys
 * never break old agents); a known key with a bad value rejects the whole line, so an event
 * is never stored half-parsed. The error names the field and the offending value. */
#include "ingest/protocol.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    F_JOBID,    /* char[], validated as a job id */
    F_STR,      /* char[] of size sz */
    F_COUNT,    /* int64 >= 0 */
    F_SINT,     /* int64, any sign */
    F_TIME,     /* int64 ns since epoch >= 0 (bounded around now once parsed) */
    F_DUR,      /* int64 ns >= 0, kept aside (step dur) */
    F_NUM,      /* finite double >= 0 */
    F_EDGE,     /* begin / end */
    F_BOOL,     /* 0 / 1 */
    F_VER,      /* protocol version: integer >= 1, not stored */
    F_STATE,    /* job lifecycle: submitted / allocated / ended */
    F_RESOURCE, /* stage declaration: cpu / gpu (gp_stage_resource) */
} ftype;

#define K(kind) (1u << (kind))
#define ALL                                                                                        \
    (K(GP_EV_HELLO) | K(GP_EV_STEP) | K(GP_EV_PHASE) | K(GP_EV_REQUEST) | K(GP_EV_STAGE) |         \
     K(GP_EV_RESTART) | K(GP_EV_JOB) | K(GP_EV_ALLOC))
#define AT(field) offsetof(gp_event, field), sizeof(((gp_event *)0)->field)

typedef struct {
    const char *key;
    unsigned kinds; /* bitmask of gp_event_kind accepting this key */
    ftype type;
    size_t off, sz;
    int required;
} field_def;

static const field_def fields[] = {
    {"job", ALL, F_JOBID, AT(job_id), 1},
    {"ts", ALL, F_TIME, AT(ts_ns), 0},
    {"rank", ALL, F_COUNT, AT(rank), 0},
    {"seq", ALL, F_COUNT, AT(seq), 0}, /* sender's sequence number: the event's identity */
    /* hello */
    {"v", K(GP_EV_HELLO), F_VER, 0, 0, 0},
    {"pid", K(GP_EV_HELLO), F_COUNT, AT(pid), 0},
    {"host", K(GP_EV_HELLO), F_STR, AT(host), 0},
    {"unit", K(GP_EV_HELLO), F_STR, AT(name), 0},
    {"flops_per_unit", K(GP_EV_HELLO), F_NUM, AT(flops_per_unit), 0},
    {"bytes_per_unit", K(GP_EV_HELLO), F_NUM, AT(bytes_per_unit), 0},
    {"slo_ttft", K(GP_EV_HELLO), F_NUM, AT(slo_ttft_s), 0},
    {"slo_tpot", K(GP_EV_HELLO), F_NUM, AT(slo_tpot_s), 0},
    {"slo_e2e", K(GP_EV_HELLO), F_NUM, AT(slo_e2e_s), 0},
    {"name", K(GP_EV_HELLO) | K(GP_EV_JOB), F_STR, AT(job_name), 0},
    {"user", K(GP_EV_HELLO) | K(GP_EV_JOB), F_STR, AT(user), 0},
    /* step, restart */
    {"step", K(GP_EV_STEP) | K(GP_EV_RESTART), F_COUNT, AT(step), 1},
    {"units", K(GP_EV_STEP), F_NUM, AT(units), 0},
    {"start", K(GP_EV_STEP), F_TIME, AT(step_start_ns), 0},
    {"dur", K(GP_EV_STEP), F_DUR, 0, 0, 0},
    /* phase */
    {"name", K(GP_EV_PHASE), F_STR, AT(name), 1},
    {"edge", K(GP_EV_PHASE), F_EDGE, AT(edge), 1},
    /* request */
    {"arrival", K(GP_EV_REQUEST), F_TIME, AT(arrival_ns), 0},
    {"first_token", K(GP_EV_REQUEST), F_TIME, AT(first_token_ns), 0},
    {"prompt", K(GP_EV_REQUEST), F_COUNT, AT(prompt_tokens), 0},
    {"output", K(GP_EV_REQUEST), F_COUNT, AT(output_tokens), 0},
    {"ok", K(GP_EV_REQUEST), F_BOOL, AT(ok), 0},
    /* stage */
    {"stage", K(GP_EV_STAGE), F_STR, AT(name), 1},
    {"item", K(GP_EV_STAGE), F_COUNT, AT(item), 0},
    {"enqueue", K(GP_EV_STAGE), F_TIME, AT(enqueue_ns), 0},
    {"start", K(GP_EV_STAGE), F_TIME, AT(start_ns), 0},
    {"worker", K(GP_EV_STAGE), F_STR, AT(worker), 0},
    {"bytes", K(GP_EV_STAGE), F_COUNT, AT(bytes), 0},
    /* stage declaration (see model/event.h): pool size, resource, upstream stages, queue bound */
    {"pool", K(GP_EV_STAGE), F_COUNT, AT(step), 0},
    {"resource", K(GP_EV_STAGE), F_RESOURCE, AT(edge), 0},
    {"upstream", K(GP_EV_STAGE), F_STR, AT(worker), 0},
    {"queue", K(GP_EV_STAGE), F_COUNT, AT(bytes), 0},
    /* job lifecycle */
    {"state", K(GP_EV_JOB), F_STATE, AT(name), 1},
    {"origin", K(GP_EV_JOB), F_STR, AT(origin), 0},
    {"exit", K(GP_EV_JOB), F_SINT, AT(exit_code), 0},
    /* alloc */
    {"uuid", K(GP_EV_ALLOC), F_STR, AT(uuid), 1},
    {"from", K(GP_EV_ALLOC), F_TIME, AT(from_ns), 1},
    {"to", K(GP_EV_ALLOC), F_TIME, AT(to_ns), 0},
};
#define NFIELDS (sizeof fields / sizeof fields[0])

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Returns the offset of the first byte that is not valid UTF-8, or len when all is valid.
 * Rejects overlong forms, surrogates and code points above U+10FFFF. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if (c == 0xE0)
            n = 2, lo = 0xA0;
        else if (c >= 0xE1 && c <= 0xEC)
            n = 2;
        else if (c == 0xED)
            n = 2, hi = 0x9F;
        else if (c >= 0xEE && c <= 0xEF)
            n = 2;
        else if (c == 0xF0)
            n = 3, lo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3)
            n = 3;
        else if (c == 0xF4)
            n = 3, hi = 0x8F;
        else
            return i;
        if (i + n >= len) return i; /* truncated sequence */
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k <= n; k++)
            if ((s[i + k] & 0xC0) != 0x80) return i;
        i += n + 1;
    }
    return len;
}

static int is_ws(char c) {
    return c == ' ' || c == '\t';
}

static int valid_job_id(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n >= GP_JOB_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr("._:@/-", c)) return 0;
    }
    return 1;
}

static int parse_int(const char *v, int64_t *out) {
    if (!*v || isspace((unsigned char)*v)) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end) return -1;
    *out = x;
    return 0;
}

static int parse_num(const char *v, double *out) {
    if (!*v || isspace((unsigned char)*v)) return -1;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || !isfinite(x)) return -1;
    *out = x;
    return 0;
}

static const char *kind_names[] = {NULL,    "hello",   "step", "phase", "request",
                                   "stage", "restart", "job",  "alloc"};

static int parse_kind(const char *s, size_t n) {
    for (int k = GP_EV_HELLO; k <= GP_EV_ALLOC; k++)
        if (strlen(kind_names[k]) == n && !memcmp(kind_names[k], s, n)) return k;
    return -1;
}

const char *gp_reject_reason_name(gp_reject_reason r) {
    static const char *const names[GP_REJ__COUNT] = {"malformed", "time_ahead", "time_behind",
                                                     "truncated"};
    return (int)r >= 0 && r < GP_REJ__COUNT ? names[r] : "unknown";
}

/* "90s", "2.5h", "8.0d": a skew a person can read. */
static void fmt_span(char *buf, size_t cap, int64_t ns) {
    double s = (double)ns / 1e9;
    if (s < 120)
        snprintf(buf, cap, "%.0fs", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.1fmin", s / 60);
    else if (s < 172800)
        snprintf(buf, cap, "%.1fh", s / 3600);
    else
        snprintf(buf, cap, "%.1fd", s / 86400);
}

static int check_time(const char *key, int64_t t, int64_t now_ns, const gp_time_bounds *b,
                      gp_reject_reason *reason, char *err, size_t errlen) {
    if (t < 0 || now_ns <= 0) return 0; /* unknown, or no clock to compare with */
    char off[32], lim[32];
    if (t > now_ns && t - now_ns > b->ahead_ns) {
        fmt_span(off, sizeof off, t - now_ns);
        fmt_span(lim, sizeof lim, b->ahead_ns);
        *reason = GP_REJ_TIME_AHEAD;
        return fail(err, errlen,
                    "field '%s': time %lld is %s ahead of the receiver's clock (at most %s "
                    "allowed: --max-skew-ahead)",
                    key, (long long)t, off, lim);
    }
    if (b->behind_ns >= 0 && t < now_ns && now_ns - t > b->behind_ns) {
        fmt_span(off, sizeof off, now_ns - t);
        fmt_span(lim, sizeof lim, b->behind_ns);
        *reason = GP_REJ_TIME_BEHIND;
        return fail(err, errlen,
                    "field '%s': time %lld is %s behind the receiver's clock (at most %s "
                    "allowed: --max-skew-behind; replays of old logs need --accept-old)",
                    key, (long long)t, off, lim);
    }
    return 0;
}

int gp_proto_check_times(const gp_event *e, int64_t now_ns, const gp_time_bounds *b,
                         gp_reject_reason *reason, char *err, size_t errlen) {
    static const gp_time_bounds defaults = {GP_SKEW_AHEAD_DEFAULT_NS, GP_SKEW_BEHIND_DEFAULT_NS};
    gp_reject_reason dummy;
    if (!b) b = &defaults;
    if (!reason) reason = &dummy;
    int stage = e->kind == GP_EV_STAGE, step = e->kind == GP_EV_STEP;
    const struct {
        const char *key;
        int64_t t;
    } times[] = {
        {"ts", e->ts_ns},           {"start", step ? e->step_start_ns : stage ? e->start_ns : -1},
        {"arrival", e->arrival_ns}, {"first_token", e->first_token_ns},
        {"enqueue", e->enqueue_ns}, {"from", e->from_ns},
        {"to", e->to_ns},
    };
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
        if (check_time(times[i].key, times[i].t, now_ns, b, reason, err, errlen) < 0) return -1;
    return 0;
}

/* Stores value v of key f into e; returns 0 or -1 with err. */
static int apply(const field_def *f, const char *v, gp_event *e, int64_t *dur, char *err,
                 size_t errlen) {
    char *dst = (char *)e + f->off;
    int64_t i;
    double d;
    switch (f->type) {
    case F_JOBID:
        if (!valid_job_id(v))
            return fail(err, errlen, "field 'job': '%.64s' is not 1..63 bytes of [A-Za-z0-9._:@/-]",
                        v);
        snprintf(dst, f->sz, "%s", v);
        return 0;
    case F_STR:
        if (strlen(v) >= f->sz)
            return fail(err, errlen, "field '%s': value longer than %zu bytes", f->key, f->sz - 1);
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return fail(err, errlen, "field '%s': control character in value", f->key);
        snprintf(dst, f->sz, "%s", v);
        return 0;
    case F_COUNT:
    case F_SINT:
        if (parse_int(v, &i) < 0)
            return fail(err, errlen, "field '%s': '%.40s' is not an integer", f->key, v);
        if (f->type == F_COUNT && i < 0)
            return fail(err, errlen, "field '%s': %lld is negative", f->key, (long long)i);
        memcpy(dst, &i, sizeof i);
        return 0;
    case F_TIME:
        if (parse_int(v, &i) < 0)
            return fail(err, errlen, "field '%s': '%.40s' is not an integer time in ns", f->key, v);
        if (i < 0)
            return fail(err, errlen, "field '%s': time %lld is negative", f->key, (long long)i);
        memcpy(dst, &i, sizeof i);
        return 0;
    case F_DUR:
        if (parse_int(v, &i) < 0 || i < 0)
            return fail(err, errlen, "field '%s': '%.40s' is not a duration in ns (integer >= 0)",
                        f->key, v);
        *dur = i;
        return 0;
    case F_NUM:
        if (parse_num(v, &d) < 0 || d < 0)
            return fail(err, errlen, "field '%s': '%.40s' is not a number >= 0", f->key, v);
        memcpy(dst, &d, sizeof d);
        return 0;
    case F_EDGE: {
        int edge;
        if (!strcmp(v, "begin"))
            edge = GP_PH_BEGIN;
        else if (!strcmp(v, "end"))
            edge = GP_PH_END;
        else
            return fail(err, errlen, "field 'edge': '%.40s' is not begin or end", v);
        memcpy(dst, &edge, sizeof edge);
        return 0;
    }
    case F_BOOL: {
        int b;
        if (!strcmp(v, "1"))
            b = 1;
        else if (!strcmp(v, "0"))
            b = 0;
        else
            return fail(err, errlen, "field '%s': '%.40s' is not 0 or 1", f->key, v);
        memcpy(dst, &b, sizeof b);
        return 0;
    }
    case F_VER:
        if (parse_int(v, &i) < 0 || i < 1)
            return fail(err, errlen, "field 'v': '%.40s' is not a protocol version", v);
        return 0;
    case F_STATE:
        if (strcmp(v, "submitted") && strcmp(v, "allocated") && strcmp(v, "ended"))
            return fail(err, errlen, "field 'state': '%.40s' is not submitted, allocated or ended",
                        v);
        snprintf(dst, f->sz, "%s", v);
        return 0;
    case F_RESOURCE: {
        int r;
        if (!strcmp(v, "cpu"))
            r = GP_STAGE_CPU;
        else if (!strcmp(v, "gpu"))
            r = GP_STAGE_GPU;
        else
            return fail(err, errlen, "field 'resource': '%.40s' is not cpu or gpu", v);
        memcpy(dst, &r, sizeof r);
        return 0;
    }
    }
    return fail(err, errlen, "internal: field type");
}

int gp_proto_parse_line(const char *line, size_t len, int64_t now_ns, int accept_old, gp_event *out,
                        char *err, size_t errlen) {
    gp_time_bounds b = {GP_SKEW_AHEAD_DEFAULT_NS, accept_old ? -1 : GP_SKEW_BEHIND_DEFAULT_NS};
    return gp_proto_parse_line_ex(line, len, now_ns, &b, out, NULL, err, errlen);
}

int gp_proto_parse_line_ex(const char *line, size_t len, int64_t now_ns,
                           const gp_time_bounds *bounds, gp_event *out, gp_reject_reason *reason,
                           char *err, size_t errlen) {
    gp_reject_reason dummy;
    if (!reason) reason = &dummy;
    *reason = GP_REJ_MALFORMED;
    if (err && errlen) err[0] = 0;
    /* The terminator is not part of the line. */
    if (len && line[len - 1] == '\n') len--;
    if (len && line[len - 1] == '\r') len--;
    if (len > GP_PROTO_MAX_LINE)
        return fail(err, errlen, "line is %zu bytes, longer than the %d allowed", len,
                    GP_PROTO_MAX_LINE);
    size_t bad = utf8_invalid_at((const unsigned char *)line, len);
    if (bad < len)
        return fail(err, errlen, "invalid UTF-8 at byte %zu (0x%02x)", bad,
                    (unsigned char)line[bad]);
    if (memchr(line, '\0', len)) return fail(err, errlen, "NUL byte in line");

    const char *p = line, *end = line + len;
    while (p < end && is_ws(*p))
        p++;
    if (p == end || *p == '#') return 0;

    const char *kw = p;
    while (p < end && !is_ws(*p))
        p++;
    int kind = parse_kind(kw, (size_t)(p - kw));
    if (kind < 0)
        return fail(err, errlen, "unknown kind '%.*s'", (int)(p - kw > 32 ? 32 : p - kw), kw);

    gp_event e;
    gp_event_init(&e, (gp_event_kind)kind);
    uint64_t seen = 0;
    int64_t dur = -1;
    char val[GP_PROTO_MAX_LINE + 1];

    for (;;) {
        while (p < end && is_ws(*p))
            p++;
        if (p == end) break;
        const char *key = p;
        while (p < end && (islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
            p++;
        size_t klen = (size_t)(p - key);
        if (klen == 0 || p == end || *p != '=') {
            const char *t = key;
            while (t < end && !is_ws(*t))
                t++;
            return fail(err, errlen, "token '%.*s' is not key=value (keys are [a-z0-9_])",
                        (int)(t - key > 40 ? 40 : t - key), key);
        }
        p++; /* '=' */
        size_t vn = 0;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                if (p == end)
                    return fail(err, errlen, "field '%.*s': unterminated quoted value", (int)klen,
                                key);
                if (*p == '"') break;
                if (*p == '\\') {
                    if (p + 1 == end || (p[1] != '"' && p[1] != '\\'))
                        return fail(err, errlen,
                                    "field '%.*s': bad escape (only \\\" and \\\\ are allowed)",
                                    (int)klen, key);
                    p++;
                }
                val[vn++] = *p++;
            }
            p++; /* closing quote */
            if (p < end && !is_ws(*p))
                return fail(err, errlen, "field '%.*s': text after the closing quote", (int)klen,
                            key);
        } else {
            while (p < end && !is_ws(*p))
                val[vn++] = *p++;
            if (vn == 0) return fail(err, errlen, "field '%.*s': empty value", (int)klen, key);
        }
        val[vn] = 0;

        for (size_t i = 0; i < NFIELDS; i++) {
            const field_def *f = &fields[i];
            if (!(f->kinds & K(kind)) || strlen(f->key) != klen || memcmp(f->key, key, klen))
                continue;
            if (apply(f, val, &e, &dur, err, errlen) < 0) return -1;
            seen |= 1ull << i;
            break;
        } /* keys no kind knows are ignored: new keys never break old agents */
    }

    for (size_t i = 0; i < NFIELDS; i++)
        if (fields[i].required && (fields[i].kinds & K(kind)) && !(seen & (1ull << i)))
            return fail(err, errlen, "%s: missing required field '%s'", kind_names[kind],
                        fields[i].key);

    if (e.ts_ns < 0) e.ts_ns = now_ns;
    if (kind == GP_EV_STEP && e.step_start_ns < 0 && dur >= 0) {
        if (dur > e.ts_ns)
            return fail(err, errlen, "field 'dur': %lld is longer than ts", (long long)dur);
        e.step_start_ns = e.ts_ns - dur;
    }
    if (gp_proto_check_times(&e, now_ns, bounds, reason, err, errlen) < 0) return -1;
    *out = e;
    return 1;
}

/* ---- formatting ---- */

typedef struct {
    char *buf;
    size_t cap, len;
    int overflow;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
    if (b->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->overflow = 1;
        return;
    }
    b->len += (size_t)n;
}

static void put_str(sbuf *b, const char *key, const char *s) {
    if (!s[0]) return;
    int quote = 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) {
            b->overflow = 1; /* not representable */
            return;
        }
        if (c == ' ' || c == '\t' || c == '"' || c == '\\') quote = 1;
    }
    if (!quote) {
        put(b, " %s=%s", key, s);
        return;
    }
    put(b, " %s=\"", key);
    for (const char *p = s; *p; p++)
        put(b, (*p == '"' || *p == '\\') ? "\\%c" : "%c", *p);
    put(b, "\"");
}

static void put_int(sbuf *b, const char *key, int64_t v) {
    if (v >= 0) put(b, " %s=%lld", key, (long long)v);
}

/* Shortest of %.15g / %.17g that reads back to the same double. */
static void put_num(sbuf *b, const char *key, double v) {
    char t[40];
    snprintf(t, sizeof t, "%.15g", v);
    if (strtod(t, NULL) != v) snprintf(t, sizeof t, "%.17g", v);
    put(b, " %s=%s", key, t);
}

int gp_proto_format(const gp_event *e, char *buf, size_t cap) {
    if (!buf || cap == 0 || e->kind < GP_EV_HELLO || e->kind > GP_EV_ALLOC) return -1;
    sbuf b = {buf, cap, 0, 0};
    put(&b, "%s", kind_names[e->kind]);
    put_str(&b, "job", e->job_id);
    switch (e->kind) {
    case GP_EV_HELLO:
        put(&b, " v=1");
        put_int(&b, "pid", e->pid);
        put_str(&b, "host", e->host);
        put_str(&b, "unit", e->name);
        if (e->flops_per_unit > 0) put_num(&b, "flops_per_unit", e->flops_per_unit);
        if (e->slo_ttft_s > 0) put_num(&b, "slo_ttft", e->slo_ttft_s);
        if (e->slo_tpot_s > 0) put_num(&b, "slo_tpot", e->slo_tpot_s);
        if (e->slo_e2e_s > 0) put_num(&b, "slo_e2e", e->slo_e2e_s);
        if (e->bytes_per_unit > 0) put_num(&b, "bytes_per_unit", e->bytes_per_unit);
        put_str(&b, "name", e->job_name);
        put_str(&b, "user", e->user);
        break;
    case GP_EV_STEP:
        put_int(&b, "step", e->step);
        if (e->units >= 0) put_num(&b, "units", e->units);
        put_int(&b, "start", e->step_start_ns);
        break;
    case GP_EV_PHASE:
        put_str(&b, "name", e->name);
        put(&b, " edge=%s", e->edge == GP_PH_END ? "end" : "begin");
        break;
    case GP_EV_REQUEST:
        put_int(&b, "arrival", e->arrival_ns);
        put_int(&b, "first_token", e->first_token_ns);
        put_int(&b, "prompt", e->prompt_tokens);
        put_int(&b, "output", e->output_tokens);
        put(&b, " ok=%d", e->ok ? 1 : 0);
        break;
    case GP_EV_STAGE:
        put_str(&b, "stage", e->name);
        if (e->step >= 0) { /* a declaration (model/event.h) */
            put_int(&b, "pool", e->step);
            if (e->edge == GP_STAGE_CPU || e->edge == GP_STAGE_GPU)
                put(&b, " resource=%s", e->edge == GP_STAGE_GPU ? "gpu" : "cpu");
            put_str(&b, "upstream", e->worker);
            put_int(&b, "queue", e->bytes);
            break;
        }
        put_int(&b, "item", e->item);
        put_int(&b, "enqueue", e->enqueue_ns);
        put_int(&b, "start", e->start_ns);
        put_str(&b, "worker", e->worker);
        put_int(&b, "bytes", e->bytes);
        break;
    case GP_EV_RESTART:
        put_int(&b, "step", e->step);
        break;
    case GP_EV_JOB:
        put_str(&b, "state", e->name);
        put_str(&b, "name", e->job_name);
        put_str(&b, "user", e->user);
        put_str(&b, "origin", e->origin);
        if (e->exit_code != -1) put(&b, " exit=%lld", (long long)e->exit_code);
        break;
    case GP_EV_ALLOC:
        put_str(&b, "uuid", e->uuid);
        put_int(&b, "from", e->from_ns);
        put_int(&b, "to", e->to_ns);
        break;
    }
    put_int(&b, "rank", e->rank);
    put_int(&b, "seq", e->seq);
    put_int(&b, "ts", e->ts_ns);
    if (b.overflow || b.len > GP_PROTO_MAX_LINE) return -1;
    return (int)b.len;
}
