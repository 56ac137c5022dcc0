#!/usr/bin/env bash
# asan-skip: a real Slurm (slurmctld, slurmd, munge, MariaDB); the JSON/text parsing runs under ASan in test_attrib_slurm
# slurm_real.sh: goodput against a REAL Slurm (Debian slurm-wlm 22.05): munged, MariaDB,
# slurmdbd, slurmctld and slurmd on loopback, four fake GPUs (gres File= symlinks to
# /dev/null), contrib/slurm's prolog/epilog installed. Four sbatch jobs:
#   trainer  gpu:2  sends hello + steps with the Python client (clients/python), exits 0
#   holder   gpu:1  sleeps holding its GPU, sends nothing  -> never ready (not_ready)
#   failer   gpu:1  exits 7                                  -> failed, exit 7
#   waiter   gpu:2  submitted when all 4 GPUs are taken      -> real queue wait; sends a
#                   step as a plain protocol line over the unix datagram socket
# `goodput attrib slurm-poll` follows them into a store (and receives the events);
# the checks compare the store with what Slurm itself says (sacct -P text, parsed here)
# and what each job saw from inside (SLURM_JOB_GPUS, its first step's start).
# Needs root; exit 77 (skip) when the packages in scripts/deps.d/slurm.txt are missing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${GOODPUT_SRC:-$(cd "$here/../.." && pwd)}
GOODPUT=${GOODPUT:-$src/build/goodput}
# shellcheck source=tests/integration/slurm/stack.bash
. "$here/slurm/stack.bash"

[ -x "$GOODPUT" ] || { echo "goodput binary not built: $GOODPUT"; exit 77; }
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
t0=$SECONDS
poller=""
cleanup() {
    if [ -n "$poller" ]; then kill "$poller" 2>/dev/null; wait "$poller" 2>/dev/null; fi
    scancel --quiet -u root 2>/dev/null || true
    stack_stop
    [ -n "${W:-}" ] && [ -z "${GP_KEEP_STACK:-}" ] && rm -rf "$W"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -n "$ST_DIR" ] && tail -n 5 "$ST_DIR"/log/slurmctld.log; exit 1; }

W=$(mktemp -d "${TMPDIR:-/tmp}/gp-slurm-test-XXXXXX")
chmod 755 "$W"
UUIDS="GPU-11111111-0000-4000-8000-000000000000,GPU-22222222-0000-4000-8000-000000000001"
UUIDS="$UUIDS,GPU-33333333-0000-4000-8000-000000000002,GPU-44444444-0000-4000-8000-000000000003"
mkdir -m 700 "$W/sock"
SOCK="$W/sock/goodput.sock"
JOBMAP="$W/job-map"
cat >"$W/hook.env" <<ENV
GOODPUT_JOBMAP_DIR=$JOBMAP
GOODPUT_SOCKET=$SOCK
GOODPUT_BIN=$GOODPUT
GOODPUT_GPU_UUIDS=$UUIDS
ENV
for m in prolog epilog; do
    printf '#!/bin/sh\nGOODPUT_HOOK_ENV=%s exec %s %s\n' "$W/hook.env" "$src/contrib/slurm/goodput-hook.sh" "$m" >"$W/$m.sh"
    chmod 755 "$W/$m.sh"
done
export ST_EXTRA_CONF="Prolog=$W/prolog.sh
Epilog=$W/epilog.sh
PrologFlags=Alloc"

stack_start
rc=$?
if [ $rc -ne 0 ]; then
    [ $rc -eq 77 ] && { echo "real Slurm unavailable: $ST_REASON"; exit 77; }
    fail "could not start the Slurm stack (rc $rc)"
fi
echo "stack up in $((SECONDS - t0)) s ($ST_DIR)"

"$GOODPUT" attrib slurm-poll --db "$W/gp.db" --gpus "$UUIDS" --interval-ms 400 \
    --socket "$SOCK" --jobmap-dir "$JOBMAP" --node gpnode --max-s 80 2>"$W/poller.log" &
poller=$!
st_wait "[ -S '$SOCK' ]" 50 || fail "poller socket did not appear: $(cat "$W/poller.log")"

# Job scripts. Each records what it saw from inside into $W/<name>.inside.
cat >"$W/trainer.sh" <<'JOB'
#!/bin/bash
echo "gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES" >"$OUT.inside"
sleep 1 # "initialisation": allocated but not yet ready
# The project's Python client (clients/python), as a real workload would use it.
GOODPUT_SOCKET="$SOCK" PYTHONPATH="$PYCLIENT" python3 - "$OUT.inside" <<'PY'
import sys, time
import goodput
goodput.hello(unit="samples", name="trainer")
first = None
for step in range(1, 6):
    start = time.time()
    time.sleep(0.3)
    first = first or start
    goodput.step(step, n_units=32, start=start)
