/* otlp_file.h: an exported OTLP/JSON file (the collector's file exporter, an SDK's JSON
 * export) into spans: one ExportTraceServiceRequest per file, or one per line (JSON lines);
 * gzip accepted. Shared by `goodput workflows --otlp` and `goodput pipeline --otlp`. */
#ifndef GP_OTLP_OTLP_FILE_H
#define GP_OTLP_OTLP_FILE_H

#include <stddef.h>

#include "otlp/span.h"

/* Appends the file's spans to set (the caller owns it). Spans dropped inside good
 * documents are counted in set->dropped and reported on stderr as "PROG: FILE: ...".
 * 0, or -1 with err naming the file (and line) when a document is not OTLP. */
int gp_otlp_load_file(const char *path, gp_span_set *set, const char *prog, char *err,
                      size_t errlen);

#endif
