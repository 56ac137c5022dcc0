/* sim_speed.c: speed of the pipeline what-if simulation (engine/pipeline/pipeline_sim.c) in
 * simulated items per second, for chains of 4 and 8 stages with lognormal-like service times drawn
 * from 100,000 samples each, unbounded and bounded queues. Target (issue 9): >= 1M items/s. Built
 * and run by bench/pipeline/run.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/pipeline/pipeline.h"

static double now_s(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    size_t items = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
    enum { NS = 100000 };
    static double svc[8][NS];
    const double mean_ms[8] = {8, 24, 10, 4, 6, 12, 3, 9};
    const int pools[8] = {1, 3, 1, 1, 1, 2, 1, 1};
    srand(3);
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < NS; i++) { /* lognormal, sigma 0.3, via Box-Muller */
            double u1 = (rand() + 1.0) / (RAND_MAX + 2.0), u2 = (rand() + 1.0) / (RAND_MAX + 2.0);
            double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
            svc[k][i] = mean_ms[k] * 1e-3 * exp(0.3 * z - 0.045);
        }
    const int stages[2] = {4, 8};
    const int bounds[2] = {-1, 4};
    for (int si = 0; si < 2; si++)
        for (int bi = 0; bi < 2; bi++) {
            gp_pipe_sim_cfg c;
            memset(&c, 0, sizeof c);
            c.n_stages = stages[si];
            for (int k = 0; k < c.n_stages; k++) {
                c.workers[k] = pools[k];
                c.queue_bound[k] = bounds[bi];
                c.svc_s[k] = svc[k];
                c.n_svc[k] = NS;
                c.is_gpu[k] = k == 2;
                c.overhead_s[k] = 2e-4;
            }
            c.n_items = items;
            c.seed = 1;
            gp_pipe_sim_result r;
            char err[256];
            double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
            if (gp_pipe_simulate(&c, &r, err, sizeof err) != 0) {
                fprintf(stderr, "sim_speed: %s\n", err);
                return 1;
            }
            double dt = now_s(CLOCK_MONOTONIC) - t0, cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            printf("stages=%d queue=%s items=%zu wall=%.3fs cpu=%.3fs items/s: %.3gM per wall "
                   "s, %.3gM per CPU s; events/CPU s %.3gM (simulated %.2f items/s, GPU busy "
                   "%.0f%%)\n",
                   c.n_stages, bounds[bi] < 0 ? "inf" : "4", items, dt, cpu, items / dt / 1e6,
                   items / cpu / 1e6, r.n_events / cpu / 1e6, r.throughput_per_s,
                   100 * r.gpu_busy_share);
        }
    return 0;
}
