/* bench_serve.c: benchmarks for src/serve (driven by bench/serve/run.sh).
 *
 *   bench_serve fill-fleet DB [H [infer]]
 *                                 8 GPUs, 50 jobs, 1 + H h of 1-second samples: 42 jobs
 *                                 ended (1 GPU each, about 10 min, back to back, in the
 *                                 first hour), 8 running for the last H hours (default 1),
 *                                 each with a step per second, or with `infer` each an
 *                                 inference server receiving about a request a second
 *                                 (bench_requests.h)
 *   bench_serve fill-day DB [infer] one job on one GPU for 24 h at 1-second samples and one
 *                                 step per second (86,400 of each), or with `infer` about
 *                                 a request a second, still running
 *   bench_serve append DB         what the agent adds to a fleet or day store while it is
 *                                 served: every wall second, the next second's sample of
 *                                 each GPU and the next step of each running training job
 *                                 or the requests that ended in that second of each
 *                                 running server (one transaction), until SIGTERM; so
 *                                 scrapes see the running jobs move, as they would live
 *   bench_serve serve DB PORT     serve DB on 127.0.0.1:PORT until SIGTERM
 *   bench_serve latency DB N      p50/p95/max wall latency over HTTP (libcurl, keep-alive)
 *                                 of the dashboard's job-view requests, N times each
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_requests.h"
#include "serve/serve.h"
#include "store/store.h"

#define SEC 1000000000LL
#define T0 1767225600000000000LL

static void put_device(gp_store *s, int i) {
    gp_device d = {0};
    snprintf(d.uuid, sizeof d.uuid, "GPU-bench-%04d", i);
    d.index = i;
    snprintf(d.name, sizeof d.name, "NVIDIA H100 80GB HBM3");
    d.spec = gp_spec_lookup(d.name);
    d.memory_total_bytes = 80ull << 30;
    gp_store_put_device(s, &d);
}

static void put_sample(gp_store *s, int dev, int64_t ts, double u) {
    gp_sample x = {0};
    snprintf(x.uuid, sizeof x.uuid, "GPU-bench-%04d", dev);
    x.ts_ns = ts;
    x.valid = GP_F_GPU_UTIL | GP_F_SM_ACTIVE | GP_F_TENSOR_ACTIVE | GP_F_DRAM_ACTIVE |
              GP_F_MEM_USED | GP_F_MEM_TOTAL | GP_F_POWER | GP_F_ENERGY | GP_F_TEMP | GP_F_SM_CLOCK;
    x.gpu_util = u;
    x.sm_active = 0.8 * u;
    x.tensor_active = 0.5 * u;
    x.dram_active = 0.3 * u;
    x.mem_used_bytes = 48ull << 30;
    x.mem_total_bytes = 80ull << 30;
    x.power_w = 100 + 500 * u;
    x.energy_mj = (uint64_t)((ts - T0) / 1000000) * 400;
    x.temp_c = 60;
    x.sm_clock_mhz = 1980;
    gp_store_put_sample(s, &x);
}

static void put_job(gp_store *s, const char *id, int dev, int64_t from, int64_t to, int ended,
                    int infer) {
    gp_job j = {0};
    snprintf(j.id, sizeof j.id, "%s", id);
    snprintf(j.name, sizeof j.name, "%s", id);
    snprintf(j.user, sizeof j.user, "user%d", dev);
    j.origin = GP_ORIGIN_SLURM;
    j.submitted_ns = from - 60 * SEC;
    j.allocated_ns = from;
    j.ready_ns = -1;
    j.ended_ns = ended ? to : -1;
    j.exit_code = ended ? 0 : -1;
    if (ended) snprintf(j.exit_state, sizeof j.exit_state, "completed");
    snprintf(j.unit_name, sizeof j.unit_name, "samples");
    gp_store_put_job(s, &j);
    gp_alloc a = {0};
    snprintf(a.job_id, sizeof a.job_id, "%s", id);
    snprintf(a.uuid, sizeof a.uuid, "GPU-bench-%04d", dev);
    a.from_ns = from;
    a.to_ns = ended ? to : -1;
    gp_store_put_alloc(s, &a);
    if (infer) { /* ready 30 s in; requests stored as they end, up to `to` */
        br_put_requests(s, id, from + 30 * SEC, from, to);
        return;
    }
    int64_t step = 0;
    for (int64_t t = from + 30 * SEC; t < to; t += SEC) {
        gp_event e;
        gp_event_init(&e, GP_EV_STEP);
        snprintf(e.job_id, sizeof e.job_id, "%s", id);
        e.ts_ns = t + SEC;
        e.step_start_ns = t;
        e.step = ++step;
        e.units = 256;
        e.rank = 0;
        gp_store_put_event(s, &e);
    }
}

