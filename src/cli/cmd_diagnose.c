/* cmd_diagnose.c: `goodput diagnose`: the top findings of each job (or one job) with
 * evidence and a recommendation, ranked by badput explained, then headroom. Findings are written
 * back to the store unless it is opened read-only (--no-write). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "engine/results/job_results.h"
#include "util/term.h"
#include "engine/diagnosis/classify.h"
#include "report/findings_fmt.h"
#include "engine/diagnosis/windows.h"
#include "fleet/fleet_report.h"
#include "sim/scenario.h"
#include "store/store.h"
#include "util/dl.h"

static void usage(FILE *f) {
    fprintf(
        f, "usage: goodput diagnose --db PATH [--job ID] [--json] [--top N | --all]\n"
           "                        [--price USD_PER_GPU_H] [--slo-ttft S] [--slo-tpot S]\n"
           "                        [--slo-e2e S] [--no-write] [--wide]\n"
           "                        [--window DUR [--windows | --as-of NS]]\n\n"
           "What holds each job back, ranked by badput explained, then headroom: every finding\n"
           "names its class, scope, time range, the badput it explains (GPU-hours and dollars\n"
           "by bucket) and, never added to it, the headroom a fix recovers from productive\n"
           "time with its counterfactual, the evidence (metric = value vs\n"
           "threshold, and its source), a confidence and a concrete fix. Thresholds and their\n"
           "reasons: docs/findings.md.\n\n"
           "  --db PATH      the agent's store\n"
           "  --job ID       one job only\n"
           "  --json         machine-readable output\n"
           "  --top N        print the N costliest findings (default 10); --all for every one\n"
           "  --price USD    price per GPU-hour (default: the table in docs/findings.md, or\n"
           "                 $GOODPUT_PRICE_PER_GPU_HOUR)\n"
           "  --slo-ttft S, --slo-tpot S, --slo-e2e S   inference SLOs in seconds\n"
           "  --no-write     do not store the findings (open the store read-only)\n"
           "  --wide         text wider than 100 columns (advice not wrapped)\n"
           "  --window DUR   diagnose only the last DUR (e.g. 5m, 1h) of each job's data,\n"
           "                 with its median step time against the whole job's ideal\n"
           "  --windows      diagnose every window of DUR (default 5m) from each job's start:\n"
           "                 findings and step-time deviation over time (not stored),\n"
           "                 then one finding per episode (consecutive windows, same cause\n"
           "                 and scope) with its start, end and totals\n"
           "  --as-of NS     with --window: the store as it stood at NS (ns since the epoch,\n"
           "                 source clock), e.g. a live finding's as_of_ns from the API:\n"
           "                 repeats what the agent computed live (docs/findings.md)\n"
           "  --ledger URL   fleet findings by class from the PostgreSQL ledger (docs/fleet.md)\n");
}

static void iso(int64_t ns, char *buf, size_t cap) {
    time_t t = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%SZ", &tm);
}

/* --window / --windows: each job's last window, or all of them, diagnosed on their own. */
/* A note for each job (job, or every job) whose events retention deleted: its findings are
 * the ones stored before (engine/results/job_results.h). */
static void pruned_notes(gp_store *s, const char *job) {
    gp_job *jobs = NULL, one;
    size_t nj = 0;
    if (job) {
        snprintf(one.id, sizeof one.id, "%s", job);
        jobs = &one;
        nj = 1;
    } else if (gp_store_list_jobs(s, &jobs, &nj) < 0)
        return;
    for (size_t i = 0; i < nj; i++) {
        int64_t before = -1;
        char when[32];
        if (gp_store_events_pruned(s, jobs[i].id, &before) != 1) continue;
        iso(before, when, sizeof when);
        printf("note: %s: events deleted by retention (those before %s); only its stored"
               " findings are known (shown with the options they were stored with)\n",
               jobs[i].id, when);
    }
    if (!job) free(jobs);
}

