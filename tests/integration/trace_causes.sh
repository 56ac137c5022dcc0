#!/usr/bin/env bash
# trace_causes.sh: idle time attributed to host activity, the per-step view and trace hygiene
# (issue 19 items 1-3), on small Kineto traces generated here with known answers:
#   - a DataLoader that starves the GPU     -> input_bound, data-loading share of idle within
#                                              3 points of the generator's truth;
#   - tiny kernels launched from Python     -> host_bound, launch overhead dominates;
#   - an .item() sync in every iteration    -> host_bound, sync dominates;
#   - two runs of rank 0 in one folder      -> two runs, neither summed into the other;
#   - a repeated step id, a negative and a zero duration -> counted, warned with file and
#     event index, left out of the per-step view.
set -euo pipefail
command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import json, os, random, sys
out = sys.argv[1]
random.seed(19)

class T:
    """A Kineto trace being written: one main thread (tid 1), one stream (7)."""
    def __init__(self, rank=0, pid=1000, t0=1_700_000_000_000_000):
        self.ev, self.corr, self.rank, self.pid, self.t = [], 1, rank, pid, t0
        self.gpu_free = t0  # when the stream's queue drains
    def cpu(self, name, ts, dur, cat="cpu_op", tid=1, **args):
        self.ev.append({"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": tid,
                        "ts": ts, "dur": dur, "args": args})
    def launch(self, kname, kdur, dur=4, name="cudaLaunchKernel", tid=1):
        """A launch at self.t; the kernel starts when the stream is free."""
        c = self.corr; self.corr += 1
        self.cpu(name, self.t, dur, cat="cuda_runtime", tid=tid, correlation=c)
        start = max(self.t + dur, self.gpu_free)
        self.ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7,
                        "ts": start, "dur": kdur, "args": {"stream": 7, "correlation": c,
                                                           "device": 0}})
        self.gpu_free = start + kdur
        self.t += dur
        return start + kdur
    def save(self, path, extra=None):
        doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": self.rank,
                                                      "world_size": 2},
               "traceEvents": self.ev}
        if extra: doc.update(extra)
        json.dump(doc, open(path, "w"))

def idle_truth(t, cover):
    """Device idle inside the span, and the part of it covered by the given CPU spans."""
    k = sorted((e["ts"], e["ts"] + e["dur"]) for e in t.ev if e["cat"] == "kernel")
    gaps, end = [], k[0][1]
    for s, e in k[1:]:
        if s > end: gaps.append((end, s))
        end = max(end, e)
    idle = sum(b - a for a, b in gaps)
    cov = 0
    for a, b in gaps:
        for s, e in cover:
            cov += max(0, min(b, e) - max(a, s))
    return idle, cov

truth = {}
# 1. input bound: __next__ takes 3-6 ms while the GPU sits idle; the step's work is 2.5 ms
t = T(); steps = 12; cover = []
for i in range(steps):
    s0 = t.t
    d = random.randint(3000, 6000)
    t.cpu("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t.t, d,
          cat="user_annotation")
    t.cpu("torch/utils/data/_utils/collate.py(150): default_collate", t.t + d - 400, 300,
          cat="python_function")
    cover.append((t.t, t.t + d)); t.t += d + 30
    for k in range(25):
        t.launch("void gemm_kernel<128>(float*)", 100)
        t.t += 6
    t.t = max(t.t, t.gpu_free) + 40           # loss.backward and the rest of the step
    t.cpu(f"ProfilerStep#{i + 1}", s0, t.t - s0, cat="user_annotation")
    t.t += 5
idle, cov = idle_truth(t, cover)
truth["input"] = {"data_share": cov / idle}
os.mkdir(f"{out}/input"); t.save(f"{out}/input/rank0.json")

# 2. launch bound: 2 µs kernels, each launch 5 µs plus 12 µs of Python between them
t = T()
for i in range(6):
    s0 = t.t
    for k in range(300):
        t.cpu("aten::add", t.t, 16)
        t.t += 10
        t.launch("void elementwise_kernel<4>(float*)", 2, dur=5)
        t.t += 1
    t.cpu(f"ProfilerStep#{i + 1}", s0, t.t - s0, cat="user_annotation")
    t.t += 3
os.mkdir(f"{out}/launch"); t.save(f"{out}/launch/rank0.json")

