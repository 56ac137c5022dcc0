#!/usr/bin/env bash
# Fuzz smoke (issue 11): builds the libFuzzer targets (fuzz/, mk/fuzz.mk; the smoke's -O0
# build in build-fuzz-smoke/) and runs each for 3 s (fixed seed, 256 MB RSS limit) on its
# seed corpus, after replaying every fixed finding under fuzz/regress/.
# Fails on any crash, leak, timeout or sanitizer report. Skips (77) without clang's
# libFuzzer runtime (Debian: libclang-rt-14-dev). FUZZ_SMOKE_SECONDS overrides the time.
set -uo pipefail
cd "${GOODPUT_SRC:-.}"
if [ -n "${GOODPUT:-}" ] && grep -qa __asan_init "$GOODPUT" 2>/dev/null; then
    echo "skip: the fuzz targets are already sanitizer builds (run by make test)"; exit 77
fi
if ! command -v clang >/dev/null; then echo "skip: no clang"; exit 77; fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
     clang -x c -fsanitize=fuzzer - -o "${TMPDIR:-/tmp}/gp-fuzz-probe-$$" 2>/dev/null; then
    echo "skip: clang has no libFuzzer runtime (install libclang-rt-14-dev)"; exit 77
fi
rm -f "${TMPDIR:-/tmp}/gp-fuzz-probe-$$"
# Called from `make test` or `make asan`: do not inherit their BUILD/CC/SAN overrides.
unset MAKEFLAGS MFLAGS MAKELEVEL BUILD
start=$SECONDS
log="${TMPDIR:-/tmp}/gp-fuzz-build-$$.log"
make --no-print-directory fuzz-smoke-build >"$log" 2>&1 || {
    tail -30 "$log"; rm -f "$log"; echo "fuzz build failed"; exit 1; }
rm -f "$log"
echo "fuzz build: $((SECONDS - start)) s"
start=$SECONDS
make --no-print-directory fuzz-smoke FUZZ_SMOKE_SECONDS="${FUZZ_SMOKE_SECONDS:-3}"
rc=$?
echo "fuzz smoke: $((SECONDS - start)) s"
exit $rc
