/* agent.c: the loop behind agent.h. One thread; poll() waits for event datagrams until
 * the next tick, so events are absorbed while the loop idles between samples.
 *
 * A tick's device and process samples are kept in memory and written to the store in
 * one run just before anything reads or commits the store: the flush, the retention
 * pass, a hook, the close. The rows, their values and the transaction they commit in
 * are the same as when each tick wrote its own; what changes is that the inserts run
 * back to back, once per flush instead of once per tick, so SQLite's code and pages are
 * brought back into the caches once per flush rather than after every 1 s sleep
 * (bench/agent_cost, docs/benchmarks.md). The queue is bounded (PENDING_MAX_BYTES): past
 * it, it is written at once, so a long --flush on a large node does not grow memory. */
#include "agent/agent.h"
#include "util/cpu_clock.h"
#include "util/mono_clock.h"

#include "attribution/jobmap.h"
#include "attribution/presence.h"
#include "attribution/resolver.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "store/agent_lock.h"
#include "store/rollup.h"

#define MAX_DEVICES 4096
#define MAX_PROCS 8192
#define PENDING_MAX_BYTES (256 * 1024)
#define PENDING_HOLD_BYTES (4 * PENDING_MAX_BYTES)
#define EVENTS_HOLD_MAX 4096 /* events kept while another writer holds the store */
#define HELD_RETRY_NS 1000000000LL
/* The longest the loop leaves the store alone for a checkpoint (ckpt_pause): past it, the
 * loop writes again and the WAL starts over at a later checkpoint. The sockets stay unread
 * meanwhile; their 8 MiB receive buffers hold ~2 s of events at the rated 100k/s. */
#define CKPT_PAUSE_MAX_NS 1000000000LL

struct gp_agent {
    gp_agent_opts o;
    gp_store *store;
    gp_source src;
    gp_ingest *ingest;
    gp_device *devices;
    size_t n_devices;
    gp_sample *samples;
    gp_proc_sample *procs;
    gp_sample *pend_s; /* samples taken, not yet written to the store */
    size_t n_pend_s, cap_pend_s;
    gp_proc_sample *pend_p; /* idem, process rows (owner stamped) */
    size_t n_pend_p, cap_pend_p;
    double src_out_cpu_s; /* gp_thread_cpu_s() when the source's last calls returned */
    gp_event *held_e;     /* events that came while another writer held the store, in order */
    size_t n_held_e, cap_held_e;
    int held;            /* the last write found the store held by another writer */
    int64_t held_try_ns; /* when it was last tried (mono_ns) */
    gp_agent_stats stats;
    gp_resolver *resolver; /* NULL: attribution off */
    gp_presence *presence;
    gp_jobmap *jobmap; /* NULL: no job-mapping directory */
    char jobmap_dir[512];
    int jobmap_said;
    int64_t now_ns; /* source time of the last tick */
    int own_clock;  /* the source has its own clock (sim, replay) */
    struct {
        gp_agent_hook fn;
        void *ctx;
        int64_t every_ns, last_wall;
    } hooks[GP_AGENT_MAX_HOOKS]; /* the demo's table, the HTTP server's pump, ... */
    int n_hooks;
    int store_error_said;
    int lock_fd;                /* held for the agent's life: one agent per store */
    int epfd;                   /* the event sockets, registered once; -1: poll() them */
    char last_error[256];       /* the source's failure said last; empty while it answers */
    int64_t last_error_wall_ns; /* when it was said */
};

int64_t gp_wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 1 while the WAL checkpoint that a commit started runs on the store's thread (store.h):
 * the loop then begins no transaction (events wait in held_e, rows in their queues, the
 * sockets unread, hooks, retention and the flush until it ends), so the next transaction
 * starts the WAL over from its beginning and the WAL stays bounded, as when SQLite
 * checkpointed inside the commit. Taking the checkpoint off the loop is what keeps ticks on
 * time under an event flood (store/checkpointer.h); at most CKPT_PAUSE_MAX_NS. */
static int64_t ckpt_pause_end(const gp_agent *a) { /* monotonic ns; 0: no pause */
    int64_t since = gp_store_checkpoint_since_ns(a->store);
    return since && gp_mono_ns() - since < CKPT_PAUSE_MAX_NS ? since + CKPT_PAUSE_MAX_NS : 0;
}
static int ckpt_pause(const gp_agent *a) {
    return ckpt_pause_end(a) != 0;
}

