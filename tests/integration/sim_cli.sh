#!/usr/bin/env bash
# `goodput sim` from the command line: one-line errors naming file:line and key with the
# right exit codes, CSV/JSON/event output with the promised shape, byte-identical output
# for the same scenario and seed, and the ground truth (--summary, --summary --json) for
# every shipped scenario.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || fail "python3 is needed (scripts/install-deps installs it)"

expect_err() { # exit-code, pattern, command...
  local want=$1 pat=$2; shift 2
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq "$want" ] || fail "$* exited $rc, expected $want: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -ge 1 ] || fail "$*: no error message"
  grep -q -- "$pat" "$tmp/err" || fail "$*: error '$(cat "$tmp/err")' does not mention '$pat'"
}

expect_err 2 "usage" "$GOODPUT" sim
expect_err 2 "unknown option" "$GOODPUT" sim examples/scenarios/demo.conf --bogus
expect_err 2 "--interval" "$GOODPUT" sim examples/scenarios/demo.conf --interval soon
expect_err 3 "nope.conf" "$GOODPUT" sim "$tmp/nope.conf"
printf '[node]\ngpus = 2\n[job a]\ngpus = 0\nloader_workers = x\n' >"$tmp/bad.conf"
expect_err 3 "bad.conf:5: key 'loader_workers'" "$GOODPUT" sim "$tmp/bad.conf"

scen=examples/scenarios/consumer.conf
"$GOODPUT" sim "$scen" --csv >"$tmp/a.csv"
"$GOODPUT" sim "$scen" --csv >"$tmp/b.csv"
cmp -s "$tmp/a.csv" "$tmp/b.csv" || fail "two runs of $scen differ"
head -1 "$tmp/a.csv" | grep -q '^ts_ns,uuid,gpu_util,sm_active' || fail "CSV header"
rows=$(($(wc -l <"$tmp/a.csv") - 1))
[ "$rows" -eq 2400 ] || fail "expected 2 GPUs x 1200 samples, got $rows rows"
# profiling = no: the sm_active column stays empty
awk -F, 'NR > 1 && $4 != "" { bad = 1 } END { exit bad }' "$tmp/a.csv" || fail "sm_active known without profiling"

"$GOODPUT" sim "$scen" --json --interval 10s >"$tmp/a.json"
[ "$(wc -l <"$tmp/a.json")" -eq 240 ] || fail "JSON lines count"
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/a.json" || fail "JSON"

"$GOODPUT" sim examples/scenarios/restarts.conf --events >"$tmp/ev"
grep -q '^restart job=flaky step=' "$tmp/ev" || fail "no restart event"
grep -q '^phase job=flaky name=checkpoint_restore edge=begin' "$tmp/ev" || fail "no restore phase"
# the simulator says what a workload and a scheduler's submit hook say, never where GPUs
# were allocated (the agent sees that in the node's job map and processes)
grep -q '^job job=queued state=submitted' "$tmp/ev" || fail "no submission of the never-ready job"
! grep -qE '^alloc |state=allocated' "$tmp/ev" || fail "the simulator announced an allocation"
! grep -q '^step job=queued' "$tmp/ev" || fail "the never-ready job made progress"
awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^ts=/) { t = substr($i, 4) + 0; if (t < last) exit 1; last = t } }' "$tmp/ev" ||
  fail "events are not in time order"
expect_err 2 "one JSON document" "$GOODPUT" sim examples/scenarios/demo.conf --summary --json --events

