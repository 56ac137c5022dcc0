#!/usr/bin/env bash
# bench/agent_cost/listen_rss.sh: the agent's peak RSS with `--listen` (issue 22, "agent at 8
# GPUs <= 8 MiB"), the agent users leave on for Prometheus scraping.
#
# Cases, each run ROUNDS times per build, builds interleaved (old, new, old, new, ...):
#   nvml8   the agent on the test NVML library (build/tests/lib/libnvidia-ml.so.1, 8 GPUs,
#           one trainer per GPU, GOODPUT_FAKE_NVML_CHEAP=1, as bench/agent_cost/run.sh) at 1 s
#           for WALL_S seconds with --listen, curl hitting /metrics every second;
#   plain8  the same without --listen and without the scraper (the reference);
#   fast0   tests/data/scenarios/results_fast.conf (one GPU, ~100 steps/s for 8 of its 16
#           minutes: ~73,000 events, so a 15-minute live window holds its whole job) at
#           --speed 0 with --listen (live findings on, their default with --listen);
#   fast1   the same at --speed 1 (16 minutes of wall time) with the scraper; only when
#           SPEED1=1.
# Per run: /usr/bin/time %M (the process and its waited children: includes the close at
# exit and a sealing child), --stats max_rss_kib (the agent process alone, read before the
# store closes), and for scraped cases the server's CPU per /metrics render
# (goodput_scrape_cpu_seconds_total / goodput_scrapes_total, from the last scrape).
# Peak RSS does not depend on the machine's load; the CPU figure does.
#
# Usage: bench/agent_cost/listen_rss.sh NEW_BIN [OLD_BIN] [ROUNDS (3)] [WALL_S (75)]
set -euo pipefail
cd "$(dirname "$0")/../.."
new=$1
old=${2:-}
rounds=${3:-3}
wall_s=${4:-75}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
FAST=tests/data/scenarios/results_fast.conf
out=bench/out/listen_rss
rm -rf "$out" && mkdir -p "$out"
[ -x "$new" ] && [ -f "$LIB" ] || { echo "build first: make build/goodput $LIB" >&2; exit 1; }

bench/agent_cost/scenario.sh 8 >"$out/sc8.conf"

# scrape PORT DIR PID: /metrics every second while PID lives; keeps the last answer
scrape() {
  while kill -0 "$3" 2>/dev/null; do
    curl -s -m 5 -o "$2/m.tmp" "http://127.0.0.1:$1/metrics" && mv "$2/m.tmp" "$2/metrics" || true
    sleep 1
  done
}
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2"; }
cpu_per_scrape() { # metrics file -> ms, or -
  [ -s "$1" ] || { echo -; return; }
  awk '$1 == "goodput_scrape_cpu_seconds_total" {c = $2} $1 == "goodput_scrapes_total" {n = $2}
       END {if (n > 0) printf "%.2f", 1000 * c / n; else print "-"}' "$1"
}

run_case() { # build_name bin case round
  local name=$1 bin=$2 c=$3 r=$4 d="$out/$1-$3-$4" port=$((20000 + RANDOM % 20000))
  mkdir -p "$d/node"
  local listen=(--listen "127.0.0.1:$port")
  case $c in
  nvml8 | plain8)
    [ "$c" = plain8 ] && listen=()
    GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$out/sc8.conf" GOODPUT_FAKE_NVML_SPEED=1 \
    GOODPUT_FAKE_NVML_CHEAP=1 GOODPUT_SIM_NODE_ROOT="$d/node" \
      /usr/bin/time -f %M -o "$d/time" "$bin" agent --source nvml --db "$d/a.db" --no-socket \
      "${listen[@]}" --interval 1s --duration "${wall_s}s" --quiet --stats \
      --proc-root "$d/node/proc" --jobmap-dir "$d/node/jobmap" >"$d/stats.json" 2>"$d/err" &
    ;;
  fast0 | fast1)
    /usr/bin/time -f %M -o "$d/time" "$bin" agent --source "sim:$FAST" --speed "${c#fast}" \
      --duration 16m --no-socket --quiet --stats --db "$d/a.db" "${listen[@]}" \
      >"$d/stats.json" 2>"$d/err" &
    ;;
  esac
  local tpid=$!
  if [ "$c" = nvml8 ] || [ "$c" = fast1 ]; then
    sleep 1
    scrape "$port" "$d" "$tpid"
  fi
  wait "$tpid" || { cat "$d/err" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$name" "$r" "$(cat "$d/time")" \
    "$(field max_rss_kib "$d/stats.json")" "$(cpu_per_scrape "$d/metrics")" \
    "$(field live_passes "$d/stats.json")"
}

cases="nvml8 plain8 fast0"
[ "${SPEED1:-0}" = 1 ] && cases="$cases fast1"
printf 'case\tbuild\tround\ttime_%%M_kib\tmax_rss_kib\tscrape_cpu_ms\tlive_passes\n'
for c in $cases; do
  for ((r = 1; r <= rounds; r++)); do
    [ -n "$old" ] && run_case old "$old" "$c" "$r"
    run_case new "$new" "$c" "$r"
  done
done
