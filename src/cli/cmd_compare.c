/* cmd_compare.c: `goodput compare A B`: did B get faster? Judged by outcomes only.
 *
 * A and B are jobs (`ID`) or time ranges of a job (`ID@FROM..TO`, durations from the job's
 * first allocation, e.g. `train@0m..30m`), from one store (--db) or two (--db-b for B).
 * Outcome metrics: step time, throughput (units/s), TTFT and TPOT p50/p99, goodput, cost
 * and energy per unit. Each distribution metric gets a 95% confidence interval on the
 * relative difference B vs A from a moving-block bootstrap (blocks of consecutive steps or
 * requests, so slow stretches such as checkpoints stay together and the interval is not
 * falsely narrow). The verdict names the primary outcome: step time for training, TPOT p50
 * for inference. Utilization deltas are printed for context and never enter the verdict:
 * a busier GPU is not a faster job.
 *
 * A and B may also be two trace analyses (files written by `goodput trace --json`): then
 * the outcome is the profiled step time (a step lasts as long as its slowest rank), and the
 * GPU busy share of the traces is the utilization context. */
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "util/term.h"
#include "engine/accounting/cost.h"
#include "engine/accounting/job_summary.h"
#include "sim/scenario.h" /* gp_parse_duration_ns */
#include "store/store.h"

typedef struct side {
    char spec[160], id[GP_JOB_ID_MAX];
    int64_t t0, t1; /* 0/0 = whole job */
    gp_job_summary sum;
    double *step_s, *units; /* per kept step (rank 0) */
    size_t n_steps;
    double *ttft_s, *tpot_s; /* per request (tpot < 0 when one output token) */
    double *out_tokens, *req_span_s;
    size_t n_req;
    double span_s, price;
} side;

/* ---- statistics ---- */

typedef double (*stat_fn)(const side *s, const size_t *idx, size_t n);

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile_of(const double *v, const size_t *idx, size_t n, double q) {
    double *t = malloc(n * sizeof *t);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[idx[i]] >= 0) t[k++] = v[idx[i]];
    double r = -1;
    if (k) {
        qsort(t, k, sizeof *t, cmp_d);
        double pos = q * (double)(k - 1);
        size_t lo = (size_t)pos;
        r = lo + 1 < k ? t[lo] + (pos - (double)lo) * (t[lo + 1] - t[lo]) : t[lo];
    }
    free(t);
    return r;
}

static double st_step_mean(const side *s, const size_t *idx, size_t n) {
    double a = 0;
    for (size_t i = 0; i < n; i++)
        a += s->step_s[idx[i]];
    return n ? a / (double)n : -1;
}
static double st_throughput(const side *s, const size_t *idx, size_t n) {
    double u = 0, t = 0;
    for (size_t i = 0; i < n; i++)
        u += s->units[idx[i]], t += s->step_s[idx[i]];
    return t > 0 && u > 0 ? u / t : -1;
}
static double st_ttft_p50(const side *s, const size_t *idx, size_t n) {
    return quantile_of(s->ttft_s, idx, n, 0.5);
}
static double st_ttft_p99(const side *s, const size_t *idx, size_t n) {
    return quantile_of(s->ttft_s, idx, n, 0.99);
}
static double st_tpot_p50(const side *s, const size_t *idx, size_t n) {
    return quantile_of(s->tpot_s, idx, n, 0.5);
}
static double st_tpot_p99(const side *s, const size_t *idx, size_t n) {
    return quantile_of(s->tpot_s, idx, n, 0.99);
}
static double st_tokens_s(const side *s, const size_t *idx, size_t n) {
    double tok = 0;
    for (size_t i = 0; i < n; i++)
        tok += s->out_tokens[idx[i]];
    return s->span_s > 0 && s->n_req ? tok * ((double)s->n_req / (double)n) / s->span_s : -1;
}

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Moving-block bootstrap indices: blocks of L consecutive items from random starts. */
static void block_resample(size_t n, size_t *idx, uint64_t *rng) {
    size_t L = (size_t)ceil(sqrt((double)n));
    if (L > 50) L = 50;
    if (L < 1) L = 1;
    size_t k = 0;
    while (k < n) {
        size_t start = (size_t)(rng_next(rng) % (n - (n >= L ? L - 1 : 0)));
        for (size_t j = 0; j < L && k < n; j++)
            idx[k++] = (start + j) % n;
    }
}

