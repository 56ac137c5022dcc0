#!/usr/bin/env bash
# asan-skip: a headless browser on the dashboard; the API it reads runs under ASan in test_serve
# serve_chromium.sh: a real headless Chromium (Debian's chromium, driven by playwright-core
# from npm) opens the dashboard of `goodput agent --listen` running the demo scenario:
# charts render with data, no console errors, navigation fleet -> job -> device works.
# Screenshots go to $BUILD/test-artifacts/.
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
for t in node python3; do command -v $t >/dev/null || { echo "skip: $t not installed"; exit 77; }; done
[ -x /usr/bin/chromium ] || { echo "skip: /usr/bin/chromium not installed (scripts/deps.d/serve.txt)"; exit 77; }
if [ ! -d "$SRC/node_modules/playwright-core" ]; then
  command -v npm >/dev/null || { echo "skip: npm missing for playwright-core"; exit 77; }
  (cd "$SRC" && npm ci --no-audit --no-fund >/dev/null 2>&1) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
[ -f "$SRC/examples/scenarios/demo.conf" ] || { echo "skip: examples/scenarios/demo.conf missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-serve-chromium-XXXXXX")
art="$SRC/$BUILD/test-artifacts"; mkdir -p "$art"
apid=
cleanup() { [ -n "$apid" ] && kill "$apid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
AP=$(free_port)
"$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --db "$tmp/gp.db" --speed 60 \
  --no-socket --listen "127.0.0.1:$AP" --quiet >"$tmp/agent.log" 2>&1 &
apid=$!
for i in $(seq 50); do curl -sf "http://127.0.0.1:$AP/api/v1/fleet" >/dev/null && break; sleep 0.2; done
sleep 6 # a few simulated minutes of data
mkdir -p "$tmp/profile"
cd "$SRC" && timeout 50 node tests/integration/serve_chromium.mjs "http://127.0.0.1:$AP/" "$art" "$tmp/profile"
echo "serve_chromium: ok (screenshots in $art)"
