/* fuzz_dcgm.c: dcgm-exporter scrape mapping (src/sources/dcgm.c): the Prometheus samples
 * of one scrape mapped onto devices (UUID and MIG keys, field table, DCGM blank sentinels,
 * owner labels). dcgm.c is compiled into this target (its public symbols renamed) so the
 * file-local mapping callback runs without libcurl or a server. */
#include "fuzz_util.h"

#define gp_source_dcgm fz_source_dcgm
#define gp_dcgm_owners fz_dcgm_owners
#define gp_dcgm_unattributed fz_dcgm_unattributed
#include "sources/dcgm.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dcgm_state st;
    memset(&st, 0, sizeof st);
    st.dev = calloc(MAX_DEV, sizeof *st.dev);
    if (!st.dev) return 0;
    char *buf = malloc(size ? size : 1);
    if (buf) {
        memcpy(buf, data, size);
        char err[256];
        (void)gp_prom_parse(buf, size, on_sample, NULL, &st, GP_PROM_SKIP_BAD, err, sizeof err);
        if (st.ndev > MAX_DEV) abort();
        for (size_t i = 0; i < st.ndev; i++)
            if (!memchr(st.dev[i].dev.uuid, 0, sizeof st.dev[i].dev.uuid)) abort();
        gp_dcgm_owner own[8];
        size_t n = 0;
        (void)fz_dcgm_owners(&st, own, 8, &n);
        free(buf);
    }
    free(st.dev);
    return 0;
}
