/* rollup.h: the server's in-memory 10-second rollups of device signals and job progress
 * (see rollup.c). Server thread only. */
#ifndef GP_SERVE_ROLLUP_H
#define GP_SERVE_ROLLUP_H

#include <sqlite3.h>
#include <stdint.h>

#include "model/sample.h"

#define ROLLUP_W_NS (10 * 1000000000LL) /* bucket width */
#define ROLLUP_NSIG 7                   /* signals per bucket (device) or progress fields (job) */
#define ROLLUP_MAX_BUCKETS (3 * 8640)   /* 3 days of 10-second buckets per entry */
#define ROLLUP_MAX_ENTRIES 64

typedef struct srv_rollup srv_rollup;
typedef void (*srv_row_fn)(void *ctx, int64_t ts, const double *v, const int *has);

/* Rows of [t0, t1) for a device (is_job 0: the 7 signals) or a job (is_job 1: [0] steps,
 * [1] units, [2] output tokens, [3] requests), streamed to fn. */
int srv_rollup_scan(sqlite3 *db, int is_job, const char *key, int64_t t0, int64_t t1, srv_row_fn fn,
                    void *ctx);
/* The up-to-date entry for key (created or extended as needed), or NULL without rows. */
srv_rollup *srv_rollup_get(sqlite3 *db, srv_rollup **tab, int *n, uint64_t *clock, int is_job,
                           const char *key);
int64_t srv_rollup_base_ns(const srv_rollup *r);
int64_t srv_rollup_sealed_ns(const srv_rollup *r);
/* Adds the sealed buckets starting in [a, b) into request buckets j = (ts - t0) / step,
 * j < nb: sum and cnt are nb x ROLLUP_NSIG. */
void srv_rollup_fold(const srv_rollup *r, int64_t a, int64_t b, int64_t t0, int64_t step, int nb,
                     double *sum, double *cnt);
void srv_rollups_free(srv_rollup **tab, int n);

#endif
