#!/usr/bin/env bash
# bench/startup/run.sh [GOODPUT] [RUNS]: start-up cost of the commands a user runs most,
# for docs/benchmarks.md and bench/RESULTS.md ("Start-up and libraries").
#   - shared objects the dynamic loader maps (LD_DEBUG=files: one "generating link map"
#     per object, plus ld.so itself; the vDSO is not a file and is not counted), for
#     `goodput --version` and `goodput report --db` on a small store;
#   - median and 90th-percentile wall time of RUNS runs (default 200), spawn to exit;
#   - median CPU time (user + system) of those runs: on a loaded machine wall time is
#     mostly waiting for a core, CPU time is not;
#   - the largest peak RSS over those runs (wait4's ru_maxrss, as GNU time -v reports).
# /bin/true runs first as the floor: what exec and a libc-only process cost here.
# The stores are made by the simulator from the demo scenario (6 jobs): 1 and 10 simulated
# minutes (report's own work grows with the store; start-up does not).
# Never a timed test: numbers depend on the machine and its load (printed first).
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${1:-build/goodput}
RUNS=${2:-200}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -o "$TMP/spawn_time" bench/startup/spawn_time.c
for m in 1 10; do
    "$GOODPUT" agent --source sim:examples/scenarios/demo.conf --speed 0 --duration ${m}m \
        --no-socket --quiet --db "$TMP/${m}m.db"
done

count_objects() { # command... -> objects mapped by the loader, ld.so included
    local n
    n=$(LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -c 'generating link map')
    echo $((n + 1))
}

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "binary: $GOODPUT ($(stat -c %s "$GOODPUT") bytes), NEEDED: $(readelf -d "$GOODPUT" | grep -c NEEDED)"
printf '%-28s %8s %s\n' command objects timing
printf '%-28s %8s %s\n' /bin/true "$(count_objects /bin/true)" "$("$TMP/spawn_time" "$RUNS" /bin/true)"
for cmd in "--version" "report --db $TMP/1m.db" "report --db $TMP/10m.db"; do
    # shellcheck disable=SC2086 # word splitting of the command is intended
    objs=$(count_objects "$GOODPUT" $cmd)
    # shellcheck disable=SC2086
    t=$("$TMP/spawn_time" "$RUNS" "$GOODPUT" $cmd)
    label=${cmd/--db $TMP\//}
    printf '%-28s %8s %s\n' "${label%.db}" "$objs" "$t"
done
echo "objects mapped by --version:"
LD_DEBUG=files "$GOODPUT" --version 2>&1 >/dev/null | sed -n 's/.*file=\([^ ]*\) \[0\];  generating link map.*/  \1/p'
