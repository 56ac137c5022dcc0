/* ray.c: Ray Data Dataset.stats() text -> operators and their analysis (see ray.h).
 *
 * The parser is line-oriented and keyed on the wording Ray prints (python/ray/data/_internal/
 * stats.py, OperatorStatsSummary.__str__): a line is matched by its label before the colon,
 * values are read from the "..., X total" tail. Header lines of our own test excerpts ('#')
 * and blank lines are skipped. */
#include "ingest/ray.h"
#include "util/term.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* "395.65s", "33.55ms", "523.93us" -> seconds; -1 when not a duration. */
static double parse_duration(const char *p, const char **end) {
    char *e;
    double v = strtod(p, &e);
    if (e == p) return -1;
    double mul = 1;
    if (!strncmp(e, "us", 2)) {
        mul = 1e-6;
        e += 2;
    } else if (!strncmp(e, "ms", 2)) {
        mul = 1e-3;
        e += 2;
    } else if (*e == 's') {
        e += 1;
    } else {
        return -1;
    }
    if (end) *end = e;
    return v * mul;
}

/* The value before " total" in "a min, b max, c mean, X total". */
static const char *total_of(const char *line) {
    const char *t = strstr(line, " total");
    if (!t) return NULL;
    const char *p = t;
    while (p > line && p[-1] != ' ')
        p--;
    return p;
}

static double total_duration(const char *line) {
    const char *p = total_of(line);
    return p ? parse_duration(p, NULL) : -1;
}

static double total_number(const char *line) {
    const char *p = total_of(line);
    return p ? strtod(p, NULL) : -1;
}

/* The kind of a line: its label before the first ':' ("UDF time: 1s ..." -> "UDF time"), or
 * the whole line. Lines not understood are listed once per kind. */
static size_t label_len(const char *line) {
    const char *c = strchr(line, ':');
    return c ? (size_t)(c - line) : strlen(line);
}

static void note_unknown(gp_ray_stats *s, const char *line) {
    s->nunknown++;
    size_t n = label_len(line);
    if (n > sizeof s->unknown[0] - 1) n = sizeof s->unknown[0] - 1; /* as stored */
    for (int k = 0; k < s->nunknown_kinds && k < GP_RAY_MAX_UNKNOWN; k++) {
        if (label_len(s->unknown[k]) == n && !strncmp(s->unknown[k], line, n)) {
            s->unknown_lines[k]++;
            return;
        }
    }
    if (s->nunknown_kinds < GP_RAY_MAX_UNKNOWN) {
        snprintf(s->unknown[s->nunknown_kinds], sizeof s->unknown[0], "%s", line);
        s->unknown_lines[s->nunknown_kinds] = 1;
    }
    s->nunknown_kinds++;
}

/* Ray's logger: "2025-10-10 18:57:35,316\tINFO streaming_executor.py:264 -- MESSAGE"
 * (ray/_private/ray_logging default format). Returns MESSAGE, or NULL for another line. */
static const char *log_message(const char *l) {
    static const char shape[] = "dddd-dd-dd dd:dd:dd,";
    for (size_t k = 0; k < sizeof shape - 1; k++) {
        if (shape[k] == 'd' ? !isdigit((unsigned char)l[k]) : l[k] != shape[k]) return NULL;
    }
    const char *m = strstr(l, " -- ");
    return m && m - l < 160 ? m + 4 : NULL;
}

/* "(RayTrainWorker pid=25517) * Remote wall time: ..." -> "* Remote wall time: ...": Ray
 * prefixes what a worker prints with the process that printed it. */
static const char *strip_worker_prefix(const char *l) {
    if (*l != '(') return l;
    const char *close = strstr(l, ") ");
    const char *pid = strstr(l, "pid=");
    return close && pid && pid < close ? close + 2 : l;
}

/* "'key': 12.5" inside [a, b): the number, or -1 when the key is absent. */
static double dict_number(const char *a, const char *b, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "'%s': ", key);
    size_t pn = strlen(pat);
    for (const char *p = a; p + pn <= b; p++) {
        if (*p == '\'' && !strncmp(p, pat, pn)) {
            char *e;
            double v = strtod(p + pn, &e);
            return e == p + pn ? -1 : v;
        }
    }
    return -1;
}

