/* cmd_pipeline.c: `goodput pipeline`: per-stage throughput, service times, utilization,
 * starvation and backpressure of a multi-stage pipeline from its stage events; the stage
 * that owns the run; pool sizing; and a what-if simulation with new pool sizes. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "util/term.h"
#include "util/slurp.h"
#include "engine/pipeline/pipeline.h"
#include "ingest/ray.h"
#include "ingest/ray_metrics.h"
#include "otlp/otlp_file.h"
#include "otlp/span_stages.h"
#include "store/spans.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput pipeline --db PATH [--job ID] [--json | --html FILE]\n"
            "                        [--what-if STAGE=N,...] [--wide] [options]\n"
            "       goodput pipeline --otlp FILE... [--gpu-stage NAMES] [options]\n"
            "       goodput pipeline --db PATH --spans [--gpu-stage NAMES] [options]\n"
            "       goodput pipeline --ray-stats FILE [--json] [--wide] [--verbose]\n"
            "       goodput pipeline --ray-metrics FILE [--json] [--verbose]\n\n"
            "For each job with stage events (docs/pipelines.md): per stage throughput, service\n"
            "times, utilization = busy / (workers x time), starved time (workers idle, input\n"
            "queue empty), blocked time (backpressure), queue length over time; the bottleneck\n"
            "stage with evidence; end-to-end throughput per hour and per dollar; pool sizes that\n"
            "balance the stages; and with --what-if, a discrete-event simulation replaying the\n"
            "measured service times with new pool sizes.\n\n"
            "  --db PATH              the agent's store\n"
            "  --ray-stats FILE       read Ray Data's Dataset.stats() text instead (FILE or -):\n"
            "                         per-operator rows/s, concurrency, CPU/wall, the\n"
            "                         bottleneck operator and its pool size (docs/ray.md)\n"
            "  --ray-metrics FILE     read a scrape of Ray's metrics (ray_data_*, ray_train_*;\n"
            "                         FILE or -): the same per dataset, with backpressure\n"
            "                         and queued blocks; Ray Train runs' workers (docs/ray.md)\n"
            "  --verbose              with --ray-stats / --ray-metrics: list each kind of line\n"
            "                         or family not read, once\n"
            "  --otlp FILE...         read the stages from OpenTelemetry spans (OTLP/JSON export\n"
            "                         files): each trace is an item, its root span names the\n"
            "                         pipeline, the root's children are the stages it visits\n"
            "  --spans                with --db: the spans the agent received (POST /v1/traces)\n"
            "  --gpu-stage NAMES      stages (comma-separated) that run on GPUs; model-call\n"
            "                         spans (GenAI conventions) count as GPU stages anyway\n"
            "  --job ID               one job, or with spans one pipeline (root span name)\n"
            "                         (default: every job with stage events)\n"
            "  --json                 machine-readable output\n"
            "  --html FILE            an HTML page with a queue-length chart per stage\n"
            "  --wide                 text wider than 100 columns (one stage table)\n"
            "  --what-if SPEC         new pools, e.g. parse=3,model=2; STAGE.queue=N sets a\n"
            "                         stage's input queue bound\n"
            "  --queue N              every input queue bounded at N in the simulation\n"
            "                         (default: declared bounds, else unbounded)\n"
            "  --items N              items to simulate (default: as many as the run did)\n"
            "  --seed N               simulation seed (default 1)\n"
            "  --cpus N, --gpus N     worker budgets for the sizing (default: workers used now)\n"
            "  --price-gpu-hour USD   price of a GPU worker-hour (default: price table)\n"
            "  --price-cpu-hour USD   price of a CPU worker-hour (default %.2f)\n",
            GP_PIPE_DEFAULT_CPU_PRICE);
}

typedef struct {
    const char *spec;
    int queue, cpus, gpus;
    size_t items;
    uint64_t seed;
    gp_pipe_opts po;
    int width; /* text columns (0: --wide) */
} run_opts;

/* Sizing, what-if and output of one analysed pipeline; frees it. 0 ok, <0 exit code
 * negated. source: "events" or "spans" (JSON only). */
