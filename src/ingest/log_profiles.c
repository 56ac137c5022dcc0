/* log_profiles.c: the built-in training-log profiles, written in the profile-file syntax
 * (docs/logs.md) so built-ins and user profiles go through one parser. Patterns are POSIX
 * extended regexes: literal brackets, bars and dots are written as [[] []] [|] [.] because
 * a backslash before them is not portable in ERE. Each pattern was checked against the
 * real excerpts under tests/data/logs/ (tests/data/SOURCES.md says where they come from). */
#include "ingest/log_profiles.h"

const char *gp_log_builtin_profiles(void) {
    return
        /* Megatron-LM (training_log) and NeMo 2 (Megatron strategy) */
        "profile megatron Megatron-LM / NeMo: 'iteration N/ M | ... elapsed time per iteration "
        "(ms): X'\n"
        "step step=1 total=2 units_cum=4 dur_ms=5 re=iteration +([0-9]+)/ *([0-9]+) [|]( "
        "consumed samples: +([0-9]+) [|])?.*elapsed time per iteration [(]ms[)]: *([0-9.]+)\n"
        "step step=1 dur_s=2 re=global_step: ([0-9.]+) [|].*train_step_timing in s: ([0-9.]+)\n"
        "checkpoint_begin re=saving checkpoint at iteration +[0-9]+\n"
        "checkpoint_end re=successfully saved checkpoint (at|from) iteration\n"
        "checkpoint_restore_begin re=loading (release )?checkpoint from\n"
        "checkpoint_restore_end re=successfully loaded checkpoint from\n"
        "restart step=1 re=successfully loaded checkpoint from .* at iteration +([0-9]+)\n"
        "eval_end re=validation loss at iteration\n"
        "\n"
        /* Hugging Face Trainer (transformers) */
        "profile hf Hugging Face Trainer: tqdm 'N/M [elapsed<left, X s/it]', {'loss': ...} "
        "lines, evaluation and checkpoints\n"
        "step step=1 total=2 dur_s=3 re=([0-9]+)/([0-9]+) [[][0-9:]+<[0-9:?]+, +([0-9.]+)s/it\n"
        "step step=1 total=2 rate=3 re=([0-9]+)/([0-9]+) [[][0-9:]+<[0-9:?]+, +([0-9.]+)it/s\n"
        "step implicit re=^[{]'loss': \n"
        "eval_begin re=[*]+ Running Evaluation [*]+\n"
        "eval dur_s=1 re=eval_runtime': ([0-9.]+)\n"
        "checkpoint_begin re=Saving model checkpoint to\n"
        "restart step=1 re=Continuing training from global step ([0-9]+)\n"
        "\n"
        /* PyTorch Lightning (TQDMProgressBar) */
        "profile lightning PyTorch Lightning: 'Epoch E: P%|...| N/M [elapsed<left, X it/s, "
        "...]', validation bars, ModelCheckpoint\n"
        "step epoch=1 step=2 total=3 dur_s=4 re=Epoch ([0-9]+):.* ([0-9]+)/([0-9]+) "
        "[[][0-9:]+<[0-9:?]+, +([0-9.]+)s/it\n"
        "step epoch=1 step=2 total=3 rate=4 re=Epoch ([0-9]+):.* ([0-9]+)/([0-9]+) "
        "[[][0-9:]+<[0-9:?]+, +([0-9.]+)it/s\n"
        "eval_begin re=(Validation|Sanity Checking) DataLoader [0-9]+:\n"
        "checkpoint_begin re=saving model to\n"
        "checkpoint_restore_begin re=Restoring states from the checkpoint\n"
        "checkpoint_restore_end re=Restored all states from the checkpoint\n"
        "\n"
        /* torchtitan (train.py metrics log) */
        "profile torchtitan torchtitan: 'step: N  loss: X  memory: ...  tps: ...'\n"
        "step step=1 re=step: *([0-9]+) +loss: \n"
        "checkpoint_begin re=Saving the checkpoint\n"
        "checkpoint dur_s=1 re=Finished saving the checkpoint.* in ([0-9.]+) seconds\n"
        "checkpoint_restore_begin re=Loading the checkpoint\n"
        "checkpoint_restore dur_s=1 re=Finished loading the checkpoint in ([0-9.]+) seconds\n"
        "restart step=1 re=Loading the checkpoint at step ([0-9]+)\n"
        "\n"
        /* DeepSpeed engine (steps_per_print) */
        "profile deepspeed DeepSpeed: '[Rank 0] step=N, skipped=K, lr=...' and the "
        "SamplesPerSec timer lines\n"
        "step step=1 re=[[]Rank [0-9]+[]] step=([0-9]+), skipped=[0-9]+\n"
        "step step=1 re=global_step=([0-9]+), RunningAvgSamplesPerSec\n"
        "checkpoint_begin re=Checkpoint global_step[0-9]+ is about to be saved\n"
        "checkpoint_end re=Checkpoint global_step[0-9]+ is ready now\n"
        "restart step=1 re=Checkpoint global_step([0-9]+) is begin to load\n";
}
