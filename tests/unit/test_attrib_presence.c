/* test_attrib_presence.c: the node-facing attribution pieces, each against hand-worked
 * expectations: resolver (owners from a proc root, PID reuse, vanished processes,
 * replayed captures, source labels), presence (allocation lines: open, grace, close,
 * scheduler precedence, held elsewhere), job map (index and UUID files, changes), and
 * alloc_split (a shared GPU's time split, never counted twice). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attribution/jobmap.h"
#include "attribution/presence.h"
#include "attribution/resolver.h"
#include "engine/accounting/alloc_split.h"

#define S 1000000000LL

static void put(const char *dir, const char *name, const char *text, size_t len) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fwrite(text, 1, len, f);
    fclose(f);
}

/* A fake proc root with one process: start `ticks` after boot. */
static void fake_proc(const char *root, long pid, long ticks, const char *cgroup,
                      const char *environ_block, size_t env_len) {
    char d[512], buf[512];
    snprintf(d, sizeof d, "%s/%ld", root, pid);
    mkdir(d, 0755);
    int n = snprintf(buf, sizeof buf,
                     "%ld (python3) S 1 %ld %ld 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %ld 0 0\n",
                     pid, pid, pid, ticks);
    put(d, "stat", buf, (size_t)n);
    put(d, "status", "Name:\tpython3\nUid:\t0\t0\t0\t0\n", 27);
    put(d, "cmdline", "python3\0train.py\0", 17);
    put(d, "cgroup", cgroup, strlen(cgroup));
    put(d, "environ", environ_block, env_len);
}

static void rm_proc(const char *root, long pid) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/%ld'", root, pid);
    assert_int_equal(system(cmd), 0);
}

static gp_proc_sample prow(const char *uuid, long pid) {
    gp_proc_sample p;
    memset(&p, 0, sizeof p);
    snprintf(p.uuid, sizeof p.uuid, "%s", uuid);
    p.pid = pid;
    return p;
}

static void test_resolver_owners(void **st) {
    (void)st;
    char *root = gp_test_tmpdir();
    put(root, "stat", "cpu 0\nbtime 1000\n", 18);
    fake_proc(root, 10, 100, "0::/system.slice/slurmstepd.scope/job_77/step_0/user/task_0\n", "A=1",
              4);
    fake_proc(root, 11, 200, "0::/user.slice/user-0.slice/session-1.scope\n", "A=1", 4);
    fake_proc(root, 12, 300, "0::/user.slice\n", "GOODPUT_JOB=my-run\0", 20);
    gp_resolver *r = gp_resolver_new(root);
    assert_non_null(r);
    gp_proc_sample p = prow("GPU-a", 10);
    const gp_proc_owner *o = gp_resolver_owner(r, &p, 5 * S);
    assert_string_equal(o->job_id, "77");
    assert_int_equal(o->origin, GP_ORIGIN_SLURM);
    long hz = sysconf(_SC_CLK_TCK);
    assert_true(o->start_ns == 1000 * S + 100 * (S / hz));
    p = prow("GPU-a", 11);
    o = gp_resolver_owner(r, &p, 5 * S);
    assert_string_equal(o->job_id, "pid-11");
    assert_int_equal(o->origin, GP_ORIGIN_PROCESS);
    assert_string_equal(o->name, "python3 train.py");
    assert_string_equal(o->user, "root");
    p = prow("GPU-a", 12);
    o = gp_resolver_owner(r, &p, 5 * S);
    assert_string_equal(o->job_id, "my-run");
    /* PID 11 is reused by another process (another start time) after a gap: new owner */
    rm_proc(root, 11);
    fake_proc(root, 11, 900, "0::/x\n", "GOODPUT_JOB=other\0", 18);
    p = prow("GPU-a", 11);
    o = gp_resolver_owner(r, &p, 60 * S);
    assert_string_equal(o->job_id, "other");
    /* a PID that is gone before its first lookup: unattributed, never dropped */
    p = prow("GPU-b", 4242);
    o = gp_resolver_owner(r, &p, 61 * S);
    assert_string_equal(o->job_id, GP_UNATTRIBUTED);
    /* a process that exits after it was resolved keeps its owner */
    rm_proc(root, 12);
    p = prow("GPU-a", 12);
    o = gp_resolver_owner(r, &p, 62 * S);
    assert_string_equal(o->job_id, "my-run");
    gp_resolver_stats rs = gp_resolver_get_stats(r);
    assert_true(rs.unattributed == 1 && rs.lookups == 6);
    gp_resolver_free(r);
    /* replay (no proc root): the capture's own name, the PID as the job */
    gp_resolver *rr = gp_resolver_new(NULL);
    p = prow("GPU-a", 10);
    snprintf(p.name, sizeof p.name, "vllm");
    o = gp_resolver_owner(rr, &p, 1);
    assert_string_equal(o->job_id, "pid-10");
    assert_string_equal(o->name, "vllm");
    /* a source label wins (dcgm-exporter pod / hpc_job) */
    snprintf(p.job_id, sizeof p.job_id, "ml/trainer-0");
    o = gp_resolver_owner(rr, &p, 1);
    assert_string_equal(o->job_id, "ml/trainer-0");
    assert_int_equal(o->origin, GP_ORIGIN_K8S);
    gp_resolver_free(rr);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    free(root);
}

