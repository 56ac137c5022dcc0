/* ledger.h: the agent's side of the fleet ledger. Each node keeps its SQLite store; with
 * a ledger the agent also writes its job ledger (jobs, allocations, lifecycle, windows
 * with goodput and badput, findings; never raw samples) to PostgreSQL, keyed by
 * (host, job[, window start]) so every write is an idempotent upsert.
 *
 * Two steps, both on the agent's thread (an agent hook, at most every 2 s of wall time;
 * collect at most once per interval_ns of source time, push whenever rows wait):
 *   collect  derives ledger rows from the store and puts each row whose content changed
 *            since it was last spooled into the spool (table ledger_spool in the same
 *            SQLite file, one transaction), one row per key: a newer version replaces a
 *            waiting one, so the spool is bounded by the number of distinct rows.
 *   push     sends spooled rows to PostgreSQL in order (by spool sequence), in batches;
 *            a batch is deleted from the spool only after PostgreSQL committed it.
 * A crash between the commit and the delete re-sends a batch: the upserts make that
 * harmless (nothing doubled). While PostgreSQL is unreachable rows wait in the spool
 * (nothing lost) and reconnects are tried every retry interval. When the spool is full
 * (spool_max_rows) collect stops spooling new rows and leaves their digests unchanged,
 * so they are derived again from the store once the spool drains: bounded, still nothing
 * lost as long as the store keeps the data.
 *
 * Windows: fixed windows of window_ns source time aligned to multiples of window_ns; the
 * open window is upserted as it grows. Jobs carry their whole-history totals. */
#ifndef GP_FLEET_LEDGER_H
#define GP_FLEET_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "store/store.h"

typedef struct gp_ledger_opts {
    const char *url;       /* postgresql://... (libpq URI or conninfo) */
    const char *host;      /* this node's name; NULL = gethostname() */
    const char *cluster;   /* NULL = $GOODPUT_CLUSTER, else "default" */
    const char *partition; /* NULL = $GOODPUT_PARTITION, else unknown (NULL in the ledger) */
    int64_t window_ns;     /* 0 = $GOODPUT_LEDGER_WINDOW (a duration), else 1 h */
    size_t spool_max_rows; /* 0 = 200000 */
    int batch_rows;        /* 0 = 500 */
    int64_t retry_ns;      /* wall time between reconnect attempts; 0 = 5 s */
    int64_t interval_ns;   /* source time between collect passes in the agent; 0 = 5 min */
} gp_ledger_opts;

typedef struct gp_ledger_stats {
    uint64_t collected;  /* rows put into the spool */
    uint64_t sent;       /* rows committed in PostgreSQL */
    uint64_t batches;    /* batches committed */
    uint64_t failures;   /* failed connects or batches */
    uint64_t spool_full; /* rows not spooled because the spool was full (retried later) */
    size_t spool_rows;   /* rows waiting now */
    int connected;
    char last_error[256];
} gp_ledger_stats;

typedef struct gp_ledger gp_ledger;

/* Opens the ledger on a store. Does not need PostgreSQL to be up. */
int gp_ledger_open(const gp_ledger_opts *o, gp_store *s, gp_ledger **out, char *err, size_t errlen);
void gp_ledger_close(gp_ledger *l);

/* Store -> spool. now_ns: the store's clock (source time); < 0 = the store's last time. */
int gp_ledger_collect(gp_ledger *l, int64_t now_ns, char *err, size_t errlen);
/* Spool -> PostgreSQL. Returns the rows left in the spool (0 = caught up), < 0 when
 * PostgreSQL cannot be reached or refused a batch (rows stay spooled; err says why).
 * Honors the retry interval unless force is set. */
long gp_ledger_push(gp_ledger *l, int force, char *err, size_t errlen);
/* Final catch-up: collect, then push until the spool is empty or timeout_ns of wall
 * time passed. 0 when caught up. */
int gp_ledger_drain(gp_ledger *l, int64_t timeout_ns, char *err, size_t errlen);

/* Registers collect + push as an agent hook (see above). */
void gp_ledger_attach(gp_ledger *l, gp_agent *a);
const gp_ledger_stats *gp_ledger_get_stats(const gp_ledger *l);

#endif
