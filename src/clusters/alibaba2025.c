/* alibaba2025.c: reader for Alibaba's cluster-trace-gpu-v2025 (GPU-disaggregated DLRM
 * serving, NSDI'25 "GPU-Disaggregated Serving for Deep Learning Recommendation Models at
 * Scale"), one table disaggregated_DLRM_trace.csv.
 *
 * Columns, from the trace's README (github.com/alibaba/clusterdata,
 * cluster-trace-gpu-v2025/README.md): instance_sn, role (CN = CPU node, HN = heterogeneous
 * GPU node), app_name, cpu_request, cpu_limit, gpu_request, gpu_limit, rdma_request,
 * rdma_limit, memory_request, memory_limit, disk_request, disk_limit, max_instance_per_node,
 * creation_time, scheduled_time, deletion_time. Times are seconds from the trace start;
 * NaN (or empty) means "before the trace start" for creation and scheduling and "after the
 * trace end" for deletion.
 *
 * What the report takes from it:
 * - run interval: [scheduled_time, deletion_time), with a missing start clamped to the trace
 *   start (0) and a missing end to the trace end (the latest time in the table, found by a
 *   first pass: the file is read twice rather than kept in memory).
 * - an instance created in the trace but never scheduled waited and never ran.
 * - queue wait: scheduled - creation, when both are inside the trace.
 * - GPU-hours: gpu_request x run time; requested = allocated (the trace has no placement
 *   failure); the trace measures no GPU usage, so used is unknown, never 0.
 * - instances that ask for no GPU (the CN role) are reported apart, as for openb.
 * - inference/training: the README states every instance is a latency-sensitive inference
 *   instance, so the workload dimension says "inference" for all of them; an optional
 *   column named workload, task_type or job_type (not in the published table) overrides it.
 * Dimensions: gpu_type = role, group = app_name, workload = inference/training. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

enum { C_SN, C_ROLE, C_APP, C_GPU, C_CREATE, C_SCHED, C_DELETE, C__N };
static const char *const need[C__N] = {"instance_sn",  "role",          "app_name",
                                       "gpu_request",  "creation_time", "scheduled_time",
                                       "deletion_time"};

static int open_trace(gp_csv **c, const char *p, int *ci, int *cw, char *err, size_t errlen) {
    if (gp_csv_open(c, p, err, errlen) != 0) return -1;
    int rc = gp_csv_next(*c, err, errlen);
    if (rc != 1) {
        if (rc == 0) snprintf(err, errlen, "%s: empty file", p);
        gp_csv_close(*c);
        return -1;
    }
    gp_csv_take_header(*c);
    for (int i = 0; i < C__N; i++)
        if ((ci[i] = gp_csv_find(*c, need[i])) < 0) {
            snprintf(err, errlen,
                     "%s:1: no column %s in the header (cluster-trace-gpu-v2025 "
                     "disaggregated_DLRM_trace.csv)",
                     p, need[i]);
            gp_csv_close(*c);
            return -1;
        }
    *cw = gp_csv_find(*c, "workload");
    if (*cw < 0) *cw = gp_csv_find(*c, "task_type");
    if (*cw < 0) *cw = gp_csv_find(*c, "job_type");
    return 0;
}

/* A time field: 1 and *v when inside the trace, 0 when NaN/empty, -1 malformed. */
static int time_field(gp_csv *c, int i, double *v, char *err, size_t errlen) {
    int k = gp_csv_num(c, i, v, err, errlen);
    if (k == 1 && !isfinite(*v)) k = 0;
    return k;
}

static const char *role_name(const char *role) {
    if (!strcmp(role, "HN")) return "HN (GPU node)";
    if (!strcmp(role, "CN")) return "CN (CPU node)";
    return role[0] ? role : "(unknown)";
}

int gp_cl_read_alibaba2025(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    char p[1024];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(p, sizeof p, "%s/disaggregated_DLRM_trace.csv", path);
    else
        snprintf(p, sizeof p, "%s", path);
    snprintf(r->unit_name, sizeof r->unit_name, "instances");
    gp_csv *c;
    int ci[C__N], cw, rc;
    double v;

    /* pass 1: the trace end (latest time written anywhere) */
    if (open_trace(&c, p, ci, &cw, err, errlen) != 0) return -1;
    double t_end = 0;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        for (int k = C_CREATE; k <= C_DELETE; k++) {
            int t = time_field(c, ci[k], &v, err, errlen);
            if (t < 0) {
                gp_csv_close(c);
                return -1;
            }
            if (t == 1 && v > t_end) t_end = v;
        }
    }
    gp_csv_close(c);
    if (rc < 0) return -1;

    /* pass 2: the instances */
    if (open_trace(&c, p, ci, &cw, err, errlen) != 0) return -1;
    int64_t rows = 0;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        rows++;
        double gpus, created, sched, deleted;
        int kg = gp_csv_num(c, ci[C_GPU], &gpus, err, errlen);
        int kc = time_field(c, ci[C_CREATE], &created, err, errlen);
        int ks = time_field(c, ci[C_SCHED], &sched, err, errlen);
        int kd = time_field(c, ci[C_DELETE], &deleted, err, errlen);
        if (kg < 0 || kc < 0 || ks < 0 || kd < 0) {
            rc = -1;
            break;
        }
        if (kg == 0 || !(gpus >= 0)) gpus = 0;
        /* never scheduled: created inside the trace, no scheduling time */
        int never = ks == 0 && kc == 1;
        if (gpus <= 0) {
            if (never)
                r->n_cpu_only_pending++;
            else {
                r->n_cpu_only++;
                if (kc == 1 && ks == 1) gp_cl_wait_add(&r->wait_cpu_only, fmax(0, sched - created));
            }
            continue;
        }
        const char *role = role_name(gp_csv_field(c, ci[C_ROLE]));
        if (never) {
            gp_cl_add_never_ran(r, gpus);
            gp_cl_series_add(&r->series, 3, created, kd == 1 ? deleted : t_end, gpus);
            continue;
        }
        gp_cl_unit u = {0};
        u.dim[GP_CL_DIM_TYPE] = role;
        u.dim[GP_CL_DIM_GROUP] = gp_csv_field(c, ci[C_APP]);
        const char *w = cw >= 0 ? gp_csv_field(c, cw) : "";
        u.dim[GP_CL_DIM_WORKLOAD] = w[0] ? w : "inference";
        u.request_gpus = u.alloc_gpus = gpus;
        u.used_gpus = -1; /* not measured by this trace */
        u.start_s = ks == 1 ? sched : 0;
        u.end_s = kd == 1 ? deleted : t_end;
        if (!(u.end_s >= u.start_s)) {
            r->n_skipped++;
            continue;
        }
        if (gp_cl_add_unit(r, &u) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        if (kc == 1 && ks == 1 && gp_cl_add_wait(r, gpus, role, created, sched) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
    }
    gp_csv_close(c);
    if (rc < 0) return -1;
    gp_cl_table_count(r, "disaggregated_DLRM_trace", rows);
    return 0;
}
