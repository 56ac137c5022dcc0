#!/bin/sh
# goodput-hook.sh: Slurm prolog/epilog for goodput.
#
# At allocation (Prolog, with PrologFlags=Alloc so it runs when the job starts, not at its
# first step) it
#   1. writes the dcgm-exporter HPC job-mapping files: one file per GPU index in
#      $GOODPUT_JOBMAP_DIR holding the ids of the jobs on that GPU, one per line (the
#      convention dcgm-exporter's --hpc-job-mapping-dir reads);
#   2. tells goodput: `job job=ID state=allocated` and one `alloc job=ID uuid=U from=T`
#      per GPU (docs/protocol.md), sent to the agent's unix datagram socket.
# At the end (Epilog) it removes the job from the mapping files and sends `alloc ... to=T`.
# The job's end state and exit code come from Slurm itself (goodput's poller), not from here.
#
# Install: copy to /etc/slurm/goodput-hook.sh, then in slurm.conf
#   Prolog=/etc/slurm/goodput-prolog.sh   Epilog=/etc/slurm/goodput-epilog.sh
#   PrologFlags=Alloc
# (the two wrappers in this directory), or call `goodput-hook.sh prolog|epilog` from
# existing prolog/epilog scripts.
#
# Settings (environment, or the file $GOODPUT_HOOK_ENV, default /etc/goodput/slurm-hook.env):
#   GOODPUT_JOBMAP_DIR  mapping directory (default /run/goodput/job-map; "" = do not write)
#   GOODPUT_SOCKET      the agent's socket (default /tmp/goodput-0/goodput.sock, the agent's
#                       default for root)
#   GOODPUT_BIN         goodput binary for `goodput emit` (default: goodput in PATH, else
#                       python3 sends the datagram)
#   GOODPUT_GPU_UUIDS   UUIDs in index order, comma separated (default: nvidia-smi)
# A prolog that fails would drain the node: every step here is best effort; exit is 0.

mode=${1:-}
if [ -z "$mode" ]; then
    case "${SLURM_SCRIPT_CONTEXT:-}" in
    prolog*) mode=prolog ;;
    epilog*) mode=epilog ;;
    esac
fi
cfg=${GOODPUT_HOOK_ENV:-/etc/goodput/slurm-hook.env}
# shellcheck disable=SC1090
[ -r "$cfg" ] && . "$cfg"
jobmap=${GOODPUT_JOBMAP_DIR-/run/goodput/job-map}
sock=${GOODPUT_SOCKET:-/tmp/goodput-0/goodput.sock}
job=${SLURM_JOB_ID:-}
[ -n "$job" ] || exit 0
gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-${GPU_DEVICE_ORDINAL:-}}}

now_ns() { date +%s%N; }

uuid_of() { # index -> UUID, or nothing
    if [ -n "${GOODPUT_GPU_UUIDS:-}" ]; then
        echo "$GOODPUT_GPU_UUIDS" | tr ',' '\n' | sed -n "$(($1 + 1))p"
    elif command -v nvidia-smi >/dev/null 2>&1; then
        nvidia-smi --query-gpu=uuid --format=csv,noheader -i "$1" 2>/dev/null | head -n 1
    fi
}

# The job's start in ns, as Slurm records it (so the allocation row matches the poller's),
# or nothing when slurmctld does not say (busy past 5 s).
start_ns() {
    t=$(timeout 5 scontrol show job -o "$job" 2>/dev/null | sed -n 's/.*StartTime=\([^ ]*\).*/\1/p')
    s=""
    [ -n "$t" ] && s=$(date -d "$t" +%s 2>/dev/null)
    [ -n "$s" ] && echo "${s}000000000"
}

# The prolog keeps the start it sent for the epilog (a dot file: mapping readers skip them),
# so an epilog that cannot ask slurmctld still names the same allocation. Never the
# epilog's own time: an allocation from the job's end would hold nothing.
# Only in the mapping directory (root's own): never a predictable name in a shared /tmp.
start_file() { [ -n "$jobmap" ] && echo "$jobmap/.start.$job"; }

send() { # one datagram of protocol lines from stdin
    [ -S "$sock" ] || return 0
    bin=${GOODPUT_BIN:-$(command -v goodput 2>/dev/null)}
    if [ -n "$bin" ] && [ -x "$bin" ] &&
        "$bin" emit --check job job=check state=allocated >/dev/null 2>&1; then
        while read -r kind rest; do
            # shellcheck disable=SC2086
            "$bin" emit --socket "$sock" "$kind" $rest >/dev/null 2>&1
        done
    elif command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket,sys
s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)
s.sendto(sys.stdin.buffer.read(),sys.argv[1])' "$sock" 2>/dev/null
    fi
    return 0
}

map_add() { # index
    [ -n "$jobmap" ] || return 0
    mkdir -p "$jobmap" 2>/dev/null && chmod 755 "$jobmap" 2>/dev/null
    f="$jobmap/$1"
    grep -qx "$job" "$f" 2>/dev/null || echo "$job" >>"$f"
    chmod 644 "$f" 2>/dev/null
}

map_remove() { # index
    [ -n "$jobmap" ] || return 0
    f="$jobmap/$1"
    [ -f "$f" ] || return 0
    grep -vx "$job" "$f" >"$f.tmp.$$" 2>/dev/null
    if [ -s "$f.tmp.$$" ]; then mv "$f.tmp.$$" "$f"; else rm -f "$f" "$f.tmp.$$"; fi
}

idx_list=$(echo "$gpus" | tr ',' ' ')
case "$mode" in
prolog)
    from=$(start_ns)
    [ -n "$from" ] || from=$(now_ns) # the prolog runs at allocation: its clock is near
    if [ -n "$jobmap" ] && mkdir -p "$jobmap" 2>/dev/null; then
        chmod 755 "$jobmap" 2>/dev/null
        echo "$from" >"$(start_file)" 2>/dev/null
    fi
    {
        echo "job job=$job state=allocated ts=$from"
        for i in $idx_list; do
            map_add "$i"
            u=$(uuid_of "$i")
            [ -n "$u" ] && echo "alloc job=$job uuid=$u from=$from"
        done
    } | send
    ;;
epilog)
    to=$(now_ns)
    from=""
    if [ -n "$jobmap" ]; then
        from=$(cat "$(start_file)" 2>/dev/null)
        rm -f "$(start_file)"
    fi
    [ -n "$from" ] || from=$(start_ns)
    {
        for i in $idx_list; do
            map_remove "$i"
            u=$(uuid_of "$i")
            # without the start the poller (Slurm's times) closes the allocation
            [ -n "$u" ] && [ -n "$from" ] && echo "alloc job=$job uuid=$u from=$from to=$to"
        done
    } | send
    ;;
esac
exit 0
