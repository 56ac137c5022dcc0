/* finding_budget.h: the one place where a job's findings meet its accounting.
 *
 * The classifier states what each finding claims: GPU-seconds of named badput buckets
 * (model/finding.h) and, apart from them, the share of productive time a fix would
 * recover (headroom_frac). gp_findings_budget turns the claims into the numbers every
 * output shows:
 *  - badput: with the job's accounting known, each claim is clipped to what is left of
 *    its bucket after the findings before it (array order = the classifier's order of
 *    reasoning), so for every bucket the sum over the job's findings never exceeds the
 *    job's GPU-seconds in it. What one bucket cannot hold moves on only where the class
 *    says so (not_ready -> startup: an init phase before the first step; a pipeline's
 *    idle GPU stage -> other: idle with memory held). Without accounting, claims stand.
 *  - headroom = headroom_frac x productive GPU-s (the job's productive bucket; an
 *    activity-only job, whose productive time is unknown, uses its active time, bucket
 *    other; without accounting, the caller's estimate; unknown when none is known).
 *  - wasted_gpu_s = the badput total, wasted_cost and headroom_cost at the job's price.
 * Never adds badput and headroom. Idempotent: budgeting twice against the same
 * accounting gives the same numbers. */
#ifndef GP_ENGINE_FINDING_BUDGET_H
#define GP_ENGINE_FINDING_BUDGET_H

#include <stddef.h>

#include "engine/accounting/goodput.h"
#include "model/finding.h"

/* f: the findings of ONE job. acct: its accounting, or NULL (claims stand, headroom from
 * est_productive_gpu_s, < 0 unknown). price_per_gpu_h <= 0: costs unknown. */
void gp_findings_budget(gp_finding *f, size_t n, const gp_goodput *acct,
                        double est_productive_gpu_s, double price_per_gpu_h);

/* A finding that explains no badput and states no headroom yet (all buckets 0). */
void gp_finding_claims_clear(gp_finding *f);
/* Adds gpu_s (<= 0: nothing) to the finding's claim on bucket b. */
void gp_finding_claim(gp_finding *f, gp_bucket b, double gpu_s);
/* The finding cannot say which badput it explains: every bucket unknown. */
void gp_finding_claim_unknown(gp_finding *f);

#endif
