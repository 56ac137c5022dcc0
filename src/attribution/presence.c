/* presence.c: see presence.h. State is one row per (job, GPU) held now or within the
 * grace, in a flat array with an open-addressing index on (job, GPU): a tick looks up
 * every process row, and a 1,000-GPU node has a thousand of them. */
#include "attribution/presence.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/protocol.h"
#include "model/event.h"

typedef struct row {
    char job_id[GP_JOB_ID_MAX];
    char uuid[GP_UUID_MAX];
    int64_t from_ns;
    int64_t missing_since_ns; /* first tick without the job on the GPU; -1 = seen */
    int sched;                /* the scheduler's allocation */
    int seen;                 /* seen this tick (by the scheduler when sched) */
    int announced;            /* its alloc line was written (or is not ours to write) */
    int external;             /* held through an allocation someone else wrote */
    gp_origin origin;
    char name[GP_NAME_MAX], user[GP_NAME_MAX];
} row;

struct gp_presence {
    int64_t grace_ns, now_ns, prev_ns;
    int64_t first_ns; /* the first tick: what happened before it was not watched */
    row *v;
    size_t n, cap;
    int32_t *slot; /* index: row + 1, 0 = empty; nslot a power of two >= 2 * cap */
    size_t nslot;
    gp_presence_stats stats;
};

gp_presence *gp_presence_new(int64_t grace_ns, int64_t watch_from_ns) {
    gp_presence *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->first_ns = watch_from_ns > 0 ? watch_from_ns : 0;
    p->grace_ns = grace_ns > 0 ? grace_ns : 0;
    p->prev_ns = -1;
    return p;
}

void gp_presence_free(gp_presence *p) {
    if (!p) return;
    free(p->v);
    free(p->slot);
    free(p);
}

/* One string into h, 8 bytes a step, its length in the last step (so "ab"+"c" and "a"+"bc"
 * differ). A key is hashed three times per process row per tick (gp_presence_sched,
 * _has, _proc); the byte-wise FNV-1a this replaced was two thirds of a lookup. */
static uint64_t mix_str(uint64_t h, const char *s) {
    const uint64_t m = 0x9E3779B97F4A7C15ULL;
    size_t n = strlen(s);
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * m;
    return h ^ (h >> 29);
}

static uint64_t key_hash(const char *job, const char *uuid) {
    uint64_t h = mix_str(mix_str(1469598103934665603ULL, job), uuid);
    h = (h ^ (h >> 32)) * 0xD6E8FEB86659FD93ULL; /* the index uses the low bits */
    return h ^ (h >> 32);
}

/* Rebuilds the index for rows 0..n-1 (after growth or compaction). */
static int reindex(gp_presence *p) {
    size_t want = 64;
    while (want < 2 * p->cap)
        want *= 2;
    if (want != p->nslot) {
        int32_t *ns = malloc(want * sizeof *ns);
        if (!ns) return -1;
        free(p->slot);
        p->slot = ns;
        p->nslot = want;
    }
    memset(p->slot, 0, p->nslot * sizeof *p->slot);
    for (size_t i = 0; i < p->n; i++) {
        size_t k = key_hash(p->v[i].job_id, p->v[i].uuid) & (p->nslot - 1);
        while (p->slot[k])
            k = (k + 1) & (p->nslot - 1);
        p->slot[k] = (int32_t)(i + 1);
    }
    return 0;
}

gp_presence_stats gp_presence_get_stats(const gp_presence *p) {
    gp_presence_stats s = p->stats;
    s.open_now = p->n;
    return s;
}

void gp_presence_begin(gp_presence *p, int64_t now_ns) {
    p->prev_ns = p->now_ns > 0 ? p->now_ns : p->first_ns > 0 ? p->first_ns : -1;
    p->now_ns = now_ns;
    if (!p->first_ns) p->first_ns = now_ns;
    for (size_t i = 0; i < p->n; i++)
        p->v[i].seen = 0;
}

static row *find(const gp_presence *p, const char *job, const char *uuid) {
    if (!p->nslot) return NULL;
    size_t k = key_hash(job, uuid) & (p->nslot - 1);
    for (; p->slot[k]; k = (k + 1) & (p->nslot - 1)) {
        row *r = &p->v[p->slot[k] - 1];
        if (!strcmp(r->uuid, uuid) && !strcmp(r->job_id, job)) return r;
    }
    return NULL;
}

int gp_presence_has(const gp_presence *p, const char *job_id, const char *uuid) {
    return find(p, job_id, uuid) != NULL;
}

static row *add(gp_presence *p, const char *job, const char *uuid, int64_t from_ns) {
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 32;
        row *nv = realloc(p->v, nc * sizeof *nv);
        if (!nv) return NULL;
        p->v = nv;
        p->cap = nc;
        if (reindex(p) != 0) return NULL;
    }
    row *r = &p->v[p->n++];
    size_t k = key_hash(job, uuid) & (p->nslot - 1);
    while (p->slot[k])
        k = (k + 1) & (p->nslot - 1);
    p->slot[k] = (int32_t)p->n;
    memset(r, 0, sizeof *r);
    snprintf(r->job_id, sizeof r->job_id, "%s", job);
    snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
    r->from_ns = from_ns;
    r->missing_since_ns = -1;
    return r;
}

