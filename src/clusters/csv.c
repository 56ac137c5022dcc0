/* csv.c: streaming CSV over plain, gzip and tar(.gz) input (see csv.h).
 *
 * Design: zlib's gzread gives one byte stream for plain and gzip files alike; a tar layer
 * on top skips 512-byte headers and caps reads at the member's size, so an archive is read
 * in one pass without extracting it. The parser is a small state machine that copies each
 * row into one buffer and NUL-terminates fields in place; unquoted fields take a fast path
 * that scans for the next delimiter. */
#include "clusters/csv.h"
#include "util/progress.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define IN_BUF (256u << 10)

struct gp_csv {
    char path[512];
    char member[300];
    gzFile gz;
    int is_tar;
    uint64_t tar_left;   /* bytes left in the member */
    uint64_t read_total; /* bytes of (uncompressed) input read into the buffer so far */
    int64_t file_bytes;  /* size on disk */
    unsigned char *in;
    size_t in_len, in_pos;
    int eof;
    char *row;
    size_t row_cap, row_len;
    const char *base; /* fields: base + off[i]; the row buffer, or the input buffer in place */
    uint32_t off[GP_CSV_FIELDS_MAX];
    uint32_t len[GP_CSV_FIELDS_MAX];
    int colno[GP_CSV_FIELDS_MAX];
    int nf;
    int64_t line, row_line; /* next line to read; line where the current row started */
    int col;
    char *names_buf;
    char *names[GP_CSV_FIELDS_MAX];
    int n_names;
    char bar_label[64];
    gp_progress bar; /* on stderr when it is a terminal and the read passes 2 s */
};

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static uint64_t octal(const char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && p[i]; i++) {
        if (p[i] == ' ') continue;
        if (p[i] < '0' || p[i] > '7') break;
        v = v * 8 + (uint64_t)(p[i] - '0');
    }
    return v;
}

static int read_full(gzFile gz, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        int r = gzread(gz, (char *)buf + got, (unsigned)(n - got));
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

/* Positions the stream at the data of the wanted member (want == "" : first regular file). */
static int tar_seek_member(gp_csv *c, const char *want, char *err, size_t errlen) {
    char h[512];
    for (;;) {
        if (read_full(c->gz, h, sizeof h) != 0) break;
        if (h[0] == 0) break; /* end-of-archive block */
        char name[300];
        snprintf(name, sizeof name, "%.100s", h);
        if (memcmp(h + 257, "ustar", 5) == 0 && h[345]) {
            char full[300];
            snprintf(full, sizeof full, "%.155s/%.100s", h + 345, name);
            snprintf(name, sizeof name, "%s", full);
        }
        uint64_t size = octal(h + 124, 12);
        char type = h[156];
        const char *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        int regular = (type == '0' || type == 0);
        if (regular && strncmp(base, "._", 2) != 0 &&
            (!want[0] || strcmp(name, want) == 0 || strcmp(base, want) == 0)) {
            snprintf(c->member, sizeof c->member, "%s", name);
            c->tar_left = size;
            return 0;
        }
        uint64_t skip = (size + 511) / 512 * 512;
        char tmp[4096];
        while (skip > 0) {
            size_t n = skip > sizeof tmp ? sizeof tmp : (size_t)skip;
            if (read_full(c->gz, tmp, n) != 0) {
                snprintf(err, errlen, "%s: truncated tar archive in member %s", c->path, name);
                return -1;
            }
            skip -= n;
        }
    }
    snprintf(err, errlen, "%s: no %s%s in the tar archive", c->path,
             want[0] ? "member " : "regular file", want);
    return -1;
}

int gp_csv_open(gp_csv **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    gp_csv *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory opening %s", path);
        return -1;
    }
    char file[512], want[256] = "";
    snprintf(file, sizeof file, "%s", path);
    char *colon = strstr(file, ".tar.gz:");
    if (!colon) colon = strstr(file, ".tar:");
    if (colon) {
        char *sep = strchr(colon, ':');
        snprintf(want, sizeof want, "%s", sep + 1);
        *sep = 0;
    }
    snprintf(c->path, sizeof c->path, "%s", file);
    c->gz = gzopen(file, "rb");
    if (!c->gz) {
        snprintf(err, errlen, "cannot open %s: %s", file, strerror(errno ? errno : ENOENT));
        free(c);
        return -1;
    }
    gzbuffer(c->gz, 1u << 17);
    struct stat st;
    c->file_bytes = stat(file, &st) == 0 ? (int64_t)st.st_size : -1;
    c->in = malloc(IN_BUF);
    c->row_cap = 64u << 10;
    c->row = malloc(c->row_cap);
    if (!c->in || !c->row) {
        snprintf(err, errlen, "out of memory opening %s", file);
        gp_csv_close(c);
        return -1;
    }
    c->line = 1;
    c->col = 1;
    const char *base = strrchr(file, '/');
    snprintf(c->bar_label, sizeof c->bar_label, "reading %.48s", base ? base + 1 : file);
    gp_progress_start(&c->bar, c->bar_label, (double)c->file_bytes, 0);
    if (ends_with(file, ".tar.gz") || ends_with(file, ".tgz") || ends_with(file, ".tar")) {
        c->is_tar = 1;
        if (tar_seek_member(c, want, err, errlen) != 0) {
            gp_csv_close(c);
            return -1;
        }
    }
    *out = c;
    return 0;
}

