#!/usr/bin/env bash
# `goodput sim` from the command line: one-line errors naming file:line and key with the
# right exit codes, CSV/JSON/event output with the promised shape, and byte-identical
# output for the same scenario and seed.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_err() { # exit-code, pattern, command...
  local want=$1 pat=$2; shift 2
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq "$want" ] || fail "$* exited $rc, expected $want: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -ge 1 ] || fail "$*: no error message"
  grep -q -- "$pat" "$tmp/err" || fail "$*: error '$(cat "$tmp/err")' does not mention '$pat'"
}

expect_err 2 "usage" "$GOODPUT" sim
expect_err 2 "unknown option" "$GOODPUT" sim examples/scenarios/demo.conf --bogus
expect_err 2 "--interval" "$GOODPUT" sim examples/scenarios/demo.conf --interval soon
expect_err 3 "nope.conf" "$GOODPUT" sim "$tmp/nope.conf"
printf '[node]\ngpus = 2\n[job a]\ngpus = 0\nloader_workers = x\n' >"$tmp/bad.conf"
expect_err 3 "bad.conf:5: key 'loader_workers'" "$GOODPUT" sim "$tmp/bad.conf"

scen=examples/scenarios/consumer.conf
"$GOODPUT" sim "$scen" --csv >"$tmp/a.csv"
"$GOODPUT" sim "$scen" --csv >"$tmp/b.csv"
cmp -s "$tmp/a.csv" "$tmp/b.csv" || fail "two runs of $scen differ"
head -1 "$tmp/a.csv" | grep -q '^ts_ns,uuid,gpu_util,sm_active' || fail "CSV header"
rows=$(($(wc -l <"$tmp/a.csv") - 1))
[ "$rows" -eq 2400 ] || fail "expected 2 GPUs x 1200 samples, got $rows rows"
# profiling = no: the sm_active column stays empty
awk -F, 'NR > 1 && $4 != "" { bad = 1 } END { exit bad }' "$tmp/a.csv" || fail "sm_active known without profiling"

"$GOODPUT" sim "$scen" --json --interval 10s >"$tmp/a.json"
[ "$(wc -l <"$tmp/a.json")" -eq 240 ] || fail "JSON lines count"
if command -v python3 >/dev/null; then
  python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/a.json" || fail "JSON"
fi

"$GOODPUT" sim examples/scenarios/restarts.conf --events >"$tmp/ev"
grep -q '^restart job=flaky step=' "$tmp/ev" || fail "no restart event"
grep -q '^phase job=flaky name=checkpoint_restore edge=begin' "$tmp/ev" || fail "no restore phase"
grep -q '^job job=queued state=allocated' "$tmp/ev" || fail "no allocation of the never-ready job"
! grep -q '^step job=queued' "$tmp/ev" || fail "the never-ready job made progress"
awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^ts=/) { t = substr($i, 4) + 0; if (t < last) exit 1; last = t } }' "$tmp/ev" ||
  fail "events are not in time order"
"$GOODPUT" sim examples/scenarios/demo.conf --summary >"$tmp/sum"
grep -q '^train-starved' "$tmp/sum" || fail "summary lacks train-starved"
echo "ok"
