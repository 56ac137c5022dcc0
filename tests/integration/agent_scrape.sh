#!/usr/bin/env bash
# The agent scrapes a vLLM-format /metrics page over real HTTP on loopback (--scrape),
# stores per-window rates, and the report shows them. Between scrapes the test adds known
# increments to the counters, so the stored rates are checked against hand-computed ones.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
GOODPUT=${GOODPUT:-build/goodput}
DATA=${GOODPUT_DATA:-../shared/data}
[ -r "$DATA/prom/vllm_v0.txt" ] || { echo "skip: no real data at $DATA (prom/vllm_v0.txt)"; exit 77; }
tmp=$(mktemp -d)
cleanup() {
  for p in ${srv:-} ${agent:-}; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/www"
cp "$DATA/prom/vllm_v0.txt" "$tmp/www/metrics"
serve_dir "$tmp/www" # sets port and srv (http_lib.bash)
printf '[node]\nname = scrape\ngpus = 1\nmodel = L4\nduration = 1h\n[job idle]\nkind = idle\ngpus = 0\n' >"$tmp/s.conf"
# Beside it a server path that answers 404: said once (not once a poll), naming its URL once.
"$GOODPUT" agent --source "sim:$tmp/s.conf" --db "$tmp/a.db" --speed 1 --no-socket --quiet \
  --scrape "http://127.0.0.1:$port/metrics,job=vllm-a" \
  --scrape "http://127.0.0.1:$port/gone/metrics,job=gone" --scrape-every 1s 2>"$tmp/agent.err" &
agent=$!
# After the baseline scrape, add 30 successes and 600 generated tokens, atomically.
sleep 1.6
/usr/bin/python3 - "$tmp/www/metrics" <<'PY'
import os, re, sys
p = sys.argv[1]
out = []
for line in open(p):
    m = re.match(r'^(vllm:request_success_total\{[^}]*\}|vllm:generation_tokens_total\{[^}]*\}) (\S+)$', line.strip())
    if m:
        add = 30 if "request_success" in m.group(1) else 600
        line = f"{m.group(1)} {float(m.group(2)) + add}\n"
    out.append(line)
open(p + ".new", "w").writelines(out)
os.replace(p + ".new", p)
PY
# Wait (bounded) until a window after the change and one more are stored.
for _ in $(seq 100); do
  n=$(sqlite3 "$tmp/a.db" "select count(*) from scrape_windows" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 2 ] && break
  sleep 0.2
done
kill -TERM $agent; wait $agent; agent=
want="goodput agent: scrape http://127.0.0.1:$port/gone/metrics: HTTP 404 (will retry)"
[ "$(cat "$tmp/agent.err")" = "$want" ] || {
  echo "FAIL: agent stderr, expected one line '$want':"; cat "$tmp/agent.err"; exit 1; }
"$GOODPUT" report --db "$tmp/a.db" --json >"$tmp/r.json"
/usr/bin/python3 - "$tmp/r.json" "$tmp/a.db" <<'PY'
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))
svc = {s["job"]: s for s in r.get("scraped_services", [])}
assert "vllm-a" in svc, r.get("scraped_services")
s = svc["vllm-a"]
assert s["server"] == "vllm", s
assert s["windows"] >= 2, s
# The increments happened in exactly one window; totals over all windows are exact.
db = sqlite3.connect(sys.argv[2])
req, tok = db.execute("select sum(requests_per_s*(t1_ns-t0_ns)/1e9), sum(generation_tokens_per_s*(t1_ns-t0_ns)/1e9) from scrape_windows where job_id='vllm-a'").fetchone()
assert abs(req - 30) < 1e-6, req
assert abs(tok - 600) < 1e-6, tok
assert abs(s["requests_per_s"] * s["span_s"] - 30) < 1e-6, s
print("scrape ok:", s["windows"], "windows", round(s["requests_per_s"], 3), "req/s")
PY
