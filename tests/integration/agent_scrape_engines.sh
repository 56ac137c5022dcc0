#!/usr/bin/env bash
# The agent scrapes a vLLM v1 page with two data-parallel engines over real HTTP
# (tests/data/prom/vllm_v1_dp2_{a,b}.txt), keeps the engines apart, computes SLO goodput per
# engine, and `--verbose` names the families it does not read exactly once. Between the two
# pages the counters grow by known amounts (see tests/unit/test_scrape.c test_vllm_v1_engines),
# so the per-engine totals over all stored windows are exact.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
SRC=${GOODPUT_SRC:-.}
tmp=$(mktemp -d)
cleanup() {
  for p in ${srv:-} ${agent:-}; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/www"
cp "$SRC/tests/data/prom/vllm_v1_dp2_a.txt" "$tmp/www/metrics"
port=$((20000 + RANDOM % 20000))
/usr/bin/python3 -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/www" >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break; sleep 0.1; done
printf '[node]\nname = scrape\ngpus = 1\nmodel = L4\nduration = 1h\n[job idle]\nkind = idle\ngpus = 0\n' >"$tmp/s.conf"
"$GOODPUT" agent --source "sim:$tmp/s.conf" --db "$tmp/a.db" --speed 1 --no-socket --quiet --verbose \
  --scrape "http://127.0.0.1:$port/metrics,job=vllm-dp,slo_ttft=0.5,slo_itl=0.05" --scrape-every 1s \
  2>"$tmp/agent.err" &
agent=$!
sleep 1.6
cp "$SRC/tests/data/prom/vllm_v1_dp2_b.txt" "$tmp/www/metrics.new"
mv "$tmp/www/metrics.new" "$tmp/www/metrics"
for _ in $(seq 100); do
  n=$(sqlite3 "$tmp/a.db" "select count(distinct t1_ns) from scrape_engine_windows" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 3 ] && break
  sleep 0.2
done
kill -TERM $agent; wait $agent; agent=
"$GOODPUT" report --db "$tmp/a.db" --json >"$tmp/r.json"
"$GOODPUT" report --db "$tmp/a.db" >"$tmp/r.txt"
/usr/bin/python3 - "$tmp/r.json" "$tmp/a.db" "$tmp/agent.err" "$tmp/r.txt" <<'PY'
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))
svc = {s["job"]: s for s in r["scraped_services"]}["vllm-dp"]
eng = {e["engine"]: e for e in svc["engines"]}
assert sorted(eng) == ["0", "1"], svc["engines"]
assert all(e["model"] == "meta-llama/Llama-3.1-8B-Instruct" for e in eng.values())
db = sqlite3.connect(sys.argv[2])
def total(col, e):
    return db.execute(f"select sum({col}*(t1_ns-t0_ns)/1e9) from scrape_engine_windows "
                      "where job_id='vllm-dp' and engine=?", (e,)).fetchone()[0]
# Exactly the increments of page b, whichever window they fell in.
assert abs(total("ok_per_s", "0") - 10) < 1e-6 and abs(total("ok_per_s", "1") - 10) < 1e-6
assert abs(total("preemptions_per_s", "1") - 5) < 1e-6
# SLO goodput: engine 0 met both targets for at least 7 of 10 requests, engine 1 for none.
assert abs(total("slo_ok_per_s", "0") - 7) < 1e-6, total("slo_ok_per_s", "0")
assert abs(eng["1"]["slo_ok_per_s"]) < 1e-12 and eng["1"]["slo_ttft_fraction"] == 0
assert abs(eng["0"]["slo_ttft_fraction"] - 0.8) < 1e-9, eng["0"]
assert abs(eng["0"]["prefix_cache_hit_ratio_mean"] - 0.5) < 1e-9, eng["0"]  # windows without queries: null
assert eng["1"]["kv_cache_usage_last"] == 0.9 and eng["1"]["waiting_last"] == 7
assert eng["0"]["spec_decode_acceptance_mean"] is None  # not published: unknown
# The server total keeps summing counts; the KV ratio is the fuller engine's.
assert abs(svc["requests_per_s"] * svc["span_s"] - 20) < 1e-6, svc
assert svc["kv_cache_usage_last"] == 0.9
err = open(sys.argv[3]).read().splitlines()
told = [l for l in err if "not read:" in l]
assert len(told) == 1, err
assert "vllm:cache_config_info" in told[0] and "vllm:iteration_tokens_total" in told[0], told
assert "time_to_first_token" not in told[0]
txt = open(sys.argv[4]).read()
rows = [l.split() for l in txt.splitlines() if l.strip().startswith(("0 (", "1 ("))]
assert len(rows) == 2, txt
print("engines ok:", {k: round(v["slo_ok_per_s"], 3) for k, v in eng.items()})
PY
