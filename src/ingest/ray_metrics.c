/* ray_metrics.c: Ray's Prometheus metrics -> Ray Data operators per dataset and Ray Train runs
 * (see ray_metrics.h for the families read and the analysis). */
#include "ingest/ray_metrics.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/promtext.h"

enum {
    F_ROWS,
    F_ROWS_ALT,
    F_BYTES,
    F_BYTES_ALT,
    F_TASKS,
    F_BLOCKS,
    F_TASK_TIME,
    F_RUNNING,
    F_BACKPRESSURE,
    F_QUEUED,
    F_CPU,
    F_GPU,
    F_ITER_BLOCKED,
    F_ITER_USER,
    F_ITER_INIT,
    F_TRAIN_STATE,
    F_TRAIN_START,
    F_TRAIN_SHUTDOWN,
    F_TRAIN_REPORT,
};

static const struct {
    const char *name;
    int field;
} families[] = {
    {"ray_data_output_rows", F_ROWS},
    {"ray_data_rows_task_outputs_generated", F_ROWS_ALT},
    {"ray_data_output_bytes", F_BYTES},
    {"ray_data_bytes_task_outputs_generated", F_BYTES_ALT},
    {"ray_data_num_tasks_finished", F_TASKS},
    {"ray_data_num_task_outputs_generated", F_BLOCKS},
    {"ray_data_block_generation_time", F_TASK_TIME},
    {"ray_data_num_tasks_running", F_RUNNING},
    {"ray_data_task_submission_backpressure_time", F_BACKPRESSURE},
    {"ray_data_obj_store_mem_internal_inqueue_blocks", F_QUEUED},
    {"ray_data_cpu_usage_cores", F_CPU},
    {"ray_data_gpu_usage_cores", F_GPU},
    {"ray_data_iter_total_blocked_seconds", F_ITER_BLOCKED},
    {"ray_data_iter_user_seconds", F_ITER_USER},
    {"ray_data_iter_initialize_seconds", F_ITER_INIT},
    {"ray_train_controller_state", F_TRAIN_STATE},
    {"ray_train_worker_group_start_total_time_s", F_TRAIN_START},
    {"ray_train_worker_group_shutdown_total_time_s", F_TRAIN_SHUTDOWN},
    {"ray_train_report_total_blocked_time_s", F_TRAIN_REPORT},
};

/* Per-operator values kept while parsing: the preferred and fallback families of rows and
 * bytes are both kept, the choice is made at the end. */
typedef struct {
    double v[F_ITER_BLOCKED]; /* -1 unknown */
} op_raw;

typedef struct {
    gp_ray_metrics *m;
    op_raw (*raw)[GP_RAY_MAX_OPS];
    double iter_init_s[GP_RAY_MAX_DATASETS]; /* -1 unknown */
} ctx;

static const char *label(const gp_prom_sample *s, const char *name) {
    for (size_t i = 0; i < s->nlabels; i++)
        if (!strcmp(s->labels[i].name, name)) return s->labels[i].value;
    return NULL;
}

static void note_unknown(gp_ray_metrics *m, const char *name) {
    /* histogram/summary series (_bucket, _sum, _count) count under their family's name */
    char fam[96];
    snprintf(fam, sizeof fam, "%s", name);
    size_t n = strlen(fam);
    static const char *const suf[] = {"_bucket", "_sum", "_count"};
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(suf[i]);
        if (n > k && !strcmp(fam + n - k, suf[i])) {
            fam[n - k] = 0;
            break;
        }
    }
    for (int i = 0; i < m->nunknown && i < GP_RAY_MAX_UNKNOWN_FAMILIES; i++)
        if (!strcmp(m->unknown[i], fam)) return;
    if (m->nunknown < GP_RAY_MAX_UNKNOWN_FAMILIES) snprintf(m->unknown[m->nunknown], 96, "%s", fam);
    m->nunknown++;
}

/* Ray's operator tag is NAME_INDEX (NAME INDEX without '_' before Ray 2.10-ish): split it. */
static void split_operator(const char *tag, char *name, size_t cap, int *index) {
    size_t n = strlen(tag), d = n;
    while (d > 0 && tag[d - 1] >= '0' && tag[d - 1] <= '9')
        d--;
    *index = -1;
    if (d < n && d > 0) {
        *index = atoi(tag + d);
        if (tag[d - 1] == '_') d--;
        snprintf(name, cap, "%.*s", (int)d, tag);
    } else {
        snprintf(name, cap, "%s", tag);
    }
}

static void init_op(gp_ray_op *op, const char *tag) {
    gp_ray_op_init(op, "", 0);
    split_operator(tag, op->name, sizeof op->name, &op->index);
}