# 3. sync loop: a 40 µs kernel, then .item() blocks until it is done, then Python
t = T()
for i in range(6):
    s0 = t.t
    for k in range(40):
        end = t.launch("void reduce_kernel<256>(float*)", 40)
        s = t.t
        t.t += 2
        c = t.corr; t.corr += 1
        t.cpu("cudaMemcpyAsync", t.t, 5, cat="cuda_runtime", correlation=c)
        t.ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)",
                     "pid": 0, "tid": 7, "ts": end, "dur": 2,
                     "args": {"stream": 7, "correlation": c}})
        t.gpu_free = end + 2
        t.cpu("cudaStreamSynchronize", t.t + 6, end + 3 - (t.t + 6), cat="cuda_runtime",
              correlation=t.corr); t.corr += 1
        t.t = end + 5
        t.cpu("aten::_local_scalar_dense", s + 1, t.t - s - 1)
        t.cpu("aten::item", s, t.t - s)
        t.t += 80                               # Python between iterations
    t.cpu(f"ProfilerStep#{i + 1}", s0, t.t - s0, cat="user_annotation")
    t.t += 3
os.mkdir(f"{out}/sync"); t.save(f"{out}/sync/rank0.json")

# 4. two runs of rank 0 (and rank 1 of the first) in one folder
os.mkdir(f"{out}/runs")
for name, pid, t0, rank in (("a_rank0", 11, 1_700_000_000_000_000, 0),
                            ("a_rank1", 12, 1_700_000_000_000_400, 1),
                            ("b_rank0", 99, 1_700_000_900_000_000, 0)):
    t = T(rank=rank, pid=pid, t0=t0)
    for i in range(3):
        s0 = t.t
        for k in range(20):
            t.launch("void gemm_kernel<128>(float*)", 200 if name != "b_rank0" else 400)
        t.t = t.gpu_free + 10
        t.cpu(f"ProfilerStep#{i + 1}", s0, t.t - s0, cat="user_annotation")
    t.save(f"{out}/runs/{name}.json", {"baseTimeNanoseconds": t0 * 1000})

# 5. hygiene: ProfilerStep#2 twice, a negative and a zero duration (indices recorded)
t = T()
for i, sid in enumerate((1, 2, 2, 3)):
    s0 = t.t
    for k in range(10):
        t.launch("void gemm_kernel<128>(float*)", 100)
    t.t = t.gpu_free + 10
    t.cpu(f"ProfilerStep#{sid}", s0, t.t - s0, cat="user_annotation")
    if i == 2: truth["dup_idx"] = len(t.ev) - 1
truth["neg_idx"] = len(t.ev)
t.cpu("aten::mul", t.t, -5)
truth["zero_idx"] = len(t.ev)
t.ev.append({"ph": "X", "cat": "kernel", "name": "void empty_kernel()", "pid": 0, "tid": 7,
             "ts": t.gpu_free + 1, "dur": 0, "args": {"stream": 7, "correlation": 999999}})
os.mkdir(f"{out}/hygiene"); t.save(f"{out}/hygiene/rank-3.json")
json.dump(truth, open(f"{out}/truth.json", "w"))
PY

check() { # check NAME: runs goodput trace on $tmp/NAME, then the python assertions on stdin
  "$GOODPUT" trace "$tmp/$1" --json --html "$tmp/$1.html" > "$tmp/$1.out" 2> "$tmp/$1.err"
  python3 - "$tmp/$1.out" "$tmp/truth.json" "$tmp/$1.err" "$tmp/$1.html"
}

check input <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); truth = json.load(open(sys.argv[2]))
rk = r["ranks"][0]; ic = rk["idle_causes"]
share = ic["idle_share"]["data_loading"]
assert abs(share - truth["input"]["data_share"]) < 0.03, (share, truth)
assert max(ic["idle_share"], key=lambda c: ic["idle_share"][c] or 0) == "data_loading", ic
cls = {f["class"] for f in r["findings"]}
assert "input_bound" in cls and "host_bound" not in cls, r["findings"]
f = next(f for f in r["findings"] if f["class"] == "input_bound")
assert "DataLoader" in f["summary"] and "num_workers" in f["recommendation"], f
ev = {e["metric"]: e["value"] for e in f["evidence"]}
assert abs(ev["idle_share_data_loading"] - share) < 1e-9, ev
op = [e for e in f["evidence"] if e["metric"].startswith("host_op_us:enumerate(DataLoader)")]
assert op and op[0]["value"] > 36000, f["evidence"]      # 12 loads of >= 3 ms
assert 0 < ic["dataloader_share_of_step"] < 1, ic
# per step: 12 steps, each idle split sums to step time minus busy time
steps = rk["steps"]
assert len(steps) == 11, len(steps)   # HTA's filter drops the last step
for s in steps:
    idle = sum(v for k, v in s.items() if k.startswith("idle_") and k.endswith("_us"))
    busy = s["gpu_busy_pct"] / 100 * s["dur_us"]
    assert abs(idle - (s["dur_us"] - busy)) < 1, s
    assert s["idle_data_loading_us"] > 2900, s
    assert abs(s["compute_us"] - 2500) < 1, s
