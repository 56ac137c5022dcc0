/* cmd_trace.c: `goodput trace PATH... [--json] [--html FILE]`: profiler traces (Kineto JSON
 * or .json.gz, Nsight Systems .sqlite; a directory means one file per rank) through HTA's
 * analyses to findings. THREADS: ranks are read and analysed in parallel on all online cores
 * with a small pthread pool (one rank per task, results in per-rank slots, no shared mutable
 * state besides an atomic task counter and the progress counter). The shared progress bar
 * (util/progress.h) is drawn on stderr when it is a terminal and reading takes over 2 s. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/exit_codes.h"
#include "traces/trace.h"
#include "util/progress.h"
#include "util/term.h"

typedef struct {
    char **paths;
    size_t n;
    gp_trace_rank *ranks;
    gp_rank_result *res;
    char (*errs)[1024];
    int *rcs;
    atomic_size_t next;
    atomic_uint_fast64_t done_bytes;
    uint64_t total_bytes;
    int filter;
    unsigned char *analysed; /* rank analysed (and its rows freed) while reading */
    atomic_int early;        /* how many */
    int phase;
    gp_trace_options opt;
    uint64_t max_inflate_bytes;    /* --max-inflate (0: the default cap) */
    atomic_uint_fast64_t n_events; /* rows read over all ranks */
    atomic_size_t files_read;      /* phase 0 tasks finished (the bar runs until all are) */
} job;

static void progress_cb(void *ctx, uint64_t delta) {
    job *j = ctx;
    atomic_fetch_add(&j->done_bytes, delta);
}

static void *worker(void *arg) {
    job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n) break;
        if (j->phase == 0) {
            if (gp_trace_is_sqlite(j->paths[i]))
                j->rcs[i] = gp_nsys_read(j->paths[i], &j->ranks[i], j->errs[i], sizeof j->errs[i]);
            else
                j->rcs[i] =
                    gp_kineto_read_capped(j->paths[i], &j->ranks[i], progress_cb, j,
                                          j->max_inflate_bytes, j->errs[i], sizeof j->errs[i]);
            if (j->rcs[i] == 0)
                atomic_fetch_add(&j->n_events, j->ranks[i].gpu.n + j->ranks[i].cpu.n);
            struct stat st; /* an Nsight export reports no bytes as it reads: count it whole */
            if (gp_trace_is_sqlite(j->paths[i]) && stat(j->paths[i], &st) == 0)
                atomic_fetch_add(&j->done_bytes, (uint64_t)st.st_size);
            /* HTA's step filter depends on the whole set (two or more distinct ProfilerStep
             * names), but a rank that has two itself, or --all-steps, settles it: analyse
             * now and free the rows, so memory holds one rank per thread, not the set */
            gp_trace_rank *r = &j->ranks[i];
            if (j->rcs[i] == 0 && (!j->filter || gp_trace_distinct_steps(&r, 1) >= 2)) {
                gp_trace_prepare(r, j->filter);
                gp_trace_analyze(r, &j->opt, &j->res[i]);
                gp_trace_rank_free(r);
                j->analysed[i] = 1;
                atomic_fetch_add(&j->early, 1);
            }
            atomic_fetch_add(&j->files_read, 1);
        } else if (!j->analysed[i]) {
            gp_trace_prepare(&j->ranks[i], j->filter);
            gp_trace_analyze(&j->ranks[i], &j->opt, &j->res[i]);
            gp_trace_rank_free(&j->ranks[i]); /* rows are no longer needed: keep memory bounded */
        }
    }
    return NULL;
}

static int is_trace_name(const char *n) {
    size_t l = strlen(n);
    return (l > 5 && !strcmp(n + l - 5, ".json")) || (l > 3 && !strcmp(n + l - 3, ".gz")) ||
           (l > 7 && !strcmp(n + l - 7, ".sqlite"));
}

/* The format of one trace file from its first bytes: "nsys" (SQLite), "kineto" (a JSON
 * object, or gzip: Kineto's .json.gz), or NULL when it is neither. */
