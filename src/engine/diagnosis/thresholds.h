/* thresholds.h: the ONE table of diagnosis thresholds. Every value the classifier compares
 * against lives here with the reason for its value and where that reason comes from, so a
 * user can check (and docs/findings.md can quote) every number behind a finding.
 *
 * The table is constant; callers read values by id. Nothing here allocates. */
#ifndef GP_ENGINE_THRESHOLDS_H
#define GP_ENGINE_THRESHOLDS_H

typedef enum {
    GP_TH_NOT_READY_MIN_S,       /* allocated-to-first-progress time worth reporting */
    GP_TH_NOT_READY_SHARE,       /* ... or as a share of the allocated span */
    GP_TH_IDLE_UTIL,             /* a sample with gpu_util below this is idle */
    GP_TH_IDLE_SHARE,            /* share of ready time idle -> idle_allocated */
    GP_TH_DATA_WAIT_SHARE,       /* blocking data_wait share -> input_bound */
    GP_TH_CHECKPOINT_SHARE,      /* blocking checkpoint share -> checkpoint_bound */
    GP_TH_SM_ACTIVE_LOW,         /* DCGM: sm_active below this is ineffective use */
    GP_TH_SM_ACTIVE_HIGH,        /* sm_active at/above this: the SMs are busy */
    GP_TH_GPU_UTIL_BUSY,         /* kernels run most of the time */
    GP_TH_DRAM_ACTIVE_HIGH,      /* DCGM: dram_active peaks near 0.8 -> bandwidth bound */
    GP_TH_TENSOR_ACTIVE_HEALTHY, /* tensor pipes busy: healthy compute */
    GP_TH_COMM_SHARE,            /* time in communication phases -> communication_bound */
    GP_TH_NVLINK_PEAK_SHARE,     /* NVLink/PCIe rate as a share of peak */
    GP_TH_UNDER_UTIL,            /* ICSE'24: util <= 50% ... */
    GP_TH_UNDER_MEM,             /* ... and memory <= 50% -> under_batched */
    GP_TH_CAPACITY_MEM,          /* ... and memory > 80% -> memory_capacity */
    GP_TH_THROTTLE_SHARE,        /* share of time with slowdown clock reasons */
    GP_TH_XID_COUNT,             /* XID errors seen */
    GP_TH_STRAGGLER_Z,           /* robust z-score of a worker vs its peers */
    GP_TH_STRAGGLER_RATIO,       /* ... and slower than the peer median by this factor */
    GP_TH_STRAGGLER_WINDOWS,     /* ... for this many consecutive windows */
    GP_TH_INTERFERENCE_RATIO,    /* throughput shared / alone below this */
    GP_TH_SCALE_EFFICIENCY,      /* (thr_N/thr_M)/(N/M) below this -> scale_inefficient */
    GP_TH_QUEUE_WAIT_S,          /* a job waited at least this long ... */
    GP_TH_HARVEST_GAP_S,         /* idle gap long enough to lend the GPU out */
    GP_TH_HARVEST_SHARE,         /* share of allocated time in such gaps */
    GP_TH_STEP_OUTLIER_MAD,      /* ideal step time: drop steps beyond this many MADs */
    GP_TH_SLO_ATTAINMENT,        /* inference: share of requests meeting every SLO set */
    GP_TH_MINOR_SHARE,           /* a loss under a class's threshold but at least this
                                  * share of the job's time: a minor finding */
    GP_TH__COUNT
} gp_threshold_id;

typedef struct gp_threshold {
    gp_threshold_id id;
    const char *name; /* stable key, used in evidence and docs */
    double value;
    const char *op; /* how a metric compares to trigger: "<", ">=", ... */
    const char *reason;
    const char *source;
} gp_threshold;

const gp_threshold *gp_threshold_table(int *n);
const gp_threshold *gp_threshold_get(gp_threshold_id id);
double gp_th(gp_threshold_id id); /* shorthand for gp_threshold_get(id)->value */

#endif
