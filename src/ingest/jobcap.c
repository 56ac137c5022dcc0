/* jobcap.c: see jobcap.h. A hash set on FNV-1a of the id, rebuilt without idle ids when
 * full, at most once a second (a flood of new ids costs one probe per line, not a rebuild). */
#include "ingest/jobcap.h"

#include <stdlib.h>
#include <string.h>

#include "ingest/ingest.h"

static uint64_t id_hash(const char *s) {
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

static gp_jobcap_slot *find(gp_jobcap *j, uint64_t h) {
    size_t mask = j->n_slots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask)
        if (j->slot[i].h == h || j->slot[i].h == 0) return &j->slot[i];
}

/* Drops ids idle for GP_INGEST_JOB_IDLE_NS; rehashes the rest. */
static void sweep(gp_jobcap *j, int64_t now_ns) {
    gp_jobcap_slot *old = malloc(j->n_slots * sizeof *old);
    if (!old) return;
    memcpy(old, j->slot, j->n_slots * sizeof *old);
    memset(j->slot, 0, j->n_slots * sizeof *old);
    j->used = 0;
    for (size_t i = 0; i < j->n_slots; i++)
        if (old[i].h && now_ns - old[i].last_ns < GP_INGEST_JOB_IDLE_NS) {
            *find(j, old[i].h) = old[i];
            j->used++;
        }
    free(old);
    j->swept_ns = now_ns;
}

int gp_jobcap_admit(gp_jobcap *j, const char *job_id, int64_t now_ns) {
    if (!job_id[0]) return 1;
    size_t max = (size_t)(j->max_jobs > 0 ? j->max_jobs : GP_INGEST_MAX_JOBS);
    if (!j->slot) {
        size_t n = 16;
        while (n < max * 2)
            n *= 2;
        j->slot = calloc(n, sizeof *j->slot);
        if (!j->slot) return 1; /* out of memory: not the client's fault */
        j->n_slots = n;
    }
    uint64_t h = id_hash(job_id);
    gp_jobcap_slot *s = find(j, h);
    if (s->h == h) {
        s->last_ns = now_ns;
        return 1;
    }
    if (j->used >= max && now_ns - j->swept_ns >= 1000000000LL) {
        sweep(j, now_ns);
        s = find(j, h);
    }
    if (j->used >= max) return 0;
    *s = (gp_jobcap_slot){.h = h, .last_ns = now_ns};
    j->used++;
    return 1;
}

void gp_jobcap_free(gp_jobcap *j) {
    free(j->slot);
    j->slot = NULL;
    j->n_slots = j->used = 0;
}
