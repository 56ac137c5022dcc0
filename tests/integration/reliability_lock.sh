#!/usr/bin/env bash
# reliability_lock.sh: another writer holding the store's write lock past the agent's busy
# timeout (5 s) loses nothing. On a loaded node the agent's own sealing child (niced) or a
# Slurm prolog's `goodput` can hold it that long; the agent then keeps its samples and the
# events that arrive meanwhile queued, in order, and writes them at the next flush after the
# lock is let go:
#  - every sample taken is stored (--stats samples = rows in samples; no per-GPU gap over
#    2.5 s in the stored series, where the hold's rows lost would leave 8 s), store_errors
#    = 0, store_busy >= 1;
#  - every step event sent during the hold, on the socket and POSTed to /api/v1/events, is
#    stored once, in order of its step;
#  - the agent keeps ticking meanwhile (at most one busy wait per flush, not one per row).
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
LIB="$SRC/$BUILD/tests/lib/libnvidia-ml.so.1"
[ -f "$LIB" ] || { echo "skip: $LIB not built (make $BUILD/tests/lib/libnvidia-ml.so.1)"; exit 77; }
for t in python3 sqlite3 jq curl; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-rel-lock-XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; [ -n "${GP_KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
HP=$(free_port)

# The test NVML library (wall clock, so the steps sent now are in the agent's window).
GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$SRC/examples/scenarios/demo.conf" \
"$GOODPUT" agent --source nvml --db "$tmp/gp.db" \
    --socket "$tmp/gp.sock" --listen "127.0.0.1:$HP" --interval 500ms --flush 1s --duration 16s --stats \
    >"$tmp/stats.json" 2>"$tmp/agent.log" &
apid=$!
for _ in $(seq 100); do [ -S "$tmp/gp.sock" ] && [ -e "$tmp/gp.db-wal" ] && break; sleep 0.1; done
[ -S "$tmp/gp.sock" ] || fail "agent did not come up: $(cat "$tmp/agent.log")"
sleep 2
# Hold the write lock 8 s (past two busy timeouts), sending 40 steps of a job meanwhile.
python3 - "$tmp/gp.db" >"$tmp/locker.log" 2>&1 <<'PY' &
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
db.execute("BEGIN IMMEDIATE")
t0 = time.monotonic()
open(sys.argv[1] + ".held", "w").close()
time.sleep(8)
db.execute("COMMIT")
print(f"held {time.monotonic() - t0:.1f} s")
PY
lpid=$!
for _ in $(seq 100); do [ -e "$tmp/gp.db.held" ] && break; sleep 0.05; done
[ -e "$tmp/gp.db.held" ] || fail "the lock holder did not get the lock: $(cat "$tmp/locker.log")"
for s in $(seq 1 40); do
    # The socket queues 10 datagrams (net.unix.max_dgram_qlen): on a loaded machine a send
    # may find it full for a moment; an agent that stalls (5 s a statement before) for 1 s.
    for try in $(seq 20); do
        "$GOODPUT" emit --socket "$tmp/gp.sock" step job=held step=$s units=8 2>/dev/null && break
        [ "$try" = 20 ] && fail "emit step $s: the agent read nothing for 1 s"
        sleep 0.05
    done
    code=$(curl -s -o /dev/null -w '%{http_code}' --data-binary "step job=posted step=$s units=8" \
        "http://127.0.0.1:$HP/api/v1/events")
    [ "$code" = 202 ] || [ "$code" = 200 ] || fail "POST step $s: HTTP $code"
    sleep 0.1
done
wait $lpid || fail "the lock holder failed: $(cat "$tmp/locker.log")"
grep -q '^held 8' "$tmp/locker.log" || fail "the lock holder: $(cat "$tmp/locker.log")"
# /metrics says so while the agent runs, the number --stats prints at its end or less
mbusy=$(curl -sf "http://127.0.0.1:$HP/metrics" | awk '$1 == "goodput_agent_store_busy_total" { print $2 }')
wait $apid || fail "agent exit $?: $(cat "$tmp/agent.log")"
grep -q "not stored" "$tmp/agent.log" && fail "agent: $(cat "$tmp/agent.log")"

taken=$(jq -r .samples "$tmp/stats.json")
errs=$(jq -r .store_errors "$tmp/stats.json")
busy=$(jq -r .store_busy "$tmp/stats.json")
ticks=$(jq -r .ticks "$tmp/stats.json")
rows=$(sqlite3 "$tmp/gp.db" "SELECT count(*) FROM samples")
echo "samples taken $taken, stored $rows; store errors $errs, busy $busy; ticks $ticks"
[ "$errs" = 0 ] || fail "$errs store errors"
[ "$busy" -ge 1 ] || fail "the agent never found the store held (store_busy $busy): the test held nothing"
[ -n "$mbusy" ] && [ "$mbusy" -ge 1 ] && [ "$mbusy" -le "$busy" ] ||
    fail "/metrics goodput_agent_store_busy_total '$mbusy' during the run, --stats store_busy $busy at its end"
[ "$rows" = "$taken" ] || fail "$taken samples taken, $rows stored"
# 16 s at 500 ms: 32 ticks; a busy wait per flush while held would still leave >= 24
[ "$ticks" -ge 24 ] || fail "only $ticks ticks in 16 s: the agent stalled while the store was held"
gap=$(sqlite3 "$tmp/gp.db" "SELECT max(d) FROM (SELECT ts_ns - lag(ts_ns) OVER (PARTITION BY uuid ORDER BY ts_ns) AS d FROM samples)")
# 500 ms ticks: the hold's rows lost would leave 8 s; a tick late on a loaded CI machine
# leaves its lateness more than 500 ms (the count above catches any row lost)
[ "$gap" -le 2500000000 ] || fail "a GPU's stored series has a gap of $gap ns"
for job in held posted; do
    got=$(sqlite3 "$tmp/gp.db" "SELECT count(*), count(DISTINCT step), min(step), max(step) FROM events WHERE job_id = '$job' AND kind = 2")
    [ "$got" = "40|40|1|40" ] || fail "steps of job '$job' stored (count|distinct|min|max): $got, expected 40|40|1|40"
    order=$(sqlite3 "$tmp/gp.db" "SELECT count(*) FROM (SELECT step, ts_ns, lag(ts_ns) OVER (ORDER BY step) AS p FROM events WHERE job_id = '$job' AND kind = 2) WHERE p > ts_ns")
    [ "$order" = 0 ] || fail "$order steps of job '$job' stored with times out of their order"
done
echo "ok: an 8 s hold of the store's write lock lost no sample and no event"
