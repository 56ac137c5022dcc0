/* logs.c: training-log profiles and the reader that turns log lines into events (logs.h).
 *
 * Design: every rule of the profile is tried on every line and each match fires, so one
 * line can both end a restore phase and say which step the job resumed from. Rules are
 * POSIX regexes (regex.h from libc): no new dependency, and a user can write one without
 * learning a new syntax. Matching costs one regexec per rule per line (a few µs); training
 * logs grow by lines per second, so a live tail spends nothing noticeable. */
#include "ingest/logs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ingest/log_profiles.h"
#include "util/progress.h"

#define NS_PER_S 1000000000LL

/* ---- profiles ---------------------------------------------------------------------- */

static int set_group(gp_log_rule *r, const char *key, int v) {
    static const struct {
        const char *k;
        size_t off;
    } keys[] = {{"step", offsetof(gp_log_rule, g_step)},
                {"dur_ms", offsetof(gp_log_rule, g_dur_ms)},
                {"dur_s", offsetof(gp_log_rule, g_dur_s)},
                {"rate", offsetof(gp_log_rule, g_rate)},
                {"units", offsetof(gp_log_rule, g_units)},
                {"units_cum", offsetof(gp_log_rule, g_units_cum)},
                {"epoch", offsetof(gp_log_rule, g_epoch)},
                {"total", offsetof(gp_log_rule, g_total)}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(keys[i].k, key)) {
            *(int *)((char *)r + keys[i].off) = v;
            return 0;
        }
    return -1;
}

/* "eval_begin" -> PHASE_BEGIN eval; "checkpoint" -> checkpoint_save. */
static int parse_kind(gp_log_rule *r, const char *w) {
    if (!strcmp(w, "step")) return r->kind = GP_LR_STEP, 0;
    if (!strcmp(w, "restart")) return r->kind = GP_LR_RESTART, 0;
    size_t n = strlen(w);
    r->kind = GP_LR_PHASE_DUR;
    if (n > 6 && !strcmp(w + n - 6, "_begin"))
        r->kind = GP_LR_PHASE_BEGIN, n -= 6;
    else if (n > 4 && !strcmp(w + n - 4, "_end"))
        r->kind = GP_LR_PHASE_END, n -= 4;
    if (n == 0 || n >= sizeof r->phase) return -1;
    for (size_t i = 0; i < n; i++)
        if (!((w[i] >= 'a' && w[i] <= 'z') || w[i] == '_' || (w[i] >= '0' && w[i] <= '9')))
            return -1;
    if (n == 10 && !strncmp(w, "checkpoint", 10))
        snprintf(r->phase, sizeof r->phase, "checkpoint_save");
    else
        snprintf(r->phase, sizeof r->phase, "%.*s", (int)n, w);
    return 0;
}

static void free_profile(gp_log_profile *p) {
    for (int i = 0; i < p->n_rules; i++)
        regfree(&p->rule[i].re);
    free(p);
}

