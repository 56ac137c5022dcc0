/* pai2020.c: reader for the Alibaba PAI 2020 GPU trace (cluster-trace-gpu-v2020).
 *
 * Tables are headerless CSV; column names come from NAME.header beside the data when it is
 * there, else from the published names compiled in. Data files are NAME.csv, NAME.csv.gz or
 * NAME.tar.gz (as published: read in place). Tables are streamed in join order so only keys
 * are kept: group_tag (inst_id -> user, group, workload), job (job_name -> submit time,
 * user), task (job/task -> plan_gpu, gpu_type; job -> first task start), sensor
 * (worker_name -> gpu_wrk_util), then instance rows become units as they stream by. Keys are
 * 64-bit hashes; a collision between two of a few million keys has odds near 1e-7.
 *
 * Speed: at millions of rows the join tables outgrow the CPU caches and every lookup is a
 * cache miss. Rows are therefore taken in batches of BATCH: the fields a row needs are
 * parsed and hashed while it is current, the map slots are prefetched, and the batch is then
 * joined in a few passes (map slots, then task, job and tag records), each pass prefetching
 * what the next one reads, so the misses overlap instead of queueing. Results are the same
 * as one row at a time: rows are applied in file order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

static const struct {
    const char *table, *names;
} builtin[] = {
    {"pai_job_table", "job_name,inst_id,user,status,start_time,end_time"},
    {"pai_task_table",
     "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type"},
    {"pai_instance_table",
     "job_name,task_name,inst_name,worker_name,inst_id,status,start_time,end_time,machine"},
    {"pai_sensor_table", "job_name,task_name,worker_name,inst_id,machine,gpu_name,cpu_usage,gpu_"
                         "wrk_util,avg_mem,max_mem,"
                         "avg_gpu_wrk_mem,max_gpu_wrk_mem,read,write,read_count,write_count"},
    {"pai_group_tag_table", "inst_id,user,gpu_type_spec,group,workload"},
    {"pai_machine_spec", "machine,gpu_type,cap_cpu,cap_mem,cap_gpu"},
};

typedef struct {
    double submit_s, first_start_s, gpus;
    int32_t user, tag, type;
} job_t;
typedef struct {
    int32_t user, group, workload;
} tag_t;
typedef struct {
    float plan_gpu;
    int32_t type, job;
} task_t;

typedef struct {
    gp_cl_strtab names; /* users, groups, workloads, types */
    gp_cl_map tag_map, job_map, task_map, sensor_map;
    tag_t *tags;
    size_t n_tags, cap_tags;
    job_t *jobs;
    size_t n_jobs, cap_jobs;
    task_t *tasks;
    size_t n_tasks, cap_tasks;
} pai_ctx; /* sensor_map's value is the float bits of gpu_wrk_util: one miss per lookup */

#define BATCH 128

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 4096;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * size);
    if (!n) return -1;
    *p = n;
    *cap = c;
    return 0;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Opens DIR/TABLE.{csv,csv.gz,tar.gz}; 1 opened, 0 absent, -1 error. */
static int open_table(gp_csv **c, const char *dir, int t, char *err, size_t errlen) {
    const char *exts[] = {".csv", ".csv.gz", ".tar.gz"};
    char p[1024];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s%s", dir, builtin[t].table, exts[i]);
        if (!exists(p)) continue;
        if (gp_csv_open(c, p, err, errlen) != 0) return -1;
        char hp[1024], line[1024] = "";
        snprintf(hp, sizeof hp, "%s/%s.header", dir, builtin[t].table);
        FILE *hf = fopen(hp, "r");
        if (hf) {
            if (!fgets(line, sizeof line, hf)) line[0] = 0;
            fclose(hf);
        }
        gp_csv_set_names(*c, line[0] ? line : builtin[t].names);
        return 1;
    }
    return 0;
}

static int col(gp_csv *c, const char *name, char *err, size_t errlen) {
    int i = gp_csv_find(c, name);
    if (i < 0) snprintf(err, errlen, "%s: no column %s in its header", gp_csv_path(c), name);
    return i;
}

