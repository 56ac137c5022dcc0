#!/usr/bin/env bash
# asan-skip: orchestration of PostgreSQL, Prometheus and network namespaces (~80 s); the ledger's C code runs under ASan in tests/unit/test_fleet_ledger.c
# fleet_netns.sh: three goodput agents as three hosts, a real PostgreSQL ledger and a real
# Prometheus, each in a network namespace of its own made here; PostgreSQL is cut off for
# a while mid-run and comes back. Then:
#   - the ledger holds exactly the union of the three local stores (jobs, allocations,
#     findings: nothing lost, nothing doubled), every spool is empty, and the windows of
#     each job add up to its allocated GPU-seconds;
#   - the fleet report (goodput report --ledger) equals the sum of the node reports;
#   - Prometheus scraped all three agents, and the fleet recording rules
#     (contrib/prometheus/fleet_rules.yml) give the ledger's fleet goodput within one
#     scrape interval.
#
# Traffic never leaves the machine: the namespaces hang off a bridge inside a hub
# namespace, on 198.51.100.0/24, with no default route; every client and server runs in
# one of them (the root namespace only reads PostgreSQL over its unix socket), and
# `ip route get` must name the test's veth before anything is sent.
# Needs root (namespaces) and the packages in scripts/deps.d/fleet.txt; skips otherwise.
set -u
GOODPUT=${GOODPUT:-build/goodput}
SRC=${GOODPUT_SRC:-.}
GOODPUT=$(readlink -f "$GOODPUT")
SPEED=${FLEET_SPEED:-60}   # demo.conf is 1 h of source time: 60 s at speed 60
CUT_AT=${FLEET_CUT_AT:-10} # seconds after the agents start
CUT_FOR=${FLEET_CUT_FOR:-30}

skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*"
    exit 1
}
[ "$(id -u)" = 0 ] || skip "network namespaces need root"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] && [ -x "$PGBIN/initdb" ] || skip "PostgreSQL is not installed (scripts/deps.d/fleet.txt)"
command -v prometheus >/dev/null || skip "prometheus is not installed (scripts/deps.d/fleet.txt)"
command -v psql >/dev/null || skip "psql is not installed"
command -v curl >/dev/null || skip "curl is not installed"
command -v ip >/dev/null || skip "iproute2 is not installed"
id postgres >/dev/null 2>&1 || skip "no postgres user"
[ -x "$GOODPUT" ] || fail "no goodput binary at $GOODPUT"

TAG=gpf$$
NET=198.51.100
DB_IP=$NET.10
PROM_IP=$NET.20
HUB=$TAG-hub
NODES="n1 n2 n3"
declare -A IP=([db]=$DB_IP [prom]=$PROM_IP [n1]=$NET.11 [n2]=$NET.12 [n3]=$NET.13)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/goodput-fleet.XXXXXX")
chmod 755 "$WORK"
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    for n in db prom $NODES; do # anything still running inside the test's namespaces
        for p in $(ip netns pids "$TAG-$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    if [ -f "$WORK/pg/data/postmaster.pid" ]; then
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m immediate stop >/dev/null 2>&1
    fi
    for n in db prom $NODES; do ip netns del "$TAG-$n" 2>/dev/null; done
    ip netns del "$HUB" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

in_ns() {
    local n=$1
    shift
    ip netns exec "$TAG-$n" "$@"
}

# --- the network: a bridge in the hub namespace, one veth per host --------------------
ip netns add "$HUB" 2>/dev/null || skip "cannot create network namespaces here"
ip -n "$HUB" link add br0 type bridge || fail "bridge"
ip -n "$HUB" link set br0 up
for n in db prom $NODES; do
    ip netns add "$TAG-$n" || fail "netns $n"
    ip -n "$TAG-$n" link add gpf0 type veth peer name "v-$n" netns "$HUB" || fail "veth $n"
    ip -n "$HUB" link set "v-$n" master br0 up
    ip -n "$TAG-$n" addr add "${IP[$n]}/24" dev gpf0
    ip -n "$TAG-$n" link set gpf0 up
    ip -n "$TAG-$n" link set lo up
done
# Every route the test uses must stay on its own veth (and there is no default route).
for n in prom $NODES; do
    r=$(in_ns "$n" ip route get "$DB_IP" 2>&1)
    case "$r" in *"dev gpf0"*) ;; *) fail "route from $n to $DB_IP is not on the test's veth: $r" ;; esac
    in_ns "$n" ip route show default | grep -q . && fail "namespace $n has a default route"
done
for n in $NODES; do
    r=$(in_ns prom ip route get "${IP[$n]}" 2>&1)
    case "$r" in *"dev gpf0"*) ;; *) fail "route from prom to ${IP[$n]} is not on the test's veth: $r" ;; esac
