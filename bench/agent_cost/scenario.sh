#!/usr/bin/env bash
# bench/agent_cost/scenario.sh GPUS [NAME]: prints the node every agent_cost bench runs (the
# test NVML library's scenario): GPUS H100s, one training job per GPU, seed 7. NAME names
# the node (default cost-GPUS).
set -euo pipefail
gpus=$1
printf '[node]\nname = %s\ngpus = %d\nmodel = H100-SXM\nseed = 7\nduration = 2h\n' "${2:-cost-$gpus}" "$gpus"
for ((g = 0; g < gpus; g++)); do printf '\n[job train-%d]\nkind = training\ngpus = %d\n' "$g" "$g"; done
