/* dl_pq.c: the libpq functions goodput calls (the fleet ledger, fleet/ledger_pg.c and
 * fleet/fleet_report.c), forwarded to libpq.so.5 opened on first use (dl.h explains why).
 * Without the library: no connection (NULL, whose PQstatus is CONNECTION_BAD), no result
 * (NULL, whose PQresultStatus is PGRES_FATAL_ERROR), as libpq itself answers for NULL. */
#include <libpq-fe.h>
#include <pthread.h>

#include "util/dl.h"

static struct {
    __typeof__(PQconnectdbParams) *connectdb_params;
    __typeof__(PQfinish) *finish;
    __typeof__(PQstatus) *status;
    __typeof__(PQerrorMessage) *error_message;
    __typeof__(PQexec) *exec;
    __typeof__(PQexecParams) *exec_params;
    __typeof__(PQprepare) *prepare;
    __typeof__(PQsendQueryPrepared) *send_query_prepared;
    __typeof__(PQgetResult) *get_result;
    __typeof__(PQenterPipelineMode) *enter_pipeline_mode;
    __typeof__(PQexitPipelineMode) *exit_pipeline_mode;
    __typeof__(PQpipelineSync) *pipeline_sync;
    __typeof__(PQresultStatus) *result_status;
    __typeof__(PQresultErrorMessage) *result_error_message;
    __typeof__(PQntuples) *ntuples;
    __typeof__(PQgetvalue) *getvalue;
    __typeof__(PQgetisnull) *getisnull;
    __typeof__(PQclear) *clear;
} fn;

/* PQenterPipelineMode and friends came with libpq 14 (Debian 12 ships 15). */
static const gp_dl_sym syms[] = {
    {"PQconnectdbParams", &fn.connectdb_params},
    {"PQfinish", &fn.finish},
    {"PQstatus", &fn.status},
    {"PQerrorMessage", &fn.error_message},
    {"PQexec", &fn.exec},
    {"PQexecParams", &fn.exec_params},
    {"PQprepare", &fn.prepare},
    {"PQsendQueryPrepared", &fn.send_query_prepared},
    {"PQgetResult", &fn.get_result},
    {"PQenterPipelineMode", &fn.enter_pipeline_mode},
    {"PQexitPipelineMode", &fn.exit_pipeline_mode},
    {"PQpipelineSync", &fn.pipeline_sync},
    {"PQresultStatus", &fn.result_status},
    {"PQresultErrorMessage", &fn.result_error_message},
    {"PQntuples", &fn.ntuples},
    {"PQgetvalue", &fn.getvalue},
    {"PQgetisnull", &fn.getisnull},
    {"PQclear", &fn.clear},
};

static gp_dl_lib lib = {"libpq", "libpq5", "libpq.so.5", syms, sizeof syms / sizeof syms[0],
                        0,       NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    gp_dl_open(&lib);
}

int gp_dl_pq_load(void) {
    pthread_once(&once, init);
    return lib.ok ? 0 : -1;
}

/* libpq returns writable strings; these are never written by goodput. */
static char not_loaded[] = "libpq (libpq5) could not be loaded\n";
static char empty[] = "";

PGconn *PQconnectdbParams(const char *const *keywords, const char *const *values,
                          int expand_dbname) {
    return gp_dl_pq_load() ? NULL : fn.connectdb_params(keywords, values, expand_dbname);
}

/* NULL is a no-op, as in libpq, and does not load the library. */
void PQfinish(PGconn *conn) {
    if (conn && !gp_dl_pq_load()) fn.finish(conn);
}

ConnStatusType PQstatus(const PGconn *conn) {
    return gp_dl_pq_load() ? CONNECTION_BAD : fn.status(conn);
}

char *PQerrorMessage(const PGconn *conn) {
    return gp_dl_pq_load() ? not_loaded : fn.error_message(conn);
}

PGresult *PQexec(PGconn *conn, const char *query) {
    return gp_dl_pq_load() ? NULL : fn.exec(conn, query);
}

PGresult *PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                       const char *const *paramValues, const int *paramLengths,
                       const int *paramFormats, int resultFormat) {
    if (gp_dl_pq_load()) return NULL;
    return fn.exec_params(conn, command, nParams, paramTypes, paramValues, paramLengths,
                          paramFormats, resultFormat);
}

PGresult *PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
                    const Oid *paramTypes) {
    return gp_dl_pq_load() ? NULL : fn.prepare(conn, stmtName, query, nParams, paramTypes);
}

int PQsendQueryPrepared(PGconn *conn, const char *stmtName, int nParams,
                        const char *const *paramValues, const int *paramLengths,
                        const int *paramFormats, int resultFormat) {
    if (gp_dl_pq_load()) return 0;
    return fn.send_query_prepared(conn, stmtName, nParams, paramValues, paramLengths, paramFormats,
                                  resultFormat);
}

PGresult *PQgetResult(PGconn *conn) {
    return gp_dl_pq_load() ? NULL : fn.get_result(conn);
}

int PQenterPipelineMode(PGconn *conn) {
    return gp_dl_pq_load() ? 0 : fn.enter_pipeline_mode(conn);
}

int PQexitPipelineMode(PGconn *conn) {
    return gp_dl_pq_load() ? 0 : fn.exit_pipeline_mode(conn);
}

int PQpipelineSync(PGconn *conn) {
    return gp_dl_pq_load() ? 0 : fn.pipeline_sync(conn);
}

ExecStatusType PQresultStatus(const PGresult *res) {
    return gp_dl_pq_load() ? PGRES_FATAL_ERROR : fn.result_status(res);
}

char *PQresultErrorMessage(const PGresult *res) {
    return gp_dl_pq_load() ? not_loaded : fn.result_error_message(res);
}

int PQntuples(const PGresult *res) {
    return gp_dl_pq_load() ? 0 : fn.ntuples(res);
}

char *PQgetvalue(const PGresult *res, int tup_num, int field_num) {
    return gp_dl_pq_load() ? empty : fn.getvalue(res, tup_num, field_num);
}

int PQgetisnull(const PGresult *res, int tup_num, int field_num) {
    return gp_dl_pq_load() ? 1 : fn.getisnull(res, tup_num, field_num);
}

void PQclear(PGresult *res) {
    if (res && !gp_dl_pq_load()) fn.clear(res);
}
