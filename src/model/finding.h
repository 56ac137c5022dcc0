/* finding.h: the one vocabulary of diagnoses shared by live telemetry, profiler traces
 * and cluster traces (ARCHITECTURE.md, "Findings"). Plain data, no I/O. */
#ifndef GP_MODEL_FINDING_H
#define GP_MODEL_FINDING_H

#include <stdint.h>

typedef enum {
    GP_FC_NOT_READY,
    GP_FC_IDLE_ALLOCATED,
    GP_FC_INPUT_BOUND,
    GP_FC_HOST_BOUND,
    GP_FC_MEMORY_BOUND,
    GP_FC_COMMUNICATION_BOUND,
    GP_FC_COMPUTE_BOUND,
    GP_FC_CHECKPOINT_BOUND,
    GP_FC_STRAGGLER,
    GP_FC_INTERFERENCE,
    GP_FC_PIPELINE_BOTTLENECK,
    GP_FC_SCALE_INEFFICIENT,
    GP_FC_UNDER_BATCHED,
    GP_FC_MEMORY_CAPACITY,
    GP_FC_THROTTLED,
    GP_FC_GPU_ERRORS,
    GP_FC_SCHEDULING_GAP,
    GP_FC_HARVESTABLE,
    GP_FC_TOOL_BOUND,   /* workflows: model engines idle while workflows wait on tools */
    GP_FC_SERIAL_STEPS, /* workflows: independent steps run one after another */
    GP_FC_RETRY_WASTE,  /* workflows: model-call GPU time of failed or retried work */
    GP_FC__COUNT
} gp_finding_class;

typedef enum {
    GP_SCOPE_CLUSTER,
    GP_SCOPE_JOB,
    GP_SCOPE_DEVICE,
    GP_SCOPE_RANK,
    GP_SCOPE_STAGE
} gp_scope;

#define GP_EVIDENCE_MAX 6

/* "metric = value vs threshold (source)": the numbers a user can check. */
typedef struct gp_evidence {
    char metric[48];
    double value;
    char op[4]; /* "<", ">", ">=", "<=" : how value relates to threshold */
    double threshold;
    char source[48]; /* e.g. "nvml", "dcgm-exporter", "events", "kineto" */
} gp_evidence;

/* Badput buckets a finding can explain, indexed as gp_bucket in engine/accounting/goodput.h (slot
 * 0, productive, is never badput and stays 0). The engine checks the two agree. */
#define GP_FINDING_BUCKETS 9

/* Two numbers a finding never adds together (ARCHITECTURE.md, "Definitions"):
 *  - badput explained: GPU-seconds of the job's named badput buckets this finding
 *    explains (time the job paid for and did not turn into useful work). The engine
 *    clips them so a job's findings never explain more than each of its buckets
 *    (engine/diagnosis/finding_budget.h). wasted_gpu_s is their total, wasted_cost its price.
 *  - headroom: GPU-seconds a fix would recover from productive time (time already
 *    counted as useful, e.g. an all-reduce exposed inside each step), with the
 *    counterfactual that gives it in one sentence. */
typedef struct gp_finding {
    gp_finding_class cls;
    gp_scope scope;
    char scope_id[96]; /* job id, device uuid, rank, stage name, or cluster name */
    char job_id[96];   /* the job whose time it explains; "" none (cluster, trace) */
    int64_t t0_ns, t1_ns;
    double badput_gpu_s[GP_FINDING_BUCKETS]; /* by bucket; all < 0: not split (unknown) */
    double wasted_gpu_s;      /* badput explained, total of badput_gpu_s; < 0 unknown */
    double wasted_cost;       /* its price; < 0 unknown (no price) */
    double headroom_frac;     /* share of productive time a fix recovers; < 0 none stated */
    double headroom_gpu_s;    /* < 0 unknown */
    double headroom_cost;     /* < 0 unknown (no price) */
    char counterfactual[192]; /* what would change, e.g. "steps would take 0.82x as long" */
    gp_evidence evidence[GP_EVIDENCE_MAX];
    int n_evidence;
    double confidence; /* [0, 1] */
    int minor;         /* 1: the loss is under the class's threshold but at least
                        * GP_MINOR_SHARE of the job's time: reported, ranked as any other,
                        * and never the reason a job is called unhealthy */
    char summary[256];
    char recommendation[512];
} gp_finding;

const char *gp_finding_class_name(gp_finding_class c);
/* -1 when the name is not a class. */
int gp_finding_class_parse(const char *name);
const char *gp_scope_name(gp_scope s);
void gp_finding_add_evidence(gp_finding *f, const char *metric, double value, const char *op,
                             double threshold, const char *source);

#endif
