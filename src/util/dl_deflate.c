/* dl_deflate.c: libdeflate's gzip decompressor behind dl_deflate.h, opened on first use.
 *
 * Declared here rather than included: libdeflate.h is in libdeflate-dev, and three
 * functions of a stable ABI are not worth a build dependency. */
#include "util/dl_deflate.h"

#include <pthread.h>
#include <stdint.h>

#include "util/dl.h"

struct libdeflate_decompressor;
enum { LD_SUCCESS = 0 }; /* libdeflate_result: 1 bad data, 2 short output, 3 no space */

static struct {
    struct libdeflate_decompressor *(*alloc)(void);
    int (*gzip_ex)(struct libdeflate_decompressor *d, const void *in, size_t in_nbytes, void *out,
                   size_t out_nbytes_avail, size_t *actual_in_nbytes_ret,
                   size_t *actual_out_nbytes_ret);
    void (*free_d)(struct libdeflate_decompressor *d);
    uint32_t (*crc32)(uint32_t crc, const void *buf, size_t len);
} fn;

static const gp_dl_sym syms[] = {
    {"libdeflate_alloc_decompressor", &fn.alloc},
    {"libdeflate_gzip_decompress_ex", &fn.gzip_ex},
    {"libdeflate_free_decompressor", &fn.free_d},
    {"libdeflate_crc32", &fn.crc32},
};

static gp_dl_lib lib = {
    "libdeflate", "libdeflate0", "libdeflate.so.0", syms, sizeof syms / sizeof syms[0], 0, NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    gp_dl_open_quiet(&lib);
}

int gp_dl_deflate_load(void) {
    pthread_once(&once, init);
    return lib.ok ? 0 : -1;
}

int gp_gunzip_whole(const void *in, size_t in_len, void *out, size_t cap, size_t *out_len) {
    if (gp_dl_deflate_load()) return -2;
    struct libdeflate_decompressor *d = fn.alloc();
    if (!d) return -1;
    const unsigned char *p = in;
    size_t used = 0, made = 0;
    int rc = 0;
    /* A gzip file may hold several members one after the other (gzip(1) and zlib read them
     * as one stream): each must start with the gzip magic. */
    while (rc == 0 && used < in_len) {
        if (in_len - used < 18 || p[used] != 0x1f || p[used + 1] != 0x8b) {
            rc = -1;
            break;
        }
        size_t in_n = 0, out_n = 0;
        if (fn.gzip_ex(d, p + used, in_len - used, (unsigned char *)out + made, cap - made, &in_n,
                       &out_n) != LD_SUCCESS)
            rc = -1;
        used += in_n;
        made += out_n;
    }
    fn.free_d(d);
    if (rc == 0 && used == 0) rc = -1; /* empty input: not a gzip file */
    *out_len = made;
    return rc;
}

gp_crc32_fn gp_dl_deflate_crc32(void) {
    return gp_dl_deflate_load() == 0 ? fn.crc32 : NULL;
}