static gp_store *open_new(const char *db) {
    char err[256];
    gp_store *s;
    unlink(db);
    if (gp_store_open(db, 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    return s;
}

static void fill_fleet(const char *db, int hours, int infer) {
    gp_store *s = open_new(db);
    gp_store_begin(s);
    const int64_t span = (1 + (int64_t)hours) * 3600 * SEC;
    for (int d = 0; d < 8; d++) {
        put_device(s, d);
        for (int64_t t = T0 + SEC; t <= T0 + span; t += SEC)
            put_sample(s, d, t, 0.5 + 0.4 * ((t / SEC + d) % 7) / 7.0);
    }
    int n = 0;
    char id[32];
    /* 42 ended jobs, ~20 min each, back to back on the 8 GPUs during the first hour. */
    for (int k = 0; k < 42; k++) {
        int dev = k % 8, slot = k / 8;
        int64_t from = T0 + slot * 11 * 60 * SEC, to = from + 10 * 60 * SEC;
        snprintf(id, sizeof id, "ended-%02d", k);
        put_job(s, id, dev, from, to, 1, 0);
        n++;
    }
    for (int d = 0; d < 8; d++) {
        snprintf(id, sizeof id, "running-%d", d);
        put_job(s, id, d, T0 + 3600 * SEC, T0 + span, 0, infer);
        n++;
    }
    gp_store_commit(s);
    gp_store_close(s);
    printf("fleet store: 8 GPUs, %d jobs, %lld samples, running jobs %d h old%s\n", n,
           8LL * (int64_t)(span / SEC), hours, infer ? ", inference servers" : "");
}

static void fill_day(const char *db, int infer) {
    gp_store *s = open_new(db);
    gp_store_begin(s);
    put_device(s, 0);
    const int64_t span = 24 * 3600 * SEC;
    for (int64_t t = T0 + SEC; t <= T0 + span; t += SEC)
        put_sample(s, 0, t, 0.6 + 0.3 * ((t / SEC) % 11) / 11.0);
    put_job(s, "day-job", 0, T0, T0 + span, 0, infer);
    gp_store_commit(s);
    gp_store_close(s);
    printf("day store: 1 GPU, 1 job, 86400 samples, %s\n",
           infer ? "about 86400 requests" : "86400 steps");
}

static volatile sig_atomic_t stop;
static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

/* From the newest sample's time of the store, for its running jobs from their last step. */
static int append(const char *db) {
    char err[256];
    gp_store *s;
    if (gp_store_open(db, 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    sqlite3 *h = gp_store_db(s);
    sqlite3_stmt *st;
    int64_t last = 0;
    int ndev = 0;
    if (sqlite3_prepare_v2(h, "SELECT max(ts_ns), count(DISTINCT uuid) FROM samples", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        last = sqlite3_column_int64(st, 0);
        ndev = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    struct {
        char id[64];
        int64_t step;
        int infer; /* an inference server: requests, not steps */
    } run[64];
    int nrun = 0;
    if (sqlite3_prepare_v2(h,
                           "SELECT j.id, (SELECT max(step) FROM events e WHERE"
                           " e.job_id = j.id), EXISTS(SELECT 1 FROM events e WHERE"
                           " e.job_id = j.id AND e.kind = ?1) FROM jobs j WHERE"
                           " j.ended_ns IS NULL OR j.ended_ns <= 0",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_int(st, 1, GP_EV_REQUEST) == SQLITE_OK)
        while (nrun < 64 && sqlite3_step(st) == SQLITE_ROW) {
            snprintf(run[nrun].id, sizeof run[nrun].id, "%s", sqlite3_column_text(st, 0));
            run[nrun].infer = sqlite3_column_int(st, 2);
            run[nrun++].step = sqlite3_column_int64(st, 1);
        }
    sqlite3_finalize(st);
    fprintf(stderr, "append: %d GPUs, %d running jobs, from +%lld s\n", ndev, nrun,
            (long long)((last - T0) / SEC));
    while (!stop) {
        last += SEC;
        gp_store_begin(s);
        for (int d = 0; d < ndev; d++)
            put_sample(s, d, last, 0.5 + 0.4 * ((last / SEC + d) % 7) / 7.0);
        for (int k = 0; k < nrun; k++) {
            if (run[k].infer) {
                br_put_requests(s, run[k].id, 0, last - SEC, last);
                continue;
            }
            gp_event e;
            gp_event_init(&e, GP_EV_STEP);
            snprintf(e.job_id, sizeof e.job_id, "%.63s", run[k].id);
            e.ts_ns = last;
            e.step_start_ns = last - SEC;
            e.step = ++run[k].step;
            e.units = 256;
            e.rank = 0;
            gp_store_put_event(s, &e);
        }
        gp_store_commit(s);
        sleep(1);
    }
    gp_store_close(s);
    return 0;
}

static int serve(const char *db, const char *port) {
    char listen[64], err[256];
    snprintf(listen, sizeof listen, "127.0.0.1:%s", port);
    gp_serve_opts o = {.listen = listen, .db_path = db};
    gp_serve *s;
    if (gp_serve_start(&o, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    while (!stop)
        pause();
    gp_serve_stop(s);
    return 0;
}

static size_t sink(char *p, size_t sz, size_t n, void *ctx) {
    (void)p;
    *(size_t *)ctx += sz * n;
    return sz * n;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int latency(const char *db, int n) {
    char err[256];
    gp_serve_opts o = {.listen = "127.0.0.1:0", .db_path = db};
    gp_serve *s;
    if (gp_serve_start(&o, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const char *paths[] = {"/api/v1/jobs/day-job/series?points=400",
                           "/api/v1/jobs/day-job/series?points=2000", "/api/v1/jobs/day-job",
                           "/api/v1/jobs/day-job?windows=12",
                           "/api/v1/devices/GPU-bench-0000/series?points=400"};
    CURL *c = curl_easy_init();
    double *ms = calloc((size_t)n, sizeof *ms);
    printf("%-52s %8s %8s %8s %8s %9s\n", "request (24 h at 1 s)", "cold ms", "p50 ms", "p95 ms",
           "max ms", "bytes");
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        char url[256];
        snprintf(url, sizeof url, "http://127.0.0.1:%d%s", gp_serve_port(s), paths[p]);
        size_t bytes = 0;
        double cold = 0;
        for (int i = -2; i < n; i++) { /* the first (cold) request and one more are not counted */
            bytes = 0;
            curl_easy_setopt(c, CURLOPT_URL, url);
            curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
            curl_easy_setopt(c, CURLOPT_WRITEDATA, &bytes);
            double t0 = mono();
            long code = 0;
            if (curl_easy_perform(c) != CURLE_OK) return 1;
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
            if (code != 200) {
                fprintf(stderr, "%s -> %ld\n", url, code);
                return 1;
            }
            if (i >= 0) ms[i] = 1e3 * (mono() - t0);
            if (i == -2) cold = 1e3 * (mono() - t0);
        }
        qsort(ms, (size_t)n, sizeof *ms, cmp_d);
        printf("%-52s %8.1f %8.1f %8.1f %8.1f %9zu\n", paths[p], cold, ms[n / 2],
               ms[(int)(0.95 * (n - 1))], ms[n - 1], bytes);
    }
    curl_easy_cleanup(c);
    free(ms);
    gp_serve_stop(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "fill-fleet"))
        fill_fleet(argv[2], argc >= 4 && atoi(argv[3]) > 0 ? atoi(argv[3]) : 1,
                   argc >= 5 && !strcmp(argv[4], "infer"));
    else if (argc >= 3 && !strcmp(argv[1], "fill-day"))
        fill_day(argv[2], argc >= 4 && !strcmp(argv[3], "infer"));
    else if (argc >= 3 && !strcmp(argv[1], "append"))
        return append(argv[2]);
    else if (argc >= 4 && !strcmp(argv[1], "serve"))
        return serve(argv[2], argv[3]);
    else if (argc >= 4 && !strcmp(argv[1], "latency"))
        return latency(argv[2], atoi(argv[3]));
    else {
        fprintf(stderr,
                "usage: bench_serve fill-fleet DB [H [infer]] | fill-day DB [infer] | append DB |"
                " serve DB PORT | latency DB N\n");
        return 2;
    }
    return 0;
}
