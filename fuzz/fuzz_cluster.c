/* fuzz_cluster.c: the cluster trace readers (src/clusters/): openb 2023, GenAI 2026,
 * Philly (job log JSON and GPU-util CSV) and Helios, then the report (findings, JSON). The
 * first input byte picks the reader; the rest is the file. PAI 2020 reads a directory of
 * tables through the same CSV reader (fuzz_csv). */
#include "fuzz_util.h"

#include "clusters/cluster.h"

static const struct {
    const char *format, *file;
} readers[] = {
    {"openb2023", "pods.csv"},     {"genai2026", "duty.csv"},
    {"philly", "cluster_job_log"}, {"philly", "cluster_gpu_util.csv"},
    {"helios", "cluster_log.csv"},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* 1 MiB: every reader streams (the Philly job log through yajl's events, one job at a
     * time; the CSV readers row by row) and the report's series are capped, so memory does
     * not grow with the input; fuzz/seed.sh adds 1 MiB Philly logs to the corpus. */
    if (size < 1 || size > 1 << 20) return 0;
    size_t k = data[0] % (sizeof readers / sizeof readers[0]);
    const char *path = fz_write_tmp("cluster-", readers[k].file, data + 1, size - 1);
    if (!path) return 0;
    gp_cluster_report *r = calloc(1, sizeof *r);
    if (!r) return 0;
    gp_cl_report_init(r, readers[k].format, path, 3600);
    char err[1024];
    err[0] = 0;
    if (gp_cl_read(r, readers[k].format, path, err, sizeof err) == 0 && gp_cl_finish(r) == 0) {
        char *j = gp_cl_json(r);
        free(j);
    }
    fz_check_err(err, sizeof err);
    gp_cl_report_free(r);
    free(r);
    return 0;
}
