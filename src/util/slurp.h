/* slurp.h: a whole stream into memory, for readers that parse a file in one piece (log
 * replays, Ray stats). The buffer is NUL-terminated (not counted in *len) and malloc'ed;
 * the caller frees it. Returns 0, -ENOMEM, -EIO (a read error: a directory, a device) or
 * -EFBIG (more than max_bytes: the caller says so, never parses a cut file). */
#ifndef GP_UTIL_SLURP_H
#define GP_UTIL_SLURP_H

#include <stddef.h>
#include <stdio.h>

int gp_slurp(FILE *f, size_t max_bytes, char **buf, size_t *len);

#endif
