#!/usr/bin/env bash
# trace_cli.sh: `goodput trace` end to end on the real Kineto and Nsight data: text, --json
# (checked against the temporal breakdown in HTA's oracle CSV, computed independently here
# with awk), --html (self-contained, no <script>), and bad input giving exit code 3.
set -eu
DATA=${GOODPUT_DATA:-../shared/data}
[ -d "$DATA/kineto/hta_trace_filter" ] || { echo "skip: no real data at $DATA (kineto/hta_trace_filter)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$GOODPUT" trace "$DATA/kineto/param_dlrm_8rank" > "$tmp/out.txt"
grep -q "Temporal breakdown" "$tmp/out.txt"
"$GOODPUT" trace "$DATA/kineto/hta_trace_filter" --json --html "$tmp/r.html" > "$tmp/out.json"
python3 - "$tmp/out.json" "$DATA/oracle/hta_trace_filter/temporal_breakdown.csv" <<'PY'
import csv, json, sys
ours = {r["rank"]: r["temporal"] for r in json.load(open(sys.argv[1]))["ranks"]}
for row in csv.DictReader(open(sys.argv[2])):
    t = ours[int(row["rank"])]
    assert abs(t["idle_us"] - float(row["idle_time(us)"])) < 1, row
    assert abs(t["span_us"] - float(row["kernel_time(us)"])) < 1, row
PY
grep -q "<svg" "$tmp/r.html"
! grep -q "<script" "$tmp/r.html"
"$GOODPUT" trace "$DATA/nsys/con_kernel.sqlite" --json > /dev/null
printf '{"traceEvents": [{"ph": "X",, ]}' > "$tmp/bad.json"
set +e
"$GOODPUT" trace "$tmp/bad.json" 2> "$tmp/err"; rc=$?
set -e
[ $rc -eq 3 ] || { echo "bad JSON: exit $rc"; exit 1; }
grep -q "byte" "$tmp/err"
echo ok
