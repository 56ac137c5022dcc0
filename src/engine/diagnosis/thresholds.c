/* thresholds.c: the diagnosis threshold table (see thresholds.h). Values are chosen to be
 * conservative: a finding must be worth a user's time, so borderline cases stay silent.
 * Where a value is our own judgement, the source says so. */
#include "engine/diagnosis/thresholds.h"

#include <stddef.h>

static const gp_threshold table[GP_TH__COUNT] = {
    {GP_TH_NOT_READY_MIN_S, "not_ready_s", 60, ">=",
     "Minutes of allocation before the first step are paid for but produce nothing; under a "
     "minute is ordinary process start-up.",
     "ml-goodput-measurement (Google) badput categories; our floor"},
    {GP_TH_NOT_READY_SHARE, "not_ready_share", 0.10, ">=",
     "A tenth of the allocation spent before first progress is worth fixing before allocation.",
     "our judgement"},
    {GP_TH_IDLE_UTIL, "idle_gpu_util", 0.05, "<",
     "Below 5% of the time with a kernel running, the GPU is doing nothing useful.",
     "NVML utilization.gpu definition"},
    {GP_TH_IDLE_SHARE, "idle_share", 0.20,
     ">=", "A fifth of ready time with allocated GPUs idle and no progress is waste, not jitter.",
     "our judgement"},
    {GP_TH_DATA_WAIT_SHARE, "data_wait_share", 0.10, ">=",
     "The training loop blocks on input for a tenth of its time: the GPU starves (ghost GPU).",
     "PyTorch performance tuning guide (DataLoader workers, pinned memory); our bound"},
    {GP_TH_CHECKPOINT_SHARE, "checkpoint_share", 0.08, ">=",
     "Blocking checkpoint saves take a notable share of time; asynchronous checkpointing "
     "removes most of it.",
     "PyTorch DCP async_save / ml-goodput-measurement checkpoint badput; our bound"},
    {GP_TH_SM_ACTIVE_LOW, "sm_active", 0.5, "<",
     "SM activity under 0.5 indicates ineffective use of the GPU.",
     "NVIDIA DCGM profiling metrics guidance (PROF_SM_ACTIVE)"},
    {GP_TH_SM_ACTIVE_HIGH, "sm_active_busy", 0.8,
     ">=", "SMs busy most of the time: the GPU itself is the bottleneck.",
     "NVIDIA DCGM profiling metrics guidance"},
    {GP_TH_GPU_UTIL_BUSY, "gpu_util_busy", 0.6, ">=",
     "A kernel runs most of the time; if the SMs are nevertheless idle, kernels are small or "
     "launch-bound.",
     "NVML utilization.gpu vs DCGM PROF_SM_ACTIVE"},
    {GP_TH_DRAM_ACTIVE_HIGH, "dram_active", 0.6, ">=",
     "DRAM activity peaks near 0.8 in practice; sustained 0.6 and above means memory bandwidth "
     "limits the kernels.",
     "NVIDIA DCGM profiling metrics guidance (PROF_DRAM_ACTIVE peaks near 0.8)"},
    {GP_TH_TENSOR_ACTIVE_HEALTHY, "tensor_active", 0.3,
     ">=", "Tensor pipes busy a third of the time is good for real training and prefill.",
     "NVIDIA DCGM profiling metrics guidance (PROF_PIPE_TENSOR_ACTIVE); our bound"},
    {GP_TH_COMM_SHARE, "comm_share", 0.15,
     ">=", "A sixth of step time waiting on collectives means communication is not overlapped.",
     "our judgement; NCCL/PyTorch DDP overlap guidance"},
    {GP_TH_NVLINK_PEAK_SHARE, "interconnect_peak_share", 0.25, ">=",
     "NVLink/PCIe moving data at a quarter of peak on average, with SMs not saturated: "
     "collectives run exposed at full link speed for a large part of each step.",
     "spec table peaks (datasheets); our bound"},
    {GP_TH_UNDER_UTIL, "under_util", 0.5,
     "<=", "Low-utilization DL jobs: GPU utilization at most 50%.",
     "Gao et al., An Empirical Study on Low GPU Utilization of Deep Learning Jobs, ICSE 2024"},
    {GP_TH_UNDER_MEM, "under_mem", 0.5,
     "<=", "... with memory at most 50% used: a larger batch fits (under-batched).",
     "Gao et al., ICSE 2024"},
    {GP_TH_CAPACITY_MEM, "capacity_mem", 0.8, ">",
     "... with memory over 80% used: memory capacity, not compute, limits the batch.",
     "Gao et al., ICSE 2024"},
    {GP_TH_THROTTLE_SHARE, "throttle_share", 0.10, ">=",
     "Clocks held down a tenth of the time cost real throughput. Counted: HW slowdown, SW/HW "
     "thermal slowdown, power brake; the SW power cap only when the SM clock is 15% or more "
     "under its maximum (busy GPUs touch the cap all the time at little cost).",
     "NVML clocks event reasons (nvmlClocksEventReason*)"},
    {GP_TH_XID_COUNT, "xid_count", 1,
     ">=", "Any XID error is a driver-reported GPU fault worth a look.",
     "NVIDIA XID errors documentation"},
    {GP_TH_STRAGGLER_Z, "straggler_z", 3.5,
     ">=", "Robust z-score (median/MAD) of 3.5 marks an outlier among peers.",
     "Iglewicz and Hoaglin, How to Detect and Handle Outliers, 1993"},
    {GP_TH_STRAGGLER_RATIO, "straggler_ratio", 1.25, ">=",
     "The worker is at least 25% slower than its peers' median, so synchronous training loses "
     "at least that much.",
     "our judgement; AntMan (OSDI 2020) straggler traces"},
    {GP_TH_STRAGGLER_WINDOWS, "straggler_windows", 2,
     ">=", "Persistent: the worker is slow in consecutive rolling windows, not one spike.",
     "our judgement"},
    {GP_TH_INTERFERENCE_RATIO, "interference_ratio", 0.85, "<",
     "Throughput while sharing the GPU is under 85% of the job's own throughput alone.",
     "our judgement; Gandiva/AntMan co-location studies"},
    {GP_TH_SCALE_EFFICIENCY, "scale_efficiency", 0.7, "<",
     "N GPUs deliver under 70% of N times the throughput of M GPUs.", "our default (configurable)"},
    {GP_TH_QUEUE_WAIT_S, "queue_wait_s", 300,
     ">=", "A job waiting five minutes while GPUs sit idle is a scheduling gap.", "our judgement"},
    {GP_TH_HARVEST_GAP_S, "harvest_gap_s", 300,
     ">=", "Idle gaps of five minutes or more are long enough to lend the GPU to preemptible work.",
     "our judgement; AntMan (OSDI 2020) opportunistic jobs"},
    {GP_TH_HARVEST_SHARE, "harvest_share", 0.15,
     ">=", "At least 15% of the allocation lies in such gaps.", "our judgement"},
    {GP_TH_STEP_OUTLIER_MAD, "step_outlier_mad", 3, ">",
     "Ideal step time: the median after dropping steps beyond 3 MADs (first steps, "
     "checkpoints).",
     "robust statistics (Hampel filter)"},
    {GP_TH_SLO_ATTAINMENT, "slo_attainment", 0.9, "<",
     "A service should meet its declared latency SLOs (TTFT, TPOT, end-to-end) for at least 90% "
     "of requests; below that, the GPU-time spent on late requests is not useful work.",
     "DistServe (OSDI 2024) and vLLM benchmark goodput: SLO attainment at a 90% target"},
    {GP_TH_MINOR_SHARE, "minor_share", 0.05, ">=",
     "A loss under its class's threshold that still takes a twentieth of the job's time is "
     "reported as a minor finding rather than hidden behind a healthy verdict.",
     "our judgement (issue 19: grey-zone losses)"},
};

const gp_threshold *gp_threshold_table(int *n) {
    if (n) *n = GP_TH__COUNT;
    return table;
}

const gp_threshold *gp_threshold_get(gp_threshold_id id) {
    return (id >= 0 && id < GP_TH__COUNT) ? &table[id] : NULL;
}

double gp_th(gp_threshold_id id) {
    const gp_threshold *t = gp_threshold_get(id);
    return t ? t->value : 0;
}
