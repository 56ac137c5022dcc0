/* rollup_note.h: says where a job's telemetry was read from 1-hour rollups.
 *
 * The agent deletes 1-minute rollups older than its --rollup-retention (whole hours,
 * store/rollup.h gp_rollup_retain); the accounting then reads the 1-hour rollups there
 * (engine/accounting/job_summary.c), so a job's means, busy time and energy over those
 * hours are at 1-hour precision. Every output that shows such a job says so: the text
 * report a note line, the JSON (report and API) two fields, present only for such a job so
 * that every other job's JSON is unchanged. Derived from the store at read time, as the
 * accounting decides it (gp_rollup_minutes_from): never stored in the summary. */
#ifndef GP_REPORT_ROLLUP_NOTE_H
#define GP_REPORT_ROLLUP_NOTE_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "engine/accounting/job_summary.h"

/* The end of the part of the job's telemetry read from 1-hour rollups (the latest over
 * its devices, clipped to its allocations), or -1 when none was. */
int64_t gp_job_hourly_until_ns(gp_store *s, const char *job_id);
/* "note: JOB: telemetry before ... is read from 1-hour rollups ..." per such job. */
void gp_report_hourly_notes(FILE *f, gp_store *s, const gp_job_summary *js, size_t n);
/* For such a job: telemetry_rollup_s 3600 and telemetry_rollup_until_ns. */
void gp_report_hourly_json(json_t *job, gp_store *s, const char *job_id);

#endif
