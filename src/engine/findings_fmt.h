/* findings_fmt.h: findings as text for people and JSON for machines, shared by
 * `goodput diagnose`, the report's findings section and the demo. */
#ifndef GP_ENGINE_FINDINGS_FMT_H
#define GP_ENGINE_FINDINGS_FMT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "model/finding.h"

/* Prints at most top findings (0 = all) in the order given (rank first). */
void gp_findings_print(FILE *out, const gp_finding *f, size_t n, size_t top);
/* One JSON object per finding; the caller owns the returned array. */
json_t *gp_findings_json(const gp_finding *f, size_t n, size_t top);

#endif
