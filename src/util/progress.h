/* progress.h: one progress bar for long work, shared by every command. Drawn on stderr
 * only when stderr is a terminal, only once the work has run GP_PROGRESS_AFTER_MS (2 s;
 * the environment variable GOODPUT_PROGRESS_AFTER_MS overrides it, for tests), at most
 * five times a second, and erased when done: piped output and --json never see it.
 * The caller owns the struct; there is no hidden thread (update it from the work loop). */
#ifndef GP_UTIL_PROGRESS_H
#define GP_UTIL_PROGRESS_H

#include <stdint.h>

#define GP_PROGRESS_AFTER_MS 2000

typedef struct {
    const char *label; /* e.g. "reading trace" (not copied) */
    double total;      /* units of work (bytes, rows, ns of simulated time); <= 0: unknown */
    int enabled;       /* stderr is a terminal and the caller did not turn it off */
    int drawn;         /* a bar is on screen (to erase) */
    int fill;          /* '#' cells on screen: a new cell is drawn at once */
    int64_t start_ns, last_ns, after_ns;
} gp_progress;

/* Starts timing. quiet != 0 (e.g. --json, --quiet) turns the bar off. */
void gp_progress_start(gp_progress *p, const char *label, double total, int quiet);
/* done units so far (of total). Cheap when nothing is to be drawn. */
void gp_progress_update(gp_progress *p, double done);
/* Erases the bar when one was drawn. */
void gp_progress_end(gp_progress *p);

#endif
