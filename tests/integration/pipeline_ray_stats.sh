#!/usr/bin/env bash
# `goodput pipeline --ray-stats` on the Dataset.stats() capture from Ray's docs: the JSON names
# the GPU operator as the bottleneck with the pool size computed by hand in test_ray.c, stdin
# works, and non-stats input is exit 3 with a message naming what was expected. The same for
# --ray-metrics on a scrape of Ray's metrics.
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
# Ray 2.50.0's own log of three finished datasets (a real notebook's stderr): the last one is
# reported and the report says so; log lines around the stats are not "not read".
etl="$SRC/tests/data/ray/etl_ray2.50_autolog.stderr.txt"
"$GOODPUT" pipeline --ray-stats "$etl" --json >"$tmp/e.json"
/usr/bin/python3 - "$tmp/e.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["datasets_in_input"] == 3 and r["dataset"] == "dataset_228_0", r
assert [o["name"] for o in r["operators"]] == ["limit=25"], r["operators"]
assert r["operators"][0]["output_bytes"] == 1594
assert abs(r["dataset_rows_per_s"] - 13.58305853827714) < 1e-9
assert r["consumer_total_s"] is None  # nobody iterated it
assert r["lines_not_read"] == 0 and r["log_lines_other"] == 6, r
PY
"$GOODPUT" pipeline --ray-stats "$etl" >"$tmp/e.txt"
grep -q 'stats of 3 datasets; this is the last (dataset_228_0)' "$tmp/e.txt"
# A kind of line goodput does not read is counted, named once without --verbose, and listed
# once (with its count) with --verbose.
{ cat "$cap"; printf '* Spill time: 1s min, 2s max, 1.5s mean, 3s total\n* Spill time: 4s\n'; } >"$tmp/u.txt"
"$GOODPUT" pipeline --ray-stats "$tmp/u.txt" --wide >"$tmp/u.out"
grep -q 'Not read: 2 line(s) of 1 kind(s), first: "Spill time: 1s min, 2s max, 1.5s mean, 3s total" (--verbose lists them)' "$tmp/u.out"
"$GOODPUT" pipeline --ray-stats "$tmp/u.txt" --verbose >"$tmp/uv.out"
[ "$(grep -c 'Spill time' "$tmp/uv.out")" -eq 1 ] || { echo "kind not listed exactly once"; exit 1; }
grep -q '^       2 x Spill time: 1s min' "$tmp/uv.out"
printf 'not ray\n' >"$tmp/bad.txt"
set +e
"$GOODPUT" pipeline --ray-stats "$tmp/bad.txt" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 3 ] || { echo "want exit 3, got $rc"; exit 1; }
grep -q "Dataset.stats()" "$tmp/err"
# --ray-metrics: the ray_data_*/ray_train_* scrape (reconstructed from Ray's source; see
# tests/data/SOURCES.md): the GPU operator is the bottleneck with the pool size computed by hand
# in test_ray_metrics.c, the train run's 4 workers, and the families not read listed with
# --verbose only.
met="$SRC/tests/data/ray/ray_metrics_data_train.prom"
"$GOODPUT" pipeline --ray-metrics "$met" --json >"$tmp/m.json"
/usr/bin/python3 - "$tmp/m.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = r["datasets"][0]
assert d["dataset"] == "train_embed_2_0", d["dataset"]
assert d["bottleneck"] == "MapBatches(EmbeddingModel)", d["bottleneck"]
assert d["suggested_concurrency"] == 16, d
ops = {o["name"]: o for o in d["operators"]}
assert ops["MapBatches(EmbeddingModel)"]["queued_input_blocks"] == 37
assert ops["ReadParquet->Map(preprocess)"]["submission_backpressure_s"] == 210.5
assert ops["ReadParquet->Map(preprocess)"]["remote_cpu_total_s"] is None  # not exported
t = r["train_runs"][0]
assert t["workers"] == 4 and t["controller_state"] == "RUNNING", t
assert t["steps"] is None  # Ray Train exports no step count
assert r["families_not_read"] == ["ray_data_spilled_bytes", "ray_data_num_inputs_received",
                                  "ray_data_obj_store_mem_spilled"], r["families_not_read"]
PY
"$GOODPUT" pipeline --ray-metrics - <"$met" >"$tmp/m.txt"
grep -q '^Bottleneck: MapBatches(EmbeddingModel) at 800.0 rows/s (25% of the next slowest' "$tmp/m.txt"
grep -q '^Not read: 3 ray_data_/ray_train_ families (--verbose lists them)$' "$tmp/m.txt"
if grep -q '^  ray_data_spilled_bytes$' "$tmp/m.txt"; then echo "families listed without --verbose"; exit 1; fi
"$GOODPUT" pipeline --ray-metrics "$met" --verbose >"$tmp/mv.txt"
grep -q '^  ray_data_spilled_bytes$' "$tmp/mv.txt"
set +e
"$GOODPUT" pipeline --ray-metrics "$cap" 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 3 ] || { echo "stats text as metrics: want exit 3, got $rc"; exit 1; }
grep -q "ray_data_" "$tmp/err"
echo "ray-stats ok"
