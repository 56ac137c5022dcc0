/* test_attrib_cgroup.c: owner derivation from /proc/PID/cgroup and environ.
 *
 * The cgroup lines below follow layouts published by the projects themselves:
 *  - Slurm cgroup v1, https://slurm.schedmd.com/cgroups.html ("slurm/uid_100/job_123/
 *    step_0/task_2" under each controller, e.g. /sys/fs/cgroup/memory/slurm/...).
 *  - Slurm cgroup v2, https://slurm.schedmd.com/cgroup_v2.html (jobs live under
 *    /sys/fs/cgroup/system.slice/slurmstepd.scope/job_<id>/step_<id>/user/task_<n>, and
 *    NODE_slurmstepd.scope with multiple slurmd).
 *  - Kubernetes, https://kubernetes.io/docs/concepts/architecture/cgroups/ and the kubelet's
 *    cgroup manager: cgroupfs driver /kubepods/<qos>/pod<uid>/<container id>, systemd driver
 *    /kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid, '-' as '_'>.slice/
 *    cri-containerd-<id>.scope (guaranteed pods have no qos level).
 *  - Docker, https://docs.docker.com/engine/containers/runmetrics/ : /docker/<long id> with
 *    the cgroupfs driver, /system.slice/docker-<long id>.scope with the systemd driver.
 *  - Podman: libpod-<id>.scope (and libpod-conmon-<id>.scope for its monitor).
 * Expected values are read off the path text by the test, not from the parser. */
#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "attribution/owner.h"

#define CID "3f2b8a4c9d1e0f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a"
#define POD "6a1f5e0c-2b7d-4e3a-9c8b-0d1e2f3a4b5c"
#define POD_ "6a1f5e0c_2b7d_4e3a_9c8b_0d1e2f3a4b5c"

static gp_owner parse(const char *text, int *bad) {
    gp_owner o;
    memset(&o, 0, sizeof o);
    o.slurm_uid = -1;
    gp_attrib_parse_cgroup(text, strlen(text), &o, bad);
    return o;
}

static void slurm_v1(void **st) {
    (void)st;
    /* A task of a Slurm v1 job: every controller Slurm manages shows the job path, while
     * the systemd hierarchy still names the slurmd service. */
    int bad = -1;
    gp_owner o = parse("12:pids:/system.slice/slurmd.service\n"
                       "11:memory:/slurm/uid_100/job_123/step_0/task_2\n"
                       "4:freezer:/slurm/uid_100/job_123/step_0\n"
                       "3:cpuset:/slurm/uid_100/job_123/step_0\n"
                       "1:name=systemd:/system.slice/slurmd.service\n",
                       &bad);
    assert_int_equal(bad, 0);
    assert_int_equal(o.cg_kind, GP_CG_SLURM);
    assert_string_equal(o.slurm_job, "123");
    assert_string_equal(o.slurm_step, "0");
    assert_int_equal(o.slurm_uid, 100);
    assert_string_equal(o.job_id, "123");
    assert_int_equal(o.origin, GP_ORIGIN_SLURM);
    assert_string_equal(o.unit, "slurmd.service");

    o = parse("7:devices:/slurm/uid_1000/job_4812/step_batch/task_0\n", NULL);
    assert_string_equal(o.slurm_step, "batch");
    assert_string_equal(o.job_id, "4812");
}

static void slurm_v2(void **st) {
    (void)st;
    gp_owner o = parse("0::/system.slice/slurmstepd.scope/job_3385/step_0/user/task_0\n", NULL);
    assert_int_equal(o.cg_kind, GP_CG_SLURM);
    assert_string_equal(o.slurm_job, "3385");
    assert_string_equal(o.slurm_step, "0");
    assert_int_equal(o.slurm_uid, -1);
    assert_string_equal(o.job_id, "3385");

    o = parse("0::/system.slice/node01_slurmstepd.scope/job_77/step_extern/user/task_special\n",
              NULL);
    assert_string_equal(o.slurm_job, "77");
    assert_string_equal(o.slurm_step, "extern");

    /* slurmstepd itself (no job below it) is not a job. */
    o = parse("0::/system.slice/slurmstepd.scope/system\n", NULL);
    assert_int_not_equal(o.cg_kind, GP_CG_SLURM);
    assert_string_equal(o.slurm_job, "");
}

static void k8s_systemd(void **st) {
    (void)st;
    gp_owner o = parse("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_
                       ".slice/cri-containerd-" CID ".scope\n",
                       NULL);
    assert_int_equal(o.cg_kind, GP_CG_K8S);
    assert_string_equal(o.pod_uid, POD);
    assert_string_equal(o.k8s_qos, "burstable");
    assert_string_equal(o.container_id, CID);
    assert_string_equal(o.runtime, "containerd");
    assert_string_equal(o.job_id, "pod:" POD);
    assert_int_equal(o.origin, GP_ORIGIN_K8S);

    /* Guaranteed pod, CRI-O runtime, with its conmon scope ignored. */
    o = parse("0::/kubepods.slice/kubepods-pod" POD_ ".slice/crio-" CID ".scope\n", NULL);
    assert_string_equal(o.pod_uid, POD);
    assert_string_equal(o.k8s_qos, "guaranteed");
    assert_string_equal(o.runtime, "crio");
    o = parse("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_
              ".slice/crio-conmon-" CID ".scope\n",
              NULL);
    assert_string_equal(o.pod_uid, POD);
    assert_string_equal(o.k8s_qos, "besteffort");
    assert_string_equal(o.container_id, "");
}

