/* cmd_top.c: `goodput top`: a live view per GPU and per job, from a store or a running
 * agent's HTTP API; one plain-text snapshot when stdout is not a terminal or with --once. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "util/term.h"
#include "top/top.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput top (--db PATH | --url http://HOST:PORT) [--once] [--interval S]\n"
            "                   [--token-file FILE] [--wide]\n\n"
            "A live view of each GPU (newest utilization, memory, power, the jobs holding it)\n"
            "and each job (allocated GPU-hours, utilization, goodput, memory, its top finding),\n"
            "with the numbers of `goodput report` and `goodput diagnose`. Keys: q quit,\n"
            "arrows or k/j move, s sort column, g GPU view, J job view, Tab switch, h help.\n"
            "Prints one plain-text snapshot when stdout is not a terminal.\n\n"
            "  --db PATH          a store (opened read-only)\n"
            "  --url URL          a running agent's HTTP API (agent --listen)\n"
            "  --token-file FILE  the agent's bearer token, when it has one\n"
            "  --once             print one snapshot as text and exit\n"
            "  --interval S       refresh every S seconds (default 2)\n"
            "  --wide             plain text wider than 100 columns (findings in the job table)\n");
}

typedef struct {
    gp_top_store *store;
    const char *url;
    const char *token;
} src_ctx;

static int read_src(void *p, gp_top_snap *out, char *err, size_t errlen) {
    src_ctx *c = p;
    if (c->store) return gp_top_store_read(c->store, out, err, errlen);
    return gp_top_http_read(c->url, c->token, out, err, errlen);
}

static int read_token(const char *path, char *tok, size_t n) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(tok, (int)n, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    tok[strcspn(tok, "\r\n")] = 0;
    return tok[0] ? 0 : -1;
}

int gp_cmd_top(int argc, char **argv) {
    const char *db = NULL, *url = NULL, *token_file = NULL;
    int once = 0, wide = 0;
    double interval = 2;
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"url", required_argument, 0, 'u'},
                                         {"token-file", required_argument, 0, 't'},
                                         {"once", no_argument, 0, 'o'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"wide", no_argument, 0, 'w'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'u':
            url = optarg;
            break;
        case 't':
            token_file = optarg;
            break;
        case 'o':
            once = 1;
            break;
        case 'w':
            wide = 1;
            break;
        case 'i':
            interval = strtod(optarg, &end);
            if (*end || !(interval >= 0.2 && interval <= 3600)) {
                fprintf(stderr, "goodput top: --interval '%s': expected seconds in [0.2, 3600]\n",
                        optarg);
                return GP_EXIT_USAGE;
            }
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr, "goodput top: unknown option '%s' (see goodput top --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (optind < argc || !db == !url) {
        fprintf(stderr, "goodput top: give exactly one of --db PATH or --url URL\n");
        return GP_EXIT_USAGE;
    }
    char err[512], token[512];
    src_ctx ctx = {NULL, url, NULL};
    if (token_file) {
        if (read_token(token_file, token, sizeof token) != 0) {
            fprintf(stderr, "goodput top: --token-file %s: cannot read a token\n", token_file);
            return GP_EXIT_INPUT;
        }
        ctx.token = token;
    }
    if (db && !(ctx.store = gp_top_store_open(db, err, sizeof err))) {
        fprintf(stderr, "goodput top: %s\n", err);
        return GP_EXIT_INPUT;
    }
    int rc = GP_EXIT_OK;
    if (once || !isatty(STDOUT_FILENO)) {
        gp_top_snap s = {0};
        if (read_src(&ctx, &s, err, sizeof err) != 0) {
            fprintf(stderr, "goodput top: %s\n", err);
            rc = GP_EXIT_FAIL;
        } else {
            gp_top_text(stdout, &s, gp_text_width(wide));
        }
        gp_top_snap_free(&s);
    } else if (gp_top_tui(read_src, &ctx, db ? db : url, interval, err, sizeof err) != 0) {
        fprintf(stderr, "goodput top: %s\n", err);
        rc = GP_EXIT_FAIL;
    }
    gp_top_store_close(ctx.store);
    return rc;
}
