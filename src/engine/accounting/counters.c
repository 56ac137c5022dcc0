/* counters.c: see counters.h. */
#include "engine/accounting/counters.h"

void gp_counter_fold(gp_counter_acc *a, uint64_t value, uint64_t wrap_at) {
    if (!a->have) {
        a->have = 1;
        a->last = value;
        return;
    }
    if (value >= a->last) {
        a->total += value - a->last;
    } else {
        a->resets++;
        /* A wrap when the width is known and the previous reading fits it; else a reset
         * to 0 (a previous reading beyond the width cannot be a wrap of that width). */
        if (wrap_at > 0 && a->last < wrap_at)
            a->total += (wrap_at - a->last) + value;
        else
            a->total += value;
    }
    a->last = value;
}

uint64_t gp_counter_delta(const uint64_t *v, size_t n, uint64_t wrap_at, int *resets) {
    gp_counter_acc a = {0};
    for (size_t i = 0; i < n; i++)
        gp_counter_fold(&a, v[i], wrap_at);
    if (resets) *resets = a.resets;
    return a.total;
}