goodput.flush()
open(sys.argv[1], "a").write(f"first_step_start={int(first * 1e9)}\n")
PY
JOB
cat >"$W/holder.sh" <<'JOB'
#!/bin/bash
echo "gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES" >"$OUT.inside"
# The prolog's dcgm-exporter job-map file for this job's GPU, as seen while it runs.
echo "map=$(tr '\n' ' ' <"$JOBMAP/${SLURM_JOB_GPUS%%,*}" | tr -d ' ')" >>"$OUT.inside"
sleep 5
JOB
cat >"$W/failer.sh" <<'JOB'
#!/bin/bash
echo "gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES" >"$OUT.inside"
sleep 2
exit 7
JOB
cat >"$W/waiter.sh" <<'JOB'
#!/bin/bash
echo "gpus=$SLURM_JOB_GPUS cuda=$CUDA_VISIBLE_DEVICES" >"$OUT.inside"
python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
t = time.time_ns()
s.sendto(f'step job=$SLURM_JOB_ID step=1 units=8 start={t} ts={t + 100000000}\n'.encode(), '$SOCK')
open('$OUT.inside', 'a').write(f'first_step_start={t}\n')
"
# sacct's start and end are whole seconds: a run shorter than a second can read as
# start == end, an allocation of zero length, and "spans the job" would not be checked.
sleep 1.5
JOB
chmod 755 "$W"/*.sh
declare -A id
for j in trainer:2 holder:1 failer:1 waiter:2; do
    name=${j%%:*} n=${j##*:}
    id[$name]=$(sbatch --parsable --gres=gpu:"$n" -J "$name" -o "$W/$name.out" \
        --export="ALL,SOCK=$SOCK,OUT=$W/$name,PYCLIENT=$src/clients/python,JOBMAP=$JOBMAP" "$W/$name.sh") || fail "sbatch $name"
done
echo "submitted: trainer=${id[trainer]} holder=${id[holder]} failer=${id[failer]} waiter=${id[waiter]}"

# Wait until Slurm says all four ended, then give the poller two more polls.
for _ in $(seq 1 300); do
    left=$(squeue -h -t PD,R,CG -o %i 2>/dev/null | wc -l)
    [ "$left" -eq 0 ] && break
    sleep 0.2
done
[ "$left" -eq 0 ] || fail "jobs still queued or running after 60 s"
for _ in $(seq 1 50); do
    n_ended=$("$GOODPUT" attrib jobs --db "$W/gp.db" --json 2>/dev/null |
        python3 -c 'import json,sys; print(sum(1 for j in json.load(sys.stdin)["jobs"] if j["ended_ns"] > 0))' 2>/dev/null)
    [ "${n_ended:-0}" -ge 4 ] && break
    sleep 0.3
done
sleep 1
kill "$poller"
wait "$poller"
prc=$?
poller=""
[ $prc -eq 0 ] || fail "the poller exited with status $prc: $(tail -5 "$W/poller.log")"
cat "$W/poller.log"

# Slurm's own account, independent of goodput's parser: sacct -P text.
sacct -P -n -X -o JobIDRaw,JobName,State,ExitCode,Submit,Start,End -j \
    "${id[trainer]},${id[holder]},${id[failer]},${id[waiter]}" >"$W/sacct.txt" ||
    fail "sacct failed"
cat "$W/sacct.txt"
"$GOODPUT" attrib jobs --db "$W/gp.db"
"$GOODPUT" attrib jobs --db "$W/gp.db" --json >"$W/jobs.json" || fail "attrib jobs failed"
# the directory must still be there (the epilogs empty it, they do not remove it): a missing
# directory would read as "cleaned"
[ -d "$JOBMAP" ] || fail "the job map directory $JOBMAP is gone"
ls -A "$JOBMAP" >"$W/jobmap.left"

# On a failure the rows behind it are printed (the CI log is all there is to read).
dump() {
    echo "allocations (job|uuid|from_ns|to_ns):"
    sqlite3 "$W/gp.db" "SELECT * FROM allocations ORDER BY job_id, uuid, from_ns" 2>&1
    echo "jobs (id|allocated_ns|ended_ns|exit_state):"
    sqlite3 "$W/gp.db" "SELECT id, allocated_ns, ended_ns, exit_state FROM jobs ORDER BY id" 2>&1
}
python3 - "$W" "$UUIDS" <<'PY' || { dump; fail "checks failed"; }
import datetime, json, sys
w, uuids = sys.argv[1], sys.argv[2].split(",")
jobs = {j["name"]: j for j in json.load(open(f"{w}/jobs.json"))["jobs"] if j["origin"] == "slurm"}
def epoch(s):  # sacct prints local time
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()
sacct = {}
for line in open(f"{w}/sacct.txt"):
    jid, name, state, ec, sub, start, end = line.strip().split("|")
    sacct[name] = dict(id=jid, state=state, code=int(ec.split(":")[0]),
                       sub=epoch(sub), start=epoch(start), end=epoch(end))
bad = []
def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond: bad.append(msg)
want_gpus = dict(trainer=2, holder=1, failer=1, waiter=2)
for name, n in want_gpus.items():
    j, s = jobs.get(name), sacct[name]
    check(j is not None, f"{name}: recorded by goodput")
    if not j: continue
    check(j["id"] == s["id"], f"{name}: job id {j['id']} == Slurm's {s['id']}")
    # Times: Slurm keeps seconds; goodput stores ns.
    for key, sk in (("submitted_ns", "sub"), ("allocated_ns", "start"), ("ended_ns", "end")):
        check(abs(j[key] / 1e9 - s[sk]) < 1.01, f"{name}: {key} {j[key]/1e9:.0f} == sacct {s[sk]:.0f}")
    check(abs(j["queue_wait_s"] - (s["start"] - s["sub"])) < 1.01,
          f"{name}: queue wait {j['queue_wait_s']:.1f} s == sacct Start-Submit {s['start']-s['sub']:.0f} s")
    # GPUs: one allocation per GPU, no duplicates (prolog events + poller merge), and the
    # UUIDs of the indices the job saw from inside (SLURM_JOB_GPUS).
    inside = dict(kv.split("=", 1) for kv in open(f"{w}/{name}.inside").read().split())
    idx = [int(i) for i in inside["gpus"].split(",")]
    got = sorted(a["uuid"] for a in j["gpus"])
    check(got == sorted(uuids[i] for i in idx), f"{name}: GPUs {got} == inside's SLURM_JOB_GPUS {idx}")
    check(len(got) == n, f"{name}: {n} allocation rows (got {len(got)})")
    for a in j["gpus"]:
        check(a["to_ns"] > a["from_ns"] and abs(a["from_ns"] / 1e9 - s["start"]) < 1.01 and
              abs(a["to_ns"] / 1e9 - s["end"]) < 0.01, f"{name}: allocation {a['uuid'][:12]} spans the job")
    check(abs(j["gpu_s"] - n * (s["end"] - s["start"])) <= n * 0.01,
          f"{name}: {j['gpu_s']:.1f} GPU-s == {n} x run time {s['end'] - s['start']:.0f} s")
    if "first_step_start" in inside:
        check(abs(j["ready_ns"] - int(inside["first_step_start"])) < 1e6,
              f"{name}: ready at its first step's start ({j['time_to_ready_s']:.2f} s after allocation)")
        check(j["allocated_ns"] <= j["ready_ns"] + 1e9 and j["ready_ns"] <= j["ended_ns"] + 1e9,
              f"{name}: allocated <= ready <= ended")
# Exit states, against sacct's text.
for name in want_gpus:
    j, s = jobs.get(name), sacct[name]
    if j:
        check(j["exit_code"] == s["code"], f"{name}: exit code {j['exit_code']} == sacct {s['code']}")
check(jobs["failer"]["exit_state"] == "failed" and jobs["failer"]["exit_code"] == 7, "failer: failed with exit 7")
check(jobs["trainer"]["exit_state"] == "completed", "trainer: completed")
# Queue wait: the waiter needed 2 GPUs while all 4 were held.
check(jobs["waiter"]["queue_wait_s"] >= 1.0, f"waiter: waited {jobs['waiter']['queue_wait_s']:.1f} s for GPUs")
# Readiness: the holder never progressed -> not_ready with its GPU-seconds.
h = jobs["holder"]
check(h["ready_ns"] is None, "holder: never ready (unknown is null)")
check(h.get("finding", {}).get("class") == "not_ready" and
      abs(h["finding"]["wasted_gpu_s"] - h["gpu_s"]) < 0.01 and h["gpu_s"] >= 4,
      f"holder: not_ready finding with {h.get('finding', {}).get('wasted_gpu_s', 0):.1f} GPU-s")
check(jobs["trainer"].get("finding") is None, "trainer: no not_ready finding")
# The prolog wrote the dcgm-exporter job map (one file per GPU index, holding job ids)...
hin = dict(kv.split("=", 1) for kv in open(f"{w}/holder.inside").read().split())
check(hin.get("map") == h["id"], f"holder: job map file for GPU {hin['gpus']} held {hin.get('map')!r} while it ran")
# ...and the epilogs cleaned it.
left = open(f"{w}/jobmap.left").read().split()
check(left == [], f"job map empty after the epilogs (left: {left})")
sys.exit(1 if bad else 0)
PY
echo "slurm_real: passed in $((SECONDS - t0)) s"