/* Parses profile text; where names the source in errors ("builtin", a path). */
static int load_text(gp_log_profiles *ps, const char *text, const char *where, char *err,
                     size_t errlen) {
    gp_log_profile *cur = NULL;
    int lineno = 0;
    const char *s = text;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char line[1024];
        lineno++;
        if (len >= sizeof line) {
            snprintf(err, errlen, "%s:%d: line longer than %zu bytes", where, lineno,
                     sizeof line - 1);
            return -1;
        }
        memcpy(line, s, len);
        line[len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        s = e ? e + 1 : s + len;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#') continue;
        if (!strncmp(p, "profile ", 8)) {
            p += 8;
            while (*p == ' ')
                p++;
            size_t nl = strcspn(p, " \t");
            if (nl == 0 || nl >= sizeof cur->name) {
                snprintf(err, errlen, "%s:%d: profile: expected a name of 1..31 bytes", where,
                         lineno);
                return -1;
            }
            cur = calloc(1, sizeof *cur);
            if (!cur) return snprintf(err, errlen, "out of memory"), -1;
            snprintf(cur->name, sizeof cur->name, "%.*s", (int)nl, p);
            p += nl;
            while (*p == ' ' || *p == '\t')
                p++;
            snprintf(cur->about, sizeof cur->about, "%s", p);
            int slot = -1;
            for (int i = 0; i < ps->n; i++)
                if (!strcmp(ps->p[i]->name, cur->name)) slot = i;
            if (slot >= 0) { /* a user profile replaces the built-in of that name */
                free_profile(ps->p[slot]);
                ps->p[slot] = cur;
            } else if (ps->n == GP_LOG_MAX_PROFILES) {
                free(cur);
                snprintf(err, errlen, "%s:%d: more than %d profiles", where, lineno,
                         GP_LOG_MAX_PROFILES);
                return -1;
            } else {
                ps->p[ps->n++] = cur;
            }
            continue;
        }
        if (!cur) {
            snprintf(err, errlen, "%s:%d: a rule before any 'profile NAME' line", where, lineno);
            return -1;
        }
        if (cur->n_rules == GP_LOG_MAX_RULES) {
            snprintf(err, errlen, "%s:%d: profile '%s': more than %d rules", where, lineno,
                     cur->name, GP_LOG_MAX_RULES);
            return -1;
        }
        gp_log_rule *r = &cur->rule[cur->n_rules];
        memset(r, 0, sizeof *r);
        char *re = strstr(p, " re=");
        if (!re) {
            snprintf(err, errlen, "%s:%d: rule without ' re=REGEX'", where, lineno);
            return -1;
        }
        *re = 0;
        re += 4;
        char *save = NULL;
        char *kind = strtok_r(p, " \t", &save);
        if (!kind || parse_kind(r, kind) != 0) {
            snprintf(err, errlen,
                     "%s:%d: kind '%s': expected step, restart, PHASE, PHASE_begin or "
                     "PHASE_end (PHASE in [a-z0-9_])",
                     where, lineno, kind ? kind : "");
            return -1;
        }
        for (char *w = strtok_r(NULL, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
            if (!strcmp(w, "implicit")) {
                r->implicit = 1;
                continue;
            }
            char *eq = strchr(w, '=');
            char *end = NULL;
            long g = eq ? strtol(eq + 1, &end, 10) : -1;
            if (eq) *eq = 0;
            if (!eq || !end || *end || g < 1 || g > 9 || set_group(r, w, (int)g) != 0) {
                snprintf(err, errlen,
                         "%s:%d: '%s': expected GROUP=N (N 1..9; GROUP step, dur_ms, dur_s, "
                         "rate, units, units_cum, epoch, total) or 'implicit'",
                         where, lineno, w);
                return -1;
            }
        }
        if (strlen(re) >= sizeof r->src) {
            snprintf(err, errlen, "%s:%d: regex longer than %zu bytes", where, lineno,
                     sizeof r->src - 1);
            return -1;
        }
        snprintf(r->src, sizeof r->src, "%s", re);
        int rc = regcomp(&r->re, re, REG_EXTENDED);
        if (rc != 0) {
            char msg[128];
            regerror(rc, &r->re, msg, sizeof msg);
            snprintf(err, errlen, "%s:%d: regex: %s", where, lineno, msg);
            return -1;
        }
        if (r->re.re_nsub > 9) {
            regfree(&r->re);
            snprintf(err, errlen, "%s:%d: regex: at most 9 groups", where, lineno);
            return -1;
        }
        cur->n_rules++;
    }
    return 0;
}

int gp_log_profiles_builtin(gp_log_profiles *ps, char *err, size_t errlen) {
    return load_text(ps, gp_log_builtin_profiles(), "builtin", err, errlen);
}

int gp_log_profiles_load(gp_log_profiles *ps, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0, n = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (n + 2 > cap) {
            size_t nc = cap ? cap * 2 : 4096;
            if (nc > (1u << 20)) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "%s: larger than 1 MiB", path);
                return -1;
            }
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                return snprintf(err, errlen, "out of memory"), -1;
            }
            buf = nb, cap = nc;
        }
        buf[n++] = (char)c;
    }
    fclose(f);
    if (!buf) return 0;
    buf[n] = 0;
    int rc = load_text(ps, buf, path, err, errlen);
    free(buf);
    return rc;
}

const gp_log_profile *gp_log_profile_find(const gp_log_profiles *ps, const char *name) {
    for (int i = 0; i < ps->n; i++)
        if (!strcmp(ps->p[i]->name, name)) return ps->p[i];
    return NULL;
}

void gp_log_profiles_free(gp_log_profiles *ps) {
    for (int i = 0; i < ps->n; i++)
        free_profile(ps->p[i]);
    ps->n = 0;
}