static int emit(gp_pipeline *p, const char *source, const run_opts *o, int json, FILE *html,
                json_t *arr, FILE *out) {
    char err[512];
    gp_pipe_sizing sz;
    gp_pipeline_size(p, o->cpus, o->gpus, &sz);
    gp_pipe_whatif w;
    memset(&w, 0, sizeof w);
    if (o->spec) {
        gp_pipe_sim_cfg base;
        if (gp_pipeline_sim_cfg(p, NULL, o->queue, o->items, o->seed, &base, err, sizeof err) < 0 ||
            gp_pipeline_sim_cfg(p, o->spec, o->queue, o->items, o->seed, &w.cfg, err, sizeof err) <
                0 ||
            gp_pipe_simulate(&base, &w.base, err, sizeof err) < 0 ||
            gp_pipe_simulate(&w.cfg, &w.res, err, sizeof err) < 0) {
            fprintf(stderr, "goodput pipeline: '%s': %s\n", p->job_id, err);
            gp_pipeline_free(p);
            return -GP_EXIT_USAGE;
        }
        w.have = 1;
        snprintf(w.spec, sizeof w.spec, "%s", o->spec);
    }
    if (json) {
        json_t *j = gp_pipeline_to_json(p, &sz, &w);
        json_object_set_new(j, "source", json_string(source));
        json_array_append_new(arr, j);
    } else if (html) {
        gp_pipeline_print_html(p, &sz, &w, html);
    } else {
        gp_pipeline_print_text(p, &sz, &w, out, o->width);
        fputc('\n', out);
    }
    gp_pipeline_free(p);
    return 0;
}

/* Analyses one job; prints or appends. 0 ok, 1 no stage events, <0 exit code negated. */
static int one_job(gp_store *s, const char *job, const run_opts *o, int json, FILE *html,
                   json_t *arr, FILE *out) {
    gp_pipeline p;
    char err[512];
    int rc = gp_pipeline_load(s, job, &o->po, &p, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "goodput pipeline: job '%s': %s\n", job, err);
        gp_pipeline_free(&p);
        return -GP_EXIT_INPUT;
    }
    if (rc == 0) return 1;
    return emit(&p, "events", o, json, html, arr, out);
}

/* Pipelines traced with spans (otlp/span_stages.h): one per root span name, or only `only`.
 * Returns the number analysed (>= 0), or an exit code negated. */
static int span_pipelines(const gp_span_set *set, const char *only, const char *gpu_stages,
                          const run_opts *o, int json, FILE *html, json_t *arr, FILE *out) {
    gp_span_pipeline *sp;
    size_t n;
    char err[512];
    if (gp_spans_to_pipelines(set->v, set->n, gpu_stages, &sp, &n, err, sizeof err) != 0) {
        fprintf(stderr, "goodput pipeline: %s\n", err);
        return -GP_EXIT_FAIL;
    }
    int found = 0, rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (only && strcmp(only, sp[i].name) != 0) continue;
        gp_pipeline p;
        if (gp_pipeline_analyze(sp[i].ev, sp[i].n_ev, &o->po, &p, err, sizeof err) != 0) {
            fprintf(stderr, "goodput pipeline: spans of '%s': %s\n", sp[i].name, err);
            gp_pipeline_free(&p);
            rc = -GP_EXIT_INPUT;
            break;
        }
        rc = emit(&p, "spans", o, json, html, arr, out);
        found += rc == 0;
    }
    gp_span_pipelines_free(sp, n);
    return rc < 0 ? rc : found;
}

static int parse_int_opt(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "goodput pipeline: %s '%s': expected an integer in %ld..%ld\n", opt, v, lo,
                hi);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_price(const char *opt, const char *v, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > 0) || x > 1e6) {
        fprintf(stderr, "goodput pipeline: %s '%s': expected a price > 0 in USD\n", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* Reads a whole Ray file (or stdin) of at most 64 MiB: 0, or the exit code to return. */
static int ray_read(const char *path, const char *what, char **buf, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "goodput pipeline: cannot read %s\n", path);
        return GP_EXIT_INPUT;
    }
    int src = gp_slurp(f, (size_t)64 << 20, buf, len); /* a stats text or scrape is kilobytes */
    if (f != stdin) fclose(f);
    if (src != 0) {
        fprintf(stderr, "goodput pipeline: %s: %s%s\n", path,
                src == -EFBIG    ? "larger than 64 MiB: not "
                : src == -ENOMEM ? "out of memory"
                                 : "read error (a directory?)",
                src == -EFBIG ? what : "");
        return src == -ENOMEM ? GP_EXIT_FAIL : GP_EXIT_INPUT;
    }
    return 0;
}

