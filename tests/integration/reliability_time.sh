#!/usr/bin/env bash
# reliability_time.sh: event times are checked against the agent's clock on every
# transport. An agent on a wall-clock source (the test NVML library) receives a closed job
# over UDP and POST; then far-future and far-past alloc and step lines for the same job,
# over UDP and POST. Every hostile line is rejected: the POST answer names each one (line
# number and reason), /metrics counts them by transport and reason, and the job's report
# is the same as before they were sent. Flags: --max-skew-ahead narrows the rule;
# --accept-old lifts the lower bound; a bad duration is a usage error.
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
LIB="$SRC/$BUILD/tests/lib/libnvidia-ml.so.1"
for t in curl python3 sqlite3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
[ -f "$LIB" ] || { echo "skip: $LIB not built (make $BUILD/tests/lib/libnvidia-ml.so.1)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-rel-time-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
port() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, int(sys.argv[1])); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"; }
HP=$(port 1) UP=$(port 2)
U="http://127.0.0.1:$HP"

start_agent() { # extra flags...
  GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$SRC/examples/scenarios/demo.conf" \
    "$GOODPUT" agent --source nvml --db "$tmp/gp.db" --no-socket --udp "127.0.0.1:$UP" \
    --listen "127.0.0.1:$HP" --interval 200ms --flush 1s --quiet "$@" >"$tmp/agent.log" 2>&1 &
  apid=$!
  for i in $(seq 100); do curl -sf "$U/metrics" >/dev/null && return 0; sleep 0.1; done
  fail "agent did not come up: $(cat "$tmp/agent.log")"
}
stop_agent() { kill -TERM $apid; wait $apid || fail "agent exit $?: $(cat "$tmp/agent.log")"; apid=; }
udp() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(sys.argv[2].encode(), ("127.0.0.1", int(sys.argv[1])))' "$UP" "$1"; }
metric() { # name{labels} -> value (0 when absent)
  curl -sf "$U/metrics" | awk -v k="$1" '$1 == k { v = $2 } END { print v == "" ? 0 : v }'
}
wait_metric() { # series value
  for i in $(seq 50); do [ "$(metric "$1")" = "$2" ] && return 0; sleep 0.1; done
  fail "$1 = $(metric "$1"), expected $2"
}

start_agent
now=$(python3 -c 'import time; print(time.time_ns())')
S=1000000000
t0=$((now - 600 * S)) t1=$((now - 300 * S))
# A closed job on GPU 0 of the fake node: 5 minutes, ready after 60 s, a step every 10 s.
udp "hello job=tj v=1 unit=samples
alloc job=tj uuid=GPU-tj-0 from=$t0 to=$t1
phase job=tj name=init edge=begin ts=$t0
phase job=tj name=init edge=end ts=$((t0 + 60 * S))"
body=""
for k in $(seq 1 24); do body+="step job=tj step=$k units=32 ts=$((t0 + (60 + 10 * k) * S))"$'\n'; done
code=$(curl -s -o "$tmp/ok.json" -w '%{http_code}' --data-binary "$body" "$U/api/v1/events")
[ "$code" = 202 ] || fail "POST of good lines answered $code: $(cat "$tmp/ok.json")"
wait_metric 'goodput_ingest_lines_total{transport="http",result="parsed"}' 24
wait_metric 'goodput_ingest_lines_total{transport="udp",result="parsed"}' 4
sleep 1.5 # one flush
"$GOODPUT" report --db "$tmp/gp.db" --job tj --json >"$tmp/before.json"

