/* test_dmon.c: `dcgmi dmon` log replay (src/sources/dmon.c). Real captures from NVIDIA/DCGM
 * issue threads (tests/data/dmon/, tests/data/SOURCES.md) and logs written here in
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

/* Opens a real dcgmi dmon capture from tests/data/dmon/ (see tests/data/SOURCES.md), with its
 * warnings captured into w; returns gp_source_open's result. */
static int open_capture(const char *name, gp_source *src, char *err, size_t errlen, char *w,
                        size_t wcap) {
    char spec[700], wpath[600];
    snprintf(spec, sizeof spec, "dmon:tests/data/dmon/%s", name);
    gp_source_opts o = {.start_ns = 1767225600LL * 1000000000LL, .interval_ns = 1000000000LL};
    snprintf(wpath, sizeof wpath, "%s/warn-%s.txt", dir, name);
    fflush(stderr);
    FILE *saved = fdopen(dup(fileno(stderr)), "w");
    assert_non_null(freopen(wpath, "w", stderr));
    int rc = gp_source_open(spec, &o, src, err, errlen);
    fflush(stderr);
    dup2(fileno(saved), fileno(stderr));
    fclose(saved);
    FILE *wf = fopen(wpath, "r");
    size_t wn = fread(w, 1, wcap - 1, wf);
    w[wn] = 0;
    fclose(wf);
    return rc;
}

/* Real captures. 8 GPUs, profiling fields, the first iteration all N/A (DCGM issue 244): N/A
 * stays unknown, the second iteration's values are the capture's; GRACT, which goodput has no
 * field for, is named once. */
