/* smi.h: nvidia-smi logs as a telemetry source (`--source smi:FILE[,tz=ZONE]`), for
 * after-the-fact analysis of what people already have lying around.
 *
 * One file may hold any mix of:
 *  - `nvidia-smi --query-gpu=... --format=csv[,nounits]` tables (header with or without
 *    "[unit]"; values "[N/A]", "[Not Supported]" and any other bracketed text are unknown);
 *  - `nvidia-smi --query-compute-apps=... --format=csv` tables (per-process memory, name);
 *  - `nvidia-smi dmon` and `nvidia-smi pmon` text (optionally with -o DT date/time columns);
 *    pmon gives each process's SM share and name;
 *  - `nvidia-smi -q -x` XML (the whole file; schema v11, v12 and v13, parsed with libxml2),
 *    including MIG devices (devices of their own: the <uuid> the XML gives, else the
 *    legacy MIG name "MIG-<parent uuid>/<gi>/<ci>"; parent_uuid set, as nvml.c does).
 * Other lines (the default table, `-q` text, banners) are skipped, so a capture with many
 * sections replays; a file with no recognised table is an error.
 *
 * Bad input inside a recognised table never stops the replay: a row cut short, a garbage
 * line, a value that is not one (that field stays unknown), an unknown column, each gives
 * one warning line "smi: FILE:LINE: ..." in log->warnings and the rest is kept.
 *
 * Rows of one sampling instant (same device, same time) are merged into one sample (one
 * process row per pid): a field one row lacks is taken from the other, the first row that
 * has a field keeps it, so a dmon row does not wipe the CSV row's memory at that instant.
 *
 * Time: capture timestamps are local times without a zone. gp_smi_opts says how to read
 * them; by default a zone written in the capture header (nvidia_gpu_exporter's
 * `collected_at: ...Z`) else the local time zone. log->tz_note says which was used.
 * Rows without a time (dmon, pmon) are spaced 1 s apart after the last time seen, as
 * nvidia-smi prints them by default. dmon/pmon rows name only a GPU index: the UUID comes
 * from a table in the same file that maps index to UUID, else the device is
 * "smi-index-N".
 *
 * Memory: gp_smi_log arrays are owned by the log; gp_smi_log_free releases them. */
#ifndef GP_SOURCES_SMI_H
#define GP_SOURCES_SMI_H

#include <stddef.h>

#include "model/device.h"
#include "model/sample.h"

enum { GP_SMI_TZ_DEFAULT = 0, GP_SMI_TZ_FIXED, GP_SMI_TZ_LOCAL };

typedef struct gp_smi_opts {
    int tz;          /* GP_SMI_TZ_* */
    int tz_offset_s; /* GP_SMI_TZ_FIXED: seconds east of UTC */
} gp_smi_opts;

#define GP_SMI_WARN_KEEP 10 /* warning lines kept in the log; all are counted */

typedef struct gp_smi_log {
    gp_device *devices;
    size_t ndevices;
    gp_sample *samples; /* in file order, one per (device, instant) */
    size_t nsamples;
    gp_proc_sample *procs; /* one per (device, instant, pid); job_id always "" */
    size_t nprocs;
    char *warnings;    /* the first GP_SMI_WARN_KEEP warning lines, '\n'-separated; or NULL */
    size_t nwarnings;  /* all warnings */
    char tz_note[320]; /* how absolute times were read ("" when the file has none) */
} gp_smi_log;

/* Parses a buffer; name is used in messages ("FILE:LINE: ..."). 0, or <0 with err set when
 * the buffer holds no nvidia-smi table at all (or memory runs out). opts may be NULL. */
int gp_smi_parse_opts(const char *name, const char *buf, size_t len, const gp_smi_opts *opts,
                      gp_smi_log *log, char *err, size_t errlen);
int gp_smi_parse(const char *name, const char *buf, size_t len, gp_smi_log *log, char *err,
                 size_t errlen);
int gp_smi_load_opts(const char *path, const gp_smi_opts *opts, gp_smi_log *log, char *err,
                     size_t errlen);
int gp_smi_load(const char *path, gp_smi_log *log, char *err, size_t errlen);
/* "UTC", "local", "+02:00", "-0530", "+2": 0, or <0 with err set. */
int gp_smi_parse_tz(const char *text, gp_smi_opts *opts, char *err, size_t errlen);
void gp_smi_log_free(gp_smi_log *log);

#endif
