/* job_results.h: ended jobs' results (summary and diagnosis), computed once by the writer
 * and read by every reader (table job_results, schema 13).
 *
 * A report of a month reads every job's whole history (a day-long 8-GPU trainer is ~1M
 * events): recomputing ended jobs on every read cannot answer in under a second. An ended
 * job's result no longer changes, so the agent computes it once it is sealed (below) with
 * the one accounting module (gp_job_summary_compute) and the one diagnosis
 * (gp_diagnose_one), and stores the bytes of both. A reader serves a stored result only
 * when it is exactly what computing it would give now:
 *  - fingerprints: the engine's version (gp_engine_version, a hash of src/engine, src/model
 *    and src/store made at build time, so any change of the code recomputes), the struct
 *    sizes, and every option the result depends on (summary: SLOs, rollup, freeze and
 *    slice options; diagnosis: price, SLOs, GOODPUT_PRICE_PER_GPU_HOUR, GOODPUT_DIAG_RAW);
 *    a reader asking for other options computes;
 *  - input: triggers delete a result when a row it depends on arrives or changes later
 *    (schema.c, migration 13), and retention deletes those whose raw samples it prunes;
 *  - range: only a whole-history summary is served (a window computes);
 *  - pruned: once retention deleted a job's events (gp_store_retain_events moved its result
 *    to job_events_pruned, schema 15), its result is served whatever engine stored it (the
 *    struct sizes and options must still match) with gp_job_summary.events_pruned_ns set,
 *    computing it is refused (the accounting and the diagnosis input check the mark), and
 *    the writer never stores it again.
 * The one field that follows the store rather than the job, span_s (the store's time
 * span), is filled in at read time. A read command opens the store read-only and never
 * writes: an older store without the table simply computes.
 *
 * Sealed: ended, every allocation closed, and nothing of the job (end, allocation, event)
 * within GP_SUMMARY_FREEZE_LAG_NS of the writer's clock (the delay after which the
 * accounting already treats the past as frozen, job_summary.h), so the last samples and
 * late events are in. What arrives later anyway deletes the result (triggers) and the
 * next pass computes it again. A job whose raw samples retention is pruning (the raw
 * boundary inside its range) is not stored until the pruning has passed it: each pruning
 * would change its result again. */
#ifndef GP_ENGINE_JOB_RESULTS_H
#define GP_ENGINE_JOB_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/accounting/job_summary.h"
#include "engine/diagnosis/classify.h"
#include "store/store.h"

/* Generated at build time (mk/results.mk). */
extern const char gp_engine_version[];

/* ---- writer (the agent) ---- */
typedef struct gp_job_results_writer gp_job_results_writer;
typedef struct gp_job_results_stats {
    uint64_t passes, stored, failed;
    double cpu_s; /* spent computing results */
} gp_job_results_stats;
gp_job_results_writer *gp_job_results_writer_new(void); /* NULL: out of memory */
void gp_job_results_writer_free(gp_job_results_writer *w);
gp_job_results_stats gp_job_results_writer_stats(const gp_job_results_writer *w);
/* Computes and stores the results of the jobs sealed at now_ns that have none for this
 * engine and the default options, until budget_cpu_s of CPU is spent (at least one job;
 * <= 0: no limit). A job whose computation fails is not tried again by this writer.
 * Writes in the caller's transaction when one is open. Returns how many were stored, or
 * -1 with err on a store error. */
int gp_job_results_seal(gp_job_results_writer *w, gp_store *s, int64_t now_ns, double budget_cpu_s,
                        char *err, size_t errlen);
/* Whether gp_job_results_seal at now_ns would find a job to try: 1 yes, 0 no, -1 on a store
 * error. One query over the jobs table, so a caller can skip starting a sealing pass (the
 * agent's child costs ~3 ms of CPU even with nothing to do). */
int gp_job_results_pending(gp_job_results_writer *w, gp_store *s, int64_t now_ns);
/* Without an open transaction the writer never holds the store's write lock while it
 * computes: it commits a claim on the job first (its row with an empty, never-served
 * result, deleted by the triggers like a result), computes, and stores the result only if
 * the claim is still there (else the next pass computes it again). A writer killed while
 * computing leaves its claims: gp_job_results_unclaim deletes them (0, or -1). */
int gp_job_results_unclaim(gp_store *s);
/* The agent seals in a short-lived process with a new writer each pass (cli/agent_results.c):
 * _skip hands it the jobs that failed before (not tried again, not counted), and _failed
 * lists every job it will not try (i-th, NULL past the end). */
void gp_job_results_writer_skip(gp_job_results_writer *w, const char *job_id);
const char *gp_job_results_writer_failed(const gp_job_results_writer *w, size_t i);

/* ---- readers ---- */
typedef struct gp_job_results gp_job_results;
/* A reader for results computed with these options (NULL: that part is never served).
 * NULL when the store has no job_results table (an older store) or out of memory: the
 * caller then computes. */
gp_job_results *gp_job_results_open(gp_store *s, const gp_summary_opts *so,
                                    const gp_diag_opts *diag);
void gp_job_results_close(gp_job_results *r);
/* 1: the job's stored summary in out (whole history, as gp_job_summary_compute gives it);
 * 0: none to serve; r may be NULL. */
int gp_job_results_summary(gp_job_results *r, const char *job_id, gp_job_summary *out);
/* gp_diag_opts.stored: 1 with the job's stored findings, features, accounting and price;
 * 0: none to serve. ctx is a gp_job_results (may be NULL). */
int gp_job_results_diag(void *ctx, const char *job_id, gp_finding *out, size_t cap, size_t *n,
                        gp_features *feat, gp_goodput *acct, double *price);
/* Points o at r (o->stored, o->stored_ctx) when r is not NULL. */
void gp_job_results_use(gp_diag_opts *o, gp_job_results *r);
/* Served so far by r: summaries and diagnoses (for tests and benches). */
void gp_job_results_counts(const gp_job_results *r, uint64_t *summaries, uint64_t *diags);

/* The fingerprints (for tests): 0, or -1 when cap is too small. */
int gp_job_results_sum_fp(const gp_summary_opts *so, char *buf, size_t cap);
int gp_job_results_diag_fp(const gp_diag_opts *o, char *buf, size_t cap);

#endif
