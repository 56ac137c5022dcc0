#!/usr/bin/env bash
# text_width.sh: text output is readable by default (issue 23 item 6), for every command:
#  - on the demo store (report, diagnose, diagnose --windows, top --once, attrib jobs,
#    compare, pipeline), the shared real data (trace on every Kineto folder and Nsight
#    export, cluster on each cluster format there, analyze on the shared dcgm-exporter and
#    vLLM captures through a real Prometheus), and the repo's fixtures (logs, Ray stats,
#    workflows, sim --summary of every scenario, the help of every command): every line fits
#    100 columns, and none prints nan, inf, -1 or -0% for an unknown;
#  - with --wide (accepted by each of them) the 8-rank trace and the Nsight export show lines
#    over 100 columns: whole kernel names; a name shortened in 100 columns keeps its start
#    and its end around "..." (never cut at the end mid-token);
#  - repeated findings are grouped: the 8-rank trace shows each class once with its ranks
#    listed ("ranks 0-7") and its fix once, groups ranked by waste, and its JSON keeps every
#    finding with a finding_groups array that accounts for all of them;
#  - colour only on a terminal (driven with `script`): escape codes with TERM set, none
#    with NO_COLOR=1, none piped;
#  - the progress bar appears on stderr on a terminal and never in a pipe or with --json
#    (GOODPUT_PROGRESS_AFTER_MS=0 shows it at once instead of after 2 s).
# asan-skip: layout only; the renderers' memory paths run under ASan in test_text_fmt, test_wrap and test_cluster
set -euo pipefail
. "$(dirname "$0")/http_lib.bash"
SRC=${GOODPUT_SRC:-$PWD}
GOODPUT=${GOODPUT:-$SRC/build/goodput}
DATA="$SRC/../shared/data"
for t in python3 script prometheus promtool curl; do
    command -v "$t" >/dev/null || { echo "FAIL: $t missing (scripts/install-deps installs it)"; exit 1; }
