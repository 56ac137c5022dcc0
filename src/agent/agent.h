/* agent.h: the agent loop: sample a telemetry source at an interval, receive workload
 * events, store both, flush one transaction per flush interval, stop cleanly.
 *
 * Time: a live source runs on the wall clock. A source with a clock of its own (the
 * simulator, log replays) runs on that clock: in real time (speed 1), accelerated
 * (speed 60: one simulated minute per wall second) or as fast as possible (speed 0).
 * The loop is single-threaded; hooks run on it between ticks (the demo's live table,
 * the HTTP server's poll, attribution pollers). */
#ifndef GP_AGENT_AGENT_H
#define GP_AGENT_AGENT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"
#include "sources/source.h"
#include "store/store.h"

/* Events deleted at most per retention pass (a pass a minute): ~50 ms of work, and
 * ~28 M events a day, far above what an 8-GPU trainer writes (~1 M). */
#define GP_AGENT_EVENT_PRUNE_ROWS 20000

/* The agent's default retention (docs/reliability.md, docs/benchmarks.md "Store over a
 * month"): measured on an 8-GPU node at 1 s with a trainer's ~1 M events a day, raw
 * samples are ~129 MiB a day, process rows ~57, events ~117 and 1-minute rollups ~3:
 * 7 days of raw rows alone (~1.3 GiB) exceed the 1 GiB a month may take. 3 days of raw
 * rows, a month of rollups and ~2 days of events (the running job's and those of jobs
 * ended within a day) are ~0.9 GiB. */
#define GP_AGENT_RETENTION_NS (3 * 86400 * 1000000000LL)
#define GP_AGENT_EVENT_RETENTION_NS (86400 * 1000000000LL)
/* 1-minute rollups (~3 MiB a day for 8 GPUs) are kept 30 days, then the 1-hour ones
 * (~50 KiB a day, kept) answer (store/rollup.h gp_rollup_retain): a store that grew
 * forever (1 GiB near day 60) stays under ~1 GiB (docs/benchmarks.md "Store over a
 * month", Update rollup retention). */
#define GP_AGENT_ROLLUP_RETENTION_NS (30 * 86400 * 1000000000LL)

typedef struct gp_agent_opts {
    const char *source_spec; /* "sim:FILE", "nvml", ... */
    const char *db_path;
    int64_t interval_ns;  /* sampling interval in source time; default 1 s */
    int64_t duration_ns;  /* stop after this much source time; 0 = until the source ends/signal */
    double speed;         /* for sources with their own clock; 0 = as fast as possible */
    int64_t flush_ns;     /* wall time between commits; default 5 s */
    int64_t retention_ns; /* delete raw samples and process rows older than this; 0 = keep */
    /* delete the events of ended jobs whose result is stored and that ended longer ago
     * than this (gp_store_retain_events); 0 = keep every event */
    int64_t event_retention_ns;
    /* delete the 1-minute rollups of the whole hours older than this (gp_rollup_retain);
     * the 1-hour rollups stay; 0 = keep. At least retention_ns (the cmd checks it): raw rows
     * never outlive the 1-minute rollups of their minutes. */
    int64_t rollup_retention_ns;
    const char *socket_path; /* NULL = no unix socket; "" = default path */
    const char *udp_addr;    /* NULL = no UDP */
    /* Ownership (attribution/resolver.h, presence.h): who owns each GPU process, and the
     * allocations that follows when no scheduler says otherwise. */
    const char *proc_root;      /* where the source's PIDs live; NULL = what the source says
                                 * (node_paths: /proc for NVML, the simulator's fake root) */
    const char *jobmap_dir;     /* job-mapping directory; NULL = the source's, if any */
    int no_attribution;         /* 1: store processes only, make no jobs from them */
    int64_t presence_grace_ns;  /* a process gone this long ends its allocation;
                                 * default 3 intervals */
    int64_t max_skew_ahead_ns;  /* event times at most this far ahead of the clock; 0 = 10 min */
    int64_t max_skew_behind_ns; /* ... and this far behind; 0 = 7 days */
    int accept_old;             /* no lower bound (replaying old logs) */
} gp_agent_opts;

typedef struct gp_agent gp_agent;
typedef void (*gp_agent_hook)(gp_agent *a, void *ctx);

/* The agent's wait for another writer's lock before it keeps its rows for the next flush:
 * short, so the loop keeps ticking and draining its sockets (gp_store_begin_write). */
#define GP_AGENT_LOCK_WAIT_MS 200

