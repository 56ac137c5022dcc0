/* test_smi.c: the nvidia-smi log source against every capture in shared/data/smi.
 *
 * nvidia_gpu_exporter captures: the exporter's own expected Prometheus outputs shipped
 * beside each capture (<capture>__idle.metrics, __load.metrics) are the oracle for the
 * query-gpu CSV rows; a field is either known and equal to the exporter's value, or
 * unknown exactly when the exporter has no value for it.
 * telegraf XML files: the values in influxdata/telegraf
 * plugins/inputs/nvidia_smi/nvidia_smi_test.go at commit
 * b27263146617cefe16c0b300107b58b111a7fa57 (TestGatherValidXML cases "Tesla T4",
 * "A100-SXM4 schema v12", "RTX 4000 SFF Ada schema v13"). */
#include "testutil.h"

#include "sources/smi.h"
#include "sources/source.h"
#include "util/promtext.h"

extern const gp_source_ops gp_source_smi;

static const char *captures[] = {
    "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05",
    "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01",
    "linux-x86_64__nvidia-l40s__595.80",
};

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

/* The body of the section whose banner line starts with "# <banner>", up to the next
 * "####" line. Caller frees. */
static char *section(const char *text, const char *banner) {
    char key[128];
    snprintf(key, sizeof key, "\n# %s", banner);
    const char *s = strstr(text, key);
    if (!s) fail_msg("no section %s", banner);
    s = strstr(s + 1, "\n####"); /* the banner's closing rule */
    s = strchr(s + 1, '\n') + 1;
    const char *e = strstr(s, "\n####");
    if (!e) e = s + strlen(s);
    return strndup(s, (size_t)(e - s));
}

/* Expected values from the exporter's .metrics: metric name -> value (uuid-labelled
 * ones), plus gpu_info labels and per-pid app memory. */
typedef struct {
    char names[256][96];
    double values[256];
    int n;
    char info_name[96], info_bus[32], info_uuid[96];
    long long pids[16];
    double pid_mem[16];
    int npids;
} expected;

static int on_metric(void *ctx, const gp_prom_sample *s) {
    expected *x = ctx;
    if (!strcmp(s->name, "nvidia_smi_gpu_info")) {
        for (size_t i = 0; i < s->nlabels; i++) {
            if (!strcmp(s->labels[i].name, "name"))
                snprintf(x->info_name, sizeof x->info_name, "%s", s->labels[i].value);
            if (!strcmp(s->labels[i].name, "pci_bus_id"))
                snprintf(x->info_bus, sizeof x->info_bus, "%s", s->labels[i].value);
            if (!strcmp(s->labels[i].name, "uuid"))
                snprintf(x->info_uuid, sizeof x->info_uuid, "%s", s->labels[i].value);
        }
        return 0;
    }
    if (!strcmp(s->name, "nvidia_smi_compute_app_used_memory_bytes") && x->npids < 16) {
        for (size_t i = 0; i < s->nlabels; i++)
            if (!strcmp(s->labels[i].name, "pid")) x->pids[x->npids] = atoll(s->labels[i].value);
        x->pid_mem[x->npids++] = s->value;
        return 0;
    }
    if (x->n < 256) {
        snprintf(x->names[x->n], sizeof x->names[0], "%s", s->name);
        x->values[x->n++] = s->value;
    }
    return 0;
}

static int find(const expected *x, const char *name, double *v) {
    for (int i = 0; i < x->n; i++)
        if (!strcmp(x->names[i], name)) {
            *v = x->values[i];
            return 1;
        }
    return 0;
}

/* Known and equal, or unknown exactly when the exporter has no value. */
static void check(const expected *x, const char *metric, const gp_sample *s, uint32_t f,
                  double ours, double scale, double tol) {
    double want;
    int has = find(x, metric, &want);
    if (has != gp_has(s->valid, f))
        fail_msg("%s: exporter %s a value, we %s", metric, has ? "has" : "has no",
                 gp_has(s->valid, f) ? "have one" : "have none");
    if (has) assert_near(ours * scale, want, tol);
}

