/* smi.c: nvidia-smi log replay (CSV query tables, dmon, pmon, -q -x XML). See smi.h.
 *
 * The text parser is a small line-state machine: a recognised header line (CSV header,
 * "# gpu ... pwr" for dmon, "# gpu pid ..." for pmon) opens a table; rows follow until a
 * blank line (CSV) or a '#' line that is not a header. Fields are mapped by column name,
 * never by position, because every nvidia-smi version orders and names them differently.
 * A bad row or value is a warning, never the end of the replay (smi.h).
 * The XML path walks <gpu> elements with libxml2 (in recovery mode, so a cut file keeps
 * what it has). Rows of one instant are merged after parsing (merge_instants). */
#include "sources/smi.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "sources/source.h"
#include "util/slurp.h"

#define NS 1000000000LL
#define MIB (1024ull * 1024ull)
#define MAXCOLS 256

/* Copies with truncation (no format-truncation warnings for bounded identity strings). */
static void scopy(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = 0;
}

/* ---------- growable arrays ---------- */

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

typedef struct {
    gp_smi_log *log;
    size_t dcap, scap, pcap, wlen;
    const char *name;
    long line;
    char *err;
    size_t errlen;
    int64_t last_ts; /* last absolute time seen (ns); 0 = none yet */
    gp_smi_opts tz;  /* resolved: FIXED or LOCAL */
    char tz_why[160];
    int tz_noted;
} ctx;

/* Row-level failures return ROW_BAD (the row is dropped with a warning); running out of
 * memory returns FATAL. */
#define ROW_BAD (-1)
#define FATAL (-2)

static void vmsg(ctx *c, char *out, size_t cap, const char *fmt, va_list ap) {
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    for (char *m = msg; *m; m++) /* one line: values from the file may hold control bytes */
        if ((unsigned char)*m < 0x20) *m = '?';
    if (c->line > 0)
        snprintf(out, cap, "smi: %s:%ld: %s", c->name, c->line, msg);
    else
        snprintf(out, cap, "smi: %s: %s", c->name, msg);
}

__attribute__((format(printf, 2, 3))) static int errf(ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg(c, c->err, c->errlen, fmt, ap);
    va_end(ap);
    return ROW_BAD;
}

static int oom(ctx *c) {
    snprintf(c->err, c->errlen, "smi: %s: out of memory", c->name);
    return FATAL;
}

/* Keeps the first GP_SMI_WARN_KEEP lines, counts all. */
static void keep_warning(ctx *c, const char *line) {
    gp_smi_log *l = c->log;
    l->nwarnings++;
    if (l->nwarnings > GP_SMI_WARN_KEEP) return;
    size_t n = strlen(line);
    char *w = realloc(l->warnings, c->wlen + n + 2);
    if (!w) return;
    l->warnings = w;
    if (c->wlen) w[c->wlen++] = '\n';
    memcpy(w + c->wlen, line, n + 1);
    c->wlen += n;
}

__attribute__((format(printf, 2, 3))) static void warnf(ctx *c, const char *fmt, ...) {
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vmsg(c, line, sizeof line, fmt, ap);
    va_end(ap);
    keep_warning(c, line);
}

static gp_device *device_by_uuid(ctx *c, const char *uuid) {
    for (size_t i = 0; i < c->log->ndevices; i++)
        if (!strcmp(c->log->devices[i].uuid, uuid)) return &c->log->devices[i];
    return NULL;
}

static gp_device *device_by_index(ctx *c, int index) {
    for (size_t i = 0; i < c->log->ndevices; i++)
        if (c->log->devices[i].index == index && !c->log->devices[i].parent_uuid[0])
            return &c->log->devices[i];
    return NULL;
}

static gp_device *add_device(ctx *c, const char *uuid) {
    gp_device *d = device_by_uuid(c, uuid);
    if (d) return d;
    if (grow((void **)&c->log->devices, &c->dcap, c->log->ndevices + 1, sizeof *d) < 0) return NULL;
    d = &c->log->devices[c->log->ndevices++];
    memset(d, 0, sizeof *d);
    scopy(d->uuid, sizeof d->uuid, uuid);
    d->index = -1;
    d->mig_mode = -1;
    return d;
}

static gp_sample *add_sample(ctx *c) {
    if (grow((void **)&c->log->samples, &c->scap, c->log->nsamples + 1, sizeof(gp_sample)) < 0)
        return NULL;
    gp_sample *s = &c->log->samples[c->log->nsamples++];
    memset(s, 0, sizeof *s);
    return s;
}

static gp_proc_sample *add_proc(ctx *c) {
    if (grow((void **)&c->log->procs, &c->pcap, c->log->nprocs + 1, sizeof(gp_proc_sample)) < 0)
        return NULL;
    gp_proc_sample *p = &c->log->procs[c->log->nprocs++];
    memset(p, 0, sizeof *p);
    return p;
}

/* ---------- values ---------- */

/* "[N/A]", "N/A", "[Not Supported]", "-", "" and any bracketed text are unknown. */
static int is_unknown(const char *v) {
    return !*v || *v == '[' || !strcmp(v, "-") || !strcasecmp(v, "N/A") ||
           !strncasecmp(v, "Not Supported", 13) || !strncasecmp(v, "Requested functionality", 23) ||
           !strncasecmp(v, "Unknown Error", 13) || !strcasecmp(v, "Unknown");
}

/* Parses "631.95 W", "100 %", "19818 MiB", "1980". 1 = value, 0 = unknown, -1 = bad. */
static int num(const char *v, double *out) {
    if (is_unknown(v)) return 0;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || errno || !isfinite(x)) return -1;
    while (*end == ' ')
        end++;
    for (const char *u = end; *u; u++)
        if (!(isalpha((unsigned char)*u) || *u == '%' || *u == '/')) return -1;
    *out = x;
    return 1;
}

/* Memory value in bytes from a value in MiB (nvidia-smi's unit), or with its own unit. */
static int mem_bytes(const char *v, uint64_t *out) {
    double x;
    int r = num(v, &x);
    if (r <= 0) return r;
    if (x < 0 || x > 1e15) return -1;
    const char *u = v;
    while (*u && !isalpha((unsigned char)*u))
        u++;
    double mul;
    if (!*u || !strcmp(u, "MiB") || !strcmp(u, "MB"))
        mul = MIB; /* nvidia-smi's unit */
    else if (!strcmp(u, "GiB"))
        mul = 1024.0 * MIB;
    else if (!strcmp(u, "KiB"))
        mul = 1024.0;
    else if (!strcmp(u, "B"))
        mul = 1;
    else
        return -1;
    *out = (uint64_t)llround(x * mul);
    return 1;
}

/* ---------- time zones ---------- */

int gp_smi_parse_tz(const char *text, gp_smi_opts *o, char *err, size_t errlen) {
    if (!strcasecmp(text, "UTC") || !strcasecmp(text, "Z") || !strcasecmp(text, "GMT")) {
        o->tz = GP_SMI_TZ_FIXED;
        o->tz_offset_s = 0;
        return 0;
    }
    if (!strcasecmp(text, "local")) {
        o->tz = GP_SMI_TZ_LOCAL;
        o->tz_offset_s = 0;
        return 0;
    }
    const char *s = text;
    if (!strncasecmp(s, "UTC", 3)) s += 3;
    int sign = *s == '+' ? 1 : *s == '-' ? -1 : 0;
    int h = -1, m = 0, k = 0;
    if (sign) {
        s++;
        char extra;
        if (strlen(s) == 4 && sscanf(s, "%2d%2d%n", &h, &m, &k) == 2 && k == 4) {
        } else if (sscanf(s, "%d:%2d%n", &h, &m, &k) == 2 && !s[k]) {
        } else if (sscanf(s, "%d%c", &h, &extra) == 1) {
            m = 0;
        } else {
            h = -1;
        }
    }
    if (!sign || h < 0 || h > 14 || m < 0 || m > 59) {
        snprintf(err, errlen, "smi: tz=%s: expected UTC, local or an offset like +02:00", text);
        return -1;
    }
    o->tz = GP_SMI_TZ_FIXED;
    o->tz_offset_s = sign * (h * 3600 + m * 60);
    return 0;
}

static void fmt_offset(int off_s, char *buf, size_t cap) {
    int a = off_s < 0 ? -off_s : off_s;
    snprintf(buf, cap, "UTC%c%02d:%02d", off_s < 0 ? '-' : '+', a / 3600, a / 60 % 60);
}

