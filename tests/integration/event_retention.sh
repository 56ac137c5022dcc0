#!/usr/bin/env bash
# The agent's event retention (--event-retention, gp_store_retain_events; docs/reliability.md
# "Ended jobs' results") on the path users run: scenario -> agent -> store -> report.
#   - two trainers end and the agent seals their results (retention_events.conf); then an
#     agent continues the store's clock (retention_events_next.conf, a trainer running the
#     whole time) once with every event kept and once with --event-retention 2m;
#   - with retention: the ended jobs' events are gone and marked (job_events_pruned), the
#     running job's are all there, the agent counted what it deleted, the store's live
#     pages shrink;
#   - report text and JSON, diagnose text and JSON are those without retention, but for
#     what says so (a note per pruned job; events_pruned_before_ns in JSON);
#   - whatever would compute a pruned job from its events is refused with one line naming
#     retention (diagnose --window/--job, compare), diagnose --windows lists it unknown, and
#     a diagnosis with other options (--price) leaves it out, noted, and gives the others.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"
command -v jq >/dev/null || fail "jq missing (Debian jq)"
q() { sqlite3 "$1" "$2"; }

"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/retention_events.conf" --speed 0 \
  --duration 2h --no-socket --quiet --retention keep --event-retention keep --db "$tmp/s.db"
[ "$(q "$tmp/s.db" "SELECT count(*) FROM job_results WHERE sum_fp != 'sealing'")" = 2 ] ||
  fail "the agent did not store both ended jobs' results"
ended_events=$(q "$tmp/s.db" "SELECT count(*) FROM events WHERE job_id IN ('done1', 'done2')")
[ "$ended_events" -gt 1000 ] || fail "only $ended_events events of the ended jobs"
for v in keep pruned; do
  mkdir -p "$tmp/$v"; cp "$tmp/s.db" "$tmp/$v/s.db"
  r=keep; [ $v = pruned ] && r=2m
  "$GOODPUT" agent --source "sim:$src/tests/data/scenarios/retention_events_next.conf" \
    --speed 0 --duration 20m --no-socket --quiet --retention keep --event-retention $r \
    --stats --db "$tmp/$v/s.db" >"$tmp/$v/stats.json"
done
k=$tmp/keep/s.db p=$tmp/pruned/s.db
[ "$(q "$p" "SELECT count(*) FROM events WHERE job_id IN ('done1', 'done2')")" = 0 ] ||
  fail "the ended jobs' events were not deleted"
[ "$(q "$p" "SELECT group_concat(job_id) FROM (SELECT job_id FROM job_events_pruned ORDER BY 1)")" = done1,done2 ] ||
  fail "the pruned jobs are not marked: $(q "$p" "SELECT * FROM job_events_pruned")"
[ "$(q "$k" "SELECT count(*) FROM job_events_pruned")" = 0 ] || fail "pruned with 'keep'"
live_k=$(q "$k" "SELECT count(*) FROM events WHERE job_id = 'live'")
live_p=$(q "$p" "SELECT count(*) FROM events WHERE job_id = 'live'")
[ "$live_k" -gt 1000 ] && [ "$live_p" = "$live_k" ] ||
  fail "the running job's events: $live_p with retention, $live_k without"
pruned_stat=$(sed -n 's/.*"events_pruned": \([0-9]*\).*/\1/p' "$tmp/pruned/stats.json")
[ "$pruned_stat" = "$ended_events" ] || fail "--stats events_pruned $pruned_stat, deleted $ended_events"
used() { q "$1" "SELECT (SELECT page_count FROM pragma_page_count) - (SELECT freelist_count FROM pragma_freelist_count)"; }
[ "$(used "$p")" -lt "$(( $(used "$k") * 9 / 10 ))" ] ||
  fail "the store's live pages did not shrink: $(used "$p") with retention, $(used "$k") without"

for v in keep pruned; do
  (cd "$tmp/$v" && "$GOODPUT" report --db s.db >report.txt &&
    "$GOODPUT" report --db s.db --json >report.json &&
    "$GOODPUT" diagnose --db s.db --no-write >diag.txt &&
    "$GOODPUT" diagnose --db s.db --no-write --json >diag.json)
done
[ "$(grep -c '^note: done[12]: events deleted by retention' "$tmp/pruned/report.txt")" = 2 ] ||
  fail "the report does not say which jobs were pruned: $(cat "$tmp/pruned/report.txt")"
grep -v '^note: done[12]: events deleted by retention' "$tmp/pruned/report.txt" |
  cmp -s - "$tmp/keep/report.txt" || fail "report text differs after pruning"
[ "$(jq '[.jobs[] | select(.events_pruned_before_ns > 0)] | length' "$tmp/pruned/report.json")" = 2 ] ||
  fail "report JSON does not mark the pruned jobs"
jq 'del(.jobs[].events_pruned_before_ns)' "$tmp/pruned/report.json" >"$tmp/a.json"
jq . "$tmp/keep/report.json" >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "report JSON differs after pruning: $(diff "$tmp/a.json" "$tmp/b.json" | head)"
[ "$(grep -c '^note: done[12]: events deleted by retention' "$tmp/pruned/diag.txt")" = 2 ] ||
  fail "diagnose does not say which jobs were pruned"
grep -v '^note: done[12]: events deleted by retention' "$tmp/pruned/diag.txt" |
  cmp -s - "$tmp/keep/diag.txt" || fail "diagnose text differs after pruning"