done

# --- PostgreSQL, listening only on the test's address (and a unix socket) ------------
mkdir -p "$WORK/pg"
chown postgres "$WORK/pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/pg/data" -A trust -U postgres >"$WORK/initdb.log" 2>&1 ||
    fail "initdb: $(tail -3 "$WORK/initdb.log")"
echo "host all all $NET.0/24 trust" >>"$WORK/pg/data/pg_hba.conf"
in_ns db runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w \
    -o "-c listen_addresses=$DB_IP -k $WORK/pg -c fsync=off" start >/dev/null ||
    fail "PostgreSQL did not start: $(tail -5 "$WORK/pg/log")"
LOCAL_URL="postgresql:///goodput?host=$WORK/pg&user=postgres"
psql -qAt "postgresql:///postgres?host=$WORK/pg&user=postgres" -c "CREATE DATABASE goodput" || fail "createdb"
URL="postgresql://postgres@$DB_IP:5432/goodput"
q() { psql -qAt "$LOCAL_URL" -c "$1"; }

# --- the three agents ----------------------------------------------------------------
for n in $NODES; do
    seed=$((${n#n} * 11))
    sed -e "s/^seed = .*/seed = $seed/" -e "s/^name = .*/name = host-$n/" \
        "$SRC/examples/scenarios/demo.conf" >"$WORK/$n.conf"
done
cp "$SRC/contrib/prometheus/fleet_rules.yml" "$WORK/fleet_rules.yml"
for n in $NODES; do
    (cd "$SRC" && GOODPUT_LEDGER_WINDOW=5m exec ip netns exec "$TAG-$n" "$GOODPUT" agent \
        --source "sim:$WORK/$n.conf" --db "$WORK/$n.db" --speed "$SPEED" --flush 1s --no-socket \
        --ledger "$URL" --host-name "$n" --listen "${IP[$n]}:9464" --insecure \
        >"$WORK/$n.out" 2>"$WORK/$n.log") &
    PIDS+=($!)
    AGENT_PIDS="${AGENT_PIDS:-} $!"
done

# --- Prometheus, scraping the three agents every 2 seconds --------------------------
SCRAPE_S=2
cat >"$WORK/prometheus.yml" <<EOF
global:
  scrape_interval: ${SCRAPE_S}s
  evaluation_interval: ${SCRAPE_S}s
rule_files: [fleet_rules.yml]
scrape_configs:
  - job_name: goodput
    static_configs:
      - targets: ['${IP[n1]}:9464', '${IP[n2]}:9464', '${IP[n3]}:9464']
        labels: {cluster: test}
EOF
ip netns exec "$TAG-prom" prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prom" \
    --web.listen-address="$PROM_IP:9090" --log.level=warn >"$WORK/prom.log" 2>&1 &
PIDS+=($!)
promq() { # instant query; prints the first value or nothing
    in_ns prom curl -s --max-time 5 "http://$PROM_IP:9090/api/v1/query" --data-urlencode "query=$1" |
        python3 -c 'import json,sys
r=json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null
}

START=$(date +%s)
since() { echo $(($(date +%s) - START)); }
# The ledger fills while PostgreSQL is up.
for _ in $(seq 1 40); do
    [ "$(q 'SELECT count(DISTINCT host) FROM gp_ledger_jobs' 2>/dev/null)" = 3 ] && break
    sleep 0.5
done
[ "$(q 'SELECT count(DISTINCT host) FROM gp_ledger_jobs')" = 3 ] ||
    fail "the ledger did not hear from all three agents: $(cat "$WORK"/n?.log | tail -5)"
while [ "$(since)" -lt "$CUT_AT" ]; do sleep 0.5; done

# --- the cut: PostgreSQL's port on the bridge goes down (packets are dropped) ---------
ip -n "$HUB" link set v-db down
echo "# $(since)s: PostgreSQL cut off for ${CUT_FOR}s"
sleep 3
before=$(q 'SELECT count(*) FROM gp_ledger_windows')
# Findings written to a node's store while the ledger is away must arrive later too.
for n in $NODES; do "$GOODPUT" diagnose --db "$WORK/$n.db" --json >/dev/null 2>>"$WORK/diagnose.log"; done
sleep $((CUT_FOR - 3))
after=$(q 'SELECT count(*) FROM gp_ledger_windows')
[ "$before" = "$after" ] || fail "the ledger changed while PostgreSQL was cut off ($before -> $after windows)"
spooled=0
for n in $NODES; do
    c=$(sqlite3 "file:$WORK/$n.db?mode=ro" "SELECT count(*) FROM ledger_spool" 2>/dev/null || echo 0)
    spooled=$((spooled + c))
done
ip -n "$HUB" link set v-db up
echo "# $(since)s: PostgreSQL back; $spooled rows were waiting in the spools"
[ "$spooled" -gt 0 ] || fail "nothing was spooled while PostgreSQL was away"

# --- the agents finish their simulated hour and drain their spools -------------------
DEADLINE=$((START + ${FLEET_TIMEOUT:-400}))
for p in $AGENT_PIDS; do
    while kill -0 "$p" 2>/dev/null; do
        [ "$(date +%s)" -lt "$DEADLINE" ] || fail "the agents did not finish in time (machine overloaded?)"
        sleep 1
    done
    wait "$p" || fail "an agent failed: $(tail -q -n 3 "$WORK"/n?.log)"
done
echo "# $(since)s: agents done"
grep -h "ledger" "$WORK"/n?.log | sed 's/^/# /' | sort | uniq -c | head -6
# The last complete rule evaluation while all three agents were up.
END=$(date +%s)
# The fleet goodput rule over the run, only where all three agents were up.
ALL3='goodput:fleet_goodput:ratio and on() goodput:fleet_agents:count == 3'
in_ns prom curl -s --max-time 10 "http://$PROM_IP:9090/api/v1/query_range" --data-urlencode "query=$ALL3" \
    --data-urlencode "start=$START" --data-urlencode "end=$((END + 5))" --data-urlencode "step=$SCRAPE_S" \
    >"$WORK/prom_range.json"
PROM_TARGETS=$(promq 'count(count_over_time(goodput_agent_up[5m]))')

# --- compare: stores vs ledger, node reports vs fleet report, Prometheus vs ledger ---
for n in $NODES; do
    "$GOODPUT" report --db "$WORK/$n.db" --json >"$WORK/$n.report.json" || fail "report $n"
    sqlite3 -separator '|' "$WORK/$n.db" "SELECT id FROM jobs ORDER BY 1" >"$WORK/$n.jobs"
    sqlite3 -separator '|' "$WORK/$n.db" \
        "SELECT job_id, uuid, from_ns, coalesce(to_ns, '') FROM allocations ORDER BY 1,2,3" >"$WORK/$n.allocs"
    sqlite3 -separator '|' "$WORK/$n.db" "SELECT job_id, class FROM findings ORDER BY 1,2" >"$WORK/$n.findings"
    sqlite3 "$WORK/$n.db" "SELECT count(*) FROM ledger_spool" >"$WORK/$n.spool"
    psql -qAt -F '|' "$LOCAL_URL" -c "SELECT job_id FROM gp_ledger_jobs WHERE host = '$n' ORDER BY 1" >"$WORK/$n.ljobs"
    psql -qAt -F '|' "$LOCAL_URL" -c "SELECT job_id, uuid, from_ns, coalesce(to_ns::text, '')
        FROM gp_ledger_allocations WHERE host = '$n' ORDER BY 1,2,3" >"$WORK/$n.lallocs"
    psql -qAt -F '|' "$LOCAL_URL" -c "SELECT job_id, class FROM gp_ledger_findings WHERE host = '$n'
        ORDER BY 1,2" >"$WORK/$n.lfindings"
done
psql -qAt -F '|' "$LOCAL_URL" -c "SELECT j.host, j.job_id, j.allocated_gpu_s, sum(w.allocated_gpu_s),
    count(w.*), bool_and(abs(w.allocated_gpu_s - (w.productive_gpu_s + w.not_ready_gpu_s +
    w.startup_gpu_s + w.data_wait_gpu_s + w.checkpoint_gpu_s + w.wasted_progress_gpu_s +
    w.recovery_gpu_s + w.idle_allocated_gpu_s + w.other_gpu_s)) < 1e-6)
    FROM gp_ledger_jobs j LEFT JOIN gp_ledger_windows w USING (host, job_id) GROUP BY 1, 2, 3" >"$WORK/windows"
"$GOODPUT" report --ledger "$LOCAL_URL" --json >"$WORK/fleet.json" || fail "fleet report"
"$GOODPUT" report --ledger "$LOCAL_URL" --by user >"$WORK/fleet.txt" || fail "fleet report by user"
"$GOODPUT" diagnose --ledger "$LOCAL_URL" --json >"$WORK/fleet_diag.json" || fail "fleet diagnose"

python3 - "$WORK" "$PROM_TARGETS" "$END" "$SCRAPE_S" <<'EOF' || exit 1
import json, math, sys
work, prom_targets, end, scrape_s = sys.argv[1:5]
def lines(p):
    with open(p) as f:
        return [l.rstrip("\n") for l in f if l.strip()]
bad = []
for n in ("n1", "n2", "n3"):
    for what in ("jobs", "allocs", "findings"):
        store, ledger = lines(f"{work}/{n}.{what}"), lines(f"{work}/{n}.l{what}")
        if store != ledger:
            bad.append(f"{n} {what}: store has {len(store)}, ledger {len(ledger)}; "
                       f"missing {sorted(set(store) - set(ledger))[:3]} extra {sorted(set(ledger) - set(store))[:3]}")
    if lines(f"{work}/{n}.spool") != ["0"]:
        bad.append(f"{n}: spool not empty after the agent stopped")
n_findings = sum(len(lines(f"{work}/{n}.findings")) for n in ("n1", "n2", "n3"))
for l in lines(f"{work}/windows"):
    host, job, alloc, wsum, nw, ok = l.split("|")
    if int(nw) == 0 or abs(float(alloc) - float(wsum)) > 1e-6 * max(1.0, float(alloc)) or ok != "t":
        bad.append(f"windows of {host}/{job}: {nw} windows sum to {wsum} GPU-s, job has {alloc}")
# The fleet report equals the sum of the node reports.
alloc = prod = known = 0.0
buckets = {}
jobs = 0
for n in ("n1", "n2", "n3"):
    for j in json.load(open(f"{work}/{n}.report.json"))["jobs"]:
        jobs += 1
        alloc += j["allocated_gpu_s"]
        for b, v in j["gpu_s_by_bucket"].items():
            buckets[b] = buckets.get(b, 0.0) + v
        if j["goodput"] is not None:
            known += j["allocated_gpu_s"]
            prod += j["gpu_s_by_bucket"]["productive"]
fleet = json.load(open(f"{work}/fleet.json"))["total"]
node_gp = prod / known
def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))
if fleet["jobs"] != jobs or fleet["hosts"] != 3:
    bad.append(f"fleet report: {fleet['jobs']} jobs on {fleet['hosts']} hosts, nodes have {jobs} on 3")
if not close(fleet["allocated_gpu_s"], alloc):
    bad.append(f"fleet allocated {fleet['allocated_gpu_s']} GPU-s != sum of nodes {alloc}")
if fleet["goodput"] is None or not close(fleet["goodput"], node_gp):
    bad.append(f"fleet goodput {fleet['goodput']} != nodes' {node_gp}")
for b, v in buckets.items():
    if not close(fleet["gpu_s_by_bucket"][b] or 0.0, v):
        bad.append(f"fleet {b} {fleet['gpu_s_by_bucket'][b]} != nodes' {v}")
diag = json.load(open(f"{work}/fleet_diag.json"))
if sum(c["findings"] for c in diag["classes"]) != n_findings:
    bad.append(f"fleet diagnose counts {sum(c['findings'] for c in diag['classes'])} findings, stores hold {n_findings}")
# Prometheus: all three scraped; the recording rule matches the ledger within one scrape.
if prom_targets != "3":
    bad.append(f"Prometheus saw {prom_targets or 'no'} agents, expected 3")
try:
    res = json.load(open(f"{work}/prom_range.json"))["data"]["result"]
    series = [(float(t), float(v)) for t, v in res[0]["values"]] if res else []
except (ValueError, KeyError):
    series = []
prom_gp = None
if len(series) < 3:
    bad.append("Prometheus recorded no fleet goodput while all three agents were up")
else:
    # Prometheus lags the agents by up to a scrape (plus the store's 1 s flush); the
    # agents' last seconds after the last full evaluation are not in it. The tolerance
    # is how far the rule moves per evaluation step near the end, times the steps
    # between the last evaluation and the agents' exit, plus one.
    t_last, prom_gp = series[-1]
    tail = [v for t, v in series if t >= t_last - 30]
    per_step = max((abs(b - a) for a, b in zip(tail, tail[1:])), default=0.0)
    steps = math.ceil(max(0.0, float(end) - t_last) / float(scrape_s)) + 1
    tol = per_step * steps + 0.002
    if abs(prom_gp - fleet["goodput"]) > tol:
        bad.append(f"Prometheus fleet goodput {prom_gp:.5f} vs ledger {fleet['goodput']:.5f} "
                   f"(allowed {tol:.5f}: {steps} evaluation steps of {per_step:.5f})")
print(f"# {jobs} jobs on 3 hosts, {alloc / 3600:.2f} GPU-h; fleet goodput ledger {fleet['goodput']:.5f}, "
      f"nodes {node_gp:.5f}, Prometheus {prom_gp}; {n_findings} findings")
if bad:
    print("FAIL: " + "\nFAIL: ".join(bad))
    sys.exit(1)
EOF
sed 's/^/# /' "$WORK/fleet.txt" | head -12
echo "PASS: fleet_netns ($(since)s)"
