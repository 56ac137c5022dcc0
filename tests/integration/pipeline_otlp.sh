#!/usr/bin/env bash
# pipeline_otlp.sh: a four-stage video pipeline traced only with OpenTelemetry spans
# (decode, preprocess, infer, write as children of each item's root span) feeds
# `goodput pipeline`, offline (--otlp FILE) and from the spans an agent received on
# POST /v1/traces (--db --spans). The spans come from an exact FIFO multi-server
# simulation written here with known pools (2, 2, 1, 1) and service times (20, 60, 20,
# 5 ms, +-10%): preprocess (2 / 60 ms = 33.3 items/s) limits the run, the GPU stage
# (infer, 50 items/s) waits on it. Checked: the slowest stage named, pools read from the
# spans' concurrency, service means within 1%, throughput within 3% of the simulation's,
# infer a GPU stage starved for input, the sizing scaling preprocess first, and the what-if
# with preprocess=4 predicting the infer-bound rate (within 10% of 1/20 ms). Deeper spans
# (a kernel launch inside infer) and traces without children (a health check) are no stages.
# Then the real OpenTelemetry JS SDK (pipeline_otlp_sdk.mjs: async worker pools over FIFO
# queues) sends the same shape of pipeline to the agent: preprocess named, pools and
# service means (within 1% of the program's own log) read from its spans alone.
# asan-skip: spans-to-stages runs under ASan in tests/unit/test_span_stages.c
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in curl python3 sqlite3 node; do command -v $t >/dev/null || { echo "$t missing (scripts/install-deps)"; exit 1; }; done
if [ ! -d "$SRC/node_modules/@opentelemetry/sdk-trace-node" ]; then
  command -v npm >/dev/null || { echo "skip: npm missing for playwright-core"; exit 77; }
  (cd "$SRC" && npm ci --no-audit --no-fund >/dev/null 2>&1) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-pipeotlp-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

python3 - "$tmp/spans.json" "$tmp/truth.json" <<'PY'
import json, random, sys, time
rnd = random.Random(11)
stages = [("decode", 2, 0.020), ("preprocess", 2, 0.060), ("infer", 1, 0.020), ("write", 1, 0.005)]
N = 300
t0 = time.time_ns() - 60 * 10**9  # within the agent's retention and clock-skew window
arrive = [t0] * N
rec = {s: [None] * N for s, _, _ in stages}
for name, W, mean in stages:
    free = [t0] * W
    for i in sorted(range(N), key=lambda i: (arrive[i], i)):  # FIFO at this stage
        w = min(range(W), key=lambda k: free[k])
        start = max(arrive[i], free[w])
        end = start + int(mean * rnd.uniform(0.9, 1.1) * 1e9)
        free[w] = end
        rec[name][i] = (start, end)
        arrive[i] = end
def kv(k, v): return {"key": k, "value": {"stringValue": v}}
spans = []
for i in range(N):
    tid = "%032x" % (0xabc0000 + i); rid = "%016x" % (i * 16 + 1)
    spans.append({"traceId": tid, "spanId": rid, "name": "video_pipeline",
                  "startTimeUnixNano": str(rec["decode"][i][0]), "endTimeUnixNano": str(rec["write"][i][1])})
    for k, (name, _, _) in enumerate(stages):
        s, e = rec[name][i]
        sid = "%016x" % (i * 16 + 2 + k)
        spans.append({"traceId": tid, "spanId": sid, "parentSpanId": rid, "name": name,
                      "startTimeUnixNano": str(s), "endTimeUnixNano": str(e)})
        if name == "infer":  # a span inside a stage is not a stage
            spans.append({"traceId": tid, "spanId": "%016x" % (i * 16 + 9), "parentSpanId": sid,
                          "name": "cuda.launch", "startTimeUnixNano": str(s + 1000),
                          "endTimeUnixNano": str(e - 1000)})
for i in range(5):  # traces without children: not pipeline items
    spans.append({"traceId": "%032x" % (0xdef0000 + i), "spanId": "%016x" % 1, "name": "healthz",
                  "startTimeUnixNano": str(t0 + i), "endTimeUnixNano": str(t0 + i + 10**6)})
