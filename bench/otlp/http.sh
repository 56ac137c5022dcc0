#!/usr/bin/env bash
# bench/otlp/http.sh: OTLP/HTTP ingest end to end through `goodput agent --listen`, the
# agent pinned to one core (taskset -c 0): POST /v1/traces (libmicrohttpd, decode on the
# server thread, the bounded queue) and the agent's pump storing the spans in SQLite. A
# Python client on the other core sends N protobuf (or JSON) requests of 512 spans with
# unique trace ids, retrying a 503 after 5 ms as OTLP exporters do. Reported: spans per
# wall second until the last span is stored, and spans per CPU-second of the agent process
# (goodput_agent_cpu_seconds_total, which also covers the simulated GPU's sampling).
# Usage: bench/otlp/http.sh [N_REQUESTS=400] [pb|json]. Not a test.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-400}; ENC=${2:-pb}
make -s build/goodput
tmp=$(mktemp -d /tmp/gp-otlp-http-XXXXXX)
apid=
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
P=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 0 build/goodput agent --source "sim:tests/integration/otlp_workflows.conf" --db "$tmp/gp.db" \
  --speed 1 --no-socket --flush 250ms --listen "127.0.0.1:$P" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
U="http://127.0.0.1:$P"
for i in $(seq 50); do curl -sf "$U/api/v1/" >/dev/null && break; sleep 0.1; done
sleep 1
cpu() { curl -sf "$U/metrics" | awk '$1 == "goodput_agent_cpu_seconds_total" { print $2 }'; }
c0=$(cpu)
taskset -c 1 python3 - "$U/v1/traces" "$N" "$ENC" "$tmp/db" <<'PY'
import http.client, json, struct, sys, time, urllib.parse
url = urllib.parse.urlparse(sys.argv[1]); N = int(sys.argv[2]); enc = sys.argv[3]
def varint(n):
    b = b''
    while True:
        c = n & 0x7f; n >>= 7; b += bytes([c | (0x80 if n else 0)])
        if not n: return b
def fld(num, wire, p):
    t = varint(num << 3 | wire)
    return t + varint(len(p)) + p if wire == 2 else t + p
def kv(k, v):
    a = fld(1, 2, v.encode()) if isinstance(v, str) else fld(3, 0, varint(v))
    return fld(1, 2, k.encode()) + fld(2, 2, a)
T = time.time_ns() - 10**9
MARK = 'eeddccbb'
attrs = [('gen_ai.operation.name', 'chat'), ('gen_ai.request.model', 'llama-8b'),
         ('gen_ai.usage.input_tokens', 500), ('gen_ai.usage.output_tokens', 80)]
pb, js = b'', []
for i in range(512):  # 64 traces of 8 spans, GenAI attributes (as bench/otlp/run.sh)
    tid = bytes.fromhex(MARK) + (i // 8 + 1).to_bytes(12, 'big'); sid = (i + 1).to_bytes(8, 'big')
    par = ((i // 8) * 8 + 1).to_bytes(8, 'big') if i % 8 else None
    s = fld(1, 2, tid) + fld(2, 2, sid) + (fld(4, 2, par) if par else b'') + fld(5, 2, b'chat llama-8b')
    s += fld(6, 0, varint(3)) + fld(7, 1, struct.pack('<Q', T + i * 1000)) + fld(8, 1, struct.pack('<Q', T + i * 1000 + 50000000))
    for k, v in attrs: s += fld(9, 2, kv(k, v))
    pb += fld(2, 2, s)
    js.append({"traceId": tid.hex(), "spanId": sid.hex(), "parentSpanId": par.hex() if par else "",
        "name": "chat llama-8b", "kind": 3, "startTimeUnixNano": str(T + i * 1000),
        "endTimeUnixNano": str(T + i * 1000 + 50000000),
        "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}} for k, v in attrs]})
res = fld(1, 2, fld(1, 2, kv('service.name', 'llm')) + fld(1, 2, kv('host.name', 'n1')))
if enc == 'pb':
    doc, ctype, mark = fld(1, 2, res + fld(2, 2, pb)), 'application/x-protobuf', bytes.fromhex(MARK)
else:
    doc = json.dumps({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "llm"}}]},
        "scopeSpans": [{"spans": js}]}]}).encode()
    ctype, mark = 'application/json', MARK.encode()
bodies = [doc.replace(mark, (struct.pack('>I', 0x10000000 + r) if enc == 'pb' else b'%08x' % (0x10000000 + r))) for r in range(N)]
c = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
retries = 0; t0 = time.monotonic(); open(sys.argv[4], "w").write(repr(time.time()))
for b in bodies:
    while True:
        c.request('POST', url.path, b, {'Content-Type': ctype})
        r = c.getresponse(); r.read()
        if r.status == 200: break
        assert r.status == 503, r.status
        retries += 1; time.sleep(0.005)
print("client: %d requests x 512 spans (%s, %d bytes each) sent in %.2f s, %d retries after 503" %
      (N, enc, len(doc), time.monotonic() - t0, retries))
PY
want=$((N * 512))
for i in $(seq 600); do
  got=$(sqlite3 "$tmp/gp.db" 'select count(*) from spans' 2>/dev/null || echo 0)
  [ "$got" = "$want" ] && break
  sleep 0.05
done
t_end=$(python3 -c 'import time; print(repr(time.time()))')
c1=$(cpu)
python3 - "$want" "$got" "$c0" "$c1" "$(cat "$tmp/db")" "$t_end" <<'PY'
import sys
want, got = int(sys.argv[1]), int(sys.argv[2])
c0, c1, t0, t1 = (float(x) for x in sys.argv[3:7])
print("stored %d of %d spans in %.2f s wall (first POST to last span stored, 50 ms polling): %.0f spans/s" %
      (got, want, t1 - t0, got / (t1 - t0)))
print("agent CPU %.2f s -> %.0f spans per agent CPU-second (sampling included)" % (c1 - c0, got / (c1 - c0)))
PY