static void check_capture_section(const char *cap, const char *which) {
    char path[512];
    size_t len;
    snprintf(path, sizeof path, "%s/smi/nvidia_gpu_exporter/%s.txt", gp_test_data_dir(), cap);
    char *text = slurp(path, &len);
    char banner[64];
    snprintf(banner, sizeof banner, "%s :: query-gpu", which);
    char *csv = section(text, banner);
    snprintf(banner, sizeof banner, "%s :: query-compute-apps", which);
    char *apps = section(text, banner);
    size_t blen = strlen(csv) + strlen(apps) + 2;
    char *both = malloc(blen);
    snprintf(both, blen, "%s\n%s", csv, apps);

    gp_smi_log log;
    char err[512];
    if (gp_smi_parse(cap, both, strlen(both), &log, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(log.nsamples, 1);
    assert_int_equal(log.ndevices, 1);

    expected x;
    memset(&x, 0, sizeof x);
    snprintf(path, sizeof path, "%s/smi/nvidia_gpu_exporter/%s__%s.metrics", gp_test_data_dir(),
             cap, which);
    char *m = slurp(path, &len);
    assert_int_equal(gp_prom_parse(m, len, on_metric, NULL, &x, 0, err, sizeof err), 0);

    const gp_sample *s = &log.samples[0];
    const gp_device *d = &log.devices[0];
    check(&x, "nvidia_smi_utilization_gpu_ratio", s, GP_F_GPU_UTIL, s->gpu_util, 1, 1e-9);
    check(&x, "nvidia_smi_utilization_memory_ratio", s, GP_F_MEM_UTIL, s->mem_util, 1, 1e-9);
    check(&x, "nvidia_smi_memory_used_bytes", s, GP_F_MEM_USED, (double)s->mem_used_bytes, 1, 0.5);
    check(&x, "nvidia_smi_memory_total_bytes", s, GP_F_MEM_TOTAL, (double)s->mem_total_bytes, 1,
          0.5);
    check(&x, "nvidia_smi_power_draw_watts", s, GP_F_POWER, s->power_w, 1, 1e-9);
    check(&x, "nvidia_smi_temperature_gpu", s, GP_F_TEMP, s->temp_c, 1, 1e-9);
    check(&x, "nvidia_smi_clocks_current_sm_clock_hz", s, GP_F_SM_CLOCK, s->sm_clock_mhz, 1e6, 0.5);
    check(&x, "nvidia_smi_clocks_current_memory_clock_hz", s, GP_F_MEM_CLOCK, s->mem_clock_mhz, 1e6,
          0.5);
    check(&x, "nvidia_smi_clocks_event_reasons_active", s, GP_F_THROTTLE,
          (double)s->throttle_reasons, 1, 0);
    double mig;
    if (find(&x, "nvidia_smi_mig_mode_current", &mig))
        assert_int_equal(d->mig_mode, (int)mig);
    else
        assert_int_equal(d->mig_mode, -1);
    assert_string_equal(d->name, x.info_name);
    assert_string_equal(d->pci_bus_id, x.info_bus);
    assert_true(!strncmp(d->uuid, "GPU-", 4));
    assert_string_equal(d->uuid + 4, x.info_uuid); /* the exporter drops "GPU-" */
    assert_int_equal(d->memory_total_bytes, s->mem_total_bytes);

    assert_int_equal((int)log.nprocs, x.npids);
    for (int i = 0; i < x.npids; i++) {
        int found = 0;
        for (size_t k = 0; k < log.nprocs; k++)
            if (log.procs[k].pid == x.pids[i]) {
                found = 1;
                assert_true(gp_has(log.procs[k].valid, GP_P_MEM));
                assert_near((double)log.procs[k].mem_bytes, x.pid_mem[i], 0.5);
                assert_string_equal(log.procs[k].uuid, d->uuid);
            }
        assert_true(found);
    }
    gp_smi_log_free(&log);
    free(m);
    free(both);
    free(apps);
    free(csv);
    free(text);
}

static void test_exporter_captures_query_gpu(void **st) {
    (void)st;
    for (size_t i = 0; i < sizeof captures / sizeof captures[0]; i++) {
        check_capture_section(captures[i], "idle");
        check_capture_section(captures[i], "load");
    }
}

static int count_data_rows(const char *body) {
    int n = 0;
    for (const char *l = body; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        while (*l == ' ')
            l++;
        if (*l >= '0' && *l <= '9') n++;
    }
    return n;
}

/* The whole capture file (both sections, plus dmon/pmon and text we skip) replays:
 * 2 query-gpu rows + one per dmon row, dmon rows land on the GPU's UUID (learnt from the
 * CSV), one second apart, after the section's CSV time. */
static void test_whole_capture_with_dmon_pmon(void **st) {
    (void)st;
    for (size_t i = 0; i < sizeof captures / sizeof captures[0]; i++) {
        char path[512];
        size_t len;
        snprintf(path, sizeof path, "%s/smi/nvidia_gpu_exporter/%s.txt", gp_test_data_dir(),
                 captures[i]);
        char *text = slurp(path, &len);
        char *d1 = section(text, "idle :: dmon"), *d2 = section(text, "load :: dmon");
        char *p1 = section(text, "idle :: pmon"), *p2 = section(text, "load :: pmon");
        int dmon_rows = count_data_rows(d1) + count_data_rows(d2);
        int pmon_rows = 0;
        for (char *p = p1; p; p = p == p1 ? p2 : NULL)
            for (const char *l = p; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                long g, pid;
                if (sscanf(l, " %ld %ld", &g, &pid) == 2) pmon_rows++;
            }
        gp_smi_log log;
        char err[512];
        if (gp_smi_load(path, &log, err, sizeof err) < 0) fail_msg("%s", err);
        assert_int_equal(log.ndevices, 1);
        assert_int_equal((int)log.nsamples, 2 + dmon_rows);
        int dmon_seen = 0;
        int64_t prev = 0;
        for (size_t k = 0; k < log.nsamples; k++) {
            assert_string_equal(log.samples[k].uuid, log.devices[0].uuid);
            if (!gp_has(log.samples[k].valid, GP_F_MEM_TOTAL)) { /* a dmon row */
                if (dmon_seen % 5) assert_int_equal(log.samples[k].ts_ns - prev, 1000000000LL);
                prev = log.samples[k].ts_ns;
                dmon_seen++;
                assert_true(gp_has(log.samples[k].valid, GP_F_POWER | GP_F_TEMP | GP_F_SM_CLOCK));
                assert_true(log.samples[k].gpu_util >= 0 && log.samples[k].gpu_util <= 1);
            }
        }
        assert_int_equal(dmon_seen, dmon_rows);
        /* compute-apps rows + pmon rows with a pid */
        int apps = 0;
        for (size_t k = 0; k < log.nprocs; k++)
            if (gp_has(log.procs[k].valid, GP_P_MEM)) apps++;
        assert_int_equal((int)log.nprocs - apps, pmon_rows);
        gp_smi_log_free(&log);
        free(d1), free(d2), free(p1), free(p2), free(text);
    }
}

static void load_xml(const char *file, gp_smi_log *log) {
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/smi/telegraf/%s", gp_test_data_dir(), file);
    if (gp_smi_load(path, log, err, sizeof err) < 0) fail_msg("%s", err);
}

#define MIB 1048576.0

/* telegraf "Tesla T4": power_draw 26.78, memory_total 15360, memory_used 1032 (MiB),
 * temperature_gpu 40, utilization_gpu 0, utilization_memory 0, clocks_current_sm 585,
 * clocks_current_memory 5000, every clocks_event_reason_* 0; 2 processes (pid 675 22 MiB,
 * pid 5762 1005 MiB: the XML's process_info, which telegraf's v11 case does not assert). */
static void test_telegraf_t4(void **st) {
    (void)st;
    gp_smi_log log;
    load_xml("tesla-t4.xml", &log);
    assert_int_equal(log.ndevices, 1);
    assert_int_equal(log.nsamples, 1);
    const gp_sample *s = &log.samples[0];
    assert_string_equal(s->uuid, "GPU-d37e67a5-91dd-3774-a5cb-99096249601a");
    assert_string_equal(log.devices[0].name, "Tesla T4");
    assert_non_null(log.devices[0].spec);
    assert_string_equal(log.devices[0].spec->model, "T4");
    assert_near(s->power_w, 26.78, 1e-9);
    assert_near((double)s->mem_total_bytes, 15360 * MIB, 0);
    assert_near((double)s->mem_used_bytes, 1032 * MIB, 0);
    assert_near(s->temp_c, 40, 0);
    assert_true(gp_has(s->valid, GP_F_GPU_UTIL | GP_F_MEM_UTIL | GP_F_THROTTLE));
    assert_near(s->gpu_util, 0, 0);
    assert_near(s->mem_util, 0, 0);
    assert_near(s->sm_clock_mhz, 585, 0);
    assert_near(s->mem_clock_mhz, 5000, 0);
    assert_int_equal(s->throttle_reasons, 0);
    assert_int_equal(log.devices[0].mig_mode, -1); /* N/A */
    assert_int_equal(log.nprocs, 2);
    assert_int_equal(log.procs[0].pid, 675);
    assert_near((double)log.procs[0].mem_bytes, 22 * MIB, 0);
    assert_int_equal(log.procs[1].pid, 5762);
    assert_near((double)log.procs[1].mem_bytes, 1005 * MIB, 0);
    /* <timestamp>Mon Apr 24 16:22:39 2023</timestamp> = 1682353359 s UTC */
    assert_int_equal(s->ts_ns, 1682353359LL * 1000000000LL);
    gp_smi_log_free(&log);
}

/* telegraf "A100-SXM4 schema v12": power_draw 67.03, memory_total 81920, memory_used 50,
 * temperature_gpu 27, clocks sm 1275 / memory 1593, reasons all 0, and NO utilization_gpu
 * or utilization_memory (N/A under MIG); 4 nvidia_smi_mig metrics with gpu_index 3..6,
 * memory_fb_total 19968 and memory_fb_used 12 (MiB). */
static void test_telegraf_a100_mig(void **st) {
    (void)st;
    gp_smi_log log;
    load_xml("a100-sxm4-v12.xml", &log);
    assert_int_equal(log.ndevices, 5);
    const gp_sample *s = &log.samples[0];
    assert_string_equal(s->uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
    assert_int_equal(log.devices[0].mig_mode, 1);
    assert_near(s->power_w, 67.03, 1e-9);
    assert_near((double)s->mem_total_bytes, 81920 * MIB, 0);
    assert_near((double)s->mem_used_bytes, 50 * MIB, 0);
    assert_near(s->temp_c, 27, 0);
    assert_near(s->sm_clock_mhz, 1275, 0);
    assert_near(s->mem_clock_mhz, 1593, 0);
    assert_false(gp_has(s->valid, GP_F_GPU_UTIL));
    assert_false(gp_has(s->valid, GP_F_MEM_UTIL));
    assert_int_equal(s->throttle_reasons, 0);
    assert_string_equal(log.devices[0].spec->model, "A100-SXM4-80GB");
    for (int gi = 3; gi <= 6; gi++) {
        char uuid[128];
        snprintf(uuid, sizeof uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298/gi%d", gi);
        const gp_device *d = &log.devices[gi - 2];
        assert_string_equal(d->uuid, uuid);
        assert_string_equal(d->parent_uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
        const gp_sample *m = &log.samples[gi - 2];
        assert_string_equal(m->uuid, uuid);
        assert_near((double)m->mem_total_bytes, 19968 * MIB, 0);
        assert_near((double)m->mem_used_bytes, 12 * MIB, 0);
    }
    gp_smi_log_free(&log);
}

/* telegraf "RTX 4000 SFF Ada schema v13": power_draw 8.44 (instant; average 8.81),
 * memory_total 20475, memory_used 3534, temperature_gpu 38, utilization_gpu 0,
 * utilization_memory 37, clocks sm 210 / memory 405, clocks_event_reason_gpu_idle 1 (all
 * others 0), processes pid 1842 410 MiB, 3190 451 MiB, 4937 160 MiB, 34626 183 MiB. */
static void test_telegraf_rtx4000_v13(void **st) {
    (void)st;
    gp_smi_log log;
    load_xml("rtx-4000-sff-ada-v13.xml", &log);
    assert_int_equal(log.ndevices, 1);
    const gp_sample *s = &log.samples[0];
    assert_string_equal(s->uuid, "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026");
    assert_near(s->power_w, 8.44, 1e-9);
    assert_near((double)s->mem_total_bytes, 20475 * MIB, 0);
    assert_near((double)s->mem_used_bytes, 3534 * MIB, 0);
    assert_near(s->temp_c, 38, 0);
    assert_near(s->gpu_util, 0, 0);
    assert_near(s->mem_util, 0.37, 1e-12);
    assert_near(s->sm_clock_mhz, 210, 0);
    assert_near(s->mem_clock_mhz, 405, 0);
    assert_true(gp_has(s->valid, GP_F_THROTTLE));
    assert_int_equal(s->throttle_reasons, 0x1); /* nvmlClocksEventReasonGpuIdle */
    static const long long pids[] = {1842, 3190, 4937, 34626};
    static const double mem[] = {410, 451, 160, 183};
    assert_int_equal(log.nprocs, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(log.procs[i].pid, pids[i]);
        assert_near((double)log.procs[i].mem_bytes, mem[i] * MIB, 0);
    }
    assert_null(log.devices[0].spec); /* not in the spec table: unknown, not guessed */
    gp_smi_log_free(&log);
}

static void expect_err(const char *text, const char *msg) {
    gp_smi_log log;
    char err[512];
    if (gp_smi_parse("t.csv", text, strlen(text), &log, err, sizeof err) >= 0)
        fail_msg("accepted: %s", text);
    if (strcmp(err, msg)) fail_msg("got '%s', want '%s'", err, msg);
}

static void test_bad_input(void **st) {
    (void)st;
    expect_err("index, uuid, utilization.gpu [%]\n0, GPU-1, 5 %\n0, GPU-1\n",
               "smi: t.csv:3: expected 3 comma-separated fields as in the header, got 2");
    expect_err("index, uuid, utilization.gpu [%]\n0, GPU-1, abc\n",
               "smi: t.csv:2: field utilization.gpu: 'abc' is not a number");
    expect_err("index, uuid, memory.used [MiB]\n0, GPU-1, 12 MiB x\n",
               "smi: t.csv:2: field memory.used: '12 MiB x' is not an amount of memory");
    expect_err("# gpu pwr gtemp sm\n# Idx W C %\n 0 50 40\n",
               "smi: t.csv:3: expected 4 columns as in the header, got 3");
    expect_err("# gpu pwr gtemp sm\n 0 50 4x0 3\n",
               "smi: t.csv:2: field gtemp: '4x0' is not a number");
    expect_err("hello\nworld\n",
               "smi: t.csv: no nvidia-smi CSV header, dmon/pmon table or XML log found");
    gp_smi_log log;
    char err[512];
    /* Broken XML: libxml2's own message, with the file and a line number. */
    const char *x = "<?xml version=\"1.0\"?>\n<nvidia_smi_log>\n<gpu>\n</nvidia_smi_log>\n";
    assert_true(gp_smi_parse("t.xml", x, strlen(x), &log, err, sizeof err) < 0);
    assert_true(!strncmp(err, "smi: t.xml:", 11) && strstr(err, ": XML: ") != NULL);
    x = "<?xml version=\"1.0\"?>\n<nvidia_smi_log><gpu><uuid>GPU-1</uuid><fb_memory_usage>"
        "<used>12 parsecs</used></fb_memory_usage></gpu></nvidia_smi_log>\n";
    assert_true(gp_smi_parse("t.xml", x, strlen(x), &log, err, sizeof err) < 0);
    assert_string_equal(
        err, "smi: t.xml:2: field fb_memory_usage/used: '12 parsecs' is not an amount of memory");
    assert_true(gp_smi_load("/nonexistent/x.csv", &log, err, sizeof err) < 0);
    assert_string_equal(err, "smi: /nonexistent/x.csv: cannot open: No such file or directory");
}

/* [N/A], [Not Supported] and nounits logs. */
static void test_unknowns_and_nounits(void **st) {
    (void)st;
    const char *t =
        "timestamp, index, uuid, utilization.gpu, memory.used, power.draw, temperature.gpu\n"
        "2024/01/02 03:04:05.500, 0, GPU-a, 50, 1024, [N/A], [Not Supported]\n"
        "2024/01/02 03:04:06.500, 0, GPU-a, 75, 2048, 100.5, 60\n";
    gp_smi_log log;
    char err[512];
    if (gp_smi_parse("n.csv", t, strlen(t), &log, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(log.nsamples, 2);
    assert_near(log.samples[0].gpu_util, 0.5, 1e-12);
    assert_near((double)log.samples[0].mem_used_bytes, 1024 * MIB, 0);
    assert_false(gp_has(log.samples[0].valid, GP_F_POWER));
    assert_false(gp_has(log.samples[0].valid, GP_F_TEMP));
    assert_near(log.samples[1].power_w, 100.5, 1e-12);
    assert_int_equal(log.samples[1].ts_ns - log.samples[0].ts_ns, 1000000000LL);
    /* 2024-01-02T03:04:05.5Z */
    assert_int_equal(log.samples[0].ts_ns, 1704164645500000000LL);
    gp_smi_log_free(&log);
}

/* Through the source interface: replay steps through time and hands out each row once. */
static void test_source_replay(void **st) {
    (void)st;
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/smi/nvidia_gpu_exporter/%s.txt", gp_test_data_dir(),
             captures[1]);
    gp_source_opts o = {.speed = 0, .start_ns = 0, .interval_ns = 1000000000LL};
    void *state = NULL;
    if (gp_source_smi.open(path, &o, &state, err, sizeof err) < 0) fail_msg("%s", err);
    gp_device devs[8];
    size_t nd;
    assert_int_equal(gp_source_smi.list_devices(state, devs, 8, &nd, err, sizeof err), 0);
    assert_int_equal(nd, 1);
    int64_t end = gp_source_smi.end_ns(state);
    size_t total = 0;
    int steps = 0;
    int64_t prev = INT64_MIN;
    while (steps < 100) {
        int64_t now = gp_source_smi.now_ns(state);
        assert_true(now >= prev);
        gp_sample out[8];
        size_t n;
        assert_int_equal(gp_source_smi.sample(state, now, out, 8, &n, err, sizeof err), 0);
        total += n;
        steps++;
        if (now >= end && n == 0) break;
        prev = now;
    }
    gp_smi_log log;
    assert_int_equal(gp_smi_load(path, &log, err, sizeof err), 0);
    assert_true(total >= 2 && total <= log.nsamples);
    gp_smi_log_free(&log);
    gp_source_smi.close(state);
    assert_true(gp_source_smi.open("/nonexistent", &o, &state, err, sizeof err) < 0);
    assert_true(gp_source_smi.open("", &o, &state, err, sizeof err) < 0);
}

/* The spec table on names as drivers report them (captures, XML files, common boards). */
static void test_spec_lookup_real_names(void **st) {
    (void)st;
    static const struct {
        const char *name, *model;
    } cases[] = {
        {"NVIDIA H100 80GB HBM3", "H100-SXM"},
        {"NVIDIA H100 PCIe", "H100-PCIE"},
        {"NVIDIA H100 NVL", "H100-NVL"},
        {"NVIDIA H200", "H200"},
        {"NVIDIA L40S", "L40S"},
        {"NVIDIA L4", "L4"},
        {"Tesla T4", "T4"},
        {"NVIDIA A10G", "A10G"},
        {"Tesla V100-SXM2-32GB", "V100"},
        {"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
        {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
        {"NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"},
        {"NVIDIA GeForce RTX 4090", "RTX-4090"},
        {"NVIDIA B200", "B200"},
        {"NVIDIA GeForce RTX 4080 SUPER", NULL},
        {"NVIDIA GH200 480GB", NULL},
        {"NVIDIA RTX 4000 SFF Ada Generation", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gp_gpu_spec *sp = gp_spec_lookup(cases[i].name);
        if (!cases[i].model) {
            if (sp) fail_msg("%s matched %s", cases[i].name, sp->model);
            continue;
        }
        if (!sp) fail_msg("%s: unknown", cases[i].name);
        assert_string_equal(sp->model, cases[i].model);
    }
    int n;
    const gp_gpu_spec *t = gp_spec_table(&n);
    for (int i = 0; i < n; i++) {
        assert_true(t[i].source && strlen(t[i].source) > 10);
        assert_true(t[i].sm_count > 0 && t[i].memory_bytes > 0 && t[i].hbm_bytes_s > 0);
        assert_true(t[i].tdp_w > t[i].idle_w && t[i].fp16_flops > t[i].fp32_flops);
    }
}

/* Hostile input: mutated captures and XML never crash the parser (ASan in `make check`);
 * every failure is one line naming the file. */
static void test_mutations_do_not_crash(void **st) {
    (void)st;
    const char *files[] = {"smi/telegraf/tesla-t4.xml", "smi/nvidia_gpu_exporter/"
                                                        "linux-x86_64__nvidia-l40s__595.80.txt"};
    static const char bytes[] = ",[]<>/ \n#-0x.%";
    srand(5);
    for (int f = 0; f < 2; f++) {
        char path[512];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", gp_test_data_dir(), files[f]);
        char *b = slurp(path, &len);
        char *m = malloc(len);
        for (int k = 0; k < (f ? 150 : 300); k++) {
            memcpy(m, b, len);
            for (int j = 0; j < 1 + rand() % 6; j++)
                m[rand() % len] = bytes[rand() % (sizeof bytes - 1)];
            gp_smi_log log;
            char err[512];
            if (gp_smi_parse("m", m, (size_t)rand() % (len + 1), &log, err, sizeof err) == 0)
                gp_smi_log_free(&log);
            else {
                assert_true(!strncmp(err, "smi: m", 6));
                assert_null(strchr(err, '\n'));
            }
        }
        free(m);
        free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exporter_captures_query_gpu),
        cmocka_unit_test(test_whole_capture_with_dmon_pmon),
        cmocka_unit_test(test_telegraf_t4),
        cmocka_unit_test(test_telegraf_a100_mig),
        cmocka_unit_test(test_telegraf_rtx4000_v13),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_unknowns_and_nounits),
        cmocka_unit_test(test_source_replay),
        cmocka_unit_test(test_spec_lookup_real_names),
        cmocka_unit_test(test_mutations_do_not_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
