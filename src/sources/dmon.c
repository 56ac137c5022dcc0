/* dmon.c: `dcgmi dmon` logs as a telemetry source (`--source dmon:FILE[,interval=MS]`),
 * replayed like smi.c replays nvidia-smi logs.
 *
 * The format, from DCGM's dcgmi/DeviceMonitor.cpp (github.com/NVIDIA/DCGM): a header line
 * "#Entity" followed by each field's short name (TMPTR, POWER, GPUTL, SMACT, ...), a unit
 * line starting "ID", then one row per entity per iteration: the entity group and id
 * ("GPU 0", "GPU-I 3", "GPU-CI 5", "vGPU 1", "Switch 2") and one value per field, "N/A"
 * when blank. The header is printed again every 14 iterations; rows carry no time. This
 * holds for the default field list of a field group (-g) and custom lists (-e 203,1002).
 *
 * Time: an iteration ends when an entity appears a second time; iterations are -d apart
 * (given as ,interval=MS, default 1000 as dcgmi's own -d), starting at the agent's start
 * time (or now). Units: TMPTR C, POWER W, TOTEC mJ, SMCLK/MMCLK MHz, GPUTL/MCUTL percent,
 * FBUSD/FBTTL MiB, profiling ratios (SMACT, SMOCC, TENSO, DRAMA, FP*A) in [0, 1], XIDER
 * the last XID, DVCCTR the clock-event reason bits.
 *
 * Devices: "dmon-gpu-N" for GPU rows, "dmon-gpu-i-N" / "dmon-gpu-ci-N" for MIG instance
 * rows, whose parent is the GPU row printed before them (dcgmi prints the hierarchy in
 * topological order). A bad value, a short row or an unknown column is one warning
 * "dmon: FILE:LINE: ..." on stderr (the first 10, then a count); the rest replays. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sources/source.h"
#include "util/slurp.h"

#define NS 1000000000LL
#define MAXCOLS 128
#define WARN_KEEP 10

typedef enum {
    K_IGNORE,
    K_TEMP,
    K_POWER,
    K_ENERGY,
    K_SMCLK,
    K_MEMCLK,
    K_GPU_UTIL_PCT,
    K_MEM_UTIL_PCT,
    K_FB_USED_MIB,
    K_FB_TOTAL_MIB,
    K_SM_ACTIVE,
    K_SM_OCC,
    K_TENSOR,
    K_DRAM,
    K_FP64,
    K_FP32,
    K_FP16,
    K_XID,
    K_REASONS,
} col_kind;

static const struct {
    const char *name;
    col_kind k;
} short_names[] = {
    {"TMPTR", K_TEMP},         {"POWER", K_POWER},       {"TOTEC", K_ENERGY},
    {"SMCLK", K_SMCLK},        {"MMCLK", K_MEMCLK},      {"GPUTL", K_GPU_UTIL_PCT},
    {"MCUTL", K_MEM_UTIL_PCT}, {"FBUSD", K_FB_USED_MIB}, {"FBTTL", K_FB_TOTAL_MIB},
    {"SMACT", K_SM_ACTIVE},    {"SMOCC", K_SM_OCC},      {"TENSO", K_TENSOR},
    {"DRAMA", K_DRAM},         {"FP64A", K_FP64},        {"FP32A", K_FP32},
    {"FP16A", K_FP16},         {"XIDER", K_XID},         {"DVCCTR", K_REASONS},
};

typedef struct {
    gp_device *dev;
    size_t ndev, devcap;
    gp_sample *s;
    size_t ns, scap;
    size_t nwarn;
    char warnings[WARN_KEEP][600];
    size_t cursor;
    int64_t origin_ns, interval_ns, end_ns;
    double speed;
    int64_t wall0_ns;
    char dcgmi_error[300]; /* dcgmi's own "Error ..." line, if it printed one */
} dmon_state;

static int64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * NS + t.tv_nsec;
}

__attribute__((format(printf, 4, 5))) static void warn(dmon_state *st, const char *path, long line,
                                                       const char *fmt, ...) {
    if (st->nwarn < WARN_KEEP) {
        char msg[220];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        for (char *m = msg; *m; m++)
            if ((unsigned char)*m < 0x20) *m = '?';
        snprintf(st->warnings[st->nwarn], sizeof st->warnings[0], "dmon: %.300s:%ld: %s", path,
                 line, msg);
    }
    st->nwarn++;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *n = realloc(*arr, nc * elem);
    if (!n) return -1;
    memset((char *)n + *cap * elem, 0, (nc - *cap) * elem);
    *arr = n;
    *cap = nc;
    return 0;
}

