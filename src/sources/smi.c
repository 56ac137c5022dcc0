/* smi.c: nvidia-smi log replay (CSV query tables, dmon, pmon, -q -x XML). See smi.h.
 *
 * The text parser is a small line-state machine: a recognised header line (CSV header,
 * "# gpu ... pwr" for dmon, "# gpu pid ..." for pmon) opens a table; rows follow until a
 * blank line or a line that is not a row of that table. Fields are mapped by column name,
 * never by position, because every nvidia-smi version orders and names them differently.
 * The XML path walks <gpu> elements with libxml2. */
#include "sources/smi.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "sources/source.h"

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
    size_t dcap, scap, pcap;
    const char *name;
    long line;
    char *err;
    size_t errlen;
    int64_t last_ts; /* last absolute time seen (ns); 0 = none yet */
} ctx;

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

static int errf(ctx *c, const char *fmt, const char *a, const char *b) {
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a, b);
    for (char *m = msg; *m; m++) /* one line: values from the file may hold control bytes */
        if ((unsigned char)*m < 0x20) *m = '?';
    snprintf(c->err, c->errlen, "smi: %s:%ld: %s", c->name, c->line, msg);
    return -1;
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
    if (x < 0) return -1;
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

/* "2026/07/14 08:12:38.696" (nvidia-smi CSV; taken as UTC) -> ns. */
static int csv_time(const char *v, int64_t *out) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *r = strptime(v, "%Y/%m/%d %H:%M:%S", &tm);
    if (!r) return -1;
    double frac = 0;
    if (*r == '.') frac = strtod(r, NULL);
    time_t t = timegm(&tm);
    /* A year nvidia-smi never wrote (or a fraction that is not one) would overflow ns. */
    if (!(frac >= 0 && frac < 1) || t < -(INT64_MAX / NS) + 1 || t > INT64_MAX / NS - 1) return -1;
    *out = (int64_t)t * NS + (int64_t)llround(frac * 1e9);
    return 0;
}

/* ---------- CSV query tables ---------- */

enum { T_NONE, T_GPU, T_APPS, T_OTHER, T_DMON, T_PMON };

