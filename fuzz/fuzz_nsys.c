/* fuzz_nsys.c: Nsight Systems SQLite exports (src/traces/nsys.c), including malformed
 * databases: the input is the database file itself. */
#include "fuzz_util.h"

#include "traces/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4 << 20) return 0;
    const char *path = fz_write_tmp("nsys", ".sqlite", data, size);
    if (!path) return 0;
    gp_trace_rank r;
    memset(&r, 0, sizeof r);
    char err[1024];
    err[0] = 0;
    (void)gp_trace_is_sqlite(path);
    if (gp_nsys_read(path, &r, err, sizeof err) == 0) {
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
