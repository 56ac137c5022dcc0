#!/usr/bin/env bash
# The agent with each real-telemetry backend, end to end through the binary:
#  - nvml through the test libnvidia-ml.so.1 (simulator-backed): 8 GPUs stored, a GPU lost
#    and back said once each, the agent keeps running; no driver -> one clear line, exit != 0
#  - dcgm against python3 -m http.server serving the real dcgm-exporter scrape
#  - smi replaying a real nvidia-smi capture to its end
#  - bad source specs -> one line naming the source
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
GOODPUT=${GOODPUT:-build/goodput}
BUILD=${BUILD:-build}
DATA=${GOODPUT_DATA:-../shared/data}
LIB="$PWD/$BUILD/tests/lib/libnvidia-ml.so.1"
tmp=$(mktemp -d)
srv=""
cleanup() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$GOODPUT" ] || { echo "skip: $GOODPUT not built"; exit 77; }
[ -f "$LIB" ] || { echo "skip: $LIB not built"; exit 77; }
command -v sqlite3 >/dev/null || { echo "skip: sqlite3 CLI missing"; exit 77; }

one_line_error() { # pattern, command...
  local pat=$1; shift
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -ne 0 ] || fail "$* succeeded"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: expected one error line, got: $(cat "$tmp/err")"
  grep -q -- "$pat" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$pat'"
}

# --- nvml: no driver
GOODPUT_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 one_line_error "nvml: cannot load" \
  "$GOODPUT" agent --source nvml --db "$tmp/x.db" --no-socket

# --- nvml through the test library: 60 simulated seconds per wall second, GPU 1 lost
# from 20 to 50 simulated seconds (about 0.3 to 0.8 s into the run).
# The simulated node shows its processes in a fake /proc the agent is pointed at.
GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO=examples/scenarios/demo.conf \
GOODPUT_FAKE_NVML_SPEED=60 GOODPUT_FAKE_NVML_LOST=1:20:50 GOODPUT_FAKE_NVML_XID=4:10:79 \
GOODPUT_SIM_NODE_ROOT="$tmp/node" \
  "$GOODPUT" agent --source nvml --db "$tmp/nvml.db" --no-socket --interval 100ms \
  --duration 2s --quiet --proc-root "$tmp/node/proc" --jobmap-dir "$tmp/node/jobmap" \
  2>"$tmp/nvml.err" || fail "agent --source nvml: $(cat "$tmp/nvml.err")"
# owners from the node's processes and job map: the demo's jobs running in its first
# 2 simulated minutes, nothing unattributed
owners=$(sqlite3 "$tmp/nvml.db" "select group_concat(id, ' ') from (select id from jobs order by id)")
for j in llm-decode notebook train-allreduce train-healthy train-late train-starved; do
  case " $owners " in *" $j "*) ;; *) fail "nvml: job $j not attributed (jobs: $owners)" ;; esac
done
case " $owners " in *" unattributed "*) fail "nvml: unattributed processes: $(cat "$tmp/nvml.err")" ;; esac
[ "$(sqlite3 "$tmp/nvml.db" "select count(*) from proc_samples where job_id is null or job_id = ''")" -eq 0 ] \
  || fail "nvml: process rows without an owner"