typedef struct {
    char lines[32][256];
    int n;
} sink_t;

static void sink(void *ctx, const char *line, size_t len) {
    sink_t *s = ctx;
    assert_true(s->n < 32);
    snprintf(s->lines[s->n++], sizeof s->lines[0], "%.*s", (int)len, line);
}

static int has(const sink_t *s, const char *needle) {
    for (int i = 0; i < s->n; i++)
        if (strstr(s->lines[i], needle)) return 1;
    return 0;
}

static gp_proc_owner owner(const char *job, int64_t start_ns) {
    gp_proc_owner o;
    memset(&o, 0, sizeof o);
    snprintf(o.job_id, sizeof o.job_id, "%s", job);
    o.origin = GP_ORIGIN_PROCESS;
    o.start_ns = start_ns;
    return o;
}

static void test_presence_lifecycle(void **st) {
    (void)st;
    gp_presence *p = gp_presence_new(3 * S, 100 * S);
    sink_t s = {0};
    gp_proc_owner a = owner("pid-1", 100 * S + S / 2);
    /* tick 101: the process that started at 100.5 holds GPU-x from its start */
    gp_presence_begin(p, 101 * S);
    gp_presence_proc(p, &a, "GPU-x", 0);
    gp_presence_end(p, sink, &s);
    assert_int_equal(s.n, 2);
    assert_true(has(&s, "job job=pid-1 state=allocated"));
    assert_true(has(&s, "alloc job=pid-1 uuid=GPU-x from=100500000000"));
    /* gone for 2 ticks (inside the grace), back: nothing written */
    for (int t = 102; t <= 103; t++) {
        gp_presence_begin(p, t * S);
        gp_presence_end(p, sink, &s);
    }
    gp_presence_begin(p, 104 * S);
    gp_presence_proc(p, &a, "GPU-x", 0);
    gp_presence_end(p, sink, &s);
    assert_int_equal(s.n, 2);
    /* gone for good: closed after the grace, at the first tick it was missing */
    for (int t = 105; t <= 108; t++) {
        gp_presence_begin(p, t * S);
        gp_presence_end(p, sink, &s);
    }
    assert_int_equal(s.n, 3);
    assert_true(has(&s, "from=100500000000 to=105000000000"));
    /* a scheduler's allocation (job map) wins; its processes add nothing; it closes at
     * the first tick the job is no longer listed */
    gp_proc_owner b = owner("77", -1);
    b.origin = GP_ORIGIN_SLURM;
    gp_presence_begin(p, 110 * S);
    gp_presence_sched(p, "77", "GPU-y", 50 * S); /* mtime before the agent watched */
    gp_presence_proc(p, &b, "GPU-y", 0);
    gp_presence_end(p, sink, &s);
    assert_int_equal(s.n, 5);
    assert_true(has(&s, "alloc job=77 uuid=GPU-y from=100000000000")); /* clipped to watch */
    gp_presence_begin(p, 111 * S);
    gp_presence_proc(p, &b, "GPU-y", 0); /* process still there, job left the map */
    gp_presence_end(p, sink, &s);
    assert_true(has(&s, "alloc job=77 uuid=GPU-y from=100000000000 to=111000000000"));
    /* held elsewhere (a Slurm poller's row): tracked, never written */
    int before = s.n;
    gp_proc_owner c = owner("88", -1);
    for (int t = 112; t <= 120; t++) {
        gp_presence_begin(p, t * S);
        if (t < 114) gp_presence_proc(p, &c, "GPU-z", 1);
        gp_presence_end(p, sink, &s);
    }
    for (int i = before; i < s.n; i++)
        assert_null(strstr(s.lines[i], "job=88"));
    gp_presence_free(p);
}

static void on_pair(void *ctx, const char *job, const char *uuid, int64_t mtime_ns) {
    sink_t *s = ctx;
    (void)mtime_ns;
    char line[256];
    int n = snprintf(line, sizeof line, "%s@%s", job, uuid);
    sink(s, line, (size_t)n);
}

