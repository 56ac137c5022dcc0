/* dcgm.c: dcgm-exporter scrape source (see dcgm.h).
 *
 * One libcurl easy handle is kept open (connection reuse); the body is streamed into the
 * Prometheus parser from curl's write callback, so a scrape needs no body buffer. Each
 * scrape builds a fresh sample per device; a scrape that fails (connect, timeout, HTTP
 * status, truncated body, malformed text) returns an error naming the URL and changes
 * nothing, so a bad scrape never stores a half-read value. */
#include "sources/dcgm.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "sources/source.h"
#include "util/promtext.h"

#define NS 1000000000LL
#define MIB (1024.0 * 1024.0)
#define MAX_BODY (64L << 20)
#define MAX_DEV 256

enum { K_RATIO, K_PCT, K_DOUBLE, K_MIB, K_U64, K_RATE, K_MASK, K_XID };

/* Field map: classic names, and the names newer DCGM releases use for the same field
 * (DCGM 3.3 renamed CLOCK_THROTTLE_REASONS to CLOCKS_EVENT_REASONS; POWER_USAGE_INSTANT
 * is newer). Higher prio wins when a scrape has both. */
static const struct {
    const char *name;
    uint32_t field;
    int kind;
    size_t off; /* offset of the gp_sample slot */
    int prio;
} fmap[] = {
    {"DCGM_FI_DEV_GPU_UTIL", GP_F_GPU_UTIL, K_PCT, offsetof(gp_sample, gpu_util), 2},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", GP_F_GPU_UTIL, K_RATIO, offsetof(gp_sample, gpu_util), 1},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", GP_F_MEM_UTIL, K_PCT, offsetof(gp_sample, mem_util), 1},
    {"DCGM_FI_PROF_SM_ACTIVE", GP_F_SM_ACTIVE, K_RATIO, offsetof(gp_sample, sm_active), 1},
    {"DCGM_FI_PROF_SM_OCCUPANCY", GP_F_SM_OCCUPANCY, K_RATIO, offsetof(gp_sample, sm_occupancy), 1},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", GP_F_TENSOR_ACTIVE, K_RATIO,
     offsetof(gp_sample, tensor_active), 1},
    {"DCGM_FI_PROF_DRAM_ACTIVE", GP_F_DRAM_ACTIVE, K_RATIO, offsetof(gp_sample, dram_active), 1},
    {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", GP_F_FP16_ACTIVE, K_RATIO, offsetof(gp_sample, fp16_active),
     1},
    {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", GP_F_FP32_ACTIVE, K_RATIO, offsetof(gp_sample, fp32_active),
     1},
    {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", GP_F_FP64_ACTIVE, K_RATIO, offsetof(gp_sample, fp64_active),
     1},
    {"DCGM_FI_DEV_FB_USED", GP_F_MEM_USED, K_MIB, offsetof(gp_sample, mem_used_bytes), 1},
    {"DCGM_FI_DEV_FB_TOTAL", GP_F_MEM_TOTAL, K_MIB, offsetof(gp_sample, mem_total_bytes), 1},
    {"DCGM_FI_DEV_POWER_USAGE", GP_F_POWER, K_DOUBLE, offsetof(gp_sample, power_w), 2},
    {"DCGM_FI_DEV_POWER_USAGE_INSTANT", GP_F_POWER, K_DOUBLE, offsetof(gp_sample, power_w), 1},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GP_F_ENERGY, K_U64, offsetof(gp_sample, energy_mj), 1},
    {"DCGM_FI_DEV_SM_CLOCK", GP_F_SM_CLOCK, K_DOUBLE, offsetof(gp_sample, sm_clock_mhz), 1},
    {"DCGM_FI_DEV_MEM_CLOCK", GP_F_MEM_CLOCK, K_DOUBLE, offsetof(gp_sample, mem_clock_mhz), 1},
    {"DCGM_FI_DEV_GPU_TEMP", GP_F_TEMP, K_DOUBLE, offsetof(gp_sample, temp_c), 1},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", GP_F_PCIE_TX, K_RATE, offsetof(gp_sample, pcie_tx_bytes), 1},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", GP_F_PCIE_RX, K_RATE, offsetof(gp_sample, pcie_rx_bytes), 1},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", GP_F_NVLINK_TX, K_RATE, offsetof(gp_sample, nvlink_tx_bytes),
     1},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", GP_F_NVLINK_RX, K_RATE, offsetof(gp_sample, nvlink_rx_bytes),
     1},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", GP_F_THROTTLE, K_MASK,
     offsetof(gp_sample, throttle_reasons), 2},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", GP_F_THROTTLE, K_MASK,
     offsetof(gp_sample, throttle_reasons), 1},
    {"DCGM_FI_DEV_XID_ERRORS", GP_F_XID, K_XID, offsetof(gp_sample, xid), 1},
};
#define NFIELDS (sizeof fmap / sizeof fmap[0])

