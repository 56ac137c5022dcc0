/* test_sim_physics.c: the simulator's signals obey the physics they claim: energy is the
 * integral of power, power stays within [idle, TDP], decode is memory bound, a starved
 * trainer's utilisation gaps are its data waits, all-reduce keeps gpu_util high while SMs
 * idle, shared GPUs slow jobs down, restarts redo steps, and the same seed gives the same
 * output. Expected values come from the spec table and the scenario, not from the code. */
#include "testutil.h"

#include <time.h>

#include "sim/scenario.h"
#include "sim/sim.h"

#define NS 1000000000LL

/* ---------------------------------------------------------------- a small harness */

typedef struct run {
    int n_gpus;
    size_t n_samples; /* per GPU */
    gp_sample *s;     /* [sample][gpu] */
    char *events;     /* all lines, '\n' separated */
    size_t ev_len, ev_cap;
    int64_t start;
    gp_sim_truth truth[16];
    int n_jobs;
} run;

static void sink(void *ctx, const char *line, size_t len) {
    run *r = ctx;
    if (r->ev_len + len + 2 > r->ev_cap) {
        r->ev_cap = (r->ev_cap + len + 2) * 2;
        r->events = realloc(r->events, r->ev_cap);
        assert_non_null(r->events);
    }
    memcpy(r->events + r->ev_len, line, len);
    r->ev_len += len;
    r->events[r->ev_len++] = '\n';
    r->events[r->ev_len] = 0;
}

/* Runs the scenario text with a fixed interval (or a varying one when vary). */
static run simulate(const char *text, int64_t interval, int vary) {
    run r;
    memset(&r, 0, sizeof r);
    gp_scenario sc;
    char err[512];
    if (gp_scenario_parse_string(text, "test.conf", &sc, err, sizeof err) < 0) fail_msg("%s", err);
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    r.n_gpus = sc.n_gpus;
    gp_scenario_free(&sc);
    r.start = gp_sim_start_ns(sim);
    int64_t end = gp_sim_end_ns(sim);
    size_t cap = (size_t)((end - r.start) / (interval / 2) + 2);
    r.s = calloc(cap * (size_t)r.n_gpus, sizeof *r.s);
    assert_non_null(r.s);
    gp_sim_drain_events(sim, r.start, sink, &r);
    int64_t t = r.start;
    for (int k = 0; t < end; k++) {
        int64_t step = vary ? interval / 2 + (k % 3) * interval / 2 : interval;
        t = t + step > end ? end : t + step;
        size_t n;
        assert_int_equal(
            gp_sim_sample(sim, t, r.s + r.n_samples * (size_t)r.n_gpus, (size_t)r.n_gpus, &n), 0);
        assert_int_equal(n, r.n_gpus);
        r.n_samples++;
        gp_sim_drain_events(sim, t, sink, &r);
    }
    r.n_jobs = gp_sim_n_jobs(sim);
    for (int i = 0; i < r.n_jobs && i < 16; i++)
        gp_sim_job_truth_at(sim, i, &r.truth[i]);
    gp_sim_close(sim);
    return r;
}

static void run_free(run *r) {
    free(r->s);
    free(r->events);
}

static const gp_sample *S(const run *r, size_t k, int g) {
    return &r->s[k * r->n_gpus + g];
}

static int64_t key_int(const char *line, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    if (!p) return -1;
    return strtoll(p + strlen(pat), NULL, 10);
}

/* ---------------------------------------------------------------- energy and power */

static const char *MIXED = "[node]\nname = t\ngpus = 3\nmodel = H100-SXM\nseed = 9\n"
                           "duration = 10m\n"
                           "[job tr]\nkind = training\ngpus = 0\ninit = 20s\n"
                           "checkpoint_every = 200 ; checkpoint_time = 5s\n"
                           "[job inf]\nkind = inference\ngpus = 1\nrate = 4\n"
                           "[job late]\nkind = not_ready\ngpus = 2\nready_after = 3m\n";

