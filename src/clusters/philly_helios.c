/* philly_helios.c: readers for Microsoft Philly (ATC'19) and SenseTime Helios (SC'21) traces,
 * and the format dispatcher.
 *
 * Philly: cluster_job_log is one JSON array of jobs (status, vc, jobid, attempts[{start_time,
 * end_time, detail[{ip, gpus[]}]}], submitted_time, user); it is parsed with yajl's event API
 * in 64 KiB chunks, keeping one job at a time. cluster_gpu_util is CSV (time, machineId,
 * gpu0_util..gpu7_util; "NA" = GPU offline), one row per machine-minute.
 * Helios: cluster_log.csv with a header (job_id,user,vc,gpu_num,cpu_num,node_num,state,
 * submit_time,start_time,end_time,duration,queue). Times are "YYYY-MM-DD HH:MM:SS", read as UTC
 * (Philly's util file carries PST/PDT, applied). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <yajl/yajl_parse.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

static double parse_time(const char *s, size_t n) {
    int Y, M, D, h, m, sec;
    if (n < 19 || sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d", &Y, &M, &D, &h, &m, &sec) != 6) return -1;
    struct tm tm = {0};
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = sec;
    double t = (double)timegm(&tm);
    if (n >= 23 && !strncmp(s + 20, "PDT", 3)) t += 7 * 3600;
    if (n >= 23 && !strncmp(s + 20, "PST", 3)) t += 8 * 3600;
    return t;
}

/* ---- Philly job log ---- */
#define MAX_ATT 64
/* The log nests 7 deep (array, job, attempts, attempt, detail, machine, gpus). yajl keeps a
 * byte per open container and grows that stack 128 bytes at a time, so a file of a million
 * '[' cost it gigabytes of copying (minutes under ASan): deeper input is refused at once. */
#define MAX_NEST 32
typedef struct {
    gp_cluster_report *r;
    int nest; /* open arrays and maps */
    int depth;
    char key[32]; /* last key at the current depth */
    int in_attempts, in_detail, in_gpus;
    char status[16], vc[64], user[64];
    double submitted;
    int n_att;
    double att_start[MAX_ATT], att_end[MAX_ATT];
    int att_gpus[MAX_ATT];
    int64_t jobs;
    int err;
} philly_ctx;

static void job_reset(philly_ctx *x) {
    x->status[0] = x->vc[0] = x->user[0] = 0;
    x->submitted = -1;
    x->n_att = 0;
}

static void job_emit(philly_ctx *x) {
    gp_cluster_report *r = x->r;
    x->jobs++;
    int gpus = x->n_att ? x->att_gpus[x->n_att - 1] : 0;
    if (x->n_att == 0 || x->att_start[0] < 0) {
        gp_cl_add_never_ran(r, gpus);
        return;
    }
    gp_cl_add_wait(r, gpus, "", x->submitted, x->att_start[0]);
    for (int a = 0; a < x->n_att; a++) {
        gp_cl_unit u = {0};
        u.dim[GP_CL_DIM_USER] = x->user;
        u.dim[GP_CL_DIM_GROUP] = x->vc;
        u.request_gpus = u.alloc_gpus = x->att_gpus[a];
        u.used_gpus = -1;
        u.start_s = x->att_start[a];
        u.end_s = x->att_end[a];
        u.failed = a < x->n_att - 1 || strcmp(x->status, "Failed") == 0;
        gp_cl_add_unit(r, &u);
    }
}

static int cb_start_map(void *c) {
    philly_ctx *x = c;
    if (++x->nest > MAX_NEST) return 0;
    x->depth++;
    if (x->depth == 1) job_reset(x);
    if (x->depth == 2 && x->in_attempts && x->n_att < MAX_ATT) {
        x->att_start[x->n_att] = x->att_end[x->n_att] = -1;
        x->att_gpus[x->n_att] = 0;
        x->n_att++;
    }
    return 1;
}
static int cb_end_map(void *c) {
    philly_ctx *x = c;
    if (x->depth == 1) job_emit(x);
    x->depth--;
    x->nest--;
    return 1;
}
static int cb_key(void *c, const unsigned char *k, size_t n) {
    philly_ctx *x = c;
    snprintf(x->key, sizeof x->key, "%.*s", (int)n, (const char *)k);
    return 1;
}
static int cb_start_array(void *c) {
    philly_ctx *x = c;
    if (++x->nest > MAX_NEST) return 0;
    if (x->depth == 1 && !strcmp(x->key, "attempts")) x->in_attempts = 1;
    if (x->depth == 2 && !strcmp(x->key, "detail")) x->in_detail = 1;
    if (x->depth == 3 && !strcmp(x->key, "gpus")) x->in_gpus = 1;
    return 1;
}
static int cb_end_array(void *c) {
    philly_ctx *x = c;
    x->nest--;
    if (x->in_gpus && x->depth == 3)
        x->in_gpus = 0;
    else if (x->in_detail && x->depth == 2)
        x->in_detail = 0;
    else if (x->in_attempts && x->depth == 1)
        x->in_attempts = 0;
    return 1;
}
static int cb_string(void *c, const unsigned char *s, size_t n) {
    philly_ctx *x = c;
    if (x->in_gpus && x->depth == 3) {
        if (x->n_att) x->att_gpus[x->n_att - 1]++;
        return 1;
    }
    if (x->depth == 1) {
        if (!strcmp(x->key, "status"))
            snprintf(x->status, sizeof x->status, "%.*s", (int)n, (const char *)s);
        else if (!strcmp(x->key, "vc"))
            snprintf(x->vc, sizeof x->vc, "%.*s", (int)n, (const char *)s);
        else if (!strcmp(x->key, "user"))
            snprintf(x->user, sizeof x->user, "%.*s", (int)n, (const char *)s);
        else if (!strcmp(x->key, "submitted_time"))
            x->submitted = parse_time((const char *)s, n);
    } else if (x->depth == 2 && x->in_attempts && x->n_att) {
        if (!strcmp(x->key, "start_time"))
            x->att_start[x->n_att - 1] = parse_time((const char *)s, n);
        else if (!strcmp(x->key, "end_time"))
            x->att_end[x->n_att - 1] = parse_time((const char *)s, n);
    }
    return 1;
}
static int cb_null(void *c) {
    (void)c;
    return 1;
}
static int cb_bool(void *c, int b) {
    (void)c;
    (void)b;
    return 1;
}
static int cb_number(void *c, const char *s, size_t n) {
    (void)c;
    (void)s;
    (void)n;
    return 1;
}