static void put_event_now(gp_agent *a, const gp_event *e) {
    int rc = gp_store_put_event(a->store, e);
    if (rc == 1) {
        a->stats.events_duplicate++;
        return;
    }
    if (rc != 0) {
        a->stats.store_errors++;
        if (!a->store_error_said && !gp_store_failed(a->store, NULL, 0)) {
            fprintf(stderr, "goodput agent: store write failed: %s\n", gp_store_errmsg(a->store));
            a->store_error_said = 1;
        }
        return;
    }
    a->stats.events++;
}

static size_t pending_bytes(const gp_agent *a) {
    return a->n_pend_s * sizeof *a->pend_s + a->n_pend_p * sizeof *a->pend_p;
}

/* Writes the held events and the queued samples into the store's open transaction (opening
 * one if needed). Another writer (the sealing child, a Slurm prolog's `goodput`) holding
 * the store longer than GP_AGENT_LOCK_WAIT_MS: everything stays queued (samples up to
 * PENDING_HOLD_BYTES, events up to EVENTS_HOLD_MAX) rather than being lost, and is tried
 * again at most once per HELD_RETRY_NS whatever calls (flushes, hooks, the server's pump),
 * so the loop keeps ticking and reading its sockets; past those bounds they are dropped and
 * counted. force: try now (the last write at close). */
static void write_pending_wait(gp_agent *a, int wait_ms, int force) {
    if (!a->n_pend_s && !a->n_pend_p && !a->n_held_e) return;
    if (!force && ckpt_pause(a)) return;
    int64_t now = gp_mono_ns();
    if (a->held && !force && now - a->held_try_ns < HELD_RETRY_NS &&
        pending_bytes(a) <= PENDING_HOLD_BYTES)
        return;
    a->held = gp_store_begin_write(a->store, wait_ms) != 0;
    a->held_try_ns = now;
    if (a->held) {
        a->stats.store_busy++;
        if (pending_bytes(a) <= PENDING_HOLD_BYTES) return;
        /* Held for minutes: the oldest rows go, counted (written one by one without the
         * lock, each would wait the busy timeout). */
        a->stats.store_errors += a->n_pend_s + a->n_pend_p;
        a->stats.samples -= a->n_pend_s;
        a->stats.proc_samples -= a->n_pend_p;
        if (!a->store_error_said) {
            fprintf(stderr,
                    "goodput agent: the store has been held by another writer for too long: "
                    "%zu samples and %zu process rows dropped (counted in store errors)\n",
                    a->n_pend_s, a->n_pend_p);
            a->store_error_said = 1;
        }
        a->n_pend_s = a->n_pend_p = 0;
        return;
    }
    for (size_t i = 0; i < a->n_held_e; i++)
        put_event_now(a, &a->held_e[i]);
    a->n_held_e = 0;
    /* Counted when taken; samples counts rows stored. */
    int failed_p = 0;
    int failed =
        gp_store_put_rows(a->store, a->pend_s, a->n_pend_s, a->pend_p, a->n_pend_p, &failed_p);
    a->stats.store_errors += (uint64_t)failed + (uint64_t)failed_p;
    a->stats.samples -= (uint64_t)failed;
    a->stats.proc_samples -= (uint64_t)failed_p;
    a->n_pend_s = a->n_pend_p = 0;
}

static void write_pending(gp_agent *a) {
    write_pending_wait(a, GP_AGENT_LOCK_WAIT_MS, 0);
}

int gp_agent_store_held(const gp_agent *a) {
    return a->held && gp_mono_ns() - a->held_try_ns < HELD_RETRY_NS;
}

/* Appends n rows of size sz to a queue; 0, or -1 when out of memory. */
static int queue(void **q, size_t *n_q, size_t *cap, const void *rows, size_t n, size_t sz) {
    if (!n) return 0; /* a tick with no rows (a source down): nothing to copy, maybe no queue */
    if (*n_q + n > *cap) {
        size_t nc = *cap ? *cap : 16;
        while (nc < *n_q + n)
            nc *= 2;
        void *p = realloc(*q, nc * sz);
        if (!p) return -1;
        *q = p;
        *cap = nc;
    }
    memcpy((char *)*q + *n_q * sz, rows, n * sz);
    *n_q += n;
    return 0;
}