static void test_energy_is_integral_of_power(void **st) {
    (void)st;
    run r = simulate(MIXED, NS, 1);
    const gp_gpu_spec *sp = gp_spec_lookup("H100-SXM");
    int saw_busy = 0;
    for (int g = 0; g < r.n_gpus; g++) {
        int64_t prev_t = r.start;
        uint64_t prev_e = 0;
        double integral = 0;
        for (size_t k = 0; k < r.n_samples; k++) {
            const gp_sample *x = S(&r, k, g);
            assert_true(gp_has(x->valid, GP_F_POWER | GP_F_ENERGY));
            assert_true(x->power_w >= sp->idle_w - 1e-9);
            assert_true(x->power_w <= sp->tdp_w + 1e-9);
            if (x->power_w > 0.6 * sp->tdp_w) saw_busy = 1;
            double dt = (double)(x->ts_ns - prev_t) / 1e9;
            if (k > 0) {
                assert_true(x->energy_mj >= prev_e); /* monotonic */
                integral += x->power_w * dt * 1000;
                double delta = (double)(x->energy_mj - S(&r, 0, g)->energy_mj);
                /* the counter is the integral of the reported power, rounded to 1 mJ */
                assert_near(delta, integral, 1.0 + 1e-9 * integral);
            }
            prev_e = x->energy_mj;
            prev_t = x->ts_ns;
        }
    }
    assert_true(saw_busy); /* the trainer does draw real power */
    run_free(&r);
}

/* ---------------------------------------------------------------- decode is memory bound */

static void test_decode_memory_bound(void **st) {
    (void)st;
    run r = simulate(MIXED, NS, 0);
    double dram = 0, ten = 0, util = 0;
    int n = 0;
    for (size_t k = 0; k < r.n_samples; k++) {
        const gp_sample *x = S(&r, k, 1);
        util += x->gpu_util;
        if (x->gpu_util < 0.9) continue;
        dram += x->dram_active;
        ten += x->tensor_active;
        n++;
    }
    assert_true(n > (int)r.n_samples / 2); /* 4 req/s keeps the server busy */
    dram /= n;
    ten /= n;
    print_message("decode: dram_active %.3f tensor_active %.3f gpu_util %.3f\n", dram, ten,
                  util / (double)r.n_samples);
    assert_true(dram > 0.6);
    assert_true(ten < 0.15);
    /* request events are consistent: arrival <= first token <= end */
    int reqs = 0;
    for (char *l = r.events; l && *l;) {
        char *nl = strchr(l, '\n');
        *nl = 0;
        if (!strncmp(l, "request ", 8)) {
            int64_t a = key_int(l, "arrival"), f = key_int(l, "first_token"), e = key_int(l, "ts");
            assert_true(a >= r.start && a <= f && f <= e);
            assert_true(key_int(l, "output") >= 1);
            reqs++;
        }
        *nl = '\n';
        l = nl + 1;
    }
    assert_true(reqs > 1500); /* ~4/s over 10 minutes */
    assert_int_equal(reqs, r.truth[1].requests_done);
    run_free(&r);
}

/* ---------------------------------------------------------------- data starvation */

