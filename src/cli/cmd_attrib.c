/* cmd_attrib.c: `goodput attrib`: who owns a process or a GPU, and the Slurm poller on its
 * own (the agent runs the same poller each interval with --slurm).
 *
 *   goodput attrib owner PID...                    owner of each process (cgroup + env)
 *   goodput attrib slurm-poll --db PATH [...]      follow Slurm jobs into a store
 *   goodput attrib jobs --db PATH [--json]         jobs, GPUs, queue wait, readiness
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attribution/owner.h"
#include "attribution/share.h"
#include "attribution/slurm.h"
#include "cli/exit_codes.h"
#include "util/term.h"
#include "engine/accounting/job_summary.h"
#include "ingest/ingest.h"
#include "store/store.h"

static volatile sig_atomic_t stop_flag;
static void on_signal(int sig) {
    (void)sig;
    stop_flag = 1;
}

static int64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void usage(FILE *f) {
    fprintf(f, "usage: goodput attrib owner [--json] [--wide] PID...\n"
               "       goodput attrib slurm-poll --db PATH [options]\n"
               "       goodput attrib jobs --db PATH [--json] [--wide]\n\n"
               "owner: the job a process belongs to, from /proc/PID/cgroup (Slurm, Kubernetes,\n"
               "  Docker/containerd/CRI-O/podman, systemd) and GOODPUT_JOB / SLURM_JOB_ID /\n"
               "  CUDA_VISIBLE_DEVICES in its environment when readable.\n"
               "slurm-poll: polls squeue/sacct into the store (jobs, allocations, exit codes).\n"
               "  --gpus UUID,UUID,...   this node's GPU UUIDs in index order (Slurm's indices)\n"
               "  --interval-ms N        poll period (default 1000)\n"
               "  --max-s N              stop after N seconds (default: run until a signal)\n"
               "  --until-done           stop once every job seen has ended (and one was seen)\n"
               "  --socket PATH          also receive workload events on this unix socket\n"
               "  --jobmap-dir DIR       dcgm-exporter HPC job-mapping directory to read\n"
               "  --node NAME            only map GPUs of jobs on this node\n"
               "  --squeue CMD, --sacct CMD   commands to run (default squeue, sacct)\n"
               "jobs: per job: GPUs, submitted/allocated/ready/ended, queue wait, time to ready,\n"
               "  exit state, GPU-hours, and a not_ready finding for jobs that never progressed.\n"
               "  --wide                 whole job ids and names (text wider than 100 columns)\n");
}

static int cmd_owner(int argc, char **argv) {
    int json = 0, wide = 0, rc = GP_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(argv[i], "--wide")) {
            wide = 1;
            continue;
        }
        char *e;
        long pid = strtol(argv[i], &e, 10);
        if (*e || pid <= 0) {
            fprintf(stderr, "goodput attrib: owner: '%s' is not a pid\n", argv[i]);
            return GP_EXIT_USAGE;
        }
        gp_owner o;
        int r = gp_attrib_owner_of_pid(pid, &o);
        if (r == -ESRCH) {
            fprintf(stderr, "goodput attrib: owner: no process %ld (it may have exited)\n", pid);
            rc = GP_EXIT_INPUT;
            continue;
        } else if (r < 0) {
            fprintf(stderr, "goodput attrib: owner: /proc/%ld: %s\n", pid, strerror(-r));
            rc = GP_EXIT_FAIL;
            continue;
        }
        if (json) {
            /* job ids and cgroup names come from the process (its environment, its
             * cgroup path): jansson escapes them */
            json_t *j = json_pack(
                "{sI ss ss ss ss ss ss ss ss ss ss ss ss}", "pid", (json_int_t)pid, "job", o.job_id,
                "origin", gp_origin_name(o.origin), "kind", gp_cg_kind_name(o.cg_kind), "slurm_job",
                o.slurm_job, "slurm_step", o.slurm_step, "pod_uid", o.pod_uid, "qos", o.k8s_qos,
                "container", o.container_id, "runtime", o.runtime, "unit", o.unit,
                "cuda_visible_devices", o.env_cuda_visible, "cgroup", o.cgroup);
            if (!j) {
                fprintf(stderr,
                        "goodput attrib: owner: pid %ld: not valid UTF-8 or out of memory\n", pid);
                rc = GP_EXIT_FAIL;
                continue;
            }
            json_dumpf(j, stdout, JSON_COMPACT);
            fputc('\n', stdout);
            json_decref(j);
        } else {
            /* one paragraph per process: a long cgroup path (Kubernetes pods) wraps to
             * its own indented line */
            gp_wrap_printf(
                stdout, 2, gp_text_width(wide), "%ld job=%s origin=%s cgroup=%s%s%s%s%s%s%s", pid,
                o.job_id, gp_origin_name(o.origin), o.cgroup[0] ? o.cgroup : "-",
                o.slurm_step[0] ? " step=" : "", o.slurm_step, o.unit[0] ? " unit=" : "", o.unit,
                o.env_cuda_visible[0] ? " CUDA_VISIBLE_DEVICES=" : "", o.env_cuda_visible);
        }
    }
    return rc;
}

