/* scrape_parse.c: one /metrics page -> a snapshot (see scrape.h).
 *
 * The parse uses util/promtext (streaming Prometheus text parser). Each sample is looked up
 * in one table of known metric families (vLLM v0/v1, SGLang, TGI, Triton) and added into
 * its slot twice: once into the page's total and once into the slot of its (engine, model)
 * label pair, so data-parallel engines stay apart while the total keeps its old meaning.
 * Series that differ only by other labels (finished_reason, le, version, ...) are summed.
 * Histogram buckets are summed by their `le` bound. Ratio gauges (KV-cache usage) are not
 * summable: the total takes the largest engine's value.
 *
 * A sample whose name carries a known server's prefix (vllm:, sglang:, tgi_, nv_inference_)
 * but no family we read is not dropped silently: its family name goes to the snapshot's
 * `unknown` list, which the agent prints once with --verbose.
 *
 * Family names are those the servers document: vLLM vllm/v1/metrics/loggers.py
 * (PrometheusStatLogger, labels model_name and engine) and vllm/v1/spec_decode/metrics.py;
 * SGLang docs "Production Metrics"; TGI router metrics (metrics-rs names, counters without
 * _total); Triton docs "Metrics" (nv_inference_*, labels model and version). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/scrape.h"
#include "util/promtext.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

typedef enum { K_COUNTER, K_GAUGE, K_RATIO, K_HIST, K_FINISHED, K_HIST_SUM_TO } kind;

typedef struct {
    const char *name;
    gp_scrape_flavor flavor;
    kind k;
    int slot;  /* counter / gauge / hist index */
    int alt;   /* 1: used only when the preferred family of the same slot is absent */
    int slot2; /* K_HIST_SUM_TO: also feed this counter with the histogram's sum */
} family;

