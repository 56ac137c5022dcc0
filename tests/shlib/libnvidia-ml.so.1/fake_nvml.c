/* fake_nvml.c: a test-only libnvidia-ml.so.1 whose readings come from the simulator.
 *
 * It exports the NVML entry points goodput's backend uses, with NVIDIA's ABI (types from
 * src/sources/nvml_abi.h, which was checked against nvml.h API 13; the layout asserts
 * below pin the sizes and offsets nvml.h gives on LP64), so the backend's real code path
 * (dlopen, dlsym, versioned symbols, structs, error codes) runs end to end without a GPU.
 *
 * The node is the `sim` source opened on the scenario in env GOODPUT_FAKE_NVML_SCENARIO.
 * Simulated time = the scenario start + 1 s + (wall time since nvmlInit_v2) x
 * GOODPUT_FAKE_NVML_SPEED (default 1); with GOODPUT_FAKE_NVML_CLOCK=manual it moves only
 * when a test calls gp_fake_nvml_set_time().
 *
 * GOODPUT_FAKE_NVML_CHEAP=1 (benchmarks): the simulator runs once, at nvmlInit_v2; later
 * readings repeat that one with their time moved on and the energy counters advanced at
 * the sampled power. The library then costs next to nothing inside the agent's process,
 * so the process's CPU is the agent's own (bench/agent_cost): without it the simulation of
 * 512 GPUs, run in the agent's process, was most of what the benchmark measured.
 *
 * Error injection (env):
 *   GOODPUT_FAKE_NVML_INIT_ERROR=N      nvmlInit_v2 returns N (9 = DRIVER_NOT_LOADED)
 *   GOODPUT_FAKE_NVML_COUNT=N           report only the first N GPUs (0 = none)
 *   GOODPUT_FAKE_NVML_UNSUPPORTED=a,b   NOT_SUPPORTED for: util memory power energy clocks
 *                                       temp reasons fields procs putil gpm events mig
 *   GOODPUT_FAKE_NVML_LOST=I:A:B        GPU I answers GPU_IS_LOST from A to B seconds
 *   GOODPUT_FAKE_NVML_XID=I:S:X[,...]   GPU I raises XID X at S seconds
 *   GOODPUT_FAKE_NVML_MIG=I:N           GPU I runs MIG with N instances
 *   GOODPUT_FAKE_NVML_BOGUS_PROC=1      process utilization also returns a 250% sample
 *                                       and a stale one (both must be dropped)
 *   GOODPUT_FAKE_NVML_PIDS=G:PID:MIB:SM[,...]  (or GOODPUT_FAKE_NVML_PIDS_FILE=PATH, re-read)
 *                                       real processes of this machine run on GPU G with
 *                                       MIB of memory and SM% share, as long as they live
 *                                       (an exited PID leaves the list, as a driver drops
 *                                       a process whose context is gone); the simulator's
 *                                       own processes are listed beside them
 * The simulator exposes its fake /proc and job map under GOODPUT_SIM_NODE_ROOT when set
 * (point the agent there with --proc-root/--jobmap-dir).
 * Test hooks: gp_fake_nvml_set_time(ns after start), gp_fake_nvml_truth(i, sample). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sources/nvml_abi.h"
#include "sources/source.h"

#if defined(__LP64__)
/* Sizes/offsets as nvml.h (API 13) lays them out on LP64. */
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36,
               "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24 && offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8,
               "nvmlProcessInfo_v2_t");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32 &&
                   offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16,
               "nvmlProcessUtilizationSample_t");
_Static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, value) == 32,
               "nvmlFieldValue_t");
_Static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16,
               "nvmlEventData_t");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetric_t, value) == 8,
               "nvmlGpmMetric_t");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "nvmlGpmMetricsGet_t");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t");
#endif

#define NS 1000000000LL
#define MAXD 512 /* bench/agent_cost simulates up to 512 GPUs */
#define MAXP 2048

struct nvmlDevice_st {
    int index; /* GPU index */
    int mig;   /* -1 = the GPU; else MIG slot */
};
struct nvmlEventSet_st {
    int registered[MAXD];
};
struct nvmlGpmSample_st {
    int64_t t;
    gp_sample s;
    int valid;
};

