#!/usr/bin/env bash
# top_tmux.sh: `goodput top --db` on a demo store, driven inside tmux like a user would:
# the job rows on screen (captured with `tmux capture-pane -p`) carry the goodput,
# utilization and allocated GPU-hours of `goodput report --json`; 'g' shows the GPU view,
# 'q' exits with status 0; and `--once` (and a pipe) print the same rows as text.
# asan-skip: drives a terminal program through tmux; the C paths run under ASan in the
# --once half of this script's normal run and in the unit tests of the engine it calls.
set -eu
SRC=${GOODPUT_SRC:-.}
command -v tmux >/dev/null || { echo "tmux missing (scripts/deps.d/top.txt)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing (scripts/install-deps installs it)"; exit 1; }
tmp=$(mktemp -d)
sock="gp-top-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
# The demo scenario cut to 12 simulated minutes keeps this script fast (~5 s of simulation).
sed 's/^duration = 1h/duration = 12m/' "$SRC/examples/scenarios/demo.conf" >"$tmp/demo.conf"
grep -q '^duration = 12m' "$tmp/demo.conf"
"$GOODPUT" demo --scenario "$tmp/demo.conf" --speed 0 --db "$tmp/gp.db" --no-live >/dev/null
"$GOODPUT" report --db "$tmp/gp.db" --json >"$tmp/report.json"

# check FILE WHAT: every job of the report has one row in FILE with its numbers.
check() {
  python3 - "$tmp/report.json" "$1" "$2" <<'PY'
import json, re, sys
rep = json.load(open(sys.argv[1]))["jobs"]
text = open(sys.argv[2]).read().splitlines()
what = sys.argv[3]
def pct(x): return "-" if x is None else "%.1f%%" % (100 * x)
hdr = [i for i, l in enumerate(text) if re.match(r"\s*JOB\*?\s+USER", l)]
if not hdr: sys.exit(f"{what}: no job table header on screen:\n" + "\n".join(text))
rows = {}
for l in text[hdr[0] + 1:]:
    f = l.split()
    if len(f) < 9 or f[0] in rows: continue
    rows[f[0]] = f
bad = 0
if len(rep) < 5: sys.exit(f"{what}: the demo store has only {len(rep)} jobs")
for j in rep:
    r = rows.get(j["id"][:18])
    if not r:
        print(f"{what}: no row for job {j['id']}"); bad = 1; continue
    want = {"GPUS": str(j["gpus"]), "ALLOC_GPU_H": "%.2f" % j["allocated_gpu_h"],
            "UTIL": pct(j["mean_gpu_util"]), "GOODPUT": pct(j["goodput"])}
    got = {"GPUS": r[4], "ALLOC_GPU_H": r[5], "UTIL": r[6], "GOODPUT": r[7]}
    for k in want:
        if want[k] != got[k]:
            print(f"{what}: job {j['id']} {k} {got[k]} on screen, report says {want[k]}"); bad = 1
if not any(j["goodput"] is not None for j in rep): print(f"{what}: no job with a goodput"); bad = 1
sys.exit(bad)
PY
}

# --once, and a pipe (not a terminal): plain text with the same rows.
"$GOODPUT" top --db "$tmp/gp.db" --once >"$tmp/once.txt"
check "$tmp/once.txt" "--once"
"$GOODPUT" top --db "$tmp/gp.db" | cat >"$tmp/pipe.txt"
cmp "$tmp/once.txt" "$tmp/pipe.txt" || { echo "piped output differs from --once"; exit 1; }

# The live view in a 200x50 tmux pane.
tmux -L "$sock" -f /dev/null new-session -d -s top -x 200 -y 50 \
  "$GOODPUT top --db '$tmp/gp.db' --interval 0.5; echo \"EXIT=\$?\" >'$tmp/exit'; sleep 60"
wait_for() { # wait_for PATTERN: until the pane shows it (10 s at most)
  for _ in $(seq 100); do
    tmux -L "$sock" capture-pane -p -t top >"$tmp/screen.txt"
    grep -q -- "$1" "$tmp/screen.txt" && return 0
    sleep 0.1
  done
  echo "the pane never showed '$1':"; cat "$tmp/screen.txt"; return 1
}
wait_for 'job view'
wait_for 'GOODPUT'
sleep 1.2 # past two refreshes: rows must still match after re-reading the store
wait_for 'job view'
check "$tmp/screen.txt" "tmux job view"
tmux -L "$sock" send-keys -t top g
wait_for 'GPU view'
grep -Eq '^IDX\*? +NAME +UTIL' "$tmp/screen.txt" || { echo "no GPU table header"; cat "$tmp/screen.txt"; exit 1; }
n_gpu=$(grep -Ec '^[0-9]+ +NVIDIA' "$tmp/screen.txt")
[ "$n_gpu" = 8 ] || { echo "GPU view shows $n_gpu GPU rows, expected 8"; cat "$tmp/screen.txt"; exit 1; }
tmux -L "$sock" send-keys -t top h
wait_for 'goodput top: keys'
tmux -L "$sock" send-keys -t top x   # any key closes the help
wait_for 'GPU view'
tmux -L "$sock" send-keys -t top q
for _ in $(seq 50); do [ -s "$tmp/exit" ] && break; sleep 0.1; done
[ "$(cat "$tmp/exit" 2>/dev/null)" = "EXIT=0" ] || { echo "'q' did not exit 0: $(cat "$tmp/exit" 2>/dev/null)"; exit 1; }
echo "top_tmux: ok ($(grep -c . "$tmp/once.txt") lines of --once; live view matched the report)"
