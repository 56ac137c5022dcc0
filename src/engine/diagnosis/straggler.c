/* straggler.c: robust z-score straggler detection over rolling windows (see straggler.h).
 * Sorting dominates: O(n log n) for n observations. */
#include "engine/diagnosis/straggler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/diagnosis/thresholds.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_inplace(double *v, size_t n) {
    if (n == 0) return NAN;
    qsort(v, n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmp_obs(const void *a, const void *b) {
    const gp_worker_obs *x = a, *y = b;
    if (x->iter != y->iter) return (x->iter > y->iter) - (x->iter < y->iter);
    return (x->worker > y->worker) - (x->worker < y->worker);
}

typedef struct {
    int active;
    gp_straggler s;
    int64_t last_window;
} episode;

int gp_straggler_detect(const gp_worker_obs *obs, size_t n, const gp_straggler_opts *opts,
                        gp_straggler **out) {
    *out = NULL;
    if (n == 0) return 0;
    int W = opts && opts->window > 0 ? opts->window : 5;
    double zt = opts && opts->z > 0 ? opts->z : gp_th(GP_TH_STRAGGLER_Z);
    double rt = opts && opts->ratio > 0 ? opts->ratio : gp_th(GP_TH_STRAGGLER_RATIO);
    int minw =
        opts && opts->min_windows > 0 ? opts->min_windows : (int)gp_th(GP_TH_STRAGGLER_WINDOWS);
    gp_worker_obs *o = malloc(n * sizeof *o);
    if (!o) return -1;
    memcpy(o, obs, n * sizeof *o);
    qsort(o, n, sizeof *o, cmp_obs);
    int maxw = 0;
    for (size_t i = 0; i < n; i++)
        if (o[i].worker > maxw) maxw = o[i].worker;
    if (maxw > 100000) maxw = 100000;
    int nw = maxw + 1;
    /* start index of each distinct iteration */
    size_t *it_start = malloc((n + 1) * sizeof *it_start);
    double *vals = malloc(n * sizeof *vals), *meds = malloc(nw * sizeof *meds);
    double *tmp = malloc(nw * sizeof *tmp);
    episode *ep = calloc(nw, sizeof *ep);
    gp_straggler *res = NULL;
    size_t nres = 0, cap = 0;
    int rc = -1;
    if (!it_start || !vals || !meds || !tmp || !ep) goto done;
    size_t nit = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || o[i].iter != o[i - 1].iter) it_start[nit++] = i;
    it_start[nit] = n;
    int hop = W / 2 > 0 ? W / 2 : 1;
    int64_t widx = 0;
    for (size_t w0 = 0; w0 + (size_t)W <= nit || (w0 == 0 && nit > 0); w0 += hop, widx++) {
        size_t w1 = w0 + W < nit ? w0 + W : nit; /* iterations [w0, w1) */
        size_t a = it_start[w0], b = it_start[w1];
        int nk = 0;
        for (int k = 0; k < nw; k++) {
            size_t m = 0;
            for (size_t i = a; i < b; i++)
                if (o[i].worker == k && isfinite(o[i].value)) vals[m++] = o[i].value;
            meds[k] = m ? median_inplace(vals, m) : NAN;
            if (m) tmp[nk++] = meds[k];
        }
        if (nk >= 3) {
            double med = median_inplace(tmp, nk);
            for (int k = 0, j = 0; k < nw; k++)
                if (!isnan(meds[k])) tmp[j++] = fabs(meds[k] - med);
            double mad = median_inplace(tmp, nk);
            if (mad < 0.02 * fabs(med)) mad = 0.02 * fabs(med);
            for (int k = 0; k < nw; k++) {
                if (isnan(meds[k]) || med <= 0 || mad <= 0) continue;
                double z = (meds[k] - med) / (1.4826 * mad), r = meds[k] / med;
                episode *e = &ep[k];
                int flag = z >= zt && r >= rt;
                /* hysteresis: an open episode stays open while the worker remains clearly
                 * slow (half the excess ratio and z), so a rank slowed by about the
                 * threshold for the whole run is one episode, not one per noisy crossing */
                int stay =
                    e->active && widx - e->last_window <= 2 && z >= zt / 2 && r >= 1 + (rt - 1) / 2;
                if (!flag && !stay) continue;
                if (e->active && widx - e->last_window > 2) {
                    /* gap: close the old episode */
                    if (e->s.windows >= minw) {
                        if (nres == cap) {
                            cap = cap ? 2 * cap : 8;
                            gp_straggler *nr = realloc(res, cap * sizeof *res);
                            if (!nr) goto done;
                            res = nr;
                        }
                        res[nres++] = e->s;
                    }
                    e->active = 0;
                }
                if (!e->active) {
                    memset(&e->s, 0, sizeof e->s);
                    e->active = 1;
                    e->s.worker = k;
                    e->s.iter0 = o[a].iter;
                    e->s.t0_ns = o[a].ts_ns;
                }
                e->s.windows += flag;
                e->last_window = widx;
                e->s.iter1 = o[b - 1].iter;
                e->s.t1_ns = o[b - 1].ts_ns;
                if (r > e->s.ratio) {
                    e->s.ratio = r;
                    e->s.z = z;
                    e->s.peer_median = med;
                }
                e->s.excess += (meds[k] - med) * (double)hop;
            }
        }
        if (w1 == nit) break;
    }
    for (int k = 0; k < nw; k++) {
        if (!ep[k].active || ep[k].s.windows < minw) continue;
        if (nres == cap) {
            cap = cap ? 2 * cap : 8;
            gp_straggler *nr = realloc(res, cap * sizeof *res);
            if (!nr) goto done;
            res = nr;
        }
        res[nres++] = ep[k].s;
    }
    *out = res;
    res = NULL;
    rc = (int)nres;
done:
    free(res);
    free(o);
    free(it_start);
    free(vals);
    free(meds);
    free(tmp);
    free(ep);
    return rc;
}

int gp_straggler_read_pai_csv(const char *path, gp_worker_obs **out, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    char line[512];
    size_t n = 0, cap = 0;
    gp_worker_obs *v = NULL;
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1 && strstr(line, "worker")) continue;
        long idx, worker, gpu, t;
        double val;
        if (sscanf(line, "%ld,%ld,%ld,%ld,%lf", &idx, &worker, &gpu, &t, &val) != 5) {
            snprintf(err, errlen, "%s:%d: expected index,worker,gpu,time,batch_time_norm", path,
                     lineno);
            free(v);
            fclose(f);
            return -1;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            gp_worker_obs *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                snprintf(err, errlen, "%s: out of memory", path);
                free(v);
                fclose(f);
                return -1;
            }
            v = nv;
        }
        v[n++] = (gp_worker_obs){(int)worker, t, val, 0};
    }
    fclose(f);
    *out = v;
    return (int)n;
}
