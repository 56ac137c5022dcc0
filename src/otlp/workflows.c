/* workflows.c: traces -> workflows, GPU join, per-kind figures and findings (see
 * workflows.h for every definition). Work is O(n log n) in spans: one sort by trace, one
 * sort of each trace by parent for children lookups, one sweep per engine. */
#include "otlp/workflows.h"

#include "engine/accounting/goodput.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_span(const void *a, const void *b) {
    const gp_span *x = a, *y = b;
    int c = strcmp(x->trace_id, y->trace_id);
    if (c) return c;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return strcmp(x->span_id, y->span_id);
}

static double dur_s(const gp_span *s) {
    return (double)(s->end_ns - s->start_ns) / 1e9;
}

/* ---- per-workflow partition of time by step kind ---- */

typedef struct edge {
    int64_t t;
    int delta, kind;
} edge;

static int cmp_edge(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->delta - y->delta; /* ends before starts at the same instant */
}

static void partition(const gp_span *sp, size_t n, const gp_span *root, double *time_s, edge *tmp) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (&sp[i] == root) continue;
        int64_t a = sp[i].start_ns > root->start_ns ? sp[i].start_ns : root->start_ns;
        int64_t b = sp[i].end_ns < root->end_ns ? sp[i].end_ns : root->end_ns;
        if (b <= a) continue;
        tmp[m++] = (edge){a, 1, sp[i].step};
        tmp[m++] = (edge){b, -1, sp[i].step};
    }
    qsort(tmp, m, sizeof *tmp, cmp_edge);
    int active[GP_STEP__COUNT] = {0};
    int64_t t = root->start_ns;
    for (size_t i = 0; i <= m; i++) {
        int64_t next = i < m ? tmp[i].t : root->end_ns;
        if (next > t) {
            int k = GP_STEP_QUEUE;
            for (int j = 0; j < GP_STEP_QUEUE; j++)
                if (active[j] > 0) {
                    k = j;
                    break;
                }
            time_s[k] += (double)(next - t) / 1e9;
            t = next;
        }
        if (i < m) active[tmp[i].kind] += tmp[i].delta;
    }
}

/* ---- children, serial steps and critical path ---- */

typedef struct tree {
    const gp_span *sp;
    size_t n;
    size_t *by_parent;      /* indices sorted by parent_id, then start */
    unsigned char *on_path; /* critical(): spans already on the path, NULL elsewhere */
} tree;

static int cmp_by_parent(const void *a, const void *b, void *ctx) {
    const gp_span *sp = ctx;
    const gp_span *x = &sp[*(const size_t *)a], *y = &sp[*(const size_t *)b];
    int c = strcmp(x->parent_id, y->parent_id);
    if (c) return c;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Children of span id: [*lo, *hi) in t->by_parent. */
static void children(const tree *t, const char *id, size_t *lo, size_t *hi) {
    size_t a = 0, b = t->n;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (strcmp(t->sp[t->by_parent[mid]].parent_id, id) < 0)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    b = t->n;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (strcmp(t->sp[t->by_parent[mid]].parent_id, id) <= 0)
            a = mid + 1;
        else
            b = mid;
    }
    *hi = a;
}

static int parallelizable(const gp_span *c) {
    return c->step == GP_STEP_TOOL || c->step == GP_STEP_RETRIEVAL;
}

static void serial_steps(const tree *t, gp_wf *w) {
    /* For every parent (each span's id), runs of consecutive children (by start) that are
     * tool or retrieval steps, each starting after the previous one ended. */
    for (size_t p = 0; p < t->n; p++) {
        size_t lo, hi;
        children(t, t->sp[p].span_id, &lo, &hi);
        size_t i = lo;
        while (i < hi) {
            const gp_span *c = &t->sp[t->by_parent[i]];
            if (!parallelizable(c)) {
                i++;
                continue;
            }
            double sum = dur_s(c), mx = dur_s(c);
            int64_t last_end = c->end_ns;
            char pair[128];
            snprintf(pair, sizeof pair, "%s", c->name);
            size_t j = i + 1;
            for (; j < hi; j++) {
                const gp_span *d = &t->sp[t->by_parent[j]];
                if (!parallelizable(d) || d->start_ns < last_end) break;
                if (j == i + 1) {
                    size_t l = strlen(pair);
                    snprintf(pair + l, sizeof pair - l, " + %s", d->name);
                }
                sum += dur_s(d);
                if (dur_s(d) > mx) mx = dur_s(d);
                last_end = d->end_ns;
            }
            if (j - i >= 2 && sum - mx > 0) {
                if (sum - mx > w->serial_saving_s)
                    snprintf(w->serial_pair, sizeof w->serial_pair, "%s", pair);
                w->serial_saving_s += sum - mx;
            }
            i = j;
        }
    }
}