/* After the first rows of a plain file: estimate its row count from the bytes they took and
 * size the join table (and its records) once, instead of doubling and rehashing as it fills
 * (the rehash and the kernel's zeroing of each new table showed in profiles). */
static int size_tables(gp_csv *c, int64_t rows, gp_cl_map *m, void **arr, size_t *cap,
                       size_t size) {
    int64_t total = gp_csv_size_hint(c);
    uint64_t used = gp_csv_offset(c);
    if (total <= 0 || used == 0 || rows <= 0) return 0;
    size_t est = (size_t)((double)total / (double)used * (double)rows);
    if (gp_cl_map_reserve(m, est) != 0) return -1;
    return arr ? grow(arr, cap, est, size) : 0;
}

static int32_t intern_field(pai_ctx *x, gp_csv *c, int i) {
    return gp_cl_intern(&x->names, gp_csv_field(c, i), gp_csv_field_len(c, i));
}

static uint64_t fhash(gp_csv *c, int i) {
    return gp_cl_hash(gp_csv_field(c, i), gp_csv_field_len(c, i));
}

static int num(gp_csv *c, int i, double *v, char *err, size_t errlen) {
    int r = gp_csv_num(c, i, v, err, errlen);
    if (r == 0) *v = -1;
    return r;
}

static int read_tags(gp_cluster_report *r, pai_ctx *x, const char *dir, char *err, size_t errlen) {
    gp_csv *c;
    int o = open_table(&c, dir, 4, err, errlen);
    if (o <= 0) return o;
    int ci = col(c, "inst_id", err, errlen), cu = col(c, "user", err, errlen),
        cg = col(c, "group", err, errlen), cw = col(c, "workload", err, errlen);
    int rc = -1;
    int64_t n = 0;
    if (ci < 0 || cu < 0 || cg < 0 || cw < 0) goto out;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        if (n == 0 && !strcmp(gp_csv_field(c, ci), "inst_id")) continue;
        n++;
        if (n == BATCH &&
            size_tables(c, n, &x->tag_map, (void **)&x->tags, &x->cap_tags, sizeof *x->tags) != 0)
            goto oom;
        if (grow((void **)&x->tags, &x->cap_tags, x->n_tags + 1, sizeof *x->tags) != 0) goto oom;
        tag_t *t = &x->tags[x->n_tags];
        t->user = intern_field(x, c, cu);
        t->group = intern_field(x, c, cg);
        t->workload = intern_field(x, c, cw);
        if (gp_cl_map_put(&x->tag_map, fhash(c, ci), (uint32_t)x->n_tags) != 0) goto oom;
        x->n_tags++;
    }
    if (rc == 0) gp_cl_table_count(r, "pai_group_tag_table", n);
out:
    gp_csv_close(c);
    return rc < 0 ? -1 : 1;
oom:
    snprintf(err, errlen, "out of memory reading %s", gp_csv_path(c));
    gp_csv_close(c);
    return -1;
}

typedef struct {
    uint64_t job_h, inst_h;
    double submit_s;
    int32_t user;
} job_row;

static int flush_jobs(pai_ctx *x, const job_row *b, int nb) {
    for (int i = 0; i < nb; i++) {
        if (grow((void **)&x->jobs, &x->cap_jobs, x->n_jobs + 1, sizeof *x->jobs) != 0) return -1;
        job_t *j = &x->jobs[x->n_jobs];
        j->submit_s = b[i].submit_s;
        j->first_start_s = -1;
        j->gpus = 0;
        j->type = -1;
        j->user = b[i].user;
        uint32_t tag;
        j->tag = gp_cl_map_get(&x->tag_map, b[i].inst_h, &tag) ? (int32_t)tag : -1;
        if (gp_cl_map_put(&x->job_map, b[i].job_h, (uint32_t)x->n_jobs) != 0) return -1;
        x->n_jobs++;
    }
    return 0;
}

