#!/usr/bin/env bash
# otlp_workflows.sh: a Node.js program using the real OpenTelemetry SDK (npm, package-lock)
# sends a few hundred agent workflows over OTLP/HTTP to `goodput agent --listen` whose
# simulated node runs the LLM engine the model calls name (service.name = its job id). The
# per-workflow figures of `goodput workflows --db` are checked against the program's own
# log: tool time within 1%, GPU-seconds within 5% of what the simulator's truth implies
# (the engine's busy fraction from `goodput sim --summary`, split by token share of the
# calls in flight, computed here from the log), failed workflows' GPU-seconds counted as
# retry waste, tool_bound naming the slow tool, serial_steps with the saving.
# asan-skip: the decoders and the analysis run under ASan in tests/unit/test_otlp.c
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in curl python3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
if [ ! -d "$SRC/node_modules/@opentelemetry/sdk-trace-node" ]; then
  command -v npm >/dev/null || { echo "skip: npm missing for playwright-core"; exit 77; }
  (cd "$SRC" && npm ci --no-audit --no-fund >/dev/null 2>&1) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-otlp-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
conf="$SRC/tests/integration/otlp_workflows.conf"
P=$(free_port)
"$GOODPUT" agent --source "sim:$conf" --db "$tmp/gp.db" --speed 1 --no-socket --flush 500ms \
  --listen "127.0.0.1:$P" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
U="http://127.0.0.1:$P"
for i in $(seq 50); do curl -sf "$U/api/v1/" >/dev/null && break; sleep 0.1; done

# Malformed payloads: 400 with a reason; nothing stored from them.
code=$(curl -s -o "$tmp/bad.json" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary '{"resourceSpans": 7}' "$U/v1/traces")
[ "$code" = 400 ] || { cat "$tmp/bad.json"; echo "malformed OTLP JSON answered $code"; exit 1; }
grep -q resourceSpans "$tmp/bad.json" || { cat "$tmp/bad.json"; echo "400 without the reason"; exit 1; }
code=$(curl -s -o "$tmp/bad2.json" -w '%{http_code}' -H 'Content-Type: application/x-protobuf' --data-binary $'\x0a\x05\x12\x09abc' "$U/v1/traces")
[ "$code" = 400 ] || { cat "$tmp/bad2.json"; echo "malformed OTLP protobuf answered $code"; exit 1; }

# The workflows start once the agent has a sample of the GPU: a call before the first
# sample has no telemetry to be joined to.
for i in $(seq 100); do
  [ "$(sqlite3 "$tmp/gp.db" 'select count(*) from samples' 2>/dev/null || echo 0)" -gt 0 ] && break
  sleep 0.1
done
(cd "$SRC" && node tests/integration/otlp_workflows.mjs "$U/v1/traces" "$tmp/log.jsonl" 300) \
  || { echo "the OpenTelemetry program failed"; exit 1; }
sleep 2.5 # the samples after the last call committed (--flush 500ms), and the pump's store of the last spans
"$GOODPUT" sim "$conf" --summary --json >"$tmp/truth.json"
"$GOODPUT" workflows --db "$tmp/gp.db" --json >"$tmp/wf.json"
curl -sf "$U/api/v1/workflows" >"$tmp/api.json"
curl -sf "$U/metrics" >"$tmp/metrics.txt"

python3 - "$tmp/log.jsonl" "$tmp/wf.json" "$tmp/truth.json" "$tmp/api.json" "$tmp/metrics.txt" <<'PY'
import json, sys
log = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
wf = json.load(open(sys.argv[2])); truth = json.load(open(sys.argv[3])); api = json.load(open(sys.argv[4]))
job = truth["jobs"][0]
busy_frac = job["n_gpus"] * (1 - job["buckets_gpu_s"]["idle_allocated"] / job["allocated_gpu_s"])
roots = {x["trace"]: x for x in log if x.get("root")}
steps = [x for x in log if not x.get("root")]
assert len(roots) == 300, len(roots)
got = {w["trace_id"]: w for w in wf["workflows"]}
assert set(got) == set(roots), (len(got), len(roots))
# tool time per workflow within 1%
tool = {t: 0 for t in roots}
for s in steps:
    if s["op"] == "execute_tool": tool[s["trace"]] += (int(s["end"]) - int(s["start"])) / 1e9
