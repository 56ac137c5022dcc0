#!/usr/bin/env bash
# docs_refs.sh: every document the program, README, docs and clients point users to
# (`docs/NAME.md` in a help text, an error, `goodput demo`'s "Try next") exists. A
# renamed or never-written page sends a new user nowhere (the demo once named
# docs/report.md, which did not exist).
# asan-skip: reads text files only; no C path runs
set -euo pipefail
cd "${GOODPUT_SRC:-$(dirname "$0")/../..}"
refs=$(grep -rhoE 'docs/[A-Za-z0-9_./-]+\.md' src README.md docs clients | sort -u)
[ -n "$refs" ] || { echo "FAIL: found no docs/ references at all (pattern broken?)"; exit 1; }
missing=0
for f in $refs; do
  if [ ! -f "$f" ]; then
    echo "FAIL: $f is referenced but does not exist: $(grep -rlF "$f" src README.md docs clients | head -3 | tr '\n' ' ')"
    missing=$((missing + 1))
  fi
done
[ $missing -eq 0 ] || exit 1
echo "docs_refs: $(echo "$refs" | wc -l) referenced documents exist"
