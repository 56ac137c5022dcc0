/* host_costs.c: what this host charges for entering its kernel, so that the agent's
 * figures in µs (bench/agent_cost/run.sh) can be set beside another machine's. The agent's
 * fixed part of a tick is mostly kernel entries (its wake-up, a few system calls, the odd
 * page fault), and their price differs by an order of magnitude between bare metal and a
 * VM whose guest kernel is entered through the hypervisor (e.g. PVM: "Hypervisor detected:
 * PVM" in dmesg). Prints "SYSCALL_US FAULT_US THREAD_CLOCK_US": CPU charged per null system
 * call (getppid), per first touch of an anonymous page, and per read of the thread-CPU
 * clock (a system call: the vDSO cannot read it; the agent reads it twice a tick). Each is
 * the median of 5 rounds. `host_costs wake N` instead prints the CPU charged per wake-up of
 * a process that does nothing but poll() with a 1 s timeout, N times: the floor of a tick
 * (run.sh runs it beside the first agent). Usage: host_costs [wake N] */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5
#define CALLS 50000
#define PAGES 4096

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v) {
    qsort(v, ROUNDS, sizeof *v, cmp_d);
    return v[ROUNDS / 2];
}

/* CPU per wake-up of a process that only sleeps, n wake-ups 1 s apart. */
static int wake_floor(int n) {
    if (n < 1) n = 1;
    double c0 = cpu_s();
    for (int i = 0; i < n; i++)
        poll(NULL, 0, 1000);
    printf("%.1f\n", (cpu_s() - c0) * 1e6 / n);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "wake")) return wake_floor(argc > 2 ? atoi(argv[2]) : 10);
    if (argc > 1) {
        fprintf(stderr, "usage: host_costs [wake N]\n");
        return 2;
    }
    double sys_us[ROUNDS], fault_us[ROUNDS], clock_us[ROUNDS];
    long page = sysconf(_SC_PAGESIZE);
    for (int r = 0; r < ROUNDS; r++) {
        double c0 = cpu_s();
        for (int i = 0; i < CALLS; i++)
            syscall(SYS_getppid);
        sys_us[r] = (cpu_s() - c0) * 1e6 / CALLS;

        volatile char *p = mmap(NULL, (size_t)PAGES * (size_t)page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        c0 = cpu_s();
        for (size_t i = 0; i < PAGES; i++)
            p[i * (size_t)page] = 1;
        fault_us[r] = (cpu_s() - c0) * 1e6 / PAGES;
        munmap((void *)p, (size_t)PAGES * (size_t)page);

        struct timespec ts;
        c0 = cpu_s();
        for (int i = 0; i < CALLS / 10; i++)
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        clock_us[r] = (cpu_s() - c0) * 1e6 / (CALLS / 10);
    }
    printf("%.2f %.2f %.2f\n", median(sys_us), median(fault_us), median(clock_us));
    return 0;
}
