#!/usr/bin/env bash
# asan-skip: a headless browser on the workflows view; its API runs under ASan in test_otlp
# serve_workflows_chromium.sh: the dashboard's workflows view (issue 25). The real
# OpenTelemetry JS SDK (tests/integration/otlp_workflows.mjs, 60 workflows of three kinds)
# sends spans to `goodput agent --listen` whose simulated node runs the engine the model
# calls name; then a real headless Chromium (playwright-core) opens #/workflows from the
# fleet view's nav link and checks it against GET /api/v1/workflows, the API the CLI's JSON
# shares: one row per kind with its count, success rate, p50/p95 and GPU-s per successful
# workflow, a time-by-step bar per kind, the waterfalls drawn (a bar per span, visible), the
# findings, and no console errors. Screenshot: $BUILD/test-artifacts/dashboard-workflows.png.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
case $GOODPUT in /*) ;; *) GOODPUT=$SRC/$GOODPUT ;; esac
for t in node python3 curl sqlite3; do command -v $t >/dev/null || { echo "skip: $t not installed"; exit 77; }; done
[ -x /usr/bin/chromium ] || { echo "skip: /usr/bin/chromium not installed (scripts/deps.d/serve.txt)"; exit 77; }
if [ ! -d "$SRC/node_modules/playwright-core" ] || [ ! -d "$SRC/node_modules/@opentelemetry/sdk-trace-node" ]; then
  command -v npm >/dev/null || { echo "skip: npm missing for playwright-core"; exit 77; }
  (cd "$SRC" && npm ci --no-audit --no-fund >/dev/null 2>&1) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-wf-XXXXXX")
art="$SRC/$BUILD/test-artifacts"; mkdir -p "$art"
apid=
cleanup() { [ -n "$apid" ] && kill "$apid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
AP=$(free_port)
U="http://127.0.0.1:$AP"
"$GOODPUT" agent --source "sim:$SRC/tests/integration/otlp_workflows.conf" --db "$tmp/gp.db" --speed 1 \
  --no-socket --flush 500ms --listen "127.0.0.1:$AP" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
for i in $(seq 50); do curl -sf "$U/api/v1/" >/dev/null && break; sleep 0.1; done
for i in $(seq 100); do # the workflows start after the GPU's first sample (see otlp_workflows.sh)
  [ "$(sqlite3 "$tmp/gp.db" 'select count(*) from samples' 2>/dev/null || echo 0)" -gt 0 ] && break
  sleep 0.1
done
(cd "$SRC" && node tests/integration/otlp_workflows.mjs "$U/v1/traces" "$tmp/log.jsonl" 60) \
  || { echo "the OpenTelemetry program failed"; exit 1; }
n_spans=$(wc -l <"$tmp/log.jsonl")
for i in $(seq 100); do
  [ "$(sqlite3 "$tmp/gp.db" 'select count(*) from spans' 2>/dev/null || echo 0)" = "$n_spans" ] && break
  sleep 0.1
done
sleep 1 # the samples after the last call
mkdir -p "$tmp/profile"
cd "$SRC" && timeout 60 node tests/integration/serve_workflows_chromium.mjs "$U/" "$art" "$tmp/profile"
echo "serve_workflows_chromium: ok (screenshot in $art)"