typedef struct {
    int kind;
    int ncols;
    char cols[MAXCOLS][64]; /* names without units */
    long header_line;
    int cycle;       /* dmon/pmon: rows without time, counted in 1 s steps */
    int64_t base_ts; /* dmon/pmon: time of cycle 0 */
    int seen[64];    /* pmon/dmon: what was seen in this cycle (gpu index or pid hash) */
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
static int csv_header(char *line, table *t, long lineno) {
    if (!strchr(line, ',')) return 0;
    char buf[8192];
    scopy(buf, sizeof buf, line);
    char *tok[MAXCOLS];
    int n = split_csv(buf, tok, MAXCOLS);
    if (n < 2 || n > MAXCOLS) return 0;
    for (int i = 0; i < n; i++)
        if (!is_field_name(tok[i])) return 0;
    table nt;
    memset(&nt, 0, sizeof nt);
    nt.ncols = n;
    nt.header_line = lineno;
    for (int i = 0; i < n; i++) {
        size_t l = strcspn(tok[i], " [");
        if (l >= sizeof nt.cols[0]) l = sizeof nt.cols[0] - 1;
        memcpy(nt.cols[i], tok[i], l);
        nt.cols[i][l] = 0;
    }
    if (has_col(&nt, "pid"))
        nt.kind =
            (has_col(&nt, "used_gpu_memory") || has_col(&nt, "used_memory")) ? T_APPS : T_OTHER;
    else {
        nt.kind = T_OTHER;
        for (int i = 0; gpu_fields[i]; i++)
            if (has_col(&nt, gpu_fields[i])) nt.kind = T_GPU;
    }
    *t = nt;
    return 1;
}

static int col(const table *t, const char *const *names) {
    for (int k = 0; names[k]; k++)
        for (int i = 0; i < t->ncols; i++)
            if (!strcmp(t->cols[i], names[k])) return i;
    return -1;
}

#define COL(t, ...) col(t, (const char *const[]){__VA_ARGS__, NULL})

/* Sets a double field from column i scaled by mul; errors name the column. */
static int set_num(ctx *c, const table *t, char **v, int i, gp_sample *s, uint32_t f, double *slot,
                   double mul) {
    if (i < 0) return 0;
    double x;
    int r = num(v[i], &x);
    if (r < 0) return errf(c, "field %s: '%s' is not a number", t->cols[i], v[i]);
    if (r > 0) gp_set_d(s, f, slot, x * mul);
    return 0;
}

static int set_mem(ctx *c, const table *t, char **v, int i, gp_sample *s, uint32_t f,
                   uint64_t *slot) {
    if (i < 0) return 0;
    int r = mem_bytes(v[i], slot);
    if (r < 0) return errf(c, "field %s: '%s' is not an amount of memory", t->cols[i], v[i]);
    if (r > 0) s->valid |= f;
    return 0;
}

static int row_time(ctx *c, const table *t, char **v, int64_t *ts) {
    int i = COL(t, "timestamp");
    if (i >= 0 && !is_unknown(v[i])) {
        if (csv_time(v[i], ts) < 0)
            return errf(c, "field timestamp: '%s' is not YYYY/MM/DD HH:MM:SS%s", v[i], "");
        c->last_ts = *ts;
        return 0;
    }
    *ts = c->last_ts;
    return 0;
}

static int gpu_row(ctx *c, const table *t, char **v) {
    int64_t ts;
    if (row_time(c, t, v, &ts) < 0) return -1;
    int iu = COL(t, "uuid"), ii = COL(t, "index");
    char uuid[GP_UUID_MAX];
    int index = -1;
    if (ii >= 0 && !is_unknown(v[ii])) {
        char *e;
        long x = strtol(v[ii], &e, 10);
        if (*e || x < 0) return errf(c, "field index: '%s' is not a GPU index%s", v[ii], "");
        index = (int)x;
    }
    if (iu >= 0 && !is_unknown(v[iu]))
        scopy(uuid, sizeof uuid, v[iu]);
    else if (index >= 0 && device_by_index(c, index))
        scopy(uuid, sizeof uuid, device_by_index(c, index)->uuid);
    else if (index >= 0)
        snprintf(uuid, sizeof uuid, "smi-index-%d", index);
    else
        return errf(c, "row has neither a uuid nor an index column%s%s", "", "");
    gp_device *d = add_device(c, uuid);
    if (!d) return errf(c, "out of memory%s%s", "", "");
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
    if (!s) return errf(c, "out of memory%s%s", "", "");
    scopy(s->uuid, sizeof s->uuid, uuid);
    s->ts_ns = ts;
    if (set_num(c, t, v, COL(t, "utilization.gpu"), s, GP_F_GPU_UTIL, &s->gpu_util, 0.01) ||
        set_num(c, t, v, COL(t, "utilization.memory"), s, GP_F_MEM_UTIL, &s->mem_util, 0.01) ||
        set_num(c, t, v, COL(t, "power.draw", "power.draw.average", "power.draw.instant"), s,
                GP_F_POWER, &s->power_w, 1) ||
        set_num(c, t, v, COL(t, "temperature.gpu"), s, GP_F_TEMP, &s->temp_c, 1) ||
        set_num(c, t, v, COL(t, "clocks.current.sm", "clocks.sm"), s, GP_F_SM_CLOCK,
                &s->sm_clock_mhz, 1) ||
        set_num(c, t, v, COL(t, "clocks.current.memory", "clocks.mem"), s, GP_F_MEM_CLOCK,
                &s->mem_clock_mhz, 1) ||
        set_mem(c, t, v, COL(t, "memory.used"), s, GP_F_MEM_USED, &s->mem_used_bytes) ||
        set_mem(c, t, v, COL(t, "memory.total"), s, GP_F_MEM_TOTAL, &s->mem_total_bytes))
        return -1;
    if (gp_has(s->valid, GP_F_MEM_TOTAL)) d->memory_total_bytes = s->mem_total_bytes;
    i = COL(t, "clocks_event_reasons.active", "clocks_throttle_reasons.active");
    if (i >= 0 && !is_unknown(v[i])) {
        char *e;
        errno = 0;
        unsigned long long r = strtoull(v[i], &e, 16);
        if (errno || *e || e == v[i])
            return errf(c, "field %s: '%s' is not a hex bitmask", t->cols[i], v[i]);
        s->throttle_reasons = r;
        s->valid |= GP_F_THROTTLE;
    }
    return 0;
}

static int apps_row(ctx *c, const table *t, char **v) {
    int64_t ts;
    if (row_time(c, t, v, &ts) < 0) return -1;
    int iu = COL(t, "gpu_uuid", "uuid"), ip = COL(t, "pid"),
        im = COL(t, "used_gpu_memory", "used_memory");
    char *e;
    long long pid = strtoll(v[ip], &e, 10);
    if (*e || pid <= 0) return errf(c, "field pid: '%s' is not a process id%s", v[ip], "");
    gp_proc_sample *p = add_proc(c);
    if (!p) return errf(c, "out of memory%s%s", "", "");
    if (iu >= 0) scopy(p->uuid, sizeof p->uuid, v[iu]);
    p->ts_ns = ts;
    p->pid = pid;
    if (im >= 0) {
        int r = mem_bytes(v[im], &p->mem_bytes);
        if (r < 0) return errf(c, "field %s: '%s' is not an amount of memory", t->cols[im], v[im]);
        if (r > 0) p->valid |= GP_P_MEM;
    }
    return 0;
}

/* ---------- dmon / pmon ---------- */

/* "# gpu   pwr  gtemp ..." -> columns; returns 1 when the line is a dmon/pmon header. */
static int mon_header(const char *line, table *t, long lineno) {
    const char *s = line;
    if (*s != '#') return 0;
    s++;
    char buf[1024];
    scopy(buf, sizeof buf, s);
    char *save = NULL;
    table nt;
    memset(&nt, 0, sizeof nt);
    for (char *w = strtok_r(buf, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
        if (nt.ncols >= MAXCOLS) return 0;
        scopy(nt.cols[nt.ncols++], sizeof nt.cols[0], w);
    }
    int g = -1;
    for (int i = 0; i < nt.ncols; i++)
        if (!strcmp(nt.cols[i], "gpu")) g = i;
    if (g < 0) return 0;
    if (has_col(&nt, "pid"))
        nt.kind = T_PMON;
    else if (has_col(&nt, "sm") || has_col(&nt, "pwr"))
        nt.kind = T_DMON;
    else
        return 0;
    nt.header_line = lineno;
    *t = nt;
    return 1;
}

static int mon_int(ctx *c, const table *t, const char *v, int i, long long *out) {
    char *e;
    long long x = strtoll(v, &e, 10);
    /* GPU indices and pids fit in an int; larger would overflow the cycle key below. */
    if (*e || e == v || x < INT_MIN || x > INT_MAX)
        return errf(c, "field %s: '%s' is not an integer", t->cols[i], v);
    *out = x;
    return 0;
}

/* The row's time: Date/Time columns (-o DT), else one second per cycle. key identifies the
 * row within a cycle (gpu index, or pid for pmon): seeing it again starts a new cycle. */
static int mon_time(ctx *c, table *t, char **v, int n, int key, int64_t *ts) {
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
        if (!r || *r) return errf(c, "fields Date Time: '%s' is not YYYYMMDD HH:MM:SS%s", tmp, "");
        *ts = (int64_t)timegm(&tm) * NS;
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
    /* pmon's command name may be missing or contain no spaces; a row has at least the
     * columns before it. */
    int need = t->kind == T_PMON ? t->ncols - 1 : t->ncols;
    if (n < need || (t->kind == T_DMON && n != t->ncols)) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%d", t->ncols);
        snprintf(b, sizeof b, "%d", n);
        return errf(c, "expected %s columns as in the header, got %s", a, b);
    }
    int ig = -1;
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], "gpu")) ig = i;
    /* The header may lack the column, or a short pmon row may end before it. */
    if (ig < 0 || ig >= n) return errf(c, "no %s field in this dmon/pmon row%s", "gpu", "");
    long long gpu = 0;
    if (mon_int(c, t, v[ig], ig, &gpu) < 0) return -1;
    char ub[GP_UUID_MAX];
    const char *uuid = uuid_for_index(c, (int)gpu, ub, sizeof ub);
    if (t->kind == T_DMON) {
        int64_t ts;
        if (mon_time(c, t, v, n, (int)gpu, &ts) < 0) return -1;
        gp_sample *s = add_sample(c);
        if (!s) return errf(c, "out of memory%s%s", "", "");
        scopy(s->uuid, sizeof s->uuid, uuid);
        s->ts_ns = ts;
        for (int i = 0; i < t->ncols; i++) {
            const char *cn = t->cols[i];
            double x;
            int r = num(v[i], &x);
            if (r < 0) return errf(c, "field %s: '%s' is not a number", cn, v[i]);
            if (r == 0) continue;
            if (!strcmp(cn, "pwr"))
                gp_set_d(s, GP_F_POWER, &s->power_w, x);
            else if (!strcmp(cn, "gtemp"))
                gp_set_d(s, GP_F_TEMP, &s->temp_c, x);
            else if (!strcmp(cn, "sm"))
                gp_set_d(s, GP_F_GPU_UTIL, &s->gpu_util, x / 100);
            else if (!strcmp(cn, "mem"))
                gp_set_d(s, GP_F_MEM_UTIL, &s->mem_util, x / 100);
            else if (!strcmp(cn, "mclk"))
                gp_set_d(s, GP_F_MEM_CLOCK, &s->mem_clock_mhz, x);
            else if (!strcmp(cn, "pclk"))
                gp_set_d(s, GP_F_SM_CLOCK, &s->sm_clock_mhz, x);
            else if (!strcmp(cn, "fb")) {
                s->mem_used_bytes = (uint64_t)llround(x * MIB);
                s->valid |= GP_F_MEM_USED;
            }
        }
        return 0;
    }
    /* pmon */
    int ip = -1;
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], "pid")) ip = i;
    if (ip < 0 || ip >= n) return errf(c, "no %s field in this pmon row%s", "pid", "");
    if (!strcmp(v[ip], "-")) return 0; /* "no process" row */
    long long pid = 0;
    if (mon_int(c, t, v[ip], ip, &pid) < 0) return -1;
    int64_t ts;
    if (mon_time(c, t, v, n, (int)(pid * 64 + gpu), &ts) < 0) return -1;
    gp_proc_sample *p = add_proc(c);
    if (!p) return errf(c, "out of memory%s%s", "", "");
    scopy(p->uuid, sizeof p->uuid, uuid);
    p->ts_ns = ts;
    p->pid = pid;
    for (int i = 0; i < t->ncols && i < n; i++) {
        double x;
        if (!strcmp(t->cols[i], "sm")) {
            int r = num(v[i], &x);
            if (r < 0) return errf(c, "field sm: '%s' is not a number%s", v[i], "");
            if (r > 0 && x >= 0 && x <= 100) {
                p->sm_share = x / 100;
                p->valid |= GP_P_SM_SHARE;
            }
        } else if (!strcmp(t->cols[i], "fb")) {
            int r = num(v[i], &x);
            if (r < 0) return errf(c, "field fb: '%s' is not a number%s", v[i], "");
            if (r > 0) {
                p->mem_bytes = (uint64_t)llround(x * MIB);
                p->valid |= GP_P_MEM;
            }
        }
    }
    return 0;
}

