/* inflate_only.c: the inflate alone, in memory, for one .json.gz: libdeflate's whole-buffer
 * decompression (util/dl_deflate.h) against zlib's streaming inflate into a 512 KiB chunk
 * (what the trace reader does), CPU seconds of the process, best of REPS. The output buffer
 * for libdeflate is faulted in before timing, so this is the inflate's own cost; the end to
 * end difference is bench/traces/inflate.sh's. Usage: inflate_only FILE.json.gz [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "util/dl_deflate.h"

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: inflate_only FILE.json.gz [REPS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *in = malloc((size_t)n);
    if (!in || fread(in, 1, (size_t)n, f) != (size_t)n) return 1;
    fclose(f);
    size_t cap = (size_t)n * 64, got = 0;
    unsigned char *out = malloc(cap), *chunk = malloc(512u << 10);
    if (!out || !chunk) return 1;
    memset(out, 1, cap);
    double best_d = 1e9, best_z = 1e9;
    size_t total_z = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = cpu_s();
        if (gp_gunzip_whole(in, (size_t)n, out, cap, &got) != 0) {
            fprintf(stderr, "libdeflate: not available or failed\n");
            return 1;
        }
        double t1 = cpu_s();
        z_stream z;
        memset(&z, 0, sizeof z);
        inflateInit2(&z, 15 + 16);
        z.next_in = in;
        z.avail_in = (uInt)n;
        total_z = 0;
        int rc;
        do {
            z.next_out = chunk;
            z.avail_out = 512u << 10;
            rc = inflate(&z, Z_NO_FLUSH);
            total_z += (512u << 10) - z.avail_out;
        } while (rc == Z_OK);
        inflateEnd(&z);
        double t2 = cpu_s();
        if (t1 - t0 < best_d) best_d = t1 - t0;
        if (t2 - t1 < best_z) best_z = t2 - t1;
    }
    printf("{\"file\": \"%s\", \"json_bytes\": %zu, \"zlib_bytes\": %zu, \"libdeflate_s\": %.4f,"
           " \"zlib_s\": %.4f, \"ratio\": %.2f}\n",
           argv[1], got, total_z, best_d, best_z, best_z / best_d);
    return 0;
}
