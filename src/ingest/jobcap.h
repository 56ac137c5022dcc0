/* jobcap.h: the job ids one sender-facing transport has seen lately, at most a cap of them
 * (ingest.h, GP_INGEST_MAX_JOBS), so a client cannot make the store, /metrics and the API
 * grow one series per line. An id silent for GP_INGEST_JOB_IDLE_NS gives its slot back.
 *
 * One owner, one thread: the agent's ingest owns the unix and UDP sets; the HTTP server
 * owns the set of POST /api/v1/events, so its answer can name each line refused by the cap
 * (the agent's ingest then takes those lines as admitted). */
#ifndef GP_INGEST_JOBCAP_H
#define GP_INGEST_JOBCAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gp_jobcap_slot {
    uint64_t h; /* 64-bit hash of the id; 0 = empty */
    int64_t last_ns;
} gp_jobcap_slot;

/* Zero-initialised is an empty set with the default cap. */
typedef struct gp_jobcap {
    gp_jobcap_slot *slot; /* open addressing, 2x the cap in slots so probes stay short */
    size_t n_slots, used;
    int max_jobs;     /* 0 = GP_INGEST_MAX_JOBS */
    int64_t swept_ns; /* time of the last rebuild without idle ids (at most one a second) */
    int logged;       /* the owner's one log line was written */
} gp_jobcap;

/* 1: job_id may be tracked (already known, or a free slot; its clock set to now_ns);
 * 0: a new id past the cap. An empty id, or no memory for the set, is admitted (neither
 * is the client's doing). */
int gp_jobcap_admit(gp_jobcap *j, const char *job_id, int64_t now_ns);
void gp_jobcap_free(gp_jobcap *j);

#endif
