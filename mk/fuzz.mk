# fuzz.mk: libFuzzer targets (fuzz/fuzz_*.c), one per parser; see docs/reliability.md.
#
#   make fuzz-build                build build-fuzz/fuzz/fuzz_* (clang, libFuzzer+ASan+UBSan)
#   make fuzz FUZZ_SECONDS=N       run each target for N seconds on its corpus (default 60)
#   make fuzz-smoke                run each target 5 s with a fixed seed (CI:
#                                  tests/integration/fuzz_smoke.sh; 11 targets ~ 1 min)
# Every run: -rss_limit_mb=256 (FUZZ_RSS_MB overrides), so memory blow-ups are findings.
#
# The library is compiled again into build-fuzz/ with -fsanitize=fuzzer-no-link,address,
# undefined by a recursive make (BUILD=build-fuzz), so fuzzing never touches build/.
# Corpora are built at run time by fuzz/seed.sh into build-fuzz/corpus/<target>/ from
# fuzz/seeds/, the unit tests' data and ../shared/data (never copied into the repo).
# Findings land in build-fuzz/findings/; each one fixed is kept under fuzz/regress/<target>/
# and replayed by fuzz-smoke.
FUZZ_DIR := build-fuzz
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_LINK_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_NAMES := $(sort $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c)))
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz/%)
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_JOBS ?= 1

.PHONY: fuzz fuzz-build fuzz-bins fuzz-smoke fuzz-seed
fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR) CC=clang OPT="-O1 -g" SAN="$(FUZZ_SAN)" fuzz-bins

# Only meaningful inside the recursive make above (BUILD=build-fuzz).
fuzz-bins: $(FUZZ_BINS)

$(FUZZ_DIR)/fuzz/%: fuzz/%.c fuzz/fuzz_util.h $(LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -Ifuzz $(PKG_CFLAGS) -std=c11 -Wall -Wextra -Werror -O1 -g \
	  $(FUZZ_LINK_SAN) -fno-omit-frame-pointer -o $@ $< $(LIB) $(PKG_LIBS) -ldl -lpthread -lm

fuzz-seed:
	@fuzz/seed.sh $(FUZZ_DIR)/corpus

fuzz: fuzz-build fuzz-seed
	@fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_NAMES)

fuzz-smoke: fuzz-build fuzz-seed
	@FUZZ_SMOKE=1 fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SMOKE_SECONDS) $(FUZZ_NAMES)