typedef struct gp_agent_stats {
    uint64_t ticks, samples, proc_samples, events, flushes, store_errors;
    /* writes put off because another writer held the store (GP_AGENT_LOCK_WAIT_MS) */
    uint64_t store_busy;
    uint64_t owners_resolved, owners_unattributed, allocs_opened, allocs_closed;
    uint64_t events_duplicate; /* events already in the store (retries, replays): ignored */
    uint64_t events_pruned;    /* events deleted by the event retention */
    /* The loop thread's CPU outside the source's calls: attribution, queueing, the store's
     * writes, event reads, retention, hooks and the wake-ups between ticks (counted up to
     * the start of the last tick while the loop runs, to its end after). */
    double collect_cpu_s;
    /* The loop thread's CPU inside the source's sample() and list_processes(). */
    double source_cpu_s;
    /* Schedule (paced runs only, not --speed 0): ticks that began more than 10% of the
     * interval (in wall time) after they were due, and the worst lateness. */
    uint64_t ticks_late;
    int64_t tick_late_max_ns;
    /* The process's CPU time (all of it, source included) and samples when the first tick
     * ended: what follows is the steady state, start-up (opening the store, the source's
     * own start) excluded (bench/agent_cost). */
    double first_tick_cpu_s;
    uint64_t first_tick_samples;
    /* The process's CPU time when the loop ended, its last flush included: the steady
     * state runs from first_tick_cpu_s to here. What the command does after the loop (the
     * last sealing pass over every job, the ledger's drain) is paid once per run, like
     * start-up, and would otherwise be charged to the samples of a short benchmark. */
    double loop_end_cpu_s;
    /* Returns from the loop's waits (paced runs): one a tick when no event arrives, and
     * one per batched read of the event sockets (GP_AGENT_EVENT_HOLD_NS). */
    uint64_t wakes;
    /* Of those, returns from waiting for a WAL checkpoint to end (store/checkpointer.h):
     * the loop writes nothing meanwhile, so the WAL starts over after it. */
    uint64_t ckpt_waits;
} gp_agent_stats;

/* The longest a paced agent leaves datagrams queued in its sockets so that one wake-up
 * reads several (gp_ingest_hold_ns): 1,000 events/s in 10-line datagrams wake it ~20 times
 * a second instead of 100. Every read before a tick takes what is queued, so the tick and
 * the hooks after it (the /metrics snapshot, live findings) see every event that arrived
 * before it, and lines without ts keep their arrival time (gp_ingest_opts.arrival_scale). */
#define GP_AGENT_EVENT_HOLD_NS (50LL * 1000000LL)

/* Returns 0, GP_AGENT_BUSY when another agent holds the store (store/agent_lock.h), or
 * -1 with err. */
#define GP_AGENT_BUSY (-2)
int gp_agent_open(const gp_agent_opts *o, gp_agent **out, char *err, size_t errlen);
/* Runs until the duration elapses, the source ends, or *stop becomes non-zero.
 * Returns 0 on a clean stop (data flushed), or GP_AGENT_STORE_FULL with err when a write
 * failed for lack of room (disk full, file-size limit): what was committed is kept. The
 * first flush comes after at most 1 s of wall time, so an early kill loses little. */
#define GP_AGENT_STORE_FULL (-3)
int gp_agent_run(gp_agent *a, volatile sig_atomic_t *stop, char *err, size_t errlen);
void gp_agent_close(gp_agent *a);

/* Adds a hook called after every tick (at most every min_wall_ns of wall time); up to
 * GP_AGENT_MAX_HOOKS hooks, each with its own interval (the demo's table and the HTTP
 * server's pump run side by side). */
#define GP_AGENT_MAX_HOOKS 32
/* Returns -1 when the hook table is full (the hook is not added). */
int gp_agent_set_hook(gp_agent *a, gp_agent_hook hook, void *ctx, int64_t min_wall_ns);

gp_store *gp_agent_store(gp_agent *a);
gp_ingest *gp_agent_ingest(gp_agent *a);
/* Stores one event as the agent's own sockets do (a gp_ingest sink; agent is the gp_agent):
 * while another writer holds the store, events wait in order for the next flush. */
void gp_agent_store_event(void *agent, const gp_event *e);
/* 1 while another writer holds the store and the agent's next try is not yet due: other
 * writers sharing its connection (the server's queues) keep their rows until then. */
int gp_agent_store_held(const gp_agent *a);
const gp_agent_stats *gp_agent_get_stats(const gp_agent *a);
/* The store's checkpoints run off the loop (store/checkpointer.h); zeros when they run in
 * the commits (as fast as possible, or the thread could not start). */
gp_ckpt_stats gp_agent_checkpoint_stats(const gp_agent *a);
int64_t gp_agent_now_ns(const gp_agent *a); /* the loop's clock (source time) */
const gp_device *gp_agent_devices(const gp_agent *a, size_t *n);
/* Commits what is buffered now. */
int gp_agent_flush(gp_agent *a);

int64_t gp_wall_ns(void);

#endif
