/* counters.h: deltas of monotonic device counters (energy in mJ, PCIe/NVLink bytes) that
 * survive resets. Pure functions; no I/O.
 *
 * A counter read at successive samples only grows, except when it resets: the driver
 * reloads, the GPU resets, a DCGM host engine or the agent restarts and a counter kept by
 * software starts again from 0, or a fixed-width counter wraps. A first/last difference
 * then goes negative or loses everything before the reset. Here every decrease is taken
 * as a reset: the counter counted from 0 again, so the increment is the new value (never
 * negative). With a known width (wrap_at > 0, e.g. 2^32), a decrease is a wrap instead and
 * the increment is wrap_at - previous + new. Whatever happened between the last reading
 * before a reset and the reset itself is lost, so the total is a lower bound then; the
 * number of resets says so. */
#ifndef GP_ENGINE_COUNTERS_H
#define GP_ENGINE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* Running state for folding readings one at a time (incremental accounting). Zero it to
 * start. */
typedef struct gp_counter_acc {
    uint64_t last;  /* the previous reading */
    uint64_t total; /* sum of increments since the first reading */
    int have;       /* a first reading was seen */
    int resets;     /* decreases seen (resets or wraps) */
} gp_counter_acc;

/* Folds one reading. wrap_at: the counter's modulus when known, else 0. */
void gp_counter_fold(gp_counter_acc *a, uint64_t value, uint64_t wrap_at);

/* The increment over readings v[0..n) in time order (0 for fewer than two). resets, when
 * not NULL, receives the number of decreases. */
uint64_t gp_counter_delta(const uint64_t *v, size_t n, uint64_t wrap_at, int *resets);

#endif
