/* main.c: `goodput COMMAND [OPTIONS]`: dispatches to the command table in commands.h. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/footprint.h"
#include "cli/agent_results.h"
#include "cli/exit_codes.h"
#include "store/store.h"
#include "util/version.h"

#define GP_COMMAND(name, fn, summary) int fn(int argc, char **argv);
#include "cli/commands.h"
#undef GP_COMMAND

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} command;

static const command commands[] = {
#define GP_COMMAND(name, fn, summary) {#name, fn, summary},
#include "cli/commands.h"
#undef GP_COMMAND
};

static void usage(FILE *f) {
    fprintf(
        f,
        "goodput %s: how much of your GPU time turns into useful work, and why not the rest.\n\n"
        "usage: goodput COMMAND [OPTIONS]   (goodput COMMAND --help for each)\n\ncommands:\n",
        GP_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nStart with `goodput demo`: a simulated node, its live table, then the report.\n"
               "Exit codes: 0 ok, 1 failure, 2 usage error, 3 bad input data.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return GP_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("goodput %s\n", GP_VERSION);
        return GP_EXIT_OK;
    }
    /* -h is --help for every command (no command gives -h another meaning). */
    static char help[] = "--help";
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h")) argv[i] = help;
    /* report and diagnose read one job's arrays, free them, read the next job's. With
     * glibc's sliding mmap threshold the later arrays land in the brk heap, where growing
     * them leaves freed holes that stay resident; a fixed threshold keeps each array of
     * 128 KiB or more in a mapping of its own, grown by mremap and unmapped on free
     * (peak RSS, docs/benchmarks.md "Start-up and libraries"). */
    if (!strcmp(argv[1], "report") || !strcmp(argv[1], "diagnose") ||
        !strcmp(argv[1], GP_AGENT_RESULTS_CMD)) {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    }
    /* The peak RSS of a report is mostly code: libc and this binary mapped 64 KiB around
     * each page touched (issue 22: report <= 4 MiB; 4.3 -> 2.9 MiB on the 60-minute demo).
     * Drop what start-up mapped and let each later fault map one page (agent/footprint.h),
     * for the commands that read a store or a trace; not for `emit` (a client's every step,
     * where start-up time counts) nor --version. The agent does it itself once its
     * libraries are loaded. GOODPUT_KEEP_PAGES=1 leaves the pages (to compare). */
    static const char *const lean[] = {"report", "diagnose", GP_AGENT_RESULTS_CMD,
                                       "serve",  "trace",    "top"};
    for (size_t i = 0; i < sizeof lean / sizeof lean[0]; i++)
        if (!strcmp(argv[1], lean[i]) && !getenv("GOODPUT_KEEP_PAGES")) gp_footprint_trim();
    /* The agent lives for years and its peak RSS is the budget (issue 22): the same fixed
     * threshold, so the live findings' window arrays are unmapped after each pass instead
     * of leaving holes in the heap, and one malloc arena for all its threads (the HTTP
     * server's workers and the connection reaper would each get an arena of their own,
     * ~0.2-0.8 MiB resident each, for a few renders a minute; docs/benchmarks.md, agent
     * --listen). The server leaves this policy alone (gp_serve_opts.keep_malloc_policy). */
    if (!strcmp(argv[1], "agent")) {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        mallopt(M_ARENA_MAX, 1);
        /* ... and SQLite's page caches without their first 20-page block (store.h). */
        gp_store_lean_page_caches();
    }
    /* The agent's sealing child (agent_results.h): not a command users run. */
    if (!strcmp(argv[1], GP_AGENT_RESULTS_CMD)) return gp_agent_results_child(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "goodput: unknown command '%s' (try goodput --help)\n", argv[1]);
    return GP_EXIT_USAGE;
}
