#!/usr/bin/env bash
# Install test dependencies and run the whole test suite: unit tests, integration tests
# on the real embedded testbed, and the kernel-datapath tests inside the QEMU kernel lab.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --test
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" tests || status=$?
if [ "$status" -eq 0 ] && [ $# -eq 0 ] && [ -x tools/kernel-lab/run-tests ]; then
  tools/kernel-lab/run-tests || status=$?
fi
exit "$status"