static const yajl_callbacks philly_cb = {cb_null,    cb_bool,        NULL,         NULL,
                                         cb_number,  cb_string,      cb_start_map, cb_key,
                                         cb_end_map, cb_start_array, cb_end_array};

static int read_philly_jobs(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s", path);
        return -1;
    }
    philly_ctx x;
    memset(&x, 0, sizeof x);
    x.r = r;
    yajl_handle h = yajl_alloc(&philly_cb, NULL, &x);
    unsigned char buf[65536];
    size_t n;
    int64_t line = 1, col = 1;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 || !feof(f)) {
        if (n == 0) break;
        yajl_status st = yajl_parse(h, buf, n);
        if (st != yajl_status_ok) {
            size_t used = yajl_get_bytes_consumed(h);
            for (size_t i = 0; i < used && i < n; i++) {
                if (buf[i] == '\n')
                    line++, col = 1;
                else
                    col++;
            }
            if (x.nest > MAX_NEST) {
                /* the bytes consumed end with the bracket that opened one level too many */
                snprintf(err, errlen, "%s:%lld:%lld: JSON nested deeper than %d levels", path,
                         (long long)line, (long long)col - 1, MAX_NEST);
            } else {
                unsigned char *msg = yajl_get_error(h, 0, buf, n);
                snprintf(err, errlen, "%s:%lld:%lld: %s", path, (long long)line, (long long)col,
                         (const char *)msg);
                yajl_free_error(h, msg);
            }
            rc = -1;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (buf[i] == '\n')
                line++, col = 1;
            else
                col++;
        }
    }
    if (rc == 0 && yajl_complete_parse(h) != yajl_status_ok) {
        snprintf(err, errlen, "%s:%lld:%lld: JSON ends early", path, (long long)line,
                 (long long)col);
        rc = -1;
    }
    yajl_free(h);
    fclose(f);
    if (rc == 0) {
        gp_cl_table_count(r, "cluster_job_log", x.jobs);
        r->n_jobs += x.jobs;
    }
    return rc;
}

static int read_philly_util(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    gp_csv *c;
    if (gp_csv_open(&c, path, err, errlen) != 0) return -1;
    int rc;
    int64_t rows = 0;
    r->ts_interval_s = 60;
    gp_cl_map gpus = {0};
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        const char *t0 = gp_csv_field(c, 0);
        if (!strcmp(t0, "time")) continue; /* header */
        rows++;
        double t = parse_time(t0, gp_csv_field_len(c, 0));
        if (t < 0) {
            snprintf(err, errlen, "%s:%lld:1: '%.40s' is not a time (YYYY-MM-DD HH:MM:SS TZ)", path,
                     (long long)gp_csv_line(c), t0);
            rc = -1;
            break;
        }
        for (int i = 2; i < gp_csv_nfields(c) && i < 10; i++) {
            double v;
            int k = gp_csv_num(c, i, &v, err, errlen);
            if (k < 0) {
                rc = -1;
                break;
            }
            if (k == 0) {
                if (gp_csv_field_len(c, i)) r->ts_na++;
                continue;
            }
            char key[80];
            int kl = snprintf(key, sizeof key, "%.60s/%d", gp_csv_field(c, 1), i);
            uint64_t hk = gp_cl_hash(key, (size_t)kl);
            uint32_t dummy;
            if (!gp_cl_map_get(&gpus, hk, &dummy)) gp_cl_map_put(&gpus, hk, 1);
            gp_cl_add_sample(r, t, 60, 1, (v > 100 ? 100 : v < 0 ? 0 : v) / 100.0);
        }
        if (rc < 0) break;
    }
    r->ts_units = (int64_t)gpus.n;
    gp_cl_map_free(&gpus);
    gp_csv_close(c);
    if (rc == 0) gp_cl_table_count(r, "cluster_gpu_util", rows);
    return rc;
}

