#!/usr/bin/env bash
# Local surface (issue 11): the event socket, its directory and the database (with its WAL
# and shared-memory files) are created owner-only, even under a permissive umask; the agent
# refuses a socket directory others can write; a token never reaches the logs; the
# attribution code keeps only the environ keys it needs (a secret in a process's
# environment never shows up in `goodput attrib owner --json`).
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
GOODPUT=$(realpath "$GOODPUT")
cd "${GOODPUT_SRC:-.}"
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mode() { stat -c %a "$1"; }

umask 000  # the agent must not depend on the caller's umask
mkdir -m 700 "$tmp/run"
"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/gp.db" --speed 60 \
    --socket "$tmp/run/sub/gp.sock" --flush 1s --quiet >"$tmp/agent.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/sub/gp.sock" ] && [ -e "$tmp/gp.db-wal" ] && break; sleep 0.1; done
[ -S "$tmp/run/sub/gp.sock" ] || fail "agent did not create its socket: $(cat "$tmp/agent.log")"
"$GOODPUT" emit --socket "$tmp/run/sub/gp.sock" step job=perm step=1 units=1
sleep 1.5
[ "$(mode "$tmp/run/sub/gp.sock")" = 600 ] || fail "socket mode $(mode "$tmp/run/sub/gp.sock"), want 600"
[ "$(mode "$tmp/run/sub")" = 700 ] || fail "socket directory mode $(mode "$tmp/run/sub"), want 700"
for f in "$tmp/gp.db" "$tmp/gp.db-wal" "$tmp/gp.db-shm"; do
    [ -e "$f" ] || continue
    m=$(mode "$f")
    [ $((8#$m & 8#077)) -eq 0 ] || fail "$f mode $m: readable or writable by others"
    echo "ok   $(basename "$f") mode $m"
done
echo "ok   socket 600 in a 700 directory (umask 000)"
kill -TERM $pid; wait $pid || fail "agent did not stop cleanly"

# A socket directory others can write is refused, not silently used.
mkdir -m 777 "$tmp/open"
set +e
"$GOODPUT" agent --source sim:examples/scenarios/demo.conf --db "$tmp/gp2.db" --speed 0 \
    --duration 10s --socket "$tmp/open/gp.sock" --quiet 2>"$tmp/err"
rc=$?
set -e
[ $rc -ne 0 ] || fail "agent used a world-writable socket directory"
grep -q "open to other users" "$tmp/err" || fail "unclear refusal: $(cat "$tmp/err")"
echo "ok   world-writable socket directory refused: $(cat "$tmp/err")"

# Attribution reads only the environ keys it needs: a secret beside them is not reported.
secret="hunter2-$$-$RANDOM"
env -i PATH=/usr/bin:/bin GOODPUT_JOB=perm-job AWS_SECRET_ACCESS_KEY="$secret" \
    PGPASSWORD="$secret" sleep 30 &
spid=$!
sleep 0.2
rc=0; "$GOODPUT" attrib owner --json $spid >"$tmp/owner.json" 2>"$tmp/owner.err" || rc=$?
kill $spid 2>/dev/null || true
[ $rc -eq 0 ] || fail "attrib owner exited $rc: $(cat "$tmp/owner.err")"
python3 - "$tmp/owner.json" "$spid" <<'PY' || fail "attrib owner did not report GOODPUT_JOB: $(cat "$tmp/owner.json")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["pid"] == int(sys.argv[2]) and o["job"] == "perm-job", o
PY
if grep -q "$secret" "$tmp/owner.json" "$tmp/owner.err"; then fail "a secret from the environment was reported"; fi
echo "ok   attrib owner reports GOODPUT_JOB and no other environ value"
umask 022
echo "ok"
