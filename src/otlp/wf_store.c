/* wf_store.c: see wf_store.h. A sample's averages describe the interval since the
 * device's previous sample, so busy GPU-seconds accumulate gpu_util x that interval, and
 * energy the counter's delta (or power x interval when the counter is unknown). */
#include "otlp/wf_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/cost.h"

static int series_build(gp_store *s, const char *uuid, int64_t t0, int64_t t1, gp_wf_series *out) {
    gp_sample *v = NULL;
    size_t n = 0;
    memset(out, 0, sizeof *out);
    if (gp_store_device_samples(s, uuid, t0, t1, &v, &n) != 0) return -1;
    out->t_ns = malloc((n + 1) * sizeof *out->t_ns);
    out->busy_gpu_s = malloc((n + 1) * sizeof *out->busy_gpu_s);
    out->energy_j = malloc((n + 1) * sizeof *out->energy_j);
    if (!out->t_ns || !out->busy_gpu_s || !out->energy_j) {
        free(v);
        return -1;
    }
    int energy_ok = 1;
    for (size_t i = 0; i < n; i++) {
        out->t_ns[i] = v[i].ts_ns;
        double busy = i ? out->busy_gpu_s[i - 1] : 0, e = i ? out->energy_j[i - 1] : 0;
        if (i) {
            double dt = (double)(v[i].ts_ns - v[i - 1].ts_ns) / 1e9;
            if (gp_has(v[i].valid, GP_F_GPU_UTIL)) busy += v[i].gpu_util * dt;
            if (gp_has(v[i].valid, GP_F_ENERGY) && gp_has(v[i - 1].valid, GP_F_ENERGY) &&
                v[i].energy_mj >= v[i - 1].energy_mj)
                e += (double)(v[i].energy_mj - v[i - 1].energy_mj) / 1000;
            else if (gp_has(v[i].valid, GP_F_POWER))
                e += v[i].power_w * dt;
            else
                energy_ok = 0;
        }
        out->busy_gpu_s[i] = busy;
        out->energy_j[i] = e;
    }
    out->n = n;
    if (!energy_ok) {
        free(out->energy_j);
        out->energy_j = NULL;
    }
    free(v);
    return 0;
}

int gp_wf_engines_from_store(gp_store *s, const gp_span *spans, size_t n, gp_wf_engine **out,
                             size_t *n_out, double *price_per_gpu_h, char *err, size_t errlen) {
    *out = NULL;
    *n_out = 0;
    gp_job *jobs = NULL;
    gp_device *devs = NULL;
    size_t nj = 0, nd = 0;
    if (gp_store_list_jobs(s, &jobs, &nj) != 0 || gp_store_list_devices(s, &devs, &nd) != 0) {
        snprintf(err, errlen, "%s: %s", gp_store_path(s), gp_store_errmsg(s));
        free(jobs);
        free(devs);
        return -1;
    }
    int64_t t0 = INT64_MAX, t1 = 0;
    for (size_t i = 0; i < n; i++) {
        if (spans[i].start_ns < t0) t0 = spans[i].start_ns;
        if (spans[i].end_ns > t1) t1 = spans[i].end_ns;
    }
    gp_wf_engine *e = calloc(nj + 1, sizeof *e);
    size_t ne = 0;
    const gp_gpu_spec *spec = NULL;
    for (size_t j = 0; e && j < nj; j++) {
        int used = 0;
        for (size_t i = 0; i < n && !used; i++)
            used = spans[i].step == GP_STEP_MODEL && spans[i].service[0] &&
                   (strcmp(spans[i].service, jobs[j].id) == 0 ||
                    strcmp(spans[i].service, jobs[j].name) == 0);
        if (!used) continue;
        gp_alloc *al = NULL;
        size_t na = 0;
        if (gp_store_job_allocs(s, jobs[j].id, &al, &na) != 0) continue;
        gp_wf_engine *x = &e[ne];
        snprintf(x->job_id, sizeof x->job_id, "%s", jobs[j].id);
        snprintf(x->name, sizeof x->name, "%s", jobs[j].name);
        x->dev = calloc(na + 1, sizeof *x->dev);
        for (size_t a = 0; x->dev && a < na; a++) {
            int dup = 0;
            for (size_t b = 0; b < a; b++)
                dup |= strcmp(al[a].uuid, al[b].uuid) == 0;
            if (dup) continue;
            for (size_t d = 0; d < nd; d++)
                if (strcmp(devs[d].uuid, al[a].uuid) == 0) {
                    snprintf(x->host, sizeof x->host, "%s", devs[d].host);
                    if (!spec) spec = devs[d].spec;
                }
            /* one sample before and after, so the window's edges interpolate */
            if (series_build(s, al[a].uuid, t0 - 30000000000LL, t1 + 30000000000LL,
                             &x->dev[x->n_dev]) == 0)
                x->n_dev++;
        }
        free(al);
        if (x->n_dev)
            ne++;
        else
            gp_wf_engines_free(x, 1), memset(x, 0, sizeof *x);
    }
    free(jobs);
    free(devs);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *price_per_gpu_h = gp_price_per_gpu_h(spec, *price_per_gpu_h);
    *out = e;
    *n_out = ne;
    return 0;
}

void gp_wf_engines_free(gp_wf_engine *e, size_t n) {
    for (size_t i = 0; e && i < n; i++) {
        for (int d = 0; d < e[i].n_dev; d++) {
            free(e[i].dev[d].t_ns);
            free(e[i].dev[d].busy_gpu_s);
            free(e[i].dev[d].energy_j);
        }
        free(e[i].dev);
        e[i].dev = NULL;
        e[i].n_dev = 0;
    }
}
