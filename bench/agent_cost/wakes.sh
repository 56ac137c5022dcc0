#!/usr/bin/env bash
# bench/agent_cost/wakes.sh: how often the agent wakes, and what it costs, over a steady
# stretch. The agent runs as in run.sh (test NVML library, cheap mode, GPUS simulated GPUs,
# 1 s ticks), optionally with the 1,000 events/s UDP sender (10 lines per datagram every
# 10 ms); between 3 s after start and 2 s before the end, the script reads the agent's
# /proc status and stat (all threads) and reports per second: wake-ups (voluntary context
# switches: each return from a blocking poll, read or sync), involuntary switches, and CPU
# (utime + stime, at the kernel's clock-tick resolution; run.sh's --stats figures are
# finer).
#
# Usage: bench/agent_cost/wakes.sh [GPUS (8)] [EVENTS 0|1 (0)] [WALL_S (20)]
# GOODPUT=path selects the binary (default build/goodput). Prints one line of JSON.
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
gpus=${1:-8}
ev=${2:-0}
wall_s=${3:-20}
out=$(mktemp -d /tmp/gp-wakes.XXXXXX)
trap 'rm -rf "$out"' EXIT
bench/agent_cost/scenario.sh "$gpus" wakes >"$out/sc.conf"
mkdir -p "$out/node"
port=$((20000 + RANDOM % 20000))
GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$out/sc.conf" \
GOODPUT_FAKE_NVML_SPEED=1 GOODPUT_FAKE_NVML_CHEAP=1 GOODPUT_SIM_NODE_ROOT="$out/node" \
  "$GOODPUT" agent --source nvml --db "$out/a.db" --no-socket --udp "127.0.0.1:$port" \
  --interval 1s --duration "${wall_s}s" --quiet --stats --proc-root "$out/node/proc" \
  --jobmap-dir "$out/node/jobmap" >"$out/stats.json" 2>"$out/err" &
apid=$!
if [ "$ev" = 1 ]; then
  /usr/bin/python3 bench/agent_cost/sender.py "$port" "$((wall_s - 1))" 0.5 >/dev/null &
  spid=$!
fi
# Sum of a status field over the process's threads.
field() { cat /proc/"$apid"/task/*/status 2>/dev/null | awk -v f="$1:" '$1 == f {s += $2} END {print s + 0}'; }
cpu() { cat /proc/"$apid"/task/*/stat 2>/dev/null | awk '{s += $14 + $15} END {print s + 0}'; }
sleep 3
t0=$(date +%s.%N) v0=$(field voluntary_ctxt_switches) n0=$(field nonvoluntary_ctxt_switches) c0=$(cpu)
sleep $((wall_s - 5))
t1=$(date +%s.%N) v1=$(field voluntary_ctxt_switches) n1=$(field nonvoluntary_ctxt_switches) c1=$(cpu)
threads=$(ls /proc/"$apid"/task | wc -l)
wait "$apid"
[ "$ev" = 1 ] && wait "$spid"
tck=$(getconf CLK_TCK)
awk -v t0="$t0" -v t1="$t1" -v v="$((v1 - v0))" -v n="$((n1 - n0))" -v c="$((c1 - c0))" -v tck="$tck" \
  -v g="$gpus" -v e="$ev" -v th="$threads" -v st="$(tail -n1 "$out/stats.json")" 'BEGIN {
  d = t1 - t0
  printf "{\"gpus\": %d, \"events\": %d, \"threads\": %d, \"seconds\": %.2f, \"wakes_per_s\": %.1f, \"involuntary_per_s\": %.1f, \"cpu_ms_per_s\": %.2f, \"stats\": %s}\n", g, e, th, d, v / d, n / d, c * 1000 / tck / d, st
}'