typedef struct cmp_result {
    double a, b;        /* point estimates */
    double rel, lo, hi; /* (b - a) / a and its 95% CI */
    int ok;
} cmp_result;

static cmp_result compare_stat(const side *A, size_t na, const side *B, size_t nb, stat_fn f,
                               int boots, uint64_t seed) {
    cmp_result r = {.a = -1, .b = -1};
    if (!na || !nb) return r;
    size_t *ia = malloc(na * sizeof *ia), *ib = malloc(nb * sizeof *ib);
    double *d = malloc((size_t)boots * sizeof *d);
    if (!ia || !ib || !d) goto done;
    for (size_t i = 0; i < na; i++)
        ia[i] = i;
    for (size_t i = 0; i < nb; i++)
        ib[i] = i;
    r.a = f(A, ia, na);
    r.b = f(B, ib, nb);
    if (r.a <= 0 || r.b < 0) goto done;
    r.rel = (r.b - r.a) / r.a;
    uint64_t rng = seed ? seed : 0x9e3779b97f4a7c15ull;
    int k = 0;
    for (int i = 0; i < boots; i++) {
        block_resample(na, ia, &rng);
        block_resample(nb, ib, &rng);
        double a = f(A, ia, na), b = f(B, ib, nb);
        if (a > 0 && b >= 0) d[k++] = (b - a) / a;
    }
    if (k >= 20) {
        qsort(d, (size_t)k, sizeof *d, cmp_d);
        r.lo = d[(size_t)(0.025 * (k - 1))];
        r.hi = d[(size_t)(0.975 * (k - 1))];
        r.ok = 1;
    }
done:
    free(ia), free(ib), free(d);
    return r;
}

/* ---- loading one side ---- */

static int parse_side(const char *spec, side *s, char *err, size_t errlen) {
    snprintf(s->spec, sizeof s->spec, "%s", spec);
    const char *at = strchr(spec, '@');
    size_t idlen = at ? (size_t)(at - spec) : strlen(spec);
    if (idlen == 0 || idlen >= sizeof s->id) {
        snprintf(err, errlen, "'%s': expected JOB or JOB@FROM..TO", spec);
        return -1;
    }
    memcpy(s->id, spec, idlen);
    s->id[idlen] = 0;
    s->t0 = s->t1 = 0;
    if (at) {
        const char *dots = strstr(at + 1, "..");
        char from[32], to[32];
        if (!dots || (size_t)(dots - at - 1) >= sizeof from || strlen(dots + 2) >= sizeof to) {
            snprintf(err, errlen, "'%s': a range is JOB@FROM..TO, e.g. train@0m..30m", spec);
            return -1;
        }
        snprintf(from, sizeof from, "%.*s", (int)(dots - at - 1), at + 1);
        snprintf(to, sizeof to, "%s", dots + 2);
        if (gp_parse_duration_ns(from, &s->t0) < 0 || gp_parse_duration_ns(to, &s->t1) < 0 ||
            s->t1 <= s->t0) {
            snprintf(
                err, errlen,
                "'%s': FROM and TO are durations from the job's start (0m, 30m, 2h), FROM < TO",
                spec);
            return -1;
        }
        if (s->t0 == 0) s->t0 = 1; /* keep "range given" distinct from "whole job" */
    }
    return 0;
}

