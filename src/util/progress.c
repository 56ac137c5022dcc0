/* progress.c: see progress.h. The bar is "label [#####     ]  42%  ETA 0:13", at most 79
 * columns, redrawn in place with \r and erased with spaces at the end. */
#include "util/progress.h"

#include "util/term.h"
#include "util/mono_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void gp_progress_start(gp_progress *p, const char *label, double total, int quiet) {
    p->label = label;
    p->total = total;
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->drawn = 0;
    p->fill = -1;
    p->start_ns = gp_mono_ns();
    p->last_ns = 0;
    p->after_ns = (int64_t)GP_PROGRESS_AFTER_MS * 1000000;
    const char *e = getenv("GOODPUT_PROGRESS_AFTER_MS");
    if (e && *e) p->after_ns = (int64_t)atol(e) * 1000000;
}

void gp_progress_update(gp_progress *p, double done) {
    if (!p->enabled) return;
    int64_t now = gp_mono_ns();
    if (now - p->start_ns < p->after_ns) return;
    int width = 30;
    double frac = p->total > 0 ? done / p->total : 0;
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    int fill = (int)(frac * width);
    /* Redrawn 5 times a second, and whenever the bar gains a cell: a short run still
     * shows it move (at most 30 more writes of 80 bytes). */
    if (p->drawn && now - p->last_ns < 200000000 && (p->total <= 0 || fill == p->fill)) return;
    p->last_ns = now;
    p->fill = fill;
    char lab[32]; /* a long file name shortened in the middle: the bar stays under 80 columns */
    const char *l = gp_ellipsize(p->label, 28, lab, sizeof lab);
    char bar[31];
    if (p->total > 0) {
        for (int i = 0; i < width; i++)
            bar[i] = i < fill ? '#' : ' ';
        bar[width] = 0;
        double el = (now - p->start_ns) / 1e9;
        char eta[48] = "";
        if (frac > 0.01 && frac < 1) {
            long left = (long)(el / frac - el + 0.5);
            snprintf(eta, sizeof eta, "  ETA %ld:%02ld", left / 60, left % 60);
        }
        fprintf(stderr, "\r%s [%s] %3.0f%%%s   ", l, bar, 100 * frac, eta);
    } else {
        fprintf(stderr, "\r%s ... %.0f s   ", l, (now - p->start_ns) / 1e9);
    }
    fflush(stderr);
    p->drawn = 1;
}

void gp_progress_end(gp_progress *p) {
    if (!p->drawn) return;
    fprintf(stderr, "\r%79s\r", "");
    fflush(stderr);
    p->drawn = 0;
}