/* A broken-down local time from the file (tm, plus a fraction of a second) -> ns, read in
 * the resolved zone. The first one read writes log->tz_note. */
static int tm_to_ns(ctx *c, struct tm *tm, double frac, int64_t *out) {
    if (!(frac >= 0 && frac < 1)) return -1;
    struct tm keep = *tm;
    time_t t;
    if (c->tz.tz == GP_SMI_TZ_LOCAL) {
        tm->tm_isdst = -1;
        t = mktime(tm);
        if (t == (time_t)-1 && tm->tm_year != 69) return -1;
    } else {
        t = timegm(tm) - c->tz.tz_offset_s;
    }
    /* A year nvidia-smi never wrote would overflow ns. */
    if (t < -(INT64_MAX / NS) + 1 || t > INT64_MAX / NS - 1) return -1;
    *out = (int64_t)t * NS + (int64_t)llround(frac * 1e9);
    if (!c->tz_noted) {
        c->tz_noted = 1;
        char off[32];
        fmt_offset((int)(timegm(&keep) - t), off, sizeof off);
        snprintf(c->log->tz_note, sizeof c->log->tz_note, "smi: %s: timestamps read as %s%s (%s)",
                 c->name, c->tz.tz == GP_SMI_TZ_LOCAL ? "local time, " : "", off, c->tz_why);
    }
    return 0;
}

/* "2026/07/14 08:12:38.696" (nvidia-smi CSV) -> ns. */
static int csv_time(ctx *c, const char *v, int64_t *out) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *r = strptime(v, "%Y/%m/%d %H:%M:%S", &tm);
    if (!r) return -1;
    double frac = 0;
    if (*r == '.') {
        char *e;
        frac = strtod(r, &e);
        r = e;
    }
    if (*r) return -1;
    return tm_to_ns(c, &tm, frac, out);
}

/* nvidia_gpu_exporter's capture header: "collected_at:   2026-07-14T08:12:38Z". Only the
 * lines before the first table count. Sets c->tz to the zone written there. */
static int header_zone(ctx *c, const char *buf, size_t len) {
    const char *p = buf, *e = buf + len;
    for (int n = 0; p < e && n < 60; n++) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(e - p);
        char line[160];
        if (l < sizeof line && l > 13 && !memcmp(p, "collected_at:", 13)) {
            memcpy(line, p, l);
            line[l] = 0;
            char *v = line + 13;
            while (*v == ' ' || *v == '\t')
                v++;
            char *z = v + strcspn(v, "Z+-"); /* the zone starts after the date's own '-' */
            if (strlen(v) >= 19) z = v + 19 + strcspn(v + 19, "Z+-");
            if (!*z) return 0;
            char zone[32];
            scopy(zone, sizeof zone, z);
            zone[strcspn(zone, " \t\r")] = 0;
            char e2[64];
            if (gp_smi_parse_tz(zone, &c->tz, e2, sizeof e2) < 0) return 0;
            char stamp[64];
            scopy(stamp, sizeof stamp, v);
            stamp[strcspn(stamp, " \t\r")] = 0;
            snprintf(c->tz_why, sizeof c->tz_why, "zone of the capture header's collected_at %s",
                     stamp);
            return 1;
        }
        p = nl ? nl + 1 : e;
    }
    return 0;
}

/* ---------- merging rows of one instant ---------- */

/* Copies the fields src has and mask selects into dst. */
static void copy_fields(gp_sample *d, const gp_sample *s, uint32_t mask) {
#define F(bit, field)                                                                              \
    if (mask & s->valid & (bit)) d->field = s->field;
    F(GP_F_GPU_UTIL, gpu_util)
    F(GP_F_SM_ACTIVE, sm_active)
    F(GP_F_SM_OCCUPANCY, sm_occupancy)
    F(GP_F_TENSOR_ACTIVE, tensor_active)
    F(GP_F_DRAM_ACTIVE, dram_active)
    F(GP_F_FP16_ACTIVE, fp16_active)
    F(GP_F_FP32_ACTIVE, fp32_active)
    F(GP_F_FP64_ACTIVE, fp64_active)
    F(GP_F_MEM_USED, mem_used_bytes)
    F(GP_F_MEM_TOTAL, mem_total_bytes)
    F(GP_F_POWER, power_w)
    F(GP_F_ENERGY, energy_mj)
    F(GP_F_SM_CLOCK, sm_clock_mhz)
    F(GP_F_MEM_CLOCK, mem_clock_mhz)
    F(GP_F_PCIE_TX, pcie_tx_bytes)
    F(GP_F_PCIE_RX, pcie_rx_bytes)
    F(GP_F_NVLINK_TX, nvlink_tx_bytes)
    F(GP_F_NVLINK_RX, nvlink_rx_bytes)
    F(GP_F_TEMP, temp_c)
    F(GP_F_THROTTLE, throttle_reasons)
    F(GP_F_XID, xid)
    F(GP_F_MEM_UTIL, mem_util)
#undef F
    d->valid |= s->valid & mask;
}

static void copy_proc_fields(gp_proc_sample *d, const gp_proc_sample *s, uint32_t mask) {
    if (mask & s->valid & GP_P_SM_SHARE) d->sm_share = s->sm_share;
    if (mask & s->valid & GP_P_MEM) d->mem_bytes = s->mem_bytes;
    d->valid |= s->valid & mask;
}

typedef struct {
    const void *base;
    size_t elem;
    int procs;
} sort_ctx;

static int cmp_rows(const void *a, const void *b, void *arg) {
    const sort_ctx *sc = arg;
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
    const char *ra = (const char *)sc->base + ia * sc->elem;
    const char *rb = (const char *)sc->base + ib * sc->elem;
    if (sc->procs) {
        const gp_proc_sample *x = (const void *)ra, *y = (const void *)rb;
        int k = strcmp(x->uuid, y->uuid);
        if (k) return k;
        if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
        if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    } else {
        const gp_sample *x = (const void *)ra, *y = (const void *)rb;
        int k = strcmp(x->uuid, y->uuid);
        if (k) return k;
        if (x->ts_ns != y->ts_ns) return x->ts_ns < y->ts_ns ? -1 : 1;
    }
    return ia < ib ? -1 : ia > ib;
}

static int same_key(ctx *c, int procs, size_t a, size_t b) {
    if (procs) {
        const gp_proc_sample *x = &c->log->procs[a], *y = &c->log->procs[b];
        return !strcmp(x->uuid, y->uuid) && x->ts_ns == y->ts_ns && x->pid == y->pid;
    }
    const gp_sample *x = &c->log->samples[a], *y = &c->log->samples[b];
    return !strcmp(x->uuid, y->uuid) && x->ts_ns == y->ts_ns;
}

/* Merges rows with the same key (device, instant[, pid]) into the first of them, keeping
 * file order; the first row that has a field keeps it. */
static int merge_instants(ctx *c, int procs) {
    size_t n = procs ? c->log->nprocs : c->log->nsamples;
    if (n < 2) return 0;
    size_t *ix = malloc(n * sizeof *ix);
    char *dead = calloc(n, 1);
    if (!ix || !dead) {
        free(ix);
        free(dead);
        return oom(c);
    }
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    sort_ctx sc = {procs ? (const void *)c->log->procs : (const void *)c->log->samples,
                   procs ? sizeof(gp_proc_sample) : sizeof(gp_sample), procs};
    qsort_r(ix, n, sizeof *ix, cmp_rows, &sc);
    for (size_t g = 0; g < n;) {
        size_t h = g + 1;
        while (h < n && same_key(c, procs, ix[g], ix[h]))
            h++;
        for (size_t k = g + 1; k < h; k++) {
            if (procs) {
                gp_proc_sample *d = &c->log->procs[ix[g]], *s = &c->log->procs[ix[k]];
                copy_proc_fields(d, s, ~d->valid);
                if (!d->name[0]) scopy(d->name, sizeof d->name, s->name);
            } else {
                gp_sample *d = &c->log->samples[ix[g]];
                copy_fields(d, &c->log->samples[ix[k]], ~d->valid);
            }
            dead[ix[k]] = 1;
        }
        g = h;
    }
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (dead[i]) continue;
        if (procs)
            c->log->procs[w++] = c->log->procs[i];
        else
            c->log->samples[w++] = c->log->samples[i];
    }
    if (procs)
        c->log->nprocs = w;
    else
        c->log->nsamples = w;
    free(ix);
    free(dead);
    return 0;
}

