#!/usr/bin/env bash
# bench/startup/order.sh [GOODPUT]: writes bench/startup/hot.order, the functions of the
# goodput binary that `goodput --version` and `goodput report` (text, on the demo
# scenario's 1- and 10-minute stores) execute, one `.text.NAME` section a line. The link
# (mk/startup.mk) places these sections first, so those commands fault in a few 64 KiB
# windows of the binary's text instead of nearly all of it (docs/benchmarks.md, "Start-up
# and libraries"). Needs valgrind (callgrind). A stale list only costs pages: a function
# missing from it is still linked, after the listed ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${1:-build/goodput}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for m in 1 10; do
    "$GOODPUT" agent --source sim:examples/scenarios/demo.conf --speed 0 --duration ${m}m \
        --no-socket --quiet --db "$TMP/${m}m.db"
done
bin=$(readlink -f "$GOODPUT")
n=0
for cmd in "--version" "report --db $TMP/1m.db" "report --db $TMP/10m.db"; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # word splitting of the command is intended
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$n" "$GOODPUT" $cmd >/dev/null 2>&1
    callgrind_annotate --threshold=100 "$TMP/cg.$n" 2>/dev/null | grep -F "[$bin]" >>"$TMP/fns"
done
{
    echo "# made by bench/startup/order.sh: sections of the functions --version and report run"
    sed -E 's/.*:([A-Za-z_][A-Za-z0-9_.]*)(\x27[0-9]+)? \[.*/\1/' "$TMP/fns" | grep -v '^ ' |
        sort -u | sed 's/^/.text./'
} >bench/startup/hot.order
echo "bench/startup/hot.order: $(($(wc -l <bench/startup/hot.order) - 1)) functions"
