/* cpu_clock.h: the process's CPU time in seconds, for the CPU budgets of work done in
 * passes (the agent's live findings, the sealing child's results and prefixes). */
#ifndef GP_UTIL_CPU_CLOCK_H
#define GP_UTIL_CPU_CLOCK_H
#include <time.h>

static inline double gp_process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
#endif
