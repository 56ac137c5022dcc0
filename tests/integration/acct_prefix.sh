#!/usr/bin/env bash
# Running jobs' accounting prefixes (engine/accounting/acct_prefix.h) on the path users run:
# a scenario -> `goodput agent` (whose sealing child saves a running job's prefix) ->
# store -> `goodput report` / `goodput diagnose`. A 2-GPU trainer still running after 7 h
# (a long job: its fold reads the 1-minute rollups, job_summary.c fold_long). Checks:
#   - the agent saved a prefix of the running job (and no claim is left);
#   - report text and JSON and diagnose text are byte-identical to the whole computation
#     (GOODPUT_NO_PREFIX=1) on the same store;
#   - the report resumes the prefix: with the job's first hour of step events deleted
#     behind its back (a DELETE runs no trigger), the report's jobs section is still the
#     one above, while the whole computation's now differs;
#   - a late event of the job before the prefix's frozen past, inserted by another writer
#     (the sqlite3 shell), deletes the prefix, and the report then equals the whole
#     computation again; so does a late sample before the prefix's fold end;
#   - the report never writes the store;
#   - past the raw retention (`--retention 2h`, an 8 h job): the prefix is saved from the
#     rollups (its raw_t0_ns is its fold's end, so later retention passes keep it), the
#     report equals the whole computation, and still does after raw rows are pruned
#     further (as gp_store_retain does); a 3 h job (not long: its fold reads raw rows after
#     the raw boundary) past a 1 h retention gets no prefix (a 'skip' row) and is computed;
#   - the demo scenario for 1 h: every running job gets a prefix, train-starved too (each
#     of its steps holds a data_wait phase begun at the previous step's end: its cuts
#     carry that phase, goodput.c "Checkpoints"; before that it never froze and got a
#     'skip' row), each state holds at most GP_ACCT_PREFIX_MAX_EVENTS events, and report
#     text, JSON, --html and diagnose are byte-identical to the whole computation;
#   - an activity-only and a never-ready job running 3 h: frozen pasts saved, outputs
#     equal, resumed.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v sqlite3 >/dev/null || fail "sqlite3 shell missing (Debian sqlite3)"

src=${GOODPUT_SRC:-.}
cp "$src/tests/data/scenarios/prefix_trainer.conf" "$tmp/train.conf"
db=$tmp/s.db
"$GOODPUT" agent --source "sim:$tmp/train.conf" --speed 0 --duration 7h --no-socket --quiet --db "$db"

rows=$(sqlite3 "$db" "SELECT count(*) FROM job_prefix WHERE job_id = 'train' AND fp != 'claim' AND length(state) > 0")
[ "$rows" = 1 ] || fail "no saved prefix of the running job ($rows)"
[ "$(sqlite3 "$db" "SELECT count(*) FROM job_prefix WHERE fp = 'claim'")" = 0 ] || fail "a claim is left"

# outputs DIR [env...]: report text, JSON and diagnose text of $db into DIR
outputs() {
  local d=$1; shift
  mkdir -p "$d"
  env "$@" "$GOODPUT" report --db "$db" >"$d/report.txt"
  env "$@" "$GOODPUT" report --db "$db" --json >"$d/report.json"
  env "$@" "$GOODPUT" diagnose --db "$db" --no-write >"$d/diag.txt"
}
same() { # same A B WHAT
  for f in report.txt report.json diag.txt; do
    cmp -s "$1/$f" "$2/$f" || { diff "$1/$f" "$2/$f" | head -20; fail "$3: $f differs"; }
  done
}

sum0=$(sha256sum <"$db")
outputs "$tmp/prefix"
outputs "$tmp/whole" GOODPUT_NO_PREFIX=1
same "$tmp/prefix" "$tmp/whole" "prefix vs whole"
grep -q '"kind": "training"' "$tmp/prefix/report.json" || fail "the job is not accounted as training"
[ "$(sha256sum <"$db")" = "$sum0" ] || fail "a read command wrote the store"

