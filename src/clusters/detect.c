/* detect.c: which cluster trace format a path holds, from its content.
 *
 * A folder is recognised by the tables it holds (their names are the trace's documented
 * file names); a file by its first bytes ('[' or '{': Philly's JSON job log) or its CSV
 * header (read through csv.c, so .gz and .tar.gz members are looked into). PAI 2020 tables
 * have no header row (the names are in .header files), so PAI is recognised as a folder.
 * Nothing is guessed from a file's name alone, except inside a folder. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "clusters/cluster.h"
#include "clusters/csv.h"

static const char expected[] =
    "expected one of: pai2020 (folder with pai_job_table / pai_task_table / pai_instance_table), "
    "openb2023 (openb_pod_list*.csv: num_gpu,gpu_milli,pod_phase), genai2026 "
    "(pod_gpu_duty_cycle*.tar.gz: value,timestamp_anon,container_ip), philly (cluster_job_log "
    "JSON or cluster_gpu_util: machineId,gpu0_util), helios (cluster_log.csv: "
    "gpu_num,vc,submit_time), alibaba2025 (disaggregated_DLRM_trace.csv: "
    "instance_sn,role,gpu_request)";

typedef struct {
    const char *format;
    const char *cols[3];
} header_rule;

static const header_rule rules[] = {
    {"alibaba2025", {"instance_sn", "role", "gpu_request"}},
    {"openb2023", {"num_gpu", "gpu_milli", "pod_phase"}},
    {"helios", {"gpu_num", "vc", "submit_time"}},
    {"philly", {"machineId", "gpu0_util", NULL}},
    {"genai2026", {"value", "timestamp_anon", "container_ip"}},
};

static const char *from_header(const char *path, char *why, size_t whylen) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    int ch;
    do
        ch = fgetc(f);
    while (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t');
    fclose(f);
    if (ch == '[' || ch == '{') {
        snprintf(why, whylen, "%s is JSON (Philly's cluster_job_log)", path);
        return "philly";
    }
    gp_csv *c;
    char e[256];
    if (gp_csv_open(&c, path, e, sizeof e) != 0) return NULL;
    const char *fmt = NULL;
    if (gp_csv_next(c, e, sizeof e) == 1) {
        gp_csv_take_header(c);
        for (size_t r = 0; !fmt && r < sizeof rules / sizeof rules[0]; r++) {
            int ok = 1;
            for (int k = 0; k < 3 && rules[r].cols[k]; k++)
                ok &= gp_csv_find(c, rules[r].cols[k]) >= 0;
            if (ok) {
                fmt = rules[r].format;
                snprintf(why, whylen, "%s has the columns %s,%s%s%s", path, rules[r].cols[0],
                         rules[r].cols[1], rules[r].cols[2] ? "," : "",
                         rules[r].cols[2] ? rules[r].cols[2] : "");
            }
        }
    }
    gp_csv_close(c);
    return fmt;
}

static const char *from_folder(const char *dir, char *why, size_t whylen) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    static const struct {
        const char *prefix, *format;
    } names[] = {
        {"pai_job_table", "pai2020"},
        {"pai_task_table", "pai2020"},
        {"pai_instance_table", "pai2020"},
        {"openb_pod_list", "openb2023"},
        {"pod_gpu_duty_cycle", "genai2026"},
        {"cluster_job_log", "philly"},
        {"cluster_gpu_util", "philly"},
        {"cluster_log.csv", "helios"},
        {"disaggregated_DLRM_trace", "alibaba2025"},
        {"pai_machine_spec", "pai2020"}, /* last: alone it has no work (the reader says so) */
    };
    size_t best = sizeof names / sizeof names[0];
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 7 && !strcmp(e->d_name + len - 7, ".header")) continue; /* PAI column names */
        for (size_t i = 0; i < best; i++)
            if (!strncmp(e->d_name, names[i].prefix, strlen(names[i].prefix))) {
                best = i; /* the earliest rule wins, whatever order readdir gives */
                snprintf(why, whylen, "%s/%s: %s table", dir, e->d_name, names[i].format);
                break;
            }
    }
    closedir(d);
    return best < sizeof names / sizeof names[0] ? names[best].format : NULL;
}

const char *gp_cl_detect(const char *path, char *why, size_t whylen, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: cannot open (no such file or folder)", path);
        return NULL;
    }
    const char *fmt =
        S_ISDIR(st.st_mode) ? from_folder(path, why, whylen) : from_header(path, why, whylen);
    if (!fmt) snprintf(err, errlen, "%s: not a cluster trace goodput knows; %s", path, expected);
    return fmt;
}
