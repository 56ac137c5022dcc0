#!/usr/bin/env bash
# nvidia-smi capture replay through the agent (issue 17 item 5, issue 23): real captures
# from shared/data/smi are stored whole, bad input is a warning, no GPU rows is exit 3.
#  - an nvidia_gpu_exporter capture (query-gpu CSV, compute-apps, pmon, dmon; two
#    sections): every instant of the GPU is stored, the last one included; process rows
#    keep their memory (compute-apps) and SM share (pmon)
#  - -q -x XML v11/v12/v13 snapshots store one sample per device (issue 23: were 0), MIG
#    instances as devices MIG-... with their parent
#  - a capture cut mid-row: one warning naming file:line, the rest stored, exit 0
#  - a capture with no GPU rows: exit 3 and one line saying so
set -euo pipefail
GOODPUT=${GOODPUT:-build/goodput}
SRC=${GOODPUT_SRC:-.}
DATA=$SRC/../shared/data/smi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$GOODPUT" ] || fail "$GOODPUT not built"
command -v sqlite3 >/dev/null || fail "sqlite3 CLI missing"
q() { sqlite3 "$tmp/gp.db" "$1"; }
agent() { # spec, extra args...
  local spec=$1; shift
  rm -f "$tmp"/gp.db*
  "$GOODPUT" agent --source "smi:$spec" --db "$tmp/gp.db" --no-socket --speed 0 --quiet "$@" \
    2>"$tmp/err"
}