static void k8s_cgroupfs(void **st) {
    (void)st;
    gp_owner o = parse("11:memory:/kubepods/burstable/pod" POD "/" CID "\n"
                       "1:name=systemd:/kubepods/burstable/pod" POD "/" CID "\n",
                       NULL);
    assert_int_equal(o.cg_kind, GP_CG_K8S);
    assert_string_equal(o.pod_uid, POD);
    assert_string_equal(o.k8s_qos, "burstable");
    assert_string_equal(o.container_id, CID);
    o = parse("0::/kubepods/pod" POD "/" CID "\n", NULL);
    assert_string_equal(o.k8s_qos, "guaranteed");
    assert_string_equal(o.job_id, "pod:" POD);
}

static void docker_and_podman(void **st) {
    (void)st;
    gp_owner o = parse("9:memory:/docker/" CID "\n", NULL);
    assert_int_equal(o.cg_kind, GP_CG_CONTAINER);
    assert_string_equal(o.container_id, CID);
    assert_string_equal(o.runtime, "docker");
    assert_string_equal(o.job_id, "container:3f2b8a4c9d1e");
    assert_int_equal(o.origin, GP_ORIGIN_CONTAINER);

    o = parse("0::/system.slice/docker-" CID ".scope\n", NULL);
    assert_string_equal(o.container_id, CID);
    assert_string_equal(o.runtime, "docker");

    o = parse("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" CID
              ".scope/container\n",
              NULL);
    assert_string_equal(o.runtime, "podman");
    assert_string_equal(o.container_id, CID);
    o = parse("0::/machine.slice/libpod-conmon-" CID ".scope\n", NULL);
    assert_int_not_equal(o.cg_kind, GP_CG_CONTAINER);
}

static void systemd_units(void **st) {
    (void)st;
    gp_owner o = parse("0::/system.slice/nginx.service\n", NULL);
    assert_int_equal(o.cg_kind, GP_CG_SYSTEMD);
    assert_string_equal(o.unit, "nginx.service");
    /* A unit alone is a label, not a job: no pid, so no job. */
    assert_string_equal(o.job_id, "");
    o = parse("0::/user.slice/user-1000.slice/session-3.scope\n", NULL);
    assert_string_equal(o.unit, "session-3.scope");
    o = parse("0::/\n", NULL);
    assert_int_equal(o.cg_kind, GP_CG_NONE);
}

static void bad_lines(void **st) {
    (void)st;
    /* Random bytes (with the separators the parser looks for) never crash it. */
    unsigned seed = 11;
    for (int trial = 0; trial < 2000; trial++) {
        char buf[300];
        size_t n = (size_t)(rand_r(&seed) % sizeof buf);
        static const char alpha[] = "0:/\n_-.kubepodslurmjob_step_uid_docker-scope";
        for (size_t i = 0; i < n; i++)
            buf[i] =
                rand_r(&seed) % 4 ? alpha[rand_r(&seed) % (sizeof alpha - 1)] : (char)rand_r(&seed);
        gp_owner g;
        memset(&g, 0, sizeof g);
        gp_attrib_parse_cgroup(buf, n, &g, NULL);
        gp_attrib_parse_environ(buf, n, &g);
        assert_true(strlen(g.job_id) < sizeof g.job_id);
    }
    int bad = 0;
    gp_owner o = parse("garbage\nx:y\n:memory:/slurm/uid_1/job_2\n5:cpu:relative/path\n"
                       "3:memory:/slurm/uid_1/job_9/step_1\n",
                       &bad);
    assert_int_equal(bad, 4);
    assert_string_equal(o.slurm_job, "9"); /* the good line still counts */
    o = parse("", &bad);
    assert_int_equal(bad, 0);
    assert_int_equal(o.cg_kind, GP_CG_NONE);
    /* Not a job id: letters after job_, a pod uid of the wrong length. */
    o = parse("0::/slurm/uid_1/job_abc/step_0\n0::/kubepods/podxyz/" CID "\n", NULL);
    assert_string_equal(o.slurm_job, "");
    assert_string_equal(o.pod_uid, "");
}

