/* cost.c: price table and unit economics (see cost.h). */
#include "engine/accounting/cost.h"

#include <stdlib.h>
#include <string.h>

static const gp_price prices[] = {
    {"B200", 6.00},
    {"H200", 4.00},
    {"H100-SXM", 3.00},
    {"H100-PCIE", 2.50},
    {"A100-SXM4-80GB", 1.80},
    {"A100-SXM4-40GB", 1.40},
    {"A100-PCIE-80GB", 1.60},
    {"A100-PCIE-40GB", 1.30},
    {"L40S", 1.00},
    {"V100", 0.90},
    {"L4", 0.60},
    {"T4", 0.35},
    {"default", 2.00},
};

const gp_price *gp_price_table(int *n) {
    if (n) *n = (int)(sizeof prices / sizeof prices[0]);
    return prices;
}

double gp_price_per_gpu_h(const gp_gpu_spec *spec, double override) {
    if (override > 0) return override;
    const char *env = getenv("GOODPUT_PRICE_PER_GPU_HOUR");
    if (env && atof(env) > 0) return atof(env);
    int n;
    const gp_price *p = gp_price_table(&n);
    if (spec)
        for (int i = 0; i < n; i++)
            if (!strcmp(p[i].model, spec->model)) return p[i].usd_per_gpu_h;
    return p[n - 1].usd_per_gpu_h;
}

void gp_unit_economics_compute(double alloc_gpu_s, double price, double units, int units_are_tokens,
                               double steps, double energy_j, double units_per_s, int n_gpus,
                               double flops_per_unit, double bytes_per_unit,
                               const gp_gpu_spec *spec, gp_unit_economics *o) {
    o->usd_per_unit = o->usd_per_1m_tokens = o->usd_per_1k_steps = -1;
    o->j_per_unit = o->mfu = o->mbu = -1;
    double usd = price > 0 ? price * alloc_gpu_s / 3600.0 : -1;
    if (usd >= 0 && units > 0) {
        o->usd_per_unit = usd / units;
        if (units_are_tokens) o->usd_per_1m_tokens = usd / units * 1e6;
    }
    if (usd >= 0 && steps > 0) o->usd_per_1k_steps = usd / steps * 1e3;
    if (energy_j >= 0 && units > 0) o->j_per_unit = energy_j / units;
    if (spec && n_gpus > 0 && units_per_s > 0) {
        double peak = spec->bf16_flops > 0 ? spec->bf16_flops : spec->fp16_flops;
        if (flops_per_unit > 0 && peak > 0) o->mfu = units_per_s * flops_per_unit / (n_gpus * peak);
        if (bytes_per_unit > 0 && spec->hbm_bytes_s > 0)
            o->mbu = units_per_s * bytes_per_unit / (n_gpus * spec->hbm_bytes_s);
    }
}
