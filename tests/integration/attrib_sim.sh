#!/usr/bin/env bash
# Owners and allocations on simulated nodes, through the CLI (scenario -> agent -> store ->
# report), for every shipped scenario (but large.conf: 1,000 GPUs, the overhead bench) and
# random ones with shared GPUs, jobs without a scheduler (processes only) and restarts.
# The simulator never says who owns what; the agent finds out from its fake /proc and
# job map. Checked per scenario:
#  - the jobs the agent found are exactly the scenario's jobs (none unattributed);
#  - each job holds exactly its GPUs, from its start and to its end (within 2 intervals);
#  - each job's allocated GPU-seconds equal the simulator's truth (`sim --summary --json`),
#    which splits a shared GPU the same way, within 2 intervals per GPU;
#  - no GPU-second twice: per GPU, the jobs' allocated GPU-seconds sum to at most the run.
# asan-skip: the attribution C paths run under ASan in test_attrib_presence and test_goodput
# (agent runs); this checks the CLI path on many scenarios.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$GOODPUT" ] || fail "$GOODPUT not built"

/usr/bin/python3 - "$tmp" <<'PY'
import random, sys
out = sys.argv[1]
rng = random.Random(17)
for n in range(4):
    gpus = rng.randint(2, 4)
    dur = rng.choice([600, 900])
    lines = [f"[node]\nname = rnd-{n}\ngpus = {gpus}\nmodel = H100-SXM\nseed = {n + 3}\nduration = {dur}s\n"]
    for k in range(rng.randint(2, 4)):
        g = rng.randrange(gpus)
        span = [g] if rng.random() < 0.7 or g + 1 >= gpus else [g, g + 1]
        start = rng.choice([0, 0, rng.randint(1, dur // 3)])
        end = rng.choice([None, rng.randint(start + 120, dur)])
        kind = rng.choice(["training", "training", "inference", "idle", "not_ready"])
        j = [f"[job r{n}-{k}]", f"kind = {kind}", "gpus = " + ",".join(map(str, span)), f"start = {start}s"]
        if end is not None: j.append(f"end = {end}s")
        if rng.random() < 0.4: j.append("scheduler = none")
        if kind == "inference": j.append("rate = 2")
        if kind == "not_ready": j.append(f"ready_after = {rng.randint(30, 200)}s")
        if kind == "training" and rng.random() < 0.3 and end is None:
            j.append(f"restart_at = {rng.randint(start + 60, dur - 60)}s ; recovery = 20s")
        lines.append("\n".join(j) + "\n")
    open(f"{out}/rnd{n}.conf", "w").write("\n".join(lines))
PY

checked=0
for conf in examples/scenarios/*.conf "$tmp"/rnd*.conf; do
  [ "$(basename "$conf")" = large.conf ] && continue
  db="$tmp/$(basename "$conf" .conf).db"
  "$GOODPUT" agent --source "sim:$conf" --db "$db" --speed 0 --no-socket --quiet 2>"$tmp/err" \
    || fail "$conf: agent: $(cat "$tmp/err")"
  "$GOODPUT" sim "$conf" --summary --json >"$tmp/truth.json" || fail "$conf: sim --summary --json"
  "$GOODPUT" report --db "$db" --json >"$tmp/report.json" || fail "$conf: report"
  /usr/bin/python3 - "$conf" "$db" "$tmp/truth.json" "$tmp/report.json" <<'PY' || exit 1
import json, re, sqlite3, sys
conf, dbp, truth, rep = sys.argv[1:5]
def dur_s(v):
    m = re.fullmatch(r"\s*(-?[0-9.]+)\s*(ns|us|ms|s|m|h|d)?\s*", v)
    return float(m.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}[m.group(2)]
def gpu_list(v, n):
    if v.strip() == "all": return list(range(n))
    out = []
    for part in v.split(","):
        a, _, b = part.strip().partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out
node, jobs, cur = {"gpus": "8", "duration": "1h"}, {}, None
for raw in open(conf):
    line = raw.split("#")[0].strip()
    if not line: continue
    if line.startswith("[job "): cur = jobs.setdefault(line[5:-1].strip(), {}); continue
    if line == "[node]": cur = node; continue
    for kv in line.split(";"):
        k, _, v = kv.partition("="); cur[k.strip()] = v.strip()
D = dur_s(node["duration"]); ng = int(node["gpus"])
db = sqlite3.connect(dbp)
uuid = {i: u for i, u in db.execute("select idx, uuid from devices")}
def fail(m): print(f"FAIL: {conf}: {m}"); sys.exit(1)
t0 = db.execute("select min(ts_ns) from samples").fetchone()[0] - 1e9  # the clock's origin
found = {r[0] for r in db.execute("select distinct job_id from allocations")}
want = {j for j, c in jobs.items() if dur_s(c.get("start", "0")) < D}
if found != want: fail(f"jobs {sorted(found)} != scenario {sorted(want)}")
tol = 2.0  # two 1 s intervals
for j in want:
    c = jobs[j]
    rows = db.execute("select uuid, from_ns, to_ns from allocations where job_id=?", (j,)).fetchall()
    gl = gpu_list(c["gpus"], ng)
    if {r[0] for r in rows} != {uuid[g] for g in gl}: fail(f"{j}: GPUs {sorted(r[0] for r in rows)}")
    start = dur_s(c.get("start", "0")); end = dur_s(c["end"]) if "end" in c else D
    # a job without a scheduler releases its GPUs while it has no process (a restart's
    # dead time): several rows; the first starts at its start, the last ends at its end
    for u in {r[0] for r in rows}:
        rs = sorted((f, t) for uu, f, t in rows if uu == u)
        if len(rs) > 1 and c.get("scheduler") != "none": fail(f"{j} on {u}: {len(rs)} allocations")
        f, t = rs[0][0], rs[-1][1]
        if abs((f - t0) / 1e9 - start) > tol: fail(f"{j} on {u}: from {(f - t0) / 1e9:.1f} s, start {start}")
        if end < D:
            if t is None or abs((t - t0) / 1e9 - end) > tol: fail(f"{j} on {u}: to {t and (t - t0) / 1e9}, end {end}")
truth = {x["id"]: x for x in json.load(open(truth))["jobs"]}
rep = {x["id"]: x for x in json.load(open(rep))["jobs"]}
worst = 0
for j in want:
    a, b = rep[j]["allocated_gpu_s"], truth[j]["allocated_gpu_s"]
    n = truth[j]["n_gpus"]
    gaps = 1 + truth[j]["restarts"] if jobs[j].get("scheduler") == "none" else 1
    if abs(a - b) > tol * n * gaps + 1e-6: fail(f"{j}: report allocated {a:.1f} GPU-s, truth {b:.1f}")
    worst = max(worst, abs(a - b))
# no GPU-second twice: all jobs together hold at most the node's GPU-seconds
total = sum(x["allocated_gpu_s"] for x in rep.values())
if total > ng * D + 1e-6: fail(f"{total:.1f} GPU-s allocated on {ng} GPUs x {D:.0f} s")
print(f"ok {conf}: {len(want)} jobs, allocated {total:.0f}/{ng * D:.0f} GPU-s, worst |report - truth| {worst:.2f} GPU-s")
PY
  checked=$((checked + 1))
done
[ "$checked" -ge 7 ] || fail "only $checked scenarios checked"
echo "attrib_sim: ok ($checked scenarios)"
