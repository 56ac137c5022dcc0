/* cmd_demo.c: `goodput demo`: a simulated 8-GPU node with a mixed workload, the agent
 * watching it at accelerated speed with a live table, then the report. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <errno.h>

#include "agent/agent.h"
#include "cli/exit_codes.h"
#include "util/term.h"
#include "engine/accounting/job_summary.h"
#include "report/demo_hooks.h"
#include "sim/scenario.h"

/* examples/scenarios/demo.conf, compiled in by mk/demo.mk. */
extern const char gp_demo_scenario_conf[];

int gp_report_run(const char *db, const char *job, int json, const gp_slo *slo, FILE *out,
                  int width, int threads);

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

typedef struct {
    int tty;
    double speed;     /* simulated seconds per wall second; 0 = as fast as possible */
    int64_t total_ns; /* simulated time the run will cover */
    int64_t t0_ns;
    int frames;
    int final;
} live_ctx;

/* "about 42 s left" from the simulated time still to run at this speed; empty at speed 0
 * (as fast as possible: no rate to promise). */
static void eta(const live_ctx *c, int64_t done_ns, char *out, size_t cap) {
    out[0] = 0;
    if (c->speed <= 0 || c->total_ns <= 0 || c->final) return;
    double left_s = (double)(c->total_ns - done_ns) / 1e9 / c->speed;
    if (left_s < 0) left_s = 0;
    if (left_s >= 120)
        snprintf(out, cap, ", about %.0f min left", left_s / 60);
    else
        snprintf(out, cap, ", about %.0f s left", left_s);
}

/* The live table: one row per job, recomputed from the store after each flush. */
static void live_table(gp_agent *a, void *vctx) {
    live_ctx *c = vctx;
    gp_store *s = gp_agent_store(a);
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(s, &jobs, &nj) != 0) return;
    int64_t now = gp_agent_now_ns(a);
    if (now <= c->t0_ns) {
        free(jobs);
        return;
    }
    /* On a terminal the table redraws in place; in a log, one progress line per ten
     * refreshes and the table once at the end. */
    if (c->tty) printf("\033[H\033[2J");
    char left[64];
    eta(c, now - c->t0_ns, left, sizeof left);
    if (!c->tty && !c->final) {
        if (c->frames++ % 10 == 0)
            printf("goodput demo: %.1f of %.0f simulated minutes%s\n", (now - c->t0_ns) / 60e9,
                   c->total_ns / 60e9, left);
        fflush(stdout);
        free(jobs);
        return;
    }
    printf("goodput demo: simulated node, %.1f of %.0f simulated minutes%s%s\n\n",
           (now - c->t0_ns) / 60e9, c->total_ns / 60e9, left,
           c->final ? "" : "  (Ctrl-C to stop early)");
    printf("%-18s %-13s %4s %11s %5s %7s  %s\n", "JOB", "KIND", "GPUS", "ALLOC_GPU_H", "UTIL",
           "GOODPUT", "TOP BADPUT");
    for (size_t i = 0; i < nj; i++) {
        gp_job_summary js;
        char err[256];
        gp_summary_opts o = {.t0_ns = c->t0_ns, .t1_ns = now};
        if (gp_job_summary_compute(s, jobs[i].id, &o, &js, err, sizeof err) != 0) continue;
        int top = -1;
        for (int b = 1; b < GP_B__COUNT; b++)
            if (js.gp.bucket_gpu_s[b] > 0 &&
                (top < 0 || js.gp.bucket_gpu_s[b] > js.gp.bucket_gpu_s[top]))
                top = b;
        char util[16] = "-", gp[16] = "-", bad[48] = "-";
        if (js.mean_gpu_util >= 0) snprintf(util, sizeof util, "%.0f%%", js.mean_gpu_util * 100);
        if (js.gp.goodput >= 0) snprintf(gp, sizeof gp, "%.0f%%", js.gp.goodput * 100);
        if (top >= 0 && js.gp.allocated_gpu_s > 0)
            snprintf(bad, sizeof bad, "%s %.0f%%", gp_bucket_name((gp_bucket)top),
                     100 * js.gp.bucket_gpu_s[top] / js.gp.allocated_gpu_s);
        printf("%-18.18s %-13s %4d %11.2f %5s %7s  %s\n", js.job.id, gp_job_kind_name(js.gp.kind),
               js.n_gpus, js.allocated_gpu_h, util, gp, bad);
    }
    gp_demo_live_extra(a, stdout);
    fflush(stdout);
    free(jobs);
}

