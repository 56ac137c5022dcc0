/* findings_group.h: repeated findings read once. Findings of one class with the same fix
 * (the same trace advice for 8 ranks, the same cluster finding for several pools) become
 * one group with its scopes listed and its total waste; groups are ranked by that waste
 * (unknown last). Text output prints groups; JSON keeps every finding and may add the
 * groups beside them. */
#ifndef GP_REPORT_FINDINGS_GROUP_H
#define GP_REPORT_FINDINGS_GROUP_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "model/finding.h"

typedef struct {
    size_t *idx;         /* indices into the findings, largest waste first (owned) */
    size_t n;            /* findings in the group */
    double wasted_gpu_s; /* total of the known wastes; < 0 when none is known */
} gp_finding_group;

/* Groups f[0..n); *out owned by the caller (gp_finding_groups_free). Returns the count. */
size_t gp_findings_group(const gp_finding *f, size_t n, gp_finding_group **out);
void gp_finding_groups_free(gp_finding_group *g, size_t n);

/* "rank 0, rank 1, rank 2, rank 5" as "ranks 0-2, 5"; other scopes joined with ", ". */
void gp_finding_group_scopes(const gp_finding *f, const gp_finding_group *g, char *buf, size_t cap);

typedef struct {
    double unit_s;    /* waste shown in units of unit_s seconds: 1 (GPU-s) or 3600 (GPU-h) */
    const char *unit; /* "GPU-s", "GPU-h" */
    int evidence;     /* print the evidence of the group's largest finding */
    const char *fix;  /* label of the advice line: "fix" or "do" */
    int width;        /* columns (0: no limit) */
} gp_group_text_opts;

/* Prints "findings (N in M groups, ranked by waste)" then one entry per group: class,
 * scopes, total waste; the largest finding's summary (and evidence); the fix, wrapped with
 * a hanging indent. "  none" when n == 0. */
void gp_findings_print_grouped(FILE *out, const gp_finding *f, size_t n,
                               const gp_group_text_opts *o);

/* [{class, scopes: [...], findings: N, wasted_gpu_s (null if unknown), recommendation}] */
json_t *gp_findings_groups_json(const gp_finding *f, size_t n);

#endif
