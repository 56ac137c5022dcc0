#!/usr/bin/env bash
# otlp_flood.sh: OTLP/HTTP ingest under a 10x flood and its counters in /metrics.
# Four client threads POST protobuf ExportTraceServiceRequests (512 spans each, unique
# trace ids) as fast as they can: ten times the agent's span queue (SRV_MAX_SPAN_QUEUE,
# 50,000). Checked: every span sent is counted once, as accepted or dropped with reason
# queue_full; the 503 answers the clients got equal goodput_otlp_requests_rejected{code=503};
# the store ends with exactly the accepted spans (nothing else lost); the agent's peak
# resident memory stays bounded (well below what the flood would take if queued); a
# malformed body is a 400 counted as such, bad spans inside a good document are dropped
# as malformed; `promtool check metrics` accepts the page.
# asan-skip: the decoders run under ASan in tests/unit/test_otlp.c; this measures a flood
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in curl python3 sqlite3 promtool; do command -v $t >/dev/null || { echo "$t missing (scripts/install-deps)"; exit 1; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-otlpflood-XXXXXX")
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
P=$(free_port)
"$GOODPUT" agent --source "sim:$SRC/tests/integration/otlp_workflows.conf" --db "$tmp/gp.db" \
  --speed 1 --no-socket --flush 500ms --listen "127.0.0.1:$P" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
U="http://127.0.0.1:$P"
for i in $(seq 50); do curl -sf "$U/api/v1/" >/dev/null && break; sleep 0.1; done

metric() { # NAME{labels} from a /metrics capture
  awk -v k="$1" '$1 == k { print $2 }' "$2"
}

# one malformed body (400) and one document with a span without ids (malformed span)
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary '{"resourceSpans": 7}' "$U/v1/traces")
[ "$code" = 400 ] || { echo "malformed OTLP answered $code"; exit 1; }
code=$(curl -s -o "$tmp/partial.json" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary \
  '{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"ok","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000"},{"name":"no ids","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000"}]}]}]}' "$U/v1/traces")
[ "$code" = 200 ] || { echo "partial document answered $code"; exit 1; }
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["partialSuccess"]["rejectedSpans"]==1, d' "$tmp/partial.json"

python3 - "$U/v1/traces" "$tmp/sent.json" <<'PY'
import http.client, json, struct, sys, threading, urllib.parse
url = urllib.parse.urlparse(sys.argv[1])
def varint(n):
    b = b''
    while True:
        c = n & 0x7f; n >>= 7; b += bytes([c | (0x80 if n else 0)])
        if not n: return b
def fld(num, wire, p):
    t = varint(num << 3 | wire)
    return t + varint(len(p)) + p if wire == 2 else t + p
def kv(k, v):
    return fld(1, 2, k.encode()) + fld(2, 2, fld(1, 2, v.encode()))
T = 1700000000000000000
MARK = b'\xee\xdd\xcc\xbb'
spans = b''
for i in range(512):  # 64 traces of 8 spans; the marker makes trace ids unique per request
    tid = MARK + (i // 8 + 1).to_bytes(12, 'big'); sid = (i + 1).to_bytes(8, 'big')
    s = fld(1, 2, tid) + fld(2, 2, sid) + fld(5, 2, b'chat m') + fld(6, 0, varint(3))
    s += fld(7, 1, struct.pack('<Q', T + i)) + fld(8, 1, struct.pack('<Q', T + i + 10**7))
    s += fld(9, 2, kv('gen_ai.operation.name', 'chat'))
    spans += fld(2, 2, s)
doc = fld(1, 2, fld(1, 2, fld(1, 2, kv('service.name', 'flood'))) + fld(2, 2, spans))
N, THREADS = 1000, 4  # 512,000 spans: ten times the 50,000-span queue
codes = {}; lock = threading.Lock()
def worker(k):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    for r in range(k, N, THREADS):
        body = doc.replace(MARK, struct.pack('>I', 0x10000000 + r))
        c.request('POST', url.path, body, {'Content-Type': 'application/x-protobuf'})
        resp = c.getresponse(); resp.read()
        with lock: codes[resp.status] = codes.get(resp.status, 0) + 1
th = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
[t.start() for t in th]; [t.join() for t in th]
json.dump({"spans": N * 512, "codes": codes}, open(sys.argv[2], 'w'))
print("otlp_flood: sent", N * 512, "spans, answers", codes)
PY

# the agent stores what it accepted: wait until the queue is empty and the store holds every
# accepted span (the pump takes the queue whole, then commits; up to 60 s on a loaded host)
for i in $(seq 600); do
  curl -sf "$U/metrics" >"$tmp/m.txt"
  if [ "$(metric goodput_otlp_span_queue_spans "$tmp/m.txt")" = 0 ] &&
     [ "$(sqlite3 "$tmp/gp.db" 'select count(*) from spans' 2>/dev/null || echo 0)" = "$(metric goodput_otlp_spans_accepted_total "$tmp/m.txt")" ]; then
    break
  fi
  sleep 0.1
done
curl -sf "$U/metrics" >"$tmp/m.txt"
promtool check metrics <"$tmp/m.txt" || { echo "promtool check metrics failed"; exit 1; }
stored=$(sqlite3 "$tmp/gp.db" 'select count(*) from spans')
python3 - "$tmp/sent.json" "$tmp/m.txt" "$stored" <<'PY'
import json, sys
sent = json.load(open(sys.argv[1])); stored = int(sys.argv[3])
m = {}
for l in open(sys.argv[2]):
    if l.startswith('#') or not l.strip(): continue
    k, v = l.rsplit(' ', 1); m[k] = float(v)
acc = m['goodput_otlp_spans_accepted_total']
full = m['goodput_otlp_spans_dropped_total{reason="queue_full"}']
bad = m['goodput_otlp_spans_dropped_total{reason="malformed"}']
oom = m['goodput_otlp_spans_dropped_total{reason="out_of_memory"}']
rec = m['goodput_otlp_spans_received_total']
codes = {int(k): v for k, v in sent["codes"].items()}
# the flood plus the partial document's two spans
assert rec == sent["spans"] + 2, (rec, sent["spans"])
assert rec == acc + full + bad + oom, (rec, acc, full, bad, oom)
assert bad == 1 and oom == 0, (bad, oom)
assert full > 0, "a 10x flood dropped nothing: the queue is not bounded"
assert full == codes.get(503, 0) * 512, (full, codes)
assert m['goodput_otlp_requests_rejected_total{code="503"}'] == codes.get(503, 0), codes
assert m['goodput_otlp_requests_rejected_total{code="400"}'] == 1
assert codes.get(200, 0) + codes.get(503, 0) == 1000, codes
assert stored == acc, ("stored", stored, "accepted", acc)
peak = m['goodput_agent_peak_resident_memory_bytes']
# 512k spans queued would take > 200 MiB (gp_span is ~430 bytes); the queue holds 50k
assert peak < 150 * 2**20, ("peak RSS", peak / 2**20)
print("otlp_flood: accepted %d, dropped (queue full) %d in %d 503s, stored %d, peak RSS %.0f MiB" %
      (acc, full, codes.get(503, 0), stored, peak / 2**20))
PY
echo "otlp_flood: ok"
