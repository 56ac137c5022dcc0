/* slurm.c: parses squeue/sacct output and follows jobs from one poll to the next.
 *
 * Design: the poller keeps a small table of jobs it follows (id, the UUIDs it wrote
 * allocations for, their start, whether the job ended). Slurm is the authority for times
 * and states; the store's upserts keep known fields, so writing a job again each poll is
 * harmless and repairs fields a late lifecycle event may have overwritten. Allocation rows
 * are keyed (job, uuid, from): the poller reuses the start time a prolog already wrote
 * (same second) instead of adding a second row, so GPU-hours are never counted twice. */
#include "attribution/slurm.h"

#include "attribution/jobmap.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL

/* ---- parsing ------------------------------------------------------------------------ */

int gp_slurm_parse_gres_idx(const char *s, int *idx, int cap) {
    const char *p = strstr(s, "IDX:");
    if (!p) return -1;
    p += 4;
    int n = 0;
    if (!strncmp(p, "N/A", 3)) return 0;
    while (*p && *p != ')') {
        if (!isdigit((unsigned char)*p)) return -1;
        char *e;
        long a = strtol(p, &e, 10), b = a;
        p = e;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p)) return -1;
            b = strtol(p, &e, 10);
            p = e;
        }
        if (b < a || b - a > 4096) return -1;
        for (long i = a; i <= b; i++)
            if (n < cap) idx[n++] = (int)i;
        if (*p == ',')
            p++;
        else if (*p && *p != ')')
            return -1;
    }
    return n;
}

const char *gp_slurm_exit_state(const char *st) {
    static const struct {
        const char *slurm, *ours;
    } map[] = {{"COMPLETED", "completed"}, {"FAILED", "failed"},
               {"CANCELLED", "cancelled"}, {"TIMEOUT", "timeout"},
               {"NODE_FAIL", "node_fail"}, {"OUT_OF_MEMORY", "out_of_memory"},
               {"PREEMPTED", "preempted"}, {"BOOT_FAIL", "boot_fail"},
               {"DEADLINE", "deadline"},   {"REVOKED", "cancelled"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strncmp(st, map[i].slurm, strlen(map[i].slurm))) return map[i].ours;
    return "";
}

int gp_slurm_state_is_live(const char *st) {
    return st[0] && !gp_slurm_exit_state(st)[0];
}

static void job_init(gp_slurm_job *j) {
    memset(j, 0, sizeof *j);
    j->job.origin = GP_ORIGIN_SLURM;
    j->job.submitted_ns = j->job.allocated_ns = j->job.ready_ns = j->job.ended_ns = -1;
    j->job.exit_code = -1;
    j->n_gpus = -1;
}

static int64_t num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) return json_integer_value(v);
    if (json_is_real(v)) return (int64_t)json_real_value(v);
    return -1;
}

static const char *str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

static int64_t sec_to_ns(int64_t s) {
    return s > 0 ? s * NS : -1;
}