/* ---------- text driver ---------- */

static int parse_text(ctx *c, const char *buf, size_t len) {
    table *t = calloc(1, sizeof *t);
    if (!t) return errf(c, "out of memory%s%s", "", "");
    int tables = 0, rc = 0;
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
                rc = errf(c, "out of memory%s%s", "", "");
                break;
            }
            line = nb;
        }
        memcpy(line, p, n);
        line[n] = 0;
        p = nl ? nl + 1 : e;
        c->line++;
        char *l = trim(line);
        if (!*l) {
            if (t->kind != T_DMON && t->kind != T_PMON) t->kind = T_NONE;
            continue;
        }
        table nt;
        if (*l == '#') {
            if (mon_header(l, &nt, c->line)) {
                if (t->kind == nt.kind && t->ncols == nt.ncols) continue; /* repeated header */
                nt.base_ts = c->last_ts;
                *t = nt;
                tables++;
            } else if (!strncmp(l, "# Idx", 5) || !strncmp(l, "#Idx", 4) ||
                       !strncmp(l, "# YYYY", 6)) {
                /* the units line under a dmon/pmon header */
            } else {
                t->kind = T_NONE;
            }
            continue;
        }
        if (csv_header(l, &nt, c->line)) {
            *t = nt;
            tables++;
            continue;
        }
        if (t->kind == T_GPU || t->kind == T_APPS || t->kind == T_OTHER) {
            char *v[MAXCOLS];
            int nv = split_csv(l, v, MAXCOLS);
            if (nv != t->ncols) {
                char a[32], b[32];
                snprintf(a, sizeof a, "%d", t->ncols);
                snprintf(b, sizeof b, "%d", nv);
                rc = errf(c, "expected %s comma-separated fields as in the header, got %s", a, b);
                break;
            }
            if (t->kind == T_GPU)
                rc = gpu_row(c, t, v);
            else if (t->kind == T_APPS)
                rc = apps_row(c, t, v);
            continue;
        }
        if (t->kind == T_DMON || t->kind == T_PMON) {
            if (isdigit((unsigned char)*l)) {
                rc = mon_row(c, t, l);
                continue;
            }
            t->kind = T_NONE;
        }
        /* anything else: a line of another section; skipped */
    }
    free(line);
    free(t);
    if (rc == 0 && tables == 0) {
        snprintf(c->err, c->errlen,
                 "smi: %s: no nvidia-smi CSV header, dmon/pmon table or XML log found", c->name);
        return -1;
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
    if (r < 0) return errf(c, "field %s: '%s' is not a number", path, v);
    if (r > 0) gp_set_d(s, f, slot, x * mul);
    return r;
}

