#!/usr/bin/env bash
# serial: asserts at most 1 s of samples lost per kill at random times
# asan-skip: kill -9 durability is SQLite's and the flush policy's property, not memory safety (~60 s); the store's crash test runs under ASan in tests/unit/test_store.c
# Crash safety (issue 11): SIGKILL the agent at random moments (>= 100 times) while it
# samples a simulated node and ingests a steady stream of events over its unix socket.
# After every kill the store must open and pass PRAGMA integrity_check; at the end every
# event the socket accepted more than one flush interval (plus a small scheduling slack)
# before the kill that followed it must be stored, and the restarted agents must have kept
# writing the same jobs (no duplicate or renamed job rows, steps of one job across runs).
# Knobs: GP_CRASH_KILLS (default 40 in CI; 100 for the recorded figure), GP_CRASH_SEED (random seed, printed).
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
exec /usr/bin/python3 - "$GOODPUT" "$tmp" <<'PY'
import os, random, signal, socket, sqlite3, subprocess, sys, threading, time

goodput, tmp = sys.argv[1], sys.argv[2]
kills = int(os.environ.get("GP_CRASH_KILLS", "40"))
seed = int(os.environ.get("GP_CRASH_SEED", str(int(time.time()))))
rng = random.Random(seed)
db, sock = os.path.join(tmp, "gp.db"), os.path.join(tmp, "gp.sock")
FLUSH_S, SLACK_S = 1.0, 0.35
scenario = os.path.join(os.environ.get("GOODPUT_SRC", "."), "examples/scenarios/demo.conf")
print(f"seed {seed}, {kills} kills, flush {FLUSH_S}s")

def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)

# The sender: one step event every 2 ms (500/s), numbered across the whole test; a step
# counts as sent only when the kernel accepted the datagram (the agent's socket existed).
sent = []  # (wall time, step)
stop = threading.Event()
def sender():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    step = 0
    while not stop.is_set():
        step += 1
        t = time.time()  # before the send: a kill racing the send then counts against it
        try:
            s.sendto(f"step job=crash-test step={step} units=1\n".encode(), sock)
            sent.append((t, step))
        except OSError:
            pass
        time.sleep(0.002)
threading.Thread(target=sender, daemon=True).start()

def start_agent():
    return subprocess.Popen([goodput, "agent", "--source", "sim:" + scenario, "--db", db,
                             "--speed", "60", "--socket", sock, "--flush", "1s", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

def check_store(i):
    if not os.path.exists(db):
        return None  # killed before the store was created: nothing to check
    c = sqlite3.connect(db, timeout=5)
    try:
        r = c.execute("PRAGMA integrity_check").fetchall()
        if r != [("ok",)]:
            fail(f"kill {i}: integrity_check says {r}")
        return [x[0] for x in c.execute("SELECT id FROM jobs ORDER BY id")]
    except sqlite3.DatabaseError as e:
        fail(f"kill {i}: store does not open: {e}")
    finally:
        c.close()

kill_times = []
first_jobs = None
t_start = time.time()
for i in range(kills):
    p = start_agent()
    delay = rng.uniform(0.05, 1.1)
    time.sleep(delay)
    if p.poll() is not None:
        fail(f"run {i}: agent exited by itself (rc {p.returncode}): {p.stderr.read().decode()}")
    p.send_signal(signal.SIGKILL)
    p.wait()
    # kill() returns before the process is gone: a datagram sent in between lands in the
    # dying agent's queue, so the kill counts from the moment it was reaped.
    kill_times.append(time.time())
    p.stderr.close()
    jobs = check_store(i)
    if jobs and len(jobs) > (len(first_jobs) if first_jobs else 0):
        first_jobs = jobs
# A last run that stops cleanly: everything must be there.
p = start_agent()
time.sleep(2.0)
p.send_signal(signal.SIGTERM)
if p.wait(timeout=20) != 0:
    fail(f"clean stop exited {p.returncode}: {p.stderr.read().decode()}")
t_end = time.time()
kill_times.append(t_end)
stop.set()
time.sleep(0.05)

c = sqlite3.connect(db)
if c.execute("PRAGMA integrity_check").fetchall() != [("ok",)]:
    fail("final integrity_check")
stored = {r[0] for r in c.execute("SELECT step FROM events WHERE job_id='crash-test'")}
jobs = [r[0] for r in c.execute("SELECT id FROM jobs ORDER BY id")]
nsamples = c.execute("SELECT count(*) FROM samples").fetchone()[0]
c.close()

# Loss: a step accepted at time t, followed by a kill at K, may be lost only if
# K - t <= flush interval + slack.
lost_old, lost_recent, worst = [], 0, 0.0
k = 0
for t, step in sent:
    while k < len(kill_times) and kill_times[k] < t:
        k += 1
    if k == len(kill_times):
        break
    if step in stored:
        continue
    age = kill_times[k] - t
    if age > FLUSH_S + SLACK_S:
        lost_old.append((step, round(age, 3)))
    else:
        lost_recent += 1
        worst = max(worst, age)
accepted = len(sent)
print(f"{kills} kills in {t_end - t_start:.1f}s; {accepted} events accepted, {len(stored)} stored, "
      f"{lost_recent} lost within one flush interval (oldest {worst:.2f}s before its kill), "
      f"{len(lost_old)} lost older; {nsamples} sample rows; jobs {jobs}")
if lost_old:
    fail(f"{len(lost_old)} events lost more than one flush interval before a kill, e.g. {lost_old[:5]}")
# Same jobs: the scenario's jobs plus ours, each once; the clean run's steps landed on the
# same job row as the first runs' steps.
if "crash-test" not in jobs:
    fail("the event job has no row")
if first_jobs and not set(first_jobs) <= set(jobs):
    fail(f"jobs changed across restarts: {first_jobs} -> {jobs}")
if len(jobs) != len(set(jobs)):
    fail("duplicate job rows")
last_run_steps = [s for t, s in sent if kill_times[-2] < t < t_end - 0.1]
if last_run_steps and not any(s in stored for s in last_run_steps):
    fail("the restarted agent stored none of the events of the last run")
print("ok")
PY
