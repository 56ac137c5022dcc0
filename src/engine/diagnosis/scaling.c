/* scaling.c: see scaling.h. */
#include "engine/diagnosis/scaling.h"

double gp_scaling_efficiency(double thr_n, int n, double thr_m, int m) {
    if (thr_n <= 0 || thr_m <= 0 || n <= 0 || m <= 0) return -1;
    return (thr_n / thr_m) / ((double)n / (double)m);
}
