/* goodput_ckpt.h: helpers of goodput.c's frozen labelled prefixes (gp_goodput_ckpt);
 * internal to engine/accounting. */
#ifndef GP_ENGINE_GOODPUT_CKPT_H
#define GP_ENGINE_GOODPUT_CKPT_H

#include "engine/accounting/goodput.h"

/* to's durations (durs, n_durs, durs_below, durs_above): from's (NULL: none) and
 * add[0..n_add) (sorted here, in place), trimmed to GP_CKPT_MEDIAN_HALF on each side of
 * their median. 0, -1 on OOM. */
int gp_ckpt_durs_extend(const gp_goodput_ckpt *from, double *add, size_t n_add,
                        gp_goodput_ckpt *to);
/* The median of c's durations and v[0..n) (sorted here, in place): what a sort of all of
 * them gives, exactly; -1 when there are none; GP_CKPT_MEDIAN_UNKNOWN when its rank falls
 * outside the durations c kept (the prefix no longer holds). */
#define GP_CKPT_MEDIAN_UNKNOWN (-2.0)
double gp_ckpt_median(const gp_goodput_ckpt *c, double *v, size_t n);
/* How many of the sorted gaps are at most max_gap. */
size_t gp_ckpt_gaps_within(const int64_t *g, size_t n, int64_t max_gap);
/* After the events ev[0..i] (sorted; resuming after `from`, its carried phases open
 * first), ok[i] is GP_CKPT_PHASES_NONE when no phase is open, GP_CKPT_PHASES_NOW when the
 * open ones all began at ev[i]'s instant (at most GP_CKPT_CARRY of them, no
 * checkpoint_restore), else 0; 0 from the first phase that ran to the window's end (a
 * begin followed by another begin of the same name and rank) on. NULL on OOM; the caller
 * frees. */
#define GP_CKPT_PHASES_NONE 1
#define GP_CKPT_PHASES_NOW 2
char *gp_ckpt_phases_closed(const gp_goodput_in *in, const gp_acct_event *const *ev, size_t n,
                            const gp_goodput_ckpt *from);
/* Into to->carry: the phases open after ev[0..i] (ok[i] == GP_CKPT_PHASES_NOW), in the
 * order they began. */
void gp_ckpt_phases_carry(const gp_goodput_in *in, const gp_acct_event *const *ev, size_t i,
                          const gp_goodput_ckpt *from, gp_goodput_ckpt *to);
/* Is e a checkpoint_restore phase event (restart evidence: no cut moves across one)? */
int gp_ckpt_is_restore(const gp_goodput_in *in, const gp_acct_event *e);
/* The allocation pieces of in before t (window start to min(end, t), share bits): a
 * prefix's held GPUs are right while these stay the same. -1 on OOM. */
int gp_ckpt_alloc_print(const gp_goodput_in *in, int64_t t, int64_t **out, size_t *n);

#endif
