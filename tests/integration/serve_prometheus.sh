#!/usr/bin/env bash
# serial: a 60x simulated clock scraped by Prometheus on wall time
# asan-skip: a real Prometheus scraping the agent (promtool, timing); the /metrics C paths run under ASan in test_serve
# serve_prometheus.sh: a real Prometheus server (Debian's prometheus), started on loopback
# with a temporary config and storage, scrapes `goodput agent --listen` running the demo
# scenario at 60x. Checks, independently of the server's own code:
#   - promtool check metrics accepts a /metrics capture; promtool check rules accepts
#     contrib/prometheus/rules.yml, and Prometheus loads and evaluates those rules;
#   - PromQL through Prometheus' HTTP API has one goodput series per job of
#     `goodput report --json` on the same database, with the same goodput (within what the
#     last scrape interval can change), and buckets that sum to the allocated GPU-seconds.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in prometheus promtool curl python3; do
  command -v $t >/dev/null || { echo "skip: $t not installed (scripts/deps.d/serve.txt)"; exit 77; }
done
[ -f "$SRC/examples/scenarios/demo.conf" ] || { echo "skip: examples/scenarios/demo.conf missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-prom-XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
AP=$(free_port); PP=$(free_port)

promtool check rules "$SRC/contrib/prometheus/rules.yml"

# 25 simulated minutes at 60x: about 25 s of wall time.
"$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --db "$tmp/gp.db" --speed 60 \
  --duration 25m --no-socket --listen "127.0.0.1:$AP" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!; pids+=($apid)

cat >"$tmp/prometheus.yml" <<CFG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["$SRC/contrib/prometheus/rules.yml"]
scrape_configs:
  - job_name: goodput
    static_configs: [{targets: ["127.0.0.1:$AP"]}]
CFG
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/tsdb" \
  --web.listen-address="127.0.0.1:$PP" >"$tmp/prom.log" 2>&1 &
pids+=($!)

for i in $(seq 50); do curl -sf "http://127.0.0.1:$PP/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$PP/-/ready" >/dev/null || { tail "$tmp/prom.log"; echo "prometheus did not start"; exit 1; }

sleep 6
curl -sf "http://127.0.0.1:$AP/metrics" >"$tmp/metrics.txt"
promtool check metrics <"$tmp/metrics.txt"
grep -q '^goodput_job_info{' "$tmp/metrics.txt"
# The agent's own cost: CPU, resident memory and a commit-latency histogram whose +Inf
# bucket equals its count (the agent has committed by now).
python3 - "$tmp/metrics.txt" <<'PY'
import sys
m = {}
for line in open(sys.argv[1]):
    if line.startswith("goodput_agent_"):
        k, v = line.rsplit(" ", 1)
        m[k] = float(v)
assert m["goodput_agent_cpu_seconds_total"] > 0, m
assert m["goodput_agent_resident_memory_bytes"] > 1 << 20, m
assert m["goodput_agent_peak_resident_memory_bytes"] >= m["goodput_agent_resident_memory_bytes"], m
n = m["goodput_agent_store_commit_seconds_count"]
assert n > 0 and m['goodput_agent_store_commit_seconds_bucket{le="+Inf"}'] == n, m
assert 0 < m["goodput_agent_store_commit_seconds_sum"] < n * 5, m
PY

q() { curl -sf "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1"; }
# The target is up and scraped.
q 'up{job="goodput"}' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; assert r and r[0]["value"][1]=="1", r'

# Every query of the Grafana dashboard is valid PromQL that Prometheus evaluates.
python3 -c 'import json,sys; [print(t["expr"]) for p in json.load(open(sys.argv[1]))["panels"] for t in p.get("targets",[])]' \
  "$SRC/contrib/grafana/goodput.json" | while read -r expr; do
  q "$expr" | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["status"]=="success", r' \
    || { echo "grafana query failed: $expr"; exit 1; }
done

wait $apid || { cat "$tmp/agent.log"; echo "agent failed"; exit 1; }
sleep 1
"$GOODPUT" report --db "$tmp/gp.db" --json >"$tmp/report.json"
q 'last_over_time(goodput_job_goodput_ratio[10m])' >"$tmp/goodput.json"
q 'sum by (job_id) (last_over_time(goodput_job_gpu_seconds_total[10m]))' >"$tmp/buckets.json"
q 'last_over_time(goodput_job_allocated_gpu_seconds_total[10m])' >"$tmp/alloc.json"
q 'goodput:job_goodput:ratio_rate5m' >"$tmp/rule.json"
q 'last_over_time(goodput_agent_clock_seconds[10m])' >"$tmp/clock.json"

python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def vec(name):
    r = json.load(open(f"{d}/{name}.json"))
    assert r["status"] == "success", r
    return {x["metric"].get("job_id", ""): float(x["value"][1]) for x in r["data"]["result"]}
report = {j["id"]: j for j in json.load(open(f"{d}/report.json"))["jobs"]}
gp, buckets, alloc, rule = vec("goodput"), vec("buckets"), vec("alloc"), vec("rule")
assert report, "report has no jobs"
# Every job of the report is in Prometheus, and nothing else.
assert set(alloc) == set(report), (sorted(alloc), sorted(report))
for jid, j in report.items():
    a = alloc[jid]
    assert abs(buckets[jid] - a) <= 1e-6 * max(a, 1) + 1e-6, (jid, buckets[jid], a)
    if j["goodput"] is None:
        assert jid not in gp, (jid, "goodput unknown in the report but exported")
        continue
    assert jid in gp, (jid, "no goodput series")
    # The last scrape can be up to ~1 s of wall time (60 s simulated) before the end.
    # Goodput over >= 20 simulated minutes moves less than 0.05 in that minute.
    assert abs(gp[jid] - j["goodput"]) < 0.05, (jid, gp[jid], j["goodput"])
    print(f"{jid:18s} prometheus {gp[jid]:.4f}  report {j['goodput']:.4f}  allocated {a:.0f} GPU-s")
assert rule, "recording rule goodput:job_goodput:ratio_rate5m produced nothing"
for jid, v in rule.items():
    assert 0 <= v <= 1.0000001, (jid, v)
print("recording rule series:", len(rule))
PY
echo "serve_prometheus: ok"
