/* scenario.c: the scenario file parser, defaults, builders and validation.
 *
 * The format is line based: `[node]` and `[job ID]` headers, `key = value` assignments
 * (several per line separated by `;`), `#` starts a comment. Every value parser names the
 * file, line and key it rejects, so a user fixes a typo without reading this code. Unknown
 * keys are errors: a silently ignored misspelt key would make a simulation lie. */
#include "sim/scenario.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

const char *gp_sjob_kind_name(gp_sjob_kind k) {
    switch (k) {
    case GP_SJ_TRAINING:
        return "training";
    case GP_SJ_INFERENCE:
        return "inference";
    case GP_SJ_IDLE:
        return "idle";
    case GP_SJ_NOT_READY:
        return "not_ready";
    }
    return "unknown";
}

void gp_scenario_init(gp_scenario *sc) {
    memset(sc, 0, sizeof *sc);
    snprintf(sc->node_name, sizeof sc->node_name, "sim-node");
    sc->n_gpus = 8;
    snprintf(sc->model, sizeof sc->model, "H100-SXM");
    sc->seed = 1;
    sc->duration_ns = 3600LL * 1000000000LL;
    sc->profiling = 1;
    sc->contention = 0.6;
    sc->power_limit_until_ns = -1;
}

void gp_scenario_free(gp_scenario *sc) {
    for (int i = 0; i < sc->n_jobs; i++)
        free(sc->jobs[i].gpus);
    free(sc->jobs);
    sc->jobs = NULL;
    sc->n_jobs = sc->cap_jobs = 0;
}

void gp_scenario_job_defaults(gp_scenario_job *j, gp_sjob_kind kind) {
    j->kind = kind;
    j->submit_ns = INT64_MIN; /* = start */
    j->start_ns = 0;
    j->end_ns = -1;
    j->ready_after_ns = kind == GP_SJ_NOT_READY ? GP_SCEN_NEVER : 0;
    j->mem_frac = -1;
    j->init_ns = 0;
    j->batch_samples = 256;
    j->sample_cpu_s = 0.001;
    j->loader_workers = 8;
    j->sample_bytes = 602112; /* a 3x224x224 fp32 image */
    j->flops_per_step = 2.5e14;
    j->efficiency = 0.5;
    j->allreduce_bytes = 0;
    j->overlap = 0.8;
    j->allreduce_bw = 0;
    j->checkpoint_every = 0;
    j->checkpoint_ns = 10LL * 1000000000LL;
    j->checkpoint_bytes = -1;
    j->restore_ns = 20LL * 1000000000LL;
    j->n_restarts = 0;
    j->recovery_ns = 60LL * 1000000000LL;
    j->small_kernels = 0;
    j->kernels_per_step = 20000;
    j->launch_overhead_s = 10e-6;
    j->hbm_bytes_per_step = -1;
    j->sm_fill = -1;
    j->step_noise = 0.03;
    j->max_steps = 0;
    j->per_rank_steps = 0;
    j->straggler_rank = -1;
    j->straggler_slowdown = 1.6;
    j->straggler_from_ns = 0;
    j->straggler_until_ns = -1;
    j->rate = 2.0;
    j->trace[0] = 0;
    j->trace_speed = 1.0;
    j->prompt_tokens = 1000;
    j->output_tokens = 250;
    j->max_batch = 64;
    j->params = 8e9;
    j->weight_bytes = 0;
    j->kv_bytes_per_token = 131072; /* 8B GQA model: 32 layers x 8 kv heads x 128 x 2 x 2 B */
    j->prefill_efficiency = 0.6;
    j->decode_efficiency = 0.8;
    j->burst_every_ns = 300LL * 1000000000LL;
    j->burst_ns = 2LL * 1000000000LL;
}