done
[ -d "$DATA/kineto" ] || { echo "FAIL: shared data missing at $DATA"; exit 1; }
# Under /tmp, not TMPDIR: the outputs quote the store's path, and the widths below are
# those of a short one, as a user's usually is.
tmp=$(mktemp -d /tmp/gp-width-XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
out="$tmp/out"; wide="$tmp/wide"
mkdir -p "$out" "$wide"
# run NAME ARGS...: text into $out/NAME.txt (exit 0). runw: also with --wide into
# $wide/NAME.txt (each command's --wide is run at least once; the rest stay narrow to keep
# the script short).
run() {
    local name=$1; shift
    "$GOODPUT" "$@" >"$out/$name.txt" 2>"$tmp/err" || fail "goodput $*: exit $?: $(cat "$tmp/err")"
}
runw() {
    run "$@"
    local name=$1; shift
    "$GOODPUT" "$@" --wide >"$wide/$name.txt" 2>"$tmp/err" || fail "goodput $* --wide: exit $?: $(cat "$tmp/err")"
}

# --- the demo store
"$GOODPUT" demo --duration 10m --speed 0 --no-live --db "$tmp/demo.db" >"$out/demo.txt"
runw report report --db "$tmp/demo.db"
run diagnose diagnose --db "$tmp/demo.db" --all --no-write
runw diagnose-windows diagnose --db "$tmp/demo.db" --windows --window 10m --no-write
runw top top --db "$tmp/demo.db" --once
runw attrib-jobs attrib jobs --db "$tmp/demo.db"
runw compare compare --db "$tmp/demo.db" train-healthy train-starved
# the demo has no pipeline job: exit 3 with one line saying so (its width is checked below)
set +e; "$GOODPUT" pipeline --db "$tmp/demo.db" >"$out/pipeline.txt" 2>&1; rc=$?; set -e
[ "$rc" -eq 3 ] && [ "$(wc -l <"$out/pipeline.txt")" -eq 1 ] &&
    grep -q "no job in .* has stage events" "$out/pipeline.txt" ||
    fail "pipeline on a store without pipeline jobs: exit $rc: $(cat "$out/pipeline.txt")"
cmds=$("$GOODPUT" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} on&&/^$/{exit}')
for c in $cmds; do
    "$GOODPUT" "$c" --help >"$out/help-$c.txt"
done
"$GOODPUT" --help >"$out/help.txt"

# --- shared real data: every trace set, every cluster format with work in it
for d in "$DATA"/kineto/*/; do
    case $d in *param_dlrm_8rank*) runw "trace-$(basename "$d")" trace "$d" ;; *) run "trace-$(basename "$d")" trace "$d" ;; esac
done
for f in "$DATA"/nsys/*.sqlite; do runw "trace-$(basename "$f" .sqlite)" trace "$f"; done
run cluster-v2023 cluster auto "$DATA/cluster/v2023"
runw cluster-v2026_genai cluster auto "$DATA/cluster/v2026_genai"
# PAI 2020 is there as headers and the machine list only: one line naming the missing tables
set +e; "$GOODPUT" cluster auto "$DATA/cluster/v2020" >"$out/cluster-v2020.txt" 2>"$tmp/err"; rc=$?; set -e
[ "$rc" -eq 3 ] && [ ! -s "$out/cluster-v2020.txt" ] && [ "$(grep -vc '^goodput: cluster: format' "$tmp/err")" -eq 1 ] ||
    fail "cluster v2020: exit $rc: $(cat "$tmp/err")"

# --- repo fixtures: logs, Ray stats, workflows, every scenario's summary
for p in megatron:megatron hf:hf_trainer lightning:lightning torchtitan:torchtitan deepspeed:deepspeed; do
    "$GOODPUT" logs "$SRC/tests/data/logs/${p#*:}.log" --profile "${p%%:*}" >"$out/logs-${p%%:*}.txt"
done
runw logs-profiles logs --list-profiles
runw ray pipeline --ray-stats "$SRC/tests/data/ray/resnet_batch_inference.stats.txt"
"$GOODPUT" workflows --otlp "$SRC/tests/unit/otlp_seed.json" >"$out/workflows.txt" 2>/dev/null
"$GOODPUT" workflows --otlp "$SRC/tests/unit/otlp_seed.json" --wide >"$wide/workflows.txt" 2>/dev/null
for s in "$SRC"/examples/scenarios/*.conf; do run "sim-$(basename "$s" .conf)" sim "$s" --summary; done
"$GOODPUT" sim "$SRC/examples/scenarios/consumer.conf" --summary --wide >"$wide/sim-consumer.txt"

# --- analyze: the shared dcgm-exporter and vLLM captures backfilled into a real Prometheus
RT=1717372800
python3 "$SRC/tests/integration/analyze/prom2om.py" "$tmp/real.om" $RT 30 20 \
    "$DATA/prom/dcgm_exporter_t4.txt" "$DATA/prom/vllm_v0.txt"
promtool tsdb create-blocks-from openmetrics "$tmp/real.om" "$tmp/prom" >/dev/null
port=$(free_port)
printf 'global:\n  scrape_interval: 30s\n' >"$tmp/prom.yml"
prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/prom" --storage.tsdb.retention.time=100y \
    --web.listen-address="127.0.0.1:$port" >"$tmp/prom.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || fail "prometheus not ready: $(tail -3 "$tmp/prom.log")"
runw analyze analyze --prometheus "http://127.0.0.1:$port" --from $((RT - 600)) --to $RT

# --- every line within 100 columns; no unknown printed as a number
bad=0
n=0
for f in "$out"/*.txt; do
    n=$((n + 1))
    w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$f")
    if [ "$w" -gt 100 ]; then
        echo "FAIL $(basename "$f") is $w columns wide:"; awk 'length($0) > 100' "$f" | head -3
        bad=1
    fi
    if grep -nE '(^|[^A-Za-z_])-?(nan|inf)([^A-Za-z_]|$)|(^|[ (=])-1([ ,)%]|$)|(^|[ (])-0(\.0+)?%' "$f" | head -3 | grep .; then
        echo "FAIL $(basename "$f") prints an unknown as a number (above)"; bad=1
    fi
done
echo "text_width: $n outputs checked"
[ -s "$out/report.txt" ] && [ "$(wc -l <"$out/diagnose.txt")" -gt 10 ] || fail "empty report or diagnose"
for pat in 'productiv ' 'idle_allo ' ' 1 items' 'ALLOC_GH' 'PRODUCTIVE_GH'; do
    if grep -qF -- "$pat" "$out/report.txt" "$out/demo.txt"; then echo "FAIL prints '$pat'"; bad=1; fi
done
[ $bad -eq 0 ] || exit 1

# --- --wide: longer lines where there is more to show
for name in trace-param_dlrm_8rank trace-cloverleaf; do
    w=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$wide/$name.txt")
    [ "$w" -gt 100 ] || fail "$name --wide is only $w columns: the whole kernel names are missing"
done
# names shortened in 100 columns keep start and end of a name --wide shows whole
python3 - "$out/trace-param_dlrm_8rank.txt" "$wide/trace-param_dlrm_8rank.txt" <<'PY'
import re, sys
def kernels(p):
    t = open(p).read().split("\nTop kernels\n")[1].split("\n\n")[0]
    return [re.split(r" µs  ", l, 1)[1] for l in t.splitlines() if " µs  " in l]
narrow, whole = kernels(sys.argv[1]), kernels(sys.argv[2])
assert len(narrow) == len(whole) >= 8, (len(narrow), len(whole))
short = 0
for n, w in zip(narrow, whole):
    if n == w: continue
    short += 1
    head, tail = n.split("...")
    assert w.startswith(head) and w.endswith(tail) and len(head) >= 20, (n, w)
assert short >= 8, short
print(f"kernel names: {short} shortened in the middle, none cut at the end")
PY

# --- grouped findings: the 8-rank trace
python3 - "$out/trace-param_dlrm_8rank.txt" <<'PY'
import re, sys
t = open(sys.argv[1]).read().split("\nFindings (")[1]
n = int(t.split(",")[0])
heads = re.findall(r"^ *(\d+)\. (\w+) (?:on (\d+) ranks|rank \d+), ([0-9.e+-]+) GPU-s wasted$", t, re.M)
assert heads, t
classes = [h[1] for h in heads]
wastes = [float(h[3]) for h in heads]
assert sum(int(h[2] or 1) for h in heads) == n, (heads, n)
assert wastes == sorted(wastes, reverse=True), wastes
assert t.count("\n    fix: ") == len(heads), "one fix per group"
assert any(h[2] == "8" for h in heads) and "\n    ranks 0-7\n" in t, t
print(f"trace findings: {n} in {len(heads)} groups {classes}, ranked by waste")
PY
"$GOODPUT" trace "$DATA/kineto/param_dlrm_8rank" --json >"$tmp/dlrm.json" 2>"$tmp/err" ||
    fail "trace --json: exit $?: $(cat "$tmp/err")"
python3 - "$tmp/dlrm.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
g = r["finding_groups"]
assert sum(x["findings"] for x in g) == len(r["findings"]) > len(g), (len(r["findings"]), g)
assert all(len(x["scopes"]) == x["findings"] for x in g)
print(f"trace JSON: {len(r['findings'])} findings kept, {len(g)} groups beside them")
PY

# --- colour: only on a terminal, never with NO_COLOR
tty_run() { TERM=xterm script -qec "$1" /dev/null; }
tty_run "'$GOODPUT' diagnose --db '$tmp/demo.db' --no-write --top 3" >"$tmp/tty.txt"
grep -q $'\e\\[33m' "$tmp/tty.txt" || fail "no colour on a terminal: $(head -3 "$tmp/tty.txt")"
NO_COLOR=1 tty_run "'$GOODPUT' diagnose --db '$tmp/demo.db' --no-write --top 3" >"$tmp/nocolor.txt"
grep -q 'idle_allocated' "$tmp/nocolor.txt" && ! grep -q $'\e\\[' "$tmp/nocolor.txt" ||
    fail "NO_COLOR=1 on a terminal still colours (or printed nothing)"
tty_run "'$GOODPUT' cluster auto '$DATA/cluster/v2026_genai' 2>/dev/null" >"$tmp/tty-cl.txt"
grep -q $'\e\\[1mVERDICT:' "$tmp/tty-cl.txt" || fail "cluster VERDICT not bold on a terminal"
! grep -q $'\e\\[' "$out"/*.txt || fail "escape codes in piped output: $(grep -l $'\e\\[' "$out"/*.txt)"

# --- progress bar: on a terminal's stderr only
export GOODPUT_PROGRESS_AFTER_MS=0
tty_run "'$GOODPUT' trace '$DATA/kineto/hta_df_index_resolver' >/dev/null" >"$tmp/bar.txt"
grep -q 'reading traces \[#' "$tmp/bar.txt" || fail "no progress bar for trace on a terminal: $(cat -v "$tmp/bar.txt" | head -3)"
tty_run "'$GOODPUT' cluster auto '$DATA/cluster/v2026_genai' >/dev/null" >"$tmp/bar-cl.txt"
grep -q 'reading pod_gpu_' "$tmp/bar-cl.txt" || fail "no progress bar for the cluster reader on a terminal"
tty_run "'$GOODPUT' sim '$SRC/examples/scenarios/demo.conf' --summary >/dev/null" >"$tmp/bar-sim.txt"
grep -q 'simulating \[' "$tmp/bar-sim.txt" || fail "no progress bar for sim on a terminal"
tty_run "'$GOODPUT' logs '$SRC/tests/data/logs/megatron.log' --profile megatron >/dev/null" >"$tmp/bar-logs.txt"
grep -q 'reading log \[' "$tmp/bar-logs.txt" || fail "no progress bar for logs on a terminal"
tty_run "'$GOODPUT' trace '$DATA/kineto/hta_df_index_resolver' --json >/dev/null" >"$tmp/bar-json.txt"
! grep -q 'reading traces' "$tmp/bar-json.txt" || fail "progress bar with --json"
"$GOODPUT" trace "$DATA/kineto/hta_df_index_resolver" >"$tmp/piped.txt" 2>&1
"$GOODPUT" cluster auto "$DATA/cluster/v2026_genai" >>"$tmp/piped.txt" 2>&1
! grep -q $'reading\|\r' "$tmp/piped.txt" || fail "progress bar in a pipe"
echo "text_width: ok"
