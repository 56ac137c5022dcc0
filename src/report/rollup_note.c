/* rollup_note.c: where a job's telemetry came from 1-hour rollups (rollup_note.h). */
#include "report/rollup_note.h"

#include <time.h>

#include "store/rollup.h"

int64_t gp_job_hourly_until_ns(gp_store *s, const char *job_id) {
    sqlite3 *db = gp_store_db(s);
    sqlite3_stmt *st;
    int64_t until = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT uuid, min(from_ns), max(COALESCE(to_ns, 9223372036854775807))"
                           " FROM allocations WHERE job_id = ?1 GROUP BY uuid",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t from = sqlite3_column_int64(st, 1), to = sqlite3_column_int64(st, 2);
        int64_t mb = gp_rollup_minutes_from(db, (const char *)sqlite3_column_text(st, 0));
        /* the accounting folds the hours that end by mb from the allocation's start */
        if (mb < 0 || from >= mb) continue;
        int64_t u = mb < to ? mb : to;
        if (u > until) until = u;
    }
    sqlite3_finalize(st);
    return until;
}

void gp_report_hourly_notes(FILE *f, gp_store *s, const gp_job_summary *js, size_t n) {
    for (size_t i = 0; i < n; i++) {
        /* a stored result whose events retention deleted is shown as it was stored */
        if (js[i].events_pruned_ns > 0) continue;
        int64_t u = gp_job_hourly_until_ns(s, js[i].job.id);
        if (u < 0) continue;
        time_t t = (time_t)(u / 1000000000LL);
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
        fprintf(f,
                "note: %s: telemetry before %s read from 1-hour rollups (the 1-minute ones are"
                " kept for the agent's --rollup-retention): its means, busy time and energy"
                " there are at 1-hour resolution\n",
                js[i].job.id, when);
    }
}

void gp_report_hourly_json(json_t *job, gp_store *s, const char *job_id) {
    int64_t u = gp_job_hourly_until_ns(s, job_id);
    if (u < 0) return;
    json_object_set_new(job, "telemetry_rollup_s", json_integer(GP_ROLLUP_1H_NS / 1000000000LL));
    json_object_set_new(job, "telemetry_rollup_until_ns", json_integer(u));
}
