/* read_pool.c: see read_pool.h. */
#include "store/read_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* More threads than this would only add connections and page caches: the report's jobs
 * are few and the machines it targets small. */
#define MAX_THREADS 64

typedef struct pool {
    const char *path;
    size_t n;
    gp_read_task task;
    void *ctx;
    atomic_size_t next; /* the next index to hand out */
} pool;

static void drain(pool *p, gp_store *conn) {
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n) return;
        p->task(conn, i, p->ctx);
    }
}

static void *worker(void *arg) {
    pool *p = arg;
    gp_store *conn;
    char err[256];
    if (gp_store_open(p->path, GP_STORE_READONLY, &conn, err, sizeof err) != 0)
        return NULL; /* the others (the caller at least) take its share */
    drain(p, conn);
    gp_store_close(conn);
    return NULL;
}

void gp_read_pool_run(gp_store *s, size_t n, int threads, gp_read_task task, void *ctx) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if ((size_t)threads > n) threads = (int)n;
    const char *path = gp_store_path(s);
    /* an in-memory store is one connection's own: no other connection can see it */
    if (threads <= 1 || !path || !path[0] || !strcmp(path, ":memory:")) {
        for (size_t i = 0; i < n; i++)
            task(s, i, ctx);
        return;
    }
    pool p = {.path = path, .n = n, .task = task, .ctx = ctx};
    atomic_init(&p.next, 0);
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int t = 1; t < threads; t++)
        started[t] = pthread_create(&tid[t], NULL, worker, &p) == 0;
    drain(&p, s);
    for (int t = 1; t < threads; t++)
        if (started[t]) pthread_join(tid[t], NULL);
}

int gp_read_threads(int requested) {
    const char *env = getenv("GOODPUT_REPORT_THREADS");
    if (env && env[0]) {
        char *end;
        long v = strtol(env, &end, 10);
        if (!*end && v >= 1) return v > MAX_THREADS ? MAX_THREADS : (int)v;
    }
    return requested >= 1 ? requested : 1;
}

int gp_read_threads_default(void) {
    return sysconf(_SC_NPROCESSORS_ONLN) >= 2 ? 2 : 1;
}
