/* footprint.c: gp_footprint_trim (footprint.h).
 *
 * Why: the agent's RSS is mostly the pages of libc, SQLite and its own binary that the
 * kernel mapped at start-up, each fault mapping up to 16 pages around the one touched
 * (fault-around); at 8 GPUs that was ~4.9 MiB of its ~6.9 MiB, of which the steady loop
 * uses a fraction (docs/benchmarks.md, agent cost). Only mappings that are private,
 * read-only and backed by a file, and hold no private (copied-on-write) page, are dropped:
 * their pages are the file's, so dropping them loses nothing. Writable mappings, the
 * stack, the heap, shared mappings (SQLite's -shm) and the vDSO are left alone. */
#include "agent/footprint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_RANGES 512

typedef struct {
    uintptr_t lo, hi;
    size_t rss_kib;
    int ok; /* a candidate with no private page */
} range;

size_t gp_footprint_trim(void) {
#ifdef __linux__
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return 0;
    /* Collected first, advised after the file is closed: madvise may change the mapping
     * list smaps is walking. */
    range *r = calloc(MAX_RANGES, sizeof *r);
    if (!r) {
        fclose(f);
        return 0;
    }
    size_t n = 0;
    char line[1024];
    range *cur = NULL;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8], path[512];
        path[0] = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %511s", &lo, &hi, perms, path) >= 3 &&
            strchr(line, '-') < strchr(line, ' ')) {
            cur = NULL;
            /* r-xp or r--p, backed by a file (a path, not [vdso] or [heap]) */
            if (perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' && path[0] == '/' &&
                n < MAX_RANGES) {
                cur = &r[n++];
                cur->lo = lo;
                cur->hi = hi;
                cur->ok = 1;
            }
            continue;
        }
        if (!cur) continue;
        unsigned long kib;
        if (sscanf(line, "Anonymous: %lu kB", &kib) == 1 && kib > 0) cur->ok = 0;
        if (sscanf(line, "Rss: %lu kB", &kib) == 1) cur->rss_kib = kib;
    }
    fclose(f);
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].ok) continue;
        void *p = (void *)r[i].lo;
        size_t len = r[i].hi - r[i].lo;
        madvise(p, len, MADV_RANDOM);
        if (madvise(p, len, MADV_DONTNEED) == 0) dropped += r[i].rss_kib;
    }
    free(r);
    return dropped;
#else
    return 0;
#endif
}
