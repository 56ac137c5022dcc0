/* sim_summary.c: the simulator's ground truth per job as text or JSON (sim_summary.h). */
#include "cli/sim_summary.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/goodput.h"
#include "ingest/protocol.h"

#define JOB_W_MAX 20 /* longer job ids get a line of their own (in 100 columns) */

typedef struct job_reqs {
    char id[GP_JOB_ID_MAX];
    gp_slo slo;
    int64_t good_requests, good_tokens;
} job_reqs;

struct gp_sim_summary {
    job_reqs *jobs;
    int n_jobs;
};

gp_sim_summary *gp_sim_summary_new(const gp_sim *sim) {
    gp_sim_summary *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    int n = gp_sim_n_jobs(sim);
    s->jobs = calloc((size_t)(n > 0 ? n : 1), sizeof *s->jobs);
    if (!s->jobs) {
        free(s);
        return NULL;
    }
    s->n_jobs = n;
    for (int i = 0; i < n; i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        snprintf(s->jobs[i].id, sizeof s->jobs[i].id, "%s", t.job_id);
    }
    return s;
}

void gp_sim_summary_free(gp_sim_summary *s) {
    if (!s) return;
    free(s->jobs);
    free(s);
}

static job_reqs *find_job(gp_sim_summary *s, const char *id) {
    for (int i = 0; i < s->n_jobs; i++)
        if (!strcmp(s->jobs[i].id, id)) return &s->jobs[i];
    return NULL;
}

void gp_sim_summary_line(gp_sim_summary *s, const char *line, size_t len) {
    gp_event e;
    char err[160];
    /* The simulator's lines carry their own ts; accept_old because they may lie far in
     * the past of now_ns = 0. A line that does not parse cannot be a request. */
    if (gp_proto_parse_line(line, len, 0, 1, &e, err, sizeof err) != 1) return;
    if (e.kind != GP_EV_HELLO && e.kind != GP_EV_REQUEST) return;
    job_reqs *j = find_job(s, e.job_id);
    if (!j) return;
    if (e.kind == GP_EV_HELLO) {
        j->slo = (gp_slo){e.slo_ttft_s, e.slo_tpot_s, e.slo_e2e_s};
    } else if (gp_request_good(&e, &j->slo)) {
        j->good_requests++;
        j->good_tokens += e.output_tokens > 0 ? e.output_tokens : 0;
    }
}

/* Wall seconds of each gp_bucket (the simulator's restore is a checkpoint phase, as the
 * engine labels `checkpoint_restore`). */
static void buckets_s(const gp_sim_truth *t, double b[GP_B__COUNT]) {
    b[GP_B_PRODUCTIVE] = t->productive_s;
    b[GP_B_NOT_READY] = t->not_ready_s;
    b[GP_B_STARTUP] = t->init_s;
    b[GP_B_DATA_WAIT] = t->data_wait_s;
    b[GP_B_CHECKPOINT] = t->checkpoint_s + t->restore_s;
    b[GP_B_WASTED_PROGRESS] = t->wasted_s;
    b[GP_B_RECOVERY] = t->recovery_s;
    b[GP_B_IDLE_ALLOCATED] = t->idle_s;
    b[GP_B_OTHER] = t->other_s;
}

/* ---------------------------------------------------------------- text */

static void progress(const gp_sim_truth *t, const job_reqs *r, char *buf, size_t cap) {
    if (t->kind == GP_SJ_INFERENCE)
        snprintf(buf, cap, "%lld requests, %lld good, %lld tokens", (long long)t->requests_done,
                 (long long)(r ? r->good_requests : 0), (long long)t->tokens_out);
    else if (t->steps_redone > 0 || t->restarts > 0)
        snprintf(buf, cap, "%lld steps, %lld redone, %lld restart%s", (long long)t->steps_done,
                 (long long)t->steps_redone, (long long)t->restarts, t->restarts == 1 ? "" : "s");
    else if (t->steps_done > 0)
        snprintf(buf, cap, "%lld steps", (long long)t->steps_done);
    else
        snprintf(buf, cap, "-");
}

/* The job cell: ids longer than w get a line of their own so that rows keep to COLS. */
static void job_cell(FILE *f, const char *pre, const char *id, int w) {
    if ((int)strlen(id) > w)
        fprintf(f, "%s%s\n%s%-*s", pre, id, pre, w, "");
    else
        fprintf(f, "%s%-*s", pre, w, id);
}

static void pct(FILE *f, int w, double part, double whole) {
    if (whole > 0)
        fprintf(f, " %*.1f", w, 100 * part / whole);
    else
        fprintf(f, " %*s", w, "-");
}

