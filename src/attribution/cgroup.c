/* cgroup.c: derives a process's owner from /proc/PID/cgroup and three environ keys.
 *
 * Design: each cgroup line is classified on its own (one line per hierarchy in v1, one
 * "0::" line in v2), then the most specific owner wins. Classification walks the path's
 * components once and recognises Slurm, Kubernetes, container runtimes and systemd units
 * by their documented names, so no configuration is needed. Unknown layouts are not an
 * error: the owner is then the process itself ("pid-PID"). */
#include "attribution/owner.h"
#include "attribution/procinfo.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *gp_cg_kind_name(gp_cg_kind k) {
    switch (k) {
    case GP_CG_SYSTEMD:
        return "systemd";
    case GP_CG_CONTAINER:
        return "container";
    case GP_CG_K8S:
        return "k8s";
    case GP_CG_SLURM:
        return "slurm";
    default:
        return "none";
    }
}

static void copy_n(char *dst, size_t cap, const char *src, size_t n) {
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int all_digits(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return 0;
    return 1;
}

static int all_hex(const char *s, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i])) return 0;
    return 1;
}

static int starts(const char *s, size_t n, const char *prefix) {
    size_t p = strlen(prefix);
    return n >= p && memcmp(s, prefix, p) == 0;
}

static int ends(const char *s, size_t n, const char *suffix) {
    size_t p = strlen(suffix);
    return n >= p && memcmp(s + n - p, suffix, p) == 0;
}

/* A pod UID: 36 chars of hex and '-' (or '_' in systemd slice names). */
static int set_pod_uid(gp_owner *o, const char *s, size_t n) {
    if (n != 36) return 0;
    char buf[40];
    for (size_t i = 0; i < n; i++) {
        char c = s[i] == '_' ? '-' : s[i];
        if (!(isxdigit((unsigned char)c) || c == '-')) return 0;
        buf[i] = (char)tolower((unsigned char)c);
    }
    buf[n] = '\0';
    snprintf(o->pod_uid, sizeof o->pod_uid, "%s", buf);
    return 1;
}

/* "docker-ID.scope", "cri-containerd-ID.scope", "crio-ID.scope", "libpod-ID.scope", or a
 * bare hex id (cgroupfs driver). Conmon scopes (the runtime's monitor) are not the
 * container. Returns 1 when the component names a container. */
static int set_container(gp_owner *o, const char *s, size_t n) {
    static const struct {
        const char *prefix, *runtime;
    } rt[] = {{"docker-", "docker"},
              {"cri-containerd-", "containerd"},
              {"crio-", "crio"},
              {"libpod-", "podman"},
              {"containerd-", "containerd"}};
    if (starts(s, n, "crio-conmon-") || starts(s, n, "libpod-conmon-")) return 0;
    for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
        if (!starts(s, n, rt[i].prefix)) continue;
        const char *id = s + strlen(rt[i].prefix);
        size_t idn = n - strlen(rt[i].prefix);
        if (ends(id, idn, ".scope")) idn -= 6;
        if (idn < 12 || !all_hex(id, idn)) return 0;
        copy_n(o->container_id, sizeof o->container_id, id, idn);
        snprintf(o->runtime, sizeof o->runtime, "%s", rt[i].runtime);
        return 1;
    }
    if (n >= 32 && all_hex(s, n)) {
        copy_n(o->container_id, sizeof o->container_id, s, n);
        return 1;
    }
    return 0;
}

