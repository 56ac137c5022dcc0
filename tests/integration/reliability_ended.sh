#!/usr/bin/env bash
# reliability_ended.sh: ended jobs cost one indexed lookup per scrape (issue 24, bounded cost
# per request). A store holding 2,000 ended jobs (GP_ENDED_JOBS overrides) from before the
# summary table existed (schema 10) is served by an agent:
#  - every /metrics scrape answers in < 1 s while the missing rows are filled in (at most
#    0.25 s of first summaries per render, goodput_jobs_deferred meanwhile);
#  - each ended job's summary is stored, also when another writer holds the store's write
#    lock past the agent's busy timeout as the fill begins (rows queued meanwhile are
#    written once it lets go): by the server in job_summaries (as many rows as
#    goodput_job_summaries_stored_total says), or by the agent's sealing child, whose first
#    pass starts with the agent and races the fill, as a result in job_results, which the
#    server then serves instead of computing the job (on a loaded host the child gets to
#    a few jobs first; a minute later the agent's event retention moves such a result to
#    job_events_pruned, these jobs having ended more than a day ago);
#  - a restarted agent serves all N at once from the table (first scrape < 1 s, nothing
#    deferred, nothing computed again);
#  - every number /metrics and /api/v1/jobs show for those jobs equals what
#    `goodput report --json` prints for them (the table stores the accounting's result).
# Under a sanitizer build (make asan) the store holds 200 jobs: the same paths, checked for
# memory errors, at a size the instrumented agent fills in seconds.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
LIB="$SRC/$BUILD/tests/lib/libnvidia-ml.so.1"
N=${GP_ENDED_JOBS:-2000}
grep -qa __asan_init "$GOODPUT" 2>/dev/null && N=${GP_ENDED_JOBS:-200}
for t in curl python3 sqlite3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
[ -f "$LIB" ] || { echo "skip: $LIB not built (make $BUILD/tests/lib/libnvidia-ml.so.1)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-rel-ended-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; [ -n "${GP_KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
HP=$(free_port)
U="http://127.0.0.1:$HP"
start_agent() {
  GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$SRC/examples/scenarios/demo.conf" \
    "$GOODPUT" agent --source nvml --db "$tmp/gp.db" --no-socket --listen "127.0.0.1:$HP" \
    --interval 500ms --flush 1s --quiet >>"$tmp/agent.log" 2>&1 &
  apid=$!
  for i in $(seq 100); do curl -s -o /dev/null "$U/" 2>/dev/null && return 0
    kill -0 $apid 2>/dev/null || break; sleep 0.1; done
  fail "agent did not come up: $(cat "$tmp/agent.log")"
}
stop_agent() { kill -TERM $apid; wait $apid || fail "agent exit $?: $(cat "$tmp/agent.log")"; apid=; }

# A store as an older goodput left it: schema 10, no summary table.
start_agent; sleep 1; stop_agent
S=1000000000
now=$(python3 -c 'import time; print(time.time_ns())')
slots=$(( (N + 7) / 8 ))
base=$(( now - 86400 * S - slots * 60 * S ))
sqlite3 "$tmp/gp.db" <<SQL
DROP TABLE job_summaries; DROP INDEX allocations_uuid; PRAGMA user_version = 10;
BEGIN;
WITH RECURSIVE g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < 7)
INSERT INTO devices(uuid, idx, name, host, model) SELECT 'GPU-old-' || k, 100 + k, 'NVIDIA H100 80GB HBM3', 'old', 'H100' FROM g;
-- job i: GPU i % 8, slot i / 8 of 60 s: allocated 50 s, four 10 s steps after a 10 s start
WITH RECURSIVE j(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM j WHERE i < $N - 1)
INSERT INTO jobs(id, name, user, origin, submitted_ns, allocated_ns, ready_ns, ended_ns, exit_state, unit_name)
SELECT 'old-' || i, 'old job ' || i, 'u' || (i % 7), 'tag', $base + (i / 8) * 60 * $S - 5 * $S,
       $base + (i / 8) * 60 * $S, NULL, $base + (i / 8) * 60 * $S + 50 * $S, 'completed', 'samples' FROM j;
INSERT INTO allocations(job_id, uuid, from_ns, to_ns)
SELECT id, 'GPU-old-' || (CAST(substr(id, 5) AS INTEGER) % 8), allocated_ns, ended_ns FROM jobs WHERE id LIKE 'old-%';
WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 4)
INSERT INTO events(job_id, ts_ns, kind, step, units, start_ns)
SELECT id, allocated_ns + (10 * n + 8) * $S, 2, n, 32, allocated_ns + 10 * n * $S FROM jobs, s
 WHERE id LIKE 'old-%' AND (CAST(substr(id, 5) AS INTEGER) % 5 != 0 OR n < 3);