typedef struct {
    gp_device dev;
    gp_sample s;
    unsigned char prio[32]; /* per gp_field bit: prio of the name that set it */
    double rate[4];         /* pcie tx, rx, nvlink tx, rx (bytes/s) this scrape; <0 = none */
    double acc[4];          /* integrated counters */
    int64_t acc_ts;         /* time of the previous scrape that had the rate */
    gp_dcgm_owner owner;
    int seen; /* in the current scrape */
} dev_slot;

typedef struct {
    CURL *h;
    char url[1024];
    long timeout_ms;
    dev_slot *dev;
    size_t ndev;
    gp_prom_parser *parser;
    long body_bytes;
    int parse_rc;
    long unattributed, unattributed_scrape;
    int64_t scrape_ts;
    char curl_err[CURL_ERROR_SIZE];
} dcgm_state;

static int64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * NS + t.tv_nsec;
}

static void scopy(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = 0;
}

/* DCGM blank sentinels (dcgm_structs.h): INT64 >= 0x7ffffffffffffff0 (as a double this
 * rounds to 2^63), INT32 in [0x7ffffff0, 0x7fffffff], FP64 >= 2^47. Counters (energy)
 * may legitimately pass 2^31, so only the INT64 test applies to them. */
static int is_blank(double v, int kind) {
    if (isnan(v) || isinf(v)) return 1;
    if (v >= 9223372036854775792.0) return 1;
    if (kind == K_U64) return 0;
    if (v >= 140737488355328.0) return 1;
    if (v >= 2147483632.0 && v <= 2147483647.0) return 1;
    return 0;
}

static const char *label(const gp_prom_sample *x, const char *name) {
    for (size_t i = 0; i < x->nlabels; i++)
        if (!strcmp(x->labels[i].name, name)) return x->labels[i].value;
    return NULL;
}

static dev_slot *slot_for(dcgm_state *st, const char *uuid) {
    for (size_t i = 0; i < st->ndev; i++)
        if (!strcmp(st->dev[i].dev.uuid, uuid)) return &st->dev[i];
    if (st->ndev >= MAX_DEV) return NULL;
    dev_slot *d = &st->dev[st->ndev++];
    memset(d, 0, sizeof *d);
    scopy(d->dev.uuid, sizeof d->dev.uuid, uuid);
    d->dev.index = -1;
    d->dev.mig_mode = -1;
    for (int k = 0; k < 4; k++)
        d->rate[k] = -1;
    return d;
}

