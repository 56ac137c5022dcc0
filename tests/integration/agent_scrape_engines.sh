#!/usr/bin/env bash
# The agent scrapes a vLLM v1 page with two data-parallel engines over real HTTP
# (tests/data/prom/vllm_v1_dp2_{a,b}.txt), keeps the engines apart, computes SLO goodput per
# engine, and `--verbose` names the families it does not read exactly once. Between the two
# pages the counters grow by known amounts (see tests/unit/test_scrape.c test_vllm_v1_engines),
# so the per-engine totals over all stored windows are exact.
# Beside it the same agent scrapes SGLang's real page (tests/data/prom/sglang_docs_llama31_8b.txt)
# after a page with every count at 0: 77% of its TTFTs lie above the largest finite bucket
# (30 s), so its TTFT p50 is Prometheus' floor: the report prints ">= 30s" and JSON says
# ttft_p50_median_is_floor, while ITL (inside its buckets) stays a plain reading; its 60 s TTFT
# target lies above that bucket, so its SLO goodput is unknown, not counted (issue 21).
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
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
mkdir "$tmp/www/sglang"
# the SGLang page before anything was counted: every counter and histogram sample 0
/usr/bin/python3 - "$SRC/tests/data/prom/sglang_docs_llama31_8b.txt" "$tmp/www/sglang/metrics" <<'PY'
import re, sys
out = []
for line in open(sys.argv[1]):
    m = re.match(r'^(sglang:\S*(_total|_bucket|_sum|_count)(\{[^}]*\})?) \S+$', line.strip())
    out.append(f"{m.group(1)} 0.0\n" if m else line)
open(sys.argv[2], "w").writelines(out)
PY
serve_dir "$tmp/www" # sets port and srv (http_lib.bash)
printf '[node]\nname = scrape\ngpus = 1\nmodel = L4\nduration = 1h\n[job idle]\nkind = idle\ngpus = 0\n' >"$tmp/s.conf"
"$GOODPUT" agent --source "sim:$tmp/s.conf" --db "$tmp/a.db" --speed 1 --no-socket --quiet --verbose \
  --scrape "http://127.0.0.1:$port/metrics,job=vllm-dp,slo_ttft=0.5,slo_itl=0.05" \
  --scrape "http://127.0.0.1:$port/sglang/metrics,job=sglang,slo_ttft=60" --scrape-every 1s \
  2>"$tmp/agent.err" &
agent=$!
sleep 1.6
cp "$SRC/tests/data/prom/vllm_v1_dp2_b.txt" "$tmp/www/metrics.new"
mv "$tmp/www/metrics.new" "$tmp/www/metrics"
cp "$SRC/tests/data/prom/sglang_docs_llama31_8b.txt" "$tmp/www/sglang/metrics.new"
mv "$tmp/www/sglang/metrics.new" "$tmp/www/sglang/metrics"
for _ in $(seq 100); do
  n=$(sqlite3 "$tmp/a.db" "select count(*) from (select job_id from scrape_engine_windows
    group by job_id having count(distinct t1_ns) >= 3)" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 2 ] && break
  sleep 0.2
