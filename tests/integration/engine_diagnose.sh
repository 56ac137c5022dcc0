#!/usr/bin/env bash
# asan-skip: diagnose through the CLI; the engine runs under ASan in test_engine_classify and test_goodput
# `goodput diagnose` end to end: the demo scenario through the agent into a store, then
# each simulated job's designed problem (the comments in examples/scenarios/demo.conf)
# must be its top finding, with evidence, a fix and a cost; findings are written back to
# the store; errors are one line with the right exit code.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

set +e
"$GOODPUT" diagnose >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "diagnose without --db exited $rc, expected 2"
"$GOODPUT" diagnose --db "$tmp/missing.db" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 3 ] || fail "missing store exited $rc, expected 3"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one error line: $(cat "$tmp/err")"
set -e
# read whole first: under pipefail, grep -q's early exit would SIGPIPE the writer
h=$("$GOODPUT" diagnose --help); grep -qE -- '^  --job ID +[a-z]' <<<"$h" || fail "diagnose --help lacks --job"

"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/demo.db" --speed 0 \
  --no-socket --quiet
set +e
"$GOODPUT" diagnose --db "$tmp/demo.db" --job no-such-job >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ $rc -eq 3 ] || fail "unknown job exited $rc, expected 3"
grep -q "no-such-job" "$tmp/err" || fail "error does not name the job: $(cat "$tmp/err")"

"$GOODPUT" diagnose --db "$tmp/demo.db" --json --all >"$tmp/all.json"
"$GOODPUT" diagnose --db "$tmp/demo.db" --job train-starved >"$tmp/one.txt"
grep -q "input_bound" "$tmp/one.txt" || fail "text output for train-starved: $(cat "$tmp/one.txt")"
grep -q "evidence: data_wait_share" "$tmp/one.txt" || fail "no evidence line in text output"
/usr/bin/python3 - "$tmp/all.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = r["findings"]
assert f, "no findings"
# ranked past-threshold findings before minor ones, then by badput explained, then headroom
key = [(not x["minor"], (x["badput_gpu_s"]["total"] if x["badput_gpu_s"]["total"] is not None else -1),
        (x["headroom_gpu_s"] if x["headroom_gpu_s"] is not None else -1)) for x in f]
assert key == sorted(key, reverse=True), key
top = {}
for x in f:
    job = x["scope_id"].split("/")[0]
    top.setdefault(job, x["class"])
    assert x["evidence"], x
    assert x["recommendation"], x
    assert 0 <= x["confidence"] <= 1, x
    for e in x["evidence"]:
        assert e["op"] in ("<", "<=", ">", ">="), e
designed = {
    "train-starved": "input_bound",
    "train-allreduce": "communication_bound",
    "llm-decode": "memory_bound",
    "train-late": "not_ready",
    "notebook": "idle_allocated",
    "train-healthy": "interference",
    "side-job": "compute_bound",
}
bad = {j: (top.get(j), c) for j, c in designed.items() if top.get(j) != c}
assert not bad, "top finding vs designed problem: %r" % bad
print("top findings match the demo's designed problems:", top)
# badput and headroom are two numbers: the total is the sum of the buckets (never with
# headroom), costs are at one price per job
for x in f:
    b = x["badput_gpu_s"]
    if b["total"] is not None:
        parts = sum(v for k, v in b.items() if k != "total" and v is not None)
        assert abs(parts - b["total"]) <= 1e-6 * max(1, b["total"]), x
    assert "wasted_gpu_s" not in x and "wasted_cost_usd" not in x, x
ar = [x for x in f if x["job"] == "train-allreduce" and x["class"] == "communication_bound"]
assert ar and ar[0]["headroom_gpu_s"] > 0 and "as long" in ar[0]["counterfactual"], ar
# per-job metrics: the notebook sends no events, so it is an activity-only estimate; the
# trainers' MFU cannot exceed the efficiency their scenario gives their compute phases
m = {j["job"]: j for j in r["jobs"]}
assert m["notebook"]["activity_only"] is True and "training" not in m["notebook"]
for job, eff in (("train-healthy", 0.55), ("train-starved", 0.5), ("train-allreduce", 0.5)):
    mfu = m[job]["economics"]["mfu"]
    assert mfu is not None and 0 < mfu <= eff + 0.01, (job, mfu)
    assert m[job]["training"]["ideal_step_s"] > 0, job
