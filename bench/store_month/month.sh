#!/usr/bin/env bash
# bench/store_month/month.sh GOODPUT [DAYS] [RUNS]: a month with workload events
# (docs/benchmarks.md "Store over a month", Update: events retention). DAYS (default 30)
# day-long runs of days.conf's 8-GPU trainer back to back (month_conf.sh: ~1M step and
# phase events and 691,200 samples and process rows a day) written by `goodput agent
# --speed 0` with the default retention (raw rows 3 days, events of sealed jobs 1 day),
# the agent's sealing child storing each ended job's result; then the store's size, its
# bytes per table and index (dbstat), and RUNS interleaved rounds of `goodput report`,
# `report --json` and `diagnose --no-write`, CPU (user+sys) and peak RSS from
# /usr/bin/time; last, the same report with the newest job's result deleted (what a
# running day-long job costs every report). Never a timed test.
# KEEP_DB=PATH keeps the store there and reuses it (writing a month takes ~30-60 min).
set -euo pipefail
goodput=$(realpath "$1") days=${2:-30} runs=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
db=${KEEP_DB:-${TMPDIR:-/tmp}/goodput-bench-month-events.db}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
if [ ! -s "$db" ]; then
  "$here/month_conf.sh" "$days" >"$dir/month.conf"
  /usr/bin/time -f 'agent: wall_s=%e cpu_s=%U+%S max_rss_kib=%M (sealing child included)' \
    "$goodput" agent --source "sim:$dir/month.conf" --speed 0 --duration "$((days * 24))h" \
    --no-socket --quiet --stats --db "$db"
fi
q() { sqlite3 "$db" "$1"; }
echo "store: $(stat -c %s "$db") bytes ($(q "PRAGMA page_count") pages, $(q "PRAGMA freelist_count") free)"
echo "rows: $(q "SELECT count(*) FROM samples") samples, $(q "SELECT count(*) FROM proc_samples") process rows," \
  "$(q "SELECT count(*) FROM events") events, $(q "SELECT count(*) FROM rollup_1m") 1-min rollups," \
  "$(q "SELECT count(*) FROM jobs WHERE ended_ns > 0") ended jobs, $(q "SELECT count(*) FROM job_results WHERE sum_fp != 'sealing'") stored results," \
  "$(q "SELECT count(*) FROM job_events_pruned") with events pruned"
echo "bytes by table and index (dbstat, > 1 MB):"
q "SELECT name, sum(pgsize) FROM dbstat GROUP BY name HAVING sum(pgsize) > 1000000 ORDER BY 2 DESC" |
  sed 's/^/  /'
cp "$db" "$dir/s.db"
# SEAL_RESULTS=PATH (build/bench/seal_results): store the unpruned ended jobs' results
# with the measuring build first (a store written by another build is otherwise computed
# for them; pruned jobs are served whatever build stored them).
[ -z "${SEAL_RESULTS:-}" ] || "$SEAL_RESULTS" "$dir/s.db"
for r in $(seq "$runs"); do
  for what in text json diagnose; do
    case $what in
      text) cmd=(report --db s.db) ;;
      json) cmd=(report --db s.db --json) ;;
      diagnose) cmd=(diagnose --db s.db --no-write) ;;
    esac
    (cd "$dir" && GOODPUT_RESULTS_STATS=1 /usr/bin/time -f "$what: wall_s=%e cpu_s=%U+%S max_rss_kib=%M" \
      "$goodput" "${cmd[@]}" >"$what.out" 2>"$what.err") || { cat "$dir/$what.err"; exit 1; }
    echo "run $r $(grep -h 'wall_s=' "$dir/$what.err") ($(sed -n 's/.*served: //p' "$dir/$what.err"))"
  done
done
awk '/^note: .*events deleted by retention/ { n++ } END { print "report notes on pruned jobs: " n + 0 }' \
  "$dir/text.out"
awk '!/wall_s=|served:/ && n++ < 5 { print "stderr: " $0 }' "$dir/text.err" "$dir/json.err"
# The newest job computed from its events, as a running one is on every report.
last=$(q "SELECT id FROM jobs ORDER BY ended_ns DESC LIMIT 1")
sqlite3 "$dir/s.db" "DELETE FROM job_results WHERE job_id = '$last'"
(cd "$dir" && GOODPUT_RESULTS_STATS=1 /usr/bin/time -f "text, $last computed: wall_s=%e cpu_s=%U+%S max_rss_kib=%M" \
  "$goodput" report --db s.db >/dev/null 2>"last.err") || { cat "$dir/last.err"; exit 1; }
grep -h 'wall_s=' "$dir/last.err"
[ -n "${KEEP_DB:-}" ] || rm -f "$db" "$db-wal" "$db-shm"
exit 0