/* ---------- CSV query tables ---------- */

enum { T_NONE, T_GPU, T_APPS, T_OTHER, T_DMON, T_PMON };

typedef struct {
    int kind;
    int ncols;
    char cols[MAXCOLS][64]; /* names without units */
    long header_line;
    int cycle;        /* dmon/pmon: rows without time, counted in 1 s steps */
    int64_t base_ts;  /* dmon/pmon: time of cycle 0 */
    int64_t seen[64]; /* pmon/dmon: what was seen in this cycle (gpu index or pid key) */
    int nseen;
} table;

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    *e = 0;
    return s;
}

/* Splits on ',' in place; returns the count. */
static int split_csv(char *line, char **out, int cap) {
    int n = 0;
    char *s = line;
    for (;;) {
        char *c = strchr(s, ',');
        if (n < cap) out[n] = s;
        n++;
        if (!c) break;
        *c = 0;
        s = c + 1;
    }
    for (int i = 0; i < n && i < cap; i++)
        out[i] = trim(out[i]);
    return n;
}

static int is_field_name(const char *t) {
    if (!(islower((unsigned char)*t) || *t == '_')) return 0;
    const char *s = t;
    while (*s && (islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_' ||
                  *s == '.' || isupper((unsigned char)*s)))
        s++;
    if (!*s) return 1;
    if (*s != ' ') return 0;
    while (*s == ' ')
        s++;
    return *s == '[' && s[strlen(s) - 1] == ']';
}

/* The first dotted part of every field nvidia-smi --help-query-gpu, -compute-apps,
 * -accounted-apps and -retired-pages list in the three nvidia_gpu_exporter captures
 * (drivers 590-595), plus names older drivers used. A column outside these is unknown. */
static const char *known_fields[] = {"accounting",
                                     "addressing_mode",
                                     "board_id",
                                     "c2c",
                                     "clocks",
                                     "clocks_event_reasons",
                                     "clocks_event_reasons_counters",
                                     "clocks_throttle_reasons",
                                     "compute_cap",
                                     "compute_mode",
                                     "count",
                                     "display_active",
                                     "display_attached",
                                     "display_mode",
                                     "dramEncryption",
                                     "driver_model",
                                     "driver_version",
                                     "ecc",
                                     "edpp_multiplier",
                                     "encoder",
                                     "enforced",
                                     "fabric",
                                     "fan",
                                     "gom",
                                     "gpu_bus_id",
                                     "gpu_name",
                                     "gpu_operation_mode",
                                     "gpu_recovery_action",
                                     "gpu_serial",
                                     "gpu_util",
                                     "gpu_utilization",
                                     "gpu_uuid",
                                     "gsp",
                                     "hostname",
                                     "index",
                                     "inforom",
                                     "is_running",
                                     "kmd_version",
                                     "max_memory_usage",
                                     "mem_util",
                                     "mem_utilization",
                                     "memory",
                                     "mig",
                                     "module",
                                     "multigpu_board",
                                     "name",
                                     "pci",
                                     "pcie",
                                     "persistence_mode",
                                     "pid",
                                     "platform",
                                     "power",
                                     "power_smoothing",
                                     "process_name",
                                     "protected_memory",
                                     "pstate",
                                     "remapped_rows",
                                     "reset_status",
                                     "retired_pages",
                                     "serial",
                                     "temperature",
                                     "time",
                                     "timestamp",
                                     "used_gpu_memory",
                                     "used_memory",
                                     "utilization",
                                     "uuid",
                                     "vbios_version",
                                     "vgpu_device_capability",
                                     "vgpu_driver_capability",
                                     "vgpu_instance",
                                     NULL};

static int known_field(const char *name) {
    size_t l = strcspn(name, ".");
    for (int i = 0; known_fields[i]; i++)
        if (strlen(known_fields[i]) == l && !strncmp(known_fields[i], name, l)) return 1;
    return 0;
}

static const char *gpu_fields[] = {
    "uuid",      "utilization.gpu",   "memory.used", "power.draw", "temperature.gpu",
    "clocks.sm", "clocks.current.sm", "name",        "index",      "pci.bus_id",
    NULL};

static int has_col(const table *t, const char *name) {
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], name)) return 1;
    return 0;
}

/* Tries to read a CSV header; returns 1 and fills t when the line is one. */
static int csv_header(ctx *c, char *line, table *t, long lineno) {
    if (!strchr(line, ',')) return 0;
    size_t len = strlen(line) + 1;
    char *buf = malloc(len);
    char **tok = malloc(MAXCOLS * sizeof *tok);
    if (!buf || !tok) {
        free(buf);
        free(tok);
        return 0;
    }
    memcpy(buf, line, len);
    int n = split_csv(buf, tok, MAXCOLS);
    int ok = n >= 2 && n <= MAXCOLS;
    for (int i = 0; ok && i < n; i++)
        if (!is_field_name(tok[i])) ok = 0;
    if (ok) {
        memset(t, 0, sizeof *t);
        t->ncols = n;
        t->header_line = lineno;
        for (int i = 0; i < n; i++) {
            size_t l = strcspn(tok[i], " [");
            if (l >= sizeof t->cols[0]) l = sizeof t->cols[0] - 1;
            memcpy(t->cols[i], tok[i], l);
            t->cols[i][l] = 0;
            if (!known_field(t->cols[i]))
                warnf(c, "unknown column '%s' (not an nvidia-smi query field); ignored",
                      t->cols[i]);
        }
        if (has_col(t, "pid"))
            t->kind =
                (has_col(t, "used_gpu_memory") || has_col(t, "used_memory")) ? T_APPS : T_OTHER;
        else {
            t->kind = T_OTHER;
            for (int i = 0; gpu_fields[i]; i++)
                if (has_col(t, gpu_fields[i])) t->kind = T_GPU;
        }
    }
    free(buf);
    free(tok);
    return ok;
}

static int col(const table *t, const char *const *names) {
    for (int k = 0; names[k]; k++)
        for (int i = 0; i < t->ncols; i++)
            if (!strcmp(t->cols[i], names[k])) return i;
    return -1;
}

#define COL(t, ...) col(t, (const char *const[]){__VA_ARGS__, NULL})

/* Sets a double field from column i scaled by mul; a bad value is a warning naming the
 * column, and the field stays unknown. */
static void set_num(ctx *c, const table *t, char **v, int i, gp_sample *s, uint32_t f, double *slot,
                    double mul) {
    if (i < 0) return;
    double x;
    int r = num(v[i], &x);
    if (r < 0)
        warnf(c, "field %s: '%s' is not a number; left unknown", t->cols[i], v[i]);
    else if (r > 0)
        gp_set_d(s, f, slot, x * mul);
}

static void set_mem(ctx *c, const table *t, char **v, int i, gp_sample *s, uint32_t f,
                    uint64_t *slot) {
    if (i < 0) return;
    int r = mem_bytes(v[i], slot);
    if (r < 0)
        warnf(c, "field %s: '%s' is not an amount of memory; left unknown", t->cols[i], v[i]);
    else if (r > 0)
        s->valid |= f;
}

static int row_time(ctx *c, const table *t, char **v, int64_t *ts) {
    int i = COL(t, "timestamp");
    if (i >= 0 && !is_unknown(v[i])) {
        if (csv_time(c, v[i], ts) < 0)
            return errf(c, "field timestamp: '%s' is not YYYY/MM/DD HH:MM:SS; row skipped", v[i]);
        c->last_ts = *ts;
        return 0;
    }
    *ts = c->last_ts;
    return 0;
}