void gp_agent_store_event(void *agent, const gp_event *e) {
    gp_agent *a = agent;
    /* The tick opens none (tick()). While the store is held by another writer, events wait
     * in order for the next flush (one busy wait per flush, not one per event). */
    int pause = ckpt_pause(a);
    if (!a->held && !pause && gp_store_begin_write(a->store, GP_AGENT_LOCK_WAIT_MS) == 0) {
        for (size_t i = 0; i < a->n_held_e; i++) /* those held over a checkpoint go first */
            put_event_now(a, &a->held_e[i]);
        a->n_held_e = 0;
        put_event_now(a, e);
        return;
    }
    if (!a->held && !pause) {
        a->stats.store_busy++;
        a->held = 1;
        a->held_try_ns = gp_mono_ns();
    }
    if (a->n_held_e >= EVENTS_HOLD_MAX ||
        queue((void **)&a->held_e, &a->n_held_e, &a->cap_held_e, e, 1, sizeof *e) != 0)
        a->stats.store_errors++; /* lost, counted */
}

static void feed_line(void *ctx, const char *line, size_t len) {
    gp_agent *a = ctx;
    gp_ingest_feed(a->ingest, GP_TR_INPROC, line, len, a->now_ns, gp_agent_store_event, a);
}

int gp_agent_open(const gp_agent_opts *o, gp_agent **out, char *err, size_t errlen) {
    *out = NULL;
    gp_agent *a = calloc(1, sizeof *a);
    if (!a) return -1;
    a->epfd = -1;
    a->o = *o;
    if (a->o.interval_ns <= 0) a->o.interval_ns = 1000000000;
    if (a->o.flush_ns <= 0) a->o.flush_ns = 5000000000LL;
    gp_source_opts so = {.speed = o->speed, .start_ns = 0, .interval_ns = a->o.interval_ns};
    if ((a->lock_fd = gp_agent_lock(o->db_path, err, errlen)) < 0) {
        int busy = a->lock_fd == GP_LOCK_BUSY;
        gp_agent_close(a);
        return busy ? GP_AGENT_BUSY : -1;
    }
    if (gp_store_open(o->db_path, GP_STORE_OWN_ROWS, &a->store, err, errlen) != 0) goto fail;
    if (gp_source_open(o->source_spec, &so, &a->src, err, errlen) != 0) goto fail;
    a->own_clock = a->src.ops->now_ns != NULL;
    /* Checkpoints off the loop where ticks keep time; as fast as possible nothing waits on
     * a tick, and the loop never pauses for the WAL to start over (ckpt_pause). */
    if (!(a->own_clock && o->speed <= 0)) {
        char cerr[256];
        if (gp_store_offload_checkpoints(a->store, cerr, sizeof cerr) != 0)
            fprintf(stderr, "goodput agent: %s; checkpoints run in the commits\n", cerr);
    }
    /* Lines without ts keep their arrival time when reads are batched (gp_agent_run), in
     * the agent's clock; as fast as possible there is no wall time to map. */
    double arrival_scale = !a->own_clock ? 1 : (o->speed > 0 ? o->speed : 0);
    gp_ingest_opts io = {.unix_path = o->socket_path,
                         .udp_addr = o->udp_addr,
                         .accept_old = a->own_clock || o->accept_old,
                         .max_ahead_ns = o->max_skew_ahead_ns,
                         .max_behind_ns = o->max_skew_behind_ns,
                         .arrival_scale = arrival_scale};
    if (gp_ingest_open(&io, &a->ingest, err, errlen) != 0) goto fail;
    /* The loop waits on the sockets once a tick: with epoll they are registered once, and a
     * wait that times out returns without polling each socket again, as poll() does on its
     * way out (kernel code and data that a 1 s sleep left cold: bench/agent_cost). Where
     * epoll is not to be had, poll(). */
    struct pollfd pf[4];
    int npf = gp_ingest_fds(a->ingest, pf, 4);
    if (npf > 0 && (a->epfd = epoll_create1(EPOLL_CLOEXEC)) >= 0) {
        for (int i = 0; i < npf; i++) {
            struct epoll_event ev = {.events = EPOLLIN, .data.fd = pf[i].fd};
            if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, pf[i].fd, &ev) != 0) {
                close(a->epfd);
                a->epfd = -1;
                break;
            }
        }
    }
    a->devices = calloc(MAX_DEVICES, sizeof *a->devices);
    a->samples = calloc(MAX_DEVICES, sizeof *a->samples);
    a->procs = calloc(MAX_PROCS, sizeof *a->procs);
    if (!a->devices || !a->samples || !a->procs) {
        snprintf(err, errlen, "agent: out of memory");
        goto fail;
    }
    if (a->src.ops->list_devices(a->src.state, a->devices, MAX_DEVICES, &a->n_devices, err,
                                 errlen) != 0)
        goto fail;
    if (a->n_devices == 0)
        fprintf(stderr, "goodput agent: source '%s' reports no GPUs; still receiving events\n",
                o->source_spec);
    gp_store_tune_for_devices(a->store, a->n_devices);
    if (!o->no_attribution && a->src.ops->list_processes) {
        const char *proc_root = NULL, *jobmap = NULL;
        if (a->src.ops->node_paths) a->src.ops->node_paths(a->src.state, &proc_root, &jobmap);
        if (o->proc_root) proc_root = *o->proc_root ? o->proc_root : NULL;
        if (o->jobmap_dir) jobmap = *o->jobmap_dir ? o->jobmap_dir : NULL;
        snprintf(a->jobmap_dir, sizeof a->jobmap_dir, "%s", jobmap ? jobmap : "");
        if (jobmap && !(a->jobmap = gp_jobmap_new(jobmap))) {
            snprintf(err, errlen, "agent: out of memory");
            goto fail;
        }
        int64_t grace = o->presence_grace_ns > 0 ? o->presence_grace_ns : 3 * a->o.interval_ns;
        a->resolver = gp_resolver_new(proc_root);
        a->presence = gp_presence_new(grace, 0); /* watching starts below, at now_ns */
        if (!a->resolver || !a->presence) {
            snprintf(err, errlen, "agent: out of memory");
            goto fail;
        }
    }
    a->now_ns = a->own_clock ? a->src.ops->now_ns(a->src.state) : gp_wall_ns();
    if (a->presence) gp_presence_begin(a->presence, a->now_ns); /* watching starts now */
    gp_store_begin(a->store);
    for (size_t i = 0; i < a->n_devices; i++)
        gp_store_put_device(a->store, &a->devices[i]);
    gp_store_commit(a->store);
    *out = a;
    return 0;