/* Splits on runs of blanks; returns the count (at most cap). */
static int split_ws(char *line, char **out, int cap) {
    int n = 0;
    char *p = line;
    while (*p && n < cap) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p) break;
        out[n++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        if (*p) *p++ = 0;
    }
    return n;
}

static int device_of(dmon_state *st, const char *group, long id, const char *parent) {
    char uuid[GP_UUID_MAX], g[16];
    size_t k = 0;
    for (; group[k] && k + 1 < sizeof g; k++)
        g[k] = (char)tolower((unsigned char)group[k]);
    g[k] = 0;
    snprintf(uuid, sizeof uuid, "dmon-%s-%ld", g, id);
    for (size_t i = 0; i < st->ndev; i++)
        if (!strcmp(st->dev[i].uuid, uuid)) return (int)i;
    if (grow((void **)&st->dev, &st->devcap, st->ndev + 1, sizeof *st->dev)) return -1;
    gp_device *d = &st->dev[st->ndev];
    memset(d, 0, sizeof *d);
    snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
    d->index = (int)id;
    snprintf(d->name, sizeof d->name, "%s %ld (dcgmi dmon)", group, id);
    d->mig_mode = -1;
    if (strcmp(group, "GPU") && parent)
        snprintf(d->parent_uuid, sizeof d->parent_uuid, "%s", parent);
    return (int)st->ndev++;
}

static void set_value(gp_sample *s, col_kind k, double v) {
    switch (k) {
    case K_TEMP:
        gp_set_d(s, GP_F_TEMP, &s->temp_c, v);
        break;
    case K_POWER:
        gp_set_d(s, GP_F_POWER, &s->power_w, v);
        break;
    case K_ENERGY:
        if (v >= 0) s->energy_mj = (uint64_t)v, s->valid |= GP_F_ENERGY;
        break;
    case K_SMCLK:
        gp_set_d(s, GP_F_SM_CLOCK, &s->sm_clock_mhz, v);
        break;
    case K_MEMCLK:
        gp_set_d(s, GP_F_MEM_CLOCK, &s->mem_clock_mhz, v);
        break;
    case K_GPU_UTIL_PCT:
        gp_set_d(s, GP_F_GPU_UTIL, &s->gpu_util, v / 100.0);
        break;
    case K_MEM_UTIL_PCT:
        gp_set_d(s, GP_F_MEM_UTIL, &s->mem_util, v / 100.0);
        break;
    case K_FB_USED_MIB:
        if (v >= 0) s->mem_used_bytes = (uint64_t)(v * 1048576.0), s->valid |= GP_F_MEM_USED;
        break;
    case K_FB_TOTAL_MIB:
        if (v >= 0) s->mem_total_bytes = (uint64_t)(v * 1048576.0), s->valid |= GP_F_MEM_TOTAL;
        break;
    case K_SM_ACTIVE:
        gp_set_d(s, GP_F_SM_ACTIVE, &s->sm_active, v);
        break;
    case K_SM_OCC:
        gp_set_d(s, GP_F_SM_OCCUPANCY, &s->sm_occupancy, v);
        break;
    case K_TENSOR:
        gp_set_d(s, GP_F_TENSOR_ACTIVE, &s->tensor_active, v);
        break;
    case K_DRAM:
        gp_set_d(s, GP_F_DRAM_ACTIVE, &s->dram_active, v);
        break;
    case K_FP64:
        gp_set_d(s, GP_F_FP64_ACTIVE, &s->fp64_active, v);
        break;
    case K_FP32:
        gp_set_d(s, GP_F_FP32_ACTIVE, &s->fp32_active, v);
        break;
    case K_FP16:
        gp_set_d(s, GP_F_FP16_ACTIVE, &s->fp16_active, v);
        break;
    case K_XID:
        s->xid = (int64_t)v, s->valid |= GP_F_XID;
        break;
    case K_REASONS:
        if (v >= 0) s->throttle_reasons = (uint64_t)v, s->valid |= GP_F_THROTTLE;
        break;
    case K_IGNORE:
        break;
    }
}

