/* dl_isal.c: ISA-L's streaming gzip inflate behind dl_isal.h, opened on first use. Its
 * header is needed for struct inflate_state (the caller allocates it: part of libisal.so.2's
 * ABI); where libisal-dev is missing this builds as "not available". */
#include "util/dl_isal.h"

#include <stdlib.h>

#if defined(__has_include)
#if __has_include(<isa-l/igzip_lib.h>)
#define GP_HAVE_ISAL 1
#endif
#endif

#ifdef GP_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <stdint.h>

#include "util/dl.h"

static struct {
    void (*init)(struct inflate_state *st);
    void (*reset)(struct inflate_state *st);
    int (*inflate)(struct inflate_state *st);
} fn;

static const gp_dl_sym syms[] = {
    {"isal_inflate_init", &fn.init},
    {"isal_inflate_reset", &fn.reset},
    {"isal_inflate", &fn.inflate},
};

static gp_dl_lib lib = {"ISA-L", "libisal2", "libisal.so.2", syms, sizeof syms / sizeof syms[0],
                        0,       NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void load(void) {
    gp_dl_open_quiet(&lib);
}

struct gp_isal {
    struct inflate_state st; /* ~87 KB: window and decode tables */
};

gp_isal *gp_isal_new(void) {
    pthread_once(&once, load);
    if (!lib.ok) return NULL;
    gp_isal *z = malloc(sizeof *z);
    if (!z) abort();
    fn.init(&z->st);
    z->st.crc_flag = ISAL_GZIP; /* header parsed, CRC-32 and length checked */
    return z;
}

void gp_isal_free(gp_isal *z) {
    free(z);
}

void gp_isal_reset(gp_isal *z) {
    fn.reset(&z->st);
    z->st.crc_flag = ISAL_GZIP;
}

int gp_isal_step(gp_isal *z, const unsigned char **in, size_t *n_in, unsigned char *out, size_t cap,
                 size_t *made) {
    struct inflate_state *st = &z->st;
    st->next_in = (uint8_t *)(uintptr_t)*in;
    st->avail_in = *n_in > UINT32_MAX ? UINT32_MAX : (uint32_t)*n_in;
    st->next_out = out;
    st->avail_out = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    int ret = fn.inflate(st);
    size_t used = (size_t)(st->next_in - *in);
    *in += used;
    *n_in -= used;
    *made += (size_t)(st->next_out - out);
    if (ret != ISAL_DECOMP_OK && ret != ISAL_END_INPUT && ret != ISAL_OUT_OVERFLOW)
        return GP_ISAL_ERROR;
    return st->block_state == ISAL_BLOCK_FINISH ? GP_ISAL_MEMBER_END : GP_ISAL_MORE;
}

#else /* no ISA-L header at build time */

gp_isal *gp_isal_new(void) {
    return NULL;
}
void gp_isal_free(gp_isal *z) {
    (void)z;
}
void gp_isal_reset(gp_isal *z) {
    (void)z;
}
int gp_isal_step(gp_isal *z, const unsigned char **in, size_t *n_in, unsigned char *out, size_t cap,
                 size_t *made) {
    (void)z, (void)in, (void)n_in, (void)out, (void)cap, (void)made;
    return GP_ISAL_ERROR;
}
#endif
