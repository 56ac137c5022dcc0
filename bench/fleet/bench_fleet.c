/* bench_fleet.c: ledger ingest posing as a fleet of agents. Each simulated node sends,
 * once per simulated minute (the agent's default collect interval), what its ledger pass
 * spools for 8 one-GPU jobs: a job row and the open window's row per job, plus the
 * allocation row when a job starts and the closed window when an hour ends. Rows are
 * built as the agent builds them (canonical JSON) and sent with gp_ledger_pg_apply, one
 * batch per node-minute. P worker processes share the nodes, one connection each.
 *
 * Usage: bench_fleet URL NODES GPUS MINUTES PROCS
 * Prints one JSON line: rows, wall seconds, rows/s, client CPU per node-minute.
 *
 *        bench_fleet --collect STORE
 * The agent's other half: CPU of the ledger's collect passes (one per 5 minutes of source
 * time, the agent's default) over a finished node store (an 8-GPU demo hour), replayed
 * pass by pass with the spool pointed at an unreachable server (nothing is pushed);
 * reported per node-minute. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/accounting/goodput.h"
#include "fleet/ledger.h"
#include "fleet/ledger_pg.h"
#include "engine/accounting/job_summary.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *row_json(const char *host, const char *job, int kind_window, long long minute,
                      unsigned *seed) {
    json_t *o = json_object();
    json_object_set_new(o, "host", json_string(host));
    json_object_set_new(o, "job_id", json_string(job));
    json_object_set_new(o, "cluster", json_string("bench"));
    json_object_set_new(o, "partition", json_string("gpu"));
    json_object_set_new(o, "user_name", json_sprintf("user%02u", rand_r(seed) % 50));
    json_object_set_new(o, "gpu_model", json_string("H100-SXM"));
    json_object_set_new(o, "n_gpus", json_integer(1));
    double alloc = 60.0 * (double)(minute % 360 + 1), left = alloc;
    json_object_set_new(o, "allocated_gpu_s", json_real(alloc));
    for (int b = 0; b < GP_B__COUNT; b++) {
        char name[64];
        snprintf(name, sizeof name, "%s_gpu_s", gp_bucket_name((gp_bucket)b));
        double v = b == GP_B__COUNT - 1 ? left : left * (b == 0 ? 0.7 : 0.1);
        left -= v;
        json_object_set_new(o, name, json_real(v));
    }
    json_object_set_new(o, "goodput", json_real(0.7));
    json_object_set_new(o, "busy_gpu_s", json_real(alloc * 0.8));
    if (kind_window) {
        long long ws = (minute / 60) * 3600LL * 1000000000LL;
        json_object_set_new(o, "window_start_ns", json_integer(ws));
        json_object_set_new(o, "window_end_ns", json_integer(ws + 3600LL * 1000000000LL));
    } else {
        json_object_set_new(o, "name", json_string(job));
        json_object_set_new(o, "origin", json_string("slurm"));
        json_object_set_new(o, "kind", json_string("training"));
        json_object_set_new(o, "allocated_ns",
                            json_integer((minute - minute % 360) * 60000000000LL));
        json_object_set_new(o, "queue_wait_s", json_real(42));
        json_object_set_new(o, "energy_kwh", json_real(alloc / 3600 * 0.7));
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(o);
    return s;
}

static long run_worker(const char *url, int w, int procs, int nodes, int gpus, int minutes) {
    char err[512];
    PGconn *c = gp_ledger_pg_connect(url, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    unsigned seed = (unsigned)w * 7919u + 1;
    long rows = 0;
    int cap = gpus * 4;
    gp_ledger_row *r = calloc((size_t)cap, sizeof *r);
    char **own = calloc((size_t)cap, sizeof *own);
    for (int m = 0; m < minutes; m++) {
        for (int n = w; n < nodes; n += procs) {
            char host[32];
            snprintf(host, sizeof host, "node%04d", n);
            int k = 0;
            for (int g = 0; g < gpus; g++) {
                char job[48];
                snprintf(job, sizeof job, "%d-%d-%d", n, g, m / 360);
                own[k] = row_json(host, job, 0, m, &seed), r[k].kind = "job", r[k].payload = own[k],
                k++;
                own[k] = row_json(host, job, 1, m, &seed), r[k].kind = "window",
                r[k].payload = own[k], k++;
                if (m % 360 == 0) {
                    char a[256];
                    snprintf(a, sizeof a,
                             "{\"from_ns\":%lld,\"gpu_model\":\"H100-SXM\",\"host\":\"%s\",\"job_"
                             "id\":\"%s\","
                             "\"to_ns\":null,\"uuid\":\"GPU-%d-%d\"}",
                             (long long)m * 60000000000LL, host, job, n, g);
                    own[k] = strdup(a), r[k].kind = "alloc", r[k].payload = own[k], k++;
                }
            }
            if (gp_ledger_pg_apply(c, r, (size_t)k, err, sizeof err) != 0) {
                fprintf(stderr, "%s\n", err);
                exit(1);
            }
            rows += k;
            for (int i = 0; i < k; i++)
                free(own[i]);
        }
    }
    free(r);
    free(own);
    PQfinish(c);
    return rows;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int collect_bench(const char *path) {
    char err[512];
    gp_store *s;
    if (gp_store_open(path, 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int64_t t0, t1;
    if (gp_store_time_span(s, &t0, &t1) != 0) return 1;
    gp_ledger_opts o = {.url = "postgresql:///x?host=/nonexistent", .host = "bench"};
    gp_ledger *l;
    if (gp_ledger_open(&o, s, &l, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int passes = 0;
    const int64_t every = 300000000000LL;
    double minutes = (double)(t1 - t0) / 60e9;
    double c0 = cpu_s();
    for (int64_t now = t0 + every; now <= t1; now += every, passes++)
        if (gp_ledger_collect(l, now, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
    double c1 = cpu_s();
    if (gp_ledger_drain(l, 1, err, sizeof err) == 0) return 1; /* nothing should connect */
    double c2 = cpu_s();
    const gp_ledger_stats *st = gp_ledger_get_stats(l);
    printf("{\"collect_passes\": %d, \"rows_spooled\": %llu, \"collect_cpu_ms_per_node_minute\": "
           "%.3f, "
           "\"final_exact_pass_cpu_ms\": %.1f}\n",
           passes, (unsigned long long)st->collected, (c1 - c0) * 1e3 / minutes, (c2 - c1) * 1e3);
    gp_ledger_close(l);
    gp_store_close(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--collect")) return collect_bench(argv[2]);
    if (argc != 6) {
        fprintf(stderr, "usage: bench_fleet URL NODES GPUS MINUTES PROCS\n");
        return 2;
    }
    const char *url = argv[1];
    int nodes = atoi(argv[2]), gpus = atoi(argv[3]), minutes = atoi(argv[4]), procs = atoi(argv[5]);
    int fds[64][2];
    double t0 = now_s();
    for (int w = 0; w < procs && w < 64; w++) {
        if (pipe(fds[w]) != 0) return 1;
        if (fork() == 0) {
            long rows = run_worker(url, w, procs, nodes, gpus, minutes);
            if (write(fds[w][1], &rows, sizeof rows) != (ssize_t)sizeof rows) _exit(1);
            _exit(0);
        }
    }
    long total = 0;
    for (int w = 0; w < procs && w < 64; w++) {
        long rows = 0;
        if (read(fds[w][0], &rows, sizeof rows) != (ssize_t)sizeof rows) return 1;
        total += rows;
    }
    while (wait(NULL) > 0) {
    }
    double wall = now_s() - t0;
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    double node_minutes = (double)nodes * minutes;
    printf("{\"nodes\": %d, \"gpus_per_node\": %d, \"simulated_minutes\": %d, \"procs\": %d, "
           "\"rows\": %ld, "
           "\"wall_s\": %.3f, \"rows_per_s\": %.0f, \"node_minutes_per_s\": %.1f, "
           "\"client_cpu_ms_per_node_minute\": %.4f}\n",
           nodes, gpus, minutes, procs, total, wall, (double)total / wall, node_minutes / wall,
           cpu * 1e3 / node_minutes);
    return 0;
}