done
kill -TERM $agent; wait $agent; agent=
[ "${n:-0}" -ge 2 ] || {
  echo "FAIL: after 20 s, $n of 2 servers had 3 scrape windows stored; per job: $(sqlite3 "$tmp/a.db" \
    "select job_id, count(distinct t1_ns) from scrape_engine_windows group by job_id" | tr '\n' ' ')"
  echo "agent stderr:"; cat "$tmp/agent.err"; exit 1; }
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
told = [l for l in err if "not read:" in l and "/sglang/" not in l]
assert len(told) == 1, err
assert len([l for l in err if "/sglang/metrics: not read: sglang:cache_hit_rate" in l]) == 1, err
assert "vllm:cache_config_info" in told[0] and "vllm:iteration_tokens_total" in told[0], told
assert "time_to_first_token" not in told[0]
txt = open(sys.argv[4]).read()
rows = [l.split() for l in txt.splitlines() if l.strip().startswith(("0 (", "1 ("))]
assert len(rows) == 2, txt
# Floors (issue 21). vLLM: engine 1's ten TTFTs all lie above the 1 s bucket, so its worst
# p99 is 1 s as a floor; engine 0's are inside. The server's TTFT p50 rank falls exactly on
# the 1 s bound (10 of 20 at or under it): a reading, while its p99 is a floor.
assert eng["0"]["ttft_p99_worst_is_floor"] is False and eng["0"]["itl_p99_worst_is_floor"] is False
assert eng["1"]["ttft_p99_worst_is_floor"] is True and eng["1"]["ttft_p99_worst_s"] == 1.0, eng["1"]
assert eng["1"]["itl_p99_worst_is_floor"] is True  # 50 of 100 above 0.1 s
assert svc["ttft_p50_median_s"] == 1.0 and svc["ttft_p50_median_is_floor"] is False, svc
assert svc["ttft_p99_worst_is_floor"] is True and svc["itl_p50_median_is_floor"] is False, svc
# every percentile has its flag: a boolean beside a number, null beside null (e2e: none)
for o in [svc] + svc["engines"]:
    for k, v in o.items():
        if k.endswith("_is_floor"):
            n = o[k[:-len("_is_floor")] + "_s"]
            assert (n is None and v is None) or (n is not None and isinstance(v, bool)), (k, o)
# column start of each heading in the services table: values are right-aligned under it
lines = txt.splitlines()
lines = lines[next(i for i, l in enumerate(lines) if l.startswith("Inference servers")):]
head = next(l for l in lines if l.startswith("  JOB "))
ehead = next(l for l in lines if l.startswith("    ENGINE (MODEL)"))
def cell(line, name, h=head, width=8):
    at = h.index(" " + name + " ") + 1
    return line[at + len(name) - width:at + len(name)].strip()
vl = next(l for l in lines if l.startswith("  vllm-dp "))
assert cell(vl, "TTFT_P50") == "1000ms" and cell(vl, "TTFT_P99") == ">= 1s", vl
assert cell(vl, "ITL_P99") == ">= 100ms", vl
e1 = next(l for l in lines if l.strip().startswith("1 ("))
assert cell(e1, "TTFT99", ehead, 7) == ">= 1s", (ehead, e1)
# SGLang: the TTFT p50 is the 30 s bound as a floor (mean 214 s), ITL a reading.
sg = {s["job"]: s for s in r["scraped_services"]}["sglang"]
assert sg["server"] == "sglang", sg
assert sg["ttft_p50_median_s"] == 30 and sg["ttft_p50_median_is_floor"] is True, sg
assert sg["ttft_p99_worst_is_floor"] is True and sg["e2e_p50_median_is_floor"] is True, sg
assert sg["itl_p50_median_is_floor"] is False and sg["itl_p99_worst_is_floor"] is False, sg
assert 0.09 < sg["itl_p50_median_s"] < 0.1, sg
se = sg["engines"][0]
assert se["ttft_mean_s"] > 200 and se["ttft_p99_worst_is_floor"] is True, se
# the 60 s TTFT target lies above the 30 s bucket with most TTFTs beyond it: unknown
assert se["slo_ok_per_s"] is None and se["slo_ttft_fraction"] is None, se
sl = next(l for l in lines if l.startswith("  sglang "))
assert cell(sl, "TTFT_P50") == ">= 30s" and cell(sl, "ITL_P50") == "93ms", sl
assert any(l.startswith("  >= : above the server's largest finite histogram bucket") for l in lines)
assert all(len(l) <= 100 for l in lines), max(lines, key=len)
print("engines ok:", {k: round(v["slo_ok_per_s"], 3) for k, v in eng.items()},
      "sglang TTFT p50:", cell(sl, "TTFT_P50"))
PY
