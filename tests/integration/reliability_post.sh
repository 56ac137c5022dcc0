#!/usr/bin/env bash
# reliability_post.sh: POST /api/v1/events says exactly which lines the agent will refuse,
# for every reason, the cap of live job ids included (issue 24): "accepted" is what gets
# stored, and each refused line is listed with its number and reason (malformed,
# time_ahead, time_behind, jobs_overflow). 1000 jobs are POSTed, then a body whose 30 new
# jobs cross the cap of 1024 (ingest/jobcap.h), with a malformed line, a far-future step
# and a good step of a known job. The store holds exactly the accepted lines' jobs and
# /metrics counts the overflow on the http transport.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
LIB="$SRC/$BUILD/tests/lib/libnvidia-ml.so.1"
for t in curl python3 sqlite3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
[ -f "$LIB" ] || { echo "skip: $LIB not built (make $BUILD/tests/lib/libnvidia-ml.so.1)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-rel-post-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
HP=$(free_port)
U="http://127.0.0.1:$HP"
GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$SRC/examples/scenarios/demo.conf" \
  "$GOODPUT" agent --source nvml --db "$tmp/gp.db" --no-socket --listen "127.0.0.1:$HP" \
  --interval 200ms --flush 1s --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
for i in $(seq 100); do curl -sf "$U/metrics" >/dev/null && break; sleep 0.1; done
curl -sf "$U/metrics" >/dev/null || fail "agent did not come up: $(cat "$tmp/agent.log")"
post() { # body file -> answer file; prints the HTTP status
  curl -s -o "$2" -w '%{http_code}' --data-binary "@$1" "$U/api/v1/events"
}
metric() { curl -sf "$U/metrics" | awk -v k="$1" '$1 == k { v = $2 } END { print v == "" ? 0 : v }'; }

for k in $(seq 0 999); do echo "hello job=p-$k v=1 unit=samples"; done >"$tmp/a.txt"
code=$(post "$tmp/a.txt" "$tmp/a.json")
[ "$code" = 202 ] || fail "first POST answered $code: $(cat "$tmp/a.json")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert (r["accepted"], r["rejected"], r["errors"]) == (1000, 0, []), r' "$tmp/a.json"

now=$(python3 -c 'import time; print(time.time_ns())')
{ for k in $(seq 0 29); do echo "hello job=q-$k v=1 unit=samples"; done
  echo "this is not an event line"
  echo "step job=p-1 step=1 units=8 ts=$((now + 400 * 86400 * 1000000000))"
  echo "step job=p-2 step=1 units=8"
  echo "step job=p-3 step=1 units=8 ts=$((now - 30 * 86400 * 1000000000))"; } >"$tmp/b.txt"
code=$(post "$tmp/b.txt" "$tmp/b.json")
[ "$code" = 202 ] || fail "second POST answered $code: $(cat "$tmp/b.json")"
python3 - "$tmp/b.json" <<'PY' || fail "answer: $(cat "$tmp/b.json")"
import json, sys
r = json.load(open(sys.argv[1]))
want = [(n, "jobs_overflow") for n in range(25, 31)] + [(31, "malformed"), (32, "time_ahead"), (34, "time_behind")]
got = [(e["line"], e["reason"]) for e in r["errors"]]
assert got == want, got
assert r["accepted"] == 24 + 1 and r["rejected"] == len(want), r
assert all("job 'q-" in e["error"] for e in r["errors"][:6]), r["errors"][:6]
PY
# A known job is still taken past the cap.
echo "step job=p-5 step=1 units=8" >"$tmp/c.txt"
code=$(post "$tmp/c.txt" "$tmp/c.json")
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert (r["accepted"], r["rejected"]) == (1, 0), r' "$tmp/c.json" ||
  fail "third POST ($code): $(cat "$tmp/c.json")"

# What the agent did with them: the accepted lines are stored, the refused ones are counted.
for i in $(seq 60); do
  [ "$(metric 'goodput_ingest_lines_total{transport="http",result="parsed"}')" = 1026 ] && break; sleep 0.1
done
[ "$(metric 'goodput_ingest_lines_total{transport="http",result="parsed"}')" = 1026 ] ||
  fail "http lines parsed: $(metric 'goodput_ingest_lines_total{transport="http",result="parsed"}'), expected 1026"
[ "$(metric 'goodput_ingest_jobs_overflow_total{transport="http"}')" = 6 ] ||
  fail "http overflow: $(metric 'goodput_ingest_jobs_overflow_total{transport="http"}')"
[ "$(metric 'goodput_ingest_rejected_lines_total{transport="http",reason="time_ahead"}')" = 1 ] || fail "time_ahead not counted"
[ "$(metric 'goodput_ingest_rejected_lines_total{transport="http",reason="malformed"}')" = 1 ] || fail "malformed not counted"
grep -q "http: more than 1024 live job ids" "$tmp/agent.log" || fail "no log line for the cap: $(cat "$tmp/agent.log")"
kill -TERM $apid; wait $apid || fail "agent exit $?"; apid=
q=$(sqlite3 "$tmp/gp.db" "SELECT count(*) FROM jobs WHERE id LIKE 'q-%'")
[ "$q" = 24 ] || fail "store holds $q of the q- jobs, expected the 24 accepted"
s=$(sqlite3 "$tmp/gp.db" "SELECT group_concat(job_id) FROM (SELECT job_id FROM events WHERE kind = (SELECT kind FROM events WHERE job_id='p-2' AND step=1) AND step = 1 ORDER BY job_id)")
[ "$s" = "p-2,p-5" ] || fail "stored steps: $s, expected p-2,p-5"
echo "ok: POST named 6 jobs_overflow, 1 malformed, 1 time_ahead, 1 time_behind lines; accepted = stored"
