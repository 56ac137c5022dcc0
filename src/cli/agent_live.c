/* agent_live.c: the agent's live findings (see agent_live.h). */
#include "cli/agent_live.h"

#include <jansson.h>
#include "util/heap_trim.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/findings_fmt.h"
#include "engine/diagnosis/live_window.h"
#include "engine/diagnosis/windows.h"
#include "store/store.h"
#include "util/cpu_clock.h"

/* One live job's state between passes. */
struct gp_live_job {
    char id[64];
    gp_live_hist *hist;
    int seen; /* listed and live in this pass */
};

/* The job's state, added when new; NULL when out of memory. */
static struct gp_live_job *live_job(gp_agent_live *l, const char *id) {
    for (size_t i = 0; i < l->n_live_jobs; i++)
        if (!strcmp(l->live_jobs[i].id, id)) return &l->live_jobs[i];
    struct gp_live_job *x = realloc(l->live_jobs, (l->n_live_jobs + 1) * sizeof *x);
    if (!x) return NULL;
    l->live_jobs = x;
    x = &l->live_jobs[l->n_live_jobs++];
    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "%s", id);
    return x;
}

/* Drops the state of the jobs this pass did not see live (ended, gone). */
static void live_jobs_sweep(gp_agent_live *l) {
    size_t m = 0;
    for (size_t i = 0; i < l->n_live_jobs; i++) {
        if (!l->live_jobs[i].seen) {
            l->whole_loads += gp_live_hist_whole_loads(l->live_jobs[i].hist);
            gp_live_hist_free(l->live_jobs[i].hist);
            continue;
        }
        l->live_jobs[i].seen = 0;
        l->live_jobs[m++] = l->live_jobs[i];
    }
    l->n_live_jobs = m;
}

json_t *gp_agent_live_findings_json(const gp_diag_window *w) {
    json_t *f = gp_findings_json(w->findings, w->n, 0);
    size_t k;
    json_t *x;
    json_array_foreach(f, k, x) {
        json_object_set_new(x, "live", json_true());
        json_object_set_new(x, "window_t0_ns", json_integer(w->t0_ns));
        json_object_set_new(x, "window_t1_ns", json_integer(w->t1_ns));
    }
    return f;
}

/* A pragma's value (PRAGMA cache_size: negative is KiB; PRAGMA cache_spill: 0 = off), so
 * that setting it back restores it exactly; `none` when it cannot be read. */
