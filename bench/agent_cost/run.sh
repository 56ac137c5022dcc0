#!/usr/bin/env bash
# bench/agent_cost: what leaving the agent on costs, through the real NVML code path.
# The agent runs `--source nvml` on the test NVML library (build/tests/lib/libnvidia-ml.so.1,
# a simulated node of N GPUs, one training job per GPU, its processes in a fake /proc) at
# 1 s sampling while a sender pushes 1,000 step events/s over UDP; for 8, 64 and 512 GPUs.
# Reported per size: process CPU (user+sys, GNU time) per GPU-sample, the agent's own
# collect+store CPU per GPU-sample (--stats, source excluded), peak RSS, store bytes per
# GPU-hour, events stored vs sent. Side by side in the same run: prometheus-node-exporter's
# CPU per scrape (N curl scrapes, CPU from /proc/PID/stat before and after).
#
# The test library runs on the wall clock at 1 simulated second per second here: the agent
# paces its ticks on wall time, so a faster library clock would not give 1 s sampling.
# 10 simulated minutes therefore take 10 wall minutes per size; WALL_S shortens that (the
# figures are per GPU-sample and per event, so a shorter run changes their noise, not their
# meaning). Usage: bench/agent_cost/run.sh [WALL_S (default 600)] [SIZES (default "8 64 512")]
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
wall_s=${1:-600}
sizes=${2:-8 64 512}
out=bench/out/agent_cost
rm -rf "$out" && mkdir -p "$out"
[ -x "$GOODPUT" ] && [ -f "$LIB" ] || { echo "build first: make $GOODPUT $LIB" >&2; exit 1; }

scenario() { # gpus
  printf '[node]\nname = cost-%d\ngpus = %d\nmodel = H100-SXM\nseed = 7\nduration = 2h\n' "$1" "$1"
  for ((g = 0; g < $1; g++)); do printf '\n[job train-%d]\nkind = training\ngpus = %d\n' "$g" "$g"; done
}

# 1,000 events/s in datagrams of 10 lines every 10 ms; prints the number of lines sent.
sender() { # port seconds
  /usr/bin/python3 - "$1" "$2" <<'PY'
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sent, step, t0 = 0, 0, time.monotonic()
s.sendto(b"hello job=bench-ev v=1 unit=samples\n", ("127.0.0.1", port))
while time.monotonic() - t0 < secs:
    lines = []
    for _ in range(10):
        step += 1
        lines.append(f"step job=bench-ev step={step} units=32 dur=1000000 seq={step}")
    s.sendto(("\n".join(lines) + "\n").encode(), ("127.0.0.1", port))
    sent += 10
    nxt = t0 + sent / 1000.0
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
print(sent)
PY
}

port=$((20000 + RANDOM % 20000))
for n in $sizes; do
  scenario "$n" >"$out/sc$n.conf"
  mkdir -p "$out/node$n"
  GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$out/sc$n.conf" GOODPUT_FAKE_NVML_SPEED=1 \
  GOODPUT_SIM_NODE_ROOT="$out/node$n" \
    /usr/bin/time -f '%U %S %M' -o "$out/time$n" \
    "$GOODPUT" agent --source nvml --db "$out/a$n.db" --no-socket --udp "127.0.0.1:$port" \
    --interval 1s --duration "${wall_s}s" --quiet --stats --proc-root "$out/node$n/proc" \
    --jobmap-dir "$out/node$n/jobmap" >"$out/stats$n.json" 2>"$out/err$n" &
  apid=$!
  sleep 1
  sender "$port" "$((wall_s - 2))" >"$out/sent$n"
  wait "$apid" || { cat "$out/err$n" >&2; exit 1; }
  sqlite3 "$out/a$n.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
  stat -c %s "$out/a$n.db" >"$out/bytes$n"
  sqlite3 "$out/a$n.db" "select count(*) from events where job_id = 'bench-ev' and step is not null" >"$out/stored$n" 2>/dev/null || echo 0 >"$out/stored$n"
done

# prometheus-node-exporter: CPU per scrape of its default collectors.
ne_port=$((port + 1))
scrapes=200
ne_line="| node-exporter | not installed (Debian prometheus-node-exporter) | | | | | | |"
if command -v prometheus-node-exporter >/dev/null; then
  prometheus-node-exporter --web.listen-address="127.0.0.1:$ne_port" >"$out/ne.log" 2>&1 &
  ne=$!
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null && break; sleep 0.1; done
  tck=$(getconf CLK_TCK)
  c0=$(awk '{print $14 + $15}' "/proc/$ne/stat")
  for _ in $(seq $scrapes); do curl -sf "http://127.0.0.1:$ne_port/metrics" >/dev/null; done
  c1=$(awk '{print $14 + $15}' "/proc/$ne/stat")
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$ne/status")
  kill "$ne"
  ne_line=$(awk -v c="$((c1 - c0))" -v t="$tck" -v n="$scrapes" -v r="$rss" \
    'BEGIN { printf "| node-exporter | %d scrapes | | %.2f ms CPU per scrape | | %.1f | | |", n, c / t / n * 1000, r / 1024 }')
fi

echo "| GPUs | GPU-samples | process CPU (% of a core) | process CPU per GPU-sample (µs) | agent collect+store per GPU-sample (µs) | peak RSS (MiB) | store bytes per GPU-hour | events sent / stored |"
echo "|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  /usr/bin/python3 - "$out" "$n" "$wall_s" <<'PY'
import json, sys
out, n, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
st = json.loads(open(f"{out}/stats{n}.json").read().strip().splitlines()[-1])
u, s, rss = open(f"{out}/time{n}").read().split()[-3:]
cpu = float(u) + float(s)
samples = st["samples"]
by = int(open(f"{out}/bytes{n}").read())
sent = open(f"{out}/sent{n}").read().strip()
stored = open(f"{out}/stored{n}").read().strip()
print(f"| {n} | {samples} | {cpu / wall * 100:.2f} | {cpu * 1e6 / samples:.1f} | {st['agent_cpu_us_per_sample']:.1f} | "
      f"{int(rss) / 1024:.1f} | {by / (samples / 3600):,.0f} | {sent} / {stored} |")
PY
done
echo "$ne_line"
