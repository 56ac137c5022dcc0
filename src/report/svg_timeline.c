/* svg_timeline.c: the zoomable timeline of svg.h. The spans are drawn in window units (x =
 * t - x0) inside an SVG stretched to the page width (preserveAspectRatio none), so zooming
 * is only a change of viewBox: the script never redraws rects. Lane labels and the time
 * axis sit outside that SVG so text is never stretched. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"

#define LANE_H 18.0
#define LANE_GAP 4.0

typedef struct open_rect {
    double t0, t1;
    uint32_t label, color;
    size_t n;
    int used;
} open_rect;

static void flush(FILE *f, const open_rect *o, double x0, double y) {
    if (!o->used) return;
    /* data-n: index of the hover name; data-c: how many spans the rect stands for */
    fprintf(f, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\" data-n=\"%u\"",
            o->t0 - x0, y, o->t1 - o->t0, LANE_H, (unsigned)o->label);
    if (o->n > 1) fprintf(f, " data-c=\"%zu\"", o->n);
    fprintf(f, " class=\"c%u\"/>\n", (unsigned)o->color);
}

void gp_svg_timeline_write(FILE *f, const gp_svg_timeline *t) {
    double win = t->x1 - t->x0;
    if (!(win > 0) || !t->n_lanes) return;
    double H = (double)t->n_lanes * (LANE_H + LANE_GAP);
    fprintf(f, "<div class=\"tl\" data-w=\"%.3f\" data-unit=\"", win);
    gp_html_esc(f, t->unit);
    fputs("\"><style>", f);
    for (size_t c = 0; c < t->n_colors; c++) /* scoped by the class names this chart uses */
        fprintf(f, ".tl .c%zu{fill:%s}", c, t->colors[c]);
    fputs("</style><div class=\"tlbar\"><button type=\"button\" data-z=\"in\">+</button>"
          "<button type=\"button\" data-z=\"out\">&minus;</button>"
          "<button type=\"button\" data-z=\"reset\">whole step</button> <span "
          "class=\"tlwin\"></span> <span class=\"tlhover\"></span></div>\n",
          f);
    fprintf(f,
            "<div style=\"display:flex\"><svg class=\"tllab\" width=\"130\" height=\"%.0f\" "
            "font-size=\"11\">",
            H);
    for (size_t l = 0; l < t->n_lanes; l++) {
        fprintf(f, "<text x=\"124\" y=\"%.0f\" text-anchor=\"end\">",
                (double)l * (LANE_H + LANE_GAP) + 13);
        gp_html_esc(f, t->lane_labels[l]);
        fputs("</text>", f);
    }
    fprintf(f,
            "</svg><svg class=\"tlsvg\" viewBox=\"0 0 %.3f %.0f\" preserveAspectRatio=\"none\" "
            "height=\"%.0f\" style=\"flex:1;min-width:0;background:#fafafa;cursor:grab\" "
            "role=\"img\" aria-label=\"",
            win, H, H);
    gp_html_esc(f, t->aria);
    fputs("\">\n", f);
    open_rect *open = calloc(t->n_lanes, sizeof *open);
    if (!open) abort();
    double join = win / 20000;
    for (size_t i = 0; i < t->n_spans; i++) {
        const gp_svg_span *s = &t->spans[i];
        if (s->lane >= t->n_lanes) continue;
        double a = fmax(s->t0, t->x0), b = fmin(s->t1, t->x1);
        if (!(b > a)) continue;
        open_rect *o = &open[s->lane];
        if (o->used && o->color == s->color && a - o->t1 < join && b - o->t0 < join * 4) {
            o->t1 = fmax(o->t1, b); /* too small to tell apart even zoomed in: one rect */
            o->n++;
            continue;
        }
        flush(f, o, t->x0, (double)s->lane * (LANE_H + LANE_GAP));
        *o = (open_rect){a, b, s->label, s->color, 1, 1};
    }
    for (size_t l = 0; l < t->n_lanes; l++)
        flush(f, &open[l], t->x0, (double)l * (LANE_H + LANE_GAP));
    free(open);
    fputs("</svg></div>\n<div class=\"tlaxis\"></div><div class=\"tlleg\">", f);
    for (size_t c = 0; c < t->n_colors; c++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", t->colors[c]);
        gp_html_esc(f, t->color_names[c]);
        fputs("</span> ", f);
    }
    fputs("</div><ol hidden class=\"tlnames\">", f);
    for (size_t k = 0; k < t->n_labels; k++) {
        fputs("<li>", f);
        gp_html_esc(f, t->labels[k]);
        fputs("</li>", f);
    }
    fputs("</ol></div>\n", f);
}

