/* cpurun.c: `cpurun OUT CMD [ARG...]` runs CMD (output to /dev/null) and appends one line to
 * OUT: "wall_s peak_rss_kib user_s sys_s" for CMD and the children it waited for, the CPU
 * times to the microsecond (wait4's rusage). For bench/traces/run.sh: GNU time prints CPU
 * in units of 10 ms, as much as goodput's whole run on the small shared traces, so ratios
 * against HTA were quantised to a few steps. Like GNU time it is a small C process, so the
 * peak RSS is CMD's (a process forked from a large interpreter keeps that parent's peak
 * across exec). Exits with CMD's status. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv_s(struct timeval t) {
    return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: cpurun OUT CMD [ARG...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) return 2;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FILE *f = fopen(argv[1], "a");
    if (!f) return 2;
    fprintf(f, "%.6f %ld %.6f %.6f\n",
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, ru.ru_maxrss,
            tv_s(ru.ru_utime), tv_s(ru.ru_stime));
    fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
