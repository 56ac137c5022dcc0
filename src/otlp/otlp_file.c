/* otlp_file.c: OTLP/JSON export files read whole (see otlp_file.h). */
#include "otlp/otlp_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp/otlp.h"

static int read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap + 1);
    size_t k;
    while (b && (k = fread(b + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            if (cap >= GP_OTLP_MAX_DOC * 4) {
                snprintf(err, errlen, "%s: larger than %u bytes", path, GP_OTLP_MAX_DOC * 4);
                free(b);
                fclose(f);
                return -1;
            }
            char *p = realloc(b, cap * 2 + 1);
            if (!p) break;
            b = p;
            cap *= 2;
        }
    }
    fclose(f);
    if (!b) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    b[n] = 0;
    *buf = b;
    *len = n;
    return 0;
}

/* A file holds one document, or one per line (JSON lines, as the collector writes). */
int gp_otlp_load_file(const char *path, gp_span_set *set, const char *prog, char *err,
                      size_t errlen) {
    char *buf, *plain = NULL;
    size_t len;
    if (read_file(path, &buf, &len, err, errlen) != 0) return -1;
    const char *doc = buf;
    if (len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b) {
        char e2[300];
        if (gp_otlp_gunzip(buf, len, GP_OTLP_MAX_DOC * 4, &plain, &len, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "%s: %s", path, e2);
            free(buf);
            return -1;
        }
        doc = plain;
    }
    /* the whole file as one document first, then as JSON lines */
    char e1[300] = "";
    size_t n0 = set->n;
    uint64_t d0 = set->dropped;
    int rc = gp_otlp_decode_json(doc, len, set, e1, sizeof e1);
    if (rc == 0 && set->dropped > d0)
        fprintf(stderr, "%s: %s: dropped %llu spans: %s\n", prog, path,
                (unsigned long long)(set->dropped - d0), e1);
    if (rc != 0) {
        set->n = n0;
        int lineno = 0;
        const char *p = doc, *end = doc + len;
        rc = 0;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *le = nl ? nl : end;
            lineno++;
            const char *q = p;
            while (q < le && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q < le) {
                char e2[300] = "";
                d0 = set->dropped;
                if (gp_otlp_decode_json(q, (size_t)(le - q), set, e2, sizeof e2) != 0) {
                    if (lineno == 1)
                        snprintf(err, errlen, "%s: %s", path, e1);
                    else
                        snprintf(err, errlen, "%s:%d: %s", path, lineno, e2);
                    rc = -1;
                    break;
                }
                if (set->dropped > d0)
                    fprintf(stderr, "%s: %s:%d: dropped %llu spans: %s\n", prog, path, lineno,
                            (unsigned long long)(set->dropped - d0), e2);
            }
            p = nl ? nl + 1 : end;
        }
    }
    free(plain);
    free(buf);
    return rc;
}