/* Prints a Ray report's JSON with the file it came from; takes the reference. */
static void print_json_from(json_t *root, const char *path) {
    json_object_set_new(root, "source", json_string(path));
    json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(13));
    fputc('\n', stdout);
    json_decref(root);
}

/* --ray-metrics: a scrape of Ray's /metrics, analysed without a store. */
static int ray_metrics(const char *path, int json, int verbose, int width) {
    char *buf;
    size_t len;
    int rc = ray_read(path, "a scrape of Ray's metrics", &buf, &len);
    if (rc) return rc;
    gp_ray_metrics *m = malloc(sizeof *m);
    char err[300];
    rc = m ? gp_ray_metrics_parse(buf, len, m, err, sizeof err) : -1;
    free(buf);
    if (rc != 0) {
        fprintf(stderr, "goodput pipeline: %s: %s\n", path, m ? err : "out of memory");
        free(m);
        return m ? GP_EXIT_INPUT : GP_EXIT_FAIL;
    }
    gp_ray_metrics_analyze(m);
    if (json) {
        print_json_from(gp_ray_metrics_report_json(m), path);
    } else {
        gp_ray_metrics_report_text(m, verbose, stdout, width);
    }
    free(m);
    return GP_EXIT_OK;
}

/* --ray-stats: Ray Data's own per-operator summary, analysed without a store. */
static int ray_stats(const char *path, int json, int verbose, int width) {
    char *buf;
    size_t len;
    int rd = ray_read(path, "a Dataset.stats() text", &buf, &len);
    if (rd) return rd;
    gp_ray_stats *st = malloc(sizeof *st);
    char err[256];
    int rc = st ? gp_ray_stats_parse(buf, len, st, err, sizeof err) : -1;
    free(buf);
    if (rc != 0) {
        fprintf(stderr, "goodput pipeline: %s: %s\n", path, st ? err : "out of memory");
        free(st);
        return GP_EXIT_INPUT;
    }
    gp_ray_analyze(st);
    if (json) {
        print_json_from(gp_ray_report_json(st), path);
    } else {
        gp_ray_report_text_v(st, stdout, width, verbose);
    }
    free(st);
    return GP_EXIT_OK;
}

