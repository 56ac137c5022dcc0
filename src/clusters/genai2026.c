/* genai2026.c: reader for Alibaba's 2026 GenAI serving trace (cluster-trace-v2026-GenAI):
 * per-container GPU duty cycle (value %, timestamp_anon, container_ip) and GPU memory used
 * (timestamp_anon, value bytes, container_ip), each published as a tar.gz with one CSV.
 *
 * The archives are read in place (zlib + the tar layer in csv.c). Columns are found by
 * name because the two files order them differently. Each container is taken as one GPU
 * (the trace gives no GPU count per container): a duty-cycle sample is one GPU online for
 * one sample period, busy for value/100 of it. Samples are folded per timestamp (the series)
 * and per container (who stayed idle, and how much memory it held); memory is bounded by
 * distinct timestamps plus containers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

typedef struct {
    double t, online, busy;
    int64_t idle, low;
} stamp_t;
typedef struct {
    int64_t n, n_mem;
    double duty_max, mem_sum;
} cont_t;

/* The map's slot is the key's low bits (it takes hashes), and a whole-second timestamp
 * as a double has all-zero low mantissa bits: raw bits put every stamp in one probe chain
 * (quadratic: 42 s for 3 M rows). splitmix64's finalizer is a bijection, so distinct
 * stamps keep distinct keys; 0 is the map's empty mark. */
static uint64_t stamp_key(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x ? x : 1;
}

static int open_hdr(gp_csv **c, const char *p, char *err, size_t errlen) {
    if (gp_csv_open(c, p, err, errlen) != 0) return -1;
    int rc = gp_csv_next(*c, err, errlen);
    if (rc != 1) {
        if (rc == 0) snprintf(err, errlen, "%s: empty file", p);
        gp_csv_close(*c);
        *c = NULL; /* the caller's exit path closes c too */
        return -1;
    }
    gp_csv_take_header(*c);
    return 0;
}

static int find(gp_csv *c, const char *n, char *err, size_t errlen) {
    int i = gp_csv_find(c, n);
    if (i < 0) snprintf(err, errlen, "%s:1: no column %s in the header", gp_csv_path(c), n);
    return i;
}

