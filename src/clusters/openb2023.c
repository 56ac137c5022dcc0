/* openb2023.c: reader for Alibaba's 2023 GPU-sharing trace (cluster-trace-gpu-v2023, openb).
 *
 * Pods: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
 * deletion_time,scheduled_time (seconds). A pod asks num_gpu x gpu_milli/1000 GPUs; gpu_milli
 * under 1000 means it shares one GPU with others. Nodes: sn,cpu_milli,memory_mib,gpu,model.
 *
 * Fragmentation: the pod list has no placement, so fractional pods are packed first-fit in
 * scheduling order onto shared GPUs (what a simple bin-packing scheduler does), and the
 * report integrates the free share of partly used GPUs over time: capacity no whole-GPU pod
 * can use. This keeps 24 bytes per GPU pod in memory (the list is sorted by time). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

typedef struct {
    double t;
    int32_t pod; /* >= 0 arrival, ~pod departure */
} ev_t;

/* Sortable bits of a time: the order of the doubles as unsigned integers (-0 as +0). */
static uint64_t ev_key(double t) {
    uint64_t u;
    if (t == 0) t = 0; /* -0.0 and 0.0 are the same time */
    memcpy(&u, &t, sizeof u);
    return u >> 63 ? ~u : u | (1ull << 63);
}

/* Sorts the events by time, departures before arrivals at equal times, and otherwise in
 * array order: exactly what glibc's stable qsort with a comparator on (time, kind) gave, and
 * the packing below depends on that order. A stable partition by kind, then a stable LSD
 * radix sort on the time's 64 bits, 11 bits a pass, skipping passes in which every key has
 * the same digit (the low mantissa bits of whole seconds). qsort's comparator calls were 18%
 * of `cluster openb2023` on the 20x trace (bench/RESULTS.md, "cluster readers"). */
static int ev_sort(ev_t *ev, size_t m) {
    enum { BITS = 11, PASSES = 6, SIZE = 1 << BITS };
    ev_t *tmp = malloc(m * sizeof *tmp);
    uint32_t(*count)[SIZE] = calloc(PASSES, sizeof *count);
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return -1;
    }
    size_t j = 0;
    for (size_t i = 0; i < m; i++)
        if (ev[i].pod < 0) tmp[j++] = ev[i];
    for (size_t i = 0; i < m; i++)
        if (ev[i].pod >= 0) tmp[j++] = ev[i];
    for (size_t i = 0; i < m; i++) {
        uint64_t k = ev_key(tmp[i].t);
        for (int p = 0; p < PASSES; p++)
            count[p][(k >> (p * BITS)) & (SIZE - 1)]++;
    }
    ev_t *src = tmp, *dst = ev;
    for (int p = 0; p < PASSES; p++) {
        uint32_t *c = count[p];
        if (c[(ev_key(src[0].t) >> (p * BITS)) & (SIZE - 1)] == m) continue; /* one digit */
        uint32_t sum = 0;
        for (int d = 0; d < SIZE; d++) {
            uint32_t x = c[d];
            c[d] = sum;
            sum += x;
        }
        for (size_t i = 0; i < m; i++)
            dst[c[(ev_key(src[i].t) >> (p * BITS)) & (SIZE - 1)]++] = src[i];
        ev_t *x = src;
        src = dst;
        dst = x;
    }
    if (src != ev) memcpy(ev, src, m * sizeof *ev);
    free(tmp);
    free(count);
    return 0;
}

static int need(gp_csv *c, const char *n, char *err, size_t errlen) {
    int i = gp_csv_find(c, n);
    if (i < 0) snprintf(err, errlen, "%s:1: no column %s in the header", gp_csv_path(c), n);
    return i;
}

