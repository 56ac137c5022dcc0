/* test_nvml.c: the NVML backend end to end through the test libnvidia-ml.so.1
 * (tests/shlib), whose answers come from the simulator running examples/scenarios/demo.conf
 * (8 x H100-SXM with profiling). The library's own test hooks hand back the simulator's
 * sample behind each answer: the backend's reading must equal it after NVML's unit
 * conversions (mW, whole percent, whole MHz and degrees, KiB for NVLink).
 *
 * Each test sets the library's environment, opens the source (which dlopens the library
 * and calls nvmlInit_v2), and closes it (which unloads it), so tests do not share state. */
#include "testutil.h"

#include <dlfcn.h>

#include "sources/source.h"

extern const gp_source_ops gp_source_nvml;

#define S 1000000000LL
static char libpath[512];

typedef void (*set_time_fn)(int64_t);
typedef int (*truth_fn)(unsigned int, gp_sample *);
typedef size_t (*truth_procs_fn)(gp_proc_sample *, size_t);
static set_time_fn set_time;
static truth_fn truth;
static truth_procs_fn truth_procs;

static void clear_env(void) {
    static const char *vars[] = {"GOODPUT_FAKE_NVML_INIT_ERROR",  "GOODPUT_FAKE_NVML_COUNT",
                                 "GOODPUT_FAKE_NVML_UNSUPPORTED", "GOODPUT_FAKE_NVML_LOST",
                                 "GOODPUT_FAKE_NVML_XID",         "GOODPUT_FAKE_NVML_MIG",
                                 "GOODPUT_FAKE_NVML_BOGUS_PROC"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    setenv("GOODPUT_NVML_LIBRARY", libpath, 1);
    setenv("GOODPUT_FAKE_NVML_SCENARIO", "examples/scenarios/demo.conf", 1);
    setenv("GOODPUT_FAKE_NVML_CLOCK", "manual", 1);
}

static int group_setup(void **st) {
    (void)st;
    const char *b = getenv("BUILD");
    snprintf(libpath, sizeof libpath, "./%s/tests/lib/libnvidia-ml.so.1", b ? b : "build");
    if (access(libpath, R_OK) != 0) {
        fprintf(stderr, "test library %s not built\n", libpath);
        return -1;
    }
    return 0;
}

static void *open_nvml(void) {
    void *s = NULL;
    char err[512];
    gp_source_opts o = {.interval_ns = S};
    if (gp_source_nvml.open("", &o, &s, err, sizeof err) < 0) fail_msg("%s", err);
    /* The library is loaded now: borrow its test hooks (refcount back to one at once). */
    void *h = dlopen(libpath, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    set_time = (set_time_fn)dlsym(h, "gp_fake_nvml_set_time");
    truth = (truth_fn)dlsym(h, "gp_fake_nvml_truth");
    truth_procs = (truth_procs_fn)dlsym(h, "gp_fake_nvml_truth_procs");
    dlclose(h);
    assert_non_null(set_time);
    return s;
}

static size_t sample_at(void *s, int64_t t, gp_sample *out, size_t cap) {
    set_time(t);
    size_t n;
    char err[256];
    assert_int_equal(gp_source_nvml.sample(s, t, out, cap, &n, err, sizeof err), 0);
    return n;
}

static const gp_sample *by_uuid(const gp_sample *x, size_t n, const char *uuid) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(x[i].uuid, uuid)) return &x[i];
    return NULL;
}

