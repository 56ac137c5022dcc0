#!/usr/bin/env bash
# run.sh [--rows N] [--runs R] [--seed S]: `goodput cluster pai2020` against the same report
# computed with pandas (report_pandas.py, Debian's python3-pandas), on a synthetic PAI 2020
# trace of N task + instance rows (gen_pai2020.py; default 5,000,000), cached under
# bench/out/clusters/ (git-ignored).
#
# 1. Both reports are computed and compared figure by figure (compare.py); the script fails
#    loudly when they disagree, before any timing is reported.
# 2. Each tool runs R times (default 3) under /usr/bin/time -v; medians of wall time, CPU time
#    and peak RSS are printed, with the speed-up and memory ratio against the targets
#    (goodput >= 20x faster, <= 1/5 of pandas' peak RSS).
# Env: BUILD (default build), GOODPUT (default $BUILD/goodput).
set -eu
cd "$(dirname "$0")/../.."
ROWS=5000000 RUNS=3 SEED=2020
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "usage: $0 [--rows N] [--runs R] [--seed S]" >&2; exit 2 ;;
  esac
done
BUILD=${BUILD:-build}
GOODPUT=${GOODPUT:-$BUILD/goodput}
PY=/usr/bin/python3
OUT=bench/out/clusters
DATA=$OUT/pai2020-$ROWS-s$SEED
mkdir -p "$OUT"

if ! $PY -c 'import pandas' 2>/dev/null; then
  echo "installing python3-pandas with apt (benchmark only)"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get install -y python3-pandas python3-numpy >/dev/null
fi
[ -x "$GOODPUT" ] || make BUILD="$BUILD" "$GOODPUT" >/dev/null
if [ ! -f "$DATA/.complete" ]; then
  rm -rf "$DATA.tmp"
  echo "generating $ROWS rows into $DATA (once; cached)"
  $PY bench/clusters/gen_pai2020.py "$DATA.tmp" --rows "$ROWS" --seed "$SEED"
  touch "$DATA.tmp/.complete"
  rm -rf "$DATA"
  mv "$DATA.tmp" "$DATA"
fi
bytes=$(cat "$DATA"/*.csv | wc -c)
echo "data: $DATA, $(cat "$DATA"/*.csv | wc -l) rows in 6 tables, $((bytes / 1000000)) MB"
for f in "$DATA"/*.csv; do printf '  %-28s %9d rows\n' "$(basename "$f")" "$(wc -l < "$f")"; done

# prints "wall_s cpu_s rss_kib" from a /usr/bin/time -v file
parse_time() {
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
    /User time/ { u = $2 } /System time/ { s = $2 } /Maximum resident set size/ { r = $2 }
    END { printf "%.2f %.2f %d\n", w, u + s, r }' "$1"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: > "$OUT/goodput.times"
: > "$OUT/pandas.times"
for i in $(seq 1 "$RUNS"); do
  /usr/bin/time -v -o "$OUT/gp.time" "$GOODPUT" cluster pai2020 "$DATA" --json > "$OUT/goodput.json"
  parse_time "$OUT/gp.time" >> "$OUT/goodput.times"
  /usr/bin/time -v -o "$OUT/pd.time" $PY bench/clusters/report_pandas.py "$DATA" > "$OUT/pandas.json"
  parse_time "$OUT/pd.time" >> "$OUT/pandas.times"
  echo "run $i: goodput $(tail -1 "$OUT/goodput.times")  pandas $(tail -1 "$OUT/pandas.times")  (wall s, cpu s, peak RSS KiB)"
  if [ "$i" = 1 ] && ! $PY bench/clusters/compare.py "$OUT/goodput.json" "$OUT/pandas.json"; then
    echo "FAIL: goodput and pandas disagree on the report (see above); no timing reported" >&2
    exit 1
  fi
done

gw=$(cut -d' ' -f1 "$OUT/goodput.times" | median); gc=$(cut -d' ' -f2 "$OUT/goodput.times" | median)
gr=$(cut -d' ' -f3 "$OUT/goodput.times" | median)
pw=$(cut -d' ' -f1 "$OUT/pandas.times" | median); pc=$(cut -d' ' -f2 "$OUT/pandas.times" | median)
pr=$(cut -d' ' -f3 "$OUT/pandas.times" | median)
awk -v gw="$gw" -v gc="$gc" -v gr="$gr" -v pw="$pw" -v pc="$pc" -v pr="$pr" -v n="$RUNS" 'BEGIN {
  sp = pw / (gw > 0.005 ? gw : 0.005); mr = pr / gr
  printf "median of %d runs:\n", n
  printf "  goodput  wall %7.2f s  cpu %7.2f s  peak RSS %8.1f MB\n", gw, gc, gr / 1024
  printf "  pandas   wall %7.2f s  cpu %7.2f s  peak RSS %8.1f MB\n", pw, pc, pr / 1024
  printf "  speed-up %.1fx (target >= 20x: %s); memory 1/%.1f of pandas (target <= 1/5: %s)\n",
         sp, sp >= 20 ? "met" : "MISSED", mr, mr >= 5 ? "met" : "MISSED"
}'
