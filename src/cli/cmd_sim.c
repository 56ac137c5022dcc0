/* cmd_sim.c: `goodput sim SCENARIO`: runs a scenario through the simulator as fast as
 * possible and prints what the agent would see: per-GPU samples (CSV or JSON lines),
 * event lines, and/or the ground truth per job. For inspecting and debugging scenarios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/exit_codes.h"
#include "sim/sim.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput sim SCENARIO [--csv|--json] [--events] [--summary] [--interval DUR]\n"
            "                            [--start NS]\n\n"
            "Runs SCENARIO (docs/scenarios.md) as fast as possible and prints per-GPU samples\n"
            "(CSV by default), and/or event lines in the protocol (docs/protocol.md).\n"
            "  --csv        samples as CSV (the default when neither --events nor --summary)\n"
            "  --json       samples as JSON lines\n"
            "  --events     event lines (job, alloc, hello, step, phase, restart, request)\n"
            "  --summary    the ground truth per job: time buckets and goodput\n"
            "  --interval   sampling interval (default 1s)\n"
            "  --start      clock origin in ns since the epoch (default: the scenario's, else\n"
            "               2026-01-01T00:00:00Z)\n");
}

static void print_line(void *ctx, const char *line, size_t len) {
    (void)ctx;
    fwrite(line, 1, len, stdout);
    fputc('\n', stdout);
}

static void num(int ok, const char *fmt, double v) {
    if (ok) printf(fmt, v);
}

static void print_csv(const gp_sample *x) {
    uint32_t v = x->valid;
    printf("%lld,%s,", (long long)x->ts_ns, x->uuid);
    num(gp_has(v, GP_F_GPU_UTIL), "%.4f", x->gpu_util);
    putchar(',');
    num(gp_has(v, GP_F_SM_ACTIVE), "%.4f", x->sm_active);
    putchar(',');
    num(gp_has(v, GP_F_SM_OCCUPANCY), "%.4f", x->sm_occupancy);
    putchar(',');
    num(gp_has(v, GP_F_TENSOR_ACTIVE), "%.4f", x->tensor_active);
    putchar(',');
    num(gp_has(v, GP_F_DRAM_ACTIVE), "%.4f", x->dram_active);
    putchar(',');
    num(gp_has(v, GP_F_FP16_ACTIVE), "%.4f", x->fp16_active);
    putchar(',');
    num(gp_has(v, GP_F_FP32_ACTIVE), "%.4f", x->fp32_active);
    printf(",%llu,%llu,%.3f,%llu,", (unsigned long long)x->mem_used_bytes,
           (unsigned long long)x->mem_total_bytes, x->power_w, (unsigned long long)x->energy_mj);
    num(gp_has(v, GP_F_SM_CLOCK), "%.0f", x->sm_clock_mhz);
    putchar(',');
    num(gp_has(v, GP_F_MEM_CLOCK), "%.0f", x->mem_clock_mhz);
    printf(",%llu,%llu,", (unsigned long long)x->pcie_tx_bytes,
           (unsigned long long)x->pcie_rx_bytes);
    if (gp_has(v, GP_F_NVLINK_TX))
        printf("%llu,%llu", (unsigned long long)x->nvlink_tx_bytes,
               (unsigned long long)x->nvlink_rx_bytes);
    else
        putchar(',');
    printf(",%.0f,%llu\n", x->temp_c, (unsigned long long)x->throttle_reasons);
}

static void jnum(int ok, const char *key, double v) {
    if (ok) printf(",\"%s\":%.6g", key, v);
}

static void print_json(const gp_sample *x) {
    uint32_t v = x->valid;
    printf("{\"ts_ns\":%lld,\"uuid\":\"%s\"", (long long)x->ts_ns, x->uuid);
    jnum(gp_has(v, GP_F_GPU_UTIL), "gpu_util", x->gpu_util);
    jnum(gp_has(v, GP_F_SM_ACTIVE), "sm_active", x->sm_active);
    jnum(gp_has(v, GP_F_SM_OCCUPANCY), "sm_occupancy", x->sm_occupancy);
    jnum(gp_has(v, GP_F_TENSOR_ACTIVE), "tensor_active", x->tensor_active);
    jnum(gp_has(v, GP_F_DRAM_ACTIVE), "dram_active", x->dram_active);
    jnum(gp_has(v, GP_F_FP16_ACTIVE), "fp16_active", x->fp16_active);
    jnum(gp_has(v, GP_F_FP32_ACTIVE), "fp32_active", x->fp32_active);
    printf(",\"mem_used_bytes\":%llu,\"mem_total_bytes\":%llu,\"power_w\":%.3f,\"energy_mj\":%llu",
           (unsigned long long)x->mem_used_bytes, (unsigned long long)x->mem_total_bytes,
           x->power_w, (unsigned long long)x->energy_mj);
    jnum(gp_has(v, GP_F_SM_CLOCK), "sm_clock_mhz", x->sm_clock_mhz);
    jnum(gp_has(v, GP_F_MEM_CLOCK), "mem_clock_mhz", x->mem_clock_mhz);
    printf(",\"pcie_tx_bytes\":%llu,\"pcie_rx_bytes\":%llu", (unsigned long long)x->pcie_tx_bytes,
           (unsigned long long)x->pcie_rx_bytes);
    if (gp_has(v, GP_F_NVLINK_TX))
        printf(",\"nvlink_tx_bytes\":%llu,\"nvlink_rx_bytes\":%llu",
               (unsigned long long)x->nvlink_tx_bytes, (unsigned long long)x->nvlink_rx_bytes);
    printf(",\"temp_c\":%.0f,\"throttle_reasons\":%llu}\n", x->temp_c,
           (unsigned long long)x->throttle_reasons);
}

static void print_summary(const gp_sim *sim, int as_comment) {
    /* as comments when mixed with event lines, which ignore lines starting with '#' */
    const char *pre = as_comment ? "# " : "";
    printf("%s%-22s %-10s %4s %8s %7s %7s %7s %7s %7s %7s %7s %7s %7s %7s %8s\n", pre, "job",
           "kind", "gpus", "alloc_s", "goodput", "notrdy", "init", "data", "ckpt", "restore",
           "recov", "wasted", "idle", "other", "steps/req");
    for (int i = 0; i < gp_sim_n_jobs(sim); i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        double a = t.allocated_s > 0 ? t.allocated_s : 1;
        printf("%s%-22s %-10s %4d %8.0f %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.1f%% "
               "%6.1f%% %6.1f%% %6.1f%% %8lld\n",
               pre, t.job_id, gp_sjob_kind_name(t.kind), t.n_gpus, t.allocated_s,
               100 * t.productive_s / a, 100 * t.not_ready_s / a, 100 * t.init_s / a,
               100 * t.data_wait_s / a, 100 * t.checkpoint_s / a, 100 * t.restore_s / a,
               100 * t.recovery_s / a, 100 * t.wasted_s / a, 100 * t.idle_s / a,
               100 * t.other_s / a,
               (long long)(t.kind == GP_SJ_INFERENCE ? t.requests_done : t.steps_done));
    }
}

