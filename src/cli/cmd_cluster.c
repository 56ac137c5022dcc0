/* cmd_cluster.c: `goodput cluster FORMAT PATH [--json] [--html FILE]`: the cluster report
 * from a published GPU cluster trace (src/clusters/cluster.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/exit_codes.h"
#include "clusters/cluster.h"
#include "util/term.h"

static void usage(FILE *f) {
    fprintf(
        f, "usage: goodput cluster FORMAT PATH [--json] [--html FILE] [--wide]\n"
           "  FORMAT: auto (chosen from PATH's content; the choice is printed on stderr),\n"
           "          pai2020 (folder of pai_*.csv/.tar.gz + .header), openb2023 (folder or pod "
           "list csv),\n"
           "          genai2026 (folder of the two .tar.gz, or one), philly (folder with "
           "cluster_job_log,\n"
           "          cluster_gpu_util), helios (cluster_log.csv or its folder),\n"
           "          alibaba2025 (disaggregated_DLRM_trace.csv or its folder)\n"
           "  GPU-hours requested/allocated/used, utilization, queue wait, ineffective occupancy,\n"
           "  sharing fragmentation and findings at cluster scope: more GPUs, or better use?\n"
           "  --json        machine-readable report\n"
           "  --html FILE   self-contained HTML page (inline SVG; no network)\n"
           "  --wide        text wider than 100 columns (whole names, unwrapped lines)\n");
}

int gp_cmd_cluster(int argc, char **argv) {
    const char *pos[2] = {NULL, NULL}, *html = NULL;
    int json = 0, np = 0, wide = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return GP_EXIT_OK;
        } else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--html") && i + 1 < argc)
            html = argv[++i];
        else if (!strcmp(argv[i], "--wide"))
            wide = 1;
        else if (argv[i][0] == '-' || np >= 2) {
            fprintf(stderr,
                    "goodput cluster: unexpected argument '%s' (see goodput cluster --help)\n",
                    argv[i]);
            return GP_EXIT_USAGE;
        } else
            pos[np++] = argv[i];
    }
    if (np != 2) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    char err[1024] = "";
    const char *format = pos[0];
    if (!strcmp(format, "auto")) { /* say what was chosen, and why, before reading */
        char why[600];
        format = gp_cl_detect(pos[1], why, sizeof why, err, sizeof err);
        if (!format) {
            fprintf(stderr, "goodput: cluster: %s\n", err);
            return GP_EXIT_INPUT;
        }
        fprintf(stderr, "goodput: cluster: format %s (%s)\n", format, why);
    }
    gp_cluster_report r;
    gp_cl_report_init(&r, format, pos[1], 3600);
    int rc = GP_EXIT_OK;
    if (gp_cl_read(&r, format, pos[1], err, sizeof err) != 0) {
        fprintf(stderr, "goodput cluster: %s\n", err);
        rc = strstr(err, "unknown cluster trace format") ? GP_EXIT_USAGE : GP_EXIT_INPUT;
        goto out;
    }
    gp_cl_finish(&r);
    if (json) {
        char *s = gp_cl_json(&r);
        if (!s) {
            fprintf(stderr, "goodput cluster: out of memory writing JSON\n");
            rc = GP_EXIT_FAIL;
            goto out;
        }
        puts(s);
        free(s);
    } else if (!html) /* --html alone writes the page, not the page and the text */
        gp_cl_write_text_w(&r, stdout, gp_text_width(wide));
    if (html && gp_cl_write_html(&r, html, err, sizeof err) != 0) {
        fprintf(stderr, "goodput cluster: %s\n", err);
        rc = GP_EXIT_FAIL;
    }
out:
    gp_cl_report_free(&r);
    return rc;
}
