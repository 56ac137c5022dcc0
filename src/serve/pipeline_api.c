/* pipeline_api.c: multi-stage pipelines in the JSON API (docs/api.md):
 *  - GET /api/v1/jobs/{id} gains "pipelines" (gp_pipeline_report_json: the analysis, the
 *    bottleneck with its finding and the sizing) when the job has stage item events;
 *  - GET /api/v1/jobs/{id}/pipeline?what_if=STAGE=N,... runs the what-if discrete-event
 *    simulation on the server (engine/pipeline/pipeline_sim.c) and answers the same object as
 *    `goodput pipeline --json --what-if`.
 *
 * Why a cache for the job detail: the analysis reads every stage event of the job, and the
 * dashboard asks for the job every few seconds. An ended job's events no longer change, so
 * its section is computed once; a running job's is reused for ten times what it cost (at
 * most 30 s), as the job summaries are. A job without stage events is cached as such.
 *
 * Why the bounds on the what-if: the simulation runs on the server's only thread, so one
 * request must stay short. Items are capped so that items x stages <= SIM_MAX_EVENTS (the
 * simulator does over a million items per second: well under a second), and pools at
 * SIM_MAX_WORKERS per stage (the event heap holds one entry per worker). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/pipeline/pipeline.h"
#include "serve/serve_int.h"

#define SIM_MAX_EVENTS 2000000.0
#define SIM_MAX_WORKERS 4096
#define SIM_MAX_SPEC 255

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

void srv_pipeline_cache_free(gp_serve *s) {
    for (int i = 0; i < s->n_pipes; i++) {
        json_decref(s->pipes[i].json);
        s->pipes[i].json = NULL;
    }
    s->n_pipes = 0;
}

void srv_job_pipelines(gp_serve *s, const gp_job *j, json_t *o) {
    double now = mono_s();
    for (int i = 0; i < s->n_pipes; i++) {
        struct srv_pipe_cache *c = &s->pipes[i];
        if (strcmp(c->id, j->id) != 0) continue;
        if (c->until_s != 0 && now >= c->until_s) break;
        if (c->json) json_object_set(o, "pipelines", c->json);
        return;
    }
    json_t *tmp = json_object();
    gp_pipeline_report_json(s->store, j->id, tmp);
    json_t *arr = json_object_get(tmp, "pipelines");
    if (arr) json_object_set(o, "pipelines", arr);
    double cost = mono_s() - now;
    int c = -1;
    for (int i = 0; i < s->n_pipes && c < 0; i++)
        if (strcmp(s->pipes[i].id, j->id) == 0) c = i;
    if (c < 0) c = s->n_pipes < SRV_PIPE_CACHE ? s->n_pipes++ : (s->next_pipe++ % SRV_PIPE_CACHE);
    json_decref(s->pipes[c].json);
    snprintf(s->pipes[c].id, sizeof s->pipes[c].id, "%s", j->id);
    s->pipes[c].json = arr ? json_incref(arr) : NULL;
    s->pipes[c].until_s = j->ended_ns > 0 ? 0 : now + (cost * 10 < 30 ? cost * 10 : 30);
    json_decref(tmp);
}

/* An integer parameter in [lo, hi]: 1 present, 0 absent, -1 bad (error set). */
static int int_param(const srv_req *q, srv_resp *r, const char *key, long lo, long hi, long *out) {
    const char *v = srv_param(q, key);
    if (!v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < lo || x > hi) {
        srv_error(r, 400, "parameter '%s=%.40s': expected an integer in [%ld, %ld]", key, v, lo,
                  hi);
        return -1;
    }
    *out = x;
    return 1;
}

/* Pool sizes in the spec above SIM_MAX_WORKERS: the simulator would take them, but its
 * event heap grows with the workers. 0 ok, -1 error set. */
