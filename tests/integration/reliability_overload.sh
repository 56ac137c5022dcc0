#!/usr/bin/env bash
# serial: asserts latency bounds while the agent is flooded
# asan-skip: a timed flood; the ingest paths it drives run under ASan in test_ingest and test_store_hostile
# Overload (issue 11): flood the agent with events at 10x its rated rate (rated 100k
# events/s; flood 1M lines/s, UDP datagrams of many lines, plus a unix-socket share) while
# it samples a simulated node in real time. Checks: nothing crashes (clean exit on SIGTERM),
# memory stays bounded (VmRSS sampled from /proc), every line sent is either stored or
# counted as dropped by the agent (UDP drops come from the kernel's SO_RXQ_OVFL; the unix
# sender sees EAGAIN and counts its own), drops are exposed (--stats, and /metrics when the
# agent serves HTTP), and sampling stays on schedule: at most 1% of ticks start later than
# 10% of the interval (p99 jitter < 10%), from the agent's own tick-lateness statistic, and
# the store's WAL starts over after its checkpoints (they run off the loop) instead of
# holding the whole flood.
# Knobs: GP_FLOOD_SECONDS (default 8), GP_FLOOD_RATE (lines/s, default 1000000).
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
cd "${GOODPUT_SRC:-.}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
exec /usr/bin/python3 - "$GOODPUT" "$tmp" <<'PY'
import json, os, re, signal, socket, subprocess, sys, time, urllib.request

goodput, tmp = sys.argv[1], sys.argv[2]
secs = float(os.environ.get("GP_FLOOD_SECONDS", "12"))
rate = float(os.environ.get("GP_FLOOD_RATE", "1000000"))
INTERVAL_S = 0.25
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
def free_port(kind):
    s = socket.socket(socket.AF_INET, kind); s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]; s.close(); return p

udp_port, http_port = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
sock = os.path.join(tmp, "gp.sock")
has_listen = b"token-file" in open(goodput, "rb").read() and not os.environ.get("GP_FLOOD_NO_LISTEN")
cmd = [goodput, "agent", "--source", "sim:examples/scenarios/demo.conf", "--db",
       os.path.join(tmp, "gp.db"), "--speed", "1", "--interval", f"{int(INTERVAL_S*1000)}ms",
       "--flush", os.environ.get("GP_FLOOD_FLUSH", "1s"), "--socket", sock, "--udp", f"127.0.0.1:{udp_port}", "--stats", "--quiet"]
if has_listen and not os.environ.get("GP_FLOOD_NO_LISTEN"):
    cmd += ["--listen", f"127.0.0.1:{http_port}"]
# Under AddressSanitizer (make asan) the quarantine would look like growth: keep it small.
asan = b"__asan_init" in open(goodput, "rb").read()
env = dict(os.environ)
if asan:
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=8"
agent = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
for _ in range(200):
    if os.path.exists(sock): break
    time.sleep(0.02)
else:
    fail("agent did not start: " + agent.stderr.read().decode())

def waited_ns():
    """Time the agent's loop (its main thread) spent runnable, waiting for a CPU the kernel
    gave to something else: /proc/PID/schedstat's second field. -1 when unreadable."""
    try:
        return int(open(f"/proc/{agent.pid}/schedstat").read().split()[1])
    except (OSError, ValueError, IndexError):
        return -1
def wal_bytes():
    try:
        return os.path.getsize(os.path.join(tmp, "gp.db-wal"))
    except OSError:
        return 0
def rss_kib():
    try:
        for line in open(f"/proc/{agent.pid}/status"):
            if line.startswith("VmRSS:"): return int(line.split()[1])
    except OSError:
        return -1
    return -1

# The sender yields the CPU to the agent where both compete for few cores: what is measured
# is the agent's own scheduling under a flood, not how the OS shares cores with the harness.
os.nice(10)
# Datagrams of L lines each, distinct jobs and steps so every line is a real event.
L = 400  # about 15 KB per datagram
def dgram(k, job):
    return "".join(f"step job={job}-{k % 7} step={k * L + i} units=1\n" for i in range(L)).encode()
