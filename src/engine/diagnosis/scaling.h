/* scaling.h: scaling efficiency between runs of one job at different GPU counts:
 * efficiency = (thr_N / thr_M) / (N / M). 1 = linear; below the bound (default 0.7,
 * GP_TH_SCALE_EFFICIENCY) the N-GPU run is scale_inefficient. Pure. */
#ifndef GP_ENGINE_SCALING_H
#define GP_ENGINE_SCALING_H

/* < 0 when an input is not positive. */
double gp_scaling_efficiency(double thr_n, int n, double thr_m, int m);

#endif
