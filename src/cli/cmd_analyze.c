/* cmd_analyze.c: `goodput analyze --prometheus URL`: the report of a whole cluster from the
 * Prometheus it already runs (docs/analyze.md).
 *
 * Reads the range through the HTTP API into a store (a temporary one, or --db PATH kept for
 * `goodput compare`), diagnoses it, and prints the same report as `goodput report` under a
 * header naming the Prometheus, the range and the step. Any failure while reading (server
 * down, HTTP error, conflicting labels) prints one line and exits non-zero before anything
 * is printed on stdout: a partial read is never presented as a report. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyze/prom_map.h"
#include "analyze/prom_time.h"
#include "analyze/promql_client.h"
#include "cli/exit_codes.h"
#include "engine/diagnosis/classify.h"
#include "report/html_report.h"
#include "util/dl.h"
#include "store/read_pool.h"
#include "util/progress.h"
#include "util/term.h"

int gp_report_run(const char *db, const char *job, int json, const gp_slo *slo, FILE *out,
                  int width, int threads);

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void usage(FILE *f) {
    fprintf(
        f, "usage: goodput analyze --prometheus URL --from T --to T [--step 30s]\n"
           "                       [--selector '{...}'] [--json | --html FILE] [--db PATH]\n"
           "                       [--bearer-token-file F] [--basic-auth USER:PASS] [--ca-file F]\n"
           "                       [--timeout S] [--compress] [--wide] [--threads N]\n\n"
           "The goodput report of a whole cluster from the Prometheus (Thanos, Mimir,\n"
           "VictoriaMetrics) that already holds dcgm-exporter or nvidia_gpu_exporter metrics,\n"
           "kube-state-metrics and vLLM/SGLang/TGI serving metrics. Families that are missing\n"
           "make the report say less (said once), never fail it.\n\n"
           "  --prometheus URL   the server's base URL, e.g. http://prometheus:9090\n"
           "  --from T, --to T   RFC 3339, unix seconds, or relative: now, now-6h, now-7d\n"
           "  --step D           resolution (Go duration, default 30s; at least the scrape\n"
           "                     interval)\n"
           "  --selector '{..}'  label matchers added to every query, e.g. '{namespace=\"ml\"}'\n"
           "  --db PATH          keep what was read in a store (for report, diagnose, compare)\n"
           "  --json             machine-readable report\n"
           "  --html FILE        a self-contained page\n"
           "  --bearer-token-file F, --basic-auth USER:PASS, --ca-file F   access\n"
           "  --timeout S        per request (default 120)\n"
           "  --wide             text wider than 100 columns (whole job ids, lines not wrapped)\n"
           "  --threads N        the report's jobs on N threads (default 2 on a machine with\n"
           "                     two CPUs or more, else 1; the same report whatever N);\n"
           "                     GOODPUT_REPORT_THREADS=N overrides it, =1 forces one\n");
}

/* The store file and its WAL side files. */
static void remove_store(const char *path) {
    char side[700];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static int open_store(const char *db, int temporary, gp_store **s, char *err, size_t errlen) {
    if (gp_store_open(db, 0, s, err, errlen) != 0) return -1;
    if (temporary)
        /* a temporary store is deleted at exit: no crash safety needed, so no WAL or sync
         * (a fifth of the store's write time, docs/benchmarks.md); 64 MiB of page cache
         * keeps a chunk's inserts and the report's reads off pread/pwrite */
        sqlite3_exec(gp_store_db(*s),
                     "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536",
                     NULL, NULL, NULL);
    return 0;
}

/* The shared bar (util/progress.h): on a terminal, past 2 s, erased at the end. */
static void on_progress(void *ctx, double done) {
    gp_progress_update(ctx, done);
}

static void fmt_time(int64_t s, char *buf, size_t cap) {
    time_t t = (time_t)s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static json_t *header_json(const char *url, int64_t t0, int64_t t1, int64_t step,
                           const char *selector, const gp_prom_map_result *r,
                           const gp_prom_client *cl) {
    char a[32], b[32];
    fmt_time(t0, a, sizeof a);
    fmt_time(t1, b, sizeof b);
    json_t *h = json_object();
    json_object_set_new(h, "prometheus", json_string(url));
    json_object_set_new(h, "from", json_string(a));
    json_object_set_new(h, "to", json_string(b));
    json_object_set_new(h, "step_s", json_integer(step));
    json_object_set_new(h, "selector", selector ? json_string(selector) : json_null());
    json_object_set_new(h, "gpu_source", json_string(r->gpu_source));
    json_object_set_new(h, "kube_state_metrics", json_boolean(r->kube_state));
    json_object_set_new(h, "serving_metrics", json_boolean(r->serving));
    json_object_set_new(h, "devices", json_integer((json_int_t)r->devices));
    json_object_set_new(h, "samples", json_integer((json_int_t)r->samples));
    json_object_set_new(h, "allocations", json_integer((json_int_t)r->allocations));
    json_object_set_new(h, "jobs", json_integer((json_int_t)r->jobs));
    json_object_set_new(h, "requests", json_integer(gp_prom_requests(cl)));
    json_object_set_new(h, "split_queries", json_integer(gp_prom_splits(cl)));
    json_object_set_new(h, "chunks", json_integer((json_int_t)r->chunks));
    json_object_set_new(h, "raw_samples", json_boolean(r->raw_samples));
    json_t *n = json_array();
    for (int i = 0; i < r->n_notes; i++)
        json_array_append_new(n, json_string(r->notes[i]));
    json_object_set_new(h, "notes", n);
    return h;
}

static void header_text(FILE *f, const char *url, int64_t t0, int64_t t1, int64_t step,
                        const char *selector, const gp_prom_map_result *r, int width) {
    char a[32], b[32];
    fmt_time(t0, a, sizeof a);
    fmt_time(t1, b, sizeof b);
    gp_wrap_printf(f, 2, width, "Prometheus %s, %s to %s, step %llds%s%s", url, a, b,
                   (long long)step, selector ? ", selector " : "", selector ? selector : "");
    gp_wrap_printf(f, 2, width,
                   "Read: %zu GPUs from %s, %zu samples, %zu allocations, %zu jobs; "
                   "kube-state-metrics: %s; serving metrics: %s",
                   r->devices, r->gpu_source, r->samples, r->allocations, r->jobs,
                   r->kube_state ? "yes" : "no", r->serving ? "yes" : "no");
    for (int i = 0; i < r->n_notes; i++)
        gp_wrap_print(f, "Note: ", 6, r->notes[i], width);
    fputc('\n', f);
}

/* The HTML page from report/html_report.c with the header inserted after <body>. */
static int html_with_header(const char *db, const char *path, const char *url, int64_t t0,
                            int64_t t1, int64_t step, const char *selector,
                            const gp_prom_map_result *r, char *err, size_t errlen) {
    if (gp_report_html(db, NULL, NULL, path, err, errlen) != 0) return -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *page = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&page, &len);
    char buf[65536];
    size_t n;
    while (m && (n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, m);
    fclose(f);
    if (!m) return -1;
    fclose(m);
    char *body = strstr(page, "<body>");
    char *hdr = NULL;
    size_t hl = 0;
    FILE *h = open_memstream(&hdr, &hl);
    if (!h) {
        free(page);
        return -1;
    }
    fputs("<section class=\"analyze-source\"><pre>", h);
    char *txt = NULL;
    size_t tl = 0;
    FILE *t = open_memstream(&txt, &tl);
    if (t) {
        header_text(t, url, t0, t1, step, selector, r, GP_TEXT_WIDTH);
        fclose(t);
        for (char *p = txt; p && *p; p++)
            if (*p == '<')
                fputs("&lt;", h);
            else if (*p == '&')
                fputs("&amp;", h);
            else
                fputc(*p, h);
        free(txt);
    }
    fputs("</pre></section>\n", h);
    fclose(h);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *o = fopen(tmp, "w");
    int ok = o != NULL;
    if (o) {
        size_t cut = body ? (size_t)(body - page) + 6 : 0;
        ok = fwrite(page, 1, cut, o) == cut && fwrite(hdr, 1, hl, o) == hl &&
             fwrite(page + cut, 1, len - cut, o) == len - cut;
        ok = (fclose(o) == 0) && ok;
    }
    free(page);
    free(hdr);
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: cannot write the page", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

int gp_cmd_analyze(int argc, char **argv) {
    const char *url = NULL, *from = NULL, *to = NULL, *step_s = "30s", *selector = NULL;
    const char *db = NULL, *html = NULL, *token = NULL, *basic = NULL, *ca = NULL;
    int json = 0, compress = 0, wide = 0;
    /* The report after the read phase is per-job work on a temporary store nothing else
     * writes: a second core halves its wall time (docs/benchmarks.md, issue 20). */
    int threads = gp_read_threads_default();
    long timeout_s = 120;
    static const struct option opts[] = {{"prometheus", required_argument, 0, 'P'},
                                         {"from", required_argument, 0, 'f'},
                                         {"to", required_argument, 0, 't'},
                                         {"step", required_argument, 0, 's'},
                                         {"selector", required_argument, 0, 'S'},
                                         {"db", required_argument, 0, 'd'},
                                         {"json", no_argument, 0, 'J'},
                                         {"html", required_argument, 0, 'H'},
                                         {"bearer-token-file", required_argument, 0, 'T'},
                                         {"basic-auth", required_argument, 0, 'B'},
                                         {"ca-file", required_argument, 0, 'C'},
                                         {"timeout", required_argument, 0, 'o'},
                                         {"compress", no_argument, 0, 'z'},
                                         {"wide", no_argument, 0, 'W'},
                                         {"threads", required_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'P':
            url = optarg;
            break;
        case 'f':
            from = optarg;
            break;
        case 't':
            to = optarg;
            break;
        case 's':
            step_s = optarg;
            break;
        case 'S':
            selector = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'J':
            json = 1;
            break;
        case 'W':
            wide = 1;
            break;
        case 'H':
            html = optarg;
            break;
        case 'T':
            token = optarg;
            break;
        case 'B':
            basic = optarg;
            break;
        case 'C':
            ca = optarg;
            break;
        case 'o': {
            char *end;
            timeout_s = strtol(optarg, &end, 10);
            if (*end || timeout_s <= 0) {
                fprintf(stderr, "goodput analyze: --timeout '%s': expected seconds > 0\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        }
        case 'z':
            compress = 1;
            break;
        case 'n': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 64) {
                fprintf(stderr, "goodput analyze: --threads '%s': expected 1 to 64\n", optarg);
                return GP_EXIT_USAGE;
            }
            threads = (int)v;
            break;
        }
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr,
                    "goodput analyze: unknown or incomplete option '%s' (see goodput analyze "
                    "--help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "goodput analyze: unexpected argument '%s'\n", argv[optind]);
        return GP_EXIT_USAGE;
    }
    if (!url || !from || !to) {
        fprintf(stderr, "goodput analyze: --prometheus URL, --from T and --to T are required "
                        "(see goodput analyze --help)\n");
        return GP_EXIT_USAGE;
    }
    if (json && html) {
        fprintf(stderr, "goodput analyze: --json and --html are exclusive\n");
        return GP_EXIT_USAGE;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    int64_t from_ms, to_ms, step_ms;
    if (gp_prom_parse_time(from, now_ms, &from_ms) != 0 ||
        gp_prom_parse_time(to, now_ms, &to_ms) != 0) {
        fprintf(stderr,
                "goodput analyze: --%s '%s': expected RFC 3339, unix seconds or now-DURATION\n",
                gp_prom_parse_time(from, now_ms, &from_ms) != 0 ? "from" : "to",
                gp_prom_parse_time(from, now_ms, &from_ms) != 0 ? from : to);
        return GP_EXIT_USAGE;
    }
    if (gp_prom_parse_duration(step_s, &step_ms) != 0 || step_ms % 1000 != 0) {
        fprintf(stderr,
                "goodput analyze: --step '%s': expected a whole number of seconds as a "
                "duration (30s, 1m)\n",
                step_s);
        return GP_EXIT_USAGE;
    }
    int64_t step = step_ms / 1000;
    int64_t t0 = (from_ms / 1000 + step - 1) / step * step, t1 = to_ms / 1000 / step * step;
    if (t1 <= t0) {
        fprintf(stderr, "goodput analyze: --to must be at least one --step after --from\n");
        return GP_EXIT_USAGE;
    }
    if (gp_dl_require("curl") != 0) return GP_EXIT_FAIL;

    char tmpdir[512] = "", tmpdb[600];
    int created_db = 0;
    if (!db) {
        const char *td = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/goodput-analyze-XXXXXX", td && *td ? td : "/tmp");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "goodput analyze: cannot create a temporary store in %s: %s\n",
                    td && *td ? td : "/tmp", strerror(errno));
            return GP_EXIT_FAIL;
        }
        snprintf(tmpdb, sizeof tmpdb, "%s/store.db", tmpdir);
        db = tmpdb;
        created_db = 1;
    } else {
        struct stat st;
        created_db = stat(db, &st) != 0;
    }
    char err[1024];
    int rc = GP_EXIT_OK;
    gp_prom_client *cl = NULL;
    gp_store *s = NULL;
    gp_prom_opts po = {.url = url,
                       .token_file = token,
                       .basic_auth = basic,
                       .ca_file = ca,
                       .timeout_ms = timeout_s * 1000,
                       .compress = compress};
    if (gp_prom_client_new(&po, &cl, err, sizeof err) != 0) {
        fprintf(stderr, "goodput analyze: %s\n", err);
        rc = GP_EXIT_USAGE;
        goto out;
    }
    if (open_store(db, tmpdir[0] != 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "goodput analyze: %s\n", err);
        rc = GP_EXIT_INPUT;
        goto out;
    }
    gp_progress prog;
    gp_progress_start(&prog, "reading Prometheus", 1.0, json);
    gp_prom_map_opts mo = {.t0_s = t0,
                           .t1_s = t1,
                           .step_s = step,
                           .selector = selector,
                           .progress = on_progress,
                           .progress_ctx = &prog};
    const char *cb = getenv("GOODPUT_ANALYZE_CELLS"); /* tests: force small chunks */
    if (cb) mo.cell_budget = (size_t)strtoul(cb, NULL, 10);
    const char *th = getenv("GOODPUT_ANALYZE_THREADS"); /* tests: 0 = no writer thread */
    if (th && th[0] == '0') mo.no_writer_thread = 1;
    /* A temporary store read only by the text or JSON report keeps only the raw rows that
     * report reads (prom_map.h prune_raw); GOODPUT_ANALYZE_PRUNE=0 keeps all (tests compare
     * both), as does GOODPUT_DIAG_RAW=1, which makes the diagnosis read every raw row. */
    const char *pe = getenv("GOODPUT_ANALYZE_PRUNE"), *dr = getenv("GOODPUT_DIAG_RAW");
    mo.prune_raw = tmpdir[0] && !html && !(pe && pe[0] == '0') && !(dr && dr[0] == '1');
    gp_prom_map_result r;
    double cpu0 = cpu_s(), cpu_read = 0, cpu_diag = 0, wall0 = wall_s(), wall_read = 0;
    int mrc = gp_prom_map_run(cl, &mo, s, &r, err, sizeof err), reread = 0;
    if (mrc == -4) { /* a pruned job shares a GPU: every raw row, in a new store */
        reread = 1;
        gp_store_close(s);
        s = NULL;
        remove_store(tmpdb);
        mo.prune_raw = 0;
        if (open_store(db, 1, &s, err, sizeof err) != 0) {
            gp_progress_end(&prog);
            fprintf(stderr, "goodput analyze: %s\n", err);
            rc = GP_EXIT_FAIL;
            goto out;
        }
        mrc = gp_prom_map_run(cl, &mo, s, &r, err, sizeof err);
    }
    gp_progress_end(&prog);
    gp_prom_client_trim(cl); /* the answers' buffers, before the report's memory peak */
    if (mrc != 0) {
        fprintf(stderr, "goodput analyze: %s\n", err);
        rc = mrc == -3 ? GP_EXIT_INPUT : GP_EXIT_FAIL;
        goto out;
    }
    cpu_read = cpu_s();
    wall_read = wall_s() - wall0;
    /* Findings are stored for a kept --db (diagnose, compare) and for the HTML page, which
     * reads them from the store; the text and JSON reports diagnose for themselves, so with
     * a temporary store this pass would only double the engine's time. */
    if (!tmpdir[0] || html) {
        gp_diag_opts dopt = {0};
        gp_finding *f = NULL;
        size_t nf = 0;
        if (gp_diagnose_all(s, &dopt, &f, &nf, err, sizeof err) != 0) {
            fprintf(stderr, "goodput analyze: %s\n", err);
            rc = GP_EXIT_FAIL;
            goto out;
        }
        free(f);
    }
    gp_store_close(s);
    s = NULL;
    cpu_diag = cpu_s();
    if (html) {
        if (html_with_header(db, html, url, t0, t1, step, selector, &r, err, sizeof err) != 0) {
            fprintf(stderr, "goodput analyze: %s\n", err);
            rc = GP_EXIT_FAIL;
            goto out;
        }
        header_text(stdout, url, t0, t1, step, selector, &r, gp_text_width(wide));
        printf("Wrote %s\n", html);
    } else if (json) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m) {
            rc = GP_EXIT_FAIL;
            goto out;
        }
        rc = gp_report_run(db, NULL, 1, NULL, m, 0, threads);
        fclose(m);
        json_error_t je;
        json_t *root = rc == GP_EXIT_OK ? json_loadb(buf, len, 0, &je) : NULL;
        free(buf);
        if (!root) {
            if (rc == GP_EXIT_OK) rc = GP_EXIT_FAIL;
            goto out;
        }
        json_object_set_new(root, "source", header_json(url, t0, t1, step, selector, &r, cl));
        if (tmpdir[0]) json_object_set_new(root, "db", json_null()); /* temporary, gone */
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(13));
        fputc('\n', stdout);
        json_decref(root);
    } else {
        /* the report is rendered to memory first so a failure prints nothing partial */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m) {
            rc = GP_EXIT_FAIL;
            goto out;
        }
        rc = gp_report_run(db, NULL, 0, NULL, m, gp_text_width(wide), threads);
        fclose(m);
        if (rc == GP_EXIT_OK) {
            header_text(stdout, url, t0, t1, step, selector, &r, gp_text_width(wide));
            fwrite(buf, 1, len, stdout);
        }
        free(buf);
    }
    if (getenv("GOODPUT_ANALYZE_PROFILE")) { /* bench/analyze: where goodput's CPU went */
        double wait_s, parse_s;
        gp_prom_times(cl, &wait_s, &parse_s);
        fprintf(stderr,
                "analyze profile: read %.2f s CPU (answers %.2f, store %.2f) in %.2f s wall, "
                "waiting on the server %.2f s wall; diagnose %.2f s CPU; report %.2f s CPU; "
                "raw rows %zu of %zu samples stored%s\n",
                cpu_read - cpu0, parse_s, r.store_cpu_s, wall_read, wait_s, cpu_diag - cpu_read,
                cpu_s() - cpu_diag, r.samples - r.raw_dropped, r.samples,
                reread ? " (read twice: a pruned job shared a GPU)" : "");
    }
out:
    if (s) gp_store_close(s);
    gp_prom_client_free(cl);
    if (rc != GP_EXIT_OK && created_db && !tmpdir[0] && db) {
        /* a --db this run created holds a partial read: remove it rather than leave a store
         * that looks complete */
        remove_store(db);
    }
    if (tmpdir[0]) {
        remove_store(tmpdb);
        rmdir(tmpdir);
    }
    return rc;
}
