/* own_rows.h: a writable store connection's own sample and process rows invalidate job
 * results without a trigger program per row.
 *
 * Promise. The rule of schema.c's migration 14 holds for every row, whoever writes it: a
 * sample or process row stored at ts_ns deletes every stored result with
 * t0_ns <= ts_ns <= t1_ns whenever ts_ns <= job_results_hwm.t1_ns. Other connections (the
 * sqlite3 shell, another program, a goodput store opened without GP_STORE_OWN_ROWS) keep
 * the schema's triggers. On a connection where gp_own_rows_install() succeeded (the agent's
 * store), the schema's triggers are off and each of them runs as a TEMP copy (same text, same
 * tables) except the two on samples and proc_samples: store.c applies their rule itself, one
 * bound read per batch of rows (gp_store_put_samples), and refuses any other INSERT into those
 * two tables on the connection (an authorizer), so no write there can skip the rule.
 *
 * Why: a trigger costs a sub-program call per row (~2.1 k instructions, a seventh of a
 * sample row, docs/benchmarks.md agent cost), and with a trigger a multi-row INSERT goes
 * through a temporary table; without them the agent writes its rows in batches. */
#ifndef GP_STORE_OWN_ROWS_H
#define GP_STORE_OWN_ROWS_H

#include <sqlite3.h>

/* The flag the authorizer reads: non-zero while the store prepares or steps its own
 * statements on samples and proc_samples (a re-prepare happens inside a step). */
typedef struct {
    int own;
} gp_own_rows_gate;

/* Installs the above on db (writable, migrated, before any statement is prepared).
 * Returns 1 installed, 0 not: the triggers on samples or proc_samples are not exactly
 * migration 14's, or a step failed; the schema's triggers then stay on and run per row,
 * as before, and nothing of the above is left on the connection. */
int gp_own_rows_install(sqlite3 *db, gp_own_rows_gate *gate);

#endif
