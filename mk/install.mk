# install.mk: `make install PREFIX=/usr/local [DESTDIR=...]` and `make uninstall`.
#   PREFIX/bin/goodput                        the binary (dashboard and demo compiled in)
#   PREFIX/share/man/man1/goodput.1           generated from the help texts (scripts/gen-man)
#   PREFIX/share/goodput/scenarios/*.conf     example scenarios (goodput demo --scenario F)
#   PREFIX/share/goodput/contrib/             Slurm prolog/epilog and other integrations
#   PREFIX/lib/goodput/python/goodput/        the Python client: PYTHONPATH=PREFIX/lib/goodput/python
#   PREFIX/share/bash-completion/completions/goodput, PREFIX/share/zsh/site-functions/_goodput
#   PREFIX/share/doc/goodput/                 README and docs/
# The dashboard's files (web/) are compiled into the binary (mk/web.mk): nothing to install.
PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
GEN_MAN := $(BUILD)/gen/goodput.1
GEN_BASH := $(BUILD)/gen/goodput.bash
GEN_ZSH := $(BUILD)/gen/_goodput

.PHONY: install uninstall man
man: $(GEN_MAN)
$(GEN_MAN): $(BIN) scripts/gen-man
	@mkdir -p $(dir $@)
	scripts/gen-man $(BIN) >$@.tmp && mv $@.tmp $@
$(GEN_BASH): $(BIN) scripts/gen-completion
	@mkdir -p $(dir $@)
	scripts/gen-completion $(BIN) bash >$@.tmp && mv $@.tmp $@
$(GEN_ZSH): $(BIN) scripts/gen-completion
	@mkdir -p $(dir $@)
	scripts/gen-completion $(BIN) zsh >$@.tmp && mv $@.tmp $@

install: $(BIN) $(GEN_MAN) $(GEN_BASH) $(GEN_ZSH)
	install -d $(INSTALL_ROOT)/bin $(INSTALL_ROOT)/share/man/man1 \
	  $(INSTALL_ROOT)/share/goodput/scenarios $(INSTALL_ROOT)/lib/goodput/python/goodput \
	  $(INSTALL_ROOT)/share/bash-completion/completions $(INSTALL_ROOT)/share/zsh/site-functions \
	  $(INSTALL_ROOT)/share/doc/goodput/docs $(INSTALL_ROOT)/share/goodput/contrib
	install -m 755 $(BIN) $(INSTALL_ROOT)/bin/goodput
	install -m 644 $(GEN_MAN) $(INSTALL_ROOT)/share/man/man1/goodput.1
	install -m 644 examples/scenarios/*.conf $(INSTALL_ROOT)/share/goodput/scenarios/
	cp -R contrib/. $(INSTALL_ROOT)/share/goodput/contrib/
	install -m 644 clients/python/goodput/*.py $(INSTALL_ROOT)/lib/goodput/python/goodput/
	install -m 644 $(GEN_BASH) $(INSTALL_ROOT)/share/bash-completion/completions/goodput
	install -m 644 $(GEN_ZSH) $(INSTALL_ROOT)/share/zsh/site-functions/_goodput
	install -m 644 README.md $(INSTALL_ROOT)/share/doc/goodput/
	install -m 644 docs/*.md $(INSTALL_ROOT)/share/doc/goodput/docs/
	@echo "installed goodput in $(INSTALL_ROOT); Python client: PYTHONPATH=$(PREFIX)/lib/goodput/python"

uninstall:
	rm -f $(INSTALL_ROOT)/bin/goodput $(INSTALL_ROOT)/share/man/man1/goodput.1 \
	  $(INSTALL_ROOT)/share/bash-completion/completions/goodput \
	  $(INSTALL_ROOT)/share/zsh/site-functions/_goodput
	rm -rf $(INSTALL_ROOT)/share/goodput $(INSTALL_ROOT)/lib/goodput $(INSTALL_ROOT)/share/doc/goodput
