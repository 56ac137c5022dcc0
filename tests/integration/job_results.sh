#!/usr/bin/env bash
# asan-skip: the stored results' reads, writes and invalidation run under ASan in test_job_results
# Ended jobs' stored results (engine/results/job_results.h) on the path users run: a
# scenario -> `goodput agent` (which stores the results of the jobs it sealed) -> store ->
# `goodput report` / `goodput diagnose`. Checks, on the demo (an hour, three jobs end) and
# on a scenario with crashes and restarts:
#   - the agent stored results, and the report served them (GOODPUT_RESULTS_STATS);
#   - report text and JSON and diagnose text are byte-identical to the same store with the
#     results deleted (computed from the raw rows, as before);
#   - a late event of an ended job (written by another writer, the sqlite3 shell) deletes
#     that job's result (and those of jobs whose time range holds it, no other), and the
#     report still equals the computed one;
#   - another price (GOODPUT_PRICE_PER_GPU_HOUR) or SLO is not served from the results;
#   - an older store (schema 12, no table; the report migrates a writable one, store.c)
#     still reports, the same;
#   - the report never writes the store;
#   - the report on 2 threads (--threads, GOODPUT_REPORT_THREADS) is byte-identical to 1.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
src=${GOODPUT_SRC:-.}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"

# served DIR: "S D", summaries and diagnoses the report served from stored results
served() {
  GOODPUT_RESULTS_STATS=1 "$GOODPUT" report --db "$1/s.db" "${@:2}" 2>&1 >/dev/null |
    sed -n 's/.*served: \([0-9]*\) summaries, \([0-9]*\) diagnoses/\1 \2/p'
}
# outputs DIR [report options]: report text, JSON, diagnose text into DIR
outputs() {
  local d=$1; shift
  (cd "$d" && "$GOODPUT" report --db s.db "$@" >report.txt &&
    "$GOODPUT" report --db s.db --json "$@" >report.json &&
    "$GOODPUT" diagnose --db s.db --no-write >diag.txt)
}
same() { # same A B: every output of A equals B's
  for f in report.txt report.json diag.txt; do
    cmp -s "$1/$f" "$2/$f" || { diff "$1/$f" "$2/$f" | head -20; fail "$3: $f differs"; }
  done
}
threads_same() { # threads_same DIR NAME: the report on 2 threads is the one on 1, byte for byte
  (cd "$1" && "$GOODPUT" report --db s.db --threads 2 >report2.txt &&
    GOODPUT_REPORT_THREADS=2 "$GOODPUT" report --db s.db --json >report2.json)
  for f in report.txt report.json; do
    cmp -s "$1/$f" "$1/${f/./2.}" || { diff "$1/$f" "$1/${f/./2.}" | head -20; fail "$2: $f differs on 2 threads"; }
  done
  [ "$(served "$1" --threads 2)" = "$(served "$1")" ] || fail "$2: other results served on 2 threads"
}
copy_without() { # copy_without FROM TO: the store with its results deleted
  mkdir -p "$2"; cp "$1/s.db" "$2/s.db"
  sqlite3 "$2/s.db" "DELETE FROM job_results"
}

