/* summary_table.h: ended jobs' summaries, stored once (table job_summaries, schema 11).
 *
 * A running job's summary changes with every sample; an ended job's does not, yet the HTTP
 * server showed every ended job on every scrape and recomputed it whenever it restarted,
 * so /metrics cost grew with jobs x history. A row holds gp_job_summary_compute's result
 * for the job (the one accounting module's numbers, never a second computation), so what
 * /metrics and the API show for an ended job is what `goodput report` prints for it.
 *
 * A row is for one accounting version and one end: it is used only while the job's
 * ended_ns and GP_ACCT_VERSION match, and is computed again (and replaced) otherwise. It is
 * written once the job is sealed: ended at least GP_SUMMARY_SEAL_NS before the store's
 * last time, so samples of its last seconds still in the agent's unflushed batch are in.
 * Rows are written by the agent's thread (the server's connection is read-only); a job
 * that ended before the table existed (an older store) gets its row when first read. The
 * gp_job part of a summary is not stored: readers take it from the jobs table. */
#ifndef GP_ENGINE_SUMMARY_TABLE_H
#define GP_ENGINE_SUMMARY_TABLE_H

#include "engine/accounting/job_summary.h"

/* Bump when the accounting's results change for the same data: stored rows of the older
 * version are then recomputed as they are read. */
#define GP_ACCT_VERSION 1
#define GP_SUMMARY_SEAL_NS (30LL * 1000000000LL)

/* 1 when the job ended at least GP_SUMMARY_SEAL_NS before store_t1_ns. */
int gp_summary_sealed(const gp_job *j, int64_t store_t1_ns);

/* Upserts js's row (js->job.id, js->job.ended_ns). 0 ok, -1 on a store error. */
int gp_summary_table_put(gp_store *s, const gp_job_summary *js);

/* A reader keeps its prepared statement between lookups (one indexed step each). */
typedef struct gp_summary_reader gp_summary_reader;
/* NULL when the store has no job_summaries table (an older store opened read-only) or on
 * out of memory; callers then compute. */
gp_summary_reader *gp_summary_reader_new(gp_store *s);
void gp_summary_reader_free(gp_summary_reader *r);
/* 1: j's stored row (matching j->ended_ns and GP_ACCT_VERSION) copied into out, with
 * out->job = *j; 0: no such row; -1: a store error. */
int gp_summary_table_get(gp_summary_reader *r, const gp_job *j, gp_job_summary *out);

#endif
