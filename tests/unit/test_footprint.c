/* test_footprint.c: gp_footprint_trim (agent/footprint.h) drops the resident pages of
 * read-only file mappings, which read back the same afterwards, and leaves alone a
 * private mapping a write copied (its pages exist nowhere else) and writable ones. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/mman.h>

#include "agent/footprint.h"

#define PAGES 64

/* Rss (KiB) of the mapping that starts at p, from /proc/self/smaps; -1 when not found. */
static long rss_kib(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[1024];
    long rss = -1;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = lo == (unsigned long)(uintptr_t)p;
            continue;
        }
        long k;
        if (in && sscanf(line, "Rss: %ld kB", &k) == 1) rss = k;
    }
    fclose(f);
    return rss;
}

static unsigned long sum(const unsigned char *p, size_t n) {
    unsigned long s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 31 + p[i];
    return s;
}

/* A file of PAGES pages at dir/name, written through (so in the page cache), its bytes
 * in *buf (malloc'ed); returns the open descriptor. */
static int page_file(const char *dir, const char *name, unsigned mult, char *path, size_t cap,
                     unsigned char **buf, size_t *len) {
    *len = (size_t)sysconf(_SC_PAGESIZE) * PAGES;
    snprintf(path, cap, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    *buf = malloc(*len);
    assert_non_null(*buf);
    for (size_t i = 0; i < *len; i++)
        (*buf)[i] = (unsigned char)(i * mult + i / 4096);
    assert_int_equal(write(fd, *buf, *len), (ssize_t)*len);
    return fd;
}

static void test_trim(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), path[512];
    unsigned char *buf;
    size_t len;
    int fd = page_file(dir, "f", 7, path, sizeof path, &buf, &len);
    unsigned long want = sum(buf, len);

    /* Read-only, never written: its pages are the file's. */
    unsigned char *ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    /* Written, then made read-only (like relocated data): its pages are copies. */
    unsigned char *cow = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    /* Writable. */
    unsigned char *rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    assert_true(ro != MAP_FAILED && cow != MAP_FAILED && rw != MAP_FAILED);
    cow[0] = 0xAB;
    cow[len - 1] = 0xCD;
    assert_int_equal(mprotect(cow, len, PROT_READ), 0);
    assert_int_equal(sum(ro, len), want); /* all pages resident */
    unsigned long cow_sum = sum(cow, len), rw_sum = sum(rw, len);
    assert_true(rss_kib(ro) >= (long)(len / 1024));

    assert_true(gp_footprint_trim() >= len / 1024);
    assert_int_equal(rss_kib(ro), 0);                /* dropped */
    assert_true(rss_kib(cow) >= (long)(len / 1024)); /* a copied page: kept, all of it */
    assert_true(rss_kib(rw) >= (long)(len / 1024));  /* writable: kept */
    /* Nothing lost: the same bytes everywhere. */
    assert_int_equal(sum(ro, len), want);
    assert_int_equal(sum(cow, len), cow_sum);
    assert_int_equal(cow[0], 0xAB);
    assert_int_equal(cow[len - 1], 0xCD);
    assert_int_equal(sum(rw, len), rw_sum);

    munmap(ro, len);
    munmap(cow, len);
    munmap(rw, len);
    close(fd);
    free(buf);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* After a trim, a read of one page of a dropped mapping maps that page alone where the
 * kernel allows it (userfaultfd WP_ASYNC, Linux 6.7+: fault-around off), not the 64 KiB
 * around it that fault-around maps; the bytes read are the file's either way. */
static void test_one_page_faults(void **st) {
    (void)st;
    long pg = sysconf(_SC_PAGESIZE);
    char *dir = gp_test_tmpdir(), path[512];
    unsigned char *buf;
    size_t len;
    int fd = page_file(dir, "g", 13, path, sizeof path, &buf, &len);
    unsigned char *ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(ro != MAP_FAILED);
    assert_int_equal(sum(ro, len), sum(buf, len));
    gp_footprint_trim();
    assert_int_equal(rss_kib(ro), 0);
    size_t at = len / 2 + 100; /* one byte in the middle of the mapping */
    assert_int_equal(*(volatile unsigned char *)(ro + at), buf[at]);
    long rss = rss_kib(ro);
    int lean = gp_footprint_lean_faults();
    print_message("one page read after a trim: %ld KiB resident (lean faults %s)\n", rss,
                  lean ? "on" : "off: this kernel maps the 64 KiB around it");
    if (lean)
        assert_int_equal(rss, pg / 1024);
    else
        assert_true(rss >= pg / 1024 && rss <= 64);
    assert_int_equal(sum(ro, len), sum(buf, len));
    munmap(ro, len);
    close(fd);
    free(buf);
    unlink(path);
    rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trim),
        cmocka_unit_test(test_one_page_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
