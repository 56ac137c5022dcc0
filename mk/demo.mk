# demo.mk: compiles examples/scenarios/demo.conf (the source of truth) into the binary as a
# C string, so `goodput demo` runs from any directory with no files installed.
DEMO_CONF := examples/scenarios/demo.conf
DEMO_GEN_C := $(BUILD)/gen/demo_scenario.c
DEMO_OBJ := $(BUILD)/obj/gen/demo_scenario.o
GEN_OBJS += $(DEMO_OBJ)

$(DEMO_GEN_C): $(DEMO_CONF) mk/demo.mk
	@mkdir -p $(dir $@)
	@{ echo '/* generated from $(DEMO_CONF) by mk/demo.mk: do not edit */'; \
	  echo 'const char gp_demo_scenario_conf[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $(DEMO_CONF); \
	  echo '    ;'; } >$@.tmp && mv $@.tmp $@

$(DEMO_OBJ): $(DEMO_GEN_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(DEMO_OBJ)