static int find_dataset(gp_ray_metrics *m, const char *name) {
    for (int i = 0; i < m->ndatasets; i++)
        if (!strcmp(m->dataset[i], name)) return i;
    if (m->ndatasets == GP_RAY_MAX_DATASETS) {
        m->dropped_datasets++;
        return -1;
    }
    int i = m->ndatasets++;
    snprintf(m->dataset[i], sizeof m->dataset[i], "%s", name);
    gp_ray_stats *s = &m->ds[i];
    memset(s, 0, sizeof *s);
    s->dataset_rows_per_s = s->iter_total_s = s->iter_blocked_s = -1;
    s->bottleneck = -1;
    s->from_metrics = 1;
    return i;
}

static int find_op(ctx *c, int d, const char *tag) {
    gp_ray_stats *s = &c->m->ds[d];
    char name[160];
    int index;
    split_operator(tag, name, sizeof name, &index);
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].index == index && !strcmp(s->ops[i].name, name)) return i;
    if (s->nops == GP_RAY_MAX_OPS) {
        c->m->dropped_ops++;
        return -1;
    }
    int i = s->nops++;
    init_op(&s->ops[i], tag);
    for (int f = 0; f < F_ITER_BLOCKED; f++)
        c->raw[d][i].v[f] = -1;
    return i;
}

static gp_ray_train_run *find_run(gp_ray_metrics *m, const char *name) {
    for (int i = 0; i < m->nruns; i++)
        if (!strcmp(m->runs[i].name, name)) return &m->runs[i];
    if (m->nruns == GP_RAY_MAX_RUNS) {
        m->dropped_runs++;
        return NULL;
    }
    gp_ray_train_run *r = &m->runs[m->nruns++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->start_total_s = r->shutdown_total_s = -1;
    r->report_blocked_sum_s = r->report_blocked_max_s = -1;
    r->report_blocked_max_rank = -1;
    for (int i = 0; i < GP_RAY_MAX_RANKS; i++)
        r->report_s[i] = -1;
    return r;
}

static void train_sample(gp_ray_metrics *m, int field, const gp_prom_sample *s) {
    const char *run = label(s, "ray_train_run_name");
    gp_ray_train_run *r = find_run(m, run ? run : "");
    if (!r) return;
    switch (field) {
    case F_TRAIN_STATE: {
        const char *st = label(s, "ray_train_controller_state");
        if (st && s->value == 1) snprintf(r->state, sizeof r->state, "%s", st);
        break;
    }
    case F_TRAIN_START:
        r->start_total_s = s->value;
        break;
    case F_TRAIN_SHUTDOWN:
        r->shutdown_total_s = s->value;
        break;
    default: { /* F_TRAIN_REPORT: one series per worker; a later scrape replaces the value */
        const char *rk = label(s, "ray_train_worker_world_rank");
        int rank = rk ? atoi(rk) : -1;
        if (rank >= 0 && rank < GP_RAY_MAX_RANKS) r->report_s[rank] = s->value;
        break;
    }
    }
}

static int on_sample(void *vc, const gp_prom_sample *s) {
    ctx *c = vc;
    gp_ray_metrics *m = c->m;
    int data = !strncmp(s->name, "ray_data_", 9), train = !strncmp(s->name, "ray_train_", 10);
    if (!data && !train) return 0;
    int field = -1;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(families[i].name, s->name)) {
            field = families[i].field;
            break;
        }
    if (field < 0) {
        note_unknown(m, s->name);
        return 0;
    }
    if (isnan(s->value)) return 0;
    m->samples_read++;
    if (field >= F_TRAIN_STATE) {
        train_sample(m, field, s);
        return 0;
    }
    const char *ds = label(s, "dataset");
    if (!ds) return 0;
    int d = find_dataset(m, ds);
    if (d < 0) return 0;
    if (field == F_ITER_BLOCKED) {
        m->ds[d].iter_blocked_s = s->value;
        return 0;
    }
    if (field == F_ITER_USER) {
        m->ds[d].iter_total_s = s->value; /* + blocked + initialize, at the end */
        return 0;
    }
    if (field == F_ITER_INIT) {
        c->iter_init_s[d] = s->value;
        return 0;
    }
    const char *opt = label(s, "operator");
    if (!opt) return 0;
    int o = find_op(c, d, opt);
    if (o < 0) return 0;
    double *v = &c->raw[d][o].v[field];
    if (field == F_RUNNING)
        *v = s->value > *v ? s->value : *v; /* the concurrency it reached over the scrapes */
    else
        *v = s->value;
    return 0;
}

