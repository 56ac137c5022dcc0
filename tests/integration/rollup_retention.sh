#!/usr/bin/env bash
# The agent's rollup retention (--rollup-retention, store/rollup.h gp_rollup_retain) on
# the path users run: scenario -> agent -> store -> report.
#   - a trainer runs 00:00-02:00 (rollup_retention.conf, every row kept); an agent then
#     continues the clock 04:00-07:00 (rollup_retention_next.conf, a trainer through it)
#     with --retention 1h, once keeping the 1-minute rollups and once with
#     --rollup-retention 2h: the minutes of whole hours up to 05:00 are deleted;
#   - the old job is then answered from the 1-hour rollups: its mean signals equal what
#     the 1-minute rollups of the store before retention give aggregated to the hour
#     (computed here from that store), its energy is within 0.1% of the kept run's (the
#     hour where it starts counts its part by the hour's mean power: that hour was lost
#     before, half of this job's energy), and the report says so (a note; JSON
#     telemetry_rollup_s 3600 and telemetry_rollup_until_ns);
#   - the running job straddles the tiers (04-05 hours, 05-06 minutes, 06-07 raw rows):
#     its energy too is within 0.1% of the kept run's;
#   - nothing else changes: the 1-hour rows, the minutes after the cutoff, every other
#     figure of the report; the API says what the report says, and its time series of the
#     old job has one point per hour, each what the minutes give for that hour.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap '[ -n "${GP_KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"
command -v jq >/dev/null || fail "jq missing (Debian jq)"
q() { sqlite3 "$1" "$2"; }
H=3600000000000
# |a - b| <= 1e-9 relative (sums of the same samples added in another order)
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a);
  if (b == "" || a == "" || d > 1e-9 * (m > 1e-12 ? m : 1e-12)) exit 1 }'; }

"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/rollup_retention.conf" --speed 0 \
  --duration 4h --no-socket --quiet --retention keep --event-retention keep --db "$tmp/s.db"
# What the 1-minute rollups give for job J aggregated to the hour, as the accounting folds
# hours: each hour bucket one interval from the allocation's start (or the previous hour)
# to its end (or the allocation's end).
expect() { # DB JOB T_FROM T_TO: mean gpu_util, mean sm_active over hours in (T_FROM, T_TO]
  q "$1" "WITH h AS (SELECT uuid, ((t1_ns - 1) / $H + 1) * $H AS T, sum(gpu_util_sum) us,
      sum(gpu_util_n) un, sum(sm_active_sum) ss, sum(sm_active_n) sn, max(t1_ns) last_t1
      FROM rollup_1m GROUP BY uuid, T),
    w AS (SELECT h.*, min(h.T, a.to_ns) - max(h.T - $H, a.from_ns) w
      FROM h JOIN allocations a ON a.uuid = h.uuid AND a.job_id = '$2'
      WHERE h.T > a.from_ns AND h.T - $H < a.to_ns AND h.T > $3 AND h.T <= $4)
    SELECT printf('%.17g %.17g', sum(us * 1.0 / un * w) / sum(w), sum(ss * 1.0 / sn * w) / sum(w)) FROM w"
}
read -r e_util e_sm <<<"$(expect "$tmp/s.db" old 0 9223372036854775807)"
[ -n "$e_sm" ] || fail "no expectation from the store before retention"
# |a - b| <= 0.1% of b: an hour's part of its energy from the hour's mean power
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; if (a == "" || b == "" || b <= 0 || d > 1e-3 * b) exit 1 }'; }

for v in keep pruned; do
  mkdir -p "$tmp/$v"; cp "$tmp/s.db" "$tmp/$v/s.db"
  r=keep; [ $v = pruned ] && r=2h
  "$GOODPUT" agent --source "sim:$src/tests/data/scenarios/rollup_retention_next.conf" \
    --speed 0 --duration 3h --no-socket --quiet --retention 1h --rollup-retention $r \
    --event-retention keep --db "$tmp/$v/s.db"
  (cd "$tmp/$v" && "$GOODPUT" report --db s.db >r.txt && "$GOODPUT" report --db s.db --json >r.json)
