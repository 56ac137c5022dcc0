/* kineto_scan.c: the production Kineto reader, a hand-written streaming JSON scanner.
 *
 * Why hand-written: the design takes yajl's event API for streaming JSON "or a specialised
 * scanner where a benchmark shows the library is the bottleneck". It did: with yajl the
 * reader ran at 110-150 MB/s of uncompressed trace JSON per core (CPU time, 26 MB synthetic
 * rank and the 54 MB df_index_resolver trace), and a profile put yajl's tokenizer (a callback
 * for every key and value of every `args` blob) and strtod on top. This scanner reads the
 * same inputs at 360-420 MB/s per core. It walks traceEvents objects, decodes only the keys
 * the analyses read (cat, name, ts, dur, args.stream, args.correlation, distributedInfo.rank),
 * skips every other value with table-driven loops, and parses integers and the usual decimal
 * timestamps exactly without strtod. bench/RESULTS.md ("## traces") has the numbers.
 *
 * Kineto's own layout is read on a shortcut: its keys as it spells them ("ts": , eight keys),
 * its ", " between members, and plain integers and strings are taken in place without the
 * general path's calls (quick_key, scan_num_inl, skip_value_inl: 68 -> 55 ms CPU on the 54 MB
 * df_index_resolver trace). A shortcut only ever takes bytes that are valid JSON as they
 * stand, so any other spelling, and every error and its byte offset, goes the general way.
 *
 * Exactness: a decimal with at most 19 significant digits and no exponent is converted with
 * integer arithmetic that rounds correctly (so the double is bit-identical to strtod's);
 * anything else (exponents, longer mantissas) goes to strtod. What is kept, dropped and
 * warned about is decided by gp_kineto_finish_event in kineto.c, shared with the yajl
 * reference reader, and the tests compare both readers row by row.
 *
 * Validation: the whole document is checked as strict JSON as yajl checks it (grammar,
 * escapes, control characters, UTF-8 byte structure, no trailing garbage), so a malformed
 * trace is an error naming the 1-based byte offset of the offending byte in the uncompressed
 * stream, never a silently partial read.
 *
 * Memory: one read buffer (CHUNK bytes; zlib adds 3x its gzbuffer) plus scratch for the longest
 * key/name seen and a byte stack as deep as the deepest nesting of a skipped value: bounded,
 * whatever the file size. Plain files are read with read(2); gzip files with zlib's gzread. Errors
 * unwind with longjmp to gp_kineto_read, which frees the scratch and the partial rank. No threads.
 * With libdeflate installed, gzip is inflated by zlib with libdeflate's CRC-32 (fz_read below).
 *
 * Inflate: streaming, by ISA-L's igzip when libisal2 is installed (util/dl_isal.h: 2.4x
 * zlib's speed on the shared traces, same bounded buffer), else by zlib with libdeflate's
 * CRC-32; either hands anything out of the ordinary to gzread (fz_read below), so errors
 * and offsets are zlib's. With GOODPUT_INFLATE=libdeflate in the environment a
 * gzip file whose trailer says it holds at most WHOLE_MAX bytes (and at most the
 * --max-inflate cap) is read whole and inflated at once by libdeflate when it is installed
 * (util/dl_deflate.h); the scanner then walks that one buffer, memory being the file plus
 * its JSON. Not the default because it measured slower end to end (docs/benchmarks.md,
 * "Trace inflate"): libdeflate alone inflates the 54 MB trace in 0.024 s against zlib's
 * 0.058 s, but faulting in a 54 MB buffer and scanning it from memory instead of a
 * cache-sized chunk cost more than that on the bench VM, and peak RSS grew 4x. Anything
 * libdeflate does not take cleanly (no library, a corrupt or truncated stream, a trailer
 * that lies, garbage after the last member) is read with zlib, so errors, offsets and the
 * cap's message are zlib's, unchanged.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "traces/kineto_int.h"
#include "traces/trace.h"
#include "util/dl_deflate.h"
#include "util/dl_isal.h"

#define CHUNK                                                                                      \
    (512u << 10) /* bytes per read: large enough that syscalls and gzread calls cost little */
/* The largest inflated trace held whole in memory for libdeflate (above: zlib, streaming). */
#define WHOLE_MAX (512ULL << 20)

typedef struct sbuf {
    char *v;
    size_t n, cap;
} sbuf;

typedef struct scan {
    unsigned char *buf, *p, *end; /* *end is always 0: a sentinel every fast loop stops at */
    size_t chunk;                 /* bytes per read */
    uint64_t base;                /* stream offset of buf[0] */
    int eof;
    int fd;            /* plain file, or -1 */
    gzFile gz;         /* gzip file, or NULL */
    struct fastgz *fz; /* gzip file read by fz_read (before gz takes over), or NULL */
    int64_t raw_seen;
    uint64_t max_inflate; /* gzip: uncompressed bytes allowed */
    gp_trace_progress_fn progress;
    void *progress_ctx;
    const char *path;
    char *err;
    size_t errlen;
    jmp_buf fail;
    sbuf key, str, name, cat;
    unsigned char *stack; /* open containers while skipping a value */
    size_t depth, stack_cap;
    gp_trace_rank *r;
    gp_kev ev;
    gp_kcat_cache cats;
    int64_t idx;
    int rank_seen;
} scan;

/* Byte classes. In strings: 0 plain, else '"', '\\', a control character (the sentinel 0 is
 * one) or a byte >= 0x80 that starts a UTF-8 sequence. */
static unsigned char str_class[256];
static unsigned char is_ws[256];

static void init_tables(void) {
    /* idempotent and race-free: every thread writes the same values */
    for (int c = 0; c < 256; c++) {
        str_class[c] = (c < 0x20 || c == '"' || c == '\\' || c >= 0x80);
        is_ws[c] = (c == ' ' || c == '\t' || c == '\n' || c == '\r');
    }
}

/* The byte loops at the heart of the scanner. Whitespace: a loop that takes indentation two
 * spaces a step (16-byte and 8-byte-word versions measured slower: indents are short and
 * regular, so the loop's exits predict well, while a bit scan makes each next position wait
 * for the last). Strings: with SSE2 (every x86-64) a run is found 16 bytes at a time and its
 * end located with a bit scan: names and keys have irregular lengths, and a byte loop pays a
 * mispredicted exit for each. Every buffer the scanner walks keeps SCAN_PAD readable bytes
 * past its sentinel, so a load that starts at or before the sentinel never leaves the
 * allocation; the loops stop at the sentinel (0 ends every run), so bytes past it never
 * matter. */
