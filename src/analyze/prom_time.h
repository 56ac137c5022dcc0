/* prom_time.h: the time and duration forms Prometheus accepts, for --from/--to/--step.
 *
 * Durations: Prometheus/Go units concatenated, largest first: 1w2d, 6h, 90m, 30s, 500ms
 * (y = 365d, w = 7d, d = 24h). Times: RFC 3339 ("2024-05-01T12:00:00Z", offsets and
 * fractional seconds allowed), unix seconds ("1714564800" or "1714564800.5"), or relative
 * to now ("now", "now-6h", "now+30m"). Pure functions; now is the caller's. */
#ifndef GP_ANALYZE_PROM_TIME_H
#define GP_ANALYZE_PROM_TIME_H

#include <stdint.h>

/* 0 with *ms set (> 0), -1 when s is not a duration. */
int gp_prom_parse_duration(const char *s, int64_t *ms);
/* 0 with *ms (unix milliseconds) set, -1 when s is none of the forms above. */
int gp_prom_parse_time(const char *s, int64_t now_ms, int64_t *ms);

#endif