static int gpu_row(ctx *c, const table *t, char **v) {
    int64_t ts;
    if (row_time(c, t, v, &ts) < 0) return ROW_BAD;
    int iu = COL(t, "uuid"), ii = COL(t, "index");
    char uuid[GP_UUID_MAX];
    int index = -1;
    if (ii >= 0 && !is_unknown(v[ii])) {
        char *e;
        errno = 0;
        long x = strtol(v[ii], &e, 10);
        if (*e || x < 0 || x > INT_MAX || errno)
            return errf(c, "field index: '%s' is not a GPU index; row skipped", v[ii]);
        index = (int)x;
    }
    if (iu >= 0 && !is_unknown(v[iu]))
        scopy(uuid, sizeof uuid, v[iu]);
    else if (index >= 0 && device_by_index(c, index))
        scopy(uuid, sizeof uuid, device_by_index(c, index)->uuid);
    else if (index >= 0)
        snprintf(uuid, sizeof uuid, "smi-index-%d", index);
    else
        return errf(c, "row has neither a uuid nor an index; row skipped");
    gp_device *d = add_device(c, uuid);
    if (!d) return oom(c);
    if (index >= 0) d->index = index;
    int i = COL(t, "name");
    if (i >= 0 && !is_unknown(v[i])) scopy(d->name, sizeof d->name, v[i]);
    i = COL(t, "pci.bus_id");
    if (i >= 0 && !is_unknown(v[i])) scopy(d->pci_bus_id, sizeof d->pci_bus_id, v[i]);
    i = COL(t, "mig.mode.current");
    if (i >= 0 && !is_unknown(v[i])) d->mig_mode = !strcasecmp(v[i], "Enabled");
    i = COL(t, "hostname");
    if (i >= 0 && !is_unknown(v[i])) scopy(d->host, sizeof d->host, v[i]);
    if (!d->spec) d->spec = gp_spec_lookup(d->name);

    gp_sample *s = add_sample(c);
    if (!s) return oom(c);
    scopy(s->uuid, sizeof s->uuid, uuid);
    s->ts_ns = ts;
    set_num(c, t, v, COL(t, "utilization.gpu"), s, GP_F_GPU_UTIL, &s->gpu_util, 0.01);
    set_num(c, t, v, COL(t, "utilization.memory"), s, GP_F_MEM_UTIL, &s->mem_util, 0.01);
    set_num(c, t, v, COL(t, "power.draw", "power.draw.average", "power.draw.instant"), s,
            GP_F_POWER, &s->power_w, 1);
    set_num(c, t, v, COL(t, "temperature.gpu"), s, GP_F_TEMP, &s->temp_c, 1);
    set_num(c, t, v, COL(t, "clocks.current.sm", "clocks.sm"), s, GP_F_SM_CLOCK, &s->sm_clock_mhz,
            1);
    set_num(c, t, v, COL(t, "clocks.current.memory", "clocks.mem"), s, GP_F_MEM_CLOCK,
            &s->mem_clock_mhz, 1);
    set_mem(c, t, v, COL(t, "memory.used"), s, GP_F_MEM_USED, &s->mem_used_bytes);
    set_mem(c, t, v, COL(t, "memory.total"), s, GP_F_MEM_TOTAL, &s->mem_total_bytes);
    if (gp_has(s->valid, GP_F_MEM_TOTAL)) d->memory_total_bytes = s->mem_total_bytes;
    i = COL(t, "clocks_event_reasons.active", "clocks_throttle_reasons.active");
    if (i >= 0 && !is_unknown(v[i])) {
        char *e;
        errno = 0;
        unsigned long long r = strtoull(v[i], &e, 16);
        if (errno || *e || e == v[i])
            warnf(c, "field %s: '%s' is not a hex bitmask; left unknown", t->cols[i], v[i]);
        else {
            s->throttle_reasons = r;
            s->valid |= GP_F_THROTTLE;
        }
    }
    return 0;
}

static int parse_pid(ctx *c, const char *field, const char *v, long long *pid) {
    char *e;
    errno = 0;
    long long x = strtoll(v, &e, 10);
    if (*e || e == v || x <= 0 || x > INT_MAX || errno)
        return errf(c, "field %s: '%s' is not a process id; row skipped", field, v);
    *pid = x;
    return 0;
}

static int apps_row(ctx *c, const table *t, char **v) {
    int64_t ts;
    if (row_time(c, t, v, &ts) < 0) return ROW_BAD;
    int iu = COL(t, "gpu_uuid", "uuid"), ip = COL(t, "pid"),
        im = COL(t, "used_gpu_memory", "used_memory"), in = COL(t, "process_name", "name");
    long long pid;
    if (parse_pid(c, "pid", v[ip], &pid) < 0) return ROW_BAD;
    if (iu < 0 || is_unknown(v[iu])) return errf(c, "field gpu_uuid: no GPU UUID; row skipped");
    gp_proc_sample *p = add_proc(c);
    if (!p) return oom(c);
    scopy(p->uuid, sizeof p->uuid, v[iu]);
    p->ts_ns = ts;
    p->pid = pid;
    if (in >= 0 && !is_unknown(v[in])) scopy(p->name, sizeof p->name, v[in]);
    if (im >= 0) {
        int r = mem_bytes(v[im], &p->mem_bytes);
        if (r < 0)
            warnf(c, "field %s: '%s' is not an amount of memory; left unknown", t->cols[im], v[im]);
        else if (r > 0)
            p->valid |= GP_P_MEM;
    }
    return 0;
}

/* ---------- dmon / pmon ---------- */

/* Every column `nvidia-smi dmon -s pucvmet` and `pmon -s um` print (with -o DT), as the
 * captures' -h sections list them; another is unknown. */
static const char *mon_cols[] = {"gpu",   "pid",   "type",    "sm",    "mem",   "enc",   "dec",
                                 "jpg",   "ofa",   "command", "pwr",   "gtemp", "mtemp", "mclk",
                                 "pclk",  "pviol", "tviol",   "fb",    "bar1",  "ccpm",  "sbecc",
                                 "dbecc", "pci",   "rxpci",   "txpci", "Date",  "Time",  "gi",
                                 "ci",    "name",  "nvdec",   "nvenc", "nvjpg", "nvofa", NULL};

