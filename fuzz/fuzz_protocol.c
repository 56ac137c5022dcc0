/* fuzz_protocol.c: the event protocol (src/ingest/protocol.c, gp_proto_parse_line).
 *
 * The input is split at newlines as the ingest socket does; each line is parsed on its own
 * (without a NUL terminator, in an exactly sized heap copy so ASan sees any read past its
 * end). A parsed event must format back into a line that parses again. */
#include "fuzz_util.h"

#include "ingest/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const int64_t now = 1700000000000000000LL;
    size_t start = 0;
    while (start <= size) {
        const uint8_t *nl = memchr(data + start, '\n', size - start);
        size_t len = nl ? (size_t)(nl - (data + start)) : size - start;
        char *line = malloc(len ? len : 1);
        if (!line) return 0;
        memcpy(line, data + start, len);
        for (int accept_old = 0; accept_old < 2; accept_old++) {
            gp_event e;
            char err[256];
            err[0] = 0;
            int rc = gp_proto_parse_line(line, len, now, accept_old, &e, err, sizeof err);
            fz_check_err(err, sizeof err);
            if (rc == 1) {
                char buf[GP_PROTO_MAX_LINE * 2];
                int n = gp_proto_format(&e, buf, sizeof buf);
                if (n > 0) {
                    gp_event e2;
                    char *copy = malloc((size_t)n);
                    if (copy) {
                        memcpy(copy, buf, (size_t)n);
                        (void)gp_proto_parse_line(copy, (size_t)n, now, 1, &e2, err, sizeof err);
                        free(copy);
                    }
                }
            }
        }
        free(line);
        if (!nl) break;
        start += len + 1;
    }
    return 0;
}
