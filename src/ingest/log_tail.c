/* log_tail.c: follow a log file across rotation and truncation (log_tail.h). */
#include "ingest/log_tail.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TAIL_MAX_LINE (64 * 1024)

struct gp_log_tail {
    char path[4096];
    int fd;
    dev_t dev;
    ino_t ino;
    off_t off;
    char *buf; /* the partial line carried between reads */
    size_t n;
    gp_log_reader rd;
    uint64_t reopens;
    /* The file's first bytes as last seen: a copytruncate that refills the file past the
     * old size between two polls leaves the size no smaller, but changes these. */
    char head[64];
    size_t head_n;
};

/* Refreshes t->head from the open file (up to 64 bytes, never past what was read). */
static void remember_head(gp_log_tail *t) {
    size_t want = t->off < (off_t)sizeof t->head ? (size_t)t->off : sizeof t->head;
    ssize_t r = want ? pread(t->fd, t->head, want, 0) : 0;
    t->head_n = r > 0 ? (size_t)r : 0;
}

/* 1 when the file no longer starts with the bytes remembered (rewritten in place). */
static int head_changed(gp_log_tail *t) {
    if (!t->head_n) return 0;
    char now[sizeof t->head];
    ssize_t r = pread(t->fd, now, t->head_n, 0);
    return r != (ssize_t)t->head_n || memcmp(now, t->head, t->head_n) != 0;
}

int gp_log_tail_open(const char *path, const gp_log_profile *p, const char *job_id, int from_start,
                     gp_log_tail **out, char *err, size_t errlen) {
    *out = NULL;
    if (!path || !*path || strlen(path) >= sizeof((gp_log_tail *)0)->path || !p) {
        snprintf(err, errlen, "log tail: a path (under 4096 bytes) and a profile are needed");
        return -1;
    }
    gp_log_tail *t = calloc(1, sizeof *t);
    if (!t || !(t->buf = malloc(TAIL_MAX_LINE + 1))) {
        free(t);
        snprintf(err, errlen, "log tail: out of memory");
        return -1;
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    t->fd = -1;
    gp_log_reader_init(&t->rd, p, job_id);
    struct stat st;
    if (stat(path, &st) == 0) {
        t->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (t->fd >= 0) {
            t->dev = st.st_dev, t->ino = st.st_ino;
            t->off = from_start ? 0 : st.st_size;
            remember_head(t);
        }
    }
    *out = t;
    return 0;
}

static int feed(gp_log_tail *t, const char *s, size_t len, int64_t now_ns, gp_log_emit emit,
                void *ctx) {
    return gp_log_reader_line(&t->rd, s, len, now_ns, emit, ctx);
}

/* Reads fd from t->off to its end, feeding complete lines. */
static int drain(gp_log_tail *t, int64_t now_ns, gp_log_emit emit, void *ctx, char *err,
                 size_t errlen) {
    char chunk[16384];
    int ev = 0;
    for (;;) {
        ssize_t r = pread(t->fd, chunk, sizeof chunk, t->off);
        if (r < 0) {
            if (errno == EINTR) continue;
            snprintf(err, errlen, "%s: %s", t->path, strerror(errno));
            return -1;
        }
        if (r == 0) break;
        t->off += r;
        for (ssize_t i = 0; i < r; i++) {
            char c = chunk[i];
            if (c == '\n' || t->n == TAIL_MAX_LINE) {
                ev += feed(t, t->buf, t->n, now_ns, emit, ctx);
                t->n = 0;
                if (c == '\n') continue;
            }
            t->buf[t->n++] = c;
        }
    }
    return ev;
}

int gp_log_tail_poll(gp_log_tail *t, int64_t now_ns, gp_log_emit emit, void *ctx, char *err,
                     size_t errlen) {
    int ev = 0;
    struct stat st;
    int have = stat(t->path, &st) == 0;
    if (t->fd >= 0) {
        int rotated = have && (st.st_ino != t->ino || st.st_dev != t->dev);
        struct stat cur;
        int truncated =
            !rotated && fstat(t->fd, &cur) == 0 && (cur.st_size < t->off || head_changed(t));
        if (!truncated) {
            int r = drain(t, now_ns, emit, ctx, err, errlen); /* the old file's tail first */
            if (r < 0) return -1;
            ev += r;
        }
        if (rotated || truncated) {
            if (t->n) ev += feed(t, t->buf, t->n, now_ns, emit, ctx), t->n = 0;
            if (rotated) {
                close(t->fd);
                t->fd = -1;
            } else {
                t->off = 0;
            }
            t->head_n = 0;
            t->reopens++;
        }
    }
    if (t->fd < 0 && have) {
        t->fd = open(t->path, O_RDONLY | O_CLOEXEC);
        if (t->fd < 0) {
            snprintf(err, errlen, "%s: %s", t->path, strerror(errno));
            return -1;
        }
        t->dev = st.st_dev, t->ino = st.st_ino;
        t->off = 0; /* a file that appeared after the tail began: all of it is new */
    }
    if (t->fd >= 0) {
        int r = drain(t, now_ns, emit, ctx, err, errlen);
        if (r < 0) return -1;
        ev += r;
        if (t->head_n < sizeof t->head) remember_head(t);
    }
    return ev;
}

const char *gp_log_tail_path(const gp_log_tail *t) {
    return t->path;
}
uint64_t gp_log_tail_reopens(const gp_log_tail *t) {
    return t->reopens;
}

void gp_log_tail_close(gp_log_tail *t) {
    if (!t) return;
    if (t->fd >= 0) close(t->fd);
    free(t->buf);
    free(t);
}