int gp_cl_read_genai2026(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    char duty[1024], mem[1024];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(duty, sizeof duty, "%s/pod_gpu_duty_cycle_anon.tar.gz", path);
        snprintf(mem, sizeof mem, "%s/pod_gpu_memory_used_bytes_anon.tar.gz", path);
    } else {
        snprintf(duty, sizeof duty, "%s", path);
        mem[0] = 0;
    }
    snprintf(r->unit_name, sizeof r->unit_name, "containers");
    gp_cl_map smap = {0}, cmap = {0};
    stamp_t *stamps = NULL;
    cont_t *conts = NULL;
    size_t ns = 0, cs = 0, nc = 0, cc = 0;
    int64_t hist[GP_CL_UTIL_BINS] = {0};
    int rc = -1;
    gp_csv *c = NULL;
    if (open_hdr(&c, duty, err, errlen) != 0) goto out;
    int cv = find(c, "value", err, errlen), ct = find(c, "timestamp_anon", err, errlen),
        ci = find(c, "container_ip", err, errlen);
    if (cv < 0 || ct < 0 || ci < 0) goto out;
    int64_t rows = 0;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        rows++;
        double v, t;
        int k = gp_csv_num(c, cv, &v, err, errlen);
        if (k < 0 || gp_csv_num(c, ct, &t, err, errlen) != 1) {
            if (k >= 0)
                snprintf(err, errlen, "%s:%lld:%d: missing timestamp", gp_csv_path(c),
                         (long long)gp_csv_line(c), gp_csv_col(c, ct));
            rc = -1;
            goto out;
        }
        if (k == 0) {
            r->ts_na++;
            continue;
        }
        double u = v / 100.0;
        if (u < 0) u = 0;
        if (u > 1) u = 1;
        uint32_t si, ci2;
        uint64_t key;
        memcpy(&key, &t, sizeof key);
        key = stamp_key(key);
        if (!gp_cl_map_get(&smap, key, &si)) {
            if (ns == cs) {
                cs = cs ? cs * 2 : 1024;
                stamp_t *n2 = realloc(stamps, cs * sizeof *n2);
                if (!n2) goto oom;
                stamps = n2;
            }
            stamps[ns] = (stamp_t){t, 0, 0, 0, 0};
            si = (uint32_t)ns++;
            if (gp_cl_map_put(&smap, key, si) != 0) goto oom;
        }
        stamps[si].online += 1;
        stamps[si].busy += u;
        if (u < 0.01) stamps[si].idle++;
        if (u <= 0.5) stamps[si].low++;
        int b = (int)(u * GP_CL_UTIL_BINS);
        hist[b >= GP_CL_UTIL_BINS ? GP_CL_UTIL_BINS - 1 : b]++;
        uint64_t h = gp_cl_hash(gp_csv_field(c, ci), gp_csv_field_len(c, ci));
        if (!gp_cl_map_get(&cmap, h, &ci2)) {
            if (nc == cc) {
                cc = cc ? cc * 2 : 256;
                cont_t *n2 = realloc(conts, cc * sizeof *n2);
                if (!n2) goto oom;
                conts = n2;
            }
            conts[nc] = (cont_t){0, 0, 0, 0};
            ci2 = (uint32_t)nc++;
            if (gp_cl_map_put(&cmap, h, ci2) != 0) goto oom;
        }
        conts[ci2].n++;
        if (v > conts[ci2].duty_max) conts[ci2].duty_max = v;
        r->ts_samples++;
    }
    if (rc < 0) goto out;
    gp_cl_table_count(r, "pod_gpu_duty_cycle", rows);
    gp_csv_close(c);
    c = NULL;
    if (mem[0] && stat(mem, &st) == 0) {
        if (open_hdr(&c, mem, err, errlen) != 0) goto out;
        int mv = find(c, "value", err, errlen), mi = find(c, "container_ip", err, errlen);
        if (mv < 0 || mi < 0) {
            rc = -1;
            goto out;
        }
        rows = 0;
        while ((rc = gp_csv_next(c, err, errlen)) == 1) {
            rows++;
            double v;
            int k = gp_csv_num(c, mv, &v, err, errlen);
            if (k < 0) {
                rc = -1;
                goto out;
            }
            uint32_t ci2;
            if (k == 1 &&
                gp_cl_map_get(&cmap, gp_cl_hash(gp_csv_field(c, mi), gp_csv_field_len(c, mi)),
                              &ci2)) {
                conts[ci2].n_mem++;
                conts[ci2].mem_sum += v;
            }
        }
        if (rc < 0) goto out;
        gp_cl_table_count(r, "pod_gpu_memory_used_bytes", rows);
    }
    /* sample period: span over distinct stamps */
    double tmin = INFINITY, tmax = -INFINITY;
    for (size_t i = 0; i < ns; i++) {
        if (stamps[i].t < tmin) tmin = stamps[i].t;
        if (stamps[i].t > tmax) tmax = stamps[i].t;
    }
    double dt = ns > 1 ? (tmax - tmin) / (double)(ns - 1) : 60;
    r->has_ts = 1;
    r->ts_interval_s = dt;
    r->ts_units = (int64_t)nc;
    for (size_t i = 0; i < ns; i++) {
        const stamp_t *s = &stamps[i];
        r->ts_online_gpu_s += s->online * dt;
        r->ts_busy_gpu_s += s->busy * dt;
        r->ts_idle_gpu_s += (double)s->idle * dt;
        r->ts_low_gpu_s += (double)s->low * dt;
        gp_cl_series_add(&r->series, 0, s->t, s->t + dt, s->online);
        gp_cl_series_add(&r->series, 1, s->t, s->t + dt, s->busy);
        gp_cl_series_add(&r->series, 2, s->t, s->t + dt, s->online);
    }
    for (int b = 0; b < GP_CL_UTIL_BINS; b++) {
        r->util_n[b] += hist[b];
        r->util_gpu_s[b] += (double)hist[b] * dt;
    }
    if (ns) {
        r->t_min = tmin;
        r->t_max = tmax + dt;
    }
    double mem_idle = 0;
    for (size_t i = 0; i < nc; i++)
        if (conts[i].duty_max <= 0 && conts[i].n_mem > 0) {
            r->n_idle_units_with_mem++;
            mem_idle += conts[i].mem_sum / (double)conts[i].n_mem;
        }
    if (r->n_idle_units_with_mem)
        r->mem_idle_bytes_mean = mem_idle / (double)r->n_idle_units_with_mem;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "out of memory reading %s", duty);
    rc = -1;
out:
    gp_csv_close(c);
    gp_cl_map_free(&smap);
    gp_cl_map_free(&cmap);
    free(stamps);
    free(conts);
    return rc < 0 ? -1 : 0;
}
