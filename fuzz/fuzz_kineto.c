/* fuzz_kineto.c: Kineto Chrome-trace JSON (src/traces/kineto.c), plain or gzip, read into
 * rows and then analysed (src/traces/analyze.c) as `goodput trace` does. */
#include "fuzz_util.h"

#include "traces/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 20) return 0;
    const char *path = fz_write_tmp("kineto", ".json", data, size);
    if (!path) return 0;
    gp_trace_rank r;
    memset(&r, 0, sizeof r);
    char err[1024];
    err[0] = 0;
    if (gp_kineto_read(path, &r, NULL, NULL, err, sizeof err) == 0) {
        gp_trace_options o;
        gp_trace_options_default(&o);
        gp_trace_prepare(&r, 1);
        gp_rank_result res;
        memset(&res, 0, sizeof res);
        if (gp_trace_analyze(&r, &o, &res) == 0) gp_rank_result_free(&res);
    }
    fz_check_err(err, sizeof err);
    gp_trace_rank_free(&r);
    return 0;
}
