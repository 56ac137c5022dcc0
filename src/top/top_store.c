/* top_store.c: a top snapshot from a store opened read-only.
 *
 * Jobs: one incremental accounting state per job (gp_job_acct_update), so each refresh
 * reads only the rows stored since the previous one; its result equals
 * gp_job_summary_compute, which `goodput report` prints. Findings: gp_diagnose_job with
 * no_write (the store stays untouched), re-run every DIAG_EVERY refreshes because it reads
 * the job's whole history. GPUs: the newest sample of each device, and the jobs whose
 * allocation covers it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/acct_prefix.h"
#include "engine/diagnosis/classify.h"
#include "engine/accounting/job_summary.h"
#include "store/store.h"
#include "top/top.h"

#define DIAG_EVERY 5

typedef struct {
    char id[GP_JOB_ID_MAX];
    gp_job_acct *acct;
    char finding[400], advice[512];
} job_state;

struct gp_top_store {
    gp_store *s;
    job_state *js;
    size_t n_js;
    unsigned refreshes;
};

gp_top_store *gp_top_store_open(const char *path, char *err, size_t errlen) {
    gp_top_store *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (gp_store_open(path, GP_STORE_READONLY, &t->s, err, errlen) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

void gp_top_store_close(gp_top_store *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n_js; i++)
        gp_job_acct_free(t->js[i].acct);
    free(t->js);
    gp_store_close(t->s);
    free(t);
}

void gp_top_snap_free(gp_top_snap *s) {
    free(s->gpus);
    free(s->jobs);
    memset(s, 0, sizeof *s);
}

static job_state *state_for(gp_top_store *t, const char *id) {
    for (size_t i = 0; i < t->n_js; i++)
        if (!strcmp(t->js[i].id, id)) return &t->js[i];
    job_state *n = realloc(t->js, (t->n_js + 1) * sizeof *n);
    if (!n) return NULL;
    t->js = n;
    job_state *j = &t->js[t->n_js];
    memset(j, 0, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    gp_summary_opts o = {0}; /* as `goodput report`: the whole history */
    /* from the agent's saved prefix when there is one (acct_prefix.h) */
    j->acct = gp_acct_prefix_load(t->s, id);
    if (!j->acct) j->acct = gp_job_acct_new(id, &o);
    if (!j->acct) return NULL;
    t->n_js++;
    return j;
}

static void diagnose(gp_top_store *t, job_state *j) {
    gp_diag_opts o = {.no_write = 1};
    gp_finding *f = NULL;
    size_t n = 0;
    char err[256];
    if (gp_diagnose_job(t->s, j->id, &o, &f, &n, err, sizeof err) == 0) {
        if (n) {
            snprintf(j->finding, sizeof j->finding, "%s: %s", gp_finding_class_name(f[0].cls),
                     f[0].summary);
            snprintf(j->advice, sizeof j->advice, "%s", f[0].recommendation);
        } else {
            j->finding[0] = j->advice[0] = 0;
        }
    }
    free(f);
}

static const char *job_state_name(const gp_job_summary *js) {
    if (js->job.ended_ns > 0) return "ended";
    if (js->gp.ready_ns >= 0) return "running";
    return "not_ready";
}

static int read_jobs(gp_top_store *t, gp_top_snap *out, int diag, char *err, size_t errlen) {
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(t->s, &jobs, &nj) != 0) {
        snprintf(err, errlen, "%s: %s", gp_store_path(t->s), gp_store_errmsg(t->s));
        return -1;
    }
    out->jobs = calloc(nj ? nj : 1, sizeof *out->jobs);
    if (!out->jobs) {
        free(jobs);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nj; i++) {
        job_state *st = state_for(t, jobs[i].id);
        gp_job_summary js;
        char e[256];
        if (!st || gp_job_acct_update(st->acct, t->s, &js, e, sizeof e) != 0) continue;
        if (diag) diagnose(t, st);
        gp_top_job *r = &out->jobs[out->n_jobs++];
        snprintf(r->id, sizeof r->id, "%s", js.job.id);
        snprintf(r->user, sizeof r->user, "%s", js.job.user);
        snprintf(r->kind, sizeof r->kind, "%s", gp_job_kind_name(js.gp.kind));
        snprintf(r->state, sizeof r->state, "%s", job_state_name(&js));
        r->gpus = js.n_gpus;
        r->alloc_gpu_h = js.allocated_gpu_h;
        r->util = js.mean_gpu_util;
        r->goodput = js.gp.goodput;
        r->mem_frac = js.mean_mem_used_frac;
        r->energy_kwh = js.energy_kwh;
        snprintf(r->finding, sizeof r->finding, "%s", st->finding);
        snprintf(r->advice, sizeof r->advice, "%s", st->advice);
    }
    free(jobs);
    return 0;
}

