#!/usr/bin/env bash
# bench/startup/order.sh [GOODPUT]: writes bench/startup/hot.order, the link order of the
# code `goodput --version` and `goodput report` (text, on the demo scenario's 1-, 10- and
# 60-minute stores: the hour's report labels its long jobs in slices) execute, for gold's --section-ordering-file (mk/startup.mk):
#   1. the members of the static archives the binary links (BUILD/static/*.a, sections
#      renamed by bench/startup/archive.sh) that run any function, one `.text.TAG.MEMBER`
#      a line, the sparsest first: a large member with one hot function (FTS5's init) at
#      the cold edge costs the window around that function, not its whole size;
#   2. goodput's own functions that run, one `.text.NAME` a line (-ffunction-sections);
#   3. the read-only data `report` (1-minute store) loads, measured with valgrind's lackey:
#      `.rodata.TAG.MEMBER` of the archive members it is in (SQLite's global.o tables have
#      no code), `.rodata.NAME` of goodput's own constants (-fdata-sections), then the
#      rodata of the members with hot code, then `.rodata*`: gold places listed sections
#      after unlisted ones, so without the catch-all the hot read-only data would be at the
#      far end of .rodata (past the web assets) instead of next to the hot code. String
#      literals are merged into one section and cannot be ordered.
# So those commands fault in a few 64 KiB windows of the binary instead of nearly all of it
# (docs/benchmarks.md, "Start-up and libraries"). Needs valgrind (callgrind, lackey) and
# binutils.
# A stale list only costs pages: a function missing from it is still linked, before the
# listed ones.
set -euo pipefail
cd "$(dirname "$0")/../.."
GOODPUT=${1:-build/goodput}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for m in 1 10 60; do
    "$GOODPUT" agent --source sim:examples/scenarios/demo.conf --speed 0 --duration ${m}m \
        --no-socket --quiet --db "$TMP/${m}m.db"
done
bin=$(readlink -f "$GOODPUT")
n=0
for cmd in "--version" "report --db $TMP/1m.db" "report --db $TMP/10m.db" \
    "report --db $TMP/60m.db"; do
    n=$((n + 1))
    # shellcheck disable=SC2086 # word splitting of the command is intended
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.$n" "$GOODPUT" $cmd >/dev/null 2>&1
    callgrind_annotate --threshold=100 "$TMP/cg.$n" 2>/dev/null | grep -F "[$bin]" >>"$TMP/fns"
done
# Data loads of report on the 1-minute store, as offsets into the binary: the first
# instruction run below valgrind's own area (0x4000000) is the entry point, which gives the
# load base.
entry=$(readelf -h "$GOODPUT" | awk '/Entry point/ {print strtonum($4)}')
size=$(stat -c %s "$GOODPUT")
valgrind --tool=lackey --trace-mem=yes --log-fd=3 "$GOODPUT" report --db "$TMP/1m.db" \
    3>&1 >/dev/null 2>/dev/null | awk -v entry="$entry" -v size="$size" '
    $1 == "I" && base == "" {a = strtonum("0x" substr($2, 1, index($2, ",") - 1))
                             if (a < 0x4000000) base = a - entry; next}
    ($1 == "L" || $1 == "M") && base != "" {
        a = strtonum("0x" substr($2, 1, index($2, ",") - 1)) - base
        if (a >= 0 && a < size && !seen[int(a / 8)]++) print a}' >"$TMP/loads"
# offset -> the symbol around it (nm -S of the binary: r, R, d, D objects)
nm -S --defined-only "$GOODPUT" | awk 'NF == 4 && $3 ~ /^[rR]$/ {
    print strtonum("0x" $1), strtonum("0x" $2), $4}' | sort -n >"$TMP/rsyms"
awk 'FILENAME == ARGV[1] {lo[n] = $1; hi[n] = $1 + $2; nm[n++] = $3; next}
     {a = $1; l = 0; h = n - 1
      while (l < h) {m = int((l + h + 1) / 2); if (lo[m] <= a) l = m; else h = m - 1}
      if (n && lo[l] <= a && a < hi[l] && !done[nm[l]]++) print nm[l]}' \
    "$TMP/rsyms" "$TMP/loads" >"$TMP/hotdata"