static void test_real_8gpu_profiling(void **st) {
    (void)st;
    gp_source src;
    char err[512] = "", w[4096];
    assert_int_equal(open_capture("dcgm244_8gpu_prof.log", &src, err, sizeof err, w, sizeof w), 0);
    assert_non_null(strstr(w, "dcgm244_8gpu_prof.log:1: column GRACT is not one"));
    assert_null(strstr(w, "SMACT")); /* the columns it reads are not warned about */
    gp_device dev[16];
    size_t nd = 0;
    assert_int_equal(src.ops->list_devices(src.state, dev, 16, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 8);
    assert_string_equal(dev[7].uuid, "dmon-gpu-7");
    int64_t t0 = 1767225600LL * 1000000000LL;
    gp_sample s[16];
    size_t n = 0;
    assert_int_equal(src.ops->sample(src.state, t0, s, 16, &n, err, sizeof err), 0);
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(s[i].valid & (GP_F_SM_ACTIVE | GP_F_TENSOR_ACTIVE | GP_F_DRAM_ACTIVE), 0);
    assert_int_equal(src.ops->sample(src.state, t0 + 1000000000LL, s, 16, &n, err, sizeof err), 0);
    const gp_sample *g0 = find(s, n, "dmon-gpu-0"), *g1 = find(s, n, "dmon-gpu-1");
    assert_non_null(g0);
    assert_non_null(g1);
    /* GPU 0: GRACT 0.888 (not read), TENSO 0.178, FP16A 0.001, the rest N/A */
    assert_true(fabs(g0->tensor_active - 0.178) < 1e-12);
    assert_true(fabs(g0->fp16_active - 0.001) < 1e-12);
    assert_false(g0->valid & GP_F_SM_ACTIVE);
    /* GPU 1: SMACT 0.777, FP64A 0.000, FP32A 0.046 */
    assert_true(fabs(g1->sm_active - 0.777) < 1e-12);
    assert_true((g1->valid & GP_F_FP64_ACTIVE) && g1->fp64_active == 0);
    assert_true(fabs(g1->fp32_active - 0.046) < 1e-12);
    assert_false(g1->valid & GP_F_TENSOR_ACTIVE);
    gp_source_close(&src);
}

/* MIG instances of a group (-g 35) with no GPU row printed (DCGM issue 151): seven GPU-I
 * devices with no parent (the log names none), values as captured. */
static void test_real_mig_instances(void **st) {
    (void)st;
    gp_source src;
    char err[512] = "", w[4096];
    assert_int_equal(open_capture("dcgm151_mig_instances.log", &src, err, sizeof err, w, sizeof w),
                     0);
    gp_device dev[16];
    size_t nd = 0;
    assert_int_equal(src.ops->list_devices(src.state, dev, 16, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 7);
    assert_string_equal(dev[5].uuid, "dmon-gpu-i-28");
    for (size_t i = 0; i < nd; i++)
        assert_string_equal(dev[i].parent_uuid, "");
    gp_sample s[16];
    size_t n = 0;
    assert_int_equal(
        src.ops->sample(src.state, 1767225600LL * 1000000000LL, s, 16, &n, err, sizeof err), 0);
    assert_int_equal(n, 7);
    const gp_sample *i28 = find(s, n, "dmon-gpu-i-28"), *i21 = find(s, n, "dmon-gpu-i-21");
    assert_true(fabs(i28->sm_active - 0.987) < 1e-12);
    assert_true(fabs(i28->sm_occupancy - 0.123) < 1e-12);
    assert_true(fabs(i28->tensor_active - 0.940) < 1e-12);
    assert_true((i21->valid & GP_F_SM_ACTIVE) && i21->sm_active == 0); /* 0.000 is a reading */
    gp_source_close(&src);
}

/* Twelve NVLink counters goodput has no field for (DCGM issue 265): one warning naming all. */
static void test_real_unread_columns_once(void **st) {
    (void)st;
    gp_source src;
    char err[512] = "", w[4096];
    assert_int_equal(open_capture("dcgm265_nvlink_fields.log", &src, err, sizeof err, w, sizeof w),
                     0);
    assert_non_null(strstr(w, "dcgm265_nvlink_fields.log:1: columns NLXMITP, NLXMITB, NLRCVP, "
                              "NLRCVB, NLMALP, NLBUFO, NLRCVE, NLRCVRE, NLRCVGE, NLLLIE, NLXMITD, "
                              "NLLRS are not ones goodput maps to sample fields; ignored\n"));
    assert_null(strstr(w + 1, "dmon:")); /* that one line is the only warning */
    gp_source_close(&src);
}

/* dcgmi's own failure (DCGM issue 3, dcgmi of 2021: "# Entity" / "Id" header): no rows, and
 * the error says what dcgmi printed rather than "not a dmon log". The lines dcgmi prints when
 * stopped with Ctrl-C (quoted in DCGM issue 265) are not rows either, and not warned about. */
static void test_real_dcgmi_error_and_trailer(void **st) {
    (void)st;
    gp_source src;
    char err[512] = "", w[4096];
    assert_int_not_equal(
        open_capture("dcgm3_old_header_error.log", &src, err, sizeof err, w, sizeof w), 0);
    assert_non_null(strstr(err, "no rows; dcgmi printed: Error setting watches. Result: The "
                                "third-party Profiling module returned an unrecoverable error"));
    char *p = write_log("trailer.log", "# Entity  TENSO\n"
                                       "      Id\n"
                                       "GPU 0     0.250\n"
                                       "^C\n"
                                       "\n"
                                       "dmon was stopped due to receiving a signal\n");
    char spec[700], wpath[600];
    snprintf(spec, sizeof spec, "dmon:%s", p);
    snprintf(wpath, sizeof wpath, "%s/warn-trailer.txt", dir);
    gp_source_opts o = {.start_ns = 1767225600LL * 1000000000LL, .interval_ns = 1000000000LL};
    fflush(stderr);
    FILE *saved = fdopen(dup(fileno(stderr)), "w");
    assert_non_null(freopen(wpath, "w", stderr));
    int rc = gp_source_open(spec, &o, &src, err, sizeof err);
    fflush(stderr);
    dup2(fileno(saved), fileno(stderr));
    fclose(saved);
    assert_int_equal(rc, 0);
    FILE *wf = fopen(wpath, "r");
    assert_int_equal(fread(w, 1, sizeof w - 1, wf), 0); /* no warning at all */
    fclose(wf);
    gp_sample s[4];
    size_t n = 0;
    assert_int_equal(src.ops->sample(src.state, o.start_ns, s, 4, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_true(fabs(s[0].tensor_active - 0.25) < 1e-12);
    gp_source_close(&src);
    free(p);
}

int main(void) {
    dir = gp_test_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_custom_fields),
        cmocka_unit_test(test_mig_and_warnings),
        cmocka_unit_test(test_real_8gpu_profiling),
        cmocka_unit_test(test_real_mig_instances),
        cmocka_unit_test(test_real_unread_columns_once),
        cmocka_unit_test(test_real_dcgmi_error_and_trailer),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0 && rc == 0) rc = 1;
    free(dir);
    return rc;
}