# The report resumes the prefix: the first hour of steps deleted (no trigger runs on a
# DELETE) changes the whole computation's accounting, not the resumed one's (the jobs
# section; the findings still read the whole history, engine/diagnosis).
jobs() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["jobs"], sort_keys=True))' "$1"; }
cp "$db" "$tmp/cut.db"
t0=$(sqlite3 "$tmp/cut.db" "SELECT min(ts_ns) FROM events WHERE job_id = 'train'")
sqlite3 "$tmp/cut.db" "DELETE FROM events WHERE job_id = 'train' AND kind = 2 AND ts_ns < $t0 + 3600000000000"
"$GOODPUT" report --db "$tmp/cut.db" --json >"$tmp/cut_prefix.json"
GOODPUT_NO_PREFIX=1 "$GOODPUT" report --db "$tmp/cut.db" --json >"$tmp/cut_whole.json"
[ "$(jobs "$tmp/cut_prefix.json")" = "$(jobs "$tmp/prefix/report.json")" ] || fail "the report did not resume the prefix"
[ "$(jobs "$tmp/cut_whole.json")" != "$(jobs "$tmp/prefix/report.json")" ] || fail "deleting steps changed nothing: the check proves nothing"

# A late event before the frozen past: the trigger deletes the prefix; the report is the
# whole computation's.
ev_t=$(sqlite3 "$db" "SELECT ev_t_ns FROM job_prefix WHERE job_id = 'train'")
[ "$ev_t" -gt 0 ] || fail "the prefix has no frozen past ($ev_t)"
cp "$db" "$tmp/late.db"
sqlite3 "$tmp/late.db" "INSERT INTO events(job_id, ts_ns, kind, rank, step) VALUES('train', $ev_t - 60000000000, 2, 0, 5)"
[ "$(sqlite3 "$tmp/late.db" "SELECT count(*) FROM job_prefix")" = 0 ] || fail "a late event left the prefix"
"$GOODPUT" report --db "$tmp/late.db" --json >"$tmp/late_a.json"
GOODPUT_NO_PREFIX=1 "$GOODPUT" report --db "$tmp/late.db" --json >"$tmp/late_b.json"
cmp -s "$tmp/late_a.json" "$tmp/late_b.json" || fail "after a late event: report differs from the whole computation"

# A late sample before the fold's end deletes it too (any device: a sample is not keyed by
# job); one after it does not.
t_ns=$(sqlite3 "$db" "SELECT t_ns FROM job_prefix WHERE job_id = 'train'")
cp "$db" "$tmp/late_s.db"
sqlite3 "$tmp/late_s.db" "INSERT INTO samples(uuid, ts_ns, gpu_util) VALUES('GPU-late', $t_ns + 1, 0.5)"
[ "$(sqlite3 "$tmp/late_s.db" "SELECT count(*) FROM job_prefix")" = 1 ] || fail "a sample after the prefix deleted it"
sqlite3 "$tmp/late_s.db" "INSERT INTO samples(uuid, ts_ns, gpu_util) VALUES('GPU-late', $t_ns - 1000000000, 0.5)"
[ "$(sqlite3 "$tmp/late_s.db" "SELECT count(*) FROM job_prefix")" = 0 ] || fail "a late sample left the prefix"
# Past the raw retention.
sed 's/^duration = 7h/duration = 8h/' "$tmp/train.conf" >"$tmp/train8.conf"
db=$tmp/r8.db
"$GOODPUT" agent --source "sim:$tmp/train8.conf" --speed 0 --duration 8h --retention 2h \
  --no-socket --quiet --db "$db"
read -r t_ns raw_t0 <<<"$(sqlite3 -separator ' ' "$db" "SELECT t_ns, raw_t0_ns FROM job_prefix WHERE job_id = 'train' AND length(state) > 0")"
[ -n "$t_ns" ] && [ "$raw_t0" = "$t_ns" ] || fail "past retention: prefix '$t_ns' raw_t0 '$raw_t0'"
[ "$(sqlite3 "$db" "SELECT min(ts_ns) > (SELECT min(from_ns) FROM allocations) FROM samples")" = 1 ] ||
  fail "retention pruned nothing of the job"
outputs "$tmp/r_prefix"
outputs "$tmp/r_whole" GOODPUT_NO_PREFIX=1
same "$tmp/r_prefix" "$tmp/r_whole" "past retention: prefix vs whole"
cut=$(sqlite3 "$db" "SELECT min(ts_ns) + 3600000000000 FROM samples")
sqlite3 "$db" "DELETE FROM samples WHERE ts_ns < $cut; DELETE FROM proc_samples WHERE ts_ns < $cut;
  DELETE FROM job_prefix WHERE raw_t0_ns < $cut"
