/* term.h: what text output may assume about where it goes. Text fits GP_TEXT_WIDTH
 * columns unless the user asked for --wide; colour (ANSI SGR) only when the stream is a
 * terminal and NO_COLOR (https://no-color.org) is unset or empty and TERM is not "dumb";
 * names too long for a column are shortened in the middle, never cut mid-token at the end
 * (the start and the end of a kernel or op name are what tell two apart). */
#ifndef GP_UTIL_TERM_H
#define GP_UTIL_TERM_H

#include <stddef.h>
#include <stdio.h>

#include "util/wrap.h"

/* Columns text output may use: GP_TEXT_WIDTH, or 0 (no limit) with --wide. */
static inline int gp_text_width(int wide) {
    return wide ? 0 : GP_TEXT_WIDTH;
}

/* 1 when colour may be written to out: a terminal, NO_COLOR unset or empty, TERM set and
 * not "dumb". */
int gp_color_ok(FILE *out);

/* ANSI styles, or "" everywhere when colour is off: callers print them unconditionally. */
typedef struct {
    const char *bold, *warn, *bad, *good, *dim, *off;
} gp_style;
gp_style gp_style_for(FILE *out);

/* s as at most max columns (bytes; names here are ASCII): s itself when it fits, else
 * its start, "...", its end. max <= 0 means no limit. Returns buf (or s). */
const char *gp_ellipsize(const char *s, int max, char *buf, size_t cap);

/* printf, then gp_wrap_print: the formatted text's leading spaces start the first line,
 * continuation lines start with indent spaces. One paragraph (no newline inside). */
void gp_wrap_printf(FILE *out, int indent, int width, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
