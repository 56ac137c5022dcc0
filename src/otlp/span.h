/* span.h: one OpenTelemetry span as goodput keeps it (compact: the fields the workflow
 * analysis reads), a growable set of them, and the step kind a span stands for.
 *
 * Step kinds follow the GenAI semantic conventions: gen_ai.operation.name chat,
 * text_completion, generate_content, embeddings (or a span naming gen_ai.request.model
 * without a tool) is a model call; execute_tool (or gen_ai.tool.name) is a tool call;
 * a retrieval operation, a db.system attribute or a span named "retriev..." is
 * retrieval; everything else is "other". Plain data, no I/O. */
#ifndef GP_OTLP_SPAN_H
#define GP_OTLP_SPAN_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    GP_STEP_MODEL = 0,
    GP_STEP_TOOL,
    GP_STEP_RETRIEVAL,
    GP_STEP_OTHER,
    GP_STEP_QUEUE, /* a workflow's own time with no step running (never a span's kind) */
    GP_STEP__COUNT
} gp_step_kind;

/* OTLP Status.code */
enum { GP_SPAN_UNSET = 0, GP_SPAN_OK = 1, GP_SPAN_ERROR = 2 };

typedef struct gp_span {
    char trace_id[33];  /* lowercase hex */
    char span_id[17];   /* lowercase hex */
    char parent_id[17]; /* "" for a root span */
    char name[64];
    char operation[32]; /* gen_ai.operation.name, "" none */
    char model[64];     /* gen_ai.request.model (or response.model), "" none */
    char service[64];   /* resource service.name */
    char host[64];      /* resource host.name */
    int kind;           /* OTLP SpanKind 0..5 */
    int step;           /* gp_step_kind */
    int status;         /* GP_SPAN_* */
    int64_t start_ns, end_ns;
    int64_t in_tokens, out_tokens; /* < 0 unknown */
} gp_span;

typedef struct gp_span_set {
    gp_span *v;
    size_t n, cap;
    uint64_t dropped; /* spans refused (bad times, no ids, over a cap) */
} gp_span_set;

/* A new zeroed slot at the end, or NULL when out of memory. */
gp_span *gp_span_set_add(gp_span_set *s);
void gp_span_set_free(gp_span_set *s);
/* Sets span->step from operation, model, name and the hints the decoder saw. */
void gp_span_classify(gp_span *sp, int has_tool_attr, int has_db_attr);
const char *gp_step_kind_name(int k);

#endif