typedef struct {
    int gpu;
    double at_s;
    unsigned long long xid;
    int delivered;
} xid_ev;

static struct {
    int init;
    gp_source src;
    gp_device dev[MAXD];
    size_t ndev;
    gp_sample cur[MAXD];
    gp_proc_sample procs[MAXP];
    size_t nprocs;
    int64_t start_ns, t_ns, sampled_ns, wall0;
    double speed;
    int manual;
    char unsupported[256];
    int lost_gpu;
    double lost_from, lost_to;
    xid_ev xids[16];
    int nxid;
    int mig_gpu, mig_n;
    int bogus;
    int cheap;
    /* procs grouped by GPU (stable): GPU d's are proc_order[dev_first[d] .. dev_first[d+1]) */
    int proc_order[MAXP], dev_first[MAXD + 1], dev_of[MAXP];
    struct {
        int gpu;
        long long pid;
        int mib, sm;
    } real[32];
    int nreal;
    struct nvmlDevice_st handles[MAXD], mig_handles[8];
    struct nvmlEventSet_st events;
} F;

static int64_t wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * NS + t.tv_nsec;
}

/* Called on every NVML call: with nothing marked unsupported (the bench, most tests) it
 * returns at once, so the list's scan is not charged to the agent's cost per GPU-sample
 * (bench/agent_cost/instr.sh at 8 GPUs: 3.2% fewer instructions per GPU-sample). A list
 * given in the environment is still scanned per call: only tests set one. */
static int unsupported(const char *what) {
    if (!F.unsupported[0]) return 0;
    size_t l = strlen(what);
    for (const char *p = F.unsupported; (p = strstr(p, what)); p += l)
        if ((p == F.unsupported || p[-1] == ',') && (p[l] == ',' || !p[l])) return 1;
    return 0;
}

/* Brings the simulator to the current simulated time. */
static void reread_pids_file(void);

/* Groups the process rows by GPU (a counting sort, keeping their order), so a per-GPU
 * query reads its own rows instead of every GPU's (512 GPUs: O(GPUs x processes) per
 * tick otherwise). */
static void index_procs(void) {
    int *dev_of = F.dev_of;
    int count[MAXD + 1] = {0};
    for (size_t i = 0; i < F.nprocs; i++) {
        dev_of[i] = -1;
        for (size_t d = 0; d < F.ndev; d++)
            if (!strcmp(F.procs[i].uuid, F.dev[d].uuid)) {
                dev_of[i] = (int)d;
                count[d + 1]++;
                break;
            }
    }
    F.dev_first[0] = 0;
    for (size_t d = 0; d < F.ndev; d++)
        F.dev_first[d + 1] = F.dev_first[d] + count[d + 1];
    int fill[MAXD];
    for (size_t d = 0; d < F.ndev; d++)
        fill[d] = F.dev_first[d];
    for (size_t i = 0; i < F.nprocs; i++)
        if (dev_of[i] >= 0) F.proc_order[fill[dev_of[i]]++] = (int)i;
}

static void refresh(void) {
    if (!F.manual) F.t_ns = F.start_ns + NS + (int64_t)((double)(wall() - F.wall0) * F.speed);
    if (F.t_ns <= F.sampled_ns) return;
    if (F.cheap && F.sampled_ns > F.start_ns) { /* replay the first reading, moved on */
        F.sampled_ns = F.t_ns; /* each device moves on when it is asked (advance) */
        return;
    }
    char err[256];
    size_t n = 0;
    if (F.src.ops->sample(F.src.state, F.t_ns, F.cur, MAXD, &n, err, sizeof err) < 0) return;
    F.sampled_ns = F.t_ns;
    F.nprocs = 0;
    if (F.src.ops->list_processes)
        F.src.ops->list_processes(F.src.state, F.procs, MAXP, &F.nprocs, err, sizeof err);
    reread_pids_file();
    for (int i = 0; i < F.nreal && F.nprocs < MAXP; i++) {
        if (kill((pid_t)F.real[i].pid, 0) != 0 && errno == ESRCH) continue; /* exited */
        char stat[64];
        snprintf(stat, sizeof stat, "/proc/%lld/stat", (long long)F.real[i].pid);
        FILE *fp = fopen(stat, "r"); /* a zombie still answers kill(): check its state */
        char st = 'R';
        if (fp) {
            char buf[512];
            size_t n = fread(buf, 1, sizeof buf - 1, fp);
            buf[n] = 0;
            char *q = strrchr(buf, ')');
            if (q && q[1] == ' ') st = q[2];
            fclose(fp);
        }
        if (st == 'Z' || st == 'X') continue;
        if (F.real[i].gpu < 0 || (size_t)F.real[i].gpu >= F.ndev) continue;
        gp_proc_sample *p = &F.procs[F.nprocs++];
        memset(p, 0, sizeof *p);
        memcpy(p->uuid, F.dev[F.real[i].gpu].uuid, sizeof p->uuid);
        p->ts_ns = F.t_ns;
        p->pid = F.real[i].pid;
        p->mem_bytes = (uint64_t)F.real[i].mib << 20;
        p->sm_share = F.real[i].sm / 100.0;
        p->valid = GP_P_MEM | GP_P_SM_SHARE;
    }
    index_procs();
}

