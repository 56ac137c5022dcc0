/* cmd_serve.c: `goodput serve --db PATH [--db PATH2 ...]`: the dashboard, the JSON API and
 * /metrics over stored databases, without an agent. Each store is opened read-only (the
 * server's own connection; works on a read-only file system) by its own server: the first
 * on --listen, the next ones on the following ports (before/after side by side), or each
 * on a free port when --listen asks for port 0. POST /api/v1/events answers 503: nobody
 * receives events. Runs until SIGINT/SIGTERM or --duration of wall time. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "serve/serve.h"
#include "util/dl.h"
#include "sim/scenario.h" /* gp_parse_duration_ns */

#define MAX_STORES 8

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput serve --db PATH [--db PATH2 ...] [--listen ADDR:PORT]\n"
            "                     [--token-file F] [--insecure] [--price X] [--duration D]\n\n"
            "Serves the dashboard (/), the JSON API (/api/v1/, docs/api.md) and Prometheus\n"
            "/metrics over stored databases, with no agent running. Each store is opened\n"
            "read-only by its own server: the first on --listen, the next ones on the\n"
            "following ports (e.g. before and after a change, side by side).\n\n"
            "options:\n"
            "  --db PATH          a store written by `goodput agent` or `goodput demo`\n"
            "                     (repeatable, at most %d)\n"
            "  --listen ADDR:PORT where to listen (default %s; port 0 = any free port)\n"
            "  --token-file F     require `Authorization: Bearer <token in F>` on the API;\n"
            "                     needed for an address other than loopback\n"
            "  --insecure         allow a non-loopback address without a token\n"
            "  --price X          cost of one GPU-hour (overrides the price table)\n"
            "  --duration D       stop after D of wall time (default: until Ctrl-C)\n\n"
            "example: goodput serve --db /tmp/goodput-demo-XXXX/goodput.db\n",
            MAX_STORES, GP_SERVE_DEFAULT_LISTEN);
}

/* "ADDR:PORT" -> "ADDR:PORT+i" (port 0 stays 0: each server takes a free port). */
static int nth_listen(const char *base, int i, char *out, size_t cap) {
    const char *colon = strrchr(base, ':');
    if (!colon) return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port + i > 65535) return -1;
    snprintf(out, cap, "%.*s:%ld", (int)(colon - base), base, port ? port + i : 0);
    return 0;
}

int gp_cmd_serve(int argc, char **argv) {
    const char *dbs[MAX_STORES];
    int n_db = 0;
    gp_serve_opts so = {0};
    int64_t duration_ns = 0;
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"listen", required_argument, 0, 'L'},
                                         {"token-file", required_argument, 0, 'K'},
                                         {"insecure", no_argument, 0, 'I'},
                                         {"price", required_argument, 0, 'p'},
                                         {"duration", required_argument, 0, 'D'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd':
            if (n_db == MAX_STORES) {
                fprintf(stderr, "goodput serve: --db: at most %d stores\n", MAX_STORES);
                return GP_EXIT_USAGE;
            }
            dbs[n_db++] = optarg;
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
        case 'p':
            so.price_per_gpu_h = strtod(optarg, &end);
            if (*end || end == optarg || !(so.price_per_gpu_h > 0)) {
                fprintf(stderr, "goodput serve: --price '%s': expected a number > 0\n", optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'D':
            if (gp_parse_duration_ns(optarg, &duration_ns) < 0 || duration_ns <= 0) {
                fprintf(stderr,
                        "goodput serve: --duration '%s': expected a duration like 30s, 5m, 2h\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        case ':':
            fprintf(stderr, "goodput serve: %s needs a value (see goodput serve --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        default:
            fprintf(stderr, "goodput serve: unknown option '%s' (see goodput serve --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "goodput serve: unexpected argument '%s' (stores are given with --db)\n",
                argv[optind]);
        return GP_EXIT_USAGE;
    }
    if (n_db == 0) {
        fprintf(stderr, "goodput serve: --db PATH is required (see goodput serve --help)\n");
        return GP_EXIT_USAGE;
    }
    const char *base = so.listen ? so.listen : GP_SERVE_DEFAULT_LISTEN;
    for (int i = 0; i < n_db; i++) {
        struct stat st;
        if (stat(dbs[i], &st) != 0) {
            fprintf(stderr, "goodput serve: --db %s: %s\n", dbs[i], strerror(errno));
            return GP_EXIT_INPUT;
        }
    }
    if (gp_dl_require("mhd") != 0) return GP_EXIT_FAIL;
    gp_serve *srv[MAX_STORES] = {0};
    char err[512];
    int rc = GP_EXIT_OK;
    for (int i = 0; i < n_db; i++) {
        char listen[200];
        if (nth_listen(base, i, listen, sizeof listen) != 0) {
            fprintf(stderr, "goodput serve: --listen '%s': expected ADDR:PORT\n", base);
            rc = GP_EXIT_USAGE;
            goto out;
        }
        gp_serve_opts o = so;
        o.listen = listen;
        o.db_path = dbs[i];
        if (gp_serve_start(&o, &srv[i], err, sizeof err) != 0) {
            fprintf(stderr, "goodput serve: %s\n", err);
            /* A store that is not one (or is damaged) is bad input; the rest is usage. */
            rc = strstr(err, "--") ? GP_EXIT_USAGE : GP_EXIT_INPUT;
            goto out;
        }
        fprintf(stderr, "goodput serve: %s on %s (API %sapi/v1/, metrics %smetrics)\n", dbs[i],
                gp_serve_url(srv[i]), gp_serve_url(srv[i]), gp_serve_url(srv[i]));
    }
    fprintf(stderr, "goodput serve: read-only; Ctrl-C to stop\n");
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!stop_flag) {
        struct timespec tick = {0, 100000000};
        nanosleep(&tick, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t el = (int64_t)(now.tv_sec - t0.tv_sec) * 1000000000LL + (now.tv_nsec - t0.tv_nsec);
        if (duration_ns > 0 && el >= duration_ns) break;
    }
out:
    for (int i = 0; i < n_db; i++)
        gp_serve_stop(srv[i]);
    return rc;
}