/* "* Extra metrics: {...}" (verbose stats): the dict may run over several physical lines.
 * Reads the keys that match a ray_data_* gauge of ray_metrics.c; returns the offset in text
 * just past the line that closes the dict. */
static size_t read_extra_metrics(const char *text, size_t len, size_t open, gp_ray_op *op) {
    int depth = 0;
    char quote = 0;
    size_t k = open;
    for (; k < len; k++) {
        char c = text[k];
        if (quote) {
            if (c == quote) quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '{') {
            depth++;
        } else if (c == '}' && --depth == 0) {
            break;
        }
    }
    const char *a = text + open, *b = text + (k < len ? k : len);
    if (op) {
        double v;
        if ((v = dict_number(a, b, "task_submission_backpressure_time")) >= 0)
            op->backpressure_s = v;
        if ((v = dict_number(a, b, "obj_store_mem_internal_inqueue_blocks")) >= 0)
            op->queued_blocks = v;
        if ((v = dict_number(a, b, "num_tasks_running")) >= 0) op->tasks_running = v;
        if ((v = dict_number(a, b, "cpu_usage")) >= 0) op->cpu_cores = v;
        if ((v = dict_number(a, b, "gpu_usage")) >= 0) op->gpu_cores = v;
    }
    while (k < len && text[k] != '\n')
        k++;
    return k + 1;
}

/* "Operator 2 MapBatches(ResnetModel): 14 tasks executed, 48 blocks produced in 27.43s" */
void gp_ray_op_init(gp_ray_op *op, const char *name, int index) {
    memset(op, 0, sizeof *op);
    snprintf(op->name, sizeof op->name, "%s", name);
    op->index = index;
    op->tasks = op->blocks = op->nodes = -1;
    op->exec_s = op->wall_total_s = op->cpu_total_s = op->udf_total_s = -1;
    op->rows = op->bytes = op->rows_per_s = -1;
    op->concurrency = op->cpu_efficiency = op->bytes_per_s = -1;
    op->tasks_running = op->backpressure_s = op->queued_blocks = -1;
    op->cpu_cores = op->gpu_cores = -1;
}

static int parse_header(const char *line, gp_ray_op *op) {
    gp_ray_op_init(op, "", 0);
    char *e;
    op->index = (int)strtol(line + 9, &e, 10);
    if (e == line + 9 || *e != ' ') return -1;
    const char *name = e + 1;
    const char *colon = strstr(name, ": ");
    if (!colon) return -1;
    snprintf(op->name, sizeof op->name, "%.*s", (int)(colon - name), name);
    const char *rest = colon + 2;
    const char *t = strstr(rest, " tasks executed");
    if (t) op->tasks = strtol(rest, NULL, 10);
    const char *b = strstr(rest, " blocks produced");
    if (b) {
        const char *p = b;
        while (p > rest && p[-1] != ' ')
            p--;
        op->blocks = strtol(p, NULL, 10);
    }
    const char *in = strstr(rest, " in ");
    if (in) op->exec_s = parse_duration(in + 4, NULL);
    return 0;
}

static void reset_dataset(gp_ray_stats *out) {
    out->nops = 0;
    out->dataset_rows_per_s = out->iter_total_s = out->iter_blocked_s = -1;
    out->dataset[0] = 0;
}