static double pick(double a, double b) {
    return a >= 0 ? a : b;
}

int gp_ray_metrics_parse(const char *text, size_t len, gp_ray_metrics *out, char *err,
                         size_t errlen) {
    memset(out, 0, sizeof *out);
    ctx c = {out, calloc(GP_RAY_MAX_DATASETS, sizeof *c.raw), {0}};
    for (int d = 0; d < GP_RAY_MAX_DATASETS; d++)
        c.iter_init_s[d] = -1;
    if (!c.raw) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char perr[256];
    if (gp_prom_parse(text, len, on_sample, NULL, &c, 0, perr, sizeof perr) < 0) {
        snprintf(err, errlen,
                 "%s (expected Prometheus text with ray_data_* or ray_train_* samples)", perr);
        free(c.raw);
        return -1;
    }
    for (int d = 0; d < out->ndatasets; d++) {
        gp_ray_stats *s = &out->ds[d];
        /* Dataset.stats()'s "Total time overall" = user + blocked + initialization */
        if (s->iter_total_s >= 0 && s->iter_blocked_s >= 0)
            s->iter_total_s += s->iter_blocked_s + (c.iter_init_s[d] > 0 ? c.iter_init_s[d] : 0);
        else
            s->iter_total_s = -1;
        for (int i = 0; i < s->nops; i++) {
            const double *v = c.raw[d][i].v;
            gp_ray_op *op = &s->ops[i];
            op->rows = pick(v[F_ROWS], v[F_ROWS_ALT]);
            op->bytes = pick(v[F_BYTES], v[F_BYTES_ALT]);
            op->tasks = v[F_TASKS] >= 0 ? (long)v[F_TASKS] : -1;
            op->blocks = v[F_BLOCKS] >= 0 ? (long)v[F_BLOCKS] : -1;
            op->wall_total_s = v[F_TASK_TIME];
            op->tasks_running = v[F_RUNNING];
            op->backpressure_s = v[F_BACKPRESSURE];
            op->queued_blocks = v[F_QUEUED];
            op->cpu_cores = v[F_CPU];
            op->gpu_cores = v[F_GPU];
            /* the rate at the concurrency it ran with (ray_metrics.h) */
            if (op->tasks_running > 0 && op->wall_total_s > 0 && op->rows >= 0) {
                op->concurrency = op->tasks_running;
                op->rows_per_s = op->rows / op->wall_total_s * op->tasks_running;
                if (op->bytes >= 0)
                    op->bytes_per_s = op->bytes / op->wall_total_s * op->tasks_running;
            }
        }
    }
    free(c.raw);
    for (int i = 0; i < out->nruns; i++) {
        gp_ray_train_run *r = &out->runs[i];
        for (int k = 0; k < GP_RAY_MAX_RANKS; k++) {
            if (r->report_s[k] < 0) continue;
            r->workers++;
            r->report_blocked_sum_s =
                (r->report_blocked_sum_s < 0 ? 0 : r->report_blocked_sum_s) + r->report_s[k];
            if (r->report_s[k] > r->report_blocked_max_s) {
                r->report_blocked_max_s = r->report_s[k];
                r->report_blocked_max_rank = k;
            }
        }
    }
    if (out->ndatasets == 0 && out->nruns == 0 && out->nunknown) {
        /* a real scrape can hold only families goodput does not read (Ray 3.0.0.dev0's
         * ray_data_task_completion_time histogram, tests/data/ray/): say so, naming them */
        int k = snprintf(err, errlen,
                         "%d ray_data_/ray_train_ famil%s but none goodput reads (an operator "
                         "gauge such as ray_data_output_rows or a ray_train_* run): ",
                         out->nunknown, out->nunknown == 1 ? "y" : "ies");
        for (int i = 0;
             i < out->nunknown && i < GP_RAY_MAX_UNKNOWN_FAMILIES && k > 0 && (size_t)k < errlen;
             i++)
            k += snprintf(err + k, errlen - (size_t)k, "%s%s", i ? ", " : "", out->unknown[i]);
        return -1;
    }
    if (out->ndatasets == 0 && out->nruns == 0) {
        snprintf(err, errlen,
                 "no ray_data_* (labels dataset, operator) or ray_train_* sample: not a scrape "
                 "of Ray's metrics");
        return -1;
    }
    return 0;
}

void gp_ray_metrics_analyze(gp_ray_metrics *m) {
    for (int d = 0; d < m->ndatasets; d++)
        gp_ray_analyze(&m->ds[d]);
}

static void fmt(char *b, size_t cap, const char *f, double v) {
    if (v < 0 || !isfinite(v))
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, f, v);
}