summ = rk["step_summary"]
durs = sorted(s["dur_us"] for s in steps)
assert abs(summ["median"]["dur_us"] - (durs[5])) < 1e-6, summ
assert durs[-2] <= summ["p95"]["dur_us"] <= durs[-1], summ
html = open(sys.argv[4]).read()
assert "Per ProfilerStep" in html and "data_loading" in html and "<script src" not in html and "http" not in html
print("input: data share", round(share, 4), "truth", round(truth["input"]["data_share"], 4))
PY

check launch <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ic = r["ranks"][0]["idle_causes"]
assert max(ic["idle_share"], key=lambda c: ic["idle_share"][c] or 0) == "launch_overhead", ic
assert ic["idle_share"]["launch_overhead"] > 0.9, ic
cls = [f["class"] for f in r["findings"]]
assert "host_bound" in cls and "input_bound" not in cls, r["findings"]
f = next(f for f in r["findings"] if f["class"] == "host_bound")
assert "CUDA graphs" in f["recommendation"], f
print("launch: launch overhead share", round(ic["idle_share"]["launch_overhead"], 4))
PY

check sync <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ic = r["ranks"][0]["idle_causes"]
assert max(ic["idle_share"], key=lambda c: ic["idle_share"][c] or 0) == "sync", ic
assert ic["idle_share"]["sync"] > 0.9, ic
f = next(f for f in r["findings"] if f["class"] == "host_bound")
assert "sync" in f["summary"] and ".item()" in f["recommendation"], f
assert "input_bound" not in [x["class"] for x in r["findings"]]
print("sync: sync share", round(ic["idle_share"]["sync"], 4))
PY

check runs <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
runs = r["runs"]
assert len(runs) == 2, runs
by = {tuple(sorted(x["ranks"])): x for x in runs}
assert (0, 1) in by and (0,) in by, runs
assert all(f.endswith("b_rank0.json") for f in by[(0,)]["files"]), runs
ranks = r["ranks"]
assert len(ranks) == 3 and sorted((x["run"], x["rank"]) for x in ranks) == [(1, 0), (1, 1), (2, 0)]
# run 2's rank 0 has its own numbers (kernels of 400 µs), not a sum with run 1's
b = next(x for x in ranks if x["path"].endswith("b_rank0.json"))
a = next(x for x in ranks if x["path"].endswith("a_rank0.json"))
assert abs(b["temporal"]["compute_us"] - 2 * 20 * 400) < 1, b["temporal"]
assert abs(a["temporal"]["compute_us"] - 2 * 20 * 200) < 1, a["temporal"]
assert any(f["scope_id"].startswith("run 2 rank 0") for f in r["findings"]), r["findings"]
print("runs: 2 runs kept apart")
PY
"$GOODPUT" trace "$tmp/runs" > "$tmp/runs.txt" 2>/dev/null
grep -q "^Runs: 2 " "$tmp/runs.txt"

check hygiene <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); truth = json.load(open(sys.argv[2]))
err = open(sys.argv[3]).read()
w = r["ranks"][0]["warnings"]
assert w["duplicate_steps"] == 1 and w["first_duplicate_step_index"] == truth["dup_idx"], w
assert w["bad_duration"] == 1 and w["first_bad_duration_index"] == truth["neg_idx"], w
assert w["zero_duration"] == 1 and w["first_zero_duration_index"] == truth["zero_idx"], w
assert f"rank-3.json: 1 repeated ProfilerStep ids (first at traceEvents[{truth['dup_idx']}])" in err, err
assert f"traceEvents[{truth['neg_idx']}]" in err and f"traceEvents[{truth['zero_idx']}]" in err, err
names = [s["name"] for s in r["ranks"][0]["steps"]]
assert names.count("ProfilerStep#2") == 1, names
print("hygiene: warnings name file and index")
PY

# --rank-from: the file name's number, the sorted order; documented; bad value is usage
"$GOODPUT" trace "$tmp/hygiene" --json --rank-from file 2>/dev/null |
  python3 -c 'import json,sys; assert json.load(sys.stdin)["ranks"][0]["rank"] == 3'
"$GOODPUT" trace "$tmp/runs" --json --rank-from order 2>/dev/null |
  python3 -c 'import json,sys; r=json.load(sys.stdin); assert len(r["runs"]) == 1 and sorted(x["rank"] for x in r["ranks"]) == [0, 1, 2], r["runs"]'
h=$("$GOODPUT" trace --help) # whole first: grep -q's early exit would SIGPIPE the writer
grep -q -- "--rank-from trace|file|order" <<<"$h"
set +e
"$GOODPUT" trace "$tmp/runs" --rank-from bogus 2>/dev/null; rc=$?
set -e
[ $rc -eq 2 ] || { echo "--rank-from bogus: exit $rc"; exit 1; }
echo ok
