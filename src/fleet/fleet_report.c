/* fleet_report.c: fleet reports are SQL aggregations in PostgreSQL (GROUPING SETS give
 * the groups and the total in one scan); this file only builds the query and prints. */
#include "fleet/fleet_report.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "engine/accounting/goodput.h"
#include "fleet/ledger_pg.h"

static const char *group_expr(const char *g) {
    if (!g || !strcmp(g, "cluster")) return "cluster";
    if (!strcmp(g, "partition")) return "coalesce(partition, '-')";
    if (!strcmp(g, "user")) return "coalesce(user_name, '-')";
    if (!strcmp(g, "gpu_model") || !strcmp(g, "gpu")) return "coalesce(gpu_model, '-')";
    if (!strcmp(g, "host")) return "host";
    if (!strcmp(g, "job")) return "host || '/' || job_id";
    return NULL;
}

static double dval(PGresult *r, int row, int col) {
    return PQgetisnull(r, row, col) ? -1 : strtod(PQgetvalue(r, row, col), NULL);
}

static json_t *num_or_null(double v) {
    return v >= 0 ? json_real(v) : json_null();
}

int gp_fleet_report(const gp_fleet_report_opts *o, FILE *out, char *err, size_t errlen) {
    const char *g = group_expr(o->group_by);
    if (!g) {
        snprintf(err, errlen,
                 "--by '%s': expected cluster, partition, user, gpu_model, host or job",
                 o->group_by);
        return -1;
    }
    PGconn *c = gp_ledger_pg_connect(o->url, err, errlen);
    if (!c) return -1;
    int windows = o->since_ns || o->until_ns;
    const char *table = windows ? "gp_ledger_windows" : "gp_ledger_jobs";
    /* Plain GROUP BY (hash aggregation); no DISTINCT on the jobs table, where a row is a
     * job. The total is summed here from the groups: every column is additive. */
    char where[256], sql[4096];
    snprintf(where, sizeof where, " FROM %s WHERE ($1::text IS NULL OR cluster = $1)%s", table,
             windows ? " AND window_start_ns >= $2::bigint AND window_start_ns < $3::bigint" : "");
    int n = snprintf(sql, sizeof sql,
                     "SELECT %s AS g, %s, sum(allocated_gpu_s),"
                     " sum(productive_gpu_s) FILTER (WHERE goodput IS NOT NULL),"
                     " sum(allocated_gpu_s) FILTER (WHERE goodput IS NOT NULL)",
                     g, windows ? "count(DISTINCT (host, job_id))" : "count(*)");
    for (int b = 0; b < GP_B__COUNT; b++)
        n += snprintf(sql + n, sizeof sql - (size_t)n, ", sum(%s_gpu_s)",
                      gp_bucket_name((gp_bucket)b));
    snprintf(sql + n, sizeof sql - (size_t)n, "%s GROUP BY 1 ORDER BY 3 DESC NULLS LAST, 1", where);
    char since[32], until[32];
    snprintf(since, sizeof since, "%lld", (long long)o->since_ns);
    snprintf(until, sizeof until, "%lld", (long long)(o->until_ns ? o->until_ns : INT64_MAX));
    const char *pv[3] = {o->cluster, since, until};
    int np = windows ? 3 : 1;
    PQclear(PQexec(c, "SET jit = off"));
    PGresult *r = PQexecParams(c, sql, np, NULL, pv, NULL, NULL, 0);
    char sql2[1024];
    /* Hosts (and, over windows, jobs) are distinct counts; over job rows a row is a job. */
    char jobs_q[400] = "NULL";
    if (windows)
        snprintf(jobs_q, sizeof jobs_q,
                 "(SELECT count(*) FROM (SELECT host, job_id%s GROUP BY host, job_id) j)", where);
    snprintf(sql2, sizeof sql2, "SELECT (SELECT count(*) FROM (SELECT host%s GROUP BY host) h), %s",
             where, jobs_q);
    PGresult *r2 = PQresultStatus(r) == PGRES_TUPLES_OK
                       ? PQexecParams(c, sql2, np, NULL, pv, NULL, NULL, 0)
                       : NULL;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQresultStatus(r2) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "ledger report: %s", PQerrorMessage(c));
        PQclear(r);
        PQclear(r2);
        PQfinish(c);
        return -1;
    }
    int rows = PQntuples(r);
    json_t *root = json_object(), *groups = json_array();
    long long t_jobs = 0;
    double t_alloc = 0, t_prod = 0, t_known = 0, t_b[GP_B__COUNT] = {0};
    for (int i = 0; i < rows; i++) {
        json_t *x = json_object(), *bk = json_object();
        json_object_set_new(x, "key", json_string(PQgetvalue(r, i, 0)));
        json_object_set_new(x, "jobs", json_integer(atoll(PQgetvalue(r, i, 1))));
        t_jobs += atoll(PQgetvalue(r, i, 1));
        double alloc = dval(r, i, 2), prod = dval(r, i, 3), known = dval(r, i, 4);
        if (alloc > 0) t_alloc += alloc;
        if (prod > 0) t_prod += prod;
        if (known > 0) t_known += known;
        json_object_set_new(x, "allocated_gpu_s", json_real(alloc > 0 ? alloc : 0));
        json_object_set_new(x, "allocated_gpu_h", json_real(alloc > 0 ? alloc / 3600 : 0));
        json_object_set_new(x, "goodput", known > 0 ? json_real(prod / known) : json_null());
        for (int b = 0; b < GP_B__COUNT; b++) {
            double v = dval(r, i, 5 + b);
            if (v > 0) t_b[b] += v;
            json_object_set_new(bk, gp_bucket_name((gp_bucket)b), num_or_null(v));
        }
        json_object_set_new(x, "gpu_s_by_bucket", bk);
        json_array_append_new(groups, x);
    }
    json_t *total = json_object(), *tb = json_object();
    json_object_set_new(total, "jobs",
                        json_integer(windows ? atoll(PQgetvalue(r2, 0, 1)) : t_jobs));
    json_object_set_new(total, "hosts", json_integer(atoll(PQgetvalue(r2, 0, 0))));
    json_object_set_new(total, "allocated_gpu_s", json_real(t_alloc));
    json_object_set_new(total, "allocated_gpu_h", json_real(t_alloc / 3600));
    json_object_set_new(total, "goodput", t_known > 0 ? json_real(t_prod / t_known) : json_null());
    for (int b = 0; b < GP_B__COUNT; b++)
        json_object_set_new(tb, gp_bucket_name((gp_bucket)b), json_real(t_b[b]));
    json_object_set_new(total, "gpu_s_by_bucket", tb);
    PQclear(r);
    PQclear(r2);
    PQfinish(c);
    json_object_set_new(root, "ledger", json_true());
    json_object_set_new(root, "group_by", json_string(o->group_by ? o->group_by : "cluster"));
    json_object_set_new(root, "source", json_string(windows ? "windows" : "jobs"));
    json_object_set_new(root, "groups", groups);
    json_object_set_new(root, "total", total);
    if (o->json) {
        json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        fputc('\n', out);
    } else {
        json_t *t = json_object_get(root, "total");
        json_t *tg = json_object_get(t, "goodput");
        fprintf(out, "Fleet ledger: %lld hosts, %lld jobs, %.2f GPU-h allocated, goodput %s",
                (long long)json_integer_value(json_object_get(t, "hosts")),
                (long long)json_integer_value(json_object_get(t, "jobs")),
                json_real_value(json_object_get(t, "allocated_gpu_h")),
                json_is_real(tg) ? "" : "-");
        if (json_is_real(tg)) fprintf(out, "%.1f%%", 100 * json_real_value(tg));
        fprintf(out, "\n\n%-28s %5s %10s %8s", o->group_by ? o->group_by : "cluster", "jobs",
                "GPU-h", "goodput");
        for (int b = 1; b < GP_B__COUNT; b++)
            fprintf(out, " %9.9s", gp_bucket_name((gp_bucket)b));
        fprintf(out, "\n");
        size_t i;
        json_t *x;
        json_array_foreach(groups, i, x) {
            double a = json_real_value(json_object_get(x, "allocated_gpu_s"));
            json_t *gx = json_object_get(x, "goodput");
            char gps[16] = "-";
            if (json_is_real(gx)) snprintf(gps, sizeof gps, "%.1f%%", 100 * json_real_value(gx));
            fprintf(out, "%-28.28s %5lld %10.2f %8s", json_string_value(json_object_get(x, "key")),
                    (long long)json_integer_value(json_object_get(x, "jobs")), a / 3600, gps);
            json_t *bk = json_object_get(x, "gpu_s_by_bucket");
            for (int b = 1; b < GP_B__COUNT; b++) {
                double v = json_real_value(json_object_get(bk, gp_bucket_name((gp_bucket)b)));
                fprintf(out, " %8.1f%%", a > 0 ? 100 * v / a : 0);
            }
            fprintf(out, "\n");
        }
        fprintf(out, "\nBadput columns are shares of allocated GPU-time. Per-node detail: goodput "
                     "report --db.\n");
    }
    json_decref(root);
    return 0;
}