/* Wheel zooms around the pointer, drag pans, the buttons zoom about the centre; the axis
 * shows five ticks of the visible window; hovering a rect names its kernel. */
void gp_svg_timeline_script(FILE *f) {
    fputs("<style>.tl{margin:.4em 0 1.2em}.tlbar button{min-width:2em;margin-right:.3em}"
          ".tlaxis{display:flex;justify-content:space-between;margin-left:130px;font-size:11px;"
          "color:#555}.tlleg{font-size:12px;margin-left:130px}.tlleg i{display:inline-block;"
          "width:10px;height:10px;margin:0 4px 0 8px}.tlhover{font-size:12px;color:#333;"
          "font-family:monospace}</style>\n"
          "<script>\n"
          "document.querySelectorAll('.tl').forEach(function(tl){\n"
          " var svg=tl.querySelector('.tlsvg'),W=+tl.dataset.w,u=tl.dataset.unit,"
          "H=svg.viewBox.baseVal.height,v=[0,W],names=tl.querySelectorAll('.tlnames li');\n"
          " function fmt(x){return x>=1e3?(x/1e3).toFixed(x>=1e5?0:2)+' m'+u.slice(1):"
          "x.toFixed(x>=10?0:1)+' '+u;}\n"
          " function draw(){var w=v[1]-v[0];svg.setAttribute('viewBox',v[0]+' 0 '+w+' '+H);"
          "tl.querySelector('.tlwin').textContent='showing '+fmt(v[0])+' to '+fmt(v[1])+' of '+"
          "fmt(W);var a=tl.querySelector('.tlaxis');a.innerHTML='';for(var k=0;k<=4;k++){"
          "var s=document.createElement('span');s.textContent=fmt(v[0]+w*k/4);a.appendChild(s);}}\n"
          " function zoom(c,f){var w=Math.min(W,Math.max(W/1e5,(v[1]-v[0])*f)),"
          "a=Math.max(0,Math.min(W-w,c-(c-v[0])*w/(v[1]-v[0])));v=[a,a+w];draw();}\n"
          " function at(e){var r=svg.getBoundingClientRect();"
          "return v[0]+(e.clientX-r.left)/r.width*(v[1]-v[0]);}\n"
          " svg.addEventListener('wheel',function(e){e.preventDefault();"
          "zoom(at(e),e.deltaY<0?0.8:1.25);},{passive:false});\n"
          " var drag=null;svg.addEventListener('mousedown',function(e){drag=[e.clientX,v[0]];});\n"
          " window.addEventListener('mouseup',function(){drag=null;});\n"
          " svg.addEventListener('mousemove',function(e){var t=e.target;"
          "if(t.dataset&&t.dataset.n!==undefined){var d=+t.getAttribute('width');"
          "tl.querySelector('.tlhover').textContent=(t.dataset.c?t.dataset.c+' events, '"
          ":'')+fmt(d)+': '+names[+t.dataset.n].textContent.slice(0,160);}\n"
          "  if(!drag)return;var r=svg.getBoundingClientRect(),w=v[1]-v[0],"
          "a=drag[1]-(e.clientX-drag[0])/r.width*w;a=Math.max(0,Math.min(W-w,a));v=[a,a+w];"
          "draw();});\n"
          " tl.querySelectorAll('button').forEach(function(b){b.addEventListener('click',"
          "function(){var z=b.dataset.z,c=(v[0]+v[1])/2;if(z=='reset'){v=[0,W];draw();}"
          "else zoom(c,z=='in'?0.5:2);});});\n"
          " draw();\n"
          "});\n"
          "</script>\n",
          f);
}
