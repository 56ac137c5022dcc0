#!/usr/bin/env bash
# Bad input everywhere (issue 11): every CLI command given a missing file, a directory, an
# empty file, a truncated file, the wrong format and invalid options must exit non-zero
# with exactly one line on stderr, and that line must name the file (or the option).
# Table-driven: one row per (command, case); the table is the documentation of what each
# command is fed.
set -uo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
cd "${GOODPUT_SRC:-.}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
nfail=0 npass=0

# check NAME PATTERN command...: non-zero exit, one stderr line containing PATTERN, and no
# crash (exit codes of signals are >= 128).
check() {
    local name=$1 pat=$2; shift 2
    timeout 20 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$? lines
    lines=$(wc -l <"$tmp/err")
    # A message without a trailing newline still counts as one line.
    [ -s "$tmp/err" ] && [ "$lines" -eq 0 ] && lines=1
    local why=
    if [ $rc -eq 0 ]; then why="exited 0"
    elif [ $rc -ge 124 ]; then why="exit $rc (timeout or signal)"
    elif [ "$lines" -ne 1 ]; then why="$lines stderr lines"
    elif ! grep -qF -- "$pat" "$tmp/err"; then why="message does not name '$pat'"
    fi
    if [ -n "$why" ]; then
        nfail=$((nfail + 1))
        echo "FAIL $name: $why: $(head -c 300 "$tmp/err" | tr '\n' '|')"
    else
        npass=$((npass + 1))
        echo "ok   $name: $(cat "$tmp/err")"
    fi
}