static void set_id(gp_slurm_job *j, json_t *o) {
    json_t *v = json_object_get(o, "job_id");
    if (json_is_integer(v))
        snprintf(j->job.id, sizeof j->job.id, "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v))
        snprintf(j->job.id, sizeof j->job.id, "%s", json_string_value(v));
}

/* "gres/gpu=2" (or "gres/gpu:a100=2") in a TRES string. */
static int tres_gpus(const char *t) {
    const char *p = strstr(t, "gres/gpu");
    if (!p) return -1;
    const char *eq = strchr(p, '=');
    const char *comma = strchr(p, ',');
    if (!eq || (comma && comma < eq)) return -1;
    return atoi(eq + 1);
}

static json_t *load_jobs(const char *json, size_t len, const char *what, char *err, size_t errlen,
                         json_t **root) {
    json_error_t je;
    *root = json_loadb(json, len, 0, &je);
    if (!*root) {
        snprintf(err, errlen, "%s --json: not JSON at line %d column %d: %s", what, je.line,
                 je.column, je.text);
        return NULL;
    }
    json_t *jobs = json_object_get(*root, "jobs");
    if (!json_is_array(jobs)) {
        snprintf(err, errlen, "%s --json: no \"jobs\" array in the output", what);
        json_decref(*root);
        *root = NULL;
        return NULL;
    }
    return jobs;
}

/* squeue's exit_code is a wait(2) status (1792 = exit 7); newer releases use an object. */
static void set_exit_from_status(gp_slurm_job *j, json_t *v) {
    if (json_is_integer(v)) {
        int64_t st = json_integer_value(v);
        if (st < 0) return;
        if (st & 0x7f)
            j->job.exit_code = 128 + (st & 0x7f);
        else
            j->job.exit_code = (st >> 8) & 0xff;
    } else if (json_is_object(v)) {
        int64_t rc = num(v, "return_code");
        json_t *rcv = json_object_get(v, "return_code");
        if (json_is_object(rcv)) rc = num(rcv, "number"); /* 23.x: {set, infinite, number} */
        if (rc >= 0) j->job.exit_code = rc;
    }
}

/* The fields squeue --json and sacct --json spell differently, one job object each. */
static void squeue_job(gp_slurm_job *j, json_t *o) {
    json_t *stv = json_object_get(o, "job_state");
    if (json_is_array(stv)) stv = json_array_get(stv, 0); /* 23.x: ["RUNNING"] */
    snprintf(j->state, sizeof j->state, "%s", json_is_string(stv) ? json_string_value(stv) : "");
    snprintf(j->nodes, sizeof j->nodes, "%s", str(o, "nodes"));
    j->job.submitted_ns = sec_to_ns(num(o, "submit_time"));
    int64_t start = num(o, "start_time"), end = num(o, "end_time");
    int live = gp_slurm_state_is_live(j->state);
    int ran = strcmp(j->state, "PENDING") != 0 && j->nodes[0] && start > 0;
    if (ran) j->job.allocated_ns = sec_to_ns(start);
    if (!live && j->state[0]) {
        j->job.ended_ns = sec_to_ns(end);
        snprintf(j->job.exit_state, sizeof j->job.exit_state, "%s", gp_slurm_exit_state(j->state));
        set_exit_from_status(j, json_object_get(o, "exit_code"));
    }
    j->n_gpus = tres_gpus(str(o, "tres_alloc_str"));
    if (j->n_gpus < 0) j->n_gpus = tres_gpus(str(o, "tres_req_str"));
    json_t *gd = json_object_get(o, "gres_detail");
    size_t gi;
    json_t *g;
    json_array_foreach(gd, gi, g) {
        if (!json_is_string(g) || strncmp(json_string_value(g), "gpu", 3)) continue;
        int got = gp_slurm_parse_gres_idx(json_string_value(g), j->gpu_idx + j->n_idx,
                                          GP_SLURM_MAX_GPUS - j->n_idx);
        if (got > 0) j->n_idx += got;
    }
}

static void sacct_job(gp_slurm_job *j, json_t *o) {
    json_t *st = json_object_get(o, "state");
    json_t *cur = json_is_object(st) ? json_object_get(st, "current") : st;
    if (json_is_array(cur)) cur = json_array_get(cur, 0);
    snprintf(j->state, sizeof j->state, "%s", json_is_string(cur) ? json_string_value(cur) : "");
    snprintf(j->nodes, sizeof j->nodes, "%s", str(o, "nodes"));
    json_t *t = json_object_get(o, "time");
    int64_t start = num(t, "start"), end = num(t, "end");
    j->job.submitted_ns = sec_to_ns(num(t, "submission"));
    if (start > 0 && strcmp(j->state, "PENDING")) j->job.allocated_ns = sec_to_ns(start);
    if (!gp_slurm_state_is_live(j->state) && j->state[0]) {
        j->job.ended_ns = sec_to_ns(end);
        snprintf(j->job.exit_state, sizeof j->job.exit_state, "%s", gp_slurm_exit_state(j->state));
        /* The JSON exit code is unreliable in 22.05 (0 for exit 7): only a non-zero
         * value is believed here; gp_slurm_apply_sacct_text settles it. */
        json_t *ec = json_object_get(o, "exit_code");
        int64_t rc = json_is_object(ec) ? num(ec, "return_code") : -1;
        if (rc > 0) j->job.exit_code = rc;
    }
    json_t *alloc = json_object_get(json_object_get(o, "tres"), "allocated");
    size_t ti;
    json_t *tv;
    json_array_foreach(alloc, ti, tv) {
        if (!strcmp(str(tv, "type"), "gres") && !strcmp(str(tv, "name"), "gpu"))
            j->n_gpus = (int)num(tv, "count");
    }
}

/* The loop both share: load the jobs array, skip entries that are not jobs with an id,
 * fill the common fields, hand the rest to the format's function. */
static int parse_jobs(const char *json, size_t len, const char *what, const char *user_key,
                      void (*fill)(gp_slurm_job *, json_t *), gp_slurm_job **out, size_t *n,
                      char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    json_t *root, *jobs = load_jobs(json, len, what, err, errlen, &root);
    if (!jobs) return -1;
    size_t cnt = json_array_size(jobs);
    gp_slurm_job *arr = calloc(cnt ? cnt : 1, sizeof *arr);
    if (!arr) {
        json_decref(root);
        snprintf(err, errlen, "%s: out of memory", what);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < cnt; i++) {
        json_t *o = json_array_get(jobs, i);
        if (!json_is_object(o)) continue;
        gp_slurm_job *j = &arr[k];
        job_init(j);
        set_id(j, o);
        if (!j->job.id[0]) continue;
        snprintf(j->job.name, sizeof j->job.name, "%s", str(o, "name"));
        snprintf(j->job.user, sizeof j->job.user, "%s", str(o, user_key));
        fill(j, o);
        k++;
    }
    json_decref(root);
    *out = arr;
    *n = k;
    return 0;
}

int gp_slurm_parse_squeue(const char *json, size_t len, gp_slurm_job **out, size_t *n, char *err,
                          size_t errlen) {
    return parse_jobs(json, len, "squeue", "user_name", squeue_job, out, n, err, errlen);
}

int gp_slurm_parse_sacct(const char *json, size_t len, gp_slurm_job **out, size_t *n, char *err,
                         size_t errlen) {
    return parse_jobs(json, len, "sacct", "user", sacct_job, out, n, err, errlen);
}

int gp_slurm_apply_sacct_text(const char *text, size_t len, gp_slurm_job *jobs, size_t n) {
    int matched = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ln = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char line[256];
        if (ln < sizeof line) {
            memcpy(line, p, ln);
            line[ln] = '\0';
            char *f[3] = {line, NULL, NULL};
            char *bar = strchr(line, '|');
            if (bar) {
                *bar = '\0';
                f[1] = bar + 1;
                bar = strchr(f[1], '|');
                if (bar) {
                    *bar = '\0';
                    f[2] = bar + 1;
                }
            }
            if (f[1] && f[2]) {
                char *sp = strchr(f[1], ' '); /* "CANCELLED by 0" */
                if (sp) *sp = '\0';
                for (size_t i = 0; i < n; i++) {
                    if (strcmp(jobs[i].job.id, f[0])) continue;
                    snprintf(jobs[i].state, sizeof jobs[i].state, "%s", f[1]);
                    const char *es = gp_slurm_exit_state(f[1]);
                    if (es[0])
                        snprintf(jobs[i].job.exit_state, sizeof jobs[i].job.exit_state, "%s", es);
                    /* ExitCode is "code:signal". */
                    int code, sig;
                    if (sscanf(f[2], "%d:%d", &code, &sig) == 2 && es[0])
                        jobs[i].job.exit_code = sig ? 128 + sig : code;
                    matched++;
                }
            }
        }
        p = nl ? nl + 1 : end;
    }
    return matched;
}