static void test_starved_gaps_match_data_wait(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 1\nduration = 6m\nseed = 4\n"
                       "[job starved]\nkind = training\ngpus = 0\nend = 5m\n"
                       "batch = 256 ; sample_cpu = 4ms ; loader_workers = 2\n"
                       "sample_bytes = 0 ; flops_per_step = 150T ; efficiency = 0.5\n";
    run r = simulate(text, NS, 0);
    int64_t end = r.start + 300 * NS;
    double idle = 0;
    int64_t prev = r.start;
    for (size_t k = 0; k < r.n_samples; k++) {
        const gp_sample *x = S(&r, k, 0);
        if (x->ts_ns <= end) idle += (1 - x->gpu_util) * (double)(x->ts_ns - prev) / 1e9;
        prev = x->ts_ns;
    }
    double waits = 0;
    int64_t begin = -1;
    int n_phase = 0;
    for (char *l = r.events; *l;) {
        char *nl = strchr(l, '\n');
        *nl = 0;
        if (strstr(l, "phase ") == l && strstr(l, "name=data_wait")) {
            if (strstr(l, "edge=begin"))
                begin = key_int(l, "ts");
            else {
                assert_true(begin >= 0);
                waits += (double)(key_int(l, "ts") - begin) / 1e9;
                begin = -1;
                n_phase++;
            }
        }
        *nl = '\n';
        l = nl + 1;
    }
    print_message("starved: idle GPU-s %.2f, data_wait phases %.2f s (%d)\n", idle, waits, n_phase);
    assert_true(n_phase > 100);
    assert_true(waits > 60); /* ~40% of 300 s */
    assert_near(idle, waits, 0.03 * waits);
    assert_near(r.truth[0].data_wait_s, waits, 0.001 * waits + 1e-6);
    run_free(&r);
}

/* ---------------------------------------------------------------- latency mirage */

static void test_allreduce_util_high_sm_low(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 5\nduration = 4m\nseed = 2\n"
                       "[job ar]\nkind = training\ngpus = 0-3\n"
                       "batch = 8 ; flops_per_step = 25T ; efficiency = 0.5\n"
                       "allreduce_bytes = 28GB ; overlap = 0.1\n"
                       "[job solo]\nkind = training\ngpus = 4\n";
    run r = simulate(text, NS, 0);
    double util = 0, sm = 0, ten = 0, sm_solo = 0;
    for (size_t k = 10; k < r.n_samples; k++) {
        for (int g = 0; g < 4; g++) {
            util += S(&r, k, g)->gpu_util;
            sm += S(&r, k, g)->sm_active;
            ten += S(&r, k, g)->tensor_active;
        }
        sm_solo += S(&r, k, 4)->sm_active;
    }
    double n = 4.0 * (double)(r.n_samples - 10);
    util /= n;
    sm /= n;
    ten /= n;
    sm_solo /= (double)(r.n_samples - 10);
    print_message("all-reduce: gpu_util %.3f sm_active %.3f tensor %.3f (solo sm %.3f)\n", util, sm,
                  ten, sm_solo);
    assert_true(util > 0.9);
    assert_true(sm < 0.5);
    assert_true(sm_solo > 0.7);
    /* the traffic really crosses NVLink: ring all-reduce moves 2(n-1)/n x 28 GB per step */
    const gp_sample *last = S(&r, r.n_samples - 1, 0);
    assert_true(gp_has(last->valid, GP_F_NVLINK_TX));
    double per_step = 2.0 * 3 / 4 * 28e9;
    double steps = (double)r.truth[0].steps_done;
    assert_near((double)last->nvlink_tx_bytes, per_step * steps, 0.02 * per_step * steps);
    run_free(&r);
}

/* ---------------------------------------------------------------- kernel profile (roofline) */

/* hbm_bytes and sm_fill set physics; the counters follow. mb: 25T FLOPs at efficiency 0.5
 * (0.0505 s of math) but 1072 GB of HBM traffic (0.4 s at 0.8 x 3.35 TB/s): memory bound,
 * dram 0.8, tensor 0.95 x 25T / (989.5T x 0.4) = 0.060, steps of 0.4 s. cb: the same math
 * with traffic 0.3 x the bandwidth over the math time: compute bound, dram 0.3, tensor
 * 0.475. sf: grids filling 40% of the SMs: sm_active 0.4 at gpu_util 1. */