#define V GP_SCRAPE_VLLM
#define S GP_SCRAPE_SGLANG
#define T GP_SCRAPE_TGI
#define N GP_SCRAPE_TRITON
static const family families[] = {
    /* vLLM v0 and v1 (LLM NIMs expose the same names) */
    {"vllm:prompt_tokens_total", V, K_COUNTER, GP_SC_PROMPT, 0, 0},
    {"vllm:generation_tokens_total", V, K_COUNTER, GP_SC_GEN, 0, 0},
    {"vllm:request_success_total", V, K_FINISHED, 0, 0, 0},
    {"vllm:num_preemptions_total", V, K_COUNTER, GP_SC_PREEMPT, 0, 0},
    {"vllm:prefix_cache_queries_total", V, K_COUNTER, GP_SC_PREFIX_Q, 0, 0},
    {"vllm:gpu_prefix_cache_queries_total", V, K_COUNTER, GP_SC_PREFIX_Q, 1, 0},
    {"vllm:prefix_cache_hits_total", V, K_COUNTER, GP_SC_PREFIX_HIT, 0, 0},
    {"vllm:gpu_prefix_cache_hits_total", V, K_COUNTER, GP_SC_PREFIX_HIT, 1, 0},
    {"vllm:spec_decode_num_draft_tokens_total", V, K_COUNTER, GP_SC_SPEC_DRAFT, 0, 0},
    {"vllm:spec_decode_num_accepted_tokens_total", V, K_COUNTER, GP_SC_SPEC_ACCEPT, 0, 0},
    {"vllm:num_requests_running", V, K_GAUGE, GP_SG_RUNNING, 0, 0},
    {"vllm:num_requests_waiting", V, K_GAUGE, GP_SG_WAITING, 0, 0},
    {"vllm:kv_cache_usage_perc", V, K_RATIO, GP_SG_KV_USAGE, 0, 0},
    {"vllm:gpu_cache_usage_perc", V, K_RATIO, GP_SG_KV_USAGE, 1, 0},
    {"vllm:time_to_first_token_seconds", V, K_HIST, GP_SH_TTFT, 0, 0},
    {"vllm:inter_token_latency_seconds", V, K_HIST, GP_SH_ITL, 0, 0},
    {"vllm:time_per_output_token_seconds", V, K_HIST, GP_SH_ITL, 1, 0},
    {"vllm:e2e_request_latency_seconds", V, K_HIST, GP_SH_E2E, 0, 0},
    {"vllm:request_queue_time_seconds", V, K_HIST, GP_SH_QUEUE, 0, 0},
    {"vllm:request_prefill_time_seconds", V, K_HIST, GP_SH_PREFILL, 0, 0},
    {"vllm:request_decode_time_seconds", V, K_HIST, GP_SH_DECODE, 0, 0},
    {"vllm:request_prompt_tokens", V, K_HIST, GP_SH_PROMPT_LEN, 0, 0},
    {"vllm:request_generation_tokens", V, K_HIST, GP_SH_GEN_LEN, 0, 0},
    /* SGLang */
    {"sglang:prompt_tokens_total", S, K_COUNTER, GP_SC_PROMPT, 0, 0},
    {"sglang:generation_tokens_total", S, K_COUNTER, GP_SC_GEN, 0, 0},
    {"sglang:num_requests_total", S, K_COUNTER, GP_SC_REQ_TOTAL, 0, 0},
    {"sglang:num_aborted_requests_total", S, K_COUNTER, GP_SC_REQ_ERR, 0, 0},
    {"sglang:cached_tokens_total", S, K_COUNTER, GP_SC_PREFIX_HIT, 0, 0},
    {"sglang:num_running_reqs", S, K_GAUGE, GP_SG_RUNNING, 0, 0},
    {"sglang:num_queue_reqs", S, K_GAUGE, GP_SG_WAITING, 0, 0},
    {"sglang:token_usage", S, K_RATIO, GP_SG_KV_USAGE, 0, 0},
    {"sglang:time_to_first_token_seconds", S, K_HIST, GP_SH_TTFT, 0, 0},
    {"sglang:inter_token_latency_seconds", S, K_HIST, GP_SH_ITL, 0, 0},
    {"sglang:time_per_output_token_seconds", S, K_HIST, GP_SH_ITL, 1, 0},
    {"sglang:e2e_request_latency_seconds", S, K_HIST, GP_SH_E2E, 0, 0},
    {"sglang:queue_time_seconds", S, K_HIST, GP_SH_QUEUE, 0, 0},
    /* TGI (metrics-rs names: counters without _total) */
    {"tgi_request_success", T, K_COUNTER, GP_SC_REQ_OK, 0, 0},
    {"tgi_request_failure", T, K_COUNTER, GP_SC_REQ_ERR, 0, 0},
    {"tgi_request_count", T, K_COUNTER, GP_SC_REQ_TOTAL, 0, 0},
    {"tgi_batch_current_size", T, K_GAUGE, GP_SG_RUNNING, 0, 0},
    {"tgi_queue_size", T, K_GAUGE, GP_SG_WAITING, 0, 0},
    {"tgi_request_duration", T, K_HIST, GP_SH_E2E, 0, 0},
    {"tgi_request_queue_duration", T, K_HIST, GP_SH_QUEUE, 0, 0},
    {"tgi_request_mean_time_per_token_duration", T, K_HIST, GP_SH_ITL, 0, 0},
    {"tgi_request_input_length", T, K_HIST_SUM_TO, GP_SH_PROMPT_LEN, 0, GP_SC_PROMPT},
    {"tgi_request_generated_tokens", T, K_HIST_SUM_TO, GP_SH_GEN_LEN, 0, GP_SC_GEN},
    /* NVIDIA Triton / NIM (cumulative microsecond counters, no _total) */
    {"nv_inference_request_success", N, K_COUNTER, GP_SC_REQ_OK, 0, 0},
    {"nv_inference_request_failure", N, K_COUNTER, GP_SC_REQ_ERR, 0, 0},
    {"nv_inference_count", N, K_COUNTER, GP_SC_INFER, 0, 0},
    {"nv_inference_exec_count", N, K_COUNTER, GP_SC_EXEC, 0, 0},
    {"nv_inference_request_duration_us", N, K_COUNTER, GP_SC_REQ_US, 0, 0},
    {"nv_inference_queue_duration_us", N, K_COUNTER, GP_SC_QUEUE_US, 0, 0},
    {"nv_inference_compute_input_duration_us", N, K_COUNTER, GP_SC_COMPUTE_US, 0, 0},
    {"nv_inference_compute_infer_duration_us", N, K_COUNTER, GP_SC_COMPUTE_US, 0, 0},
    {"nv_inference_compute_output_duration_us", N, K_COUNTER, GP_SC_COMPUTE_US, 0, 0},
    {"nv_inference_pending_request_count", N, K_GAUGE, GP_SG_WAITING, 0, 0},
};
#undef V
#undef S
#undef T
#undef N
#define NFAM (sizeof families / sizeof families[0])

static const char *const known_prefix[] = {"vllm:", "sglang:", "tgi_", "nv_inference_"};

/* One accumulator per family, merged into values at the end so that an "alt" family is
 * used only when its preferred one is absent. */
typedef struct {
    double counter[NFAM][2]; /* [ok, err] for K_FINISHED; [value] otherwise */
    int seen[NFAM];
    gp_hist hist[NFAM];
} fam_acc;

typedef struct {
    fam_acc all;
    int nser, overflow, hist_overflow;
    char engine[GP_SCRAPE_MAX_SERIES][32], model[GP_SCRAPE_MAX_SERIES][96];
    fam_acc ser[GP_SCRAPE_MAX_SERIES];
    gp_scrape_snapshot *out; /* for the unknown list */
} acc;

