/* agent_results.c: see agent_results.h.
 *
 * Why a child that execs `goodput` rather than a plain fork: the agent is not always
 * single-threaded when a pass starts (with --listen the HTTP server runs its reaper and
 * connection threads, serve/conns.c, and they use SQLite, malloc and stdio), and after a
 * fork only async-signal-safe calls are safe in the child of a threaded process: a lock
 * another thread held at the fork stays held forever in the child. So between fork and
 * exec the child calls only dup2, open, close_range/close, execv and _exit; the fresh
 * process then opens its own connection to the store (never the agent's), computes at
 * nice +10 and exits. /proc/self/exe is the agent's own binary even if the file was
 * replaced by an upgrade since it started, so the child's engine (hence the results'
 * fingerprint) is the agent's.
 *
 * The store: the agent commits its transaction before each pass, so the child sees every
 * row written so far; the child writes only in short transactions of its own (a claim,
 * then the result: engine/results/job_results.h), so the agent's writes wait at most for
 * one row, never for a computation. A child killed at any point leaves no half-written
 * result (each row is one transaction); the claims it may leave are never served, and the
 * agent deletes them once it has reaped it. */
#include "cli/agent_results.h"

#include "engine/accounting/acct_prefix.h"
#include "engine/diagnosis/ev_prefix.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(gp_agent_results *r, const char *what) {
    if (r->said) return;
    fprintf(stderr, "goodput agent: ended jobs' results not stored: %s\n", what);
    r->said = 1;
}

/* Reads what the child wrote so far (its output is a few lines; what exceeds the buffer
 * is dropped: a failed job then is tried again, slower, not wrong). */
static void drain(gp_agent_results *r) {
    while (r->fd >= 0) {
        char tmp[4096];
        ssize_t got = read(r->fd, tmp, sizeof tmp);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return; /* EAGAIN: nothing more now; 0: the child closed it */
        size_t room = sizeof r->out - 1 - r->out_len;
        size_t k = (size_t)got < room ? (size_t)got : room;
        memcpy(r->out + r->out_len, tmp, k);
        r->out_len += k;
    }
}

static void parse(gp_agent_results *r) {
    r->out[r->out_len] = 0;
    char *save = NULL;
    for (char *line = strtok_r(r->out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "stored ", 7))
            r->st.stored += strtoull(line + 7, NULL, 10);
        else if (!strncmp(line, "failed ", 7))
            gp_job_results_writer_skip(r->w, line + 7);
        else if (!strncmp(line, "error ", 6))
            say(r, line + 6);
    }
    r->out_len = 0;
}

/* Reaps the running child (block: waits for it); its output, CPU and peak memory are
 * taken. 1 reaped, 0 still running or none. */
static int reap(gp_agent_results *r, gp_agent *a, int block) {
    if (r->child <= 0) return 0;
    drain(r);
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t p;
    do
        p = wait4(r->child, &status, block ? 0 : WNOHANG, &ru);
    while (p < 0 && errno == EINTR);
    if (p == 0) return 0;
    drain(r); /* what is left in the pipe after it exited */
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    r->child = 0;
    if (p < 0) return 1; /* reaped elsewhere: its figures are lost */
    r->st.cpu_s += (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    if (ru.ru_maxrss > r->st.max_rss_kib) r->st.max_rss_kib = ru.ru_maxrss;
    parse(r);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) say(r, "could not run /proc/self/exe");
    if (WIFSIGNALED(status)) {
        if (!r->stopping) {
            char what[64];
            snprintf(what, sizeof what, "the sealing process died of signal %d", WTERMSIG(status));
            say(r, what);
        }
        /* Killed while it computed: its claims go (nothing else can be half-written). */
        gp_store_begin(gp_agent_store(a));
        gp_job_results_unclaim(gp_agent_store(a));
        gp_acct_prefix_unclaim(gp_agent_store(a));
    }
    return 1;
}

