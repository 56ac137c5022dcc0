/* cost.h: money and energy per useful unit.
 *
 * Price per GPU-hour comes from, in order: the caller's override, the environment
 * (GOODPUT_PRICE_PER_GPU_HOUR), or the default table below (approximate 2025 on-demand
 * cloud list prices in USD, rounded; documented in docs/findings.md). Unknown model: the
 * "default" row. MFU/MBU need FLOPs/bytes per unit declared by the workload (hello). */
#ifndef GP_ENGINE_COST_H
#define GP_ENGINE_COST_H

#include "model/device.h"

typedef struct gp_price {
    const char *model;
    double usd_per_gpu_h;
} gp_price;

const gp_price *gp_price_table(int *n);
/* override > 0 wins; then $GOODPUT_PRICE_PER_GPU_HOUR; then the table by spec model. */
double gp_price_per_gpu_h(const gp_gpu_spec *spec, double override);

typedef struct gp_unit_economics {
    double usd_per_unit, usd_per_1m_tokens, usd_per_1k_steps; /* < 0 unknown */
    double j_per_unit;                                        /* < 0 unknown */
    double mfu, mbu;                                          /* < 0 unknown */
} gp_unit_economics;

/* alloc_gpu_s: paid GPU-seconds; units/steps: useful work; energy_j < 0 unknown;
 * units_per_s: achieved rate; spec may be NULL (MFU/MBU unknown). */
void gp_unit_economics_compute(double alloc_gpu_s, double price_per_gpu_h, double units,
                               int units_are_tokens, double steps, double energy_j,
                               double units_per_s, int n_gpus, double flops_per_unit,
                               double bytes_per_unit, const gp_gpu_spec *spec,
                               gp_unit_economics *out);

#endif
