#!/usr/bin/env bash
# trace_cli.sh: `goodput trace` end to end on the real Kineto and Nsight data: text, --json
# (checked against the temporal breakdown in HTA's oracle CSV, computed independently here
# with awk), --html (self-contained: no external script or URL), and bad input giving exit code 3.
set -eu
DATA=${GOODPUT_DATA:-../shared/data}
[ -d "$DATA/kineto/hta_trace_filter" ] || { echo "skip: no real data at $DATA (kineto/hta_trace_filter)"; exit 77; }
command -v python3 >/dev/null || { echo "python3 missing (scripts/install-deps installs it)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$GOODPUT" trace "$DATA/kineto/param_dlrm_8rank" > "$tmp/out.txt"
# The text's temporal table: one row per rank (8), span = idle + compute + non-compute
# (each rounded to 1 us) and the three shares sum to 100%.
awk '/^Temporal breakdown/ { t = 1; next } t && /^ *rank/ { next } t && NF == 0 { t = 0 }
     t && NF == 8 { n++; seen[$1] = 1
       if ($2 - $3 - $4 - $5 > 2 || $3 + $4 + $5 - $2 > 2) { print "rank " $1 ": span " $2 " != parts"; bad = 1 }
       s = $6 + $7 + $8; if (s < 99.9 || s > 100.1) { print "rank " $1 ": shares sum to " s; bad = 1 } }
     END { for (r = 0; r < 8; r++) if (!(r in seen)) { print "no row for rank " r; bad = 1 }
           if (n != 8) { print n " temporal rows, expected 8"; bad = 1 }; exit bad }' "$tmp/out.txt" ||
  { echo "temporal breakdown text:"; cat "$tmp/out.txt"; exit 1; }
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
! grep -qE '<script[^>]* src=|https?://' "$tmp/r.html" # offline: nothing to load
# Nsight Systems: the temporal parts add up to the span, and the longest kernel is the
# longest in the export's own kernel table (read here with python's sqlite3).
"$GOODPUT" trace "$DATA/nsys/con_kernel.sqlite" --json > "$tmp/nsys.json"
python3 - "$tmp/nsys.json" "$DATA/nsys/con_kernel.sqlite" <<'PY'
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))["ranks"]
assert len(r) == 1 and r[0]["source"] == "nsys", [(x["rank"], x["source"]) for x in r]
t = r[0]["temporal"]
assert abs(t["idle_us"] + t["compute_us"] + t["non_compute_us"] - t["span_us"]) < 1, t
(longest,) = sqlite3.connect(sys.argv[2]).execute(
    "select max(end - start) / 1000.0 from CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
ours = max(k["max_us"] for k in r[0]["kernels"])
assert abs(ours - longest) < 0.01, (ours, longest)
PY
printf '{"traceEvents": [{"ph": "X",, ]}' > "$tmp/bad.json"
set +e
"$GOODPUT" trace "$tmp/bad.json" 2> "$tmp/err"; rc=$?
set -e
[ $rc -eq 3 ] || { echo "bad JSON: exit $rc"; exit 1; }
# one line naming the file and where the JSON breaks: the second comma, byte 29 (1-based)
grep -qx ".*bad.json: invalid JSON at byte 29: .*" "$tmp/err" || { echo "bad JSON error: $(cat "$tmp/err")"; exit 1; }
[ "$(wc -l < "$tmp/err")" -eq 1 ] || { echo "bad JSON error is not one line: $(cat "$tmp/err")"; exit 1; }
echo ok