static const char *sniff_format(const char *path) {
    if (gp_trace_is_sqlite(path)) return "nsys";
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char b[256];
    size_t n = fread(b, 1, sizeof b, f), i = 0;
    fclose(f);
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) return "kineto";
    if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) i = 3; /* UTF-8 byte order mark */
    while (i < n && isspace(b[i]))
        i++;
    return i < n && (b[i] == '{' || b[i] == '[') ? "kineto" : NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_path(char ***v, size_t *n, const char *p) {
    *v = realloc(*v, (*n + 1) * sizeof **v);
    if (!*v) abort();
    (*v)[(*n)++] = strdup(p);
}

static int cmp_rank(const void *a, const void *b) {
    const gp_rank_result *x = a, *y = b;
    if (x->run != y->run) return (x->run > y->run) - (x->run < y->run);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* One line per file whose events were dropped or are suspect: never summed silently. */
static void warn_file(const gp_rank_result *r) {
    const gp_trace_warnings *w = &r->warn;
    if (w->bad_duration)
        fprintf(
            stderr,
            "goodput trace: warning: %s: %llu events with a negative or absurd duration dropped "
            "(first at traceEvents[%lld])\n",
            r->path, (unsigned long long)w->bad_duration, (long long)w->first_bad_idx);
    if (w->zero_duration)
        fprintf(stderr,
                "goodput trace: warning: %s: %llu GPU events with zero duration (first at "
                "traceEvents[%lld]); kept, they add no time\n",
                r->path, (unsigned long long)w->zero_duration, (long long)w->first_zero_idx);
    if (w->dup_steps)
        fprintf(stderr,
                "goodput trace: warning: %s: %llu repeated ProfilerStep ids (first at "
                "traceEvents[%lld]); the repeats are left out of the per-step view\n",
                r->path, (unsigned long long)w->dup_steps, (long long)w->first_dup_idx);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput trace PATH... [--json] [--html FILE] [--all-steps] [--wide]\n"
            "                     [--rank-from trace|file|order] [--max-inflate SIZE]\n"
            "  PATH: Kineto trace (.json or .json.gz), Nsight Systems export (.sqlite), or a\n"
            "        directory of them (one file per rank; ranks are analysed in parallel on\n"
            "        all cores).\n"
            "  --json        machine-readable output\n"
            "  --html FILE   self-contained HTML report (inline SVG; no network)\n"
            "  --all-steps   keep the last ProfilerStep (HTA drops it by default)\n"
            "  --wide        text wider than 100 columns: whole kernel names, one step table\n"
            "  --rank-from trace|file|order\n"
            "                where a file's rank comes from: trace = distributedInfo.rank (the\n"
            "                default; 0 when absent), file = the number after \"rank\" or\n"
            "                \"worker\" in the file name, order = position in the sorted file\n"
            "                list. Files of the same rank from different runs (their time\n"
            "                spans do not overlap) are reported as separate runs, never summed.\n"
            "  --max-inflate SIZE\n"
            "                refuse a gzip trace that inflates past SIZE (default 16G; units\n"
            "                K M G T, powers of 1024)\n");
}

/* "16G", "512M", "1000": bytes (K M G T are powers of 1024); 0 or -1 on error. */
static int parse_size(const char *v, uint64_t *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || !(x > 0)) return -1;
    double mult = 1;
    if (*end) {
        const char *units = "KMGT";
        const char *u = strchr(units, toupper((unsigned char)*end));
        if (!u || (end[1] && strcmp(end + 1, "B") && strcmp(end + 1, "iB"))) return -1;
        for (const char *k = units; k <= u; k++)
            mult *= 1024;
    }
    if (x * mult > 1.8e19) return -1;
    *out = (uint64_t)(x * mult);
    return *out ? 0 : -1;
}

