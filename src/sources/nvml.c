/* nvml.c: the NVML backend (`--source nvml`), loaded with dlopen so goodput builds and runs
 * on machines without a driver, and says so plainly there.
 *
 * Library: dlopen("libnvidia-ml.so.1"), or the path in env GOODPUT_NVML_LIBRARY (the tests
 * point it at tests/shlib's simulator-backed library). Versioned symbols are used
 * (nvmlInit_v2, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 * nvmlDeviceGetComputeRunningProcesses_v3, nvmlDeviceGetPciInfo_v3, nvmlEventSetWait_v2).
 * Only init, count, handle and UUID are required; every other entry point is optional and
 * a missing one leaves its fields unknown. Types: sources/nvml_abi.h (NVML API 13).
 *
 * Per device (open): UUID, name, memory, PCI bus id, MIG mode and MIG instances (each a
 * device of its own, keyed by its MIG UUID, parent_uuid set). Per sample: utilization,
 * memory, power (nvmlDeviceGetPowerUsage, mW), the total-energy counter (mJ), SM and
 * memory clocks, temperature, clock-event reasons, PCIe and NVLink byte counters (field
 * values 197/198 and 138/139 with scopeId UINT_MAX = all links, in KiB), the last XID in
 * the interval (event set, polled with timeout 0: never blocks), and GPM metrics on
 * devices that support them (two samples per interval; SM util, occupancy, tensor, DRAM
 * bandwidth, FP16/32/64 pipes; PCIe/NVLink rates when the counters are unavailable).
 * Per process: memory (..._v3) and SM share (nvmlDeviceGetProcessUtilization with the
 * last-seen timestamp kept per device; a sample over 100% or not newer than the last seen
 * is dropped; several samples of one process in an interval are averaged).
 *
 * Errors: NOT_SUPPORTED and friends leave a field unknown (and the call is not repeated
 * for that device). GPU_IS_LOST drops the device from samples until it answers again,
 * probed once per sample; each transition is said once on stderr ("goodput: nvml: ...").
 * No hidden threads; state lives in the source's state struct. */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sources/nvml_abi.h"
#include "sources/source.h"

#define NS 1000000000LL
/* Devices sampled (GPUs and MIG instances): the array is sized from the driver's GPU
 * count (each GPU and up to MAX_MIG instances), up to this bound (the agent's own). */
#define MAX_GPUS 4096
#define MAX_MIG 8
#define MAX_PROCS 256

typedef struct {
    nvmlReturn_t (*Init_v2)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned int);
    nvmlReturn_t (*DeviceGetCount_v2)(unsigned int *);
    nvmlReturn_t (*DeviceGetHandleByIndex_v2)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetHandleByUUID)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*DeviceGetPciInfo_v3)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned int *, unsigned int *);
    nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetGpuInstanceId)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*DeviceGetCurrentClocksEventReasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
    nvmlReturn_t (*DeviceGetComputeRunningProcesses_v3)(nvmlDevice_t, unsigned int *,
                                                        nvmlProcessInfo_t *);
    nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                                                unsigned int *, unsigned long long);
    nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t *);
    nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*EventSetWait_v2)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
    nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t *);
    nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t *);
    nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t);
    nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t);
    nvmlReturn_t (*GpmMigSampleGet)(nvmlDevice_t, unsigned int, nvmlGpmSample_t);
    nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t *);
} nvml_api;

/* Bits of calls a device answered NOT_SUPPORTED (or similar) to: not asked again. */
enum {
    U_UTIL = 1 << 0,
    U_MEM = 1 << 1,
    U_POWER = 1 << 2,
    U_ENERGY = 1 << 3,
    U_SMCLK = 1 << 4,
    U_MEMCLK = 1 << 5,
    U_TEMP = 1 << 6,
    U_REASONS = 1 << 7,
    U_PCIE = 1 << 8,
    U_NVLINK = 1 << 9,
    U_PROCS = 1 << 10,
    U_PUTIL = 1 << 11,
};

typedef struct {
    nvmlGpmSample_t s[2];
    int cur;       /* index of the sample to fill next */
    int have_prev; /* s[1 - cur] holds the previous sample */
    int64_t prev_ns;
} gpm_pair;

typedef struct {
    gp_device dev;
    nvmlDevice_t h;
    unsigned int nvml_index; /* physical GPUs; MIG: parent's slot */
    int parent;              /* MIG: index of the parent in gpus[]; -1 for a GPU */
    unsigned int gi_id;      /* MIG: GPU instance id */
    unsigned unsupported;
    int lost;
    int xid_registered;
    long long xid; /* last XID seen since the previous sample; 0 = none */
    unsigned long long last_seen_us;
    int gpm; /* GPM usable */
    gpm_pair gp;
    double acc[4]; /* GPM-integrated pcie tx, rx, nvlink tx, rx (bytes) */
    gp_proc_sample procs[MAX_PROCS];
    size_t nprocs;
} gpu;

