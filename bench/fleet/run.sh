#!/usr/bin/env bash
# bench/fleet/run.sh: the fleet ledger in PostgreSQL at 1,000 nodes x 8 GPUs.
#   1. Ingest: bench_fleet poses as 1,000 agents, each sending its ledger pass once per
#      simulated minute (16 rows: a job row and an open-window row for each of 8 jobs,
#      plus allocations and closed windows when they happen), as fast as PostgreSQL takes
#      them. Reports sustained rows/s, node-minutes/s (1,000 real nodes need 16.7), the
#      client CPU per node-minute, and PostgreSQL's CPU per node-minute (postmaster and
#      its exited backends, from /proc).
#   1b. The agent's side: CPU of the ledger's collect passes over a simulated 8-GPU hour.
#   2. Reports over 30 simulated days: the ledger is filled server-side (generate_series)
#      with 30 days of 1,000 nodes x 8 GPUs running 6-hour jobs (960,000 job rows, 1-hour
#      windows: 5,760,000 window rows), then `goodput report --ledger` is timed (whole
#      ledger by user, and by GPU model), and `goodput diagnose --ledger`.
# PostgreSQL runs from a temp dir on a unix socket only, with its default durability
# (fsync on). Usage: bench/fleet/run.sh [BUILD]   (needs BUILD/libgoodput.a, BUILD/goodput)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-${BUILD:-build}}
NODES=${NODES:-1000}
GPUS=${GPUS:-8}
MINUTES=${MINUTES:-5}
PROCS=${PROCS:-2}
DAYS=${DAYS:-30}
OUT=bench/out
mkdir -p "$OUT"
BIN=$OUT/bench_fleet
cc -std=c11 -O2 -D_GNU_SOURCE -Isrc -Iinclude -I/usr/include/postgresql bench/fleet/bench_fleet.c \
    "$BUILD/libgoodput.a" -o "$BIN" \
    $(pkg-config --libs sqlite3 jansson yajl libmicrohttpd libcurl zlib libxml-2.0 libpq) -ldl -lpthread -lm
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
tmp=$(mktemp -d /tmp/gp-bench-fleet-XXXXXX)
chmod 755 "$tmp"
mkdir "$tmp/pg" && chown postgres "$tmp/pg"
trap 'runuser -u postgres -- "$PGBIN/pg_ctl" -D "$tmp/pg/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
runuser -u postgres -- "$PGBIN/initdb" -D "$tmp/pg/data" -A trust -U postgres >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$tmp/pg/data" -l "$tmp/pg/log" -w \
    -o "-c listen_addresses='' -k $tmp/pg" start >/dev/null
URL="postgresql:///postgres?host=$tmp/pg&user=postgres"
log() { echo "$*" | tee -a "$OUT/fleet.txt"; }
: >"$OUT/fleet.txt"
pm=$(head -1 "$tmp/pg/data/postmaster.pid")
pg_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat"; }
hz=$(getconf CLK_TCK)

log "# 1. ingest: $NODES nodes x $GPUS GPUs, $MINUTES simulated minutes, $PROCS client processes"
c0=$(pg_ticks)
res=$("$BIN" "$URL" "$NODES" "$GPUS" "$MINUTES" "$PROCS")
c1=$(pg_ticks)
log "$res"
log "$(python3 -c "import json,sys; r=json.loads(sys.argv[1]); print('postgres_cpu_ms_per_node_minute: %.3f' % ((int(sys.argv[3]) - int(sys.argv[2])) / int(sys.argv[4]) * 1e3 / (r['nodes'] * r['simulated_minutes'])))" "$res" "$c0" "$c1" "$hz")"

log "# 1b. the agent's collect passes over an 8-GPU demo hour (no server: CPU of collect only)"
"$BUILD/goodput" agent --source sim:examples/scenarios/demo.conf --db "$tmp/node.db" --speed 0 --no-socket --quiet
log "$("$BIN" --collect "$tmp/node.db")"

log "# 2. reports over $DAYS simulated days ($NODES nodes x $GPUS GPUs, 6-hour jobs, 1-hour windows)"
t0=$(date +%s.%N)
psql -qAt "$URL" -v ON_ERROR_STOP=1 <<SQL
TRUNCATE gp_ledger_jobs, gp_ledger_windows, gp_ledger_allocations, gp_ledger_findings;
INSERT INTO gp_ledger_jobs (host, job_id, cluster, partition, name, user_name, origin, gpu_model,
    n_gpus, kind, allocated_ns, ended_ns, allocated_gpu_s, goodput, productive_gpu_s,
    not_ready_gpu_s, startup_gpu_s, data_wait_gpu_s, checkpoint_gpu_s, wasted_progress_gpu_s,
    recovery_gpu_s, idle_allocated_gpu_s, other_gpu_s)
