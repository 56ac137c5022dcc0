/* acct_prefix.h: a running job's accounting prefix, saved by the agent and resumed by every
 * reader (table job_prefix, schema 16), so that the report of a long-running job folds
 * only the rows that came after it instead of the job's whole history.
 *
 * Ended jobs have stored results (engine/results/job_results.h). A running job's summary
 * was computed from its whole history on each read: a day-long 8-GPU trainer ~1 s of CPU
 * and ~34 MiB, growing with the job's age. The accounting already folds a running job
 * incrementally (gp_job_acct, job_summary.h: per-allocation sums, the activity timeline,
 * a frozen labelled past, gp_goodput_ckpt); the agent's sealing child now saves that
 * state (gp_acct_prefix_pass) and gp_job_summary_compute, asked for a whole history with
 * the default options, loads it and folds only the rows after it. The result is bit for
 * bit what the whole computation gives (tests/unit/test_acct_prefix.c checks every field
 * with ==, tests/integration/acct_prefix.sh the report's bytes):
 *  - sums over rows are folded in the same order (per allocation, in time order); the
 *    saved fold stops at a whole minute (GP_ACCT_PREFIX_LAG_NS behind the store's end) so a
 *    long job's fold goes on with the next minute's rollup exactly as one fold does
 *    (job_summary.c, fold_long), and every GPU's samples up to there are folded, so each
 *    instant of the activity timeline is merged once;
 *  - the labelled past is frozen at a step start (an edge of the sweep), with the sweep's
 *    state and every step duration (the median is exact: gp_goodput_ckpt.durs);
 *  - what the state cannot see it does not trust: the triggers delete a prefix when a row
 *    arrives for the time it folded (docs/reliability.md, "Running jobs' prefixes"), an
 *    event arriving later than its frozen past makes the reader compute the whole job
 *    (gp_goodput_compute_ckpt's staleness rule), and fp (the engine version and the
 *    state's layout) must match this build.
 * A read command only reads job_prefix; an older store without the table computes, and
 * GOODPUT_NO_PREFIX=1 in the environment makes every reader compute the whole history
 * (to compare the two: tests, benches).
 *
 * Cost: the saved state holds the events of the last GP_SUMMARY_FREEZE_LAG_NS (~100 bytes
 * each), the activity since the frozen past, and the 2 * GP_CKPT_MEDIAN_HALF step
 * durations around the median (goodput.h): ~1.2 MB for an 8-GPU trainer at 11 steps/s,
 * whatever its age; see docs/benchmarks.md. Past the raw retention only a long job (its
 * fold reads rollups from the raw boundary on) gets one (acct_prefix.c, save_one). */
#ifndef GP_ENGINE_ACCT_PREFIX_H
#define GP_ENGINE_ACCT_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "engine/accounting/job_summary.h"
#include "store/store.h"

/* The agent saves a job's prefix again once the saved one is this old. */
#define GP_ACCT_PREFIX_EVERY_NS (600 * 1000000000LL)
/* ... folded up to the whole minute at least this far behind the store's end. */
#define GP_ACCT_PREFIX_LAG_NS (60 * 1000000000LL)
/* Jobs younger than this get none (their whole history is cheap). */
#define GP_ACCT_PREFIX_MIN_AGE_NS (600 * 1000000000LL)
/* A prefix must never make a read cost more memory than computing without it: a state
 * holding more unfrozen events than one slice of the one-shot computation
 * (GP_SUMMARY_ONESHOT_SLICE_EVENTS, job_summary.h) is not saved (the job is declined until
 * the next pass) and not loaded (the reader reads the count from the blob's head before
 * the blob). A job that never freezes (no cut the checkpoint rules allow, e.g. a phase
 * open across every step's start) holds every event since its start: on the 1-hour demo
 * store train-starved's 20,906 events, a 2.1 MB state, made the report peak 7.6 MiB where
 * the whole computation in slices peaks 5.4 MiB (docs/benchmarks.md; its data_wait phases,
 * begun at each step's start, are carried by its cuts since). */
#define GP_ACCT_PREFIX_MAX_EVENTS GP_SUMMARY_ONESHOT_SLICE_EVENTS

/* ---- writer (the agent's sealing child) ---- */
/* Saves the prefixes of the running jobs whose saved one is missing or older than
 * GP_ACCT_PREFIX_EVERY_NS at now_ns, until budget_cpu_s of CPU is spent (at least one
 * job; <= 0: no limit). Computes between short write transactions of its own (a claim
 * first, as job_results.c does). Returns how many were saved, or -1 with err. */
int gp_acct_prefix_pass(gp_store *s, int64_t now_ns, double budget_cpu_s, char *err, size_t errlen);
/* Whether gp_acct_prefix_pass at now_ns would find a job: 1 yes, 0 no, -1 store error. */
int gp_acct_prefix_pending(gp_store *s, int64_t now_ns);
/* A writer killed while computing leaves its claims: this deletes them (0, or -1). */
int gp_acct_prefix_unclaim(gp_store *s);

/* ---- readers ---- */
/* The job's saved state, ready for gp_job_acct_update (which then folds only the rows
 * after it), when one is stored for this build; NULL: none (or no table, or out of
 * memory): compute the whole history. The caller frees it. */
gp_job_acct *gp_acct_prefix_load(gp_store *s, const char *job_id);

/* The state's bytes (for tests): malloc'ed into *buf; 0, -1 on OOM. */
int gp_acct_prefix_encode(const gp_job_acct *a, unsigned char **buf, size_t *len);
/* ... and back: NULL when the bytes are not a state of this build's layout. */
gp_job_acct *gp_acct_prefix_decode(const char *job_id, const unsigned char *buf, size_t len);
/* The fingerprint a stored prefix must carry: 0, -1 when cap is too small. */
int gp_acct_prefix_fp(char *buf, size_t cap);

#endif