static double now_s(void) {
    return (double)(F.t_ns - F.start_ns) / 1e9;
}

static int is_lost(int gpu) {
    return gpu == F.lost_gpu && now_s() >= F.lost_from && now_s() < F.lost_to;
}

/* GOODPUT_FAKE_NVML_CHEAP: device i's first reading moved on to now, its energy counter
 * advanced at its power. One device a call: the clock moves between the agent's calls, and
 * moving every device at each (as before) cost O(GPUs) a call, O(GPUs^2) a tick, most of
 * what the bench charged to the NVML calls at 512 GPUs (bench/agent_cost). */
static const gp_sample *advance(size_t i) {
    gp_sample *c = &F.cur[i];
    if (F.cheap && F.t_ns > c->ts_ns) {
        if (gp_has(c->valid, GP_F_ENERGY) && gp_has(c->valid, GP_F_POWER))
            c->energy_mj += (uint64_t)(c->power_w * ((double)(F.t_ns - c->ts_ns) / 1e6));
        c->ts_ns = F.t_ns;
    }
    return c;
}

/* Validates a handle and returns its GPU's current sample (NULL with *rc set otherwise). */
static const gp_sample *dev_sample(nvmlDevice_t d, nvmlReturn_t *rc, int allow_mig) {
    if (!F.init) return *rc = NVML_ERROR_UNINITIALIZED, NULL;
    if (!d || d->index < 0 || (size_t)d->index >= F.ndev)
        return *rc = NVML_ERROR_INVALID_ARGUMENT, NULL;
    refresh();
    if (is_lost(d->index)) return *rc = NVML_ERROR_GPU_IS_LOST, NULL;
    if (d->mig >= 0 && !allow_mig) return *rc = NVML_ERROR_NOT_SUPPORTED, NULL;
    /* The simulator samples its devices in order: the handle's index first (a search
     * over 512 GPUs per call was the library's largest cost at that size). */
    if (!strcmp(F.cur[d->index].uuid, F.dev[d->index].uuid))
        return *rc = NVML_SUCCESS, advance((size_t)d->index);
    for (size_t i = 0; i < F.ndev; i++)
        if (!strcmp(F.cur[i].uuid, F.dev[d->index].uuid)) return *rc = NVML_SUCCESS, advance(i);
    return *rc = NVML_ERROR_UNKNOWN, NULL;
}

