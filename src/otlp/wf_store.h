/* wf_store.h: the engines (jobs of a store) that served a set of spans, with their GPUs'
 * busy time and energy as cumulative series (otlp/workflows.h). Reads only. */
#ifndef GP_OTLP_WF_STORE_H
#define GP_OTLP_WF_STORE_H

#include "otlp/workflows.h"
#include "store/store.h"

/* One engine per job whose id or name is the service.name of a model-call span. *out is
 * malloc'd (free with gp_wf_engines_free). 0, or -1 on a store error (err filled). */
int gp_wf_engines_from_store(gp_store *s, const gp_span *spans, size_t n, gp_wf_engine **out,
                             size_t *n_out, double *price_per_gpu_h, char *err, size_t errlen);
void gp_wf_engines_free(gp_wf_engine *e, size_t n);

#endif
