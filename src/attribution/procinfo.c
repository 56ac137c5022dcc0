/* procinfo.c: see procinfo.h. Files under /proc are small and change between reads, so
 * each is read whole with one read() into a stack buffer and parsed there. */
#include "attribution/procinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Opens ROOT/PID/NAME (pid < 0: ROOT/NAME). Returns the fd or a negative errno, -ESRCH
 * for a missing process. */
static int open_proc(const char *root, int64_t pid, const char *name) {
    char path[512];
    if (pid >= 0)
        snprintf(path, sizeof path, "%s/%lld/%s", root ? root : "/proc", (long long)pid, name);
    else
        snprintf(path, sizeof path, "%s/%s", root ? root : "/proc", name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return (errno == ENOENT || errno == ESRCH) ? -ESRCH : -errno;
    return fd;
}

/* Reads fd into buf[*n .. cap) until EOF or full. /proc files report size 0, so the only
 * way to read one whole is until read() returns 0. Returns 0 or a negative errno (-ESRCH
 * when the process exited while we read). */
static int read_more(int fd, char *buf, size_t cap, size_t *n) {
    while (*n < cap) {
        ssize_t r = read(fd, buf + *n, cap - *n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return (errno == ESRCH || errno == ENOENT) ? -ESRCH : -errno;
        if (r == 0) break;
        *n += (size_t)r;
    }
    return 0;
}

/* Reads up to cap - 1 bytes of ROOT/PID/NAME into a caller's buffer, NUL-terminated.
 * Returns the length or a negative errno. */
static long read_small(const char *root, int64_t pid, const char *name, char *buf, size_t cap) {
    int fd = open_proc(root, pid, name);
    if (fd < 0) return fd;
    size_t n = 0;
    int rc = read_more(fd, buf, cap - 1, &n);
    close(fd);
    if (rc < 0) return rc;
    buf[n] = '\0';
    return (long)n;
}

long gp_proc_read_alloc(const char *proc_root, int64_t pid, const char *name, size_t max,
                        char **out) {
    *out = NULL;
    int fd = open_proc(proc_root, pid, name);
    if (fd < 0) return fd;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    while (rc == 0 && (rc = read_more(fd, buf, cap, &n)) == 0 && n == cap && cap < max) {
        char *nb = realloc(buf, cap * 2);
        if (!nb)
            rc = -ENOMEM;
        else {
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    return (long)n;
}

int gp_proc_boot_ns(const char *proc_root, int64_t *boot_ns) {
    char buf[8192];
    long n = read_small(proc_root, -1, "stat", buf, sizeof buf);
    if (n < 0) return (int)n;
    const char *p = strstr(buf, "\nbtime ");
    if (!p && !strncmp(buf, "btime ", 6)) p = buf - 1;
    if (!p) return -EINVAL;
    long long bt = strtoll(p + 7, NULL, 10);
    if (bt <= 0) return -EINVAL;
    *boot_ns = (int64_t)bt * 1000000000LL;
    return 0;
}

int gp_proc_start_ns(const char *proc_root, int64_t pid, int64_t boot_ns, int64_t *start_ns) {
    char buf[1024];
    long n = read_small(proc_root, pid, "stat", buf, sizeof buf);
    if (n < 0) return (int)n;
    /* The command name (field 2) may hold spaces and parentheses: fields resume after the
     * last ')'. starttime is field 22, i.e. the 20th after it. */
    const char *p = strrchr(buf, ')');
    if (!p) return -EINVAL;
    p++;
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p) return -EINVAL;
    }
    char *end;
    unsigned long long ticks = strtoull(p + 1, &end, 10);
    if (end == p + 1) return -EINVAL;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0) hz = 100;
    *start_ns = boot_ns + (int64_t)(ticks / (unsigned long long)hz) * 1000000000LL +
                (int64_t)(ticks % (unsigned long long)hz) * (1000000000LL / hz);
    return 0;
}

int gp_proc_user(const char *proc_root, int64_t pid, char *user, size_t cap) {
    char buf[4096];
    long n = read_small(proc_root, pid, "status", buf, sizeof buf);
    if (n < 0) return (int)n;
    const char *p = strstr(buf, "\nUid:");
    if (!p) return -EINVAL;
    char *end;
    long uid = strtol(p + 5, &end, 10);
    if (end == p + 5 || uid < 0) return -EINVAL;
    struct passwd pw, *res = NULL;
    char pwbuf[1024];
    if (getpwuid_r((uid_t)uid, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res)
        snprintf(user, cap, "%s", res->pw_name);
    else
        snprintf(user, cap, "uid:%ld", uid);
    return 0;
}

int gp_proc_cmdline(const char *proc_root, int64_t pid, char *cmd, size_t cap) {
    char buf[1024];
    long n = read_small(proc_root, pid, "cmdline", buf, sizeof buf);
    if (n < 0) return (int)n;
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (long i = 0; i < n; i++)
        if (buf[i] == '\0' || buf[i] == '\n' || buf[i] == '\t') buf[i] = ' ';
    buf[n] = '\0';
    snprintf(cmd, cap, "%s", buf);
    return 0;
}
