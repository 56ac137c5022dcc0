#!/usr/bin/env bash
# live_findings.sh: issue 18 item 4, "live and offline agree", through the CLI. The agent
# replays 20 simulated minutes of the demo node at 60x with --window 10m and --listen; the
# test polls GET /api/v1/findings while it runs and keeps the last live pass. Each live
# finding is marked live, carries its window and its evidence (metric, value, threshold,
# source); the ?job= and ?class= filters apply to live findings too. After the agent has
# stopped, `goodput diagnose --window 10m --as-of <the pass's as_of_ns>` on the store gives
# the same windows, the same finding classes per job, and badput within 1%. The last pass
# is at most two simulated minutes before the end of the data. --stats counts the live
# passes' whole-job loads: at least one per live job, and far fewer than the pass-job pairs.
# asan-skip: the windowed diagnosis is covered by unit tests; this one times a 20 s replay
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-live-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
P=$(free_port)
"$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --db "$tmp/gp.db" --speed 60 \
  --duration 20m --window 10m --no-socket --listen "127.0.0.1:$P" --quiet --stats >"$tmp/agent.log" 2>&1 &
apid=$!

# Poll until the agent is gone; keep the last answer that holds a live pass.
python3 - "$P" "$apid" "$tmp" <<'PY'
import json, os, sys, time, urllib.request, urllib.error
port, pid, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = f"http://127.0.0.1:{port}/api/v1/findings"
def get(q=""):
    with urllib.request.urlopen(base + q, timeout=5) as r:
        return json.load(r)
def alive():  # the agent (the shell's child): running, not a zombie
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
last, filters_checked, t_end = None, False, time.time() + 50
while time.time() < t_end:
    try:
        doc = get()
    except (urllib.error.URLError, ConnectionError, OSError):
        if last is not None and not alive():
            break
        time.sleep(0.1)
        continue
    assert "live" in doc and "live_findings" in doc, doc.keys()
    if doc["live"] is None:
        assert doc["live_findings"] == [], doc["live_findings"]
    else:
        last = doc
        lf = doc["live_findings"]
        if lf and not filters_checked:  # the filters apply to live findings too
            j, c = lf[0]["job"], lf[0]["class"]
            byjob = get("?job=" + j)["live_findings"]
            assert byjob and all(x["job"] == j for x in byjob), byjob
            bycls = get("?class=" + c)["live_findings"]
            assert bycls and all(x["class"] == c for x in bycls), bycls
            filters_checked = True
    time.sleep(0.25)
assert last is not None, "no live pass seen in /api/v1/findings"
assert filters_checked, "no live finding seen"
json.dump(last, open(os.path.join(tmp, "live.json"), "w"))
PY
wait $apid
apid=

as_of=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["live"]["as_of_ns"])' "$tmp/live.json")
"$GOODPUT" diagnose --db "$tmp/gp.db" --window 10m --as-of "$as_of" --json --all >"$tmp/offline.json"
"$GOODPUT" diagnose --db "$tmp/gp.db" --window 10m --json --all >"$tmp/final.json"

python3 - "$tmp/live.json" "$tmp/offline.json" "$tmp/final.json" "$tmp/agent.log" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))
off = json.load(open(sys.argv[2]))
final = json.load(open(sys.argv[3]))
L = live["live"]
as_of, W = L["as_of_ns"], L["window_s"]
assert W == 600, W
assert off["as_of_ns"] == as_of, (off["as_of_ns"], as_of)
# the last pass is near the end: at most 2 simulated minutes before the last data
end = max(w["t1_ns"] for w in final["windows"])
assert 0 <= end - as_of <= 120e9, (end, as_of)
# evidence and marks on every live finding
for f in live["live_findings"]:
    assert f["live"] is True
    assert f["window_t1_ns"] <= as_of and f["window_t1_ns"] - f["window_t0_ns"] <= W * 1e9
    assert f["evidence"], f
    for e in f["evidence"]:
        for k in ("metric", "value", "threshold", "source"):
            assert k in e and e[k] is not None, (k, e)
byjob = {}
for f in live["live_findings"]:
    byjob.setdefault(f["job"], []).append(f)
ljobs = {j["job"]: j for j in L["jobs"]}
offw = {w["job"]: w for w in off["windows"]}
checked = 0
for job, lj in ljobs.items():
    w = offw.get(job)
    assert w is not None, f"{job}: live but not in diagnose --as-of"
    assert (w["t0_ns"], w["t1_ns"]) == (lj["window_t0_ns"], lj["window_t1_ns"]), (job, w, lj)
    lf = sorted(byjob.get(job, []), key=lambda f: f["class"])
    of = sorted(w["findings"], key=lambda f: f["class"])
    assert [f["class"] for f in lf] == [f["class"] for f in of], (job, [f["class"] for f in lf], [f["class"] for f in of])
    assert lj["findings"] == len(of), (job, lj["findings"], len(of))
    for a, b in zip(lf, of):
        x, y = a["badput_gpu_s"]["total"], b["badput_gpu_s"]["total"]
        assert (x is None) == (y is None), (job, a["class"], x, y)
        if x is not None:
            assert abs(x - y) <= 0.01 * max(abs(y), 1e-9) + 1e-6, (job, a["class"], x, y)
        checked += 1
# jobs with data in the last window are all live
for w in off["windows"]:
    if w["t1_ns"] >= as_of - W * 1e9:
        assert w["job"] in ljobs, f"{w['job']} has data in the window but no live entry"
assert len(ljobs) >= 4 and checked >= 3, (len(ljobs), checked)
# --stats: the passes read windows; a job is read whole at its first pass (and at the few
# fallbacks of live_window.h), so whole loads are fewer than the (pass, job) pairs
st = [json.loads(l) for l in open(sys.argv[4]) if l.startswith("{")]
assert len(st) == 1, st
passes, whole = st[0]["live_passes"], st[0]["live_whole_loads"]
assert passes >= 10 and len(ljobs) <= whole < passes * len(ljobs) / 2, (passes, whole)
print(f"live_findings: ok ({len(ljobs)} jobs, {checked} findings agree; as_of {(end - as_of) / 1e9:.0f} s before the end)")
PY
