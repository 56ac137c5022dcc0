#!/usr/bin/env bash
# bench/ingest/run.sh: goodput's event receiver vs the statsd daemon (npm), same sender.
#
#   1. capacity: unix socket, blocking sender (back-pressure, nothing lost): events per
#      core-second of the receiver, at 1 and 16 lines per datagram.
#   2. lossless rate over UDP: paced sends at rising rates; for each system and batching, the
#      highest rate with zero loss (goodput: gp_ingest; statsd: a backend that totals counters).
#   3. 100k events/s sustained for 10 s, unix and UDP, one line per datagram.
# Receivers are pinned to CPU 0, the sender to CPU 1. Results: bench/out/ingest.txt.
# statsd is installed with npm into bench/out/statsd (not committed).
set -eu
cd "$(dirname "$0")/../.."
OUT=bench/out
mkdir -p "$OUT"
BIN=$OUT/ingest_bench
cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Iinclude bench/ingest/ingest_bench.c src/ingest/ingest.c \
  src/ingest/protocol.c src/model/event.c -o "$BIN"
SECS=${SECS:-3}
RATES=${RATES:-"10000 20000 50000 100000 200000 500000 1000000 2000000"}
PORT=18649
SPORT=18125
tmp=$(mktemp -d /tmp/gp-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
log() { echo "$*" | tee -a "$OUT/ingest.txt"; }
: >"$OUT/ingest.txt"
log "# ingest bench $(date -u +%FT%TZ) on $(nproc) cores; SECS=$SECS"

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

start_recv() { # args for recv; waits until ready
  taskset -c 0 "$BIN" recv "$@" >"$tmp/recv.out" &
  RPID=$!
  for _ in $(seq 100); do grep -q ready "$tmp/recv.out" 2>/dev/null && return; sleep 0.05; done
  echo "receiver did not start"; exit 1
}

# 1. capacity over the unix socket
for b in 1 16; do
  n=$((b == 1 ? 1000000 : 4000000))
  start_recv --unix "$tmp/g.sock" --idle-ms 500
  s=$(taskset -c 1 "$BIN" send --unix "$tmp/g.sock" --events $n --batch $b --block)
  wait $RPID
  r=$(cat "$tmp/recv.out" | tail -1)
  ev=$(echo "$r" | field events); busy=$(echo "$r" | field busy_s); wall=$(echo "$s" | field wall_s)
  log "capacity unix batch=$b: events=$ev sender_wall_s=$wall receiver_cpu_s=$busy" \
      "=> $(awk -v e=$ev -v c=$busy 'BEGIN{printf "%.0f", e/c}') events/core-s," \
      "$(awk -v e=$ev -v w=$wall 'BEGIN{printf "%.0f", e/w}') events/s wall"
done

# 2. lossless UDP rate: goodput
sweep_goodput() { # batch
  local b=$1 best=0 fails=0
  for r in $RATES; do
    n=$(awk -v r=$r -v s=$SECS 'BEGIN{printf "%d", r*s}')
    start_recv --udp 127.0.0.1:$PORT --idle-ms 700
    s=$(taskset -c 1 "$BIN" send --udp 127.0.0.1:$PORT --events $n --rate $r --batch $b)
    wait $RPID
    got=$(tail -1 "$tmp/recv.out" | field events)
    wall=$(echo "$s" | field wall_s)
    achieved=$(awk -v n=$n -v w=$wall 'BEGIN{printf "%.0f", n/w}')
    loss=$((n - got))
    log "goodput udp batch=$b rate=$r achieved=$achieved sent=$n received=$got lost=$loss"
    # best: the highest achieved rate with no loss; stop after two lossy or saturated rates
    if [ $loss -eq 0 ] && [ $achieved -gt $best ]; then best=$achieved; fi
    if [ $loss -ne 0 ] || [ $achieved -lt $((r * 80 / 100)) ]; then fails=$((fails + 1)); fi
    [ $fails -ge 2 ] && break
  done
  log "=> goodput udp batch=$b highest lossless rate: $best events/s"
}

# 2'. lossless UDP rate: statsd with the totals backend
STATSD=$OUT/statsd/node_modules/statsd/stats.js
if [ ! -e "$STATSD" ]; then
  mkdir -p "$OUT/statsd"
  (cd "$OUT/statsd" && npm install --no-audit --no-fund statsd@0.9.0 >/dev/null 2>&1) || true
fi
sweep_statsd() { # batch
  local b=$1 best=0 fails=0
  cat >"$tmp/statsd.js" <<EOF
{ port: $SPORT, address: "127.0.0.1", flushInterval: 500, deleteCounters: false,
  backends: ["$PWD/bench/ingest/statsd_totals.js"], totalsFile: "$tmp/totals.json" }
EOF
  taskset -c 0 node "$STATSD" "$tmp/statsd.js" >"$tmp/statsd.log" 2>&1 &
  local spid=$!
  sleep 1.5
  total() { node -e "try{const t=require('$tmp/totals.json');console.log(t['train.step']||0)}catch(e){console.log(0)}"; }
  for r in $RATES; do
    n=$(awk -v r=$r -v s=$SECS 'BEGIN{printf "%d", r*s}')
    before=$(total)
    s=$(taskset -c 1 "$BIN" send --udp 127.0.0.1:$SPORT --events $n --rate $r --batch $b --statsd)
    sleep 2 # let statsd drain and flush (every 500 ms)
    after=$(total)
    got=$((after - before))
    wall=$(echo "$s" | field wall_s)
    achieved=$(awk -v n=$n -v w=$wall 'BEGIN{printf "%.0f", n/w}')
    loss=$((n - got))
    log "statsd udp batch=$b rate=$r achieved=$achieved sent=$n received=$got lost=$loss"
    # best: the highest achieved rate with no loss; stop after two lossy or saturated rates
    if [ $loss -eq 0 ] && [ $achieved -gt $best ]; then best=$achieved; fi
    if [ $loss -ne 0 ] || [ $achieved -lt $((r * 80 / 100)) ]; then fails=$((fails + 1)); fi
    [ $fails -ge 2 ] && break
  done
  kill $spid; wait $spid 2>/dev/null || true
  log "=> statsd udp batch=$b highest lossless rate: $best events/s"
}

for b in 1 16; do
  sweep_goodput $b
  if [ -e "$STATSD" ] && command -v node >/dev/null; then sweep_statsd $b; else log "statsd: not installed (npm unreachable?)"; fi
done

# 3. sustained 100k events/s for 10 s: raw datagrams of 1 and 16 lines, and the C client
#    with its default batching (8 kB datagrams, 100 ms flush, keeps its batch when the
#    agent's queue is momentarily full).
for mode in "batch 1" "batch 16" client; do
  for tr in unix udp; do
    if [ $tr = unix ]; then a="--unix $tmp/g.sock"; else a="--udp 127.0.0.1:$PORT"; fi
    if [ "$mode" = client ]; then m="--client"; else m="--${mode% *} ${mode#* }"; fi
    start_recv $a --idle-ms 700
    s=$(taskset -c 1 "$BIN" send $a --events 1000000 --rate 100000 $m)
    wait $RPID
    got=$(tail -1 "$tmp/recv.out" | field events)
    errs=$(echo "$s" | field send_errors)
    log "sustained 100k ev/s $tr $mode, 10 s: sent=1000000 sender_drops=$errs received=$got" \
        "lost=$((1000000 - got)) wall_s=$(echo "$s" | field wall_s)"
  done
done
