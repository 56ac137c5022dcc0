/* cmd_agent.c: `goodput agent`: watch GPUs, receive workload events, store them. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "agent/agent.h"
#include "agent/footprint.h"
#include "cli/agent_live.h"
#include "cli/agent_logs.h"
#include "cli/agent_results.h"
#include "cli/exit_codes.h"
#include "attribution/slurm.h"
#include "fleet/ledger.h"
#include "ingest/scrape_store.h"
#include "serve/serve.h"
#include "util/wrap.h"
#include "sim/scenario.h" /* gp_parse_duration_ns */
#include "util/dl.h"

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

/* --slurm: poll squeue/sacct between ticks; a failure is said once per distinct message. */
typedef struct {
    gp_slurm *sl;
    char last_err[512];
} slurm_ctx;

static void slurm_hook(gp_agent *a, void *vctx) {
    slurm_ctx *c = vctx;
    char err[512] = "";
    if (gp_slurm_poll(c->sl, gp_agent_store(a), gp_agent_now_ns(a), err, sizeof err) != 0 &&
        strcmp(err, c->last_err) != 0) {
        fprintf(stderr, "goodput agent: slurm: %s (will retry)\n", err);
        snprintf(c->last_err, sizeof c->last_err, "%s", err);
    }
}

/* --scrape: one scraper per inference server; each poll blocks at most its timeout
 * (default 2 s), so a dead server delays the loop by that much at most per poll. */
#define MAX_SCRAPERS 16
typedef struct {
    gp_scraper *sc;
    char last_err[512];
    uint64_t windows;
    int verbose; /* --verbose: list once the families of the page goodput does not read */
} scrape_ctx;

static void scrape_hook(gp_agent *a, void *vctx) {
    scrape_ctx *c = vctx;
    gp_scrape_window w;
    char err[512] = "";
    int rc = gp_scrape_poll(c->sc, gp_wall_ns(), &w, err, sizeof err);
    if (rc < 0) {
        /* err names the scrape and its URL already ("scrape URL: HTTP 404") */
        if (strcmp(err, c->last_err) != 0) fprintf(stderr, "goodput agent: %s (will retry)\n", err);
        snprintf(c->last_err, sizeof c->last_err, "%s", err);
        return;
    }
    c->last_err[0] = 0;
    char unk[2048];
    if (c->verbose && gp_scraper_take_unknown(c->sc, unk, sizeof unk))
        fprintf(stderr, "goodput agent: scrape %s: not read: %s\n", gp_scraper_url(c->sc), unk);
    if (rc == 1) {
        gp_store *st = gp_agent_store(a);
        gp_store_begin(st);
        if (gp_scrape_store_window(st, &w) == 0) c->windows++;
        gp_store_commit(st);
    }
}