static int diagnose_windows(gp_store *s, const char *db, const char *job, const gp_diag_opts *o,
                            int64_t window_ns, int last_only, int64_t as_of_ns, int json,
                            size_t top, int width) {
    char err[512];
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (!job && gp_store_list_jobs(s, &jobs, &nj) < 0) {
        fprintf(stderr, "goodput diagnose: cannot list jobs: %s\n", gp_store_errmsg(s));
        return GP_EXIT_FAIL;
    }
    if (job) {
        gp_job j;
        int found = gp_store_get_job(s, job, &j);
        if (found <= 0) {
            fprintf(stderr, "goodput diagnose: no job '%s' in %s\n", job, db);
            return found < 0 ? GP_EXIT_FAIL : GP_EXIT_INPUT;
        }
        /* its events deleted by retention: one line, before any header */
        if (gp_store_events_pruned_err(s, job, err, sizeof err) != 0) {
            fprintf(stderr, "goodput diagnose: %s\n", err);
            return GP_EXIT_FAIL;
        }
    }
    json_t *root = json ? json_object() : NULL, *arr = json ? json_array() : NULL;
    json_t *eps = json && !last_only ? json_array() : NULL;
    if (json) {
        json_object_set_new(root, "db", json_string(db));
        if (job) json_object_set_new(root, "job", json_string(job));
        json_object_set_new(root, "window_s", json_real((double)window_ns / 1e9));
        json_object_set_new(root, "mode", json_string(last_only ? "last" : "all"));
        json_object_set_new(root, "as_of_ns", as_of_ns > 0 ? json_integer(as_of_ns) : json_null());
    } else
        printf("Findings in %s per %s%.0f s window%s, ranked by badput, then headroom:\n", db,
               last_only ? "last " : "", (double)window_ns / 1e9, last_only ? "" : "s");
    int rc = GP_EXIT_OK;
    json_t *pruned = NULL;
    for (size_t i = 0; i < (job ? 1 : nj); i++) {
        const char *id = job ? job : jobs[i].id;
        gp_diag_window *w = NULL;
        size_t nw = 0;
        int64_t before = -1;
        /* Of every job, one whose events retention deleted has no windows to read: it is
         * listed as unknown, not failed (asked by --job, it is an error below). */
        if (!job && gp_store_events_pruned(s, id, &before) == 1) {
            if (json) {
                if (!pruned) pruned = json_array();
                json_t *x = json_object();
                json_object_set_new(x, "job", json_string(id));
                json_object_set_new(x, "events_pruned_before_ns", json_integer(before));
                json_array_append_new(pruned, x);
            } else {
                char when[32];
                iso(before, when, sizeof when);
                printf("\n== %s  events deleted by retention (those before %s): windows unknown\n",
                       id, when);
            }
            continue;
        }
        if (gp_diagnose_windows_as_of(s, id, o, window_ns, last_only, as_of_ns, &w, &nw, err,
                                      sizeof err) < 0) {
            fprintf(stderr, "goodput diagnose: %s\n", err);
            rc = GP_EXIT_FAIL;
            break;
        }
        for (size_t k = 0; k < nw; k++) {
            if (json) {
                json_t *x = json_object();
                json_object_set_new(x, "job", json_string(id));
                json_object_set_new(x, "t0_ns", json_integer(w[k].t0_ns));
                json_object_set_new(x, "t1_ns", json_integer(w[k].t1_ns));
                json_object_set_new(x, "steps", json_integer(w[k].steps));
                json_object_set_new(x, "median_step_s",
                                    w[k].median_step_s > 0 ? json_real(w[k].median_step_s)
                                                           : json_null());
                json_object_set_new(x, "ideal_step_s",
                                    w[k].ideal_step_s > 0 ? json_real(w[k].ideal_step_s)
                                                          : json_null());
                json_object_set_new(x, "step_deviation",
                                    w[k].deviation_known ? json_real(w[k].deviation) : json_null());
                json_object_set_new(x, "gpu_util_mean",
                                    w[k].gpu_util_mean >= 0 ? json_real(w[k].gpu_util_mean)
                                                            : json_null());
                json_object_set_new(x, "findings", gp_findings_json(w[k].findings, w[k].n, top));
                json_array_append_new(arr, x);
            } else {
                char a[32], b[32];
                iso(w[k].t0_ns, a, sizeof a);
                iso(w[k].t1_ns, b, sizeof b);
                /* the window, then its step time on a line of its own: both fit 100 columns */
                printf("\n");
                gp_wrap_printf(stdout, 3, width, "== %s  %s .. %s", id, a, b);
                if (w[k].deviation_known) {
                    /* whole percent; a deviation that rounds to 0 is "+0%", never "-0%" */
                    double pct = round(100 * w[k].deviation);
                    if (pct == 0) pct = 0;
                    printf("   median step %.3f s, %+.0f%% vs the job's ideal %.3f s\n",
                           w[k].median_step_s, pct, w[k].ideal_step_s);
                }
                printf("\n");
                gp_findings_print_w(stdout, w[k].findings, w[k].n, top, width);
            }
        }
        /* every window: the same cause on the same scope in consecutive windows is one
         * episode, one finding with its start, end and totals */
        gp_finding *ep = NULL;
        int ne = last_only ? 0 : gp_diag_windows_episodes(w, nw, &ep);
        if (ne < 0) {
            fprintf(stderr, "goodput diagnose: out of memory merging episodes\n");
            rc = GP_EXIT_FAIL;
        } else if (eps) {
            json_t *a = gp_findings_json(ep, (size_t)ne, top);
            size_t idx;
            json_t *v;
            json_array_foreach(a, idx, v) json_array_append(eps, v);
            json_decref(a);
        } else if (!last_only && ne > 0) {
            printf("\n== %s  episodes (consecutive windows with the same cause on the same scope "
                   "merged)\n\n",
                   id);
            gp_findings_print(stdout, ep, (size_t)ne, top);
        }
        free(ep);
        gp_diag_windows_free(w, nw);
        if (rc != GP_EXIT_OK) break;
    }
    free(jobs);
    if (json) {
        json_object_set_new(root, "windows", arr);
        if (eps) json_object_set_new(root, "episodes", eps);
        if (pruned) json_object_set_new(root, "events_pruned", pruned); /* only then */
        if (rc == GP_EXIT_OK) {
            json_dumpf(
                root, stdout,
                JSON_INDENT(2) |
                    JSON_REAL_PRECISION(13) /* as the API (serve/api.c): one number, one text */);
            fputc('\n', stdout);
        }
        json_decref(root);
    }
    return rc;
}