/* ---- timestamps -------------------------------------------------------------------- */

static int digits(const char *s, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        *v = *v * 10 + (s[i] - '0');
    }
    return 1;
}

/* YYYY-MM-DD[ T]HH:MM:SS[.,fraction] or YYYY/MM/DD HH:MM:SS within the first 96 bytes. */
int gp_log_parse_timestamp(const char *s, size_t len, int64_t *ns) {
    size_t lim = len < 96 ? len : 96;
    for (size_t i = 0; i + 19 <= len && i < lim; i++) {
        const char *p = s + i;
        int Y, M, D, h, m, sec;
        if (!(p[4] == '-' || p[4] == '/') || p[7] != p[4] || !(p[10] == ' ' || p[10] == 'T') ||
            p[13] != ':' || p[16] != ':')
            continue;
        if (!digits(p, 4, &Y) || !digits(p + 5, 2, &M) || !digits(p + 8, 2, &D) ||
            !digits(p + 11, 2, &h) || !digits(p + 14, 2, &m) || !digits(p + 17, 2, &sec))
            continue;
        if (Y < 1971 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
            continue;
        struct tm tm = {0};
        tm.tm_year = Y - 1900, tm.tm_mon = M - 1, tm.tm_mday = D;
        tm.tm_hour = h, tm.tm_min = m, tm.tm_sec = sec;
        int64_t t = (int64_t)timegm(&tm) * NS_PER_S;
        size_t k = i + 19;
        if (k < len && (s[k] == '.' || s[k] == ',')) {
            int64_t scale = NS_PER_S / 10;
            for (k++; k < len && s[k] >= '0' && s[k] <= '9'; k++) {
                t += (s[k] - '0') * scale;
                scale /= 10;
            }
        }
        *ns = t;
        return 1;
    }
    return 0;
}

/* ---- reader ------------------------------------------------------------------------ */

void gp_log_reader_init(gp_log_reader *r, const gp_log_profile *p, const char *job_id) {
    memset(r, 0, sizeof *r);
    r->prof = p;
    snprintf(r->job_id, sizeof r->job_id, "%s", job_id);
    r->last_step = r->last_raw = -1;
    r->epoch = -1;
    r->total = -1;
    r->units_cum = -1;
    r->open_since_ns = -1;
}

/* A captured group as a number; 0 when the group did not take part. */
static int group_num(const char *s, const regmatch_t *m, int g, double *out) {
    if (g <= 0 || m[g].rm_so < 0) return 0;
    char buf[48];
    int n = (int)(m[g].rm_eo - m[g].rm_so);
    if (n <= 0 || n >= (int)sizeof buf) return 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (s[m[g].rm_so + i] != ',') buf[k++] = s[m[g].rm_so + i]; /* "7,282" */
    buf[k] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end == buf || *end || errno) return 0;
    *out = v;
    return 1;
}

static void base_event(const gp_log_reader *r, gp_event *e, gp_event_kind k, int64_t ts) {
    gp_event_init(e, k);
    snprintf(e->job_id, sizeof e->job_id, "%s", r->job_id);
    e->ts_ns = ts;
}

static int emit_phase(gp_log_reader *r, const char *name, int edge, int64_t ts, gp_log_emit emit,
                      void *ctx) {
    gp_event e;
    base_event(r, &e, GP_EV_PHASE, ts);
    snprintf(e.name, sizeof e.name, "%s", name);
    e.edge = edge;
    emit(ctx, &e);
    return 1;
}

static int close_open(gp_log_reader *r, int64_t at, gp_log_emit emit, void *ctx) {
    if (!r->open_phase[0]) return 0;
    if (at < r->open_since_ns) at = r->open_since_ns;
    emit_phase(r, r->open_phase, GP_PH_END, at, emit, ctx);
    r->open_phase[0] = 0;
    r->open_since_ns = -1;
    return 1;
}

/* Time of a line: its own timestamp, the caller's clock, or the reader's clock advanced
 * by dur_ns (offline logs without timestamps). */
static int64_t line_time(gp_log_reader *r, int have_ts, int64_t ts, int64_t now_ns,
                         int64_t dur_ns) {
    if (have_ts) return ts;
    if (now_ns >= 0) return now_ns;
    return r->clock_ns + (dur_ns > 0 ? dur_ns : 0);
}

