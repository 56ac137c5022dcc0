#!/bin/sh
# run.sh BUILD SECONDS TARGET...: runs each libFuzzer target for SECONDS on its corpus
# (BUILD/corpus/TARGET), keeping new inputs there and crashes under BUILD/findings/TARGET/.
# With FUZZ_SMOKE=1 the corpus is only read (new inputs are not kept) and the regression
# inputs under fuzz/regress/ are replayed first. Prints one line per target:
#   TARGET: N execs in S s (E exec/s), corpus C, ok|FAILED
# and exits non-zero if any target found a crash, leak, timeout or sanitizer report.
set -u
build=$1 secs=$2
shift 2
fail=0
for t in "$@"; do
    bin=$build/fuzz/$t
    corpus=$build/corpus/$t
    find=$build/findings/$t
    mkdir -p "$corpus" "$find"
    log=$build/findings/$t.log
    reg=fuzz/regress/${t#fuzz_}
    if [ "${FUZZ_SMOKE:-0}" = 1 ] && [ -d "$reg" ] && [ -n "$(ls "$reg" 2>/dev/null)" ]; then
        if ! "$bin" -runs=0 "$reg"/* > "$log.regress" 2>&1; then
            echo "$t: regression input FAILED (see $log.regress)"
            fail=1
            continue
        fi
    fi
    if [ "${FUZZ_SMOKE:-0}" = 1 ]; then
        # Read the corpus, write new inputs to a scratch dir that is thrown away.
        scratch=$(mktemp -d)
        # A fixed seed makes the smoke the same sequence of inputs on every run, so CI
        # does not turn red on a new random finding; exploring is `make fuzz`'s job.
        set -- -seed=1 "$scratch" "$corpus"
    else
        scratch=
        set -- "$corpus"
    fi
    # 256 MB per target (issue 24): a parser that needs more on an input of at most
    # -max_len bytes is a finding (libFuzzer reports it as out-of-memory). ASan keeps freed
    # memory in a quarantine (256 MB by default) that counts in the RSS: 32 MB keeps its
    # use-after-free detection while the limit measures what the code itself holds.
    ASAN_OPTIONS="quarantine_size_mb=32:${ASAN_OPTIONS:-}" "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb="${FUZZ_RSS_MB:-256}" \
        -malloc_limit_mb="${FUZZ_RSS_MB:-256}" \
        -print_final_stats=1 -artifact_prefix="$find/" "$@" > "$log" 2>&1
    rc=$?
    [ -n "$scratch" ] && rm -rf "$scratch"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    n=$(ls "$corpus" | wc -l)
    if [ $rc -eq 0 ]; then st=ok; else st="FAILED (rc $rc, see $log)"; fail=1; fi
    echo "$t: ${execs:-0} execs in ${secs} s (${rate:-0} exec/s), corpus $n, $st"
done
exit $fail