#define SCAN_PAD 16
static inline const unsigned char *skip_ws_run(const unsigned char *q) {
    if (*q > ' ' || !is_ws[*q]) return q; /* most tokens follow no whitespace */
    q++;
    for (;;) { /* indentation: spaces two at a time (a SCAN_PAD byte may be read) */
        uint16_t w;
        memcpy(&w, q, 2);
        if (w != 0x2020) break;
        q += 2;
    }
    while (is_ws[*q])
        q++;
    return q;
}
#if defined(__SSE2__)
#include <emmintrin.h>
static inline const unsigned char *skip_str_run(const unsigned char *q) {
    /* str_class as a vector test: '"', '\\', and (signed) < 0x20, which is both the control
     * characters and the bytes >= 0x80 */
    const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x20);
    for (;;) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
        __m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
                                 _mm_cmplt_epi8(v, ctl));
        unsigned m = (unsigned)_mm_movemask_epi8(w);
        if (m) return q + __builtin_ctz(m);
        q += 16;
    }
}
#else
static inline const unsigned char *skip_str_run(const unsigned char *q) {
    while (!str_class[*q])
        q++;
    return q;
}
#endif

static uint64_t offset_of(const scan *s) {
    return s->base + (uint64_t)(s->p - s->buf);
}

/* Fails at the current byte (1-based offset in the uncompressed stream). */
static _Noreturn void fail(scan *s, const char *what) {
    if (s->p == s->end && s->eof)
        snprintf(s->err, s->errlen, "%s: invalid or truncated JSON at byte %llu: %s", s->path,
                 (unsigned long long)offset_of(s), "unexpected end of input");
    else
        snprintf(s->err, s->errlen, "%s: invalid JSON at byte %llu: %s", s->path,
                 (unsigned long long)(offset_of(s) + 1), what);
    longjmp(s->fail, 1);
}

static void sb_put(sbuf *b, const void *src, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1)
            nc *= 2;
        b->v = realloc(b->v, nc);
        if (!b->v) abort();
        b->cap = nc;
    }
    memcpy(b->v + b->n, src, n);
    b->n += n;
    b->v[b->n] = 0;
}

/* ---- gzip: zlib's inflate with libdeflate's CRC ----
 * zlib's gzread checks each member's CRC-32 with zlib 1.2's table-driven crc32, which took as
 * many instructions as inflating itself on the shared traces (callgrind: 15% of `goodput
 * trace`). When libdeflate is installed its CRC-32 (carry-less multiply) checks the same
 * value at a small fraction of that: inflate runs with zlib's own check off
 * (inflateValidate) and each member's trailer (CRC-32 and length) is compared here.
 * Anything out of the ordinary (a header CRC, a trailer split across reads, a mismatch,
 * corrupt or truncated data, bytes after a member that are not another member) hands the
 * file to gzread from the start of the current chunk: the bytes before it are the same
 * bytes, and every error, offset and message stays exactly zlib's. */
#define FZ_IN (128u << 10)

typedef struct fastgz {
    int fd;
    z_stream zs;   /* zlib's inflate; with ISA-L only its next_in/avail_in are used */
    gp_isal *isal; /* ISA-L's inflate (util/dl_isal.h), or NULL: zlib's */
    unsigned char *in;
    gp_crc32_fn crc32;
    uint32_t crc, isize; /* of the current member's output so far */
    uint64_t raw;        /* compressed bytes read */
    int in_eof, done;
} fastgz;

/* Moves the unread input to the front and reads more. -1 on a read error. */
static int fz_fill(fastgz *z) {
    if (z->in_eof) return 0;
    if (z->zs.avail_in && z->zs.next_in != z->in) memmove(z->in, z->zs.next_in, z->zs.avail_in);
    z->zs.next_in = z->in;
    ssize_t n;
    do
        n = read(z->fd, z->in + z->zs.avail_in, FZ_IN - z->zs.avail_in);
    while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    if (n == 0) z->in_eof = 1;
    z->zs.avail_in += (unsigned)n;
    z->raw += (uint64_t)n;
    return 0;
}

/* Whether a member starts at next_in with no header CRC (FHCRC: left to zlib). */
static int fz_member_start(fastgz *z) {
    while (z->zs.avail_in < 4 && !z->in_eof)
        if (fz_fill(z)) return 0;
    const unsigned char *p = z->zs.next_in;
    /* no FHCRC, no reserved flag bits (zlib rejects those: gzread says how) */
    return z->zs.avail_in >= 4 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8 && !(p[3] & 0xE2);
}

static void fz_free(fastgz *z) {
    if (!z) return;
    inflateEnd(&z->zs);
    gp_isal_free(z->isal);
    free(z->in);
    free(z);
}

/* The fast reader for fd (at offset 0): ISA-L's inflate when it is there, else zlib's with
 * libdeflate's CRC-32; NULL when neither is, the file does not start like a plain gzip
 * member, or GOODPUT_INFLATE=zlib (then gzread does it all). GOODPUT_INFLATE=zlib-inflate
 * leaves ISA-L out (tests and benchmarks compare the engines). */
static fastgz *fz_open(int fd) {
    const char *mode = getenv("GOODPUT_INFLATE"); /* "zlib": gzread alone (tests compare) */
    if (mode && !strcmp(mode, "zlib")) return NULL;
    gp_isal *isal = mode && !strcmp(mode, "zlib-inflate") ? NULL : gp_isal_new();
    gp_crc32_fn crc = isal ? NULL : gp_dl_deflate_crc32();
    if (!isal && !crc) return NULL;
    fastgz *z = calloc(1, sizeof *z);
    if (!z) abort();
    z->fd = fd;
    z->isal = isal;
    z->crc32 = crc;
    z->in = malloc(FZ_IN);
    if (!z->in) abort();
    if (inflateInit2(&z->zs, 15 + 16) != Z_OK) {
        gp_isal_free(isal);
        free(z->in);
        free(z);
        return NULL;
    }
    if (inflateValidate(&z->zs, 0) != Z_OK || !fz_member_start(z)) {
        fz_free(z);
        return NULL;
    }
    return z;
}

/* fz_read with ISA-L: it parses each member's header and checks its trailer itself; members
 * follow one another as with zlib, and anything else is -1 (gzread takes over). */
static long fz_read_isal(fastgz *z, unsigned char *out, size_t cap) {
    size_t made = 0;
    while (made < cap && !z->done) {
        if (z->zs.avail_in == 0) {
            if (fz_fill(z) || z->zs.avail_in == 0) return -1; /* read error or truncated */
        }
        const unsigned char *in = z->zs.next_in;
        size_t n_in = z->zs.avail_in, before = made;
        int ret = gp_isal_step(z->isal, &in, &n_in, out + made, cap - made, &made);
        int moved = n_in != z->zs.avail_in || made != before;
        z->zs.next_in = (unsigned char *)in;
        z->zs.avail_in = (uInt)n_in;
        if (ret == GP_ISAL_ERROR) return -1;
        if (ret == GP_ISAL_MEMBER_END) {
            if (z->zs.avail_in == 0 && fz_fill(z)) return -1;
            if (z->zs.avail_in == 0 && z->in_eof) {
                z->done = 1;
                break;
            }
            if (!fz_member_start(z)) return -1;
            gp_isal_reset(z->isal);
        } else if (!moved) {
            return -1; /* no progress: never loop */
        }
    }
    return (long)made;
}