# ---- fixtures ----
mkdir "$tmp/dir"
: >"$tmp/empty"
printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR binary junk \xff\xfe\n' >"$tmp/wrong.png"
# A scenario cut in the middle of a value.
python3 - examples/scenarios/demo.conf "$tmp/trunc.conf" <<'PY'
import sys
t = open(sys.argv[1]).read()
i = t.index("=", len(t) // 3)
open(sys.argv[2], "w").write(t[:i + 1])
PY
# A store made by a short run, then cut to its first pages.
"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/ok.db" --speed 0 \
    --duration 120s --no-socket --quiet || { echo "cannot make a store"; exit 1; }
head -c 12288 "$tmp/ok.db" >"$tmp/trunc.db"
# A Kineto trace and an nvidia-smi CSV, each cut mid-record. The CSV is cut in its first
# row, so no GPU row is left (a cut after whole rows replays them with a warning, exit 0:
# tests/integration/smi_replay.sh).
head -c 300 fuzz/seeds/kineto/tiny.json >"$tmp/trunc.json"
gzip -c fuzz/seeds/kineto/tiny.json | head -c 60 >"$tmp/trunc.json.gz"
head -c 200 fuzz/seeds/smi/query.csv >"$tmp/trunc.csv"
printf 'job_id,user,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration\n1,u1,8,64,1,COMPL' >"$tmp/trunc_helios.csv"
printf 'this is not, a trace\n1,2\n' >"$tmp/wrong.csv"
cp "$tmp/wrong.png" "$tmp/wrong.db"
cp "$tmp/wrong.png" "$tmp/wrong.conf"
cp "$tmp/wrong.png" "$tmp/wrong.json"
cp "$tmp/empty" "$tmp/empty.json"
cp "$tmp/empty" "$tmp/empty.db"
cp "$tmp/empty" "$tmp/empty.conf"

G=$GOODPUT
A=(agent --no-socket --quiet --speed 0 --duration 10s)
# ---- agent ----
check "agent sim missing"    nope.conf    $G "${A[@]}" --db "$tmp/a.db" --source sim:"$tmp/nope.conf"
check "agent sim directory"  dir          $G "${A[@]}" --db "$tmp/a.db" --source sim:"$tmp/dir"
check "agent sim empty"      empty.conf   $G "${A[@]}" --db "$tmp/a.db" --source sim:"$tmp/empty.conf"
check "agent sim truncated"  trunc.conf   $G "${A[@]}" --db "$tmp/a.db" --source sim:"$tmp/trunc.conf"
check "agent sim wrong"      wrong.conf   $G "${A[@]}" --db "$tmp/a.db" --source sim:"$tmp/wrong.conf"
check "agent smi missing"    nope.csv     $G "${A[@]}" --db "$tmp/a.db" --source smi:"$tmp/nope.csv"
check "agent smi directory"  dir          $G "${A[@]}" --db "$tmp/a.db" --source smi:"$tmp/dir"
check "agent smi empty"      empty        $G "${A[@]}" --db "$tmp/a.db" --source smi:"$tmp/empty"
check "agent smi truncated"  trunc.csv    $G "${A[@]}" --db "$tmp/a.db" --source smi:"$tmp/trunc.csv"
check "agent smi wrong"      wrong.png    $G "${A[@]}" --db "$tmp/a.db" --source smi:"$tmp/wrong.png"
check "agent db directory"   dir          $G "${A[@]}" --db "$tmp/dir" --source sim:examples/scenarios/demo.conf
check "agent db truncated"   trunc.db     $G "${A[@]}" --db "$tmp/trunc.db" --source sim:examples/scenarios/demo.conf
check "agent db wrong"       wrong.db     $G "${A[@]}" --db "$tmp/wrong.db" --source sim:examples/scenarios/demo.conf
check "agent bad option"     --bogus      $G agent --bogus
check "agent bad interval"   --interval   $G "${A[@]}" --db "$tmp/a.db" --source sim:x --interval soon
# ---- demo ----
D=(demo --speed 0 --no-live)
check "demo missing"         nope.conf    $G "${D[@]}" --scenario "$tmp/nope.conf" --db "$tmp/d.db"
check "demo directory"       dir          $G "${D[@]}" --scenario "$tmp/dir" --db "$tmp/d.db"
check "demo empty"           empty.conf   $G "${D[@]}" --scenario "$tmp/empty.conf" --db "$tmp/d.db"
check "demo truncated"       trunc.conf   $G "${D[@]}" --scenario "$tmp/trunc.conf" --db "$tmp/d.db"
check "demo wrong"           wrong.conf   $G "${D[@]}" --scenario "$tmp/wrong.conf" --db "$tmp/d.db"
check "demo bad option"      --bogus      $G demo --bogus
check "demo bad speed"       --speed      $G demo --speed fast --no-live
# ---- store readers: report, diagnose, pipeline, attrib jobs ----
for c in report diagnose pipeline "attrib jobs"; do
    # shellcheck disable=SC2086
    check "$c missing"       nope.db      $G $c --db "$tmp/nope.db"
    check "$c directory"     dir          $G $c --db "$tmp/dir"
    check "$c empty"         empty.db     $G $c --db "$tmp/empty.db"
    check "$c truncated"     trunc.db     $G $c --db "$tmp/trunc.db"
    check "$c wrong"         wrong.db     $G $c --db "$tmp/wrong.db"
    check "$c bad option"    --bogus      $G $c --db "$tmp/ok.db" --bogus
done
check "report bad slo"       --slo-ttft   $G report --db "$tmp/ok.db" --slo-ttft soon
check "diagnose bad top"     --top        $G diagnose --db "$tmp/ok.db" --top many --no-write
check "pipeline bad items"   --items      $G pipeline --db "$tmp/ok.db" --items lots
# ---- sim ----
check "sim missing"          nope.conf    $G sim "$tmp/nope.conf" --summary
check "sim directory"        dir          $G sim "$tmp/dir" --summary
check "sim empty"            empty.conf   $G sim "$tmp/empty.conf" --summary
check "sim truncated"        trunc.conf   $G sim "$tmp/trunc.conf" --summary
check "sim wrong"            wrong.conf   $G sim "$tmp/wrong.conf" --summary
check "sim bad option"       --bogus      $G sim examples/scenarios/demo.conf --bogus
check "sim bad interval"     --interval   $G sim examples/scenarios/demo.conf --interval x
# ---- trace ----
check "trace missing"        nope.json    $G trace "$tmp/nope.json"
check "trace directory"      dir          $G trace "$tmp/dir"
check "trace empty"          empty.json   $G trace "$tmp/empty.json"
check "trace truncated"      trunc.json   $G trace "$tmp/trunc.json"
check "trace truncated gz"   trunc.json.gz $G trace "$tmp/trunc.json.gz"
check "trace wrong"          wrong.json   $G trace "$tmp/wrong.json"
check "trace bad option"     --bogus      $G trace --bogus "$tmp/trunc.json"
# ---- cluster ----
check "cluster missing"      nope.csv     $G cluster helios "$tmp/nope.csv"
check "cluster directory"    dir          $G cluster helios "$tmp/dir"
check "cluster empty"        empty        $G cluster helios "$tmp/empty"
check "cluster truncated"    trunc_helios.csv $G cluster helios "$tmp/trunc_helios.csv"
check "cluster wrong"        wrong.png    $G cluster openb2023 "$tmp/wrong.png"
check "cluster bad format"   frob         $G cluster frob "$tmp/wrong.csv"
check "cluster bad option"   --bogus      $G cluster helios "$tmp/wrong.csv" --bogus
# ---- attrib, emit ----
check "attrib bad pid"       nopid        $G attrib owner nopid
check "attrib bad option"    --bogus      $G attrib owner --bogus
check "attrib slurm missing db dir" nope  $G attrib slurm-poll --db "$tmp/nope/x.db" --max-s 1
check "emit no agent"        nope.sock    $G emit --socket "$tmp/nope.sock" step job=x step=1
check "emit socket is a dir" dir          $G emit --socket "$tmp/dir" step job=x step=1
check "emit bad line"        step         $G emit --check step job=x step=abc
check "emit bad option"      --bogus      $G emit --bogus
check "unknown command"      frobnicate   $G frobnicate

echo "bad input: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