static int on_step(gp_log_reader *r, const gp_log_rule *ru, const char *s, const regmatch_t *m,
                   int have_ts, int64_t ts, int64_t now_ns, gp_log_emit emit, void *ctx) {
    double v;
    int numbered = group_num(s, m, ru->g_step, &v);
    if (ru->implicit && r->numbered) return 0; /* numbered lines say it better */
    if (group_num(s, m, ru->g_total, &v) && ru->g_total) {
        int64_t tot = (int64_t)v;
        if (r->total < 0) r->total = tot;
        if (tot != r->total) return 0; /* another bar (evaluation), not a training step */
    }
    int64_t raw;
    if (numbered) {
        group_num(s, m, ru->g_step, &v);
        raw = (int64_t)v;
        r->numbered = 1;
    } else {
        raw = r->last_raw + 1;
        if (raw < 1) raw = 1;
    }
    if (group_num(s, m, ru->g_epoch, &v)) {
        int64_t ep = (int64_t)v;
        if (r->epoch >= 0 && ep > r->epoch) r->epoch_base += r->last_raw > 0 ? r->last_raw : 0;
        r->epoch = ep;
    }
    if (raw <= 0) return 0; /* "0/100": the bar before the first step */
    int64_t step = r->epoch_base + raw;
    if (step == r->last_step) return 0; /* the same step printed again */
    int n = 0;
    int64_t iters = r->last_step >= 0 && step > r->last_step ? step - r->last_step : 1;
    double per_it_s = -1;
    if (group_num(s, m, ru->g_dur_ms, &v)) per_it_s = v / 1e3;
    if (group_num(s, m, ru->g_dur_s, &v)) per_it_s = v;
    if (group_num(s, m, ru->g_rate, &v) && v > 0) per_it_s = 1.0 / v;
    int64_t dur_ns = per_it_s >= 0 ? (int64_t)(per_it_s * (double)iters * 1e9) : -1;
    int64_t t = line_time(r, have_ts, ts, now_ns, dur_ns);
    if (r->last_step >= 0 && step < r->last_step) {
        /* The job went back: it resumed from the step before this one. */
        gp_event e;
        base_event(r, &e, GP_EV_RESTART, t - (dur_ns > 0 ? dur_ns : 0));
        e.step = step - 1;
        emit(ctx, &e);
        n++;
        r->units_cum = -1;
    }
    int64_t start = dur_ns >= 0 ? t - dur_ns : -1;
    n += close_open(r, start >= 0 ? start : t, emit, ctx);
    gp_event e;
    base_event(r, &e, GP_EV_STEP, t);
    e.step = step;
    e.step_start_ns = start;
    if (group_num(s, m, ru->g_units, &v)) e.units = v;
    if (group_num(s, m, ru->g_units_cum, &v)) {
        if (r->units_cum >= 0 && v >= r->units_cum) e.units = v - r->units_cum;
        r->units_cum = v;
    }
    emit(ctx, &e);
    r->last_step = step;
    r->last_raw = raw;
    r->clock_ns = t;
    return n + 1;
}

static int on_rule(gp_log_reader *r, const gp_log_rule *ru, const char *s, const regmatch_t *m,
                   int have_ts, int64_t ts, int64_t now_ns, gp_log_emit emit, void *ctx) {
    double v;
    int n = 0;
    switch (ru->kind) {
    case GP_LR_STEP:
        return on_step(r, ru, s, m, have_ts, ts, now_ns, emit, ctx);
    case GP_LR_RESTART: {
        if (!group_num(s, m, ru->g_step, &v)) return 0;
        int64_t t = line_time(r, have_ts, ts, now_ns, 0);
        gp_event e;
        base_event(r, &e, GP_EV_RESTART, t);
        e.step = (int64_t)v;
        emit(ctx, &e);
        /* the next step after the resume point is a step, not a second restart */
        r->last_step = r->last_raw = (int64_t)v;
        r->epoch = -1, r->epoch_base = 0;
        r->units_cum = -1;
        r->clock_ns = t;
        return 1;
    }
    case GP_LR_PHASE_BEGIN: {
        int64_t t = line_time(r, have_ts, ts, now_ns, 0);
        if (r->open_phase[0] && !strcmp(r->open_phase, ru->phase)) return 0; /* still open */
        n += close_open(r, t, emit, ctx);
        n += emit_phase(r, ru->phase, GP_PH_BEGIN, t, emit, ctx);
        snprintf(r->open_phase, sizeof r->open_phase, "%s", ru->phase);
        r->open_since_ns = t;
        r->clock_ns = t;
        return n;
    }
    case GP_LR_PHASE_END:
    case GP_LR_PHASE_DUR: {
        double dur_s = -1;
        if (group_num(s, m, ru->g_dur_s, &v)) dur_s = v;
        if (group_num(s, m, ru->g_dur_ms, &v)) dur_s = v / 1e3;
        int64_t dur_ns = dur_s >= 0 ? (int64_t)(dur_s * 1e9) : 0;
        int open_here = r->open_phase[0] && !strcmp(r->open_phase, ru->phase);
        int64_t t = line_time(r, have_ts, ts, now_ns, open_here ? 0 : dur_ns);
        if (!open_here) {
            n += close_open(r, t, emit, ctx);
            /* No begin seen: it began dur before (when stated), else at the last event. */
            int64_t b = dur_s >= 0 ? t - dur_ns : r->clock_ns;
            if (b < 0 || b > t) b = t;
            n += emit_phase(r, ru->phase, GP_PH_BEGIN, b, emit, ctx);
        }
        n += emit_phase(r, ru->phase, GP_PH_END, t, emit, ctx);
        r->open_phase[0] = 0;
        r->open_since_ns = -1;
        r->clock_ns = t;
        return n;
    }
    }
    return 0;
}

