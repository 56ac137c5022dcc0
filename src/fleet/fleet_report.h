/* fleet_report.h: fleet-wide reports from the PostgreSQL ledger (ledger_pg.h): goodput
 * and badput by cluster, partition, user, GPU model, host or job, and the fleet's
 * findings by class, in the same vocabulary as the node reports.
 *
 * Without a time range the report sums the jobs' whole-history totals (so it equals the
 * sum of the node reports); with one it sums the windows that start inside the range
 * (windows are whole: a range is rounded out to the ledger's window size).
 * Fleet goodput = productive GPU-s / allocated GPU-s over the jobs whose goodput is
 * known (jobs without progress events count in allocated GPU-hours, not in goodput). */
#ifndef GP_FLEET_FLEET_REPORT_H
#define GP_FLEET_FLEET_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct gp_fleet_report_opts {
    const char *url;
    const char *group_by;       /* cluster (default), partition, user, gpu_model, host, job */
    const char *cluster;        /* only this cluster; NULL = all */
    int64_t since_ns, until_ns; /* 0/0 = whole ledger */
    int json;
    int top; /* diagnose: findings to list; 0 = 10 */
} gp_fleet_report_opts;

/* 0 ok; < 0 with err (unreachable ledger, unknown group). */
int gp_fleet_report(const gp_fleet_report_opts *o, FILE *out, char *err, size_t errlen);
int gp_fleet_diagnose(const gp_fleet_report_opts *o, FILE *out, char *err, size_t errlen);

#endif
