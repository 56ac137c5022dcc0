/* event.h: what a workload reports about itself (see docs/protocol.md for the wire form).
 *
 * One struct for all kinds, so a batch of events is one array; fields a kind does not use
 * stay at their zero/unknown value (times < 0 mean unknown). Plain data, no I/O. */
#ifndef GP_MODEL_EVENT_H
#define GP_MODEL_EVENT_H

#include <stdint.h>

#define GP_JOB_ID_MAX 64
#define GP_NAME_MAX 64

typedef enum {
    GP_EV_HELLO = 1, /* declares job identity, units, FLOPs/bytes per unit */
    GP_EV_STEP,      /* one iteration finished: step number, units done */
    GP_EV_PHASE,     /* phase begin or end */
    GP_EV_REQUEST,   /* one inference request, complete */
    GP_EV_STAGE,     /* one pipeline stage processing one item */
    GP_EV_RESTART,   /* the job resumed from step N */
    GP_EV_JOB,       /* lifecycle: submitted/allocated/ended (from schedulers, sim) */
    GP_EV_ALLOC,     /* allocation of one device to a job: uuid, from, to */
} gp_event_kind;

typedef enum { GP_PH_BEGIN = 1, GP_PH_END = 2 } gp_phase_edge;

/* A stage *declaration* (protocol: `stage ... pool=N resource=cpu|gpu upstream=a,b queue=N`)
 * is a GP_EV_STAGE event with step >= 0. It reuses stored fields so the store needs no new
 * columns: step = pool size, edge = resource (below), worker = upstream stage names
 * separated by commas, bytes = input queue bound (-1 unknown). See engine/pipeline/pipeline.h. */
typedef enum { GP_STAGE_CPU = 1, GP_STAGE_GPU = 2 } gp_stage_resource;

typedef struct gp_event {
    gp_event_kind kind;
    char job_id[GP_JOB_ID_MAX];
    int64_t ts_ns; /* when it happened (end of step, phase edge, request end) */
    int64_t rank;  /* worker/rank within the job; -1 unknown */
    int64_t seq;   /* the sender's sequence number (protocol `seq=`); -1 none. Not stored:
                    * it only makes the event's identity (gp_event_key) */

    /* step */
    int64_t step;
    double units;          /* samples or tokens done by this step; <0 unknown */
    int64_t step_start_ns; /* <0: unknown (the previous step's end is used) */

    /* phase: name is init, compile, data_wait, checkpoint_save, checkpoint_restore,
     * eval or custom text. Also: stage name, hello's unit name, job lifecycle verb. */
    char name[GP_NAME_MAX];
    int edge; /* gp_phase_edge */

    /* request */
    int64_t arrival_ns, first_token_ns; /* end is ts_ns */
    int64_t prompt_tokens, output_tokens;
    int ok; /* 1 ok, 0 error */

    /* stage */
    int64_t item;
    int64_t enqueue_ns, start_ns; /* end is ts_ns */
    char worker[GP_NAME_MAX];
    int64_t bytes;

    /* hello */
    int64_t pid;
    char host[GP_NAME_MAX];
    double flops_per_unit, bytes_per_unit;    /* 0 = not declared */
    double slo_ttft_s, slo_tpot_s, slo_e2e_s; /* hello: the service's SLOs; 0 = not set */

    /* job lifecycle / alloc */
    char uuid[96];
    char user[GP_NAME_MAX];
    char job_name[GP_NAME_MAX];
    int64_t from_ns, to_ns; /* alloc: [from, to), to < 0 = still held */
    int64_t exit_code;      /* job end: exit code, -1 unknown */
    char origin[16];        /* job lifecycle: slurm, k8s, container, process, tag; "" unknown */
} gp_event;

void gp_event_init(gp_event *e, gp_event_kind kind);
/* The event's identity for de-duplication (at-least-once delivery, replays): with a
 * sequence number, a hash of (kind, job, rank, seq, ts); without, a hash of every field
 * of the normalized event, so the same line sent twice has the same key and two events
 * that differ in any field do not. 64-bit FNV-1a: collisions are per job and negligible
 * (about n^2 / 2^65 for n events of one job). */
uint64_t gp_event_key(const gp_event *e);
const char *gp_event_kind_name(gp_event_kind k);

#endif
