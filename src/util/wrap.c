/* wrap.c: see wrap.h. Runs of spaces inside a line are kept (aligned columns in help
 * texts stay aligned); the spaces where a line breaks are dropped. */
#include "util/wrap.h"

#include <string.h>

void gp_wrap_print(FILE *out, const char *first, int indent, const char *text, int width) {
    int col = fprintf(out, "%s", first);
    int line_start = 1; /* nothing after the prefix yet: the first word goes here anyway */
    const char *p = text;
    while (*p) {
        size_t sp = strspn(p, " ");
        p += sp;
        if (!*p) break;
        size_t wl = strcspn(p, " ");
        if (line_start) {
            sp = 0;
        } else if (width > 0 && col + (int)sp + (int)wl > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            sp = 0;
        }
        fprintf(out, "%*s", (int)sp, "");
        fwrite(p, 1, wl, out);
        col += (int)(sp + wl);
        line_start = 0;
        p += wl;
    }
    fputc('\n', out);
}