static int xmem(ctx *c, xmlNode *g, const char *path, gp_sample *s, uint32_t f, uint64_t *slot) {
    char b[128];
    const char *v = xtext(g, path, b, sizeof b);
    if (!v) return 0;
    int r = mem_bytes(v, slot);
    if (r < 0) return errf(c, "field %s: '%s' is not an amount of memory", path, v);
    if (r > 0) s->valid |= f;
    return 0;
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

static int xml_gpu(ctx *c, xmlNode *g, int64_t ts) {
    char b[256], uuid[GP_UUID_MAX];
    if (!xtext(g, "uuid", uuid, sizeof uuid) || is_unknown(uuid))
        return errf(c, "field uuid: a <gpu> has no UUID%s%s", "", "");
    gp_device *d = add_device(c, uuid);
    if (!d) return errf(c, "out of memory%s%s", "", "");
    if (xtext(g, "product_name", b, sizeof b)) scopy(d->name, sizeof d->name, b);
    if (xtext(g, "pci/pci_bus_id", b, sizeof b)) scopy(d->pci_bus_id, sizeof d->pci_bus_id, b);
    if (xtext(g, "minor_number", b, sizeof b) && isdigit((unsigned char)b[0])) d->index = atoi(b);
    if (xtext(g, "mig_mode/current_mig", b, sizeof b) && !is_unknown(b))
        d->mig_mode = !strcasecmp(b, "Enabled");
    d->spec = gp_spec_lookup(d->name);
    gp_sample *s = add_sample(c);
    if (!s) return errf(c, "out of memory%s%s", "", "");
    scopy(s->uuid, sizeof s->uuid, uuid);
    s->ts_ns = ts;
    if (xnum(c, g, "utilization/gpu_util", s, GP_F_GPU_UTIL, &s->gpu_util, 0.01) < 0 ||
        xnum(c, g, "utilization/memory_util", s, GP_F_MEM_UTIL, &s->mem_util, 0.01) < 0 ||
        xnum(c, g, "temperature/gpu_temp", s, GP_F_TEMP, &s->temp_c, 1) < 0 ||
        xnum(c, g, "clocks/sm_clock", s, GP_F_SM_CLOCK, &s->sm_clock_mhz, 1) < 0 ||
        xnum(c, g, "clocks/mem_clock", s, GP_F_MEM_CLOCK, &s->mem_clock_mhz, 1) < 0 ||
        xmem(c, g, "fb_memory_usage/used", s, GP_F_MEM_USED, &s->mem_used_bytes) < 0 ||
        xmem(c, g, "fb_memory_usage/total", s, GP_F_MEM_TOTAL, &s->mem_total_bytes) < 0)
        return -1;
    /* Power: schema v11 power_readings/power_draw, v12 gpu_power_readings/power_draw, v13
     * gpu_power_readings/instant_power_draw (then average_power_draw), as telegraf reads. */
    static const char *power_paths[] = {
        "gpu_power_readings/power_draw", "power_readings/power_draw",
        "gpu_power_readings/instant_power_draw", "gpu_power_readings/average_power_draw"};
    for (int i = 0; i < 4 && !gp_has(s->valid, GP_F_POWER); i++)
        if (xnum(c, g, power_paths[i], s, GP_F_POWER, &s->power_w, 1) < 0) return -1;
    if (gp_has(s->valid, GP_F_MEM_TOTAL)) d->memory_total_bytes = s->mem_total_bytes;
    xml_reasons(g, s);

    xmlNode *migs = child(g, "mig_devices");
    for (xmlNode *m = migs ? migs->children : NULL; m; m = m->next) {
        if (m->type != XML_ELEMENT_NODE || strcmp((const char *)m->name, "mig_device")) continue;
        char gi[32], mu[GP_UUID_MAX + 40], mn[160];
        if (!xtext(m, "gpu_instance_id", gi, sizeof gi)) continue;
        snprintf(mu, sizeof mu, "%s/gi%s", uuid, gi);
        mu[GP_UUID_MAX - 1] = 0;
        gp_device *md = add_device(c, mu);
        if (!md) return errf(c, "out of memory%s%s", "", "");
        gp_device *pd = device_by_uuid(c, uuid); /* add_device may have moved it */
        scopy(md->parent_uuid, sizeof md->parent_uuid, uuid);
        snprintf(mn, sizeof mn, "%s MIG gi%s", pd->name, gi);
        scopy(md->name, sizeof md->name, mn);
        if (xtext(m, "index", b, sizeof b)) md->index = atoi(b);
        gp_sample *ms = add_sample(c);
        if (!ms) return errf(c, "out of memory%s%s", "", "");
        scopy(ms->uuid, sizeof ms->uuid, mu);
        ms->ts_ns = ts;
        if (xmem(c, m, "fb_memory_usage/used", ms, GP_F_MEM_USED, &ms->mem_used_bytes) < 0 ||
            xmem(c, m, "fb_memory_usage/total", ms, GP_F_MEM_TOTAL, &ms->mem_total_bytes) < 0)
            return -1;
        if (gp_has(ms->valid, GP_F_MEM_TOTAL)) md->memory_total_bytes = ms->mem_total_bytes;
    }

    xmlNode *procs = child(g, "processes");
    for (xmlNode *p = procs ? procs->children : NULL; p; p = p->next) {
        if (p->type != XML_ELEMENT_NODE || strcmp((const char *)p->name, "process_info")) continue;
        if (!xtext(p, "pid", b, sizeof b)) continue;
        char *e;
        long long pid = strtoll(b, &e, 10);
        if (*e || pid <= 0)
            return errf(c, "field processes/process_info/pid: '%s' is not a process id%s", b, "");
        gp_proc_sample *ps = add_proc(c);
        if (!ps) return errf(c, "out of memory%s%s", "", "");
        scopy(ps->uuid, sizeof ps->uuid, uuid);
        ps->ts_ns = ts;
        ps->pid = pid;
        if (xtext(p, "used_memory", b, sizeof b)) {
            int r = mem_bytes(b, &ps->mem_bytes);
            if (r < 0)
                return errf(
                    c,
                    "field processes/process_info/used_memory: '%s' is not an amount of memory%s",
                    b, "");
            if (r > 0) ps->valid |= GP_P_MEM;
        }
    }
    return 0;
}

static int parse_xml(ctx *c, const char *buf, size_t len) {
    xmlDoc *doc = xmlReadMemory(buf, (int)len, c->name, NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc) {
        const xmlError *e = xmlGetLastError();
        c->line = e ? e->line : 0;
        char msg[200];
        scopy(msg, sizeof msg, e && e->message ? e->message : "not well-formed");
        msg[strcspn(msg, "\n")] = 0;
        return errf(c, "XML: %s%s", msg, "");
    }
    xmlNode *root = xmlDocGetRootElement(doc);
    int rc = 0;
    if (!root || strcmp((const char *)root->name, "nvidia_smi_log")) {
        c->line = root ? root->line : 0;
        rc = errf(c, "XML root is <%s>, expected <nvidia_smi_log>%s",
                  root ? (const char *)root->name : "", "");
    }
    int64_t ts = c->last_ts;
    char b[128];
    if (!rc && xtext(root, "timestamp", b, sizeof b)) {
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        const char *r = strptime(b, "%a %b %d %H:%M:%S %Y", &tm);
        if (r && !*r) ts = (int64_t)timegm(&tm) * NS;
    }
    int gpus = 0;
    for (xmlNode *g = root ? root->children : NULL; g && !rc; g = g->next) {
        if (g->type != XML_ELEMENT_NODE || strcmp((const char *)g->name, "gpu")) continue;
        c->line = g->line;
        rc = xml_gpu(c, g, ts);
        gpus++;
    }
    if (!rc && !gpus) rc = errf(c, "XML log has no <gpu> element%s%s", "", "");
    xmlFreeDoc(doc);
    return rc;
}

int gp_smi_parse(const char *name, const char *buf, size_t len, gp_smi_log *log, char *err,
                 size_t errlen) {
    memset(log, 0, sizeof *log);
    ctx c = {.log = log, .name = name, .err = err, .errlen = errlen};
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
    if (rc < 0) gp_smi_log_free(log);
    return rc;
}

int gp_smi_load(const char *path, gp_smi_log *log, char *err, size_t errlen) {
    memset(log, 0, sizeof *log);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "smi: %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? cap * 2 : 131072;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "smi: %s: out of memory", path);
                return -1;
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(err, errlen, "smi: %s: read error", path);
        return -1;
    }
    int rc = gp_smi_parse(path, buf, len, log, err, errlen);
    free(buf);
    return rc;
}

