#!/usr/bin/env bash
# bench/store_month/results.sh: `goodput report` on a multi-day store with workload events
# (bench/store_month/days.conf: an 8-GPU trainer, three day-long runs, ~1M events a day),
# served from the ended jobs' stored results against computed from the raw rows.
# Usage: bench/store_month/results.sh GOODPUT SEAL_RESULTS [RUNS]
# KEEP_DB=PATH keeps the store there and reuses it (the agent takes minutes to write it).
# Steps: the agent writes the store (storing results as it seals each job; every event
# kept, --event-retention keep, so the computed copies below have whole histories); SEAL_RESULTS
# stores them again with this build's engine (a store from another build would not be
# served); a copy has them deleted; then RUNS interleaved rounds of `goodput report` and
# `goodput report --json` on each, CPU (user+sys) and peak RSS from /usr/bin/time, and
# the outputs compared byte for byte. OLD_GOODPUT=PATH (a build from before stored results)
# adds a third copy, downgraded to schema 12, reported by that build. Never a timed test.
set -euo pipefail
goodput=$(realpath "$1") seal=$(realpath "$2") runs=${3:-3}
[ -z "${OLD_GOODPUT:-}" ] || OLD_GOODPUT=$(realpath "$OLD_GOODPUT")
src=$(cd "$(dirname "$0")/../.." && pwd)
db=${KEEP_DB:-${TMPDIR:-/tmp}/goodput-bench-days.db}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
if [ ! -s "$db" ]; then
  /usr/bin/time -f 'agent: wall_s=%e cpu_s=%U+%S max_rss_kib=%M' "$goodput" agent \
    --source "sim:$src/bench/store_month/days.conf" --speed 0 --duration 72h --no-socket \
    --quiet --event-retention keep --db "$db"
fi
"$seal" "$db"
mkdir -p "$dir/with" "$dir/without"
cp "$db" "$dir/with/s.db"; cp "$db" "$dir/without/s.db"
sqlite3 "$dir/without/s.db" "DELETE FROM job_results"
vs="without with"
if [ -n "${OLD_GOODPUT:-}" ]; then
  mkdir -p "$dir/old"; cp "$dir/without/s.db" "$dir/old/s.db"
  sqlite3 "$dir/old/s.db" "DROP TABLE job_results; PRAGMA user_version = 12;"
  vs="old without with"
fi
echo "store: $(du -m "$db" | cut -f1) MB, $(sqlite3 "$db" "SELECT count(*) FROM events") events," \
  "$(sqlite3 "$db" "SELECT count(*) FROM jobs WHERE ended_ns > 0") ended jobs," \
  "$(sqlite3 "$db" "SELECT count(*) FROM job_results") stored results"
for r in $(seq "$runs"); do
  for v in $vs; do
    bin=$goodput; [ "$v" = old ] && bin=$OLD_GOODPUT
    for fmt in text json; do
      opt=; [ $fmt = json ] && opt=--json
      (cd "$dir/$v" && GOODPUT_RESULTS_STATS=1 /usr/bin/time -f "$v $fmt: wall_s=%e cpu_s=%U+%S max_rss_kib=%M" \
        "$bin" report --db s.db $opt >"$fmt.out" 2>"$fmt.err") || { cat "$dir/$v/$fmt.err"; exit 1; }
      echo "run $r $(grep -h 'wall_s=' "$dir/$v/$fmt.err") ($(sed -n 's/.*served: //p' "$dir/$v/$fmt.err"))"
    done
  done
done
for fmt in text json; do
  cmp "$dir/with/$fmt.out" "$dir/without/$fmt.out" && echo "$fmt: identical with and without"
  [ -z "${OLD_GOODPUT:-}" ] || { cmp "$dir/old/$fmt.out" "$dir/without/$fmt.out" &&
    echo "$fmt: identical to the old build's"; }
done
[ -z "${KEEP_DB:-}" ] && rm -f "$db" "$db-wal" "$db-shm"
exit 0
