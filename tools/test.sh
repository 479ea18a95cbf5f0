#!/usr/bin/env bash
# Install test dependencies and run the whole test suite: unit tests, integration tests
# on the real embedded testbed, and the kernel-datapath tests inside the QEMU kernel lab.
#   tools/test.sh             everything (what CI runs)
#   tools/test.sh --quick     the unit tests alone (no testbed, no kernel lab)
#   tools/test.sh ARGS...     pytest ARGS (e.g. tests/unit/test_search_multi.py -k binary)
#
# Tests that time no real traffic (unit tests, the generator fakes) run on several workers:
# they mostly wait on sockets and subprocesses. Tests marked `integration` measure the real
# embedded testbed and run one at a time, after them, so nothing else competes for the cores.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --test
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
workers=(-n "${VSBENCH_TEST_WORKERS:-4}")

if [ "${1:-}" = "--quick" ]; then
  shift
  exec "${pytest[@]}" "${workers[@]}" "$@" tests/unit
fi
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi

status=0
start=$SECONDS
"${pytest[@]}" "${workers[@]}" -m "not integration" tests || status=$?
echo "tools/test.sh: tests without the testbed took $((SECONDS - start)) s"
start=$SECONDS
"${pytest[@]}" -m integration tests || status=$?
echo "tools/test.sh: testbed integration tests took $((SECONDS - start)) s"
if [ "$status" -eq 0 ] && [ -x tools/kernel-lab/run-tests ]; then
  start=$SECONDS
  tools/kernel-lab/run-tests || status=$?
  echo "tools/test.sh: kernel lab took $((SECONDS - start)) s"
fi
exit "$status"