gp_scenario_job *gp_scenario_add_job(gp_scenario *sc, const char *id, gp_sjob_kind kind) {
    if (sc->n_jobs == sc->cap_jobs) {
        int cap = sc->cap_jobs ? sc->cap_jobs * 2 : 8;
        gp_scenario_job *nj = realloc(sc->jobs, (size_t)cap * sizeof *nj);
        if (!nj) return NULL;
        sc->jobs = nj;
        sc->cap_jobs = cap;
    }
    gp_scenario_job *j = &sc->jobs[sc->n_jobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    snprintf(j->name, sizeof j->name, "%s", id);
    snprintf(j->user, sizeof j->user, "sim");
    gp_scenario_job_defaults(j, kind);
    return j;
}

int gp_scenario_job_set_gpus(gp_scenario_job *j, const int *idx, int n) {
    int *g = n > 0 ? malloc((size_t)n * sizeof *g) : NULL;
    if (n > 0 && !g) return -1;
    if (n > 0) memcpy(g, idx, (size_t)n * sizeof *g);
    free(j->gpus);
    j->gpus = g;
    j->n_gpus = n;
    return 0;
}

int gp_scenario_job_set_gpu_range(gp_scenario_job *j, int first, int count) {
    int *g = count > 0 ? malloc((size_t)count * sizeof *g) : NULL;
    if (count > 0 && !g) return -1;
    for (int i = 0; i < count; i++)
        g[i] = first + i;
    free(j->gpus);
    j->gpus = g;
    j->n_gpus = count;
    return 0;
}

static int valid_id(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:@/-", s[i])) return 0;
    return 1;
}

/* Prefix for messages about job j: "demo.conf:12: job 'x'" or "job 'x'". */
static void job_where(const gp_scenario *sc, const gp_scenario_job *j, char *buf, size_t cap) {
    if (sc->path[0] && j->line > 0)
        snprintf(buf, cap, "%s:%d: job '%s'", sc->path, j->line, j->id);
    else
        snprintf(buf, cap, "job '%s'", j->id);
}

int gp_scenario_validate(gp_scenario *sc, char *err, size_t errlen) {
    const char *src = sc->path[0] ? sc->path : "scenario";
    sc->spec = gp_spec_lookup(sc->model);
    if (!sc->spec) {
        snprintf(err, errlen, "%s: model '%s' is not in the spec table (src/model/spec_table.c)",
                 src, sc->model);
        return -1;
    }
    if (sc->spec->bf16_flops <= 0 && sc->spec->fp16_flops <= 0) {
        snprintf(err, errlen, "%s: model '%s' has no known peak FLOP/s", src, sc->model);
        return -1;
    }
    if (sc->n_gpus < 1 || sc->n_gpus > GP_SCEN_MAX_GPUS) {
        snprintf(err, errlen, "%s: node gpus = %d: expected 1..%d", src, sc->n_gpus,
                 GP_SCEN_MAX_GPUS);
        return -1;
    }
    if (sc->duration_ns <= 0 || sc->duration_ns > GP_SCEN_MAX_TIME_NS) {
        snprintf(err, errlen, "%s: node duration must be positive and under 30 years", src);
        return -1;
    }
    if (sc->power_limit_w != 0 &&
        (sc->power_limit_w < sc->spec->idle_w + 10 || sc->power_limit_w > sc->spec->tdp_w)) {
        snprintf(err, errlen, "%s: node power_limit %.0f W: expected %.0f..%.0f W for %s", src,
                 sc->power_limit_w, sc->spec->idle_w + 10, sc->spec->tdp_w, sc->spec->model);
        return -1;
    }
    if (sc->power_limit_from_ns < 0 ||
        (sc->power_limit_until_ns >= 0 && sc->power_limit_until_ns <= sc->power_limit_from_ns)) {
        snprintf(err, errlen, "%s: node power_limit_until must come after power_limit_from", src);
        return -1;
    }
    if (sc->contention < 0) {
        snprintf(err, errlen, "%s: node contention must be >= 0", src);
        return -1;
    }
    for (int i = 0; i < sc->n_jobs; i++) {
        gp_scenario_job *j = &sc->jobs[i];
        char w[600];
        job_where(sc, j, w, sizeof w);
        if (!valid_id(j->id)) {
            snprintf(err, errlen, "%s: the id must be 1..63 of [A-Za-z0-9._:@/-]", w);
            return -1;
        }
        for (int k = 0; k < i; k++)
            if (!strcmp(sc->jobs[k].id, j->id)) {
                snprintf(err, errlen, "%s: defined twice", w);
                return -1;
            }
        if (j->n_gpus < 1) {
            snprintf(err, errlen, "%s: key 'gpus': at least one GPU index is needed", w);
            return -1;
        }
        for (int g = 0; g < j->n_gpus; g++) {
            if (j->gpus[g] < 0 || j->gpus[g] >= sc->n_gpus) {
                snprintf(err, errlen, "%s: key 'gpus': index %d is outside the node's 0..%d", w,
                         j->gpus[g], sc->n_gpus - 1);
                return -1;
            }
            for (int h = 0; h < g; h++)
                if (j->gpus[h] == j->gpus[g]) {
                    snprintf(err, errlen, "%s: key 'gpus': index %d listed twice", w, j->gpus[g]);
                    return -1;
                }
        }
        if (j->submit_ns == INT64_MIN) j->submit_ns = j->start_ns;
        int64_t times[] = {
            j->submit_ns,      j->start_ns,
            j->end_ns,         j->init_ns,
            j->checkpoint_ns,  j->restore_ns,
            j->recovery_ns,    j->burst_ns,
            j->burst_every_ns, j->ready_after_ns == GP_SCEN_NEVER ? 0 : j->ready_after_ns};
        for (size_t t = 0; t < sizeof times / sizeof times[0]; t++)
            if (times[t] > GP_SCEN_MAX_TIME_NS || times[t] < -GP_SCEN_MAX_TIME_NS) {
                snprintf(err, errlen, "%s: a time or duration is beyond 30 years", w);
                return -1;
            }
        for (int r = 0; r < j->n_restarts && r < GP_SCEN_MAX_RESTARTS; r++)
            if (j->restart_at_ns[r] > GP_SCEN_MAX_TIME_NS) {
                snprintf(err, errlen, "%s: key 'restart_at': beyond 30 years", w);
                return -1;
            }
        if (j->start_ns < 0 || j->submit_ns > j->start_ns) {
            snprintf(err, errlen, "%s: key 'start': must be >= 0 and not before 'submit'", w);
            return -1;
        }
        if (j->end_ns >= 0 && j->end_ns <= j->start_ns) {
            snprintf(err, errlen, "%s: key 'end': must be after 'start'", w);
            return -1;
        }
        if (j->mem_frac > 1) {
            snprintf(err, errlen, "%s: key 'mem': more than the GPU's memory", w);
            return -1;
        }
        if (j->batch_samples < 1 || j->loader_workers < 1 || j->sample_cpu_s < 0 ||
            j->sample_bytes < 0 || j->flops_per_step <= 0) {
            snprintf(err, errlen,
                     "%s: batch, loader_workers and flops_per_step must be positive, "
                     "sample_cpu and sample_bytes >= 0",
                     w);
            return -1;
        }
        if (j->efficiency <= 0 || j->efficiency > 1 || j->prefill_efficiency <= 0 ||
            j->prefill_efficiency > 1 || j->decode_efficiency <= 0 || j->decode_efficiency > 1) {
            snprintf(err, errlen, "%s: efficiencies must be in (0, 1]", w);
            return -1;
        }
        if (j->straggler_rank >= j->n_gpus ||
            (j->straggler_rank >= 0 &&
             (!(j->straggler_slowdown >= 1 && j->straggler_slowdown <= 100) ||
              j->straggler_from_ns < 0 || j->straggler_from_ns > GP_SCEN_MAX_TIME_NS ||
              j->straggler_until_ns > GP_SCEN_MAX_TIME_NS ||
              (j->straggler_until_ns >= 0 && j->straggler_until_ns <= j->straggler_from_ns)))) {
            snprintf(err, errlen,
                     "%s: key 'straggler_rank' must name one of the job's %d ranks, with "
                     "straggler_slowdown in [1, 100] and straggler_until after straggler_from",
                     w, j->n_gpus);
            return -1;
        }
        if (j->overlap < 0 || j->overlap > 1 || j->allreduce_bytes < 0 || j->allreduce_bw < 0) {
            snprintf(err, errlen, "%s: key 'overlap' must be in [0, 1], all-reduce sizes >= 0", w);
            return -1;
        }
        if (j->checkpoint_every < 0 || j->checkpoint_ns < 0 || j->restore_ns < 0 ||
            j->recovery_ns < 0 || j->init_ns < 0) {
            snprintf(err, errlen, "%s: checkpoint, restore, recovery and init must be >= 0", w);
            return -1;
        }
        if (j->n_restarts < 0 || j->n_restarts > GP_SCEN_MAX_RESTARTS) {
            snprintf(err, errlen, "%s: key 'restart_at': at most %d restarts", w,
                     GP_SCEN_MAX_RESTARTS);
            return -1;
        }
        for (int r = 0; r < j->n_restarts; r++)
            if (j->restart_at_ns[r] <= j->start_ns ||
                (r > 0 && j->restart_at_ns[r] <= j->restart_at_ns[r - 1])) {
                snprintf(err, errlen,
                         "%s: key 'restart_at': times must be after 'start' and increasing", w);
                return -1;
            }
        if (j->kernels_per_step < 1 || j->launch_overhead_s < 0 || j->step_noise < 0 ||
            j->step_noise > 1 || j->max_steps < 0) {
            snprintf(err, errlen,
                     "%s: kernels_per_step >= 1, launch_overhead >= 0, step_noise in [0, 1]", w);
            return -1;
        }
        if (j->kind == GP_SJ_INFERENCE) {
            if (!j->trace[0] && j->rate <= 0) {
                snprintf(err, errlen, "%s: key 'rate': expected a positive rate or a 'trace'", w);
                return -1;
            }
            if (j->max_batch < 1 || j->params <= 0 || j->kv_bytes_per_token < 0 ||
                j->prompt_tokens < 1 || j->output_tokens < 1 || j->trace_speed <= 0) {
                snprintf(err, errlen,
                         "%s: max_batch, params, prompt_tokens, output_tokens and trace_speed "
                         "must be positive",
                         w);
                return -1;
            }
        }
        if (j->kind == GP_SJ_IDLE && (j->burst_every_ns <= 0 || j->burst_ns < 0)) {
            snprintf(err, errlen, "%s: burst_every must be positive and burst >= 0", w);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- value parsers */

static const char *skip_ws(const char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* A number followed by an optional suffix; returns the suffix (trimmed) in suf. */
static int split_number(const char *s, double *num, char *suf, size_t sufcap) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno == ERANGE || !isfinite(v)) return -1;
    const char *p = skip_ws(end);
    size_t n = strlen(p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n >= sufcap) return -1;
    memcpy(suf, p, n);
    suf[n] = 0;
    *num = v;
    return 0;
}

int gp_parse_duration_ns(const char *s, int64_t *out) {
    double v;
    char suf[16];
    if (split_number(s, &v, suf, sizeof suf) < 0) return -1;
    double mul;
    if (!suf[0] || !strcmp(suf, "s"))
        mul = 1e9;
    else if (!strcmp(suf, "ns"))
        mul = 1;
    else if (!strcmp(suf, "us"))
        mul = 1e3;
    else if (!strcmp(suf, "ms"))
        mul = 1e6;
    else if (!strcmp(suf, "m") || !strcmp(suf, "min"))
        mul = 60e9;
    else if (!strcmp(suf, "h"))
        mul = 3600e9;
    else if (!strcmp(suf, "d"))
        mul = 86400e9;
    else
        return -1;
    double ns = v * mul;
    if (fabs(ns) > GP_SCEN_MAX_TIME_NS) return -1;
    *out = (int64_t)llround(ns);
    return 0;
}

/* Plain numbers with K/M/G(=B)/T/P/E decimal suffixes: "7B" params, "6e14", "2.5T". An
 * optional trailing word after the suffix ("FLOP", "tokens") is not allowed: keep it strict. */
static int parse_scaled(const char *s, double *out) {
    double v;
    char suf[16];
    if (split_number(s, &v, suf, sizeof suf) < 0) return -1;
    static const struct {
        const char *s;
        double m;
    } t[] = {{"", 1},    {"K", 1e3},  {"k", 1e3},  {"M", 1e6}, {"G", 1e9},
             {"B", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(suf, t[i].s)) {
            *out = v * t[i].m;
            return 0;
        }
    return -1;
}

/* Bytes: "600KB", "80GiB", "1.5e9", "4 MB". Optional "/s" for rates. */
static int parse_bytes(const char *s, double *out, int rate) {
    double v;
    char suf[16];
    if (split_number(s, &v, suf, sizeof suf) < 0) return -1;
    size_t n = strlen(suf);
    if (rate && n >= 2 && !strcmp(suf + n - 2, "/s")) suf[n - 2] = 0;
    static const struct {
        const char *s;
        double m;
    } t[] = {{"", 1},      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},  {"GB", 1e9},
             {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", GIB}, {"TiB", GIB * 1024}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcasecmp(suf, t[i].s)) {
            *out = v * t[i].m;
            return 0;
        }
    return -1;
}

static int parse_bool(const char *s, int *out) {
    if (!strcasecmp(s, "yes") || !strcasecmp(s, "true") || !strcmp(s, "1") ||
        !strcasecmp(s, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(s, "no") || !strcasecmp(s, "false") || !strcmp(s, "0") ||
        !strcasecmp(s, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int parse_int64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *skip_ws(end) || errno == ERANGE) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *skip_ws(end) || errno == ERANGE || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static char *trim_ws_copy(char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
    return s;
}

/* "0,1", "0-3,6", "all" */
static int parse_gpu_list(const char *s, int n_node, int **out, int *n_out) {
    int cap = 8, n = 0;
    int *g = malloc((size_t)cap * sizeof *g);
    if (!g) return -1;
    if (!strcasecmp(s, "all")) {
        free(g);
        g = malloc((size_t)(n_node > 0 ? n_node : 1) * sizeof *g);
        if (!g) return -1;
        for (int i = 0; i < n_node; i++)
            g[i] = i;
        *out = g;
        *n_out = n_node;
        return 0;
    }
    const char *p = s;
    while (*p) {
        p = skip_ws(p);
        char *end;
        long a = strtol(p, &end, 10), b;
        if (end == p || a < 0 || a >= GP_SCEN_MAX_GPUS) goto bad;
        p = skip_ws(end);
        b = a;
        if (*p == '-') {
            p = skip_ws(p + 1);
            b = strtol(p, &end, 10);
            if (end == p || b < a || b >= GP_SCEN_MAX_GPUS) goto bad;
            p = skip_ws(end);
        }
        for (long i = a; i <= b; i++) {
            if (n == cap) {
                cap *= 2;
                int *ng = realloc(g, (size_t)cap * sizeof *ng);
                if (!ng) goto bad;
                g = ng;
            }
            g[n++] = (int)i;
        }
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    if (n == 0) goto bad;
    *out = g;
    *n_out = n;
    return 0;
bad:
    free(g);
    return -1;
}

/* "2026-01-01T00:00:00Z" or integer ns. */
static int parse_epoch(const char *s, int64_t *out) {
    int64_t v;
    if (parse_int64(s, &v) == 0) {
        *out = v;
        return 0;
    }
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *e = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!e || (*e && strcmp(e, "Z"))) return -1;
    time_t t = timegm(&tm);
    if (t == (time_t)-1) return -1;
    *out = (int64_t)t * 1000000000LL;
    return 0;
}

/* ---------------------------------------------------------------- the parser */

typedef struct {
    const char *name; /* file name for messages */
    int line;
    char *err;
    size_t errlen;
} pctx;

static int perr(pctx *c, const char *key, const char *fmt, ...) {
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key)
        snprintf(c->err, c->errlen, "%s:%d: key '%s': %s", c->name, c->line, key, msg);
    else
        snprintf(c->err, c->errlen, "%s:%d: %s", c->name, c->line, msg);
    return -1;
}

static int node_key(pctx *c, gp_scenario *sc, const char *k, const char *v) {
    if (!strcmp(k, "name")) {
        if (strlen(v) >= sizeof sc->node_name || !*v) return perr(c, k, "expected 1..63 bytes");
        snprintf(sc->node_name, sizeof sc->node_name, "%s", v);
    } else if (!strcmp(k, "gpus")) {
        int64_t n;
        if (parse_int64(v, &n) < 0 || n < 1 || n > GP_SCEN_MAX_GPUS)
            return perr(c, k, "expected an integer 1..%d", GP_SCEN_MAX_GPUS);
        sc->n_gpus = (int)n;
    } else if (!strcmp(k, "model")) {
        if (!gp_spec_lookup(v))
            return perr(c, k, "unknown GPU model '%s' (see src/model/spec_table.c)", v);
        snprintf(sc->model, sizeof sc->model, "%s", v);
    } else if (!strcmp(k, "seed")) {
        int64_t s;
        if (parse_int64(v, &s) < 0) return perr(c, k, "expected an integer");
        sc->seed = (uint64_t)s;
    } else if (!strcmp(k, "duration")) {
        if (gp_parse_duration_ns(v, &sc->duration_ns) < 0 || sc->duration_ns <= 0)
            return perr(c, k, "expected a positive duration like 90s, 30m, 1h");
    } else if (!strcmp(k, "sample_jitter")) {
        if (gp_parse_duration_ns(v, &sc->sample_jitter_ns) < 0 || sc->sample_jitter_ns < 0 ||
            sc->sample_jitter_ns >= 1000000000LL)
            return perr(c, k, "expected a duration under 1s like 5ms");
    } else if (!strcmp(k, "profiling")) {
        if (parse_bool(v, &sc->profiling) < 0) return perr(c, k, "expected yes or no");
    } else if (!strcmp(k, "start")) {
        if (!strcasecmp(v, "now")) {
            sc->start_now = 1;
        } else if (parse_epoch(v, &sc->start_epoch_ns) < 0) {
            return perr(c, k, "expected now, an ISO time like 2026-01-01T00:00:00Z, or ns");
        }
    } else if (!strcmp(k, "power_limit")) {
        char tmp[64];
        size_t n = strlen(v);
        snprintf(tmp, sizeof tmp, "%s", v);
        if (n > 1 && n < sizeof tmp && (tmp[n - 1] == 'W' || tmp[n - 1] == 'w')) tmp[n - 1] = 0;
        if (parse_double(trim_ws_copy(tmp), &sc->power_limit_w) < 0 || sc->power_limit_w <= 0)
            return perr(c, k, "expected watts like 400W");
    } else if (!strcmp(k, "power_limit_from") || !strcmp(k, "power_limit_until")) {
        int64_t *d = k[12] == 'f' ? &sc->power_limit_from_ns : &sc->power_limit_until_ns;
        if (gp_parse_duration_ns(v, d) < 0 || *d < 0)
            return perr(c, k, "expected a duration like 2m (from the start)");
    } else if (!strcmp(k, "contention")) {
        if (parse_double(v, &sc->contention) < 0 || sc->contention < 0)
            return perr(c, k, "expected a number >= 0");
    } else {
        return perr(c, k, "unknown key in [node] (see docs/scenarios.md)");
    }
    return 0;
}

#define DUR(field)                                                                                 \
    do {                                                                                           \
        if (gp_parse_duration_ns(v, &j->field) < 0 || j->field < 0)                                \
            return perr(c, k, "expected a duration >= 0 like 500ms, 30s, 5m");                     \
    } while (0)
#define POSINT(field)                                                                              \
    do {                                                                                           \
        int64_t x_;                                                                                \
        if (parse_int64(v, &x_) < 0 || x_ < 1 || x_ > 100000000)                                   \
            return perr(c, k, "expected a positive integer");                                      \
        j->field = (int)x_;                                                                        \
    } while (0)
#define RATIO(field)                                                                               \
    do {                                                                                           \
        if (parse_double(v, &j->field) < 0 || j->field < 0 || j->field > 1)                        \
            return perr(c, k, "expected a number in [0, 1]");                                      \
    } while (0)
#define SCALED(field, what)                                                                        \
    do {                                                                                           \
        if (parse_scaled(v, &j->field) < 0 || j->field < 0)                                        \
            return perr(c, k, "expected %s", what);                                                \
    } while (0)
#define BYTES(field)                                                                               \
    do {                                                                                           \
        if (parse_bytes(v, &j->field, 0) < 0 || j->field < 0)                                      \
            return perr(c, k, "expected a size like 600KB, 4GiB, 1.5e9");                          \
    } while (0)

static int job_key(pctx *c, gp_scenario *sc, gp_scenario_job *j, const char *k, const char *v) {
    if (!strcmp(k, "kind")) {
        gp_sjob_kind kinds[] = {GP_SJ_TRAINING, GP_SJ_INFERENCE, GP_SJ_IDLE, GP_SJ_NOT_READY};
        for (int i = 0; i < 4; i++)
            if (!strcmp(v, gp_sjob_kind_name(kinds[i]))) {
                /* kind first resets kind defaults, so put it first in a section */
                int64_t ra = j->ready_after_ns;
                j->kind = kinds[i];
                if (kinds[i] == GP_SJ_NOT_READY && ra == 0) j->ready_after_ns = GP_SCEN_NEVER;
                return 0;
            }
        return perr(c, k, "expected training, inference, idle or not_ready");
    } else if (!strcmp(k, "gpus")) {
        int *g, n;
        if (parse_gpu_list(v, sc->n_gpus, &g, &n) < 0)
            return perr(c, k, "expected GPU indices like 0,1 or 0-3 or all");
        free(j->gpus);
        j->gpus = g;
        j->n_gpus = n;
    } else if (!strcmp(k, "name")) {
        if (strlen(v) >= sizeof j->name || !*v) return perr(c, k, "expected 1..63 bytes");
        snprintf(j->name, sizeof j->name, "%s", v);
    } else if (!strcmp(k, "scheduler")) {
        if (!strcmp(v, "none"))
            j->scheduler_none = 1;
        else if (!strcmp(v, "slurm"))
            j->scheduler_none = 0;
        else
            return perr(c, k, "expected slurm or none");
    } else if (!strcmp(k, "user")) {
        if (strlen(v) >= sizeof j->user || !*v) return perr(c, k, "expected 1..63 bytes");
        snprintf(j->user, sizeof j->user, "%s", v);
    } else if (!strcmp(k, "submit") || !strcmp(k, "start") || !strcmp(k, "end")) {
        int64_t t;
        if (gp_parse_duration_ns(v, &t) < 0)
            return perr(c, k, "expected a time offset like -5m, 0s, 1h");
        if (!strcmp(k, "submit"))
            j->submit_ns = t;
        else if (!strcmp(k, "start")) {
            if (t < 0) return perr(c, k, "must be >= 0 (the simulation starts at 0)");
            j->start_ns = t;
        } else {
            j->end_ns = t;
        }
    } else if (!strcmp(k, "ready_after")) {
        if (!strcasecmp(v, "never"))
            j->ready_after_ns = GP_SCEN_NEVER;
        else
            DUR(ready_after_ns);
    } else if (!strcmp(k, "mem")) {
        size_t n = strlen(v);
        double x;
        if (n > 1 && v[n - 1] == '%') {
            char tmp[64];
            snprintf(tmp, sizeof tmp, "%.*s", (int)(n - 1), v);
            if (parse_double(tmp, &x) < 0 || x < 0 || x > 100)
                return perr(c, k, "expected a percentage 0..100%% or a size like 20GiB");
            j->mem_frac = x / 100;
        } else {
            if (parse_bytes(v, &x, 0) < 0 || x < 0)
                return perr(c, k, "expected a percentage like 60%% or a size like 20GiB");
            const gp_gpu_spec *sp = gp_spec_lookup(sc->model);
            double total = sp ? (double)sp->memory_bytes : 80 * GIB;
            j->mem_frac = x / total;
            if (j->mem_frac > 1) return perr(c, k, "more than the GPU's %.0f bytes", total);
        }
    } else if (!strcmp(k, "init"))
        DUR(init_ns);
    else if (!strcmp(k, "batch"))
        POSINT(batch_samples);
    else if (!strcmp(k, "sample_cpu")) {
        int64_t ns;
        if (gp_parse_duration_ns(v, &ns) < 0 || ns < 0)
            return perr(c, k, "expected a duration >= 0 like 2ms");
        j->sample_cpu_s = (double)ns / 1e9;
    } else if (!strcmp(k, "loader_workers"))
        POSINT(loader_workers);
    else if (!strcmp(k, "sample_bytes"))
        BYTES(sample_bytes);
    else if (!strcmp(k, "flops_per_step")) {
        SCALED(flops_per_step, "a positive number of FLOPs like 2.5e14 or 250T");
        if (j->flops_per_step <= 0) return perr(c, k, "expected a positive number");
    } else if (!strcmp(k, "efficiency"))
        RATIO(efficiency);
    else if (!strcmp(k, "allreduce_bytes"))
        BYTES(allreduce_bytes);
    else if (!strcmp(k, "overlap"))
        RATIO(overlap);
    else if (!strcmp(k, "allreduce_bw")) {
        if (parse_bytes(v, &j->allreduce_bw, 1) < 0 || j->allreduce_bw < 0)
            return perr(c, k, "expected a rate like 25GB/s");
    } else if (!strcmp(k, "checkpoint_every")) {
        int64_t x;
        if (parse_int64(v, &x) < 0 || x < 0 || x > 1000000000)
            return perr(c, k, "expected a number of steps >= 0");
        j->checkpoint_every = (int)x;
    } else if (!strcmp(k, "checkpoint_time"))
        DUR(checkpoint_ns);
    else if (!strcmp(k, "checkpoint_bytes"))
        BYTES(checkpoint_bytes);
    else if (!strcmp(k, "restore_time"))
        DUR(restore_ns);
    else if (!strcmp(k, "recovery"))
        DUR(recovery_ns);
    else if (!strcmp(k, "restart_at")) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", v);
        j->n_restarts = 0;
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ')
                tok++;
            if (j->n_restarts == GP_SCEN_MAX_RESTARTS)
                return perr(c, k, "at most %d restarts", GP_SCEN_MAX_RESTARTS);
            if (gp_parse_duration_ns(tok, &j->restart_at_ns[j->n_restarts]) < 0)
                return perr(c, k, "expected times like 20m, 40m");
            j->n_restarts++;
        }
    } else if (!strcmp(k, "xid_on_restart")) {
        int64_t x;
        if (parse_int64(v, &x) < 0 || x < 0 || x > 1000)
            return perr(c, k, "expected an XID code like 79 (0 = none)");
        j->xid_on_restart = (int)x;
    } else if (!strcmp(k, "small_kernels")) {
        if (parse_bool(v, &j->small_kernels) < 0) return perr(c, k, "expected yes or no");
    } else if (!strcmp(k, "kernels_per_step"))
        POSINT(kernels_per_step);
    else if (!strcmp(k, "launch_overhead")) {
        int64_t ns;
        if (gp_parse_duration_ns(v, &ns) < 0 || ns < 0)
            return perr(c, k, "expected a duration like 10us");
        j->launch_overhead_s = (double)ns / 1e9;
    } else if (!strcmp(k, "hbm_bytes"))
        BYTES(hbm_bytes_per_step);
    else if (!strcmp(k, "sm_fill")) {
        RATIO(sm_fill);
        if (j->sm_fill <= 0) return perr(c, k, "expected a number in (0, 1]");
    } else if (!strcmp(k, "step_noise"))
        RATIO(step_noise);
    else if (!strcmp(k, "max_steps")) {
        if (parse_int64(v, &j->max_steps) < 0 || j->max_steps < 0)
            return perr(c, k, "expected a number of steps >= 0");
    } else if (!strcmp(k, "per_rank_steps")) {
        if (parse_bool(v, &j->per_rank_steps) < 0) return perr(c, k, "expected yes or no");
    } else if (!strcmp(k, "straggler_rank")) {
        int64_t x;
        if (parse_int64(v, &x) < 0 || x < -1 || x >= GP_SCEN_MAX_GPUS)
            return perr(c, k, "expected a rank >= 0 (or -1 for none)");
        j->straggler_rank = (int)x;
    } else if (!strcmp(k, "straggler_slowdown")) {
        if (parse_double(v, &j->straggler_slowdown) < 0 || !(j->straggler_slowdown >= 1) ||
            j->straggler_slowdown > 100)
            return perr(c, k, "expected a factor in [1, 100] like 1.6");
    } else if (!strcmp(k, "straggler_from"))
        DUR(straggler_from_ns);
    else if (!strcmp(k, "straggler_until"))
        DUR(straggler_until_ns);
    else if (!strcmp(k, "rate")) {
        if (parse_double(v, &j->rate) < 0 || j->rate <= 0)
            return perr(c, k, "expected requests per second > 0");
    } else if (!strcmp(k, "trace")) {
        if (strlen(v) >= sizeof j->trace) return perr(c, k, "path too long");
        snprintf(j->trace, sizeof j->trace, "%s", v);
    } else if (!strcmp(k, "trace_optional")) {
        if (parse_bool(v, &j->trace_optional) < 0) return perr(c, k, "expected yes or no");
    } else if (!strcmp(k, "trace_speed")) {
        if (parse_double(v, &j->trace_speed) < 0 || j->trace_speed <= 0)
            return perr(c, k, "expected a number > 0");
    } else if (!strcmp(k, "prompt_tokens")) {
        if (parse_double(v, &j->prompt_tokens) < 0 || j->prompt_tokens < 1)
            return perr(c, k, "expected a number >= 1");
    } else if (!strcmp(k, "output_tokens")) {
        if (parse_double(v, &j->output_tokens) < 0 || j->output_tokens < 1)
            return perr(c, k, "expected a number >= 1");
    } else if (!strcmp(k, "max_batch"))
        POSINT(max_batch);
    else if (!strcmp(k, "params")) {
        SCALED(params, "a parameter count like 8B or 7e9");
        if (j->params <= 0) return perr(c, k, "expected a positive count");
    } else if (!strcmp(k, "weight_bytes"))
        BYTES(weight_bytes);
    else if (!strcmp(k, "kv_bytes_per_token"))
        BYTES(kv_bytes_per_token);
    else if (!strcmp(k, "prefill_efficiency"))
        RATIO(prefill_efficiency);
    else if (!strcmp(k, "decode_efficiency"))
        RATIO(decode_efficiency);
    else if (!strcmp(k, "slo_ttft"))
        DUR(slo_ttft_ns);
    else if (!strcmp(k, "slo_tpot"))
        DUR(slo_tpot_ns);
    else if (!strcmp(k, "slo_e2e"))
        DUR(slo_e2e_ns);
    else if (!strcmp(k, "burst_every"))
        DUR(burst_every_ns);
    else if (!strcmp(k, "burst"))
        DUR(burst_ns);
    else
        return perr(c, k, "unknown key in [job] (see docs/scenarios.md)");
    return 0;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

int gp_scenario_parse_string(const char *text, const char *name, gp_scenario *out, char *err,
                             size_t errlen) {
    gp_scenario_init(out);
    snprintf(out->path, sizeof out->path, "%s", name ? name : "scenario");
    pctx c = {out->path, 0, err, errlen};
    int section = 0; /* 0 none, 1 node, 2 job */
    int saw_node = 0;
    gp_scenario_job *job = NULL;
    int job_idx = -1;
    const char *p = text;
    char line[1024];
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        c.line++;
        if (len >= sizeof line) {
            perr(&c, NULL, "line longer than %zu bytes", sizeof line - 1);
            goto fail;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p = nl ? nl + 1 : p + len;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = trim(line);
        if (!*s) continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || *trim(close + 1)) {
                perr(&c, NULL, "section header must look like [node] or [job NAME]");
                goto fail;
            }
            *close = 0;
            char *h = trim(s + 1);
            if (!strcmp(h, "node")) {
                if (saw_node) {
                    perr(&c, NULL, "[node] appears twice");
                    goto fail;
                }
                saw_node = 1;
                section = 1;
            } else if (!strncmp(h, "job", 3) && (h[3] == ' ' || h[3] == '\t')) {
                char *id = trim(h + 3);
                if (!valid_id(id)) {
                    perr(&c, NULL, "job id '%s': expected 1..63 of [A-Za-z0-9._:@/-]", id);
                    goto fail;
                }
                for (int i = 0; i < out->n_jobs; i++)
                    if (!strcmp(out->jobs[i].id, id)) {
                        perr(&c, NULL, "job '%s' is defined twice (first at line %d)", id,
                             out->jobs[i].line);
                        goto fail;
                    }
                job = gp_scenario_add_job(out, id, GP_SJ_TRAINING);
                if (!job) {
                    perr(&c, NULL, "out of memory");
                    goto fail;
                }
                job->line = c.line;
                job_idx = out->n_jobs - 1;
                section = 2;
            } else {
                perr(&c, NULL, "unknown section [%s] (expected [node] or [job NAME])", h);
                goto fail;
            }
            continue;
        }
        /* one or more key = value separated by ';' */
        for (char *save = NULL, *a = strtok_r(s, ";", &save); a; a = strtok_r(NULL, ";", &save)) {
            a = trim(a);
            if (!*a) continue;
            char *eq = strchr(a, '=');
            if (!eq) {
                perr(&c, NULL, "expected key = value, got '%.60s'", a);
                goto fail;
            }
            *eq = 0;
            char *k = trim(a), *v = trim(eq + 1);
            if (!*v) {
                perr(&c, k, "missing value");
                goto fail;
            }
            if (section == 0) {
                perr(&c, k, "outside a section: put it under [node] or [job NAME]");
                goto fail;
            }
            int rc = section == 1 ? node_key(&c, out, k, v)
                                  : job_key(&c, out, &out->jobs[job_idx], k, v);
            if (rc < 0) goto fail;
        }
    }
    if (gp_scenario_validate(out, err, errlen) < 0) goto fail;
    return 0;
fail:
    gp_scenario_free(out);
    return -1;
}

int gp_scenario_load(const char *path, gp_scenario *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        gp_scenario_init(out);
        return -1;
    }
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            if (cap > (64u << 20)) break;
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int rerr = ferror(f) ? errno : 0; /* EISDIR for a directory */
    fclose(f);
    if (buf && (rerr || n == 0)) { /* nothing to simulate is a mistake, not a quiet node */
        if (rerr)
            snprintf(err, errlen, "%s: cannot read: %s", path, strerror(rerr));
        else
            snprintf(err, errlen, "%s: empty file, expected a scenario (docs/scenarios.md)", path);
        free(buf);
        gp_scenario_init(out);
        return -1;
    }
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        gp_scenario_init(out);
        return -1;
    }
    buf[n] = 0;
    if (strlen(buf) != n) {
        free(buf);
        snprintf(err, errlen, "%s: contains a NUL byte: not a scenario text file", path);
        gp_scenario_init(out);
        return -1;
    }
    int rc = gp_scenario_parse_string(buf, path, out, err, errlen);
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- writing */

static void w_ns(FILE *f, const char *k, int64_t v) {
    fprintf(f, "%s = %lldns\n", k, (long long)v);
}
static void w_d(FILE *f, const char *k, double v) {
    fprintf(f, "%s = %.17g\n", k, v);
}
static void w_i(FILE *f, const char *k, long long v) {
    fprintf(f, "%s = %lld\n", k, v);
}

int gp_scenario_write(const gp_scenario *sc, FILE *f) {
    fprintf(f, "# written by goodput (gp_scenario_write); see docs/scenarios.md\n[node]\n");
    fprintf(f, "name = %s\n", sc->node_name);
    w_i(f, "gpus", sc->n_gpus);
    fprintf(f, "model = %s\n", sc->model);
    w_i(f, "seed", (long long)sc->seed);
    w_ns(f, "duration", sc->duration_ns);
    fprintf(f, "profiling = %s\n", sc->profiling ? "yes" : "no");
    if (sc->sample_jitter_ns > 0) w_ns(f, "sample_jitter", sc->sample_jitter_ns);
    if (sc->start_now)
        fprintf(f, "start = now\n");
    else if (sc->start_epoch_ns)
        w_i(f, "start", (long long)sc->start_epoch_ns);
    w_d(f, "contention", sc->contention);
    if (sc->power_limit_w > 0) w_d(f, "power_limit", sc->power_limit_w);
    if (sc->power_limit_from_ns > 0) w_ns(f, "power_limit_from", sc->power_limit_from_ns);
    if (sc->power_limit_until_ns >= 0) w_ns(f, "power_limit_until", sc->power_limit_until_ns);
    for (int i = 0; i < sc->n_jobs; i++) {
        const gp_scenario_job *j = &sc->jobs[i];
        fprintf(f, "\n[job %s]\nkind = %s\n", j->id, gp_sjob_kind_name(j->kind));
        fprintf(f, "gpus = ");
        for (int g = 0; g < j->n_gpus; g++)
            fprintf(f, "%s%d", g ? "," : "", j->gpus[g]);
        fprintf(f, "\nname = %s\nuser = %s\n", j->name, j->user);
        if (j->submit_ns != INT64_MIN) w_ns(f, "submit", j->submit_ns);
        w_ns(f, "start", j->start_ns);
        if (j->end_ns >= 0) w_ns(f, "end", j->end_ns);
        if (j->ready_after_ns == GP_SCEN_NEVER)
            fprintf(f, "ready_after = never\n");
        else
            w_ns(f, "ready_after", j->ready_after_ns);
        if (j->mem_frac >= 0) fprintf(f, "mem = %.17g%%\n", j->mem_frac * 100);
        if (j->scheduler_none) fprintf(f, "scheduler = none\n");
        w_ns(f, "init", j->init_ns);
        w_i(f, "batch", j->batch_samples);
        w_ns(f, "sample_cpu", (int64_t)llround(j->sample_cpu_s * 1e9));
        w_i(f, "loader_workers", j->loader_workers);
        w_d(f, "sample_bytes", j->sample_bytes);
        w_d(f, "flops_per_step", j->flops_per_step);
        w_d(f, "efficiency", j->efficiency);
        w_d(f, "allreduce_bytes", j->allreduce_bytes);
        w_d(f, "overlap", j->overlap);
        w_d(f, "allreduce_bw", j->allreduce_bw);
        w_i(f, "checkpoint_every", j->checkpoint_every);
        w_ns(f, "checkpoint_time", j->checkpoint_ns);
        if (j->checkpoint_bytes >= 0) w_d(f, "checkpoint_bytes", j->checkpoint_bytes);
        w_ns(f, "restore_time", j->restore_ns);
        w_ns(f, "recovery", j->recovery_ns);
        w_i(f, "xid_on_restart", j->xid_on_restart);
        if (j->n_restarts > 0) {
            fprintf(f, "restart_at = ");
            for (int r = 0; r < j->n_restarts; r++)
                fprintf(f, "%s%lldns", r ? ", " : "", (long long)j->restart_at_ns[r]);
            fputc('\n', f);
        }
        fprintf(f, "small_kernels = %s\n", j->small_kernels ? "yes" : "no");
        w_i(f, "kernels_per_step", j->kernels_per_step);
        w_ns(f, "launch_overhead", (int64_t)llround(j->launch_overhead_s * 1e9));
        if (j->hbm_bytes_per_step >= 0) w_d(f, "hbm_bytes", j->hbm_bytes_per_step);
        if (j->sm_fill > 0) w_d(f, "sm_fill", j->sm_fill);
        w_d(f, "step_noise", j->step_noise);
        w_i(f, "max_steps", (long long)j->max_steps);
        if (j->per_rank_steps) fprintf(f, "per_rank_steps = yes\n");
        if (j->straggler_rank >= 0) {
            w_i(f, "straggler_rank", j->straggler_rank);
            w_d(f, "straggler_slowdown", j->straggler_slowdown);
            w_ns(f, "straggler_from", j->straggler_from_ns);
            if (j->straggler_until_ns >= 0) w_ns(f, "straggler_until", j->straggler_until_ns);
        }
        w_d(f, "rate", j->rate);
        if (j->trace[0]) fprintf(f, "trace = %s\n", j->trace);
        fprintf(f, "trace_optional = %s\n", j->trace_optional ? "yes" : "no");
        w_d(f, "trace_speed", j->trace_speed);
        w_d(f, "prompt_tokens", j->prompt_tokens);
        w_d(f, "output_tokens", j->output_tokens);
        w_i(f, "max_batch", j->max_batch);
        w_d(f, "params", j->params);
        w_d(f, "weight_bytes", j->weight_bytes);
        w_d(f, "kv_bytes_per_token", j->kv_bytes_per_token);
        w_d(f, "prefill_efficiency", j->prefill_efficiency);
        w_d(f, "decode_efficiency", j->decode_efficiency);
        if (j->slo_ttft_ns > 0) w_ns(f, "slo_ttft", j->slo_ttft_ns);
        if (j->slo_tpot_ns > 0) w_ns(f, "slo_tpot", j->slo_tpot_ns);
        if (j->slo_e2e_ns > 0) w_ns(f, "slo_e2e", j->slo_e2e_ns);
        w_ns(f, "burst_every", j->burst_every_ns);
        w_ns(f, "burst", j->burst_ns);
    }
    return ferror(f) ? -1 : 0;
}
