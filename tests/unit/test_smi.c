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

#include <time.h>
#include <unistd.h>

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

/* "2026/07/14 08:12:38.696" -> ms since the epoch, read as UTC (the captures' header zone). */
static int64_t ms_of(const char *v) {
    int Y, M, D, h, m, sec, ms;
    if (sscanf(v, "%d/%d/%d %d:%d:%d.%d", &Y, &M, &D, &h, &m, &sec, &ms) != 7) return -1;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec};
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* The timestamps (ms) of the data rows of a CSV section, in order. */
static int csv_times(const char *body, int64_t *out, int cap) {
    int n = 0;
    for (const char *l = body; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (*l >= '0' && *l <= '9' && n < cap) out[n++] = ms_of(l);
    return n;
}

typedef struct {
    int64_t ms;
    long pid; /* 0 for a device instant */
} instant;

static void add_instant(instant *set, int *n, int64_t ms, long pid) {
    for (int i = 0; i < *n; i++)
        if (set[i].ms == ms && set[i].pid == pid) return;
    set[(*n)++] = (instant){ms, pid};
}

/* The whole capture file (both sections, plus dmon/pmon and text we skip) replays. The test
 * counts instants on its own: query-gpu rows at their time; dmon and pmon rows (no time)
 * one second apart from the section's last CSV time (compute-apps, else query-gpu), a pmon
 * cycle being one row per process; compute-apps rows at their time. Rows of one instant
 * are one sample (one process row per pid), so the log holds exactly that many. */
static void test_whole_capture_with_dmon_pmon(void **st) {
    (void)st;
    for (size_t i = 0; i < sizeof captures / sizeof captures[0]; i++) {
        char path[512];
        size_t len;
        snprintf(path, sizeof path, "%s/smi/nvidia_gpu_exporter/%s.txt", gp_test_data_dir(),
                 captures[i]);
        char *text = slurp(path, &len);
        instant dev[64], proc[512];
        int ndev = 0, nproc = 0, apps_rows = 0, pmon_sm = 0;
        int64_t last_instant = 0;
        for (int sec = 0; sec < 2; sec++) {
            const char *which = sec ? "load" : "idle";
            char banner[64];
            int64_t g[8], a[32];
            snprintf(banner, sizeof banner, "%s :: query-gpu", which);
            char *body = section(text, banner);
            int ng = csv_times(body, g, 8);
            free(body);
            snprintf(banner, sizeof banner, "%s :: query-compute-apps", which);
            char *apps = section(text, banner);
            int na = csv_times(apps, a, 32);
            assert_int_equal(ng, 1);
            for (int k = 0; k < ng; k++)
                add_instant(dev, &ndev, g[k], 0);
            /* pids of the compute-apps rows */
            int k = 0;
            for (const char *l = apps; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                if (*l < '0' || *l > '9') continue;
                const char *f = l;
                for (int c = 0; c < 5; c++)
                    f = strchr(f, ',') + 1;
                add_instant(proc, &nproc, a[k++], atol(f));
                apps_rows++;
            }
            free(apps);
            int64_t base = na ? a[na - 1] : g[ng - 1];
            snprintf(banner, sizeof banner, "%s :: dmon", which);
            body = section(text, banner);
            int rows = 0;
            for (const char *l = body; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                while (*l == ' ')
                    l++;
                if (*l >= '0' && *l <= '9') add_instant(dev, &ndev, base + 1000 * rows++, 0);
            }
            assert_int_equal(rows, 5); /* dmon -c 5 */
            if (base + 4000 > last_instant) last_instant = base + 4000;
            free(body);
            snprintf(banner, sizeof banner, "%s :: pmon", which);
            body = section(text, banner);
            long pids[64];
            int npmon = 0;
            for (const char *l = body; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                long gpu, pid;
                int sm;
                if (sscanf(l, " %ld %ld", &gpu, &pid) == 2) pids[npmon++] = pid;
                if (sscanf(l, " %ld %ld %*s %d", &gpu, &pid, &sm) == 3) pmon_sm++;
            }
            for (int r = 0; r < npmon; r++)
                add_instant(proc, &nproc, base + 1000 * (r / (npmon / 5)), pids[r]);
            free(body);
        }
        gp_smi_log log;
        char err[512];
        gp_smi_opts o = {.tz = GP_SMI_TZ_FIXED, .tz_offset_s = 0};
        if (gp_smi_load_opts(path, &o, &log, err, sizeof err) < 0) fail_msg("%s", err);
        assert_int_equal(log.nwarnings, 0);
        assert_int_equal(log.ndevices, 1);
        assert_int_equal((int)log.nsamples, ndev);
        int64_t maxts = 0;
        for (size_t k = 0; k < log.nsamples; k++) {
            const gp_sample *x = &log.samples[k];
            assert_string_equal(x->uuid, log.devices[0].uuid);
            int found = 0;
            for (int d = 0; d < ndev; d++)
                found += dev[d].ms * 1000000 == x->ts_ns;
            assert_int_equal(found, 1);
            if (x->ts_ns > maxts) maxts = x->ts_ns;
            /* every instant has dmon's readings or the CSV's */
            assert_true(gp_has(x->valid, GP_F_POWER | GP_F_TEMP | GP_F_SM_CLOCK));
        }
        assert_int_equal(maxts, last_instant * 1000000);
        /* The idle CSV row and dmon's first row share an instant: one sample with the
         * CSV's memory and dmon's readings. */
        assert_true(gp_has(log.samples[0].valid, GP_F_MEM_TOTAL | GP_F_MEM_USED | GP_F_GPU_UTIL));
        assert_int_equal((int)log.nprocs, nproc);
        int with_mem = 0, with_sm = 0;
        for (size_t k = 0; k < log.nprocs; k++) {
            const gp_proc_sample *p = &log.procs[k];
            with_mem += gp_has(p->valid, GP_P_MEM);
            with_sm += gp_has(p->valid, GP_P_SM_SHARE);
            assert_true(p->name[0] != 0);
            assert_string_equal(p->job_id, ""); /* owners are the agent's business */
            if (gp_has(p->valid, GP_P_SM_SHARE)) assert_true(p->sm_share >= 0 && p->sm_share <= 1);
        }
        assert_int_equal(with_mem, apps_rows);
        assert_int_equal(with_sm, pmon_sm);
        assert_true(with_mem > 0 && with_sm > 0);
        gp_smi_log_free(&log);
        free(text);
    }
}

static void load_xml(const char *file, gp_smi_log *log) {
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/smi/telegraf/%s", gp_test_data_dir(), file);
    gp_smi_opts o = {.tz = GP_SMI_TZ_FIXED, .tz_offset_s = 0}; /* as telegraf's tests read it */
    if (gp_smi_load_opts(path, &o, log, err, sizeof err) < 0) fail_msg("%s", err);
    assert_int_equal(log->nwarnings, 0);
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
    assert_int_equal(log.nsamples, 5);
    for (int gi = 3; gi <= 6; gi++) {
        char uuid[128];
        /* v12 gives MIG devices no UUID: the legacy MIG name MIG-<parent>/<gi>/<ci> */
        snprintf(uuid, sizeof uuid, "MIG-GPU-513536b6-7d19-9063-b049-1e69664bb298/%d/0", gi);
        const gp_device *d = &log.devices[gi - 2];
        assert_string_equal(d->uuid, uuid);
        assert_string_equal(d->parent_uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
        assert_int_equal(d->mig_mode, 1);
        assert_string_equal(d->pci_bus_id, log.devices[0].pci_bus_id);
        assert_int_equal(d->index, log.devices[0].index);
        assert_int_equal(d->memory_total_bytes, 19968 * 1048576ull);
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

/* Parses text (tz=UTC) and expects exactly these warnings (one per line, in order) and
 * nsamples samples. */
static void expect_warn(const char *text, const char *warnings, size_t nsamples) {
    gp_smi_log log;
    char err[512];
    gp_smi_opts o = {.tz = GP_SMI_TZ_FIXED};
    if (gp_smi_parse_opts("t.csv", text, strlen(text), &o, &log, err, sizeof err) < 0)
        fail_msg("refused: %s", err);
    if (strcmp(log.warnings ? log.warnings : "", warnings))
        fail_msg("got '%s', want '%s'", log.warnings ? log.warnings : "", warnings);
    size_t lines = *warnings ? 1 : 0;
    for (const char *w = warnings; *w; w++)
        lines += *w == '\n';
    assert_int_equal(log.nwarnings, lines);
    assert_int_equal(log.nsamples, nsamples);
    gp_smi_log_free(&log);
}

/* Bad input inside a table: one warning naming file:line (and the column), the rest kept. */
static void test_bad_input(void **st) {
    (void)st;
    /* a capture cut mid-row */
    expect_warn("timestamp, index, uuid, utilization.gpu [%]\n"
                "2024/01/01 00:00:00.000, 0, GPU-1, 5 %\n2024/01/01 00:00:01.000, 0, GPU-1, 7 %\n"
                "2024/01/01 00:00:0",
                "smi: t.csv:4: expected 4 comma-separated fields as in the header (line 1), got 1 "
                "(a row cut short or a garbage line); skipped",
                2);
    /* a bad value: that field unknown, the row kept */
    expect_warn("index, uuid, utilization.gpu [%], temperature.gpu\n0, GPU-1, abc, 40\n",
                "smi: t.csv:2: field utilization.gpu: 'abc' is not a number; left unknown", 1);
    expect_warn("index, uuid, memory.used [MiB]\n0, GPU-1, 12 MiB x\n",
                "smi: t.csv:2: field memory.used: '12 MiB x' is not an amount of memory; left "
                "unknown",
                1);
    /* an unknown column */
    expect_warn("index, uuid, bogus.metric, utilization.gpu\n0, GPU-1, 3, 50\n",
                "smi: t.csv:1: unknown column 'bogus.metric' (not an nvidia-smi query field); "
                "ignored",
                1);
    expect_warn("# gpu pwr frobs sm\n 0 50 1 3\n",
                "smi: t.csv:1: unknown column 'frobs' (not a dmon/pmon column); ignored", 1);
    /* garbage lines inside tables */
    expect_warn("# gpu pwr gtemp sm\n# Idx W C %\n 0 50 40\n 0 51 40 3\n@@garbage@@\n 0 52 41 4\n",
                "smi: t.csv:3: expected 4 columns as in the header (line 1), got 3; row skipped\n"
                "smi: t.csv:5: not a dmon row (a garbage line); skipped",
                2);
    expect_warn("# gpu pwr gtemp sm\n 0 50 4x0 3\n",
                "smi: t.csv:2: field gtemp: '4x0' is not a number; left unknown", 1);
    expect_warn("timestamp, uuid, utilization.gpu\n2024/01/01 00:00:00.000, GPU-1, 1\n"
                "yesterday, GPU-1, 2\n2024/01/01 00:00:01.000, GPU-1, 3\n",
                "smi: t.csv:3: field timestamp: 'yesterday' is not YYYY/MM/DD HH:MM:SS; row "
                "skipped",
                2);
    /* pmon rows without a pid value, then a bad pid */
    expect_warn("index, uuid, utilization.gpu\n0, GPU-1, 1\n\n# gpu pid type sm mem command\n"
                " 0 - - - - -\n 0 x12 C 5 1 python\n 0 12 C 5 1 python\n",
                "smi: t.csv:6: field pid: 'x12' is not a process id; row skipped", 1);
    /* more warnings than are kept: all counted */
    char many[4096] = "index, uuid, utilization.gpu\n";
    for (int i = 0; i < 25; i++)
        strcat(many, "0, GPU-1, zz\n");
    gp_smi_log log;
    char err[512];
    assert_int_equal(gp_smi_parse("m.csv", many, strlen(many), &log, err, sizeof err), 0);
    assert_int_equal(log.nwarnings, 25);
    size_t kept = 1;
    for (const char *w = log.warnings; *w; w++)
        kept += *w == '\n';
    assert_int_equal(kept, GP_SMI_WARN_KEEP);
    gp_smi_log_free(&log);

    /* No table at all: an error, one line. */
    const char *t = "hello\nworld\n";
    assert_true(gp_smi_parse("t.csv", t, strlen(t), &log, err, sizeof err) < 0);
    assert_string_equal(err,
                        "smi: t.csv: no nvidia-smi CSV header, dmon/pmon table or XML log found");
    /* XML cut mid-element: libxml2's message as a warning, the <gpu> read so far kept. */
    const char *x = "<?xml version=\"1.0\"?>\n<nvidia_smi_log>\n<gpu><uuid>GPU-1</uuid>\n"
                    "<fb_memory_usage><used>12 MiB</used></fb_memory_usage>\n<temperature><gpu_te";
    assert_int_equal(gp_smi_parse("t.xml", x, strlen(x), &log, err, sizeof err), 0);
    assert_int_equal(log.nsamples, 1);
    assert_true(gp_has(log.samples[0].valid, GP_F_MEM_USED));
    assert_true(log.nwarnings >= 1);
    assert_true(!strncmp(log.warnings, "smi: t.xml:", 11) && strstr(log.warnings, ": XML: "));
    gp_smi_log_free(&log);
    x = "<?xml version=\"1.0\"?>\n<nvidia_smi_log><gpu><uuid>GPU-1</uuid><fb_memory_usage>"
        "<used>12 parsecs</used></fb_memory_usage></gpu></nvidia_smi_log>\n";
    assert_int_equal(gp_smi_parse("t.xml", x, strlen(x), &log, err, sizeof err), 0);
    assert_string_equal(log.warnings, "smi: t.xml:2: field fb_memory_usage/used: '12 parsecs' is "
                                      "not an amount of memory; left unknown");
    assert_false(gp_has(log.samples[0].valid, GP_F_MEM_USED));
    gp_smi_log_free(&log);
    x = "<?xml version=\"1.0\"?>\n<html><gpu/></html>\n";
    assert_true(gp_smi_parse("t.xml", x, strlen(x), &log, err, sizeof err) < 0);
    assert_string_equal(err, "smi: t.xml:2: XML root is <html>, expected <nvidia_smi_log>");
    assert_true(gp_smi_load("/nonexistent/x.csv", &log, err, sizeof err) < 0);
    assert_string_equal(err, "smi: /nonexistent/x.csv: cannot open: No such file or directory");
}

/* Rows of one instant: a dmon row and a CSV row at the same time merge field by field,
 * the first row that has a field keeps it; compute-apps and pmon rows of one pid merge. */
static void test_merge_one_instant(void **st) {
    (void)st;
    const char *t = "timestamp, index, uuid, memory.used [MiB], power.draw [W]\n"
                    "2024/01/01 00:00:00.000, 0, GPU-a, 100 MiB, 300.25 W\n"
                    "\n"
                    "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
                    "2024/01/01 00:00:00.000, GPU-a, 77, python3, 2048 MiB\n"
                    "\n"
                    "# gpu pid type sm mem command\n"
                    " 0 77 C 42 3 python\n"
                    " 0 77 C 40 3 python\n"
                    "\n"
                    "# gpu pwr gtemp sm mem mclk pclk\n"
                    " 0 300 55 90 20 1593 1410\n"
                    " 0 310 56 91 21 1593 1410\n";
    gp_smi_log log;
    char err[512];
    gp_smi_opts o = {.tz = GP_SMI_TZ_FIXED};
    if (gp_smi_parse_opts("m.csv", t, strlen(t), &o, &log, err, sizeof err) < 0)
        fail_msg("%s", err);
    assert_int_equal(log.nwarnings, 0);
    assert_int_equal(log.nsamples, 2);
    const gp_sample *s = &log.samples[0];
    assert_int_equal(s->ts_ns, 1704067200LL * 1000000000LL);
    assert_near(s->power_w, 300.25, 0);                         /* the CSV's, first */
    assert_near((double)s->mem_used_bytes, 100 * 1048576.0, 0); /* the CSV's */
    assert_near(s->gpu_util, 0.90, 1e-12);                      /* dmon's */
    assert_near(s->temp_c, 55, 0);
    assert_int_equal(log.samples[1].ts_ns - s->ts_ns, 1000000000LL);
    assert_false(gp_has(log.samples[1].valid, GP_F_MEM_USED));
    assert_int_equal(log.nprocs, 2);
    const gp_proc_sample *p = &log.procs[0];
    assert_int_equal(p->pid, 77);
    assert_true(gp_has(p->valid, GP_P_MEM | GP_P_SM_SHARE));
    assert_near((double)p->mem_bytes, 2048 * 1048576.0, 0);
    assert_near(p->sm_share, 0.42, 1e-12);
    assert_string_equal(p->name, "python3"); /* compute-apps' name came first */
    assert_string_equal(log.procs[1].name, "python");
    assert_false(gp_has(log.procs[1].valid, GP_P_MEM));
    gp_smi_log_free(&log);
}

/* tz: fixed offsets, UTC, local (a POSIX TZ rule, so no tz database is needed), the
 * capture header's zone by default, and the note saying which. */
static void test_time_zones(void **st) {
    (void)st;
    gp_smi_opts o;
    char err[256];
    static const struct {
        const char *in;
        int tz, off;
    } ok[] = {{"UTC", GP_SMI_TZ_FIXED, 0},        {"+02:00", GP_SMI_TZ_FIXED, 7200},
              {"-0530", GP_SMI_TZ_FIXED, -19800}, {"UTC+5", GP_SMI_TZ_FIXED, 18000},
              {"local", GP_SMI_TZ_LOCAL, 0},      {"-03:30", GP_SMI_TZ_FIXED, -12600}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        memset(&o, 0, sizeof o);
        assert_int_equal(gp_smi_parse_tz(ok[i].in, &o, err, sizeof err), 0);
        assert_int_equal(o.tz, ok[i].tz);
        assert_int_equal(o.tz_offset_s, ok[i].off);
    }
    const char *bad[] = {"", "+", "+25:00", "+02:99", "Mars", "+2x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_true(gp_smi_parse_tz(bad[i], &o, err, sizeof err) < 0);

    const char *t = "timestamp, uuid, utilization.gpu\n2024/07/01 12:00:00.000, GPU-1, 1\n";
    const int64_t utc = 1719835200LL * 1000000000LL; /* 2024-07-01T12:00:00Z */
    gp_smi_log log;
    o = (gp_smi_opts){.tz = GP_SMI_TZ_FIXED, .tz_offset_s = 7200};
    assert_int_equal(gp_smi_parse_opts("z.csv", t, strlen(t), &o, &log, err, sizeof err), 0);
    assert_int_equal(log.samples[0].ts_ns, utc - 7200LL * 1000000000LL);
    assert_string_equal(log.tz_note, "smi: z.csv: timestamps read as UTC+02:00 (tz=+02:00)");
    gp_smi_log_free(&log);

    char *old = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
    tzset();
    /* default without a zone in the file: local (CEST in July) */
    assert_int_equal(gp_smi_parse("z.csv", t, strlen(t), &log, err, sizeof err), 0);
    assert_int_equal(log.samples[0].ts_ns, utc - 7200LL * 1000000000LL);
    assert_true(
        !strncmp(log.tz_note, "smi: z.csv: timestamps read as local time, UTC+02:00 (", 54));
    gp_smi_log_free(&log);
    /* a zone in the capture header wins over the local one */
    const char *h = "collected_at:   2024-07-01T12:00:01Z\n\n"
                    "timestamp, uuid, utilization.gpu\n2024/07/01 12:00:00.000, GPU-1, 1\n";
    assert_int_equal(gp_smi_parse("h.csv", h, strlen(h), &log, err, sizeof err), 0);
    assert_int_equal(log.samples[0].ts_ns, utc);
    assert_string_equal(log.tz_note, "smi: h.csv: timestamps read as UTC+00:00 (zone of the "
                                     "capture header's collected_at 2024-07-01T12:00:01Z)");
    gp_smi_log_free(&log);
    /* XML <timestamp> is local time too */
    const char *x = "<?xml version=\"1.0\"?>\n<nvidia_smi_log><timestamp>Mon Jul  1 12:00:00 "
                    "2024</timestamp><gpu><uuid>GPU-1</uuid></gpu></nvidia_smi_log>\n";
    assert_int_equal(gp_smi_parse("x.xml", x, strlen(x), &log, err, sizeof err), 0);
    assert_int_equal(log.samples[0].ts_ns, utc - 7200LL * 1000000000LL);
    gp_smi_log_free(&log);
    if (old) {
        setenv("TZ", old, 1);
        free(old);
    } else {
        unsetenv("TZ");
    }
    tzset();
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
    gp_smi_opts o = {.tz = GP_SMI_TZ_FIXED, .tz_offset_s = 0};
    if (gp_smi_parse_opts("n.csv", t, strlen(t), &o, &log, err, sizeof err) < 0)
        fail_msg("%s", err);
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

typedef struct {
    size_t samples, procs, procs_mem, devices;
    int64_t first_ts, last_ts;
} replay_counts;

/* Drives the source as the agent does (src/agent/agent.c gp_agent_run): the clock starts at
 * now_ns(); ticks at start + k * interval (k >= 1) while the tick is <= end_ns(). */
static int replay(const char *spec, int64_t iv, replay_counts *rc, char *err, size_t errlen) {
    memset(rc, 0, sizeof *rc);
    gp_source_opts o = {.speed = 0, .start_ns = 0, .interval_ns = iv};
    void *state = NULL;
    if (gp_source_smi.open(spec, &o, &state, err, errlen) < 0) return -1;
    assert_null(gp_source_smi.drain_events);
    gp_device devs[16];
    assert_int_equal(gp_source_smi.list_devices(state, devs, 16, &rc->devices, err, errlen), 0);
    int64_t start = gp_source_smi.now_ns(state), end = gp_source_smi.end_ns(state);
    rc->first_ts = INT64_MAX;
    for (int64_t tick = start + iv; tick <= end; tick += iv) {
        gp_sample out[16];
        gp_proc_sample po[64];
        size_t n, np;
        assert_int_equal(gp_source_smi.sample(state, tick, out, 16, &n, err, errlen), 0);
        for (size_t i = 0; i < n; i++) {
            assert_true(out[i].ts_ns <= tick && out[i].ts_ns > tick - iv);
            if (out[i].ts_ns < rc->first_ts) rc->first_ts = out[i].ts_ns;
            if (out[i].ts_ns > rc->last_ts) rc->last_ts = out[i].ts_ns;
        }
        rc->samples += n;
        assert_int_equal(gp_source_smi.list_processes(state, po, 64, &np, err, errlen), 0);
        rc->procs += np;
        for (size_t i = 0; i < np; i++)
            rc->procs_mem += gp_has(po[i].valid, GP_P_MEM);
    }
    gp_source_smi.close(state);
    return 0;
}

/* Through the source interface, as the agent drives it: with an interval finer than the
 * rows, every sample and process row of the log is handed out once, the last instant
 * included; a -q -x snapshot (one instant) is handed out too (issue 23). */
static void test_source_replay(void **st) {
    (void)st;
    assert_null(gp_source_smi.node_paths); /* a capture's PIDs are from another machine */
    char path[512], spec[600], err[512];
    for (size_t i = 0; i < sizeof captures / sizeof captures[0]; i++) {
        snprintf(path, sizeof path, "%s/smi/nvidia_gpu_exporter/%s.txt", gp_test_data_dir(),
                 captures[i]);
        snprintf(spec, sizeof spec, "%s,tz=UTC", path);
        gp_smi_log log;
        gp_smi_opts o = {.tz = GP_SMI_TZ_FIXED};
        assert_int_equal(gp_smi_load_opts(path, &o, &log, err, sizeof err), 0);
        int64_t lo = INT64_MAX, hi = 0;
        for (size_t k = 0; k < log.nsamples; k++) {
            if (log.samples[k].ts_ns < lo) lo = log.samples[k].ts_ns;
            if (log.samples[k].ts_ns > hi) hi = log.samples[k].ts_ns;
        }
        size_t mem = 0;
        for (size_t k = 0; k < log.nprocs; k++)
            mem += gp_has(log.procs[k].valid, GP_P_MEM);
        replay_counts rc;
        if (replay(spec, 100000000LL, &rc, err, sizeof err) < 0) fail_msg("%s", err);
        assert_int_equal(rc.samples, log.nsamples);
        assert_int_equal(rc.procs, log.nprocs);
        assert_int_equal(rc.procs_mem, mem);
        assert_int_equal(rc.first_ts, lo);
        assert_int_equal(rc.last_ts, hi); /* the last interval is not dropped */
        /* At 1 s the last instant is still stored (instants 0.147 s apart share a tick). */
        if (replay(spec, 1000000000LL, &rc, err, sizeof err) < 0) fail_msg("%s", err);
        assert_int_equal(rc.last_ts, hi);
        assert_int_equal(rc.procs, log.nprocs);
        assert_true(rc.samples >= log.nsamples - 2 && rc.samples <= log.nsamples);
        gp_smi_log_free(&log);
    }
    static const struct {
        const char *file;
        size_t devices, procs;
    } xml[] = {
        {"tesla-t4.xml", 1, 2}, {"a100-sxm4-v12.xml", 5, 0}, {"rtx-4000-sff-ada-v13.xml", 1, 4}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(spec, sizeof spec, "%s/smi/telegraf/%s,tz=UTC", gp_test_data_dir(), xml[i].file);
        replay_counts rc;
        if (replay(spec, 1000000000LL, &rc, err, sizeof err) < 0) fail_msg("%s", err);
        assert_int_equal(rc.devices, xml[i].devices);
        assert_int_equal(rc.samples, xml[i].devices); /* one per device, parent and MIG */
        assert_int_equal(rc.procs, xml[i].procs);
        assert_int_equal(rc.procs_mem, xml[i].procs);
    }
    gp_source_opts o = {.interval_ns = 1000000000LL};
    void *state = NULL;
    assert_true(gp_source_smi.open("/nonexistent", &o, &state, err, sizeof err) < 0);
    assert_true(gp_source_smi.open("", &o, &state, err, sizeof err) < 0);
    snprintf(spec, sizeof spec, "%s/smi/telegraf/tesla-t4.xml,tz=Mars", gp_test_data_dir());
    assert_true(gp_source_smi.open(spec, &o, &state, err, sizeof err) < 0);
    assert_string_equal(err, "smi: tz=Mars: expected UTC, local or an offset like +02:00");
}

/* A capture with no GPU rows (only processes, or only rows that are all bad): open fails
 * with one line saying so and naming the first problem. */
static void test_no_gpu_rows(void **st) {
    (void)st;
    char path[] = "/tmp/gp_smi_noGPU_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *t = "timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
                    "2024/01/01 00:00:00.000, GPU-a, 77, python3, 2048 MiB\n"
                    "\n"
                    "index, uuid, utilization.gpu\n"
                    "0, GPU-a\n";
    assert_int_equal(write(fd, t, strlen(t)), (ssize_t)strlen(t));
    close(fd);
    gp_source_opts o = {.interval_ns = 1000000000LL};
    void *state = NULL;
    char err[1024];
    assert_true(gp_source_smi.open(path, &o, &state, err, sizeof err) < 0);
    char want[1024];
    snprintf(want, sizeof want,
             "smi: %s: no GPU rows (--query-gpu CSV, dmon or -q -x XML) found (first problem: "
             "smi: %s:5: expected 3 comma-separated fields as in the header (line 4), got 2 (a "
             "row cut short or a garbage line); skipped)",
             path, path);
    assert_string_equal(err, want);
    assert_null(strchr(err, '\n'));
    unlink(path);
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
        cmocka_unit_test(test_merge_one_instant),
        cmocka_unit_test(test_time_zones),
        cmocka_unit_test(test_no_gpu_rows),
        cmocka_unit_test(test_unknowns_and_nounits),
        cmocka_unit_test(test_source_replay),
        cmocka_unit_test(test_spec_lookup_real_names),
        cmocka_unit_test(test_mutations_do_not_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
