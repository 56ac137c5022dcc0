#!/usr/bin/env bash
# The Python client (clients/python) against the real receiver: gp_ingest in a C harness.
set -eu
cd "${GOODPUT_SRC:-.}"
BUILD=${BUILD:-build}
. tests/integration/ingest_lib.bash
build_recv
/usr/bin/python3 -m unittest discover -s clients/python/tests -p 'test_client.py' -v
