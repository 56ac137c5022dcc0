#!/usr/bin/env bash
# asan-skip: a headless browser on the pipeline view; its API runs under ASan in test_serve_pipeline
# serve_pipeline_chromium.sh: a pipeline job on the dashboard (issues 8 and 9). The agent
# (sim GPU, --listen) receives a four-stage pipeline's stage events by POST /api/v1/events
# (read -> decode x2 -> model (gpu) -> write, service times drawn here with decode the
# slowest per worker), then a real headless Chromium (playwright-core) opens the job's view:
# the stage table names decode the bottleneck, the queue-length chart draws, the sizing says
# to scale decode, the what-if form returns a prediction above the measured rate, and the
# console has no errors. The API's answers are checked against the generator's own numbers
# first. Screenshot: $BUILD/test-artifacts/dashboard-pipeline.png.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
case $GOODPUT in /*) ;; *) GOODPUT=$SRC/$GOODPUT ;; esac
for t in node python3 curl; do command -v $t >/dev/null || { echo "skip: $t not installed"; exit 77; }; done
[ -x /usr/bin/chromium ] || { echo "skip: /usr/bin/chromium not installed (scripts/deps.d/serve.txt)"; exit 77; }
if [ ! -d "$SRC/node_modules/playwright-core" ]; then
  command -v npm >/dev/null || { echo "skip: npm missing for playwright-core"; exit 77; }
  (cd "$SRC" && npm ci --no-audit --no-fund >/dev/null 2>&1) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-pipe-XXXXXX")
art="$SRC/$BUILD/test-artifacts"; mkdir -p "$art"
apid=
cleanup() { [ -n "$apid" ] && kill "$apid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/agent.log" ] && tail -5 "$tmp/agent.log"; exit 1; }

printf '[node]\nname = pipe-node\ngpus = 1\nmodel = H100-SXM\nduration = 30m\nstart = now\n' >"$tmp/node.conf"
AP=$(free_port)
URL="http://127.0.0.1:$AP"
"$GOODPUT" agent --source "sim:$tmp/node.conf" --db "$tmp/gp.db" --no-socket --listen "127.0.0.1:$AP" \
  --interval 1s --flush 500ms --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
uuid=
for _ in $(seq 50); do
  uuid=$(curl -sf "$URL/api/v1/devices" | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"]; print(d[0]["uuid"] if d else "")' 2>/dev/null || true)
  [ -n "$uuid" ] && break; sleep 0.2
done
[ -n "$uuid" ] || fail "agent did not serve a device"

# The pipeline: 200 items; each stage's worker takes the item when both are free, service
# times uniform in +-20% of the mean (read 10 ms, decode 45 ms on 2 workers, model 15 ms on
# the GPU, write 5 ms). Capacities ~100, ~44, ~67, ~200 items/s: decode limits the run.
python3 - "$uuid" >"$tmp/body.txt" 2>"$tmp/expect.json" <<'PY'
import json, random, sys, time
uuid, job, n = sys.argv[1], "pipe-etl", 200
random.seed(7)
S = [("read", 1, "cpu", "", 0.010), ("decode", 2, "cpu", "read", 0.045),
     ("model", 1, "gpu", "decode", 0.015), ("write", 1, "cpu", "model", 0.005)]
ns = lambda t: int(t * 1e9)
t0 = time.time() - 12.0
lines = ["hello job=%s v=1 unit=items name=etl-pipeline user=carol" % job,
         "job job=%s state=allocated ts=%d" % (job, ns(t0 - 1)),
         "alloc job=%s uuid=%s from=%d" % (job, uuid, ns(t0 - 1))]
for name, pool, res, up, _ in S:
    lines.append("stage job=%s stage=%s pool=%d resource=%s%s" % (job, name, pool, res, (" upstream=" + up) if up else ""))
ready, busy = [t0] * n, {}
for name, pool, res, up, mean in S:
    free, out, busy[name] = [t0] * pool, [], 0.0
    for i in range(n):
        w = min(range(pool), key=lambda k: free[k])
        start = max(ready[i], free[w]) + 0.0005
        end = start + mean * random.uniform(0.8, 1.2)
        free[w], busy[name] = end, busy[name] + end - start
        lines.append("stage job=%s stage=%s item=%d enqueue=%d start=%d ts=%d worker=%s-%d"
                     % (job, name, i, ns(ready[i]), ns(start), ns(end), name, w))
        out.append(end)
    ready = out
print("\n".join(lines))
first = t0 + 0.0005
json.dump({"window_s": max(ready) - first, "busy_s": busy, "items": n}, sys.stderr)
PY
curl -sf -X POST --data-binary @"$tmp/body.txt" "$URL/api/v1/events" >"$tmp/post.json" || fail "POST /api/v1/events"
for _ in $(seq 50); do # wait until the agent has stored every item
  n=$(curl -sf "$URL/api/v1/jobs/pipe-etl" | python3 -c 'import json,sys; p=json.load(sys.stdin).get("pipelines"); print(p[0]["items_done"] if p else 0)' 2>/dev/null || echo 0)
  [ "$n" = 200 ] && break; sleep 0.2
done
curl -sf "$URL/api/v1/jobs/pipe-etl" >"$tmp/job.json" || fail "GET job"
curl -sf "$URL/api/v1/jobs/pipe-etl/pipeline?what_if=decode=4" >"$tmp/whatif.json" || fail "GET what-if"
code=$(curl -s -o "$tmp/bad.json" -w '%{http_code}' "$URL/api/v1/jobs/pipe-etl/pipeline?what_if=nosuch=2")
[ "$code" = 400 ] || fail "bad what_if answered $code"
python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def fail(m): print("FAIL:", m); sys.exit(1)
E = json.load(open(tmp + "/expect.json"))
P = json.load(open(tmp + "/job.json"))["pipelines"][0]
if [s["name"] for s in P["stages"]] != ["read", "decode", "model", "write"]: fail("stages %s" % P["stages"])
if P["bottleneck"] != "decode": fail("bottleneck %s" % P["bottleneck"])
if abs(P["window_s"] - E["window_s"]) > 1e-3: fail("window %s vs %s" % (P["window_s"], E["window_s"]))
for s in P["stages"]:
    want = E["busy_s"][s["name"]] / (s["workers"] * E["window_s"])
    if abs(s["utilization"] - want) > 1e-3: fail("%s utilization %s vs %s" % (s["name"], s["utilization"], want))
W = json.load(open(tmp + "/whatif.json"))["what_if"]
# decode=4 lifts decode to ~89/s: model (~67/s) limits next; the prediction must land between.
if not (P["throughput_per_s"] * 1.2 < W["throughput_per_s"] < 70): fail("what-if %s" % W["throughput_per_s"])
if not (W["gpu_busy_share"] > P["gpu_busy_share"]): fail("GPU busy share did not rise: %s" % W)
bad = json.load(open(tmp + "/bad.json"))
if bad.get("status") != 400 or "nosuch" not in bad.get("error", ""): fail("bad what_if: %s" % bad)
print("api: bottleneck decode, measured %.1f items/s, what-if decode=4 -> %.1f items/s, GPU busy %.0f%% -> %.0f%%"
      % (P["throughput_per_s"], W["throughput_per_s"], 100 * P["gpu_busy_share"], 100 * W["gpu_busy_share"]))
PY
mkdir -p "$tmp/profile"
cd "$SRC" && timeout 50 node tests/integration/serve_pipeline_chromium.mjs "$URL/#/job/pipe-etl" "$art" "$tmp/profile"
# The agent (and its server) must shut down cleanly: under ASan, a leak fails here.
kill -TERM "$apid"; rc=0; wait "$apid" || rc=$?; apid=
[ "$rc" = 0 ] || fail "agent exit status $rc: $(tail -20 "$tmp/agent.log")"
echo "serve_pipeline_chromium: ok (screenshot in $art/dashboard-pipeline.png)"
