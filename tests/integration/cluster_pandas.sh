#!/bin/sh
# cluster_pandas.sh: `goodput cluster pai2020` against an independent pandas computation of the
# same report (bench/clusters/report_pandas.py) on a small synthetic PAI 2020 trace
# (bench/clusters/gen_pai2020.py, 20,000 task + instance rows): every figure must agree
# (bench/clusters/compare.py). Skips when Debian's python3-pandas is not installed.
set -eu
G=${GOODPUT:-build/goodput}
PY=/usr/bin/python3
$PY -c 'import pandas, numpy' 2>/dev/null || { echo "skip: python3-pandas not installed"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
$PY bench/clusters/gen_pai2020.py "$T/pai" --rows 20000 --seed 7 > /dev/null
"$G" cluster pai2020 "$T/pai" --json > "$T/g.json"
$PY bench/clusters/report_pandas.py "$T/pai" > "$T/p.json"
$PY bench/clusters/compare.py "$T/g.json" "$T/p.json"
# the generator is deterministic for a seed
$PY bench/clusters/gen_pai2020.py "$T/pai2" --rows 20000 --seed 7 > /dev/null
for f in "$T"/pai/*.csv; do cmp -s "$f" "$T/pai2/$(basename "$f")" || { echo "generator not deterministic: $f"; exit 1; }; done
echo "cluster_pandas: ok"