static const char *label(const gp_prom_sample *s, const char *name) {
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name)) return s->labels[i].value;
    return NULL;
}

static int suffix(const char *name, size_t fam_len, const char *sfx) {
    return !strcmp(name + fam_len, sfx);
}

static void hist_add_bucket(gp_hist *h, double le, double v, int *overflow) {
    int i = 0;
    while (i < h->n && h->le[i] < le)
        i++;
    if (i < h->n && h->le[i] == le) {
        h->cum[i] += v;
        return;
    }
    if (h->n == GP_HIST_MAX_BUCKETS) {
        *overflow = 1;
        return;
    }
    memmove(h->le + i + 1, h->le + i, (size_t)(h->n - i) * sizeof(double));
    memmove(h->cum + i + 1, h->cum + i, (size_t)(h->n - i) * sizeof(double));
    h->le[i] = le;
    h->cum[i] = v;
    h->n++;
}

/* The (engine, model) slot of a sample, or NULL when all slots are taken. */
static fam_acc *series_of(acc *a, const gp_prom_sample *s) {
    const char *e = label(s, "engine");
    if (!e) e = label(s, "dp_rank");
    const char *m = label(s, "model_name");
    if (!m) m = label(s, "model");
    char eb[32], mb[96];
    snprintf(eb, sizeof eb, "%s", e ? e : "");
    snprintf(mb, sizeof mb, "%s", m ? m : "");
    for (int i = 0; i < a->nser; i++)
        if (!strcmp(a->engine[i], eb) && !strcmp(a->model[i], mb)) return &a->ser[i];
    if (a->nser == GP_SCRAPE_MAX_SERIES) {
        a->overflow = 1;
        return NULL;
    }
    memcpy(a->engine[a->nser], eb, sizeof eb);
    memcpy(a->model[a->nser], mb, sizeof mb);
    return &a->ser[a->nser++];
}

/* Adds one sample of family f into an accumulator. */
static void add_sample(fam_acc *fa, size_t f, size_t fl, const gp_prom_sample *s, double le,
                       int *overflow) {
    const family *fm = &families[f];
    if (fm->k == K_HIST || fm->k == K_HIST_SUM_TO) {
        gp_hist *h = &fa->hist[f];
        if (suffix(s->name, fl, "_bucket"))
            hist_add_bucket(h, le, s->value, overflow);
        else if (suffix(s->name, fl, "_count"))
            h->count += s->value;
        else
            h->sum += s->value;
    } else if (fm->k == K_FINISHED) {
        const char *why = label(s, "finished_reason");
        int err = why && (!strcmp(why, "abort") || !strcmp(why, "error"));
        fa->counter[f][err] += s->value;
    } else if (fm->k == K_RATIO) { /* a ratio does not add up across engines */
        fa->counter[f][0] =
            fa->seen[f] && fa->counter[f][0] > s->value ? fa->counter[f][0] : s->value;
    } else {
        fa->counter[f][0] += s->value;
    }
    fa->seen[f] = 1;
}

static void note_unknown(gp_scrape_snapshot *o, const char *name) {
    char base[64];
    snprintf(base, sizeof base, "%s", name);
    static const char *const sfx[] = {"_bucket", "_count", "_sum", "_total", "_created"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        size_t bl = strlen(base), sl = strlen(sfx[i]);
        if (bl > sl && !strcmp(base + bl - sl, sfx[i])) {
            base[bl - sl] = 0;
            break;
        }
    }
    for (int i = 0; i < o->nunknown; i++)
        if (!strcmp(o->unknown[i], base)) return;
    if (o->nunknown < GP_SCRAPE_MAX_UNKNOWN) memcpy(o->unknown[o->nunknown++], base, sizeof base);
}

static int on_sample(void *ctx, const gp_prom_sample *s) {
    acc *a = ctx;
    for (size_t f = 0; f < NFAM; f++) {
        const family *fm = &families[f];
        size_t fl = strlen(fm->name);
        if (strncmp(s->name, fm->name, fl)) continue;
        double le = 0;
        if (fm->k == K_HIST || fm->k == K_HIST_SUM_TO) {
            if (!suffix(s->name, fl, "_bucket") && !suffix(s->name, fl, "_count") &&
                !suffix(s->name, fl, "_sum"))
                continue; /* _created, or a longer family name */
            if (suffix(s->name, fl, "_bucket")) {
                const char *lv = label(s, "le");
                if (!lv || gp_prom_parse_double(lv, strlen(lv), &le) < 0) return 0;
            }
        } else if (s->name[fl]) {
            continue; /* a longer name (e.g. _created) */
        }
        if (isnan(s->value)) return 0;
        add_sample(&a->all, f, fl, s, le, &a->hist_overflow);
        fam_acc *sa = series_of(a, s);
        if (sa) add_sample(sa, f, fl, s, le, &a->hist_overflow);
        return 0;
    }
    for (size_t i = 0; i < sizeof known_prefix / sizeof known_prefix[0]; i++)
        if (!strncmp(s->name, known_prefix[i], strlen(known_prefix[i]))) {
            size_t nl = strlen(s->name);
            if (nl < 8 || strcmp(s->name + nl - 8, "_created")) note_unknown(a->out, s->name);
            break;
        }
    return 0;
}

