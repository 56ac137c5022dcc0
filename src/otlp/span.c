/* span.c: the span set and step classification (see span.h). */
#include "otlp/span.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

gp_span *gp_span_set_add(gp_span_set *s) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        gp_span *p = realloc(s->v, cap * sizeof *p);
        if (!p) return NULL;
        s->v = p;
        s->cap = cap;
    }
    gp_span *sp = &s->v[s->n++];
    memset(sp, 0, sizeof *sp);
    sp->in_tokens = sp->out_tokens = -1;
    return sp;
}

void gp_span_set_free(gp_span_set *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int is_model_op(const char *op) {
    static const char *const ops[] = {"chat", "text_completion", "generate_content", "embeddings",
                                      "completion"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0) return 1;
    return 0;
}

void gp_span_classify(gp_span *sp, int has_tool_attr, int has_db_attr) {
    const char *op = sp->operation;
    if (strcmp(op, "execute_tool") == 0 || (has_tool_attr && !is_model_op(op)))
        sp->step = GP_STEP_TOOL;
    else if (is_model_op(op) || (sp->model[0] && !op[0]))
        sp->step = GP_STEP_MODEL;
    else if (strcmp(op, "retrieval") == 0 || strcmp(op, "retrieve") == 0 || has_db_attr ||
             strncasecmp(sp->name, "retriev", 7) == 0)
        sp->step = GP_STEP_RETRIEVAL;
    else
        sp->step = GP_STEP_OTHER;
}

const char *gp_step_kind_name(int k) {
    static const char *const names[GP_STEP__COUNT] = {"model", "tool", "retrieval", "other",
                                                      "queue"};
    return k >= 0 && k < GP_STEP__COUNT ? names[k] : "unknown";
}
