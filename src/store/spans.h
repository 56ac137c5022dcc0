/* spans.h: OpenTelemetry spans in the store (table spans, schema migrations 6 and 8), kept as
 * long as samples (gp_store_retain). A span sent twice (same trace and span id) is stored
 * once. */
#ifndef GP_STORE_SPANS_H
#define GP_STORE_SPANS_H

#include <stddef.h>
#include <stdint.h>

#include "otlp/span.h"
#include "store/store.h"

/* Inside the caller's transaction (gp_store_begin/commit). Returns the number stored (new),
 * or -1 on error. */
long gp_store_put_spans(gp_store *s, const gp_span *v, size_t n);
/* Spans of every trace with a span ending in [t0_ns, t1_ns), whole traces, appended to
 * out; at most max_spans (0 = no limit; the rest is counted in out->dropped). */
int gp_store_load_spans(gp_store *s, int64_t t0_ns, int64_t t1_ns, size_t max_spans,
                        gp_span_set *out);

#endif
