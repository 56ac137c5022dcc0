#!/usr/bin/env bash
# trace_html.sh: `goodput trace --html` on two shared real Kineto traces (HTA's nccl trace,
# PARAM DLRM on 8 ranks) and `goodput cluster --html` on the openb 2023 cluster trace, each
# opened in headless Chromium (trace_html.mjs): every section present with a drawn SVG, the
# findings with evidence and a fix, no console error, no request beyond the file, the
# timeline zooms. Also: --html alone prints nothing to stdout; --html with --json prints
# the JSON. Page sizes are printed; screenshots go to $BUILD/test-artifacts/.
# asan-skip: its C paths (trace and cluster HTML writers, timeline capture) run under ASan in test_trace_timeline and test_cluster; this script adds Chromium
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
BUILD=${BUILD:-build}
DATA="$SRC/../shared/data"
for t in node python3; do command -v $t >/dev/null || { echo "skip: $t not installed"; exit 77; }; done
[ -x /usr/bin/chromium ] || { echo "skip: /usr/bin/chromium not installed (scripts/deps.d/serve.txt)"; exit 77; }
[ -d "$DATA/kineto/hta_nccl" ] || { echo "skip: $DATA/kineto missing (shared real data)"; exit 77; }
if [ ! -d "$SRC/node_modules/playwright-core" ]; then
  command -v npm >/dev/null || { echo "skip: npm missing for playwright-core"; exit 77; }
  (cd "$SRC" && npm ci --no-audit --no-fund >/dev/null 2>&1) || { echo "skip: npm ci failed (no registry?)"; exit 77; }
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-trace-html-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
art="$SRC/$BUILD/test-artifacts"; mkdir -p "$art"

"$GOODPUT" trace "$DATA/kineto/hta_nccl" --html "$tmp/nccl.html" >"$tmp/out1" 2>"$tmp/err1"
"$GOODPUT" trace "$DATA/kineto/param_dlrm_8rank" --html "$tmp/dlrm.html" >"$tmp/out2" 2>"$tmp/err2"
"$GOODPUT" cluster auto "$DATA/cluster/v2023" --html "$tmp/openb.html" >"$tmp/out3" 2>"$tmp/err3"
for o in out1 out2 out3; do
  [ ! -s "$tmp/$o" ] || { echo "FAIL: --html alone wrote to stdout ($o):"; head -3 "$tmp/$o"; exit 1; }
done
# with --json as well, stdout is the JSON document (and only that)
"$GOODPUT" trace "$DATA/kineto/hta_nccl" --json --html "$tmp/nccl2.html" 2>/dev/null |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ranks"][0]["kernels"], d'
"$GOODPUT" cluster auto "$DATA/cluster/v2023" --json --html "$tmp/openb2.html" 2>/dev/null |
  python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["total"]["units"] > 0, d'
[ -s "$tmp/nccl2.html" ] && [ -s "$tmp/openb2.html" ]

# The top-kernel table is ranked by total time and in ms: HTA's top kernel of this trace
# (oracle gpu_kernel_breakdown_by_kernel.csv: ncclKernel_AllReduce..., sum 24204 us) first.
python3 - "$tmp/nccl.html" "$DATA/oracle/hta_nccl/gpu_kernel_breakdown_by_kernel.csv" <<'PY'
import csv, html, re, sys
page = open(sys.argv[1]).read()
rows = [r for r in csv.DictReader(open(sys.argv[2])) if r["name"] != "others"]
top = max(rows, key=lambda r: float(r["sum (us)"]))
sec = page[page.index('id="top-kernels"'):]
m = re.search(r'<td class="l" title="([^"]*)">.*?</td><td>[A-Z]+</td><td>([0-9.]+)</td>', sec)
assert m, "no top-kernel row"
name, ms = html.unescape(m.group(1)), float(m.group(2))
assert name == top["name"], (name, top["name"])
assert abs(ms - float(top["sum (us)"]) / 1e3) < 0.0015, (ms, top["sum (us)"])
print(f"top kernel {name[:40]}: {ms} ms (HTA {top['sum (us)']} us)")
PY

T=+findings,temporal,overlap,idle-rank,kernel-types,top-kernels,step-time,idle-step,timeline
mkdir -p "$tmp/profile"
cd "$SRC" && timeout 90 node tests/integration/trace_html.mjs "$art" "$tmp/profile" \
  "$tmp/nccl.html=$T" "$tmp/dlrm.html=$T" \
  "$tmp/openb.html=+findings,plan-usage,gpu-hours-by,queue-wait,series" >"$tmp/node.log" 2>&1 ||
  { cat "$tmp/node.log"; exit 1; }
for p in nccl dlrm openb; do echo "page $p.html: $(wc -c <"$tmp/$p.html") bytes"; done
echo "trace_html: ok (screenshots in $art)"
