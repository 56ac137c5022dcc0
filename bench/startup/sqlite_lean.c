/* sqlite_lean.c: linked ahead of Debian's static libsqlite3.a into the goodput binary alone
 * (mk/startup.mk), it defines the registration functions of SQLite's built-in virtual-table
 * extensions that goodput never uses (FTS3/4, FTS5, R-tree, dbstat, sqlite_stmt) as no-ops.
 * sqlite3_open calls each of them on every connection (sqlite3BuiltinExtensions, main.c);
 * the archive's members that hold them (fts3*.o, fts5.o, rtree.o, dbstat.o, stmt.o) are
 * then not linked, where before each call faulted in the 64 KiB window of the binary around
 * its function: `goodput report` had ~0.25 MiB of that code resident for registrations
 * (docs/benchmarks.md, "Start-up and libraries"). goodput's SQL uses none of them: a store
 * with such a table would fail to open ("no such module"), and goodput never makes one.
 * Tests and the sanitizer build link the shared libsqlite3, whole. */
#include <sqlite3.h>

int sqlite3Fts3Init(sqlite3 *db);
int sqlite3Fts5Init(sqlite3 *db);
int sqlite3RtreeInit(sqlite3 *db);
int sqlite3DbstatRegister(sqlite3 *db);
int sqlite3StmtVtabInit(sqlite3 *db);

int sqlite3Fts3Init(sqlite3 *db) {
    (void)db;
    return SQLITE_OK;
}

int sqlite3Fts5Init(sqlite3 *db) {
    (void)db;
    return SQLITE_OK;
}

int sqlite3RtreeInit(sqlite3 *db) {
    (void)db;
    return SQLITE_OK;
}

int sqlite3DbstatRegister(sqlite3 *db) {
    (void)db;
    return SQLITE_OK;
}

int sqlite3StmtVtabInit(sqlite3 *db) {
    (void)db;
    return SQLITE_OK;
}
