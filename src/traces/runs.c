/* runs.c: one run per file. A folder of traces may hold files of the same rank from two
 * runs (a job profiled twice, or restarted); summing them into one rank makes numbers that
 * belong to no run. Files are grouped into runs here: two files of the same rank are never
 * in one run, and files of different ranks join a run when their time spans overlap (the
 * ranks of one job profile the same steps at the same time). Files are visited in order of
 * their first timestamp, so the result does not depend on file names. When no rank appears
 * twice, every file is one run, exactly as before (HTA's view of a folder). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "traces/trace.h"

int gp_rank_from_filename(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    static const char *const keys[] = {"rank", "worker", NULL};
    for (int k = 0; keys[k]; k++) {
        size_t kl = strlen(keys[k]);
        for (const char *p = base; (p = strstr(p, keys[k])); p += kl) {
            const char *d = p + kl;
            while (*d == '-' || *d == '_' || *d == '.')
                d++;
            if (!isdigit((unsigned char)*d)) continue;
            long v = strtol(d, NULL, 10);
            if (v >= 0 && v < 1000000) return (int)v;
        }
    }
    return -1;
}

typedef struct {
    double t0, t1;
    size_t idx;
} item;

static int cmp_item(const void *a, const void *b) {
    const item *x = a, *y = b;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int gp_trace_assign_runs(gp_rank_result *res, size_t n) {
    for (size_t i = 0; i < n; i++)
        res[i].run = 0;
    int *rk = malloc((n + 1) * sizeof *rk);
    if (!rk) abort();
    for (size_t i = 0; i < n; i++)
        rk[i] = res[i].rank;
    qsort(rk, n, sizeof *rk, cmp_int);
    int dup = 0;
    for (size_t i = 1; i < n; i++)
        dup |= rk[i] == rk[i - 1];
    free(rk);
    if (!dup) return n ? 1 : 0;
    item *it = malloc(n * sizeof *it);
    /* per run: its span and a rank set (a sorted small array is enough: runs are few) */
    double *r0 = malloc(n * sizeof *r0), *r1 = malloc(n * sizeof *r1);
    if (!it || !r0 || !r1) abort();
    for (size_t i = 0; i < n; i++) {
        double t0 = res[i].t_first_us, t1 = res[i].t_last_us;
        it[i] = (item){isnan(t0) ? INFINITY : t0, isnan(t1) ? INFINITY : t1, i};
    }
    qsort(it, n, sizeof *it, cmp_item);
    int nruns = 0;
    for (size_t k = 0; k < n; k++) {
        const gp_rank_result *x = &res[it[k].idx];
        int chosen = -1;
        for (int run = 0; run < nruns && chosen < 0; run++) {
            if (!(it[k].t0 <= r1[run] && r0[run] <= it[k].t1)) continue; /* no overlap */
            int taken = 0;
            for (size_t j = 0; j < k && !taken; j++)
                taken = res[it[j].idx].run == run && res[it[j].idx].rank == x->rank;
            if (!taken) chosen = run;
        }
        if (chosen < 0) {
            chosen = nruns++;
            r0[chosen] = it[k].t0;
            r1[chosen] = it[k].t1;
        }
        res[it[k].idx].run = chosen;
        if (it[k].t0 < r0[chosen]) r0[chosen] = it[k].t0;
        if (it[k].t1 > r1[chosen]) r1[chosen] = it[k].t1;
    }
    free(it);
    free(r0);
    free(r1);
    return nruns;
}
