#!/usr/bin/env bash
# bench/serve/run.sh: costs of the HTTP server (src/serve).
#   1. CPU per /metrics scrape, 8 GPUs and 50 jobs (42 ended, 8 running with an hour of
#      1-second samples and steps each, then the same 24 hours old: AGES="1 24"; then the
#      same with the 8 running jobs inference servers: KINDS="train infer"), side by side with Debian's
#      prometheus-node-exporter scraped the same way on the same machine. CPU = utime +
#      stime of the serving process from /proc/PID/stat across SCRAPES scrapes (curl's own
#      CPU is not counted for either). While goodput is scraped, `bench_serve append` adds
#      what an agent would (every second a sample per GPU and a step per running job), so
#      every scrape refreshes the running jobs with new rows; the row's last column shows
#      running-0's allocated GPU-seconds at the first and the last measured scrape (they
#      must differ: the scrapes saw the job move). SETTLE seconds after the warm-up
#      scrapes let the server's reuse of a costly first summary (10x its cost) run out.
#   2. Wall latency (p50/p95/max over N requests, HTTP keep-alive) of the dashboard's
#      job-view requests for a 24-hour job at 1-second samples (target p95 < 50 ms).
# Usage: bench/serve/run.sh [BUILD]    (needs BUILD/libgoodput.a)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
OUT=bench/out
mkdir -p "$OUT"
SCRAPES=${SCRAPES:-50}
N=${N:-20}
GAP=${GAP:-1} # seconds between scrapes: longer than the server reuses a running job's summary
BIN=$OUT/bench_serve
cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Iinclude bench/serve/bench_serve.c "$BUILD/libgoodput.a" -o "$BIN" \
  $(pkg-config --libs sqlite3 jansson yajl libmicrohttpd libcurl zlib libxml-2.0 libpq) -ldl -lpthread -lm
tmp=$(mktemp -d /tmp/gp-bench-serve-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
log() { echo "$*" | tee -a "$OUT/serve.txt"; }
: >"$OUT/serve.txt"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

alloc_s() { curl -sf "$1" | awk '/^goodput_job_allocated_gpu_seconds_total\{job_id="running-0"/ {print $2}'; }

# $1 name, $2 pid, $3 url
measure() {
  for i in 1 2 3; do curl -sf "$3" >/dev/null; done # warm (goodput caches ended jobs' summaries)
  sleep "${4:-0}"
  local bytes; bytes=$(curl -sf "$3" | wc -c)
  local series; series=$(curl -sf "$3" | grep -vc '^#')
  local c0; c0=$(cpu_ticks "$2")
  local t0; t0=$(date +%s.%N)
  for i in $(seq "$SCRAPES"); do curl -sf "$3" >/dev/null; sleep "$GAP"; done
  local t1; t1=$(date +%s.%N)
  local c1; c1=$(cpu_ticks "$2")
  local moved=-
  [ -n "${5:-}" ] && moved="$5 -> $(alloc_s "$3")"
  awk -v n="$SCRAPES" -v c="$((c1 - c0))" -v hz="$hz" -v w="$(echo "$t1 - $t0" | bc)" -v b="$bytes" -v s="$series" -v name="$1" -v gap="$GAP" -v m="$moved" \
    'BEGIN { printf "| %s | %d | %d | %.2f ms | %.1f ms | %s |\n", name, s, b, 1000 * c / hz / n, 1000 * (w / n - gap), m }' | tee -a "$OUT/serve.txt"
}

if [ "${SKIP_METRICS:-0}" != 1 ]; then
NE=$(freeport)
if command -v prometheus-node-exporter >/dev/null; then
  prometheus-node-exporter --web.listen-address="127.0.0.1:$NE" >/dev/null 2>&1 & pids+=($!); nepid=$!
else nepid=; fi
log ""
log "| /metrics of | series | bytes | CPU per scrape | wall per scrape | running-0 allocated GPU-s, first -> last scrape |"
log "|---|---|---|---|---|---|"
# The same fleet with its 8 running jobs 1 h old, then AGES' other ages (flat as they age?),
# node_exporter between them.
# KINDS: the running jobs train (a step a second) or serve (inference servers, about a
# request a second arriving during the scrapes, bench_requests.h).
for kind in ${KINDS:-train infer}; do
for age in ${AGES:-1 24}; do
  db="$tmp/fleet-$kind-$age.db"
  "$BIN" fill-fleet "$db" "$age" "$kind" | tee -a "$OUT/serve.txt"
  GP=$(freeport)
  "$BIN" serve "$db" "$GP" & pids+=($!); gpid=$!
  sleep 1
  "$BIN" append "$db" & pids+=($!); apid=$!
  url="http://127.0.0.1:$GP/metrics"
  curl -sf "$url" >/dev/null; sleep "${SETTLE:-12}"
  measure "goodput (8 GPUs, 50 jobs, running ${age} h, $kind)" "$gpid" "$url" 0 "$(alloc_s "$url")"
  kill "$gpid" "$apid"
  rm -f "$db"
  [ -n "$nepid" ] && measure "prometheus-node-exporter (defaults)" "$nepid" "http://127.0.0.1:$NE/metrics"
done
done
fi

if [ "${SKIP_LATENCY:-0}" != 1 ]; then
"$BIN" fill-day "$tmp/day.db" | tee -a "$OUT/serve.txt"
"$BIN" latency "$tmp/day.db" "$N" | tee -a "$OUT/serve.txt"
fi