/* Appends "name 0.12s -> ..." along the critical path below span s (latest-ending child
 * first, then the child that ended before it started, and so on), naming the leaves: a
 * span none of whose children fits inside it counts as one. Each span joins the path
 * at most once (t->on_path): spans that claim their own id as parent, share an id, or
 * last no time would otherwise be chosen again and again, and the walk grow as 64^depth
 * (fuzz_otlp found an input that ran for minutes). */
static void critical(const tree *t, const gp_span *s, char *buf, size_t cap, int depth) {
    size_t lo, hi;
    t->on_path[s - t->sp] = 1;
    children(t, s->span_id, &lo, &hi);
    const gp_span *chain[64];
    int n = 0;
    int64_t cursor = s->end_ns;
    while (lo < hi && depth <= 32) {
        const gp_span *best = NULL;
        for (size_t i = lo; i < hi; i++) {
            const gp_span *c = &t->sp[t->by_parent[i]];
            if (!t->on_path[t->by_parent[i]] && c->end_ns <= cursor &&
                (!best || c->end_ns > best->end_ns))
                best = c;
        }
        if (!best || n == 64) break;
        t->on_path[best - t->sp] = 1;
        chain[n++] = best;
        cursor = best->start_ns;
    }
    if (n == 0) { /* a leaf: no child, or none that fits inside it and is not on the path */
        size_t l = strlen(buf);
        if (l + 1 < cap)
            snprintf(buf + l, cap - l, "%s%s %.3fs", l ? " -> " : "", s->name, dur_s(s));
        return;
    }
    for (int i = n - 1; i >= 0; i--)
        critical(t, chain[i], buf, cap, depth + 1);
}

/* ---- GPU join ---- */

static double series_at(const gp_wf_series *s, const double *v, int64_t t) {
    if (!v || s->n == 0) return 0;
    if (t <= s->t_ns[0]) return v[0];
    if (t >= s->t_ns[s->n - 1]) return v[s->n - 1];
    size_t a = 0, b = s->n - 1;
    while (b - a > 1) {
        size_t m = (a + b) / 2;
        if (s->t_ns[m] <= t)
            a = m;
        else
            b = m;
    }
    double f = (double)(t - s->t_ns[a]) / (double)(s->t_ns[b] - s->t_ns[a]);
    return v[a] + f * (v[b] - v[a]);
}

static void engine_between(const gp_wf_engine *e, int64_t a, int64_t b, double *busy,
                           double *energy, int *energy_known) {
    *busy = *energy = 0;
    for (int d = 0; d < e->n_dev; d++) {
        const gp_wf_series *s = &e->dev[d];
        *busy += series_at(s, s->busy_gpu_s, b) - series_at(s, s->busy_gpu_s, a);
        if (s->energy_j)
            *energy += series_at(s, s->energy_j, b) - series_at(s, s->energy_j, a);
        else
            *energy_known = 0;
    }
}

static int engine_matches(const gp_wf_engine *e, const gp_span *s) {
    if (!s->service[0]) return 0;
    if (strcmp(e->job_id, s->service) != 0 && strcmp(e->name, s->service) != 0) return 0;
    return !e->host[0] || !s->host[0] || strcmp(e->host, s->host) == 0;
}

typedef struct jedge {
    int64_t t;
    int delta;
    int what; /* 0 model call (idx), 1 tool, 2 retrieval, 3 workflow */
    size_t idx;
} jedge;

static int cmp_jedge(const void *a, const void *b) {
    const jedge *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->delta - y->delta;
}