SELECT 'node' || n, n || '-' || g || '-' || j, 'c' || (n % 4), 'p' || (n % 3), 'job', 'user' || ((n * 8 + g + j) % 200),
    'slurm', CASE WHEN n % 5 = 0 THEN 'A100-SXM' ELSE 'H100-SXM' END, 1, 'training',
    j * 21600e9::bigint, (j + 1) * 21600e9::bigint, 21600, 0.6 + (g % 4) * 0.05,
    21600 * (0.6 + (g % 4) * 0.05), 300, 200, 21600 * 0.1, 500, 100, 100, 21600 * (0.25 - (g % 4) * 0.05) - 1200, 0
FROM generate_series(0, $NODES - 1) n, generate_series(0, $GPUS - 1) g, generate_series(0, $DAYS * 4 - 1) j;
INSERT INTO gp_ledger_windows (host, job_id, window_start_ns, window_end_ns, cluster, partition,
    user_name, gpu_model, n_gpus, allocated_gpu_s, goodput, productive_gpu_s, not_ready_gpu_s,
    startup_gpu_s, data_wait_gpu_s, checkpoint_gpu_s, wasted_progress_gpu_s, recovery_gpu_s,
    idle_allocated_gpu_s, other_gpu_s)
SELECT 'node' || n, n || '-' || g || '-' || (h / 6), h * 3600e9::bigint, (h + 1) * 3600e9::bigint,
    'c' || (n % 4), 'p' || (n % 3), 'user' || ((n * 8 + g + h / 6) % 200),
    CASE WHEN n % 5 = 0 THEN 'A100-SXM' ELSE 'H100-SXM' END, 1, 3600, 0.7, 2520, 0, 0, 360, 0, 0, 0, 720, 0
FROM generate_series(0, $NODES - 1) n, generate_series(0, $GPUS - 1) g, generate_series(0, $DAYS * 24 - 1) h;
INSERT INTO gp_ledger_findings (host, job_id, ord, class, scope, scope_id, wasted_gpu_s, confidence, summary, recommendation, evidence)
SELECT host, job_id, 0, CASE WHEN goodput < 0.7 THEN 'input_bound' ELSE 'idle_allocated' END, 'job', job_id,
    idle_allocated_gpu_s, 0.7, 'synthetic', 'synthetic', '[]'
FROM gp_ledger_jobs WHERE (hashtext(job_id) % 10) = 0;
ANALYZE;
SQL
t1=$(date +%s.%N)
log "fill: $(psql -qAt "$URL" -c "SELECT count(*) FROM gp_ledger_jobs") job rows, $(psql -qAt "$URL" -c "SELECT count(*) FROM gp_ledger_windows") window rows, $(psql -qAt "$URL" -c "SELECT count(*) FROM gp_ledger_findings") findings in $(python3 -c "print('%.1f' % ($t1 - $t0))") s; size $(psql -qAt "$URL" -c "SELECT pg_size_pretty(pg_database_size('postgres'))")"
timeit() { # label, command...
    local label=$1
    shift
    local best=999
    for _ in 1 2 3; do
        local a b
        a=$(date +%s.%N)
        "$@" >/dev/null
        b=$(date +%s.%N)
        best=$(python3 -c "print(min($best, $b - $a))")
    done
    log "$(printf '%-44s best of 3: %.3f s' "$label" "$best")"
}
timeit "report --ledger (whole ledger, by user)" "$BUILD/goodput" report --ledger "$URL" --by user
timeit "report --ledger --by gpu_model --json" "$BUILD/goodput" report --ledger "$URL" --by gpu_model --json
timeit "report --ledger --by cluster" "$BUILD/goodput" report --ledger "$URL" --by cluster
timeit "diagnose --ledger" "$BUILD/goodput" diagnose --ledger "$URL"
psql -qAt "$URL" -c "EXPLAIN ANALYZE SELECT user_name, sum(allocated_gpu_s) FROM gp_ledger_windows WHERE window_start_ns >= 23 * 86400e9::bigint GROUP BY 1" | tail -2 | sed 's/^/windows, last 7 days by user: /' | tee -a "$OUT/fleet.txt"
