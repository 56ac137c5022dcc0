/* test_attrib_slurm.c: squeue/sacct parsing on real 22.05 output, and the poller against a
 * store, driven by scripts that print that output (the real-Slurm run is
 * tests/integration/slurm_real.sh).
 *
 * The fixtures in tests/unit/data/slurm/ were captured from Debian's slurm-wlm 22.05.8 on
 * this project's test stack: job 1 "failer" (--gres=gpu:2, `exit 7`), job 2 "sleeper"
 * (--gres=gpu:1). Expected values below are read off the fixture text (e.g. the
 * submit_time field) by the test itself, not copied from the parser. */
#include "testutil.h"

#include <sys/stat.h>

#include "attribution/share.h"
#include "attribution/slurm.h"
#include "store/store.h"

#define DATA "tests/unit/data/slurm/"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    b[*n] = '\0';
    fclose(f);
    return b;
}

/* The integer after "key": in the text of the object for job_id (a crude independent
 * reader: finds the job's "job_id": N and the next occurrence of the key). */
static long long field_after(const char *text, int job_id, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"job_id\": %d,", job_id);
    const char *p = strstr(text, pat);
    if (!p) {
        /* squeue prints the object's keys alphabetically: job_id comes late, so look back
         * to the object's start. */
        fail_msg("job %d not in fixture", job_id);
    }
    const char *start = p;
    while (start > text && !(start[0] == '{' && start[-1] == ' ' && start[-2] == ' ' &&
                             start[-3] == ' ' && start[-4] == ' ' && start[-5] == '\n'))
        start--;
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *q = strstr(start, k);
    assert_non_null(q);
    return atoll(q + strlen(k));
}

static const gp_slurm_job *find(const gp_slurm_job *j, size_t n, const char *id) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(j[i].job.id, id)) return &j[i];
    return NULL;
}

static void gres_idx(void **st) {
    (void)st;
    int idx[8];
    assert_int_equal(gp_slurm_parse_gres_idx("gpu:1(IDX:2)", idx, 8), 1);
    assert_int_equal(idx[0], 2);
    assert_int_equal(gp_slurm_parse_gres_idx("gpu:a100:4(IDX:0,2-4)", idx, 8), 4);
    assert_int_equal(idx[0], 0);
    assert_int_equal(idx[1], 2);
    assert_int_equal(idx[3], 4);
    assert_int_equal(gp_slurm_parse_gres_idx("gpu(IDX:N/A)", idx, 8), 0);
    assert_int_equal(gp_slurm_parse_gres_idx("gpu:2", idx, 8), -1);
    assert_int_equal(gp_slurm_parse_gres_idx("gpu:2(IDX:x)", idx, 8), -1);
    assert_int_equal(gp_slurm_parse_gres_idx("gpu:2(IDX:3-1)", idx, 8), -1);
}

