/* csv.h: a streaming CSV reader with bounded memory, for cluster traces.
 *
 * Reads plain files, gzip files (zlib detects gzip by its magic bytes, so plain text needs
 * no flag) and the first regular member of a tar or tar.gz archive (a 512-byte-block tar
 * reader on top of the zlib stream: nothing is extracted to disk). Quoting follows RFC 4180
 * ("" inside quotes, newlines inside quotes allowed); a CR before LF is dropped; a last line
 * with no newline is a row.
 *
 * Memory: one 256 KiB input buffer plus the current row (at most GP_CSV_ROW_MAX bytes). A
 * row is valid until the next call to gp_csv_next. Errors name file:line:column. */
#ifndef GP_CLUSTERS_CSV_H
#define GP_CLUSTERS_CSV_H

#include <stddef.h>
#include <stdint.h>

#define GP_CSV_ROW_MAX (4u << 20)
#define GP_CSV_FIELDS_MAX 4096

typedef struct gp_csv gp_csv;

/* Opens path. "archive.tar.gz" reads its first regular member; "archive.tar.gz:NAME" the
 * member NAME. Returns 0 or -1 with err filled. */
int gp_csv_open(gp_csv **out, const char *path, char *err, size_t errlen);
/* 1: a row is ready; 0: end of input; -1: error (err names file:line:column). */
int gp_csv_next(gp_csv *c, char *err, size_t errlen);
void gp_csv_close(gp_csv *c);

int gp_csv_nfields(const gp_csv *c);
/* Field i of the current row, NUL-terminated; "" when the row has fewer fields. */
const char *gp_csv_field(const gp_csv *c, int i);
size_t gp_csv_field_len(const gp_csv *c, int i);
/* 1-based line where the current row starts, and 1-based column of field i. */
int64_t gp_csv_line(const gp_csv *c);
int gp_csv_col(const gp_csv *c, int i);
const char *gp_csv_path(const gp_csv *c);
/* Bytes of (uncompressed) input consumed so far, up to the end of the current row. */
uint64_t gp_csv_offset(const gp_csv *c);
/* Total bytes of input when known in advance (a plain file: its size), else -1. With
 * gp_csv_offset it lets a reader estimate its row count and size its tables once. */
int64_t gp_csv_size_hint(const gp_csv *c);
/* Name of the archive member being read ("" for a plain or gzip file). */
const char *gp_csv_member(const gp_csv *c);

/* Field i as a number. 1: *v set; 0: missing (empty, NA, None, null, nan); -1: not a number,
 * err names file:line:column and the column name when known. */
int gp_csv_num(gp_csv *c, int i, double *v, char *err, size_t errlen);
/* Uses the current row as the header: remembers the names for gp_csv_find and errors. */
int gp_csv_take_header(gp_csv *c);
/* Sets column names from a comma-separated list (PAI .header files). */
int gp_csv_set_names(gp_csv *c, const char *csv_names);
/* Index of a named column, -1 when absent. */
int gp_csv_find(const gp_csv *c, const char *name);

/* Fast decimal parser shared by the readers: 1 ok, 0 missing, -1 malformed. */
int gp_parse_num(const char *s, size_t n, double *v);

#endif
