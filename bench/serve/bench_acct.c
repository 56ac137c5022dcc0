/* bench_acct.c: cost of summarising a running job (engine/accounting/job_summary.h), the work
 * behind every /metrics scrape and dashboard refresh of a running job.
 *
 *   bench_acct DB JOB UUID ROUNDS [infer]
 * DB is a store made by `bench_serve fill-day` (one job, one GPU, 24 h of 1-second samples
 * and one step per second; with `infer`, `bench_serve fill-day DB infer`: an inference
 * server with about a request a second, and the refreshes append its requests). Prints,
 * in ms of CPU time:
 *   full       gp_job_summary_compute: the whole history read from the store
 *   first      the first update of an incremental state (the same work, plus keeping it)
 *   refresh    an update after 15 s more samples and steps were stored (what a scrape
 *              every 15 s costs), mean over ROUNDS
 *   idle       an update when nothing new was stored
 * and checks that the incremental result equals a full computation at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_requests.h"
#include "engine/accounting/job_summary.h"
#include "store/store.h"

#define SEC 1000000000LL

/* CPU time of this (single-threaded) process: the shared VM's load inflates wall time
 * many times over, not the work done. */
static double mono(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void append(gp_store *s, const char *job, const char *uuid, int64_t from, int n,
                   int64_t *step, int infer) {
    gp_store_begin(s);
    for (int i = 1; i <= n; i++) {
        int64_t ts = from + i * SEC;
        gp_sample x = {0};
        snprintf(x.uuid, sizeof x.uuid, "%s", uuid);
        x.ts_ns = ts;
        x.valid = GP_F_GPU_UTIL | GP_F_SM_ACTIVE | GP_F_ENERGY | GP_F_MEM_USED | GP_F_MEM_TOTAL;
        x.gpu_util = 0.7;
        x.sm_active = 0.5;
        x.mem_used_bytes = 40ull << 30;
        x.mem_total_bytes = 80ull << 30;
        x.energy_mj = (uint64_t)(ts / 1000000 % 1000000000000LL) * 400;
        gp_store_put_sample(s, &x);
        if (infer) {
            br_put_requests(s, job, 0, ts - SEC, ts);
            continue;
        }
        gp_event e;
        gp_event_init(&e, GP_EV_STEP);
        snprintf(e.job_id, sizeof e.job_id, "%s", job);
        e.ts_ns = ts;
        e.step_start_ns = ts - SEC;
        e.step = ++*step;
        e.units = 256;
        e.rank = 0;
        gp_store_put_event(s, &e);
    }
    gp_store_commit(s);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: bench_acct DB JOB UUID ROUNDS [infer]\n");
        return 2;
    }
    const char *job = argv[2], *uuid = argv[3];
    int rounds = atoi(argv[4]), infer = argc > 5 && !strcmp(argv[5], "infer");
    char err[256];
    gp_store *s;
    if (gp_store_open(argv[1], 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    gp_job_summary full, inc;
    double t0 = mono();
    if (gp_job_summary_compute(s, job, NULL, &full, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double t_full = mono() - t0;
    gp_job_acct *a = gp_job_acct_new(job, NULL);
    t0 = mono();
    gp_job_acct_update(a, s, &inc, err, sizeof err);
    double t_first = mono() - t0;
    t0 = mono();
    gp_job_acct_update(a, s, &inc, err, sizeof err);
    double t_idle = mono() - t0;
    int64_t t_lo, t_hi, step = full.gp.steps + 1000000;
    gp_store_time_span(s, &t_lo, &t_hi);
    double t_refresh = 0;
    for (int r = 0; r < rounds; r++) {
        append(s, job, uuid, t_hi, 15, &step, infer);
        t_hi += 15 * SEC;
        t0 = mono();
        gp_job_acct_update(a, s, &inc, err, sizeof err);
        t_refresh += mono() - t0;
    }
    gp_job_summary_compute(s, job, NULL, &full, err, sizeof err);
    gp_job_acct_stats st = gp_job_acct_get_stats(a);
    int same = fabs(inc.gp.goodput - full.gp.goodput) <= 1e-9 &&
               fabs(inc.allocated_gpu_h - full.allocated_gpu_h) <= 1e-9 * full.allocated_gpu_h &&
               fabs(inc.busy_gpu_h - full.busy_gpu_h) <= 1e-9 * full.busy_gpu_h &&
               inc.gp.steps == full.gp.steps && inc.gp.requests == full.gp.requests &&
               inc.gp.good_requests == full.gp.good_requests &&
               fabs(inc.gp.good_tokens - full.gp.good_tokens) <= 1e-9 * (full.gp.tokens + 1);
    for (int b = 0; b < GP_B__COUNT; b++)
        same = same && fabs(inc.gp.bucket_gpu_s[b] - full.gp.bucket_gpu_s[b]) <=
                           1e-9 * full.allocated_gpu_h * 3600 + 1e-9;
    printf("%-10s %10s %10s %10s %10s  %s\n", "job", "full ms", "first ms", "refresh ms", "idle ms",
           "incremental == full");
    printf("%-10s %10.1f %10.1f %10.2f %10.2f  %s (%llu sample rows, %llu event rows read, "
           "%llu reloads; %llu freezes; holds %llu events, %.2f MiB)\n",
           job, 1e3 * t_full, 1e3 * t_first, 1e3 * t_refresh / (rounds ? rounds : 1), 1e3 * t_idle,
           same ? "yes" : "NO", (unsigned long long)st.sample_rows,
           (unsigned long long)st.event_rows, (unsigned long long)st.reloads,
           (unsigned long long)st.freezes, (unsigned long long)st.held_events,
           st.held_bytes / 1048576.0);
    gp_job_acct_free(a);
    gp_store_close(s);
    return same ? 0 : 1;
}