static int read_jobs(gp_cluster_report *r, pai_ctx *x, const char *dir, char *err, size_t errlen) {
    gp_csv *c;
    int o = open_table(&c, dir, 0, err, errlen);
    if (o <= 0) return o;
    int cj = col(c, "job_name", err, errlen), ci = col(c, "inst_id", err, errlen),
        cu = col(c, "user", err, errlen), cs = col(c, "start_time", err, errlen);
    int rc = -1, nb = 0;
    int64_t n = 0;
    job_row b[BATCH];
    if (cj < 0 || ci < 0 || cu < 0 || cs < 0) goto out;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        if (n == 0 && !strcmp(gp_csv_field(c, cj), "job_name")) continue;
        n++;
        job_row *jr = &b[nb];
        if (num(c, cs, &jr->submit_s, err, errlen) < 0) {
            rc = -1;
            goto out;
        }
        jr->user = intern_field(x, c, cu);
        jr->inst_h = fhash(c, ci);
        jr->job_h = fhash(c, cj);
        gp_cl_map_prefetch(&x->tag_map, jr->inst_h);
        gp_cl_map_prefetch(&x->job_map, jr->job_h);
        if (n == BATCH &&
            size_tables(c, n, &x->job_map, (void **)&x->jobs, &x->cap_jobs, sizeof *x->jobs) != 0)
            goto oom;
        if (++nb == BATCH) {
            if (flush_jobs(x, b, nb) != 0) goto oom;
            nb = 0;
        }
    }
    if (rc == 0 && flush_jobs(x, b, nb) != 0) goto oom;
    if (rc == 0) gp_cl_table_count(r, "pai_job_table", n);
    r->n_jobs = (int64_t)x->n_jobs;
out:
    gp_csv_close(c);
    return rc < 0 ? -1 : 1;
oom:
    snprintf(err, errlen, "out of memory reading %s", gp_csv_path(c));
    gp_csv_close(c);
    return -1;
}

static uint64_t task_key(gp_csv *c, int cj, int ct) {
    return gp_cl_hash(gp_csv_field(c, cj), gp_csv_field_len(c, cj)) * 31 ^
           gp_cl_hash(gp_csv_field(c, ct), gp_csv_field_len(c, ct));
}

typedef struct {
    uint64_t job_h, task_h;
    double inst, start, plan;
    int32_t type, job;
} task_row;

static int flush_tasks(pai_ctx *x, task_row *b, int nb) {
    for (int i = 0; i < nb; i++) {
        uint32_t jid;
        b[i].job = gp_cl_map_get(&x->job_map, b[i].job_h, &jid) ? (int32_t)jid : -1;
        if (b[i].job >= 0) __builtin_prefetch(&x->jobs[b[i].job], 1);
    }
    for (int i = 0; i < nb; i++) {
        const task_row *tr = &b[i];
        if (grow((void **)&x->tasks, &x->cap_tasks, x->n_tasks + 1, sizeof *x->tasks) != 0)
            return -1;
        task_t *t = &x->tasks[x->n_tasks];
        t->plan_gpu = tr->plan > 0 ? (float)tr->plan : 0;
        t->type = tr->type;
        t->job = tr->job;
        if (t->job >= 0) {
            job_t *j = &x->jobs[t->job];
            if (tr->start >= 0 && (j->first_start_s < 0 || tr->start < j->first_start_s))
                j->first_start_s = tr->start;
            if (tr->plan > 0) {
                j->gpus += tr->plan / 100.0 * (tr->inst > 0 ? tr->inst : 1);
                j->type = t->type;
            }
        }
        if (gp_cl_map_put(&x->task_map, tr->task_h, (uint32_t)x->n_tasks) != 0) return -1;
        x->n_tasks++;
    }
    return 0;
}