-- samples every 5 s on the 8 GPUs over the whole span: busy in the steps, idle between jobs
WITH RECURSIVE t(ts) AS (SELECT $base UNION ALL SELECT ts + 5 * $S FROM t WHERE ts < $base + $slots * 60 * $S),
     g(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM g WHERE k < 7)
INSERT INTO samples(uuid, ts_ns, gpu_util, sm_active, mem_used_bytes, mem_total_bytes, power_w, energy_mj)
SELECT 'GPU-old-' || k, ts, CASE WHEN (ts - $base) % (60 * $S) BETWEEN 10 * $S AND 50 * $S THEN 0.5 + 0.05 * k ELSE 0.0 END,
       0.3, 40000000000, 85899345920, 300, (ts - $base) / $S * 300000 + k FROM t, g;
COMMIT;
SQL

# The old jobs whose summary is in the store: the server's row, or a sealed result (not a
# claim, whose sum_fp is 'sealing'), kept with the job's events or after their pruning.
STORED_SQL="SELECT count(*) FROM jobs WHERE id LIKE 'old-%' AND
  (id IN (SELECT job_id FROM job_summaries) OR
   id IN (SELECT job_id FROM job_results WHERE sum_fp != 'sealing') OR
   id IN (SELECT job_id FROM job_events_pruned))"

# One python process per phase: scrapes back to back, each timed.
scrapes() { # phase: fill (until every job is shown and stored) | warm (11 scrapes)
  python3 - "$U/metrics" "$1" "$N" "$tmp/m.txt" "$tmp/gp.db" "$STORED_SQL" <<'PY'
import re, sqlite3, sys, time, urllib.request
url, phase, n, out, db, stored_sql = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def in_store():
    """(old jobs whose summary is stored, rows in job_summaries)"""
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return (c.execute(stored_sql).fetchone()[0],
                c.execute("SELECT count(*) FROM job_summaries WHERE job_id LIKE 'old-%'").fetchone()[0])
    finally:
        c.close()
def fail(msg): print("FAIL:", msg); sys.exit(1)
def metric(body, name):
    m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
    return float(m.group(1)) if m else -1
times, t0, body = [], time.monotonic(), ""
while True:
    s0 = time.monotonic()
    body = urllib.request.urlopen(url, timeout=30).read().decode()
    times.append(time.monotonic() - s0)
    if times[-1] >= 1.0: fail(f"{phase}: scrape {len(times)} took {times[-1]:.2f} s")
    shown = len(re.findall(r'^goodput_job_allocated_gpu_seconds_total\{job_id="old-', body, re.M))
    deferred, stored = metric(body, "goodput_jobs_deferred"), metric(body, "goodput_job_summaries_stored_total")
    if phase == "warm":
        if shown != n or deferred != 0: fail(f"warm: scrape {len(times)} shows {shown} of {n} jobs, {deferred:.0f} deferred")
        if stored != 0: fail(f"warm: {stored:.0f} summaries computed again after a restart")
        if len(times) == 11: break
    else:
        if shown == n and deferred == 0:
            done, rows = in_store()
            # the server's counter is raised after its commit: equal once both are read after it
            if done == n and stored == rows: break
        else:
            done, rows = -1, -1
        if time.monotonic() - t0 > 120:
            fail(f"fill: after 120 s {shown} of {n} shown, {done} stored in the store "
                 f"({rows} by the server), the server counts {stored:.0f}")
open(out, "w").write(body)
# how many jobs the sealing child stored before the server computed them (the race above)
sealed = f", {n - rows} stored by the sealing child only" if phase == "fill" else ""
print(f"{phase}: {len(times)} scrapes in {time.monotonic() - t0:.1f} s, first {times[0]:.3f} s, slowest {max(times):.3f} s{sealed}")
PY
}

