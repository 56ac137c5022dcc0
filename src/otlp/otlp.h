/* otlp.h: OpenTelemetry traces in (OTLP/HTTP, https://opentelemetry.io/docs/specs/otlp/):
 * an ExportTraceServiceRequest in its JSON or protobuf encoding, optionally gzipped,
 * decoded into compact spans (otlp/span.h).
 *
 * Every input is hostile: a document that is not an ExportTraceServiceRequest is refused
 * whole (-1, err names the byte offset or JSON line and the field); a span inside a good
 * document without valid ids or times is dropped and counted in out->dropped, with the
 * first reason in err (the OTLP answer's partial_success). Spans are appended to out,
 * which the caller owns. Resource attributes service.name and host.name fill each span's
 * service and host. */
#ifndef GP_OTLP_OTLP_H
#define GP_OTLP_OTLP_H

#include <stddef.h>
#include <stdint.h>

#include "otlp/span.h"

/* Largest document accepted after gunzip (a gzip bomb stops here). */
#define GP_OTLP_MAX_DOC (16u << 20)

int gp_otlp_decode_json(const char *buf, size_t len, gp_span_set *out, char *err, size_t errlen);
int gp_otlp_decode_pb(const uint8_t *buf, size_t len, gp_span_set *out, char *err, size_t errlen);
/* Inflates a gzip (or zlib) stream into *out (malloc'd, caller frees) of at most max_out
 * bytes. 0, or -1 with err. */
int gp_otlp_gunzip(const void *in, size_t len, size_t max_out, char **out, size_t *out_len,
                   char *err, size_t errlen);
/* One HTTP body: content_type "application/json" or "application/x-protobuf" (NULL:
 * protobuf, OTLP's default), content_encoding NULL, "identity" or "gzip". */
int gp_otlp_decode_body(const void *body, size_t len, const char *content_type,
                        const char *content_encoding, gp_span_set *out, char *err, size_t errlen);

/* Shared by both decoders: what one attribute means for the span or its resource. */
typedef struct gp_otlp_hints {
    int has_tool, has_db;
} gp_otlp_hints;
void gp_otlp_span_str(gp_span *sp, gp_otlp_hints *h, const char *key, size_t klen, const char *v,
                      size_t vlen);
void gp_otlp_span_int(gp_span *sp, gp_otlp_hints *h, const char *key, size_t klen, int64_t v);
/* service.name / host.name into the resource's two strings (64 bytes each). */
void gp_otlp_resource_str(char *service, char *host, const char *key, size_t klen, const char *v,
                          size_t vlen);
/* Checks ids and times, classifies; 0 keep, -1 drop (reason in why). */
int gp_otlp_span_finish(gp_span *sp, const gp_otlp_hints *h, char *why, size_t whylen);

#endif