static void test_roofline_profile(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 3\nmodel = H100-SXM\nduration = 2m\nseed = 4\n"
                       "[job mb]\nkind = training\ngpus = 0\nbatch = 8\nstep_noise = 0\n"
                       "flops_per_step = 25T ; efficiency = 0.5 ; hbm_bytes = 1.072e12\n"
                       "[job cb]\nkind = training\ngpus = 1\nbatch = 8\nstep_noise = 0\n"
                       "flops_per_step = 25T ; efficiency = 0.5 ; hbm_bytes = 5.0773e10\n"
                       "[job sf]\nkind = training\ngpus = 2\nbatch = 8\nsm_fill = 0.4\n";
    run r = simulate(text, NS, 0);
    double dram[3] = {0}, ten[3] = {0}, sm[3] = {0}, util[3] = {0};
    size_t n = 0;
    for (size_t k = 5; k < r.n_samples; k++, n++)
        for (int g = 0; g < 3; g++) {
            dram[g] += S(&r, k, g)->dram_active;
            ten[g] += S(&r, k, g)->tensor_active;
            sm[g] += S(&r, k, g)->sm_active;
            util[g] += S(&r, k, g)->gpu_util;
        }
    for (int g = 0; g < 3; g++) {
        dram[g] /= (double)n, ten[g] /= (double)n, sm[g] /= (double)n, util[g] /= (double)n;
        print_message("gpu %d: dram %.3f tensor %.3f sm %.3f util %.3f\n", g, dram[g], ten[g],
                      sm[g], util[g]);
    }
    assert_near(dram[0], 0.8, 0.03);
    assert_near(ten[0], 0.95 * 25e12 / (989.5e12 * 0.4), 0.02);
    /* the step lasts as long as its memory traffic: 120 s / (0.4 s + the 8-sample copy) */
    double copy = 8 * 602112 / gp_spec_lookup("H100-SXM")->pcie_bytes_s;
    assert_near((double)r.truth[0].steps_done, 120 / (0.4 + copy), 3);
    assert_near(dram[1], 0.3, 0.03);
    assert_near(ten[1], 0.95 * 0.5, 0.03);
    assert_near(sm[2], 0.4, 0.03);
    assert_true(util[2] > 0.95);
    run_free(&r);
}

/* ---------------------------------------------------------------- determinism */

