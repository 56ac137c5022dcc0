/* cmd_workflows.c: `goodput workflows`: multi-step and agentic workflows from
 * OpenTelemetry spans (docs/workflows.md): per workflow kind and step, joined to the GPUs
 * of the engines that served the model calls when a store is given. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "util/term.h"
#include "otlp/otlp.h"
#include "otlp/otlp_file.h"
#include "otlp/wf_store.h"
#include "otlp/workflows.h"
#include "store/spans.h"
#include "store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput workflows (--otlp FILE... | --db PATH) [--db PATH] [--json | --html "
            "FILE]\n"
            "                         [--wide]\n\n"
            "Workflows from OpenTelemetry spans (GenAI semantic conventions): per workflow kind\n"
            "(root span name) the count, success rate, end-to-end p50/p95, time by step kind\n"
            "(model, tool, retrieval, other, queue), the critical path, and with a store the\n"
            "GPU-seconds, $ and joules per successful workflow, joined to the engine that served\n"
            "each model call (service.name = the engine's job id or name). Findings: tool_bound,\n"
            "serial_steps, retry_waste.\n\n"
            "  --otlp FILE      an OTLP/JSON export (ExportTraceServiceRequest per file or per\n"
            "                   line, e.g. the collector's file exporter); repeatable; .gz ok\n"
            "  --db PATH        the agent's store: spans it received on POST /v1/traces (when no\n"
            "                   --otlp) and the GPU samples to join\n"
            "  --since DUR      with --db alone: spans of the last DUR seconds (default: all)\n"
            "  --price-gpu-hour USD  price per GPU-hour (default: price table)\n"
            "  --json           machine-readable output\n"
            "  --html FILE      an HTML page with waterfalls of a typical and a slow workflow\n"
            "  --wide           text wider than 100 columns (lines not wrapped)\n");
}

int gp_cmd_workflows(int argc, char **argv) {
    static const struct option opts[] = {{"otlp", required_argument, 0, 'o'},
                                         {"db", required_argument, 0, 'd'},
                                         {"json", no_argument, 0, 'j'},
                                         {"html", required_argument, 0, 'H'},
                                         {"since", required_argument, 0, 's'},
                                         {"price-gpu-hour", required_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},
                                         {"wide", no_argument, 0, 'w'},
                                         {0, 0, 0, 0}};
    const char *files[256];
    int n_files = 0, json = 0, wide = 0;
    const char *db = NULL, *html = NULL;
    double since_s = 0, price = 0;
    int c;
    optind = 1;
    opterr = 0; /* one line of our own, not getopt's and the whole usage */
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'o':
            if (n_files == 256) {
                fprintf(stderr, "goodput workflows: at most 256 --otlp files\n");
                return GP_EXIT_USAGE;
            }
            files[n_files++] = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'w':
            wide = 1;
            break;
        case 'j':
            json = 1;
            break;
        case 'H':
            html = optarg;
            break;
        case 's':
        case 'p': {
            double *dst = c == 's' ? &since_s : &price;
            *dst = strtod(optarg, &end);
            if (*end || end == optarg || *dst < 0) {
                fprintf(stderr, "goodput workflows: --%s '%s': expected a number >= 0\n",
                        c == 's' ? "since" : "price-gpu-hour", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        }
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr,
                    "goodput workflows: unknown or incomplete option '%s' (see goodput workflows "
                    "--help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    /* more files after the options: `--otlp a.json b.json` */
    for (; optind < argc && n_files > 0 && n_files < 256; optind++)
        files[n_files++] = argv[optind];
    if (optind < argc || (!n_files && !db)) {
        fprintf(stderr, "goodput workflows: %s (see goodput workflows --help)\n",
                optind < argc ? "unexpected argument" : "give --otlp FILE... or --db PATH");
        return GP_EXIT_USAGE;
    }
    gp_span_set set = {0};
    char err[600];
    int rc = GP_EXIT_OK;
    gp_store *st = NULL;
    gp_wf_engine *eng = NULL;
    size_t n_eng = 0;
    for (int i = 0; i < n_files; i++)
        if (gp_otlp_load_file(files[i], &set, "goodput workflows", err, sizeof err) != 0) {
            fprintf(stderr, "goodput workflows: %s\n", err);
            gp_span_set_free(&set);
            return GP_EXIT_INPUT;
        }
    if (db) {
        if (gp_store_open(db, GP_STORE_READONLY, &st, err, sizeof err) != 0) {
            fprintf(stderr, "goodput workflows: %s\n", err);
            gp_span_set_free(&set);
            return GP_EXIT_FAIL;
        }
        if (!n_files) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
            int64_t t0 = since_s > 0 ? now - (int64_t)(since_s * 1e9) : 0;
            if (gp_store_load_spans(st, t0, INT64_MAX, 0, &set) != 0) {
                fprintf(stderr, "goodput workflows: %s: cannot read spans: %s\n", db,
                        gp_store_errmsg(st));
                rc = GP_EXIT_FAIL;
                goto out;
            }
        }
        if (gp_wf_engines_from_store(st, set.v, set.n, &eng, &n_eng, &price, err, sizeof err) !=
            0) {
            fprintf(stderr, "goodput workflows: %s\n", err);
            rc = GP_EXIT_FAIL;
            goto out;
        }
    } else if (price <= 0) {
        price = -1;
    }
    if (set.n == 0) {
        fprintf(stderr, "goodput workflows: no spans%s\n",
                n_files ? " in the files" : " in the store (POST /v1/traces to the agent)");
        rc = GP_EXIT_INPUT;
        goto out;
    }
    gp_wf_report r;
    if (gp_wf_analyze(set.v, set.n, eng, n_eng, price, &r) != 0) {
        fprintf(stderr, "goodput workflows: out of memory\n");
        rc = GP_EXIT_FAIL;
        goto out;
    }
    if (html) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp%ld", html, (long)getpid());
        FILE *f = fopen(tmp, "w");
        int ok = f && gp_wf_html(f, &r, eng, n_eng) == 0;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok || rename(tmp, html) != 0) {
            fprintf(stderr, "goodput workflows: --html %s: %s\n", html, strerror(errno));
            unlink(tmp);
            rc = GP_EXIT_FAIL;
        }
    }
    if (json) {
        json_t *o = gp_wf_json(&r, eng, n_eng);
        json_object_set_new(o, "dropped_spans", json_integer((json_int_t)set.dropped));
        json_dumpf(o, stdout, JSON_INDENT(1));
        fputc('\n', stdout);
        json_decref(o);
    } else if (!html) {
        gp_wf_print(stdout, &r, eng, n_eng, gp_text_width(wide));
    }
    gp_wf_report_free(&r);
out:
    gp_wf_engines_free(eng, n_eng);
    free(eng);
    gp_store_close(st);
    gp_span_set_free(&set);
    return rc;
}