static int join_engine(gp_wf_report *r, gp_wf_engine *e, double *span_gpu, double *span_j,
                       int *energy_known) {
    size_t cap = 0, m = 0;
    jedge *ev = NULL;
    char *uses = calloc(r->n_wf ? r->n_wf : 1, 1);
    if (!uses) return -1;
    for (size_t w = 0; w < r->n_wf; w++)
        for (size_t i = r->wf[w].first; i < r->wf[w].first + r->wf[w].n; i++)
            if (r->spans[i].step == GP_STEP_MODEL && engine_matches(e, &r->spans[i])) uses[w] = 1;
    for (size_t w = 0; w < r->n_wf; w++) {
        if (!uses[w]) continue;
        for (size_t i = r->wf[w].first; i < r->wf[w].first + r->wf[w].n; i++) {
            const gp_span *s = &r->spans[i];
            int what = -1;
            if (i == r->wf[w].root)
                what = 3;
            else if (s->step == GP_STEP_MODEL && engine_matches(e, s))
                what = 0;
            else if (s->step == GP_STEP_TOOL)
                what = 1;
            else if (s->step == GP_STEP_RETRIEVAL)
                what = 2;
            if (what < 0) continue;
            if (m + 2 > cap) {
                cap = cap ? cap * 2 : 1024;
                jedge *p = realloc(ev, cap * sizeof *p);
                if (!p) {
                    free(ev);
                    free(uses);
                    return -1;
                }
                ev = p;
            }
            ev[m++] = (jedge){s->start_ns, 1, what, i};
            ev[m++] = (jedge){s->end_ns, -1, what, i};
        }
    }
    free(uses);
    qsort(ev, m, sizeof *ev, cmp_jedge);
    size_t *act = NULL, n_act = 0, cap_act = 0;
    int cnt[4] = {0};
    int all_tokens = 1;
    for (size_t i = 0; i < m; i++) {
        if (ev[i].what != 0) continue;
        const gp_span *s = &r->spans[ev[i].idx];
        if (s->in_tokens < 0 && s->out_tokens < 0) all_tokens = 0;
    }
    for (size_t i = 0; i < m; i++) {
        if (i > 0 && ev[i].t > ev[i - 1].t) {
            int64_t a = ev[i - 1].t, b = ev[i].t;
            if (cnt[0] > 0) {
                double busy, joules;
                engine_between(e, a, b, &busy, &joules, energy_known);
                e->busy_gpu_s += busy;
                double wsum = 0;
                for (size_t k = 0; k < n_act; k++) {
                    const gp_span *s = &r->spans[act[k]];
                    double d = (double)(s->end_ns - s->start_ns);
                    double tok = (double)((s->in_tokens > 0 ? s->in_tokens : 0) +
                                          (s->out_tokens > 0 ? s->out_tokens : 0));
                    wsum += all_tokens && d > 0 ? tok / d : 1;
                }
                for (size_t k = 0; k < n_act && wsum > 0; k++) {
                    const gp_span *s = &r->spans[act[k]];
                    double d = (double)(s->end_ns - s->start_ns);
                    double tok = (double)((s->in_tokens > 0 ? s->in_tokens : 0) +
                                          (s->out_tokens > 0 ? s->out_tokens : 0));
                    double wgt = (all_tokens && d > 0 ? tok / d : 1) / wsum;
                    span_gpu[act[k]] += busy * wgt;
                    span_j[act[k]] += joules * wgt;
                    e->attributed_gpu_s += busy * wgt;
                    e->attributed_j += joules * wgt;
                }
            } else {
                double gs = (double)(b - a) / 1e9 * e->n_dev;
                int why = cnt[1]   ? GP_WF_WAIT_TOOLS
                          : cnt[2] ? GP_WF_WAIT_RETRIEVAL
                          : cnt[3] ? GP_WF_WAIT_CLIENT
                                   : GP_WF_NO_WORK;
                e->idle_gpu_s[why] += gs;
            }
        }
        cnt[ev[i].what] += ev[i].delta;
        if (ev[i].what != 0) continue;
        if (ev[i].delta > 0) {
            if (n_act == cap_act) {
                cap_act = cap_act ? cap_act * 2 : 64;
                size_t *p = realloc(act, cap_act * sizeof *p);
                if (!p) {
                    free(act);
                    free(ev);
                    return -1;
                }
                act = p;
            }
            act[n_act++] = ev[i].idx;
            e->calls++;
        } else {
            for (size_t k = 0; k < n_act; k++)
                if (act[k] == ev[i].idx) {
                    act[k] = act[--n_act];
                    break;
                }
        }
    }
    free(act);
    free(ev);
    return 0;
}

