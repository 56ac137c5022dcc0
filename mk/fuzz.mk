# fuzz.mk: libFuzzer targets (fuzz/fuzz_*.c), one per parser; see docs/reliability.md.
#
#   make fuzz-build                build build-fuzz/fuzz/fuzz_* (clang, libFuzzer+ASan+UBSan)
#   make fuzz FUZZ_SECONDS=N       run each target for N seconds on its corpus (default 60)
#   make fuzz-smoke                run each target 3 s with a fixed seed (CI:
#                                  tests/integration/fuzz_smoke.sh; 13 targets ~ 1 min),
#                                  from a build of its own (build-fuzz-smoke/, see below)
# Every run: -rss_limit_mb=256 (FUZZ_RSS_MB overrides), so memory blow-ups are findings.
#
# The library is compiled again into build-fuzz/ with -fsanitize=fuzzer-no-link,address,
# undefined by a recursive make (BUILD=build-fuzz), so fuzzing never touches build/.
# Corpora are built at run time by fuzz/seed.sh into build-fuzz/corpus/<target>/ from
# fuzz/seeds/, the unit tests' data and ../shared/data (never copied into the repo).
# Findings land in build-fuzz/findings/; each one fixed is kept under fuzz/regress/<target>/
# and replayed by fuzz-smoke.
FUZZ_DIR ?= build-fuzz
FUZZ_OPT ?= -O1 -g
# The smoke compiles at -O0 with line tables only, into a folder of its own: 20 s of CPU on
# 2 cores instead of 75-130 s for -O1 -g (a third compile of the whole library in every CI
# run), for 40-100% of the executions a second (the slowest parsers, csv and kineto, about
# a third), which a 3 s smoke that mainly replays its corpus and fuzz/regress/ can spare.
# Stack traces keep their files and lines. `make fuzz` keeps -O1 -g in build-fuzz/.
FUZZ_SMOKE_DIR := build-fuzz-smoke
FUZZ_SMOKE_OPT := -O0 -gline-tables-only
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_LINK_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_NAMES := $(sort $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c)))
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz/%)
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_JOBS ?= 1

.PHONY: fuzz fuzz-build fuzz-bins fuzz-smoke fuzz-smoke-build fuzz-seed
fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR) FUZZ_DIR=$(FUZZ_DIR) CC=clang OPT="$(FUZZ_OPT)" \
	  SAN="$(FUZZ_SAN)" fuzz-bins

# Only meaningful inside the recursive make above (BUILD=build-fuzz).
fuzz-bins: $(FUZZ_BINS)

$(FUZZ_DIR)/fuzz/%: fuzz/%.c fuzz/fuzz_util.h $(LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -Ifuzz $(PKG_CFLAGS) -std=c11 -Wall -Wextra -Werror $(OPT) \
	  $(FUZZ_LINK_SAN) -fno-omit-frame-pointer -o $@ $< $(LIB) $(PKG_LIBS) -ldl -lpthread -lm

fuzz-seed:
	@fuzz/seed.sh $(FUZZ_DIR)/corpus

fuzz: fuzz-build fuzz-seed
	@fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_NAMES)

fuzz-smoke-build:
	@$(MAKE) --no-print-directory FUZZ_DIR=$(FUZZ_SMOKE_DIR) FUZZ_OPT="$(FUZZ_SMOKE_OPT)" \
	  fuzz-build fuzz-seed

fuzz-smoke: fuzz-smoke-build
	@FUZZ_SMOKE=1 fuzz/run.sh $(FUZZ_SMOKE_DIR) $(FUZZ_SMOKE_SECONDS) $(FUZZ_NAMES)
