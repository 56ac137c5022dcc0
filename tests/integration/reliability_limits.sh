#!/usr/bin/env bash
# reliability_limits.sh: graceful limits.
#  - An agent over a file-size limit (ulimit -f) is not killed by SIGXFSZ: it says why in
#    one line, exits 3, and the store keeps every committed flush (integrity ok).
#  - `goodput report` reads a store in a directory it may not write.
#  - `goodput trace`: a trace with no events exits 3 with one line "no events" (no nan);
#    a gzip that inflates past --max-inflate is refused at once; a bad size is a usage error.
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
for t in python3 sqlite3; do command -v $t >/dev/null || { echo "skip: $t missing"; exit 77; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-rel-limits-XXXXXX")
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { # expected-rc pattern command... : one line on stderr matching pattern
  local want=$1 pat=$2; shift 2
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc = "$want" ] || fail "$*: exit $rc, expected $want: $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$*: expected one line, got: $(cat "$tmp/err")"
  grep -q -- "$pat" "$tmp/err" || fail "$*: '$(cat "$tmp/err")' lacks '$pat'"
}

# --- file-size limit: 4 MiB per file, the demo needs far more
mkdir "$tmp/fs"
run 3 "File too large (a file-size limit: ulimit -f); the last committed flush is kept" \
  bash -c "ulimit -f 4096; exec \"$GOODPUT\" agent --source sim:$SRC/examples/scenarios/demo.conf \
    --db $tmp/fs/gp.db --speed 0 --no-socket --quiet"
[ "$(sqlite3 "$tmp/fs/gp.db" 'PRAGMA integrity_check')" = ok ] || fail "store damaged"
[ "$(sqlite3 "$tmp/fs/gp.db" 'SELECT count(*) FROM samples')" -gt 0 ] || fail "no flush kept"

# --- a store in a read-only directory
mkdir "$tmp/ro"
"$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --db "$tmp/ro/gp.db" \
  --speed 0 --no-socket --quiet --duration 10m
"$GOODPUT" report --db "$tmp/ro/gp.db" >"$tmp/rw.txt"
chmod 0644 "$tmp/ro/gp.db"
chmod 0555 "$tmp/ro"
chmod 0755 "$tmp"
as_reader=()
if [ "$(id -u)" = 0 ]; then # root may write anywhere: read as nobody
  command -v setpriv >/dev/null || { echo "skip: setpriv missing (needed to drop root)"; exit 77; }
  as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  chmod 0755 "$(dirname "$GOODPUT")" || fail "cannot let the reader reach $GOODPUT"
fi
"${as_reader[@]}" test ! -w "$tmp/ro" || fail "the directory is writable to the reader"
ls -l --time-style=full-iso "$tmp/ro" >"$tmp/ls.before"
"${as_reader[@]}" "$GOODPUT" report --db "$tmp/ro/gp.db" >"$tmp/ro.txt" 2>"$tmp/ro.err" ||
  fail "report in a read-only directory: $(cat "$tmp/ro.err")"
cmp -s "$tmp/rw.txt" "$tmp/ro.txt" || fail "read-only report differs"
ls -l --time-style=full-iso "$tmp/ro" >"$tmp/ls.after"
cmp -s "$tmp/ls.before" "$tmp/ls.after" || { diff "$tmp/ls.before" "$tmp/ls.after"; fail "the reader changed the directory"; }

# --- traces
echo '{"traceEvents": []}' >"$tmp/empty.json"
run 3 "empty.json: no events" "$GOODPUT" trace "$tmp/empty.json"
grep -qi nan "$tmp/out" && fail "nan printed"
python3 -c '
import gzip, sys
with gzip.open(sys.argv[1], "wb", compresslevel=9) as f:
    f.write(b"{\"traceEvents\": [")
    for _ in range(64): f.write(b" " * (1 << 20))
' "$tmp/bomb.json.gz"
start=$(date +%s%N)
run 3 "decompresses to more than 8388608 bytes (--max-inflate)" \
  "$GOODPUT" trace --max-inflate 8M "$tmp/bomb.json.gz"
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 5000 ] || fail "the cap took more than 5 s"
run 2 "--max-inflate 'lots'" "$GOODPUT" trace --max-inflate lots "$tmp/bomb.json.gz"
echo "reliability_limits: ok"
