/* finding.c: names of the finding classes and scopes, evidence helper. */
#include "model/finding.h"

#include <stdio.h>
#include <string.h>

static const char *const class_names[GP_FC__COUNT] = {
    "not_ready",      "idle_allocated",      "input_bound",         "host_bound",
    "memory_bound",   "communication_bound", "compute_bound",       "checkpoint_bound",
    "straggler",      "interference",        "pipeline_bottleneck", "scale_inefficient",
    "under_batched",  "memory_capacity",     "throttled",           "gpu_errors",
    "scheduling_gap", "harvestable",         "tool_bound",          "serial_steps",
    "retry_waste",
};

const char *gp_finding_class_name(gp_finding_class c) {
    return (c >= 0 && c < GP_FC__COUNT) ? class_names[c] : "unknown";
}

int gp_finding_class_parse(const char *name) {
    for (int i = 0; i < GP_FC__COUNT; i++)
        if (strcmp(name, class_names[i]) == 0) return i;
    return -1;
}

const char *gp_scope_name(gp_scope s) {
    switch (s) {
    case GP_SCOPE_CLUSTER:
        return "cluster";
    case GP_SCOPE_JOB:
        return "job";
    case GP_SCOPE_DEVICE:
        return "device";
    case GP_SCOPE_RANK:
        return "rank";
    case GP_SCOPE_STAGE:
        return "stage";
    }
    return "unknown";
}

void gp_finding_add_evidence(gp_finding *f, const char *metric, double value, const char *op,
                             double threshold, const char *source) {
    if (f->n_evidence >= GP_EVIDENCE_MAX) return;
    gp_evidence *e = &f->evidence[f->n_evidence++];
    snprintf(e->metric, sizeof e->metric, "%s", metric);
    e->value = value;
    snprintf(e->op, sizeof e->op, "%s", op);
    e->threshold = threshold;
    snprintf(e->source, sizeof e->source, "%s", source);
}
