#!/usr/bin/env bash
# Real processes on a (test-library) GPU node, attributed by the agent through the same
# code a real node runs: the test libnvidia-ml.so.1 lists the real PIDs of this machine
# (GOODPUT_FAKE_NVML_PIDS), the agent reads the real /proc and cgroups.
#  - a `sleep` moved into a Slurm step cgroup (v1 layout /slurm/uid_0/job_J/step_0/task_0)
#    on GPU 0 -> job J, origin slurm
#  - a plain python3 on GPU 1 -> job pid-PID, named by its command line, with its user
#  - a `sleep 5` on GPU 1 that exits midway -> its allocation ends within 2 intervals of
#    its exit; GPU 1's time is split between the two while both run (never counted twice)
# asan-skip: the attribution C paths run under ASan in test_attrib_presence; this adds the
# real /proc and cgroups, not memory-safety coverage.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
BUILD=${BUILD:-build}
LIB="$PWD/$BUILD/tests/lib/libnvidia-ml.so.1"
tmp=$(mktemp -d)
cg=/sys/fs/cgroup/pids/slurm/uid_0/job_4242/step_0/task_0
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for d in $cg /sys/fs/cgroup/pids/slurm/uid_0/job_4242/step_0 /sys/fs/cgroup/pids/slurm/uid_0/job_4242; do
    [ -d "$d" ] && rmdir "$d" 2>/dev/null
  done
  rm -rf "$tmp"
  return 0
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$GOODPUT" ] || fail "$GOODPUT not built"
[ -f "$LIB" ] || fail "$LIB not built (make all)"
if ! mkdir -p "$cg" 2>/dev/null; then echo "skip: no writable cgroup hierarchy"; exit 77; fi

cat >"$tmp/node.conf" <<'CONF'
[node]
name = real-node
gpus = 2
start = now
duration = 1h
CONF

# The agent starts watching first, so every process's life is seen from its start.
GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$tmp/node.conf" \
GOODPUT_SIM_NODE_ROOT="$tmp/node" GOODPUT_FAKE_NVML_PIDS_FILE="$tmp/pids" \
  "$GOODPUT" agent --source nvml --db "$tmp/gp.db" --no-socket --interval 500ms \
  --duration 14s --quiet 2>"$tmp/agent.err" &
agent=$!
sleep 2
sleep 1000 & p1=$!; pids+=("$p1")
echo "$p1" >"$cg/cgroup.procs"
/usr/bin/python3 -c 'import time; time.sleep(1000)' & p2=$!; pids+=("$p2")
sleep 5 & p3=$!; pids+=("$p3")
t3_start=$(date +%s%N)
echo "0:$p1:1024:60,1:$p2:2048:40,1:$p3:512:20" >"$tmp/pids.new"
mv "$tmp/pids.new" "$tmp/pids"
wait "$p3" || true
t3_end=$(date +%s%N)
wait "$agent" || fail "agent: $(cat "$tmp/agent.err")"

"$GOODPUT" report --db "$tmp/gp.db" --json >"$tmp/r.json" || fail "report"
/usr/bin/python3 - "$tmp/r.json" "$tmp/gp.db" "$p1" "$p2" "$p3" "$t3_start" "$t3_end" <<'PY'
import json, sqlite3, sys
r = json.load(open(sys.argv[1])); db = sqlite3.connect(sys.argv[2])
p1, p2, p3, t3a, t3b = sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7])
jobs = {j["id"]: j for j in r["jobs"]}
def fail(m): print("FAIL:", m, json.dumps(list(jobs))); sys.exit(1)
iv = 0.5e9
# the Slurm job, from the real cgroup
if "4242" not in jobs: fail("Slurm job 4242 missing")
o = db.execute("select origin from jobs where id='4242'").fetchone()[0]
if o != "slurm": fail(f"4242 origin {o}")
if jobs["4242"]["gpus"] != 1: fail("4242 gpus")
# the plain python3: its own job, named by its command line, with its user
j2 = jobs.get(f"pid-{p2}") or fail(f"pid-{p2} missing")
if "python3" not in (j2.get("name") or ""): fail(f"pid-{p2} name {j2.get('name')!r}")
if j2.get("user") != "root": fail(f"pid-{p2} user {j2.get('user')!r}")
# the short process: allocation within 2 intervals of its life
a = db.execute("select from_ns, to_ns from allocations where job_id=?", (f"pid-{p3}",)).fetchall()
if len(a) != 1 or a[0][1] is None: fail(f"pid-{p3} allocation {a}")
f, t = a[0]
if abs(f - t3a) > 2 * iv + 0.3e9: fail(f"pid-{p3} from off by {(f - t3a) / 1e9:.2f} s")
if abs(t - t3b) > 2 * iv + 0.3e9: fail(f"pid-{p3} to off by {(t - t3b) / 1e9:.2f} s")
# no GPU-second twice: per GPU, the jobs' allocated GPU-seconds <= the store's span
t0, t1 = db.execute("select min(ts_ns), max(ts_ns) from samples").fetchone()
span = (t1 - t0) / 1e9 + iv / 1e9
g1 = jobs[f"pid-{p2}"]["allocated_gpu_s"] + jobs[f"pid-{p3}"]["allocated_gpu_s"]
if g1 > span + 1e-6: fail(f"GPU 1 counted {g1:.2f} s in a {span:.2f} s run")
# while both ran, each held half of GPU 1
life3 = (t - f) / 1e9
if abs(jobs[f"pid-{p3}"]["allocated_gpu_s"] - life3 / 2) > 0.05 * life3 + 0.6:
    fail(f"pid-{p3} allocated {jobs[f'pid-{p3}']['allocated_gpu_s']:.2f} s, expected ~{life3/2:.2f}")
print("ok:", {k: round(v["allocated_gpu_s"], 1) for k, v in jobs.items()})
PY
echo "attrib_real: ok"
