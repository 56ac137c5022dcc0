#!/usr/bin/env bash
# bench/sources/run.sh: CPU cost of the telemetry backends, and the Prometheus text parser
# side by side with Debian's python3-prometheus-client parser on the same text.
#
#   1. promtext vs prometheus_client.parser.text_string_to_metric_families, on the real
#      dcgm-exporter and vLLM scrapes concatenated REPEAT times (same bytes for both).
#   2. NVML backend: CPU per GPU-sample through the test libnvidia-ml.so.1 (8 simulated
#      H100s; the simulator's own cost is included, so this is an upper bound).
#   3. dcgm backend: CPU per GPU-sample per scrape of the real T4 scrape over loopback HTTP
#      (libcurl + parse + mapping; the python server's CPU is not counted).
# Usage: bench/sources/run.sh [BUILD]   (needs BUILD/libgoodput.a and the test library)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
DATA=${GOODPUT_DATA:-../shared/data}
OUT=bench/out
mkdir -p "$OUT"
PY=/usr/bin/python3
REPEAT=${REPEAT:-400}
"$PY" -c 'import prometheus_client' 2>/dev/null || {
  echo "installing python3-prometheus-client (Debian) for the comparison" >&2
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get install -y -q --no-install-recommends python3-prometheus-client >/dev/null
}
BIN=$OUT/bench_sources
cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Iinclude $(pkg-config --cflags libxml-2.0) \
  bench/sources/bench_sources.c "$BUILD/libgoodput.a" -o "$BIN" \
  $(pkg-config --libs sqlite3 jansson yajl libmicrohttpd libcurl zlib libxml-2.0 libpq) -ldl -lpthread -lm
log() { echo "$*" | tee -a "$OUT/sources.txt"; }
: >"$OUT/sources.txt"
log "# sources bench $(date -u +%FT%TZ) on $(nproc) cores, REPEAT=$REPEAT"

for f in prom/dcgm_exporter_t4.txt prom/vllm_v0.txt; do
  c=$("$BIN" prom "$DATA/$f" "$REPEAT")
  py=$("$PY" - "$DATA/$f" "$REPEAT" <<'PY'
import sys, time, resource
from prometheus_client.parser import text_string_to_metric_families
one = open(sys.argv[1]).read()
text = (one + "\n") * int(sys.argv[2])
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
n = 0
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        n += 1
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(f"python samples={n} cpu_s={cpu:.4f} wall_s={time.perf_counter()-t0:.4f} MB_per_s={len(text.encode())/1e6/cpu:.2f}")
PY
)
  log "$f: goodput: $c"
  log "$f: prometheus_client $("$PY" -c 'import prometheus_client as p, importlib.metadata as m; print(m.version("prometheus_client"))'): $py"
  cc_s=$(echo "$c" | sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p')
  py_s=$(echo "$py" | sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p')
  log "$f: speed-up (CPU) = $(awk -v a="$py_s" -v b="$cc_s" 'BEGIN { printf "%.0fx", a / b }')"
done

LIB="$PWD/$BUILD/tests/lib/libnvidia-ml.so.1"
if [ -f "$LIB" ]; then
  log "nvml: $(GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO=examples/scenarios/demo.conf \
    GOODPUT_FAKE_NVML_SPEED=1000 "$BIN" nvml 2000 2>/dev/null)"
fi

tmp=$(mktemp -d); mkdir -p "$tmp/www"; cp "$DATA/prom/dcgm_exporter_t4.txt" "$tmp/www/metrics"
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$PY" -m http.server --bind 127.0.0.1 --directory "$tmp/www" "$port" >/dev/null 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 50); do "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/metrics')" 2>/dev/null && break; sleep 0.1; done
log "dcgm: $("$BIN" dcgm "http://127.0.0.1:$port/metrics" 300)"