jq -S .findings "$tmp/pruned/diag.json" >"$tmp/a.json"; jq -S .findings "$tmp/keep/diag.json" >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "diagnose JSON findings differ after pruning"
[ "$(jq '[.jobs[] | select(.events_pruned_before_ns > 0)] | length' "$tmp/pruned/diag.json")" = 2 ] ||
  fail "diagnose JSON does not list the pruned jobs' metrics as unknown"

# Reads that would compute a pruned job from its events: one clear line, non-zero.
refused() {
  local out rc=0
  out=$("$GOODPUT" "$@" 2>&1 >/dev/null) || rc=$?
  [ $rc -ne 0 ] || fail "$* succeeded on a pruned job"
  [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && grep -q "deleted by the agent's event retention" <<<"$out" ||
    fail "$*: not one line naming retention: $out"
}
refused diagnose --db "$p" --no-write --window 5m --job done1
refused diagnose --db "$p" --no-write --windows --job done2
refused compare --db "$p" done1 done2
refused compare --db "$p" done1@0m..10m done1@10m..20m
"$GOODPUT" diagnose --db "$p" --no-write --windows >"$tmp/w.txt"
[ "$(grep -c '^== done[12]  events deleted by retention .*: windows unknown' "$tmp/w.txt")" = 2 ] &&
  grep -q '^== live ' "$tmp/w.txt" || fail "diagnose --windows: $(head -20 "$tmp/w.txt")"
# Other options than the stored results': the pruned jobs have no findings to give (not
# computed from what is left), the others are diagnosed, the notes say which.
"$GOODPUT" diagnose --db "$p" --no-write --price 3 >"$tmp/price.txt" ||
  fail "diagnose --price fails once jobs are pruned"
grep -q '\[job live\]' "$tmp/price.txt" && ! grep -q '\[job done' "$tmp/price.txt" &&
  [ "$(grep -c '^note: done[12]: events deleted by retention' "$tmp/price.txt")" = 2 ] ||
  fail "diagnose --price with pruned jobs: $(cat "$tmp/price.txt")"
# A later run under a pruned job's id: its events stay (retention deletes only the range
# the moved result covers), and the job is unknown: left out with one line saying why,
# never the first run's result shown as the job's; done2 is still served.
cp "$p" "$tmp/again.db"
"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/retention_events_again.conf" \
  --speed 0 --duration 15m --no-socket --quiet --retention keep --event-retention 2m \
  --db "$tmp/again.db"
again=$(q "$tmp/again.db" "SELECT count(*) FROM events WHERE job_id = 'done1'")
[ "$again" -gt 1000 ] || fail "the later run's events of done1 were deleted: $again left"
"$GOODPUT" report --db "$tmp/again.db" --json >"$tmp/again.json" 2>"$tmp/again.err" ||
  fail "report with a reused pruned id: $(cat "$tmp/again.err")"
[ "$(jq -r '[.jobs[].id] | join(",")' "$tmp/again.json")" = done2,live ] ||
  fail "report with a reused pruned id lists: $(jq -c '[.jobs[].id]' "$tmp/again.json")"
[ "$(wc -l <"$tmp/again.err")" = 1 ] &&
  grep -q "^goodput report: job 'done1': .* has rows since .*: its figures are unknown" "$tmp/again.err" ||
  fail "report does not say why done1 is unknown: $(cat "$tmp/again.err")"
# The server says the same as the report: the API's jobs carry the same
# events_pruned_before_ns (one stored row read by both), and the reused id's job answers
# 410 with the reason, not a server error.
serve_json() { # DB PATH: the path's JSON body on the first line, its status on the last
  "$GOODPUT" serve --db "$1" --listen 127.0.0.1:0 --duration 20s 2>"$tmp/serve.err" &
  local spid=$! url=
  for _ in $(seq 50); do url=$(sed -n 's/.* on \(http:[^ ]*\) .*/\1/p' "$tmp/serve.err"); [ -n "$url" ] && break; sleep 0.1; done
  [ -n "$url" ] || fail "serve did not start: $(cat "$tmp/serve.err")"
  curl -s -w '\n%{http_code}\n' "${url}$2"
  kill "$spid"; wait "$spid" 2>/dev/null || :
}
serve_json "$p" api/v1/jobs >"$tmp/api.txt"
[ "$(tail -1 "$tmp/api.txt")" = 200 ] || fail "api/v1/jobs: $(cat "$tmp/api.txt")"
head -1 "$tmp/api.txt" | jq -S '[.jobs[] | {id, events_pruned_before_ns}]' >"$tmp/a.json"
jq -S '[.jobs[] | {id, events_pruned_before_ns}]' "$tmp/pruned/report.json" >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "API and report disagree on pruned jobs: $(diff "$tmp/a.json" "$tmp/b.json")"
serve_json "$tmp/again.db" api/v1/jobs/done1 >"$tmp/api.txt"
[ "$(tail -1 "$tmp/api.txt")" = 410 ] && head -1 "$tmp/api.txt" | jq -r .error | grep -q "has rows since" ||
  fail "api/v1/jobs/done1 of a reused pruned id: $(cat "$tmp/api.txt")"
echo "event_retention: ok ($ended_events events of 2 ended jobs pruned, $live_p of the running one kept; live pages $(used "$k") -> $(used "$p"))"