void gp_csv_close(gp_csv *c) {
    if (!c) return;
    gp_progress_end(&c->bar);
    if (c->gz) gzclose(c->gz);
    free(c->in);
    free(c->row);
    free(c->names_buf);
    free(c);
}

static int refill(gp_csv *c, char *err, size_t errlen) {
    if (c->eof) return 0;
    size_t want = IN_BUF;
    if (c->is_tar && c->tar_left < want) want = (size_t)c->tar_left;
    int r = want ? gzread(c->gz, c->in, (unsigned)want) : 0;
    gp_progress_update(&c->bar, (double)gzoffset(c->gz)); /* bytes of the file on disk */
    if (r < 0) {
        int zerr = 0;
        const char *m = gzerror(c->gz, &zerr);
        snprintf(err, errlen, "%s:%lld: read error: %s", c->path, (long long)c->line, m);
        return -1;
    }
    if (r == 0) {
        if (c->is_tar && c->tar_left > 0) {
            snprintf(err, errlen, "%s:%lld: archive member %s is truncated", c->path,
                     (long long)c->line, c->member);
            return -1;
        }
        c->eof = 1;
        return 0;
    }
    if (c->is_tar) c->tar_left -= (uint64_t)r;
    c->read_total += (uint64_t)r;
    c->in_len = (size_t)r;
    c->in_pos = 0;
    return 1;
}

static int row_put(gp_csv *c, const char *p, size_t n, char *err, size_t errlen) {
    if (c->row_len + n + 1 > c->row_cap) {
        size_t cap = c->row_cap;
        while (c->row_len + n + 1 > cap)
            cap *= 2;
        if (cap > GP_CSV_ROW_MAX) {
            snprintf(err, errlen, "%s:%lld: a row longer than %u bytes (is this a CSV file?)",
                     c->path, (long long)c->row_line, GP_CSV_ROW_MAX);
            return -1;
        }
        char *nr = realloc(c->row, cap);
        if (!nr) {
            snprintf(err, errlen, "%s:%lld: out of memory", c->path, (long long)c->row_line);
            return -1;
        }
        c->row = nr;
        c->row_cap = cap;
    }
    memcpy(c->row + c->row_len, p, n);
    c->row_len += n;
    return 0;
}

static int end_field(gp_csv *c, uint32_t start, char *err, size_t errlen) {
    if (c->nf >= GP_CSV_FIELDS_MAX) {
        snprintf(err, errlen, "%s:%lld:%d: more than %d fields in a row", c->path,
                 (long long)c->row_line, c->col, GP_CSV_FIELDS_MAX);
        return -1;
    }
    c->off[c->nf] = start;
    c->len[c->nf] = (uint32_t)(c->row_len - start);
    c->nf++;
    return row_put(c, "", 1, err, errlen);
}

/* Fast path: a row that lies wholly in the input buffer with no quote and no CR except one
 * just before its LF is split in place (delimiters become NULs); nothing is copied. One pass
 * finds the delimiters, 16 bytes at a time with SSE2 where the compiler targets it. Returns 1
 * with the row ready, 0 when the row needs the general parser (nothing was changed). */
static int next_in_place(gp_csv *c) {
    char *b = (char *)c->in;
    size_t s = c->in_pos, n = c->in_len, i = s, f = s, e = 0, nl = 0;
    int nf = 0;
#ifdef __SSE2__
    const __m128i vc = _mm_set1_epi8(','), vn = _mm_set1_epi8('\n'), vq = _mm_set1_epi8('"'),
                  vr = _mm_set1_epi8('\r');
#endif
    for (;;) {
        unsigned m;
        size_t at;
#ifdef __SSE2__
        if (i + 16 <= n) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
            m = (unsigned)_mm_movemask_epi8(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vc), _mm_cmpeq_epi8(v, vn)),
                             _mm_or_si128(_mm_cmpeq_epi8(v, vq), _mm_cmpeq_epi8(v, vr))));
            at = i;
            i += 16;
        } else
