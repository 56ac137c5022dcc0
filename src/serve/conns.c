/* conns.c: connection deadlines and the waiting-connection share (conns.h). */
#include "serve/conns.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

typedef struct slot {
    int fd, in_use, busy, cut;
    double since_s; /* opened, or last response done, or request started (busy) */
} slot;

struct srv_conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t reaper;
    int stop;
    int n;
    int max_waiting;
    double header_s, request_s;
    srv_conns_stats st;
    slot *s;
};

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cut(srv_conns *g, slot *x) {
    x->cut = 1;
    shutdown(x->fd, SHUT_RDWR);
    (void)g;
}

static void *reap(void *arg) {
    srv_conns *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200000000L; /* 0.2 s: deadlines hold to within that */
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
        double now = mono_s();
        for (int i = 0; i < g->n; i++) {
            slot *x = &g->s[i];
            if (!x->in_use || x->cut) continue;
            if (!x->busy && now - x->since_s > g->header_s) {
                g->st.header_timeouts++;
                cut(g, x);
            } else if (x->busy && now - x->since_s > g->request_s) {
                g->st.request_timeouts++;
                cut(g, x);
            }
        }
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

srv_conns *srv_conns_new(int max_conns, int max_waiting, double header_deadline_s,
                         double request_deadline_s) {
    srv_conns *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->s = calloc((size_t)max_conns, sizeof *g->s);
    if (!g->s) {
        free(g);
        return NULL;
    }
    g->n = max_conns;
    g->max_waiting = max_waiting;
    g->header_s = header_deadline_s;
    g->request_s = request_deadline_s;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    if (pthread_create(&g->reaper, NULL, reap, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g->s);
        free(g);
        return NULL;
    }
    return g;
}

void srv_conns_free(srv_conns *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->reaper, NULL);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->s);
    free(g);
}

void srv_conns_opened(srv_conns *g, int fd, void **ctx) {
    pthread_mutex_lock(&g->mu);
    slot *free_slot = NULL, *oldest = NULL;
    int waiting = 0;
    for (int i = 0; i < g->n; i++) {
        slot *x = &g->s[i];
        if (!x->in_use) {
            if (!free_slot) free_slot = x;
            continue;
        }
        if (x->busy || x->cut) continue;
        waiting++;
        if (!oldest || x->since_s < oldest->since_s) oldest = x;
    }
    /* Past the share, the oldest waiting connection makes room (a slow client's, since a
     * real client's headers follow its connect at once). */
    if (waiting >= g->max_waiting && oldest) {
        g->st.evicted++;
        cut(g, oldest);
    }
    g->st.opened++;
    if (free_slot) { /* more connections than slots cannot happen (same limit); else untracked */
        *free_slot = (slot){.fd = fd, .in_use = 1, .since_s = mono_s()};
        *ctx = free_slot;
    } else {
        *ctx = NULL;
    }
    pthread_mutex_unlock(&g->mu);
}

void srv_conns_closed(srv_conns *g, void **ctx) {
    slot *x = *ctx;
    if (!x) return;
    pthread_mutex_lock(&g->mu);
    x->in_use = 0;
    pthread_mutex_unlock(&g->mu);
    *ctx = NULL;
}

void srv_conns_request(srv_conns *g, void *ctx) {
    slot *x = ctx;
    if (!x) return;
    pthread_mutex_lock(&g->mu);
    if (!x->busy) {
        x->busy = 1;
        x->since_s = mono_s();
    }
    pthread_mutex_unlock(&g->mu);
}

void srv_conns_done(srv_conns *g, void *ctx) {
    slot *x = ctx;
    if (!x) return;
    pthread_mutex_lock(&g->mu);
    x->busy = 0;
    x->since_s = mono_s();
    pthread_mutex_unlock(&g->mu);
}

srv_conns_stats srv_conns_get_stats(srv_conns *g) {
    pthread_mutex_lock(&g->mu);
    srv_conns_stats st = g->st;
    for (int i = 0; i < g->n; i++)
        if (g->s[i].in_use) {
            st.open++;
            if (!g->s[i].busy && !g->s[i].cut) st.waiting++;
        }
    pthread_mutex_unlock(&g->mu);
    return st;
}