/* "# gpu   pwr  gtemp ..." -> columns; returns 1 when the line is a dmon/pmon header. */
static int mon_header(const char *line, table *t, long lineno) {
    const char *s = line;
    if (*s != '#') return 0;
    s++;
    char buf[1024];
    scopy(buf, sizeof buf, s);
    char *save = NULL;
    t->ncols = 0;
    for (char *w = strtok_r(buf, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
        if (t->ncols >= MAXCOLS) return 0;
        scopy(t->cols[t->ncols++], sizeof t->cols[0], w);
    }
    if (!has_col(t, "gpu")) return 0;
    if (has_col(t, "pid"))
        t->kind = T_PMON;
    else if (has_col(t, "sm") || has_col(t, "pwr"))
        t->kind = T_DMON;
    else
        return 0;
    t->header_line = lineno;
    t->cycle = 0;
    t->nseen = 0;
    return 1;
}

static int mon_int(ctx *c, const table *t, const char *v, int i, long long *out) {
    char *e;
    errno = 0;
    long long x = strtoll(v, &e, 10);
    if (*e || e == v || x < 0 || x > INT_MAX || errno)
        return errf(c, "field %s: '%s' is not an integer; row skipped", t->cols[i], v);
    *out = x;
    return 0;
}

/* The row's time: Date/Time columns (-o DT), else one second per cycle. key identifies the
 * row within a cycle (gpu index, or pid and gpu for pmon): seeing it again starts a new
 * cycle. */
static int mon_time(ctx *c, table *t, char **v, int n, int64_t key, int64_t *ts) {
    int id = -1, it = -1;
    for (int i = 0; i < t->ncols && i < n; i++) {
        if (!strcmp(t->cols[i], "Date")) id = i;
        if (!strcmp(t->cols[i], "Time")) it = i;
    }
    if (id >= 0 && it >= 0) {
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s %s", v[id], v[it]);
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *r = strptime(tmp, "%Y%m%d %H:%M:%S", &tm);
        if (!r || *r || tm_to_ns(c, &tm, 0, ts) < 0)
            return errf(c, "fields Date Time: '%s' is not YYYYMMDD HH:MM:SS; row skipped", tmp);
        c->last_ts = *ts;
        return 0;
    }
    for (int i = 0; i < t->nseen; i++)
        if (t->seen[i] == key) {
            t->cycle++;
            t->nseen = 0;
            break;
        }
    if (t->nseen < 64) t->seen[t->nseen++] = key;
    *ts = t->base_ts + (int64_t)t->cycle * NS;
    return 0;
}

static const char *uuid_for_index(ctx *c, int index, char *buf, size_t cap) {
    gp_device *d = device_by_index(c, index);
    if (d) return d->uuid;
    snprintf(buf, cap, "smi-index-%d", index);
    d = add_device(c, buf);
    if (d) d->index = index;
    return buf;
}

static int mon_row(ctx *c, table *t, char *line) {
    char *v[MAXCOLS];
    int n = 0;
    char *save = NULL;
    for (char *w = strtok_r(line, " \t\r", &save); w && n < MAXCOLS;
         w = strtok_r(NULL, " \t\r", &save))
        v[n++] = w;
    /* pmon's command name may be missing; a row has at least the columns before it. */
    int need = t->kind == T_PMON ? t->ncols - 1 : t->ncols;
    if (n < need || (t->kind == T_DMON && n != t->ncols))
        return errf(c, "expected %d columns as in the header (line %ld), got %d; row skipped",
                    t->ncols, t->header_line, n);
    int ig = -1;
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], "gpu")) ig = i;
    if (ig < 0 || ig >= n) return errf(c, "no gpu field in this dmon/pmon row; row skipped");
    long long gpu = 0;
    if (mon_int(c, t, v[ig], ig, &gpu) < 0) return ROW_BAD;
    char ub[GP_UUID_MAX];
    const char *uuid = uuid_for_index(c, (int)gpu, ub, sizeof ub);
    if (t->kind == T_DMON) {
        int64_t ts;
        if (mon_time(c, t, v, n, gpu, &ts) < 0) return ROW_BAD;
        gp_sample *s = add_sample(c);
        if (!s) return oom(c);
        scopy(s->uuid, sizeof s->uuid, uuid);
        s->ts_ns = ts;
        for (int i = 0; i < t->ncols; i++) {
            const char *cn = t->cols[i];
            if (!strcmp(cn, "Date") || !strcmp(cn, "Time")) continue;
            double x;
            int r = num(v[i], &x);
            if (r < 0) {
                warnf(c, "field %s: '%s' is not a number; left unknown", cn, v[i]);
                continue;
            }
            if (r == 0) continue;
            if (!strcmp(cn, "pwr"))
                gp_set_d(s, GP_F_POWER, &s->power_w, x);
            else if (!strcmp(cn, "gtemp"))
                gp_set_d(s, GP_F_TEMP, &s->temp_c, x);
            else if (!strcmp(cn, "sm") && x >= 0 && x <= 100)
                gp_set_d(s, GP_F_GPU_UTIL, &s->gpu_util, x / 100);
            else if (!strcmp(cn, "mem") && x >= 0 && x <= 100)
                gp_set_d(s, GP_F_MEM_UTIL, &s->mem_util, x / 100);
            else if (!strcmp(cn, "mclk"))
                gp_set_d(s, GP_F_MEM_CLOCK, &s->mem_clock_mhz, x);
            else if (!strcmp(cn, "pclk"))
                gp_set_d(s, GP_F_SM_CLOCK, &s->sm_clock_mhz, x);
            else if (!strcmp(cn, "fb") && x >= 0 && x < 1e12) {
                s->mem_used_bytes = (uint64_t)llround(x * MIB);
                s->valid |= GP_F_MEM_USED;
            }
        }
        return 0;
    }
    /* pmon */
    int ip = -1, icmd = -1;
    for (int i = 0; i < t->ncols; i++) {
        if (!strcmp(t->cols[i], "pid")) ip = i;
        if (!strcmp(t->cols[i], "command")) icmd = i;
    }
    if (ip < 0 || ip >= n) return errf(c, "no pid field in this pmon row; row skipped");
    if (!strcmp(v[ip], "-")) return 0; /* "no process" row */
    long long pid = 0;
    if (parse_pid(c, "pid", v[ip], &pid) < 0) return ROW_BAD;
    int64_t ts;
    if (mon_time(c, t, v, n, pid * 4096 + gpu % 4096, &ts) < 0) return ROW_BAD;
    gp_proc_sample *p = add_proc(c);
    if (!p) return oom(c);
    scopy(p->uuid, sizeof p->uuid, uuid);
    p->ts_ns = ts;
    p->pid = pid;
    if (icmd >= 0 && icmd < n && strcmp(v[icmd], "-")) scopy(p->name, sizeof p->name, v[icmd]);
    for (int i = 0; i < t->ncols && i < n; i++) {
        double x;
        if (!strcmp(t->cols[i], "sm")) {
            int r = num(v[i], &x);
            if (r < 0)
                warnf(c, "field sm: '%s' is not a number; left unknown", v[i]);
            else if (r > 0 && x >= 0 && x <= 100) {
                p->sm_share = x / 100;
                p->valid |= GP_P_SM_SHARE;
            }
        } else if (!strcmp(t->cols[i], "fb")) {
            int r = num(v[i], &x);
            if (r < 0)
                warnf(c, "field fb: '%s' is not a number; left unknown", v[i]);
            else if (r > 0 && x >= 0 && x < 1e12) {
                p->mem_bytes = (uint64_t)llround(x * MIB);
                p->valid |= GP_P_MEM;
            }
        }
    }
    return 0;
}

/* ---------- text driver ---------- */

/* Runs one row parser; a bad row becomes a warning and leaves nothing behind. */
static int run_row(ctx *c, int rc, size_t nd, size_t ns, size_t np) {
    if (rc == ROW_BAD) {
        c->log->ndevices = nd;
        keep_warning(c, c->err);
        c->err[0] = 0;
        c->log->nsamples = ns;
        c->log->nprocs = np;
        return 0;
    }
    return rc;
}

static int parse_text(ctx *c, const char *buf, size_t len) {
    table *t = calloc(1, sizeof *t), *nt = calloc(1, sizeof *nt);
    if (!t || !nt) {
        free(t);
        free(nt);
        return oom(c);
    }
    int tables = 0, rc = 0, prev_blank = 0;
    char *line = NULL;
    size_t lcap = 0;
    const char *p = buf, *e = buf + len;
    c->line = 0;
    while (p < e && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(e - p);
        if (n + 1 > lcap) {
            lcap = n + 1;
            char *nb = realloc(line, lcap);
            if (!nb) {
                rc = oom(c);
                break;
            }
            line = nb;
        }
        memcpy(line, p, n);
        line[n] = 0;
        /* A NUL byte inside a line would hide the rest of it: treat it as garbage. */
        int has_nul = memchr(line, 0, n) != NULL;
        p = nl ? nl + 1 : e;
        c->line++;
        char *l = trim(line);
        int after_blank = prev_blank;
        prev_blank = !*l;
        if (!*l) {
            if (t->kind != T_DMON && t->kind != T_PMON) t->kind = T_NONE;
            /* dmon/pmon repeat their header after blank lines; the table goes on. */
            continue;
        }
        if (*l == '#' && !has_nul) {
            if (mon_header(l, nt, c->line)) {
                if ((t->kind == T_DMON || t->kind == T_PMON) && t->kind == nt->kind &&
                    t->ncols == nt->ncols)
                    continue; /* repeated header */
                nt->base_ts = c->last_ts;
                *t = *nt;
                tables++;
                for (int i = 0; i < t->ncols; i++) {
                    int known = 0;
                    for (int k = 0; mon_cols[k]; k++)
                        if (!strcmp(mon_cols[k], t->cols[i])) known = 1;
                    if (!known)
                        warnf(c, "unknown column '%s' (not a dmon/pmon column); ignored",
                              t->cols[i]);
                }
            } else if (!strncmp(l, "# Idx", 5) || !strncmp(l, "#Idx", 4) ||
                       !strncmp(l, "# YYYY", 6)) {
                /* the units line under a dmon/pmon header */
            } else {
                t->kind = T_NONE;
            }
            continue;
        }
        if (!has_nul && csv_header(c, l, nt, c->line)) {
            *t = *nt;
            tables++;
            continue;
        }
        size_t nd = c->log->ndevices, ns = c->log->nsamples, np = c->log->nprocs;
        if (t->kind == T_GPU || t->kind == T_APPS || t->kind == T_OTHER) {
            char **v = malloc(MAXCOLS * sizeof *v);
            if (!v) {
                rc = oom(c);
                break;
            }
            int nv = has_nul ? 0 : split_csv(l, v, MAXCOLS);
            if (nv != t->ncols) {
                warnf(c,
                      "expected %d comma-separated fields as in the header (line %ld), got %d "
                      "(a row cut short or a garbage line); skipped",
                      t->ncols, t->header_line, nv);
            } else if (t->kind == T_GPU) {
                rc = run_row(c, gpu_row(c, t, v), nd, ns, np);
            } else if (t->kind == T_APPS) {
                rc = run_row(c, apps_row(c, t, v), nd, ns, np);
            }
            free(v);
            continue;
        }
        if (t->kind == T_DMON || t->kind == T_PMON) {
            if (isdigit((unsigned char)*l) && !has_nul) {
                rc = run_row(c, mon_row(c, t, l), nd, ns, np);
                continue;
            }
            /* Text right under dmon/pmon rows is a garbage line in the table; after a blank
             * line it is another section. */
            if (!after_blank) {
                warnf(c, "not a %s row (a garbage line); skipped",
                      t->kind == T_DMON ? "dmon" : "pmon");
                continue;
            }
            t->kind = T_NONE;
        }
        /* anything else: a line of another section; skipped */
    }
    free(line);
    free(t);
    free(nt);
    if (rc == 0 && tables == 0) {
        c->line = 0;
        errf(c, "no nvidia-smi CSV header, dmon/pmon table or XML log found");
        return FATAL;
    }
    return rc;
}

