/* gen_month.c: writes a month of telemetry straight into a store through the store API
 * (gp_store_put_sample, so rollups are written as the agent writes them), then times a
 * 30-day read of every device from the best resolution (gp_store_samples_best) and the
 * time-weighted means a report computes from it.
 *
 * Usage: gen_month DB DAYS GPUS RETENTION_DAYS [COMMIT_EVERY_S]
 * (commit interval of simulated seconds, default 5 as the agent's --flush; it changes how
 * often the WAL is synced, not what is stored). With the environment GEN_MONTH_REUSE=1
 * and DB already there, the writing is skipped and only the reads are timed, the store
 * opened read-only (DAYS and GPUS must be those it was written with; a store still being
 * written is read as it stands).
 * Prints one JSON line: samples written, write seconds, store bytes, read seconds,
 * points read and the resolution used, and the seconds gp_job_summary_compute takes for
 * one job holding every GPU for the whole span (what `goodput report` computes for it:
 * 1-minute rollups for its whole minutes, job_summary.c fold_long), and the same summary
 * reading raw rows wherever they exist (rollup_min_ns < 0), with the largest relative
 * difference between the two over the figures the rollups must keep. Samples are 1 s apart with the
 * fields a simulated H100 reports; retention runs every simulated hour like the agent's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/accounting/job_summary.h"
#include "store/rollup.h"
#include "store/store.h"

#define S 1000000000LL

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long long file_bytes(const char *path, const char *suffix) {
    char p[1200];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    struct stat sb;
    return stat(p, &sb) == 0 ? (long long)sb.st_size : 0;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: gen_month DB DAYS GPUS RETENTION_DAYS [COMMIT_EVERY_S]\n");
        return 2;
    }
    const char *db = argv[1];
    int days = atoi(argv[2]), gpus = atoi(argv[3]);
    int64_t every = argc == 6 ? atoi(argv[5]) : 5;
    if (every < 1) every = 1;
    int64_t retention_ns = (int64_t)atoi(argv[4]) * 86400 * S;
    char err[256];
    gp_store *s;
    const int64_t t0 = 1735689600LL * S; /* 2025-01-01, an hour boundary */
    const int64_t n_s = (int64_t)days * 86400;
    const char *reuse = getenv("GEN_MONTH_REUSE");
    int reusing = reuse && !strcmp(reuse, "1") && file_bytes(db, "") > 0;
    double write_s = 0;
    if (!reusing) {
        if (gp_store_open(db, 0, &s, err, sizeof err) != 0) {
            fprintf(stderr, "gen_month: %s\n", err);
            return 1;
        }
        gp_store_tune_for_devices(s, (size_t)gpus);
        uint64_t energy[1024] = {0};
        double w0 = now_s();
        gp_store_begin(s);
        gp_job job = {0};
        snprintf(job.id, sizeof job.id, "bench-month");
        snprintf(job.name, sizeof job.name, "bench-month");
        job.submitted_ns = job.allocated_ns = t0;
        job.ready_ns = job.ended_ns = -1;
        job.exit_code = -1;
        gp_store_put_job(s, &job);
        for (int g = 0; g < gpus; g++) {
            gp_alloc al = {0};
            snprintf(al.job_id, sizeof al.job_id, "bench-month");
            snprintf(al.uuid, sizeof al.uuid, "GPU-bench-%04d", g);
            al.from_ns = t0;
            al.to_ns = t0 + n_s * S;
            gp_store_put_alloc(s, &al);
        }
        for (int64_t i = 1; i <= n_s; i++) {
            for (int g = 0; g < gpus; g++) {
                gp_sample x = {0};
                snprintf(x.uuid, sizeof x.uuid, "GPU-bench-%04d", g);
                x.ts_ns = t0 + i * S;
                double phase = (double)((i + g * 97) % 600) / 600.0; /* a 10-minute cycle */
                double u = phase < 0.8 ? 0.92 : 0.05;
                x.valid = GP_F_GPU_UTIL | GP_F_SM_ACTIVE | GP_F_TENSOR_ACTIVE | GP_F_DRAM_ACTIVE |
                          GP_F_MEM_USED | GP_F_MEM_TOTAL | GP_F_POWER | GP_F_ENERGY |
                          GP_F_SM_CLOCK | GP_F_MEM_CLOCK | GP_F_TEMP | GP_F_THROTTLE |
                          GP_F_PCIE_TX | GP_F_PCIE_RX;
                x.gpu_util = u;
                x.sm_active = u * 0.8;
                x.tensor_active = u * 0.45;
                x.dram_active = u * 0.3;
                x.mem_total_bytes = 80ull << 30;
                x.mem_used_bytes = (uint64_t)(60.5 * (double)(1ull << 30));
                x.power_w = 120 + 560 * u + (double)(i % 7);
                energy[g] += (uint64_t)(x.power_w * 1000);
                x.energy_mj = energy[g];
                x.sm_clock_mhz = 1980;
                x.mem_clock_mhz = 2619;
                x.temp_c = 45 + 20 * u;
                x.throttle_reasons = 0;
                x.pcie_tx_bytes = (uint64_t)i * 1000000;
                x.pcie_rx_bytes = (uint64_t)i * 3000000;
                if (gp_store_put_sample(s, &x) != 0) {
                    fprintf(stderr, "gen_month: put: %s\n", gp_store_errmsg(s));
                    return 1;
                }
            }
            if (i % every == 0) {
                gp_store_commit(s);
                gp_store_begin(s);
            }
            if (retention_ns > 0 && i % 3600 == 0) {
                gp_store_commit(s);
                gp_store_retain(s, t0 + i * S - retention_ns);
                gp_store_begin(s);
            }
        }
        gp_store_commit(s);
        write_s = now_s() - w0;
        gp_store_close(s);
        sqlite3 *h;
        sqlite3_open(db, &h);
        sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        sqlite3_close(h);
    }
    long long bytes = file_bytes(db, "") + file_bytes(db, "-wal");

    /* The read a 30-day report does: every device over the whole span. */
    double r0 = now_s();
    if (gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err) != 0) {
        fprintf(stderr, "gen_month: %s\n", err);
        return 1;
    }
    size_t points = 0;
    int64_t step = 0;
    double util_mean = 0;
    for (int g = 0; g < gpus; g++) {
        char uuid[64];
        snprintf(uuid, sizeof uuid, "GPU-bench-%04d", g);
        gp_sample *x;
        size_t n;
        if (gp_store_samples_best(s, uuid, t0, t0 + (n_s + 1) * S, 50000, &x, &n, &step) != 0) {
            fprintf(stderr, "gen_month: read: %s\n", gp_store_errmsg(s));
            return 1;
        }
        double sum = 0, w = 0;
        int64_t prev = t0;
        for (size_t k = 0; k < n; k++) { /* time-weighted, as job_summary folds */
            double dt = (double)(x[k].ts_ns - prev);
            prev = x[k].ts_ns;
            if (gp_has(x[k].valid, GP_F_GPU_UTIL)) {
                sum += x[k].gpu_util * dt;
                w += dt;
            }
        }
        util_mean += w > 0 ? sum / w / gpus : 0;
        points += n;
        free(x);
    }
    gp_store_close(s);
    double read_s = now_s() - r0;

    /* The job's summary, from a fresh read-only open as `goodput report` does: as it
     * reads by default, then from raw rows wherever they exist (as before fold_long). */
    gp_job_summary js, jr;
    double report_s = 0, report_raw_s = 0, report_cpu_s = 0, report_raw_cpu_s = 0;
    /* Both over the same span: a store still being written (GEN_MONTH_REUSE) grows
     * between the two passes. */
    int64_t span0 = 0, span1 = 0;
    for (int pass = 0; pass < 2; pass++) {
        gp_summary_opts o = {.rollup_min_ns = pass ? -1 : 0, .t0_ns = span0, .t1_ns = span1};
        double j0 = now_s(), c0 = cpu_now_s();
        if (gp_store_open(db, GP_STORE_READONLY, &s, err, sizeof err) != 0) {
            fprintf(stderr, "gen_month: %s\n", err);
            return 1;
        }
        if (pass == 0) { /* what a summary without bounds takes: the store's span */
            gp_store_time_span(s, &span0, &span1);
            o.t0_ns = span0, o.t1_ns = span1;
        }
        if (gp_job_summary_compute(s, "bench-month", &o, pass ? &jr : &js, err, sizeof err) != 0) {
            fprintf(stderr, "gen_month: summary: %s\n", err);
            return 1;
        }
        gp_store_close(s);
        *(pass ? &report_raw_s : &report_s) = now_s() - j0;
        *(pass ? &report_raw_cpu_s : &report_cpu_s) = cpu_now_s() - c0;
    }
    double fig[2][7] = {{js.allocated_gpu_h, js.busy_gpu_h, js.mean_gpu_util, js.mean_sm_active,
                         js.mean_tensor_active, js.mean_mem_used_frac, js.energy_kwh},
                        {jr.allocated_gpu_h, jr.busy_gpu_h, jr.mean_gpu_util, jr.mean_sm_active,
                         jr.mean_tensor_active, jr.mean_mem_used_frac, jr.energy_kwh}};
    double max_rel = 0;
    for (int i = 0; i < 7; i++) {
        double d = fabs(fig[0][i] - fig[1][i]) / fmax(fabs(fig[1][i]), 1e-300);
        if (d > max_rel) max_rel = d;
    }
    printf("{\"days\": %d, \"gpus\": %d, \"retention_days\": %s, \"samples\": %lld,"
           " \"write_s\": %.1f, \"store_bytes\": %lld, \"read_s\": %.3f, \"points\": %zu,"
           " \"step_s\": %lld, \"util_mean\": %.4f, \"commit_every_s\": %lld,"
           " \"report_s\": %.3f, \"report_cpu_s\": %.3f, \"report_raw_s\": %.3f,"
           " \"report_raw_cpu_s\": %.3f, \"max_rel_diff\": %.2e,"
           " \"job_allocated_gpu_h\": %.2f, \"job_busy_gpu_h\": %.2f,"
           " \"job_mean_util\": %.4f, \"job_energy_kwh\": %.2f}\n",
           days, gpus, argv[4], (long long)(n_s * gpus), write_s, bytes, read_s, points,
           (long long)(step / S), util_mean, (long long)every, report_s, report_cpu_s, report_raw_s,
           report_raw_cpu_s, max_rel, js.allocated_gpu_h, js.busy_gpu_h, js.mean_gpu_util,
           js.energy_kwh);
    return 0;
}
