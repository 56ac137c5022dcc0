/* kineto_int.h: what the two Kineto readers share (private to src/traces/). The hand-written
 * scanner (kineto_scan.c, gp_kineto_read) is the production reader; the yajl reader
 * (kineto.c, gp_kineto_read_yajl) is kept as the reference the tests compare it against row
 * by row. Both fill a gp_kev per traceEvents object and hand it to gp_kineto_finish_event,
 * so what is kept, dropped and warned about is decided in one place. */
#ifndef GP_TRACES_KINETO_INT_H
#define GP_TRACES_KINETO_INT_H

#include <stddef.h>
#include <stdint.h>

#include "traces/trace.h"

/* One event as read: only the fields HTA uses. name points into the reader's read buffer
 * or its scratch buffer (valid until the next event: the scanner copies a name out of the
 * read buffer before reading over it). */
typedef struct gp_kev {
    int has_cat, has_ts, has_dur, ts_is_float, cat_trace, cat_k, cat_known, cat_overhead;
    double ts, dur;
    int64_t stream, corr;
    int64_t tid, pid; /* 0 / -1 when absent or not a number */
    const char *name;
    size_t name_len;
} gp_kev;

/* Categories repeat (a trace has a handful, interleaved: cpu_op, cuda_runtime, kernel, ac2g):
 * the last GP_KCAT_WAYS looked up are remembered with what they decide. */
#define GP_KCAT_WAYS 8
typedef struct gp_kcat_cache {
    struct {
        char text[32];
        uint8_t len, trace, k, overhead, known;
    } way[GP_KCAT_WAYS];
    unsigned used, next;
} gp_kcat_cache;

void gp_kineto_event_reset(gp_kev *e);
/* Sets has_cat, cat_trace, cat_k and cat_known from a "cat" string value. */
void gp_kineto_set_cat(gp_kev *e, gp_kcat_cache *cache, const char *s, size_t n);
/* args.stream / args.correlation / rank given as a JSON number whose value is d. */
void gp_kineto_set_stream_num(gp_kev *e, double d);
void gp_kineto_set_corr_num(gp_kev *e, double d);
/* The same keys given as a string: pandas' to_numeric(errors="coerce") reading. */
void gp_kineto_set_stream_text(gp_kev *e, const char *s, size_t n);
void gp_kineto_set_corr_text(gp_kev *e, const char *s, size_t n);
/* Sets the fields a reader leaves unknown (pid, base time, ...) after zeroing the rank. */
void gp_kineto_rank_init(gp_trace_rank *r);
/* Reserves row capacity for a trace of json_bytes uncompressed bytes (a hint). */
void gp_kineto_reserve(gp_trace_rank *r, uint64_t json_bytes);
/* Top-level baseTimeNanoseconds and distributedInfo.world_size. */
void gp_kineto_set_base_time(gp_trace_rank *r, double d);
void gp_kineto_set_world_size(gp_trace_rank *r, double d);
/* Counts the event and keeps its row when the analyses need it; idx is its position. */
void gp_kineto_finish_event(gp_trace_rank *r, const gp_kev *e, int64_t idx);

/* gp_kineto_read with reads of chunk bytes (tests use tiny chunks so that every token
 * crosses a buffer boundary somewhere). */
int gp_kineto_read_chunked(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                           void *progress_ctx, size_t chunk, char *err, size_t errlen);

/* The reference reader (yajl's event API): same contract as gp_kineto_read. */
int gp_kineto_read_yajl(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                        void *progress_ctx, char *err, size_t errlen);

#endif