/* ---------- XML (nvidia-smi -q -x) ---------- */

static xmlNode *child(xmlNode *n, const char *name) {
    if (!n) return NULL;
    for (xmlNode *k = n->children; k; k = k->next)
        if (k->type == XML_ELEMENT_NODE && !strcmp((const char *)k->name, name)) return k;
    return NULL;
}

/* Text at a '/'-separated path under n, trimmed into buf; NULL when absent. */
static const char *xtext(xmlNode *n, const char *path, char *buf, size_t cap) {
    char p[128];
    scopy(p, sizeof p, path);
    char *save = NULL;
    for (char *part = strtok_r(p, "/", &save); part && n; part = strtok_r(NULL, "/", &save))
        n = child(n, part);
    if (!n) return NULL;
    xmlChar *t = xmlNodeGetContent(n);
    if (!t) return NULL;
    snprintf(buf, cap, "%s", (const char *)t);
    xmlFree(t);
    char *s = buf;
    while (isspace((unsigned char)*s))
        s++;
    memmove(buf, s, strlen(s) + 1);
    char *e = buf + strlen(buf);
    while (e > buf && isspace((unsigned char)e[-1]))
        e--;
    *e = 0;
    return buf;
}

static int xnum(ctx *c, xmlNode *g, const char *path, gp_sample *s, uint32_t f, double *slot,
                double mul) {
    char b[128];
    const char *v = xtext(g, path, b, sizeof b);
    if (!v) return 0;
    double x;
    int r = num(v, &x);
    if (r < 0) {
        warnf(c, "field %s: '%s' is not a number; left unknown", path, v);
        return 0;
    }
    if (r > 0) gp_set_d(s, f, slot, x * mul);
    return r;
}

static void xmem(ctx *c, xmlNode *g, const char *path, gp_sample *s, uint32_t f, uint64_t *slot) {
    char b[128];
    const char *v = xtext(g, path, b, sizeof b);
    if (!v) return;
    int r = mem_bytes(v, slot);
    if (r < 0)
        warnf(c, "field %s: '%s' is not an amount of memory; left unknown", path, v);
    else if (r > 0)
        s->valid |= f;
}

static const struct {
    const char *name;
    uint64_t bit; /* nvmlClocksEventReason* values, nvml.h (API 12/13) */
} reasons[] = {
    {"gpu_idle", 0x1},
    {"applications_clocks_setting", 0x2},
    {"sw_power_cap", 0x4},
    {"hw_slowdown", 0x8},
    {"sync_boost", 0x10},
    {"sw_thermal_slowdown", 0x20},
    {"hw_thermal_slowdown", 0x40},
    {"hw_power_brake_slowdown", 0x80},
    {"display_clocks_setting", 0x100},
};

static void xml_reasons(xmlNode *g, gp_sample *s) {
    static const char *groups[][2] = {{"clocks_event_reasons", "clocks_event_reason_"},
                                      {"clocks_throttle_reasons", "clocks_throttle_reason_"}};
    for (int k = 0; k < 2; k++) {
        xmlNode *r = child(g, groups[k][0]);
        if (!r) continue;
        for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
            char path[96], b[64];
            snprintf(path, sizeof path, "%s%s", groups[k][1], reasons[i].name);
            const char *v = xtext(r, path, b, sizeof b);
            if (!v) continue;
            if (!strcmp(v, "Active")) {
                s->throttle_reasons |= reasons[i].bit;
                s->valid |= GP_F_THROTTLE;
            } else if (!strcmp(v, "Not Active")) {
                s->valid |= GP_F_THROTTLE;
            }
        }
    }
}

typedef struct {
    long gi, ci;
    char uuid[GP_UUID_MAX];
} mig_key;

/* A small non-negative integer from XML text; -1 when absent, N/A or not one. */
static long xint(xmlNode *n, const char *path) {
    char b[64];
    if (!xtext(n, path, b, sizeof b) || !isdigit((unsigned char)b[0])) return -1;
    char *e;
    errno = 0;
    long x = strtol(b, &e, 10);
    return *e || errno || x > INT_MAX ? -1 : x;
}

/* MIG instances: devices of their own, as nvml.c makes them (parent_uuid, the parent's PCI
 * bus id and index, mig_mode 1). The UUID is the <uuid> the XML gives (newer drivers);
 * v12 gives none, so the legacy MIG device name "MIG-<parent uuid>/<gi>/<ci>" (the form
 * CUDA_VISIBLE_DEVICES took before CUDA 11.4) names it. */
static int xml_migs(ctx *c, xmlNode *g, const char *uuid, int64_t ts, mig_key *keys, int *nkeys) {
    xmlNode *migs = child(g, "mig_devices");
    for (xmlNode *m = migs ? migs->children : NULL; m; m = m->next) {
        if (m->type != XML_ELEMENT_NODE || strcmp((const char *)m->name, "mig_device")) continue;
        c->line = m->line;
        long gi = xint(m, "gpu_instance_id"), ci = xint(m, "compute_instance_id");
        char mu[GP_UUID_MAX], b[GP_UUID_MAX + 64];
        if (xtext(m, "uuid", b, sizeof b) && !strncmp(b, "MIG-", 4))
            scopy(mu, sizeof mu, b);
        else if (gi >= 0) {
            snprintf(b, sizeof b, "MIG-%s/%ld/%ld", uuid, gi, ci >= 0 ? ci : 0);
            scopy(mu, sizeof mu, b);
        } else {
            warnf(c, "field mig_device/gpu_instance_id: missing; this MIG device is skipped");
            continue;
        }
        gp_device *md = add_device(c, mu);
        if (!md) return oom(c);
        gp_device *pd = device_by_uuid(c, uuid); /* add_device may have moved it */
        if (!pd) return oom(c);                  /* cannot happen: xml_gpu added it */
        scopy(md->parent_uuid, sizeof md->parent_uuid, uuid);
        scopy(md->pci_bus_id, sizeof md->pci_bus_id, pd->pci_bus_id);
        md->index = pd->index;
        md->mig_mode = 1;
        char mn[160];
        if (gi >= 0)
            snprintf(mn, sizeof mn, "%s MIG gi%ld ci%ld", pd->name, gi, ci >= 0 ? ci : 0);
        else
            snprintf(mn, sizeof mn, "%s MIG", pd->name);
        scopy(md->name, sizeof md->name, mn);
        md->spec = gp_spec_lookup(md->name);
        if (*nkeys < 64 && gi >= 0) {
            keys[*nkeys].gi = gi;
            keys[*nkeys].ci = ci;
            scopy(keys[*nkeys].uuid, sizeof keys[0].uuid, mu);
            (*nkeys)++;
        }
        gp_sample *ms = add_sample(c);
        if (!ms) return oom(c);
        scopy(ms->uuid, sizeof ms->uuid, mu);
        ms->ts_ns = ts;
        xmem(c, m, "fb_memory_usage/used", ms, GP_F_MEM_USED, &ms->mem_used_bytes);
        xmem(c, m, "fb_memory_usage/total", ms, GP_F_MEM_TOTAL, &ms->mem_total_bytes);
        if (gp_has(ms->valid, GP_F_MEM_TOTAL)) md->memory_total_bytes = ms->mem_total_bytes;
    }
    return 0;
}