int gp_ray_stats_parse(const char *text, size_t len, gp_ray_stats *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    reset_dataset(out);
    out->bottleneck = -1;
    gp_ray_op *op = NULL;
    enum { IN_OP, IN_DATASET, IN_ITER, IN_RUNTIME } sec = IN_OP;
    int dataset_done = 0; /* the current dataset's summary ended: an Operator starts the next */
    static const size_t cap = 4096;
    char line[4096];
    size_t i = 0;
    while (i < len) {
        size_t ls = i, j = i;
        while (j < len && text[j] != '\n')
            j++;
        size_t n = j - i < cap - 1 ? j - i : cap - 1;
        memcpy(line, text + i, n);
        line[n] = 0;
        i = j + 1;
        while (n && (line[n - 1] == '\r' || isspace((unsigned char)line[n - 1])))
            line[--n] = 0;
        const char *l = line;
        while (*l == ' ' || *l == '\t')
            l++;
        if (!*l || *l == '#') continue;
        l = strip_worker_prefix(l);
        const char *msg = log_message(l);
        if (msg) {
            const char *fin = strstr(msg, " execution finished in ");
            const char *ds = strstr(msg, "Dataset ");
            if (strncmp(msg, "Operator ", 9) != 0) {
                if (fin && ds && ds < fin) {
                    if (out->nops)
                        snprintf(out->dataset, sizeof out->dataset, "%.*s", (int)(fin - ds - 8),
                                 ds + 8);
                    dataset_done = 1;
                    op = NULL;
                } else {
                    out->nlog_other++;
                }
                continue;
            }
            l = msg;
        }
        if (!strncmp(l, "Operator ", 9) && strstr(l, ": ")) {
            gp_ray_op tmp;
            if (parse_header(l, &tmp) != 0) {
                note_unknown(out, l);
                op = NULL;
                continue;
            }
            if (out->ndatasets == 0 || dataset_done ||
                (out->nops && tmp.index <= out->ops[out->nops - 1].index)) {
                reset_dataset(out);
                out->ndatasets++;
                dataset_done = 0;
            }
            sec = IN_OP;
            if (out->nops == GP_RAY_MAX_OPS) {
                note_unknown(out, l);
                op = NULL;
                continue;
            }
            op = &out->ops[out->nops++];
            *op = tmp;
            continue;
        }
        if (!strncmp(l, "Dataset throughput:", 19)) {
            sec = IN_DATASET;
            dataset_done = 1;
            op = NULL;
            continue;
        }
        if (!strncmp(l, "Dataset iterator time breakdown:", 32)) {
            sec = IN_ITER;
            dataset_done = 1;
            op = NULL;
            continue;
        }
        if (!strncmp(l, "Runtime Metrics:", 16)) {
            sec = IN_RUNTIME;
            dataset_done = 1;
            op = NULL;
            continue;
        }
        if (*l == '*') l++;
        while (*l == ' ' || *l == '\t')
            l++;
        if (!strncmp(l, "Ray Data throughput:", 20)) {
            double v = strtod(l + 20, NULL);
            if (sec == IN_DATASET)
                out->dataset_rows_per_s = v;
            else if (op)
                op->rows_per_s = v;
            else
                note_unknown(out, l);
            continue;
        }
        if (!strncmp(l, "Estimated single node throughput", 32) ||
            !strncmp(l, "Optimal single node throughput", 30))
            continue; /* Ray's what-if without its cluster: not what the run did */
        if (sec == IN_ITER) {
            if (!strncmp(l, "Total time overall:", 19)) {
                out->iter_total_s = parse_duration(l + 20, NULL);
                continue;
            }
            if (!strncmp(l, "Total time user thread is blocked by Ray Data iter_batches:", 59)) {
                out->iter_blocked_s = parse_duration(l + 60, NULL);
                continue;
            }
            /* read, not used: initialisation, user-thread time, the prefetch breakdown */
            if (!strncmp(l, "Total time in", 13) || !strncmp(l, "Total execution time", 20) ||
                !strncmp(l, "Batch iteration time breakdown", 30) || !strncmp(l, "In ", 3) ||
                !strncmp(l, "Num blocks ", 11))
                continue;
        }
        if (sec == IN_RUNTIME && n > 2 && line[n - 1] == ')' && line[n - 2] == '%')
            continue; /* "* NAME: 9.49s (46.909%)": each operator's share of the run */
        if (op && sec == IN_OP) {
            if (!strncmp(l, "Remote wall time:", 17)) {
                op->wall_total_s = total_duration(l);
                continue;
            }
            if (!strncmp(l, "Remote cpu time:", 16)) {
                op->cpu_total_s = total_duration(l);
                continue;
            }
            if (!strncmp(l, "UDF time:", 9) || !strncmp(l, "Block transform time:", 21)) {
                op->udf_total_s = total_duration(l);
                continue;
            }
            if (!strncmp(l, "Output num rows", 15)) {
                op->rows = total_number(l);
                continue;
            }
            if (!strncmp(l, "Output size bytes", 17)) {
                op->bytes = total_number(l);
                continue;
            }
            if (!strncmp(l, "Tasks per node:", 15)) {
                const char *k = strstr(l, "; ");
                if (k) op->nodes = strtol(k + 2, NULL, 10);
                continue;
            }
            if (!strncmp(l, "Extra metrics:", 14) && strchr(l, '{')) {
                size_t open = ls + (size_t)(strchr(l, '{') - line);
                i = read_extra_metrics(text, len, open, op);
                continue;
            }
            /* read and deliberately not used: they do not change the analysis */
            if (!strncmp(l, "Peak heap memory", 16) || !strncmp(l, "Output rows per task", 20) ||
                !strncmp(l, "Operator throughput:", 20) || !strncmp(l, "Input prep:", 11) ||
                !strncmp(l, "Function body:", 14) || !strncmp(l, "Output block build:", 19) ||
                !strncmp(l, "Suboperator", 11) || !strcmp(l, "..."))
                continue;
        }
        note_unknown(out, l);
    }
    if (out->nops == 0) {
        snprintf(err, errlen,
                 "no 'Operator N NAME: ...' line: not the output of Ray Data's Dataset.stats()");
        return -1;
    }
    return 0;
}