static void usage(FILE *f) {
    fprintf(f, "usage: goodput demo [--scenario FILE] [--speed X] [--duration D] [--db PATH]\n"
               "                    [--no-live]\n\n"
               "Simulates an 8-GPU node (the built-in copy of examples/scenarios/demo.conf): a\n"
               "healthy trainer, a data-starved trainer, a memory-bound LLM decode service, an\n"
               "all-reduce-bound multi-GPU job and a job that holds GPUs before it is ready. The\n"
               "agent watches it with a live table and the dashboard, then prints the report,\n"
               "the findings, where the database is and what to try next.\n\n"
               "options:\n"
               "  --scenario FILE  another scenario (docs/scenarios.md); default: the built-in\n"
               "                   demo, or $GOODPUT_SCENARIOS/demo.conf when that is set\n"
               "  --speed X        simulated seconds per wall second (default 60: the hour in a\n"
               "                   minute); 0 = as fast as possible\n"
               "  --duration D     simulate only D (e.g. 5m; default: the scenario's 1h)\n"
               "  --db PATH        where to store the run (default: a new $TMPDIR/goodput-demo-*,\n"
               "                   /tmp without TMPDIR; kept for the commands printed)\n"
               "  --no-live        no live table, only the report at the end\n\n"
               "example: goodput demo --duration 5m --speed 0\n");
}

/* Writes the built-in scenario to DIR/demo.conf (the simulator reads a file; relative
 * paths inside it then resolve from DIR, and the trace it names falls back to Poisson). */
static int write_builtin(const char *dir, char *path, size_t cap) {
    snprintf(path, cap, "%s/demo.conf", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int bad = fputs(gp_demo_scenario_conf, f) < 0;
    return (fclose(f) != 0 || bad) ? -1 : 0;
}

/* Removes the folder the demo made and what it put there (a flat folder: the built-in
 * scenario, the store and SQLite's side files), so a run that never started, or one whose
 * store lives elsewhere (--db), leaves nothing behind in /tmp. */
static void remove_tmpdir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4200];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