/* Parses the whole log into st->dev / st->s (sample times are iteration numbers x interval,
 * from 0; the caller shifts them). Returns 0, or -1 out of memory. */
static int parse(dmon_state *st, const char *path, const char *buf, size_t len) {
    col_kind cols[MAXCOLS];
    int ncols = -1; /* -1: no header yet */
    int64_t iter = 0;
    size_t iter_first = 0; /* first sample of the current iteration */
    char parent[GP_UUID_MAX] = "";
    long lineno = 0;
    char line[4096];
    size_t pos = 0;
    while (pos < len) {
        size_t e = pos, ls = pos;
        while (e < len && buf[e] != '\n')
            e++;
        size_t n = e - pos < sizeof line - 1 ? e - pos : sizeof line - 1;
        memcpy(line, buf + pos, n);
        line[n] = 0;
        pos = e + 1;
        lineno++;
        char *tok[MAXCOLS + 2];
        int nt = split_ws(line, tok, MAXCOLS + 2);
        if (nt == 0) continue;
        /* "#Entity F1 F2 ..."; older dcgmi printed "# Entity" (DCGM issue 3, 2021) */
        int hdr = !strcmp(tok[0], "#Entity")                                    ? 1
                  : nt > 1 && !strcmp(tok[0], "#") && !strcmp(tok[1], "Entity") ? 2
                                                                                : 0;
        if (hdr) {
            int nc = nt - hdr < MAXCOLS ? nt - hdr : MAXCOLS;
            char unknown[512] = "";
            int nunk = 0;
            for (int i = 0; i < nc; i++) {
                cols[i] = K_IGNORE;
                size_t k = 0;
                for (; k < sizeof short_names / sizeof short_names[0]; k++)
                    if (!strcmp(tok[i + hdr], short_names[k].name)) break;
                if (k < sizeof short_names / sizeof short_names[0]) {
                    cols[i] = short_names[k].k;
                } else {
                    size_t u = strlen(unknown);
                    snprintf(unknown + u, sizeof unknown - u, "%s%s", nunk ? ", " : "",
                             tok[i + hdr]);
                    nunk++;
                }
            }
            if (nunk && ncols < 0) /* once per file, one line for all, not per header */
                warn(st, path, lineno, "%s %s %s; ignored", nunk == 1 ? "column" : "columns",
                     unknown,
                     nunk == 1 ? "is not one goodput maps to a sample field"
                               : "are not ones goodput maps to sample fields");
            ncols = nc;
            continue;
        }
        /* what dcgmi prints around its rows: an error instead of rows, and on Ctrl-C */
        if (!strcmp(tok[0], "Error")) {
            if (!st->dcgmi_error[0]) { /* the raw line: split_ws cut `line` into tokens */
                while (ls < e && (buf[ls] == ' ' || buf[ls] == '\t'))
                    ls++;
                size_t m = e - ls;
                while (m && (buf[ls + m - 1] == '\r' || buf[ls + m - 1] == ' '))
                    m--;
                if (m > sizeof st->dcgmi_error - 1) m = sizeof st->dcgmi_error - 1;
                memcpy(st->dcgmi_error, buf + ls, m);
                st->dcgmi_error[m] = 0;
            }
            continue;
        }
        if (!strcmp(tok[0], "^C") || (nt > 3 && !strcmp(tok[0], "dmon") && !strcmp(tok[1], "was") &&
                                      !strcmp(tok[2], "stopped")))
            continue;
        if (ncols < 0 || !strcmp(tok[0], "ID") || !strcmp(tok[0], "Id") || tok[0][0] == '#')
            continue; /* the unit line ("Id" before DCGM 2.x) */
        const char *group = tok[0];
        if (strcmp(group, "GPU") && strcmp(group, "GPU-I") && strcmp(group, "GPU-CI") &&
            strcmp(group, "vGPU") && strcmp(group, "Switch")) {
            warn(st, path, lineno, "not a dmon row (entity '%s'); skipped", group);
            continue;
        }
        char *endp;
        long id = nt > 1 ? strtol(tok[1], &endp, 10) : -1;
        if (nt < 2 || *endp || id < 0) {
            warn(st, path, lineno, "entity %s has no id; row skipped", group);
            continue;
        }
        if (nt - 2 != ncols)
            warn(st, path, lineno, "%d values for %d columns; the missing ones are unknown", nt - 2,
                 ncols);
        int d = device_of(st, group, id, parent[0] ? parent : NULL);
        if (d < 0) return -1;
        if (!strcmp(group, "GPU")) snprintf(parent, sizeof parent, "%s", st->dev[d].uuid);
        /* an entity seen again starts the next iteration */
        for (size_t i = iter_first; i < st->ns; i++)
            if (!strcmp(st->s[i].uuid, st->dev[d].uuid)) {
                iter++;
                iter_first = st->ns;
                break;
            }
        if (grow((void **)&st->s, &st->scap, st->ns + 1, sizeof *st->s)) return -1;
        gp_sample *s = &st->s[st->ns++];
        memset(s, 0, sizeof *s);
        snprintf(s->uuid, sizeof s->uuid, "%s", st->dev[d].uuid);
        s->ts_ns = iter * st->interval_ns;
        for (int i = 0; i < ncols && i + 2 < nt; i++) {
            const char *v = tok[i + 2];
            if (!strcmp(v, "N/A") || cols[i] == K_IGNORE) continue;
            double x = strtod(v, &endp);
            if (*endp || !isfinite(x)) {
                warn(st, path, lineno, "field %d ('%s'): not a number; left unknown", i + 1, v);
                continue;
            }
            set_value(s, cols[i], x);
        }
    }
    return 0;
}