static void usage(FILE *f) {
    size_t n;
    const gp_source_ops *const *all = gp_source_all(&n);
    fprintf(f, "usage: goodput agent [--source SPEC] --db PATH [options]\n\n"
               "Samples GPU telemetry every interval, receives workload events (steps, phases,\n"
               "requests) on a unix socket, and stores both in a SQLite database. Stops cleanly\n"
               "(everything flushed) on SIGINT/SIGTERM, at --duration, or when a replayed or\n"
               "simulated source ends.\n\n"
               "sources:\n");
    for (size_t i = 0; i < n; i++)
        gp_wrap_print(f, "  ", 16, all[i]->usage, GP_TEXT_WIDTH);
    fprintf(f,
            "\noptions:\n"
            "  --source SPEC      telemetry source (above); default nvml (the local driver)\n"
            "  --db PATH          SQLite store (created if missing)\n"
            "  --interval D       sampling interval (default 1s; units ms s m h)\n"
            "  --duration D       stop after D of source time (default: run until stopped)\n"
            "  --speed X          simulated/replayed sources: X source seconds per wall second;\n"
            "                     0 = as fast as possible (default 1)\n"
            "  --flush D          commit interval (default 5s); a crash loses at most this\n"
            "  --retention D      delete raw samples and process rows older than D (default\n"
            "                     3d; 'keep': never); samples are rolled up as they arrive\n"
            "                     into 1 min / 1 h rollups, and reports read those before the\n"
            "                     raw window\n"
            "  --rollup-retention D\n"
            "                     delete the 1-minute rollups of whole hours older than D\n"
            "                     (default 30d, or --retention if longer; 'keep': never; at\n"
            "                     least --retention); the 1-hour rollups stay, and reports\n"
            "                     read those before, at 1-hour resolution (they say so)\n"
            "  --event-retention D\n"
            "                     delete the events of a job that ended more than D ago once\n"
            "                     its result is stored (default 1d; 'keep': never); never a\n"
            "                     running job's or one without a stored result. Such a job is\n"
            "                     then reported from its stored result only: a time window,\n"
            "                     compare or per-window diagnosis of it is refused\n"
            "  --socket PATH      event socket (default $XDG_RUNTIME_DIR/goodput.sock or\n"
            "                     /tmp/goodput-$UID/goodput.sock)\n"
            "  --no-socket        do not listen on a unix socket\n"
            "  --udp ADDR:PORT    also receive events over UDP (loopback only)\n"
            "  --max-skew-ahead D reject events with a time more than D ahead of the agent's\n"
            "                     clock (default 10m; simulated sources use their own clock)\n"
            "  --max-skew-behind D\n"
            "                     ... or more than D behind it (default 7d)\n"
            "  --accept-old       no lower bound on event times: for replaying old logs\n"
            "  --ledger URL       also write the job ledger to PostgreSQL (postgresql://...);\n"
            "                     spooled in the store while it is unreachable (docs/fleet.md)\n"
            "  --host-name NAME   this node's name in the ledger (default: the host name)\n"
            "  --scrape URL[,job=ID][,timeout=MS][,slo_ttft=S][,slo_itl=S]\n"
            "                     scrape an inference server's /metrics (vLLM, SGLang, TGI,\n"
            "                     Triton; repeatable); rates, latency percentiles and SLO\n"
            "                     goodput per window and per engine\n"
            "  --scrape-every D   scrape interval (default 10s)\n"
            "  --slurm            follow Slurm jobs (squeue/sacct): lifecycle, GPUs, exit state\n"
            "  --slurm-node NAME  only map GPUs of jobs on this node (default: every node)\n"
            "  --slurm-every D    poll interval (default 10s)\n"
            "  --jobmap-dir DIR   dcgm-exporter HPC job-mapping directory (contrib/slurm/):\n"
            "                     the jobs holding each GPU, as a scheduler's prolog writes it\n"
            "  --proc-root DIR    where the GPU processes' /proc is (default /proc; a\n"
            "                     container sees the host's through a mount, e.g. /host/proc)\n"
            "  --no-attribution   do not turn GPU processes into jobs and allocations\n"
            "  --log JOB=PATH:PROFILE\n"
            "                     tail a training log (rotation-safe) and store its steps,\n"
            "                     evaluation, checkpoints and restarts as JOB's events\n"
            "                     (repeatable; profiles: goodput logs --list-profiles)\n"
            "  --log-profiles FILE  extra log profiles (docs/logs.md)\n"
            "  --listen ADDR:PORT serve the dashboard (/), the JSON API (/api/v1/) and\n"
            "                     Prometheus /metrics here (e.g. 127.0.0.1:9464; docs/api.md)\n"
            "  --window D         live findings: every minute of source time, diagnose each\n"
            "                     job's last D (default 15m) and show it at /api/v1/findings\n"
            "                     (with --listen; `off` = none; docs/findings.md)\n"
            "  --token-file F     require `Authorization: Bearer <token in F>` on the API;\n"
            "                     needed when --listen is not a loopback address\n"
            "  --insecure         allow a non-loopback --listen without a token\n"
            "\nOwnership: every GPU process is resolved once to its owner (Slurm job, pod,\n"
            "container, GOODPUT_JOB, else the process with its user and command; what\n"
            "cannot be seen is 'unattributed'). Without a scheduler, an owner holds a GPU\n"
            "from its first process there until its last has been gone 3 intervals.\n"
            "A GPU shared by several owners is split evenly between them.\n"
            "  --quiet            no summary line at exit\n"
            "  --verbose          list the /metrics families --scrape does not read, once\n"
            "  --stats            print a JSON line of overhead statistics at exit (stdout)\n\n"
            "example: goodput agent --source sim:examples/scenarios/demo.conf --db /tmp/gp.db \\\n"
            "           --speed 0 --no-socket\n");
}