static int read_tasks(gp_cluster_report *r, pai_ctx *x, const char *dir, char *err, size_t errlen) {
    gp_csv *c;
    int o = open_table(&c, dir, 1, err, errlen);
    if (o <= 0) return o;
    int cj = col(c, "job_name", err, errlen), ct = col(c, "task_name", err, errlen),
        cn = col(c, "inst_num", err, errlen), cs = col(c, "start_time", err, errlen),
        cp = col(c, "plan_gpu", err, errlen), cy = col(c, "gpu_type", err, errlen);
    int rc = -1, nb = 0;
    int64_t n = 0;
    task_row b[BATCH];
    if (cj < 0 || ct < 0 || cn < 0 || cs < 0 || cp < 0 || cy < 0) goto out;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        if (n == 0 && !strcmp(gp_csv_field(c, cj), "job_name")) continue;
        n++;
        task_row *tr = &b[nb];
        if (num(c, cn, &tr->inst, err, errlen) < 0 || num(c, cs, &tr->start, err, errlen) < 0 ||
            num(c, cp, &tr->plan, err, errlen) < 0) {
            rc = -1;
            goto out;
        }
        tr->type = intern_field(x, c, cy);
        tr->job_h = fhash(c, cj);
        tr->task_h = task_key(c, cj, ct);
        gp_cl_map_prefetch(&x->job_map, tr->job_h);
        gp_cl_map_prefetch(&x->task_map, tr->task_h);
        if (n == BATCH && size_tables(c, n, &x->task_map, (void **)&x->tasks, &x->cap_tasks,
                                      sizeof *x->tasks) != 0)
            goto oom;
        if (++nb == BATCH) {
            if (flush_tasks(x, b, nb) != 0) goto oom;
            nb = 0;
        }
    }
    if (rc == 0 && flush_tasks(x, b, nb) != 0) goto oom;
    if (rc == 0) gp_cl_table_count(r, "pai_task_table", n);
out:
    gp_csv_close(c);
    return rc < 0 ? -1 : 1;
oom:
    snprintf(err, errlen, "out of memory reading %s", gp_csv_path(c));
    gp_csv_close(c);
    return -1;
}

typedef struct {
    uint64_t key;
    float util;
} sensor_row;

static int flush_sensors(pai_ctx *x, const sensor_row *b, int nb) {
    for (int i = 0; i < nb; i++) {
        uint32_t bits;
        memcpy(&bits, &b[i].util, sizeof bits);
        if (gp_cl_map_put(&x->sensor_map, b[i].key, bits) != 0) return -1;
    }
    return 0;
}

static int read_sensors(gp_cluster_report *r, pai_ctx *x, const char *dir, char *err,
                        size_t errlen) {
    gp_csv *c;
    int o = open_table(&c, dir, 3, err, errlen);
    if (o <= 0) return o;
    int cw = col(c, "worker_name", err, errlen), cu = col(c, "gpu_wrk_util", err, errlen);
    int rc = -1, nb = 0;
    int64_t n = 0;
    sensor_row b[BATCH];
    if (cw < 0 || cu < 0) goto out;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        if (n == 0 && !strcmp(gp_csv_field(c, cw), "worker_name")) continue;
        n++;
        double u;
        int k = gp_csv_num(c, cu, &u, err, errlen);
        if (k < 0) {
            rc = -1;
            goto out;
        }
        if (k == 0) continue;
        b[nb].util = (float)(u > 0 ? u : 0);
        b[nb].key = fhash(c, cw);
        gp_cl_map_prefetch(&x->sensor_map, b[nb].key);
        if (n == BATCH && size_tables(c, n, &x->sensor_map, NULL, NULL, 0) != 0) goto oom;
        if (++nb == BATCH) {
            if (flush_sensors(x, b, nb) != 0) goto oom;
            nb = 0;
        }
    }
    if (rc == 0 && flush_sensors(x, b, nb) != 0) goto oom;
    if (rc == 0) gp_cl_table_count(r, "pai_sensor_table", n);
out:
    gp_csv_close(c);
    return rc < 0 ? -1 : 1;
oom:
    snprintf(err, errlen, "out of memory reading %s", gp_csv_path(c));
    gp_csv_close(c);
    return -1;
}