void gp_ray_analyze(gp_ray_stats *s) {
    s->bottleneck = -1;
    s->bottleneck_share = -1;
    s->suggested_concurrency = -1;
    int next = -1;
    for (int i = 0; i < s->nops; i++) {
        gp_ray_op *o = &s->ops[i];
        if (o->rows_per_s < 0 && o->rows >= 0 && o->exec_s > 0) o->rows_per_s = o->rows / o->exec_s;
        /* without the operator's wall time (the metrics reader), keep what the reader set */
        if (o->wall_total_s >= 0 && o->exec_s > 0) o->concurrency = o->wall_total_s / o->exec_s;
        if (o->cpu_total_s >= 0 && o->wall_total_s > 0)
            o->cpu_efficiency = o->cpu_total_s / o->wall_total_s;
        if (o->bytes >= 0 && o->exec_s > 0) o->bytes_per_s = o->bytes / o->exec_s;
        if (o->rows_per_s <= 0) continue;
        if (s->bottleneck < 0 || o->rows_per_s < s->ops[s->bottleneck].rows_per_s) {
            next = s->bottleneck;
            s->bottleneck = i;
        } else if (next < 0 || o->rows_per_s < s->ops[next].rows_per_s) {
            next = i;
        }
    }
    if (s->bottleneck >= 0 && next >= 0) {
        const gp_ray_op *b = &s->ops[s->bottleneck], *n = &s->ops[next];
        s->bottleneck_share = b->rows_per_s / n->rows_per_s;
        if (b->concurrency > 0)
            s->suggested_concurrency = (int)ceil(b->concurrency * n->rows_per_s / b->rows_per_s);
    }
    s->consumer_blocked =
        s->iter_blocked_s >= 0 && s->iter_total_s > 0 ? s->iter_blocked_s / s->iter_total_s : -1;
}

static void num(char *b, size_t cap, const char *fmt, double v) {
    if (v < 0 || !isfinite(v))
        snprintf(b, cap, "-");
    else
        snprintf(b, cap, fmt, v);
}

void gp_ray_report_text(const gp_ray_stats *s, FILE *out, int width) {
    gp_ray_report_text_v(s, out, width, 0);
}