static int xml_gpu(ctx *c, xmlNode *g, int64_t ts) {
    char b[256], uuid[GP_UUID_MAX];
    if (!xtext(g, "uuid", uuid, sizeof uuid) || is_unknown(uuid)) {
        warnf(c, "field uuid: a <gpu> has no UUID; skipped");
        return 0;
    }
    gp_device *d = add_device(c, uuid);
    if (!d) return oom(c);
    if (xtext(g, "product_name", b, sizeof b)) scopy(d->name, sizeof d->name, b);
    if (xtext(g, "pci/pci_bus_id", b, sizeof b)) scopy(d->pci_bus_id, sizeof d->pci_bus_id, b);
    long minor = xint(g, "minor_number");
    if (minor >= 0) d->index = (int)minor;
    if (xtext(g, "mig_mode/current_mig", b, sizeof b) && !is_unknown(b))
        d->mig_mode = !strcasecmp(b, "Enabled");
    d->spec = gp_spec_lookup(d->name);
    gp_sample *s = add_sample(c);
    if (!s) return oom(c);
    scopy(s->uuid, sizeof s->uuid, uuid);
    s->ts_ns = ts;
    xnum(c, g, "utilization/gpu_util", s, GP_F_GPU_UTIL, &s->gpu_util, 0.01);
    xnum(c, g, "utilization/memory_util", s, GP_F_MEM_UTIL, &s->mem_util, 0.01);
    xnum(c, g, "temperature/gpu_temp", s, GP_F_TEMP, &s->temp_c, 1);
    xnum(c, g, "clocks/sm_clock", s, GP_F_SM_CLOCK, &s->sm_clock_mhz, 1);
    xnum(c, g, "clocks/mem_clock", s, GP_F_MEM_CLOCK, &s->mem_clock_mhz, 1);
    xmem(c, g, "fb_memory_usage/used", s, GP_F_MEM_USED, &s->mem_used_bytes);
    xmem(c, g, "fb_memory_usage/total", s, GP_F_MEM_TOTAL, &s->mem_total_bytes);
    /* Power: schema v11 power_readings/power_draw, v12 gpu_power_readings/power_draw, v13
     * gpu_power_readings/instant_power_draw (then average_power_draw), as telegraf reads. */
    static const char *power_paths[] = {
        "gpu_power_readings/power_draw", "power_readings/power_draw",
        "gpu_power_readings/instant_power_draw", "gpu_power_readings/average_power_draw"};
    for (int i = 0; i < 4 && !gp_has(s->valid, GP_F_POWER); i++)
        xnum(c, g, power_paths[i], s, GP_F_POWER, &s->power_w, 1);
    if (gp_has(s->valid, GP_F_MEM_TOTAL)) d->memory_total_bytes = s->mem_total_bytes;
    xml_reasons(g, s);

    mig_key keys[64];
    int nkeys = 0;
    int rc = xml_migs(c, g, uuid, ts, keys, &nkeys);
    if (rc) return rc;

    xmlNode *procs = child(g, "processes");
    for (xmlNode *p = procs ? procs->children : NULL; p; p = p->next) {
        if (p->type != XML_ELEMENT_NODE || strcmp((const char *)p->name, "process_info")) continue;
        c->line = p->line;
        if (!xtext(p, "pid", b, sizeof b)) continue;
        long long pid;
        if (parse_pid(c, "processes/process_info/pid", b, &pid) < 0) {
            keep_warning(c, c->err);
            continue;
        }
        gp_proc_sample *ps = add_proc(c);
        if (!ps) return oom(c);
        /* A process inside a MIG instance belongs to that device. */
        scopy(ps->uuid, sizeof ps->uuid, uuid);
        long gi = xint(p, "gpu_instance_id"), ci = xint(p, "compute_instance_id");
        for (int k = 0; k < nkeys && gi >= 0; k++)
            if (keys[k].gi == gi && (ci < 0 || keys[k].ci < 0 || keys[k].ci == ci))
                scopy(ps->uuid, sizeof ps->uuid, keys[k].uuid);
        ps->ts_ns = ts;
        ps->pid = pid;
        if (xtext(p, "process_name", b, sizeof b) && !is_unknown(b))
            scopy(ps->name, sizeof ps->name, b);
        if (xtext(p, "used_memory", b, sizeof b)) {
            int r = mem_bytes(b, &ps->mem_bytes);
            if (r < 0)
                warnf(c,
                      "field processes/process_info/used_memory: '%s' is not an amount of "
                      "memory; left unknown",
                      b);
            else if (r > 0)
                ps->valid |= GP_P_MEM;
        }
    }
    return 0;
}

static int parse_xml(ctx *c, const char *buf, size_t len) {
    if (len > INT_MAX) return errf(c, "XML log larger than 2 GiB");
    xmlResetLastError();
    xmlDoc *doc = xmlReadMemory(buf, (int)len, c->name, NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
                                    XML_PARSE_RECOVER);
    const xmlError *xe = xmlGetLastError();
    if (xe && xe->level >= XML_ERR_ERROR) {
        /* Recovery kept what could be read (a file cut mid-element keeps its earlier parts). */
        c->line = xe->line;
        char msg[200];
        scopy(msg, sizeof msg, xe->message ? xe->message : "not well-formed");
        msg[strcspn(msg, "\n")] = 0;
        warnf(c, "XML: %s; the rest of the file is what could be read", msg);
    }
    if (!doc) {
        c->line = 0;
        errf(c, "XML: nothing could be read");
        return FATAL;
    }
    xmlNode *root = xmlDocGetRootElement(doc);
    int rc = 0;
    if (!root || strcmp((const char *)root->name, "nvidia_smi_log")) {
        c->line = root ? root->line : 0;
        errf(c, "XML root is <%s>, expected <nvidia_smi_log>",
             root ? (const char *)root->name : "");
        xmlFreeDoc(doc);
        return FATAL;
    }
    int64_t ts = c->last_ts;
    char b[128];
    if (xtext(root, "timestamp", b, sizeof b)) {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *r = strptime(b, "%a %b %d %H:%M:%S %Y", &tm);
        c->line = root->line;
        if (!r || *r || tm_to_ns(c, &tm, 0, &ts) < 0)
            warnf(c, "field timestamp: '%s' is not 'Mon Apr 24 16:22:39 2023'", b);
    }
    for (xmlNode *g = root->children; g && !rc; g = g->next) {
        if (g->type != XML_ELEMENT_NODE || strcmp((const char *)g->name, "gpu")) continue;
        c->line = g->line;
        rc = xml_gpu(c, g, ts);
    }
    xmlFreeDoc(doc);
    return rc;
}

int gp_smi_parse_opts(const char *name, const char *buf, size_t len, const gp_smi_opts *opts,
                      gp_smi_log *log, char *err, size_t errlen) {
    memset(log, 0, sizeof *log);
    ctx c = {.log = log, .name = name, .err = err, .errlen = errlen};
    if (opts && opts->tz != GP_SMI_TZ_DEFAULT) {
        c.tz = *opts;
        char off[32];
        if (c.tz.tz == GP_SMI_TZ_LOCAL)
            snprintf(c.tz_why, sizeof c.tz_why, "tz=local");
        else {
            fmt_offset(c.tz.tz_offset_s, off, sizeof off);
            snprintf(c.tz_why, sizeof c.tz_why, "tz=%s", off + 3);
        }
    } else if (!header_zone(&c, buf, len)) {
        c.tz.tz = GP_SMI_TZ_LOCAL;
        snprintf(c.tz_why, sizeof c.tz_why,
                 "the capture names no zone, so the local one; pass smi:FILE,tz=UTC or "
                 "tz=+HH:MM to change");
    }
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    int rc;
    /* The buffer is not NUL-terminated: compare only bytes that exist (fuzz_smi). */
    if ((len - i >= 5 && !memcmp(buf + i, "<?xml", 5)) ||
        (len - i >= 15 && !memcmp(buf + i, "<nvidia_smi_log", 15)))
        rc = parse_xml(&c, buf, len);
    else
        rc = parse_text(&c, buf, len);
    if (rc == 0) rc = merge_instants(&c, 0);
    if (rc == 0) rc = merge_instants(&c, 1);
    if (rc < 0) {
        gp_smi_log_free(log);
        return -1;
    }
    return 0;
}

int gp_smi_parse(const char *name, const char *buf, size_t len, gp_smi_log *log, char *err,
                 size_t errlen) {
    return gp_smi_parse_opts(name, buf, len, NULL, log, err, errlen);
}

int gp_smi_load_opts(const char *path, const gp_smi_opts *opts, gp_smi_log *log, char *err,
                     size_t errlen) {
    memset(log, 0, sizeof *log);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "smi: %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *buf;
    size_t len;
    int src = gp_slurp(f, (size_t)1 << 34, &buf, &len);
    fclose(f);
    if (src != 0) {
        snprintf(err, errlen, "smi: %s: %s", path,
                 src == -ENOMEM ? "out of memory" : "read error (a directory?)");
        return -1;
    }
    int rc = gp_smi_parse_opts(path, buf, len, opts, log, err, errlen);
    free(buf);
    return rc;
}

