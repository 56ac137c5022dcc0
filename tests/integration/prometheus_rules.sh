#!/usr/bin/env bash
# contrib/prometheus/goodput.rules.yml: valid rules (promtool check rules) whose numbers are
# right (promtool test rules with goodput.rules.test.yml: allocated, busy and productive
# GPU-hours per namespace and pod). Issue 20, item 4.
# asan-skip: runs promtool only, no goodput C code.
set -euo pipefail
: "${GOODPUT_SRC:?}"
command -v promtool >/dev/null || { echo "FAIL: promtool missing (package prometheus)"; exit 1; }
cd "$GOODPUT_SRC/contrib/prometheus"
promtool check rules goodput.rules.yml
promtool test rules goodput.rules.test.yml
echo "PASS prometheus_rules"
