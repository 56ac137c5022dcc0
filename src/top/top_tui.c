/* top_tui.c: the interactive `goodput top` (keys like htop/nvtop), drawn with ncurses.
 *
 * ncurses is opened with dlopen on first use, like the other optional libraries
 * (util/dl.h): the product binary stays linked to core libraries only, and a node without
 * libncursesw6 still runs every other command, and `top --once`. Only curses.h's types and
 * constants are used from the header; the functions are called through pointers resolved
 * from libncursesw.so.6 (which brings libtinfo, where keypad and cbreak live); the pointers
 * carry a p_ prefix because curses.h defines several of these names as macros. No macro
 * of curses.h that touches stdscr is used: the window initscr returns is passed along. */
#include <curses.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "top/top.h"
#include "util/dl.h"

static struct {
    WINDOW *(*p_initscr)(void);
    int (*p_endwin)(void);
    int (*p_cbreak)(void);
    int (*p_noecho)(void);
    int (*p_keypad)(WINDOW *, bool);
    int (*p_curs_set)(int);
    void (*p_wtimeout)(WINDOW *, int);
    int (*p_wgetch)(WINDOW *);
    int (*p_werase)(WINDOW *);
    int (*p_wmove)(WINDOW *, int, int);
    int (*p_waddnstr)(WINDOW *, const char *, int);
    int (*p_wattron)(WINDOW *, int);
    int (*p_wattroff)(WINDOW *, int);
    int (*p_wrefresh)(WINDOW *);
    int (*p_getmaxx)(const WINDOW *);
    int (*p_getmaxy)(const WINDOW *);
} fn;

static const gp_dl_sym syms[] = {
    {"initscr", &fn.p_initscr},   {"endwin", &fn.p_endwin},     {"cbreak", &fn.p_cbreak},
    {"noecho", &fn.p_noecho},     {"keypad", &fn.p_keypad},     {"curs_set", &fn.p_curs_set},
    {"wtimeout", &fn.p_wtimeout}, {"wgetch", &fn.p_wgetch},     {"werase", &fn.p_werase},
    {"wmove", &fn.p_wmove},       {"waddnstr", &fn.p_waddnstr}, {"wattron", &fn.p_wattron},
    {"wattroff", &fn.p_wattroff}, {"wrefresh", &fn.p_wrefresh}, {"getmaxx", &fn.p_getmaxx},
    {"getmaxy", &fn.p_getmaxy},
};

