#!/usr/bin/env bash
# asan-skip: it compares peak resident memory (a sanitizer's shadow distorts it); the claim path runs under ASan in test_job_results
# The agent seals ended jobs' results in a child process (src/cli/agent_results.c), on the
# path users run: a scenario -> `goodput agent --stats` -> store -> `goodput report`.
# On a job whose diagnosis input is larger than the whole agent (results_fast.conf):
#   - the agent's own peak RSS (max_rss_kib, getrusage of the agent process) stays below
#     the sealing's (seal_max_rss_kib, the child's, from wait4): the sealing's memory is
#     not in the agent; the child's CPU is reported apart (seal_cpu_s > 0);
#   - the result is stored (no claim left behind), the report serves it, and report text,
#     JSON and diagnose text equal the same store with the result deleted.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$tmp/stats.json"; }

mkdir -p "$tmp/with" "$tmp/without"
"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/results_fast.conf" --speed 0 \
  --duration 16m --no-socket --quiet --stats --db "$tmp/with/s.db" >"$tmp/stats.json"
agent_kib=$(field max_rss_kib); seal_kib=$(field seal_max_rss_kib)
passes=$(field seal_passes); stored=$(field seal_stored); seal_cpu=$(field seal_cpu_s)
[ -n "$agent_kib" ] && [ -n "$seal_kib" ] && [ -n "$passes" ] || fail "no seal figures in --stats: $(cat "$tmp/stats.json")"
[ "$passes" -ge 1 ] || fail "no sealing pass"
[ "$stored" = 1 ] || fail "the sealing child stored $stored results, expected 1"
awk -v c="$seal_cpu" 'BEGIN { exit !(c > 0) }' || fail "the sealing child's CPU is not reported ($seal_cpu)"
# The job's diagnosis input alone is larger than the agent: a sealing in the agent's
# process would put the agent's peak above the child's.
[ "$agent_kib" -lt "$seal_kib" ] ||
  fail "agent peak RSS $agent_kib KiB is not below the sealing's $seal_kib KiB"

[ "$(sqlite3 "$tmp/with/s.db" "SELECT count(*) FROM job_results WHERE job_id = 'fast' AND sum_fp != 'sealing'")" = 1 ] ||
  fail "no stored result for the ended job"
[ "$(sqlite3 "$tmp/with/s.db" "SELECT count(*) FROM job_results WHERE sum_fp = 'sealing'")" = 0 ] ||
  fail "a claim was left behind"
served=$(GOODPUT_RESULTS_STATS=1 "$GOODPUT" report --db "$tmp/with/s.db" 2>&1 >/dev/null |
  sed -n 's/.*served: \([0-9]*\) summaries, \([0-9]*\) diagnoses/\1 \2/p')
[ "$served" = "1 1" ] || fail "the report served '$served' stored results, expected '1 1'"
cp "$tmp/with/s.db" "$tmp/without/s.db"
sqlite3 "$tmp/without/s.db" "DELETE FROM job_results"
for d in with without; do
  (cd "$tmp/$d" && "$GOODPUT" report --db s.db >report.txt &&
    "$GOODPUT" report --db s.db --json >report.json &&
    "$GOODPUT" diagnose --db s.db --no-write >diag.txt)
done
for f in report.txt report.json diag.txt; do
  cmp -s "$tmp/with/$f" "$tmp/without/$f" || fail "$f differs with the stored result"
done
# With no ended job to seal the agent starts no child (it costs ~3 ms of CPU a pass): the
# same scenario stopped while its job still runs.
"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/results_fast.conf" --speed 0 \
  --duration 3m --no-socket --quiet --stats --db "$tmp/running.db" >"$tmp/stats.json"
[ "$(field seal_passes)" = 0 ] || fail "a sealing child started with no ended job: $(cat "$tmp/stats.json")"
[ "$(field seal_idle_passes)" -ge 1 ] || fail "no idle sealing pass counted: $(cat "$tmp/stats.json")"
echo "job_results_child: ok (agent peak $agent_kib KiB, sealing child $seal_kib KiB, $seal_cpu s CPU)"
