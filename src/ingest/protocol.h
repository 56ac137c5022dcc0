/* protocol.h: parse one line of the event protocol (docs/protocol.md) into a gp_event.
 * Pure function, no allocation. */
#ifndef GP_INGEST_PROTOCOL_H
#define GP_INGEST_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "model/event.h"

#define GP_PROTO_MAX_LINE 4096

/* Why a line was rejected; counted per reason (ingest stats, /metrics `reason` label). */
typedef enum {
    GP_REJ_MALFORMED,   /* not a valid protocol line */
    GP_REJ_TIME_AHEAD,  /* a time further ahead of the receiver's clock than allowed */
    GP_REJ_TIME_BEHIND, /* a time further behind the receiver's clock than allowed */
    GP_REJ_TRUNCATED,   /* the tail of a datagram cut by the 64 KiB limit */
    GP_REJ__COUNT
} gp_reject_reason;
/* "malformed", "time_ahead", "time_behind", "truncated" (label values). */
const char *gp_reject_reason_name(gp_reject_reason r);

/* How far event times may be from the receiver's clock. Every absolute time on a line is
 * checked (ts, start, arrival, first_token, enqueue, from, to), so one line cannot stretch
 * a job's window by years. Sources with a clock of their own (simulator, replays) pass
 * that clock as now. behind_ns < 0: no lower bound (replays of old logs, --accept-old). */
typedef struct gp_time_bounds {
    int64_t ahead_ns, behind_ns;
} gp_time_bounds;
#define GP_SKEW_AHEAD_DEFAULT_NS (600LL * 1000000000LL)          /* 10 min */
#define GP_SKEW_BEHIND_DEFAULT_NS (7LL * 86400LL * 1000000000LL) /* 7 days */

/* Returns 1 with *out filled, 0 for a blank or comment line, or -1 with a reason in err
 * ("field 'step': not an integer") and, if reason is not NULL, *reason set. now_ns stamps
 * lines without ts; with now_ns > 0 every time is checked against it within *bounds
 * (NULL: the defaults). */
int gp_proto_parse_line_ex(const char *line, size_t len, int64_t now_ns,
                           const gp_time_bounds *bounds, gp_event *out, gp_reject_reason *reason,
                           char *err, size_t errlen);
/* The same with the default bounds; accept_old lifts the lower one. */
int gp_proto_parse_line(const char *line, size_t len, int64_t now_ns, int accept_old, gp_event *out,
                        char *err, size_t errlen);
/* Checks every absolute time of e against now_ns within b; 0, or -1 with *reason and err. */
int gp_proto_check_times(const gp_event *e, int64_t now_ns, const gp_time_bounds *b,
                         gp_reject_reason *reason, char *err, size_t errlen);
/* Formats an event as one protocol line (no trailing newline); returns its length, or -1
 * if it does not fit. Used by the simulator, clients' tests and `goodput emit`. */
int gp_proto_format(const gp_event *e, char *buf, size_t cap);

#endif
