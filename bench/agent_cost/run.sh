#!/usr/bin/env bash
# bench/agent_cost: what leaving the agent on costs, through the real NVML code path.
# The agent runs `--source nvml` on the test NVML library (build/tests/lib/libnvidia-ml.so.1,
# a simulated node of N GPUs, one training job per GPU, its processes in a fake /proc) at
# 1 s sampling; for 8, 64 and 512 GPUs without events, then 8 GPUs while a sender pushes
# 1,000 step events/s over UDP.
#
# What is the agent's own cost: the test library runs in the agent's process, and its
# simulator (512 GPUs' physics every second) used to be most of the process CPU measured.
# GOODPUT_FAKE_NVML_CHEAP=1 makes the library simulate once at start and replay that
# reading with time and energy moved on (tests/shlib/libnvidia-ml.so.1/fake_nvml.c), so
# the process CPU is the agent's: the NVML backend, /proc attribution, the store, rollups,
# ingest. Start-up is left out: figures are from the end of the first tick to the exit
# (--stats: loop_end_cpu_s - first_tick_cpu_s over samples - first_tick_samples), since
# opening the store and the library's one simulation are paid once, not per sample. The end
# is the loop's end, its last flush included (--stats loop_end_cpu_s): what the command does
# after it (the last sealing pass over every job) is paid once too; it is printed apart
# ("after the loop"). Builds without loop_end_cpu_s are measured to the exit.
#
# Reported per run: steady process CPU per GPU-sample, the part inside the source's calls
# (NVML backend + test library), CPU per event (the events run minus the same-size run
# without events, per event stored), peak RSS, store bytes per GPU-hour, late ticks, and
# the agent's wake-ups per tick (bench/agent_cost/wakes.sh counts them from /proc). Side
# by side in the same run: prometheus-node-exporter's CPU per scrape (N curl scrapes, CPU
# from /proc/PID/stat before and after).
#
# With sizes 1 and 8 both run, the 8-GPU tick is split into what every tick costs whatever
# the GPU count (waking up, the flush's commit, the clock reads) and what each GPU adds:
# per GPU = (tick(8) - tick(1)) / 7, fixed = tick(1) - per GPU. Beside them, the floor of
# the host: the CPU an empty process (`bench/agent_cost/host_costs.c wake`, poll() with a 1 s
# timeout) is charged per wake-up, measured during the first run; on a paravirtualised VM it is most of an idle
# agent's cost.
#
# The library's clock is the wall clock (the agent paces ticks on wall time), so a run of
# WALL_S seconds gives WALL_S ticks. Usage: bench/agent_cost/run.sh [WALL_S (default 600)]
# [SIZES (default "1 8 64 512")]
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${GOODPUT:-build/goodput}
LIB=${NVML_LIB:-build/tests/lib/libnvidia-ml.so.1}
wall_s=${1:-600}
sizes=${2:-1 8 64 512}
out=bench/out/agent_cost
rm -rf "$out" && mkdir -p "$out"
[ -x "$GOODPUT" ] && [ -f "$LIB" ] || { echo "build first: make $GOODPUT $LIB" >&2; exit 1; }
. bench/agent_cost/agent.sh

scenario() { # gpus
  bench/agent_cost/scenario.sh "$1"
}

# 1,000 events/s in datagrams of 10 lines every 10 ms; prints the number of lines sent.
sender() { # port seconds
  /usr/bin/python3 bench/agent_cost/sender.py "$1" "$2"
}

port=$((20000 + RANDOM % 20000))
run() { # name gpus with_events
  local name=$1 n=$2 ev=$3
  scenario "$n" >"$out/sc$name.conf"
  bench_agent "$out/sc$name.conf" "$out/node$name" "$out/a$name.db" "$wall_s" \
    "$out/stats$name.json" "$out/err$name" -- --udp "127.0.0.1:$port" &
  apid=$!
  sleep 1
  if [ "$ev" = 1 ]; then sender "$port" "$((wall_s - 2))" >"$out/sent$name"; else echo 0 >"$out/sent$name"; fi
  wait "$apid" || { cat "$out/err$name" >&2; exit 1; }
  sqlite3 "$out/a$name.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
  stat -c %s "$out/a$name.db" >"$out/bytes$name"
  sqlite3 "$out/a$name.db" "select count(*) from events where job_id = 'bench-ev' and step is not null" >"$out/stored$name" 2>/dev/null || echo 0 >"$out/stored$name"
}
# The host's floor: CPU charged to a process that only wakes once a second (C when a
# compiler is here, else python3, whose interpreter adds a little).
floor_n=$((wall_s > 62 ? 60 : (wall_s > 7 ? wall_s - 2 : 5)))
have_cc=0
${CC:-cc} -O2 -o "$out/host_costs" bench/agent_cost/host_costs.c 2>/dev/null && have_cc=1
if [ $have_cc = 1 ]; then
  "$out/host_costs" wake "$floor_n" >"$out/floor" &
else
  /usr/bin/python3 - "$floor_n" >"$out/floor" <<'PY' &
import select, sys, time
n = int(sys.argv[1])
p = select.poll()
c0 = time.process_time()
for _ in range(n):
    p.poll(1000)
print((time.process_time() - c0) * 1e6 / n)
PY
fi
floor=$!
for n in $sizes; do run "$n" "$n" 0; done
wait "$floor"
run 8ev 8 1

