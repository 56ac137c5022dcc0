#!/usr/bin/env bash
# bench/agent_cost/pairs.sh: two builds of the agent side by side, for a change too small to
# see in run.sh's figures. On this project's VMs the same build's CPU per GPU-sample moves
# ±10-20% between runs minutes apart (docs/benchmarks.md, 23:30 update of 2026-12-03), so a
# 5% change is judged only from runs made at the same moment: each pair runs the base build
# and this one at once, on the same node (bench/agent_cost/agent.sh), one per core.
#
# Printed per pair: steady CPU per tick of each (from the end of the first tick to the end of
# the loop, --stats), the part inside the NVML calls (the same code in both builds: where it
# differs between the two of a pair, the moment was noisy), and the ratio this / base; then
# the means and the ratio of the means.
#
# Usage: bench/agent_cost/pairs.sh BASE_BINARY [PAIRS (default 3)] [SECONDS (default 120)]
#        [GPUS (default 8)]. GOODPUT: this build (default build/goodput); PAIRS_OUT: the
# output folder (default bench/out/agent_pairs).
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${1:?usage: bench/agent_cost/pairs.sh BASE_BINARY [PAIRS] [SECONDS] [GPUS]}
pairs=${2:-3}
secs=${3:-120}
gpus=${4:-8}
this=${GOODPUT:-build/goodput}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
out=${PAIRS_OUT:-bench/out/agent_pairs}
for b in "$base" "$this"; do [ -x "$b" ] || { echo "pairs.sh: no binary $b" >&2; exit 1; }; done
[ -f "$LIB" ] || { echo "build first: make $LIB" >&2; exit 1; }
. bench/agent_cost/agent.sh
rm -rf "$out" && mkdir -p "$out"
bench/agent_cost/scenario.sh "$gpus" >"$out/sc.conf"

one() { # name binary
  GOODPUT=$2 bench_agent "$out/sc.conf" "$out/node$1" "$out/a$1.db" "$secs" "$out/stats$1.json" \
    "$out/err$1"
}
for i in $(seq "$pairs"); do
  one "base$i" "$base" &
  pb=$!
  one "this$i" "$this" &
  pt=$!
  wait "$pb" || { cat "$out/errbase$i" >&2; exit 1; }
  wait "$pt" || { cat "$out/errthis$i" >&2; exit 1; }
done

/usr/bin/python3 - "$out" "$pairs" "$secs" "$gpus" <<'PY'
import json, sys
out, pairs, secs, gpus = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def tick(name):
    st = json.loads(open(f"{out}/stats{name}.json").read().strip().splitlines()[-1])
    ticks = st["ticks"] - 1
    cpu = st["loop_end_cpu_s"] - st["first_tick_cpu_s"]
    return cpu * 1e6 / ticks, st["source_cpu_s"] * 1e6 / st["ticks"]
print(f"{gpus} GPUs, {secs} s a run, CPU per tick after the first (µs); in NVML calls in ()")
print("| pair | base | this | this / base |")
print("|---|---|---|---|")
sb = st_ = 0.0
for i in range(1, pairs + 1):
    b, bs = tick(f"base{i}")
    t, ts = tick(f"this{i}")
    sb += b
    st_ += t
    print(f"| {i} | {b:.1f} ({bs:.1f}) | {t:.1f} ({ts:.1f}) | {t / b:.2f} |")
print(f"| mean | {sb / pairs:.1f} | {st_ / pairs:.1f} | **{st_ / sb:.2f}** |")
print(f"per GPU-sample: {sb / pairs / int(gpus):.1f} -> {st_ / pairs / int(gpus):.1f} µs")
PY
