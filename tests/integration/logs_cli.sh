#!/usr/bin/env bash
# logs_cli.sh: `goodput logs` on real excerpts (tests/data/logs, sources in
# tests/data/SOURCES.md) and `goodput agent --log` following a log that grows, is rotated
# and is truncated while the agent runs.
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
SRC=${GOODPUT_SRC:-.}
D="$SRC/tests/data/logs"
tmp=$(mktemp -d)
trap 'kill $apid 2>/dev/null || true; rm -rf "$tmp"' EXIT
apid=
fail() { echo "FAIL: $*" >&2; exit 1; }

# Offline: the summary as JSON; numbers are the log's own.
"$GOODPUT" logs "$D/megatron.log" --profile megatron --json > "$tmp/m.json"
python3 - "$tmp/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["steps"] == 4 and d["first_step"] == 122 and d["last_step"] == 125, d
assert abs(d["step_p50_s"] - 88.4734) < 1e-6, d["step_p50_s"]
assert d["evaluation_s"] is None and d["restarts"] == 0, d  # unknown is null, not 0
assert d["times_from_log"] is False
assert len(d["events"]) == 4 and d["events"][0].startswith("step job=megatron.log step=122 ")
PY
# Events are protocol lines with the log's own timestamps (DeepSpeed, 2022-03-11 UTC).
"$GOODPUT" logs "$D/deepspeed.log" --profile deepspeed --job ds-1 --events > "$tmp/ds.txt"
[ "$(wc -l < "$tmp/ds.txt")" -eq 3 ] || fail "deepspeed: $(cat "$tmp/ds.txt")"
grep -qx "step job=ds-1 step=40 ts=1646964418985000000" "$tmp/ds.txt" || fail "ds line: $(head -1 "$tmp/ds.txt")"
# Wrong profile: nothing matches, exit 3; unknown profile: usage.
set +e
"$GOODPUT" logs "$D/megatron.log" --profile torchtitan > /dev/null 2> "$tmp/e"; rc=$?
set -e
[ $rc -eq 3 ] && grep -q "matched profile 'torchtitan'" "$tmp/e" || fail "wrong profile rc=$rc"
set +e; "$GOODPUT" logs "$D/megatron.log" --profile nope 2> "$tmp/e"; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "no profile 'nope'" "$tmp/e" || fail "unknown profile rc=$rc"
set +e; "$GOODPUT" agent --source sim:x --db "$tmp/x.db" --log bad 2> "$tmp/e"; rc=$?; set -e
[ $rc -eq 2 ] && grep -q "expected JOB=PATH:PROFILE" "$tmp/e" || fail "--log bad rc=$rc"

# Live: the agent follows a log; existing content is skipped (tail from the end).
log="$tmp/train.log"
sed -n 1p "$D/megatron.log" > "$log"
"$GOODPUT" agent --source sim:"$SRC/examples/scenarios/restarts.conf" --db "$tmp/a.db" \
    --no-socket --speed 1 --duration 7s --interval 500ms --quiet \
    --log "mega-1=$log:megatron" &
apid=$!
sleep 1.2
sed -n 2p "$D/megatron.log" >> "$log"
sleep 1.2
mv "$log" "$log.1"                     # rotation: a new inode at the path
sed -n 3p "$D/megatron.log" > "$log"
sleep 1.2
: > "$log"                             # truncation in place (copytruncate)
sleep 0.8                              # seen shorter before it grows again
sed -n 4p "$D/megatron.log" >> "$log"
wait $apid
apid=
steps=$(sqlite3 "$tmp/a.db" "select group_concat(step) from (select step from events where job_id='mega-1' and kind=2 order by ts_ns)")
[ "$steps" = "123,124,125" ] || fail "steps from the live log: '$steps' (want 123,124,125)"
echo "ok: goodput logs offline and agent --log across rotation and truncation"
