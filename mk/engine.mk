# engine.mk: the engine accuracy suite (tests/accuracy), run by
# tests/integration/engine_accuracy.sh.
ACCURACY_BIN := $(BUILD)/tests/accuracy
all: $(ACCURACY_BIN)
$(ACCURACY_BIN): tests/accuracy/accuracy.c tests/unit/agent_run.h $(LIB) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(PKG_CFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)