void gp_smi_log_free(gp_smi_log *log) {
    free(log->devices);
    free(log->samples);
    free(log->procs);
    memset(log, 0, sizeof *log);
}

/* ---------- the source ---------- */

typedef struct {
    gp_smi_log log;
    size_t cursor;    /* next sample to hand out */
    int64_t shift_ns; /* added to the file's times (files without absolute times) */
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

static int smi_open(const char *arg, const gp_source_opts *opts, void **state, char *err,
                    size_t errlen) {
    if (!arg || !*arg) {
        snprintf(
            err, errlen,
            "source 'smi': expected smi:FILE (an nvidia-smi CSV, dmon, pmon or -q -x XML log)");
        return -1;
    }
    smi_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "smi: out of memory");
        return -1;
    }
    if (gp_smi_load(arg, &s->log, err, errlen) < 0) {
        free(s);
        return -1;
    }
    if (s->log.nsamples == 0 && s->log.nprocs == 0) {
        snprintf(err, errlen, "smi: %s: no GPU rows found", arg);
        gp_smi_log_free(&s->log);
        free(s);
        return -1;
    }
    /* Times before 1980 mean the file had none: start the replay at start_ns (or now). */
    int64_t first = s->log.nsamples ? s->log.samples[0].ts_ns : s->log.procs[0].ts_ns;
    if (first < 315532800LL * NS) {
        int64_t base = opts && opts->start_ns ? opts->start_ns : wall_ns();
        s->shift_ns = base;
        for (size_t i = 0; i < s->log.nsamples; i++)
            s->log.samples[i].ts_ns += base;
        for (size_t i = 0; i < s->log.nprocs; i++)
            s->log.procs[i].ts_ns += base;
    }
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
    int64_t e = 0;
    for (size_t i = 0; i < s->log.nsamples; i++)
        if (s->log.samples[i].ts_ns > e) e = s->log.samples[i].ts_ns;
    for (size_t i = 0; i < s->log.nprocs; i++)
        if (s->log.procs[i].ts_ns > e) e = s->log.procs[i].ts_ns;
    return e;
}

/* The replay clock: with speed 0, the time of the next row (each sample() call steps one
 * timestamp); otherwise the first row's time plus wall time elapsed times speed. */
static int64_t smi_now(void *state) {
    smi_state *s = state;
    if (s->log.nsamples == 0) return smi_end(s);
    if (s->speed <= 0) {
        size_t i = s->cursor < s->log.nsamples ? s->cursor : s->log.nsamples - 1;
        return s->log.samples[i].ts_ns;
    }
    return s->log.samples[0].ts_ns + (int64_t)((double)(wall_ns() - s->wall0_ns) * s->speed);
}

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
        if (j < k)
            out[j] = *x; /* a later row of the same device wins */
        else if (k < cap)
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

const gp_source_ops gp_source_smi = {
    .name = "smi",
    .usage = "smi:FILE      replay an nvidia-smi log (--query-gpu CSV, dmon, pmon, -q -x XML)",
    .open = smi_open,
    .list_devices = smi_devices,
    .sample = smi_sample,
    .list_processes = smi_procs,
    .drain_events = NULL,
    .end_ns = smi_end,
    .now_ns = smi_now,
    .close = smi_close,
};