static void test_discovery_and_every_field(void **st) {
    (void)st;
    clear_env();
    void *s = open_nvml();
    gp_device d[16];
    size_t nd;
    char err[256];
    assert_int_equal(gp_source_nvml.list_devices(s, d, 16, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 8);
    for (size_t i = 0; i < nd; i++) {
        gp_sample t;
        assert_int_equal(truth((unsigned)i, &t), 0);
        assert_string_equal(d[i].uuid, t.uuid);
        assert_int_equal(d[i].index, (int)i);
        assert_non_null(d[i].spec);
        assert_string_equal(d[i].spec->model, "H100-SXM");
        assert_true(d[i].memory_total_bytes > 0);
        assert_int_equal(d[i].mig_mode, 0);
        assert_true(strlen(d[i].pci_bus_id) > 8);
    }
    gp_sample x[16];
    size_t n = sample_at(s, 10 * S, x, 16);
    assert_int_equal(n, 8);
    n = sample_at(s, 20 * S, x, 16); /* the second sample also has GPM metrics */
    assert_int_equal(n, 8);
    for (unsigned i = 0; i < 8; i++) {
        gp_sample t;
        truth(i, &t);
        const gp_sample *g = by_uuid(x, n, t.uuid);
        assert_non_null(g);
        assert_int_equal(g->ts_ns, 20 * S);
        assert_near(g->gpu_util, round(t.gpu_util * 100) / 100, 1e-12);
        assert_int_equal(g->mem_used_bytes, t.mem_used_bytes);
        assert_int_equal(g->mem_total_bytes, t.mem_total_bytes);
        assert_near(g->power_w, llround(t.power_w * 1000) / 1000.0, 1e-12);
        assert_int_equal(g->energy_mj, t.energy_mj);
        assert_near(g->sm_clock_mhz, lround(t.sm_clock_mhz), 0);
        assert_near(g->mem_clock_mhz, lround(t.mem_clock_mhz), 0);
        assert_near(g->temp_c, lround(t.temp_c), 0);
        assert_int_equal(g->throttle_reasons, t.throttle_reasons);
        assert_int_equal(g->pcie_tx_bytes, t.pcie_tx_bytes);
        assert_int_equal(g->pcie_rx_bytes, t.pcie_rx_bytes);
        assert_int_equal(g->nvlink_tx_bytes, t.nvlink_tx_bytes / 1024 * 1024);
        assert_int_equal(g->nvlink_rx_bytes, t.nvlink_rx_bytes / 1024 * 1024);
        assert_true(gp_has(g->valid, GP_F_XID));
        assert_int_equal(g->xid, 0);
        /* GPM: ratios from the second of two samples */
        assert_true(gp_has(g->valid, GP_F_SM_ACTIVE | GP_F_SM_OCCUPANCY | GP_F_TENSOR_ACTIVE |
                                         GP_F_DRAM_ACTIVE));
        assert_near(g->sm_active, t.sm_active, 1e-9);
        assert_near(g->sm_occupancy, t.sm_occupancy, 1e-9);
        assert_near(g->tensor_active, t.tensor_active, 1e-9);
        assert_near(g->dram_active, t.dram_active, 1e-9);
        if (gp_has(t.valid, GP_F_FP16_ACTIVE)) assert_near(g->fp16_active, t.fp16_active, 1e-9);
    }
    gp_source_nvml.close(s);
}

static void test_processes(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_FAKE_NVML_BOGUS_PROC", "1", 1); /* 250% and stale samples must go */
    void *s = open_nvml();
    gp_sample x[16];
    for (int k = 1; k <= 3; k++)
        sample_at(s, k * 30 * S, x, 16);
    gp_proc_sample p[256], t[256];
    size_t np, nt = truth_procs(t, 256);
    char err[256];
    assert_int_equal(gp_source_nvml.list_processes(s, p, 256, &np, err, sizeof err), 0);
    assert_true(nt > 0);
    assert_int_equal(np, nt);
    for (size_t i = 0; i < nt; i++) {
        int found = 0;
        for (size_t j = 0; j < np; j++) {
            if (p[j].pid != t[i].pid || strcmp(p[j].uuid, t[i].uuid)) continue;
            found = 1;
            assert_int_equal(gp_has(p[j].valid, GP_P_MEM), gp_has(t[i].valid, GP_P_MEM));
            if (gp_has(t[i].valid, GP_P_MEM)) assert_int_equal(p[j].mem_bytes, t[i].mem_bytes);
            assert_int_equal(gp_has(p[j].valid, GP_P_SM_SHARE), gp_has(t[i].valid, GP_P_SM_SHARE));
            if (gp_has(t[i].valid, GP_P_SM_SHARE))
                assert_near(p[j].sm_share, round(t[i].sm_share * 100) / 100, 1e-12);
            assert_int_equal(p[j].ts_ns, 90 * S);
        }
        assert_true(found);
    }
    gp_source_nvml.close(s);
}

static void test_xid_events(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_FAKE_NVML_XID", "2:5:79,0:12:48", 1);
    void *s = open_nvml();
    gp_device d[16];
    size_t nd;
    char err[256];
    gp_source_nvml.list_devices(s, d, 16, &nd, err, sizeof err);
    gp_sample x[16];
    size_t n = sample_at(s, 4 * S, x, 16);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(x[i].xid, 0);
    n = sample_at(s, 6 * S, x, 16);
    assert_int_equal(by_uuid(x, n, d[2].uuid)->xid, 79);
    assert_int_equal(by_uuid(x, n, d[0].uuid)->xid, 0);
    n = sample_at(s, 13 * S, x, 16);
    assert_int_equal(by_uuid(x, n, d[2].uuid)->xid, 0); /* said once, in its interval */
    assert_int_equal(by_uuid(x, n, d[0].uuid)->xid, 48);
    gp_source_nvml.close(s);
}

static void test_gpu_lost_and_back(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_FAKE_NVML_LOST", "1:5:8", 1);
    void *s = open_nvml();
    gp_device d[16];
    size_t nd;
    char err[256];
    gp_source_nvml.list_devices(s, d, 16, &nd, err, sizeof err);
    gp_sample x[16];
    assert_int_equal(sample_at(s, 4 * S, x, 16), 8);
    size_t n = sample_at(s, 6 * S, x, 16);
    assert_int_equal(n, 7);
    assert_null(by_uuid(x, n, d[1].uuid));
    assert_int_equal(sample_at(s, 7 * S, x, 16), 7);
    n = sample_at(s, 9 * S, x, 16);
    assert_int_equal(n, 8);
    assert_non_null(by_uuid(x, n, d[1].uuid));
    assert_true(gp_has(by_uuid(x, n, d[1].uuid)->valid, GP_F_ENERGY | GP_F_GPU_UTIL));
    gp_source_nvml.close(s);
}

static void test_not_supported_fields_stay_unknown(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_FAKE_NVML_UNSUPPORTED", "power,energy,temp,gpm,fields,putil,events", 1);
    void *s = open_nvml();
    gp_sample x[16];
    sample_at(s, 10 * S, x, 16);
    size_t n = sample_at(s, 20 * S, x, 16);
    assert_int_equal(n, 8);
    uint32_t gone = GP_F_POWER | GP_F_ENERGY | GP_F_TEMP | GP_F_SM_ACTIVE | GP_F_TENSOR_ACTIVE |
                    GP_F_PCIE_TX | GP_F_NVLINK_TX | GP_F_XID;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(x[i].valid & gone, 0);
        assert_true(
            gp_has(x[i].valid, GP_F_GPU_UTIL | GP_F_MEM_USED | GP_F_SM_CLOCK | GP_F_THROTTLE));
    }
    gp_proc_sample p[256];
    size_t np;
    char err[256];
    gp_source_nvml.list_processes(s, p, 256, &np, err, sizeof err);
    for (size_t i = 0; i < np; i++)
        assert_false(gp_has(p[i].valid, GP_P_SM_SHARE));
    gp_source_nvml.close(s);
}