static int dmon_open(const char *arg, const gp_source_opts *opts, void **state, char *err,
                     size_t errlen) {
    if (!arg || !*arg) {
        snprintf(err, errlen,
                 "source 'dmon': expected dmon:FILE[,interval=MS] (a dcgmi dmon log; "
                 "MS = the -d it ran with, default 1000)");
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s", arg);
    int64_t iv = 1000 * 1000000LL;
    char *o = strstr(path, ",interval=");
    if (o) {
        char *endp;
        long ms = strtol(o + 10, &endp, 10);
        if (*endp || ms <= 0) {
            snprintf(err, errlen, "dmon: %s: interval '%s' is not a positive number of ms", path,
                     o + 10);
            return -1;
        }
        iv = ms * 1000000LL;
        *o = 0;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "dmon: %s: cannot open", path);
        return -1;
    }
    char *buf;
    size_t len;
    int src = gp_slurp(f, (size_t)1 << 34, &buf, &len);
    int bad = src != 0 && src != -ENOMEM;
    fclose(f);
    if (src == -ENOMEM) {
        snprintf(err, errlen, "dmon: %s: out of memory", path);
        return -1;
    }
    dmon_state *st = calloc(1, sizeof *st);
    if (bad || !st) {
        free(buf);
        free(st);
        snprintf(err, errlen, "dmon: %s: %s", path,
                 bad ? "read error (a directory?)" : "no memory");
        return -1;
    }
    st->interval_ns = iv;
    int rc = parse(st, path, buf, len);
    free(buf);
    for (size_t i = 0; i < st->nwarn && i < WARN_KEEP; i++)
        fprintf(stderr, "%s\n", st->warnings[i]);
    if (st->nwarn > WARN_KEEP)
        fprintf(stderr, "dmon: %s: %zu more warnings like these\n", path, st->nwarn - WARN_KEEP);
    if (rc == 0 && st->ns == 0 && st->dcgmi_error[0]) {
        snprintf(err, errlen, "dmon: %s: no rows; dcgmi printed: %s", path, st->dcgmi_error);
        free(st->dev);
        free(st->s);
        free(st);
        return -1;
    }
    if (rc < 0 || st->ns == 0) {
        snprintf(err, errlen, "dmon: %s: %s", path,
                 rc < 0 ? "out of memory"
                        : "no dcgmi dmon rows found (want a '#Entity ...' header, then rows "
                          "such as 'GPU 0 ...')");
        free(st->dev);
        free(st->s);
        free(st);
        return -1;
    }
    /* The same clock as smi.c: it starts one interval before the first row, so the agent's
     * ticks land on every iteration; end_ns is the last iteration's time. */
    int64_t base = opts && opts->start_ns ? opts->start_ns : wall_ns();
    for (size_t i = 0; i < st->ns; i++)
        st->s[i].ts_ns += base;
    st->origin_ns = base;
    st->end_ns = st->s[st->ns - 1].ts_ns;
    st->speed = opts ? opts->speed : 0;
    st->wall0_ns = wall_ns();
    if (opts && opts->interval_ns > 0 && opts->interval_ns != iv)
        fprintf(stderr,
                "dmon: %s: rows are %lld ms apart (interval=); the agent samples every %lld ms\n",
                path, (long long)(iv / 1000000), (long long)(opts->interval_ns / 1000000));
    *state = st;
    return 0;
}

