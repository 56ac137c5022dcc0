#!/usr/bin/env bash
# asan-skip: the CLI around the agent loop; the loop itself runs under ASan in test_goodput (agent_run.h) and test_agent_live
# The agent, report and demo from the command line: clear one-line errors with the right
# exit codes, a clean stop on SIGTERM with data flushed, and a full simulated run whose
# report shows the demo's jobs with visibly different goodput.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

expect_err() { # exit-code, pattern, command...
  local want=$1 pat=$2; shift 2
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq "$want" ] || fail "$* exited $rc, expected $want: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: expected one error line, got: $(cat "$tmp/err")"
  grep -q -- "$pat" "$tmp/err" || fail "$*: error '$(cat "$tmp/err")' does not mention '$pat'"
}

expect_err 2 "unknown command" "$GOODPUT" frobnicate
expect_err 2 "required" "$GOODPUT" agent --source sim:x
GOODPUT_NVML_LIBRARY="$tmp/no-such-libnvidia-ml.so" expect_err 1 "no --source given" "$GOODPUT" agent --db "$tmp/x.db" --no-socket
expect_err 2 "--interval" "$GOODPUT" agent --source sim:x --db "$tmp/x.db" --interval soon
expect_err 2 "unknown or incomplete option" "$GOODPUT" agent --bogus
expect_err 3 "unknown source 'warp'" "$GOODPUT" agent --source warp:1 --db "$tmp/x.db" --no-socket
expect_err 3 "nope.conf" "$GOODPUT" agent --source sim:"$tmp/nope.conf" --db "$tmp/x.db" --no-socket
printf '[node]\ngpus = 2\nmodel = H100-SXM\nbogus_key = 1\n' >"$tmp/bad.conf"
expect_err 3 "bad.conf:4" "$GOODPUT" agent --source sim:"$tmp/bad.conf" --db "$tmp/x.db" --no-socket
expect_err 3 "is a directory" "$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp" --no-socket
expect_err 3 "no such file" "$GOODPUT" report --db "$tmp/missing.db"
echo "not a database at all, just some text" >"$tmp/junk.db"
expect_err 3 "junk.db" "$GOODPUT" report --db "$tmp/junk.db"
# --help lists agent as a command (its own line with a description), and agent --help
# documents --source as an option (not merely in the usage line)
# (read whole first: `grep -q` stops at the first match and, under pipefail, the writer's
# SIGPIPE would fail the pipeline)
"$GOODPUT" --help >"$tmp/help"; "$GOODPUT" agent --help >"$tmp/ahelp"
grep -qE '^  agent +[a-z]' "$tmp/help" || fail "--help does not list agent"
grep -qE '^  --source SPEC +[a-z]' "$tmp/ahelp" || fail "agent --help lacks --source"

# Full simulated run as fast as possible; report as JSON.
"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/demo.db" --speed 0 \
  --no-socket --quiet
"$GOODPUT" report --db "$tmp/demo.db" --json >"$tmp/report.json"
/usr/bin/python3 - "$tmp/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
jobs = r["jobs"]
assert len(jobs) >= 5, f"expected at least 5 jobs, got {len(jobs)}"
for j in jobs:
    s = sum(j["gpu_s_by_bucket"].values())
    assert abs(s - j["allocated_gpu_s"]) <= 1e-6 * max(1, s), (j["id"], s, j["allocated_gpu_s"])
    assert j["allocated_gpu_h"] > 0, j["id"]
gps = sorted(j["goodput"] for j in jobs if j["goodput"] is not None)
assert len(gps) >= 4, gps
# Visibly different: the spread between best and worst is large.
assert gps[-1] - gps[0] > 0.3, gps
assert any(j["energy_kwh"] for j in jobs), "no energy"
# The per-owner table adds up to the jobs it groups.
owners = r["owners"]
for o in owners:
    mine = [j for j in jobs if (j["user"] or "-") == o["user"]]
    assert o["jobs"] == len(mine), o
    assert abs(o["allocated_gpu_h"] - sum(j["allocated_gpu_h"] for j in mine)) < 1e-9, o
    prod = sum(j["gpu_s_by_bucket"]["productive"] for j in mine if j["goodput"] is not None) / 3600
    assert abs(o["productive_gpu_h"] - prod) < 1e-9, o
assert sum(o["jobs"] for o in owners) == len(jobs)
print("report ok:", [(j["id"], j["goodput"]) for j in jobs])
PY

# Real time: SIGTERM stops the agent cleanly with what it sampled flushed.
"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/rt.db" --speed 1 \
  --interval 200ms --no-socket --quiet &
pid=$!
sleep 2
kill -TERM $pid
wait $pid || fail "agent exited non-zero after SIGTERM"
n=$(sqlite3 "$tmp/rt.db" "select count(*) from samples")
[ "$n" -ge 40 ] || fail "expected >= 40 samples after 2 s at 5 Hz x 8 GPUs, got $n"
[ "$(sqlite3 "$tmp/rt.db" "pragma integrity_check")" = ok ] || fail "integrity"
echo "agent_cli: ok"
