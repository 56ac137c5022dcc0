# bench/agent_cost/agent.sh: the agent as every agent_cost script runs it, sourced by run.sh,
# instr.sh and pairs.sh so that their figures are of the same command. The node is the test
# NVML library (LIB) replaying one simulated reading (CHEAP) on the wall clock, with its
# processes in a fake /proc and its job-mapping files under the node folder; 1 s sampling,
# no socket, --stats on stdout. GOODPUT is the binary.
#
# bench_agent SCENARIO NODE DB SECONDS STATS ERR [WRAPPER ...] [-- AGENT ARGS ...]
# WRAPPER: a command the agent runs under (valgrind ...); AGENT ARGS: added to its own.
bench_agent() {
  local sc=$1 node=$2 db=$3 s=$4 stats=$5 errf=$6
  shift 6
  local pre=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do pre+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  mkdir -p "$node"
  GOODPUT_NVML_LIBRARY="$LIB" GOODPUT_FAKE_NVML_SCENARIO="$sc" GOODPUT_FAKE_NVML_SPEED=1 \
  GOODPUT_FAKE_NVML_CHEAP=1 GOODPUT_SIM_NODE_ROOT="$node" \
    "${pre[@]}" "$GOODPUT" agent --source nvml --db "$db" --no-socket --interval 1s \
    --duration "${s}s" --quiet --stats --proc-root "$node/proc" --jobmap-dir "$node/jobmap" \
    "$@" >"$stats" 2>"$errf"
}
