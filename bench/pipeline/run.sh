#!/usr/bin/env bash
# bench/pipeline: speed of `goodput pipeline --what-if` (the discrete-event simulation), in
# simulated items per second. Target (issue 9): >= 1M items/s. Results: bench/RESULTS.md,
# section "pipeline". Usage: BUILD=build bench/pipeline/run.sh [ITEMS]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
out=bench/out/pipeline; mkdir -p "$out"
make -s BUILD="$BUILD" "$BUILD/libgoodput.a"
cc -std=c11 -O2 -D_GNU_SOURCE -Iinclude -Isrc -o "$out/sim_speed" bench/pipeline/sim_speed.c \
  "$BUILD/libgoodput.a" $(pkg-config --libs jansson sqlite3) -lm
"$out/sim_speed" "${1:-5000000}"
