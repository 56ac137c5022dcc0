/* slurp.c: see slurp.h. */
#include "util/slurp.h"

#include <errno.h>
#include <stdlib.h>

int gp_slurp(FILE *f, size_t max_bytes, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n + 65536 + 1 > cap) { /* room for a full read and the terminating NUL */
            size_t nc = cap ? cap * 2 : 131072;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                return -ENOMEM;
            }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (n > max_bytes) {
            free(buf);
            return -EFBIG;
        }
        if (r == 0) break;
    }
    if (ferror(f)) {
        free(buf);
        return -EIO;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}
