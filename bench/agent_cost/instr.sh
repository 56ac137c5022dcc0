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
# With sizes 1 and 8 both counted, the 8-GPU tick is split as run.sh splits its CPU time:
# per GPU = (tick(8) - tick(1)) / 7, fixed = tick(1) - per GPU, in instructions. Beside
# run.sh's split it shows what the fixed part of a tick is made of: few instructions run
# slowly (the first ones after a 1 s sleep find the caches and TLB cold) or many.
#
# Usage: bench/agent_cost/instr.sh [SIZES (default "1 8")] [SHORT (default 70)] [LONG (default 190)]
# INSTR_OUT: the output folder (default bench/out/agent_instr); REUSE=1 reads the last runs'
# counts again (no new runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
sizes=${1:-1 8}
short=${2:-70}
long=${3:-190}
out=${INSTR_OUT:-bench/out/agent_instr}
[ -n "${REUSE:-}" ] || { rm -rf "$out" && mkdir -p "$out"; }
[ -x "$GOODPUT" ] && [ -f "$LIB" ] || { echo "build first: make $GOODPUT $LIB" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "instr.sh needs valgrind (Debian valgrind)" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "instr.sh needs callgrind_annotate (Debian valgrind)" >&2; exit 1; }

. bench/agent_cost/agent.sh
run() { # dir name seconds
  local d=$1
  bench_agent "$d/sc.conf" "$d/node$2" "$d/a$2.db" "$3" "$d/stats$2.json" "$d/err$2" \
    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=gp_agent_run \
    --callgrind-out-file="$d/cg$2.out"
}

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
ticks() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ticks"])' "$1"; }

rows=()
for g in $sizes; do
  d="$out/g$g"
  if [ -z "${REUSE:-}" ]; then
    mkdir -p "$d"
    bench/agent_cost/scenario.sh "$g" >"$d/sc.conf"
    run "$d" short "$short" &
    p1=$!
    run "$d" long "$long" &
    p2=$!
    wait "$p1" || { cat "$d/errshort" >&2; exit 1; }
    wait "$p2" || { cat "$d/errlong" >&2; exit 1; }
  fi
  read -r ts ns < <(count "$d/cgshort.out")
  read -r tl nl < <(count "$d/cglong.out")
  rows+=("$g $ts $tl $ns $nl $(ticks "$d/statsshort.json") $(ticks "$d/statslong.json")")
done
/usr/bin/python3 - "${rows[@]}" <<'PY'
import sys
print("| GPUs | ticks counted | instructions per GPU-sample | of which in the source calls (NVML) | instructions per tick |")
print("|---|---|---|---|---|")
tick = {}
for r in sys.argv[1:]:
    g, ts, tl, ns, nl, ks, kl = (int(x) for x in r.split())
    n = (kl - ks) * g
    tick[g] = (tl - ts) / (kl - ks)
    print(f"| {g} | {kl - ks} ({kl} - {ks}) | {(tl - ts) / n:,.0f} | {(nl - ns) / n:,.0f} | {tick[g]:,.0f} |")
if 1 in tick and 8 in tick:
    per = (tick[8] - tick[1]) / 7
    print(f"8-GPU tick: {tick[8]:,.0f} instructions = fixed {tick[1] - per:,.0f} a tick + {per:,.0f} per GPU")
PY