[ "$(sqlite3 "$db" "SELECT count(*) FROM job_prefix WHERE length(state) > 0")" = 1 ] || fail "pruning deleted the prefix"
outputs "$tmp/r2_prefix"
outputs "$tmp/r2_whole" GOODPUT_NO_PREFIX=1
same "$tmp/r2_prefix" "$tmp/r2_whole" "pruned further: prefix vs whole"
same "$tmp/r2_whole" "$tmp/r_whole" "pruned further: whole computation moved"
sed 's/^duration = 7h/duration = 3h/' "$tmp/train.conf" >"$tmp/train3.conf"
db=$tmp/r3.db
"$GOODPUT" agent --source "sim:$tmp/train3.conf" --speed 0 --duration 3h --retention 1h \
  --no-socket --quiet --db "$db"
[ "$(sqlite3 "$db" "SELECT group_concat(fp) FROM job_prefix")" = skip ] || fail "a short pruned job: $(sqlite3 "$db" "SELECT fp FROM job_prefix")"
db=$tmp/demo.db
"$GOODPUT" agent --source "sim:${GOODPUT_SRC:-.}/examples/scenarios/demo.conf" --speed 0 --duration 1h \
  --no-socket --quiet --db "$db"
[ "$(sqlite3 "$db" "SELECT count(*) FROM job_prefix WHERE length(state) > 0 AND fp != 'skip' AND job_id IN ('train-allreduce', 'train-healthy', 'llm-decode', 'train-starved')")" = 4 ] ||
  fail "the demo's running jobs lack prefixes: $(sqlite3 "$db" "SELECT job_id, fp, length(state) FROM job_prefix")"
outputs "$tmp/d_prefix"
outputs "$tmp/d_whole" GOODPUT_NO_PREFIX=1
same "$tmp/d_prefix" "$tmp/d_whole" "demo: prefix vs whole"
"$GOODPUT" report --db "$db" --html "$tmp/d_prefix.html" >/dev/null
GOODPUT_NO_PREFIX=1 "$GOODPUT" report --db "$db" --html "$tmp/d_whole.html" >/dev/null
cmp -s "$tmp/d_prefix.html" "$tmp/d_whole.html" || fail "demo: --html differs from the whole computation"
# Jobs that report no progress, still running after 3 h (tests/data/scenarios/
# activity_running.conf: an activity-only notebook, a never-ready job): each saved state
# holds a frozen past (ev_t_ns > 0; before such jobs froze it held every sample instant,
# ~430 KB here), the outputs equal the whole computation, and the report resumes them (the
# first hour of samples deleted behind its back changes the whole computation's jobs
# section, not the resumed one's).
db=$tmp/nb.db
"$GOODPUT" agent --source "sim:$src/tests/data/scenarios/activity_running.conf" --speed 0 \
  --duration 3h --no-socket --quiet --db "$db"
for job in notebook stuck; do
  read -r ev_t len <<<"$(sqlite3 -separator ' ' "$db" "SELECT ev_t_ns, length(state) FROM job_prefix WHERE job_id = '$job' AND fp != 'skip'")"
  [ -n "$ev_t" ] && [ "$ev_t" -gt 0 ] || fail "$job: no frozen past saved ($(sqlite3 "$db" "SELECT job_id, fp, ev_t_ns, length(state) FROM job_prefix"))"
  [ "$len" -lt 100000 ] || fail "$job: the saved state holds $len bytes"
done
outputs "$tmp/nb_prefix"
outputs "$tmp/nb_whole" GOODPUT_NO_PREFIX=1
same "$tmp/nb_prefix" "$tmp/nb_whole" "activity-only: prefix vs whole"
grep -q '"kind": "activity-only"' "$tmp/nb_prefix/report.json" || fail "the notebook is not activity-only"
grep -q '"kind": "never-ready"' "$tmp/nb_prefix/report.json" || fail "the stuck job is not never-ready"
cp "$db" "$tmp/nb_cut.db"
sqlite3 "$tmp/nb_cut.db" "DELETE FROM samples WHERE ts_ns < (SELECT min(ts_ns) FROM samples) + 3600000000000"
"$GOODPUT" report --db "$tmp/nb_cut.db" --json >"$tmp/nb_cut_prefix.json"
GOODPUT_NO_PREFIX=1 "$GOODPUT" report --db "$tmp/nb_cut.db" --json >"$tmp/nb_cut_whole.json"
[ "$(jobs "$tmp/nb_cut_prefix.json")" = "$(jobs "$tmp/nb_prefix/report.json")" ] || fail "activity-only: the report did not resume the prefix"
[ "$(jobs "$tmp/nb_cut_whole.json")" != "$(jobs "$tmp/nb_prefix/report.json")" ] || fail "activity-only: deleting samples changed nothing"
echo "acct_prefix: ok"
