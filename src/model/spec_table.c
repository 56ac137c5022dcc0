/* spec_table.c: peak rates by GPU model, each row citing its datasheet.
 *
 * Peak FLOP/s are dense (no structured sparsity), because training and decode kernels
 * do not use 2:4 sparsity. Bandwidths are bytes/s as the datasheet states them. idle_w
 * is a typical idle draw seen on such boards; only the simulator uses it. */
#include "model/device.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

#define GB 1e9
#define GIB (1024ull * 1024 * 1024)
#define T 1e12

/* One row per line reads best here; clang-format would split every row. */
/* clang-format off */
static const gp_gpu_spec spec_table[] = {
    {"H200", {"h200"}, 132, 141ull * 1000000000ull, 989.5 * T, 989.5 * T, 67 * T, 4800 * GB, 900 * GB, 64 * GB, 700, 90, 1980,
     "NVIDIA H200 Tensor Core GPU datasheet (SXM), 2024"},
    {"B200", {"b200"}, 148, 180ull * 1000000000ull, 2250 * T, 2250 * T, 75 * T, 8000 * GB, 1800 * GB, 64 * GB, 1000, 140, 1965,
     "NVIDIA HGX B200 datasheet, 2024 (per GPU; BF16 dense = half the sparse figure)"},
    {"H100-NVL", {"h100 nvl", "h100-nvl"}, 132, 94ull * 1000000000ull, 835.5 * T, 835.5 * T, 60 * T, 3900 * GB, 600 * GB, 64 * GB, 400, 60, 1785,
     "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL column, 2023 (BF16 dense = half the 1,671 TF sparse figure)"},
    {"H100-PCIE", {"h100 pcie", "h100-pcie"}, 114, 80 * GIB, 756 * T, 756 * T, 51 * T, 2000 * GB, 600 * GB, 64 * GB, 350, 50, 1755,
     "NVIDIA H100 Tensor Core GPU datasheet, PCIe column, 2023"},
    {"H100-SXM", {"h100", "h800"}, 132, 80 * GIB, 989.5 * T, 989.5 * T, 67 * T, 3350 * GB, 900 * GB, 64 * GB, 700, 70, 1980,
     "NVIDIA H100 Tensor Core GPU datasheet, SXM column, 2023"},
    {"A100-PCIE-40GB", {"a100-pcie-40gb", "a100 pcie 40gb"}, 108, 40 * GIB, 312 * T, 312 * T, 19.5 * T, 1555 * GB, 600 * GB, 32 * GB, 250, 35, 1410,
     "NVIDIA A100 Tensor Core GPU datasheet, PCIe 40GB column, 2021"},
    {"A100-PCIE-80GB", {"a100-pcie", "a100 pcie", "a100 80gb pcie"}, 108, 80 * GIB, 312 * T, 312 * T, 19.5 * T, 1935 * GB, 600 * GB, 32 * GB, 300, 40, 1410,
     "NVIDIA A100 Tensor Core GPU datasheet, PCIe 80GB column, 2021"},
    {"A100-SXM4-40GB", {"a100-sxm4-40gb", "a100 sxm4 40gb", "a100-40gb"}, 108, 40 * GIB, 312 * T, 312 * T, 19.5 * T, 1555 * GB, 600 * GB, 32 * GB, 400, 50, 1410,
     "NVIDIA A100 Tensor Core GPU datasheet, SXM 40GB column, 2021"},
    {"A100-SXM4-80GB", {"a100"}, 108, 80 * GIB, 312 * T, 312 * T, 19.5 * T, 2039 * GB, 600 * GB, 32 * GB, 400, 55, 1410,
     "NVIDIA A100 Tensor Core GPU datasheet, SXM 80GB column, 2021"},
    {"V100", {"v100"}, 80, 32 * GIB, 0, 125 * T, 15.7 * T, 900 * GB, 300 * GB, 16 * GB, 300, 40, 1530,
     "NVIDIA Tesla V100 datasheet (SXM2), 2020; no BF16 support, so bf16 peak is unknown"},
    {"L40S", {"l40s"}, 142, 48 * GIB, 362.05 * T, 362.05 * T, 91.6 * T, 864 * GB, 0, 32 * GB, 350, 35, 2520,
     "NVIDIA L40S datasheet, 2023"},
    {"L4", {"l4"}, 58, 24 * GIB, 121 * T, 121 * T, 30.3 * T, 300 * GB, 0, 32 * GB, 72, 16, 2040,
     "NVIDIA L4 Tensor Core GPU datasheet, 2023"},
    {"T4", {"t4"}, 40, 16 * GIB, 0, 65 * T, 8.1 * T, 320 * GB, 0, 16 * GB, 70, 10, 1590,
     "NVIDIA T4 Tensor Core GPU datasheet, 2019; no BF16 support"},
    {"A10G", {"a10g"}, 80, 24 * GIB, 70 * T, 70 * T, 31.2 * T, 600 * GB, 0, 32 * GB, 300, 25, 1710,
     "NVIDIA A10G as published for AWS G5 instances (product brief), 2021"},
    {"RTX-4090", {"4090"}, 128, 24 * GIB, 165.2 * T, 165.2 * T, 82.6 * T, 1008 * GB, 0, 32 * GB, 450, 25, 2520,
     "NVIDIA Ada Lovelace architecture whitepaper v2.1, GeForce RTX 4090 column"},
};
/* clang-format on */

const gp_gpu_spec *gp_spec_table(int *n) {
    *n = (int)(sizeof spec_table / sizeof spec_table[0]);
    return spec_table;
}

static void lower_copy(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = 0;
}

/* Rows are ordered so that a more specific match ("h100 pcie") is tried before a
 * general one ("h100"). "l4" must not match "l40s": L40S sits before L4, and L4 needs
 * the name to end or continue with a non-digit/letter after "l4". */
const gp_gpu_spec *gp_spec_lookup(const char *name) {
    if (!name || !*name) return NULL;
    char low[128];
    lower_copy(low, sizeof low, name);
    int n;
    const gp_gpu_spec *t = gp_spec_table(&n);
    for (int i = 0; i < n; i++) {
        char canon[64];
        lower_copy(canon, sizeof canon, t[i].model);
        if (strcmp(low, canon) == 0) return &t[i];
    }
    for (int i = 0; i < n; i++) {
        for (int m = 0; m < 6 && t[i].match[m]; m++) {
            const char *hit = strstr(low, t[i].match[m]);
            while (hit) {
                char after = hit[strlen(t[i].match[m])];
                /* whole words only: "h200" must not match "gh200" (a different board) */
                int starts = hit == low || !isalnum((unsigned char)hit[-1]);
                if (starts && !isalnum((unsigned char)after)) return &t[i];
                hit = strstr(hit + 1, t[i].match[m]);
            }
        }
    }
    return NULL;
}