gp_cg_kind gp_attrib_classify_path(const char *path, gp_owner *o) {
    gp_cg_kind kind = GP_CG_NONE;
    int in_slurm = 0, in_k8s = 0, in_docker = 0, have_job = 0;
    const char *p = path;
    snprintf(o->cgroup, sizeof o->cgroup, "%s", path);
    while (*p) {
        while (*p == '/')
            p++;
        const char *c = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - c);
        if (n == 0) break;

        /* Slurm: v1 "/slurm/uid_U/job_J/step_S", v2 ".../slurmstepd.scope/job_J/step_S".
         * Multiple-slurmd builds name them slurm_NODE and NODE_slurmstepd.scope. */
        if ((n == 5 && !memcmp(c, "slurm", 5)) || starts(c, n, "slurm_") ||
            ends(c, n, "slurmstepd.scope")) {
            in_slurm = 1;
            continue;
        }
        if (in_slurm) {
            if (starts(c, n, "uid_") && all_digits(c + 4, n - 4)) {
                o->slurm_uid = strtoll(c + 4, NULL, 10);
                continue;
            }
            if (starts(c, n, "job_") && all_digits(c + 4, n - 4)) {
                copy_n(o->slurm_job, sizeof o->slurm_job, c + 4, n - 4);
                have_job = 1;
                kind = GP_CG_SLURM;
                continue;
            }
            if (have_job && starts(c, n, "step_") && n > 5) {
                copy_n(o->slurm_step, sizeof o->slurm_step, c + 5, n - 5);
                continue;
            }
        }

        /* Kubernetes. cgroupfs: /kubepods/burstable/pod<uid>/<id>; systemd:
         * /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/... */
        if (starts(c, n, "kubepods")) {
            in_k8s = 1;
            const char *pod = NULL;
            for (size_t i = 0; i + 3 < n; i++)
                if (!memcmp(c + i, "pod", 3) && (i == 0 || c[i - 1] == '-')) pod = c + i;
            if (pod) {
                size_t pn = (size_t)(c + n - pod) - 3;
                if (ends(c, n, ".slice")) pn -= 6;
                if (set_pod_uid(o, pod + 3, pn)) kind = kind > GP_CG_K8S ? kind : GP_CG_K8S;
            }
            static const char *qos[] = {"burstable", "besteffort"};
            for (size_t q = 0; q < 2; q++)
                if (memmem(c, n, qos[q], strlen(qos[q])))
                    snprintf(o->k8s_qos, sizeof o->k8s_qos, "%s", qos[q]);
            continue;
        }
        if (in_k8s) {
            if (n == 9 && !memcmp(c, "burstable", 9)) {
                snprintf(o->k8s_qos, sizeof o->k8s_qos, "burstable");
                continue;
            }
            if (n == 10 && !memcmp(c, "besteffort", 10)) {
                snprintf(o->k8s_qos, sizeof o->k8s_qos, "besteffort");
                continue;
            }
            if (starts(c, n, "pod") && set_pod_uid(o, c + 3, n - 3)) {
                kind = kind > GP_CG_K8S ? kind : GP_CG_K8S;
                continue;
            }
            if (o->pod_uid[0] && set_container(o, c, n)) continue;
        }

        /* Containers outside Kubernetes. cgroupfs Docker: /docker/<id>. */
        if (n == 6 && !memcmp(c, "docker", 6)) {
            in_docker = 1;
            continue;
        }
        if (!in_k8s && kind < GP_CG_CONTAINER) {
            if (in_docker && n >= 32 && all_hex(c, n)) {
                copy_n(o->container_id, sizeof o->container_id, c, n);
                snprintf(o->runtime, sizeof o->runtime, "docker");
                kind = GP_CG_CONTAINER;
                continue;
            }
            if (!all_hex(c, n) && set_container(o, c, n)) {
                kind = GP_CG_CONTAINER;
                continue;
            }
        }

        /* systemd units: the deepest .service or .scope; a .slice only if nothing else. */
        if (ends(c, n, ".service") || ends(c, n, ".scope")) {
            copy_n(o->unit, sizeof o->unit, c, n);
            if (kind == GP_CG_NONE) kind = GP_CG_SYSTEMD;
        }
    }
    if (kind == GP_CG_K8S && !o->k8s_qos[0]) snprintf(o->k8s_qos, sizeof o->k8s_qos, "guaranteed");
    return kind;
}

static void owner_clear_cg(gp_owner *o) {
    o->cg_kind = GP_CG_NONE;
    o->slurm_job[0] = o->slurm_step[0] = o->pod_uid[0] = o->k8s_qos[0] = '\0';
    o->container_id[0] = o->runtime[0] = o->unit[0] = o->cgroup[0] = '\0';
    o->slurm_uid = -1;
}

gp_cg_kind gp_attrib_parse_cgroup(const char *text, size_t len, gp_owner *out, int *bad_lines) {
    gp_owner best, cur;
    memset(&best, 0, sizeof best);
    owner_clear_cg(&best);
    char unit[128] = "";
    int bad = 0, best_v2 = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t n = (size_t)(le - p);
        if (n > 0) {
            /* hierarchy-ID:controller-list:cgroup-path (the path may itself hold ':'). */
            const char *c1 = memchr(p, ':', n);
            const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
            if (!c1 || !c2 || !all_digits(p, (size_t)(c1 - p)) || c2 + 1 >= le || c2[1] != '/') {
                bad++;
            } else {
                char path[1024];
                copy_n(path, sizeof path, c2 + 1, (size_t)(le - c2 - 1));
                memset(&cur, 0, sizeof cur);
                owner_clear_cg(&cur);
                gp_cg_kind k = gp_attrib_classify_path(path, &cur);
                int v2 = (c1 - p == 1 && p[0] == '0' && c2 == c1 + 1);
                int named_systemd =
                    (size_t)(c2 - c1 - 1) == 12 && !memcmp(c1 + 1, "name=systemd", 12);
                if (cur.unit[0] && (v2 || named_systemd || !unit[0]))
                    snprintf(unit, sizeof unit, "%s", cur.unit);
                cur.cg_kind = k;
                if (k > best.cg_kind || (k == best.cg_kind && k != GP_CG_NONE && v2 && !best_v2)) {
                    best = cur;
                    best_v2 = v2;
                }
            }
        }
        p = nl ? nl + 1 : end;
    }
    if (!best.unit[0] && unit[0]) snprintf(best.unit, sizeof best.unit, "%s", unit);
    /* Copy the cgroup fields over, keeping pid and environment. */
    out->cg_kind = best.cg_kind;
    memcpy(out->slurm_job, best.slurm_job, sizeof out->slurm_job);
    memcpy(out->slurm_step, best.slurm_step, sizeof out->slurm_step);
    out->slurm_uid = best.slurm_uid;
    memcpy(out->pod_uid, best.pod_uid, sizeof out->pod_uid);
    memcpy(out->k8s_qos, best.k8s_qos, sizeof out->k8s_qos);
    memcpy(out->container_id, best.container_id, sizeof out->container_id);
    memcpy(out->runtime, best.runtime, sizeof out->runtime);
    memcpy(out->unit, best.unit, sizeof out->unit);
    memcpy(out->cgroup, best.cgroup, sizeof out->cgroup);
    if (bad_lines) *bad_lines = bad;
    gp_attrib_derive_job(out);
    return out->cg_kind;
}

