/* idle_wake.c: the host's floor for a process that wakes once a second and does nothing:
 * CPU time charged per poll() wake-up (bench/agent_cost/run.sh prints it beside the
 * agent's fixed cost per tick). Usage: idle_wake N (wake-ups, 1 s apart). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    if (n < 1) n = 1;
    double c0 = cpu_s();
    for (int i = 0; i < n; i++)
        poll(NULL, 0, 1000);
    printf("%.1f\n", (cpu_s() - c0) * 1e6 / n);
    return 0;
}
