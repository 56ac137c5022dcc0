/* ledger_pg.c: the ledger's tables in PostgreSQL and the idempotent upserts into them.
 *
 * Tables are generated from one column list per kind (the DDL type follows the column
 * name's unit suffix: _ns bigint, _s/_kwh/goodput/cost/confidence double precision), so
 * the schema, the upserts and docs/fleet.md cannot drift apart. A batch is sent in libpq
 * pipeline mode between two syncs: PostgreSQL runs it as one implicit transaction, so
 * a batch is applied whole or not at all, at one round trip per batch instead of one
 * per row. */
#include "fleet/ledger_pg.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define B_COLS                                                                                     \
    "productive_gpu_s", "not_ready_gpu_s", "startup_gpu_s", "data_wait_gpu_s", "checkpoint_gpu_s", \
        "wasted_progress_gpu_s", "recovery_gpu_s", "idle_allocated_gpu_s", "other_gpu_s"

static const char *const job_cols[] = {"host",
                                       "job_id",
                                       "cluster",
                                       "partition",
                                       "name",
                                       "user_name",
                                       "origin",
                                       "gpu_model",
                                       "n_gpus",
                                       "kind",
                                       "submitted_ns",
                                       "allocated_ns",
                                       "ready_ns",
                                       "ended_ns",
                                       "exit_state",
                                       "exit_code",
                                       "queue_wait_s",
                                       "allocated_gpu_s",
                                       "goodput",
                                       B_COLS,
                                       "busy_gpu_s",
                                       "energy_kwh",
                                       NULL};
static const char *const alloc_cols[] = {"host",  "job_id",    "uuid", "from_ns",
                                         "to_ns", "gpu_model", NULL};
static const char *const window_cols[] = {
    "host",      "job_id", "window_start_ns", "window_end_ns", "cluster", "partition",  "user_name",
    "gpu_model", "n_gpus", "allocated_gpu_s", "goodput",       B_COLS,    "busy_gpu_s", NULL};
static const char *const finding_cols[] = {"host",           "job_id",      "ord",        "class",
                                           "scope",          "scope_id",    "t0_ns",      "t1_ns",
                                           "wasted_gpu_s",   "wasted_cost", "confidence", "summary",
                                           "recommendation", "evidence",    NULL};