static const char *name_of(pai_ctx *x, int32_t id) {
    return id >= 0 ? x->names.s[id] : "";
}

typedef struct {
    uint64_t task_h, worker_h;
    double start, end;
    int waiting, failed;
    int32_t task;
    float util; /* < 0 unknown */
} inst_row;

static int flush_instances(gp_cluster_report *r, pai_ctx *x, inst_row *b, int nb) {
    for (int i = 0; i < nb; i++) { /* map slots were prefetched when the rows were parsed */
        uint32_t v;
        b[i].task = gp_cl_map_get(&x->task_map, b[i].task_h, &v) ? (int32_t)v : -1;
        if (b[i].task >= 0) __builtin_prefetch(&x->tasks[b[i].task]);
        b[i].util = -1;
        if (gp_cl_map_get(&x->sensor_map, b[i].worker_h, &v)) memcpy(&b[i].util, &v, sizeof v);
    }
    for (int i = 0; i < nb; i++)
        if (b[i].task >= 0 && x->tasks[b[i].task].job >= 0)
            __builtin_prefetch(&x->jobs[x->tasks[b[i].task].job]);
    for (int i = 0; i < nb; i++) {
        const inst_row *ir = &b[i];
        if (ir->task < 0) {
            r->n_skipped++;
            continue;
        }
        const task_t *t = &x->tasks[ir->task];
        const job_t *j = t->job >= 0 ? &x->jobs[t->job] : NULL;
        const tag_t *tg = (j && j->tag >= 0) ? &x->tags[j->tag] : NULL;
        gp_cl_unit u = {0};
        u.dim[GP_CL_DIM_TYPE] = name_of(x, t->type);
        u.dim[GP_CL_DIM_USER] = j ? name_of(x, j->user) : (tg ? name_of(x, tg->user) : "");
        u.dim[GP_CL_DIM_GROUP] = tg ? name_of(x, tg->group) : "";
        u.dim[GP_CL_DIM_WORKLOAD] = tg ? name_of(x, tg->workload) : "";
        u.request_gpus = t->plan_gpu / 100.0;
        u.alloc_gpus = ir->waiting ? 0 : u.request_gpus;
        u.used_gpus = ir->util >= 0 ? ir->util / 100.0 : -1;
        u.stable_dims = 1; /* names from x->names, which outlives the read */
        u.start_s = ir->start;
        u.end_s = ir->end;
        u.failed = ir->failed;
        u.never_ran =
            u.failed && u.alloc_gpus > 0 && (u.used_gpus < 0 || u.used_gpus < 0.01 * u.alloc_gpus);
        if (gp_cl_add_unit(r, &u) != 0) return -1;
    }
    return 0;
}

static int read_instances(gp_cluster_report *r, pai_ctx *x, const char *dir, char *err,
                          size_t errlen) {
    gp_csv *c;
    int o = open_table(&c, dir, 2, err, errlen);
    if (o <= 0) return o;
    int cj = col(c, "job_name", err, errlen), ct = col(c, "task_name", err, errlen),
        cw = col(c, "worker_name", err, errlen), cst = col(c, "status", err, errlen),
        cs = col(c, "start_time", err, errlen), ce = col(c, "end_time", err, errlen);
    int rc = -1, nb = 0;
    int64_t n = 0;
    inst_row b[BATCH];
    if (cj < 0 || ct < 0 || cw < 0 || cst < 0 || cs < 0 || ce < 0) goto out;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        if (n == 0 && !strcmp(gp_csv_field(c, cj), "job_name")) continue;
        n++;
        inst_row *ir = &b[nb];
        if (num(c, cs, &ir->start, err, errlen) < 0 || num(c, ce, &ir->end, err, errlen) < 0) {
            rc = -1;
            goto out;
        }
        const char *status = gp_csv_field(c, cst);
        ir->waiting = !strcmp(status, "Waiting");
        ir->failed = !strcmp(status, "Failed");
        ir->task_h = task_key(c, cj, ct);
        ir->worker_h = fhash(c, cw);
        gp_cl_map_prefetch(&x->task_map, ir->task_h);
        gp_cl_map_prefetch(&x->sensor_map, ir->worker_h);
        if (++nb == BATCH) {
            if (flush_instances(r, x, b, nb) != 0) goto oom;
            nb = 0;
        }
    }
    if (rc == 0 && flush_instances(r, x, b, nb) != 0) goto oom;
    if (rc == 0) gp_cl_table_count(r, "pai_instance_table", n);
