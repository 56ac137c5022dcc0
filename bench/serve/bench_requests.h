/* bench_requests.h: the requests of a benchmark inference server (bench_serve, bench_acct),
 * a deterministic function of time so that filling a store and appending to it live give
 * the same stream: about one arrival a second (request k arrives at k s plus up to 0.9 s),
 * each in flight 0.3-8 s (several at once), its first token 50-450 ms after arrival,
 * 20-520 output tokens, one in 50 failed; no arrival in minute 7 of every 10 (quiet
 * stretches: idle or other by kernel activity). A request is stored when it ends. */
#ifndef GP_BENCH_REQUESTS_H
#define GP_BENCH_REQUESTS_H

#include <stdint.h>
#include <stdio.h>

#include "model/event.h"
#include "store/store.h"

#define BR_SEC 1000000000LL

static uint64_t br_hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb3f97ec15a53ULL;
    x ^= x >> 33;
    return x;
}

/* Request k (absolute seconds since the epoch): 0 when there is none. */
static int br_request(int64_t k, int64_t *arrival, int64_t *end, int64_t *first, int64_t *out) {
    if ((k / 60) % 10 == 7) return 0;
    uint64_t h = br_hash((uint64_t)k);
    *arrival = k * BR_SEC + (int64_t)(h % 900) * 1000000;
    *end = *arrival + 300000000LL + (int64_t)((h >> 10) % 7700) * 1000000;
    *first = *arrival + 50000000LL + (int64_t)((h >> 24) % 400) * 1000000;
    *out = 20 + (int64_t)((h >> 34) % 500);
    return 1;
}

/* Stores the requests of job `id` that arrived at or after `from` and end in (lo, hi]. */
static void br_put_requests(gp_store *s, const char *id, int64_t from, int64_t lo, int64_t hi) {
    for (int64_t k = (lo - 9 * BR_SEC) / BR_SEC; k * BR_SEC <= hi; k++) {
        int64_t arr, end, ft, out;
        if (!br_request(k, &arr, &end, &ft, &out) || arr < from || end <= lo || end > hi) continue;
        gp_event e;
        gp_event_init(&e, GP_EV_REQUEST);
        snprintf(e.job_id, sizeof e.job_id, "%.63s", id);
        e.ts_ns = end;
        e.arrival_ns = arr;
        e.first_token_ns = ft;
        e.prompt_tokens = 200;
        e.output_tokens = out;
        e.ok = br_hash((uint64_t)k + 7) % 50 != 0;
        gp_store_put_event(s, &e);
    }
}

#endif
