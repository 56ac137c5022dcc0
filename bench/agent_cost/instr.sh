#!/usr/bin/env bash
# bench/agent_cost/instr.sh: the agent's steady cost per GPU-sample in instructions, a figure
# that does not move with the host. run.sh's CPU time per GPU-sample does: on this project's
# 2-core VMs the same build measured 19 µs on one machine and 31-36 µs on another (2.45 GHz,
# where an event cost 3x more too), and ±10% between runs an hour apart on one. So a change
# that saves 5% cannot be told from noise in µs; in instructions it can (callgrind counts
# the same on every run of the same build to ~0.1%).
#
# Same node as run.sh (the test NVML library, one training job per GPU, 1 s sampling, no
# events), run twice under callgrind with only gp_agent_run counted, for SHORT and LONG
# seconds of wall time at once: start-up, the first tick and the exit are in both, so
# (I(LONG) - I(SHORT)) / ((LONG - SHORT) * GPUS) is the steady cost of one GPU-sample, the
# flushes (one per 5 s), retention and hooks (once a minute) included in their share when
# LONG - SHORT is a multiple of 60. SHORT is past the first minute: the first retention
# pass and hooks (60 s after the start) prepare their statements, a start-up cost that
# must be in both runs (with SHORT 40 it was in LONG's alone: 1.2 M instructions). The test library's own code is in the count as in run.sh;
# the part inside the source's calls is printed apart.
#
# Usage: bench/agent_cost/instr.sh [GPUS (default 8)] [SHORT (default 70)] [LONG (default 190)]
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
gpus=${1:-8}
short=${2:-70}
long=${3:-190}
out=bench/out/agent_instr
# REUSE=1: read the last runs' counts again (no new runs)
[ -n "${REUSE:-}" ] || { rm -rf "$out" && mkdir -p "$out"; }
[ -x "$GOODPUT" ] && [ -f "$LIB" ] || { echo "build first: make $GOODPUT $LIB" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "instr.sh needs valgrind (Debian valgrind)" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "instr.sh needs callgrind_annotate (Debian valgrind)" >&2; exit 1; }

bench/agent_cost/scenario.sh "$gpus" >"$out/sc.conf"

run() { # name seconds
  mkdir -p "$out/node$1"
  GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$out/sc.conf" GOODPUT_FAKE_NVML_SPEED=1 \
  GOODPUT_FAKE_NVML_CHEAP=1 GOODPUT_SIM_NODE_ROOT="$out/node$1" \
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=gp_agent_run \
    --callgrind-out-file="$out/cg$1.out" \
    "$GOODPUT" agent --source nvml --db "$out/a$1.db" --no-socket --interval 1s --duration "$2s" \
    --quiet --stats --proc-root "$out/node$1/proc" --jobmap-dir "$out/node$1/jobmap" \
    >"$out/stats$1.json" 2>"$out/err$1"
}
if [ -z "${REUSE:-}" ]; then
run short "$short" &
p1=$!
run long "$long" &
p2=$!
wait "$p1" || { cat "$out/errshort" >&2; exit 1; }
wait "$p2" || { cat "$out/errlong" >&2; exit 1; }
fi

# Total, and the part inside the source's calls (the NVML backend's sample and process-list
# functions, the test library's code under them): the boundary of run.sh's "of which in NVML
# calls" (--stats source_cpu_s).
count() { # file -> "total source"
  local f=$1
  local total src
  total=$(callgrind_annotate --auto=no "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ && !t { gsub(",", "", $1); t = $1 } END { print t + 0 }')
  src=$(callgrind_annotate --auto=no --inclusive=yes "$f" 2>/dev/null |
    awk '/sources\/nvml\.c:nvml_(sample|procs) / { v = $1; gsub(",", "", v); s += v } END { print s + 0 }')
  echo "$total $src"
}
read -r ts ns < <(count "$out/cgshort.out")
read -r tl nl < <(count "$out/cglong.out")
ticks_s=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ticks"])' "$out/statsshort.json")
ticks_l=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ticks"])' "$out/statslong.json")
/usr/bin/python3 - "$gpus" "$ts" "$tl" "$ns" "$nl" "$ticks_s" "$ticks_l" <<'PY'
import sys
g, ts, tl, ns, nl, ks, kl = (int(x) for x in sys.argv[1:])
n = (kl - ks) * g
print(f"| GPUs | ticks counted | instructions per GPU-sample | of which in the source calls (NVML) |")
print(f"|---|---|---|---|")
print(f"| {g} | {kl - ks} ({kl} - {ks}) | {(tl - ts) / n:,.0f} | {(nl - ns) / n:,.0f} |")
PY