static int on_sample(void *ctx, const gp_prom_sample *x) {
    dcgm_state *st = ctx;
    if (strncmp(x->name, "DCGM_FI_", 8) != 0) return 0;
    size_t f = 0;
    for (; f < NFIELDS; f++)
        if (!strcmp(fmap[f].name, x->name)) break;
    const char *uuid = label(x, "UUID");
    if (!uuid) uuid = label(x, "uuid");
    if (!uuid || !*uuid) {
        st->unattributed_scrape++;
        return 0;
    }
    char key[GP_UUID_MAX + 40];
    const char *gi = label(x, "GPU_I_ID");
    if (gi && *gi)
        snprintf(key, sizeof key, "%s/gi%s", uuid, gi);
    else
        snprintf(key, sizeof key, "%s", uuid);
    key[GP_UUID_MAX - 1] = 0;
    dev_slot *d = slot_for(st, key);
    if (!d) return 0;
    if (!d->seen) {
        d->seen = 1;
        memset(&d->s, 0, sizeof d->s);
        memset(d->prio, 0, sizeof d->prio);
        for (int k = 0; k < 4; k++)
            d->rate[k] = -1;
        memset(&d->owner, 0, sizeof d->owner);
        scopy(d->owner.uuid, sizeof d->owner.uuid, key);
    }
    /* identity and ownership hints */
    const char *v;
    if ((v = label(x, "modelName"))) scopy(d->dev.name, sizeof d->dev.name, v);
    if ((v = label(x, "Hostname")) || (v = label(x, "hostname")))
        scopy(d->dev.host, sizeof d->dev.host, v);
    if ((v = label(x, "gpu")) && *v && !(gi && *gi)) d->dev.index = atoi(v);
    if ((v = label(x, "pci_bus_id"))) scopy(d->dev.pci_bus_id, sizeof d->dev.pci_bus_id, v);
    if (gi && *gi) {
        scopy(d->dev.parent_uuid, sizeof d->dev.parent_uuid, uuid);
        d->dev.mig_mode = 1;
    }
    if ((v = label(x, "pod")) && *v) scopy(d->owner.pod, sizeof d->owner.pod, v);
    if ((v = label(x, "namespace")) && *v) scopy(d->owner.ns, sizeof d->owner.ns, v);
    if ((v = label(x, "container")) && *v) scopy(d->owner.container, sizeof d->owner.container, v);
    if ((v = label(x, "hpc_job")) && *v) scopy(d->owner.hpc_job, sizeof d->owner.hpc_job, v);
    if (f == NFIELDS) return 0;

    int kind = fmap[f].kind;
    double val = x->value;
    if (is_blank(val, kind)) return 0;
    int bit = __builtin_ctz(fmap[f].field);
    if ((d->s.valid & fmap[f].field) && d->prio[bit] > fmap[f].prio) return 0;
    char *slot = (char *)&d->s + fmap[f].off;
    switch (kind) {
    case K_PCT:
    case K_RATIO: {
        double r = kind == K_PCT ? val / 100 : val;
        if (r < 0 || r > 1) return 0; /* not a fraction: unknown, not clamped */
        *(double *)slot = r;
        break;
    }
    case K_DOUBLE:
        *(double *)slot = val;
        break;
    case K_MIB:
        if (val < 0) return 0;
        *(uint64_t *)slot = (uint64_t)llround(val * MIB);
        break;
    case K_U64:
        if (val < 0) return 0;
        *(uint64_t *)slot = (uint64_t)llround(val);
        break;
    case K_MASK:
        if (val < 0) return 0;
        *(uint64_t *)slot = (uint64_t)llround(val);
        break;
    case K_XID:
        *(int64_t *)slot = (int64_t)llround(val);
        break;
    case K_RATE: {
        if (val < 0) return 0;
        int k = fmap[f].field == GP_F_PCIE_TX     ? 0
                : fmap[f].field == GP_F_PCIE_RX   ? 1
                : fmap[f].field == GP_F_NVLINK_TX ? 2
                                                  : 3;
        d->rate[k] = val;
        return 0; /* the counter is set after the scrape */
    }
    }
    d->s.valid |= fmap[f].field;
    d->prio[bit] = (unsigned char)fmap[f].prio;
    return 0;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx) {
    dcgm_state *st = ctx;
    size_t n = size * nmemb;
    long code = 0;
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) return n; /* an error page is not metrics: the status is reported */
    st->body_bytes += (long)n;
    if (st->body_bytes > MAX_BODY) return 0;
    int rc = gp_prom_feed(st->parser, data, n);
    if (rc) {
        st->parse_rc = rc;
        return 0; /* stop the transfer */
    }
    return n;
}

/* curl's error text names how long the attempt took ("... after 3 ms: ..."): the agent
 * says a source error once per distinct message, so the timing would make the same
 * outage a new message on every scrape. */
static void drop_elapsed(char *msg) {
    char *p = strstr(msg, " after ");
    if (!p) return;
    char *q = p + 7;
    while (*q >= '0' && *q <= '9')
        q++;
    if (q == p + 7 || strncmp(q, " ms", 3) != 0) return;
    memmove(p, q + 3, strlen(q + 3) + 1);
}

