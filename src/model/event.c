/* event.c: defaults for events (unknown everywhere) and kind names. */
#include "model/event.h"

#include <string.h>

void gp_event_init(gp_event *e, gp_event_kind kind) {
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->ts_ns = -1;
    e->rank = -1;
    e->seq = -1;
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

/* FNV-1a, 64-bit. */
typedef struct {
    uint64_t h;
} fnv;

static void mix(fnv *f, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        f->h ^= b[i];
        f->h *= 1099511628211ULL;
    }
}
static void mix_i64(fnv *f, int64_t v) {
    mix(f, &v, sizeof v);
}
/* Unknown numbers are any negative value: all of them hash as -1. */
static void mix_d(fnv *f, double v) {
    if (!(v >= 0)) v = -1;
    if (v == 0) v = 0; /* -0.0 and 0.0 are the same value */
    mix(f, &v, sizeof v);
}
/* Strings with their terminator, so "ab"+"c" and "a"+"bc" differ. */
static void mix_s(fnv *f, const char *s) {
    mix(f, s, strlen(s) + 1);
}

uint64_t gp_event_key(const gp_event *e) {
    fnv f = {14695981039346656037ULL};
    mix_i64(&f, e->kind);
    mix_s(&f, e->job_id);
    mix_i64(&f, e->rank);
    mix_i64(&f, e->ts_ns);
    if (e->seq >= 0) {
        mix(&f, "seq", 4);
        mix_i64(&f, e->seq);
        return f.h;
    }
    const int64_t ints[] = {
        e->step,          e->step_start_ns, e->edge, e->arrival_ns, e->first_token_ns,
        e->prompt_tokens, e->output_tokens, e->ok,   e->item,       e->enqueue_ns,
        e->start_ns,      e->bytes,         e->pid,  e->from_ns,    e->to_ns,
        e->exit_code};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        mix_i64(&f, ints[i] < 0 && i != 15 ? -1 : ints[i]);
    const double nums[] = {e->units,      e->flops_per_unit, e->bytes_per_unit,
                           e->slo_ttft_s, e->slo_tpot_s,     e->slo_e2e_s};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        mix_d(&f, nums[i]);
    const char *strs[] = {e->name, e->worker, e->host, e->uuid, e->user, e->job_name, e->origin};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        mix_s(&f, strs[i]);
    return f.h;
}
