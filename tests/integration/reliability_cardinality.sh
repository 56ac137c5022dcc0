#!/usr/bin/env bash
# serial: asserts each scrape answers within 1 s during a 100k-job flood
# Cardinality (issue 24 item 1): 100,000 distinct job ids over loopback UDP, with /metrics
# scraped throughout by a separate client.
#  - every scrape answers in < 1 s (before: minutes, one whole-store query per job);
#  - the agent's RSS stays < 64 MiB;
#  - lines past the per-transport cap of live job ids are counted
#    (goodput_ingest_jobs_overflow_total{transport="udp"}) and the store holds at most the
#    cap of UDP jobs;
#  - SIGTERM stops the agent in < 2 s.
# asan-skip: timing and RSS bounds are for the plain build; the C paths (ingest cap, span
# query) are covered by unit tests under ASan.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
cd "${GOODPUT_SRC:-.}"
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
exec /usr/bin/python3 - "$GOODPUT" "$tmp" <<'PY'
import os, re, signal, socket, subprocess, sys, threading, time, urllib.request

goodput, tmp = sys.argv[1], sys.argv[2]
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

http, udp = free_port(), free_port(socket.SOCK_DGRAM)
db = os.path.join(tmp, "gp.db")
log = open(os.path.join(tmp, "agent.log"), "wb")
agent = subprocess.Popen([goodput, "agent", "--source", "sim:examples/scenarios/demo.conf",
                          "--speed", "1", "--db", db, "--no-socket",
                          "--udp", f"127.0.0.1:{udp}", "--listen", f"127.0.0.1:{http}"],
                         stdout=log, stderr=subprocess.STDOUT)
url = f"http://127.0.0.1:{http}/metrics"
def scrape(timeout=5.0):
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = r.read().decode()
    return time.monotonic() - t0, body
for _ in range(100):
    try: scrape(); break
    except Exception: time.sleep(0.1)
else: fail("the agent never served /metrics")

def rss_kib():
    with open(f"/proc/{agent.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"): return int(line.split()[1])
    return 0

N = 100000
stop = threading.Event()
worst, scrapes, errors, peak = [0.0], [0], [], [0]
def scraper():
    while not stop.is_set():
        try:
            dt, _ = scrape(timeout=10)
            worst[0] = max(worst[0], dt); scrapes[0] += 1
        except Exception as e:
            errors.append(repr(e))
        peak[0] = max(peak[0], rss_kib())
        time.sleep(0.1)
th = threading.Thread(target=scraper); th.start()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t0 = time.monotonic()
for i in range(N):
    s.sendto(b"hello job=card-%d v=1 unit=samples\n" % i, ("127.0.0.1", udp))
    if i % 2000 == 1999: time.sleep(0.02)   # ~60k lines/s: below the kernel queue
send_s = time.monotonic() - t0
time.sleep(7)   # the last lines reach the store (flush every 5 s) and are scraped
stop.set(); th.join()
peak[0] = max(peak[0], rss_kib())
dt, body = scrape()
m = re.search(r'^goodput_ingest_jobs_overflow_total\{transport="udp"\} (\d+)$', body, re.M)
overflow = int(m.group(1)) if m else -1
m = re.search(r'^goodput_ingest_lines_total\{transport="udp",result="parsed"\} (\d+)$', body, re.M)
parsed = int(m.group(1)) if m else -1
m = re.search(r'^goodput_ingest_lines_total\{transport="udp",result="dropped"\} (\d+)$', body, re.M)
dropped = int(m.group(1)) if m else -1
jobs = len(re.findall(r'^goodput_job_info\{job_id="card-', body, re.M))
print(f"sent {N} hello lines in {send_s:.1f} s; {scrapes[0]} scrapes, slowest {worst[0]*1000:.0f} ms;"
      f" peak RSS {peak[0]/1024:.1f} MiB; udp parsed {parsed}, overflow {overflow},"
      f" dropped {dropped}; card-* jobs in /metrics {jobs}")
if errors: fail(f"{len(errors)} scrapes failed, first: {errors[0]}")
if scrapes[0] < 5: fail(f"only {scrapes[0]} scrapes completed")
if worst[0] >= 1.0: fail(f"a /metrics scrape took {worst[0]:.2f} s (>= 1 s)")
if peak[0] >= 64 * 1024: fail(f"agent RSS peaked at {peak[0]/1024:.1f} MiB (>= 64 MiB)")
if overflow <= 0: fail(f"no overflow counted: {overflow}")
if jobs > 1024: fail(f"{jobs} UDP jobs exposed, over the cap of 1024")
if parsed + overflow + max(dropped, 0) < N * 0.9:
    fail(f"lines unaccounted for: parsed {parsed} + overflow {overflow} + dropped {dropped} < 90% of {N}")
log.flush()
first = open(os.path.join(tmp, "agent.log"), "rb").read().decode(errors="replace")
if first.count("live job ids") != 1: fail(f"expected one overflow log line:\n{first[-2000:]}")

# SIGTERM while a scrape may be in flight: out in < 2 s.
def last_scrape():
    try: scrape(timeout=10)
    except Exception: pass   # the agent may close it while stopping: that is allowed
threading.Thread(target=last_scrape, daemon=True).start()
time.sleep(0.05)
t0 = time.monotonic()
agent.send_signal(signal.SIGTERM)
try: rc = agent.wait(timeout=10)
except subprocess.TimeoutExpired: agent.kill(); fail("the agent did not stop within 10 s of SIGTERM")
stop_s = time.monotonic() - t0
print(f"SIGTERM: exit {rc} in {stop_s*1000:.0f} ms")
if rc != 0: fail(f"agent exit {rc}")
if stop_s >= 2.0: fail(f"SIGTERM took {stop_s:.2f} s (>= 2 s)")
print("ok")
PY