void gp_presence_sched(gp_presence *p, const char *job_id, const char *uuid, int64_t since_ns) {
    row *r = find(p, job_id, uuid);
    if (!r) {
        if (since_ns <= 0 || since_ns > p->now_ns) since_ns = p->now_ns;
        /* A job that started before the agent did is accounted from when it was first
         * seen: time nobody watched has no telemetry to judge it by. */
        if (since_ns < p->first_ns) since_ns = p->first_ns;
        r = add(p, job_id, uuid, since_ns);
        if (!r) return;
        r->origin = GP_ORIGIN_SLURM;
    }
    /* A presence row the scheduler now confirms becomes the scheduler's. */
    r->sched = 1;
    r->seen = 1;
    r->missing_since_ns = -1;
}

void gp_presence_proc(gp_presence *p, const gp_proc_owner *o, const char *uuid,
                      int held_elsewhere) {
    row *r = find(p, o->job_id, uuid);
    if (!r) {
        /* The process appeared since the previous tick: it holds the GPU from its start,
         * or from the previous tick when it started earlier (it may have run on the CPU
         * before touching the GPU). */
        int64_t from = p->prev_ns > 0 ? p->prev_ns : p->now_ns;
        if (o->start_ns > from && o->start_ns <= p->now_ns) from = o->start_ns;
        r = add(p, o->job_id, uuid, from);
        if (!r) return;
        r->origin = o->origin;
        snprintf(r->name, sizeof r->name, "%s", o->name);
        snprintf(r->user, sizeof r->user, "%s", o->user);
        r->external = r->announced = held_elsewhere;
    }
    if (!r->sched) {
        r->seen = 1;
        r->missing_since_ns = -1;
    }
}

static void emit(gp_presence_sink sink, void *ctx, const gp_event *e) {
    char line[1024];
    int n = gp_proto_format(e, line, sizeof line);
    if (n > 0 && sink) sink(ctx, line, (size_t)n);
}

static void emit_open(gp_presence *p, row *r, gp_presence_sink sink, void *ctx) {
    gp_event e;
    gp_event_init(&e, GP_EV_JOB);
    snprintf(e.job_id, sizeof e.job_id, "%s", r->job_id);
    snprintf(e.name, sizeof e.name, "allocated");
    snprintf(e.job_name, sizeof e.job_name, "%s", r->name);
    snprintf(e.user, sizeof e.user, "%s", r->user);
    snprintf(e.origin, sizeof e.origin, "%s",
             r->origin == GP_ORIGIN_UNKNOWN ? "" : gp_origin_name(r->origin));
    e.ts_ns = r->from_ns;
    emit(sink, ctx, &e);
    gp_event_init(&e, GP_EV_ALLOC);
    snprintf(e.job_id, sizeof e.job_id, "%s", r->job_id);
    snprintf(e.uuid, sizeof e.uuid, "%s", r->uuid);
    e.from_ns = r->from_ns;
    e.to_ns = -1;
    e.ts_ns = p->now_ns;
    emit(sink, ctx, &e);
    r->announced = 1;
    p->stats.opened++;
}

static void emit_close(gp_presence *p, const row *r, int64_t to_ns, gp_presence_sink sink,
                       void *ctx) {
    gp_event e;
    gp_event_init(&e, GP_EV_ALLOC);
    snprintf(e.job_id, sizeof e.job_id, "%s", r->job_id);
    snprintf(e.uuid, sizeof e.uuid, "%s", r->uuid);
    e.from_ns = r->from_ns;
    e.to_ns = to_ns > r->from_ns ? to_ns : r->from_ns;
    e.ts_ns = p->now_ns;
    emit(sink, ctx, &e);
    p->stats.closed++;
}

void gp_presence_end(gp_presence *p, gp_presence_sink sink, void *ctx) {
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++) {
        row *r = &p->v[i];
        if (!r->announced) emit_open(p, r, sink, ctx);
        int keep = 1;
        if (!r->seen) {
            if (r->missing_since_ns < 0) r->missing_since_ns = p->now_ns;
            /* The scheduler's word is immediate; a process may blink out of the driver's
             * list for a tick or two (restarts, NVML hiccups): wait out the grace. */
            if (r->sched || p->now_ns - r->missing_since_ns >= p->grace_ns) {
                if (!r->external) emit_close(p, r, r->missing_since_ns, sink, ctx);
                keep = 0;
            }
        }
        /* Not copied onto itself: a row is ~330 bytes, most of them (name, user) read
         * only when a line is written, and a steady tick keeps every row; the copy
         * touched all of them after the 1 s sleep (bench/agent_cost). */
        if (keep) {
            if (k != i) p->v[k] = *r;
            k++;
        }
    }
    int moved = k != p->n;
    p->n = k;
    if (moved && reindex(p) != 0) { /* out of memory: forget, as a fresh start would */
        p->n = 0;
        free(p->slot);
        p->slot = NULL;
        p->nslot = 0;
    }
}
