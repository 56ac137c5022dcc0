#!/usr/bin/env bash
# asan-skip: replays through the binary; the dedup keys and store paths run under ASan in test_store_hostile and test_proto
# reliability_dedup.sh: at-least-once delivery never changes results.
#  - The demo scenario replayed twice into one store: the same number of events and the same
#    report (text and JSON) as one replay.
#  - A second agent on a store in use exits 1 with one line naming the holder's PID; the
#    holder is undisturbed, and once it is gone (even by kill -9) a new agent starts.
#  - Lines resent to a running agent (client retries, with and without seq=) are stored
#    once and counted as duplicates in /metrics; a restarted agent fed the same lines
#    again stores nothing new.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in curl python3 sqlite3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-rel-dedup-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill -9 $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
SCEN="$SRC/examples/scenarios/demo.conf"
replay() { "$GOODPUT" agent --source "sim:$SCEN" --db "$1" --speed 0 --no-socket --quiet; }
events() { sqlite3 "$1" "SELECT count(*) FROM events"; }

# --- the demo replayed twice
replay "$tmp/once.db"
replay "$tmp/twice.db"
replay "$tmp/twice.db"
n1=$(events "$tmp/once.db") n2=$(events "$tmp/twice.db")
[ "$n1" -gt 10000 ] || fail "one replay stored only $n1 events"
[ "$n1" = "$n2" ] || fail "one replay: $n1 events, two replays: $n2"
for fmt in text json; do
  flag=; [ $fmt = json ] && flag=--json
  "$GOODPUT" report --db "$tmp/once.db" $flag | sed "s#$tmp/once.db#DB#" >"$tmp/once.$fmt"
  "$GOODPUT" report --db "$tmp/twice.db" $flag | sed "s#$tmp/twice.db#DB#" >"$tmp/twice.$fmt"
  cmp -s "$tmp/once.$fmt" "$tmp/twice.$fmt" || {
    diff "$tmp/once.$fmt" "$tmp/twice.$fmt" | head -20; fail "$fmt report differs after a second replay"; }
done
# and goodput is not collapsed: every training job that made progress has goodput > 0
python3 - "$tmp/twice.json" <<'EOF'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
trained = [j for j in jobs if j["kind"] == "training" and j["kept_steps"] and j["allocated_gpu_s"]]
assert trained and all(j["goodput"] and j["goodput"] > 0.05 for j in trained), trained
EOF

# --- one agent per store
P=$(free_port)
U="http://127.0.0.1:$P"
start_agent() {
  "$GOODPUT" agent --source "sim:$SCEN" --db "$tmp/live.db" --speed 1 --no-socket \
    --listen "127.0.0.1:$P" --flush 1s --quiet >"$tmp/agent.log" 2>&1 &
  apid=$!
  for i in $(seq 100); do curl -sf "$U/metrics" >/dev/null && return 0; sleep 0.1; done
  fail "agent did not come up: $(cat "$tmp/agent.log")"
}
start_agent
set +e
"$GOODPUT" agent --source "sim:$SCEN" --db "$tmp/live.db" --speed 0 --no-socket >"$tmp/out2" 2>"$tmp/err2"
rc=$?
set -e
[ $rc = 1 ] || fail "second agent exited $rc: $(cat "$tmp/err2")"
[ "$(wc -l <"$tmp/err2")" = 1 ] || fail "second agent said more than one line: $(cat "$tmp/err2")"
grep -q "in use by another goodput agent (pid $apid," "$tmp/err2" || fail "no holder PID: $(cat "$tmp/err2")"
kill -0 $apid || fail "the first agent died"

# --- retries to a running agent are stored once
clock=$(curl -sf "$U/metrics" | awk '$1 == "goodput_agent_clock_seconds" { printf "%d", $2 }')
S=1000000000
body=""
for k in $(seq 1 20); do body+="step job=retry step=$k units=4 ts=$(( (clock - 30 + k) * S ))"$'\n'; done
for k in $(seq 1 5); do body+="request job=retry-s seq=$k arrival=$(( (clock - 10) * S )) ts=$(( (clock - 5) * S )) prompt=3 output=4"$'\n'; done
post() { curl -sf -o /dev/null --data-binary "$body" "$U/api/v1/events" || fail "POST refused"; }
post; post; post
dups() { curl -sf "$U/metrics" | awk '$1 == "goodput_agent_events_duplicate_total" { print $2 }'; }
for i in $(seq 50); do [ "$(dups)" = 50 ] && break; sleep 0.1; done
[ "$(dups)" = 50 ] || fail "duplicates counted: $(dups), expected 50 (2 resends x 25 lines)"
kill -9 $apid; wait $apid 2>/dev/null || true; apid=
stored() { sqlite3 "$tmp/live.db" "SELECT count(*) FROM events WHERE job_id LIKE 'retry%'"; }
[ "$(stored)" = 25 ] || fail "stored $(stored) retry events, expected 25"

# --- after a kill -9 the lock is free; the restarted agent does not store the lines again
start_agent
d0=$(dups) # the replayed scenario's own first events may already be stored too
post
for i in $(seq 50); do [ "$(dups)" -ge $((d0 + 25)) ] && break; sleep 0.1; done
[ "$(dups)" -ge $((d0 + 25)) ] || fail "restarted agent: duplicates $(dups), expected >= $d0 + 25"
kill -TERM $apid; wait $apid || fail "agent exit $?"; apid=
[ "$(stored)" = 25 ] || fail "after restart: stored $(stored) retry events, expected 25"
echo "reliability_dedup: ok"