static void test_same_seed_same_output(void **st) {
    (void)st;
    run a = simulate(MIXED, NS, 1), b = simulate(MIXED, NS, 1);
    assert_int_equal(a.n_samples, b.n_samples);
    assert_memory_equal(a.s, b.s, a.n_samples * (size_t)a.n_gpus * sizeof *a.s);
    assert_int_equal(a.ev_len, b.ev_len);
    assert_memory_equal(a.events, b.events, a.ev_len);
    char other[2048];
    snprintf(other, sizeof other, "%s", MIXED);
    char *seed = strstr(other, "seed = 9");
    seed[7] = '8';
    run c = simulate(other, NS, 1);
    assert_true(c.ev_len != a.ev_len || memcmp(c.events, a.events, a.ev_len) != 0);
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

/* ---------------------------------------------------------------- profiling = no */

static void test_no_profiling_leaves_fields_unknown(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 1\nmodel = RTX-4090\nprofiling = no\nduration = 1m\n"
                       "[job a]\nkind = training\ngpus = 0\nflops_per_step = 20T\n";
    run r = simulate(text, NS, 0);
    uint32_t prof = GP_F_SM_ACTIVE | GP_F_SM_OCCUPANCY | GP_F_TENSOR_ACTIVE | GP_F_DRAM_ACTIVE |
                    GP_F_FP16_ACTIVE | GP_F_FP32_ACTIVE | GP_F_FP64_ACTIVE;
    for (size_t k = 0; k < r.n_samples; k++) {
        const gp_sample *x = S(&r, k, 0);
        assert_int_equal(x->valid & prof, 0);
        assert_int_equal(x->valid & (GP_F_NVLINK_TX | GP_F_NVLINK_RX), 0); /* no NVLink */
        assert_true(gp_has(x->valid, GP_F_GPU_UTIL | GP_F_POWER | GP_F_MEM_USED));
    }
    assert_true(S(&r, r.n_samples - 1, 0)->gpu_util > 0.9);
    run_free(&r);
}

/* ---------------------------------------------------------------- restarts */

static void test_restart_redoes_steps(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 1\nduration = 5m\n"
                       "[job r]\nkind = training\ngpus = 0\nflops_per_step = 150T\n"
                       "checkpoint_every = 100 ; checkpoint_time = 2s\n"
                       "restart_at = 100s ; recovery = 10s ; restore_time = 5s ; init = 3s\n";
    run r = simulate(text, NS, 0);
    int64_t max_before = -1, restart_step = -1, first_after = -1, n_steps = 0;
    int64_t seen_max = 0, redone = 0;
    for (char *l = r.events; *l;) {
        char *nl = strchr(l, '\n');
        *nl = 0;
        if (!strncmp(l, "restart ", 8)) {
            restart_step = key_int(l, "step");
        } else if (!strncmp(l, "step ", 5)) {
            int64_t s = key_int(l, "step");
            n_steps++;
            if (restart_step < 0)
                max_before = s;
            else if (first_after < 0)
                first_after = s;
            if (s <= seen_max) redone++;
            if (s > seen_max) seen_max = s;
            assert_true(key_int(l, "start") < key_int(l, "ts"));
        }
        *nl = '\n';
        l = nl + 1;
    }
    print_message("restart: last step before %lld, resumed from %lld, redone %lld\n",
                  (long long)max_before, (long long)restart_step, (long long)redone);
    assert_true(restart_step > 0);
    assert_int_equal(restart_step % 100, 0); /* resumes from a checkpoint */
    assert_true(max_before > restart_step);  /* steps after it were lost */
    assert_int_equal(first_after, restart_step + 1);
    assert_int_equal(redone, max_before - restart_step); /* and are redone */
    assert_int_equal(r.truth[0].steps_redone, redone);
    assert_true(r.truth[0].wasted_s > 0);
    assert_near(r.truth[0].recovery_s, 10, 1e-6);
    assert_near(r.truth[0].restore_s, 5, 1e-6);
    assert_int_equal(r.truth[0].restarts, 1);
    run_free(&r);
}

/* ---------------------------------------------------------------- truth and sharing */

static void test_truth_partitions_allocation(void **st) {
    (void)st;
    gp_scenario sc;
    char err[512];
    if (gp_scenario_load("examples/scenarios/demo.conf", &sc, err, sizeof err) < 0)
        fail_msg("%s", err);
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    gp_sample buf[8];
    size_t n;
    double goodput[16];
    for (int64_t t = gp_sim_start_ns(sim); t < gp_sim_end_ns(sim);) {
        t += 5 * NS;
        gp_sim_sample(sim, t, buf, 8, &n);
        gp_sim_drain_events(sim, t, NULL, NULL);
    }
    gp_proc_sample procs[32];
    assert_int_equal(gp_sim_processes(sim, procs, 32, &n), 0);
    assert_true(n >= 6);
    for (size_t i = 0; i < n; i++) {
        assert_true(procs[i].job_id[0] == 0); /* owners are the agent's to find */
        assert_true(procs[i].pid > 0);
        assert_true(procs[i].sm_share >= 0 && procs[i].sm_share <= 1);
    }
    for (int i = 0; i < gp_sim_n_jobs(sim); i++) {
        gp_sim_truth t;
        gp_sim_job_truth_at(sim, i, &t);
        const gp_scenario_job *c = &sc.jobs[i];
        int64_t end = c->end_ns >= 0 ? c->end_ns : sc.duration_ns;
        double sum = t.not_ready_s + t.init_s + t.data_wait_s + t.checkpoint_s + t.restore_s +
                     t.recovery_s + t.wasted_s + t.productive_s + t.idle_s + t.other_s;
        /* A GPU shared with another job counts half while shared (alloc_split.h). */
        assert_true(t.allocated_s <= (double)(end - c->start_ns) / 1e9 + 1e-6);
        assert_true(t.allocated_s > 0);
        assert_near(sum, t.allocated_s, 1e-6);
        goodput[i] = t.productive_s / t.allocated_s;
    }
    /* healthy > all-reduce (failure) > starved > late, as the scenario intends */
    assert_true(goodput[0] > 0.9);
    assert_true(goodput[1] < 0.7 && goodput[1] > 0.4);
    assert_true(goodput[3] < goodput[0] - 0.05);
    /* late: a third of its held time is not ready (its first half hour shares a GPU with
     * the notebook, so that half hour counts half) */
    assert_true(goodput[4] < 0.7 && goodput[4] < goodput[0] - 0.2);
    gp_sim_close(sim);
    gp_scenario_free(&sc);
}

static void test_sharing_slows_both(void **st) {
    (void)st;
    const char *alone = "[node]\ngpus = 1\nduration = 5m\n"
                        "[job a]\nkind = training\ngpus = 0\n";
    const char *shared = "[node]\ngpus = 1\nduration = 5m\n"
                         "[job a]\nkind = training\ngpus = 0\n"
                         "[job b]\nkind = training\ngpus = 0\nmem = 20%\n";
    run r1 = simulate(alone, NS, 0), r2 = simulate(shared, NS, 0);
    double s1 = (double)r1.truth[0].steps_done, s2 = (double)r2.truth[0].steps_done;
    print_message("sharing: %g steps alone, %g shared (+%lld for b)\n", s1, s2,
                  (long long)r2.truth[1].steps_done);
    assert_true(s2 < 0.8 * s1);
    assert_true((double)r2.truth[1].steps_done < 0.8 * s1);
    for (size_t k = 0; k < r2.n_samples; k++) {
        assert_true(S(&r2, k, 0)->gpu_util <= 1.0);
        assert_true(S(&r2, k, 0)->mem_used_bytes <= S(&r2, k, 0)->mem_total_bytes);
    }
    run_free(&r1);
    run_free(&r2);
}

/* ---------------------------------------------------------------- cost at scale */

static void test_thousand_gpus_cheap(void **st) {
    (void)st;
    gp_scenario sc;
    gp_scenario_init(&sc);
    sc.n_gpus = 1000;
    sc.duration_ns = 60 * NS;
    char id[32];
    for (int i = 0; i < 125; i++) {
        snprintf(id, sizeof id, "job-%d", i);
        gp_scenario_job *j =
            gp_scenario_add_job(&sc, id, i % 5 == 4 ? GP_SJ_INFERENCE : GP_SJ_TRAINING);
        gp_scenario_job_set_gpu_range(j, i * 8, 8);
        j->allreduce_bytes = 2e9;
        j->loader_workers = 1 + i % 8;
    }
    char err[256];
    gp_sim *sim;
    if (gp_sim_open(&sc, 0, &sim, err, sizeof err) < 0) fail_msg("%s", err);
    gp_scenario_free(&sc);
    gp_sample *buf = malloc(1000 * sizeof *buf);
    assert_non_null(buf);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    size_t n, samples = 0;
    for (int64_t t = gp_sim_start_ns(sim) + NS; t <= gp_sim_end_ns(sim); t += NS) {
        gp_sim_sample(sim, t, buf, 1000, &n);
        gp_sim_drain_events(sim, t, NULL, NULL);
        assert_int_equal(n, 1000);
        samples++;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6) /
                (double)samples;
    print_message("1000 GPUs: %.3f ms per 1 s sample (events included)\n", ms);
    assert_true(ms < 100); /* generous: sanitizer builds on a busy machine */
    free(buf);
    gp_sim_close(sim);
}

/* ---------------------------------------------------------------- trace replay */

static void test_azure_trace_replay(void **st) {
    (void)st;
    char path[512];
    snprintf(path, sizeof path, "%s/requests/AzureLLMInferenceTrace_conv.csv", gp_test_data_dir());
    FILE *f = fopen(path, "r");
    if (!f) {
        print_message("skipped: %s not found\n", path);
        return;
    }
    /* the first rows, read here independently of the simulator's reader */
    char line[256];
    int p0 = 0, o0 = 0, rows_2min = 0;
    double t0 = -1;
    while (fgets(line, sizeof line, f)) {
        int h, m, ctx, gen;
        double sec;
        if (sscanf(line, "%*d-%*d-%*d %d:%d:%lf,%d,%d", &h, &m, &sec, &ctx, &gen) != 5) continue;
        double t = h * 3600 + m * 60 + sec;
        if (t0 < 0) {
            t0 = t;
            p0 = ctx;
            o0 = gen;
        }
        if (t - t0 < 120)
            rows_2min++;
        else
            break;
    }
    fclose(f);
    char text[1024];
    snprintf(text, sizeof text,
             "[node]\ngpus = 1\nduration = 3m\n[job s]\nkind = inference\ngpus = 0\n"
             "end = 3m\ntrace = %s\n",
             path);
    /* requests arriving in the first 2 minutes all finish within 3 minutes */
    run r = simulate(text, NS, 0);
    const char *first = strstr(r.events, "request ");
    assert_non_null(first);
    int64_t arrivals_2min = 0, first_arrival = INT64_MAX;
    for (char *l = r.events; *l;) {
        char *nl = strchr(l, '\n');
        *nl = 0;
        if (!strncmp(l, "request ", 8)) {
            int64_t a = key_int(l, "arrival");
            if (a < r.start + 120 * NS) arrivals_2min++;
            if (a < first_arrival) {
                first_arrival = a;
                assert_int_equal(key_int(l, "prompt"), p0);
                assert_int_equal(key_int(l, "output"), o0);
            }
        }
        *nl = '\n';
        l = nl + 1;
    }
    assert_true(first_arrival == r.start); /* the first row arrives when the job is ready */
    assert_int_equal(arrivals_2min, rows_2min);
    run_free(&r);
}

/* ---------------------------------------------------------------- power cap and XID */

static void test_power_cap_throttles_and_slows(void **st) {
    (void)st;
    const char *free_ = "[node]\ngpus = 1\nduration = 3m\n"
                        "[job a]\nkind = training\ngpus = 0\nefficiency = 0.8\n";
    const char *capped = "[node]\ngpus = 1\nduration = 3m\npower_limit = 350W\n"
                         "[job a]\nkind = training\ngpus = 0\nefficiency = 0.8\n";
    run r1 = simulate(free_, NS, 0), r2 = simulate(capped, NS, 0);
    const gp_gpu_spec *sp = gp_spec_lookup("H100-SXM");
    int throttled = 0, busy = 0;
    double p1 = 0;
    for (size_t k = 0; k < r2.n_samples; k++) {
        const gp_sample *x = S(&r2, k, 0), *y = S(&r1, k, 0);
        assert_true(x->power_w <= 350 + 1e-9);
        assert_true(y->power_w <= sp->tdp_w + 1e-9);
        assert_true(y->throttle_reasons == 0 || y->power_w >= sp->tdp_w - 1e-9);
        if (x->gpu_util > 0.9) {
            busy++;
            p1 += y->power_w;
            if (x->throttle_reasons & 0x4) throttled++;
            assert_true(x->sm_clock_mhz < sp->max_sm_clock_mhz);
        }
    }
    p1 /= busy;
    assert_true(busy > 100);
    assert_true(throttled > busy * 9 / 10);
    /* uncapped it draws p1; capped, the dynamic power it may use shrinks by
     * (350 - idle) / (p1 - idle), and so does its speed */
    double expect = (350 - sp->idle_w) / (p1 - sp->idle_w);
    double got = (double)r2.truth[0].steps_done / (double)r1.truth[0].steps_done;
    print_message("power cap: uncapped %.0f W, speed ratio %.3f (expected ~%.3f)\n", p1, got,
                  expect);
    assert_near(got, expect, 0.05);
    run_free(&r1);
    run_free(&r2);
}

/* power_limit_from / power_limit_until: the cap (and its throttle bit) holds only inside
 * the window; outside it the same job runs at full power, unthrottled. */
static void test_power_cap_window(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 1\nduration = 3m\npower_limit = 350W\n"
                       "power_limit_from = 60s\npower_limit_until = 90s\n"
                       "[job a]\nkind = training\ngpus = 0\nefficiency = 0.8\n";
    run r = simulate(text, NS, 0);
    int inside = 0, thr_in = 0, thr_out = 0;
    for (size_t k = 0; k < r.n_samples; k++) {
        const gp_sample *x = S(&r, k, 0);
        int64_t t = (int64_t)(k + 1) * NS; /* the sample at the end of second k + 1 */
        if (x->gpu_util < 0.9) continue;
        if (t > 60 * NS && t <= 90 * NS) {
            inside++;
            thr_in += (x->throttle_reasons & 0x4) != 0;
            assert_true(x->power_w <= 350 + 1e-9);
        } else if (t <= 59 * NS || t > 91 * NS) {
            thr_out += (x->throttle_reasons & 0x4) != 0;
        }
    }
    assert_true(inside >= 25);
    assert_true(thr_in >= inside - 1);
    assert_int_equal(thr_out, 0);
    run_free(&r);
    gp_scenario sc;
    char err[256];
    const char *bad = "[node]\npower_limit = 350W\npower_limit_from = 2m\n"
                      "power_limit_until = 1m\n[job a]\nkind = training\ngpus = 0\n";
    assert_int_equal(gp_scenario_parse_string(bad, "bad.conf", &sc, err, sizeof err), -1);
    assert_non_null(strstr(err, "power_limit_until"));
}

static void test_failure_reports_xid(void **st) {
    (void)st;
    const char *text = "[node]\ngpus = 3\nduration = 3m\n"
                       "[job a]\nkind = training\ngpus = 0-1\nrestart_at = 61500ms\n"
                       "xid_on_restart = 79 ; recovery = 10s\n"
                       "[job b]\nkind = training\ngpus = 2\n";
    run r = simulate(text, NS, 0);
    for (size_t k = 0; k < r.n_samples; k++)
        for (int g = 0; g < 3; g++) {
            const gp_sample *x = S(&r, k, g);
            assert_true(gp_has(x->valid, GP_F_XID));
            int64_t want = (g < 2 && x->ts_ns == r.start + 62 * NS) ? 79 : 0;
            assert_int_equal(x->xid, want);
        }
    run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_energy_is_integral_of_power),
        cmocka_unit_test(test_decode_memory_bound),
        cmocka_unit_test(test_starved_gaps_match_data_wait),
        cmocka_unit_test(test_allreduce_util_high_sm_low),
        cmocka_unit_test(test_roofline_profile),
        cmocka_unit_test(test_same_seed_same_output),
        cmocka_unit_test(test_no_profiling_leaves_fields_unknown),
        cmocka_unit_test(test_restart_redoes_steps),
        cmocka_unit_test(test_truth_partitions_allocation),
        cmocka_unit_test(test_sharing_slows_both),
        cmocka_unit_test(test_thousand_gpus_cheap),
        cmocka_unit_test(test_azure_trace_replay),
        cmocka_unit_test(test_power_cap_throttles_and_slows),
        cmocka_unit_test(test_power_cap_window),
        cmocka_unit_test(test_failure_reports_xid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
