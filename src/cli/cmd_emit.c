/* cmd_emit.c: `goodput emit KIND key=value ...`: send one event from a shell script or batch
 * job to the agent. The line is checked with the agent's own parser first, so a typo fails
 * here with the reason instead of being counted as rejected far away. job= defaults to the
 * environment (GOODPUT_JOB, SLURM_JOB_ID, Kubernetes pod, else this shell's parent pid) and
 * ts= to now. Values may contain spaces (the shell has already removed the quotes): they are
 * re-quoted for the wire. */
#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <goodput/client.h>

#include "cli/exit_codes.h"
#include "ingest/protocol.h"

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: goodput emit [--socket PATH | --udp HOST:PORT] KIND key=value ...\n\n"
        "Sends one event line (docs/protocol.md) to a running `goodput agent`.\n"
        "KIND: hello, step, phase, request, stage, restart, job, alloc.\n"
        "job= defaults to $GOODPUT_JOB, $SLURM_JOB_ID, the Kubernetes pod, else pid-PPID;\n"
        "ts= defaults to now (ns since the epoch).\n\n"
        "options:\n"
        "  --socket PATH   agent socket (default $GOODPUT_SOCKET, $XDG_RUNTIME_DIR/goodput.sock\n"
        "                  or /tmp/goodput-$UID/goodput.sock)\n"
        "  --udp ADDR      send over UDP instead, e.g. 127.0.0.1:8649\n"
        "  --check         only check the line and print it; send nothing\n"
        "  --accept-old    allow times more than 7 days old (replaying old logs; the agent\n"
        "                  must run with --accept-old too)\n\n"
        "examples:\n"
        "  goodput emit phase name=checkpoint_save edge=begin\n"
        "  goodput emit step step=120 units=4096\n"
        "  goodput emit job state=ended exit=0 name=\"nightly eval\"\n");
}

/* Appends " key=value" to line, quoting the value when it needs it. Returns 0 or -1. */
static int append_kv(char *line, size_t cap, size_t *len, const char *arg) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) return -1;
    size_t n = *len;
    int w = snprintf(line + n, cap - n, " %.*s=", (int)(eq - arg), arg);
    if (w < 0 || (size_t)w >= cap - n) return -1;
    n += (size_t)w;
    const char *v = eq + 1;
    int quote = !*v || strpbrk(v, " \t\"\\") != NULL;
    if (quote) line[n++] = '"';
    for (; *v; v++) {
        if (n + 3 >= cap) return -1;
        if (quote && (*v == '"' || *v == '\\')) line[n++] = '\\';
        line[n++] = *v;
    }
    if (quote) line[n++] = '"';
    if (n >= cap) return -1;
    line[n] = 0;
    *len = n;
    return 0;
}

int gp_cmd_emit(int argc, char **argv) {
    const char *sock = NULL, *udp = NULL;
    int check = 0, accept_old = 0;
    static const struct option opts[] = {
        {"socket", required_argument, 0, 'S'}, {"udp", required_argument, 0, 'u'},
        {"check", no_argument, 0, 'c'},        {"accept-old", no_argument, 0, 'O'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    int c;
    optind = 1;
    /* "+": stop at KIND so that key=value arguments are never taken for options */
    opterr = 0; /* one line of our own instead of getopt's line plus the usage */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'S':
            sock = optarg;
            break;
        case 'u':
            udp = optarg;
            break;
        case 'c':
            check = 1;
            break;
        case 'O':
            accept_old = 1;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr,
                    "goodput emit: unknown or incomplete option '%s' (see goodput emit --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    if (sock && udp) {
        fprintf(stderr, "goodput emit: give --socket or --udp, not both\n");
        return GP_EXIT_USAGE;
    }

    char line[GP_PROTO_MAX_LINE + 256];
    size_t len = (size_t)snprintf(line, sizeof line, "%s", argv[optind]);
    int has_job = 0, has_ts = 0;
    for (int i = optind + 1; i < argc; i++) {
        if (!strncmp(argv[i], "job=", 4)) has_job = 1;
        if (!strncmp(argv[i], "ts=", 3)) has_ts = 1;
        if (append_kv(line, sizeof line, &len, argv[i]) < 0) {
            fprintf(stderr,
                    "goodput emit: argument '%s' is not key=value (or the line is too long)\n",
                    argv[i]);
            return GP_EXIT_INPUT;
        }
    }
    char job[64];
    if (!has_job) {
        /* The shell that runs us is the workload; without other identity, name it. */
        if (!getenv("GOODPUT_JOB") && !getenv("SLURM_JOB_ID") && !getenv("POD_UID") &&
            !getenv("KUBERNETES_SERVICE_HOST"))
            snprintf(job, sizeof job, "pid-%ld", (long)getppid());
        else
            gp_client_job_from_env(job, sizeof job);
        len += (size_t)snprintf(line + len, sizeof line - len, " job=%s", job);
    }
    long long now = gp_client_now_ns();
    if (!has_ts && len < sizeof line)
        len += (size_t)snprintf(line + len, sizeof line - len, " ts=%lld", now);
    if (len >= sizeof line) {
        fprintf(stderr, "goodput emit: the line is longer than %d bytes\n", GP_PROTO_MAX_LINE);
        return GP_EXIT_INPUT;
    }

    gp_event e;
    char err[200];
    int rc = gp_proto_parse_line(line, len, now, accept_old, &e, err, sizeof err);
    if (rc <= 0) {
        fprintf(stderr, "goodput emit: %s\n", rc < 0 ? err : "nothing to send");
        return GP_EXIT_INPUT; /* a malformed event is bad input, like a malformed file */
    }
    if (check) {
        printf("%s\n", line);
        return GP_EXIT_OK;
    }

    char target[300];
    if (udp)
        snprintf(target, sizeof target, "udp:%s", udp);
    else if (sock)
        snprintf(target, sizeof target, "%s", sock);
    else
        gp_client_default_path(target, sizeof target);
    gp_client *cl = malloc(sizeof *cl);
    if (!cl) return GP_EXIT_FAIL;
    if (gp_client_open(cl, target, e.job_id) < 0) {
        fprintf(
            stderr,
            "goodput emit: %s %s: cannot use this target (expected a socket path or ADDR:PORT)\n",
            udp ? "--udp" : "--socket", udp ? udp : target);
        free(cl);
        return GP_EXIT_USAGE;
    }
    cl->flush_interval_ns = 0;
    rc = gp_client_line(cl, line, len);
    int e_no = cl->last_errno;
    gp_client_close(cl);
    free(cl);
    if (rc < 0 && sock && e_no == ENOENT) {
        /* A --socket path that does not exist is a missing file (3), like every command's. */
        fprintf(stderr, "goodput emit: --socket %s: %s (is `goodput agent` running?)\n", sock,
                strerror(e_no));
        return GP_EXIT_INPUT;
    }
    if (rc < 0) {
        fprintf(
            stderr,
            "goodput emit: no agent received the event at %s: %s (is `goodput agent` running?)\n",
            target, strerror(e_no));
        return GP_EXIT_FAIL;
    }
    return GP_EXIT_OK;
}