fail:
    gp_agent_close(a);
    return -1;
}

void gp_agent_close(gp_agent *a) {
    if (!a) return;
    if (a->store) {
        write_pending_wait(a, GP_STORE_BUSY_MS, 1); /* the last chance: wait as a statement would */
        gp_store_commit(a->store);
        if (a->n_pend_s + a->n_pend_p + a->n_held_e) /* the store still held by another writer */
            fprintf(stderr,
                    "goodput agent: store busy at exit: %zu samples, %zu process rows and %zu "
                    "events not stored\n",
                    a->n_pend_s, a->n_pend_p, a->n_held_e);
    }
    if (a->src.ops) gp_source_close(&a->src);
    gp_ingest_close(a->ingest);
    gp_store_close(a->store);
    free(a->pend_s);
    free(a->held_e);
    free(a->pend_p);
    free(a->devices);
    free(a->samples);
    free(a->procs);
    gp_resolver_free(a->resolver);
    gp_presence_free(a->presence);
    gp_jobmap_free(a->jobmap);
    gp_agent_unlock(a->lock_fd);
    if (a->epfd >= 0) close(a->epfd);
    free(a);
}

int gp_agent_set_hook(gp_agent *a, gp_agent_hook hook, void *ctx, int64_t min_wall_ns) {
    if (a->n_hooks >= GP_AGENT_MAX_HOOKS) return -1;
    a->hooks[a->n_hooks].fn = hook;
    a->hooks[a->n_hooks].ctx = ctx;
    a->hooks[a->n_hooks].every_ns = min_wall_ns;
    a->n_hooks++;
    return 0;
}

gp_store *gp_agent_store(gp_agent *a) {
    write_pending(a); /* whoever asks for the store may read it */
    return a->store;
}
gp_ingest *gp_agent_ingest(gp_agent *a) {
    return a->ingest;
}
const gp_agent_stats *gp_agent_get_stats(const gp_agent *a) {
    return &a->stats;
}
gp_ckpt_stats gp_agent_checkpoint_stats(const gp_agent *a) {
    return gp_store_checkpoint_stats(a->store);
}
int64_t gp_agent_now_ns(const gp_agent *a) {
    return a->now_ns;
}
const gp_device *gp_agent_devices(const gp_agent *a, size_t *n) {
    *n = a->n_devices;
    return a->devices;
}

