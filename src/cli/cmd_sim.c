/* cmd_sim.c: `goodput sim SCENARIO`: runs a scenario through the simulator as fast as
 * possible and prints what the agent would see: per-GPU samples (CSV or JSON lines),
 * event lines, and/or the ground truth per job. For inspecting and debugging scenarios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/exit_codes.h"
#include "util/progress.h"
#include "util/term.h"
#include "cli/sim_summary.h"
#include "sim/sim.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: goodput sim SCENARIO [--csv|--json] [--events] [--summary] [--interval DUR]\n"
            "                            [--start NS] [--wide]\n\n"
            "Runs SCENARIO (docs/scenarios.md) as fast as possible and prints per-GPU samples\n"
            "(CSV by default), and/or event lines in the protocol (docs/protocol.md).\n"
            "  --csv        samples as CSV (the default when neither --events nor --summary)\n"
            "  --json       samples as JSON lines; with --summary, only the ground truth as one\n"
            "               JSON document (GPU-seconds per bucket, steps, requests, tokens)\n"
            "  --events     event lines (job, alloc, hello, step, phase, restart, request)\n"
            "  --summary    the ground truth per job: time buckets and goodput (after the\n"
            "               samples or events, as '# ' comment lines, when mixed with them)\n"
            "  --interval   sampling interval (default 1s)\n"
            "  --start      clock origin in ns since the epoch (default: the scenario's, else\n"
            "               2026-01-01T00:00:00Z)\n"
            "  --wide       --summary text wider than 100 columns (long job ids inline)\n");
}

/* Every event line the simulator drains: printed with --events, judged for the summary's
 * good requests with --summary. */
typedef struct line_sink {
    int print;
    gp_sim_summary *summary;
} line_sink;

static void on_line(void *ctx, const char *line, size_t len) {
    line_sink *k = ctx;
    if (k->print) {
        fwrite(line, 1, len, stdout);
        fputc('\n', stdout);
    }
    if (k->summary) gp_sim_summary_line(k->summary, line, len);
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

int gp_cmd_sim(int argc, char **argv) {
    const char *path = NULL;
    int csv = 0, json = 0, events = 0, summary = 0, wide = 0;
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
        else if (!strcmp(a, "--wide"))
            wide = 1;
        else if (!strcmp(a, "--interval") && i + 1 < argc) {
            if (gp_parse_duration_ns(argv[++i], &interval) < 0 || interval <= 0) {
                fprintf(stderr,
                        "goodput sim: --interval '%s': expected a duration like 1s or 500ms\n",
                        argv[i]);
                return GP_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--start") && i + 1 < argc) {
            char *end;
            start = strtoll(argv[++i], &end, 10);
            if (*end || start < 0) {
                fprintf(stderr, "goodput sim: --start '%s': expected ns since the epoch\n",
                        argv[i]);
                return GP_EXIT_USAGE;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "goodput sim: unknown option '%s' (try goodput sim --help)\n", a);
            return GP_EXIT_USAGE;
        } else if (!path)
            path = a;
        else {
            fprintf(stderr, "goodput sim: one scenario at a time ('%s')\n", a);
            return GP_EXIT_USAGE;
        }
    }
    if (!path) {
        usage(stderr);
        return GP_EXIT_USAGE;
    }
    if (csv && json) {
        fprintf(stderr, "goodput sim: choose one of --csv and --json\n");
        return GP_EXIT_USAGE;
    }
    /* --summary --json: the truth as one JSON document, so nothing else may be mixed in */
    int summary_json = summary && json;
    if (summary_json && (csv || events)) {
        fprintf(stderr, "goodput sim: --summary --json prints one JSON document; it does not "
                        "mix with --csv or --events\n");
        return GP_EXIT_USAGE;
    }
    if (summary_json) json = 0;
    if (!csv && !json && !events && !summary) csv = 1;

    char err[512];
    gp_scenario sc;
    if (gp_scenario_load(path, &sc, err, sizeof err) < 0) {
        fprintf(stderr, "goodput sim: %s\n", err);
        return GP_EXIT_INPUT;
    }
    gp_sim *sim;
    int rc = gp_sim_open(&sc, start, &sim, err, sizeof err);
    gp_scenario_free(&sc);
    if (rc < 0) {
        fprintf(stderr, "goodput sim: %s\n", err);
        return GP_EXIT_INPUT;
    }
    size_t nd = gp_sim_n_devices(sim), n;
    gp_sample *buf = malloc(nd * sizeof *buf);
    line_sink sink = {.print = events, .summary = summary ? gp_sim_summary_new(sim) : NULL};
    if (!buf || (summary && !sink.summary)) {
        free(buf);
        gp_sim_summary_free(sink.summary);
        gp_sim_close(sim);
        fprintf(stderr, "goodput sim: out of memory\n");
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
    /* drained even when not printed: the summary judges requests, and undrained lines
     * would pile up in memory for the whole run */
    gp_sim_drain_events(sim, t0, on_line, &sink);
    gp_progress bar; /* stderr only, on a terminal, past 2 s: stdout stays the data */
    gp_progress_start(&bar, "simulating", (double)(end - t0), 0);
    for (int64_t t = t0 + interval;; t += interval) {
        if (t > end) t = end;
        gp_progress_update(&bar, (double)(t - t0));
        gp_sim_sample(sim, t, buf, nd, &n);
        gp_sim_drain_events(sim, t, on_line, &sink);
        for (size_t i = 0; i < n && (csv || json); i++) {
            if (csv)
                print_csv(&buf[i]);
            else
                print_json(&buf[i]);
        }
        if (t >= end) break;
    }
    gp_progress_end(&bar);
    int rc_out = 0;
    if (summary_json)
        rc_out = gp_sim_summary_json(sink.summary, sim, stdout);
    else if (summary) /* as comments when mixed with samples or event lines */
        gp_sim_summary_text(sink.summary, sim, events || csv || json ? "# " : "", stdout,
                            gp_text_width(wide));
    gp_sim_summary_free(sink.summary);
    free(buf);
    gp_sim_close(sim);
    if (fflush(stdout) != 0 || rc_out < 0) return GP_EXIT_FAIL;
    return GP_EXIT_OK;
}