/* ---- per kind ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(double *v, size_t n, double q) {
    if (!n) return -1;
    qsort(v, n, sizeof *v, cmp_double);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    return i + 1 < n ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

static int kind_index(gp_wf_report *r, const char *name) {
    for (size_t i = 0; i < r->n_kinds; i++)
        if (strcmp(r->kinds[i].name, name) == 0) return (int)i;
    gp_wf_kind *p = realloc(r->kinds, (r->n_kinds + 1) * sizeof *p);
    if (!p) return -1;
    r->kinds = p;
    gp_wf_kind *k = &r->kinds[r->n_kinds];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    return (int)r->n_kinds++;
}

static void add_step(gp_wf_kind *k, const gp_span *s) {
    for (size_t i = 0; i < k->n_steps; i++)
        if (k->steps[i].kind == s->step && strcmp(k->steps[i].name, s->name) == 0) {
            k->steps[i].count++;
            k->steps[i].total_s += dur_s(s);
            return;
        }
    gp_wf_step_stat *p = realloc(k->steps, (k->n_steps + 1) * sizeof *p);
    if (!p) return;
    k->steps = p;
    gp_wf_step_stat *x = &k->steps[k->n_steps++];
    snprintf(x->name, sizeof x->name, "%s", s->name);
    x->kind = s->step;
    x->count = 1;
    x->total_s = dur_s(s);
}

/* ---- findings ---- */

/* A kind is tool bound when tools take at least this share of its end-to-end time: then
 * the engine serving its model calls waits more than it works for this workflow. */
#define TOOL_BOUND_SHARE 0.4
/* serial_steps when overlapping would save at least this share of the kind's time. */
#define SERIAL_SHARE 0.05

static gp_finding *new_finding(gp_wf_report *r, gp_finding_class c, const gp_wf_kind *k) {
    if (r->n_findings >= sizeof r->findings / sizeof r->findings[0]) return NULL;
    gp_finding *f = &r->findings[r->n_findings++];
    memset(f, 0, sizeof *f);
    f->cls = c;
    f->scope = GP_SCOPE_STAGE;
    snprintf(f->scope_id, sizeof f->scope_id, "%s", k->name);
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        f->badput_gpu_s[b] = -1;
    f->wasted_gpu_s = f->wasted_cost = -1;
    f->headroom_frac = f->headroom_gpu_s = f->headroom_cost = -1;
    f->t0_ns = INT64_MAX;
    f->t1_ns = 0;
    for (size_t w = 0; w < r->n_wf; w++) {
        if (&r->kinds[r->wf[w].kind] != k) continue;
        const gp_span *root = &r->spans[r->wf[w].root];
        if (root->start_ns < f->t0_ns) f->t0_ns = root->start_ns;
        if (root->end_ns > f->t1_ns) f->t1_ns = root->end_ns;
    }
    return f;
}