#endif
        {
            if (i >= n) return 0;
            char ch = b[i];
            m = (ch == ',' || ch == '\n' || ch == '"' || ch == '\r');
            at = i;
            i++;
        }
        while (m) {
            size_t k = at + (size_t)__builtin_ctz(m);
            m &= m - 1;
            char ch = b[k];
            if (ch == ',') {
                if (nf >= GP_CSV_FIELDS_MAX - 1) return 0;
                c->off[nf] = (uint32_t)(f - s);
                c->len[nf] = (uint32_t)(k - f);
                nf++;
                f = k + 1;
            } else if (ch == '\n') {
                e = nl = k;
                goto row;
            } else if (ch == '\r' && k + 1 < n && b[k + 1] == '\n') {
                e = k;
                nl = k + 1;
                goto row;
            } else {
                return 0; /* a quote, or a CR inside the row */
            }
        }
    }
row:
    c->off[nf] = (uint32_t)(f - s);
    c->len[nf] = (uint32_t)(e - f);
    nf++;
    for (int k = 0; k < nf; k++) {
        b[s + c->off[k] + c->len[k]] = 0;
        c->colno[k] = (int)c->off[k] + 1;
    }
    c->nf = nf;
    c->base = b + s;
    c->row_line = c->line;
    c->line++;
    c->col = (int)(e - s) + 1;
    c->in_pos = nl + 1;
    return 1;
}

static int next_general(gp_csv *c, char *err, size_t errlen);

int gp_csv_next(gp_csv *c, char *err, size_t errlen) {
    if (c->in_pos < c->in_len && next_in_place(c)) return 1;
    int r = next_general(c, err, errlen);
    c->base = c->row;
    return r;
}

static int next_general(gp_csv *c, char *err, size_t errlen) {
    enum { F_START, F_PLAIN, F_QUOTED, F_QUOTE_END } st = F_START;
    c->nf = 0;
    c->row_len = 0;
    c->row_line = c->line;
    c->col = 1;
    uint32_t start = 0;
    int any = 0;
    for (;;) {
        if (c->in_pos >= c->in_len) {
            int r = refill(c, err, errlen);
            if (r < 0) return -1;
            if (r == 0) {
                if (!any) return 0;
                if (st == F_QUOTED) {
                    snprintf(err, errlen, "%s:%lld:%d: quoted field not closed before end of file",
                             c->path, (long long)c->row_line, c->colno[c->nf]);
                    return -1;
                }
                if (end_field(c, start, err, errlen) < 0) return -1;
                return 1;
            }
        }
        const char *b = (const char *)c->in;
        size_t i = c->in_pos, n = c->in_len;
        any = 1;
        if (st == F_START) {
            start = (uint32_t)c->row_len;
            c->colno[c->nf < GP_CSV_FIELDS_MAX ? c->nf : GP_CSV_FIELDS_MAX - 1] = c->col;
            if (b[i] == '"') {
                st = F_QUOTED;
                c->in_pos = i + 1;
                c->col++;
                continue;
            }
            st = F_PLAIN;
        }
        if (st == F_PLAIN) {
            size_t j = i;
            while (j < n && b[j] != ',' && b[j] != '\n' && b[j] != '\r')
                j++;
            if (row_put(c, b + i, j - i, err, errlen) < 0) return -1;
            c->col += (int)(j - i);
            c->in_pos = j;
            if (j == n) continue;
            char ch = b[j];
            c->in_pos = j + 1;
            if (ch == '\r') continue; /* dropped; the LF ends the row */
            if (end_field(c, start, err, errlen) < 0) return -1;
            if (ch == ',') {
                c->col++;
                st = F_START;
                /* a trailing comma before the newline makes an empty last field */
                continue;
            }
            c->line++;
            return 1;
        }
        if (st == F_QUOTED) {
            size_t j = i;
            while (j < n && b[j] != '"') {
                if (b[j] == '\n') {
                    c->line++;
                    c->col = 0;
                }
                c->col++;
                j++;
            }
            if (row_put(c, b + i, j - i, err, errlen) < 0) return -1;
            c->in_pos = j;
            if (j == n) continue;
            c->in_pos = j + 1;
            c->col++;
            st = F_QUOTE_END;
            continue;
        }
        /* F_QUOTE_END: after a closing quote */
        char ch = b[i];
        c->in_pos = i + 1;
        if (ch == '"') {
            if (row_put(c, "\"", 1, err, errlen) < 0) return -1;
            c->col++;
            st = F_QUOTED;
        } else if (ch == ',') {
            if (end_field(c, start, err, errlen) < 0) return -1;
            c->col++;
            st = F_START;
        } else if (ch == '\n') {
            if (end_field(c, start, err, errlen) < 0) return -1;
            c->line++;
            return 1;
        } else if (ch == '\r') {
            /* dropped */
        } else {
            snprintf(err, errlen, "%s:%lld:%d: unexpected '%c' after a closing quote", c->path,
                     (long long)c->line, c->col, isprint((unsigned char)ch) ? ch : '?');
            return -1;
        }
    }
}

