/* schema.h: schema version and migrations of the SQLite store. */
#ifndef GP_STORE_SCHEMA_H
#define GP_STORE_SCHEMA_H
#include <stddef.h>
#include <sqlite3.h>
int gp_schema_latest(void);
/* Brings db to the latest schema; each migration is one transaction. */
int gp_schema_migrate(sqlite3 *db, char *err, size_t errlen);
/* Makes a store of an older schema read as the latest one without writing it (a read
 * command never writes the store): on db's connection, each table the latest schema has
 * and the store lacks becomes an empty TEMP table, and each table lacking columns a TEMP
 * view of it with NULL in those columns (unknown, never zero). Temp objects live in the
 * connection, not in the file, and unqualified names find them first. 0, or -1 and err. */
int gp_schema_shadow(sqlite3 *db, char *err, size_t errlen);
#endif