assert m["train-starved"]["economics"]["mfu"] < 0.5 * 0.75  # it waits 40% of the time
assert m["llm-decode"]["inference"]["good_requests"] > 0
PY
# windows: train-healthy shares its GPU with side-job for part of the run. Every window of
# 5 minutes is diagnosed on its own; the windows tile the job's span; interference is found
# only in windows whose median step time is well above the job's ideal (the sharing slows
# it), and windows without a neighbour run at the ideal step time
"$GOODPUT" diagnose --db "$tmp/demo.db" --job train-healthy --windows --json >"$tmp/win.json"
"$GOODPUT" diagnose --db "$tmp/demo.db" --window 5m --json >"$tmp/last.json"
"$GOODPUT" diagnose --db "$tmp/demo.db" --job train-healthy --windows --window 10m >"$tmp/win.txt"
grep -q "vs the job's ideal" "$tmp/win.txt" || fail "no step deviation in --windows text"
set +e
"$GOODPUT" diagnose --db "$tmp/demo.db" --window 0s >/dev/null 2>&1; rc=$?
set -e
[ $rc -eq 2 ] || fail "--window 0s exited $rc, expected 2"
/usr/bin/python3 - "$tmp/win.json" "$tmp/last.json" "$tmp/all.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))["windows"]
assert len(w) >= 10, len(w)
for a, b in zip(w, w[1:]):
    assert a["t1_ns"] == b["t0_ns"] and b["t1_ns"] - b["t0_ns"] <= 300e9, (a, b)
shared = [x for x in w if any(f["class"] == "interference" for f in x["findings"])]
assert shared, "no window with interference"
for x in w:
    dev = x["step_deviation"]
    if x in shared:
        assert dev is not None and dev > 0.15, x
    elif dev is not None and x["steps"] > 100:
        assert abs(dev) < 0.1, (dev, [f["class"] for f in x["findings"]])
# one finding per episode: each run of consecutive windows with interference is one
# finding, from the first window's start to the last one's end, its headroom their sum
eps = json.load(open(sys.argv[1]))["episodes"]
runs, cur = [], []
for k, x in enumerate(w):
    f = [f for f in x["findings"] if f["class"] == "interference"]
    if f:
        cur.append(f[0])
    elif cur:
        runs.append(cur); cur = []
if cur:
    runs.append(cur)
got = sorted((f for f in eps if f["class"] == "interference"), key=lambda f: f["t0_ns"])
assert len(got) == len(runs), (len(got), len(runs))
for g, r in zip(got, runs):
    assert g["t0_ns"] == r[0]["t0_ns"] and g["t1_ns"] == r[-1]["t1_ns"], (g, r)
    h = sum(f["headroom_gpu_s"] for f in r)
    assert abs(g["headroom_gpu_s"] - h) <= 1e-6 * max(1, h), (g["headroom_gpu_s"], h)
classes = {f["class"] for x in w for f in x["findings"]}
assert classes == {f["class"] for f in eps}, (classes, eps)
last = json.load(open(sys.argv[2]))
assert "episodes" not in last  # the last window alone has none to merge
assert last["mode"] == "last" and last["window_s"] == 300
jobs = {x["job"] for x in last["windows"]}
assert {"train-healthy", "train-starved", "llm-decode"} <= jobs, jobs
for x in last["windows"]:
    assert 0 < x["t1_ns"] - x["t0_ns"] <= 300e9, x
# whole-job JSON: step-time deviation over time and rolling windows
m = {j["job"]: j for j in json.load(open(sys.argv[3]))["jobs"]}
dev = m["train-healthy"]["training"]["step_deviation"]
assert len(dev) >= 10 and max(d["deviation"] or 0 for d in dev) > 0.15, dev
assert set(m["train-healthy"]["rolling"]) == {"1m", "5m", "1h"}
print("windows: interference in", len(shared), "of", len(w), "windows")
PY
# the invariant through the CLI: for every job and bucket, the badput its findings explain
# (diagnose and report alike) is at most the job's GPU-seconds in that bucket in the report
"$GOODPUT" report --db "$tmp/demo.db" --json >"$tmp/report.json"
/usr/bin/python3 - "$tmp/all.json" "$tmp/report.json" <<'PY'
import json, sys
diag = json.load(open(sys.argv[1]))["findings"]
rep = json.load(open(sys.argv[2]))
buckets = {j["id"]: j["gpu_s_by_bucket"] for j in rep["jobs"]}
for name, fs in (("diagnose", diag), ("report", rep["findings"])):
    sums = {}
    for x in fs:
        if x["job"] is None:
            continue
        for k, v in x["badput_gpu_s"].items():
            if k != "total" and v is not None:
                sums.setdefault(x["job"], {}).setdefault(k, 0.0)
                sums[x["job"]][k] += v
    assert sums, name
    for job, by in sums.items():
        for k, v in by.items():
            assert v <= buckets[job][k] * (1 + 1e-9) + 1e-6, (name, job, k, v, buckets[job][k])
ar = [x for x in rep["findings"] if x["job"] == "train-allreduce"
      and x["class"] == "communication_bound"][0]
b = buckets["train-allreduce"]
assert ar["headroom_gpu_s"] > 0 and ar["headroom_gpu_s"] <= b["productive"], (ar, b)
assert ar["badput_gpu_s"]["total"] <= sum(v for k, v in b.items() if k != "productive")
print("findings within their jobs' buckets; train-allreduce headroom %.0f GPU-s, badput %.0f"
      % (ar["headroom_gpu_s"], ar["badput_gpu_s"]["total"]))
PY
# the findings were stored: a read-only rerun of one job gives the same classes
/usr/bin/python3 - "$tmp/demo.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
assert "findings" in tables, tables
n = db.execute("select count(*) from findings").fetchone()[0]
assert n >= 7, n
PY
echo "ok"