int gp_cmd_trace(int argc, char **argv) {
    uint64_t max_inflate = 0;
    int as_json = 0, filter = 1, wide = 0;
    gp_rank_from rank_from = GP_RANK_FROM_TRACE;
    const char *html = NULL;
    char **paths = NULL;
    size_t np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            as_json = 1;
        else if (!strcmp(argv[i], "--all-steps"))
            filter = 0;
        else if (!strcmp(argv[i], "--wide"))
            wide = 1;
        else if (!strcmp(argv[i], "--html") && i + 1 < argc)
            html = argv[++i];
        else if (!strcmp(argv[i], "--rank-from") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "trace"))
                rank_from = GP_RANK_FROM_TRACE;
            else if (!strcmp(v, "file"))
                rank_from = GP_RANK_FROM_FILE;
            else if (!strcmp(v, "order"))
                rank_from = GP_RANK_FROM_ORDER;
            else {
                fprintf(stderr, "goodput trace: --rank-from takes trace, file or order, not '%s'\n",
                        v);
                for (size_t k = 0; k < np; k++)
                    free(paths[k]);
                free(paths);
                return GP_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--max-inflate") && i + 1 < argc) {
            if (parse_size(argv[++i], &max_inflate) < 0) {
                fprintf(stderr,
                        "goodput trace: --max-inflate '%s': expected a size like 512M or 16G\n",
                        argv[i]);
                return GP_EXIT_USAGE;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return GP_EXIT_OK;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "goodput trace: unknown option '%s' (see goodput trace --help)\n",
                    argv[i]);
            return GP_EXIT_USAGE;
        } else {
            struct stat st;
            if (stat(argv[i], &st) != 0) {
                fprintf(stderr, "goodput trace: %s: no such file or directory\n", argv[i]);
                return GP_EXIT_INPUT;
            }
            if (S_ISDIR(st.st_mode)) {
                DIR *d = opendir(argv[i]);
                struct dirent *e;
                size_t before = np;
                while (d && (e = readdir(d))) {
                    if (e->d_name[0] == '.' || !is_trace_name(e->d_name)) continue;
                    char p[4096];
                    snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                    add_path(&paths, &np, p);
                }
                if (d) closedir(d);
                if (np == before) {
                    fprintf(
                        stderr,
                        "goodput trace: %s: no Kineto (.json, .json.gz) or Nsight (.sqlite) traces "
                        "in this directory\n",
                        argv[i]);
                    return GP_EXIT_INPUT;
                }
                qsort(paths + before, np - before, sizeof *paths, cmp_str);
            } else
                add_path(&paths, &np, argv[i]);
        }
    }
    if (!np) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    char chosen[128]; /* printed once the read succeeded, so an error stays one line */
    {                 /* the format of each file comes from its content; say which were chosen */
        size_t n_kineto = 0, n_nsys = 0;
        for (size_t i = 0; i < np; i++) {
            const char *fmt = sniff_format(paths[i]);
            if (!fmt) {
                fprintf(stderr,
                        "goodput: %s: not a trace goodput knows; expected a Kineto trace (a JSON "
                        "object, .json or .json.gz) or an Nsight Systems SQLite export "
                        "(.sqlite)\n",
                        paths[i]);
                for (size_t k = 0; k < np; k++)
                    free(paths[k]);
                free(paths);
                return GP_EXIT_INPUT;
            }
            if (fmt[0] == 'n')
                n_nsys++;
            else
                n_kineto++;
        }
        snprintf(chosen, sizeof chosen,
                 "goodput: trace: format %s%s%s (%zu file%s, chosen from content)\n",
                 n_kineto ? "kineto" : "", n_kineto && n_nsys ? " + " : "", n_nsys ? "nsys" : "",
                 np, np == 1 ? "" : "s");
    }