int gp_cl_read_philly(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    struct stat st;
    snprintf(r->unit_name, sizeof r->unit_name, "attempts");
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        char p[1024];
        int any = 0;
        snprintf(p, sizeof p, "%s/cluster_job_log", path);
        if (stat(p, &st) == 0) {
            if (read_philly_jobs(r, p, err, errlen) != 0) return -1;
            any = 1;
        }
        snprintf(p, sizeof p, "%s/cluster_gpu_util", path);
        if (stat(p, &st) == 0) {
            if (read_philly_util(r, p, err, errlen) != 0) return -1;
            any = 1;
        }
        if (!any) snprintf(err, errlen, "%s: no cluster_job_log or cluster_gpu_util", path);
        return any ? 0 : -1;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strstr(base, "gpu_util")) return read_philly_util(r, path, err, errlen);
    return read_philly_jobs(r, path, err, errlen);
}

/* ---- Helios ---- */
int gp_cl_read_helios(gp_cluster_report *r, const char *path, char *err, size_t errlen) {
    char p[1024];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(p, sizeof p, "%s/cluster_log.csv", path);
    else
        snprintf(p, sizeof p, "%s", path);
    snprintf(r->unit_name, sizeof r->unit_name, "jobs");
    gp_csv *c;
    if (gp_csv_open(&c, p, err, errlen) != 0) return -1;
    int rc = gp_csv_next(c, err, errlen);
    if (rc != 1) {
        if (rc == 0) snprintf(err, errlen, "%s: empty file", p);
        gp_csv_close(c);
        return -1;
    }
    gp_csv_take_header(c);
    const char *need[] = {"user",        "vc",         "gpu_num", "state",
                          "submit_time", "start_time", "end_time"};
    int ci[7];
    for (int i = 0; i < 7; i++)
        if ((ci[i] = gp_csv_find(c, need[i])) < 0) {
            snprintf(err, errlen, "%s:1: no column %s in the header", p, need[i]);
            gp_csv_close(c);
            return -1;
        }
    int64_t rows = 0;
    while ((rc = gp_csv_next(c, err, errlen)) == 1) {
        rows++;
        double g;
        if (gp_csv_num(c, ci[2], &g, err, errlen) < 0) {
            rc = -1;
            break;
        }
        const char *state = gp_csv_field(c, ci[3]);
        double sub = parse_time(gp_csv_field(c, ci[4]), gp_csv_field_len(c, ci[4]));
        double start = parse_time(gp_csv_field(c, ci[5]), gp_csv_field_len(c, ci[5]));
        double end = parse_time(gp_csv_field(c, ci[6]), gp_csv_field_len(c, ci[6]));
        if (start < 0) {
            gp_cl_add_never_ran(r, g);
            continue;
        }
        gp_cl_unit u = {0};
        u.dim[GP_CL_DIM_USER] = gp_csv_field(c, ci[0]);
        u.dim[GP_CL_DIM_GROUP] = gp_csv_field(c, ci[1]);
        u.request_gpus = u.alloc_gpus = g > 0 ? g : 0;
        u.used_gpus = -1;
        u.start_s = start;
        u.end_s = end;
        u.failed =
            !strcmp(state, "FAILED") || !strcmp(state, "NODE_FAIL") || !strcmp(state, "TIMEOUT");
        if (gp_cl_add_unit(r, &u) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        if (g > 0) gp_cl_add_wait(r, g, "", sub, start);
    }
    gp_csv_close(c);
    if (rc == 0) {
        gp_cl_table_count(r, "cluster_log", rows);
        r->n_jobs = rows;
    }
    return rc;
}

int gp_cl_read(gp_cluster_report *r, const char *format, const char *path, char *err,
               size_t errlen) {
    if (!strcmp(format, "pai2020") || !strcmp(format, "pai"))
        return gp_cl_read_pai2020(r, path, err, errlen);
    if (!strcmp(format, "openb2023") || !strcmp(format, "openb"))
        return gp_cl_read_openb2023(r, path, err, errlen);
    if (!strcmp(format, "genai2026") || !strcmp(format, "genai")) {
        r->series.bin_s = 600;
        return gp_cl_read_genai2026(r, path, err, errlen);
    }
    if (!strcmp(format, "philly")) return gp_cl_read_philly(r, path, err, errlen);
    if (!strcmp(format, "helios")) return gp_cl_read_helios(r, path, err, errlen);
    if (!strcmp(format, "alibaba2025")) return gp_cl_read_alibaba2025(r, path, err, errlen);
    if (!strcmp(format, "auto")) {
        char why[600];
        const char *f = gp_cl_detect(path, why, sizeof why, err, errlen);
        if (!f) return -1;
        snprintf(r->format, sizeof r->format, "%s", f);
        return gp_cl_read(r, f, path, err, errlen);
    }
    snprintf(err, errlen,
             "unknown cluster trace format '%s' (auto, pai2020, openb2023, genai2026, philly, "
             "helios, alibaba2025)",
             format);
    return -1;
}
