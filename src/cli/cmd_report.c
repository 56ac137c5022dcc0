/* cmd_report.c: `goodput report`: per-job GPU-hours, readiness, activity, energy,
 * progress, goodput and badput from a store. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/exit_codes.h"
#include "util/term.h"
#include "engine/accounting/job_summary.h"
#include "engine/results/job_results.h"
#include "fleet/fleet_report.h"
#include "report/html_report.h"
#include "util/dl.h"
#include "report/job_report.h"
#include "report/rollup_note.h"
#include "report/findings_fmt.h"
#include "report/report_hooks.h"
#include "store/read_pool.h"

static void usage(FILE *f) {
    fprintf(f, "usage: goodput report --db PATH [--job ID] [--json] [--html FILE] [--slo-ttft S]\n"
               "                      [--slo-tpot S] [--slo-e2e S] [--wide] [--threads N]\n"
               "       goodput report --ledger URL [--by GROUP] [--json]\n\n"
               "Per job: allocated GPU-hours, queue wait, time to ready, busy GPU-hours (integral\n"
               "of gpu_util), mean SM/tensor/DRAM activity, energy (from the GPU energy counter),\n"
               "progress, goodput and badput by cause (shares of allocated GPU-time).\n"
               "Unknown values print as '-' (null in JSON), never as 0.\n\n"
               "  --db PATH        the agent's store\n"
               "  --job ID         one job only\n"
               "  --json           machine-readable output\n"
               "  --html FILE      a self-contained page (inline SVG charts, no JavaScript);\n"
               "                   with --json the JSON still goes to stdout\n"
               "  --slo-ttft S     inference: time-to-first-token SLO in seconds\n"
               "  --slo-tpot S     inference: time-per-output-token SLO in seconds\n"
               "  --slo-e2e S      inference: end-to-end latency SLO in seconds\n"
               "  --wide           text wider than 100 columns (whole job ids, unwrapped)\n"
               "  --threads N      compute the jobs on N threads (default 1: a report usually\n"
               "                   reads a live agent's store, next to the agent, and most\n"
               "                   of its jobs' results are stored; the same report whatever\n"
               "                   N); GOODPUT_REPORT_THREADS=N overrides it, =1 forces one\n"
               "  --ledger URL     fleet report from the PostgreSQL ledger instead of a store\n"
               "  --by GROUP       with --ledger: cluster (default), partition, user, gpu_model,\n"
               "                   host or job\n");
}

/* One job's summary for gp_read_pool_run: rc 1 (stored, done before), 0 (computed) or
 * -1 (err), all in the job's own slot. */
typedef struct summary_par {
    const gp_job *jobs;
    const gp_summary_opts *so;
    gp_job_summary *sum;
    int *rc;
    char (*err)[512];
} summary_par;

static void summary_task(gp_store *conn, size_t i, void *ctx) {
    summary_par *p = ctx;
    if (p->rc[i] == 1) return;
    p->rc[i] = gp_job_summary_compute(conn, p->jobs[i].id, p->so, &p->sum[i], p->err[i],
                                      sizeof p->err[i]) != 0
                   ? -1
                   : 0;
}

