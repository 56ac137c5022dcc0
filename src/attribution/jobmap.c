/* jobmap.c: see jobmap.h. The directory is watched with inotify: a scan with nothing
 * queued answers from memory (one read() that finds nothing, where a listing costs an
 * opendir, a getdents, a stat per file and a close: ~20% of an idle 8-GPU agent's CPU).
 * Any event at all (a file created, written, renamed in or out, deleted, touched; the
 * directory itself moved or deleted; the queue overflowing) makes the next scan a full
 * one, and so does every GP_JOBMAP_RESCAN_EVERY-th scan, so a change inotify cannot see
 * (a network file system written from another host) is still read within a minute at 1 s
 * ticks. Without inotify (or where the watch cannot be set) every scan is a full one. */
#include "attribution/jobmap.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/event.h"

static int job_id_ok(const char *s, size_t n) {
    if (n == 0 || n >= GP_JOB_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:@/-", s[i])) return 0;
    return 1;
}

static const char *uuid_for(const char *name, const gp_device *devs, size_t n_devs) {
    char *e;
    long idx = strtol(name, &e, 10);
    if (*e == '\0' && e != name) {
        for (size_t i = 0; i < n_devs; i++)
            if (devs[i].index == idx && !devs[i].parent_uuid[0]) return devs[i].uuid;
        return NULL;
    }
    if (!strncmp(name, "GPU-", 4) || !strncmp(name, "MIG-", 4)) return name;
    return NULL;
}

typedef struct file {
    char name[80];
    char uuid[GP_UUID_MAX]; /* the GPU the name maps to, as of the last full scan */
    int64_t mtime_ns, size, ino;
    char *ids; /* the valid ids, each followed by '\n' */
    int seen;
} file;

struct gp_jobmap {
    char *dir;
    file *f;
    size_t n, cap;
    int ifd;               /* inotify descriptor; -1 none (every scan is a full one) */
    int wd;                /* the watch on dir; -1 none */
    int valid;             /* the last full scan succeeded and nothing changed since */
    unsigned since;        /* scans answered from memory since the last full one */
    const gp_device *devs; /* the device list the last full scan mapped names with */
    size_t n_devs;
    gp_jobmap_stats stats;
};

/* What makes the cached listing stale: anything done to a file in the directory or to
 * the directory itself. */
#define WATCH_MASK                                                                                 \
    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM |            \
     IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

gp_jobmap *gp_jobmap_new(const char *dir) {
    gp_jobmap *m = calloc(1, sizeof *m);
    if (!m || !(m->dir = strdup(dir))) {
        free(m);
        return NULL;
    }
    m->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    m->wd = -1;
    return m;
}

void gp_jobmap_free(gp_jobmap *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++)
        free(m->f[i].ids);
    if (m->ifd >= 0) close(m->ifd);
    free(m->f);
    free(m->dir);
    free(m);
}

gp_jobmap_stats gp_jobmap_get_stats(const gp_jobmap *m) {
    return m->stats;
}

/* Reads what the watch queued; returns 1 when anything was. A watch the kernel dropped
 * (the directory deleted) or one that followed the directory elsewhere (moved) is
 * forgotten, so the next full scan sets one on what the path names then. */
static int drain(gp_jobmap *m) {
    int any = 0;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t len = read(m->ifd, buf, sizeof buf);
        if (len <= 0) break; /* EAGAIN: the queue is empty */
        any = 1;
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->wd == m->wd && (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))) {
                if (!(ev->mask & IN_IGNORED)) inotify_rm_watch(m->ifd, m->wd);
                m->wd = -1;
            }
            p += sizeof *ev + ev->len;
        }
    }
    return any;
}

/* Calls fn for each pair of the cached listing, in the order of the last full scan. */
static int replay(gp_jobmap *m, gp_jobmap_fn fn, void *ctx) {
    int pairs = 0;
    for (size_t i = 0; i < m->n; i++) {
        file *f = &m->f[i];
        if (!f->ids) continue;
        for (char *p = f->ids; *p;) {
            char *nl = strchr(p, '\n');
            *nl = '\0';
            fn(ctx, p, f->uuid, f->mtime_ns);
            *nl = '\n';
            p = nl + 1;
            pairs++;
        }
    }
    return pairs;
}

