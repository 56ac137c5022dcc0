/* fuzz_csv.c: the streaming CSV reader of the cluster traces (src/clusters/csv.c) over
 * plain, gzip and tar input (detected from the bytes), with header names and numbers. */
#include "fuzz_util.h"

#include "clusters/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 20) return 0;
    const char *path = fz_write_tmp("csv", ".csv", data, size);
    if (!path) return 0;
    gp_csv *c;
    char err[1024];
    err[0] = 0;
    if (gp_csv_open(&c, path, err, sizeof err) != 0) return 0;
    int rc, first = 1;
    long rows = 0;
    while ((rc = gp_csv_next(c, err, sizeof err)) == 1 && rows++ < 100000) {
        if (first) {
            gp_csv_take_header(c);
            (void)gp_csv_find(c, "gpu");
            first = 0;
            continue;
        }
        int nf = gp_csv_nfields(c);
        for (int i = 0; i < nf + 1; i++) {
            double v;
            const char *f = gp_csv_field(c, i);
            if (strlen(f) > gp_csv_field_len(c, i)) abort(); /* NUL bytes may sit inside */
            (void)gp_csv_num(c, i, &v, err, sizeof err);
            (void)gp_csv_col(c, i);
        }
        (void)gp_csv_line(c);
    }
    fz_check_err(err, sizeof err);
    gp_csv_close(c);
    return 0;
}
