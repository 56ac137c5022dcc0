/* owner.h: who owns a process, derived from /proc/PID/cgroup (v1 and v2) and, when
 * readable, three keys of /proc/PID/environ (GOODPUT_JOB, SLURM_JOB_ID,
 * CUDA_VISIBLE_DEVICES; no other key is kept).
 *
 * Recognised cgroup layouts (docs/attribution.md lists the sources of each example):
 *  - Slurm, cgroup v1:  /slurm/uid_U/job_J/step_S/task_T
 *  - Slurm, cgroup v2:  /system.slice/[NODE_]slurmstepd.scope/job_J/step_S/user/task_T
 *  - Kubernetes, cgroupfs driver: /kubepods[/QOS]/pod<uid>/<container id>
 *  - Kubernetes, systemd driver:  /kubepods.slice/kubepods-QOS.slice/
 *                                 kubepods-QOS-pod<uid with _ for ->.slice/cri-containerd-ID.scope
 *  - Docker (cgroupfs /docker/ID, systemd docker-ID.scope), containerd (cri-containerd-ID),
 *    CRI-O (crio-ID), podman (libpod-ID.scope)
 *  - systemd units: *.service, *.scope, *.slice (the deepest one wins)
 * When several lines disagree (v1 has one line per controller), the most specific owner
 * wins: Slurm > Kubernetes > container > systemd unit.
 *
 * The job id an owner maps to (gp_owner.job_id) is, in order: GOODPUT_JOB from the
 * environment; the Slurm job id; "pod:<uid>"; "container:<first 12 of id>"; "pid-PID"
 * (the protocol's fallback). A systemd unit alone never makes a job: it is kept as a
 * label. All functions are reentrant; nothing is allocated. */
#ifndef GP_ATTRIBUTION_OWNER_H
#define GP_ATTRIBUTION_OWNER_H

#include <stddef.h>
#include <stdint.h>

#include "model/event.h"
#include "model/job.h"

typedef enum {
    GP_CG_NONE = 0,  /* nothing recognised (root cgroup, user session...) */
    GP_CG_SYSTEMD,   /* a systemd unit only */
    GP_CG_CONTAINER, /* docker / containerd / cri-o / podman outside Kubernetes */
    GP_CG_K8S,       /* a Kubernetes pod (and maybe its container) */
    GP_CG_SLURM,     /* a Slurm job (and maybe its step) */
} gp_cg_kind;

typedef struct gp_owner {
    int64_t pid;
    gp_origin origin;           /* what job_id was derived from */
    char job_id[GP_JOB_ID_MAX]; /* see the header comment */
    gp_cg_kind cg_kind;
    /* Slurm */
    char slurm_job[24];  /* "1234" */
    char slurm_step[24]; /* "0", "batch", "extern", "interactive"; "" unknown */
    int64_t slurm_uid;   /* cgroup v1 uid_U; -1 unknown */
    /* Kubernetes */
    char pod_uid[40]; /* with dashes, as the API server shows it */
    char k8s_qos[16]; /* "guaranteed", "burstable", "besteffort" */
    /* containers */
    char container_id[72]; /* full hex id */
    char runtime[16];      /* "docker", "containerd", "crio", "podman", "" */
    char unit[128];        /* deepest systemd unit, e.g. "slurmd.service" */
    char cgroup[256];      /* the path the owner came from */
    /* environment (only these keys, and only when readable) */
    int env_read; /* 1 environ was readable */
    char env_goodput_job[GP_JOB_ID_MAX];
    char env_slurm_job_id[24];
    char env_cuda_visible[128];
} gp_owner;

/* Parses the text of a /proc/PID/cgroup file into *out (cgroup fields only; job_id is
 * derived with what is known). Lines that do not parse are skipped and counted in
 * *bad_lines (may be NULL). Returns the kind found. */
gp_cg_kind gp_attrib_parse_cgroup(const char *text, size_t len, gp_owner *out, int *bad_lines);

/* Classifies one cgroup path ("/kubepods.slice/..."); fills the matching fields. */
gp_cg_kind gp_attrib_classify_path(const char *path, gp_owner *out);

/* Picks the three keys out of a NUL-separated environ block. */
void gp_attrib_parse_environ(const char *block, size_t len, gp_owner *out);

/* Recomputes out->job_id and out->origin from the fields already filled. */
void gp_attrib_derive_job(gp_owner *out);

/* Reads /proc/PID/cgroup (required) and /proc/PID/environ (optional: permission denied is
 * not an error) under proc_root ("/proc" when NULL).
 * Returns 0; -ESRCH when the process does not exist or vanished mid-read (out then says
 * unknown: origin GP_ORIGIN_UNKNOWN, job_id ""); another negative errno on I/O errors. */
int gp_attrib_owner_of_pid_at(const char *proc_root, int64_t pid, gp_owner *out);
int gp_attrib_owner_of_pid(int64_t pid, gp_owner *out);

const char *gp_cg_kind_name(gp_cg_kind k);

#endif