# The host's price of entering its kernel (after the agent runs, so as not to load them).
host_costs=
[ $have_cc = 0 ] || host_costs=$("$out/host_costs")

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
  ne_ms=$(awk -v c="$((c1 - c0))" -v t="$tck" -v n="$scrapes" 'BEGIN { printf "%.2f", c / t / n * 1000 }')
  ne_line=$(awk -v m="$ne_ms" -v n="$scrapes" -v r="$rss" \
    'BEGIN { printf "| node-exporter | %d scrapes | | %.2f ms CPU per scrape | | %.1f | | |", n, m, r / 1024 }')
fi

echo "| GPUs | events/s sent | GPU-samples (steady) | process CPU per GPU-sample (µs) | of which in NVML calls (µs) | CPU per event (µs) | peak RSS (MiB) | store bytes per GPU-hour | events sent / stored | late ticks | wake-ups per tick |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
/usr/bin/python3 - "$out" "$wall_s" "${ne_ms:-}" "$host_costs" $sizes <<'PY'
import json, sys
out, wall, ne_ms, host, sizes = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def load(name):
    st = json.loads(open(f"{out}/stats{name}.json").read().strip().splitlines()[-1])
    end = st.get("loop_end_cpu_s", st["process_cpu_s"])
    st["after_loop_ms"] = (st["process_cpu_s"] - end) * 1e3
    st["steady_cpu"] = end - st["first_tick_cpu_s"]
    st["steady_samples"] = st["samples"] - st["first_tick_samples"]
    st["us"] = st["steady_cpu"] * 1e6 / st["steady_samples"]
    st["bytes"] = int(open(f"{out}/bytes{name}").read())
    st["sent"] = int(open(f"{out}/sent{name}").read().strip() or 0)
    st["stored"] = int(open(f"{out}/stored{name}").read().strip() or 0)
    return st
runs = {n: load(n) for n in sizes + ["8ev"]}
base = runs.get("8")
for name in sizes + ["8ev"]:
    st = runs[name]
    gpus = 8 if name == "8ev" else int(name)
    # source_cpu_s covers every tick, the first included: per sample over all samples.
    src_us = st["source_cpu_s"] * 1e6 / max(st["samples"], 1)
    per_ev = "-"
    # returns from the loop's waits (--stats "wakes"; builds before it do not count them)
    wakes = f"{st['wakes'] / max(st['ticks'], 1):.1f}" if "wakes" in st else "-"
    if name == "8ev" and base and st["stored"]:
        extra = st["steady_cpu"] - base["us"] * st["steady_samples"] / 1e6
        per_ev = f"{extra * 1e6 / st['stored']:.2f}"
    print(f"| {gpus} | {st['sent'] / wall:.0f} | {st['steady_samples']} | {st['us']:.1f} | {src_us:.1f} | {per_ev} | "
          f"{st['max_rss_kib'] / 1024:.1f} | {st['bytes'] / (st['samples'] / 3600):,.0f} | "
          f"{st['sent']} / {st['stored']} | {st['ticks_late']} | {wakes} |")
if base:
    worst = max(runs[n]["us"] for n in sizes if n != "1")
    print(f"\nlinearity: largest CPU per GPU-sample (1 GPU aside) / 8-GPU figure = {worst / base['us']:.2f} (target <= 1.5)")
after = ", ".join(f"{n}: {runs[n]['after_loop_ms']:.1f} ms" for n in sizes + ["8ev"])
print(f"after the loop (paid once a run, not in the figures above): {after}")
if base and "1" in runs:
    t1, t8 = runs["1"]["us"], base["us"] * 8
    per_gpu = (t8 - t1) / 7
    print(f"8-GPU tick: {t8:.0f} µs CPU = fixed {t1 - per_gpu:.0f} µs a tick + {per_gpu:.1f} µs per GPU")
# The same tick against the peer on the same host: a ratio, which moves far less between
# machines than the µs (a slow host's kernel entries slow both).
if base and ne_ms:
    t8 = base["us"] * 8
    print(f"against node-exporter on this host: its scrape {float(ne_ms) * 1e3:.0f} µs CPU = "
          f"{float(ne_ms) * 1e3 / t8:.1f} of the agent's 8-GPU ticks")
# The agent's sealing child (cli/agent_results.h: a fork + exec of goodput once a minute
# that stores ended jobs' results) runs in its own process: getrusage(RUSAGE_SELF) leaves
# it out of the process CPU above, but the node pays it.
passes = sum(r.get("seal_passes", 0) for r in runs.values())
if passes:
    seal_ms = sum(r.get("seal_cpu_s", 0) for r in runs.values()) * 1e3 / passes
    print(f"sealing child: {passes} passes, {seal_ms:.2f} ms CPU each, not in the process CPU "
          f"above (one a minute: {seal_ms / 60 * 1e3 / 8:.1f} µs per GPU-sample at 8 GPUs)")
floor = open(f"{out}/floor").read().strip()
if floor:
    print(f"host floor: an empty process waking once a second is charged {float(floor):.0f} µs CPU per wake-up")
if host:
    sc, pf, tc = (float(x) for x in host.split())
    print(f"host kernel entries (bench/agent_cost/host_costs.c): a null system call {sc:.2f} µs CPU, "
          f"a first-touch page fault {pf:.2f} µs, a thread-CPU clock read {tc:.2f} µs")
PY
echo "$ne_line"
