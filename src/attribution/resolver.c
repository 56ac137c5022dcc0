/* resolver.c: see resolver.h. The cache is an array sorted by PID (a node has tens to a
 * few thousand GPU processes; a binary search per row and an insertion per new process
 * cost less than the /proc reads they save). Each lookup still reads /proc/PID/stat to
 * compare the start time: that one small read is what makes PID reuse safe. */
#include "attribution/resolver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribution/owner.h"
#include "attribution/procinfo.h"

typedef struct entry {
    int64_t pid, start_ns, last_seen_ns, checked_ns;
    gp_proc_owner owner;
} entry;

struct gp_resolver {
    char *proc_root; /* NULL: the PIDs are not this machine's */
    int64_t boot_ns; /* -1 until read */
    entry *v;
    size_t n, cap;
    gp_proc_owner tmp;
    gp_resolver_stats stats;
    int warned; /* warnings printed (capped: a foreign PID namespace has thousands) */
};

gp_resolver *gp_resolver_new(const char *proc_root) {
    gp_resolver *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->boot_ns = -1;
    if (proc_root && !(r->proc_root = strdup(proc_root))) {
        free(r);
        return NULL;
    }
    return r;
}

void gp_resolver_free(gp_resolver *r) {
    if (!r) return;
    free(r->proc_root);
    free(r->v);
    free(r);
}

gp_resolver_stats gp_resolver_get_stats(const gp_resolver *r) {
    return r->stats;
}

static size_t lower_bound(const gp_resolver *r, int64_t pid) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->v[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void set_unattributed(gp_proc_owner *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->job_id, sizeof o->job_id, "%s", GP_UNATTRIBUTED);
    o->origin = GP_ORIGIN_UNKNOWN;
    o->start_ns = -1;
}

/* Labels a source carries: a digit-led id is a Slurm job (dcgm-exporter's hpc_job), an
 * id with a '/' is namespace/pod. */
static void from_source_label(gp_proc_owner *o, const char *label) {
    memset(o, 0, sizeof *o);
    snprintf(o->job_id, sizeof o->job_id, "%s", label);
    o->origin = strchr(label, '/')                     ? GP_ORIGIN_K8S
                : (label[0] >= '0' && label[0] <= '9') ? GP_ORIGIN_SLURM
                                                       : GP_ORIGIN_TAG;
    o->start_ns = -1;
}

/* Resolves a live process; returns 0, or a negative errno when it cannot be seen. */
static int resolve(gp_resolver *r, int64_t pid, int64_t start_ns, gp_proc_owner *o) {
    gp_owner ow;
    int rc = gp_attrib_owner_of_pid_at(r->proc_root, pid, &ow);
    if (rc != 0) return rc;
    memset(o, 0, sizeof *o);
    snprintf(o->job_id, sizeof o->job_id, "%s", ow.job_id);
    o->origin = ow.origin;
    o->start_ns = start_ns;
    if (ow.origin == GP_ORIGIN_PROCESS) {
        /* Nothing above the process names it: its command and user do. */
        if (gp_proc_cmdline(r->proc_root, pid, o->name, sizeof o->name) != 0 || !o->name[0])
            snprintf(o->name, sizeof o->name, "pid %lld", (long long)pid);
        if (gp_proc_user(r->proc_root, pid, o->user, sizeof o->user) != 0) o->user[0] = '\0';
    }
    return 0;
}

const gp_proc_owner *gp_resolver_owner(gp_resolver *r, const gp_proc_sample *p, int64_t now_ns) {
    r->stats.lookups++;
    gp_proc_owner *o = &r->tmp;
    if (p->job_id[0]) {
        from_source_label(o, p->job_id);
        r->stats.resolved++;
        return o;
    }
    if (p->pid <= 0) {
        set_unattributed(o);
        r->stats.unattributed++;
        return o;
    }
    if (!r->proc_root) {
        memset(o, 0, sizeof *o);
        snprintf(o->job_id, sizeof o->job_id, "pid-%lld", (long long)p->pid);
        o->origin = GP_ORIGIN_PROCESS;
        o->start_ns = -1;
        snprintf(o->name, sizeof o->name, "%s", p->name[0] ? p->name : "");
        r->stats.resolved++;
        return o;
    }
    if (r->boot_ns < 0 && gp_proc_boot_ns(r->proc_root, &r->boot_ns) != 0) r->boot_ns = 0;
    size_t i = lower_bound(r, p->pid);
    int have = i < r->n && r->v[i].pid == p->pid;
    /* A PID the driver listed a moment ago and lists again is the same process: reuse
     * needs the process to exit and a new one to take its PID and open the GPU within
     * the gap. Past a few seconds' gap, or every 30 s anyway, the start time decides. */
    if (have && now_ns - r->v[i].last_seen_ns <= 3000000000LL &&
        now_ns - r->v[i].checked_ns < 30000000000LL) {
        r->v[i].last_seen_ns = now_ns;
        r->stats.cache_hits++;
        if (r->v[i].owner.origin == GP_ORIGIN_UNKNOWN)
            r->stats.unattributed++;
        else
            r->stats.resolved++;
        return &r->v[i].owner;
    }
    int64_t start = -1;
    int src = gp_proc_start_ns(r->proc_root, p->pid, r->boot_ns, &start);
    if (have && (src != 0 || r->v[i].start_ns == start)) {
        /* Same process (or one that just exited: keep the owner we knew). */
        r->v[i].last_seen_ns = now_ns;
        r->v[i].checked_ns = now_ns;
        r->stats.cache_hits++;
        if (r->v[i].owner.origin == GP_ORIGIN_UNKNOWN)
            r->stats.unattributed++;
        else
            r->stats.resolved++;
        return &r->v[i].owner;
    }
    gp_proc_owner fresh;
    int rc = src != 0 ? src : resolve(r, p->pid, start, &fresh);
    if (rc != 0) {
        set_unattributed(&fresh);
        if (++r->warned <= 10)
            fprintf(stderr,
                    "goodput agent: pid %lld on %s: %s before its owner could be read; its GPU "
                    "time is counted as '%s'\n",
                    (long long)p->pid, p->uuid,
                    rc == -ESRCH ? "the process is gone (or in another PID namespace)"
                                 : "/proc is not readable",
                    GP_UNATTRIBUTED);
        if (r->warned == 10)
            fprintf(stderr, "goodput agent: further unattributed-process warnings suppressed\n");
    }
    if (!have) {
        if (r->n == r->cap) {
            size_t nc = r->cap ? r->cap * 2 : 64;
            entry *nv = realloc(r->v, nc * sizeof *nv);
            if (!nv) { /* no cache: answer without remembering */
                *o = fresh;
                return o;
            }
            r->v = nv;
            r->cap = nc;
        }
        memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof *r->v);
        r->n++;
    }
    r->v[i] = (entry){.pid = p->pid,
                      .start_ns = start,
                      .last_seen_ns = now_ns,
                      .checked_ns = now_ns,
                      .owner = fresh};
    if (fresh.origin == GP_ORIGIN_UNKNOWN)
        r->stats.unattributed++;
    else
        r->stats.resolved++;
    return &r->v[i].owner;
}

void gp_resolver_sweep(gp_resolver *r, int64_t cutoff_ns) {
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].last_seen_ns >= cutoff_ns) r->v[k++] = r->v[i];
    r->n = k;
}
