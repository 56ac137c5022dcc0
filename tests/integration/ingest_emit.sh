#!/usr/bin/env bash
# `goodput emit` from a shell: events reach gp_ingest; bad lines fail here with the reason;
# with no agent it fails fast and says so.
set -eu
cd "${GOODPUT_SRC:-.}"
BUILD=${BUILD:-build}
GOODPUT=${GOODPUT:-$BUILD/goodput}
. tests/integration/ingest_lib.bash
build_recv
dir=$(mktemp -d "${TMPDIR:-/tmp}/gp-emit-XXXXXX")
trap 'rm -rf "$dir"' EXIT
sock=$dir/g.sock
"$INGEST_RECV" "$sock" 127.0.0.1:0 >"$dir/out" &
pid=$!
for _ in $(seq 50); do grep -q '#ready' "$dir/out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^#ready udp_port=//p' "$dir/out")

GOODPUT_JOB=shell-1 "$GOODPUT" emit --socket "$sock" phase name=checkpoint_save edge=begin
"$GOODPUT" emit --socket "$sock" job job=nightly state=ended name="nightly eval" exit=0
"$GOODPUT" emit --udp "127.0.0.1:$port" step job=u step=7 units=4096
# a typo fails locally with the reason, exit 2, and sends nothing
if "$GOODPUT" emit --socket "$sock" step job=x step=seven 2>"$dir/err"; then
  echo "FAIL: bad step accepted"; exit 1
fi
grep -q "field 'step'" "$dir/err"
line=$("$GOODPUT" emit --check step job=c step=1)
case "$line" in "step job=c step=1 ts="*) ;; *) echo "FAIL: --check printed '$line'"; exit 1 ;; esac
sleep 0.2
kill -TERM $pid; wait $pid
cat "$dir/out"
grep -q '^phase job=shell-1 name=checkpoint_save edge=begin ts=' "$dir/out"
grep -q '^job job=nightly state=ended name="nightly eval" exit=0 ts=' "$dir/out"
grep -q '^step job=u step=7 units=4096 ts=' "$dir/out"
grep -q '^#stats unix datagrams=2 received=2 parsed=2 rejected=0' "$dir/out"
grep -q '^#stats udp datagrams=1 received=1 parsed=1 rejected=0' "$dir/out"

# no agent (the --socket file is missing): exit 3 at once with a sentence naming the
# socket, never a hang
start=$(date +%s%N)
rc=0
"$GOODPUT" emit --socket "$dir/none.sock" step job=x step=1 2>"$dir/err" || rc=$?
[ $rc -eq 3 ] || { echo "FAIL: emit without agent: exit $rc"; exit 1; }
grep -q "none.sock: .*is .goodput agent. running" "$dir/err"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 2000 ]
echo "ok"