int gp_cmd_sim(int argc, char **argv) {
    const char *path = NULL;
    int csv = 0, json = 0, events = 0, summary = 0;
    int64_t interval = 1000000000LL, start = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return GP_EXIT_OK;
        } else if (!strcmp(a, "--csv"))
            csv = 1;
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--events"))
            events = 1;
        else if (!strcmp(a, "--summary"))
            summary = 1;
        else if (!strcmp(a, "--interval") && i + 1 < argc) {
            if (gp_parse_duration_ns(argv[++i], &interval) < 0 || interval <= 0) {
                fprintf(stderr, "goodput: --interval '%s': expected a duration like 1s or 500ms\n",
                        argv[i]);
                return GP_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--start") && i + 1 < argc) {
            char *end;
            start = strtoll(argv[++i], &end, 10);
            if (*end || start < 0) {
                fprintf(stderr, "goodput: --start '%s': expected ns since the epoch\n", argv[i]);
                return GP_EXIT_USAGE;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "goodput: sim: unknown option '%s' (try goodput sim --help)\n", a);
            return GP_EXIT_USAGE;
        } else if (!path)
            path = a;
        else {
            fprintf(stderr, "goodput: sim: one scenario at a time ('%s')\n", a);
            return GP_EXIT_USAGE;
        }
    }
    if (!path) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    if (csv && json) {
        fprintf(stderr, "goodput: sim: choose one of --csv and --json\n");
        return GP_EXIT_USAGE;
    }
    if (!csv && !json && !events && !summary) csv = 1;

    char err[512];
    gp_scenario sc;
    if (gp_scenario_load(path, &sc, err, sizeof err) < 0) {
        fprintf(stderr, "goodput: %s\n", err);
        return GP_EXIT_INPUT;
    }
    gp_sim *sim;
    int rc = gp_sim_open(&sc, start, &sim, err, sizeof err);
    gp_scenario_free(&sc);
    if (rc < 0) {
        fprintf(stderr, "goodput: %s\n", err);
        return GP_EXIT_INPUT;
    }
    size_t nd = gp_sim_n_devices(sim), n;
    gp_sample *buf = malloc(nd * sizeof *buf);
    if (!buf) {
        gp_sim_close(sim);
        fprintf(stderr, "goodput: out of memory\n");
        return GP_EXIT_FAIL;
    }
    static char obuf[1 << 16];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    if (csv)
        printf("ts_ns,uuid,gpu_util,sm_active,sm_occupancy,tensor_active,dram_active,fp16_active,"
               "fp32_active,mem_used_bytes,mem_total_bytes,power_w,energy_mj,sm_clock_mhz,"
               "mem_clock_mhz,pcie_tx_bytes,pcie_rx_bytes,nvlink_tx_bytes,nvlink_rx_bytes,temp_c,"
               "throttle_reasons\n");
    int64_t t0 = gp_sim_start_ns(sim), end = gp_sim_end_ns(sim);
    if (events) gp_sim_drain_events(sim, t0, print_line, NULL);
    for (int64_t t = t0 + interval;; t += interval) {
        if (t > end) t = end;
        gp_sim_sample(sim, t, buf, nd, &n);
        if (events) gp_sim_drain_events(sim, t, print_line, NULL);
        for (size_t i = 0; i < n && (csv || json); i++) {
            if (csv)
                print_csv(&buf[i]);
            else
                print_json(&buf[i]);
        }
        if (t >= end) break;
    }
    if (summary) print_summary(sim, events || csv || json);
    free(buf);
    gp_sim_close(sim);
    if (fflush(stdout) != 0) return GP_EXIT_FAIL;
    return GP_EXIT_OK;
}
