#!/usr/bin/env bash
# errors_cli.sh: one behaviour for errors across commands (issue 23 item 5). Table-driven:
# each row is (expected exit code, what the one stderr line must name, command). Every
# command: -h and --help exit 0 with usage on stdout; a missing file exits 3; a bad flag
# and a bad value exit 2; each error is one line starting `goodput CMD: `. README's codes:
# 0 ok, 1 failure, 2 usage, 3 bad input. A live source that cannot be reached (no NVML
# driver, no dcgm-exporter) is a failure (1), and `attrib slurm-poll` whose every poll
# failed exits 1. Every --flag a command accepts in the table is named by its --help.
# asan-skip: argument parsing and error paths; the readers' bad-input paths run under ASan in reliability_badinput.sh and the unit tests
set -uo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
cd "${GOODPUT_SRC:-.}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# The demo's failed runs below must leave no goodput-demo-* folder behind in $TMPDIR.
mkdir "$tmp/t" && export TMPDIR=$tmp/t
nfail=0 npass=0
fail() { nfail=$((nfail + 1)); echo "FAIL $*"; }

# row RC PATTERN CMD ARGS...: exit RC, exactly one stderr line, starting "goodput CMD"
# (the command's own prefix) and containing PATTERN.
row() {
    local want=$1 pat=$2; shift 2
    local cmd=$1
    timeout 20 "$GOODPUT" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local rc=$? lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne "$want" ]; then fail "$*: exit $rc, want $want: $(head -c 200 "$tmp/err")"
    elif [ "$lines" -ne 1 ]; then fail "$*: $lines stderr lines: $(head -c 300 "$tmp/err" | tr '\n' '|')"
    elif ! grep -q "^goodput $cmd: " "$tmp/err"; then fail "$*: prefix is not 'goodput $cmd: ': $(cat "$tmp/err")"
    elif ! grep -qF -- "$pat" "$tmp/err"; then fail "$*: message does not name '$pat': $(cat "$tmp/err")"
    else npass=$((npass + 1)); echo "ok   [$rc] $(cat "$tmp/err")"
    fi
}

"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/ok.db" --speed 0 \
    --duration 2m --no-socket --quiet || { echo "cannot make a store"; exit 1; }
N=$tmp/nope
cmds=$("$GOODPUT" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{exit}')
[ "$(echo "$cmds" | wc -w)" -ge 12 ] || fail "goodput --help lists $(echo "$cmds" | wc -w) commands"
for c in $cmds; do
    for h in -h --help; do
        if ! "$GOODPUT" "$c" $h >"$tmp/help" 2>"$tmp/err" || ! grep -q "usage: goodput $c" "$tmp/help" \
            || [ -s "$tmp/err" ]; then
            fail "$c $h: not usage on stdout with exit 0"
        else npass=$((npass + 1)); fi
    done
done
# Every command must appear in the table below (a new command needs its rows).
for c in $cmds; do
    grep -qE "^row [0-9] [^ ]+ +$c " "$0" || fail "command $c has no row in $0"
done

#   rc pattern       command...
# missing file: 3
row 3 nope.conf     agent --db "$tmp/a.db" --source sim:"$N.conf" --no-socket --quiet
row 3 nope.csv      agent --db "$tmp/a.db" --source smi:"$N.csv" --no-socket --quiet
row 3 nope.conf     demo --scenario "$N.conf" --no-live
printf '[node]\ngpus = many\n' >"$tmp/bad.conf"
row 3 bad.conf:2    demo --scenario "$tmp/bad.conf" --no-live
row 3 nope.db       report --db "$N.db"
row 3 nope.conf     sim "$N.conf" --summary
row 3 nope.db       diagnose --db "$N.db"
row 3 nope.sock     emit --socket "$N.sock" step job=x step=1
row 3 nope.json     trace "$N.json"
row 3 nope.csv      cluster helios "$N.csv"
row 3 nope.db       attrib jobs --db "$N.db"
row 3 nope.db       pipeline --db "$N.db"
row 3 nope.db       serve --db "$N.db"
row 3 nope.db       compare --db "$N.db" a b
row 3 nope.db       top --db "$N.db" --once
row 3 nope.log      logs "$N.log" --profile megatron
row 3 nope.json     workflows --otlp "$N.json"
# malformed input: 3
row 3 step          emit --check step job=x step=abc
row 3 key=value     emit --check step job=x garbage
# bad flag: 2
for c in $cmds; do
    case $c in
    sim) row 2 --bogus sim examples/scenarios/demo.conf --bogus ;;
    trace) row 2 --bogus trace --bogus "$N.json" ;;
    cluster) row 2 --bogus cluster helios "$N.csv" --bogus ;;
    attrib) row 2 --bogus attrib jobs --db "$tmp/ok.db" --bogus ;;
    compare) row 2 --bogus compare --db "$tmp/ok.db" a b --bogus ;;
    emit) row 2 --bogus emit --bogus ;;
    logs) row 2 --bogus logs "$N.log" --profile megatron --bogus ;;
    workflows) row 2 --bogus workflows --otlp "$N.json" --bogus ;;
    analyze) row 2 --bogus analyze --prometheus http://127.0.0.1:1 --bogus ;;
    *) row 2 --bogus "$c" --db "$tmp/ok.db" --bogus ;;
    esac