static void test_mig_instances(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_FAKE_NVML_MIG", "3:2", 1);
    void *s = open_nvml();
    gp_device d[16];
    size_t nd;
    char err[256];
    gp_source_nvml.list_devices(s, d, 16, &nd, err, sizeof err);
    assert_int_equal(nd, 10);
    const gp_device *parent = NULL;
    int migs = 0;
    for (size_t i = 0; i < nd; i++) {
        if (d[i].index == 3 && !d[i].parent_uuid[0]) parent = &d[i];
        if (d[i].parent_uuid[0]) migs++;
    }
    assert_non_null(parent);
    assert_int_equal(parent->mig_mode, 1);
    assert_int_equal(migs, 2);
    gp_sample x[16];
    sample_at(s, 10 * S, x, 16);
    size_t n = sample_at(s, 20 * S, x, 16);
    assert_int_equal(n, 10);
    gp_sample t;
    truth(3, &t);
    for (size_t i = 0; i < nd; i++) {
        if (!d[i].parent_uuid[0]) continue;
        assert_string_equal(d[i].parent_uuid, parent->uuid);
        assert_true(!strncmp(d[i].uuid, "MIG-", 4));
        const gp_sample *m = by_uuid(x, n, d[i].uuid);
        assert_non_null(m);
        assert_int_equal(m->mem_total_bytes, t.mem_total_bytes / 2);
        assert_false(gp_has(m->valid, GP_F_POWER)); /* per-GPU readings stay on the parent */
        assert_near(m->sm_active, t.sm_active, 1e-9);
    }
    gp_source_nvml.close(s);
}

static void expect_open_error(const char *needle) {
    void *s = NULL;
    char err[512] = "";
    gp_source_opts o = {.interval_ns = S};
    if (gp_source_nvml.open("", &o, &s, err, sizeof err) >= 0) fail_msg("opened");
    if (!strstr(err, needle)) fail_msg("'%s' lacks '%s'", err, needle);
    assert_null(strchr(err, '\n'));
}

static void test_no_driver_and_init_failure(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    expect_open_error("nvml: cannot load /nonexistent/libnvidia-ml.so.1, so no NVIDIA driver");
    clear_env();
    setenv("GOODPUT_FAKE_NVML_INIT_ERROR", "9", 1);
    expect_open_error("nvml: nvmlInit_v2 failed: Driver Not Loaded (NVML error 9)");
    clear_env();
    setenv("GOODPUT_NVML_LIBRARY", "libc.so.6", 1); /* loads, but is no NVML */
    expect_open_error("lacks nvmlInit_v2");
}

static void test_no_gpus(void **st) {
    (void)st;
    clear_env();
    setenv("GOODPUT_FAKE_NVML_COUNT", "0", 1);
    void *s = open_nvml();
    gp_device d[4];
    size_t nd = 9;
    char err[256];
    assert_int_equal(gp_source_nvml.list_devices(s, d, 4, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 0);
    gp_sample x[4];
    assert_int_equal(sample_at(s, 5 * S, x, 4), 0);
    gp_source_nvml.close(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovery_and_every_field),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_xid_events),
        cmocka_unit_test(test_gpu_lost_and_back),
        cmocka_unit_test(test_not_supported_fields_stay_unknown),
        cmocka_unit_test(test_mig_instances),
        cmocka_unit_test(test_no_driver_and_init_failure),
        cmocka_unit_test(test_no_gpus),
    };
    if (group_setup(NULL) < 0) {
        printf("skip: the test library is not built (make %s/tests/lib/libnvidia-ml.so.1)\n",
               getenv("BUILD") ? getenv("BUILD") : "build");
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
