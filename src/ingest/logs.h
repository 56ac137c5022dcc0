/* logs.h: training logs as workload events, with no instrumentation (docs/logs.md).
 *
 * A *profile* is a named set of rules; a rule is a POSIX extended regex (regex.h) and what
 * a match means: a step finished, an evaluation / checkpoint / compile phase began or
 * ended (or ran for a captured duration), or the job restarted from a step. Capture groups
 * give the step number, the step's duration (ms, s, or a rate in it/s), units done, the
 * epoch (progress bars that count from 0 each epoch) and the bar's total. Built-in profiles
 * cover Megatron-LM/NeMo, the Hugging Face Trainer, PyTorch Lightning, torchtitan and
 * DeepSpeed; a config file adds or replaces profiles (gp_log_profiles_load).
 *
 * A reader turns lines into gp_events. Times: a timestamp in the line (ISO-like
 * `YYYY-MM-DD HH:MM:SS[.,fff]` or `YYYY/MM/DD HH:MM:SS`, read as UTC) wins; else the
 * caller's now_ns (a live tail stamps lines on receipt); else (offline, now_ns < 0) a clock
 * of the reader's own that advances by the durations the log states, starting at 0, which
 * the caller may shift afterwards (gp_log_read_file anchors it at the file's mtime).
 *
 * Rules of interpretation (the same for every profile):
 *  - a step number equal to the last one is the same step printed again (tqdm redraws,
 *    every rank printing): no new event;
 *  - a step number below the last one (same epoch) is a restart from that step - 1;
 *  - an open phase (eval, checkpoint_save, ...) ends at the next step's start, so a log
 *    that prints only "saving checkpoint" still bounds the checkpoint;
 *  - a phase end without a begin began at the previous event (Megatron prints validation
 *    loss only after evaluating);
 *  - a step line whose bar total differs from the first step line's total is another bar
 *    (an evaluation progress bar), not a training step.
 * Memory: profiles own their compiled regexes (gp_log_profiles_free); a reader owns
 * nothing beyond itself. No global state. */
#ifndef GP_INGEST_LOGS_H
#define GP_INGEST_LOGS_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/event.h"

#define GP_LOG_MAX_RULES 24
#define GP_LOG_MAX_PROFILES 32

typedef enum {
    GP_LR_STEP = 1,
    GP_LR_RESTART,
    GP_LR_PHASE_BEGIN,
    GP_LR_PHASE_END,
    GP_LR_PHASE_DUR, /* the phase ran for the captured duration, ending now */
} gp_log_rule_kind;

typedef struct gp_log_rule {
    gp_log_rule_kind kind;
    char phase[GP_NAME_MAX]; /* eval, checkpoint_save, checkpoint_restore, compile, ... */
    /* capture group numbers; 0 = not captured */
    int g_step, g_dur_ms, g_dur_s, g_rate, g_units, g_units_cum, g_epoch, g_total;
    int implicit; /* step rule without a number: counts only while no numbered step seen */
    regex_t re;
    char src[512]; /* the regex as written (for --list-profiles) */
} gp_log_rule;

typedef struct gp_log_profile {
    char name[32];
    char about[128];
    int n_rules;
    gp_log_rule rule[GP_LOG_MAX_RULES];
} gp_log_profile;

typedef struct gp_log_profiles {
    int n;
    gp_log_profile *p[GP_LOG_MAX_PROFILES];
} gp_log_profiles;

/* Compiles the built-in profiles into ps (which starts empty). 0, or -1 with err. */
int gp_log_profiles_builtin(gp_log_profiles *ps, char *err, size_t errlen);
/* Reads a profile file (docs/logs.md): `profile NAME [about text]` starts a profile (a
 * built-in of that name is replaced); `KIND [group=N ...] re=REGEX` adds a rule, REGEX
 * being the rest of the line. KIND: step, restart, PHASE_begin, PHASE_end, PHASE (with
 * dur_ms/dur_s), where PHASE is eval, checkpoint (= checkpoint_save), checkpoint_save,
 * checkpoint_restore, compile, init, data_wait or another word. Groups: step, dur_ms,
 * dur_s, rate (it/s), units, units_cum, epoch, total; `implicit` flag. 0, or -1 with err
 * naming file:line. */
int gp_log_profiles_load(gp_log_profiles *ps, const char *path, char *err, size_t errlen);
const gp_log_profile *gp_log_profile_find(const gp_log_profiles *ps, const char *name);
void gp_log_profiles_free(gp_log_profiles *ps);

typedef void (*gp_log_emit)(void *ctx, const gp_event *e);

typedef struct gp_log_reader {
    const gp_log_profile *prof;
    char job_id[GP_JOB_ID_MAX];
    int64_t clock_ns;  /* the last event's time */
    int64_t last_step; /* global step number; -1 none yet */
    int64_t last_raw;  /* the step as printed (per-epoch bars) */
    int64_t epoch, epoch_base;
    int64_t total;    /* the training bar's total; -1 unknown */
    double units_cum; /* last cumulative units; < 0 none */
    int numbered;     /* a numbered step was seen */
    char open_phase[GP_NAME_MAX];
    int64_t open_since_ns;
    uint64_t lines, matched;
} gp_log_reader;

void gp_log_reader_init(gp_log_reader *r, const gp_log_profile *p, const char *job_id);
/* One line (no newline needed; a '\r' inside splits tqdm redraws and is handled).
 * now_ns < 0: offline (the reader's clock); else live. Calls emit per event; returns the
 * number of events. */
int gp_log_reader_line(gp_log_reader *r, const char *line, size_t len, int64_t now_ns,
                       gp_log_emit emit, void *ctx);
/* Closes an open phase at the reader's clock (end of input). */
int gp_log_reader_finish(gp_log_reader *r, gp_log_emit emit, void *ctx);

/* Parses a leading-or-embedded timestamp; 1 with *ns, else 0. */
int gp_log_parse_timestamp(const char *s, size_t len, int64_t *ns);

/* Reads a whole log offline into a malloc'd array (*out, *n; caller frees). Timestamps
 * in the log are kept; a log without any is anchored so its last event is at the file's
 * mtime (*anchored = 1). 0, or -1 with err. */
int gp_log_read_file(const char *path, const gp_log_profile *p, const char *job_id, gp_event **out,
                     size_t *n, int *anchored, char *err, size_t errlen);

/* What a log says, in numbers (the `goodput logs` summary). */
typedef struct gp_log_summary {
    size_t steps, restarts;
    int64_t first_step, last_step;
    double step_p50_s, step_p95_s;                     /* per-iteration time; < 0 unknown */
    double eval_s, checkpoint_s, compile_s, restore_s; /* phase time; < 0 none seen */
    size_t evals, checkpoints, compiles;
    double span_s; /* first event to last */
} gp_log_summary;
void gp_log_summarize(const gp_event *ev, size_t n, gp_log_summary *s);

#endif
