#!/usr/bin/env bash
# engine_traces.sh: the engine's vocabulary against the real traces' diagnoses (issue 6).
# For every Kineto trace set in ../shared/data/kineto, `goodput trace --json` must
#   1. use only classes of the one vocabulary (the enum in src/model/finding.h);
#   2. name a dominant class (largest wasted GPU-time summed over ranks) that HTA's oracle
#      numbers for that set support, with expectations derived here from the oracle CSVs
#      (temporal breakdown, idle-time breakdown, kernel breakdown by type, comm/compute
#      overlap), never hard-coded per set:
#        - compute fills >= 70% of the span      -> compute_bound (healthy) dominates;
#        - otherwise the dominant class must be a loss the oracle shows as >= 10% of the
#          span: communication_bound <- communication kernels not overlapping compute;
#          host_bound / input_bound   <- idle time the streams spent waiting on the host;
#        - communication >= 50% of busy GPU time with < 50% overlap -> communication_bound
#          is among the findings; no communication kernels at all -> it is not;
#   3. quote evidence numbers that agree with the oracle (idle share, compute share,
#      comm/compute overlap of the rank named by the finding's scope).
set -euo pipefail
DATA=${GOODPUT_DATA:-../shared/data}
GOODPUT=${GOODPUT:-build/goodput}
SRC=${GOODPUT_SRC:-.}
[ -d "$DATA/kineto" ] && [ -d "$DATA/oracle" ] || { echo "skip: no real data at $DATA (kineto, oracle)"; exit 77; }
[ -x /usr/bin/python3 ] || { echo "skip: python3 missing"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
n=0
for dir in "$DATA"/kineto/*/; do
  set=$(basename "$dir")
  [ -d "$DATA/oracle/$set" ] || continue
  "$GOODPUT" trace "$dir" --json >"$tmp/$set.json"
  /usr/bin/python3 - "$tmp/$set.json" "$DATA/oracle/$set" "$SRC/src/model/finding.h" "$set" <<'PY'
import csv, json, os, re, sys
out, odir, header, name = sys.argv[1:5]
r = json.load(open(out))
findings = r.get("findings", [])
assert findings, f"{name}: no findings"

# 1. vocabulary: GP_FC_<NAME> in the enum, lower-cased
enum = open(header).read().split("typedef enum", 2)[1]
vocab = {m.lower() for m in re.findall(r"GP_FC_([A-Z_]+[A-Z])\b", enum) if not m.startswith("_")}
assert "communication_bound" in vocab and len(vocab) >= 17, vocab
for f in findings:
    assert f["class"] in vocab, f"{name}: class {f['class']!r} is not in model/finding.h"

# 2. the oracle's numbers
def rows(fn):
    return list(csv.DictReader(open(os.path.join(odir, fn))))
temporal = rows("temporal_breakdown.csv")
span = sum(float(x["kernel_time(us)"]) for x in temporal)
idle = sum(float(x["idle_time(us)"]) for x in temporal)
compute = sum(float(x["compute_time(us)"]) for x in temporal)
idle_rows = rows("idle_time_breakdown.csv")
idle_all = sum(float(x["idle_time"]) for x in idle_rows)
host_wait = sum(float(x["idle_time"]) for x in idle_rows if x["idle_category"] == "host_wait")
host_idle = idle * (host_wait / idle_all if idle_all > 0 else 0)
bytype = rows("gpu_kernel_breakdown_by_type.csv")
kernel_total = sum(float(x["sum"]) for x in bytype)
comm_only = sum(float(x["sum"]) for x in bytype if x["kernel_type"] == "COMMUNICATION")
comm_all = sum(float(x["sum"]) for x in bytype if "COMMUNICATION" in x["kernel_type"])
overlap = {int(x["rank"]): float(x["comp_comm_overlap_pctg"]) for x in rows("comm_comp_overlap.csv")
           if x["comp_comm_overlap_pctg"] not in ("", "nan", "NaN")}
mean_overlap = sum(overlap.values()) / len(overlap) if overlap else None

wasted = {}
for f in findings:
    wasted[f["class"]] = wasted.get(f["class"], 0) + (f.get("wasted_gpu_s") or 0)
dominant = max(wasted, key=lambda c: (wasted[c], c))
classes = set(wasted)
why = (f"{name}: dominant {dominant} (wasted {wasted}); oracle span {span:.0f} us, compute "
       f"{compute / span:.2f}, host-wait idle {host_idle / span:.2f}, exposed comm "
       f"{comm_only / span:.2f}, comm of busy {comm_all / kernel_total:.2f}, overlap {mean_overlap}")
if compute / span >= 0.7:
    assert dominant == "compute_bound", why
else:
    support = {
        "communication_bound": comm_only / span,
        "host_bound": host_idle / span,
        "input_bound": host_idle / span,
    }
    assert dominant in support, why
    assert support[dominant] >= 0.10, why
if comm_all / kernel_total >= 0.5 and (mean_overlap is None or mean_overlap < 50):
    assert "communication_bound" in classes, why
if comm_all == 0:
    assert "communication_bound" not in classes, why

# 3. evidence numbers against the oracle, per rank
by_rank = {int(x["rank"]): x for x in temporal}
checked = 0
for f in findings:
    m = re.match(r"rank (\d+)$", f.get("scope_id", ""))
    if not m or int(m.group(1)) not in by_rank:
        continue
    rk = int(m.group(1))
    t = by_rank[rk]
    for e in f["evidence"]:
        if e["metric"] == "gpu_idle_share":
            assert abs(e["value"] - float(t["idle_time_pctg"]) / 100) < 0.01, (name, f, t)
            checked += 1
        elif e["metric"] == "compute_share":
            assert abs(e["value"] - float(t["compute_time_pctg"]) / 100) < 0.01, (name, f, t)
            checked += 1
        elif e["metric"] == "comm_comp_overlap_pctg" and rk in overlap:
            assert abs(e["value"] - overlap[rk]) < 0.5, (name, f, overlap)
            checked += 1
print(f"{name}: {len(findings)} findings, dominant {dominant}; consistent with the oracle "
      f"({checked} evidence values checked)")
PY
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "skip: no trace set with an oracle"; exit 77; }
echo "ok: $n trace sets"