static void test_jobmap(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    gp_device devs[2];
    memset(devs, 0, sizeof devs);
    snprintf(devs[0].uuid, sizeof devs[0].uuid, "GPU-zero");
    devs[0].index = 0;
    snprintf(devs[1].uuid, sizeof devs[1].uuid, "GPU-one");
    devs[1].index = 1;
    put(dir, "0", "123\n456 1000\nnot-a-job!\n", 24); /* "jobid uid" is read as jobid */
    put(dir, "GPU-one", "789\n", 4);
    put(dir, "7", "999\n", 4); /* an index this node does not have */
    put(dir, ".0.tmp", "555\n", 4);
    gp_jobmap *m = gp_jobmap_new(dir);
    sink_t s = {0};
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 3);
    assert_true(has(&s, "123@GPU-zero") && has(&s, "456@GPU-zero") && has(&s, "789@GPU-one"));
    /* a rewritten file is read again */
    usleep(20000);
    put(dir, "0", "123\n", 4);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 2);
    assert_false(has(&s, "456@"));
    /* Nothing changed: the same pairs, from memory (where inotify works), in order. */
    gp_jobmap_stats js0 = gp_jobmap_get_stats(m);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 2);
    assert_true(has(&s, "123@GPU-zero") && has(&s, "789@GPU-one"));
    gp_jobmap_stats js1 = gp_jobmap_get_stats(m);
    assert_int_equal(js1.full + js1.cached, js0.full + js0.cached + 1);
    /* A file created, one deleted, one touched in place (no directory change): each is
     * seen by the very next scan, cached or not. */
    char cmd[600];
    put(dir, "1", "321\n", 4);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 3);
    assert_true(has(&s, "321@GPU-one"));
    snprintf(cmd, sizeof cmd, "%s/GPU-one", dir);
    assert_int_equal(unlink(cmd), 0);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 2);
    assert_false(has(&s, "789@"));
    usleep(20000);
    snprintf(cmd, sizeof cmd, "%s/0", dir);
    FILE *fa = fopen(cmd, "a");
    assert_non_null(fa);
    fputs("654\n", fa);
    fclose(fa);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 3);
    assert_true(has(&s, "654@GPU-zero"));
    /* The directory removed, then made again with other contents: read again. */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), -1);
    assert_int_equal(mkdir(dir, 0700), 0);
    put(dir, "0", "42\n", 3);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 1);
    assert_true(has(&s, "42@GPU-zero"));
    put(dir, "1", "43\n", 3);
    s.n = 0;
    assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 2);
    assert_true(has(&s, "43@GPU-one"));
    /* Many scans without a change: most are answered from memory (inotify), and a full
     * listing still comes at least every GP_JOBMAP_RESCAN_EVERY scans. */
    js0 = gp_jobmap_get_stats(m);
    for (int i = 0; i < 2 * GP_JOBMAP_RESCAN_EVERY; i++) {
        s.n = 0;
        assert_int_equal(gp_jobmap_scan(m, devs, 2, on_pair, &s), 2);
    }
    js1 = gp_jobmap_get_stats(m);
    assert_true(js1.full - js0.full >= 2);
    assert_true(js1.cached - js0.cached >= 2 * GP_JOBMAP_RESCAN_EVERY - 3);
    gp_jobmap_free(m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static gp_alloc al(const char *job, const char *uuid, int64_t a, int64_t b) {
    gp_alloc x;
    memset(&x, 0, sizeof x);
    snprintf(x.job_id, sizeof x.job_id, "%s", job);
    snprintf(x.uuid, sizeof x.uuid, "%s", uuid);
    x.from_ns = a * S;
    x.to_ns = b < 0 ? -1 : b * S;
    return x;
}

static double held(const gp_alloc *v, size_t n, int64_t t1) {
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += ((v[i].to_ns < 0 ? t1 * S : v[i].to_ns) - v[i].from_ns) / 1e9 *
             (v[i].share > 0 ? v[i].share : 1);
    return s;
}

static void test_alloc_split(void **st) {
    (void)st;
    /* j holds x over [0, 100) through two overlapping rows (scheduler + presence); k holds
     * x over [40, 60) and again [50, 80) (one job counts once); l holds y only. */
    gp_alloc mine[] = {al("j", "x", 0, 100), al("j", "x", 10, 50)};
    gp_alloc others[] = {al("k", "x", 40, 60), al("k", "x", 50, 80), al("l", "y", 0, 100)};
    gp_alloc *out;
    size_t n;
    assert_int_equal(gp_alloc_split(mine, 2, others, 3, &out, &n), 0);
    /* 0..40 whole, 40..80 half, 80..100 whole = 40 + 20 + 20 */
    assert_true(held(out, n, 100) > 80 - 1e-9 && held(out, n, 100) < 80 + 1e-9);
    free(out);
    gp_alloc kk[] = {al("k", "x", 40, 60), al("k", "x", 50, 80)};
    gp_alloc jj[] = {al("j", "x", 0, 100), al("j", "x", 10, 50)};
    assert_int_equal(gp_alloc_split(kk, 2, jj, 2, &out, &n), 0);
    assert_true(held(out, n, 100) > 20 - 1e-9 && held(out, n, 100) < 20 + 1e-9);
    free(out); /* 80 + 20 = 100 GPU-s on x in 100 s: nothing counted twice */
    /* an open allocation stays open; three holders get a third each */
    gp_alloc m3[] = {al("a", "x", 0, -1)};
    gp_alloc o3[] = {al("b", "x", 0, -1), al("c", "x", 0, -1)};
    assert_int_equal(gp_alloc_split(m3, 1, o3, 2, &out, &n), 0);
    assert_int_equal(n, 1);
    assert_true(out[0].to_ns < 0 && out[0].share > 0.333 && out[0].share < 0.334);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolver_owners),
        cmocka_unit_test(test_presence_lifecycle),
        cmocka_unit_test(test_jobmap),
        cmocka_unit_test(test_alloc_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
