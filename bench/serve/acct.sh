#!/usr/bin/env bash
# bench/serve/acct.sh: cost of summarising a running job (engine/accounting/job_summary.h): the full
# computation vs an incremental refresh after 15 s of new samples and steps, for a 1-hour
# job (the /metrics fleet store), a 24-hour job (the dashboard's day store) and a 24-hour
# inference server (about a request a second; its refreshes append requests).
# Usage: bench/serve/acct.sh [BUILD]    (needs BUILD/libgoodput.a)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
OUT=bench/out
mkdir -p "$OUT"
ROUNDS=${ROUNDS:-20}
LIBS="$(pkg-config --libs sqlite3 jansson yajl libmicrohttpd libcurl zlib libxml-2.0 libpq) -ldl -lpthread -lm"
cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Iinclude bench/serve/bench_serve.c "$BUILD/libgoodput.a" -o "$OUT/bench_serve" $LIBS
cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Iinclude bench/serve/bench_acct.c "$BUILD/libgoodput.a" -o "$OUT/bench_acct" $LIBS
tmp=$(mktemp -d /tmp/gp-bench-acct-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$OUT/bench_serve" fill-fleet "$tmp/fleet.db"
"$OUT/bench_serve" fill-day "$tmp/day.db"
"$OUT/bench_acct" "$tmp/fleet.db" running-0 GPU-bench-0000 "$ROUNDS" | tee "$OUT/acct.txt"
"$OUT/bench_acct" "$tmp/day.db" day-job GPU-bench-0000 "$ROUNDS" | tail -1 | tee -a "$OUT/acct.txt"
"$OUT/bench_serve" fill-day "$tmp/day-infer.db" infer
"$OUT/bench_acct" "$tmp/day-infer.db" day-job GPU-bench-0000 "$ROUNDS" infer | tail -1 |
  sed 's/^day-job /day-infer/' | tee -a "$OUT/acct.txt"
