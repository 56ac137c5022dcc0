/* ledger_pg.h: the fleet ledger's PostgreSQL side (libpq): its schema, and idempotent
 * upserts of ledger rows. A row is a JSON object whose members are the columns of one
 * table (docs/fleet.md); its kind names the table:
 *   "job"      gp_ledger_jobs        key (host, job_id)
 *   "alloc"    gp_ledger_allocations key (host, job_id, uuid, from_ns)
 *   "window"   gp_ledger_windows     key (host, job_id, window_start_ns)
 *   "findings" gp_ledger_findings    key (host, job_id): the payload holds the job's whole
 *              set {"host", "job_id", "findings": [...]}, which replaces the stored set.
 * Applying the same row twice leaves the ledger as applying it once: re-sending after a
 * crash or a lost acknowledgement never doubles anything.
 *
 * Connections: gp_ledger_pg_connect adds short timeouts (connect 3 s, TCP user timeout
 * 3 s, keepalives) to the caller's URL so a cut network fails fast instead of stalling
 * the agent loop. */
#ifndef GP_FLEET_LEDGER_PG_H
#define GP_FLEET_LEDGER_PG_H

#include <libpq-fe.h>
#include <stddef.h>

/* Connects and creates the ledger's tables if missing. NULL on failure (err filled). */
PGconn *gp_ledger_pg_connect(const char *url, char *err, size_t errlen);
int gp_ledger_pg_ensure_schema(PGconn *c, char *err, size_t errlen);

/* One batch: BEGIN, apply every row, COMMIT. 0 on commit; < 0 with err on any failure
 * (the transaction is rolled back: nothing of the batch is applied). */
typedef struct gp_ledger_row {
    const char *kind;
    const char *payload; /* JSON object */
} gp_ledger_row;
int gp_ledger_pg_apply(PGconn *c, const gp_ledger_row *rows, size_t n, char *err, size_t errlen);

/* The columns of a kind's table, key columns first (n_key of them); NULL if unknown. */
const char *const *gp_ledger_columns(const char *kind, int *n_cols, int *n_key);

#endif