static void parse_pids(const char *e) {
    F.nreal = 0;
    for (const char *p = e; *p && F.nreal < 32;) {
        if (sscanf(p, "%d:%lld:%d:%d", &F.real[F.nreal].gpu, &F.real[F.nreal].pid,
                   &F.real[F.nreal].mib, &F.real[F.nreal].sm) == 4)
            F.nreal++;
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
}

/* GOODPUT_FAKE_NVML_PIDS_FILE: the same list in a file a test may replace while the agent
 * runs (it learns the PIDs only after starting them). */
static void reread_pids_file(void) {
    const char *path = getenv("GOODPUT_FAKE_NVML_PIDS_FILE");
    if (!path) return;
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = 0;
    fclose(fp);
    parse_pids(buf);
}

static void parse_env(void) {
    const char *e;
    F.speed = (e = getenv("GOODPUT_FAKE_NVML_SPEED")) ? atof(e) : 1.0;
    F.manual = (e = getenv("GOODPUT_FAKE_NVML_CLOCK")) && !strcmp(e, "manual");
    snprintf(F.unsupported, sizeof F.unsupported, "%s",
             (e = getenv("GOODPUT_FAKE_NVML_UNSUPPORTED")) ? e : "");
    F.lost_gpu = -1;
    if ((e = getenv("GOODPUT_FAKE_NVML_LOST")))
        sscanf(e, "%d:%lf:%lf", &F.lost_gpu, &F.lost_from, &F.lost_to);
    F.nxid = 0;
    if ((e = getenv("GOODPUT_FAKE_NVML_XID"))) {
        const char *p = e;
        while (*p && F.nxid < 16) {
            xid_ev *x = &F.xids[F.nxid];
            if (sscanf(p, "%d:%lf:%llu", &x->gpu, &x->at_s, &x->xid) == 3) F.nxid++;
            p = strchr(p, ',');
            if (!p) break;
            p++;
        }
    }
    F.mig_gpu = -1;
    if ((e = getenv("GOODPUT_FAKE_NVML_MIG"))) sscanf(e, "%d:%d", &F.mig_gpu, &F.mig_n);
    if (F.mig_n > 8) F.mig_n = 8;
    F.bogus = (e = getenv("GOODPUT_FAKE_NVML_BOGUS_PROC")) && atoi(e);
    F.cheap = (e = getenv("GOODPUT_FAKE_NVML_CHEAP")) && atoi(e);
    F.nreal = 0;
    if ((e = getenv("GOODPUT_FAKE_NVML_PIDS"))) parse_pids(e);
}

nvmlReturn_t nvmlInit_v2(void) {
    const char *e = getenv("GOODPUT_FAKE_NVML_INIT_ERROR");
    if (e && atoi(e)) return atoi(e);
    if (F.init++) return NVML_SUCCESS; /* reference counted, as NVML is */
    parse_env();
    const char *sc = getenv("GOODPUT_FAKE_NVML_SCENARIO");
    char spec[1024], err[512];
    snprintf(spec, sizeof spec, "sim:%s", sc ? sc : "");
    gp_source_opts o = {.speed = 0, .start_ns = 0, .interval_ns = NS};
    if (!sc || gp_source_open(spec, &o, &F.src, err, sizeof err) < 0) {
        fprintf(stderr, "fake libnvidia-ml: %s\n", sc ? err : "set GOODPUT_FAKE_NVML_SCENARIO");
        F.init = 0;
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    F.src.ops->list_devices(F.src.state, F.dev, MAXD, &F.ndev, err, sizeof err);
    if ((e = getenv("GOODPUT_FAKE_NVML_COUNT")) && (size_t)atoi(e) < F.ndev)
        F.ndev = (size_t)atoi(e);
    F.start_ns = F.src.ops->now_ns ? F.src.ops->now_ns(F.src.state) : 0;
    F.t_ns = F.start_ns + NS;
    F.sampled_ns = F.start_ns;
    F.wall0 = wall();
    for (int i = 0; i < MAXD; i++)
        F.handles[i] = (struct nvmlDevice_st){i, -1};
    for (int i = 0; i < 8; i++)
        F.mig_handles[i] = (struct nvmlDevice_st){F.mig_gpu, i};
    refresh();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    if (--F.init == 0) gp_source_close(&F.src);
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    default:
        return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) {
    snprintf(v, len, "999.99-goodput-fake");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    *n = (unsigned int)F.ndev;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    if (i >= F.ndev) return NVML_ERROR_INVALID_ARGUMENT;
    refresh();
    if (is_lost((int)i)) return NVML_ERROR_GPU_IS_LOST;
    *d = &F.handles[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d) {
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    refresh();
    for (size_t i = 0; i < F.ndev; i++)
        if (!strcmp(F.dev[i].uuid, uuid)) {
            if (is_lost((int)i)) return NVML_ERROR_GPU_IS_LOST;
            *d = &F.handles[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 1)) return rc;
    if (d->mig >= 0)
        snprintf(buf, len, "MIG-%d-%s", d->mig, F.dev[d->index].uuid + 4);
    else
        snprintf(buf, len, "%s", F.dev[d->index].uuid);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned int len) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 1)) return rc;
    const char *n = F.dev[d->index].spec ? F.dev[d->index].spec->model : F.dev[d->index].name;
    snprintf(buf, len, "NVIDIA %s%s", n, d->mig >= 0 ? " MIG" : "");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 1);
    if (!s) return rc;
    if (unsupported("memory") || !gp_has(s->valid, GP_F_MEM_USED | GP_F_MEM_TOTAL))
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long div = d->mig >= 0 ? (unsigned long long)F.mig_n : 1;
    m->total = s->mem_total_bytes / div;
    m->used = s->mem_used_bytes / div;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 1)) return rc;
    memset(p, 0, sizeof *p);
    p->bus = (unsigned int)(0x10 + d->index);
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pend) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 0)) return rc;
    if (unsupported("mig")) return NVML_ERROR_NOT_SUPPORTED;
    *cur = *pend = d->index == F.mig_gpu ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *n) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 0)) return rc;
    *n = d->index == F.mig_gpu ? 7 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int i, nvmlDevice_t *m) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 0)) return rc;
    if (d->index != F.mig_gpu) return NVML_ERROR_INVALID_ARGUMENT;
    if ((int)i >= F.mig_n) return NVML_ERROR_NOT_FOUND;
    *m = &F.mig_handles[i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 1)) return rc;
    if (d->mig < 0) return NVML_ERROR_INVALID_ARGUMENT;
    *id = (unsigned int)d->mig + 1;
    return NVML_SUCCESS;
}

