/* schema.h: schema version and migrations of the SQLite store. */
#ifndef GP_STORE_SCHEMA_H
#define GP_STORE_SCHEMA_H
#include <stddef.h>
#include <sqlite3.h>
int gp_schema_latest(void);
/* Brings db to the latest schema; each migration is one transaction. */
int gp_schema_migrate(sqlite3 *db, char *err, size_t errlen);
#endif