int gp_report_run(const char *db, const char *job, int json, const gp_slo *slo, FILE *out,
                  int width, int threads) {
    char err[512];
    gp_store *s;
    if (gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err) != 0) {
        fprintf(stderr, "goodput report: %s\n", err);
        return GP_EXIT_INPUT;
    }
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (job) {
        jobs = calloc(1, sizeof *jobs);
        int found = jobs ? gp_store_get_job(s, job, jobs) : -1;
        if (found <= 0) {
            fprintf(stderr, "goodput report: job '%s' is not in %s\n", job, db);
            free(jobs);
            gp_store_close(s);
            return GP_EXIT_INPUT;
        }
        nj = 1;
    } else if (gp_store_list_jobs(s, &jobs, &nj) != 0) {
        fprintf(stderr, "goodput report: %s: %s\n", db, gp_store_errmsg(s));
        gp_store_close(s);
        return GP_EXIT_FAIL;
    }
    gp_job_summary *sum = calloc(nj ? nj : 1, sizeof *sum);
    gp_summary_opts so = {0};
    if (slo) so.slo = *slo;
    /* Ended jobs' stored results where they are exactly what computing gives
     * (engine/results/job_results.h); the findings section uses them too. */
    gp_diag_opts dopt = {0}; /* the findings section's options (findings_fmt.c) */
    gp_job_results *stored = gp_job_results_open(s, &so, &dopt);
    /* Stored results first, on this thread (their statements belong to s); the others
     * computed on `threads` threads into their own slots (store/read_pool.h), then
     * compacted in job order: the same summaries in the same order whatever the count. */
    summary_par sp = {jobs, &so, sum, calloc(nj ? nj : 1, sizeof *sp.rc),
                      calloc(nj ? nj : 1, sizeof *sp.err)};
    if (!sum || !sp.rc || !sp.err) {
        fprintf(stderr, "goodput report: out of memory\n");
        free(sp.rc);
        free(sp.err);
        gp_job_results_close(stored);
        free(sum);
        free(jobs);
        gp_store_close(s);
        return GP_EXIT_FAIL;
    }
    for (size_t i = 0; i < nj; i++)
        sp.rc[i] = gp_job_results_summary(stored, jobs[i].id, &sum[i]) == 1 ? 1 : 0;
    gp_read_pool_run(s, nj, gp_read_threads(threads), summary_task, &sp);
    size_t ns = 0;
    for (size_t i = 0; i < nj; i++) {
        if (sp.rc[i] < 0) {
            fprintf(stderr, "goodput report: %s\n", sp.err[i]);
            continue;
        }
        if (ns != i) sum[ns] = sum[i];
        ns++;
    }
    free(sp.rc);
    free(sp.err);
    /* the findings reuse it, and diagnose on as many threads */
    gp_report_acct acct = {sum, ns, so.slo, stored, gp_read_threads(threads)};
    if (json) {
        json_t *root = json_object(), *arr = json_array();
        for (size_t i = 0; i < ns; i++) {
            json_t *o = gp_report_json_job(&sum[i]);
            if (sum[i].events_pruned_ns <= 0) gp_report_hourly_json(o, s, sum[i].job.id);
            json_array_append_new(arr, o);
        }
        json_object_set_new(root, "db", json_string(db));
        json_object_set_new(root, "jobs", arr);
        json_object_set_new(root, "owners", gp_report_owners_json(sum, ns));
        gp_report_extend_json(s, job, root, &acct);
        json_dumpf(root, out,
                   JSON_INDENT(2) | JSON_REAL_PRECISION(
                                        13) /* as the API (serve/api.c): one number, one text */);
        fputc('\n', out);
        json_decref(root);
    } else {
        if (ns == 0)
            fprintf(out, "No jobs in %s yet.\n", db);
        else {
            gp_report_text(out, sum, ns, width);
            gp_report_hourly_notes(out, s, sum, ns);
            gp_report_owners_text(out, sum, ns, width);
        }
        gp_report_extend_text(s, job, out, width, &acct);
    }
    if (getenv("GOODPUT_RESULTS_STATS")) { /* tests and benches: what was served */
        uint64_t a, b;
        gp_job_results_counts(stored, &a, &b);
        fprintf(stderr, "goodput report: stored results served: %llu summaries, %llu diagnoses\n",
                (unsigned long long)a, (unsigned long long)b);
    }
    gp_job_results_close(stored);
    free(sum);
    free(jobs);
    gp_store_close(s);
    return GP_EXIT_OK;
}

int gp_cmd_report(int argc, char **argv) {
    const char *db = NULL, *job = NULL, *ledger = NULL, *by = NULL, *html = NULL;
    int json = 0, wide = 0, threads = 1;
    gp_slo slo = {0};
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"job", required_argument, 0, 'j'},
                                         {"json", no_argument, 0, 'J'},
                                         {"slo-ttft", required_argument, 0, 't'},
                                         {"slo-tpot", required_argument, 0, 'p'},
                                         {"slo-e2e", required_argument, 0, 'e'},
                                         {"ledger", required_argument, 0, 'L'},
                                         {"by", required_argument, 0, 'b'},
                                         {"html", required_argument, 0, 'H'},
                                         {"wide", no_argument, 0, 'W'},
                                         {"threads", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        double *slot = NULL;
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'j':
            job = optarg;
            break;
        case 'J':
            json = 1;
            break;
        case 'L':
            ledger = optarg;
            break;
        case 'b':
            by = optarg;
            break;
        case 'H':
            html = optarg;
            break;
        case 'W':
            wide = 1;
            break;
        case 'n':
            threads = (int)strtol(optarg, &end, 10);
            if (*end || threads < 1 || threads > 64) {
                fprintf(stderr, "goodput report: --threads '%s': expected 1 to 64\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 't':
            slot = &slo.ttft_s;
            break;
        case 'p':
            slot = &slo.tpot_s;
            break;
        case 'e':
            slot = &slo.e2e_s;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(
                stderr,
                "goodput report: unknown or incomplete option '%s' (see goodput report --help)\n",
                argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
        if (slot) {
            *slot = strtod(optarg, &end);
            if (*end || *slot <= 0) {
                fprintf(stderr, "goodput report: %s '%s': expected seconds > 0\n", argv[optind - 2],
                        optarg);
                return GP_EXIT_USAGE;
            }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "goodput report: unexpected argument '%s'\n", argv[optind]);
        return GP_EXIT_USAGE;
    }
    if (ledger) {
        if (gp_dl_require("pq") != 0) return GP_EXIT_FAIL; /* said on stderr */
        gp_fleet_report_opts fo = {.url = ledger, .group_by = by, .json = json};
        char err[512];
        if (gp_fleet_report(&fo, stdout, err, sizeof err) == 0) return GP_EXIT_OK;
        fprintf(stderr, "goodput report: %s\n", err);
        return GP_EXIT_FAIL;
    }
    if (!db) {
        fprintf(stderr, "goodput report: --db PATH is required (see goodput report --help)\n");
        return GP_EXIT_USAGE;
    }
    if (html) {
        char err[512];
        if (gp_report_html(db, job, &slo, html, err, sizeof err) != 0) {
            fprintf(stderr, "goodput report: %s\n", err);
            return GP_EXIT_INPUT;
        }
        if (!json) return GP_EXIT_OK; /* --json --html writes both */
    }
    return gp_report_run(db, job, json, &slo, stdout, gp_text_width(wide), threads);
}