static void squeue_real(void **st) {
    (void)st;
    size_t len, n;
    char *txt = slurp(DATA "squeue-22.05-running-failed.json", &len);
    gp_slurm_job *jobs;
    char err[256];
    assert_int_equal(gp_slurm_parse_squeue(txt, len, &jobs, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    const gp_slurm_job *f = find(jobs, n, "1"), *s = find(jobs, n, "2");
    assert_non_null(f);
    assert_non_null(s);
    assert_string_equal(f->job.name, "failer");
    assert_string_equal(f->job.user, "root");
    assert_string_equal(f->state, "FAILED");
    assert_string_equal(f->job.exit_state, "failed");
    /* squeue's exit_code is a wait status: the text has 1792 = 7 << 8. */
    assert_int_equal(field_after(txt, 1, "exit_code"), 1792);
    assert_int_equal(f->job.exit_code, 7);
    assert_int_equal(f->job.submitted_ns, field_after(txt, 1, "submit_time") * 1000000000LL);
    assert_int_equal(f->job.allocated_ns, field_after(txt, 1, "start_time") * 1000000000LL);
    assert_int_equal(f->job.ended_ns, field_after(txt, 1, "end_time") * 1000000000LL);
    assert_int_equal(f->n_gpus, 2);
    assert_int_equal(f->n_idx, 0); /* indices vanish once the job ended */
    assert_string_equal(s->state, "RUNNING");
    assert_int_equal(s->job.ended_ns, -1); /* end_time of a running job is its limit */
    assert_int_equal(s->job.exit_code, -1);
    assert_int_equal(s->n_gpus, 1);
    assert_int_equal(s->n_idx, 1);
    assert_int_equal(s->gpu_idx[0], 2); /* "gpu:1(IDX:2)" in the fixture */
    assert_non_null(strstr(txt, "gpu:1(IDX:2)"));
    free(jobs);
    free(txt);

    txt = slurp(DATA "squeue-22.05-pending.json", &len);
    assert_int_equal(gp_slurm_parse_squeue(txt, len, &jobs, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(jobs[i].state, "PENDING");
        assert_int_equal(jobs[i].job.allocated_ns, -1);
        assert_true(jobs[i].job.submitted_ns > 0);
    }
    free(jobs);
    free(txt);
}

static void sacct_real(void **st) {
    (void)st;
    size_t len, n, tl;
    char *txt = slurp(DATA "sacct-22.05.json", &len);
    char *ptxt = slurp(DATA "sacct-22.05-P.txt", &tl);
    gp_slurm_job *jobs;
    char err[256];
    assert_int_equal(gp_slurm_parse_sacct(txt, len, &jobs, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    gp_slurm_job *f = (gp_slurm_job *)find(jobs, n, "1");
    assert_non_null(f);
    assert_string_equal(f->state, "FAILED");
    assert_int_equal(f->n_gpus, 2);
    /* 22.05's JSON says return_code 0 for this job, which exited 7: not believed. */
    assert_non_null(strstr(txt, "\"return_code\": 0"));
    assert_int_equal(f->job.exit_code, -1);
    /* The -P text has the truth ("1|failer|root|FAILED|7:0|..."): we ask for
     * JobIDRaw,State,ExitCode, so build that projection of the fixture. */
    char proj[512] = "";
    char *save, *line = strtok_r(ptxt, "\n", &save);
    while (line) {
        char *fld[9] = {0};
        int k = 0;
        for (char *p = line; k < 9; k++) {
            fld[k] = p;
            p = strchr(p, '|');
            if (!p) break;
            *p++ = '\0';
        }
        size_t u = strlen(proj);
        snprintf(proj + u, sizeof proj - u, "%s|%s|%s\n", fld[0], fld[3], fld[4]);
        line = strtok_r(NULL, "\n", &save);
    }
    assert_int_equal(gp_slurm_apply_sacct_text(proj, strlen(proj), jobs, n), 2);
    assert_int_equal(f->job.exit_code, 7);
    assert_string_equal(f->job.exit_state, "failed");
    const gp_slurm_job *s = find(jobs, n, "2");
    assert_int_equal(s->job.exit_code, 0);
    assert_string_equal(s->job.exit_state, "completed");
    /* Signals: "0:9" is killed by SIGKILL. */
    assert_int_equal(gp_slurm_apply_sacct_text("2|CANCELLED by 0|0:9\n", 21, jobs, n), 1);
    assert_int_equal(s->job.exit_code, 137);
    assert_string_equal(s->job.exit_state, "cancelled");
    free(jobs);
    free(txt);
    free(ptxt);
}

static void bad_json(void **st) {
    (void)st;
    gp_slurm_job *jobs;
    size_t n;
    char err[256];
    assert_int_equal(gp_slurm_parse_squeue("{\"jobs\": [", 10, &jobs, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "not JSON"));
    assert_int_equal(gp_slurm_parse_squeue("{\"meta\":{}}", 11, &jobs, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "jobs"));
    /* Odd members are skipped, not fatal. */
    const char *odd = "{\"jobs\":[1,\"x\",{\"name\":\"no id\"},{\"job_id\":5,\"job_state\":7}]}";
    assert_int_equal(gp_slurm_parse_squeue(odd, strlen(odd), &jobs, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(jobs[0].job.id, "5");
    free(jobs);
}

static void ready_from_samples(void **st) {
    (void)st;
    gp_sample s[8];
    memset(s, 0, sizeof s);
    double util[8] = {0, 0.9, 0, 0.5, 0.6, 0.7, 0.8, 0.9};
    for (int i = 0; i < 8; i++) {
        s[i].ts_ns = (int64_t)(i + 1) * 10 * 1000000000LL;
        s[i].gpu_util = util[i];
        s[i].valid = GP_F_GPU_UTIL;
    }
    /* A lone busy sample at 20 s is not sustained; the run from 40 s holds >= 30 s at 70. */
    assert_int_equal(gp_attrib_ready_from_samples(s, 8, 0, 0.05, 30000000000LL), 40000000000LL);
    assert_int_equal(gp_attrib_ready_from_samples(s, 8, 0, 0.05, 0), 20000000000LL);
    assert_int_equal(gp_attrib_ready_from_samples(s, 8, 0, 0.95, 0), -1);
    s[4].valid = 0; /* an unknown sample breaks the run */
    assert_int_equal(gp_attrib_ready_from_samples(s, 8, 0, 0.05, 30000000000LL), -1);
}

/* The poller against a store, with squeue/sacct replaced by scripts printing fixtures. */
static void write_script(const char *path, const char *body) {
    FILE *f = fopen(path, "w");
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(path, 0755);
}

/* squeue and sacct scripts in dir printing the fixtures (squeue: no job until the file
 * dir/later exists, then the running snapshot), a store, and a poller on 4 GPUs. */
static gp_slurm *poller_open(const char *dir, gp_store **store) {
    char sq[512], sa[512], db[512], cwd[512], body[2048], err[512];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(sq, sizeof sq, "%s/squeue", dir);
    snprintf(sa, sizeof sa, "%s/sacct", dir);
    snprintf(db, sizeof db, "%s/db.sqlite", dir);
    snprintf(body, sizeof body,
             "if [ -e %s/later ]; then cat %s/" DATA "squeue-22.05-running-failed.json; "
             "else echo '{\"jobs\":[]}'; fi",
             dir, cwd);
    write_script(sq, body);
    snprintf(body, sizeof body,
             "case \"$*\" in *--json*) cat %s/" DATA "sacct-22.05.json;; "
             "*) printf '1|FAILED|7:0\\n2|COMPLETED|0:0\\n';; esac",
             cwd);
    write_script(sa, body);
    assert_int_equal(gp_store_open(db, 0, store, err, sizeof err), 0);
    gp_slurm_opts o = {.squeue = sq, .sacct = sa};
    gp_slurm *s;
    assert_int_equal(gp_slurm_open(&o, &s, err, sizeof err), 0);
    gp_device devs[4];
    memset(devs, 0, sizeof devs);
    for (int i = 0; i < 4; i++) {
        devs[i].index = i;
        snprintf(devs[i].uuid, sizeof devs[i].uuid, "GPU-test-%d", i);
    }
    gp_slurm_set_gpus(s, devs, 4);
    return s;
}

static void poller(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), sq[512], err[512];
    snprintf(sq, sizeof sq, "%s/squeue", dir);
    gp_store *store;
    gp_slurm *s = poller_open(dir, &store);
    assert_int_equal(gp_slurm_poll(s, store, 1, err, sizeof err), 0);
    assert_int_equal(gp_slurm_live_jobs(s), 0);
    char flag[600];
    snprintf(flag, sizeof flag, "%s/later", dir);
    fclose(fopen(flag, "w"));
    assert_int_equal(gp_slurm_poll(s, store, 2, err, sizeof err), 0);

    gp_job j;
    assert_int_equal(gp_store_get_job(store, "1", &j), 1);
    assert_string_equal(j.exit_state, "failed");
    assert_int_equal(j.exit_code, 7);
    assert_int_equal(j.origin, GP_ORIGIN_SLURM);
    assert_true(j.allocated_ns > j.submitted_ns);
    assert_int_equal(gp_store_get_job(store, "2", &j), 1);
    assert_int_equal(j.ended_ns, -1); /* still running in the snapshot */
    gp_alloc *al;
    size_t na;
    assert_int_equal(gp_store_job_allocs(store, "2", &al, &na), 0);
    assert_int_equal(na, 1);
    assert_string_equal(al[0].uuid, "GPU-test-2"); /* IDX:2 -> the third device */
    assert_int_equal(al[0].from_ns, j.allocated_ns);
    if (al[0].to_ns >= 0)
        fail_msg("to_ns=%lld from=%lld", (long long)al[0].to_ns, (long long)al[0].from_ns);
    free(al);
    assert_int_equal(gp_slurm_live_jobs(s), 1);
    /* Job 2 sends no events: readiness comes from sustained kernel activity on its GPU.
     * Samples every 10 s from start+10 s at 90% busy -> ready at start+10 s. */
    const int64_t S = 1000000000LL, t_start = j.allocated_ns;
    assert_int_equal(j.ready_ns, -1);
    gp_store_begin(store);
    for (int i = 1; i <= 6; i++) {
        gp_sample smp;
        memset(&smp, 0, sizeof smp);
        snprintf(smp.uuid, sizeof smp.uuid, "GPU-test-2");
        smp.ts_ns = t_start + i * 10 * S;
        smp.gpu_util = 0.9;
        smp.valid = GP_F_GPU_UTIL;
        assert_int_equal(gp_store_put_sample(store, &smp), 0);
    }
    gp_store_commit(store);
    /* A second poll does not duplicate the allocation. */
    assert_int_equal(gp_slurm_poll(s, store, t_start + 100 * S, err, sizeof err), 0);
    assert_int_equal(gp_store_get_job(store, "2", &j), 1);
    assert_int_equal(j.ready_ns, t_start + 10 * S);
    assert_int_equal(gp_store_job_allocs(store, "2", &al, &na), 0);
    assert_int_equal(na, 1);
    free(al);

    /* squeue breaks: an error sentence, the stored job untouched. */
    write_script(sq, "echo 'not json'");
    assert_int_equal(gp_slurm_poll(s, store, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "squeue"));
    write_script(sq, "exit 3");
    assert_int_equal(gp_slurm_poll(s, store, 5, err, sizeof err), -1);
    assert_non_null(strstr(err, "status 3"));
    assert_int_equal(gp_store_get_job(store, "2", &j), 1);
    assert_int_equal(gp_slurm_get_stats(s)->squeue_failures, 2);
    /* The job left squeue: sacct settles it (its JSON says RUNNING, so it stays live). */
    write_script(sq, "echo '{\"jobs\":[]}'");
    assert_int_equal(gp_slurm_poll(s, store, 6, err, sizeof err), 0);

    gp_slurm_close(s);
    gp_store_close(store);
    gp_test_tmpdir_remove(dir);
}

/* An epilog that could not learn the job's start (slurmctld busy) once sent its own end
 * time as the start: a row of no length. The poller, seeing the job only then, must not
 * take that row's start for the allocation (it would hold nothing: the slurm_real.sh
 * "waiter" failure under load); Slurm's start stands. */
static void poller_ignores_empty_row(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir(), flag[600], err[512];
    gp_store *store;
    gp_slurm *s = poller_open(dir, &store);
    const int64_t start_ns = 1795978573LL * 1000000000LL; /* job 2 in the fixture */
    gp_alloc bad = {.job_id = "2", .uuid = "GPU-test-2"};
    bad.from_ns = bad.to_ns = start_ns + 3000000000LL;
    gp_job j2;
    memset(&j2, 0, sizeof j2);
    snprintf(j2.id, sizeof j2.id, "2");
    j2.submitted_ns = j2.allocated_ns = j2.ready_ns = j2.ended_ns = -1;
    j2.exit_code = -1;
    assert_int_equal(gp_store_put_job(store, &j2), 0);
    assert_int_equal(gp_store_put_alloc(store, &bad), 0);
    snprintf(flag, sizeof flag, "%s/later", dir);
    fclose(fopen(flag, "w"));
    assert_int_equal(gp_slurm_poll(s, store, 2, err, sizeof err), 0);
    gp_alloc *al;
    size_t na, open_at_start = 0;
    assert_int_equal(gp_store_job_allocs(store, "2", &al, &na), 0);
    for (size_t i = 0; i < na; i++)
        open_at_start += al[i].from_ns == start_ns && al[i].to_ns < 0;
    free(al);
    assert_int_equal(open_at_start, 1);
    gp_slurm_close(s);
    gp_store_close(store);
    gp_test_tmpdir_remove(dir);
}

/* The dcgm-exporter job map: files named by GPU index, holding job ids. */
static void jobmap(void **st) {
    (void)st;
    char *dir = gp_test_tmpdir();
    char sq[512], db[512], map[512], p[600];
    snprintf(sq, sizeof sq, "%s/squeue", dir);
    snprintf(db, sizeof db, "%s/db.sqlite", dir);
    snprintf(map, sizeof map, "%s/map", dir);
    mkdir(map, 0755);
    write_script(sq, "echo '{\"jobs\":[]}'");
    snprintf(p, sizeof p, "%s/1", map);
    FILE *f = fopen(p, "w");
    fputs("4812\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/3", map);
    f = fopen(p, "w");
    fputs("4812 1000\n4813\n", f); /* Princeton's "jobid uid" form, and a second job */
    fclose(f);
    gp_store *store;
    char err[512];
    assert_int_equal(gp_store_open(db, 0, &store, err, sizeof err), 0);
    gp_slurm_opts o = {.squeue = sq, .sacct = "", .jobmap_dir = map};
    gp_slurm *s;
    assert_int_equal(gp_slurm_open(&o, &s, err, sizeof err), 0);
    gp_device devs[4];
    memset(devs, 0, sizeof devs);
    for (int i = 0; i < 4; i++) {
        devs[i].index = i;
        snprintf(devs[i].uuid, sizeof devs[i].uuid, "GPU-map-%d", i);
    }
    gp_slurm_set_gpus(s, devs, 4);
    assert_int_equal(gp_slurm_poll(s, store, 10, err, sizeof err), 0);
    assert_int_equal(gp_slurm_poll(s, store, 11, err, sizeof err), 0);
    gp_alloc *al;
    size_t na;
    assert_int_equal(gp_store_job_allocs(store, "4812", &al, &na), 0);
    assert_int_equal(na, 2);
    int seen1 = 0, seen3 = 0;
    for (size_t i = 0; i < na; i++) {
        seen1 |= !strcmp(al[i].uuid, "GPU-map-1");
        seen3 |= !strcmp(al[i].uuid, "GPU-map-3");
    }
    assert_true(seen1 && seen3);
    free(al);
    assert_int_equal(gp_store_job_allocs(store, "4813", &al, &na), 0);
    assert_int_equal(na, 1);
    free(al);
    assert_int_equal(gp_slurm_get_stats(s)->jobmap_allocs, 3);
    gp_slurm_close(s);
    gp_store_close(store);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

static void run_capture_timeout(void **st) {
    (void)st;
    char *out;
    size_t n;
    char err[256];
    char *a1[] = {"sh", "-c", "echo hi; exit 4", NULL};
    assert_int_equal(gp_attrib_run_capture(a1, 2000, &out, &n, err, sizeof err), 4);
    assert_string_equal(out, "hi\n");
    free(out);
    char *a2[] = {"sleep", "5", NULL};
    assert_int_equal(gp_attrib_run_capture(a2, 200, &out, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "200 ms"));
    char *a3[] = {"/nonexistent/squeue", NULL};
    assert_int_equal(gp_attrib_run_capture(a3, 2000, &out, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "could not run"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gres_idx),
        cmocka_unit_test(squeue_real),
        cmocka_unit_test(sacct_real),
        cmocka_unit_test(bad_json),
        cmocka_unit_test(ready_from_samples),
        cmocka_unit_test(poller),
        cmocka_unit_test(poller_ignores_empty_row),
        cmocka_unit_test(jobmap),
        cmocka_unit_test(run_capture_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