sed -E 's/.*:([A-Za-z_][A-Za-z0-9_.]*)(\x27[0-9]+)? \[.*/\1/' "$TMP/fns" | grep -v '^ ' |
    sort -u >"$TMP/hot"
# member -> its .text.TAG.MEMBER section and size; function -> member (archives' own symbols)
: >"$TMP/members"
: >"$TMP/syms"
: >"$TMP/rmembers"
: >"$TMP/rsyms_lib"
for a in "$(dirname "$GOODPUT")"/static/*.a; do
    [ -e "$a" ] || continue
    objdump -h "$a" | awk '/file format/ {m=$1; sub(/:$/, "", m); b=m; sub(/\.o$/, "", b)}
        $2 ~ /^\.text\./ && m != "" && split($2, q, ".") == 4 && q[4] == b {
            print m, $2, strtonum("0x" $3)}' >>"$TMP/members"
    nm -A --defined-only "$a" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[tTwW]$/ {
        n = split($1, p, ":"); print $3, p[n - 1]}' >>"$TMP/syms"
    # member -> its .rodata.TAG.MEMBER; constant -> member
    objdump -h "$a" | awk '/file format/ {m=$1; sub(/:$/, "", m); b=m; sub(/\.o$/, "", b)}
        $2 ~ /^\.rodata\./ && m != "" && split($2, q, ".") == 4 && q[4] == b {print m, $2}' \
        >>"$TMP/rmembers"
    nm -A --defined-only "$a" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[rR]$/ {
        n = split($1, p, ":"); print $3, p[n - 1]}' >>"$TMP/rsyms_lib"
done
# Objects linked ahead of the archives (BUILD/static/*.o: sqlite_lean.o) define some of
# their functions instead of the archive's members: those are goodput's own sections.
for o in "$(dirname "$GOODPUT")"/static/*.o; do
    [ -e "$o" ] || continue
    nm --defined-only "$o" | awk '$2 ~ /^[tT]$/ {print $3}'
done >"$TMP/own"
awk 'FILENAME == ARGV[1] {own[$1] = 1; next} !($1 in own)' "$TMP/own" "$TMP/syms" >"$TMP/syms2"
mv "$TMP/syms2" "$TMP/syms"
{
    echo "# made by bench/startup/order.sh: the code --version and report run, then its rodata"
    # members with a hot function: hot functions per KiB, ascending (sparsest first)
    awk 'FILENAME == ARGV[1] {hot[$1] = 1; next}
         FILENAME == ARGV[2] {if ($1 in hot) n[$2]++; next}
         ($1 in n) {printf "%.6f %s\n", n[$1] * 1024 / ($3 + 1), $2}' \
        "$TMP/hot" "$TMP/syms" "$TMP/members" | sort -n -k1,1 -k2,2 | cut -d' ' -f2 >"$TMP/lib"
    cat "$TMP/lib"
    awk 'FILENAME == ARGV[1] {lib[$1] = 1; next} !($1 in lib) {print ".text." $1}' \
        "$TMP/syms" "$TMP/hot"
    # the data report loads: its archive members' rodata, or the constant's own section
    awk 'FILENAME == ARGV[1] {sec[$1] = $2; next}
         FILENAME == ARGV[2] {mem[$1] = $2; next}
         ($1 in mem) {if (mem[$1] in sec) {s = sec[mem[$1]]} else next}
         !($1 in mem) {s = ".rodata." $1}
         !seen[s]++ {print s}' "$TMP/rmembers" "$TMP/rsyms_lib" "$TMP/hotdata" >"$TMP/dsec"
    cat "$TMP/dsec"
    tac "$TMP/lib" | sed 's/^\.text\./.rodata./' | grep -vxF -f "$TMP/dsec" || true
    echo '.rodata*'
} >bench/startup/hot.order
echo "bench/startup/hot.order: $(grep -c '^\.text\.' bench/startup/hot.order) code sections"
