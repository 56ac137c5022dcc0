/* fuzz_smi.c: nvidia-smi logs (src/sources/smi.c): CSV query tables, dmon, pmon and -q -x
 * XML, through gp_smi_parse on an exactly sized buffer. */
#include "fuzz_util.h"

#include "sources/smi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    gp_smi_log log;
    memset(&log, 0, sizeof log);
    char err[512];
    err[0] = 0;
    int rc = gp_smi_parse("fuzz.log", buf, size, &log, err, sizeof err);
    fz_check_err(err, sizeof err);
    if (rc == 0) {
        for (size_t i = 0; i < log.nsamples; i++)
            if (!memchr(log.samples[i].uuid, 0, sizeof log.samples[i].uuid)) abort();
        gp_smi_log_free(&log);
    }
    free(buf);
    return 0;
}
