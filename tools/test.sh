#!/usr/bin/env bash
# Install test dependencies and run the test suite: unit tests, integration tests on the
# real embedded testbed, and the kernel-datapath tests inside the QEMU kernel lab.
#   tools/test.sh             all of them (the README's test command)
#   tools/test.sh --quick     the unit tests alone (no testbed, no kernel lab)
#   tools/test.sh --long      the long scenarios the first form leaves out to stay short: the
#                             testbed scenarios marked `long`, the kernel lab's (its whole-
#                             runner runs), then the fresh-machine check
#                             (test_fresh_check.py); CI (.ci/run) runs them after it
#   tools/test.sh ARGS...     pytest ARGS (e.g. tests/unit/test_search_multi.py -k binary)
#
# Tests that time no real traffic (unit tests, the generator fakes, and the integration
# tests marked `integration_parallel`: conformance kits of plugins that forward in the
# kernel, on their own claimed testbeds) run on several workers: they mostly wait on sockets
# and subprocesses. The other tests marked `integration` measure the real embedded testbed
# and run one at a time, after them, so nothing else competes for the cores; the kernel lab
# runs last. The wheels that integration tests install (vsbench's and the examples') are
# built in the background from the start.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh --test
# Python caches compiled modules: hundreds of test processes (CLI runs, fakes, the kit's
# senders) would otherwise each compile vsbench again (~0.4 s a process).
unset PYTHONDONTWRITEBYTECODE
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
workers=(-n "${VSBENCH_TEST_WORKERS:-4}")

if [ "${1:-}" = "--quick" ]; then
  shift
  exec "${pytest[@]}" "${workers[@]}" "$@" tests/unit
fi
fresh_test=tests/integration/test_fresh_check.py
if [ "${1:-}" = "--long" ]; then
  shift
  status=0
  start=$SECONDS
  "${pytest[@]}" -m "long and not integration_parallel" --ignore "$fresh_test" --durations=20 "$@" tests/integration || status=$?
  echo "tools/test.sh --long: the long testbed scenarios took $((SECONDS - start)) s"
  # The kernel lab's long scenarios: a whole rule_complexity run per kernel switch (the
  # testcase, the runner, trafgen, ovs_kernel or ovs_tc), 35-50 s each on emulated CPUs.
  if [ -x tools/kernel-lab/run-tests ]; then
    start=$SECONDS
    tools/kernel-lab/run-tests -m long || status=$?
    echo "tools/test.sh --long: the kernel lab's long scenarios took $((SECONDS - start)) s"
  fi
  # The fresh-machine check (minutes of mmdebstrap, apt and pip in a clean rootfs, then the
  # quick start there) checks the installation, not the code: a long scenario, run after
  # the others so its package installs disturb no measurement. tools/fresh-check.sh runs
  # the same check, and more, by hand.
  start=$SECONDS
  "${pytest[@]}" -m integration "$fresh_test" || status=$?
  echo "tools/test.sh --long: the fresh-machine check took $((SECONDS - start)) s"
  exit "$status"
fi
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi

status=0
pids=()
logs=()
# Each background job gets its own process group, so an interrupt here reaches all of it.
trap 'for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done; rm -rf "${logs[@]}"' EXIT
background() {  # background LOG COMMAND...: start COMMAND in its own process group
  local log=$1
  shift
  set -m
  "$@" </dev/null >"$log" 2>&1 &
  set +m
  pids+=("$!")
}
# The wheels (tests/integration/wheels.py): pip work, no testbed. The tests that install
# them wait for them; if this fails, they build them.
wheelhouse=$(mktemp -d "${TMPDIR:-/tmp}/vsbench-test-wheels.XXXXXX")
wheel_log=$wheelhouse.log
logs+=("$wheelhouse" "$wheel_log")
background "$wheel_log" .venv/bin/python tests/integration/wheels.py "$wheelhouse"
wheel_pid=$!
export VSBENCH_TEST_WHEELHOUSE=$wheelhouse

start=$SECONDS
"${pytest[@]}" "${workers[@]}" -m "not integration or integration_parallel" tests || status=$?
echo "tools/test.sh: tests on several workers took $((SECONDS - start)) s"
wait "$wheel_pid" || { echo "tools/test.sh: building the wheels in the background failed (the tests build them):"; cat "$wheel_log"; }
start=$SECONDS
# --durations: the slowest tests and their phases in every CI log, to see what the phase's
# time is made of (issue 10: the whole command within 15 minutes on 2 cores).
"${pytest[@]}" -m "integration and not integration_parallel and not long" --ignore "$fresh_test" --durations=30 tests || status=$?
echo "tools/test.sh: testbed integration tests took $((SECONDS - start)) s"
# The kernel lab last, alone: beside the first phase (tried) its emulated CPUs took ~100 s
# of that phase's two cores, and fakes timed by their controllers (PROX) failed under it.
if [ -x tools/kernel-lab/run-tests ]; then
  start=$SECONDS
  tools/kernel-lab/run-tests -m "not long" || status=$?
  echo "tools/test.sh: kernel lab took $((SECONDS - start)) s"
fi
exit "$status"