int gp_agent_flush(gp_agent *a) {
    write_pending(a);
    int rc = gp_store_commit(a->store);
    if (rc != 0) {
        a->stats.store_errors++;
        if (!gp_store_failed(a->store, NULL, 0)) /* that one is said once, by the caller */
            fprintf(stderr, "goodput agent: commit failed: %s\n", gp_store_errmsg(a->store));
    }
    a->stats.flushes++;
    return rc;
}

static void on_jobmap(void *ctx, const char *job_id, const char *uuid, int64_t mtime_ns) {
    gp_agent *a = ctx;
    gp_presence_sched(a->presence, job_id, uuid, mtime_ns);
}

/* Owners and allocations from what the node shows this tick: the job-mapping files
 * (a scheduler's word) and each GPU process's owner. Allocations something else already
 * wrote (a Slurm poller or prolog, a client's `alloc` line) are left to it. The lines go
 * through ingest like any client's. */
static void attribute(gp_agent *a, gp_proc_sample *procs, size_t np) {
    gp_presence_begin(a->presence, a->now_ns);
    if (a->jobmap && gp_jobmap_scan(a->jobmap, a->devices, a->n_devices, on_jobmap, a) < 0 &&
        !a->jobmap_said) {
        fprintf(stderr, "goodput agent: job-mapping directory %s: cannot read it (will retry)\n",
                a->jobmap_dir);
        a->jobmap_said = 1;
    }
    for (size_t i = 0; i < np; i++) {
        const gp_proc_owner *o = gp_resolver_owner(a->resolver, &procs[i], a->now_ns);
        int external = !gp_presence_has(a->presence, o->job_id, procs[i].uuid) &&
                       gp_store_open_alloc_exists(a->store, o->job_id, procs[i].uuid) == 1;
        gp_presence_proc(a->presence, o, procs[i].uuid, external);
        /* The stored row names its owner: the engine splits a shared GPU's kernels and
         * energy by the SM share of each owner's processes. */
        size_t len = strnlen(o->job_id, sizeof procs[i].job_id - 1);
        memcpy(procs[i].job_id, o->job_id, len); /* not snprintf: this runs per row per tick */
        procs[i].job_id[len] = '\0';
    }
    gp_presence_end(a->presence, feed_line, a);
    if (a->stats.ticks % 64 == 0) gp_resolver_sweep(a->resolver, a->now_ns - 16 * a->o.interval_ns);
    gp_resolver_stats rs = gp_resolver_get_stats(a->resolver);
    gp_presence_stats ps = gp_presence_get_stats(a->presence);
    a->stats.owners_resolved = rs.resolved;
    a->stats.owners_unattributed = rs.unattributed;
    a->stats.allocs_opened = ps.opened;
    a->stats.allocs_closed = ps.closed;
}

/* One tick: sample, store, drain simulated events. CPU inside the source's own calls is
 * counted apart, so the overhead benchmark measures the agent path alone. A source that
 * fails is said once (and when it answers again); the agent keeps running. */