/* Reads the valid ids of one file into a malloc'd "id\nid\n" string. */
static char *read_ids(int dfd, const char *name) {
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    FILE *fp = fdopen(fd, "r");
    if (!fp) {
        close(fd);
        return NULL;
    }
    size_t len = 0, cap = 64;
    char *out = malloc(cap), line[256];
    if (out) out[0] = '\0';
    while (out && fgets(line, sizeof line, fp)) {
        /* The first token is the id: some prologs write "jobid uid" (Princeton's form). */
        size_t n = strcspn(line, " \t\r\n");
        if (!job_id_ok(line, n)) continue;
        if (len + n + 2 > cap) {
            char *p = realloc(out, cap = (len + n + 2) * 2);
            if (!p) {
                free(out);
                out = NULL;
                break;
            }
            out = p;
        }
        memcpy(out + len, line, n);
        len += n;
        out[len++] = '\n';
        out[len] = '\0';
    }
    fclose(fp);
    return out;
}

static file *lookup(gp_jobmap *m, const char *name, size_t hint) {
    if (hint < m->n && !strcmp(m->f[hint].name, name)) return &m->f[hint];
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->f[i].name, name)) return &m->f[i];
    if (m->n == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 16;
        file *p = realloc(m->f, nc * sizeof *p);
        if (!p) return NULL;
        m->f = p;
        m->cap = nc;
    }
    file *f = &m->f[m->n++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->mtime_ns = -1;
    return f;
}

int gp_jobmap_scan(gp_jobmap *m, const gp_device *devs, size_t n_devs, gp_jobmap_fn fn, void *ctx) {
    if (m->valid && m->wd >= 0 && m->since + 1 < GP_JOBMAP_RESCAN_EVERY && devs == m->devs &&
        n_devs == m->n_devs && !drain(m)) {
        m->since++;
        m->stats.cached++;
        return replay(m, fn, ctx);
    }
    m->since = 0;
    m->valid = 0;
    m->stats.full++;
    /* The watch before the listing: a change made during it is queued, not missed (the
     * next scan is then a full one again). What was queued before, this listing sees. */
    if (m->ifd >= 0) {
        drain(m);
        if (m->wd < 0) m->wd = inotify_add_watch(m->ifd, m->dir, WATCH_MASK);
    }
    DIR *d = opendir(m->dir);
    if (!d) return -1;
    int dfd = dirfd(d), pairs = 0, clean = 1; /* clean: nothing to retry next scan */
    for (size_t i = 0; i < m->n; i++)
        m->f[i].seen = 0;
    size_t k = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue; /* also a writer's temporary file */
        if (strlen(de->d_name) >= sizeof m->f[0].name) continue;
        const char *uuid = uuid_for(de->d_name, devs, n_devs);
        if (!uuid) continue;
        struct stat sb;
        if (fstatat(dfd, de->d_name, &sb, 0) != 0) {
            clean = 0;
            continue;
        }
        if (!S_ISREG(sb.st_mode)) continue;
        file *f = lookup(m, de->d_name, k++);
        if (!f) {
            clean = 0;
            continue;
        }
        f->seen = 1;
        snprintf(f->uuid, sizeof f->uuid, "%s", uuid);
        int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec;
        if (mt != f->mtime_ns || (int64_t)sb.st_size != f->size || (int64_t)sb.st_ino != f->ino ||
            !f->ids) {
            free(f->ids);
            f->ids = read_ids(dfd, de->d_name);
            f->mtime_ns = mt;
            f->size = (int64_t)sb.st_size;
            f->ino = (int64_t)sb.st_ino;
        }
        if (!f->ids) {
            clean = 0;
            continue;
        }
        for (char *p = f->ids; *p;) {
            char *nl = strchr(p, '\n');
            *nl = '\0';
            fn(ctx, p, uuid, f->mtime_ns);
            *nl = '\n';
            p = nl + 1;
            pairs++;
        }
    }
    closedir(d);
    /* Files that went away: forget them (a GPU file removed lists no job). */
    size_t w = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (m->f[i].seen)
            m->f[w++] = m->f[i];
        else
            free(m->f[i].ids);
    }
    m->n = w;
    m->valid = clean;
    m->devs = devs;
    m->n_devs = n_devs;
    return pairs;
}
