/* own_rows.c: the triggers of a store connection as own_rows.h says. */
#include "store/own_rows.h"

#include <string.h>
#include <strings.h>

/* Migration 14's triggers on samples and proc_samples (and migration 16's), as SQLite keeps
 * their text. The rule store.c applies in their place is theirs; any other text (a later migration,
 * a trigger changed by hand) leaves the triggers on. */
static const char *const own_sql[] = {
    "CREATE TRIGGER job_results_sample AFTER INSERT ON samples  WHEN NEW.ts_ns <= "
    "ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),   9223372036854775807) BEGIN  "
    "DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END",
    "CREATE TRIGGER job_results_proc AFTER INSERT ON proc_samples  WHEN NEW.ts_ns <= "
    "ifnull((SELECT t1_ns FROM job_results_hwm WHERE id = 0),   9223372036854775807) BEGIN  "
    "DELETE FROM job_results WHERE t1_ns >= NEW.ts_ns AND t0_ns <= NEW.ts_ns; END",
    /* migration 16's, for running jobs' accounting prefixes */
    "CREATE TRIGGER job_prefix_sample AFTER INSERT ON samples  WHEN NEW.ts_ns <= "
    "ifnull((SELECT t_ns FROM job_prefix_hwm WHERE id = 0),   9223372036854775807) BEGIN  "
    "DELETE FROM job_prefix WHERE t_ns >= NEW.ts_ns; END",
    "CREATE TRIGGER job_prefix_proc AFTER INSERT ON proc_samples  WHEN NEW.ts_ns <= "
    "ifnull((SELECT t_ns FROM job_prefix_hwm WHERE id = 0),   9223372036854775807) BEGIN  "
    "DELETE FROM job_prefix WHERE t_ns >= NEW.ts_ns; END",
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

/* Drops the TEMP copies (a step after them failed). */
static void drop_copies(sqlite3 *db) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT name FROM temp.sqlite_master WHERE type = 'trigger'", -1,
                           &st, NULL) != SQLITE_OK)
        return;
    sqlite3_str *drops = sqlite3_str_new(db);
    while (sqlite3_step(st) == SQLITE_ROW)
        sqlite3_str_appendf(drops, "DROP TRIGGER temp.\"%w\";", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    char *sql = sqlite3_str_finish(drops);
    if (sql) sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
}

int gp_own_rows_install(sqlite3 *db, gp_own_rows_gate *gate) {
    sqlite3_stmt *st;
    /* Before SQLite 3.35, SQLITE_DBCONFIG_ENABLE_TRIGGER turned TEMP triggers off too: the
     * copies would never run. Such a library keeps the schema's triggers on. */
    if (sqlite3_libversion_number() < 3035000) return 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT tbl_name, sql FROM main.sqlite_master WHERE type = 'trigger'"
                           " ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    /* The copies, made in one transaction: all or none (and one temp-schema change). */
    sqlite3_str *copies = sqlite3_str_new(db);
    sqlite3_str_appendall(copies, "BEGIN;");
    int seen = 0, ok = 1;
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
            sqlite3_str_appendf(copies, "CREATE TEMP TRIGGER %s;", sql + 15);
        } else {
            ok = 0;
        }
    }
    sqlite3_finalize(st);
    sqlite3_str_appendall(copies, "COMMIT;");
    char *sql = sqlite3_str_finish(copies);
    const int all = (1 << (sizeof own_sql / sizeof own_sql[0])) - 1;
    if (!ok || seen != all || !sql) {
        sqlite3_free(sql);
        return 0;
    }
    ok = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_free(sql);
    if (!ok) {
        if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
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