static const struct kind_def {
    const char *kind, *table, *stmt;
    const char *const *cols;
    int n_key;
} kinds[] = {
    {"job", "gp_ledger_jobs", "gp_up_job", job_cols, 2},
    {"alloc", "gp_ledger_allocations", "gp_up_alloc", alloc_cols, 4},
    {"window", "gp_ledger_windows", "gp_up_window", window_cols, 3},
    {"finding", "gp_ledger_findings", "gp_up_finding", finding_cols, 3},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static int count_cols(const char *const *c) {
    int n = 0;
    while (c[n])
        n++;
    return n;
}

static const struct kind_def *kind_find(const char *kind) {
    for (size_t i = 0; i < N_KINDS; i++)
        if (strcmp(kinds[i].kind, kind) == 0) return &kinds[i];
    return NULL;
}

const char *const *gp_ledger_columns(const char *kind, int *n_cols, int *n_key) {
    const struct kind_def *k = kind_find(kind);
    if (!k) return NULL;
    if (n_cols) *n_cols = count_cols(k->cols);
    if (n_key) *n_key = k->n_key;
    return k->cols;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static const char *col_type(const char *c) {
    if (ends_with(c, "_ns") || !strcmp(c, "n_gpus") || !strcmp(c, "exit_code") || !strcmp(c, "ord"))
        return "bigint";
    if (ends_with(c, "_s") || ends_with(c, "_kwh") || !strcmp(c, "goodput") ||
        !strcmp(c, "wasted_cost") || !strcmp(c, "confidence"))
        return "double precision";
    if (!strcmp(c, "evidence")) return "jsonb";
    return "text";
}

/* Appends to a growing buffer; the buffer is large enough for every statement here. */
static void cat(char *buf, size_t len, const char *fmt, const char *a) {
    size_t u = strlen(buf);
    snprintf(buf + u, len - u, fmt, a);
}

static void build_ddl(const struct kind_def *k, char *buf, size_t len) {
    snprintf(buf, len, "CREATE TABLE IF NOT EXISTS %s (", k->table);
    for (int i = 0; k->cols[i]; i++) {
        cat(buf, len, "%s ", k->cols[i]);
        cat(buf, len, "%s", col_type(k->cols[i]));
        if (i < k->n_key) cat(buf, len, "%s", " NOT NULL");
        cat(buf, len, "%s", ", ");
    }
    cat(buf, len, "%s", "PRIMARY KEY (");
    for (int i = 0; i < k->n_key; i++) {
        cat(buf, len, "%s", k->cols[i]);
        cat(buf, len, "%s", i + 1 < k->n_key ? ", " : "))");
    }
}

static void build_upsert(const struct kind_def *k, char *buf, size_t len) {
    int n = count_cols(k->cols);
    snprintf(buf, len, "INSERT INTO %s (", k->table);
    for (int i = 0; i < n; i++) {
        cat(buf, len, "%s", k->cols[i]);
        cat(buf, len, "%s", i + 1 < n ? ", " : ") VALUES (");
    }
    for (int i = 0; i < n; i++) {
        char p[16];
        snprintf(p, sizeof p, "$%d", i + 1);
        cat(buf, len, "%s", p);
        cat(buf, len, "%s", i + 1 < n ? ", " : ") ON CONFLICT (");
    }
    for (int i = 0; i < k->n_key; i++) {
        cat(buf, len, "%s", k->cols[i]);
        cat(buf, len, "%s", i + 1 < k->n_key ? ", " : ") DO UPDATE SET ");
    }
    for (int i = k->n_key; i < n; i++) {
        cat(buf, len, "%s = ", k->cols[i]);
        cat(buf, len, "EXCLUDED.%s", k->cols[i]);
        cat(buf, len, "%s", i + 1 < n ? ", " : "");
    }
}

static int exec_ok(PGconn *c, const char *sql, char *err, size_t errlen) {
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) snprintf(err, errlen, "ledger: %s", PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

int gp_ledger_pg_ensure_schema(PGconn *c, char *err, size_t errlen) {
    char sql[4096];
    /* Agents start together: an advisory lock keeps their CREATEs from racing. */
    if (exec_ok(c, "BEGIN", err, errlen) != 0) return -1;
    if (exec_ok(c, "SELECT pg_advisory_xact_lock(7102026)", err, errlen) != 0) goto fail;
    for (size_t i = 0; i < N_KINDS; i++) {
        build_ddl(&kinds[i], sql, sizeof sql);
        if (exec_ok(c, sql, err, errlen) != 0) goto fail;
    }
    if (exec_ok(c,
                "CREATE INDEX IF NOT EXISTS gp_ledger_windows_start ON "
                "gp_ledger_windows (window_start_ns);"
                "CREATE INDEX IF NOT EXISTS gp_ledger_findings_class ON "
                "gp_ledger_findings (class)",
                err, errlen) != 0)
        goto fail;
    if (exec_ok(c, "COMMIT", err, errlen) != 0) goto fail;
    for (size_t i = 0; i < N_KINDS; i++) {
        build_upsert(&kinds[i], sql, sizeof sql);
        PGresult *r = PQprepare(c, kinds[i].stmt, sql, 0, NULL);
        int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok) {
            snprintf(err, errlen, "ledger: preparing %s: %s", kinds[i].table, PQerrorMessage(c));
            return -1;
        }
    }
    PGresult *r =
        PQprepare(c, "gp_del_findings",
                  "DELETE FROM gp_ledger_findings WHERE host = $1 AND job_id = $2", 0, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        snprintf(err, errlen, "ledger: %s", PQerrorMessage(c));
        return -1;
    }
    return 0;
fail:
    PQclear(PQexec(c, "ROLLBACK"));
    return -1;
}

PGconn *gp_ledger_pg_connect(const char *url, char *err, size_t errlen) {
    const char *keys[] = {"dbname",
                          "connect_timeout",
                          "tcp_user_timeout",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "application_name",
                          NULL};
    const char *vals[] = {url, "3", "3000", "5", "2", "2", "goodput-ledger", NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        const char *m = c ? PQerrorMessage(c) : "out of memory";
        size_t l = strlen(m);
        while (l && (m[l - 1] == '\n' || m[l - 1] == ' '))
            l--;
        snprintf(err, errlen, "ledger: cannot connect to PostgreSQL: %.*s", (int)l, m);
        PQfinish(c);
        return NULL;
    }
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    if (gp_ledger_pg_ensure_schema(c, err, errlen) != 0) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* Text parameters from a JSON object, in column order; NULL for missing/null. */
#define MAX_COLS 40
typedef struct params {
    const char *v[MAX_COLS];
    char num[MAX_COLS][32];
    char *owned[MAX_COLS];
    int n;
} params;

static void params_free(params *p) {
    for (int i = 0; i < p->n; i++)
        free(p->owned[i]);
}

static void params_fill(params *p, const char *const *cols, json_t *o) {
    memset(p, 0, sizeof *p);
    for (int i = 0; cols[i] && i < MAX_COLS; i++, p->n++) {
        json_t *x = json_object_get(o, cols[i]);
        if (json_is_string(x))
            p->v[i] = json_string_value(x);
        else if (json_is_integer(x)) {
            snprintf(p->num[i], sizeof p->num[i], "%lld", (long long)json_integer_value(x));
            p->v[i] = p->num[i];
        } else if (json_is_real(x)) {
            snprintf(p->num[i], sizeof p->num[i], "%.17g", json_real_value(x));
            p->v[i] = p->num[i];
        } else if (json_is_boolean(x))
            p->v[i] = json_is_true(x) ? "1" : "0";
        else if (json_is_object(x) || json_is_array(x))
            p->v[i] = p->owned[i] = json_dumps(x, JSON_COMPACT);
    }
}

/* Sends the statements of one row; returns how many results to expect, < 0 on error. */
static int send_row(PGconn *c, const gp_ledger_row *row, char *err, size_t errlen) {
    json_error_t je;
    json_t *o = json_loads(row->payload, 0, &je);
    if (!json_is_object(o)) {
        snprintf(err, errlen, "ledger: spooled %s row is not a JSON object: %s", row->kind,
                 je.text);
        json_decref(o);
        return -1;
    }
    int sent = 0;
    params p;
    if (strcmp(row->kind, "findings") == 0) {
        const char *kv[2] = {json_string_value(json_object_get(o, "host")),
                             json_string_value(json_object_get(o, "job_id"))};
        if (!PQsendQueryPrepared(c, "gp_del_findings", 2, kv, NULL, NULL, 0)) goto send_fail;
        sent++;
        json_t *arr = json_object_get(o, "findings"), *f;
        size_t i;
        json_array_foreach(arr, i, f) {
            json_object_set(f, "host", json_object_get(o, "host"));
            json_object_set(f, "job_id", json_object_get(o, "job_id"));
            json_object_set_new(f, "ord", json_integer((json_int_t)i));
            params_fill(&p, finding_cols, f);
            int ok = PQsendQueryPrepared(c, "gp_up_finding", p.n, p.v, NULL, NULL, 0);
            params_free(&p);
            if (!ok) goto send_fail;
            sent++;
        }
    } else {
        const struct kind_def *k = kind_find(row->kind);
        if (!k) {
            snprintf(err, errlen, "ledger: unknown row kind '%s'", row->kind);
            json_decref(o);
            return -1;
        }
        params_fill(&p, k->cols, o);
        int ok = PQsendQueryPrepared(c, k->stmt, p.n, p.v, NULL, NULL, 0);
        params_free(&p);
        if (!ok) goto send_fail;
        sent++;
    }
    json_decref(o);
    return sent;
send_fail:
    snprintf(err, errlen, "ledger: %s", PQerrorMessage(c));
    json_decref(o);
    return -1;
}

int gp_ledger_pg_apply(PGconn *c, const gp_ledger_row *rows, size_t n, char *err, size_t errlen) {
    if (n == 0) return 0;
    if (!PQenterPipelineMode(c)) {
        snprintf(err, errlen, "ledger: %s", PQerrorMessage(c));
        return -1;
    }
    int rc = 0;
    long expect = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int s = send_row(c, &rows[i], err, errlen);
        if (s < 0)
            rc = -1;
        else
            expect += s;
    }
    if (!PQpipelineSync(c)) {
        if (rc == 0) snprintf(err, errlen, "ledger: %s", PQerrorMessage(c));
        rc = -1;
    }
    /* Read every result up to the sync, even after a failure, to leave pipeline mode. */
    int synced = 0;
    while (!synced) {
        PGresult *r = PQgetResult(c);
        if (!r) {
            if (PQstatus(c) != CONNECTION_OK) break;
            continue; /* end of one query's results */
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC)
            synced = 1;
        else if (st == PGRES_FATAL_ERROR || st == PGRES_PIPELINE_ABORTED) {
            if (rc == 0) {
                const char *m = PQresultErrorMessage(r);
                snprintf(err, errlen, "ledger: batch rolled back: %s", m && *m ? m : "aborted");
                size_t l = strlen(err);
                while (l && err[l - 1] == '\n')
                    err[--l] = 0;
            }
            rc = -1;
        }
        PQclear(r);
    }
    (void)expect;
    if (!synced) {
        if (rc == 0) snprintf(err, errlen, "ledger: connection lost: %s", PQerrorMessage(c));
        return -1;
    }
    PQexitPipelineMode(c);
    return rc;
}
