#!/usr/bin/env bash
# Running jobs' saved events (engine/diagnosis/ev_prefix.h) on the path users run: a
# scenario -> `goodput agent` (whose sealing child saves a running job's accounting prefix
# and then its events up to that prefix's bound) -> store -> `goodput report` /
# `goodput diagnose`. A 2-GPU trainer still running after 7 h. Checks:
#   - the agent saved the running job's events (and no claim is left);
#   - report text, JSON and HTML and diagnose text are byte-identical to the whole
#     computation (GOODPUT_NO_PREFIX=1) on the same store; a read never writes the store;
#   - the findings resume them: with the job's first hour of steps deleted behind the
#     triggers' back (the sqlite3 shell's .dbconfig enable_trigger off), diagnose still
#     prints what it printed, while the whole computation now differs;
#   - a late event of the job at or before the bound (another writer, triggers on), or the
#     deletion of one, deletes the saved events; the outputs then equal the whole
#     computation again; an event after the bound keeps them.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"

src=${GOODPUT_SRC:-.}
cp "$src/tests/data/scenarios/prefix_trainer.conf" "$tmp/train.conf"
db=$tmp/s.db
"$GOODPUT" agent --source "sim:$tmp/train.conf" --speed 0 --duration 7h --no-socket --quiet --db "$db"

q() { sqlite3 "$1" "$2"; }
[ "$(q "$db" "SELECT count(DISTINCT job_id) FROM job_ev_prefix WHERE job_id = 'train' AND fp != 'claim' AND length(state) > 0")" = 1 ] ||
  fail "no saved events of the running job"
[ "$(q "$db" "SELECT count(*) FROM job_ev_prefix WHERE fp = 'claim'")" = 0 ] || fail "a claim is left"
t_ns=$(q "$db" "SELECT max(t_ns) FROM job_ev_prefix WHERE job_id = 'train'")
[ "$(q "$db" "SELECT count(*) FROM events WHERE job_id = 'train' AND ts_ns <= $t_ns")" -gt 100000 ] ||
  fail "the saved events hold few of the job's events"
[ "$t_ns" = "$(q "$db" "SELECT t_ns FROM job_prefix WHERE job_id = 'train'")" ] ||
  fail "saved events' bound is not the accounting prefix's"

# outputs DB DIR [env...]: report text, JSON, HTML and diagnose text of DB into DIR
outputs() {
  local d=$2 s=$1; shift 2
  mkdir -p "$d"
  env "$@" "$GOODPUT" report --db "$s" >"$d/report.txt"
  env "$@" "$GOODPUT" report --db "$s" --json | sed "s#$s#DB#" >"$d/report.json"
  env "$@" "$GOODPUT" report --db "$s" --html "$d/report.html" >/dev/null
  env "$@" "$GOODPUT" diagnose --db "$s" --no-write | sed "s#$s#DB#" >"$d/diag.txt"
}
same() { # same A B WHAT
  for f in report.txt report.json report.html diag.txt; do
    cmp -s "$1/$f" "$2/$f" || { diff "$1/$f" "$2/$f" | head -20; fail "$3: $f differs"; }
  done
}

sum0=$(sha256sum <"$db")
outputs "$db" "$tmp/prefix"
outputs "$db" "$tmp/whole" GOODPUT_NO_PREFIX=1
same "$tmp/prefix" "$tmp/whole" "saved events vs whole"
[ -s "$tmp/prefix/diag.txt" ] && [ -s "$tmp/prefix/report.html" ] || fail "empty outputs"
[ "$(sha256sum <"$db")" = "$sum0" ] || fail "a read command wrote the store"

# The findings resume the saved events: the first hour of steps deleted with the triggers
# off leaves diagnose's output as it was; the whole computation's moves.
cp "$db" "$tmp/cut.db"
t0=$(q "$tmp/cut.db" "SELECT min(ts_ns) FROM events WHERE job_id = 'train'")
printf '.dbconfig enable_trigger off\nDELETE FROM events WHERE job_id = %s AND kind = 2 AND ts_ns < %s;\n' \
  "'train'" "$((t0 + 3600000000000))" | sqlite3 "$tmp/cut.db" >/dev/null
[ "$(q "$tmp/cut.db" "SELECT count(*) FROM job_ev_prefix")" -gt 0 ] || fail "the delete ran the triggers"
"$GOODPUT" diagnose --db "$tmp/cut.db" --no-write | sed "s#$tmp/cut.db#DB#" >"$tmp/cut_prefix.txt"
GOODPUT_NO_PREFIX=1 "$GOODPUT" diagnose --db "$tmp/cut.db" --no-write | sed "s#$tmp/cut.db#DB#" >"$tmp/cut_whole.txt"
cmp -s "$tmp/cut_prefix.txt" "$tmp/prefix/diag.txt" || fail "diagnose did not resume the saved events"
! cmp -s "$tmp/cut_whole.txt" "$tmp/prefix/diag.txt" || fail "deleting steps changed nothing: the check proves nothing"

# An event after the bound keeps them; one at the bound deletes them (the outputs are then
# the whole computation's); so does deleting one before the bound.
cp "$db" "$tmp/late.db"
q "$tmp/late.db" "INSERT INTO events(job_id, ts_ns, kind, rank, step) VALUES('train', $t_ns + 1, 2, 0, 5)"
[ "$(q "$tmp/late.db" "SELECT count(*) FROM job_ev_prefix")" -gt 0 ] || fail "an event after the bound deleted them"
q "$tmp/late.db" "INSERT INTO events(job_id, ts_ns, kind, rank, step) VALUES('train', $t_ns, 2, 0, 5)"
[ "$(q "$tmp/late.db" "SELECT count(*) FROM job_ev_prefix")" = 0 ] || fail "a late event left them"
outputs "$tmp/late.db" "$tmp/late_a"
outputs "$tmp/late.db" "$tmp/late_b" GOODPUT_NO_PREFIX=1
same "$tmp/late_a" "$tmp/late_b" "after a late event"
cp "$db" "$tmp/del.db"
q "$tmp/del.db" "DELETE FROM events WHERE id = (SELECT min(id) FROM events WHERE job_id = 'train' AND kind = 3)"
[ "$(q "$tmp/del.db" "SELECT count(*) FROM job_ev_prefix")" = 0 ] || fail "a deleted event left them"

# A job that ended and whose result is stored keeps no saved events (they are tens of MB a
# day and its result is what readers use): the same trainer, ending at 90 minutes, seen
# running at 60 and then run to its end.
sed 's/end = 1430m/end = 90m/; s/duration = 7h/duration = 3h/' "$tmp/train.conf" >"$tmp/short.conf"
"$GOODPUT" agent --source "sim:$tmp/short.conf" --speed 0 --duration 60m --no-socket --quiet --db "$tmp/short.db"
[ "$(q "$tmp/short.db" "SELECT count(*) FROM job_ev_prefix WHERE job_id = 'train'")" -gt 0 ] ||
  fail "the running 60-minute job has no saved events"
"$GOODPUT" agent --source "sim:$tmp/short.conf" --speed 0 --duration 3h --no-socket --quiet --db "$tmp/short.db"
[ "$(q "$tmp/short.db" "SELECT count(*) FROM job_results WHERE job_id = 'train'")" = 1 ] ||
  fail "the ended job has no stored result"
[ "$(q "$tmp/short.db" "SELECT count(*) FROM job_ev_prefix")" = 0 ] ||
  fail "an ended job with a stored result kept its saved events"
echo "ev_prefix: ok"
