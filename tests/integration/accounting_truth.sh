#!/usr/bin/env bash
# Property test (issue 18 items 2, 3 and 5): for every shipped scenario and N random ones
# (the accuracy suite's generator, `accuracy --dump`), run the real agent (speed 0) into a
# store, then for every job check:
#   - `goodput report --json` goodput and each bucket within 2 points of the simulator's
#     truth (`goodput sim FILE --summary --json`), in points of the job's allocated time;
#   - the report's buckets sum to its allocated GPU-seconds within 0.1%;
#   - `goodput diagnose --json` findings' badput per bucket <= the job's bucket;
#   - per GPU: the sum over jobs of allocated GPU-seconds on it <= the GPU's seconds.
# Prints the worst deviation per bucket. Also tests/data/scenarios/*.conf. examples/scenarios/large.conf (1,000 GPUs) is left
# out: one agent run of it takes minutes, over this script's budget.
# Every deviation beyond 2 points fails: the allowance once made for services' not_ready/
# idle_allocated/other and restarts' recovery/startup is gone since both sides were fixed
# (stop 27: no run of N=50 on seeds 7, 11, 23 and 42 needed it).
# asan-skip: the agent and engine C paths run under ASan in the unit tests (agent_run.h)
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
BUILD=${BUILD:-build}
N=${ACCOUNTING_TRUTH_N:-8}  # 50 for the issue's full check: ACCOUNTING_TRUTH_N=50; other draws: ACCOUNTING_TRUTH_SEED=S
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
acc="$BUILD/tests/accuracy"
[ -x "$acc" ] || { echo "FAIL: $acc not built (make BUILD=$BUILD $acc)"; exit 1; }
"$acc" -n "$N" -s "${ACCOUNTING_TRUTH_SEED:-7}" --dump "$tmp"
# tests/data/scenarios/long.conf: a 6.5-hour trainer, whose summary reads the 1-minute
# rollups (allocations of 6 h or more), beside a short one read raw.
for f in "$src"/examples/scenarios/*.conf "$src"/tests/data/scenarios/*.conf; do
  case "$(basename "$f")" in large.conf) continue ;; esac
  cp "$f" "$tmp/shipped-$(basename "$f")"
done
for conf in "$tmp"/*.conf; do
  b="${conf%.conf}"
  "$GOODPUT" agent --source "sim:$conf" --db "$b.db" --speed 0 --no-socket --quiet
  "$GOODPUT" sim "$conf" --summary --json >"$b.truth.json"
  "$GOODPUT" report --db "$b.db" --json >"$b.report.json"
  "$GOODPUT" diagnose --db "$b.db" --all --json >"$b.diag.json"
done
/usr/bin/python3 - "$tmp" <<'PY'
import glob, json, os, sqlite3, sys
d = sys.argv[1]
BUCKETS = ["productive", "not_ready", "startup", "data_wait", "checkpoint",
           "wasted_progress", "recovery", "idle_allocated", "other"]
worst = {b: (0.0, "") for b in BUCKETS + ["goodput"]}
problems = []
nj = 0
for conf in sorted(glob.glob(os.path.join(d, "*.conf"))):
    base = conf[:-5]
    name = os.path.basename(base)
    truth = {j["id"]: j for j in json.load(open(base + ".truth.json"))["jobs"]}
    rep = {j["id"]: j for j in json.load(open(base + ".report.json"))["jobs"]}
    diag = json.load(open(base + ".diag.json"))["findings"]
    t = json.load(open(base + ".truth.json"))
    span_s = (t["end_ns"] - t["start_ns"]) / 1e9
    for jid, tj in truth.items():
        if tj["allocated_gpu_s"] <= 0:
            continue
        nj += 1
        rj = rep.get(jid)
        if rj is None:
            problems.append("%s: job %s is in the truth but not in the report" % (name, jid))
            continue
        A = rj["allocated_gpu_s"] or 0
        TA = tj["allocated_gpu_s"]
        # buckets as a share of each side's own allocated time, compared in points
        for b in BUCKETS:
            rv, tv = rj["gpu_s_by_bucket"].get(b), tj["buckets_gpu_s"][b]
            if rv is None:
                problems.append("%s: %s bucket %s unknown in the report" % (name, jid, b))
                continue
            dev = 100 * abs(rv / A - tv / TA) if A > 0 else 100
            if dev > worst[b][0]:
                worst[b] = (dev, "%s/%s" % (name, jid))
            if dev > 2:
                msg = ("%s: %s bucket %s report %.1f%% truth %.1f%% (%.1f pts)"
                       % (name, jid, b, 100 * rv / A, 100 * tv / TA, dev))
                problems.append(msg)
        g, tg = rj["goodput"], tj["goodput"]
        if g is None or tg is None:
            if (g is None) != (tg is None) and tj["kind"] != "idle":
                problems.append("%s: %s goodput report %s truth %s" % (name, jid, g, tg))
        else:
            dev = 100 * abs(g - tg)
            if dev > worst["goodput"][0]:
                worst["goodput"] = (dev, "%s/%s" % (name, jid))
            if dev > 2:
                problems.append("%s: %s goodput report %.1f%% truth %.1f%%" % (name, jid, 100 * g, 100 * tg))
        s = sum(v for v in rj["gpu_s_by_bucket"].values() if v is not None)
        if A > 0 and abs(s - A) > 0.001 * A:
            problems.append("%s: %s buckets sum %.1f != allocated %.1f" % (name, jid, s, A))
        for f in diag:
            if f.get("job") != jid:
                continue
            for b, v in f["badput_gpu_s"].items():
                if b == "total" or v is None:
                    continue
                if v > rj["gpu_s_by_bucket"][b] + 1e-6:
                    problems.append("%s: %s finding %s claims %.1f GPU-s of %s > bucket %.1f"
                                    % (name, jid, f["class"], v, b, rj["gpu_s_by_bucket"][b]))
    # per GPU: allocated GPU-seconds of all jobs on it <= its seconds
    db = sqlite3.connect(base + ".db")
    per = {}
    for job, uuid, f0, f1 in db.execute("SELECT job_id, uuid, from_ns, to_ns FROM allocations"):
        per.setdefault(job, set()).add(uuid)
    load = {}
    for job, uuids in per.items():
        rj = rep.get(job)
        if not rj or not rj["allocated_gpu_s"]:
            continue
        for u in uuids:
            load[u] = load.get(u, 0) + rj["allocated_gpu_s"] / len(uuids)
    for u, s in load.items():
        if s > span_s * 1.001:
            problems.append("%s: GPU %s carries %.0f allocated GPU-s in a %.0f s run" % (name, u, s, span_s))
print("accounting vs truth: %d jobs in %d scenarios" % (nj, len(glob.glob(os.path.join(d, "*.conf")))))
print("worst deviation per bucket (points of allocated time):")
for b, (v, where) in worst.items():
    print("  %-16s %6.2f  %s" % (b, v, where))
for p in problems:
    print("DEVIATION:", p)
sys.exit(1 if problems else 0)
PY
