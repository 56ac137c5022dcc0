# web.mk: compiles the dashboard (web/) into the binary. web/embed.c (a build tool, not in
# libgoodput) writes $(BUILD)/gen/web_assets.c with one byte array per file; its object
# joins libgoodput.a. uPlot is vendored under web/vendor/ (MIT, license beside it), so the
# build needs neither npm nor the internet; package.json pins the same version for
# `npm ci` users and for the Chromium test's playwright-core.
WEB_FILES := $(sort $(shell find web -type f ! -name 'embed.c' ! -name '*.md' ! -name 'LICENSE*' 2>/dev/null))
WEB_EMBED := $(BUILD)/gen/web_embed
WEB_GEN_C := $(BUILD)/gen/web_assets.c
WEB_OBJ := $(BUILD)/obj/gen/web_assets.o
GEN_OBJS += $(WEB_OBJ)

$(WEB_EMBED): web/embed.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O1 -Wall -Wextra -Werror -o $@ $<

$(WEB_GEN_C): $(WEB_FILES) $(WEB_EMBED) mk/web.mk
	@mkdir -p $(dir $@)
	$(WEB_EMBED) $@ web $(WEB_FILES)

$(WEB_OBJ): $(WEB_GEN_C)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(WEB_OBJ)
