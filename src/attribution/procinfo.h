/* procinfo.h: the few facts about a process that /proc gives and ownership needs, read
 * under a proc root ("/proc" on a node, a simulated node's fake root, a container's
 * mount of the host's /proc):
 *  - its start time (stat field 22, in clock ticks since boot, plus the boot time from
 *    ROOT/stat), which with the PID identifies one process: a reused PID has another;
 *  - its user (Uid of ROOT/PID/status, named through the passwd database when it can);
 *  - its command line (NUL-separated args joined by spaces).
 * Each returns 0, -ESRCH when the process does not exist (or vanished mid-read), or
 * another negative errno (-EACCES for an unreadable file). Reentrant; only gp_proc_read_alloc
 * allocates. */
#ifndef GP_ATTRIBUTION_PROCINFO_H
#define GP_ATTRIBUTION_PROCINFO_H

#include <stddef.h>
#include <stdint.h>

/* Boot time of the node under proc_root, ns since the epoch (btime of ROOT/stat). */
int gp_proc_boot_ns(const char *proc_root, int64_t *boot_ns);
/* Start of process pid in ns since the epoch (boot_ns from gp_proc_boot_ns). */
int gp_proc_start_ns(const char *proc_root, int64_t pid, int64_t boot_ns, int64_t *start_ns);
/* "alice", or "uid:1234" when the passwd database does not know the uid. */
int gp_proc_user(const char *proc_root, int64_t pid, char *user, size_t cap);
/* "python3 train.py --lr 3e-4", cut to cap - 1 bytes; "" for kernel threads. */
int gp_proc_cmdline(const char *proc_root, int64_t pid, char *cmd, size_t cap);
/* The whole of ROOT/PID/NAME (pid < 0: ROOT/NAME), up to max bytes (rounded up to a power
 * of two from 4 KiB), into a malloc'd *out the caller frees; not NUL-terminated. Returns
 * the length or a negative errno as above (*out NULL then). */
long gp_proc_read_alloc(const char *proc_root, int64_t pid, const char *name, size_t max,
                        char **out);

#endif
