/* kth.h: GP_KTH_DEFINE(NAME, TYPE) defines `static TYPE NAME(TYPE *v, size_t n, size_t k)`,
 * the k-th smallest of v[0..n) (k < n) by selection: v is reordered so that v[k] holds it,
 * with nothing larger before it and nothing smaller after. O(n) on average where a sort is
 * O(n log n): a day of 8 ranks' steps is ~1 M durations, a job's gauges 86,400 samples per
 * GPU-day. A macro, not a void* comparator, so each type's loop compares inline (the
 * diagnosis selects over millions of values); one body for every type used. */
#ifndef GP_ENGINE_DIAGNOSIS_KTH_H
#define GP_ENGINE_DIAGNOSIS_KTH_H

#include <stddef.h>

#define GP_KTH_DEFINE(NAME, TYPE)                                                                  \
    static TYPE NAME(TYPE *v, size_t n, size_t k) {                                                \
        size_t lo = 0, hi = n - 1;                                                                 \
        while (hi > lo) {                                                                          \
            /* median of three as the pivot */                                                     \
            size_t mid = lo + (hi - lo) / 2;                                                       \
            TYPE a = v[lo], b = v[mid], c = v[hi];                                                 \
            TYPE piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));      \
            size_t i = lo, j = hi;                                                                 \
            while (i <= j) {                                                                       \
                while (v[i] < piv)                                                                 \
                    i++;                                                                           \
                while (v[j] > piv)                                                                 \
                    j--;                                                                           \
                if (i <= j) {                                                                      \
                    TYPE t = v[i];                                                                 \
                    v[i] = v[j];                                                                   \
                    v[j] = t;                                                                      \
                    i++;                                                                           \
                    if (j == 0) break;                                                             \
                    j--;                                                                           \
                }                                                                                  \
            }                                                                                      \
            /* now v[lo..j] <= piv <= v[i..hi], and anything between equals piv */                 \
            if (j >= lo && k <= j)                                                                 \
                hi = j;                                                                            \
            else if (k >= i)                                                                       \
                lo = i;                                                                            \
            else                                                                                   \
                return v[k];                                                                       \
        }                                                                                          \
        return v[k];                                                                               \
    }

#endif
