/* stable_sort.h: GP_STABLE_SORT(name, T, LESS) defines `static void name(T *v, size_t n)`, a
 * stable merge sort with the comparison inlined. It promises the order glibc's qsort gives
 * with the matching comparator (LESS(a, b) is cmp(a, b) < 0): glibc sorts with a stable merge
 * sort, and for a comparator that is a strict weak order the stable order is unique, so
 * swapping one for the other changes no result, not even which of two tied rows a later
 * binary search finds or the order a sum adds tied rows in.
 *
 * Why: the idle attribution and launch statistics sort every host op and GPU start several
 * times; glibc's qsort calls the comparator through a pointer and copies elements with
 * memcpy, about 7% of `goodput trace` on the shared traces. An already sorted input (common:
 * traces are written in time order) costs one pass. */
#ifndef GP_TRACES_STABLE_SORT_H
#define GP_TRACES_STABLE_SORT_H

#include <stdlib.h>
#include <string.h>

#define GP_STABLE_SORT(name, T, LESS)                                                              \
    static void name##_rec(T *v, T *tmp, size_t n) {                                               \
        if (n <= 16) { /* insertion sort: a row moves only past rows it is less than */            \
            for (size_t i = 1; i < n; i++) {                                                       \
                T x = v[i];                                                                        \
                size_t j = i;                                                                      \
                for (; j > 0 && LESS(&x, &v[j - 1]); j--)                                          \
                    v[j] = v[j - 1];                                                               \
                v[j] = x;                                                                          \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        size_t h = n / 2;                                                                          \
        name##_rec(v, tmp, h);                                                                     \
        name##_rec(v + h, tmp, n - h);                                                             \
        if (!LESS(&v[h], &v[h - 1])) return; /* the halves are already in order */                 \
        memcpy(tmp, v, h * sizeof(T));                                                             \
        size_t i = 0, j = h, k = 0; /* k <= j: the merge never overwrites an unread right row */   \
        while (i < h && j < n)                                                                     \
            v[k++] = LESS(&v[j], &tmp[i]) ? v[j++] : tmp[i++]; /* ties: the left row first */      \
        while (i < h)                                                                              \
            v[k++] = tmp[i++];                                                                     \
    }                                                                                              \
    static void name(T *v, size_t n) {                                                             \
        size_t i = 1;                                                                              \
        while (i < n && !LESS(&v[i], &v[i - 1]))                                                   \
            i++;                                                                                   \
        if (i >= n) return;                                                                        \
        T *tmp = malloc((n / 2 + 1) * sizeof(T));                                                  \
        if (!tmp) abort();                                                                         \
        name##_rec(v, tmp, n);                                                                     \
        free(tmp);                                                                                 \
    }

#endif