static void findings(gp_wf_report *r, const gp_wf_engine *e, size_t n_e) {
    double idle_tools = 0;
    for (size_t i = 0; i < n_e; i++)
        idle_tools += e[i].idle_gpu_s[GP_WF_WAIT_TOOLS];
    double tool_total = 0;
    for (size_t i = 0; i < r->n_kinds; i++)
        tool_total += r->kinds[i].time_s[GP_STEP_TOOL];
    for (size_t i = 0; i < r->n_kinds; i++) {
        gp_wf_kind *k = &r->kinds[i];
        double e2e = 0;
        for (int s = 0; s < GP_STEP__COUNT; s++)
            e2e += k->time_s[s];
        if (e2e <= 0) continue;
        double share = k->time_s[GP_STEP_TOOL] / e2e;
        gp_finding *f;
        if (share >= TOOL_BOUND_SHARE && (f = new_finding(r, GP_FC_TOOL_BOUND, k))) {
            const gp_wf_step_stat *top = NULL;
            for (size_t s = 0; s < k->n_steps; s++)
                if (k->steps[s].kind == GP_STEP_TOOL &&
                    (!top || k->steps[s].total_s > top->total_s))
                    top = &k->steps[s];
            const char *step = top ? top->name : "?";
            snprintf(f->scope_id, sizeof f->scope_id, "%.40s/%.50s", k->name, step);
            gp_finding_add_evidence(f, "tool_share_of_e2e", share, ">=", TOOL_BOUND_SHARE, "otlp");
            if (top)
                gp_finding_add_evidence(f, "step_mean_s", top->total_s / (double)top->count, ">", 0,
                                        "otlp");
            if (r->gpu_known && tool_total > 0) {
                /* the engines' idle time waiting on tools, by this kind's share of tool time */
                f->wasted_gpu_s = idle_tools * k->time_s[GP_STEP_TOOL] / tool_total;
                f->badput_gpu_s[GP_B_IDLE_ALLOCATED] = f->wasted_gpu_s;
                if (r->price_per_gpu_h > 0)
                    f->wasted_cost = f->wasted_gpu_s / 3600 * r->price_per_gpu_h;
                gp_finding_add_evidence(f, "engine_idle_waiting_on_tools_gpu_s", f->wasted_gpu_s,
                                        ">", 0, "nvml+otlp");
            }
            f->confidence = 0.8;
            snprintf(f->summary, sizeof f->summary,
                     "%s workflows spend %.0f%% of their time in tools, most in '%s' "
                     "(%.2f s per call); the model engine waits meanwhile",
                     k->name, 100 * share, step, top ? top->total_s / (double)top->count : 0);
            snprintf(f->recommendation, sizeof f->recommendation,
                     "speed up or cache '%s' (or run it asynchronously), and serve more workflows "
                     "concurrently so the engine has other work while one waits",
                     step);
        }
        if (k->serial_count > 0 && k->serial_saving_s >= SERIAL_SHARE * e2e &&
            (f = new_finding(r, GP_FC_SERIAL_STEPS, k))) {
            double per = k->serial_saving_s / (double)k->count;
            f->headroom_frac = k->serial_saving_s / e2e;
            snprintf(f->counterfactual, sizeof f->counterfactual,
                     "overlapping %s would save %.3f s per workflow (%.0f%% of end-to-end)",
                     k->serial_pair, per, 100 * f->headroom_frac);
            gp_finding_add_evidence(f, "saving_s_per_workflow", per, ">", 0, "otlp");
            gp_finding_add_evidence(f, "saving_share", f->headroom_frac, ">=", SERIAL_SHARE,
                                    "otlp");
            f->confidence = 0.6; /* the trace cannot prove the steps independent */
            snprintf(f->summary, sizeof f->summary,
                     "%.60s runs %.100s one after another in %lld of %lld workflows; overlapped "
                     "they would save %.3f s each",
                     k->name, k->serial_pair, (long long)k->serial_count, (long long)k->count, per);
            snprintf(f->recommendation, sizeof f->recommendation,
                     "run %s concurrently (asyncio.gather, Promise.all, parallel tool calls) "
                     "when neither needs the other's result",
                     k->serial_pair);
        }
        if (k->retry_call_s > 0 && (f = new_finding(r, GP_FC_RETRY_WASTE, k))) {
            if (r->gpu_known) {
                f->wasted_gpu_s = k->retry_gpu_s;
                f->badput_gpu_s[GP_B_WASTED_PROGRESS] = k->retry_gpu_s;
                if (r->price_per_gpu_h > 0)
                    f->wasted_cost = f->wasted_gpu_s / 3600 * r->price_per_gpu_h;
                gp_finding_add_evidence(f, "retry_gpu_s", k->retry_gpu_s, ">", 0, "nvml+otlp");
            }
            gp_finding_add_evidence(f, "retry_model_call_s", k->retry_call_s, ">", 0, "otlp");
            gp_finding_add_evidence(f, "success_rate", (double)k->ok / (double)k->count, "<", 1,
                                    "otlp");
            f->confidence = 0.9;
            char gpu[48] = "GPU-seconds unknown";
            if (r->gpu_known) snprintf(gpu, sizeof gpu, "%.1f GPU-s", k->retry_gpu_s);
            snprintf(f->summary, sizeof f->summary,
                     "%lld of %lld %s workflows failed; their model calls and failed calls "
                     "retried elsewhere took %.1f s of model time (%s) for nothing",
                     (long long)(k->count - k->ok), (long long)k->count, k->name, k->retry_call_s,
                     gpu);
            snprintf(f->recommendation, sizeof f->recommendation,
                     "find why %s workflows fail (the failed spans' status), validate inputs "
                     "before the model call, and retry only the failed step, not the workflow",
                     k->name);
        }
    }
}