static gp_dl_lib lib = {
    "libncursesw", "libncursesw6", "libncursesw.so.6", syms, sizeof syms / sizeof syms[0], 0, NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    gp_dl_open(&lib);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

typedef struct {
    WINDOW *w;
    int rows, cols;
} scr;

static void put(scr *s, int y, const char *text, int attr) {
    if (y < 0 || y >= s->rows) return;
    fn.p_wmove(s->w, y, 0);
    if (attr) fn.p_wattron(s->w, attr);
    char line[2048];
    /* pad to the width so reversed rows are whole bars */
    snprintf(line, sizeof line, "%-*.*s", s->cols, s->cols, text);
    fn.p_waddnstr(s->w, line,
                  s->cols - (y == s->rows - 1)); /* last cell of the screen: no scroll */
    if (attr) fn.p_wattroff(s->w, attr);
}

/* Word-wraps text over at most max lines from y; returns lines used. */
static int wrap(scr *s, int y, const char *label, const char *text, int max) {
    char line[2048];
    int used = 0, w = s->cols > 20 ? s->cols : 20;
    size_t ind = strlen(label);
    const char *p = text;
    while (*p && used < max) {
        int room = w - (int)ind - 1, len = (int)strlen(p);
        int take = len <= room ? len : room;
        if (take < len)
            for (int k = take; k > room / 2; k--)
                if (p[k] == ' ') {
                    take = k;
                    break;
                }
        snprintf(line, sizeof line, "%-*s%.*s", (int)ind, used ? "" : label, take, p);
        put(s, y + used++, line, 0);
        p += take;
        while (*p == ' ')
            p++;
    }
    return used;
}

static const char *HELP[] = {
    "goodput top: keys",
    "",
    "  q            quit",
    "  Up/Down k/j  move the selection",
    "  PgUp/PgDn    move a page",
    "  s            sort by the next column (S: previous); numbers sort high first",
    "  g            GPU view: newest sample per GPU and the jobs holding it",
    "  J            job view: the report's numbers and each job's top finding",
    "  Tab          switch view",
    "  r            refresh now",
    "  h ?          this help (any key closes it)",
    "",
    "UTIL is GPU utilization (a kernel ran), GOODPUT the productive share of allocated",
    "GPU-time, as `goodput report` computes it; '-' is unknown.",
};

static void draw(scr *s, const gp_top_snap *snap, gp_top_view v, int sort, int sel,
                 const char *source, const char *status, int help) {
    char line[2048];
    fn.p_werase(s->w);
    s->rows = fn.p_getmaxy(s->w);
    s->cols = fn.p_getmaxx(s->w);
    if (s->cols > (int)sizeof line - 1) s->cols = (int)sizeof line - 1;
    if (help) {
        for (size_t k = 0; k < sizeof HELP / sizeof HELP[0]; k++)
            put(s, (int)k, HELP[k], k == 0 ? A_BOLD : 0);
        fn.p_wrefresh(s->w);
        return;
    }
    snprintf(line, sizeof line, "goodput top  %s  %zu GPUs  %zu jobs  [%s view]  %s", source,
             snap->n_gpus, snap->n_jobs, v == GP_TOP_VIEW_GPU ? "GPU" : "job", status);
    put(s, 0, line, A_BOLD);
    gp_top_header(line, sizeof line, v, sort, 1);
    put(s, 1, line, A_REVERSE);
    size_t n = v == GP_TOP_VIEW_GPU ? snap->n_gpus : snap->n_jobs;
    int detail = 4, body = s->rows - 3 - detail;
    if (body < 1) body = 1;
    int first = sel >= body ? sel - body + 1 : 0;
    for (int r = 0; r < body && (size_t)(first + r) < n; r++) {
        gp_top_row(line, sizeof line, snap, v, (size_t)(first + r));
        put(s, 2 + r, line, first + r == sel ? A_REVERSE : 0);
    }
    int y = s->rows - 1 - detail;
    if (n && sel >= 0 && (size_t)sel < n) {
        if (v == GP_TOP_VIEW_JOB) {
            const gp_top_job *j = &snap->jobs[sel];
            int u = wrap(s, y, "finding: ", j->finding[0] ? j->finding : "-", 2);
            wrap(s, y + u, "fix:     ", j->advice[0] ? j->advice : "-", detail - u);
        } else {
            const gp_top_gpu *g = &snap->gpus[sel];
            snprintf(line, sizeof line, "gpu %d  %s  %s", g->index, g->uuid, g->name);
            put(s, y, line, 0);
            wrap(s, y + 1, "jobs: ", g->jobs[0] ? g->jobs : "-", detail - 1);
        }
    }
    put(s, s->rows - 1, "q quit  k/j move  s sort  g GPUs  J jobs  Tab switch  h help", A_REVERSE);
    fn.p_wrefresh(s->w);
}

int gp_top_tui(gp_top_reader read, void *ctx, const char *source, double refresh_s, char *err,
               size_t errlen) {
    pthread_once(&once, init);
    if (!lib.ok) {
        snprintf(err, errlen, "the terminal view needs libncursesw (libncursesw6); use --once");
        return -1;
    }
    gp_top_snap snap = {0};
    if (read(ctx, &snap, err, errlen) != 0) return -1;
    scr s = {fn.p_initscr(), 0, 0};
    if (!s.w) {
        snprintf(err, errlen, "cannot start the terminal view (TERM unknown?)");
        gp_top_snap_free(&snap);
        return -1;
    }
    fn.p_cbreak();
    fn.p_noecho();
    fn.p_keypad(s.w, TRUE);
    fn.p_curs_set(0);
    fn.p_wtimeout(s.w, 200);
    gp_top_view v = GP_TOP_VIEW_JOB;
    int sort[2] = {0, 0}, sel[2] = {0, 0}, help = 0, page = 10;
    char status[300] = "";
    double last = now_s();
    gp_top_sort(&snap, GP_TOP_VIEW_GPU, sort[GP_TOP_VIEW_GPU]);
    gp_top_sort(&snap, GP_TOP_VIEW_JOB, sort[GP_TOP_VIEW_JOB]);
    for (;;) {
        if (now_s() - last >= refresh_s) {
            char e[256];
            if (read(ctx, &snap, e, sizeof e) == 0) {
                status[0] = 0;
                gp_top_sort(&snap, GP_TOP_VIEW_GPU, sort[GP_TOP_VIEW_GPU]);
                gp_top_sort(&snap, GP_TOP_VIEW_JOB, sort[GP_TOP_VIEW_JOB]);
            } else {
                snprintf(status, sizeof status, "(stale: %s)", e);
            }
            last = now_s();
        }
        size_t n = v == GP_TOP_VIEW_GPU ? snap.n_gpus : snap.n_jobs;
        if (n && (size_t)sel[v] >= n) sel[v] = (int)n - 1;
        draw(&s, &snap, v, sort[v], sel[v], source, status, help);
        page = s.rows > 8 ? s.rows - 8 : 1;
        int ch = fn.p_wgetch(s.w);
        if (ch == ERR) continue;
        if (help) {
            help = 0;
            continue;
        }
        int nc = gp_top_ncols(v);
        switch (ch) {
        case 'q':
        case 'Q':
            goto done;
        case KEY_UP:
        case 'k':
            if (sel[v] > 0) sel[v]--;
            break;
        case KEY_DOWN:
        case 'j':
            if ((size_t)sel[v] + 1 < n) sel[v]++;
            break;
        case KEY_PPAGE:
            sel[v] = sel[v] > page ? sel[v] - page : 0;
            break;
        case KEY_NPAGE:
            sel[v] = n ? ((size_t)(sel[v] + page) < n ? sel[v] + page : (int)n - 1) : 0;
            break;
        case 's':
        case 'S':
            sort[v] = (sort[v] + (ch == 's' ? 1 : nc - 1)) % nc;
            gp_top_sort(&snap, v, sort[v]);
            break;
        case 'g':
            v = GP_TOP_VIEW_GPU;
            break;
        case 'J':
            v = GP_TOP_VIEW_JOB;
            break;
        case '\t':
            v = v == GP_TOP_VIEW_GPU ? GP_TOP_VIEW_JOB : GP_TOP_VIEW_GPU;
            break;
        case 'r':
            last = 0;
            break;
        case 'h':
        case '?':
            help = 1;
            break;
        default:
            break;
        }
    }
done:
    fn.p_endwin();
    gp_top_snap_free(&snap);
    return 0;
}
