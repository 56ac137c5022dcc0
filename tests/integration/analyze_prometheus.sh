#!/usr/bin/env bash
# goodput analyze against Debian's real Prometheus (issue 20): TSDB blocks built with
# promtool from generated OpenMetrics of a small Kubernetes GPU cluster (dcgm-exporter,
# kube-state-metrics, vLLM), checked against the generator's truth; bad input (server down,
# 4xx, 5xx, conflicting labels) fails with one line; a query over the server's sample limit
# is split and retried; the shared real captures backfilled the same way.
# Size: 2 nodes x 4 GPUs over 2 h at 30 s (GEN_ARGS to change; see docs/analyze.md).
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
: "${GOODPUT:?}" "${GOODPUT_SRC:?}"
for t in prometheus promtool python3 curl; do
    command -v "$t" >/dev/null || { echo "FAIL: $t missing (scripts/install-deps installs it)"; exit 1; }
done
D=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
G="$GOODPUT_SRC/tests/integration/analyze"
T0=1717200000
HOURS=${GEN_HOURS:-2}
T1=$((T0 + HOURS * 3600))
fail() { echo "FAIL: $*"; exit 1; }
start_prom() { # DATA_DIR PORT [extra flags]
    local data=$1 port=$2; shift 2
    printf 'global:\n  scrape_interval: 30s\n' > "$D/prom.yml"
    prometheus --config.file="$D/prom.yml" --storage.tsdb.path="$data" \
        --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" "$@" \
        > "$data.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && return 0
        sleep 0.2
    done
    cat "$data.log"; fail "prometheus did not become ready on port $port"
}

# 1. the generated cluster, plus (a day later) one GPU claimed by two hosts
python3 "$G/gen_cluster.py" "$D/c.om" "$D/truth.json" --nodes "${GEN_NODES:-2}" \
    --gpus "${GEN_GPUS:-4}" --hours "$HOURS" --t0 $T0
CT=$((T0 + 86400))
{
    echo "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"
    for h in nodeA nodeB; do
        for k in $(seq 0 9); do
            echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-dup\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"$h\"} 50 $((CT + k * 30))"
        done
    done
    echo "# EOF"
} > "$D/conflict.om"
# (three days later) XIDs 79 and 48 on one GPU among zeros: goodput asks only for the
# steps with an error (`> 0`); the store must hold exactly those, the zeros as no XID
XT=$((T0 + 3 * 86400))
{
    echo "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"
    for k in $(seq 0 19); do
        echo "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-xid\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"nodeX\"} 50 $((XT + k * 30))"
    done
    echo "# TYPE DCGM_FI_DEV_XID_ERRORS gauge"
    for k in $(seq 0 19); do
        v=0; [ "$k" = 5 ] && v=79; [ "$k" = 12 ] && v=48
        echo "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-xid\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"nodeX\"} $v $((XT + k * 30))"
    done
    echo "# EOF"
} > "$D/xid.om"
promtool tsdb create-blocks-from openmetrics "$D/c.om" "$D/data" >/dev/null
promtool tsdb create-blocks-from openmetrics "$D/conflict.om" "$D/data" >/dev/null
promtool tsdb create-blocks-from openmetrics "$D/xid.om" "$D/data" >/dev/null
# (five and six days later) long and short pods for the pruned temporary store (1b)
LT=$((T0 + 5 * 86400)) LL=$((T0 + 6 * 86400))
python3 "$G/gen_long.py" "$D/long.om" "$D/long.json" --t0 $LT
python3 "$G/gen_long.py" "$D/late.om" "$D/late.json" --t0 $LL --late
promtool tsdb create-blocks-from openmetrics "$D/long.om" "$D/data" >/dev/null
promtool tsdb create-blocks-from openmetrics "$D/late.om" "$D/data" >/dev/null
cp -r "$D/data" "$D/data_small"
P=$(free_port)
start_prom "$D/data" "$P"
URL="http://127.0.0.1:$P"

