#!/usr/bin/env bash
# `goodput agent --source dmon:FILE` end to end: a dcgmi dmon log (custom field list, two
# GPUs, three iterations, N/A) replayed through the agent into a store; the stored samples
# are the log's values (GPUTL 35/80/90 % on GPU 0), N/A stays unknown (NULL, never 0), and
# a log without GPU rows exits 3 with one line.
# asan-skip: the dmon reader runs under ASan in test_dmon; this adds the agent and store
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat >"$tmp/dmon.log" <<'LOG'
#Entity   TMPTR     POWER     GPUTL     FBUSD     SMACT     TENSO
ID        C         W                   MiB
GPU 0     41        70.512    35        1024      0.402     0.100
GPU 1     39        N/A       0         0         0.000     0.000
GPU 0     42        71.000    80        2048      0.810     0.500
GPU 1     39        60.250    N/A       0         0.000     0.000
GPU 0     43        72.000    90        2048      0.900     0.600
GPU 1     40        61.000    10        512       0.050     0.010
LOG
"$GOODPUT" agent --source "dmon:$tmp/dmon.log,interval=500" --interval 500ms --speed 0 \
  --db "$tmp/gp.db" --no-socket --quiet 2>"$tmp/err" || fail "agent: $(cat "$tmp/err")"
q() { sqlite3 "$tmp/gp.db" "$1"; }
[ "$(q "select count(*) from devices")" -eq 2 ] || fail "devices: $(q "select uuid from devices")"
u0=$(q "select group_concat(round(gpu_util, 2), ',') from (select gpu_util from samples where uuid = 'dmon-gpu-0' order by ts_ns)")
[ "$u0" = "0.35,0.8,0.9" ] || fail "GPU 0 utilization stored as '$u0', the log says 0.35,0.8,0.9"
[ "$(q "select count(*) from samples where uuid = 'dmon-gpu-1' and gpu_util is null")" -eq 1 ] ||
  fail "N/A utilization is not unknown: $(q "select gpu_util from samples where uuid = 'dmon-gpu-1'")"
[ "$(q "select count(*) from samples where uuid = 'dmon-gpu-1' and power_w is null")" -eq 1 ] ||
  fail "N/A power is not unknown"
printf '#Entity   TMPTR\nID        C\n' >"$tmp/empty.log"
set +e; "$GOODPUT" agent --source "dmon:$tmp/empty.log" --db "$tmp/x.db" --no-socket --quiet 2>"$tmp/err"; rc=$?; set -e
[ "$rc" -eq 3 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "no GPU rows: exit $rc: $(cat "$tmp/err")"
echo "dmon_replay: ok"