static int valid_job_id(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n >= GP_JOB_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._:@/-", s[i])) return 0;
    return 1;
}

void gp_attrib_parse_environ(const char *block, size_t len, gp_owner *out) {
    static const struct {
        const char *key;
        size_t off, cap;
    } keys[] = {
        {"GOODPUT_JOB=", offsetof(gp_owner, env_goodput_job), GP_JOB_ID_MAX},
        {"SLURM_JOB_ID=", offsetof(gp_owner, env_slurm_job_id), 24},
        {"CUDA_VISIBLE_DEVICES=", offsetof(gp_owner, env_cuda_visible), 128},
    };
    const char *p = block, *end = block + len;
    while (p < end) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        size_t n = z ? (size_t)(z - p) : (size_t)(end - p);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            size_t kl = strlen(keys[k].key);
            if (n >= kl && !memcmp(p, keys[k].key, kl))
                copy_n((char *)out + keys[k].off, keys[k].cap, p + kl, n - kl);
        }
        p = z ? z + 1 : end;
    }
    if (!valid_job_id(out->env_goodput_job)) out->env_goodput_job[0] = '\0';
    if (!all_digits(out->env_slurm_job_id, strlen(out->env_slurm_job_id)))
        out->env_slurm_job_id[0] = '\0';
}

void gp_attrib_derive_job(gp_owner *o) {
    if (o->env_goodput_job[0]) {
        o->origin = GP_ORIGIN_TAG;
        snprintf(o->job_id, sizeof o->job_id, "%s", o->env_goodput_job);
    } else if (o->slurm_job[0] || o->env_slurm_job_id[0]) {
        o->origin = GP_ORIGIN_SLURM;
        snprintf(o->job_id, sizeof o->job_id, "%s",
                 o->slurm_job[0] ? o->slurm_job : o->env_slurm_job_id);
    } else if (o->pod_uid[0]) {
        o->origin = GP_ORIGIN_K8S;
        snprintf(o->job_id, sizeof o->job_id, "pod:%s", o->pod_uid);
    } else if (o->container_id[0]) {
        o->origin = GP_ORIGIN_CONTAINER;
        snprintf(o->job_id, sizeof o->job_id, "container:%.12s", o->container_id);
    } else if (o->pid > 0) {
        o->origin = GP_ORIGIN_PROCESS;
        snprintf(o->job_id, sizeof o->job_id, "pid-%lld", (long long)o->pid);
    } else {
        o->origin = GP_ORIGIN_UNKNOWN;
        o->job_id[0] = '\0';
    }
}

int gp_attrib_owner_of_pid_at(const char *proc_root, int64_t pid, gp_owner *out) {
    memset(out, 0, sizeof *out);
    owner_clear_cg(out);
    out->pid = pid;
    if (!proc_root) proc_root = "/proc";
    if (pid <= 0) {
        out->pid = 0;
        return -ESRCH;
    }
    char *buf;
    long n = gp_proc_read_alloc(proc_root, pid, "cgroup", 1 << 20, &buf);
    if (n < 0) {
        out->origin = GP_ORIGIN_UNKNOWN;
        out->job_id[0] = '\0';
        return (int)n;
    }
    gp_attrib_parse_cgroup(buf, (size_t)n, out, NULL);
    free(buf);

    /* environ: readable for our own user's processes or as root. Only three keys kept. */
    n = gp_proc_read_alloc(proc_root, pid, "environ", 4u << 20, &buf);
    if (n >= 0) {
        out->env_read = 1;
        gp_attrib_parse_environ(buf, (size_t)n, out);
        free(buf);
    }
    /* The process may have exited between the two reads: a reused pid would give a
     * different owner, so check that it is still there. */
    char path[512];
    snprintf(path, sizeof path, "%s/%lld", proc_root, (long long)pid);
    if (access(path, F_OK) != 0) {
        memset(out, 0, sizeof *out);
        owner_clear_cg(out);
        out->pid = pid;
        return -ESRCH;
    }
    gp_attrib_derive_job(out);
    return 0;
}

int gp_attrib_owner_of_pid(int64_t pid, gp_owner *out) {
    return gp_attrib_owner_of_pid_at(NULL, pid, out);
}
