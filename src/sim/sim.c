/* sim.c: the simulated node: devices, the per-interval telemetry of every GPU, event
 * delivery, ground truth, and the `sim` telemetry backend (gp_source_sim).
 *
 * Telemetry is the time-weighted integral of the segments each job's model produced in the
 * interval (sim_work.c), summed over the jobs sharing a GPU and clamped to [0, 1]. Power
 * follows from activity (idle_w + activity x (TDP - idle_w), capped at TDP with the
 * SW-power-cap throttle bit set), and the energy counter is the running integral of the
 * reported power, so the two always agree. Noise is small, seeded per GPU, and never moves
 * a saturated (1.0) or idle (0.0) signal: NVML reports flat 100% and 0% too. */
#include "sim/sim_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- rng and hashing */

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void sim_rng_seed(sim_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(sim_rng *r) {
    uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return res;
}

double sim_rng_u01(sim_rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double sim_rng_normal(sim_rng *r) {
    double u1 = sim_rng_u01(r), u2 = sim_rng_u01(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

uint64_t sim_hash(const char *s, uint64_t h) {
    if (!h) h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void gp_sim_uuid(const char *node, int index, char *buf, size_t cap) {
    char key[128];
    snprintf(key, sizeof key, "%s#%d", node, index);
    uint64_t a = sim_hash(key, 0), b = sim_hash(key, a ^ 0x5bd1e995ULL);
    uint64_t x = a;
    a = splitmix(&x);
    x = b;
    b = splitmix(&x);
    snprintf(buf, cap, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff), (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffULL));
}

/* ---------------------------------------------------------------- timeline building */

/* The job's share of its GPUs over [t0, t1), in seconds per GPU: while k other jobs
 * hold one of its GPUs it holds 1/(k+1) of that GPU, as the agent's accounting splits
 * a shared GPU (engine/accounting/alloc_split.h); the truth must count the same way or every
 * shared GPU would be counted twice. */
double sim_held_s(const sim_job *j, int64_t t0, int64_t t1) {
    double whole = (double)(t1 - t0) / 1e9;
    if (!j->n_co || !j->sim || t1 <= t0) return whole;
    const gp_sim *s = j->sim;
    double sum = 0;
    for (int r = 0; r < j->cfg->n_gpus; r++) {
        int g = j->cfg->gpus[r];
        int64_t cut[2 * 64 + 4];
        int nc = 0;
        cut[nc++] = t0;
        for (int k = 0; k < j->n_co && nc < 2 * 64; k++) {
            const sim_job *o = &s->jobs[j->co[k]];
            int on = 0;
            for (int x = 0; x < o->cfg->n_gpus; x++)
                on |= o->cfg->gpus[x] == g;
            if (!on) continue;
            if (o->cfg->start_ns > t0 && o->cfg->start_ns < t1) cut[nc++] = o->cfg->start_ns;
            if (o->end > t0 && o->end < t1) cut[nc++] = o->end;
            for (int r = 0; o->cfg->scheduler_none && r < o->cfg->n_restarts && nc < 2 * 64; r++) {
                int64_t d0 = o->cfg->restart_at_ns[r], d1 = d0 + o->cfg->recovery_ns;
                if (d0 > t0 && d0 < t1) cut[nc++] = d0;
                if (d1 > t0 && d1 < t1 && nc < 2 * 64) cut[nc++] = d1;
            }
        }
        cut[nc++] = t1;
        for (int a = 1; a < nc; a++) /* few cuts: insertion sort */
            for (int b = a; b > 0 && cut[b - 1] > cut[b]; b--) {
                int64_t x = cut[b];
                cut[b] = cut[b - 1];
                cut[b - 1] = x;
            }
        for (int c = 0; c + 1 < nc; c++) {
            if (cut[c + 1] <= cut[c]) continue;
            int holders = 1;
            for (int k = 0; k < j->n_co; k++) {
                const sim_job *o = &s->jobs[j->co[k]];
                int on = 0;
                for (int x = 0; x < o->cfg->n_gpus; x++)
                    on |= o->cfg->gpus[x] == g;
                int dead = 0; /* no scheduler: no process, no hold (a restart's dead time) */
                for (int r = 0; o->cfg->scheduler_none && r < o->cfg->n_restarts; r++)
                    dead |= o->cfg->restart_at_ns[r] <= cut[c] &&
                            cut[c] < o->cfg->restart_at_ns[r] + o->cfg->recovery_ns;
                holders += on && !dead && o->cfg->start_ns <= cut[c] && cut[c] < o->end;
            }
            sum += (double)(cut[c + 1] - cut[c]) / 1e9 / holders;
        }
    }
    return sum / j->cfg->n_gpus;
}

void sim_bucket_add(sim_job *j, int bucket, double sec) {
    gp_sim_truth *t = &j->truth;
    switch (bucket) {
    case B_NOT_READY:
        t->not_ready_s += sec;
        break;
    case B_INIT:
        t->init_s += sec;
        break;
    case B_DATA_WAIT:
        t->data_wait_s += sec;
        break;
    case B_CHECKPOINT:
        t->checkpoint_s += sec;
        break;
    case B_RESTORE:
        t->restore_s += sec;
        break;
    case B_RECOVERY:
        t->recovery_s += sec;
        break;
    case B_PRODUCTIVE:
        t->productive_s += sec;
        break;
    case B_IDLE:
        t->idle_s += sec;
        break;
    default:
        t->other_s += sec;
        break;
    }
    t->allocated_s += sec;
}

sim_seg *sim_push(sim_job *j, int64_t t0, int64_t t1, int bucket) {
    if (j->seg_head > 64 && j->seg_head * 2 > j->seg_n) {
        memmove(j->segs, j->segs + j->seg_head, (j->seg_n - j->seg_head) * sizeof *j->segs);
        j->seg_n -= j->seg_head;
        j->seg_head = 0;
    }
    if (j->seg_n == j->seg_cap) {
        size_t cap = j->seg_cap ? j->seg_cap * 2 : 64;
        sim_seg *ns = realloc(j->segs, cap * sizeof *ns);
        if (!ns) abort(); /* out of memory in a simulation: nothing sensible to do */
        j->segs = ns;
        j->seg_cap = cap;
    }
    sim_seg *g = &j->segs[j->seg_n++];
    memset(g, 0, sizeof *g);
    g->t0 = t0;
    g->t1 = t1;
    g->proc = 1;
    g->mem_frac = (float)j->mem_run;
    j->gen = t1;
    sim_bucket_add(j, bucket, sim_held_s(j, t0, t1));
    return g;
}

void sim_quote(char *dst, size_t cap, const char *s) {
    int plain = *s != 0;
    for (const char *p = s; *p; p++)
        if (*p == ' ' || *p == '"' || *p == '\\' || *p == '=' || (unsigned char)*p < 0x20)
            plain = 0;
    if (plain) {
        snprintf(dst, cap, "%s", s);
        return;
    }
    size_t o = 0;
    if (cap < 3) {
        if (cap) dst[0] = 0;
        return;
    }
    dst[o++] = '"';
    for (const char *p = s; *p && o + 3 < cap; p++) {
        if ((unsigned char)*p < 0x20) continue;
        if (*p == '"' || *p == '\\') dst[o++] = '\\';
        dst[o++] = *p;
    }
    dst[o++] = '"';
    dst[o] = 0;
}

void sim_emit(gp_sim *s, sim_job *j, int64_t ts_rel, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (j->ev_head > 64 && j->ev_head * 2 > j->ev_n) {
        memmove(j->evs, j->evs + j->ev_head, (j->ev_n - j->ev_head) * sizeof *j->evs);
        j->ev_n -= j->ev_head;
        j->ev_head = 0;
    }
    if (j->ev_n == j->ev_cap) {
        size_t cap = j->ev_cap ? j->ev_cap * 2 : 64;
        sim_ev *ne = realloc(j->evs, cap * sizeof *ne);
        if (!ne) abort();
        j->evs = ne;
        j->ev_cap = cap;
    }
    sim_ev *e = &j->evs[j->ev_n++];
    e->ts = s->origin + ts_rel;
    e->seq = s->ev_seq++;
    e->line = strdup(line);
    if (!e->line) abort();
}

/* ---------------------------------------------------------------- open / close */

static int copy_scenario(gp_scenario *dst, const gp_scenario *src) {
    *dst = *src;
    dst->jobs = NULL;
    dst->n_jobs = dst->cap_jobs = 0;
    if (src->n_jobs == 0) return 0;
    dst->jobs = calloc((size_t)src->n_jobs, sizeof *dst->jobs);
    if (!dst->jobs) return -1;
    dst->cap_jobs = src->n_jobs;
    for (int i = 0; i < src->n_jobs; i++) {
        dst->jobs[i] = src->jobs[i];
        dst->jobs[i].gpus = NULL;
        dst->n_jobs = i + 1;
        if (gp_scenario_job_set_gpus(&dst->jobs[i], src->jobs[i].gpus, src->jobs[i].n_gpus) < 0)
            return -1;
    }
    return 0;
}

static int64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int jobs_share_gpu(const gp_scenario_job *a, const gp_scenario_job *b) {
    for (int x = 0; x < a->n_gpus; x++)
        for (int y = 0; y < b->n_gpus; y++)
            if (a->gpus[x] == b->gpus[y]) return 1;
    return 0;
}

int gp_sim_open(const gp_scenario *sc_in, int64_t start_ns, gp_sim **out, char *err,
                size_t errlen) {
    *out = NULL;
    gp_sim *s = calloc(1, sizeof *s);
    if (!s || copy_scenario(&s->sc, sc_in) < 0) {
        if (s) gp_scenario_free(&s->sc);
        free(s);
        snprintf(err, errlen, "simulator: out of memory");
        return -1;
    }
    gp_scenario *sc = &s->sc;
    if (gp_scenario_validate(sc, err, errlen) < 0) goto fail;
    s->spec = sc->spec;
    s->cap_w = sc->power_limit_w > 0 ? sc->power_limit_w : s->spec->tdp_w;
    if (start_ns != 0)
        s->origin = start_ns;
    else if (sc->start_now)
        s->origin = wall_ns();
    else if (sc->start_epoch_ns)
        s->origin = sc->start_epoch_ns;
    else
        s->origin = GP_SIM_EPOCH_NS;
    s->last_abs = s->origin;
    s->next_pid = 1000;

    s->gpus = calloc((size_t)sc->n_gpus, sizeof *s->gpus);
    s->jobs = calloc((size_t)(sc->n_jobs ? sc->n_jobs : 1), sizeof *s->jobs);
    if (!s->gpus || !s->jobs) {
        snprintf(err, errlen, "simulator: out of memory");
        goto fail;
    }
    s->n_jobs = sc->n_jobs;
    for (int g = 0; g < sc->n_gpus; g++) {
        sim_gpu *G = &s->gpus[g];
        G->index = g;
        gp_sim_uuid(sc->node_name, g, G->uuid, sizeof G->uuid);
        sim_rng_seed(&G->rng, sc->seed * 1000003ULL + (uint64_t)g * 7919ULL + 17);
        /* real counters never start at zero */
        G->energy_mj = 1.0e6 * (double)(1 + (sim_hash(G->uuid, 0) % 100000));
        G->temp_c = 28 + 0.065 * s->spec->idle_w;
    }
    for (int i = 0; i < sc->n_jobs; i++) {
        gp_scenario_job *c = &sc->jobs[i];
        for (int r = 0; r < c->n_gpus; r++) {
            sim_gpu *G = &s->gpus[c->gpus[r]];
            int *nj = realloc(G->jobs, (size_t)(G->n_jobs + 1) * sizeof *nj);
            int *nr = nj ? realloc(G->rank, (size_t)(G->n_jobs + 1) * sizeof *nr) : NULL;
            if (nj) G->jobs = nj;
            if (!nj || !nr) {
                snprintf(err, errlen, "simulator: out of memory");
                goto fail;
            }
            G->rank = nr;
            G->jobs[G->n_jobs] = i;
            G->rank[G->n_jobs] = r;
            G->n_jobs++;
        }
    }
    for (int i = 0; i < sc->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        j->cfg = &sc->jobs[i];
        j->idx = i;
        j->sim = s;
        j->pid = 1000 + (int64_t)i * 100;
        sim_rng_seed(&j->rng, sim_hash(j->cfg->id, sc->seed ^ 0xa5a5a5a5ULL));
        sim_rng_seed(&j->rank_rng, sim_hash(j->cfg->id, sc->seed ^ 0x5a5a5a5aULL));
        j->co = calloc((size_t)(sc->n_jobs ? sc->n_jobs : 1), sizeof *j->co);
        if (!j->co) {
            snprintf(err, errlen, "simulator: out of memory");
            goto fail;
        }
        for (int k = 0; k < sc->n_jobs; k++)
            if (k != i && jobs_share_gpu(j->cfg, &sc->jobs[k])) j->co[j->n_co++] = k;
        if (sim_work_init(s, j, err, errlen) < 0) goto fail;
    }
    *out = s;
    return 0;
fail:
    gp_sim_close(s);
    return -1;
}

void gp_sim_close(gp_sim *s) {
    if (!s) return;
    sim_node_free(s);
    for (int i = 0; i < s->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        sim_work_free(j);
        free(j->segs);
        for (size_t e = j->ev_head; e < j->ev_n; e++)
            free(j->evs[e].line);
        free(j->evs);
        free(j->co);
    }
    if (s->gpus)
        for (int g = 0; g < s->sc.n_gpus; g++) {
            free(s->gpus[g].jobs);
            free(s->gpus[g].rank);
        }
    free(s->gpus);
    free(s->jobs);
    gp_scenario_free(&s->sc);
    free(s);
}

int64_t gp_sim_start_ns(const gp_sim *s) {
    return s->origin;
}
int64_t gp_sim_end_ns(const gp_sim *s) {
    return s->origin + s->sc.duration_ns;
}
int64_t gp_sim_now_ns(const gp_sim *s) {
    return s->last_abs;
}
size_t gp_sim_n_devices(const gp_sim *s) {
    return (size_t)s->sc.n_gpus;
}

void gp_sim_devices(const gp_sim *s, gp_device *out, size_t cap, size_t *n) {
    size_t k = 0;
    for (int g = 0; g < s->sc.n_gpus && k < cap; g++, k++) {
        gp_device *d = &out[k];
        memset(d, 0, sizeof *d);
        snprintf(d->uuid, sizeof d->uuid, "%s", s->gpus[g].uuid);
        d->index = g;
        snprintf(d->name, sizeof d->name, "NVIDIA %s (simulated)", s->spec->model);
        snprintf(d->host, sizeof d->host, "%s", s->sc.node_name);
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "00000000:%02X:%02X.0", 0x10 + (g / 32) % 200,
                 g % 32);
        d->memory_total_bytes = s->spec->memory_bytes;
        d->mig_mode = 0;
        d->spec = s->spec;
    }
    *n = k;
}

/* ---------------------------------------------------------------- sampling */

static void integrate(sim_job *j, int64_t a, int64_t b) {
    j->a_util = j->a_sm = j->a_occ = j->a_tensor = j->a_dram = j->a_fp16 = j->a_fp32 = 0;
    j->a_pcie_rx = j->a_pcie_tx = j->a_nvl = 0;
    j->r_util = j->r_sm = j->r_occ = j->r_tensor = j->r_dram = j->r_fp16 = j->r_fp32 = 0;
    j->mem_now = 0;
    j->proc_now = 0;
    for (size_t k = j->seg_head; k < j->seg_n; k++) {
        const sim_seg *g = &j->segs[k];
        if (g->t1 <= a) continue;
        if (g->t0 >= b) break;
        double ov = (double)((g->t1 < b ? g->t1 : b) - (g->t0 > a ? g->t0 : a)) / 1e9;
        j->a_util += ov * g->util;
        j->a_sm += ov * g->sm;
        j->a_occ += ov * g->occ;
        j->a_tensor += ov * g->tensor;
        j->a_dram += ov * g->dram;
        j->a_fp16 += ov * g->fp16;
        j->a_fp32 += ov * g->fp32;
        j->a_pcie_rx += ov * g->pcie_rx_bps;
        j->a_pcie_tx += ov * g->pcie_tx_bps;
        j->a_nvl += ov * g->nvl_bps;
        if (j->cfg->straggler_rank >= 0) { /* the straggler rank's GPU sees alt segments */
            j->r_util += ov * (g->alt ? g->alt_util : g->util);
            j->r_sm += ov * (g->alt ? g->alt_sm : g->sm);
            j->r_occ += ov * (g->alt ? g->alt_occ : g->occ);
            j->r_tensor += ov * (g->alt ? g->alt_tensor : g->tensor);
            j->r_dram += ov * (g->alt ? g->alt_dram : g->dram);
            j->r_fp16 += ov * (g->alt ? g->alt_fp16 : g->fp16);
            j->r_fp32 += ov * (g->alt ? g->alt_fp32 : g->fp32);
        }
        if (g->proc && !j->prev_proc) j->proc_since = g->t0;
        j->prev_proc = g->proc;
        if (g->t0 < b && g->t1 >= b) { /* the segment running at the end of the interval */
            j->mem_now = g->mem_frac;
            j->proc_now = g->proc;
        }
    }
    while (j->seg_head < j->seg_n && j->segs[j->seg_head].t1 <= b)
        j->seg_head++;
}

double sim_cap_w(const gp_sim *s, int64_t t) {
    const gp_scenario *sc = &s->sc;
    if (t < sc->power_limit_from_ns ||
        (sc->power_limit_until_ns >= 0 && t >= sc->power_limit_until_ns))
        return s->spec->tdp_w;
    return s->cap_w;
}

static double clamp01(double x) {
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

/* How late a GPU's sample taken at now_ns is stamped, in [0, sample_jitter): a hash of
 * the seed, the GPU and the time (splitmix64), so a run repeats and a device's samples
 * stay in order while the jitter is under the sampling interval. Real pollers stamp
 * samples nanoseconds apart from the ideal grid; 0 without sample_jitter. */
static int64_t sample_late_ns(const gp_sim *s, int g, int64_t now_ns) {
    if (s->sc.sample_jitter_ns <= 0) return 0;
    uint64_t z = s->sc.seed ^ ((uint64_t)g * 0x9E3779B97F4A7C15ull) ^ (uint64_t)now_ns;
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (int64_t)(z % (uint64_t)s->sc.sample_jitter_ns);
}

/* Multiplicative noise for a ratio strictly between idle and saturated. */
static double jitter(sim_rng *r, double x, double rel) {
    if (x <= 0.02 || x >= 0.98) return x;
    return clamp01(x * (1 + rel * sim_rng_normal(r)));
}

static double mem_clock_mhz(const char *model) {
    if (!strncmp(model, "H100", 4) || !strncmp(model, "H200", 4)) return 2619;
    if (!strncmp(model, "A100", 4)) return 1593;
    if (!strncmp(model, "B200", 4)) return 3996;
    if (!strncmp(model, "V100", 4)) return 877;
    return -1;
}

int gp_sim_sample(gp_sim *s, int64_t now_ns, gp_sample *out, size_t cap, size_t *n) {
    *n = 0;
    int64_t rel = now_ns - s->origin;
    if (now_ns < s->last_abs) return -1;
    int64_t a = s->last;
    double dt = (double)(rel - a) / 1e9;
    for (int i = 0; i < s->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        if (rel > a) {
            sim_work_advance(s, j, rel);
            integrate(j, a, rel);
        }
        /* A process that (re)appears is a new incarnation with PIDs of its own. */
        if (j->proc_now && !j->live) {
            j->pid_base = s->next_pid;
            s->next_pid += j->cfg->n_gpus;
            j->live_since = j->proc_since;
        }
        j->live = j->proc_now;
    }
    const gp_gpu_spec *sp = s->spec;
    double total = (double)sp->memory_bytes;
    double mclk = mem_clock_mhz(sp->model);
    for (int g = 0; g < s->sc.n_gpus; g++) {
        sim_gpu *G = &s->gpus[g];
        double util = 0, sm = 0, occ = 0, ten = 0, dram = 0, f16 = 0, f32 = 0, mem = 0;
        double rx = 0, tx = 0, nvl = 0;
        if (dt > 0) {
            for (int k = 0; k < G->n_jobs; k++) {
                const sim_job *j = &s->jobs[G->jobs[k]];
                if (j->cfg->straggler_rank >= 0 && G->rank[k] == j->cfg->straggler_rank) {
                    util += j->r_util / dt;
                    sm += j->r_sm / dt;
                    occ += j->r_occ / dt;
                    ten += j->r_tensor / dt;
                    dram += j->r_dram / dt;
                    f16 += j->r_fp16 / dt;
                    f32 += j->r_fp32 / dt;
                } else {
                    util += j->a_util / dt;
                    sm += j->a_sm / dt;
                    occ += j->a_occ / dt;
                    ten += j->a_tensor / dt;
                    dram += j->a_dram / dt;
                    f16 += j->a_fp16 / dt;
                    f32 += j->a_fp32 / dt;
                }
                rx += j->a_pcie_rx;
                tx += j->a_pcie_tx;
                nvl += j->a_nvl;
                mem += j->mem_now;
            }
        } else {
            for (int k = 0; k < G->n_jobs; k++)
                mem += s->jobs[G->jobs[k]].mem_now;
        }
        util = jitter(&G->rng, clamp01(util), 0.01);
        sm = jitter(&G->rng, clamp01(sm), 0.02);
        occ = jitter(&G->rng, clamp01(occ), 0.02);
        ten = jitter(&G->rng, clamp01(ten), 0.02);
        dram = jitter(&G->rng, clamp01(dram), 0.02);
        f16 = clamp01(f16);
        f32 = clamp01(f32);
        mem = clamp01(mem);

        /* power: idle + activity, capped at TDP (SW power cap throttles the clock) */
        double act = 0.10 * util + 0.45 * sm + 0.30 * ten + 0.25 * dram;
        double want = sp->idle_w + (sp->tdp_w - sp->idle_w) * act;
        want += (sp->tdp_w - sp->idle_w) * 0.004 * sim_rng_normal(&G->rng);
        double p = want < sp->idle_w ? sp->idle_w : want;
        uint64_t thr = 0;
        double clk = util > 0.01 ? sp->max_sm_clock_mhz : 0.35 * sp->max_sm_clock_mhz;
        double cap_now = sim_cap_w(s, a); /* the cap over the interval [a, rel) */
        if (want > cap_now) {
            p = cap_now;
            thr = 0x4; /* nvmlClocksThrottleReasonSwPowerCap */
            clk *= (cap_now - sp->idle_w) / (want - sp->idle_w);
        }
        /* round power to mW so that the energy counter is exactly its integral */
        p = round(p * 1000) / 1000;
        if (dt > 0) {
            G->energy_mj += p * dt * 1000;
            double target = 28 + 0.065 * p;
            G->temp_c += (target - G->temp_c) * (1 - exp(-dt / 60.0));
        }
        G->pcie_rx_f += rx;
        G->pcie_tx_f += tx;
        G->nvl_f += nvl;
        uint64_t drx = (uint64_t)G->pcie_rx_f, dtx = (uint64_t)G->pcie_tx_f,
                 dnv = (uint64_t)G->nvl_f;
        G->pcie_rx += drx;
        G->pcie_tx += dtx;
        G->nvl_rx += dnv;
        G->nvl_tx += dnv;
        G->pcie_rx_f -= (double)drx;
        G->pcie_tx_f -= (double)dtx;
        G->nvl_f -= (double)dnv;

        if ((size_t)g >= cap) continue;
        gp_sample *x = &out[*n];
        memset(x, 0, sizeof *x);
        snprintf(x->uuid, sizeof x->uuid, "%s", G->uuid);
        x->ts_ns = now_ns + sample_late_ns(s, g, now_ns);
        gp_set_d(x, GP_F_GPU_UTIL, &x->gpu_util, util);
        gp_set_d(x, GP_F_MEM_UTIL, &x->mem_util, clamp01(dram * 0.9));
        if (s->sc.profiling) {
            gp_set_d(x, GP_F_SM_ACTIVE, &x->sm_active, sm);
            gp_set_d(x, GP_F_SM_OCCUPANCY, &x->sm_occupancy, occ);
            gp_set_d(x, GP_F_TENSOR_ACTIVE, &x->tensor_active, ten);
            gp_set_d(x, GP_F_DRAM_ACTIVE, &x->dram_active, dram);
            gp_set_d(x, GP_F_FP16_ACTIVE, &x->fp16_active, f16);
            gp_set_d(x, GP_F_FP32_ACTIVE, &x->fp32_active, f32);
            gp_set_d(x, GP_F_FP64_ACTIVE, &x->fp64_active, 0);
        }
        x->mem_total_bytes = sp->memory_bytes;
        x->mem_used_bytes = (uint64_t)(mem * total);
        x->valid |= GP_F_MEM_USED | GP_F_MEM_TOTAL;
        gp_set_d(x, GP_F_POWER, &x->power_w, p);
        x->energy_mj = (uint64_t)llround(G->energy_mj);
        x->valid |= GP_F_ENERGY;
        gp_set_d(x, GP_F_SM_CLOCK, &x->sm_clock_mhz, round(clk));
        if (mclk > 0) gp_set_d(x, GP_F_MEM_CLOCK, &x->mem_clock_mhz, mclk);
        x->pcie_rx_bytes = G->pcie_rx;
        x->pcie_tx_bytes = G->pcie_tx;
        x->valid |= GP_F_PCIE_RX | GP_F_PCIE_TX;
        if (sp->nvlink_bytes_s > 0) {
            x->nvlink_rx_bytes = G->nvl_rx;
            x->nvlink_tx_bytes = G->nvl_tx;
            x->valid |= GP_F_NVLINK_RX | GP_F_NVLINK_TX;
        }
        gp_set_d(x, GP_F_TEMP, &x->temp_c, round(G->temp_c));
        x->xid = 0; /* the simulator knows: no error unless a job failed with one */
        for (int k = 0; k < G->n_jobs && dt > 0; k++) {
            const sim_job *j = &s->jobs[G->jobs[k]];
            for (int f = 0; f < j->n_fail; f++)
                if (j->fail_t[f] > a && j->fail_t[f] <= rel && j->cfg->xid_on_restart)
                    x->xid = j->cfg->xid_on_restart;
        }
        x->valid |= GP_F_XID;
        x->throttle_reasons = thr;
        x->valid |= GP_F_THROTTLE;
        (*n)++;
    }
    if (rel > a) s->last = rel;
    s->last_abs = now_ns;
    if (s->node) sim_node_update(s);
    s->last_dt = dt > 0 ? dt : 0;
    return 0;
}

int gp_sim_processes(gp_sim *s, gp_proc_sample *out, size_t cap, size_t *n) {
    *n = 0;
    double dt = s->last_dt;
    for (int g = 0; g < s->sc.n_gpus; g++) {
        const sim_gpu *G = &s->gpus[g];
        for (int k = 0; k < G->n_jobs; k++) {
            const sim_job *j = &s->jobs[G->jobs[k]];
            if (!j->proc_now) continue;
            if (*n >= cap) return 0;
            gp_proc_sample *p = &out[(*n)++];
            memset(p, 0, sizeof *p);
            snprintf(p->uuid, sizeof p->uuid, "%s", G->uuid);
            p->ts_ns = s->last_abs;
            p->pid = j->pid_base + G->rank[k];
            p->mem_bytes = (uint64_t)((double)j->mem_now * (double)s->spec->memory_bytes);
            p->valid = GP_P_MEM;
            /* the fraction of the interval this process had kernels running (NVML's
             * per-process smUtil) */
            double busy = j->cfg->straggler_rank >= 0 && G->rank[k] == j->cfg->straggler_rank
                              ? j->r_util
                              : j->a_util;
            p->sm_share = dt > 0 ? clamp01(busy / dt) : 0;
            p->valid |= GP_P_SM_SHARE;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- events */

static int ev_cmp(const void *pa, const void *pb) {
    const sim_ev *a = pa, *b = pb;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

int gp_sim_drain_events(gp_sim *s, int64_t now_ns, gp_line_sink sink, void *ctx) {
    int64_t rel = now_ns - s->origin;
    size_t total = 0;
    for (int i = 0; i < s->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        sim_work_advance(s, j, rel);
        for (size_t e = j->ev_head; e < j->ev_n && j->evs[e].ts <= now_ns; e++)
            total++;
    }
    if (!total) return 0;
    sim_ev *all = malloc(total * sizeof *all);
    if (!all) return -1;
    size_t k = 0;
    for (int i = 0; i < s->n_jobs; i++) {
        sim_job *j = &s->jobs[i];
        while (j->ev_head < j->ev_n && j->evs[j->ev_head].ts <= now_ns)
            all[k++] = j->evs[j->ev_head++];
    }
    qsort(all, k, sizeof *all, ev_cmp);
    for (size_t e = 0; e < k; e++) {
        if (sink) sink(ctx, all[e].line, strlen(all[e].line));
        free(all[e].line);
    }
    free(all);
    return (int)k;
}

/* ---------------------------------------------------------------- truth */

int gp_sim_n_jobs(const gp_sim *s) {
    return s->n_jobs;
}

void gp_sim_job_truth_at(const gp_sim *s, int i, gp_sim_truth *out) {
    const sim_job *j = &s->jobs[i];
    *out = j->truth;
    snprintf(out->job_id, sizeof out->job_id, "%s", j->cfg->id);
    out->kind = j->cfg->kind;
    out->n_gpus = j->cfg->n_gpus;
    out->queue_s = (double)(j->cfg->start_ns - j->cfg->submit_ns) / 1e9;
}

int gp_sim_job_truth(const gp_sim *s, const char *job_id, gp_sim_truth *out) {
    for (int i = 0; i < s->n_jobs; i++)
        if (!strcmp(s->jobs[i].cfg->id, job_id)) {
            gp_sim_job_truth_at(s, i, out);
            return 0;
        }
    return -1;
}

/* ---------------------------------------------------------------- the backend */

static int src_open(const char *arg, const gp_source_opts *opts, void **state, char *err,
                    size_t errlen) {
    if (!arg || !*arg) {
        snprintf(err, errlen, "source 'sim': expected sim:SCENARIO_FILE (see examples/scenarios)");
        return -1;
    }
    gp_scenario sc;
    if (gp_scenario_load(arg, &sc, err, errlen) < 0) return -1;
    gp_sim *s;
    int rc = gp_sim_open(&sc, opts ? opts->start_ns : 0, &s, err, errlen);
    gp_scenario_free(&sc);
    if (rc < 0) return -1;
    /* As a source the simulator is a node: the agent reads its processes and job map.
     * GOODPUT_SIM_NODE_ROOT puts them where a test can point another reader (the test
     * NVML library's agent: --proc-root, --jobmap-dir); default a fresh temp dir. */
    const char *root = getenv("GOODPUT_SIM_NODE_ROOT");
    if (gp_sim_expose(s, root && *root ? root : NULL, err, errlen) != 0) {
        gp_sim_close(s);
        return -1;
    }
    *state = s;
    return 0;
}

static void src_node_paths(void *st, const char **proc_root, const char **jobmap_dir) {
    gp_sim_node_paths(st, proc_root, jobmap_dir);
}

static int src_list(void *st, gp_device *out, size_t cap, size_t *n, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    gp_sim_devices(st, out, cap, n);
    return 0;
}

static int src_sample(void *st, int64_t now_ns, gp_sample *out, size_t cap, size_t *n, char *err,
                      size_t errlen) {
    if (gp_sim_sample(st, now_ns, out, cap, n) < 0) {
        snprintf(err, errlen, "sim: sample time went backwards");
        return -1;
    }
    return 0;
}

static int src_procs(void *st, gp_proc_sample *out, size_t cap, size_t *n, char *err,
                     size_t errlen) {
    (void)err;
    (void)errlen;
    return gp_sim_processes(st, out, cap, n);
}

static int src_drain(void *st, int64_t now_ns, gp_line_sink sink, void *ctx) {
    return gp_sim_drain_events(st, now_ns, sink, ctx);
}

static int64_t src_end(void *st) {
    return gp_sim_end_ns(st);
}
static int64_t src_now(void *st) {
    return gp_sim_now_ns(st);
}
static void src_close(void *st) {
    gp_sim_close(st);
}

const gp_source_ops gp_source_sim = {
    .name = "sim",
    .usage = "sim:FILE      a simulated node running the scenario in FILE (docs/scenarios.md)",
    .open = src_open,
    .list_devices = src_list,
    .sample = src_sample,
    .list_processes = src_procs,
    .drain_events = src_drain,
    .end_ns = src_end,
    .now_ns = src_now,
    .close = src_close,
    .node_paths = src_node_paths,
};
