#!/usr/bin/env bash
# asan-skip: the agent and the diagnosis run under ASan in test_engine_classify, test_engine_windows and test_goodput
# Long jobs' diagnosis from 1-minute rollups (issue 22 item 4): tests/data/scenarios/long.conf
# (a 6.5-h trainer beside a 1-h one) through the agent into a store, then
# `goodput diagnose --all --json` twice: as shipped (the trainer's telemetry read from its
# 1-minute rollups, like the accounting) and with GOODPUT_DIAG_RAW=1 (raw samples). Checks:
#   - the rollup path was taken for the trainer only (telemetry.rollup_s 60 vs null);
#   - both paths find the same classes for the same jobs and scopes;
#   - each finding's badput per bucket and headroom agree within 1% of the job's
#     allocated GPU-time, and never exceed the accounting's bucket (`goodput report
#     --json`, the same numbers the report prints);
#   - `goodput report`'s findings (which reuse the report's accounting) are the rollup
#     path's findings.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/long.conf" --db "$tmp/long.db" \
  --speed 0 --no-socket --quiet
cp "$tmp/long.db" "$tmp/raw.db"
"$GOODPUT" diagnose --db "$tmp/long.db" --all --json >"$tmp/roll.json"
GOODPUT_DIAG_RAW=1 "$GOODPUT" diagnose --db "$tmp/raw.db" --all --json >"$tmp/raw.json"
"$GOODPUT" report --db "$tmp/long.db" --json >"$tmp/report.json"

/usr/bin/python3 - "$tmp" <<'PY'
import json, os, sys
d = sys.argv[1]
roll = json.load(open(os.path.join(d, "roll.json")))
raw = json.load(open(os.path.join(d, "raw.json")))
rep = json.load(open(os.path.join(d, "report.json")))
problems = []
res = {j["job"]: j["telemetry"].get("rollup_s") for j in roll["jobs"]}
res_raw = {j["job"]: j["telemetry"].get("rollup_s") for j in raw["jobs"]}
if res.get("marathon") != 60:
    problems.append("marathon (6.5 h) was not read from 1-minute rollups: %r" % res)
if res.get("sprint") is not None:
    problems.append("sprint (1 h) was read from rollups: %r" % res)
if any(v is not None for v in res_raw.values()):
    problems.append("GOODPUT_DIAG_RAW=1 still read rollups: %r" % res_raw)
alloc = {j["id"]: j["allocated_gpu_s"] for j in rep["jobs"]}
acct = {j["id"]: j for j in rep["jobs"]}
def key(f):
    return (f["job"], f["class"], f["scope"], f["scope_id"])
fr = {key(f): f for f in roll["findings"]}
fw = {key(f): f for f in raw["findings"]}
if set(fr) != set(fw):
    problems.append("classes differ: rollups %s, raw %s" % (sorted(set(fr) - set(fw)), sorted(set(fw) - set(fr))))
if not fr:
    problems.append("no findings at all")
worst = 0.0
for k in sorted(set(fr) & set(fw)):
    a, b = fr[k], fw[k]
    A = alloc.get(k[0])
    if not A:
        problems.append("%s: no allocated GPU-time in the report" % (k,))
        continue
    for bk, va in a["badput_gpu_s"].items():
        vb = b["badput_gpu_s"].get(bk)
        if va is None or vb is None:
            if va != vb:
                problems.append("%s %s: known on one path only (%r, %r)" % (k, bk, va, vb))
            continue
        worst = max(worst, abs(va - vb) / A)
        if abs(va - vb) > 0.01 * A:
            problems.append("%s %s: rollups %.1f vs raw %.1f GPU-s (> 1%% of %.0f)" % (k, bk, va, vb, A))
        if bk != "total":
            have = acct[k[0]]["gpu_s_by_bucket"].get(bk)
            if have is None:
                problems.append("%s %s: the report has no such bucket" % (k, bk))
            elif va > have + 1e-6:
                problems.append("%s %s: %.1f GPU-s over the accounting's %.1f" % (k, bk, va, have))
    ha, hb = a["headroom_gpu_s"], b["headroom_gpu_s"]
    if (ha is None) != (hb is None) or (ha is not None and abs(ha - hb) > 0.01 * A):
        problems.append("%s headroom: rollups %r vs raw %r" % (k, ha, hb))
rk = sorted((key(f), json.dumps(f["badput_gpu_s"], sort_keys=True)) for f in rep.get("findings", []))
dk = sorted((key(f), json.dumps(f["badput_gpu_s"], sort_keys=True)) for f in roll["findings"])
if rk != dk:
    problems.append("report findings differ from diagnose's: %s vs %s" % (rk, dk))
print("diagnose_long: %d findings, same classes on both paths, worst badput gap %.4f%% of allocated" % (len(fr), 100 * worst))
if problems:
    print("FAIL:\n  " + "\n  ".join(problems))
    sys.exit(1)
PY
echo "diagnose_long: ok"