start_agent
# Another writer holds the store's write lock for 7 s as the fill begins, past the agent's
# 5 s busy timeout (as the sealing child may on a loaded node): summaries queued meanwhile
# must be stored once it lets go, not lost (the fill then never completes).
python3 - "$tmp/gp.db" >"$tmp/locker.log" 2>&1 <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
db.execute("BEGIN IMMEDIATE")
t0 = time.monotonic()
time.sleep(7)
db.execute("COMMIT")
print(f"held {time.monotonic() - t0:.1f} s")
PY
lpid=$!
sleep 0.3
scrapes fill
wait $lpid || fail "the lock holder failed: $(cat "$tmp/locker.log")"
grep -q '^held 7' "$tmp/locker.log" || fail "the lock holder: $(cat "$tmp/locker.log")"
curl -sf "$U/api/v1/jobs" >"$tmp/api1.json"
stop_agent
rows=$(sqlite3 "$tmp/gp.db" "$STORED_SQL")
[ "$rows" = "$N" ] || fail "$rows of $N ended jobs have a stored summary or result after the stop"

# Restarted: every ended job from the table at once, nothing computed again.
start_agent
scrapes warm
curl -sf "$U/api/v1/jobs" >"$tmp/api2.json"
cp "$tmp/m.txt" "$tmp/m2.txt"
stop_agent

"$GOODPUT" report --db "$tmp/gp.db" --json >"$tmp/report.json"
python3 - "$tmp/report.json" "$tmp/m2.txt" "$tmp/api1.json" "$tmp/api2.json" "$N" <<'PY'
import json, math, re, sys
rep = {j["id"]: j for j in json.load(open(sys.argv[1]))["jobs"] if j["id"].startswith("old-")}
n = int(sys.argv[5])
assert len(rep) == n, len(rep)
def same(a, b):
    if a is None or b is None: return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-11, abs_tol=1e-9)
    return a == b
# /metrics (printed with 17 digits) against the report (13): allocated, buckets, goodput, GPUs
m = {}
for line in open(sys.argv[2]):
    g = re.match(r'^goodput_job_(allocated_gpu_seconds_total|goodput_ratio|gpus)\{job_id="(old-\d+)"\} (\S+)$', line)
    if g: m[(g.group(2), g.group(1))] = float(g.group(3))
    g = re.match(r'^goodput_job_gpu_seconds_total\{job_id="(old-\d+)",bucket="(\w+)"\} (\S+)$', line)
    if g: m[(g.group(1), g.group(2))] = float(g.group(3))
bad = []
kinds = set()
for jid, j in rep.items():
    kinds.add(j["kind"])
    pairs = [("allocated_gpu_seconds_total", j["allocated_gpu_s"]), ("gpus", j["gpus"])]
    pairs += [(b, v) for b, v in j["gpu_s_by_bucket"].items()]
    if j["goodput"] is not None: pairs.append(("goodput_ratio", j["goodput"]))
    elif (jid, "goodput_ratio") in m: bad.append((jid, "goodput shown but unknown"))
    for k, v in pairs:
        if not same(m.get((jid, k)), v): bad.append((jid, k, m.get((jid, k)), v))
assert not bad, bad[:5]
# the API's job objects (filling, then from the table) against the report, key by key;
# span_s is the window the summary covered when it was computed, not a property of the job
for path in sys.argv[3:5]:
    api = {j["id"]: j for j in json.load(open(path))["jobs"] if j["id"].startswith("old-")}
    assert len(api) == n, (path, len(api))
    for jid, j in rep.items():
        for k, v in j.items():
            if k in ("span_s",): continue
            a = api[jid].get(k)
            if isinstance(v, dict):
                if any(not same(a.get(x), y) for x, y in v.items()): bad.append((path, jid, k, a, v))
            elif not same(a, v): bad.append((path, jid, k, a, v))
assert not bad, bad[:5]
assert rep["old-1"]["goodput"] is not None and rep["old-1"]["mean_gpu_util"] is not None, rep["old-1"]
print(f"equal: {n} jobs ({', '.join(sorted(kinds))}), /metrics and /api/v1/jobs = goodput report --json")
PY
echo "ok: $N ended jobs stored (summary table or sealed results) and served from the store"