static int load_side(gp_store *st, side *s, double price_override, char *err, size_t errlen) {
    gp_job j;
    int found = gp_store_get_job(st, s->id, &j);
    if (found <= 0) {
        snprintf(err, errlen, "job '%s' is not in %s", s->id, gp_store_path(st));
        return -1;
    }
    gp_alloc *al = NULL;
    size_t na = 0;
    gp_store_job_allocs(st, s->id, &al, &na);
    int64_t start = -1;
    for (size_t i = 0; i < na; i++)
        if (start < 0 || al[i].from_ns < start) start = al[i].from_ns;
    free(al);
    if (start < 0) start = j.allocated_ns;
    gp_summary_opts so = {0};
    if (s->t1 > 0) {
        so.t0_ns = start + (s->t0 == 1 ? 0 : s->t0);
        so.t1_ns = start + s->t1;
    }
    if (gp_job_summary_compute(st, s->id, &so, &s->sum, err, errlen) != 0) return -1;
    gp_device *devs = NULL;
    size_t nd = 0;
    const gp_gpu_spec *spec = NULL;
    if (gp_store_list_devices(st, &devs, &nd) == 0 && nd) spec = devs[0].spec;
    free(devs);
    s->price = gp_price_per_gpu_h(spec, price_override);
    gp_event *ev = NULL;
    size_t ne = 0;
    if (gp_store_job_events(st, s->id, 0, &ev, &ne) != 0) {
        snprintf(err, errlen, "store: %s", gp_store_errmsg(st));
        return -1;
    }
    s->step_s = calloc(ne + 1, sizeof(double));
    s->units = calloc(ne + 1, sizeof(double));
    s->ttft_s = calloc(ne + 1, sizeof(double));
    s->tpot_s = calloc(ne + 1, sizeof(double));
    s->out_tokens = calloc(ne + 1, sizeof(double));
    if (!s->step_s || !s->units || !s->ttft_s || !s->tpot_s || !s->out_tokens) {
        free(ev);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t prev_end = -1, first = -1, last = -1;
    for (size_t i = 0; i < ne; i++) {
        const gp_event *e = &ev[i];
        if (so.t1_ns > 0 && (e->ts_ns < so.t0_ns || e->ts_ns >= so.t1_ns)) continue;
        if (e->kind == GP_EV_STEP && e->rank <= 0) {
            int64_t st0 = e->step_start_ns >= 0 ? e->step_start_ns : prev_end;
            prev_end = e->ts_ns;
            if (st0 < 0 || e->ts_ns <= st0) continue;
            s->step_s[s->n_steps] = (e->ts_ns - st0) / 1e9;
            s->units[s->n_steps] = e->units > 0 ? e->units : 0;
            s->n_steps++;
        } else if (e->kind == GP_EV_RESTART) {
            prev_end = -1;
        } else if (e->kind == GP_EV_REQUEST && e->ok) {
            size_t k = s->n_req++;
            s->ttft_s[k] = e->first_token_ns >= 0 && e->arrival_ns >= 0
                               ? (e->first_token_ns - e->arrival_ns) / 1e9
                               : -1;
            s->tpot_s[k] =
                e->output_tokens > 1 && e->first_token_ns >= 0
                    ? (e->ts_ns - e->first_token_ns) / 1e9 / (double)(e->output_tokens - 1)
                    : -1;
            s->out_tokens[k] = (double)e->output_tokens;
            if (first < 0) first = e->arrival_ns >= 0 ? e->arrival_ns : e->ts_ns;
            last = e->ts_ns;
        }
    }
    free(ev);
    s->span_s = last > first ? (last - first) / 1e9 : 0;
    return 0;
}

static void free_side(side *s) {
    free(s->step_s), free(s->units), free(s->ttft_s), free(s->tpot_s), free(s->out_tokens);
}

/* A `goodput trace --json` document: step i's time is the longest dur_us of step i over
 * the ranks (ranks run in lock step; the slowest sets the pace). */
static int load_trace_side(const char *path, side *s, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    json_t *ranks = root ? json_object_get(root, "ranks") : NULL;
    if (!json_is_array(ranks)) {
        snprintf(err, errlen, "%s: not a `goodput trace --json` document (%s)", path,
                 root ? "no 'ranks'" : je.text);
        json_decref(root);
        return -1;
    }
    snprintf(s->spec, sizeof s->spec, "%s", path);
    memset(&s->sum, 0, sizeof s->sum);
    s->sum.gp.goodput = s->sum.mean_sm_active = s->sum.mean_tensor_active =
        s->sum.mean_dram_active = -1;
    s->sum.energy_kwh = -1;
    size_t max_steps = 0, i;
    json_t *r;
    json_array_foreach(ranks, i, r) {
        size_t n = json_array_size(json_object_get(r, "steps"));
        if (n > max_steps) max_steps = n;
    }
    s->step_s = calloc(max_steps + 1, sizeof(double));
    s->units = calloc(max_steps + 1, sizeof(double));
    if (!s->step_s || !s->units) {
        json_decref(root);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    double busy = 0, span = 0;
    json_array_foreach(ranks, i, r) {
        json_t *steps = json_object_get(r, "steps"), *st;
        size_t k;
        json_array_foreach(steps, k, st) {
            double d = json_number_value(json_object_get(st, "dur_us")) / 1e6;
            if (d > s->step_s[k]) s->step_s[k] = d;
        }
        json_t *t = json_object_get(r, "temporal");
        span += json_number_value(json_object_get(t, "span_us"));
        busy += json_number_value(json_object_get(t, "span_us")) -
                json_number_value(json_object_get(t, "idle_us"));
    }
    for (size_t k = 0; k < max_steps; k++)
        if (s->step_s[k] > 0) s->step_s[s->n_steps++] = s->step_s[k];
    s->sum.mean_gpu_util = span > 0 ? busy / span : -1;
    json_decref(root);
    return 0;
}

static int is_trace_json(const char *p) {
    size_t n = strlen(p);
    return n > 5 && strcmp(p + n - 5, ".json") == 0 && access(p, R_OK) == 0;
}

/* ---- output ---- */

static json_t *jnum(double v) {
    return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

static void row(FILE *f, json_t *arr, const char *name, const cmp_result *r, int lower_better) {
    char a[32] = "-", b[32] = "-", d[64] = "-";
    if (r->a >= 0) snprintf(a, sizeof a, "%.4g", r->a);
    if (r->b >= 0) snprintf(b, sizeof b, "%.4g", r->b);
    if (r->a > 0 && r->b >= 0 && r->ok)
        snprintf(d, sizeof d, "%+.1f%% [%+.1f%%, %+.1f%%]", 100 * r->rel, 100 * r->lo, 100 * r->hi);
    else if (r->a > 0 && r->b >= 0)
        snprintf(d, sizeof d, "%+.1f%%", 100 * r->rel);
    if (f && (r->a >= 0 || r->b >= 0)) fprintf(f, "  %-28s %12s %12s   %s\n", name, a, b, d);
    if (arr && (r->a >= 0 || r->b >= 0))
        json_array_append_new(arr,
                              json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:b}", "metric", name, "a",
                                        jnum(r->a), "b", jnum(r->b), "relative_change",
                                        r->a > 0 && r->b >= 0 ? json_real(r->rel) : json_null(),
                                        "ci95_low", r->ok ? json_real(r->lo) : json_null(),
                                        "ci95_high", r->ok ? json_real(r->hi) : json_null(),
                                        "lower_is_better", lower_better));
}

static cmp_result point(double a, double b) {
    cmp_result r = {.a = a, .b = b};
    if (a > 0 && b >= 0) r.rel = (b - a) / a;
    return r;
}

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: goodput compare --db PATH [--db-b PATH] A B [--json] [--price USD] [--boot N] "
        "[--seed N]\n"
        "                       [--wide]\n"
        "       goodput compare TRACE_A.json TRACE_B.json [--json]   (`goodput trace --json` "
        "files)\n\n"
        "Did B do better than A? A and B are jobs (ID) or time ranges of a job\n"
        "(ID@FROM..TO, durations from the job's start, e.g. train@0m..30m). Compares\n"
        "outcomes: step time, throughput, TTFT/TPOT p50/p99, goodput, cost and energy per\n"
        "unit, with 95%% confidence intervals (moving-block bootstrap) and a verdict such as\n"
        "\"B is 12%% +- 3%% faster per step\". Utilization deltas are shown but never decide.\n\n"
        "  --db PATH      store holding A (and B unless --db-b)\n"
        "  --db-b PATH    store holding B\n"
        "  --json         machine-readable output\n"
        "  --price USD    price per GPU-hour (default: the price table by GPU model)\n"
        "  --boot N       bootstrap resamples (default 1000)\n"
        "  --seed N       bootstrap seed (default fixed: results are reproducible)\n"
        "  --wide         text wider than 100 columns (lines not wrapped)\n");
}