void gp_ray_report_text_v(const gp_ray_stats *s, FILE *out, int width, int verbose) {
    /* 100 columns: a 28-column operator name (shortened in the middle) and the bottleneck
     * marked '*' after its number; --wide: whole names and "<- bottleneck" */
    int nw = width > 0 ? 28 : 40;
    fprintf(out, "Ray Data operators (%s; the slowest rows/s owns the run%s):\n",
            s->from_metrics ? "ray_data_* metrics, rows/s at the tasks running" : "Dataset.stats()",
            width > 0 ? "; * bottleneck" : "");
    if (s->ndatasets > 1)
        gp_wrap_printf(
            out, 2, width, "The input holds the stats of %d datasets; this is the last%s%s%s.",
            s->ndatasets, s->dataset[0] ? " (" : "", s->dataset, s->dataset[0] ? ")" : "");
    fprintf(out, "  %-3s %-*s %6s %9s %10s %10s %8s %6s %*s\n", "#", nw, "OPERATOR", "TASKS",
            "WALL_S", "ROWS", "ROWS/S", "MB/S", "CONC", width > 0 ? 8 : 10, "CPU/WALL");
    for (int i = 0; i < s->nops; i++) {
        const gp_ray_op *o = &s->ops[i];
        char wall[16], rows[24], rps[24], mbs[16], conc[16], eff[16], tasks[16], idx[16],
            nm[sizeof o->name];
        num(tasks, sizeof tasks, "%.0f", (double)o->tasks);
        num(wall, sizeof wall, "%.2f", o->exec_s);
        num(rows, sizeof rows, "%.0f", o->rows);
        num(rps, sizeof rps, "%.1f", o->rows_per_s);
        num(mbs, sizeof mbs, "%.1f", o->bytes_per_s < 0 ? -1 : o->bytes_per_s / 1e6);
        num(conc, sizeof conc, "%.1f", o->concurrency);
        num(eff, sizeof eff, "%.2f", o->cpu_efficiency);
        snprintf(idx, sizeof idx, "%d%s", o->index, width > 0 && i == s->bottleneck ? "*" : "");
        fprintf(out, "  %-3s %-*s %6s %9s %10s %10s %8s %6s %*s%s\n", idx, nw,
                gp_ellipsize(o->name, width > 0 ? nw : 0, nm, sizeof nm), tasks, wall, rows, rps,
                mbs, conc, width > 0 ? 8 : 10, eff,
                width <= 0 && i == s->bottleneck ? "  <- bottleneck" : "");
    }
    if (s->bottleneck >= 0) {
        const gp_ray_op *b = &s->ops[s->bottleneck];
        char share[64] = "";
        if (s->bottleneck_share >= 0)
            snprintf(share, sizeof share, " (%.0f%% of the next slowest operator)",
                     s->bottleneck_share * 100);
        fputc('\n', out);
        gp_wrap_printf(out, 2, width, "Bottleneck: %s at %.1f rows/s%s.", b->name, b->rows_per_s,
                       share);
        if (s->suggested_concurrency > 0)
            gp_wrap_printf(out, 2, width,
                           "Pool sizing: it ran %.1f tasks at once %s; about %d would "
                           "match the next slowest operator if it scales linearly (concurrency= "
                           "/ num_gpus).",
                           b->concurrency, s->from_metrics ? "at the scrape" : "on average",
                           s->suggested_concurrency);
    }
    int extra = s->from_metrics; /* else only verbose stats' "Extra metrics" carry these */
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].backpressure_s >= 0 || s->ops[i].queued_blocks >= 0) extra = 1;
    if (extra) {
        fprintf(out, "\n  %-40s %8s %12s %14s %6s %6s\n", "OPERATOR", "RUNNING", "QUEUED_BLKS",
                "BACKPRESSURE_S", "CPUS", "GPUS");
        for (int i = 0; i < s->nops; i++) {
            const gp_ray_op *o = &s->ops[i];
            char run[16], q[16], bp[16], c[16], g[16];
            num(run, sizeof run, "%.0f", o->tasks_running);
            num(q, sizeof q, "%.0f", o->queued_blocks);
            num(bp, sizeof bp, "%.1f", o->backpressure_s);
            num(c, sizeof c, "%.1f", o->cpu_cores);
            num(g, sizeof g, "%.1f", o->gpu_cores);
            fprintf(out, "  %-40.40s %8s %12s %14s %6s %6s\n", o->name, run, q, bp, c, g);
        }
    }
    if (s->consumer_blocked >= 0)
        gp_wrap_printf(out, 2, width,
                       "Consumer: blocked waiting for batches %.1f s of %.1f s (%.0f%%).",
                       s->iter_blocked_s, s->iter_total_s, s->consumer_blocked * 100);
    if (s->nunknown && !verbose)
        gp_wrap_printf(out, 2, width,
                       "Not read: %d line(s) of %d kind(s), first: \"%s\" (--verbose lists them)",
                       s->nunknown, s->nunknown_kinds, s->unknown[0]);
    if (s->nunknown && verbose) {
        fprintf(out, "  Not read: %d line(s) of %d kind(s), each kind once:\n", s->nunknown,
                s->nunknown_kinds);
        for (int k = 0; k < s->nunknown_kinds && k < GP_RAY_MAX_UNKNOWN; k++)
            fprintf(out, "    %4d x %s\n", s->unknown_lines[k], s->unknown[k]);
        if (s->nunknown_kinds > GP_RAY_MAX_UNKNOWN)
            fprintf(out, "    ... and %d more kind(s)\n", s->nunknown_kinds - GP_RAY_MAX_UNKNOWN);
    }
    if (verbose && s->nlog_other)
        fprintf(out, "  Log lines around the stats (not stats, skipped): %d\n", s->nlog_other);
}