static int dmon_devices(void *state, gp_device *out, size_t cap, size_t *n, char *err,
                        size_t errlen) {
    (void)err, (void)errlen;
    dmon_state *st = state;
    size_t k = st->ndev < cap ? st->ndev : cap;
    memcpy(out, st->dev, k * sizeof *out);
    *n = k;
    return 0;
}

static int64_t dmon_end(void *state) {
    return ((dmon_state *)state)->end_ns;
}

static int64_t dmon_now(void *state) {
    dmon_state *st = state;
    if (st->speed <= 0) {
        if (st->cursor == 0) return st->origin_ns - st->interval_ns;
        size_t i = st->cursor < st->ns ? st->cursor : st->ns - 1;
        return st->s[i].ts_ns;
    }
    return st->origin_ns - st->interval_ns +
           (int64_t)((double)(wall_ns() - st->wall0_ns) * st->speed);
}

/* d takes the fields x has; fields x lacks stay as they were. */
static void merge(gp_sample *d, const gp_sample *x) {
    uint32_t v = x->valid;
#define TAKE(f, m)                                                                                 \
    if (v & (m)) d->f = x->f
    TAKE(temp_c, GP_F_TEMP);
    TAKE(power_w, GP_F_POWER);
    TAKE(energy_mj, GP_F_ENERGY);
    TAKE(sm_clock_mhz, GP_F_SM_CLOCK);
    TAKE(mem_clock_mhz, GP_F_MEM_CLOCK);
    TAKE(gpu_util, GP_F_GPU_UTIL);
    TAKE(mem_util, GP_F_MEM_UTIL);
    TAKE(mem_used_bytes, GP_F_MEM_USED);
    TAKE(mem_total_bytes, GP_F_MEM_TOTAL);
    TAKE(sm_active, GP_F_SM_ACTIVE);
    TAKE(sm_occupancy, GP_F_SM_OCCUPANCY);
    TAKE(tensor_active, GP_F_TENSOR_ACTIVE);
    TAKE(dram_active, GP_F_DRAM_ACTIVE);
    TAKE(fp64_active, GP_F_FP64_ACTIVE);
    TAKE(fp32_active, GP_F_FP32_ACTIVE);
    TAKE(fp16_active, GP_F_FP16_ACTIVE);
    TAKE(xid, GP_F_XID);
    TAKE(throttle_reasons, GP_F_THROTTLE);
#undef TAKE
    d->valid |= v;
    if (x->ts_ns > d->ts_ns) d->ts_ns = x->ts_ns;
}

/* One sample per device for the rows up to now_ns; a later row's fields win. */
static int dmon_sample(void *state, int64_t now_ns, gp_sample *out, size_t cap, size_t *n,
                       char *err, size_t errlen) {
    (void)err, (void)errlen;
    dmon_state *st = state;
    size_t k = 0;
    while (st->cursor < st->ns && st->s[st->cursor].ts_ns <= now_ns) {
        const gp_sample *x = &st->s[st->cursor++];
        size_t j = 0;
        for (; j < k; j++)
            if (!strcmp(out[j].uuid, x->uuid)) break;
        if (j < k)
            merge(&out[j], x);
        else if (k < cap)
            out[k++] = *x;
    }
    *n = k;
    return 0;
}

static void dmon_close(void *state) {
    dmon_state *st = state;
    if (!st) return;
    free(st->dev);
    free(st->s);
    free(st);
}

/* No node_paths and no processes: dmon rows name no process (source.h). */
const gp_source_ops gp_source_dmon = {
    .name = "dmon",
    .usage = "dmon:FILE[,interval=MS] replay a dcgmi dmon log (-e FIELDS or -g GROUP, -d MS)",
    .open = dmon_open,
    .list_devices = dmon_devices,
    .sample = dmon_sample,
    .list_processes = NULL,
    .drain_events = NULL,
    .end_ns = dmon_end,
    .now_ns = dmon_now,
    .close = dmon_close,
};