"$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json --db "$D/kept.db" > "$D/r.json" 2> "$D/r.err" \
    || { cat "$D/r.err"; fail "analyze exited $?"; }
python3 - "$D/r.json" "$D/truth.json" <<'PY'
import json, sys
r, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
jobs = {j["id"]: j for j in r["jobs"]}
bad = []
for pid, tp in t["pods"].items():
    j = jobs.get(pid)
    if j is None:
        bad.append("%s missing from the report" % pid); continue
    a, ta = j["allocated_gpu_h"], tp["allocated_gpu_h"]
    if abs(a - ta) > 0.01 * ta:
        bad.append("%s allocated %.4f GPU-h, truth %.4f" % (pid, a, ta))
    if j["gpus"] != tp["gpus"]:
        bad.append("%s gpus %s, truth %d" % (pid, j["gpus"], tp["gpus"]))
    if tp["goodput"] is None:
        if j["goodput"] is not None:
            bad.append("%s goodput %s, truth unknown (no progress events)" % (pid, j["goodput"]))
    elif j["goodput"] is None or abs(j["goodput"] - tp["goodput"]) > 0.02:
        bad.append("%s goodput %s, truth %.4f" % (pid, j["goodput"], tp["goodput"]))
    q = j["queue_wait_s"]
    if q is None or abs(q - tp["queue_wait_s"]) > t["step_s"]:
        bad.append("%s queue wait %s s, truth %d s" % (pid, q, tp["queue_wait_s"]))
    b = j["gpu_s_by_bucket"]
    if "idle_share" in tp and abs(b["idle_allocated"] / j["allocated_gpu_s"] - tp["idle_share"]) > 0.02:
        bad.append("%s idle share %.4f, truth %.4f" % (pid, b["idle_allocated"] / j["allocated_gpu_s"], tp["idle_share"]))
    if "not_ready_share" in tp and abs(b["not_ready"] / j["allocated_gpu_s"] - 1) > 0.02:
        bad.append("%s not_ready share %.4f, truth 1" % (pid, b["not_ready"] / j["allocated_gpu_s"]))
for pid, cls in t["findings"].items():
    want = cls if isinstance(cls, list) else [cls]
    got = [f["class"] for f in r["findings"] if f.get("job") == pid]
    if not set(want) & set(got):
        bad.append("%s: expected a %s finding, got %s" % (pid, " or ".join(want), got))
if not any(f["class"] == "scheduling_gap" for f in r["findings"]):
    bad.append("no scheduling_gap for the pod pending 40 min while GPUs idled")
s = r["source"]
if s["gpu_source"] != "dcgm-exporter" or not s["kube_state_metrics"] or not s["serving_metrics"]:
    bad.append("source header wrong: %s" % s)
if s["notes"]:
    bad.append("unexpected degradation notes on a complete cluster: %s" % s["notes"])
if bad:
    print("\n".join(bad)); sys.exit(1)
print("truth matched for %d pods" % len(t["pods"]))
PY
# --db keeps the store: goodput report reads the same numbers
"$GOODPUT" report --db "$D/kept.db" --json > "$D/kept.json"
python3 - "$D/r.json" "$D/kept.json" <<'PY'
import json, sys
a = {j["id"]: j["allocated_gpu_h"] for j in json.load(open(sys.argv[1]))["jobs"]}
b = {j["id"]: j["allocated_gpu_h"] for j in json.load(open(sys.argv[2]))["jobs"]}
assert a == b, (a, b)
PY
# raw samples (one a step here) against the server's per-step functions: same report
GOODPUT_ANALYZE_RAW=0 "$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json > "$D/perstep.json"
python3 - "$D/r.json" "$D/perstep.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["source"]["raw_samples"] is True and b["source"]["raw_samples"] is False, (a["source"], b["source"])
key = lambda r: {j["id"]: (round(j["allocated_gpu_h"], 9), j["goodput"], round(j["busy_gpu_h"], 9), j["energy_kwh"]) for j in r["jobs"]}
assert key(a) == key(b), (key(a), key(b))
assert [f["class"] for f in a["findings"]] == [f["class"] for f in b["findings"]]
PY
# chunked reading (a grid of 100 cells: a dozen steps a chunk, owner runs, counters and
# serving windows carried across ~20 chunks) gives the same report as one chunk
GOODPUT_ANALYZE_CELLS=100 "$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json > "$D/chunked.json"
python3 - "$D/r.json" "$D/chunked.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert b["source"]["chunks"] > 10 and a["source"]["chunks"] == 1, (a["source"], b["source"])
key = lambda r: {j["id"]: (round(j["allocated_gpu_h"], 9), j["goodput"], round(j["busy_gpu_h"], 9), j["energy_kwh"]) for j in r["jobs"]}
assert key(a) == key(b), (key(a), key(b))
PY
# the writer thread (chunk k's samples stored while chunk k + 1 is read) stores the same
# rows as storing each chunk before reading the next: over ~20 chunks, the same report and
# the same store, table by table
GOODPUT_ANALYZE_CELLS=100 "$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json \
    --db "$D/thr.db" > "$D/thr.json"
