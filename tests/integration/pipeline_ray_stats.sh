#!/usr/bin/env bash
# `goodput pipeline --ray-stats` on the Dataset.stats() capture from Ray's docs: the JSON names
# the GPU operator as the bottleneck with the pool size computed by hand in test_ray.c, stdin
# works, and non-stats input is exit 3 with a message naming what was expected.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
SRC=${GOODPUT_SRC:-.}
cap="$SRC/tests/data/ray/resnet_batch_inference.stats.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GOODPUT" pipeline --ray-stats "$cap" --json >"$tmp/r.json"
/usr/bin/python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["bottleneck"] == "MapBatches(ResnetModel)", r["bottleneck"]
assert r["suggested_concurrency"] == 10, r
ops = {o["name"]: o for o in r["operators"]}
assert ops["ReadImage->Map(preprocess_image)"]["tasks"] == 384
assert abs(ops["MapBatches(ResnetModel)"]["concurrency"] - 87.18 / 27.43) < 1e-9
assert r["lines_not_read"] == 0
assert abs(r["consumer_blocked_ratio"] - 19.76 / 38.53) < 1e-9
PY
"$GOODPUT" pipeline --ray-stats - <"$cap" >"$tmp/r.txt"
grep -q '^Bottleneck: MapBatches(ResnetModel) at 345.2 rows/s' "$tmp/r.txt"
printf 'not ray\n' >"$tmp/bad.txt"
set +e
"$GOODPUT" pipeline --ray-stats "$tmp/bad.txt" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 3 ] || { echo "want exit 3, got $rc"; exit 1; }
grep -q "Dataset.stats()" "$tmp/err"
echo "ray-stats ok"