int gp_fleet_diagnose(const gp_fleet_report_opts *o, FILE *out, char *err, size_t errlen) {
    const char *g = group_expr(o->group_by);
    if (!g) {
        snprintf(err, errlen,
                 "--by '%s': expected cluster, partition, user, gpu_model, host or job",
                 o->group_by);
        return -1;
    }
    PGconn *c = gp_ledger_pg_connect(o->url, err, errlen);
    if (!c) return -1;
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT %s AS g, f.class, count(*), count(DISTINCT f.host || '/' || f.job_id),"
             " sum(f.wasted_gpu_s), sum(f.wasted_cost) FROM gp_ledger_findings f"
             " JOIN gp_ledger_jobs j USING (host, job_id)"
             " WHERE ($1::text IS NULL OR j.cluster = $1)"
             " GROUP BY 1, 2 ORDER BY 5 DESC NULLS LAST, 1, 2",
             !strcmp(g, "host || '/' || job_id") ? "j.host || '/' || j.job_id"
             : !strcmp(g, "host")                ? "j.host"
                                                 : g);
    const char *pv[2] = {o->cluster, NULL};
    PGresult *r = PQexecParams(c, sql, 1, NULL, pv, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "ledger diagnose: %s", PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        return -1;
    }
    json_t *root = json_object(), *classes = json_array(), *top = json_array();
    for (int i = 0; i < PQntuples(r); i++)
        json_array_append_new(
            classes,
            json_pack("{s:s, s:s, s:I, s:I, s:o, s:o}", "key", PQgetvalue(r, i, 0), "class",
                      PQgetvalue(r, i, 1), "findings", (json_int_t)atoll(PQgetvalue(r, i, 2)),
                      "jobs", (json_int_t)atoll(PQgetvalue(r, i, 3)), "wasted_gpu_h",
                      PQgetisnull(r, i, 4) ? json_null() : json_real(dval(r, i, 4) / 3600),
                      "wasted_cost", num_or_null(dval(r, i, 5))));
    PQclear(r);
    char lim[16];
    snprintf(lim, sizeof lim, "%d", o->top > 0 ? o->top : 10);
    pv[1] = lim;
    r = PQexecParams(
        c,
        "SELECT f.host, f.job_id, f.class, f.scope, f.scope_id, f.wasted_gpu_s,"
        " f.wasted_cost, f.confidence, f.summary, f.recommendation, f.evidence::text"
        " FROM gp_ledger_findings f JOIN gp_ledger_jobs j USING (host, job_id)"
        " WHERE ($1::text IS NULL OR j.cluster = $1)"
        " ORDER BY f.wasted_gpu_s DESC NULLS LAST, f.host, f.job_id, f.ord LIMIT $2::int",
        2, NULL, pv, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        snprintf(err, errlen, "ledger diagnose: %s", PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        json_decref(root);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        json_t *ev = json_loads(PQgetvalue(r, i, 10), 0, NULL);
        json_array_append_new(
            top,
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:f, s:s, s:s, s:o}", "host",
                      PQgetvalue(r, i, 0), "job", PQgetvalue(r, i, 1), "class", PQgetvalue(r, i, 2),
                      "scope", PQgetvalue(r, i, 3), "scope_id", PQgetvalue(r, i, 4), "wasted_gpu_h",
                      PQgetisnull(r, i, 5) ? json_null() : json_real(dval(r, i, 5) / 3600),
                      "wasted_cost", num_or_null(dval(r, i, 6)), "confidence", dval(r, i, 7),
                      "summary", PQgetvalue(r, i, 8), "recommendation", PQgetvalue(r, i, 9),
                      "evidence", ev ? ev : json_array()));
    }
    PQclear(r);
    PQfinish(c);
    json_object_set_new(root, "ledger", json_true());
    json_object_set_new(root, "group_by", json_string(o->group_by ? o->group_by : "cluster"));
    json_object_set_new(root, "classes", classes);
    json_object_set_new(root, "top", top);
    if (o->json) {
        json_dumpf(root, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        fputc('\n', out);
    } else {
        fprintf(out, "Fleet findings by %s and class (wasted GPU-hours):\n",
                o->group_by ? o->group_by : "cluster");
        size_t i;
        json_t *x;
        json_array_foreach(classes, i, x) {
            json_t *w = json_object_get(x, "wasted_gpu_h");
            fprintf(out, "  %-24.24s %-22s %4lld findings in %4lld jobs  %s",
                    json_string_value(json_object_get(x, "key")),
                    json_string_value(json_object_get(x, "class")),
                    (long long)json_integer_value(json_object_get(x, "findings")),
                    (long long)json_integer_value(json_object_get(x, "jobs")),
                    json_is_real(w) ? "" : "-");
            if (json_is_real(w)) fprintf(out, "%.2f GPU-h", json_real_value(w));
            fputc('\n', out);
        }
        fprintf(out, "\nCostliest findings:\n");
        json_array_foreach(top, i, x) {
            json_t *w = json_object_get(x, "wasted_gpu_h");
            fprintf(out, "  %s/%s  %s (%s %s)  %.2f GPU-h\n    %s\n    fix: %s\n",
                    json_string_value(json_object_get(x, "host")),
                    json_string_value(json_object_get(x, "job")),
                    json_string_value(json_object_get(x, "class")),
                    json_string_value(json_object_get(x, "scope")),
                    json_string_value(json_object_get(x, "scope_id")),
                    json_is_real(w) ? json_real_value(w) : 0.0,
                    json_string_value(json_object_get(x, "summary")),
                    json_string_value(json_object_get(x, "recommendation")));
        }
        if (json_array_size(classes) == 0) fprintf(out, "  (no findings in the ledger yet)\n");
    }
    json_decref(root);
    return 0;
}