static unsigned int pct(double r) {
    return (unsigned int)lround(r * 100);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("util") || !gp_has(s->valid, GP_F_GPU_UTIL)) return NVML_ERROR_NOT_SUPPORTED;
    u->gpu = pct(s->gpu_util);
    u->memory = gp_has(s->valid, GP_F_MEM_UTIL)      ? pct(s->mem_util)
                : gp_has(s->valid, GP_F_DRAM_ACTIVE) ? pct(s->dram_active)
                                                     : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("power") || !gp_has(s->valid, GP_F_POWER)) return NVML_ERROR_NOT_SUPPORTED;
    *mw = (unsigned int)llround(s->power_w * 1000);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("energy") || !gp_has(s->valid, GP_F_ENERGY)) return NVML_ERROR_NOT_SUPPORTED;
    *mj = s->energy_mj;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("clocks")) return NVML_ERROR_NOT_SUPPORTED;
    if (type == NVML_CLOCK_SM && gp_has(s->valid, GP_F_SM_CLOCK))
        *mhz = (unsigned int)lround(s->sm_clock_mhz);
    else if (type == NVML_CLOCK_MEM && gp_has(s->valid, GP_F_MEM_CLOCK))
        *mhz = (unsigned int)lround(s->mem_clock_mhz);
    else
        return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    if (unsupported("temp") || !gp_has(s->valid, GP_F_TEMP)) return NVML_ERROR_NOT_SUPPORTED;
    *t = (unsigned int)lround(s->temp_c);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *m) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("reasons") || !gp_has(s->valid, GP_F_THROTTLE)) return NVML_ERROR_NOT_SUPPORTED;
    *m = s->throttle_reasons;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    for (int i = 0; i < n; i++) {
        v[i].timestamp = F.t_ns / 1000;
        v[i].latencyUsec = 0;
        v[i].valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
        uint32_t f = 0;
        unsigned long long x = 0;
        switch (v[i].fieldId) {
        case NVML_FI_DEV_PCIE_COUNT_TX_BYTES:
            f = GP_F_PCIE_TX, x = s->pcie_tx_bytes;
            break;
        case NVML_FI_DEV_PCIE_COUNT_RX_BYTES:
            f = GP_F_PCIE_RX, x = s->pcie_rx_bytes;
            break;
        case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
            f = GP_F_NVLINK_TX, x = s->nvlink_tx_bytes / 1024;
            break;
        case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
            f = GP_F_NVLINK_RX, x = s->nvlink_rx_bytes / 1024;
            break;
        }
        if (!f || unsupported("fields") || !gp_has(s->valid, f) ||
            ((f == GP_F_NVLINK_TX || f == GP_F_NVLINK_RX) && v[i].scopeId != 0xFFFFFFFFu)) {
            v[i].nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        v[i].nvmlReturn = NVML_SUCCESS;
        v[i].value.ullVal = x;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                     nvmlProcessInfo_t *info) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("procs")) return NVML_ERROR_NOT_SUPPORTED;
    unsigned int k = 0, cap = *count;
    for (int j = F.dev_first[d->index]; j < F.dev_first[d->index + 1]; j++) {
        size_t i = (size_t)F.proc_order[j];
        if (k < cap) {
            info[k].pid = (unsigned int)F.procs[i].pid;
            info[k].usedGpuMemory = gp_has(F.procs[i].valid, GP_P_MEM) ? F.procs[i].mem_bytes
                                                                       : NVML_VALUE_NOT_AVAILABLE;
            info[k].gpuInstanceId = info[k].computeInstanceId = 0xFFFFFFFFu;
        }
        k++;
    }
    *count = k;
    return k > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *u,
                                             unsigned int *count, unsigned long long last_seen) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (unsupported("putil")) return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long ts = (unsigned long long)(s->ts_ns / 1000); /* the reading's time */
    unsigned int k = 0, cap = u ? *count : 0;
    for (int j = F.dev_first[d->index]; j < F.dev_first[d->index + 1]; j++) {
        size_t i = (size_t)F.proc_order[j];
        if (!gp_has(F.procs[i].valid, GP_P_SM_SHARE)) continue;
        if (ts <= last_seen) continue;
        if (k < cap)
            u[k] = (nvmlProcessUtilizationSample_t){
                (unsigned int)F.procs[i].pid, ts, pct(F.procs[i].sm_share), 0, 0, 0};
        k++;
        if (F.bogus && k + 2 <= cap) { /* a 250% sample and a stale one: both to be dropped */
            u[k++] =
                (nvmlProcessUtilizationSample_t){(unsigned int)F.procs[i].pid, ts, 250, 0, 0, 0};
            u[k++] = (nvmlProcessUtilizationSample_t){
                (unsigned int)F.procs[i].pid, last_seen, 99, 0, 0, 0};
        }
    }
    if (!u) {
        *count = k;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = k < cap ? k : cap;
    if (k == 0) return NVML_ERROR_NOT_FOUND;
    return k > cap ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    memset(&F.events, 0, sizeof F.events);
    *set = &F.events;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types,
                                      nvmlEventSet_t set) {
    nvmlReturn_t rc;
    if (!dev_sample(d, &rc, 0)) return rc;
    if (unsupported("events") || !(types & nvmlEventTypeXidCriticalError))
        return NVML_ERROR_NOT_SUPPORTED;
    set->registered[d->index] = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                 unsigned int timeout_ms) {
    (void)timeout_ms; /* never blocks: the backend only ever polls with 0 */
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    refresh();
    for (int i = 0; i < F.nxid; i++) {
        xid_ev *x = &F.xids[i];
        if (x->delivered || x->at_s > now_s() || !set->registered[x->gpu]) continue;
        x->delivered = 1;
        memset(data, 0, sizeof *data);
        data->device = &F.handles[x->gpu];
        data->eventType = nvmlEventTypeXidCriticalError;
        data->eventData = x->xid;
        data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_TIMEOUT;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    (void)set;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *sup) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (sup->version != NVML_GPM_SUPPORT_VERSION) return 25; /* ARGUMENT_VERSION_MISMATCH */
    sup->isSupportedDevice = !unsupported("gpm") && gp_has(s->valid, GP_F_SM_ACTIVE);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *g) {
    g->handle = calloc(1, sizeof *g->handle);
    return g->handle ? NVML_SUCCESS : 20; /* NVML_ERROR_MEMORY */
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t g) {
    free(g.handle);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t g) {
    nvmlReturn_t rc;
    const gp_sample *s = dev_sample(d, &rc, 0);
    if (!s) return rc;
    if (!g.handle) return NVML_ERROR_INVALID_ARGUMENT;
    g.handle->t = s->ts_ns;
    g.handle->s = *s;
    g.handle->valid = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gi, nvmlGpmSample_t g) {
    if (!d || d->index != F.mig_gpu || gi < 1 || (int)gi > F.mig_n)
        return NVML_ERROR_INVALID_ARGUMENT;
    return nvmlGpmSampleGet(d, g);
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m) {
    if (!F.init) return NVML_ERROR_UNINITIALIZED;
    if (m->version != NVML_GPM_METRICS_GET_VERSION) return 25;
    struct nvmlGpmSample_st *a = m->sample1.handle, *b = m->sample2.handle;
    if (!a || !b || !a->valid || !b->valid || b->t <= a->t) return NVML_ERROR_INVALID_ARGUMENT;
    double dt = (double)(b->t - a->t) / 1e9;
    const gp_sample *s = &b->s;
    for (unsigned int i = 0; i < m->numMetrics && i < NVML_GPM_METRIC_MAX; i++) {
        nvmlGpmMetric_t *x = &m->metrics[i];
        uint32_t f = 0;
        double v = 0;
        switch (x->metricId) {
        case NVML_GPM_METRIC_SM_UTIL:
            f = GP_F_SM_ACTIVE, v = s->sm_active * 100;
            break;
        case NVML_GPM_METRIC_SM_OCCUPANCY:
            f = GP_F_SM_OCCUPANCY, v = s->sm_occupancy * 100;
            break;
        case NVML_GPM_METRIC_ANY_TENSOR_UTIL:
            f = GP_F_TENSOR_ACTIVE, v = s->tensor_active * 100;
            break;
        case NVML_GPM_METRIC_DRAM_BW_UTIL:
            f = GP_F_DRAM_ACTIVE, v = s->dram_active * 100;
            break;
        case NVML_GPM_METRIC_FP16_UTIL:
            f = GP_F_FP16_ACTIVE, v = s->fp16_active * 100;
            break;
        case NVML_GPM_METRIC_FP32_UTIL:
            f = GP_F_FP32_ACTIVE, v = s->fp32_active * 100;
            break;
        case NVML_GPM_METRIC_FP64_UTIL:
            f = GP_F_FP64_ACTIVE, v = s->fp64_active * 100;
            break;
        case NVML_GPM_METRIC_PCIE_TX_PER_SEC:
            f = GP_F_PCIE_TX, v = (double)(s->pcie_tx_bytes - a->s.pcie_tx_bytes) / dt / 1048576.0;
            break;
        case NVML_GPM_METRIC_PCIE_RX_PER_SEC:
            f = GP_F_PCIE_RX, v = (double)(s->pcie_rx_bytes - a->s.pcie_rx_bytes) / dt / 1048576.0;
            break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC:
            f = GP_F_NVLINK_TX,
            v = (double)(s->nvlink_tx_bytes - a->s.nvlink_tx_bytes) / dt / 1048576.0;
            break;
        case NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC:
            f = GP_F_NVLINK_RX,
            v = (double)(s->nvlink_rx_bytes - a->s.nvlink_rx_bytes) / dt / 1048576.0;
            break;
        }
        if (!f || !gp_has(s->valid, f) || !gp_has(a->s.valid, f)) {
            x->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            continue;
        }
        x->nvmlReturn = NVML_SUCCESS;
        x->value = v;
    }
    return NVML_SUCCESS;
}

/* ---- test hooks (not NVML) ---- */

void gp_fake_nvml_set_time(int64_t ns_after_start) {
    F.t_ns = F.start_ns + ns_after_start;
}

/* The simulator's sample that the last answers for GPU i came from. */
int gp_fake_nvml_truth(unsigned int i, gp_sample *out) {
    if (!F.init || i >= F.ndev) return -1;
    for (size_t k = 0; k < F.ndev; k++)
        if (!strcmp(F.cur[k].uuid, F.dev[i].uuid)) {
            *out = F.cur[k];
            return 0;
        }
    return -1;
}

/* The simulator's process rows of the last refresh. */
size_t gp_fake_nvml_truth_procs(gp_proc_sample *out, size_t cap) {
    size_t k = F.nprocs < cap ? F.nprocs : cap;
    memcpy(out, F.procs, k * sizeof *out);
    return k;
}