/* One scrape; on success the device table holds this scrape's samples. */
static int scrape(dcgm_state *st, int64_t now_ns, char *err, size_t errlen) {
    /* Work on a copy so a failed scrape changes nothing. */
    dev_slot *saved = malloc(st->ndev ? st->ndev * sizeof *saved : 1);
    size_t saved_n = st->ndev;
    if (!saved) {
        snprintf(err, errlen, "dcgm: %s: out of memory", st->url);
        return -1;
    }
    memcpy(saved, st->dev, st->ndev * sizeof *saved);
    for (size_t i = 0; i < st->ndev; i++)
        st->dev[i].seen = 0;
    st->parser = gp_prom_parser_new(on_sample, NULL, st, 0);
    st->body_bytes = 0;
    st->parse_rc = 0;
    st->unattributed_scrape = 0;
    st->curl_err[0] = 0;
    CURLcode cc = st->parser ? curl_easy_perform(st->h) : CURLE_OUT_OF_MEMORY;
    long code = 0;
    curl_easy_getinfo(st->h, CURLINFO_RESPONSE_CODE, &code);
    int rc = 0;
    if (code != 200 && (cc == CURLE_OK || cc == CURLE_WRITE_ERROR || cc == CURLE_PARTIAL_FILE)) {
        snprintf(err, errlen, "dcgm: %s: HTTP status %ld", st->url, code);
        rc = -1;
    } else if (st->parse_rc < 0) {
        snprintf(err, errlen, "dcgm: %s: %s", st->url, gp_prom_error(st->parser));
        rc = -1;
    } else if (st->body_bytes > MAX_BODY) {
        snprintf(err, errlen, "dcgm: %s: body over %ld MiB refused", st->url, MAX_BODY >> 20);
        rc = -1;
    } else if (cc != CURLE_OK) {
        drop_elapsed(st->curl_err);
        snprintf(err, errlen, "dcgm: %s: %s", st->url,
                 st->curl_err[0] ? st->curl_err : curl_easy_strerror(cc));
        rc = -1;
    } else if (gp_prom_finish(st->parser) < 0) {
        snprintf(err, errlen, "dcgm: %s: %s", st->url, gp_prom_error(st->parser));
        rc = -1;
    }
    gp_prom_parser_free(st->parser);
    st->parser = NULL;
    if (rc < 0) {
        memcpy(st->dev, saved, saved_n * sizeof *saved);
        st->ndev = saved_n;
        free(saved);
        return -1;
    }
    free(saved);
    st->unattributed = st->unattributed_scrape;
    st->scrape_ts = now_ns;
    static const uint32_t cf[4] = {GP_F_PCIE_TX, GP_F_PCIE_RX, GP_F_NVLINK_TX, GP_F_NVLINK_RX};
    for (size_t i = 0; i < st->ndev; i++) {
        dev_slot *d = &st->dev[i];
        if (!d->seen) continue;
        scopy(d->s.uuid, sizeof d->s.uuid, d->dev.uuid);
        d->s.ts_ns = now_ns;
        if (gp_has(d->s.valid, GP_F_MEM_TOTAL)) d->dev.memory_total_bytes = d->s.mem_total_bytes;
        if (!d->dev.spec && d->dev.name[0]) d->dev.spec = gp_spec_lookup(d->dev.name);
        int any_rate = 0;
        for (int k = 0; k < 4; k++) {
            if (d->rate[k] < 0) continue;
            any_rate = 1;
            if (d->acc_ts > 0 && now_ns > d->acc_ts)
                d->acc[k] += d->rate[k] * (double)(now_ns - d->acc_ts) / 1e9;
            uint64_t *slot = k == 0   ? &d->s.pcie_tx_bytes
                             : k == 1 ? &d->s.pcie_rx_bytes
                             : k == 2 ? &d->s.nvlink_tx_bytes
                                      : &d->s.nvlink_rx_bytes;
            *slot = (uint64_t)llround(d->acc[k]);
            d->s.valid |= cf[k];
        }
        if (any_rate) d->acc_ts = now_ns;
    }
    return 0;
}