#ifdef __GLIBC__
    /* Every fresh page costs a fault (~9-18 us on the bench VM, which pages through its
     * hypervisor), and rows and the analyses' index arrays are many MB a rank. So freed
     * memory stays in the heap for the next rank or analysis to reuse: large blocks come
     * from the heap, not from mmap (which munmaps them on free), and the heap is not trimmed
     * below 128 MiB. On the 210 MB 8-rank synthetic set that is 13,000 faults instead of
     * 49,000 and about half the CPU, for 55 instead of 39 MB peak RSS; memory still grows
     * with the largest rank per thread, never with the number of ranks (bench/RESULTS.md,
     * "traces"). */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    job j = {.paths = paths, .n = np, .filter = filter, .max_inflate_bytes = max_inflate};
    gp_trace_options_default(&j.opt);
    j.ranks = calloc(np, sizeof *j.ranks);
    j.res = calloc(np, sizeof *j.res);
    j.errs = calloc(np, sizeof *j.errs);
    j.rcs = calloc(np, sizeof *j.rcs);
    j.analysed = calloc(np, 1);
    if (!j.ranks || !j.res || !j.errs || !j.rcs || !j.analysed) abort();
    for (size_t i = 0; i < np; i++) {
        struct stat st;
        if (stat(paths[i], &st) == 0) j.total_bytes += (uint64_t)st.st_size;
    }
    gp_progress bar;
    gp_progress_start(&bar, "reading traces", (double)j.total_bytes, as_json);
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = nc > 0 ? (size_t)nc : 1;
    if (nt > np) nt = np;
    pthread_t *th = calloc(nt, sizeof *th);
    if (!th) abort();
    int rc = GP_EXIT_OK;
    for (j.phase = 0; j.phase < 2; j.phase++) {
        atomic_store(&j.next, 0);
        for (size_t t = 0; t < nt; t++)
            pthread_create(&th[t], NULL, worker, &j);
        while (j.phase == 0 && bar.enabled && atomic_load(&j.files_read) < np) {
            gp_progress_update(&bar, (double)atomic_load(&j.done_bytes));
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        for (size_t t = 0; t < nt; t++)
            pthread_join(th[t], NULL);
        /* The last state is drawn before the bar is cleared: a read that ends between two
         * polls (100 ms apart) would otherwise leave its last drawing short of done. */
        if (j.phase == 0 && bar.drawn) gp_progress_update(&bar, (double)atomic_load(&j.done_bytes));
        if (j.phase == 0) gp_progress_end(&bar);
        if (j.phase == 0) {
            for (size_t i = 0; i < np; i++)
                if (j.rcs[i]) {
                    fprintf(stderr, "goodput trace: %s\n", j.errs[i]);
                    rc = GP_EXIT_INPUT;
                }
            if (rc) break;
            if (atomic_load(&j.n_events) == 0) {
                /* Nothing to measure: every ratio would be 0/0. */
                fprintf(stderr, "goodput trace: %s: no events\n", np == 1 ? paths[0] : "traces");
                rc = GP_EXIT_INPUT;
                break;
            }
            gp_trace_rank **rp = malloc(np * sizeof *rp);
            if (!rp) abort();
            for (size_t i = 0; i < np; i++)
                rp[i] = &j.ranks[i];
            /* a rank analysed early had two steps itself, so the set does too */
            if (!atomic_load(&j.early) && gp_trace_distinct_steps(rp, np) < 2)
                j.filter = 0; /* HTA: one step, no filter */
            free(rp);
        }
    }
    if (rc == GP_EXIT_OK) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        gp_trace_report rep = {.ranks = j.res, .n_ranks = np};
        for (size_t i = 0; i < np; i++) {
            if (rank_from == GP_RANK_FROM_ORDER) rep.ranks[i].rank = (int)i;
            if (rank_from == GP_RANK_FROM_FILE) {
                int fr = gp_rank_from_filename(rep.ranks[i].path);
                if (fr < 0) {
                    fprintf(stderr,
                            "goodput trace: %s: --rank-from file: no number after \"rank\" or "
                            "\"worker\" in the file name\n",
                            rep.ranks[i].path);
                    rc = GP_EXIT_INPUT;
                } else
                    rep.ranks[i].rank = fr;
            }
            warn_file(&rep.ranks[i]);
        }
        rep.n_runs = gp_trace_assign_runs(rep.ranks, np);
        qsort(rep.ranks, np, sizeof *rep.ranks, cmp_rank);
        rep.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        gp_trace_report_finish(&rep);
        if (as_json)
            gp_trace_write_json(&rep, stdout);
        else if (!html) /* --html alone writes the page, not the page and the text */
            gp_trace_write_text(&rep, stdout, gp_text_width(wide));
        if (html) {
            char err[1200];
            if (gp_trace_write_html(&rep, html, err, sizeof err)) {
                fprintf(stderr, "goodput trace: %s\n", err);
                rc = GP_EXIT_FAIL;
            }
        }
        gp_trace_report_free(&rep);
        j.res = NULL;
    } else {
        for (size_t i = 0; i < np; i++) {
            gp_trace_rank_free(&j.ranks[i]);
            if (j.analysed[i]) gp_rank_result_free(&j.res[i]);
        }
    }
    if (rc == GP_EXIT_OK) fputs(chosen, stderr);
    free(j.analysed);
    free(j.res);
    free(j.ranks);
    free(j.errs);
    free(j.rcs);
    free(th);
    for (size_t i = 0; i < np; i++)
        free(paths[i]);
    free(paths);
    return rc;
}
