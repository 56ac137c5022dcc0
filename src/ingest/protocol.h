/* protocol.h: parse one line of the event protocol (docs/protocol.md) into a gp_event.
 * Pure function, no allocation. */
#ifndef GP_INGEST_PROTOCOL_H
#define GP_INGEST_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#include "model/event.h"

#define GP_PROTO_MAX_LINE 4096

/* Returns 1 with *out filled, 0 for a blank or comment line, or -1 with a reason in err
 * ("field 'step': not an integer"). now_ns stamps lines without ts and bounds accepted
 * timestamps unless accept_old. */
int gp_proto_parse_line(const char *line, size_t len, int64_t now_ns, int accept_old, gp_event *out,
                        char *err, size_t errlen);
/* Formats an event as one protocol line (no trailing newline); returns its length, or -1
 * if it does not fit. Used by the simulator, clients' tests and `goodput emit`. */
int gp_proto_format(const gp_event *e, char *buf, size_t cap);

#endif
