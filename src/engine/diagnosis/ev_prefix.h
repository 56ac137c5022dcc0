/* ev_prefix.h: a running job's events up to a bound, saved compactly by the agent and
 * resumed by the diagnosis's whole-history loader (table job_ev_prefix, schema 17), so
 * that the findings of a long-running job read from SQLite only the events after it.
 *
 * The accounting resumes a saved state (engine/accounting/acct_prefix.h); the findings
 * could not yet: their whole-job features (features.c) are not all mergeable (step
 * duration sums and phase sums accumulate across ranks in (rank, time) order, the step
 * drift compares the medians of a first and last third whose bounds move with the job's
 * end, the robust median's MAD, the stragglers' windows; docs/benchmarks.md, the 21:50
 * update of "a running job's report folds only what is recent"). What is saved here is therefore
 * not a state of the features but their input: the job's step, request and phase events
 * (gp_step_ev, gp_mark_ev) and its other events (gp_event) with ts_ns <= t_ns, in the store's order
 * (time, then id). The loader (diagnose.c, gp_job_input_load*) takes them and reads only the rows
 * with ts_ns > t_ns: the input is the same arrays in the same order as reading every row, so the
 * features, findings and every output are bit for bit the whole computation's
 * (tests/unit/test_ev_prefix.c memcmps the arrays and the features).
 *
 * Exactness rules (docs/reliability.md, "Running jobs' saved events"): the triggers of
 * migration 17 delete all of a job's segments when an event of the job at or before their
 * last t_ns is inserted or deleted, or any of its events is changed; the reader reads the
 * segments and the later events in one read transaction; fp (the engine version and the
 * records' layout) must match this build; GOODPUT_NO_PREFIX=1 reads every row (as for
 * the accounting).
 *
 * Cost: the saved bytes grow with the job (40 bytes a step, 44 a request or phase edge,
 * a few hundred an other event): ~37 MB for a day of an 8-GPU trainer at 11 steps/s, read far
 * faster than decoding the rows. They are saved by the agent's sealing child right after
 * the job's accounting prefix (same cadence, GP_ACCT_PREFIX_EVERY_NS), up to that prefix's
 * bound t_ns, as a chain of segments (rows keyed by (job_id, t_ns), each the events of
 * (t0_ns, t_ns], the first from the job's start): a save appends one segment with the rows
 * since the last, so the writer holds only those. */
#ifndef GP_ENGINE_EV_PREFIX_H
#define GP_ENGINE_EV_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "engine/diagnosis/features.h"
#include "model/event.h"
#include "store/store.h"

/* A job's events split as the loader holds them (each list in the store's order). */
typedef struct gp_ev_lists {
    gp_event *ev;
    size_t nev, cap_ev;
    gp_step_ev *st;
    size_t nst, cap_st;
    gp_mark_ev *mk;
    size_t nmk, cap_mk;
} gp_ev_lists;

/* Appends e to its list (gp_store_job_events_each's callback): 0, -1 out of memory. */
int gp_ev_lists_add(void *lists, const gp_event *e);
void gp_ev_lists_free(gp_ev_lists *l);

/* ---- readers ---- */
/* The job's saved events into *l (empty on entry) and their bound into *t_ns: 1 loaded,
 * 0 none for this build (no table, GOODPUT_NO_PREFIX=1, bytes not this layout, out of
 * memory: *l left empty). The caller reads the rows after *t_ns in the same read
 * transaction. */
int gp_ev_prefix_load(gp_store *s, const char *job_id, gp_ev_lists *l, int64_t *t_ns);

/* One segment's bytes, the records of l (the job's rows with t0_ns < ts_ns <= t_ns; t0_ns
 * INT64_MIN: from the job's start): malloc'ed into *buf; 0, -1 on OOM. */
int gp_ev_prefix_encode(const char *job_id, int64_t t0_ns, int64_t t_ns, const gp_ev_lists *l,
                        unsigned char **buf, size_t *len);
/* ... and back into *l (empty on entry): 0, -1 when the bytes are not this job's segment
 * (t0_ns, t_ns] of this build's layout (*l left empty). */
int gp_ev_prefix_decode(const char *job_id, int64_t t0_ns, int64_t t_ns, const unsigned char *buf,
                        size_t len, gp_ev_lists *l);
/* The fingerprint a stored row must carry: 0, -1 when cap is too small. */
int gp_ev_prefix_fp(char *buf, size_t cap);

/* ---- writer (the agent's sealing child) ---- */
/* Saves the events of every job whose accounting prefix (job_prefix, this build) is newer
 * than its saved events (or has none), up to that prefix's bound, until budget_cpu_s of
 * CPU is spent (a job at least; <= 0 no limit). Returns how many were saved, -1 with err. */
int gp_ev_prefix_pass(gp_store *s, int64_t now_ns, double budget_cpu_s, char *err, size_t errlen);

#endif