# The ground truth (--summary --json), for every shipped scenario: one JSON document with
# every job and every gp_bucket; the buckets partition the allocated GPU-seconds (within
# 0.1%); goodput = productive / allocated; steps, restarts and requests agree with the
# event lines the same run emits; good requests are those meeting the SLOs of the job's
# hello (vLLM's rule). The text summary fits 100 columns and shows the same goodput.
for scen in examples/scenarios/*.conf; do
  "$GOODPUT" sim "$scen" --summary --json >"$tmp/truth.json" || fail "$scen: --summary --json"
  "$GOODPUT" sim "$scen" --summary --json >"$tmp/truth2.json"
  cmp -s "$tmp/truth.json" "$tmp/truth2.json" || fail "$scen: two runs give different truth"
  "$GOODPUT" sim "$scen" --events >"$tmp/ev.txt"
  "$GOODPUT" sim "$scen" --summary >"$tmp/sum.txt"
  python3 - "$scen" "$tmp/truth.json" "$tmp/ev.txt" "$tmp/sum.txt" <<'PY' || fail "$scen: ground truth (above)"
import json, sys
scen, truth, evf, sumf = sys.argv[1:]
bad = []
def check(ok, msg):
    if not ok: bad.append(msg)
d = json.load(open(truth))  # one document, nothing else on stdout
buckets = ["productive", "not_ready", "startup", "data_wait", "checkpoint",
           "wasted_progress", "recovery", "idle_allocated", "other"]
keys = {"id": str, "kind": str, "n_gpus": int, "queue_s": float, "allocated_gpu_s": float,
        "buckets_gpu_s": dict, "checkpoint_restore_gpu_s": float, "steps": int,
        "steps_redone": int, "restarts": int, "requests": int, "good_requests": int,
        "tokens": int, "good_tokens": int}
check(d["end_ns"] > d["start_ns"], "end_ns <= start_ns")
check(len(d["jobs"]) > 0, "no jobs")
# what the same run emitted, per job
ev = {}
def fields(line):
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
for line in open(evf):
    kind = line.split(" ", 1)[0]
    f = fields(line)
    e = ev.setdefault(f.get("job"), {"step": 0, "restart": 0, "request": [], "slo": {}})
    if kind in ("step", "restart"):
        e[kind] += 1
    elif kind == "request":
        e["request"].append(f)
    elif kind == "hello":
        e["slo"] = {k: float(f[k]) for k in ("slo_ttft", "slo_tpot", "slo_e2e") if k in f}
def good(r, slo):
    if r.get("ok", "1") != "1": return False
    arr, ft, end, out = (int(r[k]) for k in ("arrival", "first_token", "ts", "output"))
    e2e, ttft = (end - arr) / 1e9, (ft - arr) / 1e9
    if slo.get("slo_e2e", 0) > 0 and e2e > slo["slo_e2e"]: return False
    if slo.get("slo_ttft", 0) > 0 and ttft > slo["slo_ttft"]: return False
    if slo.get("slo_tpot", 0) > 0 and out > 1 and (e2e - ttft) / (out - 1) > slo["slo_tpot"]:
        return False
    return True
text = open(sumf).read().splitlines()
for j in d["jobs"]:
    jid = j.get("id")
    for k, t in keys.items():
        check(isinstance(j.get(k), t) and not isinstance(j.get(k), bool),
              f"{jid}: {k} = {j.get(k)!r}, expected {t.__name__}")
    if bad: break
    b = j["buckets_gpu_s"]
    check(sorted(b) == sorted(buckets), f"{jid}: buckets {sorted(b)}")
    check(all(v >= 0 for v in b.values()), f"{jid}: negative bucket {b}")
    alloc = j["allocated_gpu_s"]
    check(alloc > 0, f"{jid}: allocated {alloc}")
    total = sum(b.values())
    check(abs(total - alloc) <= 1e-3 * alloc, f"{jid}: buckets sum to {total}, allocated {alloc}")
    check(abs(j["goodput"] - b["productive"] / alloc) < 1e-9, f"{jid}: goodput {j['goodput']}")
    check(j["checkpoint_restore_gpu_s"] <= b["checkpoint"] + 1e-6, f"{jid}: restore > checkpoint")
    check(j["ready_s"] is None or j["ready_s"] >= 0, f"{jid}: ready_s {j['ready_s']}")
    e = ev.get(jid, {"step": 0, "restart": 0, "request": [], "slo": {}})
    check(j["steps"] == e["step"], f"{jid}: steps {j['steps']}, {e['step']} step lines")
    check(j["restarts"] == e["restart"], f"{jid}: restarts {j['restarts']}, {e['restart']} lines")
    check(j["requests"] == len(e["request"]), f"{jid}: requests {j['requests']}, {len(e['request'])} lines")
    check(j["tokens"] == sum(int(r["output"]) for r in e["request"]), f"{jid}: tokens {j['tokens']}")
    g = [r for r in e["request"] if good(r, e["slo"])]
    check(j["good_requests"] == len(g), f"{jid}: good_requests {j['good_requests']}, by the SLOs {len(g)}")
    check(j["good_tokens"] == sum(int(r["output"]) for r in g), f"{jid}: good_tokens {j['good_tokens']}")
    check(j["steps_redone"] <= j["steps"], f"{jid}: {j['steps_redone']} redone of {j['steps']}")
    check((j["restarts"] > 0) == (b["wasted_progress"] > 0),
          f"{jid}: {j['restarts']} restarts, wasted_progress {b['wasted_progress']}")
    if j["kind"] == "training": check(j["steps"] > 0, f"{jid}: a training job without steps")
    if j["kind"] == "inference": check(j["requests"] > 0, f"{jid}: a service without requests")
    # the text row for this job shows the same goodput
    row = [l for l in text if l.split()[:1] == [jid]]
    check(len(row) == 2, f"{jid}: {len(row)} rows in the text summary, expected 2 (jobs, badput)")
    if row:
        check(f"{100 * j['goodput']:.1f}%" in row[0].split(), f"{jid}: text row {row[0]!r}")
wide = [l for l in text if len(l) > 100]
check(not wide, f"text summary wider than 100 columns: {wide[:2]}")
if bad:
    print(f"{scen}:", *bad[:10], sep="\n  ")
    sys.exit(1)
PY
done
# The demo's starved trainer waits for data: data_wait is its largest badput bucket.
"$GOODPUT" sim examples/scenarios/demo.conf --summary --json | python3 -c '
import json, sys
j = {x["id"]: x for x in json.load(sys.stdin)["jobs"]}["train-starved"]
b = dict(j["buckets_gpu_s"]); b.pop("productive")
assert max(b, key=b.get) == "data_wait" and b["data_wait"] > 0.2 * j["allocated_gpu_s"], b
' || fail "demo: train-starved is not data-starved in the truth"
echo "ok"
