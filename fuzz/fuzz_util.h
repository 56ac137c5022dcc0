/* fuzz_util.h: helpers shared by the libFuzzer targets (fuzz/fuzz_*.c).
 *
 * Parsers that take a path (traces, cluster readers, nvidia-smi logs) get the fuzz input
 * written to a per-process file under $TMPDIR (default /tmp): one path per target and
 * suffix, rewritten on each execution, removed at exit. Nothing here is thread-safe;
 * libFuzzer runs one input at a time per process. */
#ifndef GP_FUZZ_UTIL_H
#define GP_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fz_paths[4][256];
static int fz_npaths;

static void fz_cleanup(void) {
    for (int i = 0; i < fz_npaths; i++)
        unlink(fz_paths[i]);
}

/* Writes data to the target's temp file named with suffix (e.g. ".json"); returns its
 * path, or NULL when the file cannot be written (the input is then skipped). */
static inline const char *fz_write_tmp(const char *tag, const char *suffix, const uint8_t *data,
                                       size_t size) {
    char path[256];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gp-fuzz-%ld-%s%s", tmp && *tmp ? tmp : "/tmp", (long)getpid(),
             tag, suffix);
    int slot = -1;
    for (int i = 0; i < fz_npaths; i++)
        if (!strcmp(fz_paths[i], path)) slot = i;
    if (slot < 0) {
        if (fz_npaths == 4) return NULL;
        slot = fz_npaths++;
        snprintf(fz_paths[slot], sizeof fz_paths[slot], "%s", path);
        if (slot == 0) atexit(fz_cleanup);
    }
    FILE *f = fopen(fz_paths[slot], "wb");
    if (!f) return NULL;
    int ok = fwrite(data, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    return ok ? fz_paths[slot] : NULL;
}

/* A NUL-terminated copy of the input (caller frees). */
static inline char *fz_cstr(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return NULL;
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* Checks that an error message is one NUL-terminated line inside its buffer. */
static inline void fz_check_err(const char *err, size_t cap) {
    if (memchr(err, 0, cap) == NULL) abort();
}

#endif
