/* own_rows.c: the triggers of a store connection as own_rows.h says. */
#include "store/own_rows.h"

#include <string.h>
#include <strings.h>

/* Migration 14's triggers on samples and proc_samples, as SQLite keeps their text. The
 * rule store.c applies in their place is theirs; any other text (a later migration, a
 * trigger changed by hand) leaves the triggers on. */
static const char *const own_sql[] = {
    "CREATE TRIGGER job_results_sample AFTER INSERT ON samples  WHEN NEW.ts_ns <= "
    "ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),   9223372036854775807) BEGIN  "
    "DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END",
    "CREATE TRIGGER job_results_proc AFTER INSERT ON proc_samples  WHEN NEW.ts_ns <= "
    "ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),   9223372036854775807) BEGIN  "
    "DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END",
};

static int own_table(const char *t) {
    return t && (!strcmp(t, "samples") || !strcmp(t, "proc_samples"));
}

/* Refuses an INSERT into samples or proc_samples that is not the store's own. */
static int authorize(void *ctx, int op, const char *a, const char *b, const char *db,
                     const char *trigger) {
    (void)b;
    (void)trigger;
    const gp_own_rows_gate *g = ctx;
    if (op == SQLITE_INSERT && !g->own && own_table(a) && (!db || !strcmp(db, "main")))
        return SQLITE_DENY;
    return SQLITE_OK;
}

/* Drops the TEMP copies made so far. */
static void drop_copies(sqlite3 *db) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name FROM temp.sqlite_master WHERE type = 'trigger'", -1,
                           &st, NULL) != SQLITE_OK)
        return;
    char *names[64];
    int n = 0;
    while (n < 64 && sqlite3_step(st) == SQLITE_ROW)
        names[n++] = sqlite3_mprintf("DROP TRIGGER temp.\"%w\"", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    for (int i = 0; i < n; i++) {
        if (names[i]) sqlite3_exec(db, names[i], NULL, NULL, NULL);
        sqlite3_free(names[i]);
    }
}

int gp_own_rows_install(sqlite3 *db, gp_own_rows_gate *gate) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT tbl_name, sql FROM main.sqlite_master WHERE type = 'trigger'"
                           " ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    int seen = 0, ok = 1, copied = 0;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        const char *tbl = (const char *)sqlite3_column_text(st, 0);
        const char *sql = (const char *)sqlite3_column_text(st, 1);
        if (!sql) {
            ok = 0;
        } else if (own_table(tbl)) {
            int known = 0;
            for (size_t i = 0; i < sizeof own_sql / sizeof own_sql[0]; i++)
                if (!strcmp(sql, own_sql[i]) && !(seen & (1 << i))) {
                    seen |= 1 << i;
                    known = 1;
                }
            ok = known;
        } else if (strncasecmp(sql, "CREATE TRIGGER ", 15) == 0) {
            /* The same trigger in the connection's TEMP schema: its table and body names
             * resolve to the main tables (there are no TEMP tables of those names). */
            char *copy = sqlite3_mprintf("CREATE TEMP TRIGGER %s", sql + 15);
            ok = copy && sqlite3_exec(db, copy, NULL, NULL, NULL) == SQLITE_OK;
            sqlite3_free(copy);
            copied += ok;
        } else {
            ok = 0;
        }
    }
    sqlite3_finalize(st);
    if (!ok || seen != 3) {
        if (copied) drop_copies(db);
        return 0;
    }
    int on = 1;
    if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &on) != SQLITE_OK || on) {
        drop_copies(db);
        return 0;
    }
    gate->own = 0;
    if (sqlite3_set_authorizer(db, authorize, gate) != SQLITE_OK) {
        sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 1, &on);
        drop_copies(db);
        return 0;
    }
    return 1;
}
