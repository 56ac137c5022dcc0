/* checkpointer.c: the thread behind checkpointer.h. The writer's wal hook (called by SQLite
 * after each commit, on the writer's thread) hands the thread a checkpoint to run; the
 * thread runs it on its own connection and says when it is done through an eventfd. */
#include "store/checkpointer.h"
#include "util/cpu_clock.h"
#include "util/mono_clock.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

struct gp_ckpt {
    sqlite3 *writer, *db; /* db: the thread's own connection */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int want, stop;        /* under mu */
    gp_ckpt_stats stats;   /* under mu */
    _Atomic int64_t since; /* gp_ckpt_since_ns */
    int efd;
};

/* SQLite's wal hook, on the writer's thread, after a commit that left `pages` frames. */
static int on_commit(void *ctx, sqlite3 *db, const char *name, int pages) {
    (void)db;
    (void)name;
    gp_ckpt *c = ctx;
    if (pages < GP_CKPT_PAGES || atomic_load(&c->since)) return SQLITE_OK;
    atomic_store(&c->since, gp_mono_ns());
    pthread_mutex_lock(&c->mu);
    c->want = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return SQLITE_OK;
}

static void *run(void *arg) {
    gp_ckpt *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->want && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->want) break; /* stopping, nothing asked */
        c->want = 0;
        pthread_mutex_unlock(&c->mu);
        int64_t w0 = gp_mono_ns();
        double c0 = gp_thread_cpu_s();
        int log = -1, done = -1;
        int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        double cpu = gp_thread_cpu_s() - c0;
        double wall = (double)(gp_mono_ns() - w0) / 1e9;
        pthread_mutex_lock(&c->mu);
        c->stats.passes++;
        if (rc == SQLITE_OK && log >= 0 && done == log) c->stats.complete++;
        c->stats.wall_s += wall;
        if (wall > c->stats.wall_max_s) c->stats.wall_max_s = wall;
        c->stats.cpu_s += cpu;
        atomic_store(&c->since, 0);
        uint64_t one = 1;
        ssize_t w = write(c->efd, &one, sizeof one);
        (void)w; /* fails only when 2^64 ends were never read */
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

gp_ckpt *gp_ckpt_start(sqlite3 *writer, const char *path, const char *vfs, char *err,
                       size_t errlen) {
    gp_ckpt *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "checkpointer: out of memory");
        return NULL;
    }
    c->writer = writer;
    c->efd = -1;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs) !=
        SQLITE_OK) {
        snprintf(err, errlen, "checkpointer: cannot open '%s': %s", path,
                 c->db ? sqlite3_errmsg(c->db) : "out of memory");
        goto fail;
    }
    /* A connection learns the file is in WAL mode (and opens the WAL) with its first read;
     * until then a checkpoint on it does nothing. It never commits: no autocheckpoint. */
    char *msg = NULL;
    if (sqlite3_exec(c->db,
                     "PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0; "
                     "SELECT count(*) FROM sqlite_master",
                     NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "checkpointer: '%s': %s", path, msg ? msg : "cannot read it");
        sqlite3_free(msg);
        goto fail;
    }
    if ((c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        snprintf(err, errlen, "checkpointer: eventfd failed");
        goto fail;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    /* Signals stay with the writer's thread: a SIGTERM taken here would not interrupt the
     * loop's wait, and the stop would wait for its next wake-up. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&c->th, NULL, run, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "checkpointer: cannot start a thread");
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        goto fail;
    }
    sqlite3_wal_hook(writer, on_commit, c); /* replaces the automatic checkpoint's hook */
    return c;
fail:
    if (c->efd >= 0) close(c->efd);
    sqlite3_close(c->db);
    free(c);
    return NULL;
}

void gp_ckpt_stop(gp_ckpt *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
    sqlite3_wal_autocheckpoint(c->writer, GP_CKPT_PAGES); /* its hook back */
    sqlite3_close(c->db);
    close(c->efd);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int64_t gp_ckpt_since_ns(const gp_ckpt *c) {
    return c ? atomic_load(&((gp_ckpt *)c)->since) : 0;
}

int gp_ckpt_wait(gp_ckpt *c, int timeout_ms) {
    if (!c || !atomic_load(&c->since)) return 1;
    struct pollfd pf = {.fd = c->efd, .events = POLLIN};
    if (poll(&pf, 1, timeout_ms) > 0) { /* an end (maybe an earlier one nobody waited for) */
        uint64_t ends;
        ssize_t r = read(c->efd, &ends, sizeof ends);
        (void)r; /* another waiter may have cleared it: the flag below says */
    }
    return !atomic_load(&c->since);
}

gp_ckpt_stats gp_ckpt_get_stats(gp_ckpt *c) {
    gp_ckpt_stats s = {0};
    if (!c) return s;
    pthread_mutex_lock(&c->mu);
    s = c->stats;
    pthread_mutex_unlock(&c->mu);
    return s;
}
