/* agent_lock.c: the per-store agent lock behind agent_lock.h.
 *
 * flock rather than an SQLite lock: SQLite's locks last a transaction, not a process, and
 * holding a write transaction open would stop readers' checkpoints. The lock file is never
 * unlinked: removing it while another process waits on it would let two agents hold locks
 * on two different files of the same name. */
#include "store/agent_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int gp_agent_lock(const char *db_path, char *err, size_t errlen) {
    char path[1100];
    if ((size_t)snprintf(path, sizeof path, "%s.agent.lock", db_path) >= sizeof path) {
        snprintf(err, errlen, "store '%s': path too long for its lock file", db_path);
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "store '%s': cannot open lock file %s: %s", db_path, path,
                 strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        close(fd);
        if (e != EWOULDBLOCK) {
            snprintf(err, errlen, "store '%s': cannot lock %s: %s", db_path, path, strerror(e));
            return -1;
        }
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        snprintf(err, errlen,
                 "store '%s' is in use by another goodput agent (pid %s, lock %s); stop it or "
                 "give this agent another --db",
                 db_path, pid[0] ? pid : "unknown", path);
        return GP_LOCK_BUSY;
    }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
        /* The lock holds without the PID; a second agent then says "pid unknown". */
    }
    return fd;
}

void gp_agent_unlock(int fd) {
    if (fd >= 0) close(fd);
}