static int dcgm_open(const char *arg, const gp_source_opts *opts, void **state, char *err,
                     size_t errlen) {
    if (!arg || (strncmp(arg, "http://", 7) && strncmp(arg, "https://", 8))) {
        snprintf(err, errlen,
                 "source 'dcgm': expected dcgm=URL with an http:// or https:// URL of "
                 "dcgm-exporter's /metrics (got '%s')",
                 arg ? arg : "");
        return -1;
    }
    dcgm_state *st = calloc(1, sizeof *st);
    if (st) st->dev = calloc(MAX_DEV, sizeof *st->dev);
    if (!st || !st->dev || !(st->h = curl_easy_init())) {
        if (st) free(st->dev);
        free(st);
        snprintf(err, errlen, "dcgm: out of memory");
        return -1;
    }
    scopy(st->url, sizeof st->url, arg);
    long t = 5000;
    if (opts && opts->interval_ns > 0) t = (long)(opts->interval_ns / 1000000);
    if (t < 200) t = 200;
    if (t > 10000) t = 10000;
    const char *e = getenv("GOODPUT_DCGM_TIMEOUT_MS");
    if (e && atol(e) > 0) t = atol(e);
    st->timeout_ms = t;
    curl_easy_setopt(st->h, CURLOPT_URL, st->url);
    curl_easy_setopt(st->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(st->h, CURLOPT_WRITEDATA, st);
    curl_easy_setopt(st->h, CURLOPT_TIMEOUT_MS, t);
    curl_easy_setopt(st->h, CURLOPT_CONNECTTIMEOUT_MS, t);
    curl_easy_setopt(st->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(st->h, CURLOPT_ERRORBUFFER, st->curl_err);
    curl_easy_setopt(st->h, CURLOPT_USERAGENT, "goodput-dcgm-source");
    curl_easy_setopt(st->h, CURLOPT_ACCEPT_ENCODING, "");
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85: CURLOPT_PROTOCOLS_STR */
    curl_easy_setopt(st->h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(st->h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    /* First scrape now: a wrong URL or a down exporter is reported at start. */
    if (scrape(st, wall_ns(), err, errlen) < 0) {
        curl_easy_cleanup(st->h);
        free(st->dev);
        free(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int dcgm_devices(void *state, gp_device *out, size_t cap, size_t *n, char *err,
                        size_t errlen) {
    (void)err, (void)errlen;
    dcgm_state *st = state;
    size_t k = 0;
    for (size_t i = 0; i < st->ndev && k < cap; i++)
        out[k++] = st->dev[i].dev;
    *n = k;
    return 0;
}

static int dcgm_sample(void *state, int64_t now_ns, gp_sample *out, size_t cap, size_t *n,
                       char *err, size_t errlen) {
    dcgm_state *st = state;
    *n = 0;
    if (scrape(st, now_ns, err, errlen) < 0) return -1;
    size_t k = 0;
    for (size_t i = 0; i < st->ndev && k < cap; i++)
        if (st->dev[i].seen) out[k++] = st->dev[i].s;
    *n = k;
    return 0;
}

int gp_dcgm_owners(void *state, gp_dcgm_owner *out, size_t cap, size_t *n) {
    dcgm_state *st = state;
    size_t k = 0;
    for (size_t i = 0; i < st->ndev && k < cap; i++) {
        const gp_dcgm_owner *o = &st->dev[i].owner;
        if (st->dev[i].seen && (o->pod[0] || o->hpc_job[0] || o->container[0])) out[k++] = *o;
    }
    *n = k;
    return 0;
}

long gp_dcgm_unattributed(void *state) {
    return ((dcgm_state *)state)->unattributed;
}

static int dcgm_procs(void *state, gp_proc_sample *out, size_t cap, size_t *n, char *err,
                      size_t errlen) {
    (void)err, (void)errlen;
    dcgm_state *st = state;
    gp_dcgm_owner o[MAX_DEV];
    size_t no;
    gp_dcgm_owners(st, o, MAX_DEV, &no);
    size_t k = 0;
    for (size_t i = 0; i < no && k < cap; i++) {
        if (!o[i].hpc_job[0] && !o[i].pod[0]) continue;
        gp_proc_sample *p = &out[k++];
        memset(p, 0, sizeof *p);
        scopy(p->uuid, sizeof p->uuid, o[i].uuid);
        p->ts_ns = st->scrape_ts;
        p->pid = -1;
        if (o[i].hpc_job[0])
            scopy(p->job_id, sizeof p->job_id, o[i].hpc_job);
        else {
            char j[300];
            snprintf(j, sizeof j, "%s/%s", o[i].ns, o[i].pod);
            scopy(p->job_id, sizeof p->job_id, j);
        }
    }
    *n = k;
    return 0;
}

static void dcgm_close(void *state) {
    dcgm_state *st = state;
    if (!st) return;
    curl_easy_cleanup(st->h);
    free(st->dev);
    free(st);
}

const gp_source_ops gp_source_dcgm = {
    .name = "dcgm",
    .usage =
        "dcgm=URL      scrape dcgm-exporter's /metrics (e.g. dcgm=http://localhost:9400/metrics)",
    .open = dcgm_open,
    .list_devices = dcgm_devices,
    .sample = dcgm_sample,
    .list_processes = dcgm_procs,
    .drain_events = NULL,
    .end_ns = NULL,
    .now_ns = NULL,
    .close = dcgm_close,
};
