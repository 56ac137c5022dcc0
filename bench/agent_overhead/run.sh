#!/usr/bin/env bash
# bench/agent_overhead: CPU per GPU-sample of the agent path (collect -> store), apart
# from the simulator's own cost, and peak RSS, for 8 and 1,000 simulated GPUs at 1 Hz.
# Targets (issue: foundation): <= 20 us of CPU per GPU-sample, <= 16 MiB RSS for 8 GPUs.
#
# How: the agent times itself with CLOCK_PROCESS_CPUTIME_ID and subtracts the time spent
# inside the source's calls (--stats: agent_cpu_s vs source_cpu_s); RSS is getrusage's
# max_rss (it includes ~10 MiB of shared-library pages any goodput process maps). The
# source runs as fast as possible (--speed 0) and commits on the source clock every
# --flush of simulated time, i.e. the same transactions as a real 1 Hz run.
# Two workloads per size: "idle" jobs (a per-process row per sample, almost no events)
# gives the cost per GPU-sample; "train" jobs add ~2 workload events per sample, and the
# difference gives the cost per event. Each run is repeated; the median is reported.
# Usage: bench/agent_overhead/run.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
reps=${1:-3}
out=bench/out/agent_overhead; mkdir -p "$out"

scenario() { # gpus kind
  printf '[node]\nname = bench-%d\ngpus = %d\nmodel = H100-SXM\nseed = 7\nduration = 1h\n' "$1" "$1"
  for ((g = 0; g < $1; g++)); do printf '\n[job %s-%d]\nkind = %s\ngpus = %d\n' "$2" "$g" "$2" "$g"; done
}

for n in 8 1000; do
  dur=$([ "$n" -eq 8 ] && echo 30m || echo 2m)
  for kind in idle training; do
    scenario "$n" "$kind" >"$out/$kind$n.conf"
    for ((r = 0; r < reps; r++)); do
      rm -f "$out/$kind$n.db"*
      "$GOODPUT" agent --source "sim:$out/$kind$n.conf" --db "$out/$kind$n.db" --speed 0 \
        --duration "$dur" --flush 5s --no-socket --quiet --stats
    done >"$out/$kind$n.jsonl"
  done
done

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def med(path, key):
    rows = [json.loads(l) for l in open(path)]
    return statistics.median(r[key] for r in rows), rows[0]
for n in (8, 1000):
    idle_us, idle = med(f"{out}/idle{n}.jsonl", "agent_cpu_us_per_sample")
    tr_cpu, tr = med(f"{out}/training{n}.jsonl", "agent_cpu_s")
    idle_cpu, _ = med(f"{out}/idle{n}.jsonl", "agent_cpu_s")
    idle_rss, _ = med(f"{out}/idle{n}.jsonl", "max_rss_kib")
    tr_rss, _ = med(f"{out}/training{n}.jsonl", "max_rss_kib")
    extra_ev = tr["events"] - idle["events"]
    per_ev = (tr_cpu - idle_cpu) / extra_ev * 1e6 if extra_ev > 0 else float("nan")
    print(f"| {n} | {idle['samples']} | {idle_us:.1f} | {per_ev:.1f} | "
          f"{tr_cpu * 1e6 / tr['samples']:.1f} ({tr['events'] / tr['samples']:.1f} ev/sample) | "
          f"{idle_rss / 1024:.1f} / {tr_rss / 1024:.1f} |")
PY