doc = {"resourceSpans": [{"resource": {"attributes": [kv("service.name", "video")]},
                          "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}]}]}
json.dump(doc, open(sys.argv[1], "w"))
first = min(rec["decode"][i][0] for i in range(N)); last = max(rec["write"][i][1] for i in range(N))
truth = {"throughput_per_s": N / ((last - first) / 1e9),
         "svc_mean_s": {n: sum(e - s for s, e in rec[n]) / N / 1e9 for n, _, _ in stages},
         "pools": {n: W for n, W, _ in stages}, "items": N}
json.dump(truth, open(sys.argv[2], "w"))
PY

"$GOODPUT" pipeline --otlp "$tmp/spans.json" --gpu-stage infer --what-if preprocess=4 --json >"$tmp/p.json"
"$GOODPUT" pipeline --otlp "$tmp/spans.json" --gpu-stage infer >"$tmp/p.txt"
grep -q 'preprocess' "$tmp/p.txt" || { cat "$tmp/p.txt"; echo "text output does not name preprocess"; exit 1; }

check() { # $1: goodput pipeline --json output
python3 - "$1" "$tmp/truth.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1])); truth = json.load(open(sys.argv[2]))
ps = out["pipelines"]
assert len(ps) == 1, [p.get("job") for p in ps]
p = ps[0]
assert p["job"] == "video_pipeline" and p["source"] == "spans", (p["job"], p.get("source"))
st = {s["name"]: s for s in p["stages"]}
assert [s["name"] for s in p["stages"]] == ["decode", "preprocess", "infer", "write"], list(st)
assert p["bottleneck"] == "preprocess", p["bottleneck"]
for n, W in truth["pools"].items():
    assert st[n]["workers"] == W, (n, st[n]["workers"], W)
    m = truth["svc_mean_s"][n]
    assert abs(st[n]["service_s"]["mean"] - m) <= 0.01 * m, (n, st[n]["service_s"], m)
    assert st[n]["items"] == truth["items"], (n, st[n]["items"])
assert st["infer"]["resource"] == "gpu" and st["decode"]["resource"] == "cpu", (st["infer"]["resource"], st["decode"]["resource"])
tp = p["throughput_per_s"]
assert abs(tp - truth["throughput_per_s"]) <= 0.03 * truth["throughput_per_s"], (tp, truth["throughput_per_s"])
assert st["infer"]["idle_starved_share"] > 0.9 and st["infer"]["utilization"] < 0.8, st["infer"]
assert p["sizing"]["scale_first"] == "preprocess", p["sizing"]
if "what_if" in p:
    wi = p["what_if"]["steady_per_s"]
    exp = 1 / truth["svc_mean_s"]["infer"]
    assert abs(wi - exp) <= 0.10 * exp, (wi, exp)
print("pipeline_otlp: bottleneck preprocess, %.2f items/s (truth %.2f)%s" % (tp, truth["throughput_per_s"],
      ", what-if preprocess=4: %.2f/s" % p["what_if"]["steady_per_s"] if "what_if" in p else ""))
PY
}
check "$tmp/p.json"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["pipelines"][0]; assert "what_if" in p, list(p)' "$tmp/p.json"

# a file with no pipeline: exit 3 and one line
printf '{"resourceSpans":[]}' >"$tmp/empty.json"
set +e
"$GOODPUT" pipeline --otlp "$tmp/empty.json" >/dev/null 2>"$tmp/err.txt"; rc=$?
set -e
[ "$rc" = 3 ] && [ "$(wc -l <"$tmp/err.txt")" = 1 ] || { cat "$tmp/err.txt"; echo "no pipeline: exit $rc"; exit 1; }

# the same spans through the agent: POST /v1/traces, then --db --spans
P=$(free_port)
"$GOODPUT" agent --source "sim:$SRC/tests/integration/otlp_workflows.conf" --db "$tmp/gp.db" \
  --speed 1 --no-socket --flush 250ms --listen "127.0.0.1:$P" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
U="http://127.0.0.1:$P"
for i in $(seq 50); do curl -sf "$U/api/v1/" >/dev/null && break; sleep 0.1; done
code=$(curl -s -o "$tmp/post.json" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$tmp/spans.json" "$U/v1/traces")
[ "$code" = 200 ] || { cat "$tmp/post.json"; echo "POST /v1/traces answered $code"; exit 1; }
n_spans=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["resourceSpans"][0]["scopeSpans"][0]["spans"]))' "$tmp/spans.json")
for i in $(seq 100); do
  [ "$(sqlite3 "$tmp/gp.db" 'select count(*) from spans' 2>/dev/null || echo 0)" = "$n_spans" ] && break
  sleep 0.1
done
"$GOODPUT" pipeline --db "$tmp/gp.db" --spans --job video_pipeline --gpu-stage infer --json >"$tmp/pdb.json"
check "$tmp/pdb.json"

# The real OpenTelemetry JS SDK: async worker pools (2, 2, 1, 1) over FIFO queues, 60 items
(cd "$SRC" && node tests/integration/pipeline_otlp_sdk.mjs "$U/v1/traces" "$tmp/sdk.jsonl" 60) \
  || { echo "the OpenTelemetry program failed"; exit 1; }
want=$(( $(wc -l <"$tmp/sdk.jsonl") + 60 + n_spans ))
for i in $(seq 100); do
  [ "$(sqlite3 "$tmp/gp.db" 'select count(*) from spans' 2>/dev/null || echo 0)" = "$want" ] && break
  sleep 0.1
done
"$GOODPUT" pipeline --db "$tmp/gp.db" --spans --job sdk_pipeline --gpu-stage infer --json >"$tmp/sdk.json"
python3 - "$tmp/sdk.json" "$tmp/sdk.jsonl" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["pipelines"]
assert [x["job"] for x in p] == ["sdk_pipeline"], [x["job"] for x in p]
p = p[0]
log = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
st = {s["name"]: s for s in p["stages"]}
assert [s["name"] for s in p["stages"]] == ["decode", "preprocess", "infer", "write"], list(st)
assert p["bottleneck"] == "preprocess", p["bottleneck"]
for name, pool in (("decode", 2), ("preprocess", 2), ("infer", 1), ("write", 1)):
    d = [(int(x["end"]) - int(x["start"])) / 1e9 for x in log if x["stage"] == name]
    m = sum(d) / len(d)
    assert st[name]["items"] == len(d) == 60, (name, st[name]["items"], len(d))
    assert abs(st[name]["service_s"]["mean"] - m) <= 0.01 * m, (name, st[name]["service_s"]["mean"], m)
    assert st[name]["workers"] == pool, (name, st[name]["workers"], pool)
assert st["infer"]["resource"] == "gpu"
print("pipeline_otlp: the SDK's pipeline: bottleneck preprocess, %.1f items/s, pools 2/2/1/1 from the spans" % p["throughput_per_s"])
PY
echo "pipeline_otlp: ok"
