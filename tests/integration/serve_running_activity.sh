#!/usr/bin/env bash
# serve_running_activity.sh: jobs that report no progress (a notebook that bursts now and
# then, a job that never becomes ready: what every job is on a node where nothing runs
# goodput's client; tests/data/scenarios/activity_running.conf) while they run, on the path
# users run: a scenario -> `goodput agent` writing the store -> `goodput serve --db` scraped
# every half second meanwhile -> the same
# store's `goodput report --json`. Checks:
#   - the server's running-job states freeze a labelled past (goodput_job_states_frozen = 2:
#     goodput.c "Checkpoints", activity-only cuts) and what they hold stays flat as the jobs
#     age (goodput_job_states_bytes at the end no more than at the first scrape where both
#     had frozen, plus a tenth); before such jobs froze, each state held 40 bytes per sample
#     instant of the job's life;
#   - after the agent stops, every GPU-second /metrics shows for the two jobs (allocated and
#     per bucket) equals what the report prints (a number shown twice agrees).
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in curl python3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-act-XXXXXX")
apid= spid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; [ -n "$spid" ] && kill $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sed 's/^duration = 3h/duration = 40m/' "$SRC/tests/data/scenarios/activity_running.conf" >"$tmp/act.conf"
db=$tmp/s.db
# 40 simulated minutes in ~24 s: the 5-minute freeze lag passes every 3 s of wall time
"$GOODPUT" agent --source "sim:$tmp/act.conf" --speed 100 --duration 40m --no-socket --quiet \
  --db "$db" 2>"$tmp/agent.err" &
apid=$!
for _ in $(seq 100); do [ -s "$db" ] && break; sleep 0.1; done
P=$(free_port)
"$GOODPUT" serve --db "$db" --listen "127.0.0.1:$P" 2>"$tmp/serve.err" &
spid=$!
metric() { awk -v m="$1" '$1 == m {print $2}' "$2"; }
first_frozen_bytes= n=0
while kill -0 $apid 2>/dev/null; do
  if curl -sf -m 5 -o "$tmp/m" "http://127.0.0.1:$P/metrics"; then
    n=$((n + 1))
    if [ -z "$first_frozen_bytes" ] && [ "$(metric goodput_job_states_frozen "$tmp/m")" = 2 ]; then
      first_frozen_bytes=$(metric goodput_job_states_bytes "$tmp/m")
    fi
  fi
  sleep 0.5
done
wait $apid || { cat "$tmp/agent.err"; fail "the agent failed"; }
apid=
[ "$n" -ge 20 ] || fail "only $n scrapes while the agent ran"
[ -n "$first_frozen_bytes" ] || fail "the running jobs' states never both froze: $(grep goodput_job_states "$tmp/m")"
curl -sf -m 10 -o "$tmp/m" "http://127.0.0.1:$P/metrics" || fail "last scrape"
[ "$(metric goodput_job_states "$tmp/m")" = 2 ] && [ "$(metric goodput_job_states_frozen "$tmp/m")" = 2 ] ||
  fail "at the end: $(grep goodput_job_states "$tmp/m")"
end_bytes=$(metric goodput_job_states_bytes "$tmp/m")
[ "$end_bytes" -le $((first_frozen_bytes + first_frozen_bytes / 10)) ] ||
  fail "the states grew with the jobs' age: $first_frozen_bytes -> $end_bytes bytes"
"$GOODPUT" report --db "$db" --json >"$tmp/r.json"
python3 - "$tmp/m" "$tmp/r.json" <<'PY'
import json, re, sys
m = {}
for line in open(sys.argv[1]):
    g = re.match(r'(goodput_job_(?:allocated_gpu_seconds_total|gpu_seconds_total))\{job_id="([^"]+)"(?:,bucket="([^"]+)")?\} (\S+)', line)
    if g:
        m[(g[1], g[2], g[3])] = float(g[4])
jobs = {j["id"]: j for j in json.load(open(sys.argv[2]))["jobs"]}
kinds = {"notebook": "activity-only", "stuck": "never-ready"}
n = 0
for jid, kind in kinds.items():
    j = jobs[jid]
    assert j["kind"] == kind, (jid, j["kind"])
    pairs = [(("goodput_job_allocated_gpu_seconds_total", jid, None), j["allocated_gpu_s"])]
    pairs += [(("goodput_job_gpu_seconds_total", jid, b), v) for b, v in j["gpu_s_by_bucket"].items()]
    for key, want in pairs:
        got = m.get(key)
        if got is None or abs(got - want) > 1e-9 * max(1.0, abs(want)):
            sys.exit(f"FAIL: {key}: /metrics {got}, report {want}")
        n += 1
assert jobs["stuck"]["gpu_s_by_bucket"]["not_ready"] > 2000, jobs["stuck"]["gpu_s_by_bucket"]
assert jobs["notebook"]["gpu_s_by_bucket"]["idle_allocated"] > 2000, jobs["notebook"]["gpu_s_by_bucket"]
print(f"{n} numbers equal")
PY
echo "serve_running_activity: ok ($n scrapes; states $first_frozen_bytes -> $end_bytes bytes)"
