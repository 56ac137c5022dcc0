#!/usr/bin/env bash
# serial: compares measured throughput with the pipeline's own wall clock
# asan-skip: a real multi-process Python pipeline timed against the prediction; the engine runs under ASan in test_pipeline
# The pipeline validation (issue 9): a REAL multi-process Python pipeline
# (examples/pipeline/pipeline.py: decompress -> parse -> model -> write) reports its stage
# events to `goodput agent` over the unix socket. With pools A (one worker per stage)
# goodput must name `parse` as the bottleneck, raise a pipeline_bottleneck finding, say to
# scale parse first, and predict the throughput of pools B (parse=3) by simulation. The
# test then runs B for real, three times: the prediction must be within 15% of the median
# measured throughput. Measured throughput is also checked against the pipeline's own
# wall clock, so goodput's measurement is not trusted blindly.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
cd "${GOODPUT_SRC:-.}"
case $GOODPUT in /*) ;; *) GOODPUT=$PWD/$GOODPUT ;; esac
PY=/usr/bin/python3
if ! $PY -c 'import numpy' 2>/dev/null; then
  echo "skip: python3-numpy is not installed (scripts/deps.d/pipeline.txt)"; exit 77
fi
tmp=$(mktemp -d); chmod 700 "$tmp"
agent_pid=
cleanup() { [ -n "$agent_pid" ] && kill "$agent_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

ITEMS=${PIPELINE_ITEMS:-240}
printf '[node]\nname = pipe-node\ngpus = 1\nmodel = H100-SXM\nduration = 30m\nstart = now\n' \
  >"$tmp/node.conf"
"$GOODPUT" agent --source sim:"$tmp/node.conf" --db "$tmp/gp.db" --socket "$tmp/gp.sock" \
  --interval 1s --flush 500ms --quiet 2>"$tmp/agent.err" &
agent_pid=$!
for _ in $(seq 50); do [ -S "$tmp/gp.sock" ] && break; sleep 0.1; done
[ -S "$tmp/gp.sock" ] || fail "agent did not open its socket: $(cat "$tmp/agent.err")"

run() { # job pools
  $PY examples/pipeline/pipeline.py --job "$1" --socket "$tmp/gp.sock" --items "$ITEMS" \
    --pools "$2" --queue 4 >>"$tmp/runs.jsonl"
}
run pipe-A decompress=1,parse=1,model=1,write=1
for i in 1 2 3; do run pipe-B$i decompress=1,parse=3,model=1,write=1; done
sleep 1.5 # let the agent commit
kill -TERM "$agent_pid"; wait "$agent_pid" || fail "agent exit: $(cat "$tmp/agent.err")"
agent_pid=

"$GOODPUT" pipeline --db "$tmp/gp.db" --job pipe-A --json --what-if parse=3 >"$tmp/A.json"
"$GOODPUT" pipeline --db "$tmp/gp.db" --job pipe-A >"$tmp/A.txt"
for i in 1 2 3; do "$GOODPUT" pipeline --db "$tmp/gp.db" --job pipe-B$i --json >"$tmp/B$i.json"; done
"$GOODPUT" report --db "$tmp/gp.db" --job pipe-A --json >"$tmp/report.json"
"$GOODPUT" pipeline --db "$tmp/gp.db" --job pipe-A --html "$tmp/A.html" --what-if parse=3
grep -q "<svg" "$tmp/A.html" || fail "HTML has no queue chart"
cat "$tmp/A.txt"

$PY - "$tmp" "$ITEMS" <<'PY'
import json, statistics, sys
tmp, items = sys.argv[1], int(sys.argv[2])
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
A = json.load(open(tmp + "/A.json"))["pipelines"][0]
runs = {r["job"]: r for r in map(json.loads, open(tmp + "/runs.jsonl"))}
# goodput saw every item at every stage (no datagram lost).
for s in A["stages"]:
    if s["items"] != items: fail("stage %s: %d items, expected %d" % (s["name"], s["items"], items))
if [s["name"] for s in A["stages"]] != ["decompress", "parse", "model", "write"]:
    fail("stage order %s" % [s["name"] for s in A["stages"]])
if A["bottleneck"] != "parse": fail("bottleneck %s, expected parse" % A["bottleneck"])
f = A.get("finding")
if not f or f["class"] != "pipeline_bottleneck" or f["scope_id"] != "parse":
    fail("no pipeline_bottleneck finding on parse: %s" % f)
if A["sizing"]["scale_first"] != "parse": fail("scale first %s" % A["sizing"]["scale_first"])
if A["sizing"]["workers"]["parse"] < 2: fail("sizing keeps parse at one worker")
gpu = A["stages"][2]
if gpu["resource"] != "gpu" or gpu["idle_starved_share"] < 0.5:
    fail("GPU stage idle time not explained by starvation: %s" % gpu["idle_starved_share"])
# Utilization of the bottleneck is high; backpressure shows upstream of it.
if A["stages"][1]["utilization"] < 0.85: fail("parse utilization %s" % A["stages"][1]["utilization"])
if A["stages"][0]["blocked_s"] <= 0: fail("decompress shows no backpressure")
# Measured A by goodput vs the pipeline's own clock.
wall = runs["pipe-A"]["items_per_s"]
if abs(A["throughput_per_s"] - wall) / wall > 0.10:
    fail("goodput measured %.2f items/s, the pipeline's wall clock %.2f" % (A["throughput_per_s"], wall))
pred = A["what_if"]["throughput_per_s"]
base = A["what_if"]["baseline"]["throughput_per_s"]
if abs(base - A["throughput_per_s"]) / A["throughput_per_s"] > 0.10:
    fail("model check: pools A simulated %.2f vs measured %.2f" % (base, A["throughput_per_s"]))
meas, gpu_busy = [], []
for i in (1, 2, 3):
    B = json.load(open("%s/B%d.json" % (tmp, i)))["pipelines"][0]
    meas.append(B["throughput_per_s"])
    gpu_busy.append(B["gpu_busy_share"])
med = statistics.median(meas)
err = abs(pred - med) / med
print("pools A: %.2f items/s measured; predicted for parse=3: %.2f items/s, GPU busy %.0f%%"
      % (A["throughput_per_s"], pred, 100 * A["what_if"]["gpu_busy_share"]))
print("pools B measured: %s items/s, median %.2f; prediction error %.1f%%; GPU busy %s"
      % (["%.2f" % m for m in meas], med, 100 * err, ["%.2f" % g for g in gpu_busy]))
if err > 0.15: fail("prediction %.2f vs median measured %.2f: %.1f%% > 15%%" % (pred, med, 100 * err))
gb = statistics.median(gpu_busy)
if abs(A["what_if"]["gpu_busy_share"] - gb) > 0.15:
    fail("GPU busy predicted %.2f vs measured %.2f" % (A["what_if"]["gpu_busy_share"], gb))
R = json.load(open(tmp + "/report.json"))
if not R.get("pipelines") or R["pipelines"][0]["bottleneck"] != "parse":
    fail("goodput report has no pipeline section naming parse")
print("pipeline what-if ok")
PY
