#!/usr/bin/env bash
# inflate.sh [REPS]: `goodput trace` on every shared .json.gz trace with libdeflate
# (GOODPUT_INFLATE=libdeflate, needs libdeflate0) and with zlib (the default), same
# binary, same run, alternating; prints a markdown table of median CPU (user + sys), wall
# time and peak RSS per file, and the ratio. Results: docs/benchmarks.md ("Trace inflate").
set -eu
REPS=${1:-7}
GOODPUT=${GOODPUT:-build/goodput}; DATA=${GOODPUT_DATA:-../shared/data}
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
if ! ldconfig -p | grep -q 'libdeflate\.so\.0'; then
  echo "libdeflate0 is not installed: only zlib would be measured" >&2; exit 1
fi
echo "| file | gzip MB | JSON MB | zlib CPU | libdeflate CPU | CPU ratio | zlib wall | libdeflate wall | zlib RSS | libdeflate RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|"
tot_z=0 tot_d=0
for f in $(find "$DATA"/kineto -name "*.json.gz" -size +${MIN_KB:-0}k | sort); do
  : > /tmp/gp-infl-z; : > /tmp/gp-infl-d
  for _ in $(seq "$REPS"); do
    /usr/bin/time -f "%e %M %U %S" -a -o /tmp/gp-infl-z "$GOODPUT" trace "$f" >/dev/null 2>&1
    GOODPUT_INFLATE=libdeflate /usr/bin/time -f "%e %M %U %S" -a -o /tmp/gp-infl-d "$GOODPUT" trace "$f" >/dev/null 2>&1
  done
  zc=$(awk '{print $3 + $4}' /tmp/gp-infl-z | median); dc=$(awk '{print $3 + $4}' /tmp/gp-infl-d | median)
  zw=$(awk '{print $1}' /tmp/gp-infl-z | median); dw=$(awk '{print $1}' /tmp/gp-infl-d | median)
  zr=$(awk '{print $2}' /tmp/gp-infl-z | median); dr=$(awk '{print $2}' /tmp/gp-infl-d | median)
  gz=$(stat -c %s "$f"); js=$(zcat "$f" | wc -c)
  awk -v f="${f#"$DATA"/kineto/}" -v gz="$gz" -v js="$js" -v zc="$zc" -v dc="$dc" -v zw="$zw" \
    -v dw="$dw" -v zr="$zr" -v dr="$dr" 'BEGIN {
    printf "| %s | %.2f | %.1f | %.3f s | %.3f s | %s | %.3f s | %.3f s | %.1f MiB | %.1f MiB |\n",
      f, gz/1e6, js/1e6, zc, dc, (dc > 0) ? sprintf("%.2fx", zc/dc) : "-", zw, dw, zr/1024, dr/1024 }'
done
