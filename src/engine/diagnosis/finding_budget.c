/* finding_budget.c: claims to numbers, clipped per bucket (see finding_budget.h). */
#include "engine/diagnosis/finding_budget.h"

#include <string.h>

_Static_assert(
    GP_FINDING_BUCKETS == GP_B__COUNT,
    "model/finding.h GP_FINDING_BUCKETS must match gp_bucket (engine/accounting/goodput.h)");

void gp_finding_claims_clear(gp_finding *f) {
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        f->badput_gpu_s[b] = 0;
    f->wasted_gpu_s = 0;
    f->wasted_cost = -1;
    f->headroom_frac = 0;
    f->headroom_gpu_s = 0;
    f->headroom_cost = -1;
}

static int split_known(const gp_finding *f) {
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        if (f->badput_gpu_s[b] < 0) return 0;
    return 1;
}

void gp_finding_claim(gp_finding *f, gp_bucket b, double gpu_s) {
    if (b <= GP_B_PRODUCTIVE || b >= GP_B__COUNT || !(gpu_s > 0) || !split_known(f)) return;
    f->badput_gpu_s[b] += gpu_s;
}

void gp_finding_claim_unknown(gp_finding *f) {
    for (int b = 0; b < GP_FINDING_BUCKETS; b++)
        f->badput_gpu_s[b] = -1;
    f->wasted_gpu_s = -1;
}

/* Where a claim that overflows bucket b may continue, for this class; -1 nowhere. */
static int spill(gp_finding_class c, int b) {
    if (c == GP_FC_NOT_READY && b == GP_B_NOT_READY) return GP_B_STARTUP;
    if (c == GP_FC_PIPELINE_BOTTLENECK && b == GP_B_IDLE_ALLOCATED) return GP_B_OTHER;
    return -1;
}

/* The GPU-seconds a fix's headroom is a share of. */
static double productive_base(const gp_goodput *acct, double est) {
    if (!acct) return est;
    if (acct->goodput >= 0) return acct->bucket_gpu_s[GP_B_PRODUCTIVE];
    if (acct->kind == GP_JK_ACTIVITY_ONLY) return acct->bucket_gpu_s[GP_B_OTHER];
    return -1;
}

void gp_findings_budget(gp_finding *f, size_t n, const gp_goodput *acct,
                        double est_productive_gpu_s, double price) {
    double left[GP_B__COUNT];
    for (int b = 0; b < GP_B__COUNT; b++)
        left[b] = acct && acct->bucket_gpu_s[b] > 0 ? acct->bucket_gpu_s[b] : 0;
    double base = productive_base(acct, est_productive_gpu_s);
    for (size_t i = 0; i < n; i++) {
        gp_finding *x = &f[i];
        x->badput_gpu_s[GP_B_PRODUCTIVE] = split_known(x) ? 0 : -1;
        if (split_known(x)) {
            double total = 0;
            /* ascending: every spill target comes after its source bucket */
            for (int b = GP_B_PRODUCTIVE + 1; b < GP_B__COUNT; b++) {
                double want = x->badput_gpu_s[b];
                if (acct) {
                    double take = want < left[b] ? want : left[b];
                    int to = spill(x->cls, b);
                    if (to > b && want > take) x->badput_gpu_s[to] += want - take;
                    x->badput_gpu_s[b] = take;
                    left[b] -= take;
                }
                total += x->badput_gpu_s[b];
            }
            x->wasted_gpu_s = total;
        } else {
            x->wasted_gpu_s = -1;
        }
        double frac = x->headroom_frac > 1 ? 1 : x->headroom_frac;
        if (!(frac > 0))
            x->headroom_gpu_s = 0; /* a fix of this finding recovers no productive time */
        else
            x->headroom_gpu_s = base >= 0 ? frac * base : -1;
        x->wasted_cost = x->wasted_gpu_s >= 0 && price > 0 ? x->wasted_gpu_s / 3600 * price : -1;
        x->headroom_cost =
            x->headroom_gpu_s >= 0 && price > 0 ? x->headroom_gpu_s / 3600 * price : -1;
    }
}