static int64_t newest_ts(gp_store *s, const char *uuid) {
    sqlite3_stmt *st;
    int64_t ts = -1;
    if (sqlite3_prepare_v2(gp_store_db(s), "SELECT max(ts_ns) FROM samples WHERE uuid = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        ts = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return ts;
}

static double goodput_of(const gp_top_snap *s, const char *job) {
    for (size_t i = 0; i < s->n_jobs; i++)
        if (!strcmp(s->jobs[i].id, job)) return s->jobs[i].goodput;
    return -1;
}

static void holders(gp_top_store *t, const gp_top_snap *snap, gp_top_gpu *g, int64_t ts) {
    g->goodput = -1;
    for (size_t i = 0; i < snap->n_jobs; i++) {
        gp_alloc *a = NULL;
        size_t na = 0;
        if (gp_store_job_allocs(t->s, snap->jobs[i].id, &a, &na) != 0) continue;
        for (size_t k = 0; k < na; k++) {
            if (strcmp(a[k].uuid, g->uuid) || a[k].from_ns > ts ||
                (a[k].to_ns >= 0 && a[k].to_ns < ts))
                continue;
            size_t len = strlen(g->jobs);
            if (!len) g->goodput = goodput_of(snap, a[k].job_id); /* the first holder's */
            snprintf(g->jobs + len, sizeof g->jobs - len, "%s%s", len ? "," : "", a[k].job_id);
            break;
        }
        free(a);
    }
}

static int read_gpus(gp_top_store *t, gp_top_snap *out, char *err, size_t errlen) {
    gp_device *d = NULL;
    size_t nd = 0;
    if (gp_store_list_devices(t->s, &d, &nd) != 0) {
        snprintf(err, errlen, "%s: %s", gp_store_path(t->s), gp_store_errmsg(t->s));
        return -1;
    }
    out->gpus = calloc(nd ? nd : 1, sizeof *out->gpus);
    if (!out->gpus) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < nd; i++) {
        gp_top_gpu *g = &out->gpus[out->n_gpus++];
        snprintf(g->uuid, sizeof g->uuid, "%s", d[i].uuid);
        snprintf(g->name, sizeof g->name, "%s", d[i].name);
        g->index = d[i].index;
        g->util = g->mem_used_gib = g->power_w = -1;
        g->mem_total_gib = d[i].memory_total_bytes ? d[i].memory_total_bytes / 1073741824.0 : -1;
        int64_t ts = newest_ts(t->s, d[i].uuid);
        gp_sample *x = NULL;
        size_t nx = 0;
        if (ts >= 0 && gp_store_device_samples(t->s, d[i].uuid, ts, ts + 1, &x, &nx) == 0 && nx) {
            const gp_sample *l = &x[nx - 1];
            if (l->valid & GP_F_GPU_UTIL) g->util = l->gpu_util;
            if (l->valid & GP_F_MEM_USED) g->mem_used_gib = l->mem_used_bytes / 1073741824.0;
            if (l->valid & GP_F_MEM_TOTAL) g->mem_total_gib = l->mem_total_bytes / 1073741824.0;
            if (l->valid & GP_F_POWER) g->power_w = l->power_w;
        }
        free(x);
        if (ts >= 0)
            holders(t, out, g, ts);
        else
            g->goodput = -1;
    }
    free(d);
    return 0;
}

int gp_top_store_read(gp_top_store *t, gp_top_snap *out, char *err, size_t errlen) {
    gp_top_snap s = {0};
    int diag = t->refreshes++ % DIAG_EVERY == 0;
    if (read_jobs(t, &s, diag, err, errlen) != 0 || read_gpus(t, &s, err, errlen) != 0) {
        gp_top_snap_free(&s);
        return -1;
    }
    gp_top_snap_free(out);
    *out = s;
    return 0;
}
