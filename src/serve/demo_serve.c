/* demo_serve.c: the dashboard in `goodput demo` (called from report/demo_hooks.c).
 *
 * The demo serves on 127.0.0.1:9464, or any free loopback port when that one is taken, and
 * prints the address. When the simulated run ends and the report is printed, an
 * interactive demo (stdout is a terminal) keeps serving the stored run until Ctrl-C, so
 * the dashboard can be explored; a non-interactive one stops at once.
 *
 * State: the one server of the demo lives in a file-level pointer, because the demo's
 * hooks take no context; only the demo's (single) thread touches it. */
#include "serve/demo_serve.h"

#include <signal.h>
#include <unistd.h>

#include "serve/serve.h"

static gp_serve *demo_srv;

void gp_serve_demo_start(gp_agent *a, FILE *out) {
    char err[512];
    gp_serve_opts o = {.listen = GP_SERVE_DEFAULT_LISTEN,
                       .db_path = gp_store_path(gp_agent_store(a))};
    if (gp_serve_start(&o, &demo_srv, err, sizeof err) != 0) {
        o.listen = "127.0.0.1:0";
        if (gp_serve_start(&o, &demo_srv, err, sizeof err) != 0) {
            fprintf(out, "goodput demo: no dashboard: %s\n", err);
            return;
        }
    }
    gp_serve_attach(demo_srv, a);
    fprintf(out, "goodput demo: dashboard at %s (Prometheus: %smetrics)\n", gp_serve_url(demo_srv),
            gp_serve_url(demo_srv));
    fflush(out);
}

void gp_serve_demo_live(FILE *out) {
    if (demo_srv) fprintf(out, "\ndashboard: %s\n", gp_serve_url(demo_srv));
}

void gp_serve_demo_finish(gp_agent *a, FILE *out) {
    (void)a, (void)out;
    gp_serve_detach(demo_srv);
}

static volatile sig_atomic_t stop_serving;
static void on_int(int sig) {
    (void)sig;
    stop_serving = 1;
}

void gp_serve_demo_after_report(FILE *out) {
    if (!demo_srv) return;
    if (isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
        fprintf(out, "\nThe dashboard keeps serving this run at %s ; Ctrl-C to stop.\n",
                gp_serve_url(demo_srv));
        fflush(out);
        struct sigaction sa = {0};
        sa.sa_handler = on_int;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        while (!stop_serving)
            pause();
    }
    gp_serve_stop(demo_srv);
    demo_srv = NULL;
}