void gp_sim_summary_text(const gp_sim_summary *s, const gp_sim *sim, const char *pre, FILE *f,
                         int width) {
    int n = gp_sim_n_jobs(sim), w = 3;
    const int COLS = width > 0 ? width : 1 << 20;
    for (int i = 0; i < n; i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        int l = (int)strlen(t.job_id);
        if (l > w) w = l < JOB_W_MAX || width <= 0 ? l : JOB_W_MAX;
    }
    /* jobs: what each did and its goodput */
    int used = fprintf(f, "%s%-*s %-9s %4s %7s %8s %7s ", pre, w, "job", "kind", "gpus", "queue_s",
                       "gpu_h", "goodput");
    fprintf(f, "progress\n");
    for (int i = 0; i < n; i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        job_cell(f, pre, t.job_id, w);
        fprintf(f, " %-9s %4d %7.0f %8.2f", gp_sjob_kind_name(t.kind), t.n_gpus, t.queue_s,
                t.allocated_s * t.n_gpus / 3600);
        if (t.allocated_s > 0)
            fprintf(f, " %6.1f%%", 100 * t.productive_s / t.allocated_s);
        else
            fprintf(f, " %7s", "-");
        char prog[128];
        progress(&t, i < s->n_jobs ? &s->jobs[i] : NULL, prog, sizeof prog);
        if (used + (int)strlen(prog) <= COLS)
            fprintf(f, " %s\n", prog);
        else
            fprintf(f, "\n%s    %s\n", pre, prog);
    }
    fprintf(f, "%sgpu_h: allocated GPU-hours; goodput: productive / allocated GPU-time\n", pre);
    /* badput: where the rest of the allocated time went */
    fprintf(f,
            "%s\n%sbadput, %% of allocated GPU-time (wasted = wasted_progress, idle = "
            "idle_allocated)\n",
            pre, pre);
    static const gp_bucket cols[] = {
        GP_B_NOT_READY,       GP_B_STARTUP,  GP_B_DATA_WAIT,      GP_B_CHECKPOINT,
        GP_B_WASTED_PROGRESS, GP_B_RECOVERY, GP_B_IDLE_ALLOCATED, GP_B_OTHER};
    static const char *const head[] = {"not_ready", "startup",  "data_wait", "checkpoint",
                                       "wasted",    "recovery", "idle",      "other"};
    enum { NCOL = sizeof cols / sizeof cols[0] };
    fprintf(f, "%s%-*s", pre, w, "job");
    for (int c = 0; c < NCOL; c++)
        fprintf(f, " %*s", (int)strlen(head[c]) > 6 ? (int)strlen(head[c]) : 6, head[c]);
    fputc('\n', f);
    for (int i = 0; i < n; i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        double b[GP_B__COUNT];
        buckets_s(&t, b);
        job_cell(f, pre, t.job_id, w);
        for (int c = 0; c < NCOL; c++)
            pct(f, (int)strlen(head[c]) > 6 ? (int)strlen(head[c]) : 6, b[cols[c]], t.allocated_s);
        fputc('\n', f);
    }
}

/* ---------------------------------------------------------------- JSON */

static int set(json_t *o, const char *k, json_t *v) {
    return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *job_json(const gp_sim_truth *t, const job_reqs *r) {
    json_t *o = json_object(), *bk = json_object();
    if (!o || !bk) {
        json_decref(o);
        json_decref(bk);
        return NULL;
    }
    double b[GP_B__COUNT], g = t->n_gpus;
    buckets_s(t, b);
    int bad = 0;
    for (int k = 0; k < GP_B__COUNT; k++)
        bad |= set(bk, gp_bucket_name((gp_bucket)k), json_real(b[k] * g));
    bad |= set(o, "id", json_string(t->job_id));
    bad |= set(o, "kind", json_string(gp_sjob_kind_name(t->kind)));
    bad |= set(o, "n_gpus", json_integer(t->n_gpus));
    bad |= set(o, "queue_s", json_real(t->queue_s));
    bad |= set(o, "allocated_gpu_s", json_real(t->allocated_s * g));
    bad |= set(o, "goodput",
               t->allocated_s > 0 ? json_real(t->productive_s / t->allocated_s) : json_null());
    bad |= json_object_set_new(o, "buckets_gpu_s", bk);
    bad |= set(o, "checkpoint_restore_gpu_s", json_real(t->restore_s * g));
    bad |= set(o, "ready_s", t->ready_s >= 0 ? json_real(t->ready_s) : json_null());
    bad |= set(o, "steps", json_integer(t->steps_done));
    bad |= set(o, "steps_redone", json_integer(t->steps_redone));
    bad |= set(o, "restarts", json_integer(t->restarts));
    bad |= set(o, "requests", json_integer(t->requests_done));
    bad |= set(o, "good_requests", json_integer(r ? r->good_requests : 0));
    bad |= set(o, "tokens", json_integer(t->tokens_out));
    bad |= set(o, "good_tokens", json_integer(r ? r->good_tokens : 0));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int gp_sim_summary_json(const gp_sim_summary *s, const gp_sim *sim, FILE *f) {
    json_t *root = json_object(), *jobs = json_array();
    int bad = !root || !jobs;
    if (!bad) {
        bad |= set(root, "start_ns", json_integer(gp_sim_start_ns(sim)));
        bad |= set(root, "end_ns", json_integer(gp_sim_end_ns(sim)));
        bad |= json_object_set(root, "jobs", jobs);
    }
    for (int i = 0; !bad && i < gp_sim_n_jobs(sim); i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        json_t *j = job_json(&t, i < s->n_jobs ? &s->jobs[i] : NULL);
        bad |= !j || json_array_append_new(jobs, j) < 0;
    }
    if (!bad) bad = json_dumpf(root, f, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) < 0;
    if (!bad) bad = fputc('\n', f) == EOF;
    json_decref(jobs);
    json_decref(root);
    return bad ? -1 : 0;
}
