/* cmd_demo.c: `goodput demo`: a simulated 8-GPU node with a mixed workload, the agent
 * watching it at accelerated speed with a live table, then the report. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "cli/exit_codes.h"
#include "engine/job_summary.h"
#include "report/demo_hooks.h"

int gp_report_run(const char *db, const char *job, int json, const gp_slo *slo, FILE *out);

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

typedef struct {
    int tty;
    int64_t t0_ns;
    int frames;
    int final;
} live_ctx;

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
    if (c->tty)
        printf("\033[H\033[2J");
    else if (!c->final) {
        if (c->frames++ % 10 == 0)
            printf("goodput demo: %.1f simulated minutes...\n", (now - c->t0_ns) / 60e9);
        fflush(stdout);
        free(jobs);
        return;
    }
    printf("goodput demo: simulated node, %.1f simulated minutes  (Ctrl-C to stop early)\n\n",
           (now - c->t0_ns) / 60e9);
    printf("%-18s %-13s %4s %9s %7s %8s  %s\n", "JOB", "KIND", "GPUS", "ALLOC_GH", "UTIL",
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
        printf("%-18.18s %-13s %4d %9.2f %7s %8s  %s\n", js.job.id, gp_job_kind_name(js.gp.kind),
               js.n_gpus, js.allocated_gpu_h, util, gp, bad);
    }
    gp_demo_live_extra(a, stdout);
    fflush(stdout);
    free(jobs);
}

static void usage(FILE *f) {
    fprintf(f, "usage: goodput demo [--scenario FILE] [--speed X] [--db PATH] [--no-live]\n\n"
               "Simulates an 8-GPU node (examples/scenarios/demo.conf): a healthy trainer, a\n"
               "data-starved trainer, a memory-bound LLM decode service, an all-reduce-bound\n"
               "multi-GPU job and a job that holds GPUs before it is ready. The agent watches it\n"
               "at --speed X (default 60: one simulated hour in a minute) with a live table, then\n"
               "prints the report and where the database is.\n");
}

int gp_cmd_demo(int argc, char **argv) {
    const char *scenario = NULL, *db = NULL;
    double speed = 60;
    int live = 1;
    static const struct option opts[] = {
        {"scenario", required_argument, 0, 's'}, {"speed", required_argument, 0, 'x'},
        {"db", required_argument, 0, 'd'},       {"no-live", no_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
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
            if (*end || speed < 0) {
                fprintf(stderr, "goodput demo: --speed '%s': expected a number >= 0\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr, "goodput demo: unknown option '%s' (see goodput demo --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    char scen_buf[4096];
    if (!scenario) {
        /* Installed next to the binary's source tree, or GOODPUT_SCENARIOS. */
        const char *dir = getenv("GOODPUT_SCENARIOS");
        snprintf(scen_buf, sizeof scen_buf, "%s/demo.conf", dir ? dir : "examples/scenarios");
        scenario = scen_buf;
    }
    char db_buf[4096];
    if (!db) {
        char tmpl[] = "/tmp/goodput-demo-XXXXXX";
        if (!mkdtemp(tmpl)) {
            perror("goodput demo: mkdtemp");
            return GP_EXIT_FAIL;
        }
        snprintf(db_buf, sizeof db_buf, "%s/goodput.db", tmpl);
        db = db_buf;
    }
    char spec[4200];
    snprintf(spec, sizeof spec, "sim:%s", scenario);
    gp_agent_opts o = {.source_spec = spec, .db_path = db, .speed = speed, .socket_path = NULL};
    char err[512];
    gp_agent *a;
    if (gp_agent_open(&o, &a, err, sizeof err) != 0) {
        fprintf(stderr, "goodput demo: %s\n", err);
        return GP_EXIT_INPUT;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    live_ctx lc = {.tty = isatty(1), .t0_ns = gp_agent_now_ns(a)};
    gp_demo_start(a, stdout);
    if (live) gp_agent_set_hook(a, live_table, &lc, 1000000000);
    int rc = gp_agent_run(a, &stop_flag, err, sizeof err);
    lc.final = 1;
    if (live) live_table(a, &lc);
    gp_demo_finish(a, stdout);
    gp_agent_close(a);
    if (rc != 0) {
        fprintf(stderr, "goodput demo: %s\n", err);
        return GP_EXIT_FAIL;
    }
    printf("\n");
    int rr = gp_report_run(db, NULL, 0, NULL, stdout);
    printf("\nDatabase: %s\n  goodput report --db %s [--json]\n", db, db);
    gp_demo_after_report(db, stdout);
    return rr;
}
