/* device.h: one GPU or MIG instance, keyed by UUID, and the spec table of peak rates.
 *
 * Static facts come from the source; peak rates come from the spec table by model name.
 * A model the table does not know has spec == NULL: its peaks are unknown, not zero. */
#ifndef GP_MODEL_DEVICE_H
#define GP_MODEL_DEVICE_H

#include <stdint.h>
#include "model/sample.h"

typedef struct gp_gpu_spec {
    const char *model;    /* canonical name, e.g. "H100-SXM" */
    const char *match[6]; /* lower-case substrings of marketing names that select this row */
    int sm_count;
    uint64_t memory_bytes;
    double bf16_flops;     /* dense, FLOP/s */
    double fp16_flops;     /* dense, FLOP/s */
    double fp32_flops;     /* FLOP/s (non-tensor) */
    double hbm_bytes_s;    /* memory bandwidth, bytes/s */
    double nvlink_bytes_s; /* total bidirectional NVLink bandwidth per GPU; 0 = none */
    double pcie_bytes_s;   /* one direction */
    double tdp_w;
    double idle_w; /* typical idle draw, used by the simulator */
    double max_sm_clock_mhz;
    const char *source; /* datasheet the numbers come from */
} gp_gpu_spec;

typedef struct gp_device {
    char uuid[GP_UUID_MAX];
    int index;     /* the source's index: for display only, never a key */
    char name[96]; /* as the driver reports it */
    char host[64];
    char pci_bus_id[32];
    uint64_t memory_total_bytes;   /* 0 = unknown */
    int mig_mode;                  /* -1 unknown, 0 off, 1 on */
    char parent_uuid[GP_UUID_MAX]; /* MIG instance: the physical GPU; "" otherwise */
    const gp_gpu_spec *spec;       /* NULL = unknown model */
} gp_device;

/* Looks a model up by canonical or marketing name (case-insensitive substring rules);
 * NULL when unknown. */
const gp_gpu_spec *gp_spec_lookup(const char *name);
/* The whole table, for docs and tests. */
const gp_gpu_spec *gp_spec_table(int *n);

#endif
