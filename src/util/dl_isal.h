/* dl_isal.h: streaming gzip inflate with Intel ISA-L (Debian libisal2), when it is there.
 *
 * ISA-L's igzip inflates the shared .json.gz traces about 2.4x as fast as zlib's inflate
 * (df_index_resolver: 11 ms against 27 ms of CPU for 54 MB) and, unlike libdeflate, it
 * streams: the trace reader keeps its one cache-sized read buffer and its memory does not
 * grow with the file (docs/benchmarks.md, "Traces against HTA"). Optional twice over:
 * built only where ISA-L's header is installed (libisal-dev, scripts/deps.d/traces.txt),
 * and libisal.so.2 is opened with dlopen on first use (dl.h), silently: without it the
 * reader uses zlib, which gives the same bytes. Thread-safe loading (pthread_once); one
 * gp_isal per stream. */
#ifndef GP_UTIL_DL_ISAL_H
#define GP_UTIL_DL_ISAL_H

#include <stddef.h>

typedef struct gp_isal gp_isal;

/* A gzip inflater positioned before a member's header, or NULL when ISA-L is not
 * available (not built in, library missing). */
gp_isal *gp_isal_new(void);
void gp_isal_free(gp_isal *z);
/* Ready for the next member (its header next in the input). */
void gp_isal_reset(gp_isal *z);

enum { GP_ISAL_MORE = 0, GP_ISAL_MEMBER_END = 1, GP_ISAL_ERROR = -1 };
/* Inflates from *in (*n_in bytes) into out (cap bytes), moving *in, *n_in and adding the
 * bytes written to *made. GP_ISAL_MORE: out is full or the input is used up (call again
 * with more); GP_ISAL_MEMBER_END: the member's trailer (CRC-32 and length) matched, the
 * input left is what follows it; GP_ISAL_ERROR: anything else (bad data, header, check). */
int gp_isal_step(gp_isal *z, const unsigned char **in, size_t *n_in, unsigned char *out, size_t cap,
                 size_t *made);

#endif
