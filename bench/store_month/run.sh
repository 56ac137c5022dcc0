#!/usr/bin/env bash
# bench/store_month: 30 days of 8 GPUs at 1 s written through the store API (rollups as the
# agent writes them, 7-day raw retention applied every simulated hour), then the 30-day
# read from rollups a report does. Prints gen_month's JSON line (see gen_month.c).
# Usage: bench/store_month/run.sh GEN_MONTH [DAYS] [COMMIT_EVERY_S]
set -euo pipefail
gen=$1 days=${2:-30} every=${3:-60}
db=${TMPDIR:-/tmp}/goodput-bench-month.db
rm -f "$db" "$db-wal" "$db-shm"
/usr/bin/time -f 'cpu_s=%U+%S max_rss_kib=%M' "$gen" "$db" "$days" 8 7 "$every"
rm -f "$db" "$db-wal" "$db-shm"