static int read_nodes(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    gp_csv *c;
    if (gp_csv_open(&c, path, err, errlen) != 0) return -1;
    int rc = gp_csv_next(c, err, errlen);
    if (rc != 1) {
        gp_csv_close(c);
        if (rc == 0) snprintf(err, errlen, "%s: empty file", path);
        return -1;
    }
    gp_csv_take_header(c);
    int cg = need(c, "gpu", err, errlen), cm = need(c, "model", err, errlen);
    int64_t n = 0;
    if (cg < 0 || cm < 0)
        rc = -1;
    else
        while ((rc = gp_csv_next(c, err, errlen)) == 1) {
            n++;
            double g;
            if (gp_csv_num(c, cg, &g, err, errlen) < 0) {
                rc = -1;
                break;
            }
            if (g > 0) {
                r->capacity_gpus += g;
                int32_t id =
                    gp_cl_intern(&r->cap_model_names, gp_csv_field(c, cm), gp_csv_field_len(c, cm));
                if (id >= 0 && id < 64) r->cap_model_gpus[id] += g;
            }
        }
    if (rc == 0) gp_cl_table_count(r, "openb_node_list", n);
    gp_csv_close(c);
    return rc;
}

int gp_cl_read_openb2023(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    char pods[1024], nodes[1024];
    struct stat st;
    int is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    snprintf(pods, sizeof pods, is_dir ? "%s/openb_pod_list_default.csv" : "%s", path);
    const char *slash = strrchr(path, '/');
    if (is_dir)
        snprintf(nodes, sizeof nodes, "%s/openb_node_list_gpu_node.csv", path);
    else
        snprintf(nodes, sizeof nodes, "%.*s/openb_node_list_gpu_node.csv",
                 slash ? (int)(slash - path) : 1, slash ? path : ".");
    snprintf(r->unit_name, sizeof r->unit_name, "pods");
    r->has_sharing = 1;
    if (stat(nodes, &st) == 0 && read_nodes(r, nodes, err, errlen) != 0) return -1;

    gp_csv *c;
    if (gp_csv_open(&c, pods, err, errlen) != 0) return -1;
    int rc = gp_csv_next(c, err, errlen);
    if (rc != 1) {
        if (rc == 0) snprintf(err, errlen, "%s: empty file", pods);
        gp_csv_close(c);
        return -1;
    }
    gp_csv_take_header(c);
    int cn = need(c, "num_gpu", err, errlen), cm = need(c, "gpu_milli", err, errlen),
        cs = need(c, "gpu_spec", err, errlen), cq = need(c, "qos", err, errlen),
        cp = need(c, "pod_phase", err, errlen), cc = need(c, "creation_time", err, errlen),
        cd = need(c, "deletion_time", err, errlen), cx = need(c, "scheduled_time", err, errlen);
    if (cn < 0 || cm < 0 || cs < 0 || cq < 0 || cp < 0 || cc < 0 || cd < 0 || cx < 0) {
        gp_csv_close(c);
        return -1;
    }
    double *milli = NULL;
    ev_t *ev = NULL;
    size_t n_pods = 0, cap = 0;
    int64_t rows = 0;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        rows++;
        double ng, gm, created, deleted, sched;
        if (gp_csv_num(c, cn, &ng, err, errlen) < 0 || gp_csv_num(c, cm, &gm, err, errlen) < 0 ||
            gp_csv_num(c, cc, &created, err, errlen) < 0 ||
            gp_csv_num(c, cd, &deleted, err, errlen) < 0 ||
            gp_csv_num(c, cx, &sched, err, errlen) < 0) {
            rc = -1;
            break;
        }
        const char *spec = gp_csv_field(c, cs);
        const char *phase = gp_csv_field(c, cp);
        double gpus = ng > 0 ? (ng == 1 && gm > 0 && gm < 1000 ? gm / 1000.0 : ng) : 0;
        int scheduled = strcmp(phase, "Pending") != 0;
        if (gpus <= 0) { /* CPU-only pod: apart from GPU queue wait and GPU-hours */
            if (!scheduled)
                r->n_cpu_only_pending++;
            else {
                r->n_cpu_only++;
                if (isfinite(created) && isfinite(sched) && sched >= created)
                    gp_cl_wait_add(&r->wait_cpu_only, sched - created);
            }
            continue;
        }
        if (!scheduled) {
            gp_cl_add_never_ran(r, gpus); /* it waited from creation until deleted */
            if (gpus > 0) gp_cl_series_add(&r->series, 3, created, deleted, gpus);
            continue;
        }
        gp_cl_unit u = {0};
        u.dim[GP_CL_DIM_TYPE] = spec[0] ? spec : "(any)";
        u.dim[GP_CL_DIM_WORKLOAD] = gp_csv_field(c, cq);
        u.request_gpus = gpus;
        u.alloc_gpus = gpus;
        u.used_gpus = -1;
        u.start_s = sched;
        u.end_s = deleted;
        u.failed = !strcmp(phase, "Failed");
        if (gp_cl_add_unit(r, &u) != 0) {
            rc = -1;
            snprintf(err, errlen, "out of memory");
            break;
        }
        gp_cl_add_wait(r, gpus, spec[0] ? spec : "(any)", created, sched);
        if (gpus <= 0 || !(deleted > sched)) continue;
        double dur = deleted - sched;
        r->n_gpu_units++;
        if (gpus < 1) {
            r->n_shared_units++;
            r->shared_gpu_s += gpus * dur;
        } else
            r->whole_gpu_s += gpus * dur;
        if (n_pods + 1 > cap) {
            cap = cap ? cap * 2 : 1024;
            double *nm = realloc(milli, cap * sizeof *nm);
            ev_t *ne = nm ? realloc(ev, 2 * cap * sizeof *ne) : NULL;
            if (nm) milli = nm;
            if (!nm || !ne) {
                rc = -1;
                snprintf(err, errlen, "out of memory");
                break;
            }
            ev = ne;
        }
        milli[n_pods] = gpus < 1 ? gm : -gpus; /* < 0: whole GPUs */
        ev[2 * n_pods] = (ev_t){sched, (int32_t)n_pods};
        ev[2 * n_pods + 1] = (ev_t){deleted, ~(int32_t)n_pods};
        n_pods++;
    }
    gp_csv_close(c);
    if (rc == 0) gp_cl_table_count(r, "openb_pod_list", rows);
    if (rc == 0 && n_pods) {
        if (ev_sort(ev, 2 * n_pods) != 0) rc = -1;
        /* first-fit packing of fractional pods; slot_of[pod] remembers where each went */
        int32_t *slot_of = malloc(n_pods * sizeof *slot_of);
        double *slot = NULL;
        size_t n_slots = 0, cap_slots = 0;
        double whole = 0, free_in_partial = 0, partial = 0, last_t = ev[0].t, alloc = 0;
        if (!slot_of && rc == 0) rc = -1;
        for (size_t i = 0; rc == 0 && i < 2 * n_pods; i++) {
            double dt = ev[i].t - last_t;
            if (dt > 0) r->stranded_gpu_s += free_in_partial / 1000.0 * dt;
            last_t = ev[i].t;
            int32_t p = ev[i].pod >= 0 ? ev[i].pod : ~ev[i].pod;
            double m = milli[p];
            if (ev[i].pod >= 0) {
                if (m < 0) {
                    whole += -m;
                    alloc += -m;
                } else {
                    size_t s = 0;
                    while (s < n_slots && slot[s] + m > 1000)
                        s++;
                    if (s == n_slots) {
                        if (n_slots == cap_slots) {
                            cap_slots = cap_slots ? cap_slots * 2 : 256;
                            double *ns = realloc(slot, cap_slots * sizeof *ns);
                            if (!ns) {
                                rc = -1;
                                break;
                            }
                            slot = ns;
                        }
                        slot[n_slots++] = 0;
                    }
                    if (slot[s] == 0) partial++, free_in_partial += 1000;
                    slot[s] += m;
                    free_in_partial -= m;
                    slot_of[p] = (int32_t)s;
                    alloc += m / 1000.0;
                }
            } else {
                if (m < 0) {
                    whole -= -m;
                    alloc -= -m;
                } else {
                    size_t s = (size_t)slot_of[p];
                    slot[s] -= m;
                    free_in_partial += m;
                    alloc -= m / 1000.0;
                    if (slot[s] <= 1e-9) {
                        slot[s] = 0;
                        partial--;
                        free_in_partial -= 1000;
                    }
                }
            }
            if (alloc > r->peak_alloc_gpus) r->peak_alloc_gpus = alloc;
            if (whole + partial > r->peak_gpus_needed) r->peak_gpus_needed = whole + partial;
        }
        free(slot);
        free(slot_of);
        if (rc != 0) snprintf(err, errlen, "out of memory");
    }
    free(milli);
    free(ev);
    return rc;
}
