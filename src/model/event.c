/* event.c: defaults for events (unknown everywhere) and kind names. */
#include "model/event.h"

#include <string.h>

void gp_event_init(gp_event *e, gp_event_kind kind) {
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->ts_ns = -1;
    e->rank = -1;
    e->step = -1;
    e->units = -1;
    e->step_start_ns = -1;
    e->arrival_ns = e->first_token_ns = -1;
    e->prompt_tokens = e->output_tokens = -1;
    e->ok = 1;
    e->item = -1;
    e->enqueue_ns = e->start_ns = -1;
    e->bytes = -1;
    e->pid = -1;
    e->from_ns = e->to_ns = -1;
    e->exit_code = -1;
}

const char *gp_event_kind_name(gp_event_kind k) {
    switch (k) {
    case GP_EV_HELLO:
        return "hello";
    case GP_EV_STEP:
        return "step";
    case GP_EV_PHASE:
        return "phase";
    case GP_EV_REQUEST:
        return "request";
    case GP_EV_STAGE:
        return "stage";
    case GP_EV_RESTART:
        return "restart";
    case GP_EV_JOB:
        return "job";
    case GP_EV_ALLOC:
        return "alloc";
    }
    return "unknown";
}