/* Starts a child for one pass at the agent's time. */
static void start(gp_agent_results *r, gp_agent *a, double budget_cpu_s) {
    gp_store *s = gp_agent_store(a);
    r->last_pass_ns = gp_agent_now_ns(a);
    /* The child reads the store through its own connection: commit first, so it sees
     * every row written so far (one more commit a minute). */
    gp_agent_flush(a);
    gp_store_begin(s);
    const char *db = gp_store_path(s);
    if (!db) return;
    size_t n_failed = 0;
    while (gp_job_results_writer_failed(r->w, n_failed))
        n_failed++;
    /* Everything the child needs is made before the fork (malloc is not safe after it). */
    char now_s[32], budget_s[32];
    snprintf(now_s, sizeof now_s, "%lld", (long long)r->last_pass_ns);
    snprintf(budget_s, sizeof budget_s, "%.3f", budget_cpu_s);
    char **argv = calloc(n_failed + 6, sizeof *argv);
    int pfd[2];
    if (!argv || pipe2(pfd, O_CLOEXEC) != 0) {
        free(argv);
        say(r, "no pipe for the sealing process");
        return;
    }
    argv[0] = "goodput";
    argv[1] = GP_AGENT_RESULTS_CMD;
    argv[2] = (char *)db;
    argv[3] = now_s;
    argv[4] = budget_s;
    for (size_t i = 0; i < n_failed; i++)
        argv[5 + i] = (char *)gp_job_results_writer_failed(r->w, i);
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    pid_t pid = fork();
    if (pid == 0) { /* async-signal-safe calls only, up to the exec */
        dup2(pfd[1], 1);
        int dn = open("/dev/null", O_RDONLY);
        if (dn >= 0) dup2(dn, 0);
        /* None of the agent's sockets or files stays open in the child. */
        if (close_range(3, ~0U, 0) != 0)
            for (int fd = 3; fd < 1024; fd++)
                close(fd);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    close(pfd[1]);
    free(argv);
    if (pid < 0) {
        close(pfd[0]);
        say(r, "cannot fork the sealing process");
        return;
    }
    r->child = pid;
    r->fd = pfd[0];
    r->out_len = 0;
    r->st.passes++;
}

static void results_hook(gp_agent *a, void *ctx) {
    gp_agent_results *r = ctx;
    reap(r, a, 0);
    if (r->child > 0) return; /* one at a time */
    int64_t now = gp_agent_now_ns(a);
    if (r->last_pass_ns && now - r->last_pass_ns < GP_AGENT_RESULTS_EVERY_NS) return;
    /* A child costs ~3 ms of CPU (exec, open, schema) even with nothing to seal: ~6 us a
     * GPU-sample at 8 GPUs. Ask the agent's own connection first (one query on jobs). */
    /* ... and running jobs' accounting prefixes (engine/accounting/acct_prefix.h). */
    if (gp_job_results_pending(r->w, gp_agent_store(a), now) == 0 &&
        gp_acct_prefix_pending(gp_agent_store(a), now) == 0) {
        r->last_pass_ns = now;
        r->st.idle_passes++;
        return;
    }
    start(r, a, GP_AGENT_RESULTS_CPU_S);
}

int gp_agent_results_attach(gp_agent_results *r, gp_agent *a) {
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->w = gp_job_results_writer_new();
    if (!r->w) return -1;
    /* Every minute of wall time too: the agent writes its queued samples before each hook
     * (agent.c), so a hook called every tick would undo its once-per-flush batching. A
     * child that ended early is reaped at the next call (a zombie for up to a minute). */
    return gp_agent_set_hook(a, results_hook, r, GP_AGENT_RESULTS_EVERY_NS);
}

void gp_agent_results_finish(gp_agent_results *r, gp_agent *a, int last_pass) {
    if (!r->w) return;
    if (!last_pass) {
        if (r->child > 0) {
            kill(r->child, SIGTERM);
            r->st.killed++;
            r->stopping = 1;
            reap(r, a, 1);
            gp_agent_flush(a);
        }
        return;
    }
    reap(r, a, 1);
    if (gp_job_results_pending(r->w, gp_agent_store(a), gp_agent_now_ns(a)) == 0 &&
        gp_acct_prefix_pending(gp_agent_store(a), gp_agent_now_ns(a)) == 0)
        r->st.idle_passes++;
    else
        start(r, a, 0);
    reap(r, a, 1);
    gp_agent_flush(a);
}

const gp_agent_results_stats *gp_agent_results_get_stats(const gp_agent_results *r) {
    return &r->st;
}

void gp_agent_results_free(gp_agent_results *r) {
    if (r->child > 0) { /* finish was not called (a failed run): nothing to wait for */
        kill(r->child, SIGTERM);
        waitpid(r->child, NULL, 0);
        r->child = 0;
    }
    if (r->fd >= 0) close(r->fd);
    r->fd = -1;
    gp_job_results_writer_free(r->w);
    r->w = NULL;
}

/* ---- the child ---- */

int gp_agent_results_child(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "goodput: %s is the agent's own (agent_results.h)\n", argv[0]);
        return 2;
    }
    /* Below the agent and the jobs it watches. */
    if (nice(10) == -1) { /* not fatal: it computes at the agent's priority */
    }
    gp_store *s;
    char err[512];
    if (gp_store_open(argv[1], 0, &s, err, sizeof err) != 0) {
        printf("error %s\n", err);
        return 1;
    }
    /* The agent holds the write lock between its commits (every few seconds): the child
     * waits for it, holding nothing, rather than give up a computation already done. */
    sqlite3_busy_timeout(gp_store_db(s), 60000);
    gp_job_results_writer *w = gp_job_results_writer_new();
    if (!w) {
        printf("error out of memory\n");
        gp_store_close(s);
        return 1;
    }
    for (int i = 4; i < argc; i++)
        gp_job_results_writer_skip(w, argv[i]);
    size_t n0 = 0;
    while (gp_job_results_writer_failed(w, n0))
        n0++;
    int n = gp_job_results_seal(w, s, strtoll(argv[2], NULL, 10), strtod(argv[3], NULL), err,
                                sizeof err);
    if (n < 0)
        printf("error %s\n", err);
    else
        printf("stored %d\n", n);
    /* Then the running jobs' prefixes, with what is left of the budget (a job at least). */
    int np = n < 0 ? -1
                   : gp_acct_prefix_pass(s, strtoll(argv[2], NULL, 10), strtod(argv[3], NULL), err,
                                         sizeof err);
    if (n >= 0 && np < 0) printf("error %s\n", err);
    /* ... and their events up to those prefixes (engine/diagnosis/ev_prefix.h). */
    int ne = np < 0 ? -1
                    : gp_ev_prefix_pass(s, strtoll(argv[2], NULL, 10), strtod(argv[3], NULL), err,
                                        sizeof err);
    if (np >= 0 && ne < 0) printf("error %s\n", err);
    for (const char *id; (id = gp_job_results_writer_failed(w, n0)); n0++)
        printf("failed %s\n", id);
    gp_job_results_writer_free(w);
    gp_store_close(s);
    return n < 0;
}