GOODPUT_ANALYZE_THREADS=0 GOODPUT_ANALYZE_CELLS=100 "$GOODPUT" analyze --prometheus "$URL" \
    --from $T0 --to $T1 --json --db "$D/nothr.db" > "$D/nothr.json"
python3 - "$D/thr" "$D/nothr" <<'PY'
import json, sqlite3, sys
a, b = (json.load(open(p + ".json")) for p in sys.argv[1:])
assert a["source"]["chunks"] > 10, a["source"]
for r in (a, b):
    r.pop("db")
assert a == b, "report differs without the writer thread"
ca, cb = (sqlite3.connect(p + ".db") for p in sys.argv[1:])
tables = [t for (t,) in ca.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
assert "samples" in tables and "rollup_1m" in tables, tables
rows = 0
for t in tables:
    ra, rb = (sorted(c.execute("SELECT * FROM \"%s\"" % t).fetchall(), key=repr) for c in (ca, cb))
    assert ra == rb, "table %s differs without the writer thread" % t
    rows += len(ra)
assert rows > 1000, rows
print("writer thread: same report and store (%d rows)" % rows)
PY
# the report's jobs on 1 and on 2 threads (store/read_pool.h; --threads, and
# GOODPUT_REPORT_THREADS overriding it): the same report, byte for byte, text and JSON,
# from analyze's temporary store and from `goodput report` on the kept one
"$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json --threads 1 > "$D/th1.json"
GOODPUT_REPORT_THREADS=2 "$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json \
    --threads 1 > "$D/th2.json"
cmp "$D/th1.json" "$D/th2.json" || fail "analyze --json differs on 2 threads"
"$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --threads 1 > "$D/th1.txt"
"$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --threads 2 > "$D/th2.txt"
cmp "$D/th1.txt" "$D/th2.txt" || fail "analyze text differs on 2 threads"
for fmt in "" --json; do
    "$GOODPUT" report --db "$D/kept.db" $fmt > "$D/rep1"
    "$GOODPUT" report --db "$D/kept.db" $fmt --threads 2 > "$D/rep2"
    cmp "$D/rep1" "$D/rep2" || fail "report $fmt differs on 2 threads"
done
# answers read by hand (promql_client.c fast_matrix) and by yajl's events: the same bytes
# (the cluster's range, raw and per-step queries, kube-state-metrics, vLLM; the long pods)
GOODPUT_ANALYZE_YAJL=1 "$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --json \
    --threads 1 > "$D/yajl.json"
cmp "$D/th1.json" "$D/yajl.json" || fail "analyze differs when answers are read by yajl"
GOODPUT_ANALYZE_RAW=0 GOODPUT_ANALYZE_YAJL=1 "$GOODPUT" analyze --prometheus "$URL" --from $T0 \
    --to $T1 --json > "$D/yajl_perstep.json"
cmp "$D/perstep.json" "$D/yajl_perstep.json" || fail "per-step answers differ when read by yajl"
for y in 0 1; do
    GOODPUT_ANALYZE_YAJL=$y "$GOODPUT" analyze --prometheus "$URL" --from $LT --to $((LT + 12 * 3600 - 30)) \
        --json > "$D/long_yajl$y.json"
done
cmp "$D/long_yajl0.json" "$D/long_yajl1.json" || fail "the long pods differ when answers are read by yajl"
python3 - "$D/th1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["jobs"]) > 2 and len(r["findings"]) > 2, (len(r["jobs"]), len(r["findings"]))
print("threads: same report on 1 and 2 threads (%d jobs, %d findings)" % (len(r["jobs"]), len(r["findings"])))
PY
# 1b. the temporary store keeps only the raw rows the text and JSON reports read
# (prom_map.h prune_raw): the same bytes as with every raw row (GOODPUT_ANALYZE_PRUNE=0),
# text and JSON, in one chunk and in 15-minute chunks (rows held across chunks), with and
# without the writer thread; exactly the rows of the rule dropped (gen_long.py: allocations
# of 5 h 59, 6 h 01, 7 h 09 and 7 h 11 min, a job sharing a GPU, a pod right after an
# ended one, a two-GPU job, a pod that comes back after 10 minutes, a free GPU); a kept
# --db keeps every raw row; a job pruned that shares its GPU later is read again unpruned
read -r LDROP LSAMP < <(python3 -c "import json; e=json.load(open('$D/long.json')); print(e['dropped'], e['samples'])")
[ "$LDROP" -gt 1000 ] || fail "gen_long.py plants too few prunable rows ($LDROP)"
LTO=$((LT + 12 * 3600 - 30))
for fmt in --json --wide; do
    for env in "" GOODPUT_ANALYZE_CELLS=600 "GOODPUT_ANALYZE_CELLS=600 GOODPUT_ANALYZE_THREADS=0"; do
        env $env GOODPUT_ANALYZE_PRUNE=0 "$GOODPUT" analyze --prometheus "$URL" --from $LT --to $LTO \
            $fmt > "$D/full.out"
        env $env GOODPUT_ANALYZE_PROFILE=1 "$GOODPUT" analyze --prometheus "$URL" --from $LT \
            --to $LTO $fmt > "$D/pruned.out" 2> "$D/pruned.err" || { cat "$D/pruned.err"; fail "pruned analyze ($env)"; }
        grep -q "raw rows $((LSAMP - LDROP)) of $LSAMP samples stored\$" "$D/pruned.err" \
            || { cat "$D/pruned.err"; fail "pruned store ($env): expected $((LSAMP - LDROP)) of $LSAMP raw rows"; }
        cmp "$D/full.out" "$D/pruned.out" || fail "analyze $fmt differs with the pruned store ($env)"
    done
done
python3 - "$D/full.out" "$D/long.json" <<'PY'
import sys
t = open(sys.argv[1]).read()
for pod in ("long-a", "short-a", "six-a", "edge-b", "sharer-a", "ended-a", "after-a", "pair-a", "gap-a"):
    assert "ml/" + pod in t, pod
PY
GOODPUT_ANALYZE_PROFILE=1 "$GOODPUT" analyze --prometheus "$URL" --from $LT --to $LTO --json \
    --db "$D/long.db" > /dev/null 2> "$D/long.err"
grep -q "raw rows $LSAMP of $LSAMP samples stored\$" "$D/long.err" || { cat "$D/long.err"; fail "a kept --db lacks raw rows"; }
LLTO=$((LL + 10 * 3600 - 30))
read -r LLDROP LLSAMP < <(python3 -c "import json; e=json.load(open('$D/late.json')); print(e['dropped'], e['samples'])")
# (in 15-minute chunks: the rows were dropped before the sharing was read; in one chunk it
# is known before any row is stored, and only the job alone on its GPU is pruned)
for env in GOODPUT_ANALYZE_CELLS=600 GOODPUT_ANALYZE_CELLS=0; do
    env $env GOODPUT_ANALYZE_PRUNE=0 "$GOODPUT" analyze --prometheus "$URL" --from $LL --to $LLTO \
        --json > "$D/late_full.json"
    env $env GOODPUT_ANALYZE_PROFILE=1 "$GOODPUT" analyze --prometheus "$URL" --from $LL \
        --to $LLTO --json > "$D/late.json.out" 2> "$D/late.err"
    if [ $env = GOODPUT_ANALYZE_CELLS=600 ]; then
        grep -q "(read twice: a pruned job shared a GPU)\$" "$D/late.err" || { cat "$D/late.err"; fail "late sharing not read again"; }
    else
        grep -q "raw rows $((LLSAMP - LLDROP)) of $LLSAMP samples stored\$" "$D/late.err" \
            || { cat "$D/late.err"; fail "late sharing in one chunk"; }
    fi
    # the same report; the header's request count is the requests made: twice as many
    python3 - "$D/late_full.json" "$D/late.json.out" $env <<'PY' || fail "analyze differs after late sharing ($env)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ra, rb = a["source"].pop("requests"), b["source"].pop("requests")
assert a == b and rb == (2 * ra if sys.argv[3].endswith("=600") else ra), (ra, rb)
PY
done
echo "pruned store: $((LSAMP - LDROP)) of $LSAMP raw rows, same reports; late sharing read again"

# text output: the header names the Prometheus, range and step
"$GOODPUT" analyze --prometheus "$URL" --from 2024-06-01T00:00:00Z --to "now-$(( ($(date +%s) - T1) / 60 ))m" \
    --step 1m > "$D/r.txt"
head -1 "$D/r.txt" | grep -q "^Prometheus $URL, 2024-06-01T00:00:00Z to .*, step 60s$" \
    || { head -3 "$D/r.txt"; fail "text header"; }
# --selector narrows every query
"$GOODPUT" analyze --prometheus "$URL" --from $T0 --to $T1 --selector '{namespace="nb"}' --json > "$D/nb.json"
python3 -c "
import json,sys; r=json.load(open('$D/nb.json')); ids=[j['id'] for j in r['jobs']]
assert ids and all(i.startswith('nb/notebook-') for i in ids), ids"

# XIDs: exactly the two planted steps carry one
"$GOODPUT" analyze --prometheus "$URL" --from $XT --to $((XT + 570)) --json --db "$D/xid.db" > /dev/null
python3 - "$D/xid.db" $XT <<'PY'
import sqlite3, sys
db, xt = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
rows = db.execute("SELECT ts_ns, xid FROM samples WHERE uuid = 'GPU-xid' ORDER BY ts_ns").fetchall()
got = {(ts // 10**9 - xt): x for ts, x in rows if x is not None}
assert len(rows) == 20 and got == {150: 79, 360: 48}, (len(rows), got)
PY

# 2. bad input: one line on stderr, non-zero exit, nothing on stdout
expect_fail() { # CODE PATTERN -- args
    local code=$1 pat=$2; shift 3
    set +e; "$GOODPUT" analyze "$@" > "$D/o" 2> "$D/e"; local rc=$?; set -e
    [ "$rc" = "$code" ] || { cat "$D/e"; fail "expected exit $code, got $rc for: $*"; }
    [ "$(wc -l < "$D/e")" = 1 ] || { cat "$D/e"; fail "expected one line on stderr for: $*"; }
    grep -q -- "$pat" "$D/e" || { cat "$D/e"; fail "stderr lacks '$pat'"; }
    [ ! -s "$D/o" ] || fail "a partial report was printed for: $*"
}
DOWN=$(free_port)
expect_fail 1 "cannot reach Prometheus at http://127.0.0.1:$DOWN" -- --prometheus "http://127.0.0.1:$DOWN" --from $T0 --to $T1
expect_fail 1 "answered HTTP 400" -- --prometheus "$URL" --from $T0 --to $T1 --selector '{namespace="nb'
expect_fail 3 "conflicting labels: GPU GPU-dup" -- --prometheus "$URL" --from $CT --to $((CT + 600))
rm -f "$D/partial.db"
expect_fail 3 "conflicting labels" -- --prometheus "$URL" --from $CT --to $((CT + 600)) --db "$D/partial.db"
[ ! -e "$D/partial.db" ] || fail "a partial --db was left behind"
# a 5xx from a proxy in front of Prometheus
FP=$(free_port)
python3 - "$FP" <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503); self.send_header("Content-Type", "text/plain"); self.end_headers()
        self.wfile.write(b"upstream connect error")
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
PIDS+=($!)
for _ in $(seq 50); do curl -s "http://127.0.0.1:$FP/" >/dev/null && break; sleep 0.1; done
expect_fail 1 "answered HTTP 503 for /api/v1/label/__name__/values: upstream connect error" -- --prometheus "http://127.0.0.1:$FP" --from $T0 --to $T1

# 3. the server's sample limit: queries are split and retried, same answer
P2=$(free_port)
start_prom "$D/data_small" "$P2" --query.max-samples=400
"$GOODPUT" analyze --prometheus "http://127.0.0.1:$P2" --from $T0 --to $T1 --json > "$D/small.json" 2> "$D/small.err" \
    || { cat "$D/small.err"; fail "analyze under a sample limit"; }
python3 - "$D/r.json" "$D/small.json" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert b["source"]["split_queries"] > 0 and b["source"]["raw_samples"], b["source"]
ja = {j["id"]: (j["allocated_gpu_h"], j["goodput"], j["busy_gpu_h"]) for j in a["jobs"]}
jb = {j["id"]: (j["allocated_gpu_h"], j["goodput"], j["busy_gpu_h"]) for j in b["jobs"]}
assert ja == jb, (ja, jb)
print("sample limit: %d queries split, same report" % b["source"]["split_queries"])
PY

# 4. the shared real captures (dcgm-exporter T4, vLLM v0) backfilled the same way
REAL="$GOODPUT_SRC/../shared/data/prom"
if [ -r "$REAL/dcgm_exporter_t4.txt" ] && [ -r "$REAL/vllm_v0.txt" ]; then
    RT=$((T0 + 2 * 86400))
    python3 "$G/prom2om.py" "$D/real.om" $RT 30 20 "$REAL/dcgm_exporter_t4.txt" "$REAL/vllm_v0.txt"
    promtool tsdb create-blocks-from openmetrics "$D/real.om" "$D/data_real" >/dev/null
    P3=$(free_port)
    start_prom "$D/data_real" "$P3"
    "$GOODPUT" analyze --prometheus "http://127.0.0.1:$P3" --from $((RT - 600)) --to $RT --json > "$D/real.json" 2> "$D/real.err" \
        || { cat "$D/real.err"; fail "analyze of the real captures"; }
    python3 - "$D/real.json" "$REAL/dcgm_exporter_t4.txt" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
uu = set()
for line in open(sys.argv[2]):
    if line.startswith("DCGM_FI_DEV_GPU_UTIL{"):
        uu.add(re.search(r'UUID="([^"]*)"', line).group(1))
s = r["source"]
assert s["devices"] >= len(uu) and s["gpu_source"] == "dcgm-exporter", s
assert any("no pod or hpc_job labels" in n for n in s["notes"]), s["notes"]
assert s["serving_metrics"], s
un = [j for j in r["jobs"] if j["id"].startswith("unattributed/")]
assert un and all(abs(j["allocated_gpu_h"] - j["gpus"] * 600 / 3600) < 0.01 * j["gpus"] * 600 / 3600 for j in un), un
srv = [j for j in r["jobs"] if j["id"].startswith("vllm@")]
assert srv and srv[0]["kind"] == "inference", [j["id"] for j in r["jobs"]]
print("real captures: %d GPUs, %d jobs" % (s["devices"], len(r["jobs"])))
PY
else
    fail "shared real captures missing under $REAL"
fi
echo "PASS analyze_prometheus"
