/* cmd_logs.c: `goodput logs FILE --profile NAME`: read one training log offline through a
 * log profile (ingest/logs.h) and print what it says: a summary (steps, step time p50/p95,
 * evaluation and checkpoint time, restarts), or the events as protocol lines (--events),
 * or JSON. The protocol lines can be sent to an agent as they are (`goodput emit` reads
 * them), so a log read offline and a log tailed live give the same events. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/exit_codes.h"
#include "ingest/logs.h"
#include "ingest/protocol.h"
#include "util/term.h"

static void usage(FILE *f) {
    fprintf(f, "usage: goodput logs FILE --profile NAME [--job ID] [--events | --json]\n"
               "       goodput logs --list-profiles [--profiles FILE] [--wide]\n\n"
               "Reads a training log (no instrumentation needed) and turns it into goodput\n"
               "events: steps, evaluation, checkpoint and compile phases, restarts\n"
               "(docs/logs.md). Prints a summary by default.\n\n"
               "  --profile NAME     megatron (also NeMo), hf, lightning, torchtitan, deepspeed,\n"
               "                     or one from --profiles\n"
               "  --profiles FILE    extra profiles (named regex sets; docs/logs.md)\n"
               "  --job ID           the job the events belong to (default: the file name)\n"
               "  --events           print the events as protocol lines (docs/protocol.md)\n"
               "  --json             the summary and the events as JSON\n"
               "  --list-profiles    the profiles and their rules\n"
               "  --wide             text wider than 100 columns (each rule on one line)\n\n"
               "A live log: goodput agent --log JOB=PATH:PROFILE (rotation-safe tail).\n");
}

static json_t *num_or_null(double v) {
    return v >= 0 ? json_real(v) : json_null();
}

static void print_num(const char *label, double v, const char *unit) {
    if (v >= 0)
        printf("  %-22s %.3f %s\n", label, v, unit);
    else
        printf("  %-22s -\n", label);
}

/* A rule's regex is shown whole: in width columns, one longer than the line continues on
 * the next lines in slices (a regex cannot be wrapped at its spaces: they are part of it). */
static int list_profiles(const gp_log_profiles *ps, int width) {
    if (width > 0)
        printf("(a rule longer than a line continues on the next, indented 6; --wide: one "
               "line)\n");
    for (int i = 0; i < ps->n; i++) {
        const gp_log_profile *p = ps->p[i];
        gp_wrap_printf(stdout, 4, width, "%s: %s", p->name, p->about);
        for (int k = 0; k < p->n_rules; k++) {
            const gp_log_rule *r = &p->rule[k];
            const char *kind = r->kind == GP_LR_STEP      ? "step"
                               : r->kind == GP_LR_RESTART ? "restart"
                                                          : r->phase;
            const char *suf = r->kind == GP_LR_PHASE_BEGIN ? "_begin"
                              : r->kind == GP_LR_PHASE_END ? "_end"
                                                           : "";
            int col = printf("  %s%s  ", kind, suf);
            const char *src = r->src;
            size_t left = strlen(src);
            int room = width > 0 ? width - col : (int)left;
            while (left) {
                size_t take = room > 0 && left > (size_t)room ? (size_t)room : left;
                printf("%.*s\n", (int)take, src);
                src += take;
                left -= take;
                if (left) printf("      ");
                room = width > 0 ? width - 6 : (int)left;
            }
        }
    }
    return GP_EXIT_OK;
}

/* The job id from a path: its base name, characters outside the protocol's set as '_'. */
static void job_from_path(const char *path, char *out, size_t cap) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t k = 0;
    for (; *b && k + 1 < cap; b++) {
        char c = *b;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 strchr("._:@/-", c);
        out[k++] = ok ? c : '_';
    }
    out[k] = 0;
    if (!k) snprintf(out, cap, "log");
}