/* Up to cap bytes into out, as gzread would give them: >= 0 bytes (0 at the end), or -1
 * when gzread must take over from this chunk's start. */
static long fz_read(fastgz *z, unsigned char *out, size_t cap) {
    if (z->isal) return fz_read_isal(z, out, cap);
    size_t made = 0;
    while (made < cap && !z->done) {
        if (z->zs.avail_in == 0) {
            if (fz_fill(z) || z->zs.avail_in == 0) return -1; /* read error or truncated */
        }
        z->zs.next_out = out + made;
        z->zs.avail_out = (uInt)(cap - made);
        int ret = inflate(&z->zs, Z_NO_FLUSH);
        size_t got = (size_t)(z->zs.next_out - (out + made));
        z->crc = z->crc32(z->crc, out + made, got);
        z->isize += (uint32_t)got;
        made += got;
        if (ret == Z_STREAM_END) {
            if (z->zs.next_in - z->in < 8) return -1; /* the trailer straddled two reads */
            const unsigned char *t = z->zs.next_in - 8;
            uint32_t crc = t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
            uint32_t len = t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
            if (crc != z->crc || len != z->isize) return -1;
            if (z->zs.avail_in == 0 && fz_fill(z)) return -1;
            if (z->zs.avail_in == 0 && z->in_eof) {
                z->done = 1;
                break;
            }
            if (!fz_member_start(z) || inflateReset(&z->zs) != Z_OK) return -1;
            z->crc = 0;
            z->isize = 0;
        } else if (ret != Z_OK && !(ret == Z_BUF_ERROR && got)) {
            return -1;
        }
    }
    return (long)made;
}

/* Hands the file to gzread at the start of the current chunk (s->base). gzread's errors
 * and their offsets depend on the calls made before (zlib reads ahead through its own
 * buffer), so the calls are replayed from the start, chunk by chunk, into the (free) read
 * buffer: what follows, errors included, is exactly what gzread alone gives. */
static void fz_to_gzread(scan *s) {
    int fd = s->fz->fd;
    fz_free(s->fz);
    s->fz = NULL;
    if (lseek(fd, 0, SEEK_SET) != 0 || !(s->gz = gzdopen(fd, "rb"))) {
        close(fd);
        snprintf(s->err, s->errlen, "%s: cannot reopen the gzip stream", s->path);
        longjmp(s->fail, 1);
    }
    gzbuffer(s->gz, 128u << 10);
    for (uint64_t at = 0; at < s->base; at += s->chunk) {
        long n = gzread(s->gz, s->buf, (unsigned)s->chunk);
        if (n == (long)s->chunk) continue;
        int zerr;
        const char *m = gzerror(s->gz, &zerr); /* cannot differ from the first pass */
        snprintf(s->err, s->errlen, "%s: gzip data corrupt near uncompressed byte %llu: %s",
                 s->path, (unsigned long long)at, n < 0 ? m : "short read");
        longjmp(s->fail, 1);
    }
}

/* Reads the next chunk once p has reached end. Returns 0 at the end of the input. */
static int refill(scan *s) {
    if (s->eof) return 0;
    if (s->ev.name && (const unsigned char *)s->ev.name >= s->buf &&
        (const unsigned char *)s->ev.name < s->end) { /* a name kept in place: copy it out */
        s->name.n = 0;
        sb_put(&s->name, s->ev.name, s->ev.name_len);
        s->ev.name = s->name.v;
    }
    s->base += (uint64_t)(s->end - s->buf);
    s->p = s->end = s->buf;
    long n;
    if (s->fz && (n = fz_read(s->fz, s->buf, s->chunk)) < 0) fz_to_gzread(s);
    if (s->fz) {
        if (s->base + (uint64_t)n > s->max_inflate) {
            snprintf(s->err, s->errlen,
                     "%s: decompresses to more than %llu bytes (--max-inflate); not read further",
                     s->path, (unsigned long long)s->max_inflate);
            longjmp(s->fail, 1);
        }
        if (s->progress && (int64_t)s->fz->raw > s->raw_seen) {
            s->progress(s->progress_ctx, s->fz->raw - (uint64_t)s->raw_seen);
            s->raw_seen = (int64_t)s->fz->raw;
        }
    } else if (s->gz) {
        n = gzread(s->gz, s->buf, (unsigned)s->chunk);
        if (n < 0) {
            int zerr;
            const char *m = gzerror(s->gz, &zerr);
            snprintf(s->err, s->errlen, "%s: gzip data corrupt near uncompressed byte %llu: %s",
                     s->path, (unsigned long long)s->base, m);
            longjmp(s->fail, 1);
        }
        if (n == 0) {
            int zerr;
            gzerror(s->gz, &zerr);
            if (zerr != Z_OK) {
                snprintf(s->err, s->errlen, "%s: gzip error near uncompressed byte %llu", s->path,
                         (unsigned long long)s->base);
                longjmp(s->fail, 1);
            }
        }
        if (s->base + (uint64_t)n > s->max_inflate) {
            snprintf(s->err, s->errlen,
                     "%s: decompresses to more than %llu bytes (--max-inflate); not read further",
                     s->path, (unsigned long long)s->max_inflate);
            longjmp(s->fail, 1);
        }
        if (s->progress) {
            int64_t now = (int64_t)gzoffset(s->gz);
            if (now > s->raw_seen) s->progress(s->progress_ctx, (uint64_t)(now - s->raw_seen));
            s->raw_seen = now;
        }
    } else {
        do
            n = read(s->fd, s->buf, s->chunk);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
            snprintf(s->err, s->errlen, "%s: read error near byte %llu: %s", s->path,
                     (unsigned long long)s->base, strerror(errno));
            longjmp(s->fail, 1);
        }
        if (s->progress && n > 0) s->progress(s->progress_ctx, (uint64_t)n);
    }
    s->end = s->buf + n;
    *s->end = 0;
    if (n == 0) s->eof = 1;
    return n > 0;
}

/* The current byte, reading on as needed; -1 at the end of the input. */
static inline int peek(scan *s) {
    if (s->p == s->end && !refill(s)) return -1;
    return *s->p;
}

