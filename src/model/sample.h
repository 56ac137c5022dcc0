/* sample.h: one device's telemetry at one time.
 *
 * Every field is optional. `valid` is a bitmask of GP_F_* saying which fields the source
 * reported; a field whose bit is clear is unknown, never zero. Counters (energy, PCIe and
 * NVLink bytes) are raw monotonic counters as the hardware keeps them: consumers take
 * deltas over windows, so a missed sample loses resolution, never energy.
 * Ratios are doubles in [0, 1]. Plain data, no I/O. */
#ifndef GP_MODEL_SAMPLE_H
#define GP_MODEL_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

#define GP_UUID_MAX 96

typedef enum {
    GP_F_GPU_UTIL = 1u << 0,      /* fraction of time a kernel ran */
    GP_F_SM_ACTIVE = 1u << 1,     /* DCGM PROF_SM_ACTIVE */
    GP_F_SM_OCCUPANCY = 1u << 2,  /* DCGM PROF_SM_OCCUPANCY */
    GP_F_TENSOR_ACTIVE = 1u << 3, /* DCGM PROF_PIPE_TENSOR_ACTIVE */
    GP_F_DRAM_ACTIVE = 1u << 4,   /* DCGM PROF_DRAM_ACTIVE */
    GP_F_FP16_ACTIVE = 1u << 5,
    GP_F_FP32_ACTIVE = 1u << 6,
    GP_F_FP64_ACTIVE = 1u << 7,
    GP_F_MEM_USED = 1u << 8,
    GP_F_MEM_TOTAL = 1u << 9,
    GP_F_POWER = 1u << 10,
    GP_F_ENERGY = 1u << 11, /* monotonic counter, mJ */
    GP_F_SM_CLOCK = 1u << 12,
    GP_F_MEM_CLOCK = 1u << 13,
    GP_F_PCIE_TX = 1u << 14, /* counter, bytes */
    GP_F_PCIE_RX = 1u << 15,
    GP_F_NVLINK_TX = 1u << 16,
    GP_F_NVLINK_RX = 1u << 17,
    GP_F_TEMP = 1u << 18,
    GP_F_THROTTLE = 1u << 19, /* NVML clock-event reason bits */
    GP_F_XID = 1u << 20,      /* last XID error seen in the interval */
    GP_F_MEM_UTIL =
        1u << 21, /* nvidia-smi "utilization.memory": fraction of time memory was read/written */
} gp_field;

typedef struct gp_sample {
    char uuid[GP_UUID_MAX];
    int64_t ts_ns; /* end of the interval the averages describe */
    uint32_t valid;
    double gpu_util, sm_active, sm_occupancy, tensor_active, dram_active, mem_util;
    double fp16_active, fp32_active, fp64_active;
    uint64_t mem_used_bytes, mem_total_bytes;
    double power_w;
    uint64_t energy_mj;
    double sm_clock_mhz, mem_clock_mhz;
    uint64_t pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes;
    double temp_c;
    uint64_t throttle_reasons;
    int64_t xid;
} gp_sample;

/* Per-process view of a device (one row per process per sample). */
typedef struct gp_proc_sample {
    char uuid[GP_UUID_MAX];
    int64_t ts_ns;
    int64_t pid;
    uint32_t valid;     /* GP_P_* */
    double sm_share;    /* fraction of the device's SM time this process used */
    uint64_t mem_bytes; /* device memory the process holds */
    char job_id[64];    /* owner when the source knows it from its own labels (dcgm-exporter
                         * hpc_job / pod); "" if not. The simulator never sets it: owners
                         * come from the process (attribution/), as on a real node. */
    char name[64];      /* process name as the source shows it (nvidia-smi process_name,
                         * NVML has none); "" unknown */
} gp_proc_sample;

enum { GP_P_SM_SHARE = 1u << 0, GP_P_MEM = 1u << 1 };

static inline bool gp_has(uint32_t valid, uint32_t field) {
    return (valid & field) == field;
}
static inline void gp_set_d(gp_sample *s, uint32_t f, double *slot, double v) {
    *slot = v;
    s->valid |= f;
}

#endif
