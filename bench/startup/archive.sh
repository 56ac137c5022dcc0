#!/usr/bin/env bash
# bench/startup/archive.sh IN.a OUT.a TAG: copies a Debian static library for the goodput
# binary's link (mk/startup.mk) with each member's .text and .rodata renamed
# .text.TAG.MEMBER and .rodata.TAG.MEMBER (objcopy --rename-section; code and relocations
# are untouched). Debian builds these archives without -ffunction-sections, and gold's
# --section-ordering-file matches section names only, so without the rename every member's
# code is one ".text" that cannot be placed; with it bench/startup/hot.order can put the
# members `report` runs (SQLite's parser, VDBE, b-tree, pager, ...) next to each other and
# leave the rest (FTS3/5, R-tree, session, ...) in pages that are never faulted in.
set -euo pipefail
in=$1 out=$2 tag=$3
# ar x keeps one file per name: an archive with two members of one name cannot be copied so
if [ -n "$(ar t "$in" | sort | uniq -d)" ]; then
    echo "archive.sh: $in has members of the same name; link it as it is (STATIC_LIBS=0)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && ar x "$in")
members=()
# ar t keeps the archive's order (the order the linker would pull members in)
while IFS= read -r m; do
    objcopy --rename-section ".text=.text.$tag.${m%.o}" \
        --rename-section ".rodata=.rodata.$tag.${m%.o}" "$tmp/$m"
    members+=("$tmp/$m")
done < <(ar t "$in")
rm -f "$out.tmp"
ar rcs "$out.tmp" "${members[@]}"
mv "$out.tmp" "$out"