int gp_cmd_demo(int argc, char **argv) {
    const char *scenario = NULL, *db = NULL;
    double speed = 60;
    int live = 1;
    int64_t duration_ns = 0;
    static const struct option opts[] = {{"scenario", required_argument, 0, 's'},
                                         {"speed", required_argument, 0, 'x'},
                                         {"db", required_argument, 0, 'd'},
                                         {"no-live", no_argument, 0, 'n'},
                                         {"duration", required_argument, 0, 'D'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's':
            scenario = optarg;
            break;
        case 'd':
            db = optarg;
            break;
        case 'n':
            live = 0;
            break;
        case 'x':
            speed = strtod(optarg, &end);
            if (*end || end == optarg || speed < 0) {
                fprintf(stderr, "goodput demo: --speed '%s': expected a number >= 0\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'D':
            if (gp_parse_duration_ns(optarg, &duration_ns) < 0 || duration_ns <= 0) {
                fprintf(stderr, "goodput demo: --duration '%s': expected a duration like 5m, 1h\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        case ':':
            fprintf(stderr, "goodput demo: %s needs a value (see goodput demo --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        default:
            fprintf(stderr, "goodput demo: unknown option '%s' (see goodput demo --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "goodput demo: unexpected argument '%s' (see goodput demo --help)\n",
                argv[optind]);
        return GP_EXIT_USAGE;
    }
    char scen_buf[4096];
    const char *dir = getenv("GOODPUT_SCENARIOS");
    if (!scenario && dir && *dir) {
        snprintf(scen_buf, sizeof scen_buf, "%s/demo.conf", dir);
        scenario = scen_buf;
    }
    if (scenario && access(scenario, R_OK) != 0) {
        fprintf(stderr, "goodput demo: --scenario %s: %s\n", scenario, strerror(errno));
        return GP_EXIT_INPUT;
    }
    /* A temporary folder only for what has no other home: the built-in scenario, and the
     * store when --db is not given (that one stays, for the commands printed at the end). */
    const char *tmp_root = getenv("TMPDIR");
    if (!tmp_root || !*tmp_root) tmp_root = "/tmp";
    char tmpdir[3900];
    int made_tmp = !scenario || !db, keep_tmp = !db;
    if (made_tmp && (snprintf(tmpdir, sizeof tmpdir, "%s/goodput-demo-XXXXXX", tmp_root) >=
                         (int)sizeof tmpdir ||
                     !mkdtemp(tmpdir))) {
        fprintf(stderr, "goodput demo: cannot create a folder in %s (TMPDIR): %s\n", tmp_root,
                strerror(errno));
        return GP_EXIT_FAIL;
    }
    if (!scenario) {
        if (write_builtin(tmpdir, scen_buf, sizeof scen_buf) != 0) {
            fprintf(stderr, "goodput demo: %s: %s\n", scen_buf, strerror(errno));
            remove_tmpdir(tmpdir);
            return GP_EXIT_FAIL;
        }
        scenario = scen_buf;
    }
    char db_buf[4096];
    if (!db) {
        snprintf(db_buf, sizeof db_buf, "%s/goodput.db", tmpdir);
        db = db_buf;
    }
    /* The simulated time the run covers, for the ETA. */
    int64_t total_ns = duration_ns;
    gp_scenario sc;
    char err[512];
    if (gp_scenario_load(scenario, &sc, err, sizeof err) != 0) {
        fprintf(stderr, "goodput demo: %s\n", err);
        if (made_tmp) remove_tmpdir(tmpdir);
        return GP_EXIT_INPUT;
    }
    if (!total_ns || sc.duration_ns < total_ns) total_ns = sc.duration_ns;
    gp_scenario_free(&sc);
    char spec[4200];
    snprintf(spec, sizeof spec, "sim:%s", scenario);
    gp_agent_opts o = {.source_spec = spec,
                       .db_path = db,
                       .speed = speed,
                       .duration_ns = duration_ns,
                       .socket_path = NULL};
    gp_agent *a;
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) {
        fprintf(stderr, "goodput demo: %s\n", err);
        if (made_tmp) remove_tmpdir(tmpdir);
        return GP_EXIT_INPUT;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    live_ctx lc = {
        .tty = isatty(1), .speed = speed, .total_ns = total_ns, .t0_ns = gp_agent_now_ns(a)};
    gp_demo_start(a, stdout);
    if (live) gp_agent_set_hook(a, live_table, &lc, 1000000000);
    int rc = gp_agent_run(a, &stop_flag, err, sizeof err);
    lc.final = 1;
    if (live) live_table(a, &lc);
    gp_demo_finish(a, stdout);
    gp_agent_close(a);
    /* With --db only the built-in scenario was here; the run has read it. */
    if (made_tmp && !keep_tmp) remove_tmpdir(tmpdir);
    if (rc != 0) {
        fprintf(stderr, "goodput demo: %s\n", err);
        if (keep_tmp) fprintf(stderr, "goodput demo: what was stored is in %s\n", db);
        return GP_EXIT_FAIL;
    }
    printf("\n");
    int rr = gp_report_run(db, NULL, 0, NULL, stdout, GP_TEXT_WIDTH, 1);
    printf("\nDatabase: %s\n", db);
    gp_demo_after_report(db, stdout);
    printf("\nTry next:\n"
           "  goodput diagnose --db %s\n"
           "      every finding with its evidence and fix\n"
           "  goodput serve --db %s\n"
           "      the dashboard over this run (http://127.0.0.1:9464/)\n"
           "  goodput report --db %s --json\n"
           "      the same numbers for scripts (fields: docs/api.md, docs/goodput.md)\n",
           db, db, db);
    gp_demo_end(stdout);
    return rr;
}
