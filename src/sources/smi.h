/* smi.h: nvidia-smi logs as a telemetry source (`--source smi:FILE`), for after-the-fact
 * analysis of what people already have lying around.
 *
 * One file may hold any mix of:
 *  - `nvidia-smi --query-gpu=... --format=csv[,noheader is not supported][,nounits]` tables
 *    (header with or without "[unit]"; values "[N/A]", "[Not Supported]" and any other
 *    bracketed text are unknown);
 *  - `nvidia-smi --query-compute-apps=... --format=csv` tables (per-process memory);
 *  - `nvidia-smi dmon` and `nvidia-smi pmon` text (optionally with -o DT date/time columns);
 *  - `nvidia-smi -q -x` XML (the whole file; schema v11, v12 and v13, parsed with libxml2),
 *    including MIG devices (reported as devices "<parent uuid>/gi<N>").
 * Other lines (the default table, `-q` text, banners) are skipped, so a capture with many
 * sections replays; a file with no recognised table is an error. A malformed row inside a
 * recognised table is an error naming FILE:LINE and the field; nothing is guessed.
 *
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

typedef struct gp_smi_log {
    gp_device *devices;
    size_t ndevices;
    gp_sample *samples; /* in file order */
    size_t nsamples;
    gp_proc_sample *procs;
    size_t nprocs;
} gp_smi_log;

/* Parses a buffer; name is used in messages ("FILE:LINE: ..."). 0 or <0 with err set. */
int gp_smi_parse(const char *name, const char *buf, size_t len, gp_smi_log *log, char *err,
                 size_t errlen);
int gp_smi_load(const char *path, gp_smi_log *log, char *err, size_t errlen);
void gp_smi_log_free(gp_smi_log *log);

#endif