[ "$(grep -c 'is lost' "$tmp/nvml.err")" -eq 1 ] || fail "lost not said once: $(cat "$tmp/nvml.err")"
[ "$(grep -c 'answers again' "$tmp/nvml.err")" -eq 1 ] || fail "return not said once: $(cat "$tmp/nvml.err")"
ndev=$(sqlite3 "$tmp/nvml.db" "select count(*) from devices")
[ "$ndev" -eq 8 ] || fail "nvml: $ndev devices stored, expected 8"
lost_uuid=$(sqlite3 "$tmp/nvml.db" "select uuid from devices where idx = 1")
n1=$(sqlite3 "$tmp/nvml.db" "select count(*) from samples where uuid = '$lost_uuid'")
n0=$(sqlite3 "$tmp/nvml.db" "select count(*) from samples where uuid = (select uuid from devices where idx = 0)")
[ "$n1" -gt 0 ] && [ "$n1" -lt "$n0" ] || fail "nvml: lost GPU has $n1 samples vs $n0"
# every sample has power, an energy counter that never decreases, and GPM ratios in [0,1]
bad=$(sqlite3 "$tmp/nvml.db" "select count(*) from samples where power_w is null or energy_mj is null
  or sm_active < 0 or sm_active > 1 or gpu_util < 0 or gpu_util > 1")
[ "$bad" -eq 0 ] || fail "nvml: $bad samples lack power/energy or have ratios outside [0,1]"
dec=$(sqlite3 "$tmp/nvml.db" "select count(*) from samples a join samples b on a.uuid = b.uuid
  and b.ts_ns = (select min(ts_ns) from samples c where c.uuid = a.uuid and c.ts_ns > a.ts_ns)
  where b.energy_mj < a.energy_mj")
[ "$dec" -eq 0 ] || fail "nvml: energy counter decreased $dec times"
xid=$(sqlite3 "$tmp/nvml.db" "select count(*) from samples where xid = 79")
[ "$xid" -eq 1 ] || fail "nvml: XID 79 stored $xid times, expected once"
procs=$(sqlite3 "$tmp/nvml.db" "select count(*) from proc_samples where mem_bytes > 0")
[ "$procs" -gt 0 ] || fail "nvml: no per-process rows"

# --- dcgm against a real HTTP server serving the real scrape
mkdir -p "$tmp/www"
cp "$DATA/prom/dcgm_exporter_t4.txt" "$tmp/www/metrics"
port=$(free_port)
/usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$port" >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/metrics')" 2>/dev/null && break; sleep 0.1; done
"$GOODPUT" agent --source "dcgm=http://127.0.0.1:$port/metrics" --db "$tmp/dcgm.db" --no-socket \
  --interval 200ms --duration 1s --quiet 2>"$tmp/dcgm.err" || fail "agent dcgm: $(cat "$tmp/dcgm.err")"
[ "$(sqlite3 "$tmp/dcgm.db" "select count(*) from devices")" -eq 3 ] || fail "dcgm: devices"
e=$(sqlite3 "$tmp/dcgm.db" "select max(energy_mj) from samples where uuid = 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e'")
[ "$e" = 128996013 ] || fail "dcgm: energy $e"
one_line_error "dcgm: http://127.0.0.1:$port/nothing: HTTP status 404" \
  "$GOODPUT" agent --source "dcgm=http://127.0.0.1:$port/nothing" --db "$tmp/x.db" --no-socket
# the exporter goes away mid-run: the agent keeps running to --duration and says so once
"$GOODPUT" agent --source "dcgm=http://127.0.0.1:$port/metrics" --db "$tmp/dcgm2.db" --no-socket \
  --interval 100ms --duration 1500ms --quiet 2>"$tmp/dcgm2.err" &
ag=$!
sleep 0.5
kill "$srv"; wait "$srv" 2>/dev/null || true; srv=""
wait "$ag" || fail "agent stopped when the exporter went away: $(cat "$tmp/dcgm2.err")"
[ "$(grep -c "dcgm: http://127.0.0.1:$port/metrics" "$tmp/dcgm2.err")" -eq 1 ] ||
  fail "exporter down not said once: $(cat "$tmp/dcgm2.err")"
one_line_error "dcgm: http://127.0.0.1:$port/metrics: " \
  "$GOODPUT" agent --source "dcgm=http://127.0.0.1:$port/metrics" --db "$tmp/x.db" --no-socket
# down for a while, then back: the outage said once, its end once, samples stored after
/usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$port" >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do /usr/bin/python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/metrics')" 2>/dev/null && break; sleep 0.1; done
"$GOODPUT" agent --source "dcgm=http://127.0.0.1:$port/metrics" --db "$tmp/dcgm3.db" --no-socket \
  --interval 100ms --duration 3s --quiet 2>"$tmp/dcgm3.err" &
ag=$!
sleep 0.5
kill "$srv"; wait "$srv" 2>/dev/null || true
sleep 0.7
/usr/bin/python3 -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$port" >/dev/null 2>&1 &
srv=$!
wait "$ag" || fail "agent stopped while the exporter was down: $(cat "$tmp/dcgm3.err")"
kill "$srv"; wait "$srv" 2>/dev/null || true; srv=""
[ "$(grep -c "dcgm: http://127.0.0.1:$port/metrics" "$tmp/dcgm3.err")" -eq 1 ] ||
  fail "outage not said once: $(cat "$tmp/dcgm3.err")"
[ "$(grep -c 'source dcgm answers again' "$tmp/dcgm3.err")" -eq 1 ] ||
  fail "return not said once: $(cat "$tmp/dcgm3.err")"
back=$(sqlite3 "$tmp/dcgm3.db" "select count(*) from samples where ts_ns > (select min(ts_ns) from samples) + 1500000000")
[ "$back" -gt 0 ] || fail "no samples after the return"

# --- smi replay of a real capture, to its end
cap="$DATA/smi/nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
timeout 60 "$GOODPUT" agent --source "smi:$cap" --db "$tmp/smi.db" --no-socket --speed 0 --quiet \
  2>"$tmp/smi.err" || fail "agent smi: $(cat "$tmp/smi.err")"
[ "$(sqlite3 "$tmp/smi.db" "select count(*) from devices")" -eq 1 ] || fail "smi: devices"
[ "$(sqlite3 "$tmp/smi.db" "select count(*) from samples")" -ge 2 ] || fail "smi: samples"
sqlite3 "$tmp/smi.db" "select name from devices" | grep -q "H100" || fail "smi: name"

# --- bad specs
one_line_error "smi: /nonexistent/log.csv: cannot open" \
  "$GOODPUT" agent --source smi:/nonexistent/log.csv --db "$tmp/x.db" --no-socket
# a log whose only GPU row is bad: no GPU rows (a bad row among good ones is a warning:
# tests/integration/smi_replay.sh)
printf 'index, uuid, utilization.gpu [%%]\n0, GPU-1\n' >"$tmp/bad.csv"
one_line_error "bad.csv: no GPU rows .*bad.csv:2: expected 3 comma-separated fields" \
  "$GOODPUT" agent --source "smi:$tmp/bad.csv" --db "$tmp/x.db" --no-socket
one_line_error "expected dcgm=URL" "$GOODPUT" agent --source dcgm=ftp://x --db "$tmp/x.db" --no-socket
echo "sources_agent: ok"