# --- H100 capture. Independent count: rows of query-gpu (with a time) and dmon (without:
# 1 s apart from the section's last CSV time) per section; the idle section has no
# compute-apps rows, so its first dmon row shares the query-gpu instant.
cap=$DATA/nvidia_gpu_exporter/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt
agent "$cap,tz=UTC" --interval 100ms || fail "agent h100: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "h100: expected only the tz line: $(cat "$tmp/err")"
grep -q "timestamps read as UTC+00:00 (tz=+00:00)" "$tmp/err" || fail "h100 tz: $(cat "$tmp/err")"
gpu_rows=$(awk '/^# (idle|load) :: query-gpu/{s=1;next} /^####/{if(s==1)s=2;else s=0;next} s==2 && /^[0-9][0-9][0-9][0-9]\//' "$cap" | wc -l)
dmon_rows=$(awk '/^# (idle|load) :: dmon/{s=1;next} /^####/{if(s==1)s=2;else s=0;next} s==2 && /^ *[0-9]/' "$cap" | wc -l)
[ "$gpu_rows" -eq 2 ] && [ "$dmon_rows" -eq 10 ] || fail "h100 capture has $gpu_rows/$dmon_rows rows"
want=$((gpu_rows + dmon_rows - 1))
[ "$(q "select count(*) from devices")" -eq 1 ] || fail "h100 devices"
got=$(q "select count(*) from samples where uuid like 'GPU-%'")
[ "$got" -eq "$want" ] || fail "h100: $got samples stored, want $want"
# The last instant: the load section's compute-apps time + 4 s (dmon -c 5).
last_apps=$(awk -F', ' '/^# load :: query-compute-apps/{s=1;next} /^####/{if(s==1)s=2;else s=0;next} s==2 && /^[0-9][0-9][0-9][0-9]\//{t=$1} END{print t}' "$cap")
want_last=$(( $(date -u -d "${last_apps%.*}" +%s) * 1000 + 10#${last_apps##*.} + 4000 ))
[ "$(q "select max(ts_ns)/1000000 from samples")" -eq "$want_last" ] || fail "h100: last instant not stored"
apps=$(awk '/^# load :: query-compute-apps/{s=1;next} /^####/{if(s==1)s=2;else s=0;next} s==2 && /^[0-9][0-9][0-9][0-9]\//' "$cap" | wc -l)
[ "$apps" -eq 3 ] || fail "h100 capture: $apps compute-apps rows"
[ "$(q "select count(*) from proc_samples where mem_bytes is not null")" -eq "$apps" ] ||
  fail "h100: proc_samples with memory: $(q "select count(*) from proc_samples where mem_bytes is not null")"
[ "$(q "select count(*) from proc_samples where mem_bytes is not null and sm_share is not null")" -eq 1 ] ||
  fail "h100: gpu_burn's compute-apps and pmon rows did not merge"
pmon_pids=$(awk '/^# (idle|load) :: pmon/{s=1;next} /^####/{if(s==1)s=2;else s=0;next} s==2 && $2 ~ /^[0-9]+$/' "$cap" | wc -l)
[ "$(q "select count(*) from proc_samples")" -eq "$pmon_pids" ] || fail "h100: proc_samples"
# the source says no owner; the agent stamps each row with the one it resolved (a
# replayed capture's PIDs are not this machine's: the process itself, pid-PID)
[ "$(q "select count(*) from proc_samples where job_id is null or job_id != 'pid-' || pid")" -eq 0 ] ||
  fail "h100: process rows' owners: $(q "select pid, job_id from proc_samples")"

# --- XML snapshots: one instant each, one sample per device (issue 23)
for x in tesla-t4.xml:1:2 rtx-4000-sff-ada-v13.xml:1:4 a100-sxm4-v12.xml:5:0; do
  IFS=: read -r f ndev nproc <<<"$x"
  agent "$DATA/telegraf/$f" || fail "agent $f: $(cat "$tmp/err")"
  grep -q "timestamps read as local time" "$tmp/err" || fail "$f: no tz line: $(cat "$tmp/err")"
  [ "$(q "select count(*) from devices")" -eq "$ndev" ] || fail "$f devices"
  [ "$(q "select count(distinct uuid) from samples")" -eq "$ndev" ] || fail "$f: $(q "select count(*) from samples") samples"
  [ "$(q "select count(*) from proc_samples where mem_bytes is not null")" -eq "$nproc" ] || fail "$f procs"
done
[ "$(q "select count(*) from devices where uuid like 'MIG-%' and parent_uuid = 'GPU-513536b6-7d19-9063-b049-1e69664bb298'")" -eq 4 ] ||
  fail "a100: MIG devices: $(q "select uuid, parent_uuid from devices")"

# --- cut mid-row: a warning naming file:line, the rows before it stored, exit 0
# (the idle query-gpu table, then the load section's row cut at 120 bytes, as a log made
# with -l 1 ends when its writer is killed)
{ awk '/^# idle :: query-gpu/{s=1} s' "$cap" | sed -n '1,5p'
  sed -n '/^# load :: query-gpu/,/^# load :: query-compute-apps/p' "$cap" | sed -n '5p' | head -c 120; } >"$tmp/cut.txt"
cut_line=$(wc -l <"$tmp/cut.txt"); cut_line=$((cut_line + 1))
agent "$tmp/cut.txt,tz=UTC" || fail "cut: exit $?: $(cat "$tmp/err")"
grep -q "^smi: $tmp/cut.txt:$cut_line: expected .* comma-separated fields" "$tmp/err" ||
  fail "cut: $(cat "$tmp/err")"
[ "$(grep -c 'comma-separated' "$tmp/err")" -eq 1 ] || fail "cut: warnings: $(cat "$tmp/err")"
[ "$(q "select count(*) from samples")" -eq 1 ] || fail "cut: the idle row was not kept"

# --- a real capture's processes become jobs (issue 17): report --json shows jobs with
# allocated GPU-hours > 0 and their processes' memory, each process named by the
# capture; the GPU's time is never counted twice; diagnose runs on it
agent "$cap" || fail "owners: exit $?: $(cat "$tmp/err")"
"$GOODPUT" report --db "$tmp/gp.db" --json >"$tmp/r.json" || fail "owners: report"
/usr/bin/python3 - "$tmp/r.json" "$tmp/gp.db" <<'PY' || fail "owners: see above"
import json, sqlite3, sys
r = json.load(open(sys.argv[1])); db = sqlite3.connect(sys.argv[2])
jobs = r["jobs"]
assert len(jobs) >= 1, "no jobs from a capture with processes"
pids = {p for (p,) in db.execute("select distinct pid from proc_samples")}
assert {j["id"] for j in jobs} == {f"pid-{p}" for p in pids}, ([j["id"] for j in jobs], pids)
for j in jobs:
    assert j["allocated_gpu_h"] > 0, j
    assert j["proc_mem_max_bytes"] is not None and j["proc_mem_max_bytes"] > 0, j
    assert j["name"], j  # the capture's process name
t0, t1, n = db.execute("select min(ts_ns), max(ts_ns), count(distinct uuid) from samples").fetchone()
assert sum(j["allocated_gpu_s"] for j in jobs) <= n * ((t1 - t0) / 1e9 + 1) + 1e-6
PY
"$GOODPUT" diagnose --db "$tmp/gp.db" --json >"$tmp/d.json" || fail "owners: diagnose exit $?"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["findings"], d' "$tmp/d.json" \
  || fail "owners: diagnose found nothing"

# --- no GPU rows: exit 3, one line
printf 'timestamp, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n2024/01/01 00:00:00.000, GPU-a, 7, python, 5 MiB\n' >"$tmp/apps.csv"
set +e
"$GOODPUT" agent --source "smi:$tmp/apps.csv" --db "$tmp/x.db" --no-socket --quiet 2>"$tmp/err"
rc=$?
set -e
[ $rc -eq 3 ] || fail "no GPU rows: exit $rc, want 3: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "no GPU rows: $(cat "$tmp/err")"
grep -q "smi: $tmp/apps.csv: no GPU rows" "$tmp/err" || fail "no GPU rows: $(cat "$tmp/err")"
echo "smi_replay: ok"
