#!/usr/bin/env bash
# run.sh [--mb N]: goodput trace vs HTA on the same traces, on this machine.
# HTA needs Debian's python3-pandas, numpy, plotly, networkx, ijson (installed here with apt,
# only for the benchmark) and its source in a scratch folder outside the repo (/tmp/hta).
set -eu
MB=200; [ "${1:-}" = "--mb" ] && MB=$2
GOODPUT=${GOODPUT:-build/goodput}; DATA=${GOODPUT_DATA:-../shared/data}
sudo apt-get install -y python3-pandas python3-numpy python3-plotly python3-networkx python3-ijson >/dev/null 2>&1 || echo "apt install failed: HTA column will be empty"
[ -d /tmp/hta ] || git clone -q https://github.com/facebookresearch/HolisticTraceAnalysis /tmp/hta 2>/dev/null || echo "no HTA checkout"
for d in "$DATA"/kineto/*/; do
  s=$(basename "$d"); bytes=$(for f in "$d"*; do zcat -f "$f"; done | wc -c)
  /usr/bin/time -f "%e %M" -o /tmp/gp.time "$GOODPUT" trace "$d" > /dev/null
  read -r w rss < /tmp/gp.time
  printf '%-24s %8.1f MB  goodput %6.2f s %7d KiB  %6.0f MB/s\n' "$s" "$(echo "$bytes/1e6" | bc -l)" "$w" "$rss" "$(echo "$bytes/1e6/($w+0.001)" | bc -l)"
  if [ -d /tmp/hta ] && python3 -c 'import pandas' 2>/dev/null; then
    /usr/bin/time -f "HTA %e s %M KiB" python3 -c "import sys; sys.path.insert(0,'/tmp/hta'); from hta.trace_analysis import TraceAnalysis as T; a=T(trace_dir='$d'); a.get_temporal_breakdown(visualize=False); a.get_idle_time_breakdown(ranks=a.t.get_ranks(), visualize=False); a.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True); a.get_comm_comp_overlap(visualize=False); a.get_cuda_kernel_launch_stats(ranks=a.t.get_ranks(), visualize=False)" > /dev/null 2>/tmp/hta.err || true
    tail -1 /tmp/hta.err
  fi
done
syn=/tmp/gp-synth-$MB; [ -d "$syn" ] || python3 bench/traces/gen_synth.py "$syn" --mb "$MB"
bytes=$(cat "$syn"/*.json | wc -c)
/usr/bin/time -f "%e %M %U" -o /tmp/gp.time "$GOODPUT" trace "$syn" > /dev/null
read -r w rss user < /tmp/gp.time
printf 'synthetic %d MB, %d ranks: %.2f s wall, %.2f s CPU, %d KiB peak RSS, %.0f MB/s per core\n' "$((bytes/1000000))" "$(ls "$syn" | wc -l)" "$w" "$user" "$rss" "$(echo "$bytes/1e6/$user" | bc -l)"
