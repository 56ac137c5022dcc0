#!/usr/bin/env bash
# run.sh [--mb N] [--reps N] [--hta-synth]: goodput trace vs HTA on the same traces, on this
# machine; prints markdown tables of medians (wall time, peak RSS, CPU time) for bench/RESULTS.md.
#
# HTA runs with Debian's python3-pandas, numpy, plotly, networkx, ijson (installed here with
# apt, only for the benchmark) under /usr/bin/python3, from a scratch checkout outside this
# repository: HTA_DIR (default /tmp/hta; e.g. `git clone
# https://github.com/facebookresearch/HolisticTraceAnalysis /tmp/hta`, never committed). The
# calls are those of ../shared/data/oracle/*/HOW.md (bench/traces/hta_calls.py).
# The synthetic multi-rank trace comes from gen_synth.py (--mb 2048 for the 2 GB run); HTA is
# run on it only with --hta-synth (it needs several GB of RAM per 100 MB of trace).
# Runs alternate (goodput, HTA, goodput, HTA, ...) so both see the same load, and each is
# timed by build/bench/cpurun (CPU to the microsecond; `make build/bench/cpurun`, or CPURUN=),
# else by GNU time (CPU in units of 10 ms, coarser than goodput's whole run on small sets).
set -eu
MB=200 REPS=3 HTA_SYNTH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --mb) MB=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --hta-synth) HTA_SYNTH=1; shift ;;
    *) echo "usage: $0 [--mb N] [--reps N] [--hta-synth]" >&2; exit 2 ;;
  esac
done
GOODPUT=${GOODPUT:-build/goodput}; DATA=${GOODPUT_DATA:-../shared/data}
HTA_DIR=${HTA_DIR:-/tmp/hta}; PY=/usr/bin/python3; HERE=$(dirname "$0")
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get install -y python3-pandas python3-numpy python3-plotly python3-networkx \
  python3-ijson >/dev/null 2>&1 || echo "apt install failed: the HTA columns will be empty"
hta_ok=1
[ -d "$HTA_DIR/hta" ] || { echo "no HTA checkout in $HTA_DIR: HTA columns empty"; hta_ok=0; }
$PY -c 'import pandas, numpy, plotly, networkx, ijson' 2>/dev/null || { echo "HTA's Python deps missing"; hta_ok=0; }

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

CPURUN=${CPURUN:-$(dirname "$GOODPUT")/bench/cpurun}
# run1 NAME CMD...: one run; appends "wall_s rss_kib user_s sys_s" to /tmp/gp-bench-NAME.times
run1() {
  local name=$1; shift; local f=/tmp/gp-bench-$name.times
  if [ -x "$CPURUN" ]; then
    "$CPURUN" "$f" "$@" 2>/tmp/gp-bench.err || { echo "$name failed: $(tail -3 /tmp/gp-bench.err)" >&2; return 1; }
  else
    /usr/bin/time -f "%e %M %U %S" -o /tmp/gp-bench.time "$@" > /dev/null 2>/tmp/gp-bench.err \
      || { echo "$name failed: $(tail -3 /tmp/gp-bench.err)" >&2; return 1; }
    tail -1 /tmp/gp-bench.time >> "$f"
  fi
}
# stats NAME: medians of NAME's runs: W (wall s), R (peak RSS KiB), C (CPU s)
stats() {
  local f=/tmp/gp-bench-$1.times
  W=$(awk '{print $1}' "$f" | median); R=$(awk '{print $2}' "$f" | median)
  C=$(awk '{print $3 + $4}' "$f" | median)
}
# measure NAME CMD...: REPS runs of one command, then stats
measure() {
  local name=$1; shift; : > "/tmp/gp-bench-$name.times"
  for _ in $(seq "$REPS"); do run1 "$name" "$@" || { W=nan R=0 C=nan; return 1; }; done
  stats "$name"
}

echo "| set | JSON MB | goodput wall | goodput RSS | goodput CPU | HTA wall | HTA RSS | HTA CPU | speed-up (wall) | speed-up (CPU) | RSS ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for d in "$DATA"/kineto/*/; do
  s=$(basename "$d"); bytes=$(for f in "$d"*; do zcat -f "$f"; done | wc -c)
  : > "/tmp/gp-bench-gp-$s.times"; : > "/tmp/gp-bench-hta-$s.times"; hta_run=$hta_ok gp_run=1
  for _ in $(seq "$REPS"); do
    run1 "gp-$s" "$GOODPUT" trace "$d" || { gp_run=0; break; }
    [ $hta_run = 1 ] && { run1 "hta-$s" $PY "$HERE/hta_calls.py" "$HTA_DIR" "$d" || hta_run=0; }
  done
  [ $gp_run = 1 ] || continue
  stats "gp-$s"; gw=$W gr=$R gc=$C hw=nan hr=0 hc=nan
  if [ $hta_run = 1 ]; then stats "hta-$s"; hw=$W hr=$R hc=$C; fi
  awk -v s="$s" -v b="$bytes" -v gw="$gw" -v gr="$gr" -v gc="$gc" -v hw="$hw" -v hr="$hr" -v hc="$hc" 'BEGIN {
    printf "| %s | %.1f | %.3f s | %.1f MB | %.3f s | %s | %.1f MB | %s | %s | %s | %s |\n", s, b/1e6,
      gw, gr/1024, gc, (hw == "nan") ? "-" : sprintf("%.2f s", hw), hr/1024,
      (hc == "nan") ? "-" : sprintf("%.2f s", hc), (hw == "nan") ? "-" : sprintf("%.0fx", hw/gw),
      (hc == "nan") ? "-" : sprintf("%.0fx", hc/gc), (hr == 0) ? "-" : sprintf("1/%.1f", hr/gr) }'
done

syn=/tmp/gp-synth-$MB; [ -d "$syn" ] || $PY "$HERE/gen_synth.py" "$syn" --mb "$MB"
bytes=$(cat "$syn"/*.json | wc -c)
measure "gp-synth-$MB" "$GOODPUT" trace "$syn"
echo
echo "synthetic $((bytes / 1000000)) MB, $(ls "$syn" | wc -l) ranks: goodput $W s wall, $C s CPU," \
  "$((R / 1024)) MB peak RSS, $(awk -v b="$bytes" -v c="$C" 'BEGIN {printf "%.0f", b/1e6/c}') MB/s per core of CPU"
if [ $HTA_SYNTH = 1 ] && [ $hta_ok = 1 ]; then
  REPS=1 measure "hta-synth-$MB" $PY "$HERE/hta_calls.py" "$HTA_DIR" "$syn" &&
    echo "synthetic $((bytes / 1000000)) MB: HTA $W s wall, $((R / 1024)) MB peak RSS"
fi