/* ---- the whole report ---- */

int gp_wf_analyze(const gp_span *spans, size_t n, gp_wf_engine *engines, size_t n_engines,
                  double price_per_gpu_h, gp_wf_report *r) {
    memset(r, 0, sizeof *r);
    r->price_per_gpu_h = price_per_gpu_h;
    r->spans = malloc((n ? n : 1) * sizeof *r->spans);
    edge *tmp = malloc((2 * n + 1) * sizeof *tmp);
    size_t *idx = malloc((n + 1) * sizeof *idx);
    double *span_gpu = calloc(n + 1, sizeof *span_gpu), *span_j = calloc(n + 1, sizeof *span_j);
    if (!r->spans || !tmp || !idx || !span_gpu || !span_j) goto oom;
    if (n) memcpy(r->spans, spans, n * sizeof *spans); /* spans may be NULL when n is 0 */
    r->n_spans = n;
    if (n) qsort(r->spans, n, sizeof *r->spans, cmp_span);
    /* workflows */
    r->wf = calloc(n + 1, sizeof *r->wf);
    if (!r->wf) goto oom;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(r->spans[j].trace_id, r->spans[i].trace_id) == 0)
            j++;
        size_t root = SIZE_MAX;
        for (size_t k = i; k < j; k++)
            if (!r->spans[k].parent_id[0] &&
                (root == SIZE_MAX || dur_s(&r->spans[k]) > dur_s(&r->spans[root])))
                root = k;
        if (root == SIZE_MAX) {
            r->orphans += (int64_t)(j - i);
        } else {
            gp_wf *w = &r->wf[r->n_wf++];
            w->first = i;
            w->n = j - i;
            w->root = root;
        }
        i = j;
    }
    for (size_t w = 0; w < r->n_wf; w++) {
        gp_wf *x = &r->wf[w];
        const gp_span *root = &r->spans[x->root];
        x->kind = kind_index(r, root->name);
        if (x->kind < 0) goto oom;
        x->ok = root->status != GP_SPAN_ERROR;
        x->e2e_s = dur_s(root);
        x->gpu_s = x->energy_j = x->retry_gpu_s = -1;
        x->tokens = -1;
        partition(&r->spans[x->first], x->n, root, x->time_s, tmp);
        tree t = {&r->spans[x->first], x->n, idx, NULL};
        for (size_t k = 0; k < x->n; k++)
            idx[k] = k;
        qsort_r(idx, x->n, sizeof *idx, cmp_by_parent, (void *)t.sp);
        serial_steps(&t, x);
        for (size_t k = x->first; k < x->first + x->n; k++) {
            const gp_span *s = &r->spans[k];
            if (s->step != GP_STEP_MODEL) continue;
            int64_t tok =
                (s->in_tokens > 0 ? s->in_tokens : 0) + (s->out_tokens > 0 ? s->out_tokens : 0);
            if (s->in_tokens >= 0 || s->out_tokens >= 0)
                x->tokens = (x->tokens < 0 ? 0 : x->tokens) + tok;
            if (!x->ok || s->status == GP_SPAN_ERROR) x->retry_call_s += dur_s(s);
        }
    }
    /* GPU join */
    int energy_known = 1;
    for (size_t e = 0; e < n_engines; e++) {
        memset(engines[e].idle_gpu_s, 0, sizeof engines[e].idle_gpu_s);
        engines[e].attributed_gpu_s = engines[e].busy_gpu_s = engines[e].attributed_j = 0;
        engines[e].calls = 0;
        if (join_engine(r, &engines[e], span_gpu, span_j, &energy_known) != 0) goto oom;
        if (engines[e].calls > 0) r->gpu_known = 1;
    }
    if (r->gpu_known)
        for (size_t w = 0; w < r->n_wf; w++) {
            gp_wf *x = &r->wf[w];
            x->gpu_s = x->retry_gpu_s = 0;
            x->energy_j = energy_known ? 0 : -1;
            for (size_t k = x->first; k < x->first + x->n; k++) {
                x->gpu_s += span_gpu[k];
                if (energy_known) x->energy_j += span_j[k];
                if (!x->ok || r->spans[k].status == GP_SPAN_ERROR) x->retry_gpu_s += span_gpu[k];
            }
        }
    /* per kind */
    double *e2e = malloc((r->n_wf + 1) * sizeof *e2e);
    if (!e2e) goto oom;
    for (size_t ki = 0; ki < r->n_kinds; ki++) {
        gp_wf_kind *k = &r->kinds[ki];
        size_t m = 0;
        k->gpu_s = k->energy_j = r->gpu_known ? 0 : -1;
        if (r->gpu_known && !energy_known) k->energy_j = -1;
        k->tokens = -1;
        for (size_t w = 0; w < r->n_wf; w++) {
            gp_wf *x = &r->wf[w];
            if (x->kind != (int)ki) continue;
            e2e[m++] = x->e2e_s;
            k->count++;
            k->ok += x->ok;
            for (int s = 0; s < GP_STEP__COUNT; s++)
                k->time_s[s] += x->time_s[s];
            if (x->gpu_s >= 0) k->gpu_s += x->gpu_s;
            if (x->energy_j >= 0 && k->energy_j >= 0) k->energy_j += x->energy_j;
            if (x->retry_gpu_s >= 0) k->retry_gpu_s += x->retry_gpu_s;
            k->retry_call_s += x->retry_call_s;
            if (x->tokens >= 0) k->tokens = (k->tokens < 0 ? 0 : k->tokens) + x->tokens;
            if (x->serial_saving_s > 0) {
                k->serial_saving_s += x->serial_saving_s;
                k->serial_count++;
                if (!k->serial_pair[0])
                    snprintf(k->serial_pair, sizeof k->serial_pair, "%s", x->serial_pair);
            }
            for (size_t s = x->first; s < x->first + x->n; s++)
                if (s != x->root) add_step(k, &r->spans[s]);
        }
        k->e2e_p50_s = quantile(e2e, m, 0.5);
        k->e2e_p95_s = quantile(e2e, m, 0.95);
        k->gpu_s_per_ok = k->usd_per_ok = k->j_per_ok = -1;
        if (k->ok > 0 && k->gpu_s >= 0) {
            k->gpu_s_per_ok = k->gpu_s / (double)k->ok;
            if (price_per_gpu_h > 0) k->usd_per_ok = k->gpu_s_per_ok / 3600 * price_per_gpu_h;
            if (k->energy_j >= 0) k->j_per_ok = k->energy_j / (double)k->ok;
        }
        /* typical and slow: the workflows nearest p50 and p95 */
        double bt = INFINITY, bs = INFINITY;
        for (size_t w = 0; w < r->n_wf; w++) {
            if (r->wf[w].kind != (int)ki) continue;
            double dt = fabs(r->wf[w].e2e_s - k->e2e_p50_s),
                   ds = fabs(r->wf[w].e2e_s - k->e2e_p95_s);
            if (dt < bt) bt = dt, k->typical = w;
            if (ds < bs) bs = ds, k->slow = w;
        }
        gp_wf *x = &r->wf[k->typical];
        unsigned char *on_path = calloc(x->n ? x->n : 1, 1);
        if (!on_path) abort();
        tree t = {&r->spans[x->first], x->n, idx, on_path};
        for (size_t q = 0; q < x->n; q++)
            idx[q] = q;
        qsort_r(idx, x->n, sizeof *idx, cmp_by_parent, (void *)t.sp);
        critical(&t, &r->spans[x->root], k->critical_path, sizeof k->critical_path, 0);
        free(on_path);
    }
    free(e2e);
    findings(r, engines, n_engines);
    free(tmp);
    free(idx);
    free(span_gpu);
    free(span_j);
    return 0;
oom:
    free(tmp);
    free(idx);
    free(span_gpu);
    free(span_j);
    gp_wf_report_free(r);
    return -1;
}

void gp_wf_report_free(gp_wf_report *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_kinds; i++)
        free(r->kinds[i].steps);
    free(r->kinds);
    free(r->wf);
    free(r->spans);
    memset(r, 0, sizeof *r);
}
