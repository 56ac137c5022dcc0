#!/usr/bin/env bash
# The agent's wake-ups (--stats "wakes"), on the path users run: `goodput agent` at real
# speed with a UDP event socket (src/agent/agent.c, src/ingest):
#   - with nothing arriving it wakes about once per tick (no periodic timer shorter than the
#     sampling interval);
#   - with a steady 400 datagrams/s it reads them in batches: far fewer wake-ups than
#     datagrams, and every event is stored (the hold moves no event and loses none);
#   - its WAL is reserved at start (the size its checkpoints cycle through).
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"
field() { sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "$2"; }
port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Idle: 4 s at 1 s sampling.
p=$(port)
"$GOODPUT" agent --source "sim:$src/examples/scenarios/demo.conf" --interval 1s --duration 4s \
  --no-socket --udp "127.0.0.1:$p" --quiet --stats --db "$tmp/idle.db" >"$tmp/idle.json"
ticks=$(field ticks "$tmp/idle.json"); wakes=$(field wakes "$tmp/idle.json")
[ -n "$ticks" ] && [ -n "$wakes" ] || fail "no ticks/wakes in --stats: $(cat "$tmp/idle.json")"
[ "$wakes" -le $((2 * ticks + 2)) ] || fail "idle agent woke $wakes times in $ticks ticks"

# Events: 400 datagrams/s (one line each) for ~3 s, sent while the agent runs.
p=$(port)
"$GOODPUT" agent --source "sim:$src/examples/scenarios/demo.conf" --interval 1s --duration 5s \
  --no-socket --udp "127.0.0.1:$p" --quiet --stats --db "$tmp/ev.db" >"$tmp/ev.json" &
apid=$!
# The largest size its WAL reaches while it runs (the last close removes the file).
( m=0; while kill -0 "$apid" 2>/dev/null; do
    w=$(stat -c %s "$tmp/ev.db-wal" 2>/dev/null || echo 0); [ "$w" -gt "$m" ] && m=$w
    sleep 0.1; done; echo "$m" >"$tmp/wal_max" ) &
wpid=$!
sent=$(python3 - "$p" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
time.sleep(0.8)
s.sendto(b"hello job=wk v=1 unit=samples\n", ("127.0.0.1", port))
t0, n = time.monotonic(), 0
while n < 1200:
    n += 1
    s.sendto(f"step job=wk step={n} units=1 dur=1000000 seq={n}\n".encode(), ("127.0.0.1", port))
    d = t0 + n / 400.0 - time.monotonic()
    if d > 0:
        time.sleep(d)
print(n)
PY
)
wait "$apid" || fail "agent failed"
wait "$wpid"
# A real-time agent reserves the WAL its checkpoints cycle through (store/wal_batch.h): at
# least 1,000 frames of 4 KiB pages at once, where a 5 s run writes a few dozen.
wal_max=$(cat "$tmp/wal_max" 2>/dev/null || echo 0)
[ "$wal_max" -ge $((1000 * (4096 + 24))) ] || fail "the agent's WAL peaked at $wal_max bytes: not reserved"
wakes=$(field wakes "$tmp/ev.json"); ticks=$(field ticks "$tmp/ev.json")
stored=$(sqlite3 "$tmp/ev.db" "SELECT count(*) FROM events WHERE job_id = 'wk' AND step IS NOT NULL")
[ "$stored" = "$sent" ] || fail "$stored of $sent events stored"
# One wake-up per datagram would be >= 1,200; batching reads several per wake-up.
[ "$wakes" -lt $((sent / 3)) ] || fail "$wakes wake-ups for $sent datagrams: not batched"
# The CPU accounting (agent.h): the loop thread's CPU is split between the source's calls
# and the rest, with nothing left out, so collect + source covers the process's CPU from
# the end of the first tick to the end of the loop, with the checkpoint thread's CPU
# (store/checkpointer.h; no --listen, so no HTTP thread), and the loop's part never
# exceeds the process's CPU at the loop's end; the steady span lies inside the whole run.
python3 - "$tmp/ev.json" <<'PY' || fail "CPU accounting: $(cat "$tmp/ev.json")"
import json, sys
st = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
first, end, proc = st["first_tick_cpu_s"], st["loop_end_cpu_s"], st["process_cpu_s"]
loop = st["agent_cpu_s"] + st["source_cpu_s"]
own = loop + st["checkpoint_cpu_s"]
assert 0 < first <= end <= proc + 1e-6, (first, end, proc)
assert loop <= end + 1e-3, f"loop thread {loop} s > process {end} s at the loop's end"
assert own <= proc + 1e-3, f"loop and checkpoint threads {own} s > process {proc} s"
assert own >= 0.98 * (end - first) - 1e-3, f"loop and checkpoint threads {own} s < steady process CPU {end - first} s"
PY
echo "agent_wakes: ok (idle: $(field wakes "$tmp/idle.json") wake-ups in $(field ticks "$tmp/idle.json") ticks; $sent datagrams: $wakes wake-ups in $ticks ticks, all stored)"
