#!/usr/bin/env bash
# bench/store_month/rollup_retention.sh GOODPUT [DAYS] [ROLLUP_RETENTION]: the store's size
# over time with the 1-minute rollup retention (docs/benchmarks.md "Store over a month",
# Update: rollup retention). DAYS (default 9) day-long runs of days.conf's 8-GPU trainer
# (month_conf.sh) written by `goodput agent --speed 0` with the default raw and event
# retention and --rollup-retention ROLLUP_RETENTION (default 3d: a 1:10 scale of the 30-day
# default over 90 days; rollup rows are per GPU-minute and per GPU-hour, so their bytes
# scale with time, not with the retention). While the agent writes, every 20 s of wall
# time: the simulated day, the file's size, its used pages and the 1-minute and 1-hour
# rollup rows. Then bytes by table (dbstat) and `goodput report` CPU and peak RSS
# (/usr/bin/time, RUNS=3 rounds). Never a timed test.
# KEEP_DB=PATH keeps the store there and reuses it.
set -euo pipefail
goodput=$(realpath "$1") days=${2:-9} ret=${3:-3d} runs=${RUNS:-3}
here=$(cd "$(dirname "$0")" && pwd)
db=${KEEP_DB:-${TMPDIR:-/tmp}/goodput-bench-rollup-retention.db}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
q() { sqlite3 "$db" "$1"; }
if [ ! -s "$db" ]; then
  "$here/month_conf.sh" "$days" >"$dir/month.conf"
  /usr/bin/time -f 'agent: wall_s=%e cpu_s=%U+%S max_rss_kib=%M (sealing child included)' \
    "$goodput" agent --source "sim:$dir/month.conf" --speed 0 --duration "$((days * 24))h" \
    --no-socket --quiet --rollup-retention "$ret" --db "$db" &
  apid=$!
  echo "day size_bytes used_pages rollup_1m_rows rollup_1h_rows"
  while kill -0 "$apid" 2>/dev/null; do
    sleep 20
    t=$(q "SELECT max(t1_ns) FROM rollup_1h" 2>/dev/null) || continue
    [ -n "$t" ] || continue
    echo "$(awk -v t="$t" 'BEGIN { printf "%.2f", (t / 1e9 - 1767225600) / 86400 }')" \
      "$(stat -c %s "$db")" \
      "$(q "SELECT (SELECT page_count FROM pragma_page_count) - (SELECT freelist_count FROM pragma_freelist_count)" 2>/dev/null)" \
      "$(q "SELECT count(*) FROM rollup_1m" 2>/dev/null)" "$(q "SELECT count(*) FROM rollup_1h" 2>/dev/null)"
  done
  wait "$apid"
fi
echo "store: $(stat -c %s "$db") bytes ($(q "PRAGMA page_count") pages, $(q "PRAGMA freelist_count") free)"
echo "rollup_1m: $(q "SELECT count(*), min(t1_ns), max(t1_ns) FROM rollup_1m"); rollup_1h: $(q "SELECT count(*) FROM rollup_1h")"
echo "bytes by table and index (dbstat, > 100 kB):"
q "SELECT name, sum(pgsize) FROM dbstat GROUP BY name HAVING sum(pgsize) > 100000 ORDER BY 2 DESC" |
  sed 's/^/  /'
cp "$db" "$dir/s.db"
for r in $(seq "$runs"); do
  for what in text json; do
    a=(); [ $what = json ] && a=(--json)
    /usr/bin/time -f "report $what: cpu_s=%U+%S max_rss_kib=%M" \
      "$goodput" report --db "$dir/s.db" "${a[@]}" >"$dir/out.$what" 2>"$dir/err" || cat "$dir/err"
    tail -1 "$dir/err"
  done
done
grep -c '^note: .*1-hour rollups' "$dir/out.text" | sed 's/^/report notes on 1-hour rollups: /' || :