int gp_cmd_compare(int argc, char **argv) {
    const char *db = NULL, *db_b = NULL;
    int json = 0, boots = 1000, wide = 0;
    double price = 0;
    uint64_t seed = 0;
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"db-b", required_argument, 0, 'D'},
                                         {"json", no_argument, 0, 'J'},
                                         {"price", required_argument, 0, 'p'},
                                         {"boot", required_argument, 0, 'b'},
                                         {"seed", required_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'},
                                         {"wide", no_argument, 0, 'w'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'w':
            wide = 1;
            break;
        case 'D':
            db_b = optarg;
            break;
        case 'J':
            json = 1;
            break;
        case 'p':
            price = strtod(optarg, &end);
            if (*end || price <= 0) {
                fprintf(stderr, "goodput compare: --price '%s': expected USD per GPU-hour > 0\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'b':
            boots = (int)strtol(optarg, &end, 10);
            if (*end || boots < 100 || boots > 100000) {
                fprintf(stderr, "goodput compare: --boot '%s': expected 100..100000\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 's':
            seed = strtoull(optarg, NULL, 10);
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(
                stderr,
                "goodput compare: unknown or incomplete option '%s' (see goodput compare --help)\n",
                argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    char err[512];
    side A = {0}, B = {0};
    int traces =
        argc - optind == 2 && is_trace_json(argv[optind]) && is_trace_json(argv[optind + 1]);
    if (argc - optind != 2 || (!db && !traces)) {
        fprintf(stderr,
                "goodput compare: need --db PATH and two things to compare, A and B, or two "
                "`goodput trace --json` files (see --help)\n");
        return GP_EXIT_USAGE;
    }
    if (traces) {
        if (load_trace_side(argv[optind], &A, err, sizeof err) ||
            load_trace_side(argv[optind + 1], &B, err, sizeof err)) {
            fprintf(stderr, "goodput compare: %s\n", err);
            free_side(&A), free_side(&B);
            return GP_EXIT_INPUT;
        }
    } else if (parse_side(argv[optind], &A, err, sizeof err) ||
               parse_side(argv[optind + 1], &B, err, sizeof err)) {
        fprintf(stderr, "goodput compare: %s\n", err);
        return GP_EXIT_USAGE;
    }
    gp_store *sa = NULL, *sb = NULL;
    int rc = GP_EXIT_INPUT;
    if (!traces) {
        if (gp_store_open(db, GP_STORE_READONLY, &sa, err, sizeof err) != 0) goto out;
        if (db_b && gp_store_open(db_b, GP_STORE_READONLY, &sb, err, sizeof err) != 0) goto out;
        if (load_side(sa, &A, price, err, sizeof err) ||
            load_side(sb ? sb : sa, &B, price, err, sizeof err))
            goto out;
    }

    int training = A.n_steps >= 2 && B.n_steps >= 2;
    int inference = A.n_req >= 2 && B.n_req >= 2;
    if (!training && !inference && traces) {
        snprintf(err, sizeof err,
                 "the traces hold %zu and %zu profiled steps; a comparison needs at least 2 "
                 "each (profile more steps: torch.profiler schedule active=N)",
                 A.n_steps, B.n_steps);
        goto out;
    }
    if (!training && !inference) {
        snprintf(err, sizeof err,
                 "no common outcome to compare: A has %zu steps and %zu requests, B %zu and %zu "
                 "(workloads report them with the event protocol, docs/protocol.md)",
                 A.n_steps, A.n_req, B.n_steps, B.n_req);
        goto out;
    }
    FILE *f = json ? NULL : stdout;
    json_t *root = json ? json_object() : NULL, *arr = json ? json_array() : NULL;
    if (f) {
        gp_wrap_printf(f, 4, gp_text_width(wide), "goodput compare: A = %s (%s), B = %s (%s)",
                       A.spec, gp_job_kind_name(A.sum.gp.kind), B.spec,
                       gp_job_kind_name(B.sum.gp.kind));
        fputc('\n', f);
        fprintf(f, "  %-28s %12s %12s   %s\n", "outcome", "A", "B", "B vs A (95% CI)");
    }
    cmp_result primary = {0};
    const char *unit = A.sum.job.unit_name[0] ? A.sum.job.unit_name : "units";
    double units_a = 0, units_b = 0;
    if (training) {
        primary = compare_stat(&A, A.n_steps, &B, B.n_steps, st_step_mean, boots, seed);
        row(f, arr, "step time (s, mean)", &primary, 1);
        cmp_result tp = compare_stat(&A, A.n_steps, &B, B.n_steps, st_throughput, boots, seed + 1);
        char name[128];
        snprintf(name, sizeof name, "throughput (%s/s)", unit);
        row(f, arr, name, &tp, 0);
        units_a = A.sum.gp.units, units_b = B.sum.gp.units;
    }
    if (inference) {
        cmp_result t50 = compare_stat(&A, A.n_req, &B, B.n_req, st_tpot_p50, boots, seed + 2);
        if (!training) primary = t50;
        cmp_result r;
        r = compare_stat(&A, A.n_req, &B, B.n_req, st_ttft_p50, boots, seed + 3);
        row(f, arr, "TTFT p50 (s)", &r, 1);
        r = compare_stat(&A, A.n_req, &B, B.n_req, st_ttft_p99, boots, seed + 4);
        row(f, arr, "TTFT p99 (s)", &r, 1);
        row(f, arr, "TPOT p50 (s)", &t50, 1);
        r = compare_stat(&A, A.n_req, &B, B.n_req, st_tpot_p99, boots, seed + 5);
        row(f, arr, "TPOT p99 (s)", &r, 1);
        r = compare_stat(&A, A.n_req, &B, B.n_req, st_tokens_s, boots, seed + 6);
        row(f, arr, "output tokens/s", &r, 0);
        if (!training) {
            units_a = A.sum.gp.good_tokens > 0 ? A.sum.gp.good_tokens : A.sum.gp.tokens;
            units_b = B.sum.gp.good_tokens > 0 ? B.sum.gp.good_tokens : B.sum.gp.tokens;
            unit = "tokens";
        }
    }
    cmp_result g = point(A.sum.gp.goodput, B.sum.gp.goodput);
    row(f, arr, "goodput", &g, 0);
    cmp_result cost =
        point(units_a > 0 && A.price > 0 ? A.price * A.sum.allocated_gpu_h / units_a * 1e6 : -1,
              units_b > 0 && B.price > 0 ? B.price * B.sum.allocated_gpu_h / units_b * 1e6 : -1);
    char name[128];
    snprintf(name, sizeof name, "cost (USD per 1M %s)", unit);
    row(f, arr, name, &cost, 1);
    cmp_result en =
        point(units_a > 0 && A.sum.energy_kwh >= 0 ? A.sum.energy_kwh * 3.6e6 / units_a : -1,
              units_b > 0 && B.sum.energy_kwh >= 0 ? B.sum.energy_kwh * 3.6e6 / units_b : -1);
    snprintf(name, sizeof name, "energy (J per unit of %s)", unit);
    row(f, arr, name, &en, 1);

    /* Utilization: context only. */
    json_t *util = json ? json_array() : NULL;
    if (f) fprintf(f, "\n  utilization (context only; never used for the verdict):\n");
    cmp_result u;
    u = point(A.sum.mean_gpu_util, B.sum.mean_gpu_util);
    row(f, util, "mean gpu_util", &u, 0);
    u = point(A.sum.mean_sm_active, B.sum.mean_sm_active);
    row(f, util, "mean sm_active", &u, 0);
    u = point(A.sum.mean_tensor_active, B.sum.mean_tensor_active);
    row(f, util, "mean tensor_active", &u, 0);
    u = point(A.sum.mean_dram_active, B.sum.mean_dram_active);
    row(f, util, "mean dram_active", &u, 0);

    /* Verdict: faster = lower step time (or TPOT); speedup = -(relative change). */
    char verdict[256];
    const char *what = training ? "per step" : "per output token (TPOT p50)";
    if (!primary.ok) {
        snprintf(verdict, sizeof verdict, "no verdict: too few %s for a confidence interval",
                 training ? "steps" : "requests");
    } else {
        double speed = -primary.rel, lo = -primary.hi, hi = -primary.lo;
        double pm = (hi - lo) / 2;
        if (lo > 0)
            snprintf(verdict, sizeof verdict, "B is %.1f%% ± %.1f%% faster %s", 100 * speed,
                     100 * pm, what);
        else if (hi < 0)
            snprintf(verdict, sizeof verdict, "B is %.1f%% ± %.1f%% slower %s", -100 * speed,
                     100 * pm, what);
        else
            snprintf(verdict, sizeof verdict,
                     "no clear difference %s: %+.1f%% ± %.1f%% (the 95%% CI includes 0)", what,
                     100 * speed, 100 * pm);
    }
    if (f) {
        fputc('\n', f);
        gp_wrap_print(f, "verdict: ", 4, verdict, gp_text_width(wide));
        fprintf(f, "  (95%% CI from %d moving-block bootstrap resamples over %zu and %zu %s)\n",
                boots, training ? A.n_steps : A.n_req, training ? B.n_steps : B.n_req,
                training ? "steps" : "requests");
    }
    if (json) {
        json_object_set_new(root, "a",
                            json_pack("{s:s, s:s, s:I, s:I}", "spec", A.spec, "kind",
                                      gp_job_kind_name(A.sum.gp.kind), "steps",
                                      (json_int_t)A.n_steps, "requests", (json_int_t)A.n_req));
        json_object_set_new(root, "b",
                            json_pack("{s:s, s:s, s:I, s:I}", "spec", B.spec, "kind",
                                      gp_job_kind_name(B.sum.gp.kind), "steps",
                                      (json_int_t)B.n_steps, "requests", (json_int_t)B.n_req));
        json_object_set_new(root, "outcomes", arr);
        json_object_set_new(root, "utilization_context_only", util);
        json_object_set_new(root, "verdict", json_string(verdict));
        json_object_set_new(
            root, "primary",
            json_pack("{s:s, s:o, s:o, s:o}", "metric",
                      training ? "step_time_mean_s" : "tpot_p50_s", "speedup",
                      primary.ok ? json_real(-primary.rel) : json_null(), "speedup_ci95_low",
                      primary.ok ? json_real(-primary.hi) : json_null(), "speedup_ci95_high",
                      primary.ok ? json_real(-primary.lo) : json_null()));
        json_dumpf(root, stdout,
                   JSON_INDENT(2) | JSON_REAL_PRECISION(
                                        13) /* as the API (serve/api.c): one number, one text */);
        fputc('\n', stdout);
        json_decref(root);
    }
    rc = GP_EXIT_OK;
out:
    if (rc != GP_EXIT_OK) fprintf(stderr, "goodput compare: %s\n", err);
    free_side(&A), free_side(&B);
    gp_store_close(sa);
    gp_store_close(sb);
    return rc;
}
