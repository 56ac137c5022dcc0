/* job.c: origin names. */
#include "model/job.h"

#include <string.h>

static const char *const origin_names[] = {"unknown",   "slurm",   "k8s",
                                           "container", "process", "tag"};

const char *gp_origin_name(gp_origin o) {
    return (o >= GP_ORIGIN_UNKNOWN && o <= GP_ORIGIN_TAG) ? origin_names[o] : "unknown";
}

gp_origin gp_origin_parse(const char *s) {
    for (int i = 0; i <= GP_ORIGIN_TAG; i++)
        if (strcmp(s, origin_names[i]) == 0) return (gp_origin)i;
    return GP_ORIGIN_UNKNOWN;
}