int gp_cmd_logs(int argc, char **argv) {
    const char *profile = NULL, *extra = NULL, *job = NULL;
    int json = 0, events = 0, list = 0, wide = 0;
    static const struct option opts[] = {{"profile", required_argument, 0, 'p'},
                                         {"profiles", required_argument, 0, 'P'},
                                         {"job", required_argument, 0, 'j'},
                                         {"json", no_argument, 0, 'J'},
                                         {"events", no_argument, 0, 'e'},
                                         {"list-profiles", no_argument, 0, 'l'},
                                         {"help", no_argument, 0, 'h'},
                                         {"wide", no_argument, 0, 'w'},
                                         {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            profile = optarg;
            break;
        case 'P':
            extra = optarg;
            break;
        case 'j':
            job = optarg;
            break;
        case 'J':
            json = 1;
            break;
        case 'e':
            events = 1;
            break;
        case 'l':
            list = 1;
            break;
        case 'w':
            wide = 1;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(stderr, "goodput logs: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    char err[512];
    gp_log_profiles ps = {0};
    if (gp_log_profiles_builtin(&ps, err, sizeof err) != 0 ||
        (extra && gp_log_profiles_load(&ps, extra, err, sizeof err) != 0)) {
        fprintf(stderr, "goodput logs: %s\n", err);
        gp_log_profiles_free(&ps);
        return GP_EXIT_INPUT;
    }
    if (list) {
        int rc = list_profiles(&ps, gp_text_width(wide));
        gp_log_profiles_free(&ps);
        return rc;
    }
    int rc = GP_EXIT_USAGE;
    if (optind + 1 != argc || !profile) {
        fprintf(stderr, "goodput logs: expected one FILE and --profile NAME (see --help)\n");
        goto out;
    }
    if (json && events) {
        fprintf(stderr, "goodput logs: --json and --events are exclusive\n");
        goto out;
    }
    const gp_log_profile *p = gp_log_profile_find(&ps, profile);
    if (!p) {
        fprintf(stderr, "goodput logs: no profile '%s' (goodput logs --list-profiles)\n", profile);
        goto out;
    }
    const char *path = argv[optind];
    char jobbuf[GP_JOB_ID_MAX];
    if (job && (strlen(job) == 0 || strlen(job) >= GP_JOB_ID_MAX)) {
        fprintf(stderr, "goodput logs: --job '%s': 1..63 bytes\n", job);
        goto out;
    }
    if (!job) job_from_path(path, jobbuf, sizeof jobbuf), job = jobbuf;
    gp_event *ev;
    size_t n;
    int anchored;
    if (gp_log_read_file(path, p, job, &ev, &n, &anchored, err, sizeof err) != 0) {
        fprintf(stderr, "goodput logs: %s\n", err);
        rc = GP_EXIT_INPUT;
        goto out;
    }
    gp_log_summary s;
    gp_log_summarize(ev, n, &s);
    if (events) {
        char line[GP_PROTO_MAX_LINE];
        for (size_t i = 0; i < n; i++)
            if (gp_proto_format(&ev[i], line, sizeof line) > 0) puts(line);
    } else if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "file", json_string(path));
        json_object_set_new(root, "profile", json_string(p->name));
        json_object_set_new(root, "job", json_string(job));
        json_object_set_new(root, "times_from_log", json_boolean(!anchored));
        json_object_set_new(root, "steps", json_integer((json_int_t)s.steps));
        json_object_set_new(root, "first_step", s.steps ? json_integer(s.first_step) : json_null());
        json_object_set_new(root, "last_step", s.steps ? json_integer(s.last_step) : json_null());
        json_object_set_new(root, "step_p50_s", num_or_null(s.step_p50_s));
        json_object_set_new(root, "step_p95_s", num_or_null(s.step_p95_s));
        json_object_set_new(root, "evaluations", json_integer((json_int_t)s.evals));
        json_object_set_new(root, "evaluation_s", num_or_null(s.eval_s));
        json_object_set_new(root, "checkpoints", json_integer((json_int_t)s.checkpoints));
        json_object_set_new(root, "checkpoint_s", num_or_null(s.checkpoint_s));
        json_object_set_new(root, "checkpoint_restore_s", num_or_null(s.restore_s));
        json_object_set_new(root, "compile_s", num_or_null(s.compile_s));
        json_object_set_new(root, "restarts", json_integer((json_int_t)s.restarts));
        json_object_set_new(root, "span_s", json_real(s.span_s));
        json_t *arr = json_array();
        char line[GP_PROTO_MAX_LINE];
        for (size_t i = 0; i < n; i++)
            if (gp_proto_format(&ev[i], line, sizeof line) > 0)
                json_array_append_new(arr, json_string(line));
        json_object_set_new(root, "events", arr);
        json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(13));
        putchar('\n');
        json_decref(root);
    } else {
        printf("%s (profile %s, job %s): %zu events\n", path, p->name, job, n);
        if (s.steps)
            printf("  %-22s %zu (steps %lld..%lld)\n", "steps logged", s.steps,
                   (long long)s.first_step, (long long)s.last_step);
        else
            printf("  %-22s 0\n", "steps logged");
        print_num("step time p50", s.step_p50_s, "s/iteration");
        print_num("step time p95", s.step_p95_s, "s/iteration");
        printf("  %-22s %zu\n", "evaluations", s.evals);
        print_num("evaluation time", s.eval_s, "s");
        printf("  %-22s %zu\n", "checkpoints", s.checkpoints);
        print_num("checkpoint time", s.checkpoint_s, "s");
        print_num("checkpoint restore", s.restore_s, "s");
        print_num("compile time", s.compile_s, "s");
        printf("  %-22s %zu\n", "restarts", s.restarts);
        printf("  %-22s %.3f s%s\n", "span", s.span_s,
               anchored ? " (the log has no timestamps: times from its step durations)" : "");
    }
    free(ev);
    rc = GP_EXIT_OK;
    if (n == 0) { /* most likely the wrong profile: say so, exit as bad input */
        fprintf(stderr, "goodput logs: no line of %s matched profile '%s'\n", path, p->name);
        rc = GP_EXIT_INPUT;
    }
out:
    gp_log_profiles_free(&ps);
    return rc;
}