done
# bad value: 2
row 2 --interval    agent --db "$tmp/a.db" --source sim:x --interval soon
row 2 --speed       demo --speed fast --no-live
row 2 --duration    demo --duration never --no-live
row 2 --slo-ttft    report --db "$tmp/ok.db" --slo-ttft soon
row 2 --interval    sim examples/scenarios/demo.conf --interval x
row 2 --top         diagnose --db "$tmp/ok.db" --top many --no-write
row 2 --max-inflate trace --max-inflate x "$N.json"
row 2 frob          cluster frob "$N.csv"
row 2 abc           attrib owner abc
row 2 --items       pipeline --db "$tmp/ok.db" --items lots
row 2 --listen      serve --db "$tmp/ok.db" --listen nowhere
row 2 --duration    serve --db "$tmp/ok.db" --duration never
row 2 --udp         emit --udp nowhere step job=x step=1
# a live source that cannot be reached: 1 (no NVML here, nothing on port 1)
env GOODPUT_NVML_LIBRARY="$N.so" LD_LIBRARY_PATH=/nonexistent \
    "$GOODPUT" agent --db "$tmp/n.db" --source nvml --no-socket --quiet --duration 1s 2>"$tmp/err"
rc=$?; [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && npass=$((npass + 1)) \
    || fail "agent --source nvml without a driver: exit $rc: $(cat "$tmp/err")"
"$GOODPUT" agent --db "$tmp/d.db" --source dcgm=http://127.0.0.1:1/metrics --no-socket --quiet \
    --duration 1s 2>"$tmp/err"
rc=$?; [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && npass=$((npass + 1)) \
    || fail "agent --source dcgm= unreachable: exit $rc: $(cat "$tmp/err")"
# a Prometheus that cannot be reached: 1
row 1 127.0.0.1:1   analyze --prometheus http://127.0.0.1:1 --from now-1h --to now
# attrib slurm-poll whose every poll failed: 1, and the last line says so.
"$GOODPUT" attrib slurm-poll --db "$tmp/sp.db" --max-s 1 --interval-ms 300 --squeue /bin/false \
    --sacct /bin/false 2>"$tmp/err"
rc=$?; [ $rc -eq 1 ] && tail -1 "$tmp/err" | grep -q 'every poll failed' && npass=$((npass + 1)) \
    || fail "slurm-poll with every poll failing: exit $rc: $(tail -1 "$tmp/err")"
# a demo that never ran (bad option, value or scenario) left nothing in TMPDIR
left=$(find "$tmp/t" -maxdepth 1 -name 'goodput-demo-*')
[ -z "$left" ] && npass=$((npass + 1)) || fail "a failed demo left $left"
# readers open the store read-only: the store's bytes do not change.
sum=$(sha256sum <"$tmp/ok.db")
for c in "report --db $tmp/ok.db" "report --db $tmp/ok.db --json" "attrib jobs --db $tmp/ok.db" \
    "diagnose --db $tmp/ok.db --no-write" "pipeline --db $tmp/ok.db"; do
    # shellcheck disable=SC2086
    "$GOODPUT" $c >/dev/null 2>&1
done
[ "$(sha256sum <"$tmp/ok.db")" = "$sum" ] && npass=$((npass + 1)) || fail "a reader changed the store"
# the flags each row above uses are in that command's --help.
for c in $cmds; do
    "$GOODPUT" "$c" --help >"$tmp/help"
    for f in $(grep -oE "^row [0-9] [^ ]+ +$c .*" "$0" | grep -oE -- ' --[a-z][a-z-]+' | sort -u); do
        [ "$f" = --bogus ] && continue
        grep -qF -- "$f" "$tmp/help" || fail "$c --help does not document $f"
    done
done
echo "errors_cli: $npass passed, $nfail failed"
[ $nfail -eq 0 ]