static void tick(gp_agent *a, char *err, size_t errlen) {
    /* Two CPU clock reads a tick (each a system call, of the loop's thread: an HTTP
     * thread's CPU is not the loop's): the source's two calls run back to back, so one
     * interval covers both; what ran since the last of them (the rest of the last tick,
     * its flush and hooks, the wait's wake-ups and event reads) is the agent's own. */
    double c0 = gp_thread_cpu_s();
    a->stats.collect_cpu_s += c0 - a->src_out_cpu_s;
    size_t n = 0, np = 0;
    /* No transaction is opened here: the rows are queued, and what writes at once (an
     * event, a row that found no room in the queue) opens one first. A tick after a flush
     * would otherwise run BEGIN's statement, cold, for nothing (bench/agent_cost). */
    int rc = a->src.ops->sample(a->src.state, a->now_ns, a->samples, MAX_DEVICES, &n, err, errlen);
    if (rc != 0) {
        /* An outage is said when it starts and again only in other words a minute later:
         * one outage often changes its words (a reset connection, then a refused one). */
        int64_t w = gp_wall_ns();
        if (!a->last_error[0] ||
            (strcmp(err, a->last_error) != 0 && w - a->last_error_wall_ns >= 60000000000LL)) {
            fprintf(stderr, "goodput agent: %s\n", err);
            snprintf(a->last_error, sizeof a->last_error, "%s", err);
            a->last_error_wall_ns = w;
        }
        n = 0;
    } else if (a->last_error[0]) {
        fprintf(stderr, "goodput agent: source %s answers again\n", a->src.ops->name);
        a->last_error[0] = 0;
    }
    int prc = a->src.ops->list_processes
                  ? a->src.ops->list_processes(a->src.state, a->procs, MAX_PROCS, &np, err, errlen)
                  : 0;
    if (prc != 0) np = 0;
    double c1 = gp_thread_cpu_s();
    a->src_out_cpu_s = c1;
    a->stats.source_cpu_s += c1 - c0;
    if (queue((void **)&a->pend_s, &a->n_pend_s, &a->cap_pend_s, a->samples, n,
              sizeof *a->samples) == 0) {
        a->stats.samples += n;
    } else { /* no room to queue: write them now */
        gp_store_begin(a->store);
        for (size_t i = 0; i < n; i++) {
            if (gp_store_put_sample(a->store, &a->samples[i]) != 0)
                a->stats.store_errors++;
            else
                a->stats.samples++;
        }
    }
    if (a->src.ops->list_processes) {
        if (a->presence) attribute(a, a->procs, np); /* stamps each row with its owner */
        if (queue((void **)&a->pend_p, &a->n_pend_p, &a->cap_pend_p, a->procs, np,
                  sizeof *a->procs) == 0)
            a->stats.proc_samples += np;
        else {
            gp_store_begin(a->store);
            for (size_t i = 0; i < np; i++)
                if (gp_store_put_proc(a->store, &a->procs[i]) == 0) a->stats.proc_samples++;
        }
    }
    if (pending_bytes(a) > PENDING_MAX_BYTES) write_pending(a);
    if (a->src.ops->drain_events) a->src.ops->drain_events(a->src.state, a->now_ns, feed_line, a);
    a->stats.ticks++;
}