uint64_t gp_csv_offset(const gp_csv *c) {
    return c->read_total - (uint64_t)(c->in_len - c->in_pos);
}

int64_t gp_csv_size_hint(const gp_csv *c) {
    return (!c->is_tar && gzdirect(c->gz)) ? c->file_bytes : -1;
}

int gp_csv_nfields(const gp_csv *c) {
    return c->nf;
}
const char *gp_csv_field(const gp_csv *c, int i) {
    return (i >= 0 && i < c->nf) ? c->base + c->off[i] : "";
}
size_t gp_csv_field_len(const gp_csv *c, int i) {
    return (i >= 0 && i < c->nf) ? c->len[i] : 0;
}
int64_t gp_csv_line(const gp_csv *c) {
    return c->row_line;
}
int gp_csv_col(const gp_csv *c, int i) {
    return (i >= 0 && i < c->nf) ? c->colno[i] : c->col;
}
const char *gp_csv_path(const gp_csv *c) {
    return c->path;
}
const char *gp_csv_member(const gp_csv *c) {
    return c->member;
}

int gp_parse_num(const char *s, size_t n, double *v) {
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0) return 0;
    /* the missing-value words all start with n/N: a digit skips the three compares */
    if ((s[0] == 'n' || s[0] == 'N') &&
        ((n == 2 && (s[1] == 'A' || s[1] == 'a')) || (n == 3 && !strncasecmp(s, "nan", 3)) ||
         (n == 4 && !strncasecmp(s, "none", 4)) || (n == 4 && !strncasecmp(s, "null", 4))))
        return 0;
    /* fast path: [-+]digits[.digits] */
    size_t i = 0;
    int neg = 0;
    if (s[0] == '-' || s[0] == '+') neg = (s[0] == '-'), i = 1;
    uint64_t ip = 0;
    size_t d0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - d0 < 18)
        ip = ip * 10 + (uint64_t)(s[i++] - '0');
    double x = (double)ip;
    int ok = i > d0;
    if (i < n && s[i] == '.') {
        i++;
        uint64_t fp = 0;
        double scale = 1.0;
        size_t f0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9' && i - f0 < 18) {
            fp = fp * 10 + (uint64_t)(s[i++] - '0');
            scale *= 10.0;
        }
        ok = ok || i > f0;
        x += (double)fp / scale;
    }
    if (ok && i == n) {
        *v = neg ? -x : x;
        return 1;
    }
    char tmp[64];
    if (n >= sizeof tmp) return -1;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end = NULL;
    errno = 0;
    double y = strtod(tmp, &end);
    if (end == tmp || *end || errno == ERANGE || !isfinite(y)) return -1;
    *v = y;
    return 1;
}

int gp_csv_num(gp_csv *c, int i, double *v, char *err, size_t errlen) {
    int r = gp_parse_num(gp_csv_field(c, i), gp_csv_field_len(c, i), v);
    if (r < 0) {
        const char *name = (i >= 0 && i < c->n_names) ? c->names[i] : "";
        snprintf(err, errlen, "%s:%lld:%d: %s%s%s'%.40s' is not a number", c->path,
                 (long long)c->row_line, gp_csv_col(c, i), name[0] ? "column " : "", name,
                 name[0] ? ": " : "", gp_csv_field(c, i));
    }
    return r;
}

int gp_csv_set_names(gp_csv *c, const char *csv_names) {
    free(c->names_buf);
    c->names_buf = strdup(csv_names);
    if (!c->names_buf) return -1;
    c->n_names = 0;
    char *save = NULL;
    for (char *t = strtok_r(c->names_buf, ",\r\n", &save); t && c->n_names < GP_CSV_FIELDS_MAX;
         t = strtok_r(NULL, ",\r\n", &save)) {
        while (*t == ' ')
            t++;
        c->names[c->n_names++] = t;
    }
    return 0;
}

int gp_csv_take_header(gp_csv *c) {
    size_t total = 0;
    for (int i = 0; i < c->nf; i++)
        total += c->len[i] + 1;
    free(c->names_buf);
    c->names_buf = malloc(total + 1);
    if (!c->names_buf) return -1;
    size_t p = 0;
    c->n_names = c->nf;
    for (int i = 0; i < c->nf; i++) {
        memcpy(c->names_buf + p, gp_csv_field(c, i), c->len[i] + 1);
        c->names[i] = c->names_buf + p;
        p += c->len[i] + 1;
    }
    return 0;
}

int gp_csv_find(const gp_csv *c, const char *name) {
    for (int i = 0; i < c->n_names; i++)
        if (strcmp(c->names[i], name) == 0) return i;
    return -1;
}