int64_t gp_attrib_ready_from_samples(const gp_sample *s, size_t n, int64_t from_ns,
                                     double threshold, int64_t sustain_ns) {
    int64_t run_start = -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i].ts_ns < from_ns) continue;
        double v = -1;
        if (gp_has(s[i].valid, GP_F_SM_ACTIVE))
            v = s[i].sm_active;
        else if (gp_has(s[i].valid, GP_F_GPU_UTIL))
            v = s[i].gpu_util;
        if (v >= threshold) {
            if (run_start < 0) run_start = s[i].ts_ns;
            if (s[i].ts_ns - run_start >= sustain_ns) return run_start;
        } else {
            run_start = -1; /* unknown samples break a run too: "sustained" means seen */
        }
    }
    return -1;
}

/* ---- running commands ----------------------------------------------------------------- */

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gp_attrib_run_capture(char *const argv[], int timeout_ms, char **out, size_t *outlen, char *err,
                          size_t errlen) {
    *out = NULL;
    *outlen = 0;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", argv[0], strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "%s: fork: %s", argv[0], strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(pfd[1], 1);
        int dn = open("/dev/null", O_RDWR);
        if (dn >= 0) {
            dup2(dn, 0);
            dup2(dn, 2);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
    int timed_out = 0;
    while (buf) {
        int left = (int)(deadline - mono_ms());
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
        int r = poll(&pf, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        if (n + 4096 > cap) {
            char *nb = cap < (64u << 20) ? realloc(buf, cap * 2) : NULL;
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        ssize_t got = read(pfd[0], buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(pfd[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", argv[0]);
        return -1;
    }
    buf[n] = '\0';
    if (timed_out) {
        snprintf(err, errlen, "%s: no answer within %d ms (killed)", argv[0], timeout_ms);
        free(buf);
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(err, errlen, "%s: could not run it (not installed, or not in PATH)", argv[0]);
        free(buf);
        return -1;
    }
    if (!WIFEXITED(status)) {
        snprintf(err, errlen, "%s: killed by signal %d", argv[0], WTERMSIG(status));
        free(buf);
        return -1;
    }
    *out = buf;
    *outlen = n;
    return WEXITSTATUS(status);
}

/* ---- the poller ------------------------------------------------------------------------ */

typedef struct followed {
    char id[GP_JOB_ID_MAX];
    int64_t start_ns, end_ns;
    int ended;             /* final state and exit code written */
    int in_squeue;         /* seen by the last squeue */
    int final_polls;       /* polls that saw it final in squeue without sacct settling it */
    int asked;             /* in the current sacct request */
    int64_t scanned_to_ns; /* telemetry already searched for readiness up to here */
    int n_uuid;
    char uuid[GP_SLURM_MAX_GPUS][GP_UUID_MAX];
    int64_t from[GP_SLURM_MAX_GPUS]; /* the alloc row's key */
    int closed[GP_SLURM_MAX_GPUS];
} followed;

struct gp_slurm {
    gp_slurm_opts o;
    char squeue[256], sacct[256], node[128], jobmap[512];
    char (*uuid_by_idx)[GP_UUID_MAX];
    size_t n_uuid;
    gp_device *devs; /* the node's GPUs, for the job-mapping files named by index */
    size_t n_devs;
    gp_jobmap *jobmap_reader; /* NULL: no job-mapping directory */
    followed *f;
    size_t nf, capf;
    gp_slurm_stats stats;
};

int gp_slurm_open(const gp_slurm_opts *o, gp_slurm **out, char *err, size_t errlen) {
    gp_slurm *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "slurm: out of memory");
        return -1;
    }
    if (o) s->o = *o;
    snprintf(s->squeue, sizeof s->squeue, "%s", s->o.squeue ? s->o.squeue : "squeue");
    snprintf(s->sacct, sizeof s->sacct, "%s", s->o.sacct ? s->o.sacct : "sacct");
    snprintf(s->node, sizeof s->node, "%s", s->o.node ? s->o.node : "");
    snprintf(s->jobmap, sizeof s->jobmap, "%s", s->o.jobmap_dir ? s->o.jobmap_dir : "");
    if (s->o.timeout_ms <= 0) s->o.timeout_ms = 10000;
    if (s->o.ready_util <= 0) s->o.ready_util = 0.05;
    if (s->o.ready_sustain_ns <= 0) s->o.ready_sustain_ns = 30 * NS;
    if (s->jobmap[0] && !(s->jobmap_reader = gp_jobmap_new(s->jobmap))) {
        free(s);
        snprintf(err, errlen, "slurm: out of memory");
        return -1;
    }
    *out = s;
    return 0;
}

void gp_slurm_close(gp_slurm *s) {
    if (!s) return;
    free(s->uuid_by_idx);
    free(s->devs);
    gp_jobmap_free(s->jobmap_reader);
    free(s->f);
    free(s);
}

int gp_slurm_set_gpus(gp_slurm *s, const gp_device *devs, size_t n) {
    int maxi = -1;
    for (size_t i = 0; i < n; i++)
        if (devs[i].index > maxi) maxi = devs[i].index;
    free(s->uuid_by_idx);
    s->uuid_by_idx = NULL;
    s->n_uuid = 0;
    free(s->devs);
    s->devs = n ? malloc(n * sizeof *s->devs) : NULL;
    s->n_devs = s->devs ? n : 0;
    if (s->devs) memcpy(s->devs, devs, n * sizeof *devs);
    if (maxi < 0) return 0;
    s->uuid_by_idx = calloc((size_t)maxi + 1, GP_UUID_MAX);
    if (!s->uuid_by_idx) return -1;
    s->n_uuid = (size_t)maxi + 1;
    for (size_t i = 0; i < n; i++)
        if (devs[i].index >= 0)
            snprintf(s->uuid_by_idx[devs[i].index], GP_UUID_MAX, "%s", devs[i].uuid);
    return 0;
}

const gp_slurm_stats *gp_slurm_get_stats(const gp_slurm *s) {
    return &s->stats;
}

size_t gp_slurm_live_jobs(const gp_slurm *s) {
    size_t k = 0;
    for (size_t i = 0; i < s->nf; i++)
        k += !s->f[i].ended;
    return k;
}

static followed *follow(gp_slurm *s, const char *id, int create) {
    for (size_t i = 0; i < s->nf; i++)
        if (!strcmp(s->f[i].id, id)) return &s->f[i];
    if (!create) return NULL;
    if (s->nf == s->capf) {
        size_t nc = s->capf ? s->capf * 2 : 64;
        followed *nf = realloc(s->f, nc * sizeof *nf);
        if (!nf) return NULL;
        s->f = nf;
        s->capf = nc;
    }
    followed *f = &s->f[s->nf++];
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    f->start_ns = f->end_ns = -1;
    s->stats.jobs_seen++;
    return f;
}

static const char *uuid_of(const gp_slurm *s, int idx) {
    if (idx < 0 || (size_t)idx >= s->n_uuid || !s->uuid_by_idx[idx][0]) return NULL;
    return s->uuid_by_idx[idx];
}

static int node_matches(const gp_slurm *s, const char *nodes) {
    /* A single-node filter: a job on a list or range naming other hosts is still ours when
     * the list contains our node by name; ranges ("gpu[01-04]") are matched loosely. */
    if (!s->node[0]) return 1;
    if (!strcmp(nodes, s->node)) return 1;
    if (strstr(nodes, s->node)) return 1;
    const char *br = strchr(nodes, '[');
    return br && !strncmp(nodes, s->node, (size_t)(br - nodes));
}

/* Writes (or reuses) the allocation row for job x uuid starting near from_ns. */
static int open_alloc(gp_slurm *s, gp_store *st, followed *f, const char *uuid, int64_t from_ns) {
    for (int i = 0; i < f->n_uuid; i++)
        if (!strcmp(f->uuid[i], uuid)) return 0;
    if (f->n_uuid >= GP_SLURM_MAX_GPUS) return 0;
    /* A prolog may already have written this allocation with its own clock. Not a row of
     * no length: that names no start (an epilog's line from its own end time). */
    gp_alloc *rows = NULL;
    size_t nr = 0;
    int64_t from = from_ns;
    if (gp_store_job_allocs(st, f->id, &rows, &nr) == 0) {
        for (size_t i = 0; i < nr; i++) {
            int64_t d = rows[i].from_ns - from_ns;
            if (rows[i].to_ns >= 0 && rows[i].to_ns <= rows[i].from_ns) continue;
            if (!strcmp(rows[i].uuid, uuid) && d > -120 * NS && d < 120 * NS) {
                from = rows[i].from_ns;
                break;
            }
        }
    }
    free(rows);
    gp_alloc a;
    memset(&a, 0, sizeof a);
    snprintf(a.job_id, sizeof a.job_id, "%s", f->id);
    snprintf(a.uuid, sizeof a.uuid, "%s", uuid);
    a.from_ns = from;
    a.to_ns = -1;
    if (gp_store_put_alloc(st, &a) != 0) return -1;
    int k = f->n_uuid++;
    snprintf(f->uuid[k], GP_UUID_MAX, "%s", uuid);
    f->from[k] = from;
    f->closed[k] = 0;
    s->stats.allocs_written++;
    return 0;
}

/* Ends every allocation of the job at end_ns, including rows a prolog or epilog wrote:
 * Slurm's end time is the authority (an epilog runs after it, on its own clock). */
static int close_allocs(gp_store *st, followed *f, int64_t end_ns) {
    gp_alloc *rows = NULL;
    size_t nr = 0;
    int rc = 0;
    if (gp_store_job_allocs(st, f->id, &rows, &nr) == 0) {
        for (size_t i = 0; i < nr; i++) {
            if (rows[i].to_ns >= 0 && (end_ns < 0 || rows[i].to_ns <= end_ns)) continue;
            rows[i].to_ns = end_ns > rows[i].from_ns ? end_ns : rows[i].from_ns;
            if (gp_store_put_alloc(st, &rows[i]) != 0) rc = -1;
        }
    }
    free(rows);
    for (int i = 0; i < f->n_uuid; i++)
        f->closed[i] = 1;
    return rc;
}

static int put_job(gp_store *st, const gp_slurm_job *j) {
    gp_job job = j->job;
    job.ready_ns = -1; /* readiness comes from events or telemetry, never from Slurm */
    return gp_store_put_job(st, &job);
}

/* Sets readiness from telemetry for running jobs that sent no progress events. */
static void ready_from_telemetry(gp_slurm *s, gp_store *st, followed *f, int64_t now_ns) {
    gp_job j;
    if (f->n_uuid == 0 || gp_store_get_job(st, f->id, &j) != 1 || j.ready_ns >= 0) return;
    int64_t best = -1;
    /* Only the tail not searched yet, plus one sustain window: a run that was still too
     * short at the last poll started inside it, so each poll reads O(interval) samples. */
    int64_t lo = f->scanned_to_ns > 0 ? f->scanned_to_ns - 2 * s->o.ready_sustain_ns : 0;
    for (int i = 0; i < f->n_uuid; i++) {
        gp_sample *smp = NULL;
        size_t ns = 0;
        int64_t from = f->from[i] > lo ? f->from[i] : lo;
        if (gp_store_device_samples(st, f->uuid[i], from, now_ns + 1, &smp, &ns) != 0) continue;
        int64_t r = gp_attrib_ready_from_samples(smp, ns, f->from[i], s->o.ready_util,
                                                 s->o.ready_sustain_ns);
        free(smp);
        if (r >= 0 && (best < 0 || r < best)) best = r;
    }
    f->scanned_to_ns = now_ns;
    if (best >= 0) {
        gp_job up;
        memset(&up, 0, sizeof up);
        snprintf(up.id, sizeof up.id, "%s", f->id);
        up.submitted_ns = up.allocated_ns = up.ended_ns = -1;
        up.exit_code = -1;
        up.ready_ns = best;
        gp_store_put_job(st, &up);
    }
}

/* Fetches final state for jobs squeue no longer shows, or that just ended. */
static int settle_ended(gp_slurm *s, gp_store *st, gp_slurm_job *jobs, size_t nj, char *err,
                        size_t errlen) {
    if (!s->sacct[0]) return 0;
    char ids[2048] = "";
    size_t used = 0;
    int want = 0;
    for (size_t i = 0; i < s->nf; i++)
        s->f[i].asked = 0;
    for (size_t i = 0; i < s->nf; i++) {
        followed *f = &s->f[i];
        if (f->ended) continue;
        int seen_live = 0, seen = 0;
        for (size_t k = 0; k < nj; k++)
            if (!strcmp(jobs[k].job.id, f->id)) {
                seen = 1;
                seen_live = gp_slurm_state_is_live(jobs[k].state);
            }
        if (seen && seen_live) continue;
        int w = snprintf(ids + used, sizeof ids - used, "%s%s", used ? "," : "", f->id);
        if (w < 0 || (size_t)w >= sizeof ids - used) break;
        used += (size_t)w;
        f->asked = 1;
        want++;
    }
    if (!want) return 0;

    char *out = NULL;
    size_t outlen = 0;
    gp_slurm_job *sj = NULL;
    size_t ns = 0;
    char *argv_json[] = {s->sacct, "--json", "-X", "-j", ids, NULL};
    int rc = gp_attrib_run_capture(argv_json, s->o.timeout_ms, &out, &outlen, err, errlen);
    if (rc == 0 && gp_slurm_parse_sacct(out, outlen, &sj, &ns, err, errlen) != 0)
        rc = -1;
    else if (rc > 0) {
        snprintf(err, errlen, "%.200s --json exited with status %d", s->sacct, rc);
        rc = -1;
    }
    free(out);
    if (rc != 0) {
        s->stats.sacct_failures++;
        free(sj);
        return -1;
    }
    char *argv_txt[] = {s->sacct, "-P", "-n", "-X", "-o", "JobIDRaw,State,ExitCode",
                        "-j",     ids,  NULL};
    rc = gp_attrib_run_capture(argv_txt, s->o.timeout_ms, &out, &outlen, err, errlen);
    if (rc == 0)
        gp_slurm_apply_sacct_text(out, outlen, sj, ns);
    else
        s->stats.sacct_failures++;
    free(out);

    for (size_t k = 0; k < ns; k++) {
        followed *f = follow(s, sj[k].job.id, 0);
        if (!f || f->ended || !f->asked) continue;
        if (gp_slurm_state_is_live(sj[k].state) || !sj[k].state[0]) continue;
        /* sacct's text settles the exit code; without it the code stays unknown. */
        put_job(st, &sj[k]);
        f->end_ns = sj[k].job.ended_ns;
        close_allocs(st, f, f->end_ns >= 0 ? f->end_ns : f->start_ns);
        f->ended = 1;
    }
    free(sj);
    return 0;
}

/* dcgm-exporter HPC job mapping: DIR/<gpu index or uuid> holding job ids, one per line
 * (a second field, e.g. a uid, is ignored). */
typedef struct jobmap_ctx {
    gp_slurm *s;
    gp_store *st;
} jobmap_ctx;

/* One (job, GPU) pair of the job-mapping files (attribution/jobmap.h reads them). */
static void on_jobmap_pair(void *vctx, const char *id, const char *uuid, int64_t mtime_ns) {
    jobmap_ctx *c = vctx;
    gp_slurm *s = c->s;
    if (id[strspn(id, "0123456789_")]) return; /* not a Slurm job id (array: 12_3) */
    followed *f = follow(s, id, 0);
    if (!f) {
        /* A stale file naming a job that ended and was forgotten: not a new one. */
        gp_job known;
        if (gp_store_get_job(c->st, id, &known) == 1 && known.ended_ns >= 0) return;
        f = follow(s, id, 1);
    }
    if (!f || f->ended) return;
    size_t before = f->n_uuid;
    gp_job j;
    memset(&j, 0, sizeof j);
    snprintf(j.id, sizeof j.id, "%s", id);
    j.origin = GP_ORIGIN_SLURM;
    j.submitted_ns = j.allocated_ns = j.ready_ns = j.ended_ns = -1;
    j.exit_code = -1;
    gp_store_put_job(c->st, &j);
    open_alloc(s, c->st, f, uuid, f->start_ns >= 0 ? f->start_ns : mtime_ns);
    if ((size_t)f->n_uuid > before) s->stats.jobmap_allocs++;
}

static void read_jobmap(gp_slurm *s, gp_store *st) {
    if (!s->jobmap_reader) return;
    jobmap_ctx c = {s, st};
    gp_jobmap_scan(s->jobmap_reader, s->devs, s->n_devs, on_jobmap_pair, &c);
}

int gp_slurm_poll(gp_slurm *s, gp_store *st, int64_t now_ns, char *err, size_t errlen) {
    char e2[512] = "";
    s->stats.polls++;
    char *out = NULL;
    size_t outlen = 0;
    gp_slurm_job *jobs = NULL;
    size_t nj = 0;
    char *argv[] = {s->squeue, "--json", NULL};
    int rc = gp_attrib_run_capture(argv, s->o.timeout_ms, &out, &outlen, err, errlen);
    if (rc > 0) {
        snprintf(err, errlen, "%.200s --json exited with status %d", s->squeue, rc);
        rc = -1;
    }
    if (rc == 0 && gp_slurm_parse_squeue(out, outlen, &jobs, &nj, err, errlen) != 0) rc = -1;
    free(out);
    if (rc != 0) {
        s->stats.squeue_failures++;
        snprintf(s->stats.last_error, sizeof s->stats.last_error, "%s", err);
        return -1;
    }

    gp_store_begin(st);
    for (size_t i = 0; i < s->nf; i++)
        s->f[i].in_squeue = 0;
    for (size_t k = 0; k < nj; k++) {
        gp_slurm_job *j = &jobs[k];
        followed *f = follow(s, j->job.id, 0);
        if (f) f->in_squeue = 1;
        if (f && f->ended) continue; /* final already; squeue keeps it for MinJobAge */
        if (!f && !node_matches(s, j->nodes) && j->nodes[0]) continue;
        if (!f) f = follow(s, j->job.id, 1);
        if (!f) continue;
        f->in_squeue = 1;
        /* squeue's exit code is a wait status and right; sacct text confirms it below. */
        put_job(st, j);
        if (j->job.allocated_ns >= 0) f->start_ns = j->job.allocated_ns;
        if (j->n_idx > 0 && node_matches(s, j->nodes) && f->start_ns >= 0)
            for (int g = 0; g < j->n_idx; g++) {
                const char *u = uuid_of(s, j->gpu_idx[g]);
                if (u) open_alloc(s, st, f, u, f->start_ns);
            }
        if (!gp_slurm_state_is_live(j->state) && j->state[0]) {
            f->end_ns = j->job.ended_ns;
            f->final_polls++;
        }
    }
    read_jobmap(s, st);
    if (settle_ended(s, st, jobs, nj, e2, sizeof e2) != 0) {
        snprintf(s->stats.last_error, sizeof s->stats.last_error, "%s", e2);
        /* Without sacct, squeue's own final state is used. */
        for (size_t k = 0; k < nj; k++) {
            followed *f = follow(s, jobs[k].job.id, 0);
            if (!f || f->ended || gp_slurm_state_is_live(jobs[k].state)) continue;
            close_allocs(st, f, f->end_ns >= 0 ? f->end_ns : now_ns);
            f->ended = 1;
        }
    }
    /* sacct answered but lags (slurmdbd not told yet) or lacks the job: after a few polls
     * squeue's own final state stands. */
    for (size_t k = 0; k < nj; k++) {
        followed *f = follow(s, jobs[k].job.id, 0);
        if (!f || f->ended || f->final_polls < 5) continue;
        close_allocs(st, f, f->end_ns >= 0 ? f->end_ns : now_ns);
        f->ended = 1;
    }
    for (size_t i = 0; i < s->nf; i++)
        if (!s->f[i].ended && s->f[i].start_ns >= 0) ready_from_telemetry(s, st, &s->f[i], now_ns);
    gp_store_commit(st);
    /* Forget ended jobs squeue no longer lists, so the table stays small. */
    size_t w = 0;
    for (size_t i = 0; i < s->nf; i++)
        if (!(s->f[i].ended && !s->f[i].in_squeue)) s->f[w++] = s->f[i];
    s->nf = w;
    free(jobs);
    if (e2[0]) {
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    return 0;
}
