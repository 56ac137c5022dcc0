/* test_dmon.c: `dcgmi dmon` log replay (src/sources/dmon.c). The logs are written here in
 * the layout DCGM's dcgmi/DeviceMonitor.cpp prints (a "#Entity" header of field short names
 * padded to each field's width, a unit line "ID", rows "GPU 0 ...", "GPU-I 3 ...", "N/A"
 * for blank values, the header repeated every 14 iterations); short names and units from
 * DCGM's dcgmlib/src/dcgm_fields.cpp (see tests/data/SOURCES.md). */
#include "testutil.h"

#include "sources/source.h"

static char *dir;

static char *write_log(const char *name, const char *text) {
    char *p = malloc(600);
    snprintf(p, 600, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return p;
}

static const gp_sample *find(const gp_sample *s, size_t n, const char *uuid) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s[i].uuid, uuid)) return &s[i];
    return NULL;
}

/* custom field list (-e 150,155,203,252,1002,1004), two GPUs, three iterations, N/A */
static void test_custom_fields(void **st) {
    (void)st;
    char *p = write_log("custom.log",
                        "#Entity   TMPTR     POWER     GPUTL     FBUSD     SMACT     TENSO     \n"
                        "ID        C         W                   MiB                           \n"
                        "GPU 0     41        70.512    35        1024      0.402     0.100     \n"
                        "GPU 1     39        N/A       0         0         0.000     0.000     \n"
                        "GPU 0     42        71.000    80        2048      0.810     0.500     \n"
                        "GPU 1     39        60.250    N/A       0         0.000     0.000     \n"
                        "GPU 0     43        72.000    90        2048      0.900     0.600     \n"
                        "GPU 1     40        61.000    10        512       0.050     0.010     \n");
    char spec[700];
    snprintf(spec, sizeof spec, "dmon:%s,interval=500", p);
    gp_source_opts o = {.start_ns = 1767225600LL * 1000000000LL, .interval_ns = 500000000LL};
    gp_source src;
    char err[512] = "";
    assert_int_equal(gp_source_open(spec, &o, &src, err, sizeof err), 0);
    gp_device dev[8];
    size_t nd = 0;
    assert_int_equal(src.ops->list_devices(src.state, dev, 8, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 2);
    assert_string_equal(dev[0].uuid, "dmon-gpu-0");
    /* three iterations 500 ms apart: the replay ends at the third */
    assert_int_equal(src.ops->end_ns(src.state), o.start_ns + 2 * 500000000LL);
    assert_int_equal(src.ops->now_ns(src.state), o.start_ns - 500000000LL);
    gp_sample s[8];
    size_t n = 0;
    assert_int_equal(src.ops->sample(src.state, o.start_ns, s, 8, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    const gp_sample *g0 = find(s, n, "dmon-gpu-0"), *g1 = find(s, n, "dmon-gpu-1");
    assert_non_null(g0);
    assert_non_null(g1);
    assert_true(gp_has(g0->valid, GP_F_GPU_UTIL | GP_F_SM_ACTIVE | GP_F_TENSOR_ACTIVE));
    assert_true(fabs(g0->gpu_util - 0.35) < 1e-12);
    assert_true(fabs(g0->sm_active - 0.402) < 1e-12);
    assert_true(fabs(g0->power_w - 70.512) < 1e-12);
    assert_int_equal(g0->mem_used_bytes, 1024ull * 1048576ull);
    assert_false(g1->valid & GP_F_POWER); /* N/A is unknown, never 0 */
    assert_true(g1->valid & GP_F_GPU_UTIL);
    assert_true(g1->gpu_util == 0);
    assert_int_equal(
        src.ops->sample(src.state, o.start_ns + 500000000LL, s, 8, &n, err, sizeof err), 0);
    g1 = find(s, n, "dmon-gpu-1");
    assert_non_null(g1);
    assert_false(g1->valid & GP_F_GPU_UTIL);
    assert_true(fabs(g1->power_w - 60.25) < 1e-12);
    assert_int_equal(g1->ts_ns, o.start_ns + 500000000LL);
    gp_source_close(&src);
    free(p);
}

/* a field group's list with MIG instances, a repeated header, an unknown column, a bad value */
static void test_mig_and_warnings(void **st) {
    (void)st;
    char *p = write_log("mig.log", "#Entity   GPUTL     SMACT     GRACT     FBUSD     \n"
                                   "ID                                      MiB       \n"
                                   "GPU 0     50        0.500     0.600     4096      \n"
                                   "GPU-I 1   N/A       0.700     0.800     2048      \n"
                                   "GPU-CI 3  N/A       0.650     0.750     N/A       \n"
                                   "#Entity   GPUTL     SMACT     GRACT     FBUSD     \n"
                                   "ID                                      MiB       \n"
                                   "GPU 0     60        bad       0.600     4096      \n"
                                   "GPU-I 1   N/A       0.100     0.200     2048      \n"
                                   "GPU-CI 3  N/A       0.050\n");
    char spec[700];
    snprintf(spec, sizeof spec, "dmon:%s", p);
    gp_source_opts o = {.start_ns = 1767225600LL * 1000000000LL, .interval_ns = 1000000000LL};
    gp_source src;
    char err[512] = "";
    /* warnings go to stderr: capture them */
    char wpath[600];
    snprintf(wpath, sizeof wpath, "%s/warn.txt", dir);
    fflush(stderr);
    FILE *saved = fdopen(dup(fileno(stderr)), "w");
    assert_non_null(freopen(wpath, "w", stderr));
    int rc = gp_source_open(spec, &o, &src, err, sizeof err);
    fflush(stderr);
    dup2(fileno(saved), fileno(stderr));
    fclose(saved);
    assert_int_equal(rc, 0);
    FILE *wf = fopen(wpath, "r");
    char w[4096] = "";
    size_t wn = fread(w, 1, sizeof w - 1, wf);
    w[wn] = 0;
    fclose(wf);
    /* one warning per problem, each naming file:line; GRACT once, not per header */
    assert_non_null(strstr(w, "mig.log:1: column GRACT"));
    assert_null(strstr(w, "mig.log:6: column GRACT"));
    assert_non_null(strstr(w, "mig.log:8: field 2 ('bad'): not a number"));
    assert_non_null(strstr(w, "mig.log:10: 2 values for 4 columns"));
    gp_device dev[8];
    size_t nd = 0;
    src.ops->list_devices(src.state, dev, 8, &nd, err, sizeof err);
    assert_int_equal(nd, 3);
    assert_string_equal(dev[1].uuid, "dmon-gpu-i-1");
    assert_string_equal(dev[1].parent_uuid, "dmon-gpu-0");
    assert_string_equal(dev[2].parent_uuid, "dmon-gpu-0");
    assert_string_equal(dev[0].parent_uuid, "");
    gp_sample s[8];
    size_t n = 0;
    src.ops->sample(src.state, o.start_ns + 1000000000LL, s, 8, &n, err, sizeof err);
    assert_int_equal(n, 3);
    const gp_sample *g0 = find(s, n, "dmon-gpu-0"), *ci = find(s, n, "dmon-gpu-ci-3");
    /* the second iteration's GPU 0 row: util 60; its bad SMACT keeps the first row's 0.5 */
    assert_true(fabs(g0->gpu_util - 0.6) < 1e-12);
    assert_true(fabs(g0->sm_active - 0.5) < 1e-12);
    assert_true(fabs(ci->sm_active - 0.05) < 1e-12);
    assert_false(ci->valid & GP_F_MEM_USED);
    gp_source_close(&src);
    free(p);

    p = write_log("empty.log", "nothing here\n");
    snprintf(spec, sizeof spec, "dmon:%s", p);
    assert_int_not_equal(gp_source_open(spec, &o, &src, err, sizeof err), 0);
    assert_non_null(strstr(err, "no dcgmi dmon rows"));
    free(p);
}

int main(void) {
    dir = gp_test_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_custom_fields),
        cmocka_unit_test(test_mig_and_warnings),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0 && rc == 0) rc = 1;
    free(dir);
    return rc;
}
