/* gen_om.c: OpenMetrics for the `goodput analyze` benchmark, written one file per window
 * (a day in bench/analyze/run.sh) so that `promtool tsdb create-blocks-from openmetrics
 * --max-block-duration` equal to the window reads each sample twice, not once per 2-hour
 * block: promtool re-parses its whole input for every block it cuts, so a week in one file
 * with 2-hour blocks is parsed 84 times (what made backfilling a 1,000-GPU week take hours).
 *
 * The cluster is what tests/integration/analyze/gen_cluster.py --plain writes: N GPUs, 8
 * per node, one training pod per node (bench/job-NODE) holding all 8 for the whole range,
 * utilization 0.9 +- 0.03, dcgm-exporter's 9 families at every step. Values come from a
 * hash of (GPU, step), so each family agrees and no per-step state is kept: memory is a
 * few doubles per GPU (the energy counters) whatever the size.
 *
 * usage: gen_om OUTDIR N_GPUS HOURS STEP_S T0 WINDOW_S [WINDOW]
 * Writes OUTDIR/w0000.om, w0001.om, ... (only window WINDOW when given: run.sh backfills
 * one window at a time, so the disk holds one window's text, not the week's 40 GB) and
 * prints the number of lines written. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double util_of(uint64_t gpu, uint64_t k) {
    uint64_t h = (gpu * 0x9E3779B97F4A7C15ULL) ^ (k * 0xC2B2AE3D27D4EB4FULL);
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    return 0.9 + ((double)(h >> 11) / 9007199254740992.0 - 0.5) * 0.06;
}

static const char *const FAMS[] = {"DCGM_FI_DEV_GPU_UTIL",
                                   "DCGM_FI_PROF_SM_ACTIVE",
                                   "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                   "DCGM_FI_PROF_DRAM_ACTIVE",
                                   "DCGM_FI_DEV_FB_USED",
                                   "DCGM_FI_DEV_POWER_USAGE",
                                   "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                   "DCGM_FI_DEV_XID_ERRORS",
                                   "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"};
#define NFAMS (sizeof FAMS / sizeof FAMS[0])

int main(int argc, char **argv) {
    if (argc < 7) {
        fprintf(stderr, "usage: gen_om OUTDIR N_GPUS HOURS STEP_S T0 WINDOW_S [WINDOW]\n");
        return 2;
    }
    const char *dir = argv[1];
    long n = atol(argv[2]);
    double hours = atof(argv[3]);
    long step = atol(argv[4]);
    int64_t t0 = atoll(argv[5]);
    long win_s = atol(argv[6]);
    long only = argc > 7 ? atol(argv[7]) : -1;
    if (n <= 0 || hours <= 0 || step <= 0 || win_s <= 0 || win_s % step) {
        fprintf(stderr, "gen_om: N_GPUS, HOURS > 0 and STEP_S dividing WINDOW_S expected\n");
        return 2;
    }
    int64_t nsteps = (int64_t)(hours * 3600) / step, per_win = win_s / step;
    double *energy_mj = malloc((size_t)n * sizeof *energy_mj);
    if (!energy_mj) return 1;
    for (long i = 0; i < n; i++)
        energy_mj[i] = 1e9;
    uint64_t lines = 0;
    char path[4096];
    static char obuf[1 << 20];
    for (int64_t w0 = 0, wi = 0; w0 < nsteps; w0 += per_win, wi++) {
        int64_t w1 = w0 + per_win < nsteps ? w0 + per_win : nsteps;
        if (only >= 0 && wi != only) {
            for (long i = 0; i < n; i++) /* the energy counter runs on */
                for (int64_t k = w0; k < w1; k++)
                    energy_mj[i] += (70 + 600 * util_of((uint64_t)i, (uint64_t)k)) * step * 1000.0;
            continue;
        }
        snprintf(path, sizeof path, "%s/w%04" PRId64 ".om", dir, wi);
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "gen_om: %s: %s\n", path, strerror(errno));
            return 1;
        }
        setvbuf(f, obuf, _IOFBF, sizeof obuf);
        for (size_t fam = 0; fam < NFAMS; fam++) {
            fprintf(f, "# TYPE %s gauge\n", FAMS[fam]);
            for (long i = 0; i < n; i++) {
                long node = i / 8, g = i % 8;
                char ls[512];
                snprintf(
                    ls, sizeof ls,
                    "{gpu=\"%ld\",UUID=\"GPU-%08lx-0000-4000-8000-%012lx\",device=\"nvidia%ld\","
                    "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node%ld\","
                    "container=\"main\",namespace=\"bench\",pod=\"job-%ld\"}",
                    g, node, g, g, node, node);
                for (int64_t k = w0; k < w1; k++) {
                    double u = util_of((uint64_t)i, (uint64_t)k);
                    int64_t t = t0 + k * step;
                    switch (fam) {
                    case 0:
                        fprintf(f, "%s%s %d %" PRId64 "\n", FAMS[fam], ls, (int)(u * 100 + 0.5), t);
                        break;
                    case 1:
                    case 2:
                    case 3:
                        fprintf(f, "%s%s %.6g %" PRId64 "\n", FAMS[fam], ls,
                                u * (fam == 1   ? 0.9
                                     : fam == 2 ? 0.5
                                                : 0.4),
                                t);
                        break;
                    case 4:
                        fprintf(f, "%s%s 60000 %" PRId64 "\n", FAMS[fam], ls, t);
                        break;
                    case 5:
                        fprintf(f, "%s%s %.6g %" PRId64 "\n", FAMS[fam], ls, 70 + 600 * u, t);
                        break;
                    case 6:
                        energy_mj[i] += (70 + 600 * u) * (double)step * 1000;
                        fprintf(f, "%s%s %.0f %" PRId64 "\n", FAMS[fam], ls, energy_mj[i], t);
                        break;
                    default:
                        fprintf(f, "%s%s 0 %" PRId64 "\n", FAMS[fam], ls, t);
                    }
                    lines++;
                }
            }
        }
        fputs("# EOF\n", f);
        if (fclose(f) != 0) {
            fprintf(stderr, "gen_om: %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    free(energy_mj);
    printf("%" PRIu64 "\n", lines);
    return 0;
}
