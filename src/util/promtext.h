/* promtext.h: a streaming parser for the Prometheus text exposition format (0.0.4).
 *
 * What it accepts (https://prometheus.io/docs/instrumenting/exposition_formats/):
 *   metric_name [ "{" label="value" { "," label="value" } [ "," ] "}" ] value [ timestamp ]
 * with label values escaped as \\ \" \n, values as Go floats including NaN, +Inf, -Inf,
 * an optional int64 millisecond timestamp, `# HELP name text` (text escapes \\ and \n),
 * `# TYPE name counter|gauge|histogram|summary|untyped`, other `#` comments ignored,
 * blank lines ignored, \n or \r\n line ends, and a last line without a newline.
 *
 * Streaming: feed any number of chunks (a curl write callback can hand them straight in);
 * each complete line is parsed at once and reported to a callback, so memory is one line,
 * not the document. Pointers handed to callbacks are valid only during the call.
 *
 * Errors name the line number and what is wrong ("line 12: label value not quoted").
 * By default the first malformed line stops the parse (as Prometheus rejects a scrape);
 * with GP_PROM_SKIP_BAD, bad lines are counted and skipped, and the first is remembered.
 *
 * No global state, no threads; a parser owns one heap line buffer, freed by
 * gp_prom_parser_free.
 *
 * Usage (a curl write callback, or any loop over chunks):
 *     static int on_sample(void *ctx, const gp_prom_sample *s) {
 *         if (!strcmp(s->name, "vllm:num_requests_running")) ... s->value, s->labels ...
 *         return 0;
 *     }
 *     gp_prom_parser *p = gp_prom_parser_new(on_sample, NULL, ctx, 0);
 *     while ((n = read_some(buf)) > 0)
 *         if (gp_prom_feed(p, buf, n) < 0) break;          // gp_prom_error(p): "line 7: ..."
 *     if (gp_prom_finish(p) < 0) ...;                      // the last line had no newline
 *     gp_prom_parser_free(p);
 * or for a whole buffer: gp_prom_parse(buf, len, on_sample, NULL, ctx, 0, err, sizeof err). */
#ifndef GP_UTIL_PROMTEXT_H
#define GP_UTIL_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    GP_PROM_UNTYPED = 0,
    GP_PROM_COUNTER,
    GP_PROM_GAUGE,
    GP_PROM_HISTOGRAM,
    GP_PROM_SUMMARY,
} gp_prom_type;

typedef struct gp_prom_label {
    const char *name;  /* NUL-terminated, valid during the callback */
    const char *value; /* unescaped, NUL-terminated */
} gp_prom_label;

typedef struct gp_prom_sample {
    const char *name; /* metric name, NUL-terminated */
    const gp_prom_label *labels;
    size_t nlabels;
    double value; /* may be NaN or +-Inf */
    int has_ts;
    int64_t ts_ms;
    gp_prom_type type; /* from the last # TYPE whose family this sample belongs to */
    long line;         /* 1-based line number in the whole stream */
} gp_prom_sample;

/* Returns 0 to go on, non-zero to stop the parse (gp_prom_feed then returns that value). */
typedef int (*gp_prom_sample_fn)(void *ctx, const gp_prom_sample *s);
/* kind is 'H' (HELP) or 'T' (TYPE); text is the help text (unescaped) or the type word. */
typedef int (*gp_prom_meta_fn)(void *ctx, char kind, const char *name, const char *text, long line);

enum { GP_PROM_SKIP_BAD = 1 };

typedef struct gp_prom_parser gp_prom_parser;

/* Creates a parser; on_meta may be NULL. Returns NULL only when out of memory. */
gp_prom_parser *gp_prom_parser_new(gp_prom_sample_fn on_sample, gp_prom_meta_fn on_meta, void *ctx,
                                   int flags);
void gp_prom_parser_free(gp_prom_parser *p);
/* Feeds a chunk. Returns 0, a negative code on a malformed line (strict mode; the message
 * is in gp_prom_error), or the callback's non-zero stop value. */
int gp_prom_feed(gp_prom_parser *p, const char *chunk, size_t len);
/* Parses a last line that had no newline. Same returns as gp_prom_feed. */
int gp_prom_finish(gp_prom_parser *p);
/* The first error ("line N: ..."), or "" when none. */
const char *gp_prom_error(const gp_prom_parser *p);
long gp_prom_samples(const gp_prom_parser *p); /* samples reported so far */
long gp_prom_bad_lines(const gp_prom_parser *p);

/* One-shot convenience: parses a whole buffer. On error returns <0 and copies the message
 * to err. */
int gp_prom_parse(const char *buf, size_t len, gp_prom_sample_fn on_sample, gp_prom_meta_fn on_meta,
                  void *ctx, int flags, char *err, size_t errlen);

/* Parses a Prometheus float ("1.5e3", "NaN", "+Inf", "-Inf"); 0 ok, -1 if malformed. */
int gp_prom_parse_double(const char *s, size_t len, double *out);

#endif
