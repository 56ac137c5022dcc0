/* footprint.c: gp_footprint_trim (footprint.h).
 *
 * Why: the agent's RSS is mostly the pages of libc, SQLite and its own binary that the
 * kernel mapped at start-up, each fault mapping up to 16 pages around the one touched
 * (fault-around); at 8 GPUs that was ~4.9 MiB of its ~6.9 MiB, of which the steady loop
 * uses a fraction (docs/benchmarks.md, agent cost). Only mappings that are private,
 * read-only and backed by a file, and hold no private (copied-on-write) page, are dropped:
 * their pages are the file's, so dropping them loses nothing. Writable mappings, the
 * stack, the heap, shared mappings (SQLite's -shm) and the vDSO are left alone.
 *
 * Fault-around: MADV_RANDOM does not stop it (the kernel's should_fault_around reads no
 * madvise flag; measured on 6.18: a dropped page came back with its 64 KiB), so the pages
 * dropped here came back 16 at a time and libc stayed ~80% resident. What the kernel does
 * honour is a userfaultfd registration in write-protect mode (uffd_disable_fault_around): a
 * read fault on such a mapping maps the one page. So each dropped mapping is first
 * registered with one userfaultfd in WP_ASYNC mode (Linux 6.7+; write faults, which these
 * read-only mappings never take, would be resolved by the kernel itself, no handler
 * thread) and UFFD_USER_MODE_ONLY (allowed without privilege). Nothing is ever
 * write-protected, so nothing else changes. Where the kernel lacks it, the pages are
 * still dropped and come back with fault-around as before. */
#include "agent/footprint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef __linux__
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15) /* Linux 6.7; older headers lack it */
#endif
#endif

#define MAX_RANGES 512

typedef struct {
    uintptr_t lo, hi;
    size_t rss_kib;
    int ok; /* a candidate with no private page */
} range;

#ifdef __linux__
/* The userfaultfd the mappings are registered with, opened at the first trim and kept
 * open for the process's life (closing it would undo the registrations): -1 not tried,
 * -2 not available. The only state here; set once, by the process's one thread at
 * start-up or by the agent's loop. */
static int lean_uffd = -1;

static int lean_fd(void) {
    if (lean_uffd != -1) return lean_uffd;
    lean_uffd = -2;
#ifdef SYS_userfaultfd
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0) return lean_uffd;
    struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_WP_ASYNC};
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
        close(fd);
        return lean_uffd;
    }
    lean_uffd = fd;
#endif
    return lean_uffd;
}

/* Registers [p, p + len) for write-protect faults: fault-around is off there. */
static int lean_register(void *p, size_t len) {
    int fd = lean_fd();
    if (fd < 0) return 0;
    struct uffdio_register reg = {.range = {.start = (uintptr_t)p, .len = len},
                                  .mode = UFFDIO_REGISTER_MODE_WP};
    return ioctl(fd, UFFDIO_REGISTER, &reg) == 0;
}
#endif

int gp_footprint_lean_faults(void) {
#ifdef __linux__
    return lean_fd() >= 0;
#else
    return 0;
#endif
}

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
        lean_register(p, len); /* fails harmlessly when registered already */
        madvise(p, len, MADV_RANDOM);
        if (madvise(p, len, MADV_DONTNEED) == 0) dropped += r[i].rss_kib;
    }
    free(r);
    return dropped;
#else
    return 0;
#endif
}