done
k=$tmp/keep/s.db p=$tmp/pruned/s.db
t5=$(q "$p" "SELECT $(date -ud 2026-01-01T05:00:00Z +%s)000000000")
# The deletion: every minute up to 05:00 (the last pass, at 07:00, cuts at 05:00: whole
# hours), none after; the bucket just inside the retention, (05:00, 05:01], is kept, the
# one just outside, (04:59, 05:00], is gone.
[ "$(q "$p" "SELECT count(*) FROM rollup_1m WHERE t1_ns <= $t5")" = 0 ] ||
  fail "1-minute rows up to 05:00 left: $(q "$p" "SELECT count(*) FROM rollup_1m WHERE t1_ns <= $t5")"
[ "$(q "$k" "SELECT count(*) FROM rollup_1m WHERE t1_ns = $t5")" = 2 ] &&
  [ "$(q "$p" "SELECT count(*) FROM rollup_1m WHERE t1_ns = $t5 + 60000000000")" = 2 ] ||
  fail "the minutes at the cutoff: $(q "$p" "SELECT min(t1_ns) FROM rollup_1m")"
[ "$(q "$p" "SELECT count(*) FROM rollup_1m WHERE t1_ns > $t5")" = \
  "$(q "$k" "SELECT count(*) FROM rollup_1m WHERE t1_ns > $t5")" ] || fail "minutes after the cutoff deleted"
# Nothing else changed: the 1-hour rows and the minutes kept are those of the kept run.
for t in "rollup_1h" "rollup_1m WHERE t1_ns > $t5"; do
  [ "$(q "$p" "SELECT * FROM $t ORDER BY 1, 2" | md5sum)" = "$(q "$k" "SELECT * FROM $t ORDER BY 1, 2" | md5sum)" ] ||
    fail "$t differs between the runs"
done

# The old job from the 1-hour rollups: what the minutes gave, aggregated to the hour.
j() { jq -r ".jobs[] | select(.id == \"$2\") | .$3" "$1"; }
close "$(j "$tmp/pruned/r.json" old mean_gpu_util)" "$e_util" ||
  fail "old: mean_gpu_util $(j "$tmp/pruned/r.json" old mean_gpu_util), the minutes by hour give $e_util"
close "$(j "$tmp/pruned/r.json" old mean_sm_active)" "$e_sm" ||
  fail "old: mean_sm_active $(j "$tmp/pruned/r.json" old mean_sm_active), the minutes by hour give $e_sm"
near "$(j "$tmp/pruned/r.json" old energy_kwh)" "$(j "$tmp/keep/r.json" old energy_kwh)" ||
  fail "old: energy_kwh $(j "$tmp/pruned/r.json" old energy_kwh) from the hours, $(j "$tmp/keep/r.json" old energy_kwh) kept"
e_kwh=$(j "$tmp/pruned/r.json" old energy_kwh)
[ "$(j "$tmp/pruned/r.json" old telemetry_rollup_s)" = 3600 ] &&
  [ "$(j "$tmp/pruned/r.json" old telemetry_rollup_until_ns)" = "$(q "$p" "SELECT max(to_ns) FROM allocations WHERE job_id = 'old'")" ] ||
  fail "old: the JSON does not say 1-hour rollups: $(jq -c '.jobs[0]' "$tmp/pruned/r.json")"
[ "$(j "$tmp/keep/r.json" old telemetry_rollup_s)" = null ] || fail "the kept run says 1-hour rollups"
grep -q '^note: old: telemetry before 2026-01-01 02:00:00Z read from 1-hour rollups' "$tmp/pruned/r.txt" &&
  grep -q '^note: live: telemetry before 2026-01-01 05:00:00Z read from 1-hour rollups' "$tmp/pruned/r.txt" ||
  fail "the report does not say which jobs read 1-hour rollups: $(cat "$tmp/pruned/r.txt")"

(cd "$tmp/pruned" && "$GOODPUT" report --db s.db --html r.html)
[ "$(grep -o 'telemetry partly from 1-hour rollups' "$tmp/pruned/r.html" | wc -l)" = 2 ] ||
  fail "the HTML report does not say which jobs read 1-hour rollups"

# The running job straddles the tiers: hours to 05:00, minutes to 06:00, raw rows after.
[ "$(j "$tmp/pruned/r.json" live telemetry_rollup_until_ns)" = "$t5" ] ||
  fail "live: telemetry_rollup_until_ns $(j "$tmp/pruned/r.json" live telemetry_rollup_until_ns)"