static void environ_keys(void **st) {
    (void)st;
    static const char env[] = "HOME=/root\0SECRET_TOKEN=hunter2\0GOODPUT_JOB=train-7\0"
                              "SLURM_JOB_ID=4812\0CUDA_VISIBLE_DEVICES=0,2\0";
    gp_owner o;
    memset(&o, 0, sizeof o);
    gp_attrib_parse_environ(env, sizeof env - 1, &o);
    assert_string_equal(o.env_goodput_job, "train-7");
    assert_string_equal(o.env_slurm_job_id, "4812");
    assert_string_equal(o.env_cuda_visible, "0,2");
    /* Nothing else of the environment lands anywhere in the struct. */
    assert_null(memmem(&o, sizeof o, "hunter2", 7));
    gp_attrib_derive_job(&o);
    assert_string_equal(o.job_id, "train-7"); /* the declared tag wins */
    assert_int_equal(o.origin, GP_ORIGIN_TAG);
    /* An invalid tag is ignored; the Slurm id from the environment is used. */
    static const char env2[] = "GOODPUT_JOB=has space\0SLURM_JOB_ID=99";
    memset(&o, 0, sizeof o);
    gp_attrib_parse_environ(env2, sizeof env2 - 1, &o);
    gp_attrib_derive_job(&o);
    assert_string_equal(o.job_id, "99");
}

/* A live child with a known environment: its owner must match its own cgroup file. */
static void live_process(void **st) {
    (void)st;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[1]);
        char *argv[] = {"cat", NULL};
        char *envp[] = {"GOODPUT_JOB=live-test", "SLURM_JOB_ID=31337", "CUDA_VISIBLE_DEVICES=1,3",
                        "OTHER=x", NULL};
        dup2(pfd[0], 0);
        execve("/bin/cat", argv, envp);
        _exit(127);
    }
    close(pfd[0]);
    usleep(100000); /* let it exec */
    gp_owner o;
    assert_int_equal(gp_attrib_owner_of_pid(pid, &o), 0);
    assert_int_equal(o.pid, pid);
    assert_int_equal(o.env_read, 1);
    assert_string_equal(o.env_goodput_job, "live-test");
    assert_string_equal(o.env_slurm_job_id, "31337");
    assert_string_equal(o.env_cuda_visible, "1,3");
    assert_string_equal(o.job_id, "live-test");

    /* Its cgroup path, read independently, must be what the owner reports (when the
     * path is recognised) and the same as our own (a forked child stays in our cgroup). */
    char path[64], buf[4096], self[4096];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    f = fopen("/proc/self/cgroup", "r");
    size_t m = fread(self, 1, sizeof self - 1, f);
    self[m] = '\0';
    fclose(f);
    assert_string_equal(buf, self);
    if (o.cgroup[0]) assert_non_null(strstr(buf, o.cgroup));

    close(pfd[1]); /* cat exits on EOF */
    int status;
    waitpid(pid, &status, 0);
    /* Gone: unknown, -ESRCH, no stale owner. */
    assert_int_equal(gp_attrib_owner_of_pid(pid, &o), -ESRCH);
    assert_int_equal(o.origin, GP_ORIGIN_UNKNOWN);
    assert_string_equal(o.job_id, "");
}

/* Our own process with no tag: the owner falls back to whatever the cgroup says, else
 * the pid. */
static void live_self_fallback(void **st) {
    (void)st;
    gp_owner o;
    assert_int_equal(gp_attrib_owner_of_pid(getpid(), &o), 0);
    if (!o.env_goodput_job[0] && !o.env_slurm_job_id[0] && o.cg_kind < GP_CG_CONTAINER) {
        char want[32];
        snprintf(want, sizeof want, "pid-%d", (int)getpid());
        assert_string_equal(o.job_id, want);
    }
    assert_int_equal(gp_attrib_owner_of_pid(0, &o), -ESRCH);
}

/* A fake /proc where environ is missing (process vanished between reads). */
static void vanish_mid_read(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    char p[512];
    snprintf(p, sizeof p, "%s/4242", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/4242/cgroup", dir);
    FILE *f = fopen(p, "w");
    fputs("0::/system.slice/docker-" CID ".scope\n", f);
    fclose(f);
    gp_owner o;
    /* environ absent: still attributed (environ is optional). */
    assert_int_equal(gp_attrib_owner_of_pid_at(dir, 4242, &o), 0);
    assert_int_equal(o.env_read, 0);
    assert_string_equal(o.job_id, "container:3f2b8a4c9d1e");
    /* The pid directory gone: unknown. */
    unlink(p);
    snprintf(p, sizeof p, "%s/4242", dir);
    rmdir(p);
    assert_int_equal(gp_attrib_owner_of_pid_at(dir, 4242, &o), -ESRCH);
    assert_string_equal(o.job_id, "");
    rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slurm_v1),          cmocka_unit_test(slurm_v2),
        cmocka_unit_test(k8s_systemd),       cmocka_unit_test(k8s_cgroupfs),
        cmocka_unit_test(docker_and_podman), cmocka_unit_test(systemd_units),
        cmocka_unit_test(bad_lines),         cmocka_unit_test(environ_keys),
        cmocka_unit_test(live_process),      cmocka_unit_test(live_self_fallback),
        cmocka_unit_test(vanish_mid_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
