#!/usr/bin/env bash
# text_width.sh: text output fits 100 columns (issue 23 item 6) on the demo scenario's
# store: report, diagnose, pipeline, the demo itself, the help of every command; and the
# report never prints a cut bucket name, "1 items", "-0%" or the old ALLOC_GH header.
# Not yet covered: trace and cluster text (kernel names, per-stream tables), which are
# still wider; see the report of the ux branch.
# asan-skip: layout only; the renderers' memory paths run under ASan in the unit tests
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
tmp=$(mktemp -d /tmp/gp-width-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$GOODPUT" demo --duration 20m --speed 0 --no-live --db "$tmp/demo.db" >"$tmp/demo.txt"
"$GOODPUT" report --db "$tmp/demo.db" >"$tmp/report.txt"
"$GOODPUT" diagnose --db "$tmp/demo.db" --all --no-write >"$tmp/diagnose.txt"
# the demo has no pipeline job: exit 3 with one line saying so (its width is checked below)
set +e; "$GOODPUT" pipeline --db "$tmp/demo.db" >"$tmp/pipeline.txt" 2>&1; rc=$?; set -e
[ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/pipeline.txt")" -eq 1 ] &&
    grep -q "no job in .* has stage events" "$tmp/pipeline.txt" ||
    { echo "FAIL pipeline on a store without pipeline jobs: exit $rc: $(cat "$tmp/pipeline.txt")"; exit 1; }
for c in $("$GOODPUT" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{exit}'); do
    "$GOODPUT" "$c" --help >"$tmp/help-$c.txt"
done
"$GOODPUT" --help >"$tmp/help.txt"
bad=0
for f in "$tmp"/*.txt; do
    w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$f")
    echo "$(basename "$f"): widest line $w"
    if [ "$w" -gt 100 ]; then
        echo "FAIL $(basename "$f") is $w columns wide:"; awk 'length($0) > 100' "$f" | head -3
        bad=1
    fi
done
[ -s "$tmp/report.txt" ] && [ "$(wc -l <"$tmp/diagnose.txt")" -gt 10 ]
for pat in 'productiv ' 'idle_allo ' ' 1 items' '-0%' 'ALLOC_GH' 'PRODUCTIVE_GH'; do
    if grep -qF -- "$pat" "$tmp/report.txt" "$tmp/demo.txt"; then echo "FAIL prints '$pat'"; bad=1; fi
done
exit $bad
