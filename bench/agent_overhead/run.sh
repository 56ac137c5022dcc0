#!/usr/bin/env bash
# bench/agent_overhead: CPU per GPU-sample of the agent path (collect -> store), apart
# from the simulator's own cost, and peak RSS, for 8 and 1,000 simulated GPUs at 1 Hz.
# Targets (issue: foundation): <= 20 us of CPU per GPU-sample, <= 16 MiB RSS for 8 GPUs.
# The agent measures its own split with CLOCK_PROCESS_CPUTIME_ID around the source's
# calls (--stats); RSS is getrusage's max_rss. Usage: bench/agent_overhead/run.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
out=${1:-bench/out/agent_overhead}; mkdir -p "$out"

scenario() { # gpus, jobs-per-gpu layout: one trainer per GPU
  local n=$1
  printf '[node]\nname = bench-%d\ngpus = %d\nmodel = H100-SXM\nseed = 7\nduration = 1h\n' "$n" "$n"
  for ((g = 0; g < n; g++)); do
    printf '\n[job train-%d]\nkind = training\ngpus = %d\n' "$g" "$g"
  done
}

for n in 8 1000; do
  scenario "$n" >"$out/gpus$n.conf"
  dur=$([ "$n" -eq 8 ] && echo 30m || echo 3m)
  rm -f "$out/gpus$n.db"*
  "$GOODPUT" agent --source "sim:$out/gpus$n.conf" --db "$out/gpus$n.db" --speed 0 \
    --duration "$dur" --no-socket --quiet --stats >"$out/gpus$n.json"
  echo "gpus=$n $(cat "$out/gpus$n.json")"
done
