#!/usr/bin/env bash
# serve_events.sh: POST /api/v1/events into a running agent, end to end: good lines are
# accepted (202) and stored (the job appears in /api/v1/jobs and the http transport's
# parsed-line counter in /metrics counts them), a body of bad lines gets a 400 JSON error
# naming the line, a body over 1 MiB gets 413, malformed requests get 400/405, and the
# agent keeps serving after a burst of them.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in curl python3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
[ -f "$SRC/examples/scenarios/demo.conf" ] || { echo "skip: examples/scenarios/demo.conf missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-events-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
P=$(free_port)
"$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --db "$tmp/gp.db" --speed 1 \
  --no-socket --listen "127.0.0.1:$P" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
U="http://127.0.0.1:$P"
for i in $(seq 50); do curl -sf "$U/api/v1/" >/dev/null && break; sleep 0.1; done

code=$(curl -s -o "$tmp/ok.json" -w '%{http_code}' --data-binary $'hello job=posted-1 v=1 pid=7 unit=samples\nstep job=posted-1 step=1 units=64\nstep job=posted-1 step=oops\n' "$U/api/v1/events")
[ "$code" = 202 ] || { cat "$tmp/ok.json"; echo "POST answered $code"; exit 1; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["accepted"]==2 and r["rejected"]==1 and r["errors"][0]["line"]==3, r' "$tmp/ok.json"

code=$(curl -s -o "$tmp/bad.json" -w '%{http_code}' --data-binary 'nonsense here' "$U/api/v1/events")
[ "$code" = 400 ] || { cat "$tmp/bad.json"; echo "a body of bad lines answered $code"; exit 1; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["status"]==400 and "line 1" in r["error"] and "nonsense" in r["error"], r' "$tmp/bad.json"
head -c 1100000 /dev/zero | tr '\0' 'x' >"$tmp/big"
code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary @"$tmp/big" "$U/api/v1/events")
[ "$code" = 413 ] || { echo "1.1 MB body answered $code"; exit 1; }

# Stored within a second or two (the agent's hook feeds the queue every 250 ms).
for i in $(seq 40); do
  curl -sf "$U/api/v1/jobs" | grep -q '"posted-1"' && break; sleep 0.1
done
curl -sf "$U/api/v1/jobs" | grep -q '"posted-1"' || { echo "posted job not stored"; exit 1; }
curl -sf "$U/metrics" | grep -E '^goodput_ingest_lines_total\{transport="http",result="parsed"\} [1-9]'

# A burst of malformed requests, each refused as what it is; the server still answers.
# (The raw GARBAGE request's connection may be reset before it is written: not checked.)
for i in $(seq 30); do
  printf 'GARBAGE %d\r\n\r\n' "$i" >/dev/tcp/127.0.0.1/$P 2>/dev/null || :
  code=$(curl -s -o /dev/null -w '%{http_code}' "$U/api/v1/jobs/%zz%00/series?points=-5")
  [ "$code" = 400 ] || { echo "a malformed job id answered $code, expected 400"; exit 1; }
  code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$U/metrics")
  [ "$code" = 405 ] || { echo "DELETE /metrics answered $code, expected 405"; exit 1; }
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$U/api/v1/fleet")
[ "$code" = 200 ] || { echo "server unhealthy after the burst: $code"; exit 1; }
echo "serve_events: ok"
