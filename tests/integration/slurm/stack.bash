# stack.bash: starts a real single-node Slurm (munged, MariaDB, slurmdbd, slurmctld, slurmd)
# on loopback with every file under one temp dir, for tests/integration/slurm_*.sh.
# Source it, then: stack_start || skip; ...; stack_stop (also installed as an EXIT trap).
#
# Facts this relies on (Debian 12, slurm-wlm 22.05, as root, no systemd):
#  - fake GPUs need File= lines in gres.conf (AutoDetect=off) naming files; ours are
#    symlinks to /dev/null. Count= alone drains the node.
#  - SlurmdParameters=config_overrides lets the node declare more CPUs than it has.
#  - proctrack/linuxproc and task/none avoid cgroup plugins (no systemd here).
#  - munged runs as the munge user with a 0400 key; every daemon finds it through
#    AuthInfo=socket=...
#  - sacct needs slurmdbd + MariaDB.
# Every daemon is started by us and stopped by pid in stack_stop.

ST_PIDS=()
ST_DIR=""

# ST_REASON: the last thing st_log said (a skip reason), read by the sourcing script.
# shellcheck disable=SC2034
ST_REASON=""
st_log() {
    # shellcheck disable=SC2034
    ST_REASON="$*"
    echo "slurm-stack: $*" >&2
}

st_free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 30000))
        if ! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# Waits up to $2 tenths of a second for command $1 to succeed.
st_wait() {
    local cmd=$1 n=${2:-100}
    for _ in $(seq 1 "$n"); do
        if eval "$cmd" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    return 1
}

stack_missing() {
    local b
    for b in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sbatch squeue sacct scontrol setpriv ss; do
        command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || { echo "$b"; return 0; }
    done
    id munge >/dev/null 2>&1 || { echo "munge user"; return 0; }
    return 1
}