/* The current byte; the input must go on. */
static inline int need(scan *s) {
    if (s->p == s->end && !refill(s)) fail(s, "unexpected end of input");
    return *s->p;
}

/* Skips whitespace; returns the next byte (-1 at the end of the input). */
static inline int ws_or_eof(scan *s) {
    for (;;) {
        unsigned char *q = s->p;
        q = (unsigned char *)skip_ws_run(q);
        s->p = q;
        if (q != s->end) return *q;
        if (!refill(s)) return -1;
    }
}

static inline int ws(scan *s) {
    int c = ws_or_eof(s);
    if (c < 0) fail(s, "unexpected end of input");
    return c;
}

static void expect(scan *s, int c, const char *what) {
    if (ws(s) != c) fail(s, what);
    s->p++;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits of a \u escape (p at the first). */
static unsigned hex4(scan *s) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(need(s));
        if (h < 0) fail(s, "invalid \\u escape in string");
        v = v * 16 + (unsigned)h;
        s->p++;
    }
    return v;
}

static size_t utf32_to_utf8(unsigned cp, char *o) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp < 0x200000) {
        o[0] = (char)(0xF0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    o[0] = '?';
    return 1;
}

/* One escape sequence (p just past the backslash), decoded as yajl decodes it. */
static void scan_escape(scan *s, sbuf *out) {
    int c = need(s);
    char lit;
    switch (c) {
    case '"':
        lit = '"';
        break;
    case '\\':
        lit = '\\';
        break;
    case '/':
        lit = '/';
        break;
    case 'b':
        lit = '\b';
        break;
    case 'f':
        lit = '\f';
        break;
    case 'n':
        lit = '\n';
        break;
    case 'r':
        lit = '\r';
        break;
    case 't':
        lit = '\t';
        break;
    case 'u': {
        s->p++;
        unsigned cp = hex4(s);
        if ((cp & 0xFC00) == 0xD800) {
            /* a high surrogate: yajl joins it with a following \u escape (any), else "?" */
            if (need(s) == '\\') {
                s->p++;
                if (need(s) != 'u') {
                    if (out) sb_put(out, "?", 1);
                    scan_escape(s, out);
                    return;
                }
                s->p++;
                unsigned lo = hex4(s);
                cp = ((cp & 0x3F) << 10) | ((((cp >> 6) & 0xF) + 1) << 16) | (lo & 0x3FF);
            } else {
                if (out) sb_put(out, "?", 1);
                return;
            }
        }
        if (out) {
            char u[4];
            sb_put(out, u, utf32_to_utf8(cp, u));
        }
        return;
    }
    default:
        fail(s, "invalid escape in string");
    }
    s->p++;
    if (out) sb_put(out, &lit, 1);
}

/* A string's body (p just past the opening quote) up to and past the closing quote; its
 * decoded text is appended to out unless out is NULL (then it is only validated). */
static void scan_string(scan *s, sbuf *out) {
    for (;;) {
        unsigned char *q = s->p;
        q = (unsigned char *)skip_str_run(q);
        if (out && q > s->p) sb_put(out, s->p, (size_t)(q - s->p));
        s->p = q;
        unsigned c = *q;
        if (c == '"') {
            s->p++;
            return;
        }
        if (c == '\\') {
            s->p++;
            scan_escape(s, out);
        } else if (c >= 0x80) {
            /* the byte structure yajl checks: a lead byte and its continuation bytes */
            int more = (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
            if (more < 0) fail(s, "invalid UTF-8 in string");
            unsigned char seq[4] = {(unsigned char)c};
            s->p++;
            for (int i = 1; i <= more; i++) {
                int d = need(s);
                if ((d >> 6) != 0x2) fail(s, "invalid UTF-8 in string");
                seq[i] = (unsigned char)d;
                s->p++;
            }
            if (out) sb_put(out, seq, (size_t)more + 1);
        } else if (q == s->end) {
            if (!refill(s)) fail(s, "unexpected end of input");
        } else {
            fail(s, "control character in string");
        }
    }
}

/* ---- numbers ---- */

#define NUM_MAX 64 /* the yajl reader ignored number texts this long or longer */

typedef struct num {
    char t[NUM_MAX];
    size_t n;     /* length of the text (may exceed NUM_MAX - 1: then t is cut) */
    int is_float; /* has '.', 'e' or 'E' */
} num;

static inline void num_put(num *x, int c) {
    if (x->n < NUM_MAX - 1) x->t[x->n] = (char)c;
    x->n++;
}

static inline int is_digit(int c) {
    return c >= '0' && c <= '9';
}

/* A JSON number at p, validated and its text kept. */
static void scan_number(scan *s, num *x) {
    x->n = 0;
    x->is_float = 0;
    int c = need(s);
    if (c == '-') {
        num_put(x, c);
        s->p++;
        c = need(s);
    }
    if (c == '0') {
        num_put(x, c);
        s->p++;
    } else if (c >= '1' && c <= '9') {
        do {
            num_put(x, c);
            s->p++;
        } while (is_digit(c = peek(s)));
    } else {
        fail(s, "invalid number");
    }
    c = peek(s);
    if (c == '.') {
        x->is_float = 1;
        num_put(x, c);
        s->p++;
        if (!is_digit(c = need(s))) fail(s, "invalid number: digits expected after '.'");
        do {
            num_put(x, c);
            s->p++;
        } while (is_digit(c = peek(s)));
    }
    if (c == 'e' || c == 'E') {
        x->is_float = 1;
        num_put(x, c);
        s->p++;
        c = need(s);
        if (c == '+' || c == '-') {
            num_put(x, c);
            s->p++;
            c = need(s);
        }
        if (!is_digit(c)) fail(s, "invalid number: digits expected in exponent");
        do {
            num_put(x, c);
            s->p++;
        } while (is_digit(c = peek(s)));
    }
    x->t[x->n < NUM_MAX - 1 ? x->n : NUM_MAX - 1] = 0;
}

__extension__ typedef unsigned __int128 u128;

static const double pow10_d[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* m / 10^k rounded to the nearest double, ties to even (m > 0, 1 <= k <= 19): the exact
 * quotient of m * 2^sh by 10^k in 128-bit integers, its remainder as the sticky bit. */
static double div_pow10(uint64_t m, int k) {
    uint64_t d = 1;
    for (int i = 0; i < k; i++)
        d *= 10;
    int sh = 127 - (64 - __builtin_clzll(m)); /* m << sh < 2^127 */
    u128 n = (u128)m << sh;
    u128 q = n / d;
    int sticky = (n % d) != 0;
    uint64_t hi = (uint64_t)(q >> 64);
    int bits = hi ? 128 - __builtin_clzll(hi) : 64 - __builtin_clzll((uint64_t)q);
    int drop = bits - 53; /* q >= 2^62, so drop >= 10 */
    u128 mant = q >> drop;
    u128 rem = q & (((u128)1 << drop) - 1), half = (u128)1 << (drop - 1);
    if (rem > half || (rem == half && (sticky || (mant & 1)))) mant++;
    return ldexp((double)(uint64_t)mant, drop - sh);
}

/* The double strtod would give for the number text (correctly rounded, as glibc's is). */
static double num_value(const num *x) {
    const char *c = x->t;
    int neg = *c == '-';
    c += neg;
    uint64_t m = 0;
    int digits = 0, frac = 0;
    for (; is_digit(*c); c++, digits++)
        m = m * 10 + (uint64_t)(*c - '0');
    if (*c == '.')
        for (c++; is_digit(*c); c++, digits++, frac++)
            m = m * 10 + (uint64_t)(*c - '0');
    if (*c || digits > 19) return strtod(x->t, NULL); /* exponent or a long mantissa */
    double v;
    if (frac == 0 || m == 0)
        v = (double)m; /* integer to double rounds to nearest */
    else if (m <= (1ull << 53))
        v = (double)m / pow10_d[frac]; /* both exact: one correctly rounded division */
    else
        v = div_pow10(m, frac);
    return neg ? -v : v;
}

/* ---- values ---- */

static void skip_literal(scan *s, const char *lit) {
    for (const char *l = lit; *l; l++) {
        if (need(s) != *l) fail(s, "invalid literal");
        s->p++;
    }
}

/* Skips a number at p that nothing reads: the same validation as scan_num without
 * computing the value (an ignored args member, most of a kernel's args). The usual case is
 * checked in place; anything else (an exponent, the end of the buffer, a bad number) takes
 * scan_number, which validates and fails exactly as scan_num does. */
static void skip_num(scan *s) {
    const unsigned char *q = s->p;
    q += *q == '-';
    const unsigned char *d0 = q;
    while (is_digit(*q))
        q++;
    if (q == d0 || (q - d0 > 1 && *d0 == '0')) goto slow;
    if (*q == '.') {
        const unsigned char *f0 = ++q;
        while (is_digit(*q))
            q++;
        if (q == f0) goto slow;
    }
    if (*q == 'e' || *q == 'E' || q == s->end) goto slow;
    s->p = (unsigned char *)q;
    return;
slow:;
    num x;
    scan_number(s, &x);
}

static void skip_scalar(scan *s, int c) {
    switch (c) {
    case '"':
        s->p++;
        scan_string(s, NULL);
        return;
    case 't':
        skip_literal(s, "true");
        return;
    case 'f':
        skip_literal(s, "false");
        return;
    case 'n':
        skip_literal(s, "null");
        return;
    default:
        if (c == '-' || is_digit(c)) {
            skip_num(s);
            return;
        }
        fail(s, "expected a value");
    }
}

static void push(scan *s, unsigned char c) {
    if (s->depth == s->stack_cap) {
        s->stack_cap = s->stack_cap ? s->stack_cap * 2 : 64;
        s->stack = realloc(s->stack, s->stack_cap);
        if (!s->stack) abort();
    }
    s->stack[s->depth++] = c;
}

/* Skips any value whose first byte is c (p at it), validating it; containers iteratively,
 * so nesting depth costs heap bytes, not C stack. */
static void skip_value(scan *s, int c) {
    if (c != '{' && c != '[') {
        skip_scalar(s, c);
        return;
    }
    size_t base = s->depth;
    push(s, (unsigned char)c);
    s->p++;
    c = ws(s);
    if (c == (s->stack[s->depth - 1] == '{' ? '}' : ']')) goto close;
    for (;;) {
        /* a member: "key": value in an object, a value in an array */
        if (s->stack[s->depth - 1] == '{') {
            if (c != '"') fail(s, "expected a string key");
            s->p++;
            scan_string(s, NULL);
            expect(s, ':', "expected ':' after a key");
            c = ws(s);
        }
        if (c == '{' || c == '[') {
            push(s, (unsigned char)c);
            s->p++;
            c = ws(s);
            if (c == (s->stack[s->depth - 1] == '{' ? '}' : ']')) goto close;
            continue;
        }
        skip_scalar(s, c);
        for (;;) {
            c = ws(s);
            if (c == ',') {
                s->p++;
                c = ws(s);
                break;
            }
            if (c != (s->stack[s->depth - 1] == '{' ? '}' : ']'))
                fail(s,
                     s->stack[s->depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        close:
            s->p++;
            if (--s->depth == base) return;
        }
    }
}

/* The keys any level reads, told apart right after the key is scanned (the key's bytes may
 * be gone from the buffer by the time its value starts). */
enum {
    KEY_OTHER,
    KEY_CAT,
    KEY_NAME,
    KEY_TS,
    KEY_DUR,
    KEY_ARGS,
    KEY_STREAM,
    KEY_CORR,
    KEY_EVENTS,
    KEY_DIST,
    KEY_RANK,
    KEY_TID,
    KEY_PID,
    KEY_BASETIME,
    KEY_WORLD
};

/* the first byte first: most keys of a length are none of these (External id, Ev Idx) */
#define IS(lit) (n == sizeof(lit) - 1 && k[0] == (lit)[0] && !memcmp(k, lit, sizeof(lit) - 1))
static int key_id(const char *k, size_t n) {
    switch (n) {
    case 2:
        return IS("ts") ? KEY_TS : KEY_OTHER;
    case 3:
        return IS("cat")   ? KEY_CAT
               : IS("dur") ? KEY_DUR
               : IS("tid") ? KEY_TID
               : IS("pid") ? KEY_PID
                           : KEY_OTHER;
    case 4:
        return IS("name") ? KEY_NAME : IS("args") ? KEY_ARGS : IS("rank") ? KEY_RANK : KEY_OTHER;
    case 6:
        return IS("stream") ? KEY_STREAM : KEY_OTHER;
    case 11:
        return IS("correlation") ? KEY_CORR : IS("traceEvents") ? KEY_EVENTS : KEY_OTHER;
    case 10:
        return IS("world_size") ? KEY_WORLD : KEY_OTHER;
    case 15:
        return IS("distributedInfo") ? KEY_DIST : KEY_OTHER;
    case 19:
        return IS("baseTimeNanoseconds") ? KEY_BASETIME : KEY_OTHER;
    default:
        return KEY_OTHER;
    }
}
#undef IS

/* Calls member(s, key id, first byte of the value) for each member of the object at p,
 * which must be '{'. */
typedef void (*member_fn)(scan *s, int key, int c);

/* A key (p just past its opening quote): read in place when it has no escapes and does not
 * cross the end of the buffer, which is nearly always. */
static int scan_key(scan *s) {
    unsigned char *q = s->p;
    q = (unsigned char *)skip_str_run(q);
    if (*q == '"') {
        int id = key_id((const char *)s->p, (size_t)(q - s->p));
        s->p = q + 1;
        return id;
    }
    s->key.n = 0;
    scan_string(s, &s->key);
    return key_id(s->key.v ? s->key.v : "", s->key.n);
}

/* A key as Kineto writes it (p just past its opening quote): the key, its closing quote, ':'
 * and one space, compared 8 bytes at once; its id, p then at the value's first byte, or -1
 * (p unmoved) for anything else, which scan_key reads. Only plain ASCII bytes of valid JSON
 * are taken, so what follows (and any error offset) is the same as by the long way. The load
 * may read past the sentinel, within SCAN_PAD; the sentinel never matches. */
#define LIT8(a, b, c, d, e, f, g)                                                                  \
    ((uint64_t)(unsigned char)(a) | (uint64_t)(unsigned char)(b) << 8 |                            \
     (uint64_t)(unsigned char)(c) << 16 | (uint64_t)(unsigned char)(d) << 24 |                     \
     (uint64_t)(unsigned char)(e) << 32 | (uint64_t)(unsigned char)(f) << 40 |                     \
     (uint64_t)(unsigned char)(g) << 48)
#define MASK(n) ((UINT64_C(1) << (8 * (n))) - 1)
#define EQ(n, a, b, c, d, e, f, g) ((x & MASK(n)) == LIT8(a, b, c, d, e, f, g))
static inline int quick_key(scan *s) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t x;
    memcpy(&x, s->p, 8);
    int id = -1, n = 0;
    switch (x & 0xFF) { /* every id here is the one key_id gives the same key */
    case 'p':
        if (EQ(5, 'p', 'h', '"', ':', ' ', 0, 0))
            id = KEY_OTHER, n = 5;
        else if (EQ(6, 'p', 'i', 'd', '"', ':', ' ', 0))
            id = KEY_PID, n = 6;
        break;
    case 'c':
        if (EQ(6, 'c', 'a', 't', '"', ':', ' ', 0)) id = KEY_CAT, n = 6;
        break;
    case 'n':
        if (EQ(7, 'n', 'a', 'm', 'e', '"', ':', ' ')) id = KEY_NAME, n = 7;
        break;
    case 't':
        if (EQ(5, 't', 's', '"', ':', ' ', 0, 0))
            id = KEY_TS, n = 5;
        else if (EQ(6, 't', 'i', 'd', '"', ':', ' ', 0))
            id = KEY_TID, n = 6;
        break;
    case 'd':
        if (EQ(6, 'd', 'u', 'r', '"', ':', ' ', 0)) id = KEY_DUR, n = 6;
        break;
    case 'a':
        if (EQ(7, 'a', 'r', 'g', 's', '"', ':', ' ')) id = KEY_ARGS, n = 7;
        break;
    default:
        break;
    }
    s->p += n;
    return id;
#else
    (void)s;
    return -1;
#endif
}
#undef EQ
#undef MASK
#undef LIT8

static inline __attribute__((always_inline)) void scan_object(scan *s, member_fn member) {
    s->p++;
    int c = ws(s);
    if (c == '}') {
        s->p++;
        return;
    }
    for (;;) {
        if (c != '"') fail(s, "expected a string key");
        s->p++;
        int key = quick_key(s);
        if (key < 0) {
            key = scan_key(s);
            expect(s, ':', "expected ':' after a key");
        }
        member(s, key, ws(s));
        c = ws(s);
        if (c == ',') {
            /* Kineto's ", \"" between members of a line: straight to the next key (p[1] and
             * p[2] are readable: p < end, and the sentinel stops the compare at end) */
            if (s->p[1] == ' ' && s->p[2] == '"') {
                s->p += 2;
                c = '"';
                continue;
            }
            s->p++;
            c = ws(s);
            continue;
        }
        if (c == '}') {
            s->p++;
            return;
        }
        fail(s, "expected ',' or '}'");
    }
}

/* A number at p: its value and whether its text is a float. Returns 0 when the text is too
 * long to keep (the reference reader ignored those). The usual case (no exponent, at most
 * 19 digits, inside the buffer) is read in place in one pass; anything else takes the
 * validating copy in scan_number. */
static int scan_num(scan *s, double *val, int *is_float) {
    const unsigned char *q = s->p;
    int neg = *q == '-';
    q += neg;
    const unsigned char *d0 = q;
    uint64_t m = 0;
    while (is_digit(*q))
        m = m * 10 + (uint64_t)(*q++ - '0');
    size_t nint = (size_t)(q - d0), frac = 0;
    int dot = *q == '.';
    if (nint == 0 || (nint > 1 && *d0 == '0')) goto slow;
    if (dot) {
        const unsigned char *f0 = ++q;
        while (is_digit(*q))
            m = m * 10 + (uint64_t)(*q++ - '0');
        frac = (size_t)(q - f0);
        if (!frac) goto slow;
    }
    if (*q == 'e' || *q == 'E' || q == s->end || nint + frac > 19) goto slow;
    s->p = (unsigned char *)q;
    *is_float = dot;
    double v;
    if (frac == 0 || m == 0)
        v = (double)m; /* integer to double rounds to nearest */
    else if (m <= (1ull << 53))
        v = (double)m / pow10_d[frac]; /* both exact: one correctly rounded division */
    else
        v = div_pow10(m, (int)frac);
    *val = neg ? -v : v;
    return 1;
slow:;
    num x;
    scan_number(s, &x);
    if (x.n >= NUM_MAX) return 0;
    *val = num_value(&x);
    *is_float = x.is_float;
    return 1;
}

/* scan_num's most common case inlined into its callers: a non-negative integer of at most
 * 19 digits inside the buffer (ts, dur, pid, tid, correlation ids); anything else, p unmoved,
 * goes to scan_num, which reads it from the start. */
static inline __attribute__((always_inline)) int scan_num_inl(scan *s, double *val, int *is_float) {
    const unsigned char *q = s->p, *d0 = q;
    uint64_t m = 0;
    while (is_digit(*q))
        m = m * 10 + (uint64_t)(*q++ - '0');
    size_t n = (size_t)(q - d0);
    if (n == 0 || n > 19 || (n > 1 && *d0 == '0') || *q == '.' || *q == 'e' || *q == 'E' ||
        q == s->end)
        return scan_num(s, val, is_float);
    s->p = (unsigned char *)q;
    *val = (double)m; /* integer to double rounds to nearest, as scan_num does */
    *is_float = 0;
    return 1;
}

/* skip_value's most common cases inlined into the event and args readers: a non-negative
 * integer inside the buffer, and a string of plain bytes that ends inside it (what
 * scan_string would accept without an escape, control or non-ASCII byte); anything else, p
 * unmoved, goes to skip_value. c came from ws(), so p < end and a 16-byte load at p + 1 stays
 * within SCAN_PAD. */
static inline __attribute__((always_inline)) void skip_value_inl(scan *s, int c) {
    if (is_digit(c)) {
        const unsigned char *q = s->p, *d0 = q;
        while (is_digit(*q))
            q++;
        if (!((q - d0 > 1 && *d0 == '0') || *q == '.' || *q == 'e' || *q == 'E' || q == s->end)) {
            s->p = (unsigned char *)q;
            return;
        }
    } else if (c == '"') {
        const unsigned char *q = skip_str_run(s->p + 1);
        if (*q == '"') {
            s->p = (unsigned char *)q + 1;
            return;
        }
    }
    skip_value(s, c);
}

static void args_member(scan *s, int key, int c) {
    if (key != KEY_STREAM && key != KEY_CORR) {
        skip_value_inl(s, c);
        return;
    }
    if (c == '"') {
        s->p++;
        s->str.n = 0;
        sb_put(&s->str, "", 0);
        scan_string(s, &s->str);
        if (key == KEY_STREAM)
            gp_kineto_set_stream_text(&s->ev, s->str.v, s->str.n);
        else
            gp_kineto_set_corr_text(&s->ev, s->str.v, s->str.n);
    } else if (c == '-' || is_digit(c)) {
        double d;
        int f;
        if (!scan_num_inl(s, &d, &f)) return;
        if (key == KEY_STREAM)
            gp_kineto_set_stream_num(&s->ev, d);
        else
            gp_kineto_set_corr_num(&s->ev, d);
    } else {
        skip_value(s, c);
    }
}

static void event_member(scan *s, int key, int c) {
    if (c == '"') {
        if (key == KEY_NAME) {
            s->p++;
            /* nearly always plain text inside the buffer: kept in place, not copied (refill
             * copies it out if the buffer moves on before the event ends) */
            const unsigned char *q = skip_str_run(s->p);
            if (*q == '"') {
                s->ev.name = (const char *)s->p;
                s->ev.name_len = (size_t)(q - s->p);
                s->p = (unsigned char *)q + 1;
                return;
            }
            s->name.n = 0;
            sb_put(&s->name, "", 0);
            scan_string(s, &s->name);
            s->ev.name = s->name.v;
            s->ev.name_len = s->name.n;
            return;
        }
        if (key == KEY_CAT) {
            s->p++;
            const unsigned char *q = skip_str_run(s->p); /* plain text: used in place */
            if (*q == '"') {
                gp_kineto_set_cat(&s->ev, &s->cats, (const char *)s->p, (size_t)(q - s->p));
                s->p = (unsigned char *)q + 1;
                return;
            }
            s->cat.n = 0;
            sb_put(&s->cat, "", 0);
            scan_string(s, &s->cat);
            gp_kineto_set_cat(&s->ev, &s->cats, s->cat.v, s->cat.n);
            return;
        }
        if (key == KEY_TS) s->r->warn.missing_fields++; /* as the reference reader counts */
        skip_value_inl(s, c);
        return;
    }
    if (c == '-' || is_digit(c)) {
        double d;
        int f;
        if (!scan_num_inl(s, &d, &f)) return;
        if (key == KEY_TS) {
            s->ev.ts = d;
            s->ev.has_ts = 1;
            s->ev.ts_is_float = f;
        } else if (key == KEY_DUR) {
            s->ev.dur = d;
            s->ev.has_dur = 1;
        } else if (key == KEY_TID) {
            /* an integer in range (a truncation that changes nothing; NaN fails the range) */
            if (fabs(d) < 9.2e18 && d == (double)(int64_t)d) s->ev.tid = (int64_t)d;
        } else if (key == KEY_PID) {
            if (d >= 0 && d < 9.2e18 && d == (double)(int64_t)d) s->ev.pid = (int64_t)d;
        }
        return;
    }
    if (c == '{' && key == KEY_ARGS) {
        scan_object(s, args_member);
        return;
    }
    skip_value(s, c);
}

static void set_rank(scan *s, int c) {
    if (c == '-' || is_digit(c)) {
        double d;
        int f;
        if (scan_num(s, &d, &f) && !s->rank_seen && isfinite(d) && d == floor(d) && fabs(d) < 2e9) {
            s->r->rank = (int)d;
            s->r->has_dist_rank = 1;
            s->rank_seen = 1;
        }
    } else {
        skip_value(s, c);
    }
}

/* A number member at the top level or in distributedInfo, handed to set (or skipped). */
static void set_num(scan *s, int c, void (*set)(gp_trace_rank *, double)) {
    double d;
    int f;
    if ((c == '-' || is_digit(c)) && scan_num(s, &d, &f))
        set(s->r, d);
    else if (!(c == '-' || is_digit(c)))
        skip_value(s, c);
}

static void dist_member(scan *s, int key, int c) {
    if (key == KEY_RANK)
        set_rank(s, c);
    else if (key == KEY_WORLD)
        set_num(s, c, gp_kineto_set_world_size);
    else
        skip_value(s, c);
}

static void scan_events(scan *s) {
    s->p++;
    int c = ws(s);
    if (c == ']') {
        s->p++;
        return;
    }
    for (;;) {
        if (c == '{') {
            gp_kineto_event_reset(&s->ev);
            scan_object(s, event_member);
            gp_kineto_finish_event(s->r, &s->ev, s->idx++);
        } else {
            skip_value(s, c);
        }
        c = ws(s);
        if (c == ',') {
            s->p++;
            c = ws(s);
            continue;
        }
        if (c == ']') {
            s->p++;
            return;
        }
        fail(s, "expected ',' or ']'");
    }
}

static void top_member(scan *s, int key, int c) {
    if (c == '[' && key == KEY_EVENTS)
        scan_events(s);
    else if (c == '{' && key == KEY_DIST)
        scan_object(s, dist_member);
    else if (key == KEY_RANK && !s->rank_seen)
        set_rank(s, c);
    else if (key == KEY_BASETIME)
        set_num(s, c, gp_kineto_set_base_time);
    else
        skip_value(s, c);
}

static void scan_document(scan *s) {
    int c = ws_or_eof(s);
    if (c < 0) fail(s, "empty input");
    if (c == '{')
        scan_object(s, top_member);
    else
        skip_value(s, c);
    if (ws_or_eof(s) >= 0) fail(s, "trailing garbage after the JSON value");
}

static void scan_free(scan *s) {
    free(s->buf);
    free(s->key.v);
    free(s->str.v);
    free(s->name.v);
    free(s->cat.v);
    free(s->stack);
}

static int read_scan(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                     void *progress_ctx, size_t chunk, uint64_t max_inflate, char *err,
                     size_t errlen);

int gp_kineto_read(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                   void *progress_ctx, char *err, size_t errlen) {
    return gp_kineto_read_chunked(path, out, progress, progress_ctx, CHUNK, err, errlen);
}

int gp_kineto_read_capped(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                          void *progress_ctx, uint64_t max_inflate_bytes, char *err,
                          size_t errlen) {
    return read_scan(path, out, progress, progress_ctx, CHUNK, max_inflate_bytes, err, errlen);
}

int gp_kineto_read_chunked(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                           void *progress_ctx, size_t chunk, char *err, size_t errlen) {
    return read_scan(path, out, progress, progress_ctx, chunk, 0, err, errlen);
}

/* The buffer for a whole inflated file: mapped with transparent huge pages where the kernel
 * offers them (madvise mode), because faulting in 4 KiB pages one by one cost more than
 * libdeflate saved (a 54 MB trace: 13,000 faults, 0.15 s of system time on the bench VM,
 * against 0.035 s of inflate saved). */
static void *whole_alloc(size_t bytes, size_t *mapped) {
    const size_t huge = 2u << 20;
    *mapped = (bytes + huge - 1) / huge * huge;
    void *p = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, *mapped, MADV_HUGEPAGE);
#endif
    return p;
}

/* The whole inflated file in *out (mapped, *mapped bytes; *n bytes of JSON and a 0
 * sentinel) when libdeflate takes it (see the top of the file); -1 otherwise, the file
 * offset then being anywhere. */
static int inflate_whole(int fd, uint64_t max_inflate, unsigned char **out, size_t *mapped,
                         size_t *n, uint64_t *raw_bytes) {
    const char *mode = getenv("GOODPUT_INFLATE");
    if (!mode || strcmp(mode, "libdeflate") || gp_dl_deflate_load() != 0) return -1;
    off_t size = lseek(fd, 0, SEEK_END);
    unsigned char tail[4];
    if (size < 18 || (uint64_t)size > WHOLE_MAX || pread(fd, tail, 4, size - 4) != 4) return -1;
    /* ISIZE: the last member's length mod 2^32; a wrong guess fails cleanly below. */
    uint64_t want =
        tail[0] | (uint64_t)tail[1] << 8 | (uint64_t)tail[2] << 16 | (uint64_t)tail[3] << 24;
    if (want == 0 || want > WHOLE_MAX || want > max_inflate) return -1;
    unsigned char *in = malloc((size_t)size),
                  *buf = whole_alloc((size_t)want + 1 + SCAN_PAD, mapped);
    size_t got = 0;
    while (in && buf && got < (size_t)size) {
        ssize_t r = pread(fd, in + got, (size_t)size - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    int rc = in && buf && got == (size_t)size && gp_gunzip_whole(in, got, buf, (size_t)want, n) == 0
                 ? 0
                 : -1;
    free(in);
    if (rc) {
        if (buf) munmap(buf, *mapped);
        return -1;
    }
    buf[*n] = 0;
    *out = buf;
    *raw_bytes = (uint64_t)size;
    return 0;
}

static int read_scan(const char *path, gp_trace_rank *out, gp_trace_progress_fn progress,
                     void *progress_ctx, size_t chunk, uint64_t max_inflate, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    gp_kineto_rank_init(out);
    snprintf(out->path, sizeof out->path, "%s", path);
    snprintf(out->source, sizeof out->source, "kineto");
    init_tables();
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    unsigned char magic[2] = {0, 0};
    ssize_t mn = pread(fd, magic, 2, 0);
    scan *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->fd = -1;
    s->max_inflate = max_inflate ? max_inflate : GP_TRACE_MAX_INFLATE_DEFAULT;
    unsigned char *whole = NULL;
    size_t whole_n = 0, whole_mapped = 0;
    uint64_t raw_bytes = 0;
    int gzip = mn == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    struct stat fst;
    if (fstat(fd, &fst) == 0) {
        /* the JSON's size: the file's, or for gzip its trailer's (mod 2^32, last member) */
        uint64_t json_bytes = (uint64_t)fst.st_size;
        unsigned char t[4];
        if (gzip && fst.st_size >= 18 && pread(fd, t, 4, fst.st_size - 4) == 4)
            json_bytes = t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
        gp_kineto_reserve(out, json_bytes);
    }
    if (gzip &&
        inflate_whole(fd, s->max_inflate, &whole, &whole_mapped, &whole_n, &raw_bytes) == 0) {
        close(fd);
        /* One buffer, already at its end of input: refill() is never reached. */
        s->buf = s->p = whole;
        s->end = whole + whole_n;
        s->eof = 1;
        if (progress) progress(progress_ctx, raw_bytes);
    } else if (gzip && lseek(fd, 0, SEEK_SET) == 0 && (s->fz = fz_open(fd)) != NULL) {
        /* read by fz_read */
    } else if (gzip) {
        lseek(fd, 0, SEEK_SET);
        s->gz = gzdopen(fd, "rb");
        if (!s->gz) {
            close(fd);
            free(s);
            snprintf(err, errlen, "%s: cannot open", path);
            return -1;
        }
        gzbuffer(s->gz, 128u << 10); /* zlib allocates 3x this */
    } else {
        s->fd = fd;
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    s->chunk = chunk ? chunk : CHUNK;
    if (!whole) {
        s->buf = calloc(1, s->chunk + 1 + SCAN_PAD);
        if (!s->buf) abort();
        s->p = s->end = s->buf;
        *s->end = 0;
    }
    s->path = path;
    s->err = err;
    s->errlen = errlen;
    s->progress = progress;
    s->progress_ctx = progress_ctx;
    s->r = out;
    int rc = 0;
    if (setjmp(s->fail) == 0)
        scan_document(s);
    else
        rc = -1;
    out->bytes = offset_of(s);
    if (s->fz) {
        close(s->fz->fd);
        fz_free(s->fz);
    } else if (s->gz) {
        int cz = gzclose(s->gz);
        if (rc == 0 && cz != Z_OK) {
            snprintf(err, errlen, "%s: truncated or corrupt gzip stream after %llu bytes", path,
                     (unsigned long long)out->bytes);
            rc = -1;
        }
    } else if (!whole) {
        close(s->fd);
    }
    if (whole) {
        munmap(whole, whole_mapped);
        s->buf = NULL;
    }
    scan_free(s);
    free(s);
    if (rc) gp_trace_rank_free(out);
    return rc;
}
