/* spawn_time: runs a command N times (posix_spawn, stdout/stderr to /dev/null) and
 * prints the median and 90th-percentile wall time from spawn to exit, the median CPU time
 * (user + system, wait4's rusage: on a loaded machine wall time is mostly waiting for a
 * core, CPU time is not) and the largest peak RSS (ru_maxrss) over the runs, as one line:
 *   runs=N median_ms=M p90_ms=P cpu_median_ms=C max_rss_kib=R
 * A build tool for bench/startup/run.sh, not part of goodput; exits 1 when a run fails. */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int cmp_i64(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: spawn_time N CMD [ARGS...]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 1) return 2;
    long long *wall_ns = calloc((size_t)n, sizeof *wall_ns);
    long long *cpu_ns = calloc((size_t)n, sizeof *cpu_ns);
    if (!wall_ns || !cpu_ns) return 1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    long max_rss_kib = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid;
        long long t0 = now_ns();
        if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0) {
            perror(argv[2]);
            return 1;
        }
        int st;
        struct rusage ru;
        if (wait4(pid, &st, 0, &ru) != pid) return 1;
        wall_ns[i] = now_ns() - t0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "spawn_time: %s failed (status %d)\n", argv[2], st);
            return 1;
        }
        cpu_ns[i] = ((long long)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
                    ((long long)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
        if (ru.ru_maxrss > max_rss_kib) max_rss_kib = ru.ru_maxrss;
    }
    qsort(wall_ns, (size_t)n, sizeof *wall_ns, cmp_i64);
    qsort(cpu_ns, (size_t)n, sizeof *cpu_ns, cmp_i64);
    printf("runs=%d median_ms=%.3f p90_ms=%.3f cpu_median_ms=%.3f max_rss_kib=%ld\n", n,
           wall_ns[n / 2] / 1e6, wall_ns[(n * 9) / 10] / 1e6, cpu_ns[n / 2] / 1e6, max_rss_kib);
    free(wall_ns);
    free(cpu_ns);
    return 0;
}