# Extra lines for slurm.conf come from $ST_EXTRA_CONF (prolog/epilog).
stack_start() {
    local m
    if [ "$(id -u)" -ne 0 ]; then st_log "needs root (slurmd runs as root)"; return 77; fi
    if m=$(stack_missing); then st_log "missing $m (scripts/install-deps installs scripts/deps.d/slurm.txt)"; return 77; fi
    export PATH="$PATH:/usr/sbin"
    ST_DIR=$(mktemp -d /tmp/gp-slurm-XXXXXX)
    chmod 755 "$ST_DIR"
    local d=$ST_DIR host
    host=$(hostname -s)
    mkdir -p "$d/munge" "$d/db" "$d/state" "$d/spool" "$d/log" "$d/dev" "$d/run"
    chown munge:munge "$d/munge"
    chmod 700 "$d/munge"

    # munge
    dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
    chown munge:munge "$d/munge/munge.key"
    chmod 400 "$d/munge/munge.key"
    setpriv --reuid=munge --regid=munge --clear-groups munged --force \
        --key-file="$d/munge/munge.key" --socket="$d/munge/munge.sock" \
        --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
        --seed-file="$d/munge/munged.seed" || { st_log "munged failed: $(tail -3 "$d/munge/munged.log" 2>/dev/null)"; return 1; }
    st_wait "[ -s '$d/munge/munged.pid' ]" 50 || { st_log "munged did not start"; return 1; }
    ST_PIDS+=("$(cat "$d/munge/munged.pid")")

    # MariaDB (for slurmdbd, for sacct)
    local dbport dbdport ctlport dport
    dbport=$(st_free_port); dbdport=$(st_free_port); ctlport=$(st_free_port); dport=$(st_free_port)
    mariadb-install-db --no-defaults --datadir="$d/db" --user=root --auth-root-authentication-method=socket \
        --skip-test-db >"$d/log/mariadb-install.log" 2>&1 || { st_log "mariadb-install-db failed"; return 1; }
    mariadbd --no-defaults --user=root --datadir="$d/db" --socket="$d/run/mysql.sock" \
        --port="$dbport" --bind-address=127.0.0.1 --pid-file="$d/run/mariadb.pid" \
        --log-error="$d/log/mariadb.log" --skip-log-bin --innodb-buffer-pool-size=16M \
        --innodb-log-file-size=8M \
        --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 >/dev/null 2>&1 &
    ST_PIDS+=("$!")
    st_wait "mariadb --no-defaults -S '$d/run/mysql.sock' -uroot -e 'select 1'" 200 ||
        { st_log "mariadbd did not start: $(tail -5 "$d/log/mariadb.log")"; return 1; }
    mariadb --no-defaults -S "$d/run/mysql.sock" -uroot -e \
        "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'gp-test'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1';" ||
        { st_log "could not create the slurm database user"; return 1; }

    # fake GPUs
    local i
    for i in 0 1 2 3; do ln -s /dev/null "$d/dev/nvidia$i"; done

    export SLURM_CONF="$d/slurm.conf"
    cat >"$d/slurm.conf" <<CONF
ClusterName=gptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctlport
SlurmdPort=$dport
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbdport
AccountingStorageTRES=gres/gpu
AccountingStoragePass=$d/munge/munge.sock
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=2
InactiveLimit=0
$ST_EXTRA_CONF
NodeName=gpnode NodeAddr=127.0.0.1 NodeHostname=$host CPUs=8 RealMemory=1000 Gres=gpu:4 State=UNKNOWN
PartitionName=gpu Nodes=gpnode Default=YES MaxTime=INFINITE State=UP
CONF
    cat >"$d/gres.conf" <<CONF
AutoDetect=off
NodeName=gpnode Name=gpu File=$d/dev/nvidia[0-3]
CONF
    cat >"$d/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbdport
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$dbport
StorageUser=slurm
StoragePass=gp-test
StorageLoc=gp_slurm_acct
PidFile=$d/run/slurmdbd.pid
LogFile=$d/log/slurmdbd.log
DebugLevel=info
CONF
    chmod 600 "$d/slurmdbd.conf"

    slurmdbd -D >"$d/log/slurmdbd.out" 2>&1 &
    ST_PIDS+=("$!")
    # slurmdbd creates its ~40 accounting tables before it listens: seconds on a fresh
    # machine's cold disk, so the wait is generous (CI once ran past 20 s).
    st_wait "ss -Htln 'sport = :$dbdport' | grep -q ." 900 ||
        { st_log "slurmdbd did not listen in 90 s: $(tail -q -n 5 "$d/log/slurmdbd.log" "$d/log/slurmdbd.out" 2>&1)"; return 1; }
    sacctmgr -i add cluster gptest >"$d/log/sacctmgr.log" 2>&1 || true

    slurmctld -D -i >"$d/log/slurmctld.out" 2>&1 &
    ST_PIDS+=("$!")
    st_wait "scontrol ping | grep -q UP" 200 ||
        { st_log "slurmctld did not come up: $(tail -5 "$d/log/slurmctld.log")"; return 1; }
    slurmd -D -N gpnode >"$d/log/slurmd.out" 2>&1 &
    ST_PIDS+=("$!")
    st_wait "sinfo -h -N -o '%t' | grep -Eq '^(idle|mix|alloc)'" 300 ||
        { st_log "node not idle: $(sinfo -N 2>&1 | tail -2); $(tail -5 "$d/log/slurmd.log")"; return 1; }
    return 0
}

stack_stop() {
    local i pid
    # Reverse order: slurmd, slurmctld, slurmdbd, mariadb, munged.
    for ((i = ${#ST_PIDS[@]} - 1; i >= 0; i--)); do
        pid=${ST_PIDS[$i]}
        kill "$pid" 2>/dev/null || true
    done
    for ((i = ${#ST_PIDS[@]} - 1; i >= 0; i--)); do
        pid=${ST_PIDS[$i]}
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    # slurmstepd processes of jobs still running belong to us too: they carry our conf.
    for pid in $(pgrep -x slurmstepd 2>/dev/null); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF"; then
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    ST_PIDS=()
    if [ -n "$ST_DIR" ] && [ -z "${GP_KEEP_STACK:-}" ]; then rm -rf "$ST_DIR"; fi
}