bad = [t for t in roots if abs(got[t]["time_by_step_s"]["tool"] - tool[t]) > 0.01 * tool[t] + 1e-9]
assert not bad, ("tool time", [(got[t]["time_by_step_s"]["tool"], tool[t]) for t in bad[:5]])
# GPU-s per workflow: the engine's busy GPU-s (truth: busy fraction) split by token rate
calls = [s for s in steps if s["op"] == "chat"]
ev = sorted([(int(c["start"]), 1, i) for i, c in enumerate(calls)] + [(int(c["end"]), -1, i) for i, c in enumerate(calls)])
w = [(c["in"] + c["out"]) / (int(c["end"]) - int(c["start"])) for c in calls]
exp_call = [0.0] * len(calls); act = set(); prev = None
for t, d, i in ev:
    if prev is not None and t > prev and act:
        tot = sum(w[k] for k in act)
        for k in act: exp_call[k] += (t - prev) / 1e9 * busy_frac * w[k] / tot
    prev = t
    (act.add if d > 0 else act.discard)(i)
exp = {t: 0.0 for t in roots}; exp_retry = 0.0
for i, c in enumerate(calls):
    exp[c["trace"]] += exp_call[i]
    if not c["ok"] or not roots[c["trace"]]["ok"]: exp_retry += exp_call[i]
assert wf["gpu_known"], "no engine joined"
bad = [t for t in roots if abs(got[t]["gpu_s"] - exp[t]) > 0.05 * exp[t]]
assert len(bad) == 0, ("GPU-s", len(bad), [(got[t]["gpu_s"], exp[t]) for t in bad[:5]])
# failed workflows: all their GPU-s is retry waste
failed = [t for t in roots if not roots[t]["ok"]]
assert failed, "the program made no failed workflow"
for t in failed:
    assert not got[t]["ok"] and abs(got[t]["retry_gpu_s"] - got[t]["gpu_s"]) < 1e-9, got[t]
F = {(f["class"], f["scope_id"]): f for f in wf["findings"]}
rw = F[("retry_waste", "qa")]
assert abs(rw["badput_gpu_s"]["total"] - exp_retry) <= 0.05 * exp_retry, (rw["badput_gpu_s"]["total"], exp_retry)
# tool_bound names the slow tool; serial_steps gives the saving (sum - longest)
assert ("tool_bound", "research/execute_tool web_search") in F, list(F)
ss = F[("serial_steps", "trip_planner")]
sav = {}
for s in steps:
    if s["wf"] == "trip_planner" and s["op"] == "execute_tool":
        sav.setdefault(s["trace"], []).append((int(s["end"]) - int(s["start"])) / 1e9)
exp_sav = sum(sum(v) - max(v) for v in sav.values()) / len(sav)
got_sav = [e["value"] for e in ss["evidence"] if e["metric"] == "saving_s_per_workflow"][0]
assert abs(got_sav - exp_sav) <= 0.01 * exp_sav, (got_sav, exp_sav)
assert not any(c == "serial_steps" and s == "research" for c, s in F), "research tools are not serial siblings"
# the API serves the same kinds, and counts what it ingested
assert sorted(k["kind"] for k in api["kinds"]) == ["qa", "research", "trip_planner"], api["kinds"]
assert api["ingest"]["spans_accepted"] == len(log), (api["ingest"], len(log))
# /metrics counts the same: every span the SDK sent accepted, the two malformed bodies 400
m = {}
for l in open(sys.argv[5]):
    if l.strip() and not l.startswith('#'):
        k, v = l.rsplit(' ', 1); m[k] = float(v)
assert m['goodput_otlp_spans_accepted_total'] == len(log), m['goodput_otlp_spans_accepted_total']
assert m['goodput_otlp_spans_received_total'] == len(log)
assert sum(v for k, v in m.items() if k.startswith('goodput_otlp_spans_dropped_total')) == 0
assert m['goodput_otlp_requests_rejected_total{code="400"}'] == 2
tool_err = max(abs(got[t]["time_by_step_s"]["tool"] - tool[t]) / tool[t] for t in roots if tool[t] > 0)
gpu_err = max(abs(got[t]["gpu_s"] - exp[t]) / exp[t] for t in roots if exp[t] > 0)
print("otlp_workflows: %d workflows, %d spans, busy fraction %.5f, retry waste %.3f GPU-s, saving %.3f s" %
      (len(roots), len(log), busy_frac, exp_retry, exp_sav))
print("otlp_workflows: worst workflow: tool time off by %.4f%% (bound 1%%), GPU-s off by %.3f%% (bound 5%%)" %
      (100 * tool_err, 100 * gpu_err))
PY
"$GOODPUT" workflows --db "$tmp/gp.db" --html "$tmp/wf.html"
grep -q '<svg' "$tmp/wf.html" || { echo "no waterfall in the HTML"; exit 1; }
echo "otlp_workflows: ok"
