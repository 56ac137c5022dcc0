/* mono_clock.h: the monotonic clock in nanoseconds, for deadlines and durations that a
 * change of the wall clock must not move (the agent's tick schedule, its checkpoint pause,
 * progress bars). A vDSO call: no system call. */
#ifndef GP_UTIL_MONO_CLOCK_H
#define GP_UTIL_MONO_CLOCK_H
#include <stdint.h>
#include <time.h>

static inline int64_t gp_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
#endif