/* Event lines dropped (dropped = 1) or rejected (0) over every transport. */
static uint64_t ingest_total(gp_agent *a, int dropped) {
    uint64_t n = 0;
    gp_ingest *in = gp_agent_ingest(a);
    for (int t = 0; in && t < GP_TR__COUNT; t++) {
        const gp_ingest_stats *g = gp_ingest_get_stats(in, (gp_transport)t);
        if (g) n += dropped ? g->dropped : g->rejected;
    }
    return n;
}

static int bad_duration(const char *opt, const char *v) {
    fprintf(stderr, "goodput agent: %s '%s': expected a duration like 500ms, 1s, 5m, 2h\n", opt, v);
    return GP_EXIT_USAGE;
}

int gp_cmd_agent(int argc, char **argv) {
    /* Raw samples are kept 7 days by default: job summaries read the 1-minute rollups
     * (store/rollup.h) before a device's raw window (engine/job_summary.c), so a job
     * older than the window keeps its numbers within a minute per GPU, and a month of
     * 8 GPUs at 1 s stays under 1 GiB (docs/benchmarks.md). */
    gp_agent_opts o = {.speed = 1,
                       .socket_path = "",
                       .retention_ns = GP_AGENT_RETENTION_NS,
                       .event_retention_ns = GP_AGENT_EVENT_RETENTION_NS};
    int64_t rollup_retention_ns = -1; /* --rollup-retention; -1: not given (the default) */
    const char *retention_arg = "3d", *rollup_retention_arg = "";
    int quiet = 0, stats = 0, slurm = 0, verbose = 0;
    gp_slurm_opts slo = {0};
    int64_t slurm_every_ns = 10000000000LL, scrape_every_ns = 10000000000LL;
    const char *scrape_specs[MAX_SCRAPERS];
    int n_scrape = 0;
    const char *log_specs[GP_AGENT_MAX_LOGS], *log_profiles = NULL;
    int n_logs = 0;
    gp_ledger_opts lo = {0}; /* --ledger, --host-name: the fleet ledger (docs/fleet.md) */
    gp_serve_opts so = {0};
    gp_agent_live live = {.window_ns = GP_LIVE_DEFAULT_WINDOW_NS};
    int live_set = 0; /* --window given: live findings even without --listen (--stats) */
    static const struct option opts[] = {{"source", required_argument, 0, 's'},
                                         {"db", required_argument, 0, 'd'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"duration", required_argument, 0, 'D'},
                                         {"speed", required_argument, 0, 'x'},
                                         {"flush", required_argument, 0, 'f'},
                                         {"retention", required_argument, 0, 'r'},
                                         {"event-retention", required_argument, 0, 'Z'},
                                         {"rollup-retention", required_argument, 0, 'Y'},
                                         {"socket", required_argument, 0, 'S'},
                                         {"no-socket", no_argument, 0, 'N'},
                                         {"udp", required_argument, 0, 'u'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"verbose", no_argument, 0, 'v'},
                                         {"help", no_argument, 0, 'h'},
                                         {"listen", required_argument, 0, 'L'},
                                         {"token-file", required_argument, 0, 'K'},
                                         {"insecure", no_argument, 0, 'I'},
                                         {"stats", no_argument, 0, 'T'},
                                         {"ledger", required_argument, 0, 'l'},
                                         {"host-name", required_argument, 0, 'H'},
                                         {"scrape", required_argument, 0, 'P'},
                                         {"scrape-every", required_argument, 0, 'Q'},
                                         {"slurm", no_argument, 0, 'U'},
                                         {"slurm-node", required_argument, 0, 'n'},
                                         {"slurm-every", required_argument, 0, 'E'},
                                         {"jobmap-dir", required_argument, 0, 'J'},
                                         {"proc-root", required_argument, 0, 'R'},
                                         {"no-attribution", no_argument, 0, 'a'},
                                         {"max-skew-ahead", required_argument, 0, 'A'},
                                         {"max-skew-behind", required_argument, 0, 'B'},
                                         {"accept-old", no_argument, 0, 'O'},
                                         {"log", required_argument, 0, 'g'},
                                         {"log-profiles", required_argument, 0, 'G'},
                                         {"window", required_argument, 0, 'W'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 's':
            o.source_spec = optarg;
            break;
        case 'd':
            o.db_path = optarg;
            break;
        case 'i':
            if (gp_parse_duration_ns(optarg, &o.interval_ns) < 0 || o.interval_ns <= 0)
                return bad_duration("--interval", optarg);
            break;
        case 'D':
            if (gp_parse_duration_ns(optarg, &o.duration_ns) < 0 || o.duration_ns <= 0)
                return bad_duration("--duration", optarg);
            break;
        case 'f':
            if (gp_parse_duration_ns(optarg, &o.flush_ns) < 0 || o.flush_ns <= 0)
                return bad_duration("--flush", optarg);
            break;
        case 'r':
            retention_arg = optarg;
            if (!strcmp(optarg, "keep"))
                o.retention_ns = 0;
            else if (gp_parse_duration_ns(optarg, &o.retention_ns) < 0 || o.retention_ns <= 0)
                return bad_duration("--retention", optarg);
            break;
        case 'Z':
            if (!strcmp(optarg, "keep"))
                o.event_retention_ns = 0;
            else if (gp_parse_duration_ns(optarg, &o.event_retention_ns) < 0 ||
                     o.event_retention_ns <= 0)
                return bad_duration("--event-retention", optarg);
            break;
        case 'Y':
            rollup_retention_arg = optarg;
            if (!strcmp(optarg, "keep"))
                rollup_retention_ns = 0;
            else if (gp_parse_duration_ns(optarg, &rollup_retention_ns) < 0 ||
                     rollup_retention_ns <= 0)
                return bad_duration("--rollup-retention", optarg);
            break;
        case 'x':
            o.speed = strtod(optarg, &end);
            if (*end || o.speed < 0 || o.speed > 1e6) {
                fprintf(stderr,
                        "goodput agent: --speed '%s': expected a number >= 0 (0 = as fast as "
                        "possible)\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'S':
            o.socket_path = optarg;
            break;
        case 'N':
            o.socket_path = NULL;
            break;
        case 'u':
            o.udp_addr = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'L':
            so.listen = optarg;
            break;
        case 'K':
            so.token_file = optarg;
            break;
        case 'I':
            so.insecure = 1;
            break;
        case 'T':
            stats = 1;
            break;
        case 'U':
            slurm = 1;
            break;
        case 'P':
            if (n_scrape == MAX_SCRAPERS) {
                fprintf(stderr, "goodput agent: --scrape: at most %d servers\n", MAX_SCRAPERS);
                return GP_EXIT_USAGE;
            }
            scrape_specs[n_scrape++] = optarg;
            break;
        case 'Q':
            if (gp_parse_duration_ns(optarg, &scrape_every_ns) < 0 || scrape_every_ns <= 0)
                return bad_duration("--scrape-every", optarg);
            break;
        case 'n':
            slo.node = optarg;
            break;
        case 'J':
            slo.jobmap_dir = optarg;
            break;
        case 'R':
            o.proc_root = optarg;
            break;
        case 'a':
            o.no_attribution = 1;
            break;
        case 'E':
            if (gp_parse_duration_ns(optarg, &slurm_every_ns) < 0 || slurm_every_ns <= 0)
                return bad_duration("--slurm-every", optarg);
            break;
        case 'A':
            if (gp_parse_duration_ns(optarg, &o.max_skew_ahead_ns) < 0 || o.max_skew_ahead_ns <= 0)
                return bad_duration("--max-skew-ahead", optarg);
            break;
        case 'B':
            if (gp_parse_duration_ns(optarg, &o.max_skew_behind_ns) < 0 ||
                o.max_skew_behind_ns <= 0)
                return bad_duration("--max-skew-behind", optarg);
            break;
        case 'O':
            o.accept_old = 1;
            break;
        case 'g':
            if (n_logs == GP_AGENT_MAX_LOGS) {
                fprintf(stderr, "goodput agent: --log: at most %d logs\n", GP_AGENT_MAX_LOGS);
                return GP_EXIT_USAGE;
            }
            log_specs[n_logs++] = optarg;
            break;
        case 'G':
            log_profiles = optarg;
            break;
        case 'W':
            if (!strcmp(optarg, "off")) {
                live.window_ns = 0;
                live_set = 0;
            } else if (gp_parse_duration_ns(optarg, &live.window_ns) < 0 || live.window_ns <= 0)
                return bad_duration("--window", optarg);
            else
                live_set = 1;
            break;
        case 'l':
            lo.url = optarg;
            break;
        case 'H':
            lo.host = optarg;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr,
                    "goodput agent: unknown or incomplete option '%s' (see goodput agent --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "goodput agent: unexpected argument '%s'\n", argv[optind]);
        return GP_EXIT_USAGE;
    }
    if (!o.db_path) {
        fprintf(stderr, "goodput agent: --db PATH is required (see goodput agent --help)\n");
        return GP_EXIT_USAGE;
    }
    /* The tiers a reader falls back through are raw rows, then 1-minute rollups, then
     * 1-hour ones (store/rollup.h): raw rows must never outlive the 1-minute rollups of
     * their minutes. By default the 1-minute rollups are kept 30 days, or as long as the
     * raw rows when those are kept longer; with every raw row kept, every rollup too. */
    if (rollup_retention_ns > 0 && (o.retention_ns == 0 || rollup_retention_ns < o.retention_ns)) {
        fprintf(stderr,
                "goodput agent: --rollup-retention %s is shorter than the raw --retention "
                "(%s): the 1-minute rollups must outlive the raw rows they stand in for\n",
                rollup_retention_arg, o.retention_ns ? retention_arg : "keep");
        return GP_EXIT_USAGE;
    }
    if (rollup_retention_ns >= 0)
        o.rollup_retention_ns = rollup_retention_ns;
    else if (o.retention_ns > 0)
        o.rollup_retention_ns = o.retention_ns > GP_AGENT_ROLLUP_RETENTION_NS
                                    ? o.retention_ns
                                    : GP_AGENT_ROLLUP_RETENTION_NS;
    /* One reader of the job-mapping files: the Slurm poller when it runs (it also knows
     * the jobs' lifecycle), else the agent's own attribution. */
    if (!slurm && slo.jobmap_dir) o.jobmap_dir = slo.jobmap_dir;
    int default_source = !o.source_spec;
    if (default_source) o.source_spec = "nvml"; /* the default on a node with a driver */
    /* Optional libraries these options need (util/dl.h): a missing one is said in one line
     * and stops the agent before it opens anything. */
    const char *spec = o.source_spec;
    size_t spec_len = strlen(spec);
    int wants_curl = n_scrape > 0 || !strncmp(spec, "dcgm=", 5);
    /* an nvidia-smi -q -x log named .xml; other names are sniffed later (smi.c), where a
     * missing libxml2 is said on first use instead */
    int wants_xml =
        !strncmp(spec, "smi:", 4) && spec_len > 4 && !strcmp(spec + spec_len - 4, ".xml");
    if ((wants_curl && gp_dl_require("curl") != 0) || (wants_xml && gp_dl_require("xml2") != 0) ||
        (so.listen && gp_dl_require("mhd") != 0) || (lo.url && gp_dl_require("pq") != 0))
        return GP_EXIT_FAIL;
    /* Loading a library (libmicrohttpd pulls in gnutls, p11-kit, nettle, gmp, ...) faults
     * ~2.4 MiB of their files in, most of which nothing touches again: dropped now, before
     * the agent's own start-up adds its pages, so the start-up peak is not the sum of both
     * (agent/footprint.h; the second trim below drops the agent's). With no library loaded
     * too: from here on the start-up's own faults map a page each, not 64 KiB. */
    if (!getenv("GOODPUT_AGENT_KEEP_PAGES")) gp_footprint_trim();
    char err[512] = "";
    /* --log: checked before the agent opens anything, so a typo costs nothing */
    gp_agent_logs logs;
    if (gp_agent_logs_init(&logs, log_profiles, err, sizeof err) != 0) {
        fprintf(stderr, "goodput agent: --log-profiles: %s\n", err);
        gp_agent_logs_free(&logs);
        return GP_EXIT_INPUT;
    }
    for (int i = 0; i < n_logs; i++)
        if (gp_agent_logs_add(&logs, log_specs[i], err, sizeof err) != 0) {
            fprintf(stderr, "goodput agent: --log %s\n", err);
            gp_agent_logs_free(&logs);
            return GP_EXIT_USAGE;
        }
    gp_agent *a;
    /* A file-size limit (ulimit -f) must fail a write with EFBIG, reported and survived,
     * not kill the agent before it can say why or keep its last flush. */
    signal(SIGXFSZ, SIG_IGN);
    int orc = gp_agent_open(&o, &a, err, sizeof err);
    if (orc == GP_AGENT_BUSY) {
        fprintf(stderr, "goodput agent: %s\n", err);
        gp_agent_logs_free(&logs);
        return GP_EXIT_FAIL;
    }
    if (orc != 0) {
        if (default_source)
            fprintf(stderr,
                    "goodput agent: no --source given and NVML is not usable here (%s); "
                    "try --source sim:examples/scenarios/demo.conf\n",
                    err);
        else
            fprintf(stderr, "goodput agent: %s\n", err);
        gp_agent_logs_free(&logs);
        /* A driver or exporter that cannot be reached is a failure here (1); a file that
         * is missing or malformed (sim:, smi:, a store) is bad input (3). */
        int live = default_source || !strncmp(spec, "nvml", 4) || !strncmp(spec, "dcgm=", 5);
        return live ? GP_EXIT_FAIL : GP_EXIT_INPUT;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    const char *sock = gp_ingest_unix_path(gp_agent_ingest(a));
    if (!quiet && sock) fprintf(stderr, "goodput agent: events on %s\n", sock);
    gp_serve *srv = NULL;
    if (so.listen) {
        so.db_path = o.db_path;
        so.keep_malloc_policy = 1; /* cli/main.c */
        so.trim_heap = 1;
        if (gp_serve_start(&so, &srv, err, sizeof err) != 0) {
            fprintf(stderr, "goodput agent: %s\n", err);
            gp_agent_close(a);
            gp_agent_logs_free(&logs);
            return GP_EXIT_USAGE;
        }
        gp_serve_attach(srv, a);
        if (!quiet)
            fprintf(stderr, "goodput agent: dashboard and API on %s (metrics at %smetrics)\n",
                    gp_serve_url(srv), gp_serve_url(srv));
    }
    scrape_ctx scr[MAX_SCRAPERS];
    memset(scr, 0, sizeof scr);
    for (int i = 0; i < n_scrape; i++) {
        if (gp_scraper_new(scrape_specs[i], &scr[i].sc, err, sizeof err) != 0) {
            fprintf(stderr, "goodput agent: --scrape '%s': %s\n", scrape_specs[i], err);
            for (int k = 0; k < i; k++)
                gp_scraper_free(scr[k].sc);
            gp_agent_close(a);
            gp_agent_logs_free(&logs);
            return GP_EXIT_USAGE;
        }
        scr[i].verbose = verbose;
        if (gp_agent_set_hook(a, scrape_hook, &scr[i], scrape_every_ns) != 0)
            fprintf(stderr, "goodput agent: too many hooks; not scraping %s\n", scrape_specs[i]);
    }
    slurm_ctx sc = {0};
    if (slurm) {
        if (gp_slurm_open(&slo, &sc.sl, err, sizeof err) != 0) {
            fprintf(stderr, "goodput agent: slurm: %s\n", err);
            gp_agent_close(a);
            gp_agent_logs_free(&logs);
            return GP_EXIT_USAGE;
        }
        size_t nd;
        const gp_device *devs = gp_agent_devices(a, &nd);
        gp_slurm_set_gpus(sc.sl, devs, nd);
        gp_agent_set_hook(a, slurm_hook, &sc, slurm_every_ns);
    }
    gp_ledger *ledger = NULL;
    if (lo.url) {
        if (gp_ledger_open(&lo, gp_agent_store(a), &ledger, err, sizeof err) != 0) {
            fprintf(stderr, "goodput agent: %s\n", err);
            gp_agent_close(a);
            gp_agent_logs_free(&logs);
            return GP_EXIT_USAGE;
        }
        gp_ledger_attach(ledger, a);
    }
    if (gp_agent_logs_attach(&logs, a) != 0)
        fprintf(stderr, "goodput agent: too many hooks; not following --log\n");
    live.srv = srv;
    int live_on = live.window_ns > 0 && (srv || live_set);
    if (live_on && gp_agent_live_attach(&live, a) != 0) {
        fprintf(stderr, "goodput agent: too many hooks; no live findings\n");
    }
    gp_agent_results results; /* ended jobs' results, stored once (agent_results.h) */
    if (gp_agent_results_attach(&results, a) != 0)
        fprintf(stderr, "goodput agent: too many hooks; ended jobs' results not stored\n");
    /* Start-up is over (store, source, hooks): what stays resident of the code is what
     * the loop touches (agent/footprint.h). GOODPUT_AGENT_KEEP_PAGES=1 skips it, for
     * benchmarks that compare. */
    if (!getenv("GOODPUT_AGENT_KEEP_PAGES")) gp_footprint_trim();
    int rc = gp_agent_run(a, &stop_flag, err, sizeof err);
    /* Stopped by a signal: a sealing child still running is stopped, no last pass (the
     * results are an optimisation; a report computes what is missing). */
    if (rc == 0) gp_agent_results_finish(&results, a, !stop_flag);
    const gp_agent_results_stats *rst = gp_agent_results_get_stats(&results);
    if (ledger && gp_ledger_drain(ledger, 60000000000LL, err, sizeof err) != 0)
        fprintf(stderr,
                "goodput agent: ledger not caught up at exit (%s); the rows stay spooled in %s\n",
                err, o.db_path);
    gp_ledger_close(ledger);
    gp_serve_detach(srv);
    gp_serve_stop(srv);
    const gp_agent_stats *st = gp_agent_get_stats(a);
    if (!quiet)
        fprintf(stderr, "goodput agent: %llu samples, %llu events stored in %s (%llu flushes)%s\n",
                (unsigned long long)st->samples, (unsigned long long)st->events, o.db_path,
                (unsigned long long)st->flushes, stop_flag ? "; stopped by signal" : "");
    if (stats) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        gp_ckpt_stats ck = gp_agent_checkpoint_stats(a);
        printf("{\"samples\": %llu, \"proc_samples\": %llu, \"events\": %llu, \"ticks\": %llu, "
               "\"agent_cpu_s\": %.6f, \"source_cpu_s\": %.6f, \"agent_cpu_us_per_sample\": %.3f, "
               "\"max_rss_kib\": %ld, \"ticks_late\": %llu, \"tick_late_max_ms\": %.3f, "
               "\"ingest_dropped\": %llu, \"ingest_rejected\": %llu, \"live_passes\": %llu, "
               "\"live_cpu_s\": %.6f, \"live_rows\": %llu, \"live_rows_max_pass\": %llu, "
               "\"live_whole_loads\": %llu, "
               "\"process_cpu_s\": %.6f, \"first_tick_cpu_s\": %.6f, \"loop_end_cpu_s\": %.6f, "
               "\"first_tick_samples\": %llu, \"seal_passes\": %llu, \"seal_stored\": %llu, "
               "\"seal_idle_passes\": %llu, \"seal_cpu_s\": %.6f, \"seal_max_rss_kib\": %ld, "
               "\"wakes\": %llu, \"events_pruned\": %llu, \"store_errors\": %llu, "
               "\"store_busy\": %llu, \"checkpoints\": %llu, \"checkpoints_complete\": %llu, "
               "\"checkpoint_s\": %.6f, \"checkpoint_max_ms\": %.3f, \"checkpoint_cpu_s\": %.6f, "
               "\"ckpt_waits\": %llu}\n",
               (unsigned long long)st->samples, (unsigned long long)st->proc_samples,
               (unsigned long long)st->events, (unsigned long long)st->ticks, st->collect_cpu_s,
               st->source_cpu_s, st->samples ? st->collect_cpu_s * 1e6 / (double)st->samples : 0.0,
               ru.ru_maxrss, (unsigned long long)st->ticks_late, (double)st->tick_late_max_ns / 1e6,
               (unsigned long long)ingest_total(a, 1), (unsigned long long)ingest_total(a, 0),
               (unsigned long long)live.passes, live.cpu_s, (unsigned long long)live.rows,
               (unsigned long long)live.rows_max_pass,
               (unsigned long long)gp_agent_live_whole_loads(&live),
               (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                   ru.ru_stime.tv_usec / 1e6,
               st->first_tick_cpu_s, st->loop_end_cpu_s, (unsigned long long)st->first_tick_samples,
               (unsigned long long)rst->passes, (unsigned long long)rst->stored,
               (unsigned long long)rst->idle_passes, rst->cpu_s, rst->max_rss_kib,
               (unsigned long long)st->wakes, (unsigned long long)st->events_pruned,
               (unsigned long long)st->store_errors, (unsigned long long)st->store_busy,
               (unsigned long long)ck.passes, (unsigned long long)ck.complete, ck.wall_s,
               ck.wall_max_s * 1e3, ck.cpu_s, (unsigned long long)st->ckpt_waits);
    }
    gp_agent_results_free(&results);
    for (int i = 0; i < n_scrape; i++)
        gp_scraper_free(scr[i].sc);
    if (sc.sl) {
        /* One last poll so jobs that ended during the run get their end and exit state. */
        slurm_hook(a, &sc);
        gp_slurm_close(sc.sl);
    }
    if (logs.n && rc == 0) { /* what the logs said since the last tick */
        gp_agent_logs_poll(&logs, a);
        gp_agent_flush(a);
    }
    /* Closing writes the open rollup buckets and checkpoints the WAL: code the loop never
     * ran, whose pages would add ~0.5 MiB to the peak at exit on top of what the loop and
     * the server brought back in; dropped first (agent/footprint.h). */
    if (!getenv("GOODPUT_AGENT_KEEP_PAGES")) gp_footprint_trim();
    gp_agent_close(a);
    gp_agent_logs_free(&logs);
    gp_agent_live_free(&live);
    if (rc != 0) {
        fprintf(stderr, "goodput agent: %s\n", err);
        return rc == GP_AGENT_STORE_FULL ? GP_EXIT_INPUT : GP_EXIT_FAIL;
    }
    return GP_EXIT_OK;
}
