# startup.mk: `make bench-startup` (also part of `make bench`) measures the start-up of
# `goodput --version` and `goodput report`: shared objects mapped, wall and CPU time, peak
# RSS (bench/startup/run.sh; results in docs/benchmarks.md). Never a timed test.
.PHONY: bench-startup
bench: bench-startup
bench-startup: $(BIN)
	bench/startup/run.sh $(BIN)

# Hot/cold layout of the binary. Each function gets its own section, and the link puts the
# ones `--version` and `report` run next to each other and to the read-only data they read
# (bench/startup/hot.order, made by bench/startup/order.sh), so these commands fault in a
# few of the binary's 64 KiB windows of text instead of all of them (docs/benchmarks.md,
# "Start-up and libraries"). gold ships in binutils; where it cannot link, the default
# linker links in source order. Sanitizer builds (SAN) keep the plain link.
CFLAGS += -ffunction-sections -fdata-sections
HOT_ORDER := bench/startup/hot.order
ifeq ($(SAN),)
ifneq ($(shell $(CC) -fuse-ld=gold -Wl,--version 2>/dev/null | grep -c 'GNU gold'),0)
# 64 KiB segment alignment: the kernel then loads the binary at a 64 KiB boundary, so its
# fault-around windows (64 KiB, aligned by address) are the same file ranges on every run
# and hot.order's grouping holds; with 4 KiB alignment they fall anywhere.
BIN_LDFLAGS += -fuse-ld=gold -Wl,--section-ordering-file=$(HOT_ORDER) -Wl,-z,max-page-size=0x10000
$(BIN): $(HOT_ORDER)

# SQLite, jansson, yajl and zlib linked from Debian's static archives (same -dev packages
# as the shared ones) into the binary alone: no libsqlite3/libjansson/libyajl/libz to map
# and relocate at start, and their members placed by hot.order (bench/startup/archive.sh
# names each member's sections). ~0.5 MiB less peak RSS for `report`, ~0.5 MiB for
# `--version`. libm comes from glibc's libm.a for the functions without IFUNC and from
# libm.so.6 opened on first call for the others (src/util/dl_m.c), so it is not mapped at
# start either (~0.35 MiB; a libm function new to the code that has an IFUNC fails to link
# with "undefined reference to _dl_x86_cpu_features" until it is added there). Tests and test shared libraries keep linking the shared
# libraries (the archives are not built -fPIC). STATIC_LIBS=0 links them shared.
STATIC_LIBS ?= 1
STATIC_ARCHIVES := sqlite3:libsqlite3.a jansson:libjansson.a yajl:libyajl_s.a z:libz.a
static_src = $(shell $(CC) -print-file-name=$(1))
ifeq ($(STATIC_LIBS),1)
ifeq ($(words $(foreach a,$(STATIC_ARCHIVES),$(wildcard $(call static_src,$(lastword $(subst :, ,$(a))))))),$(words $(STATIC_ARCHIVES)))
STATIC_OUT := $(foreach a,$(STATIC_ARCHIVES),$(BUILD)/static/$(lastword $(subst :, ,$(a))))
# SQLite's built-in extensions goodput never uses (FTS3/4, FTS5, R-tree, dbstat, sqlite_stmt)
# are left out: bench/startup/sqlite_lean.c, linked ahead of the archive, defines their
# registration functions as no-ops, so their members are not linked and sqlite3_open no
# longer faults in the windows around them (~0.25 MiB of report's peak RSS).
SQLITE_LEAN := $(BUILD)/static/sqlite_lean.o
$(SQLITE_LEAN): bench/startup/sqlite_lean.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -c $< -o $@
BIN_LDLIBS = $(SQLITE_LEAN) $(STATIC_OUT) -ldl -lpthread -Wl,-Bstatic -lm -Wl,-Bdynamic
$(BIN): $(STATIC_OUT) $(SQLITE_LEAN)
define static_rule
$(BUILD)/static/$(2): $(call static_src,$(2)) bench/startup/archive.sh
	@mkdir -p $$(@D)
	bench/startup/archive.sh $$< $$@ $(1)
endef
$(foreach a,$(STATIC_ARCHIVES),$(eval $(call static_rule,$(firstword $(subst :, ,$(a))),$(lastword $(subst :, ,$(a))))))
endif
endif
endif
endif
