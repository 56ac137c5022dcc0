#!/usr/bin/env bash
# install.sh: `make install PREFIX=...` (issue 23), then the installed binary run from an
# empty directory with no source tree around: the built-in demo scenario, `serve --db` on
# the store it wrote, the generated man page (one section per command of `goodput
# --help`), the bash completion, and the Python client from PREFIX/lib/goodput/python.
# asan-skip: installs and runs the same binary paths serve_db.sh and sim_cli.sh cover
set -euo pipefail
SRC=${GOODPUT_SRC:-$PWD}
BUILD=${BUILD:-build}
command -v curl >/dev/null || { echo "skip: curl missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gp-install-XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
make -C "$SRC" --no-print-directory BUILD="$BUILD" install PREFIX="$tmp/prefix" >"$tmp/make.log"
gp=$tmp/prefix/bin/goodput
[ -x "$gp" ]
mkdir "$tmp/empty" && cd "$tmp/empty"
# The demo needs no file: its scenario is compiled in.
# Without --db the store goes to a new $TMPDIR/goodput-demo-* (here inside $tmp, so the
# trap removes it).
env -u GOODPUT_SCENARIOS TMPDIR="$tmp" "$gp" demo --duration 5m --speed 0 --no-live >"$tmp/demo.out" 2>"$tmp/demo.err"
[ -z "$(ls -A "$tmp/empty")" ]   # wrote nothing in the working directory
grep -q '^Try next:' "$tmp/demo.out"
db=$(sed -n 's/^Database: //p' "$tmp/demo.out")
[ -s "$db" ]
case $db in "$tmp"/goodput-demo-*/goodput.db) ;; *) echo "demo store at $db, not in TMPDIR"; exit 1 ;; esac
[ "$(grep -c '^  goodput [a-z]* --db ' "$tmp/demo.out")" -eq 3 ]
# Each suggested command runs and exits 0 on the demo's store.
grep '^  goodput [a-z]* --db ' "$tmp/demo.out" | grep -v ' serve ' | while read -r _ cmd rest; do
    # shellcheck disable=SC2086
    "$gp" "$cmd" $rest >/dev/null
done
"$gp" report --db "$db" --json >"$tmp/report.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"]; assert len(j)>=5, j' "$tmp/report.json"
# serve --db on that store.
"$gp" serve --db "$db" --listen 127.0.0.1:0 --duration 30s 2>"$tmp/serve.err" &
pid=$!
for _ in $(seq 50); do grep -q ' on http://' "$tmp/serve.err" && break; sleep 0.1; done
url=$(sed -n 's/.* on \(http:[^ ]*\) .*/\1/p' "$tmp/serve.err")
curl -sf "${url}api/v1/jobs" | python3 -c 'import json,sys; assert len(json.load(sys.stdin)["jobs"])>=5'
kill "$pid"; wait "$pid" || true; pid=
# The man page has a section for every command.
man=$tmp/prefix/share/man/man1/goodput.1
head -1 "$man" | grep -q '^\.TH GOODPUT 1'
for c in $("$gp" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{exit}'); do
    grep -qx ".SS goodput $c" "$man" || { echo "man page lacks $c"; exit 1; }
done
if command -v man >/dev/null; then man -l "$man" >/dev/null 2>&1; fi
# bash completion: commands, then the flags of one command.
bash -c "source '$tmp/prefix/share/bash-completion/completions/goodput'
COMP_WORDS=(goodput se); COMP_CWORD=1; _goodput; [ \"\${COMPREPLY[*]}\" = serve ]
COMP_WORDS=(goodput serve --li); COMP_CWORD=2; _goodput; [ \"\${COMPREPLY[*]}\" = --listen ]"
[ -s "$tmp/prefix/share/zsh/site-functions/_goodput" ]
[ -s "$tmp/prefix/share/goodput/scenarios/demo.conf" ]
# The Python client, the Debian way (no pip): PYTHONPATH.
PYTHONPATH=$tmp/prefix/lib/goodput/python python3 -c \
    'import goodput, sys; assert goodput.__file__.startswith(sys.argv[1]), goodput.__file__' "$tmp/prefix"
man_lines=$(wc -l <"$man")
make -C "$SRC" --no-print-directory BUILD="$BUILD" uninstall PREFIX="$tmp/prefix" >/dev/null
[ ! -e "$gp" ]
echo "install: ok ($man_lines man lines)"
