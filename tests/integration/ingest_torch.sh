#!/usr/bin/env bash
# goodput.pytorch on a real small training loop with a slow DataLoader (Debian python3-torch).
set -eu
cd "${GOODPUT_SRC:-.}"
BUILD=${BUILD:-build}
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "skip: python3-torch is not installed (scripts/deps.d/ingest.txt lists it)"
  exit 77
fi
. tests/integration/ingest_lib.bash
build_recv
/usr/bin/python3 -m unittest discover -s clients/python/tests -p 'test_torch.py' -v