typedef struct {
    gp_store *st;
    uint64_t n;
} ev_ctx;

static void ev_sink(void *ctx, const gp_event *e) {
    ev_ctx *c = ctx;
    if (gp_store_put_event(c->st, e) == 0) c->n++;
}

static int cmd_slurm_poll(int argc, char **argv) {
    const char *db = NULL, *gpus = NULL, *sock = NULL;
    gp_slurm_opts so = {0};
    long interval_ms = 1000;
    double max_s = -1;
    int until_done = 0;
    static const struct option lo[] = {
        {"db", 1, 0, 'd'},         {"gpus", 1, 0, 'g'},       {"interval-ms", 1, 0, 'i'},
        {"max-s", 1, 0, 'm'},      {"until-done", 0, 0, 'u'}, {"socket", 1, 0, 's'},
        {"jobmap-dir", 1, 0, 'j'}, {"node", 1, 0, 'n'},       {"squeue", 1, 0, 'q'},
        {"sacct", 1, 0, 'a'},      {"help", 0, 0, 'h'},       {0, 0, 0, 0}};
    int c;
    optind = 1;
    opterr = 0; /* one line of our own instead of getopt's line plus the usage */
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'd':
            db = optarg;
            break;
        case 'g':
            gpus = optarg;
            break;
        case 'i':
            interval_ms = atol(optarg);
            break;
        case 'm':
            max_s = atof(optarg);
            break;
        case 'u':
            until_done = 1;
            break;
        case 's':
            sock = optarg;
            break;
        case 'j':
            so.jobmap_dir = optarg;
            break;
        case 'n':
            so.node = optarg;
            break;
        case 'q':
            so.squeue = optarg;
            break;
        case 'a':
            so.sacct = optarg;
            break;
        case 'h':
            usage(stdout);
            return GP_EXIT_OK;
        default:
            fprintf(
                stderr,
                "goodput attrib: unknown or incomplete option '%s' (see goodput attrib --help)\n",
                argv[optind - 1]);
            return GP_EXIT_USAGE;
        }
    }
    if (!db || interval_ms <= 0) {
        fprintf(stderr, "goodput attrib: attrib slurm-poll: --db PATH is required\n");
        return GP_EXIT_USAGE;
    }
    char err[512];
    gp_store *st;
    if (gp_store_open(db, 0, &st, err, sizeof err) != 0) {
        fprintf(stderr, "goodput attrib: %s\n", err);
        return GP_EXIT_FAIL;
    }
    gp_slurm *sl;
    if (gp_slurm_open(&so, &sl, err, sizeof err) != 0) {
        fprintf(stderr, "goodput attrib: %s\n", err);
        gp_store_close(st);
        return GP_EXIT_FAIL;
    }
    if (gpus) {
        gp_device devs[GP_SLURM_MAX_GPUS];
        size_t nd = 0;
        char *copy = strdup(gpus), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t && nd < GP_SLURM_MAX_GPUS;
             t = strtok_r(NULL, ",", &save)) {
            memset(&devs[nd], 0, sizeof devs[nd]);
            devs[nd].index = (int)nd;
            snprintf(devs[nd].uuid, sizeof devs[nd].uuid, "%s", t);
            gp_store_put_device(st, &devs[nd]);
            nd++;
        }
        free(copy);
        gp_slurm_set_gpus(sl, devs, nd);
    }
    gp_ingest *ing = NULL;
    if (sock) {
        gp_ingest_opts io = {.unix_path = sock};
        if (gp_ingest_open(&io, &ing, err, sizeof err) != 0) {
            fprintf(stderr, "goodput attrib: %s\n", err);
            gp_slurm_close(sl);
            gp_store_close(st);
            return GP_EXIT_FAIL;
        }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int64_t t_start = wall_ns(), next_poll = 0;
    char last_err[512] = "";
    ev_ctx ec = {st, 0};
    int rc = GP_EXIT_OK;
    uint64_t polls_tried = 0, polls_ok = 0;
    while (!stop_flag) {
        int64_t now = wall_ns();
        if (now >= next_poll) {
            int prc = gp_slurm_poll(sl, st, now, err, sizeof err);
            polls_tried++;
            if (prc == 0) polls_ok++;
            if (prc != 0 && strcmp(err, last_err)) {
                fprintf(stderr, "goodput attrib: slurm: %s (will retry)\n", err); /* logged once */
                snprintf(last_err, sizeof last_err, "%s", err);
            }
            next_poll = now + interval_ms * 1000000LL;
            const gp_slurm_stats *ss = gp_slurm_get_stats(sl);
            if (until_done && ss->jobs_seen > 0 && gp_slurm_live_jobs(sl) == 0) break;
        }
        if (max_s > 0 && (double)(now - t_start) / 1e9 >= max_s) {
            if (until_done) rc = GP_EXIT_FAIL; /* jobs still live */
            break;
        }
        struct pollfd pf[4];
        int nf = ing ? gp_ingest_fds(ing, pf, 4) : 0;
        int wait_ms = (int)((next_poll - wall_ns()) / 1000000LL);
        if (wait_ms < 0) wait_ms = 0;
        if (nf > 0)
            poll(pf, (nfds_t)nf, wait_ms);
        else
            usleep((useconds_t)wait_ms * 1000);
        if (ing) {
            gp_store_begin(st);
            gp_ingest_poll(ing, wall_ns(), ev_sink, &ec);
            gp_store_commit(st);
        }
    }
    const gp_slurm_stats *ss = gp_slurm_get_stats(sl);
    fprintf(stderr,
            "goodput attrib: slurm-poll: %llu polls, %llu jobs, %llu allocations (%llu from the "
            "job map), "
            "%llu events, %llu squeue and %llu sacct failures\n",
            (unsigned long long)ss->polls, (unsigned long long)ss->jobs_seen,
            (unsigned long long)ss->allocs_written, (unsigned long long)ss->jobmap_allocs,
            (unsigned long long)ec.n, (unsigned long long)ss->squeue_failures,
            (unsigned long long)ss->sacct_failures);
    if (polls_tried > 0 && polls_ok == 0) {
        /* Nothing was learned: a script must not take this run for a success. */
        fprintf(stderr, "goodput attrib: slurm-poll: every poll failed (last: %s)\n", last_err);
        rc = GP_EXIT_FAIL;
    }
    if (ing) gp_ingest_close(ing);
    gp_slurm_close(sl);
    gp_store_close(st);
    return rc;
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

/* Seconds from a to b; < 0 when either end is unknown (printed as null or `-`). */
static double secs(int64_t a, int64_t b) {
    return (a >= 0 && b >= 0) ? (double)(b - a) / 1e9 : -1;
}

/* A number that may be unknown: JSON null / text `-` for < 0 (never -1). */
static void json_num(double v, int decimals) {
    if (v < 0)
        printf("null");
    else
        printf("%.*f", decimals, v);
}
static void text_num(double v, int width, int decimals) {
    if (v < 0)
        printf(" %*s", width, "-");
    else
        printf(" %*.*f", width, decimals, v);
}
static void json_ns(int64_t v) {
    if (v < 0)
        printf("null");
    else
        printf("%lld", (long long)v);
}

static int cmd_jobs(int argc, char **argv) {
    const char *db = NULL;
    int json = 0, wide = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            db = argv[++i];
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--wide"))
            wide = 1;
        else {
            fprintf(stderr,
                    "goodput attrib: jobs: unknown or incomplete option '%s' (see goodput attrib "
                    "--help)\n",
                    argv[i]);
            return GP_EXIT_USAGE;
        }
    }
    if (!db) {
        fprintf(stderr, "goodput attrib: attrib jobs: --db PATH is required\n");
        return GP_EXIT_USAGE;
    }
    char err[512];
    gp_store *st;
    if (gp_store_open(db, GP_STORE_READONLY, &st, err, sizeof err) != 0) {
        fprintf(stderr, "goodput attrib: %s\n", err);
        return GP_EXIT_INPUT;
    }
    gp_job *jobs = NULL;
    size_t nj = 0;
    if (gp_store_list_jobs(st, &jobs, &nj) != 0) {
        fprintf(stderr, "goodput attrib: %s: cannot list jobs: %s\n", db, gp_store_errmsg(st));
        gp_store_close(st);
        return GP_EXIT_FAIL;
    }
    int64_t now = wall_ns();
    /* 100 columns: 76 go to the fixed columns; JOB and NAME share the rest, and NAME is left
     * out when every job's name is its id. Longer values are shortened in the middle.
     * --wide: both as wide as their longest value. */
    int idw = 3, namew = 4, names = 0;
    for (size_t i = 0; i < nj; i++) {
        int l = (int)strlen(jobs[i].id), n = (int)strlen(jobs[i].name);
        if (l > idw) idw = l;
        if (n > namew) namew = n;
        if (jobs[i].name[0] && strcmp(jobs[i].name, jobs[i].id) != 0) names = 1;
    }
    if (!wide) {
        if (!names) namew = 0;
        int room = GP_TEXT_WIDTH - 76 - (names ? 1 : 0);
        if (names && idw + namew > room) {
            if (idw > room / 2 && namew > room / 2)
                idw = room / 2, namew = room - room / 2;
            else if (idw > namew)
                idw = room - namew;
            else
                namew = room - idw;
        } else if (!names && idw > room)
            idw = room;
    }
    if (json)
        printf("{\"jobs\":[");
    else
        printf("%-*s%s%-*s %-8s %-10s %4s %8s %8s %8s %-7s %4s %s\n", idw, "JOB", namew ? " " : "",
               namew, namew ? "NAME" : "", "ORIGIN", "STATE", "GPUS", "QUEUE_S", "READY_S", "RUN_S",
               "GPU_H", "EXIT", "FINDING");
    for (size_t i = 0; i < nj; i++) {
        gp_job *j = &jobs[i];
        gp_alloc *al = NULL;
        size_t na = 0;
        gp_store_job_allocs(st, j->id, &al, &na);
        /* Allocated GPU-time comes from the accounting (engine/accounting/job_summary.c), the same
         * number `goodput report` prints: a running job's open allocation ends at the
         * store's last sample, not at today's wall clock. Unknown (< 0) when the job
         * cannot be summarised. */
        double gpu_s = -1;
        gp_job_summary sum;
        gp_summary_opts so = {0};
        if (gp_job_summary_compute(st, j->id, &so, &sum, err, sizeof err) == 0 &&
            sum.allocated_gpu_h >= 0)
            gpu_s = sum.allocated_gpu_h * 3600.0;
        gp_finding f;
        int not_ready = j->ended_ns >= 0 && gp_attrib_not_ready_finding(j, al, na, now, &f);
        if (json) {
            printf("%s{\"id\":", i ? "," : "");
            json_str(j->id);
            printf(",\"name\":");
            json_str(j->name);
            printf(",\"user\":");
            json_str(j->user);
            printf(",\"origin\":\"%s\",\"submitted_ns\":", gp_origin_name(j->origin));
            json_ns(j->submitted_ns);
            printf(",\"allocated_ns\":");
            json_ns(j->allocated_ns);
            printf(",\"ready_ns\":");
            json_ns(j->ready_ns);
            printf(",\"ended_ns\":");
            json_ns(j->ended_ns);
            printf(",\"exit_state\":");
            json_str(j->exit_state);
            printf(",\"exit_code\":");
            if (j->ended_ns >= 0)
                printf("%lld", (long long)j->exit_code);
            else
                printf("null");
            printf(",\"queue_wait_s\":");
            json_num(secs(j->submitted_ns, j->allocated_ns), 3);
            printf(",\"time_to_ready_s\":");
            json_num(secs(j->allocated_ns, j->ready_ns), 3);
            printf(",\"gpu_s\":");
            json_num(gpu_s, 3);
            printf(",\"gpus\":[");
            for (size_t k = 0; k < na; k++) {
                printf("%s{\"uuid\":", k ? "," : "");
                json_str(al[k].uuid);
                printf(",\"from_ns\":");
                json_ns(al[k].from_ns);
                printf(",\"to_ns\":");
                json_ns(al[k].to_ns);
                printf("}");
            }
            printf("]");
            if (not_ready)
                printf(",\"finding\":{\"class\":\"%s\",\"wasted_gpu_s\":%.3f}",
                       gp_finding_class_name(f.cls), f.wasted_gpu_s);
            printf("}");
        } else {
            char idb[256], nmb[256];
            printf("%-*s%s%-*s %-8s %-10s %4zu", idw, gp_ellipsize(j->id, idw, idb, sizeof idb),
                   namew ? " " : "", namew,
                   namew ? gp_ellipsize(j->name[0] ? j->name : "-", namew, nmb, sizeof nmb) : "",
                   gp_origin_name(j->origin),
                   j->exit_state[0] ? j->exit_state
                                    : (j->allocated_ns >= 0 ? "running" : "pending"),
                   na);
            text_num(secs(j->submitted_ns, j->allocated_ns), 8, 1);
            text_num(secs(j->allocated_ns, j->ready_ns), 8, 1);
            text_num(secs(j->allocated_ns, j->ended_ns), 8, 1);
            /* GPU_H at the report's precision (2 decimals), so the two agree. */
            char gh[32] = "-";
            if (gpu_s >= 0) snprintf(gh, sizeof gh, "%.2f", gpu_s / 3600.0);
            printf(" %-7s", gh);
            if (j->ended_ns >= 0)
                printf(" %4lld", (long long)j->exit_code);
            else
                printf(" %4s", "-");
            printf(" %s\n", not_ready ? "not_ready" : "-");
        }
        free(al);
    }
    if (json) printf("]}\n");
    free(jobs);
    gp_store_close(st);
    return GP_EXIT_OK;
}

int gp_cmd_attrib(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? GP_EXIT_USAGE : GP_EXIT_OK;
    }
    if (!strcmp(argv[1], "owner")) return cmd_owner(argc - 1, argv + 1);
    if (!strcmp(argv[1], "slurm-poll")) return cmd_slurm_poll(argc - 1, argv + 1);
    if (!strcmp(argv[1], "jobs")) return cmd_jobs(argc - 1, argv + 1);
    fprintf(stderr, "goodput attrib: unknown subcommand '%s' (owner, slurm-poll, jobs)\n", argv[1]);
    return GP_EXIT_USAGE;
}
