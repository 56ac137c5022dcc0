/* alloc_split.h: a job's allocations as the accounting counts them, so that no
 * GPU-second is counted twice.
 *  - The same job holding one GPU through overlapping rows (a scheduler's allocation and
 *    the process-presence one inside it, a prolog and a poller) holds it once: rows are
 *    merged per (job, GPU).
 *  - While k other jobs hold one of its GPUs, the job holds 1/(k+1) of it: the device's
 *    time is split evenly between its holders. Holding is not using: splitting by SM
 *    share would make an idle holder look free and charge a busy neighbour for it, so
 *    the kernels' time (engine/accounting/goodput.h gp_util_attributed) and energy are split by SM
 *    share, while the allocation itself is split evenly.
 * For every GPU and every instant the shares of its holders sum to 1, so the sum over
 * jobs of allocated GPU-seconds never exceeds the device's seconds. Pure; no I/O. */
#ifndef GP_ENGINE_ALLOC_SPLIT_H
#define GP_ENGINE_ALLOC_SPLIT_H

#include <stddef.h>

#include "model/job.h"

/* mine: the job's rows; others: rows of other jobs on any GPU (those on GPUs the job
 * never held are ignored). *out (malloc'd, caller frees) gets pieces with share set;
 * a piece ending with an open allocation keeps to_ns < 0. Returns 0, -1 when out of
 * memory. */
int gp_alloc_split(const gp_alloc *mine, size_t n_mine, const gp_alloc *others, size_t n_others,
                   gp_alloc **out, size_t *n_out);

#endif