# Hostile lines for the same job: 400 days ahead, 30 days behind, 1 hour ahead, 8 days behind.
far_future=$((now + 400 * 86400 * S)) far_past=$((now - 30 * 86400 * S))
hostile="alloc job=tj uuid=GPU-tj-0 from=$far_future
alloc job=tj uuid=GPU-tj-1 from=$far_past to=$t1
step job=tj step=99 units=32 ts=$((now + 3600 * S))
step job=tj step=98 units=32 ts=$((now - 8 * 86400 * S))
alloc job=tj uuid=GPU-tj-2 from=$t0 to=$far_future"
udp "$hostile"
code=$(curl -s -o "$tmp/post.json" -w '%{http_code}' --data-binary "$hostile" "$U/api/v1/events")
[ "$code" = 400 ] || fail "POST of only hostile lines answered $code: $(cat "$tmp/post.json")"
# The answer says exactly which lines were rejected and why.
python3 - "$tmp/post.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["accepted"] == 0 and r["rejected"] == 5, r
got = [(e["line"], e["reason"]) for e in r["errors"]]
want = [(1, "time_ahead"), (2, "time_behind"), (3, "time_ahead"), (4, "time_behind"), (5, "time_ahead")]
assert got == want, got
for e in r["errors"]:
    assert "receiver's clock" in e["error"], e
EOF
for tr in udp http; do
  wait_metric "goodput_ingest_rejected_lines_total{transport=\"$tr\",reason=\"time_ahead\"}" 3
  wait_metric "goodput_ingest_rejected_lines_total{transport=\"$tr\",reason=\"time_behind\"}" 2
done
sleep 1.2
stop_agent
# Nothing hostile reached the store; the job's report is unchanged.
[ "$(sqlite3 "$tmp/gp.db" "SELECT count(*) FROM allocations WHERE job_id='tj'")" = 1 ] ||
  fail "hostile allocation stored: $(sqlite3 "$tmp/gp.db" "SELECT * FROM allocations WHERE job_id='tj'")"
[ "$(sqlite3 "$tmp/gp.db" "SELECT count(*) FROM events WHERE job_id='tj' AND (ts_ns > $now + 600 * $S OR ts_ns < $now - 86400 * $S)")" = 0 ] ||
  fail "hostile events stored"
"$GOODPUT" report --db "$tmp/gp.db" --job tj --json >"$tmp/after.json"
python3 - "$tmp/before.json" "$tmp/after.json" <<'EOF'
import json, sys
def job(p):
    j = [x for x in json.load(open(p))["jobs"] if x["id"] == "tj"]
    assert len(j) == 1, p
    return j[0]
a, b = job(sys.argv[1]), job(sys.argv[2])
assert a == b, (a, b)
assert abs(a["allocated_gpu_s"] - 300) < 1e-6 and a["steps"] == 24, a
EOF

# --max-skew-ahead narrows the rule (1 min: a line 2 min ahead is refused, 30 s is taken);
# --accept-old takes 30-day-old lines (replays of old logs).
start_agent --max-skew-ahead 1m --accept-old
now=$(python3 -c 'import time; print(time.time_ns())')
code=$(curl -s -o "$tmp/p2.json" -w '%{http_code}' --data-binary "step job=t2 step=1 ts=$((now + 120 * S))
step job=t2 step=2 ts=$((now + 30 * S))
step job=t2 step=3 ts=$((now - 30 * 86400 * S))" "$U/api/v1/events")
[ "$code" = 202 ] || fail "POST answered $code: $(cat "$tmp/p2.json")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["accepted"]==2 and [(e["line"],e["reason"]) for e in r["errors"]]==[(1,"time_ahead")], r' "$tmp/p2.json"
stop_agent
set +e
"$GOODPUT" agent --source nvml --db "$tmp/x.db" --max-skew-behind soon >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "--max-skew-behind 'soon'" "$tmp/err" ||
  fail "bad --max-skew-behind: rc $rc, $(cat "$tmp/err")"
# emit checks a line by the same rule; --accept-old is a real flag there too
old=$(( $(python3 -c 'import time; print(time.time_ns())') - 30 * 86400 * S ))
set +e
"$GOODPUT" emit --check step job=x step=1 ts=$old >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 3 ] && grep -q "behind the receiver's clock.*--accept-old" "$tmp/err" ||
  fail "emit of a 30-day-old line: rc $rc, $(cat "$tmp/err")"
"$GOODPUT" emit --check --accept-old step job=x step=1 ts=$old | grep -q "ts=$old" ||
  fail "emit --accept-old refused an old line"
echo "reliability_time: ok"
