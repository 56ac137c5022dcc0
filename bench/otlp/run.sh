#!/usr/bin/env bash
# bench/otlp/run.sh: OTLP ingest spans/s on one core (see otlp_ingest.c). Makes a 512-span
# document in both encodings with python3, builds against build/libgoodput.a.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=bench/out/otlp; mkdir -p "$out"
python3 - "$out" <<'PY'
import json, struct, sys
out = sys.argv[1]
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
T = 1700000000000000000
spans_pb, spans_js = b'', []
for i in range(512):
    tid = (i // 8 + 1).to_bytes(16, 'big'); sid = (i + 1).to_bytes(8, 'big')
    par = ((i // 8) * 8 + 1).to_bytes(8, 'big') if i % 8 else None
    attrs = [('gen_ai.operation.name', 'chat'), ('gen_ai.request.model', 'llama-8b'),
             ('gen_ai.usage.input_tokens', 500), ('gen_ai.usage.output_tokens', 80)]
    s = fld(1, 2, tid) + fld(2, 2, sid) + (fld(4, 2, par) if par else b'') + fld(5, 2, b'chat llama-8b')
    s += fld(6, 0, varint(3)) + fld(7, 1, struct.pack('<Q', T + i * 1000)) + fld(8, 1, struct.pack('<Q', T + i * 1000 + 50000000))
    for k, v in attrs: s += fld(9, 2, kv(k, v))
    spans_pb += fld(2, 2, s)
    spans_js.append({"traceId": tid.hex(), "spanId": sid.hex(), "parentSpanId": par.hex() if par else "",
        "name": "chat llama-8b", "kind": 3, "startTimeUnixNano": str(T + i * 1000),
        "endTimeUnixNano": str(T + i * 1000 + 50000000),
        "attributes": [{"key": k, "value": {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}} for k, v in attrs]})
res = fld(1, 2, fld(1, 2, kv('service.name', 'llm')) + fld(1, 2, kv('host.name', 'n1')))
open(out + '/doc.pb', 'wb').write(fld(1, 2, res + fld(2, 2, spans_pb)))
json.dump({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "llm"}}]},
    "scopeSpans": [{"spans": spans_js}]}]}, open(out + '/doc.json', 'w'))
PY
make -s build/libgoodput.a
cc -O2 -Iinclude -Isrc -Itests/unit -D_GNU_SOURCE -o "$out/otlp_ingest" bench/otlp/otlp_ingest.c build/libgoodput.a \
  -lsqlite3 -ljansson -lyajl -lz -ldl -lpthread -lm
taskset -c 0 "$out/otlp_ingest" "$out/doc.pb" "$out/doc.json"
