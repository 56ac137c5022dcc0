/* bench_sources.c: CPU cost of the telemetry backends.
 *
 *   bench_sources prom FILE REPEAT       Prometheus text parse throughput (util/promtext) on
 *                                        FILE concatenated REPEAT times, in memory
 *   bench_sources nvml N                 N samples through the test libnvidia-ml.so.1
 *                                        (GOODPUT_NVML_LIBRARY etc. set by run.sh)
 *   bench_sources dcgm URL N             N scrapes of a dcgm-exporter URL
 * Prints one line of key=value results. CPU time is getrusage(RUSAGE_SELF) user+sys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sources/source.h"
#include "util/promtext.h"

extern const gp_source_ops gp_source_nvml, gp_source_dcgm;

static double cpu_s(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec +
           r.ru_stime.tv_usec / 1e6;
}

static double wall_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static long nsamples;
static double sink;
static int count(void *ctx, const gp_prom_sample *s) {
    (void)ctx;
    nsamples++;
    sink += s->value + (double)s->nlabels;
    return 0;
}

static int bench_prom(const char *path, int repeat) {
    FILE *f = fopen(path, "rb");
    if (!f) return perror(path), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *one = malloc((size_t)n + 1);
    if (fread(one, 1, (size_t)n, f) != (size_t)n) return 1;
    fclose(f);
    size_t total = (size_t)(n + 1) * (size_t)repeat;
    char *buf = malloc(total);
    size_t off = 0;
    for (int i = 0; i < repeat; i++) {
        memcpy(buf + off, one, (size_t)n);
        off += (size_t)n;
        buf[off++] = '\n'; /* the files end without a newline */
    }
    char err[256];
    double c0 = cpu_s(), w0 = wall_s();
    int rc = gp_prom_parse(buf, off, count, NULL, NULL, 0, err, sizeof err);
    double c = cpu_s() - c0, w = wall_s() - w0;
    if (rc < 0) return fprintf(stderr, "%s\n", err), 1;
    printf("prom bytes=%zu samples=%ld cpu_s=%.4f wall_s=%.4f MB_per_s=%.1f samples_per_s=%.0f\n",
           off, nsamples, c, w, off / 1e6 / c, nsamples / c);
    free(buf);
    free(one);
    return 0;
}

static int bench_source(const gp_source_ops *ops, const char *arg, int n) {
    char err[512];
    void *st = NULL;
    gp_source_opts o = {.interval_ns = 1000000000LL};
    if (ops->open(arg, &o, &st, err, sizeof err) < 0) return fprintf(stderr, "%s\n", err), 1;
    gp_sample x[64];
    gp_proc_sample p[512];
    size_t k, np;
    long gpu_samples = 0;
    double c0 = cpu_s(), w0 = wall_s();
    for (int i = 0; i < n; i++) {
        if (ops->sample(st, (int64_t)(i + 1) * 1000000000LL, x, 64, &k, err, sizeof err) < 0)
            return fprintf(stderr, "%s\n", err), 1;
        if (ops->list_processes) ops->list_processes(st, p, 512, &np, err, sizeof err);
        gpu_samples += (long)k;
    }
    double c = cpu_s() - c0, w = wall_s() - w0;
    printf("%s rounds=%d gpu_samples=%ld cpu_s=%.4f wall_s=%.4f cpu_us_per_gpu_sample=%.1f\n",
           ops->name, n, gpu_samples, c, w, c * 1e6 / (gpu_samples ? gpu_samples : 1));
    ops->close(st);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "prom")) return bench_prom(argv[2], atoi(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "nvml"))
        return bench_source(&gp_source_nvml, "", atoi(argv[2]));
    if (argc >= 4 && !strcmp(argv[1], "dcgm"))
        return bench_source(&gp_source_dcgm, argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: bench_sources prom FILE REPEAT | nvml N | dcgm URL N\n");
    return 2;
}
