#!/usr/bin/env bash
# bench/store_month: 30 days of 8 GPUs at 1 s written through the store API (rollups as the
# agent writes them, 7-day raw retention applied every simulated hour), then the 30-day
# read from rollups a report does and the job summary (rollups vs raw rows). Prints
# gen_month's JSON line (see gen_month.c).
# Usage: bench/store_month/run.sh GEN_MONTH [DAYS] [COMMIT_EVERY_S]
# KEEP_DB=PATH keeps the generated store there and, when it is already there, reuses it
# (only the reads are timed: writing the month takes ~10 minutes on 2 cores).
set -euo pipefail
gen=$1 days=${2:-30} every=${3:-60}
db=${KEEP_DB:-${TMPDIR:-/tmp}/goodput-bench-month.db}
[ -n "${KEEP_DB:-}" ] || rm -f "$db" "$db-wal" "$db-shm"
GEN_MONTH_REUSE=${KEEP_DB:+1} /usr/bin/time -f 'cpu_s=%U+%S max_rss_kib=%M' \
  "$gen" "$db" "$days" 8 7 "$every"
[ -n "${KEEP_DB:-}" ] || rm -f "$db" "$db-wal" "$db-shm"