out:
    gp_csv_close(c);
    return rc < 0 ? -1 : 1;
oom:
    snprintf(err, errlen, "out of memory reading %s", gp_csv_path(c));
    gp_csv_close(c);
    return -1;
}

static int read_machines(gp_cluster_report *r, const char *dir, char *err, size_t errlen) {
    gp_csv *c;
    int o = open_table(&c, dir, 5, err, errlen);
    if (o <= 0) return o;
    int ct = col(c, "gpu_type", err, errlen), cg = col(c, "cap_gpu", err, errlen);
    int rc = -1;
    int64_t n = 0;
    if (ct < 0 || cg < 0) goto out;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        if (n == 0 && !strcmp(gp_csv_field(c, ct), "gpu_type")) continue;
        n++;
        double g;
        if (num(c, cg, &g, err, errlen) < 0) {
            rc = -1;
            goto out;
        }
        if (g <= 0) continue;
        r->capacity_gpus += g;
        int32_t id =
            gp_cl_intern(&r->cap_model_names, gp_csv_field(c, ct), gp_csv_field_len(c, ct));
        if (id >= 0 && id < 64) r->cap_model_gpus[id] += g;
    }
    if (rc == 0) gp_cl_table_count(r, "pai_machine_spec", n);
out:
    gp_csv_close(c);
    return rc < 0 ? -1 : 1;
}

int gp_cl_read_pai2020(gp_cluster_report *r, const char *dir, char *err, size_t errlen) {
    pai_ctx x;
    memset(&x, 0, sizeof x);
    snprintf(r->unit_name, sizeof r->unit_name, "instances");
    int rc = 0, any = 0, k;
    if ((k = read_machines(r, dir, err, errlen)) < 0) goto fail;
    /* the machine list alone says nothing about work: without a job, task or instance table
     * the report would read "0 instances", as if the cluster had been empty */
    if ((k = read_tags(r, &x, dir, err, errlen)) < 0) goto fail;
    if ((k = read_jobs(r, &x, dir, err, errlen)) < 0) goto fail;
    any |= k;
    if ((k = read_tasks(r, &x, dir, err, errlen)) < 0) goto fail;
    any |= k;
    for (size_t i = 0; i < x.n_jobs; i++) {
        const job_t *j = &x.jobs[i];
        if (j->first_start_s >= 0)
            gp_cl_add_wait(r, j->gpus, j->type >= 0 ? x.names.s[j->type] : "", j->submit_s,
                           j->first_start_s);
        else
            gp_cl_add_never_ran(r, j->gpus);
    }
    if ((k = read_sensors(r, &x, dir, err, errlen)) < 0) goto fail;
    if ((k = read_instances(r, &x, dir, err, errlen)) < 0) goto fail;
    any |= k;
    if (!any) {
        snprintf(err, errlen,
                 "%s: no PAI 2020 work table found (want pai_job_table, pai_task_table or "
                 "pai_instance_table as .csv, .csv.gz or .tar.gz%s)",
                 dir, r->capacity_gpus > 0 ? "; pai_machine_spec alone has no work to report" : "");
        goto fail;
    }
    goto done;
fail:
    rc = -1;
done:
    gp_cl_strtab_free(&x.names);
    gp_cl_map_free(&x.tag_map);
    gp_cl_map_free(&x.job_map);
    gp_cl_map_free(&x.task_map);
    gp_cl_map_free(&x.sensor_map);
    free(x.tags);
    free(x.jobs);
    free(x.tasks);
    return rc;
}