pool = [dgram(k, "flood") for k in range(64)]
upool = [dgram(k, "uflood") for k in range(64)]  # the unix share, checked line by line
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setblocking(False)
x = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
x.setblocking(False)
sent_udp = sent_unix = eagain_unix = eagain_udp = 0
rss, metrics_drops, wal_max = [], None, 0
base_rss = rss_kib()
wait0 = waited_ns()
t0 = time.monotonic(); n = 0; next_rss = t0
while True:
    now = time.monotonic()
    if now - t0 >= secs: break
    due = int((now - t0) * rate / L)  # datagrams due by now
    while n < due:
        d = pool[n % 64]
        n += 1
        if n % 10 == 0:  # a tenth over the unix socket
            try: x.sendto(upool[n % 64], sock); sent_unix += 1
            except BlockingIOError: eagain_unix += 1
            except OSError: eagain_unix += 1
        else:
            try: u.sendto(d, ("127.0.0.1", udp_port)); sent_udp += 1
            except BlockingIOError: eagain_udp += 1
    if now >= next_rss:
        rss.append((now - t0, rss_kib())); next_rss += 0.1
        wal_max = max(wal_max, wal_bytes())
    if agent.poll() is not None:
        fail(f"agent died during the flood (rc {agent.returncode}): {agent.stderr.read().decode()[-500:]}")
    if has_listen and metrics_drops is None and now - t0 > secs / 2:
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10).read().decode()
            m = re.search(r'goodput_ingest_lines_total\{transport="udp",result="dropped"\} (\d+)', body)
            metrics_drops = int(m.group(1)) if m else -1
        except Exception as e:
            metrics_drops = f"error {e}"
    time.sleep(0.002)
elapsed = time.monotonic() - t0
# Let it drain what the kernel queued (bounded by the socket buffers): wait until the
# stored event count stops moving, sampling RSS meanwhile.
import sqlite3
last, stable, t_drain = -1, 0, time.monotonic()
while stable < 3 and time.monotonic() - t_drain < 30:
    time.sleep(0.5)
    rss.append((time.monotonic() - t0, rss_kib()))
    wal_max = max(wal_max, wal_bytes())
    try:
        c = sqlite3.connect(os.path.join(tmp, "gp.db"), timeout=5)
        cur = c.execute("SELECT count(*) FROM events").fetchone()[0]
        c.close()
    except sqlite3.Error:
        continue
    stable = stable + 1 if cur == last else 0
    last = cur
drain_s = time.monotonic() - t_drain
wait1 = waited_ns()
# The checkpoints counted on /metrics once the flood is drained (the same counter --stats
# prints at exit; the last flush may add one).
metrics_ckpts = None
if has_listen:
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10).read().decode()
        m = re.search(r'^goodput_agent_store_checkpoints_total (\d+)$', body, re.M)
        metrics_ckpts = int(m.group(1)) if m else -1
    except Exception as e:
        metrics_ckpts = f"error {e}"

agent.send_signal(signal.SIGTERM)
out, err = agent.communicate(timeout=60)
if agent.returncode != 0:
    fail(f"agent exited {agent.returncode}: {err.decode()[-500:]}")
stats = json.loads(out.decode().strip().splitlines()[-1])

offered = (n) * L / elapsed
print(f"flood {elapsed:.1f}s at {offered:,.0f} lines/s offered: udp {sent_udp} datagrams sent "
      f"({eagain_udp} EAGAIN), unix {sent_unix} sent ({eagain_unix} EAGAIN, counted by the sender)")
print("agent stats:", json.dumps(stats))
peak = max(r for _, r in rss)
half = [r for t, r in rss if t >= secs / 2]
print(f"RSS: start {base_rss} KiB, peak {peak} KiB, second half {min(half)}..{max(half)} KiB;"
      f" /metrics udp dropped: {metrics_drops}")
db_bytes = os.path.getsize(os.path.join(tmp, "gp.db"))
print(f"WAL: largest {wal_max / 2**20:.1f} MiB (store {db_bytes / 2**20:.1f} MiB); {stats.get('checkpoints')} checkpoints off the loop "
      f"({stats.get('checkpoints_complete')} complete, longest {stats.get('checkpoint_max_ms')} ms;"
      f" /metrics after the drain: {metrics_ckpts})")

# Memory bounded: a hard ceiling, and no growth through the second half of the flood.
ceiling = (1024 if asan else 512) * 1024
if peak > ceiling: fail(f"peak RSS {peak} KiB over {ceiling >> 10} MiB")
if max(half) - min(half) > 64 * 1024: fail("RSS still growing in the second half of the flood")
# The WAL starts over after each checkpoint (taken off the loop: store/checkpointer.h): it
# holds a few commits, not the flood. A WAL that never started over held 354 MiB against a
# 118 MiB store here; one that did, 22-30 MiB.
if stats["checkpoints"] < 1:
    fail("no WAL checkpoint ran off the loop through the flood (checkpoints: 0)")
