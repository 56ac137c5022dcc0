/* cpu_clock.h: CPU time in seconds. The process's, for the CPU budgets of work done in
 * passes (the agent's live findings, the sealing child's results and prefixes); the calling
 * thread's, for a loop that shares its process with others (the agent's sampling loop and
 * its HTTP thread). Each is a system call, a few µs when it comes cold. */
#ifndef GP_UTIL_CPU_CLOCK_H
#define GP_UTIL_CPU_CLOCK_H
#include <time.h>

static inline double gp_process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double gp_thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
#endif
