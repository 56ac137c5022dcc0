#!/usr/bin/env bash
# serve_db.sh: `goodput serve --db` (issue 23): the dashboard and API over stored
# databases with no agent. Two stores (a 10-minute and a 20-minute run of the demo
# scenario) served side by side on free ports must answer the same documents as the
# stores hold (each its own job list and GPU-hours), POSTed events must be refused (503:
# nobody receives them), the stores must not change (read-only open), and the usage
# errors must exit 2, a missing store 3.
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
command -v curl >/dev/null || { echo "skip: curl missing"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-db-XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
for d in 10m 20m; do
    "$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --db "$tmp/$d.db" \
        --speed 0 --no-socket --quiet --duration "$d"
done
sum_before=$(cat "$tmp/10m.db" "$tmp/20m.db" | sha256sum)
"$GOODPUT" serve --db "$tmp/10m.db" --db "$tmp/20m.db" --listen 127.0.0.1:0 \
    --duration 60s 2>"$tmp/err" &
pid=$!
for _ in $(seq 50); do
    [ "$(grep -c ' on http://' "$tmp/err")" -eq 2 ] && break
    sleep 0.1
done
cat "$tmp/err"
url_a=$(sed -n 's/^goodput serve: .*10m.db on \(http:[^ ]*\) .*/\1/p' "$tmp/err")
url_b=$(sed -n 's/^goodput serve: .*20m.db on \(http:[^ ]*\) .*/\1/p' "$tmp/err")
[ -n "$url_a" ] && [ -n "$url_b" ] && [ "$url_a" != "$url_b" ]
curl -sf "${url_a}api/v1/jobs" >"$tmp/a.json"
curl -sf "${url_b}api/v1/jobs" >"$tmp/b.json"
curl -sf "${url_a}" >"$tmp/index.html"
grep -qi '<html' "$tmp/index.html"
curl -sf "${url_a}metrics" >"$tmp/metrics.txt"
grep -q '^goodput_agent_up 0$' "$tmp/metrics.txt"
code=$(curl -s -o "$tmp/post.json" -w '%{http_code}' -XPOST --data-binary 'x' "${url_a}api/v1/events")
[ "$code" = 503 ]
"$GOODPUT" report --db "$tmp/10m.db" --json >"$tmp/ra.json"
"$GOODPUT" report --db "$tmp/20m.db" --json >"$tmp/rb.json"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
for name in ("a", "b"):
    api = {j["id"]: j["allocated_gpu_h"] for j in json.load(open(f"{d}/{name}.json"))["jobs"]}
    rep = {j["id"]: j["allocated_gpu_h"] for j in json.load(open(f"{d}/r{name}.json"))["jobs"]}
    assert api.keys() == rep.keys() and api, (api, rep)
    for k in api:
        assert abs(api[k] - rep[k]) < 1e-6 * max(1, rep[k]), (name, k, api[k], rep[k])
a = json.load(open(f"{d}/a.json"))["jobs"]; b = json.load(open(f"{d}/b.json"))["jobs"]
ta = sum(j["allocated_gpu_h"] for j in a); tb = sum(j["allocated_gpu_h"] for j in b)
# The 20-minute store holds about twice the GPU-hours of the 10-minute one.
assert 1.6 < tb / ta < 2.4, (ta, tb)
print(f"serve: {len(a)} jobs, {ta:.2f} vs {tb:.2f} GPU-h; matches report --json")
PY
kill "$pid"; wait "$pid" || true
pid=
[ "$(cat "$tmp/10m.db" "$tmp/20m.db" | sha256sum)" = "$sum_before" ]
# Usage and input errors: one line, the documented exit code.
set +e
"$GOODPUT" serve 2>"$tmp/e1"; rc1=$?
"$GOODPUT" serve --db "$tmp/nope.db" 2>"$tmp/e2"; rc2=$?
"$GOODPUT" serve --db "$tmp/10m.db" --listen nonsense 2>"$tmp/e3"; rc3=$?
"$GOODPUT" serve --bogus 2>"$tmp/e4"; rc4=$?
set -e
[ $rc1 = 2 ] && [ $rc2 = 3 ] && [ $rc3 = 2 ] && [ $rc4 = 2 ]
grep -q 'nope.db' "$tmp/e2" && grep -q -- '--listen' "$tmp/e3" && grep -q -- '--bogus' "$tmp/e4"
for f in e1 e2 e3 e4; do [ "$(wc -l <"$tmp/$f")" -eq 1 ]; done
echo "serve_db: ok"
