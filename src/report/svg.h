/* svg.h: the small inline-SVG charts the self-contained HTML pages share (trace --html,
 * cluster --html): horizontal bars (stacked or single) and line charts, written straight
 * into the page. No script, no external resource; every mark carries a <title> so the
 * number is one hover away. */
#ifndef GP_REPORT_SVG_H
#define GP_REPORT_SVG_H

#include <stddef.h>
#include <stdio.h>

/* Text escaped for HTML element content and attribute values. */
void gp_html_esc(FILE *f, const char *s);

/* One horizontal bar per row, made of n_segs segments. v is row-major (n_rows x n_segs);
 * NaN or negative values draw nothing. normalize: each row spans the full width (shares);
 * else the widest row does (absolute values, labelled at the bar's end with unit). */
typedef struct gp_svg_bars {
    const char *aria; /* what the chart shows, for screen readers */
    size_t n_rows, n_segs;
    const char *const *row_labels;
    const char *const *seg_names;
    const char *const *colors;
    const double *v;
    int normalize;
    const char *unit; /* "ms", "GPU-h", ... */
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

/* A palette of distinguishable colours, cycled by index. */
const char *gp_svg_color(size_t i);

#endif