static int one_segment(gp_log_reader *r, const char *s, size_t len, int64_t now_ns,
                       gp_log_emit emit, void *ctx) {
    char buf[4096];
    if (len >= sizeof buf) len = sizeof buf - 1; /* a rule needs the head of a line */
    memcpy(buf, s, len);
    buf[len] = 0;
    int64_t ts = 0;
    int have_ts = gp_log_parse_timestamp(buf, len, &ts);
    int n = 0, hit = 0;
    for (int i = 0; i < r->prof->n_rules; i++) {
        regmatch_t m[10];
        const gp_log_rule *ru = &r->prof->rule[i];
        if (regexec(&ru->re, buf, 10, m, 0) != 0) continue;
        hit = 1;
        n += on_rule(r, ru, buf, m, have_ts, ts, now_ns, emit, ctx);
    }
    if (hit) r->matched++;
    /* a timestamped line moves the clock even when it says nothing we count */
    if (have_ts && ts > r->clock_ns) r->clock_ns = ts;
    return n;
}

int gp_log_reader_line(gp_log_reader *r, const char *line, size_t len, int64_t now_ns,
                       gp_log_emit emit, void *ctx) {
    r->lines++;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    int n = 0;
    /* tqdm redraws with '\r': each redraw is a line of its own */
    size_t a = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || line[i] == '\r') {
            if (i > a) n += one_segment(r, line + a, i - a, now_ns, emit, ctx);
            a = i + 1;
        }
    }
    return n;
}

int gp_log_reader_finish(gp_log_reader *r, gp_log_emit emit, void *ctx) {
    return close_open(r, r->clock_ns, emit, ctx);
}

/* ---- offline ----------------------------------------------------------------------- */

typedef struct {
    gp_event *v;
    size_t n, cap;
    int oom;
} ev_vec;

static void push(void *ctx, const gp_event *e) {
    ev_vec *x = ctx;
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 256;
        gp_event *nv = realloc(x->v, nc * sizeof *nv);
        if (!nv) {
            x->oom = 1;
            return;
        }
        x->v = nv, x->cap = nc;
    }
    x->v[x->n++] = *e;
}