if has_listen and not (isinstance(metrics_ckpts, int) and
                       metrics_ckpts <= stats["checkpoints"] <= metrics_ckpts + 1):
    fail(f"/metrics counted {metrics_ckpts} checkpoints after the drain, --stats {stats['checkpoints']} at exit")
if wal_max > max(db_bytes // 2, 16 << 20):
    fail(f"the WAL grew to {wal_max / 2**20:.1f} MiB against a {db_bytes / 2**20:.1f} MiB store: "
         "it did not start over after its checkpoints")
# Accounting. Unix datagrams the kernel accepted cannot be lost: every line must be stored
# (the sender counted its own EAGAIN drops). UDP: stored + counted drops never exceed what
# was sent; datagrams the kernel drops before the socket (loopback backlog) are invisible
# to any receiver, so only the socket's own overflow count can be checked.
c = sqlite3.connect(os.path.join(tmp, "gp.db"))
stored_unix = c.execute("SELECT count(*) FROM events WHERE job_id LIKE 'uflood-%'").fetchone()[0]
stored_udp = c.execute("SELECT count(*) FROM events WHERE job_id LIKE 'flood-%'").fetchone()[0]
c.close()
udp_in, udp_dropped = sent_udp * L, stats["ingest_dropped"] * L
print(f"unix: {sent_unix * L:,} lines accepted, {stored_unix:,} stored, {eagain_unix * L:,} refused "
      f"(EAGAIN); udp: {udp_in:,} sent, {stored_udp:,} stored, {udp_dropped:,} counted dropped "
      f"(socket overflow, datagrams of {L} lines), {max(0, udp_in - stored_udp - udp_dropped):,} "
      f"dropped before the socket")
if stored_unix != sent_unix * L:
    fail(f"unix socket: {sent_unix * L - stored_unix:,} accepted lines neither stored nor counted")
if stored_udp + udp_dropped > udp_in * 1.001:
    fail("udp: more stored+dropped than sent")
if stored_udp < udp_in and stats["ingest_dropped"] == 0 and eagain_unix == 0:
    fail("a flood at 10x the rated rate produced no counted drop at all")
if has_listen and not (isinstance(metrics_drops, int) and metrics_drops >= 0):
    fail(f"/metrics does not expose UDP drops: {metrics_drops}")
# Schedule: p99 lateness < 10% of the interval <=> at most 1% of ticks that late.
ticks, late = stats["ticks"], stats["ticks_late"]
if ticks < 0.8 * (elapsed + drain_s) / INTERVAL_S: fail(f"only {ticks} ticks in {elapsed + drain_s:.1f}s")
# A stalled loop fails whatever the machine: no tick may be a whole interval late.
if stats["tick_late_max_ms"] > INTERVAL_S * 1000:
    fail(f"a tick started {stats['tick_late_max_ms']:.0f} ms late: the flood stalls sampling")
# With fewer than 100 ticks one outlier is allowed (a p99 needs 100 samples). On a machine
# whose run queue is longer than its cores, preemption alone exceeds 10% of the interval,
# so there the p99 bound is reported, not enforced (GP_FLOOD_STRICT=1 enforces it). The
# 1-minute load average lags a 12 s flood (it read < 2 on a 2-core VM where 3-4 tasks ran
# through it), so the loop's own wait for a CPU is measured too: a tick starts late through
# no fault of the loop only if the loop sat runnable while the kernel ran something else.
# Each late tick past the allowance needs a tenth of the interval of such waiting; late
# ticks that the loop's run-queue time over the flood and drain cannot cover still fail.
load, ncpu = os.getloadavg()[0], os.cpu_count() or 1
allowed = max(1, ticks // 100)
p99_ok = late <= allowed
wait_ms = (wait1 - wait0) / 1e6 if wait0 >= 0 and wait1 >= wait0 else 0.0
explained = late <= allowed + int(wait_ms // (INTERVAL_S * 100))
msg = (f"{late} of {ticks} ticks started more than {INTERVAL_S * 100:.0f} ms late "
       f"(worst {stats['tick_late_max_ms']:.1f} ms); the loop waited {wait_ms:.0f} ms for a CPU")
if not p99_ok and ((load <= ncpu and not explained) or os.environ.get("GP_FLOOD_STRICT")):
    fail(msg + ": p99 jitter over 10% of the interval")
why = (f"load {load:.1f} on {ncpu} cores" if load > ncpu
       else "the loop's wait for a CPU covers the late ticks")
print(msg + ("" if p99_ok else f"; p99 bound NOT met, not enforced: {why}"))
print("ok")
PY
