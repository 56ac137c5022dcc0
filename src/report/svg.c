/* svg.c: inline SVG charts for the HTML reports (svg.h). Sizes are fixed in SVG units with
 * a viewBox, so a chart scales with the page width and stays sharp when zoomed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"

void gp_html_esc(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '"')
            fputs("&quot;", f);
        else
            fputc(*s, f);
    }
}

const char *gp_svg_color(size_t i) {
    static const char *const pal[] = {"#2a9d5c", "#e8912d", "#3b6fd1", "#c0392b", "#8e44ad",
                                      "#16a2b8", "#7f8c8d", "#d35d9e", "#b8a400", "#5d4037"};
    return pal[i % (sizeof pal / sizeof pal[0])];
}

/* A number as a reader wants it on a chart: no exponents, digits by magnitude. */
static const char *num(char *buf, size_t n, double v) {
    double a = fabs(v);
    if (a >= 1e7)
        snprintf(buf, n, "%.0fM", v / 1e6);
    else if (a >= 100 || v == floor(v))
        snprintf(buf, n, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, n, "%.1f", v);
    else if (a >= 0.01)
        snprintf(buf, n, "%.3g", v);
    else
        snprintf(buf, n, "%.2g", v);
    return buf;
}

static int ok(double x) {
    return !isnan(x) && x > 0;
}

/* Row label at the left, cut to the room it has (estimated at 11 px: capitals and digits
 * wider than lower case); the full one is the hover title (C++ kernel names). */
static void row_label(FILE *f, const char *label, double x, double y) {
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\"><title>", x, y);
    gp_html_esc(f, label);
    fputs("</title>", f);
    double room = x - 4, w = 0;
    size_t n = strlen(label), fit = 0, fit_dots = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)label[i];
        w += (c >= 'A' && c <= 'Z') ? 7.6 : (c >= '0' && c <= '9') ? 6.4 : c >= 0x80 ? 3.5 : 6.0;
        if (w <= room) fit = i + 1;
        if (w <= room - 9) fit_dots = i + 1;
    }
    char cut[160];
    if (fit_dots > 150) fit_dots = 150;
    while (fit_dots > 0 && ((unsigned char)label[fit_dots] & 0xC0) == 0x80)
        fit_dots--; /* never cut inside a UTF-8 character */
    if (fit == n)
        snprintf(cut, sizeof cut, "%.150s", label);
    else
        snprintf(cut, sizeof cut, "%.*s..", (int)fit_dots, label);
    gp_html_esc(f, cut);
    fputs("</text>", f);
}

void gp_svg_bars_write(FILE *f, const gp_svg_bars *b) {
    const double L = 190, W = 525, GAP = 4;
    const char *unit = b->unit ? b->unit : "";
    char nb[32];
    double RH = b->grouped ? 12.0 * (double)b->n_segs + 2 : 20;
    double maxv = 0;
    for (size_t r = 0; r < b->n_rows; r++) {
        double t = 0;
        for (size_t k = 0; k < b->n_segs; k++) {
            double v = b->v[r * b->n_segs + k];
            if (!ok(v)) continue;
            if (b->grouped)
                t = fmax(t, v);
            else
                t += v;
        }
        if (t > maxv) maxv = t;
    }
    double legend = b->n_segs > 1 ? 22 : 0, H = (double)b->n_rows * (RH + GAP) + legend + 4;
    fprintf(f,
            "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
            "role=\"img\" aria-label=\"",
            L + W + 95, H, L + W + 95, H);
    gp_html_esc(f, b->aria);
    fputs("\" font-size=\"11\">\n", f);
    for (size_t r = 0; r < b->n_rows; r++) {
        double y = (double)r * (RH + GAP), t = 0, x = L;
        int known = 0;
        for (size_t k = 0; k < b->n_segs; k++)
            if (!isnan(b->v[r * b->n_segs + k])) {
                known = 1;
                if (ok(b->v[r * b->n_segs + k])) t += b->v[r * b->n_segs + k];
            }
        double scale = b->normalize ? (t > 0 ? W / t : 0) : (maxv > 0 ? W / maxv : 0);
        row_label(f, b->row_labels[r], L - 6, y + (b->grouped ? RH / 2 + 4 : 14));
        for (size_t k = 0; k < b->n_segs; k++) {
            double v = b->v[r * b->n_segs + k];
            if (b->grouped) {
                double yy = y + 12.0 * (double)k, w = ok(v) ? v * scale : 0;
                fprintf(f,
                        "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"10\" fill=\"%s\">"
                        "<title>",
                        L, yy, w, b->colors[k]);
                gp_html_esc(f, b->seg_names[k]);
                if (isnan(v))
                    fputs(": unknown</title></rect>", f);
                else
                    fprintf(f, ": %s %s</title></rect>", num(nb, sizeof nb, v), unit);
                fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\"%s>", L + w + 4, yy + 9,
                        isnan(v) ? " fill=\"#888\"" : "");
                if (isnan(v))
                    fputs("unknown</text>", f);
                else
                    fprintf(f, "%s %s</text>", num(nb, sizeof nb, v), unit);
                continue;
            }
            if (!ok(v)) continue;
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\">"
                    "<title>",
                    x, y, v * scale, RH, b->colors[k]);
            gp_html_esc(f, b->seg_names[k]);
            if (b->normalize)
                fprintf(f, ": %.1f%%</title></rect>", t > 0 ? 100 * v / t : 0);
            else
                fprintf(f, ": %s %s</title></rect>", num(nb, sizeof nb, v), unit);
            x += v * scale;
        }
        if (!b->normalize && !b->grouped) {
            if (known)
                fprintf(f, "<text x=\"%.1f\" y=\"%.0f\">%s %s</text>", x + 4, y + 14,
                        num(nb, sizeof nb, t), unit);
            else
                fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" fill=\"#888\">unknown</text>", x + 4,
                        y + 14);
        }
        fputc('\n', f);
    }
    if (legend) {
        double x = L, y = (double)b->n_rows * (RH + GAP) + 6;
        for (size_t k = 0; k < b->n_segs; k++) {
            fprintf(f,
                    "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                    "<text x=\"%.0f\" y=\"%.0f\">",
                    x, y, b->colors[k], x + 13, y + 9);
            gp_html_esc(f, b->seg_names[k]);
            fputs("</text>", f);
            x += 24 + 6.2 * (double)strlen(b->seg_names[k]);
        }
    }
    fputs("</svg>\n", f);
}