int gp_log_read_file(const char *path, const gp_log_profile *p, const char *job_id, gp_event **out,
                     size_t *n, int *anchored, char *err, size_t errlen) {
    *out = NULL, *n = 0, *anchored = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st = {0};
    int64_t mtime_ns =
        fstat(fileno(f), &st) == 0 ? (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec : 0;
    gp_log_reader r;
    gp_log_reader_init(&r, p, job_id);
    ev_vec x = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int saw_ts = 0;
    /* Lines before the first timestamp continue from it: the reader's clock starts at
     * the first timestamp in the file (one extra pass over the head of the file). */
    while (!saw_ts && (len = getline(&line, &cap, f)) > 0) {
        int64_t t;
        if (gp_log_parse_timestamp(line, (size_t)len, &t)) saw_ts = 1, r.clock_ns = t;
    }
    rewind(f);
    gp_progress bar; /* stderr only, on a terminal, past 2 s (a multi-GB log) */
    gp_progress_start(&bar, "reading log", (double)st.st_size, 0);
    double done_bytes = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        gp_log_reader_line(&r, line, (size_t)len, -1, push, &x);
        gp_progress_update(&bar, done_bytes += (double)len);
    }
    gp_progress_end(&bar);
    gp_log_reader_finish(&r, push, &x);
    free(line);
    int rd_err = ferror(f);
    fclose(f);
    if (rd_err || x.oom) {
        free(x.v);
        snprintf(err, errlen, "%s: %s", path, x.oom ? "out of memory" : "read error");
        return -1;
    }
    if (!saw_ts && x.n > 0) {
        /* times are relative to the first line: place the last event at the mtime */
        int64_t last = 0;
        for (size_t i = 0; i < x.n; i++)
            if (x.v[i].ts_ns > last) last = x.v[i].ts_ns;
        int64_t shift = mtime_ns - last;
        for (size_t i = 0; i < x.n; i++) {
            x.v[i].ts_ns += shift;
            if (x.v[i].step_start_ns >= 0) x.v[i].step_start_ns += shift;
        }
        *anchored = 1;
    }
    *out = x.v, *n = x.n;
    return 0;
}

/* ---- summary ----------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *v, size_t n, double q) {
    if (!n) return -1;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n) return v[n - 1];
    return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

void gp_log_summarize(const gp_event *ev, size_t n, gp_log_summary *s) {
    memset(s, 0, sizeof *s);
    s->first_step = s->last_step = -1;
    s->step_p50_s = s->step_p95_s = -1;
    s->eval_s = s->checkpoint_s = s->compile_s = s->restore_s = -1;
    double *d = malloc((n ? n : 1) * sizeof *d);
    size_t nd = 0;
    int64_t t0 = -1, t1 = -1, prev_step = -1, prev_ts = -1, open_ts[4] = {-1, -1, -1, -1};
    static const char *const ph[4] = {"eval", "checkpoint_save", "compile", "checkpoint_restore"};
    double *acc[4] = {&s->eval_s, &s->checkpoint_s, &s->compile_s, &s->restore_s};
    size_t *cnt[4] = {&s->evals, &s->checkpoints, &s->compiles, NULL};
    for (size_t i = 0; i < n; i++) {
        const gp_event *e = &ev[i];
        if (t0 < 0 || e->ts_ns < t0) t0 = e->ts_ns;
        if (e->ts_ns > t1) t1 = e->ts_ns;
        if (e->kind == GP_EV_STEP) {
            s->steps++;
            if (s->first_step < 0) s->first_step = e->step;
            s->last_step = e->step;
            int64_t iters = prev_step >= 0 && e->step > prev_step ? e->step - prev_step : 1;
            /* the stated duration, else the time since the previous step line */
            int64_t start = e->step_start_ns >= 0 ? e->step_start_ns : prev_ts;
            if (start >= 0 && e->ts_ns > start && d)
                d[nd++] = (double)(e->ts_ns - start) / 1e9 / (double)iters;
            prev_step = e->step;
            prev_ts = e->ts_ns;
        } else if (e->kind == GP_EV_RESTART) {
            s->restarts++;
            prev_step = e->step;
            prev_ts = -1;
        } else if (e->kind == GP_EV_PHASE) {
            for (int k = 0; k < 4; k++) {
                if (strcmp(e->name, ph[k])) continue;
                if (e->edge == GP_PH_BEGIN) {
                    open_ts[k] = e->ts_ns;
                } else if (open_ts[k] >= 0) {
                    /* a phase with no time between its edges (no timestamps, no stated
                     * duration) is counted but its length stays unknown */
                    if (e->ts_ns > open_ts[k]) {
                        if (*acc[k] < 0) *acc[k] = 0;
                        *acc[k] += (double)(e->ts_ns - open_ts[k]) / 1e9;
                    }
                    if (cnt[k]) (*cnt[k])++;
                    open_ts[k] = -1;
                }
            }
        }
    }
    if (d && nd) {
        qsort(d, nd, sizeof *d, cmp_d);
        s->step_p50_s = pct(d, nd, 0.5);
        s->step_p95_s = pct(d, nd, 0.95);
    }
    free(d);
    s->span_s = t0 >= 0 ? (double)(t1 - t0) / 1e9 : 0;
}
