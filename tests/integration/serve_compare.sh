#!/usr/bin/env bash
# serve_compare.sh: `goodput compare` on two simulated runs that differ by a known amount.
# run-b's kernels reach 0.625 of peak where run-a's reach 0.5, with the same FLOPs per
# step and negligible data loading, so B's step time is 0.5/0.625 = 0.8 of A's: B is 20%
# faster per step. The verdict must say B is faster, and the 95% interval of the speedup
# must contain 0.20. Two halves of the same run (an A/A comparison) must give no verdict.
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-compare-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
effa=0.5 effb=0.625
cat >"$tmp/ab.conf" <<CONF
[node]
name = cmp
gpus = 2
model = H100-SXM
seed = 7
duration = 10m
profiling = yes

[job run-a]
kind = training
gpus = 0
batch = 8 ; sample_cpu = 10us ; loader_workers = 8 ; sample_bytes = 1KiB
flops_per_step = 400T ; efficiency = $effa

[job run-b]
kind = training
gpus = 1
batch = 8 ; sample_cpu = 10us ; loader_workers = 8 ; sample_bytes = 1KiB
flops_per_step = 400T ; efficiency = $effb
CONF
"$GOODPUT" agent --source "sim:$tmp/ab.conf" --db "$tmp/ab.db" --speed 0 --no-socket --quiet
"$GOODPUT" compare --db "$tmp/ab.db" run-a run-b | tee "$tmp/text.txt"
grep -q '^verdict: B is .*faster per step' "$tmp/text.txt"
grep -q 'never used for the verdict' "$tmp/text.txt"
"$GOODPUT" compare --db "$tmp/ab.db" run-a run-b --json >"$tmp/ab.json"
"$GOODPUT" compare --db "$tmp/ab.db" run-a@1m..5m run-a@5m..9m --json >"$tmp/aa.json"
python3 - "$tmp" "$effa" "$effb" <<'PY'
import json, sys
d, ea, eb = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
expected = 1 - ea / eb   # step time ratio B/A = ea/eb
ab = json.load(open(f"{d}/ab.json"))
p = ab["primary"]
print(f"expected speedup {expected:.3f}; measured {p['speedup']:.4f} [{p['speedup_ci95_low']:.4f}, {p['speedup_ci95_high']:.4f}]")
assert p["speedup_ci95_low"] <= expected <= p["speedup_ci95_high"], p
assert p["speedup_ci95_high"] - p["speedup_ci95_low"] < 0.05, "interval implausibly wide"
# Utilization is reported but the verdict rests on step time alone.
assert ab["utilization_context_only"], "utilization deltas missing"
assert p["metric"] == "step_time_mean_s"
aa = json.load(open(f"{d}/aa.json"))
q = aa["primary"]
print(f"A/A: {q['speedup']:.4f} [{q['speedup_ci95_low']:.4f}, {q['speedup_ci95_high']:.4f}]; {aa['verdict']}")
assert q["speedup_ci95_low"] <= 0 <= q["speedup_ci95_high"], q
assert aa["verdict"].startswith("no clear difference"), aa["verdict"]
PY
# Bad input: clear usage errors.
if "$GOODPUT" compare --db "$tmp/ab.db" run-a 2>/dev/null; then echo "one argument accepted"; exit 1; fi
if "$GOODPUT" compare --db "$tmp/ab.db" run-a nope 2>"$tmp/err"; then echo "unknown job accepted"; exit 1; fi
grep -q "job 'nope' is not in" "$tmp/err"
echo "serve_compare: ok"

# Two trace analyses (the JSON of `goodput trace --json`), made here with a known
# difference: 40 profiled steps on 2 ranks, B's steps 0.8 x A's (with +-3% noise); the
# slower rank sets each step's time.
python3 - "$tmp" <<'PY'
import json, random, sys
d = sys.argv[1]
rnd = random.Random(5)
def doc(base_us):
    ranks = []
    for r in range(2):
        steps = [{"name": f"ProfilerStep#{i}", "dur_us": base_us * rnd.uniform(0.97, 1.03)} for i in range(40)]
        span = sum(s["dur_us"] for s in steps)
        ranks.append({"rank": r, "steps": steps, "temporal": {"span_us": span, "idle_us": 0.3 * span}})
    return {"ranks": ranks, "kernel_types": [], "findings": []}
json.dump(doc(100000.0), open(f"{d}/trace_a.json", "w"))
json.dump(doc(80000.0), open(f"{d}/trace_b.json", "w"))
PY
"$GOODPUT" compare "$tmp/trace_a.json" "$tmp/trace_b.json" --json >"$tmp/tr.json"
python3 - "$tmp/tr.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["primary"]
print("traces:", p)
assert p["speedup_ci95_low"] <= 0.2 <= p["speedup_ci95_high"], p
PY
echo "serve_compare (traces): ok"
