/* seal_results: stores the results of every ended job in a store as the agent does
 * (engine/results/job_results.h), with this build's engine, at the store's last time, so a
 * store written by another build (or generated) can be measured with this one
 * (bench/store_month/results.sh). Prints {"stored": N, "cpu_s": S}. */
#include <stdio.h>

#include "engine/results/job_results.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seal_results DB\n");
        return 2;
    }
    gp_store *s;
    char err[512];
    if (gp_store_open(argv[1], 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "seal_results: %s\n", err);
        return 1;
    }
    int64_t t0, t1;
    gp_job_results_writer *w = gp_job_results_writer_new();
    int n = -1;
    if (w && gp_store_time_span(s, &t0, &t1) == 0) {
        gp_store_begin(s);
        n = gp_job_results_seal(w, s, t1, 0, err, sizeof err);
        if (gp_store_commit(s) != 0) n = -1;
    }
    if (n < 0)
        fprintf(stderr, "seal_results: %s\n", err);
    else
        printf("{\"stored\": %d, \"cpu_s\": %.3f}\n", n, gp_job_results_writer_stats(w).cpu_s);
    gp_job_results_writer_free(w);
    gp_store_close(s);
    return n < 0;
}