void gp_ray_metrics_report_text(const gp_ray_metrics *m, int verbose, FILE *out, int width) {
    for (int d = 0; d < m->ndatasets; d++) {
        fprintf(out, "%sDataset %s\n", d ? "\n" : "", m->dataset[d]);
        gp_ray_report_text(&m->ds[d], out, width);
    }
    if (m->nruns) {
        fprintf(out, "%sRay Train runs (ray_train_* metrics; Ray Train exports no step count):\n",
                m->ndatasets ? "\n" : "");
        fprintf(out, "  %-32s %-12s %8s %10s %12s %18s\n", "RUN", "STATE", "WORKERS", "START_S",
                "SHUTDOWN_S", "REPORT_BLOCKED_MAX");
        for (int i = 0; i < m->nruns; i++) {
            const gp_ray_train_run *r = &m->runs[i];
            char w[16], st[16], sh[16], rb[48];
            fmt(w, sizeof w, "%.0f", r->workers ? r->workers : -1);
            fmt(st, sizeof st, "%.1f", r->start_total_s);
            fmt(sh, sizeof sh, "%.1f", r->shutdown_total_s);
            if (r->report_blocked_max_s >= 0)
                snprintf(rb, sizeof rb, "%.1f s (rank %d)", r->report_blocked_max_s,
                         r->report_blocked_max_rank);
            else
                snprintf(rb, sizeof rb, "-");
            fprintf(out, "  %-32.32s %-12s %8s %10s %12s %18s\n", r->name[0] ? r->name : "-",
                    r->state[0] ? r->state : "-", w, st, sh, rb);
        }
    }
    if (m->dropped_datasets || m->dropped_ops || m->dropped_runs)
        fprintf(out, "Over the limits, not read: %d dataset(s), %d operator(s), %d run(s).\n",
                m->dropped_datasets, m->dropped_ops, m->dropped_runs);
    if (m->nunknown) {
        fprintf(out, "Not read: %d ray_data_/ray_train_ famil%s%s\n", m->nunknown,
                m->nunknown == 1 ? "y" : "ies", verbose ? ":" : " (--verbose lists them)");
        for (int i = 0; verbose && i < m->nunknown && i < GP_RAY_MAX_UNKNOWN_FAMILIES; i++)
            fprintf(out, "  %s\n", m->unknown[i]);
    }
}

static json_t *jnum(double v) {
    return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

json_t *gp_ray_metrics_report_json(const gp_ray_metrics *m) {
    json_t *root = json_object(), *ds = json_array(), *runs = json_array(), *unk = json_array();
    for (int d = 0; d < m->ndatasets; d++) {
        json_t *j = gp_ray_report_json(&m->ds[d]);
        json_object_set_new(j, "dataset", json_string(m->dataset[d]));
        /* lines_not_read is the stats-text notion; the metrics' is families_not_read */
        json_object_del(j, "lines_not_read");
        json_object_del(j, "lines_not_read_kinds");
        json_object_del(j, "datasets_in_input");
        json_object_del(j, "log_lines_other");
        json_array_append_new(ds, j);
    }
    for (int i = 0; i < m->nruns; i++) {
        const gp_ray_train_run *r = &m->runs[i];
        json_t *j = json_object();
        json_object_set_new(j, "run_name", json_string(r->name));
        json_object_set_new(j, "controller_state",
                            r->state[0] ? json_string(r->state) : json_null());
        json_object_set_new(j, "workers", r->workers ? json_integer(r->workers) : json_null());
        json_object_set_new(j, "steps", json_null()); /* not exported by Ray Train */
        json_object_set_new(j, "worker_group_start_total_s", jnum(r->start_total_s));
        json_object_set_new(j, "worker_group_shutdown_total_s", jnum(r->shutdown_total_s));
        json_object_set_new(j, "report_blocked_sum_s", jnum(r->report_blocked_sum_s));
        json_object_set_new(j, "report_blocked_max_s", jnum(r->report_blocked_max_s));
        json_object_set_new(j, "report_blocked_max_rank",
                            r->report_blocked_max_rank < 0
                                ? json_null()
                                : json_integer(r->report_blocked_max_rank));
        json_array_append_new(runs, j);
    }
    for (int i = 0; i < m->nunknown && i < GP_RAY_MAX_UNKNOWN_FAMILIES; i++)
        json_array_append_new(unk, json_string(m->unknown[i]));
    json_object_set_new(root, "datasets", ds);
    json_object_set_new(root, "train_runs", runs);
    json_object_set_new(root, "samples_read", json_integer(m->samples_read));
    json_object_set_new(root, "families_not_read", unk);
    return root;
}
