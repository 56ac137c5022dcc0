# startup.mk: `make bench-startup` (also part of `make bench`) measures the start-up of
# `goodput --version` and `goodput report`: shared objects mapped, wall and CPU time, peak
# RSS (bench/startup/run.sh; results in docs/benchmarks.md). Never a timed test.
.PHONY: bench-startup
bench: bench-startup
bench-startup: $(BIN)
	bench/startup/run.sh $(BIN)

# Hot/cold layout of the binary. Each function gets its own section, and the link puts the
# ones `--version` and `report` run first (bench/startup/hot.order, made by
# bench/startup/order.sh), so these commands fault in ~3 of the binary's 13 64 KiB windows
# of text instead of all of them: ~0.6 MiB less RSS (docs/benchmarks.md). gold ships in
# binutils; where it cannot link, the default linker links in source order.
CFLAGS += -ffunction-sections
HOT_ORDER := bench/startup/hot.order
ifeq ($(SAN),)
ifneq ($(shell $(CC) -fuse-ld=gold -Wl,--version 2>/dev/null | grep -c 'GNU gold'),0)
BIN_LDFLAGS += -fuse-ld=gold -Wl,--section-ordering-file=$(HOT_ORDER)
$(BIN): $(HOT_ORDER)
endif
endif