int gp_smi_load(const char *path, gp_smi_log *log, char *err, size_t errlen) {
    return gp_smi_load_opts(path, NULL, log, err, errlen);
}

void gp_smi_log_free(gp_smi_log *log) {
    free(log->devices);
    free(log->samples);
    free(log->procs);
    free(log->warnings);
    memset(log, 0, sizeof *log);
}

/* ---------- the source ---------- */

typedef struct {
    gp_smi_log log;
    size_t cursor;     /* next sample to hand out */
    int64_t origin_ns; /* the first row's time */
    int64_t interval_ns;
    int64_t end_ns;   /* the first tick at or after the last row (see smi_open) */
    int64_t prev_now; /* processes are handed out for (prev_now, now] */
    int64_t last_now;
    double speed;
    int64_t wall0_ns;
} smi_state;

static int64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * NS + t.tv_nsec;
}

/* Prints the warnings the parse kept (and how many more there were) on stderr. */
static void say_warnings(const char *path, const gp_smi_log *l) {
    if (l->warnings) fprintf(stderr, "%s\n", l->warnings);
    if (l->nwarnings > GP_SMI_WARN_KEEP)
        fprintf(stderr, "smi: %s: %zu more warnings like these\n", path,
                l->nwarnings - GP_SMI_WARN_KEEP);
}

static int smi_open(const char *arg, const gp_source_opts *opts, void **state, char *err,
                    size_t errlen) {
    if (!arg || !*arg) {
        snprintf(err, errlen,
                 "source 'smi': expected smi:FILE[,tz=UTC|local|+HH:MM] (an nvidia-smi CSV, "
                 "dmon, pmon or -q -x XML log)");
        return -1;
    }
    /* FILE[,tz=ZONE]: the option is the last ",tz=" so a file name may hold commas. */
    char path[4096];
    scopy(path, sizeof path, arg);
    gp_smi_opts so = {0};
    char *o = NULL;
    for (char *q = strstr(path, ",tz="); q; q = strstr(q + 1, ",tz="))
        o = q;
    if (o) {
        *o = 0;
        if (gp_smi_parse_tz(o + 4, &so, err, errlen) < 0) return -1;
    }
    smi_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "smi: out of memory");
        return -1;
    }
    if (gp_smi_load_opts(path, &so, &s->log, err, errlen) < 0) {
        free(s);
        return -1;
    }
    if (s->log.nsamples == 0) {
        /* One line: the first warning, if any, says why rows were refused. */
        const char *w = s->log.warnings;
        char first[400] = "";
        if (w) {
            scopy(first, sizeof first, w);
            first[strcspn(first, "\n")] = 0;
        }
        snprintf(err, errlen,
                 "smi: %s: no GPU rows (--query-gpu CSV, dmon or -q -x XML) found%s%s%s", path,
                 first[0] ? " (first problem: " : "", first[0] ? first : "", first[0] ? ")" : "");
        gp_smi_log_free(&s->log);
        free(s);
        return -1;
    }
    say_warnings(path, &s->log);
    if (s->log.tz_note[0]) fprintf(stderr, "%s\n", s->log.tz_note);
    /* Times before 1980 mean the file had none: start the replay at start_ns (or now). */
    int64_t first = s->log.samples[0].ts_ns, last = first;
    for (size_t i = 0; i < s->log.nsamples; i++) {
        if (s->log.samples[i].ts_ns < first) first = s->log.samples[i].ts_ns;
        if (s->log.samples[i].ts_ns > last) last = s->log.samples[i].ts_ns;
    }
    for (size_t i = 0; i < s->log.nprocs; i++) {
        if (s->log.procs[i].ts_ns < first) first = s->log.procs[i].ts_ns;
        if (s->log.procs[i].ts_ns > last) last = s->log.procs[i].ts_ns;
    }
    if (first < 315532800LL * NS) {
        int64_t base = opts && opts->start_ns ? opts->start_ns : wall_ns();
        for (size_t i = 0; i < s->log.nsamples; i++)
            s->log.samples[i].ts_ns += base;
        for (size_t i = 0; i < s->log.nprocs; i++)
            s->log.procs[i].ts_ns += base;
        first += base;
        last += base;
    }
    /* The clock starts one interval before the first row, so the agent's ticks (start +
     * k * interval, k >= 1, while <= end_ns) land on the first row and every interval after
     * it; end_ns is the first tick at or after the last row, so the last instant is stored
     * too, and a one-instant file (a -q -x snapshot) gets its one tick. */
    int64_t iv = opts && opts->interval_ns > 0 ? opts->interval_ns : NS;
    s->interval_ns = iv;
    s->origin_ns = first;
    s->end_ns = first + (last - first + iv - 1) / iv * iv;
    s->speed = opts ? opts->speed : 0;
    s->wall0_ns = wall_ns();
    s->prev_now = INT64_MIN;
    *state = s;
    return 0;
}

static int smi_devices(void *state, gp_device *out, size_t cap, size_t *n, char *err,
                       size_t errlen) {
    (void)err, (void)errlen;
    smi_state *s = state;
    size_t k = s->log.ndevices < cap ? s->log.ndevices : cap;
    memcpy(out, s->log.devices, k * sizeof *out);
    *n = k;
    return 0;
}

static int64_t smi_end(void *state) {
    smi_state *s = state;
    return s->end_ns;
}

/* The replay clock: with speed 0, one interval before the first row until the first
 * sample() call, then the time of the next row; otherwise that start plus wall time
 * elapsed times speed. */
static int64_t smi_now(void *state) {
    smi_state *s = state;
    if (s->speed <= 0) {
        if (s->cursor == 0) return s->origin_ns - s->interval_ns;
        size_t i = s->cursor < s->log.nsamples ? s->cursor : s->log.nsamples - 1;
        return s->log.samples[i].ts_ns;
    }
    return s->origin_ns - s->interval_ns + (int64_t)((double)(wall_ns() - s->wall0_ns) * s->speed);
}

/* One sample per device for the rows up to now_ns: when several instants fall in one
 * interval, the later row's fields win and fields it lacks are kept from earlier ones. */
static int smi_sample(void *state, int64_t now_ns, gp_sample *out, size_t cap, size_t *n, char *err,
                      size_t errlen) {
    (void)err, (void)errlen;
    smi_state *s = state;
    size_t k = 0;
    while (s->cursor < s->log.nsamples && s->log.samples[s->cursor].ts_ns <= now_ns) {
        const gp_sample *x = &s->log.samples[s->cursor++];
        size_t j = 0;
        for (; j < k; j++)
            if (!strcmp(out[j].uuid, x->uuid)) break;
        if (j < k) {
            copy_fields(&out[j], x, ~0u);
            if (x->ts_ns > out[j].ts_ns) out[j].ts_ns = x->ts_ns;
        } else if (k < cap)
            out[k++] = *x;
    }
    s->prev_now = s->last_now ? s->last_now : INT64_MIN;
    s->last_now = now_ns;
    *n = k;
    return 0;
}

static int smi_procs(void *state, gp_proc_sample *out, size_t cap, size_t *n, char *err,
                     size_t errlen) {
    (void)err, (void)errlen;
    smi_state *s = state;
    size_t k = 0;
    for (size_t i = 0; i < s->log.nprocs && k < cap; i++) {
        const gp_proc_sample *p = &s->log.procs[i];
        if (p->ts_ns > s->prev_now && p->ts_ns <= s->last_now) out[k++] = *p;
    }
    *n = k;
    return 0;
}

static void smi_close(void *state) {
    smi_state *s = state;
    if (!s) return;
    gp_smi_log_free(&s->log);
    free(s);
}

/* No node_paths: the PIDs in a capture belong to another machine (source.h). */
const gp_source_ops gp_source_smi = {
    .name = "smi",
    .usage = "smi:FILE[,tz=Z] replay an nvidia-smi log (--query-gpu CSV, dmon, pmon, -q -x "
             "XML); Z = UTC, local or +HH:MM",
    .open = smi_open,
    .list_devices = smi_devices,
    .sample = smi_sample,
    .list_processes = smi_procs,
    .drain_events = NULL,
    .end_ns = smi_end,
    .now_ns = smi_now,
    .close = smi_close,
};