int gp_agent_run(gp_agent *a, volatile sig_atomic_t *stop, char *err, size_t errlen) {
    a->src_out_cpu_s = gp_thread_cpu_s();
    int64_t src_end = a->src.ops->end_ns ? a->src.ops->end_ns(a->src.state) : -1;
    int64_t t_start = a->now_ns;
    int64_t t_stop = a->o.duration_ns > 0 ? t_start + a->o.duration_ns : -1;
    if (src_end >= 0 && (t_stop < 0 || src_end < t_stop)) t_stop = src_end;
    int64_t wall0 = gp_mono_ns(), last_flush = wall0;
    int64_t next_tick = t_start + a->o.interval_ns;
    int64_t last_flush_src = t_start;
    int64_t last_retain = wall0, last_retain_src = t_start;
    int fast = a->own_clock && a->o.speed <= 0;
    /* The first flush comes after 1 s of wall time: a kill early on loses little. */
    int64_t flush_every = a->o.flush_ns < 1000000000 ? a->o.flush_ns : 1000000000;
    double speed = a->own_clock ? (a->o.speed > 0 ? a->o.speed : 0) : 1;
    int64_t hold_until = 0;        /* > 0: the sockets are left unread until then */
    int64_t last_read_end = wall0; /* when the last read of the sockets ended */
    int64_t slice_ns = 0;          /* how long the last read that met its budget took */

    while (!(stop && *stop)) {
        if (t_stop >= 0 && next_tick > t_stop) break;
        /* Wait (absorbing events) until the tick is due. */
        if (!fast) {
            int drained = 0;
            int read_in_wait = 0; /* this wait read the sockets */
            int tick_first = 0;   /* a flood, and the tick was let go before the next read */
            for (;;) {
                int64_t wall = gp_mono_ns();
                int64_t due_wall = wall0 + (int64_t)((next_tick - t_start) / speed);
                int64_t wait_ns = due_wall - wall;
                if (wait_ns <= 0 || (stop && *stop)) break;
                int64_t pause_end = ckpt_pause_end(a);
                if (pause_end) { /* until the checkpoint ends, the pause ends or the tick */
                    int64_t until = pause_end < due_wall ? pause_end : due_wall;
                    int cms = until > wall ? (int)((until - wall) / 1000000) + 1 : 0;
                    gp_store_checkpoint_wait(a->store, cms > 1000 ? 1000 : cms);
                    a->stats.wakes++;
                    a->stats.ckpt_waits++;
                    continue;
                }
                /* Holding: the sockets are not watched until hold_until, then read. */
                int holding = hold_until > 0;
                if (holding && hold_until < due_wall) wait_ns = hold_until - wall;
                struct pollfd fds[4];
                int nf = holding || a->epfd >= 0 ? 0 : gp_ingest_fds(a->ingest, fds, 4);
                int ms = wait_ns > 0 ? (int)(wait_ns / 1000000) + 1 : 0;
                /* One wake-up per tick when nothing arrives: a signal interrupts the poll
                 * (EINTR) and the loop sees the stop at once. (A 200 ms cap woke an idle
                 * agent 5 times a second, each wake-up paying cold caches: bench/agent_cost.)
                 * The cap bounds only a stop whose signal lands between the check above and
                 * the poll. */
                if (ms > 1000) ms = 1000;
                struct epoll_event evs[4];
                int pr = !holding && a->epfd >= 0 ? epoll_wait(a->epfd, evs, 4, ms)
                                                  : poll(nf ? fds : NULL, (nfds_t)nf, ms);
                int64_t woke = gp_mono_ns();
                a->stats.wakes++;
                if (holding) {
                    if (woke < hold_until && woke < due_wall) continue; /* a signal */
                    if (woke >= due_wall) break; /* the tick reads them (below) */
                    pr = 1;                      /* the hold is over: read */
                }
                drained = pr == 0; /* nothing arrived up to now */
                hold_until = 0;
                if (pr > 0 && gp_ingest_last_full(a->ingest) &&
                    due_wall - woke < slice_ns + slice_ns / 2) {
                    /* A flood, and a read now would run past the tick's time: the tick
                     * goes first (a slice took 8-16 ms on a 2-core VM under the flood of
                     * reliability_overload.sh), the read right after it. */
                    hold_until = due_wall;
                    tick_first = 1;
                    continue;
                }
                if (pr > 0) {
                    int64_t now_src = t_start + (int64_t)((woke - wall0) * speed);
                    gp_store_begin(a->store);
                    /* A bounded slice (~8 KiB of lines per socket, a few ms): under a
                     * flood the loop comes back here often enough to tick on time. */
                    gp_ingest_poll_budget(a->ingest, a->own_clock ? now_src : gp_wall_ns(),
                                          8 * 1024, gp_agent_store_event, a);
                    int64_t read_end = gp_mono_ns();
                    read_in_wait = 1;
                    if (gp_ingest_last_full(a->ingest)) slice_ns = read_end - woke;
                    /* A steady trickle (a trainer's steps every few ms) is read in batches:
                     * the next read waits until a few datagrams are queued, up to
                     * GP_AGENT_EVENT_HOLD_NS, instead of one wake-up per datagram; a slice
                     * that stopped at its budget (a flood) is followed at once. */
                    int64_t hold =
                        gp_ingest_hold_ns(a->ingest, woke - last_read_end, GP_AGENT_EVENT_HOLD_NS);
                    if (hold > 0) hold_until = read_end + hold;
                    last_read_end = read_end;
                }
            }
            /* A late tick skips the wait above: still read what waits on the sockets, or
             * a loop that runs behind (a loaded host, valgrind) would never read them. A
             * wait that ended in a poll timing out has just seen them empty; a hold has
             * left them unread, so the tick (and the hooks after it, /metrics) sees every
             * event that arrived before it, as when each datagram was read at once. Under a
             * flood (this wait read, and its last read met its budget) the tick cannot see
             * them all whatever it reads first: it goes first, and one slice less late. */
            int flood = tick_first || (read_in_wait && gp_ingest_last_full(a->ingest));
            if ((!drained || hold_until > 0) && !ckpt_pause(a) && !flood) {
                int64_t now_src = t_start + (int64_t)((gp_mono_ns() - wall0) * speed);
                gp_store_begin(a->store);
                gp_ingest_poll_budget(a->ingest, a->own_clock ? now_src : gp_wall_ns(), 8 * 1024,
                                      gp_agent_store_event, a);
                last_read_end = gp_mono_ns();
            }
            hold_until = 0; /* a hold does not span a tick: the rate is measured afresh */
            int64_t due = wall0 + (int64_t)((next_tick - t_start) / speed);
            int64_t late = gp_mono_ns() - due;
            if (late > a->stats.tick_late_max_ns) a->stats.tick_late_max_ns = late;
            if ((double)late * 10 * speed > (double)a->o.interval_ns) a->stats.ticks_late++;
        } else {
            gp_store_begin(a->store);
            gp_ingest_poll(a->ingest, next_tick, gp_agent_store_event, a);
        }
        if (stop && *stop) break;
        a->now_ns = a->own_clock ? next_tick : gp_wall_ns();
        tick(a, err, errlen); /* a source error is reported and the loop goes on */
        if (a->stats.ticks == 1) {
            a->stats.first_tick_cpu_s = gp_process_cpu_s();
            a->stats.first_tick_samples = a->stats.samples;
        }
        next_tick += a->o.interval_ns;
        int64_t wall = gp_mono_ns();
        /* Retention and the hooks run, as before the tick stopped opening a transaction,
         * inside one unless this tick's flush has just committed (opened when one is due). */
        int tx_due = 1;
        /* As fast as possible, flush on the source's clock: the transactions are then the
         * same size as in a real-time run, so memory and cost per sample are too. */
        int pause = ckpt_pause(a); /* the flush, retention and hooks wait for it */
        if (!pause && ((!fast && wall - last_flush >= flush_every) ||
                       (fast && a->now_ns - last_flush_src >= a->o.flush_ns))) {
            last_flush_src = a->now_ns;
            gp_store_begin(a->store); /* committed even when empty, as before */
            gp_agent_flush(a);
            tx_due = 0;
            last_flush = wall;
            flush_every = a->o.flush_ns;
        }
        if (gp_store_failed(a->store, err, errlen)) return GP_AGENT_STORE_FULL;
        /* Once a minute; as fast as possible, once a minute of the source's clock, so a
         * run at speed 0 keeps the store the size a real-time one does. */
        pause = pause || ckpt_pause(a); /* the flush may have started one */
        if (!pause &&
            (a->o.retention_ns > 0 || a->o.event_retention_ns > 0 ||
             a->o.rollup_retention_ns > 0) &&
            ((!fast && wall - last_retain >= 60000000000LL) ||
             (fast && a->now_ns - last_retain_src >= 60000000000LL))) {
            last_retain = wall;
            last_retain_src = a->now_ns;
            write_pending(a);
            /* Another writer holding the store: each delete would wait the busy timeout,
             * so retention waits for the next minute instead. */
            if (!a->held && gp_store_begin_write(a->store, GP_AGENT_LOCK_WAIT_MS) == 0) {
                tx_due = 0;
                if (a->o.retention_ns > 0) gp_store_retain(a->store, a->now_ns - a->o.retention_ns);
                /* 1-minute rollups of whole hours (a delete once an hour, an index lookup
                 * per device otherwise) */
                if (a->o.rollup_retention_ns > 0)
                    gp_rollup_retain(a->store, a->now_ns - a->o.rollup_retention_ns);
                /* Events of ended jobs whose result is stored (store.h): at most
                 * GP_AGENT_EVENT_PRUNE_ROWS a pass, ~50 ms */
                int64_t k =
                    a->o.event_retention_ns > 0
                        ? gp_store_retain_events(a->store, a->now_ns - a->o.event_retention_ns,
                                                 a->now_ns, GP_AGENT_EVENT_PRUNE_ROWS)
                        : 0;
                if (k > 0) a->stats.events_pruned += (uint64_t)k;
            }
        }
        for (int h = 0; h < a->n_hooks && !pause; h++) {
            if (a->hooks[h].every_ns > 0 && wall - a->hooks[h].last_wall < a->hooks[h].every_ns)
                continue;
            /* Hooks share the agent's connection, so they see what is not yet committed;
             * readers on other connections (the HTTP thread) see each flush. */
            if (tx_due) gp_store_begin(a->store);
            tx_due = 0;
            write_pending(a);
            a->hooks[h].fn(a, a->hooks[h].ctx);
            a->hooks[h].last_wall = wall;
        }
    }
    /* Lines already sent (a client that exited just before the stop) are read before the
     * last flush: a stop never loses what reached the socket. */
    gp_store_begin(a->store);
    gp_ingest_poll(a->ingest, a->own_clock ? a->now_ns : gp_wall_ns(), gp_agent_store_event, a);
    gp_agent_flush(a);
    double c = gp_thread_cpu_s();
    a->stats.collect_cpu_s += c - a->src_out_cpu_s;
    a->src_out_cpu_s = c;
    a->stats.loop_end_cpu_s = gp_process_cpu_s();
    return gp_store_failed(a->store, err, errlen) ? GP_AGENT_STORE_FULL : 0;
}
