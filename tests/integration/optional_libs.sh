#!/usr/bin/env bash
# optional_libs.sh: libcurl, libpq, libxml2 and libmicrohttpd are loaded only by the
# commands that use them (src/util/dl.h), and a missing one is said in one line.
#  - the binary does not link them, nor cmocka (readelf NEEDED);
#  - `goodput --version` and `goodput report --db` map none of them and at most 12 shared
#    objects in all (LD_DEBUG=files, ld.so included);
#  - where the binary does not link libm (mk/startup.mk: glibc's libm.a and
#    src/util/dl_m.c), --version and report do not map it and the simulator, which calls
#    exp and log, loads it on first call;
#  - with broken stand-ins for the four first on LD_LIBRARY_PATH (empty files, which the
#    loader refuses: "file too short"), --version and report still work, and agent
#    --scrape / --listen / dcgm= / smi:*.xml and report/diagnose --ledger exit 1 with one
#    line naming the library, its Debian package and the soname.
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
fail() { echo "FAIL: $*"; exit 1; }
command -v readelf >/dev/null || { echo "skip: readelf (binutils) missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-optional-libs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

needed=$(readelf -d "$GOODPUT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in libcurl libpq libxml2 libmicrohttpd libcmocka; do
  ! grep -q "^${lib}[.-]" <<<"$needed" || fail "$GOODPUT links $lib: $(tr '\n' ' ' <<<"$needed")"
done

"$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --speed 0 --duration 2m \
  --no-socket --quiet --db "$tmp/store.db" || fail "agent sim did not make a store"

mapped() { # command... -> the shared objects the loader maps, one a line
  LD_DEBUG=files "$@" 2>&1 >/dev/null | sed -n 's/.*file=\([^ ]*\) \[0\];  generating link map.*/\1/p'
}
for cmd in "--version" "report --db $tmp/store.db"; do
  # shellcheck disable=SC2086 # the command is split into words on purpose
  objs=$(mapped "$GOODPUT" $cmd)
  n=$(($(wc -l <<<"$objs") + 1)) # + ld.so itself
  [ "$n" -le 12 ] || fail "goodput $cmd maps $n shared objects: $(tr '\n' ' ' <<<"$objs")"
  ! grep -qE '^lib(curl|pq|xml2|microhttpd|cmocka)\.' <<<"$objs" ||
    fail "goodput $cmd maps an optional library: $(tr '\n' ' ' <<<"$objs")"
  if ! grep -q '^libm\.so' <<<"$needed"; then
    ! grep -q '^libm\.so' <<<"$objs" || fail "goodput $cmd maps libm: $(tr '\n' ' ' <<<"$objs")"
  fi
done
if ! grep -q '^libm\.so' <<<"$needed"; then
  objs=$(mapped "$GOODPUT" agent --source "sim:$SRC/examples/scenarios/demo.conf" --speed 0 \
    --duration 1m --no-socket --quiet --db "$tmp/m.db")
  grep -q '^libm\.so' <<<"$objs" || fail "the simulator did not load libm: $(tr '\n' ' ' <<<"$objs")"
  [ -s "$tmp/m.db" ] || fail "the simulator made no store with libm loaded on first call"
fi

mkdir "$tmp/broken"
for so in libcurl.so.4 libpq.so.5 libxml2.so.2 libmicrohttpd.so.12; do : >"$tmp/broken/$so"; done
export LD_LIBRARY_PATH="$tmp/broken${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

version=$("$GOODPUT" --version) || fail "--version without the optional libraries"
[[ $version =~ ^goodput\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version printed '$version'"
"$GOODPUT" report --db "$tmp/store.db" >"$tmp/report.txt" 2>"$tmp/report.err" ||
  fail "report without the optional libraries: $(cat "$tmp/report.err")"
grep -q '^train-healthy ' "$tmp/report.txt" || fail "report lacks the demo's jobs: $(head -3 "$tmp/report.txt")"
[ ! -s "$tmp/report.err" ] || fail "report said: $(cat "$tmp/report.err")"

needs() { # library package soname command... : exit 1 and exactly one line naming them
  local lib=$1 pkg=$2 so=$3; shift 3
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ $rc -eq 1 ] || fail "$*: exit $rc, expected 1 ($(cat "$tmp/err"))"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$*: expected one line, got: $(cat "$tmp/err")"
  grep -qF "goodput: this command needs $lib ($pkg): cannot load $so: $tmp/broken/$so" "$tmp/err" ||
    fail "$*: '$(cat "$tmp/err")' does not name $lib ($pkg) and $so"
}
SIM="sim:$SRC/examples/scenarios/demo.conf"
needs libcurl libcurl4 libcurl.so.4 "$GOODPUT" agent --source "$SIM" --db "$tmp/a.db" \
  --no-socket --duration 1s --scrape http://127.0.0.1:9/metrics
needs libcurl libcurl4 libcurl.so.4 "$GOODPUT" agent --source dcgm=http://127.0.0.1:9/metrics \
  --db "$tmp/a.db" --no-socket --duration 1s
needs libmicrohttpd libmicrohttpd12 libmicrohttpd.so.12 "$GOODPUT" agent --source "$SIM" \
  --db "$tmp/a.db" --no-socket --duration 1s --listen 127.0.0.1:0
needs libpq libpq5 libpq.so.5 "$GOODPUT" agent --source "$SIM" --db "$tmp/a.db" --no-socket \
  --duration 1s --ledger postgresql://127.0.0.1:9/x
needs libpq libpq5 libpq.so.5 "$GOODPUT" report --ledger postgresql://127.0.0.1:9/x
needs libpq libpq5 libpq.so.5 "$GOODPUT" diagnose --ledger postgresql://127.0.0.1:9/x
echo '<nvidia_smi_log></nvidia_smi_log>' >"$tmp/q.xml" # never read: the check comes first
needs libxml2 libxml2 libxml2.so.2 "$GOODPUT" agent --source "smi:$tmp/q.xml" --db "$tmp/a.db" \
  --no-socket --speed 0
[ ! -e "$tmp/a.db" ] || fail "an agent that lacked a library created its store"
echo "optional_libs: ok"
