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

typedef struct gp_finding {
    gp_finding_class cls;
    gp_scope scope;
    char scope_id[96]; /* job id, device uuid, rank, stage name, or cluster name */
    int64_t t0_ns, t1_ns;
    double wasted_gpu_s; /* < 0 unknown */
    double wasted_cost;  /* < 0 unknown (no price) */
    gp_evidence evidence[GP_EVIDENCE_MAX];
    int n_evidence;
    double confidence; /* [0, 1] */
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
