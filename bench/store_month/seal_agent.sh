#!/usr/bin/env bash
# seal_agent.sh GOODPUT [OLD_GOODPUT]: the agent's own peak RSS and tick lateness while it
# seals a day-long 8-GPU job (docs/benchmarks.md "Store over a month", Update on the
# sealing child). Writes a store of days.conf's first day (the job ends at the end of the
# run, so nothing is sealed yet), then runs each build's agent for 70 s of wall clock on a
# copy (an idle 8-GPU node, start = now), whose first pass seals the job; two interleaved
# rounds; prints each agent's --stats line (max_rss_kib and process_cpu_s: the agent
# process; seal_*: the sealing child, this build only). /usr/bin/time's %M would not do:
# wait4 reports the largest of the agent and its reaped children.
set -euo pipefail
new=$1; old=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=${TMPDIR:-/tmp}/seal_agent.$$; mkdir -p "$tmp"; trap 'rm -rf "$tmp"' EXIT
sed -e 's/^duration = 72h/start = 2026-12-01T00:00:00Z\nduration = 1430m/' \
  -e '/^\[job day2\]/,$d' "$here/days.conf" >"$tmp/day.conf"
printf '[node]\nname = idle-node\ngpus = 8\nmodel = H100-SXM\nseed = 3\nstart = now\nduration = 10m\n' >"$tmp/idle.conf"
"$new" agent --source "sim:$tmp/day.conf" --speed 0 --duration 1430m --no-socket --quiet \
  --db "$tmp/day.db"
for round in 1 2; do
  for g in ${old:+"$old"} "$new"; do
    rm -f "$tmp"/b.db*; cp "$tmp/day.db" "$tmp/b.db"
    echo "== $g round $round, load $(cut -d' ' -f1 /proc/loadavg)"
    # every event kept (a build with event retention would also prune the sealed job)
    keep=(); case "$("$g" agent --help 2>&1)" in *--event-retention*) keep=(--event-retention keep) ;; esac
    "$g" agent --source "sim:$tmp/idle.conf" --duration 70s --no-socket --quiet --stats "${keep[@]}" \
      --db "$tmp/b.db"
    echo "stored results: $(sqlite3 "$tmp/b.db" "SELECT count(*) FROM job_results WHERE sum_fp != 'sealing'")"
  done
done
