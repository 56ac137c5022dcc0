/* series_tiers.h: a device's stored rollups for the part of a time series before its raw
 * rows (retention deleted them), for the API's device and job series.
 *
 * The raw rows answer from the device's first raw sample on (serve/rollup.c); before it
 * the 1-minute rollups (store/rollup.h), and before those, where the agent's
 * --rollup-retention deleted them, the 1-hour rollups. Each rollup row is one point at its
 * bucket's middle with the bucket's means (memory as used over the bucket's last total), so
 * a request bucket narrower than the rollup's holds a point once per minute or hour and
 * is null between: data at 1-hour resolution is never spread over finer buckets. What was
 * used is recorded (srv_tiers) so the response says it (rollups: from, to, resolution).
 * Server thread only. */
#ifndef GP_SERVE_SERIES_TIERS_H
#define GP_SERVE_SERIES_TIERS_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

#include "serve/rollup.h"

/* The span each rollup resolution answered, over every device of one response
 * (from > to: not used). [0]: 1 minute, [1]: 1 hour. */
typedef struct srv_tiers {
    int64_t from_ns[2], to_ns[2];
} srv_tiers;

void srv_tiers_init(srv_tiers *t);
/* Streams the device's rollup rows (as srv_rollup_scan's device rows) for the part of
 * [t0, t1) before its first raw sample; *raw0 receives where the raw rows start (t1 when
 * they start later or none is left). Returns 0 or -1 (store error). */
int srv_tiers_scan(sqlite3 *db, const char *uuid, int64_t t0, int64_t t1, srv_row_fn fn, void *ctx,
                   srv_tiers *used, int64_t *raw0);
/* "rollups": [{from_s, to_s, resolution_s}] when any rollup answered; nothing otherwise
 * (a response from raw rows only is unchanged). */
void srv_tiers_json(const srv_tiers *t, json_t *o);

#endif