static int pragma_int(sqlite3 *db, const char *sql, int none) {
    sqlite3_stmt *q = NULL;
    int v = none;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

static void set_cache(sqlite3 *db, int cache_size, int spill) {
    char sql[96];
    snprintf(sql, sizeof sql, "PRAGMA cache_size=%d; PRAGMA cache_spill=%s", cache_size,
             spill ? "ON" : "OFF");
    sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static int live_pass(gp_agent_live *l, gp_agent *a);

/* A pass reads each live job's window once, through the agent's own connection (it must
 * see what this tick stored). At the connection's cache size (2 MiB or more, sized for the
 * ticks' hot pages and event floods: store.c) those reads would fill the cache with window
 * pages the ticks never touch again, and the agent would carry them, ~2 MiB at 8 GPUs after
 * ten minutes of passes (docs/benchmarks.md, agent --listen). So the pass runs with a small
 * cache: shrinking frees the clean pages, malloc_trim hands them back to the kernel before
 * the pass allocates, and the size is restored after, to be refilled by the ticks' own
 * pages only. The pages the open transaction wrote stay (dirty pages are never dropped);
 * with spilling off for the pass, more of them than the small cache holds (an event flood,
 * hundreds of GPUs) make the cache grow past it instead of being written to the WAL before
 * the commit, so the store's writes are what they were. */
int gp_agent_live_pass(gp_agent_live *l, gp_agent *a) {
    sqlite3 *db = gp_store_db(gp_agent_store(a));
    int kept = pragma_int(db, "PRAGMA cache_size", 0);
    int spill = pragma_int(db, "PRAGMA cache_spill", 1) != 0;
    if (kept) {
        set_cache(db, -GP_LIVE_CACHE_KIB, 0);
        gp_heap_trim();
    }
    int rc = live_pass(l, a);
    if (kept) set_cache(db, kept, spill);
    return rc;
}

static int live_pass(gp_agent_live *l, gp_agent *a) {
    double c0 = gp_process_cpu_s();
    int64_t now = gp_agent_now_ns(a);
    gp_store *st = gp_agent_store(a);
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(st, &jobs, &nj) < 0) {
        snprintf(l->last_err, sizeof l->last_err, "cannot list jobs: %s", gp_store_errmsg(st));
        return -1;
    }
    json_t *doc = json_object(), *all = json_array(), *jarr = json_array();
    int rc = 0;
    uint64_t rows = 0;
    for (size_t i = 0; i < nj && rc == 0; i++) {
        /* a job that ended before the window began has nothing live to say */
        if (jobs[i].ended_ns > 0 && jobs[i].ended_ns < now - l->window_ns) continue;
        gp_diag_window *w = NULL;
        size_t nw = 0;
        char err[256];
        struct gp_live_job *lj = live_job(l, jobs[i].id);
        if (!lj) {
            snprintf(l->last_err, sizeof l->last_err, "out of memory");
            rc = -1;
            break;
        }
        lj->seen = 1;
        /* Hooks share the agent's connection: the pass sees what this tick stored, even
         * before it is committed, so it is the store as it stands at `now`. */
        if (gp_diagnose_last_window_live(st, jobs[i].id, l->window_ns, now, &lj->hist, &w, &nw, err,
                                         sizeof err) < 0) {
            snprintf(l->last_err, sizeof l->last_err, "%s", err);
            rc = -1;
            break;
        }
        if (nw == 1) rows += w[0].rows_read;
        if (nw == 1 && w[0].t1_ns >= now - l->window_ns) {
            json_t *f = gp_agent_live_findings_json(&w[0]);
            json_array_extend(all, f);
            json_decref(f);
            json_array_append_new(jarr, json_pack("{s:s, s:I, s:I, s:I}", "job", jobs[i].id,
                                                  "window_t0_ns", (json_int_t)w[0].t0_ns,
                                                  "window_t1_ns", (json_int_t)w[0].t1_ns,
                                                  "findings", (json_int_t)w[0].n));
            l->jobs++;
            l->findings += w[0].n;
        }
        gp_diag_windows_free(w, nw);
    }
    free(jobs);
    if (rc == 0) live_jobs_sweep(l);
    if (rc == 0) {
        json_object_set_new(doc, "as_of_ns", json_integer(now));
        json_object_set_new(doc, "window_s", json_real((double)l->window_ns / 1e9));
        json_object_set_new(doc, "jobs", jarr);
        json_object_set_new(doc, "findings", all);
        char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
        if (text) {
            free(l->json);
            l->json = text;
            gp_serve_set_live(l->srv, l->json);
        } else {
            snprintf(l->last_err, sizeof l->last_err, "out of memory");
            rc = -1;
        }
        json_decref(doc);
    } else {
        json_decref(all);
        json_decref(jarr);
        json_decref(doc);
    }
    l->passes++;
    l->rows += rows;
    if (rows > l->rows_max_pass) l->rows_max_pass = rows;
    l->cpu_s += gp_process_cpu_s() - c0;
    return rc;
}

static void live_hook(gp_agent *a, void *ctx) {
    gp_agent_live *l = ctx;
    int64_t now = gp_agent_now_ns(a);
    if (l->last_ns == 0) { /* the first tick starts the clock: a pass a minute later */
        l->last_ns = now;
        return;
    }
    if (now - l->last_ns < l->every_ns) return;
    l->last_ns = now;
    char prev[sizeof l->last_err];
    snprintf(prev, sizeof prev, "%s", l->last_err);
    if (gp_agent_live_pass(l, a) != 0 && strcmp(prev, l->last_err) != 0)
        fprintf(stderr, "goodput agent: live findings: %s (will retry)\n", l->last_err);
}

int gp_agent_live_attach(gp_agent_live *l, gp_agent *a) {
    if (l->every_ns <= 0) l->every_ns = GP_LIVE_EVERY_NS;
    if (l->window_ns <= 0) l->window_ns = GP_LIVE_DEFAULT_WINDOW_NS;
    return gp_agent_set_hook(a, live_hook, l, 0);
}

uint64_t gp_agent_live_whole_loads(const gp_agent_live *l) {
    uint64_t n = l->whole_loads;
    for (size_t i = 0; i < l->n_live_jobs; i++)
        n += gp_live_hist_whole_loads(l->live_jobs[i].hist);
    return n;
}

void gp_agent_live_free(gp_agent_live *l) {
    free(l->json);
    l->json = NULL;
    for (size_t i = 0; i < l->n_live_jobs; i++)
        gp_live_hist_free(l->live_jobs[i].hist);
    free(l->live_jobs);
    l->live_jobs = NULL;
    l->n_live_jobs = 0;
}