int gp_cmd_diagnose(int argc, char **argv) {
    static const struct option opts[] = {
        {"db", required_argument, 0, 'd'},
        {"job", required_argument, 0, 'j'},
        {"json", no_argument, 0, 'J'},
        {"top", required_argument, 0, 't'},
        {"all", no_argument, 0, 'a'},
        {"price", required_argument, 0, 'p'},
        {"slo-ttft", required_argument, 0, 'T'},
        {"slo-tpot", required_argument, 0, 'P'},
        {"slo-e2e", required_argument, 0, 'E'},
        {"no-write", no_argument, 0, 'n'},
        {"ledger", required_argument, 0, 'L'}, /* fleet findings from PostgreSQL */
        {"window", required_argument, 0, 'w'},
        {"windows", no_argument, 0, 'W'},
        {"as-of", required_argument, 0, 'A'},
        {"wide", no_argument, 0, 'X'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *db = NULL, *job = NULL, *ledger = NULL;
    int json = 0, all_windows = 0, wide = 0;
    int64_t window_ns = 0, as_of_ns = 0;
    long top = 10;
    gp_diag_opts o = {0};
    optind = 1;
    int c;
    opterr = 0; /* one line of our own instead of getopt's line plus the usage */
    while ((c = getopt_long(argc, argv, "hd:j:", opts, NULL)) != -1) {
        char *end = NULL;
        double v = 0;
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
        case 'X':
            wide = 1;
            break;
        case 'L':
            ledger = optarg;
            break;
        case 'w':
            if (gp_parse_duration_ns(optarg, &window_ns) < 0 || window_ns <= 0) {
                fprintf(stderr, "goodput diagnose: --window: '%s' is not a duration like 5m\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'W':
            all_windows = 1;
            break;
        case 'A': {
            long long v = strtoll(optarg, &end, 10);
            if (*end || v <= 0) {
                fprintf(stderr,
                        "goodput diagnose: --as-of: '%s' is not a time in ns since the epoch\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            as_of_ns = (int64_t)v;
            break;
        }
        case 'a':
            top = 0;
            break;
        case 'n':
            o.no_write = 1;
            break;
        case 't':
            top = strtol(optarg, &end, 10);
            if (*end || top < 0) {
                fprintf(stderr, "goodput diagnose: --top: '%s' is not a count\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'p':
        case 'T':
        case 'P':
        case 'E':
            v = strtod(optarg, &end);
            if (*end || v <= 0) {
                fprintf(stderr, "goodput diagnose: '%s' is not a positive number\n", optarg);
                return GP_EXIT_USAGE;
            }
            if (c == 'p')
                o.price_per_gpu_h = v;
            else if (c == 'T')
                o.slo.ttft_s = v;
            else if (c == 'P')
                o.slo.tpot_s = v;
            else
                o.slo.e2e_s = v;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr,
                    "goodput diagnose: unknown or incomplete option '%s' (see goodput diagnose "
                    "--help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (ledger && optind == argc) {
        if (gp_dl_require("pq") != 0) return GP_EXIT_FAIL; /* said on stderr */
        gp_fleet_report_opts fo = {.url = ledger, .json = json, .top = (int)top};
        char lerr[512];
        if (gp_fleet_diagnose(&fo, stdout, lerr, sizeof lerr) == 0) return GP_EXIT_OK;
        fprintf(stderr, "goodput diagnose: %s\n", lerr);
        return GP_EXIT_FAIL;
    }
    if (!db || optind < argc) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    if (as_of_ns > 0 && window_ns <= 0) {
        fprintf(stderr, "goodput diagnose: --as-of needs --window DUR\n");
        return GP_EXIT_USAGE;
    }
    if (all_windows && window_ns <= 0) window_ns = 300LL * 1000000000LL;
    if (window_ns > 0) o.no_write = 1; /* the store keeps whole-job findings */
    char err[512];
    if (access(db, F_OK) != 0) { /* never create an empty store by diagnosing it */
        fprintf(stderr, "goodput diagnose: %s: no such file (run `goodput agent` first)\n", db);
        return GP_EXIT_INPUT;
    }
    gp_store *s;
    /* Checked read-only first: storing findings must not turn an empty or foreign file
     * into a store (a writable open would create the schema in it). */
    int orc = gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err);
    if (orc == 0 && !o.no_write) {
        gp_store *w;
        /* A store we may not write (a read-only mount, someone else's file) is still
         * diagnosed; its findings are just not saved. */
        if (gp_store_open(db, 0, &w, err, sizeof err) == 0) {
            gp_store_close(s);
            s = w;
        } else {
            o.no_write = 1;
        }
    }
    if (orc != 0) {
        fprintf(stderr, "goodput diagnose: %s\n", err);
        return GP_EXIT_INPUT;
    }
    if (window_ns > 0) {
        int wrc = diagnose_windows(s, db, job, &o, window_ns, !all_windows, as_of_ns, json,
                                   (size_t)top, gp_text_width(wide));
        gp_store_close(s);
        return wrc;
    }
    gp_finding *f = NULL;
    size_t n = 0;
    /* Ended jobs' stored diagnoses, where they are what computing gives (job_results.h). */
    gp_job_results *stored = gp_job_results_open(s, NULL, &o);
    gp_job_results_use(&o, stored);
    int rc = job ? gp_diagnose_job(s, job, &o, &f, &n, err, sizeof err)
                 : gp_diagnose_all(s, &o, &f, &n, err, sizeof err);
    gp_job_results_close(stored);
    o.stored = NULL;
    if (rc != 0) {
        fprintf(stderr, "goodput diagnose: %s\n", err);
        gp_store_close(s);
        return job && strstr(err, "no job") ? GP_EXIT_INPUT : GP_EXIT_FAIL;
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "db", json_string(db));
        if (job) json_object_set_new(root, "job", json_string(job));
        json_object_set_new(root, "findings", gp_findings_json(f, n, (size_t)top));
        /* the metrics behind the findings, per job */
        json_t *jm = json_array();
        gp_job *jobs = NULL;
        size_t nj = 0;
        if (job) {
            json_t *m = gp_job_metrics_json(s, job, &o.slo, o.price_per_gpu_h, err, sizeof err);
            if (m) json_array_append_new(jm, m);
        } else if (gp_store_list_jobs(s, &jobs, &nj) == 0) {
            for (size_t i = 0; i < nj; i++) {
                json_t *m =
                    gp_job_metrics_json(s, jobs[i].id, &o.slo, o.price_per_gpu_h, err, sizeof err);
                int64_t before = -1;
                /* events deleted by retention: its metrics are unknown (its findings are
                 * the stored ones), said rather than left out */
                if (!m && gp_store_events_pruned(s, jobs[i].id, &before) == 1) {
                    m = json_object();
                    json_object_set_new(m, "job", json_string(jobs[i].id));
                    json_object_set_new(m, "events_pruned_before_ns", json_integer(before));
                }
                if (m) json_array_append_new(jm, m);
            }
        }
        free(jobs);
        json_object_set_new(root, "jobs", jm);
        json_dumpf(root, stdout,
                   JSON_INDENT(2) | JSON_REAL_PRECISION(
                                        13) /* as the API (serve/api.c): one number, one text */);
        fputc('\n', stdout);
        json_decref(root);
    } else {
        printf("Findings in %s%s%s, ranked by badput explained, then headroom:\n\n", db,
               job ? " for job " : "", job ? job : "");
        gp_findings_print_w(stdout, f, n, (size_t)top, gp_text_width(wide));
        pruned_notes(s, job);
    }
    free(f);
    gp_store_close(s);
    return GP_EXIT_OK;
}