int gp_cmd_pipeline(int argc, char **argv) {
    const char *db = NULL, *job = NULL, *html_path = NULL, *ray_path = NULL, *raym_path = NULL;
    int json = 0, verbose = 0;
    run_opts o = {.queue = -1, .seed = 1, .width = GP_TEXT_WIDTH};
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"job", required_argument, 0, 'j'},
                                         {"json", no_argument, 0, 'J'},
                                         {"html", required_argument, 0, 'H'},
                                         {"what-if", required_argument, 0, 'w'},
                                         {"queue", required_argument, 0, 'q'},
                                         {"items", required_argument, 0, 'n'},
                                         {"seed", required_argument, 0, 's'},
                                         {"cpus", required_argument, 0, 'c'},
                                         {"gpus", required_argument, 0, 'g'},
                                         {"price-gpu-hour", required_argument, 0, 'G'},
                                         {"price-cpu-hour", required_argument, 0, 'C'},
                                         {"help", no_argument, 0, 'h'},
                                         {"ray-stats", required_argument, 0, 'R'},
                                         {"ray-metrics", required_argument, 0, 'M'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"otlp", required_argument, 0, 'o'},
                                         {"spans", no_argument, 0, 'S'},
                                         {"gpu-stage", required_argument, 0, 'U'},
                                         {"wide", no_argument, 0, 'W'},
                                         {0, 0, 0, 0}};
    const char *files[256], *gpu_stages = NULL;
    int n_files = 0, spans = 0;
    int c;
    long v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'W':
            o.width = 0;
            break;
        case 'R':
            ray_path = optarg;
            break;
        case 'M':
            raym_path = optarg;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'o':
            if (n_files == 256) {
                fprintf(stderr, "goodput pipeline: at most 256 --otlp files\n");
                return GP_EXIT_USAGE;
            }
            files[n_files++] = optarg;
            break;
        case 'S':
            spans = 1;
            break;
        case 'U':
            gpu_stages = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'j':
            job = optarg;
            break;
        case 'J':
            json = 1;
            break;
        case 'H':
            html_path = optarg;
            break;
        case 'w':
            o.spec = optarg;
            break;
        case 'q':
            if (parse_int_opt("--queue", optarg, 0, 1000000000, &v) < 0) return GP_EXIT_USAGE;
            o.queue = (int)v;
            break;
        case 'n':
            if (parse_int_opt("--items", optarg, 1, 1000000000000L, &v) < 0) return GP_EXIT_USAGE;
            o.items = (size_t)v;
            break;
        case 's':
            if (parse_int_opt("--seed", optarg, 0, 0x7fffffffL, &v) < 0) return GP_EXIT_USAGE;
            o.seed = (uint64_t)v;
            break;
        case 'c':
            if (parse_int_opt("--cpus", optarg, 1, 1000000, &v) < 0) return GP_EXIT_USAGE;
            o.cpus = (int)v;
            break;
        case 'g':
            if (parse_int_opt("--gpus", optarg, 1, 1000000, &v) < 0) return GP_EXIT_USAGE;
            o.gpus = (int)v;
            break;
        case 'G':
            if (parse_price("--price-gpu-hour", optarg, &o.po.price_gpu_h) < 0)
                return GP_EXIT_USAGE;
            break;
        case 'C':
            if (parse_price("--price-cpu-hour", optarg, &o.po.price_cpu_h) < 0)
                return GP_EXIT_USAGE;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr, "goodput pipeline: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    /* more files after the options: `--otlp a.json b.json` */
    for (; optind < argc && n_files > 0 && n_files < 256; optind++)
        files[n_files++] = argv[optind];
    if (optind < argc) {
        fprintf(stderr, "goodput pipeline: unexpected argument '%s' (see --help)\n", argv[optind]);
        return GP_EXIT_USAGE;
    }
    if ((n_files && (spans || db || ray_path)) || (spans && !db) ||
        (gpu_stages && !n_files && !spans)) {
        fprintf(stderr, "goodput pipeline: %s (see --help)\n",
                n_files ? "--otlp reads files; no --db, --spans or --ray-stats"
                : spans ? "--spans reads the store: give --db PATH"
                        : "--gpu-stage goes with --otlp or --spans");
        return GP_EXIT_USAGE;
    }
    if (n_files && raym_path) {
        fprintf(stderr, "goodput pipeline: --otlp reads files; no --ray-metrics\n");
        return GP_EXIT_USAGE;
    }
    if (raym_path) {
        if (db || html_path || ray_path) {
            fprintf(
                stderr,
                "goodput pipeline: --ray-metrics reads a file; no --db, --html or --ray-stats\n");
            return GP_EXIT_USAGE;
        }
        return ray_metrics(raym_path, json, verbose, o.width);
    }
    if (ray_path) {
        if (db || html_path) {
            fprintf(stderr, "goodput pipeline: --ray-stats reads a file; no --db or --html\n");
            return GP_EXIT_USAGE;
        }
        return ray_stats(ray_path, json, verbose, o.width);
    }
    if (!db && !n_files) {
        fprintf(stderr, "goodput pipeline: --db PATH or --otlp FILE is required (see --help)\n");
        return GP_EXIT_USAGE;
    }
    if (json && html_path) {
        fprintf(stderr, "goodput pipeline: choose one of --json and --html\n");
        return GP_EXIT_USAGE;
    }
    char err[512];
    gp_store *s = NULL;
    gp_span_set set = {0};
    for (int i = 0; i < n_files; i++)
        if (gp_otlp_load_file(files[i], &set, "goodput pipeline", err, sizeof err) != 0) {
            fprintf(stderr, "goodput pipeline: %s\n", err);
            gp_span_set_free(&set);
            return GP_EXIT_INPUT;
        }
    if (db && gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err) != 0) {
        fprintf(stderr, "goodput pipeline: %s\n", err);
        return GP_EXIT_INPUT;
    }
    if (spans && gp_store_load_spans(s, 0, INT64_MAX, 0, &set) != 0) {
        fprintf(stderr, "goodput pipeline: %s: cannot read spans: %s\n", db, gp_store_errmsg(s));
        gp_store_close(s);
        gp_span_set_free(&set);
        return GP_EXIT_FAIL;
    }
    char tmp_path[4200] = "";
    FILE *html = NULL;
    if (html_path) {
        snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%ld", html_path, (long)getpid());
        html = fopen(tmp_path, "w");
        if (!html) {
            fprintf(stderr, "goodput pipeline: cannot write %s\n", tmp_path);
            gp_store_close(s);
            gp_span_set_free(&set);
            return GP_EXIT_FAIL;
        }
        fputs("<!doctype html><html><head><meta charset=\"utf-8\"><title>goodput pipeline</title>"
              "<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:right}"
              "td:first-child{text-align:left}</style></head><body>\n",
              html);
    }
    json_t *arr = json_array();
    int found = 0, rc = 0;
    if (n_files || spans) {
        const char *where = n_files ? "the --otlp files" : db;
        rc = span_pipelines(&set, job, gpu_stages, &o, json, html, arr, stdout);
        if (rc == 0) {
            if (job)
                fprintf(stderr,
                        "goodput pipeline: no trace in %s has a root span '%s' with child spans\n",
                        where, job);
            else
                fprintf(stderr,
                        "goodput pipeline: no trace in %s has a root span with child spans "
                        "(%zu spans read)\n",
                        where, set.n);
            rc = -GP_EXIT_INPUT;
        }
        if (rc > 0) rc = 0;
    } else if (job) {
        rc = one_job(s, job, &o, json, html, arr, stdout);
        if (rc == 1) {
            fprintf(stderr, "goodput pipeline: job '%s' has no stage events in %s\n", job, db);
            rc = -GP_EXIT_INPUT;
        }
        found = rc == 0;
    } else {
        gp_job *jobs = NULL;
        size_t nj = 0;
        if (gp_store_list_jobs(s, &jobs, &nj) != 0) {
            fprintf(stderr, "goodput pipeline: %s: %s\n", db, gp_store_errmsg(s));
            rc = -GP_EXIT_FAIL;
        }
        for (size_t i = 0; i < nj && rc >= 0; i++) {
            int r = one_job(s, jobs[i].id, &o, json, html, arr, stdout);
            if (r < 0) rc = r;
            if (r == 0) found++;
        }
        free(jobs);
        if (rc >= 0 && !found) {
            fprintf(stderr, "goodput pipeline: no job in %s has stage events\n", db);
            rc = -GP_EXIT_INPUT;
        }
    }
    gp_store_close(s);
    gp_span_set_free(&set);
    if (json && rc >= 0) {
        json_t *root = json_object();
        if (db) json_object_set_new(root, "db", json_string(db));
        if (n_files) {
            json_t *fa = json_array();
            for (int i = 0; i < n_files; i++)
                json_array_append_new(fa, json_string(files[i]));
            json_object_set_new(root, "otlp", fa);
        }
        json_object_set(root, "pipelines", arr);
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(13));
        fputc('\n', stdout);
        json_decref(root);
    }
    json_decref(arr);
    if (html) {
        fputs("</body></html>\n", html);
        int bad = fclose(html) != 0;
        if (rc >= 0 && (bad || rename(tmp_path, html_path) != 0)) {
            fprintf(stderr, "goodput pipeline: cannot write %s\n", html_path);
            rc = -GP_EXIT_FAIL;
        }
        if (rc < 0) unlink(tmp_path);
    }
    return rc < 0 ? -rc : GP_EXIT_OK;
}