static int check_pools(const char *spec, srv_resp *r) {
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        int is_queue = eq && eq - p >= 6 && memcmp(eq - 6, ".queue", 6) == 0;
        if (eq && !is_queue && atol(eq + 1) > SIM_MAX_WORKERS) {
            srv_error(r, 400,
                      "parameter 'what_if': '%.*s' asks for more than %d workers in one stage",
                      (int)(n < 60 ? n : 60), p, SIM_MAX_WORKERS);
            return -1;
        }
        p += n + (comma ? 1 : 0);
    }
    return 0;
}

void srv_api_job_pipeline(gp_serve *s, const srv_req *q, srv_resp *r, const gp_job *j) {
    const char *spec = srv_param(q, "what_if");
    long queue = -1, items = 0, seed = 1, cpus = 0, gpus = 0;
    if (int_param(q, r, "queue", 0, 1000000, &queue) < 0 ||
        int_param(q, r, "items", 1, 100000000, &items) < 0 ||
        int_param(q, r, "seed", 0, 0x7fffffffL, &seed) < 0 ||
        int_param(q, r, "cpus", 1, 1000000, &cpus) < 0 ||
        int_param(q, r, "gpus", 1, 1000000, &gpus) < 0)
        return;
    if (spec && strlen(spec) > SIM_MAX_SPEC) {
        srv_error(r, 400, "parameter 'what_if': longer than %d bytes", SIM_MAX_SPEC);
        return;
    }
    if (spec && check_pools(spec, r) < 0) return;
    gp_pipeline p;
    char err[512];
    int rc = gp_pipeline_load(s->store, j->id, NULL, &p, err, sizeof err);
    if (rc <= 0) {
        if (rc < 0)
            srv_error(r, 500, "%s", err);
        else
            srv_error(r, 404, "job '%.100s' has no pipeline stage events (docs/pipelines.md)",
                      j->id);
        gp_pipeline_free(&p);
        return;
    }
    double max_items = floor(SIM_MAX_EVENTS / (p.n_stages > 0 ? p.n_stages : 1));
    if (items > max_items) {
        srv_error(r, 400, "parameter 'items=%ld': at most %.0f for a %d-stage pipeline", items,
                  max_items, p.n_stages);
        gp_pipeline_free(&p);
        return;
    }
    size_t n_items = items > 0                          ? (size_t)items
                     : (double)p.items_done > max_items ? (size_t)max_items
                                                        : p.items_done;
    if (n_items == 0) n_items = 1;
    gp_pipe_sizing sz;
    gp_pipeline_size(&p, (int)cpus, (int)gpus, &sz);
    gp_pipe_whatif w;
    memset(&w, 0, sizeof w);
    gp_pipe_sim_cfg base;
    double t0 = mono_s();
    if (gp_pipeline_sim_cfg(&p, NULL, (int)queue, n_items, (uint64_t)seed, &base, err, sizeof err) <
            0 ||
        gp_pipeline_sim_cfg(&p, spec, (int)queue, n_items, (uint64_t)seed, &w.cfg, err,
                            sizeof err) < 0 ||
        gp_pipe_simulate(&base, &w.base, err, sizeof err) < 0 ||
        gp_pipe_simulate(&w.cfg, &w.res, err, sizeof err) < 0) {
        /* The engine's sentences name the CLI option; name the parameter instead. */
        const char *m = strncmp(err, "--what-if: ", 11) == 0 ? err + 11 : err;
        srv_error(r, 400, "parameter 'what_if': %s", m);
        gp_pipeline_free(&p);
        return;
    }
    double elapsed = mono_s() - t0;
    w.have = 1;
    snprintf(w.spec, sizeof w.spec, "%s", spec ? spec : "");
    json_t *o = gp_pipeline_to_json(&p, &sz, &w);
    json_object_set_new(o, "sim_elapsed_s", json_real(elapsed));
    gp_pipeline_free(&p);
    char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(13));
    json_decref(o);
    if (!txt) {
        srv_error(r, 500, "out of memory rendering JSON");
        return;
    }
    r->status = 200;
    r->ctype = "application/json";
    srv_buf_put(&r->body, txt, strlen(txt));
    srv_buf_put(&r->body, "\n", 1);
    free(txt);
}