static void values_clear(gp_scrape_values *v) {
    memset(v, 0, sizeof *v);
    for (int i = 0; i < GP_SC__COUNT; i++)
        v->counter[i] = -1;
    for (int i = 0; i < GP_SG__COUNT; i++)
        v->gauge[i] = -1;
}

/* Has a non-alt family of this kind and slot been seen? */
static int preferred_seen(const fam_acc *a, kind k, int slot) {
    for (size_t f = 0; f < NFAM; f++) {
        const family *g = &families[f];
        if (!a->seen[f] || g->alt || g->slot != slot) continue;
        if (g->k == k || (k == K_HIST && g->k == K_HIST_SUM_TO) ||
            (k == K_RATIO && g->k == K_GAUGE) || (k == K_GAUGE && g->k == K_RATIO))
            return 1;
    }
    return 0;
}

static void add_counter(gp_scrape_values *o, int slot, double v) {
    o->counter[slot] = (o->counter[slot] < 0 ? 0 : o->counter[slot]) + v;
}

/* Merges an accumulator into values; counts the votes of each server flavor. */
static void merge(const fam_acc *a, gp_scrape_values *out, int *votes) {
    values_clear(out);
    for (size_t f = 0; f < NFAM; f++) {
        if (!a->seen[f]) continue;
        const family *fm = &families[f];
        if (votes) votes[fm->flavor]++;
        if (fm->alt && preferred_seen(a, fm->k, fm->slot)) continue;
        switch (fm->k) {
        case K_COUNTER:
            add_counter(out, fm->slot, a->counter[f][0]);
            break;
        case K_FINISHED:
            add_counter(out, GP_SC_REQ_OK, a->counter[f][0]);
            add_counter(out, GP_SC_REQ_ERR, a->counter[f][1]);
            break;
        case K_GAUGE:
            out->gauge[fm->slot] =
                (out->gauge[fm->slot] < 0 ? 0 : out->gauge[fm->slot]) + a->counter[f][0];
            break;
        case K_RATIO:
            out->gauge[fm->slot] = a->counter[f][0];
            break;
        case K_HIST_SUM_TO:
            add_counter(out, fm->slot2, a->hist[f].sum);
            out->hist[fm->slot] = a->hist[f];
            break;
        case K_HIST:
            out->hist[fm->slot] = a->hist[f];
            break;
        }
    }
    /* One success/error split for every server: ok = total - errors where only totals exist */
    if (out->counter[GP_SC_REQ_OK] < 0 && out->counter[GP_SC_REQ_TOTAL] >= 0)
        out->counter[GP_SC_REQ_OK] =
            out->counter[GP_SC_REQ_TOTAL] -
            (out->counter[GP_SC_REQ_ERR] > 0 ? out->counter[GP_SC_REQ_ERR] : 0);
}

int gp_scrape_parse(const char *text, size_t len, gp_scrape_snapshot *out, char *err,
                    size_t errlen) {
    acc *a = calloc(1, sizeof *a);
    if (!a) return fail(err, errlen, "out of memory");
    memset(out, 0, sizeof *out);
    a->out = out;
    char perr[200];
    if (gp_prom_parse(text, len, on_sample, NULL, a, GP_PROM_SKIP_BAD, perr, sizeof perr) < 0) {
        free(a);
        return fail(err, errlen, "metrics page: %s", perr);
    }
    int votes[GP_SCRAPE__FLAVORS] = {0};
    merge(&a->all, &out->all, votes);
    out->nseries = a->nser;
    out->series_overflow = a->overflow;
    for (int i = 0; i < a->nser; i++) {
        gp_scrape_series *sr = &out->series[i];
        memcpy(sr->engine, a->engine[i], sizeof sr->engine);
        memcpy(sr->model, a->model[i], sizeof sr->model);
        merge(&a->ser[i], &sr->v, NULL);
    }
    free(a);
    int best = 0;
    for (int i = 1; i < GP_SCRAPE__FLAVORS; i++)
        if (votes[i] > votes[best]) best = i;
    if (!votes[best])
        return fail(err, errlen,
                    "metrics page has none of the vLLM, SGLang, TGI or Triton metrics goodput "
                    "knows");
    out->flavor = (gp_scrape_flavor)best;
    return 0;
}