check() { # check NAME SCENARIO DURATION MIN_RESULTS
  local name=$1 d="$tmp/$1"
  mkdir -p "$d/with"
  "$GOODPUT" agent --source "sim:$src/$2" --speed 0 --duration "$3" --no-socket --quiet \
    --db "$d/with/s.db"
  local nres; nres=$(sqlite3 "$d/with/s.db" "SELECT count(*) FROM job_results")
  [ "$nres" -ge "$4" ] || fail "$name: $nres stored results, expected >= $4"
  copy_without "$d/with" "$d/without"
  read -r ns nd <<<"$(served "$d/with")"
  [ "$ns" = "$nres" ] && [ "$nd" = "$nres" ] || fail "$name: served $ns/$nd of $nres results"
  read -r ns nd <<<"$(served "$d/without")"
  [ "$ns" = 0 ] && [ "$nd" = 0 ] || fail "$name: served $ns/$nd without results"
  local sum0; sum0=$(sha256sum <"$d/with/s.db")
  outputs "$d/with"; outputs "$d/without"
  same "$d/with" "$d/without" "$name: stored vs computed"
  [ "$(sha256sum <"$d/with/s.db")" = "$sum0" ] || fail "$name: a read command wrote the store"

  # Another price or SLO: computed, not served, and the same as computed without results.
  read -r ns nd <<<"$(GOODPUT_PRICE_PER_GPU_HOUR=9.5 served "$d/with")"
  [ "$nd" = 0 ] || fail "$name: $nd diagnoses served for another price"
  (cd "$d/with" && GOODPUT_PRICE_PER_GPU_HOUR=9.5 "$GOODPUT" report --db s.db >price.txt)
  (cd "$d/without" && GOODPUT_PRICE_PER_GPU_HOUR=9.5 "$GOODPUT" report --db s.db >price.txt)
  cmp -s "$d/with/price.txt" "$d/without/price.txt" || fail "$name: report at another price differs"
  cmp -s "$d/with/price.txt" "$d/with/report.txt" && fail "$name: the price changed nothing"
  read -r ns nd <<<"$(served "$d/with" --slo-ttft 0.05)"
  [ "$ns" = 0 ] || fail "$name: $ns summaries served for another SLO"

  # A late event of one ended job, from another writer: that result goes, the others stay.
  local job; job=$(sqlite3 "$d/with/s.db" "SELECT job_id FROM job_results ORDER BY job_id LIMIT 1")
  local late="INSERT INTO events(job_id, ts_ns, kind, name, edge) SELECT '$job', t1_ns - 1000000000, 3, 'eval', 1 FROM job_results WHERE job_id = '$job'"
  mkdir -p "$d/late"; cp "$d/with/s.db" "$d/late/s.db"; sqlite3 "$d/late/s.db" "$late"
  # results whose range holds the event's time go too (conservative); the others stay
  local keep; keep=$(sqlite3 "$d/with/s.db" "SELECT count(*) FROM job_results r,
    (SELECT t1_ns - 1000000000 AS ts FROM job_results WHERE job_id = '$job') e
    WHERE r.job_id != '$job' AND NOT (r.t0_ns <= e.ts AND r.t1_ns >= e.ts)")
  local left; left=$(sqlite3 "$d/late/s.db" "SELECT count(*) FROM job_results")
  [ "$left" = "$keep" ] || fail "$name: late event left $left of $nres results, expected $keep"
  [ -z "$(sqlite3 "$d/late/s.db" "SELECT 1 FROM job_results WHERE job_id = '$job'")" ] ||
    fail "$name: late event kept $job's result"
  copy_without "$d/late" "$d/late-without"
  outputs "$d/late"; outputs "$d/late-without"
  same "$d/late" "$d/late-without" "$name: after a late event"
  # the jobs on 2 threads (store/read_pool.h): all stored, none, and some of each
  for v in with without late; do threads_same "$d/$v" "$name ($v)"; done

  # An older store (schema 12: no job_results table, no triggers) reports the same.
  mkdir -p "$d/old"; cp "$d/without/s.db" "$d/old/s.db"
  sqlite3 "$d/old/s.db" "$(sqlite3 "$d/old/s.db" \
    "SELECT 'DROP TRIGGER ' || name || ';' FROM sqlite_master WHERE type = 'trigger' AND tbl_name != 'job_results' AND name LIKE 'job_results%'")
    DROP TABLE job_results; PRAGMA user_version = 12;"
  read -r ns nd <<<"$(served "$d/old")"
  [ "$ns" = 0 ] || fail "$name: an old store served results"
  outputs "$d/old"
  same "$d/old" "$d/without" "$name: old store"
  echo "ok: $name ($nres stored results, outputs identical)"
}

check demo examples/scenarios/demo.conf 70m 3
check restarts tests/data/scenarios/results_restarts.conf 40m 3
echo "job_results: ok"
