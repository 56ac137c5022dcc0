/* svg.h: the small inline-SVG charts the self-contained HTML pages share (trace --html,
 * cluster --html): horizontal bars (stacked or single) and line charts, written straight
 * into the page. No external resource; the bars and lines need no script, every mark carries
 * a <title> so the number is one hover away. The timeline's zoom is a few lines of inline
 * script (gp_svg_timeline_script). */
#ifndef GP_REPORT_SVG_H
#define GP_REPORT_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Text escaped for HTML element content and attribute values. */
void gp_html_esc(FILE *f, const char *s);

/* One horizontal bar per row, made of n_segs segments. v is row-major (n_rows x n_segs);
 * NaN or negative values draw nothing. normalize: each row spans the full width (shares);
 * else the widest row does (absolute values, labelled at the bar's end with unit; a row
 * whose values are all NaN reads "unknown", never 0). grouped: the segments are drawn as
 * separate thin bars under each other on one scale (compare, not stack), each labelled
 * with its value or "unknown" when NaN. */
typedef struct gp_svg_bars {
    const char *aria; /* what the chart shows, for screen readers */
    size_t n_rows, n_segs;
    const char *const *row_labels;
    const char *const *seg_names;
    const char *const *colors;
    const double *v;
    int normalize;
    const char *unit; /* "ms", "GPU-h", ... */
    int grouped;
} gp_svg_bars;
void gp_svg_bars_write(FILE *f, const gp_svg_bars *b);

/* Line chart: n_series series of n_points each (y series-major); x NULL = 0..n-1. NaN
 * points break the line. */
typedef struct gp_svg_lines {
    const char *aria;
    size_t n_points, n_series;
    const double *x, *y;
    const char *const *names;
    const char *const *colors;
    const char *x_label, *y_label;
    int log_x; /* x on a log scale (values must be > 0) */
} gp_svg_lines;
void gp_svg_lines_write(FILE *f, const gp_svg_lines *l);

/* Zoomable timeline: spans on lanes (kernels on streams). Drawn as one SVG whose viewBox
 * the page's script (gp_svg_timeline_script, written once per page) narrows on wheel,
 * drag or the +/- buttons; without the script the whole window still shows. Spans on a
 * lane that touch within 1/20000 of the window with the same colour are drawn as one rect
 * ("N events"), which keeps a 20k-event step to a few hundred kB. Hover names come from
 * one list per chart, not a title per rect. Spans sorted by t0. */
typedef struct gp_svg_span {
    double t0, t1;
    uint32_t lane, label, color; /* indices into lane_labels, labels, colors */
} gp_svg_span;
typedef struct gp_svg_timeline {
    const char *aria;
    size_t n_lanes;
    const char *const *lane_labels;
    size_t n_spans;
    const gp_svg_span *spans;
    size_t n_labels;
    const char *const *labels;
    size_t n_colors;
    const char *const *color_names, *const *colors;
    double x0, x1;    /* the window */
    const char *unit; /* of t0/t1 ("µs") */
} gp_svg_timeline;
void gp_svg_timeline_write(FILE *f, const gp_svg_timeline *t);
/* The few lines of inline script that make every timeline zoomable (no external file). */
void gp_svg_timeline_script(FILE *f);

/* A palette of distinguishable colours, cycled by index. */
const char *gp_svg_color(size_t i);

#endif
