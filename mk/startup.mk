# startup.mk: `make bench-startup` (also part of `make bench`) measures the start-up of
# `goodput --version` and `goodput report`: shared objects mapped, wall and CPU time, peak
# RSS (bench/startup/run.sh; results in docs/benchmarks.md). Never a timed test.
.PHONY: bench-startup
bench: bench-startup
bench-startup: $(BIN)
	bench/startup/run.sh $(BIN)