void gp_svg_lines_write(FILE *f, const gp_svg_lines *l) {
    const double L = 60, T = 10, W = 620, H = 220, B = 40, R = 50;
    char nb[32];
    double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
    for (size_t i = 0; i < l->n_points; i++) {
        double x = l->x ? l->x[i] : (double)i;
        if (l->log_x) x = x > 0 ? log10(x) : NAN;
        if (isnan(x)) continue;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
    }
    for (size_t i = 0; i < l->n_points * l->n_series; i++)
        if (!isnan(l->y[i]) && l->y[i] > y1) y1 = l->y[i];
    int index_x = !l->x && !l->log_x; /* x is the point's number: whole ticks, 1-based */
    if (index_x) x0 = -0.5, x1 = (double)l->n_points - 0.5;
    if (!(x1 > x0)) x1 = x0 + 1;
    if (y1 <= 0) y1 = 1;
    /* legend entries placed by their text width, wrapping at the chart's width */
    double *lgx = malloc((l->n_series + 1) * sizeof *lgx),
           *lgy = malloc((l->n_series + 1) * sizeof *lgy);
    if (!lgx || !lgy) abort();
    double cx = L, cy = 0;
    for (size_t s = 0; s < l->n_series; s++) {
        double w = 24 + 6.2 * (double)strlen(l->names[s]);
        if (cx > L && cx + w > L + W) cx = L, cy += 18;
        lgx[s] = cx;
        lgy[s] = cy;
        cx += w;
    }
    double legend = cy + 18;
    fprintf(f,
            "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
            "role=\"img\" aria-label=\"",
            L + W + R, T + H + B + legend, L + W + R, T + H + B + legend);
    gp_html_esc(f, l->aria);
    fputs("\" font-size=\"11\">\n", f);
    fprintf(f,
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#999\"/>"
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#999\"/>\n",
            L, T + H, L + W, T + H, L, T, L, T + H);
    for (int k = 0; k <= 4; k++) { /* y ticks */
        double v = y1 * k / 4, y = T + H - H * k / 4;
        fprintf(f,
                "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                L, y, L + W, y, L - 4, y + 4, num(nb, sizeof nb, v));
    }
    if (l->log_x) /* x ticks: powers of ten on a log axis, quarters on a linear one */
        for (double e = ceil(x0); e <= x1 + 1e-9; e++) {
            double x = L + W * (e - x0) / (x1 - x0);
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eee\"/>"
                    "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>",
                    x, T, x, T + H, x, T + H + 14, num(nb, sizeof nb, pow(10, e)));
        }
    else if (index_x) {
        size_t every = (l->n_points + 9) / 10;
        for (size_t i = 0; i < l->n_points; i += every)
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%zu</text>",
                    L + W * ((double)i - x0) / (x1 - x0), T + H + 14, i + 1);
    } else
        for (int k = 0; k <= 4; k++) {
            double v = x0 + (x1 - x0) * k / 4, x = L + W * k / 4;
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>", x,
                    T + H + 14, num(nb, sizeof nb, v));
        }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">", L + W / 2, T + H + 30);
    gp_html_esc(f, l->x_label);
    fprintf(f,
            "</text><text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" "
            "text-anchor=\"middle\">",
            T + H / 2, T + H / 2);
    gp_html_esc(f, l->y_label);
    fputs("</text>\n", f);
    for (size_t s = 0; s < l->n_series; s++) {
        const char *c = l->colors ? l->colors[s] : gp_svg_color(s);
        fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" d=\"", c);
        int pen = 0;
        for (size_t i = 0; i < l->n_points; i++) {
            double x = l->x ? l->x[i] : (double)i, y = l->y[s * l->n_points + i];
            if (l->log_x) x = x > 0 ? log10(x) : NAN;
            if (isnan(x) || isnan(y)) {
                pen = 0;
                continue;
            }
            fprintf(f, "%c%.1f,%.1f", pen ? 'L' : 'M', L + W * (x - x0) / (x1 - x0),
                    T + H - H * y / y1);
            pen = 1;
        }
        fputs("\"><title>", f);
        gp_html_esc(f, l->names[s]);
        fputs("</title></path>\n", f);
        for (size_t i = 0; l->n_points <= 40 && i < l->n_points; i++) { /* few points: dots */
            double x = l->x ? l->x[i] : (double)i, y = l->y[s * l->n_points + i];
            if (l->log_x) x = x > 0 ? log10(x) : NAN;
            if (isnan(x) || isnan(y)) continue;
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>",
                    L + W * (x - x0) / (x1 - x0), T + H - H * y / y1, c);
        }
        double lx = lgx[s], ly = T + H + B + lgy[s];
        fprintf(f,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\">",
                lx, ly - 9, c, lx + 13, ly);
        gp_html_esc(f, l->names[s]);
        fputs("</text>", f);
    }
    free(lgx);
    free(lgy);
    fputs("</svg>\n", f);
}
