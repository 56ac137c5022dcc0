/* source.h: one interface for every GPU telemetry backend (nvml, dcgm-exporter scrape,
 * nvidia-smi log replay, the simulator), registered in a constant table at start, as
 * nvtop does for GPU vendors and collectd for read plugins. A backend knows its source
 * and nothing else; the agent loop drives it.
 *
 * Contract for every backend:
 *  - open() parses its argument (the text after "name:" or "name=" in --source) and
 *    returns 0, or a negative code with a one-line error naming the source and what is
 *    wrong (file:line, URL, field).
 *  - devices are keyed by UUID; index is for display only.
 *  - sample() fills one gp_sample per device for the interval ending at now_ns; fields a
 *    device does not report stay unknown (bit clear). Counters are raw.
 *  - optional hooks (processes, events, allocations) may be NULL.
 *  - Memory returned through out-params is owned by the caller's arrays; the backend
 *    keeps its own state in *state and frees it in close(). */
#ifndef GP_SOURCES_SOURCE_H
#define GP_SOURCES_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "model/device.h"
#include "model/event.h"
#include "model/sample.h"

typedef struct gp_source_opts {
    double speed;     /* simulated seconds per wall second; 0 = as fast as possible */
    int64_t start_ns; /* clock origin for simulated/replayed sources; 0 = the source's own
                       * (a scenario's `start`, else the fixed epoch 2026-01-01T00:00:00Z) */
    int64_t interval_ns;
} gp_source_opts;

/* Receives workload-event lines in the wire protocol (docs/protocol.md), so events from
 * a backend travel the same ingest path as events from real clients. */
typedef void (*gp_line_sink)(void *ctx, const char *line, size_t len);

typedef struct gp_source_ops {
    const char *name;  /* "sim", "nvml", "dcgm", "smi" */
    const char *usage; /* one line for --help: "sim:FILE  simulated node from a scenario" */
    int (*open)(const char *arg, const gp_source_opts *opts, void **state, char *err,
                size_t errlen);
    /* Fills up to cap devices; sets *n. */
    int (*list_devices)(void *state, gp_device *out, size_t cap, size_t *n, char *err,
                        size_t errlen);
    /* One sample per device for the interval ending at now_ns. */
    int (*sample)(void *state, int64_t now_ns, gp_sample *out, size_t cap, size_t *n, char *err,
                  size_t errlen);
    /* Optional: per-process rows at the last sample. */
    int (*list_processes)(void *state, gp_proc_sample *out, size_t cap, size_t *n, char *err,
                          size_t errlen);
    /* Optional: event lines (protocol text) that happened up to now_ns. */
    int (*drain_events)(void *state, int64_t now_ns, gp_line_sink sink, void *ctx);
    /* Optional: the time the source's data ends (replay, simulation); < 0 = open-ended. */
    int64_t (*end_ns)(void *state);
    /* Optional: the source's clock (simulated/replayed sources); NULL = wall clock. */
    int64_t (*now_ns)(void *state);
    void (*close)(void *state);
    /* Optional: where the processes in list_processes() live, so the agent can resolve
     * their owners: the /proc root their PIDs belong to ("/proc" for a live driver; the
     * simulator's fake root) and a dcgm-exporter job-mapping directory when the node has
     * one (NULL if not). A source without this op (a replayed capture from another
     * machine) has PIDs that mean nothing here: owners then come from the capture alone. */
    void (*node_paths)(void *state, const char **proc_root, const char **jobmap_dir);
} gp_source_ops;

/* The registry (constant, built at compile time). */
const gp_source_ops *gp_source_find(const char *name);
const gp_source_ops *const *gp_source_all(size_t *n);

/* Splits "name:arg" or "name=arg" (or bare "name") and opens it. */
typedef struct gp_source {
    const gp_source_ops *ops;
    void *state;
} gp_source;
int gp_source_open(const char *spec, const gp_source_opts *opts, gp_source *out, char *err,
                   size_t errlen);
void gp_source_close(gp_source *s);

#endif