static json_t *jnull_or(double v) {
    return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

json_t *gp_ray_report_json(const gp_ray_stats *s) {
    json_t *root = json_object(), *ops = json_array(), *unk = json_array();
    for (int i = 0; i < s->nops; i++) {
        const gp_ray_op *o = &s->ops[i];
        json_t *j = json_object();
        json_object_set_new(j, "index", json_integer(o->index));
        json_object_set_new(j, "name", json_string(o->name));
        json_object_set_new(j, "tasks", o->tasks < 0 ? json_null() : json_integer(o->tasks));
        json_object_set_new(j, "blocks", o->blocks < 0 ? json_null() : json_integer(o->blocks));
        json_object_set_new(j, "wall_s", jnull_or(o->exec_s));
        json_object_set_new(j, "remote_wall_total_s", jnull_or(o->wall_total_s));
        json_object_set_new(j, "remote_cpu_total_s", jnull_or(o->cpu_total_s));
        json_object_set_new(j, "udf_total_s", jnull_or(o->udf_total_s));
        json_object_set_new(j, "output_rows", jnull_or(o->rows));
        json_object_set_new(j, "output_bytes", jnull_or(o->bytes));
        json_object_set_new(j, "nodes", o->nodes < 0 ? json_null() : json_integer(o->nodes));
        json_object_set_new(j, "rows_per_s", jnull_or(o->rows_per_s));
        json_object_set_new(j, "bytes_per_s", jnull_or(o->bytes_per_s));
        json_object_set_new(j, "concurrency", jnull_or(o->concurrency));
        json_object_set_new(j, "cpu_efficiency", jnull_or(o->cpu_efficiency));
        json_object_set_new(j, "tasks_running", jnull_or(o->tasks_running));
        json_object_set_new(j, "queued_input_blocks", jnull_or(o->queued_blocks));
        json_object_set_new(j, "submission_backpressure_s", jnull_or(o->backpressure_s));
        json_object_set_new(j, "cpu_cores", jnull_or(o->cpu_cores));
        json_object_set_new(j, "gpu_cores", jnull_or(o->gpu_cores));
        json_array_append_new(ops, j);
    }
    for (int i = 0; i < s->nunknown_kinds && i < GP_RAY_MAX_UNKNOWN; i++) {
        json_t *u = json_object();
        json_object_set_new(u, "first_line", json_string(s->unknown[i]));
        json_object_set_new(u, "lines", json_integer(s->unknown_lines[i]));
        json_array_append_new(unk, u);
    }
    json_object_set_new(root, "operators", ops);
    json_object_set_new(root, "bottleneck",
                        s->bottleneck < 0 ? json_null() : json_string(s->ops[s->bottleneck].name));
    json_object_set_new(root, "bottleneck_share_of_next", jnull_or(s->bottleneck_share));
    json_object_set_new(root, "suggested_concurrency",
                        s->suggested_concurrency < 0 ? json_null()
                                                     : json_integer(s->suggested_concurrency));
    json_object_set_new(root, "dataset_rows_per_s", jnull_or(s->dataset_rows_per_s));
    json_object_set_new(root, "consumer_total_s", jnull_or(s->iter_total_s));
    json_object_set_new(root, "consumer_blocked_s", jnull_or(s->iter_blocked_s));
    json_object_set_new(root, "consumer_blocked_ratio", jnull_or(s->consumer_blocked));
    json_object_set_new(root, "lines_not_read", json_integer(s->nunknown));
    json_object_set_new(root, "lines_not_read_kinds", unk);
    json_object_set_new(root, "datasets_in_input", json_integer(s->ndatasets));
    json_object_set_new(root, "dataset", s->dataset[0] ? json_string(s->dataset) : json_null());
    json_object_set_new(root, "log_lines_other", json_integer(s->nlog_other));
    return root;
}
