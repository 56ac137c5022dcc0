/* fuzz_promtext.c: the Prometheus text parser (src/util/promtext.c).
 *
 * Each input is parsed three ways: in one buffer strictly, in one buffer skipping bad
 * lines, and streamed in chunks whose sizes come from the input's first byte (as a curl
 * write callback hands them over). Streaming must report the same samples as one buffer. */
#include "fuzz_util.h"

#include "util/promtext.h"

typedef struct {
    long n;
    double sum_labels;
} fz_count;

static int on_sample(void *ctx, const gp_prom_sample *s) {
    fz_count *c = ctx;
    c->n++;
    for (size_t i = 0; i < s->nlabels; i++)
        c->sum_labels += (double)strlen(s->labels[i].name) + (double)strlen(s->labels[i].value);
    if (!s->name || strlen(s->name) == 0) abort();
    return 0;
}

static int on_meta(void *ctx, char kind, const char *name, const char *text, long line) {
    (void)ctx;
    (void)line;
    if (kind != 'H' && kind != 'T') abort();
    return (int)(strlen(name) + strlen(text)) * 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256];
    char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    fz_count one = {0}, skip = {0}, chunked = {0};
    int rc1 = gp_prom_parse(buf, size, on_sample, on_meta, &one, 0, err, sizeof err);
    fz_check_err(err, sizeof err);
    (void)gp_prom_parse(buf, size, on_sample, on_meta, &skip, GP_PROM_SKIP_BAD, err, sizeof err);

    gp_prom_parser *p = gp_prom_parser_new(on_sample, on_meta, &chunked, 0);
    if (p) {
        size_t step = size ? (size_t)(data[0] % 17) + 1 : 1, off = 0;
        int rc = 0;
        while (off < size && rc == 0) {
            size_t n = size - off < step ? size - off : step;
            rc = gp_prom_feed(p, buf + off, n);
            off += n;
        }
        if (rc == 0) rc = gp_prom_finish(p);
        /* Same document, same verdict and the same samples. */
        if ((rc < 0) != (rc1 < 0)) abort();
        if (rc1 >= 0 && chunked.n != one.n) abort();
        gp_prom_parser_free(p);
    }
    free(buf);
    double v;
    if (size < 64) (void)gp_prom_parse_double((const char *)data, size, &v);
    return 0;
}
