#!/bin/sh
# trace_detect.sh: `goodput trace` picks each file's format from its content (not its name)
# and names the choice on stderr; content that is neither Kineto nor Nsight exits 3 naming
# what was expected.
set -eu
G=${GOODPUT:-build/goodput}
DATA=${GOODPUT_DATA:-../shared/data}
[ -d "$DATA/kineto/param_dlrm_8rank" ] || { echo "skip: no real data at $DATA (kineto/param_dlrm_8rank)"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
f=$(ls "$DATA/kineto/param_dlrm_8rank" | head -1)
# a real Kineto trace under a name that says nothing
cp "$DATA/kineto/param_dlrm_8rank/$f" "$T/rank0.trace"
"$G" trace "$T/rank0.trace" > /dev/null 2> "$T/err"
grep -qx "goodput: trace: format kineto (1 file, chosen from content)" "$T/err" || { echo "no kineto choice: $(cat "$T/err")"; exit 1; }
printf 'step,time\n1,2\n' > "$T/steps.json"
set +e
"$G" trace "$T/steps.json" > /dev/null 2> "$T/err"; rc=$?
set -e
[ "$rc" = 3 ] || { echo "unknown content: exit $rc, want 3"; exit 1; }
grep -q "steps.json: not a trace goodput knows; expected a Kineto trace" "$T/err" || { echo "unknown content error: $(cat "$T/err")"; exit 1; }
[ "$(wc -l < "$T/err")" -eq 1 ] || { echo "error is not one line: $(cat "$T/err")"; exit 1; }
echo "trace_detect: ok"
