# bench.mk: `make bench-agent` and `make bench-store` (both part of `make bench`): the
# agent's own cost through the NVML path at 8/64/512 GPUs with 1k events/s beside
# prometheus-node-exporter (bench/agent_cost/run.sh), its instructions per GPU-sample under
# callgrind at 1 and 8 GPUs (bench/agent_cost/instr.sh: a figure that does not move with the
# host; with the fixed and per-GPU parts of a tick), and a
# generated month of 8 GPUs at 1 s in a store with rollups (bench/store_month). Results in
# docs/benchmarks.md. Never a timed test. BENCH_AGENT_WALL_S shortens the agent runs
# (default 600 s per size). A change to the agent too small for those figures is judged
# with bench/agent_cost/pairs.sh BASE_BINARY (the two builds side by side; not a target,
# since it needs the build to compare with).
.PHONY: bench-agent bench-store
bench: bench-agent bench-store
BENCH_AGENT_WALL_S ?= 600
bench-agent: $(BIN) $(BUILD)/tests/lib/libnvidia-ml.so.1
	GOODPUT=$(BIN) NVML_LIB=$(BUILD)/tests/lib/libnvidia-ml.so.1 bench/agent_cost/run.sh $(BENCH_AGENT_WALL_S)
	GOODPUT=$(BIN) NVML_LIB=$(BUILD)/tests/lib/libnvidia-ml.so.1 bench/agent_cost/instr.sh
$(BUILD)/bench/gen_month: bench/store_month/gen_month.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)
bench-store: $(BUILD)/bench/gen_month
	bench/store_month/run.sh $(BUILD)/bench/gen_month
# `make bench-analyze` (part of `make bench`): goodput analyze --prometheus over a generated
# 1,000-GPU week at 30 s backfilled into Debian's Prometheus (bench/analyze/run.sh; the
# backfill is kept in $(BUILD)/bench/analyze and resumed: ~2.5 CPU-minutes of promtool per
# day of it). BENCH_ANALYZE_GPUS / _HOURS / _ANALYZE_HOURS pick another size.
.PHONY: bench-analyze
bench: bench-analyze
BENCH_ANALYZE_GPUS ?= 1000
BENCH_ANALYZE_HOURS ?= 168
BENCH_ANALYZE_ANALYZE_HOURS ?= $(BENCH_ANALYZE_HOURS)
$(BUILD)/bench/gen_om: bench/analyze/gen_om.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $<
bench-analyze: $(BIN) $(BUILD)/bench/gen_om
	@mkdir -p $(BUILD)/bench/analyze
	GOODPUT=$(BIN) GEN_OM=$(BUILD)/bench/gen_om KEEP=$(BUILD)/bench/analyze bench/analyze/run.sh \
	    $(BENCH_ANALYZE_GPUS) $(BENCH_ANALYZE_HOURS) $(BENCH_ANALYZE_ANALYZE_HOURS)
# The trace inflate, libdeflate against zlib: alone in memory (inflate_only) and end to end
# (`goodput trace`, bench/traces/inflate.sh). Results in docs/benchmarks.md.
.PHONY: bench-inflate
bench: bench-inflate
$(BUILD)/bench/inflate_only: bench/traces/inflate_only.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)
bench-inflate: $(BIN) $(BUILD)/bench/inflate_only
	for f in $$(find ../shared/data/kineto -name '*.json.gz' -size +500k | sort); do \
	  $(BUILD)/bench/inflate_only "$$f" 5; done
	GOODPUT=$(BIN) bench/traces/inflate.sh 7
# goodput trace beside HTA on every shared trace, runs alternating, CPU to the microsecond
# (cpurun), plus the synthetic multi-rank set (bench/traces/run.sh; HTA checkout in HTA_DIR,
# default /tmp/hta). Results in docs/benchmarks.md and bench/RESULTS.md ("traces").
.PHONY: bench-traces
bench: bench-traces
$(BUILD)/bench/cpurun: bench/traces/cpurun.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $<
bench-traces: $(BIN) $(BUILD)/bench/cpurun
	GOODPUT=$(BIN) bench/traces/run.sh --reps 3