typedef struct {
    void *lib;
    nvml_api f;
    gpu *g;
    size_t n, cap; /* devices in g, and g's length */
    nvmlEventSet_t events;
    nvmlGpmMetricsGet_t *mg; /* 10 KB request buffer for nvmlGpmMetricsGet */
    int64_t interval_ns;
    int said_no_gpus;
} nvml_state;

static void say(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "goodput: nvml: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
}

static const char *estr(nvml_state *st, nvmlReturn_t r) {
    const char *s = st->f.ErrorString ? st->f.ErrorString(r) : NULL;
    return s ? s : "unknown error";
}

static void scopy(char *d, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(d, s, n);
    d[n] = 0;
}

#define LOAD(field, sym) st->f.field = (__typeof__(st->f.field))dlsym(st->lib, sym)

static void load_symbols(nvml_state *st) {
    LOAD(Init_v2, "nvmlInit_v2");
    LOAD(Shutdown, "nvmlShutdown");
    LOAD(ErrorString, "nvmlErrorString");
    LOAD(SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
    LOAD(DeviceGetCount_v2, "nvmlDeviceGetCount_v2");
    LOAD(DeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(DeviceGetHandleByUUID, "nvmlDeviceGetHandleByUUID");
    LOAD(DeviceGetUUID, "nvmlDeviceGetUUID");
    LOAD(DeviceGetName, "nvmlDeviceGetName");
    LOAD(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
    LOAD(DeviceGetPciInfo_v3, "nvmlDeviceGetPciInfo_v3");
    LOAD(DeviceGetMigMode, "nvmlDeviceGetMigMode");
    LOAD(DeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount");
    LOAD(DeviceGetMigDeviceHandleByIndex, "nvmlDeviceGetMigDeviceHandleByIndex");
    LOAD(DeviceGetGpuInstanceId, "nvmlDeviceGetGpuInstanceId");
    LOAD(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
    LOAD(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
    LOAD(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption");
    LOAD(DeviceGetClockInfo, "nvmlDeviceGetClockInfo");
    LOAD(DeviceGetTemperature, "nvmlDeviceGetTemperature");
    LOAD(DeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!st->f.DeviceGetCurrentClocksEventReasons) /* the name before R535 */
        LOAD(DeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    LOAD(DeviceGetFieldValues, "nvmlDeviceGetFieldValues");
    LOAD(DeviceGetComputeRunningProcesses_v3, "nvmlDeviceGetComputeRunningProcesses_v3");
    LOAD(DeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization");
    LOAD(EventSetCreate, "nvmlEventSetCreate");
    LOAD(DeviceRegisterEvents, "nvmlDeviceRegisterEvents");
    LOAD(EventSetWait_v2, "nvmlEventSetWait_v2");
    LOAD(EventSetFree, "nvmlEventSetFree");
    LOAD(GpmQueryDeviceSupport, "nvmlGpmQueryDeviceSupport");
    LOAD(GpmSampleAlloc, "nvmlGpmSampleAlloc");
    LOAD(GpmSampleFree, "nvmlGpmSampleFree");
    LOAD(GpmSampleGet, "nvmlGpmSampleGet");
    LOAD(GpmMigSampleGet, "nvmlGpmMigSampleGet");
    LOAD(GpmMetricsGet, "nvmlGpmMetricsGet");
}

static void gpm_setup(nvml_state *st, gpu *g) {
    if (!st->f.GpmSampleAlloc || !st->f.GpmMetricsGet || !st->f.GpmSampleFree) return;
    nvmlDevice_t probe = g->parent >= 0 ? st->g[g->parent].h : g->h;
    if (g->parent >= 0 ? !st->f.GpmMigSampleGet : !st->f.GpmSampleGet) return;
    if (st->f.GpmQueryDeviceSupport) {
        nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
        if (st->f.GpmQueryDeviceSupport(probe, &sup) != NVML_SUCCESS || !sup.isSupportedDevice)
            return;
    }
    if (st->f.GpmSampleAlloc(&g->gp.s[0]) != NVML_SUCCESS) return;
    if (st->f.GpmSampleAlloc(&g->gp.s[1]) != NVML_SUCCESS) {
        st->f.GpmSampleFree(g->gp.s[0]);
        return;
    }
    g->gpm = 1;
}

/* Fills identity of a physical GPU or MIG instance from its handle. */
static int identify(nvml_state *st, gpu *g, char *err, size_t errlen) {
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlReturn_t r = st->f.DeviceGetUUID(g->h, buf, sizeof buf);
    if (r != NVML_SUCCESS) {
        char idx[16];
        snprintf(idx, sizeof idx, "%u", g->nvml_index);
        snprintf(err, errlen, "nvml: GPU %s: nvmlDeviceGetUUID failed: %s", idx, estr(st, r));
        return -1;
    }
    scopy(g->dev.uuid, sizeof g->dev.uuid, buf);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    if (st->f.DeviceGetName && st->f.DeviceGetName(g->h, name, sizeof name) == NVML_SUCCESS)
        scopy(g->dev.name, sizeof g->dev.name, name);
    nvmlMemory_t m;
    if (st->f.DeviceGetMemoryInfo && st->f.DeviceGetMemoryInfo(g->h, &m) == NVML_SUCCESS)
        g->dev.memory_total_bytes = m.total;
    g->dev.spec = gp_spec_lookup(g->dev.name);
    return 0;
}

static int add_gpu(nvml_state *st, unsigned int i, char *err, size_t errlen) {
    gpu *g = &st->g[st->n];
    memset(g, 0, sizeof *g);
    g->parent = -1;
    g->nvml_index = i;
    g->dev.index = (int)i;
    g->dev.mig_mode = -1;
    nvmlReturn_t r = st->f.DeviceGetHandleByIndex_v2(i, &g->h);
    if (r == NVML_ERROR_GPU_IS_LOST) {
        char idx[16];
        snprintf(idx, sizeof idx, "%u", i);
        say("GPU %s is lost (fallen off the bus); it is left out%s", idx, "");
        return 0;
    }
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "nvml: nvmlDeviceGetHandleByIndex_v2(%u) failed: %s", i, estr(st, r));
        return -1;
    }
    if (identify(st, g, err, errlen) < 0) return -1;
    nvmlPciInfo_t pci;
    if (st->f.DeviceGetPciInfo_v3 && st->f.DeviceGetPciInfo_v3(g->h, &pci) == NVML_SUCCESS)
        scopy(g->dev.pci_bus_id, sizeof g->dev.pci_bus_id, pci.busId);
    unsigned int cur, pend;
    if (st->f.DeviceGetMigMode && st->f.DeviceGetMigMode(g->h, &cur, &pend) == NVML_SUCCESS)
        g->dev.mig_mode = cur == NVML_DEVICE_MIG_ENABLE;
    else
        g->dev.mig_mode = -1; /* NOT_SUPPORTED: a GPU without MIG; unknown, not "off" */
    if (st->events && st->f.DeviceRegisterEvents &&
        st->f.DeviceRegisterEvents(g->h, nvmlEventTypeXidCriticalError, st->events) == NVML_SUCCESS)
        g->xid_registered = 1;
    gpm_setup(st, g);
    size_t me = st->n++;
    if (g->dev.mig_mode != 1 || !st->f.DeviceGetMaxMigDeviceCount ||
        !st->f.DeviceGetMigDeviceHandleByIndex)
        return 0;
    unsigned int maxm = 0;
    if (st->f.DeviceGetMaxMigDeviceCount(g->h, &maxm) != NVML_SUCCESS) return 0;
    for (unsigned int k = 0; k < maxm && k < MAX_MIG && st->n < st->cap; k++) {
        gpu *m = &st->g[st->n];
        memset(m, 0, sizeof *m);
        if (st->f.DeviceGetMigDeviceHandleByIndex(st->g[me].h, k, &m->h) != NVML_SUCCESS)
            continue; /* an empty slot */
        m->parent = (int)me;
        m->nvml_index = i;
        m->dev.index = (int)i;
        m->dev.mig_mode = 1;
        if (identify(st, m, err, errlen) < 0) return -1;
        scopy(m->dev.parent_uuid, sizeof m->dev.parent_uuid, st->g[me].dev.uuid);
        scopy(m->dev.pci_bus_id, sizeof m->dev.pci_bus_id, st->g[me].dev.pci_bus_id);
        if (st->f.DeviceGetGpuInstanceId) st->f.DeviceGetGpuInstanceId(m->h, &m->gi_id);
        m->unsupported = U_UTIL | U_POWER | U_ENERGY | U_SMCLK | U_MEMCLK | U_TEMP | U_REASONS |
                         U_PCIE | U_NVLINK | U_PUTIL; /* per-GPU readings live on the parent */
        gpm_setup(st, m);
        st->n++;
    }
    return 0;
}

static void nvml_close(void *state);

static int nvml_open(const char *arg, const gp_source_opts *opts, void **state, char *err,
                     size_t errlen) {
    (void)arg;
    const char *path = getenv("GOODPUT_NVML_LIBRARY");
    if (!path || !*path) path = "libnvidia-ml.so.1";
    nvml_state *st = calloc(1, sizeof *st);
    if (st) st->mg = calloc(1, sizeof *st->mg);
    if (!st || !st->mg) {
        if (st) free(st->g), free(st->mg);
        free(st);
        snprintf(err, errlen, "nvml: out of memory");
        return -1;
    }
    st->interval_ns = opts && opts->interval_ns > 0 ? opts->interval_ns : NS;
    st->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!st->lib) {
        const char *de = dlerror();
        snprintf(err, errlen,
                 "nvml: cannot load %s, so no NVIDIA driver is usable here (%s); try "
                 "--source sim:FILE, dcgm=URL or smi:FILE",
                 path, de ? de : "dlopen failed");
        free(st->g);
        free(st->mg);
        free(st);
        return -1;
    }
    load_symbols(st);
    if (!st->f.Init_v2 || !st->f.DeviceGetCount_v2 || !st->f.DeviceGetHandleByIndex_v2 ||
        !st->f.DeviceGetUUID) {
        snprintf(err, errlen,
                 "nvml: %s lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlDeviceGetHandleByIndex_v2/"
                 "nvmlDeviceGetUUID: driver too old (R450+ needed)",
                 path);
        dlclose(st->lib);
        free(st->g);
        free(st->mg);
        free(st);
        return -1;
    }
    nvmlReturn_t r = st->f.Init_v2();
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "nvml: nvmlInit_v2 failed: %s (NVML error %d)", estr(st, r), r);
        dlclose(st->lib);
        free(st->g);
        free(st->mg);
        free(st);
        return -1;
    }
    unsigned int count = 0;
    r = st->f.DeviceGetCount_v2(&count);
    if (r != NVML_SUCCESS) {
        snprintf(err, errlen, "nvml: nvmlDeviceGetCount_v2 failed: %s", estr(st, r));
        st->f.Shutdown ? (void)st->f.Shutdown() : (void)0;
        dlclose(st->lib);
        free(st->g);
        free(st->mg);
        free(st);
        return -1;
    }
    st->cap = (size_t)count * (1 + MAX_MIG);
    if (st->cap > MAX_GPUS) st->cap = MAX_GPUS;
    st->g = calloc(st->cap ? st->cap : 1, sizeof *st->g);
    if (!st->g) {
        snprintf(err, errlen, "nvml: out of memory for %u GPUs", count);
        st->f.Shutdown ? (void)st->f.Shutdown() : (void)0;
        dlclose(st->lib);
        free(st->mg);
        free(st);
        return -1;
    }
    if (st->f.EventSetCreate && st->f.EventSetCreate(&st->events) != NVML_SUCCESS)
        st->events = NULL;
    for (unsigned int i = 0; i < count && st->n < st->cap; i++)
        if (add_gpu(st, i, err, errlen) < 0) {
            nvml_close(st);
            return -1;
        }
    if (count == 0) {
        say("the driver is loaded but reports no GPUs: nothing to sample%s%s", "", "");
        st->said_no_gpus = 1;
    }
    *state = st;
    return 0;
}

static int nvml_devices(void *state, gp_device *out, size_t cap, size_t *n, char *err,
                        size_t errlen) {
    (void)err, (void)errlen;
    nvml_state *st = state;
    size_t k = 0;
    for (size_t i = 0; i < st->n && k < cap; i++)
        out[k++] = st->g[i].dev;
    *n = k;
    return 0;
}

/* Returns 1 when r says the GPU is gone. Marks other failures unsupported. */
static int check(gpu *g, nvmlReturn_t r, unsigned bit) {
    if (r == NVML_SUCCESS) return 0;
    if (r == NVML_ERROR_GPU_IS_LOST) return 1;
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND ||
        r == NVML_ERROR_NO_PERMISSION)
        g->unsupported |= bit;
    return 0;
}

static void mark_lost(gpu *g) {
    if (g->lost) return;
    g->lost = 1;
    say("GPU %s (%s) is lost (fallen off the bus or reset); no samples from it until it is "
        "back",
        g->dev.uuid, g->dev.name);
}

/* A lost GPU is probed once per sample: the same UUID answering again brings it back. */
static void probe_lost(nvml_state *st, gpu *g) {
    if (g->parent >= 0) {
        if (!st->g[g->parent].lost) g->lost = 0;
        return;
    }
    nvmlDevice_t h;
    /* By UUID when the driver can (indexes shift when a GPU leaves), else by index. */
    if (!(st->f.DeviceGetHandleByUUID &&
          st->f.DeviceGetHandleByUUID(g->dev.uuid, &h) == NVML_SUCCESS) &&
        st->f.DeviceGetHandleByIndex_v2(g->nvml_index, &h) != NVML_SUCCESS)
        return;
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (st->f.DeviceGetUUID(h, buf, sizeof buf) != NVML_SUCCESS || strcmp(buf, g->dev.uuid)) return;
    g->h = h;
    g->lost = 0;
    g->gp.have_prev = 0;
    if (st->events && st->f.DeviceRegisterEvents)
        g->xid_registered = st->f.DeviceRegisterEvents(h, nvmlEventTypeXidCriticalError,
                                                       st->events) == NVML_SUCCESS;
    say("GPU %s (%s) answers again; sampling it", g->dev.uuid, g->dev.name);
}

static void drain_xids(nvml_state *st) {
    if (!st->events || !st->f.EventSetWait_v2) return;
    for (int k = 0; k < 1024; k++) {
        nvmlEventData_t d;
        memset(&d, 0, sizeof d);
        if (st->f.EventSetWait_v2(st->events, &d, 0) != NVML_SUCCESS) return; /* TIMEOUT: none */
        if (!(d.eventType & nvmlEventTypeXidCriticalError)) continue;
        for (size_t i = 0; i < st->n; i++)
            if (st->g[i].h == d.device && st->g[i].parent < 0)
                st->g[i].xid = (long long)d.eventData;
    }
}

static int field_u64(const nvmlFieldValue_t *v, unsigned long long *out) {
    if (v->nvmlReturn != NVML_SUCCESS) return 0;
    switch (v->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = v->value.ullVal;
        return 1;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
        *out = v->value.ulVal;
        return 1;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = v->value.uiVal;
        return 1;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (v->value.sllVal < 0) return 0;
        *out = (unsigned long long)v->value.sllVal;
        return 1;
    case NVML_VALUE_TYPE_DOUBLE:
        if (!(v->value.dVal >= 0)) return 0;
        *out = (unsigned long long)llround(v->value.dVal);
        return 1;
    default:
        return 0;
    }
}

static void sample_gpm(nvml_state *st, gpu *g, gp_sample *s, int64_t now_ns) {
    if (!g->gpm) return;
    nvmlGpmSample_t cur = g->gp.s[g->gp.cur];
    nvmlReturn_t r = g->parent >= 0 ? st->f.GpmMigSampleGet(st->g[g->parent].h, g->gi_id, cur)
                                    : st->f.GpmSampleGet(g->h, cur);
    if (r != NVML_SUCCESS) {
        g->gp.have_prev = 0;
        return;
    }
    if (g->gp.have_prev) {
        nvmlGpmMetricsGet_t *mg = st->mg;
        static const unsigned int ids[] = {NVML_GPM_METRIC_SM_UTIL,
                                           NVML_GPM_METRIC_SM_OCCUPANCY,
                                           NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                           NVML_GPM_METRIC_DRAM_BW_UTIL,
                                           NVML_GPM_METRIC_FP16_UTIL,
                                           NVML_GPM_METRIC_FP32_UTIL,
                                           NVML_GPM_METRIC_FP64_UTIL,
                                           NVML_GPM_METRIC_PCIE_TX_PER_SEC,
                                           NVML_GPM_METRIC_PCIE_RX_PER_SEC,
                                           NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
                                           NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC};
        const unsigned int nm = sizeof ids / sizeof ids[0];
        /* The header and the nm entries the library reads: the whole request is 13 KB,
         * which zeroed per GPU per tick was a fifth of a steady tick's instructions at 8
         * GPUs (callgrind; docs/benchmarks.md, agent cost). */
        memset(mg, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + nm * sizeof mg->metrics[0]);
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = nm;
        mg->sample1 = g->gp.s[1 - g->gp.cur];
        mg->sample2 = cur;
        for (unsigned int k = 0; k < nm; k++)
            mg->metrics[k].metricId = ids[k];
        if (st->f.GpmMetricsGet(mg) == NVML_SUCCESS) {
            double dt = (double)(now_ns - g->gp.prev_ns) / 1e9;
            for (unsigned int k = 0; k < nm; k++) {
                const nvmlGpmMetric_t *m = &mg->metrics[k];
                if (m->nvmlReturn != NVML_SUCCESS || !isfinite(m->value) || m->value < 0) continue;
                double pct = m->value / 100.0;
                int ratio_ok = pct <= 1.0 + 1e-9;
                if (pct > 1) pct = 1; /* rounding above 100.0% */
                switch (m->metricId) {
                case NVML_GPM_METRIC_SM_UTIL:
                    if (ratio_ok) gp_set_d(s, GP_F_SM_ACTIVE, &s->sm_active, pct);
                    break;
                case NVML_GPM_METRIC_SM_OCCUPANCY:
                    if (ratio_ok) gp_set_d(s, GP_F_SM_OCCUPANCY, &s->sm_occupancy, pct);
                    break;
                case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
                    if (ratio_ok) gp_set_d(s, GP_F_TENSOR_ACTIVE, &s->tensor_active, pct);
                    break;
                case NVML_GPM_METRIC_DRAM_BW_UTIL:
                    if (ratio_ok) gp_set_d(s, GP_F_DRAM_ACTIVE, &s->dram_active, pct);
                    break;
                case NVML_GPM_METRIC_FP16_UTIL:
                    if (ratio_ok) gp_set_d(s, GP_F_FP16_ACTIVE, &s->fp16_active, pct);
                    break;
                case NVML_GPM_METRIC_FP32_UTIL:
                    if (ratio_ok) gp_set_d(s, GP_F_FP32_ACTIVE, &s->fp32_active, pct);
                    break;
                case NVML_GPM_METRIC_FP64_UTIL:
                    if (ratio_ok) gp_set_d(s, GP_F_FP64_ACTIVE, &s->fp64_active, pct);
                    break;
                default: { /* MiB/s rates: integrated where no counter exists */
                    int c = m->metricId == NVML_GPM_METRIC_PCIE_TX_PER_SEC           ? 0
                            : m->metricId == NVML_GPM_METRIC_PCIE_RX_PER_SEC         ? 1
                            : m->metricId == NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC ? 2
                                                                                     : 3;
                    static const uint32_t cf[4] = {GP_F_PCIE_TX, GP_F_PCIE_RX, GP_F_NVLINK_TX,
                                                   GP_F_NVLINK_RX};
                    g->acc[c] += m->value * 1048576.0 * dt;
                    if (!(s->valid & cf[c])) {
                        uint64_t *slot = c == 0   ? &s->pcie_tx_bytes
                                         : c == 1 ? &s->pcie_rx_bytes
                                         : c == 2 ? &s->nvlink_tx_bytes
                                                  : &s->nvlink_rx_bytes;
                        *slot = (uint64_t)llround(g->acc[c]);
                        s->valid |= cf[c];
                    }
                }
                }
            }
        }
    }
    g->gp.prev_ns = now_ns;
    g->gp.have_prev = 1;
    g->gp.cur = 1 - g->gp.cur;
}

/* Per-process rows of one device, for list_processes. */
static int sample_procs(nvml_state *st, gpu *g, int64_t now_ns) {
    g->nprocs = 0;
    nvmlProcessInfo_t info[MAX_PROCS];
    if (st->f.DeviceGetComputeRunningProcesses_v3 && !(g->unsupported & U_PROCS)) {
        unsigned int cnt = MAX_PROCS;
        nvmlReturn_t r = st->f.DeviceGetComputeRunningProcesses_v3(g->h, &cnt, info);
        if (check(g, r, U_PROCS)) return 1;
        if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
            if (cnt > MAX_PROCS) cnt = MAX_PROCS; /* more than 256 processes: the first 256 */
            for (unsigned int k = 0; k < cnt; k++) {
                gp_proc_sample *p = &g->procs[g->nprocs++];
                memset(p, 0, sizeof *p);
                scopy(p->uuid, sizeof p->uuid, g->dev.uuid);
                p->ts_ns = now_ns;
                p->pid = info[k].pid;
                if (info[k].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE) {
                    p->mem_bytes = info[k].usedGpuMemory;
                    p->valid |= GP_P_MEM;
                }
            }
        }
    }
    if (!st->f.DeviceGetProcessUtilization || (g->unsupported & U_PUTIL)) return 0;
    nvmlProcessUtilizationSample_t u[MAX_PROCS];
    unsigned int cnt = MAX_PROCS;
    nvmlReturn_t r = st->f.DeviceGetProcessUtilization(g->h, u, &cnt, g->last_seen_us);
    if (check(g, r, U_PUTIL)) return 1;
    if (r != NVML_SUCCESS) return 0; /* NOT_FOUND: no samples since last seen */
    if (cnt > MAX_PROCS) cnt = MAX_PROCS;
    unsigned long long newest = g->last_seen_us;
    int nsamp[MAX_PROCS] = {0};
    for (unsigned int k = 0; k < cnt; k++) {
        if (u[k].timeStamp <= g->last_seen_us || u[k].smUtil > 100) continue; /* stale or bogus */
        if (u[k].timeStamp > newest) newest = u[k].timeStamp;
        gp_proc_sample *p = NULL;
        for (size_t j = 0; j < g->nprocs; j++)
            if (g->procs[j].pid == (int64_t)u[k].pid) p = &g->procs[j];
        if (!p) {
            if (g->nprocs >= MAX_PROCS) continue;
            p = &g->procs[g->nprocs++];
            memset(p, 0, sizeof *p);
            scopy(p->uuid, sizeof p->uuid, g->dev.uuid);
            p->ts_ns = now_ns;
            p->pid = u[k].pid;
        }
        /* several samples of one process in the interval: their mean */
        size_t j = (size_t)(p - g->procs);
        nsamp[j]++;
        p->sm_share += (u[k].smUtil / 100.0 - (nsamp[j] > 1 ? p->sm_share : 0)) / nsamp[j];
        p->valid |= GP_P_SM_SHARE;
    }
    g->last_seen_us = newest;
    return 0;
}

/* Reads one device; returns 1 when it turned out lost. */
static int sample_gpu(nvml_state *st, gpu *g, int64_t now_ns, gp_sample *s) {
    memset(s, 0, sizeof *s);
    scopy(s->uuid, sizeof s->uuid, g->dev.uuid);
    s->ts_ns = now_ns;
    const nvml_api *f = &st->f;
    nvmlReturn_t r;
    if (f->DeviceGetUtilizationRates && !(g->unsupported & U_UTIL)) {
        nvmlUtilization_t u;
        if (check(g, r = f->DeviceGetUtilizationRates(g->h, &u), U_UTIL)) return 1;
        if (r == NVML_SUCCESS && u.gpu <= 100 && u.memory <= 100) {
            gp_set_d(s, GP_F_GPU_UTIL, &s->gpu_util, u.gpu / 100.0);
            gp_set_d(s, GP_F_MEM_UTIL, &s->mem_util, u.memory / 100.0);
        }
    }
    if (f->DeviceGetMemoryInfo && !(g->unsupported & U_MEM)) {
        nvmlMemory_t m;
        if (check(g, r = f->DeviceGetMemoryInfo(g->h, &m), U_MEM)) return 1;
        if (r == NVML_SUCCESS) {
            s->mem_used_bytes = m.used;
            s->mem_total_bytes = m.total;
            s->valid |= GP_F_MEM_USED | GP_F_MEM_TOTAL;
        }
    }
    if (f->DeviceGetPowerUsage && !(g->unsupported & U_POWER)) {
        unsigned int mw;
        if (check(g, r = f->DeviceGetPowerUsage(g->h, &mw), U_POWER)) return 1;
        if (r == NVML_SUCCESS) gp_set_d(s, GP_F_POWER, &s->power_w, mw / 1000.0);
    }
    if (f->DeviceGetTotalEnergyConsumption && !(g->unsupported & U_ENERGY)) {
        unsigned long long mj;
        if (check(g, r = f->DeviceGetTotalEnergyConsumption(g->h, &mj), U_ENERGY)) return 1;
        if (r == NVML_SUCCESS) {
            s->energy_mj = mj;
            s->valid |= GP_F_ENERGY;
        }
    }
    if (f->DeviceGetClockInfo) {
        unsigned int c;
        if (!(g->unsupported & U_SMCLK)) {
            if (check(g, r = f->DeviceGetClockInfo(g->h, NVML_CLOCK_SM, &c), U_SMCLK)) return 1;
            if (r == NVML_SUCCESS) gp_set_d(s, GP_F_SM_CLOCK, &s->sm_clock_mhz, c);
        }
        if (!(g->unsupported & U_MEMCLK)) {
            if (check(g, r = f->DeviceGetClockInfo(g->h, NVML_CLOCK_MEM, &c), U_MEMCLK)) return 1;
            if (r == NVML_SUCCESS) gp_set_d(s, GP_F_MEM_CLOCK, &s->mem_clock_mhz, c);
        }
    }
    if (f->DeviceGetTemperature && !(g->unsupported & U_TEMP)) {
        unsigned int t;
        if (check(g, r = f->DeviceGetTemperature(g->h, NVML_TEMPERATURE_GPU, &t), U_TEMP)) return 1;
        if (r == NVML_SUCCESS) gp_set_d(s, GP_F_TEMP, &s->temp_c, t);
    }
    if (f->DeviceGetCurrentClocksEventReasons && !(g->unsupported & U_REASONS)) {
        unsigned long long m;
        if (check(g, r = f->DeviceGetCurrentClocksEventReasons(g->h, &m), U_REASONS)) return 1;
        if (r == NVML_SUCCESS) {
            s->throttle_reasons = m;
            s->valid |= GP_F_THROTTLE;
        }
    }
    if (f->DeviceGetFieldValues && (g->unsupported & (U_PCIE | U_NVLINK)) != (U_PCIE | U_NVLINK)) {
        nvmlFieldValue_t v[4];
        memset(v, 0, sizeof v);
        v[0].fieldId = NVML_FI_DEV_PCIE_COUNT_TX_BYTES;
        v[1].fieldId = NVML_FI_DEV_PCIE_COUNT_RX_BYTES;
        v[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
        v[2].scopeId = UINT_MAX;
        v[3].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
        v[3].scopeId = UINT_MAX;
        r = f->DeviceGetFieldValues(g->h, 4, v);
        if (r == NVML_ERROR_GPU_IS_LOST) return 1;
        if (r == NVML_SUCCESS) {
            unsigned long long x;
            int lost = 0;
            for (int k = 0; k < 4; k++)
                lost |= v[k].nvmlReturn == NVML_ERROR_GPU_IS_LOST;
            if (lost) return 1;
            if (field_u64(&v[0], &x)) s->pcie_tx_bytes = x, s->valid |= GP_F_PCIE_TX;
            if (field_u64(&v[1], &x)) s->pcie_rx_bytes = x, s->valid |= GP_F_PCIE_RX;
            if (field_u64(&v[2], &x)) s->nvlink_tx_bytes = x * 1024, s->valid |= GP_F_NVLINK_TX;
            if (field_u64(&v[3], &x)) s->nvlink_rx_bytes = x * 1024, s->valid |= GP_F_NVLINK_RX;
            if (v[0].nvmlReturn == NVML_ERROR_NOT_SUPPORTED) g->unsupported |= U_PCIE;
            if (v[2].nvmlReturn == NVML_ERROR_NOT_SUPPORTED) g->unsupported |= U_NVLINK;
        } else {
            check(g, r, U_PCIE | U_NVLINK);
        }
    }
    if (g->xid_registered) {
        s->xid = g->xid;
        s->valid |= GP_F_XID;
        g->xid = 0;
    }
    sample_gpm(st, g, s, now_ns);
    if (sample_procs(st, g, now_ns)) return 1;
    return 0;
}

static int nvml_sample(void *state, int64_t now_ns, gp_sample *out, size_t cap, size_t *n,
                       char *err, size_t errlen) {
    (void)err, (void)errlen;
    nvml_state *st = state;
    drain_xids(st);
    size_t k = 0;
    for (size_t i = 0; i < st->n; i++) {
        gpu *g = &st->g[i];
        if (g->lost) probe_lost(st, g);
        if (g->lost) {
            g->nprocs = 0;
            continue;
        }
        if (k >= cap) break;
        if (sample_gpu(st, g, now_ns, &out[k])) {
            mark_lost(g);
            g->nprocs = 0;
            for (size_t j = i + 1; j < st->n; j++) /* its MIG instances go with it */
                if (st->g[j].parent == (int)i) st->g[j].lost = 1;
            continue;
        }
        k++;
    }
    *n = k;
    return 0;
}

static int nvml_procs(void *state, gp_proc_sample *out, size_t cap, size_t *n, char *err,
                      size_t errlen) {
    (void)err, (void)errlen;
    nvml_state *st = state;
    size_t k = 0;
    for (size_t i = 0; i < st->n; i++)
        for (size_t j = 0; j < st->g[i].nprocs && k < cap; j++)
            out[k++] = st->g[i].procs[j];
    *n = k;
    return 0;
}

static void nvml_close(void *state) {
    nvml_state *st = state;
    if (!st) return;
    for (size_t i = 0; i < st->n; i++)
        if (st->g[i].gpm) {
            st->f.GpmSampleFree(st->g[i].gp.s[0]);
            st->f.GpmSampleFree(st->g[i].gp.s[1]);
        }
    if (st->events && st->f.EventSetFree) st->f.EventSetFree(st->events);
    if (st->f.Shutdown) st->f.Shutdown();
    if (st->lib) dlclose(st->lib);
    free(st->g);
    free(st->mg);
    free(st);
}

/* The driver's PIDs are this node's (or, in a container, those of the /proc the agent
 * was given: --proc-root). */
static void nvml_node_paths(void *st, const char **proc_root, const char **jobmap_dir) {
    (void)st;
    *proc_root = "/proc";
    *jobmap_dir = NULL;
}

const gp_source_ops gp_source_nvml = {
    .name = "nvml",
    .usage = "nvml          the NVIDIA driver's NVML (libnvidia-ml.so.1; GOODPUT_NVML_LIBRARY "
             "overrides)",
    .open = nvml_open,
    .list_devices = nvml_devices,
    .sample = nvml_sample,
    .list_processes = nvml_procs,
    .node_paths = nvml_node_paths,
    .drain_events = NULL,
    .end_ns = NULL,
    .now_ns = NULL,
    .close = nvml_close,
};
