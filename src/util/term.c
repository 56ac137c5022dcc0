/* term.c: see term.h. */
#include "util/term.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gp_color_ok(FILE *out) {
    const char *nc = getenv("NO_COLOR");
    if (nc && nc[0]) return 0;
    const char *term = getenv("TERM");
    if (!term || !term[0] || strcmp(term, "dumb") == 0) return 0;
    return isatty(fileno(out));
}

gp_style gp_style_for(FILE *out) {
    if (gp_color_ok(out))
        return (gp_style){"\033[1m", "\033[33m", "\033[31m", "\033[32m", "\033[2m", "\033[0m"};
    return (gp_style){"", "", "", "", "", ""};
}

const char *gp_ellipsize(const char *s, int max, char *buf, size_t cap) {
    size_t n = strlen(s);
    if (max <= 0 || n <= (size_t)max) return s;
    if (max < 5 || cap < (size_t)max + 1) {
        /* too narrow for start...end: the start alone */
        size_t k = (size_t)max < cap - 1 ? (size_t)max : cap - 1;
        memcpy(buf, s, k);
        buf[k] = 0;
        return buf;
    }
    /* more of the start than of the end: the start names the kernel, the end its
     * template arguments or signature */
    size_t keep = (size_t)max - 3, head = (keep + 1) / 2 + keep / 6, tail = keep - head;
    memcpy(buf, s, head);
    memcpy(buf + head, "...", 3);
    memcpy(buf + head + 3, s + n - tail, tail);
    buf[max] = 0;
    return buf;
}

void gp_wrap_printf(FILE *out, int indent, int width, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t lead = strspn(buf, " ");
    char first[64];
    if (lead >= sizeof first) lead = sizeof first - 1;
    memcpy(first, buf, lead);
    first[lead] = 0;
    gp_wrap_print(out, first, indent, buf + lead, width);
}