# Its means over whole hours are the minutes' (means of the same samples); its energy is
# the kept run's within the first hour's estimate.
close "$(j "$tmp/pruned/r.json" live mean_gpu_util)" "$(j "$tmp/keep/r.json" live mean_gpu_util)" ||
  fail "live: mean_gpu_util $(j "$tmp/pruned/r.json" live mean_gpu_util) vs $(j "$tmp/keep/r.json" live mean_gpu_util) kept"
near "$(j "$tmp/pruned/r.json" live energy_kwh)" "$(j "$tmp/keep/r.json" live energy_kwh)" ||
  fail "live: energy_kwh $(j "$tmp/pruned/r.json" live energy_kwh) from hours, minutes and rows, $(j "$tmp/keep/r.json" live energy_kwh) kept"
# Every other figure is the kept run's.
strip='del(.jobs[] | .mean_gpu_util, .mean_sm_active, .mean_tensor_active, .mean_dram_active,
  .mean_mem_used_frac, .energy_kwh, .busy_gpu_h, .telemetry_rollup_s, .telemetry_rollup_until_ns)'
jq -S "$strip | .jobs" "$tmp/pruned/r.json" >"$tmp/a.json"
jq -S "$strip | .jobs" "$tmp/keep/r.json" >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "report JSON differs beyond telemetry: $(diff "$tmp/a.json" "$tmp/b.json" | head)"

# The API says what the report says (the same rule, read from the same store).
"$GOODPUT" serve --db "$p" --listen 127.0.0.1:0 --duration 20s 2>"$tmp/serve.err" &
spid=$! url=
for _ in $(seq 50); do url=$(sed -n 's/.* on \(http:[^ ]*\) .*/\1/p' "$tmp/serve.err"); [ -n "$url" ] && break; sleep 0.1; done
[ -n "$url" ] || fail "serve did not start: $(cat "$tmp/serve.err")"
curl -s "${url}api/v1/jobs" >"$tmp/api.json"
# The old job's time series: one point per hour (1-hour resolution, said in "rollups"),
# each the mean over its GPUs of what their minutes give for that hour.
curl -s "${url}api/v1/jobs/old/series?points=4" >"$tmp/series.json"
kill "$spid"; wait "$spid" 2>/dev/null || :
[ "$(jq -c '[.rollups[] | .resolution_s]' "$tmp/series.json")" = '[3600]' ] &&
  [ "$(jq -c '[.signals.gpu_util[] | . != null]' "$tmp/series.json")" = '[false,true,false,true]' ] ||
  fail "old job's series: $(jq -c '{step_s, rollups, u: .signals.gpu_util}' "$tmp/series.json")"
for T in 1 2; do
  want=$(q "$tmp/s.db" "SELECT printf('%.17g', avg(u)) FROM (SELECT sum(gpu_util_sum) * 1.0 / sum(gpu_util_n) u
    FROM rollup_1m WHERE uuid IN (SELECT uuid FROM allocations WHERE job_id = 'old')
    AND t1_ns > ($T - 1) * $H + 1767225600000000000 AND t1_ns <= $T * $H + 1767225600000000000 GROUP BY uuid)")
  got=$(jq -r ".signals.gpu_util[$((2 * T - 1))]" "$tmp/series.json")
  close "$got" "$want" || fail "old job's series, hour $T: $got, the minutes give $want"
done
jq -S '[.jobs[] | {id, telemetry_rollup_s, telemetry_rollup_until_ns, energy_kwh}]' "$tmp/api.json" >"$tmp/a.json"
jq -S '[.jobs[] | {id, telemetry_rollup_s, telemetry_rollup_until_ns, energy_kwh}]' "$tmp/pruned/r.json" >"$tmp/b.json"
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "API and report disagree: $(diff "$tmp/a.json" "$tmp/b.json")"
echo "rollup_retention: ok ($(q "$k" "SELECT count(*) FROM rollup_1m") minutes kept vs $(q "$p" "SELECT count(*) FROM rollup_1m") with --rollup-retention 2h; old job util $e_util, energy $e_kwh kWh from the hours)"
