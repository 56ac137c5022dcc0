/* wrap.h: word-wrapped text for terminal output. Text output fits 100 columns by default
 * (issue 23); a word longer than the width is printed whole on its own line, never cut. */
#ifndef GP_UTIL_WRAP_H
#define GP_UTIL_WRAP_H

#include <stdio.h>

#define GP_TEXT_WIDTH 100

/* Prints `first` then text, wrapped at width columns; continuation lines start with
 * `indent` spaces. Ends with a newline. width <= 0: no wrapping (--wide). */
void gp_wrap_print(FILE *out, const char *first, int indent, const char *text, int width);

#endif
