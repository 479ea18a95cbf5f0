#!/usr/bin/env bash
# Install test dependencies and run the whole test suite: unit tests, integration tests
# on the real embedded testbed, and the kernel-datapath tests inside the QEMU kernel lab.
#   tools/test.sh             everything (what CI runs)
#   tools/test.sh --quick     the unit tests alone (no testbed, no kernel lab)
#   tools/test.sh --long      the long testbed scenarios (marker `long`) the first form leaves
#                             out to stay short; CI (.ci/run) runs them after it
#   tools/test.sh ARGS...     pytest ARGS (e.g. tests/unit/test_search_multi.py -k binary)
#
# Tests that time no real traffic (unit tests, the generator fakes, and the integration
# tests marked `integration_parallel`: conformance kits of plugins that forward in the
# kernel, on their own claimed testbeds) run on several workers: they mostly wait on sockets
# and subprocesses. The other tests marked `integration` measure the real embedded testbed
# and run one at a time, after them, so nothing else competes for the cores.
# The fresh-machine check installs into its rootfs beside them and runs its quick start
# after them, on its own. The kernel lab (a QEMU/TCG guest with its own kernel, so its
# namespaces and switches are not the host's) runs from the start beside all of it: it
# measures nothing against the host's clock that the others could disturb, only whether
# every frame of a slow fixed-rate trial crosses the emulated datapath. The wheels that integration tests install (vsbench's and the
# examples') are built in the background beside the unit tests too.
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
if [ "${1:-}" = "--long" ]; then
  shift
  exec "${pytest[@]}" -m "long and not integration_parallel" --durations=20 "$@" tests/integration
fi
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi

status=0
begin=$SECONDS
lab_pid=
lab_log=$(mktemp "${TMPDIR:-/tmp}/vsbench-test-lab.XXXXXX")
if [ -x tools/kernel-lab/run-tests ]; then
  set -m
  tools/kernel-lab/run-tests </dev/null >"$lab_log" 2>&1 &
  lab_pid=$!
  set +m
fi
# The fresh-machine check (test_fresh_check.py, minutes of mmdebstrap, apt and pip in a
# clean rootfs) needs the testbed only for its last steps: it starts now, beside the unit
# tests, and its doctor and quick start wait for this lock, which is held until the
# integration tests are done. Its own process group, so an interrupt here reaches it.
fresh_test=tests/integration/test_fresh_check.py
phase_lock=$(mktemp "${TMPDIR:-/tmp}/vsbench-test-lock.XXXXXX")
fresh_log=$(mktemp "${TMPDIR:-/tmp}/vsbench-test-fresh.XXXXXX")
exec 8>"$phase_lock"
flock 8
set -m
VSBENCH_FRESH_TESTBED_LOCK=$phase_lock "${pytest[@]}" -m integration "$fresh_test" </dev/null >"$fresh_log" 2>&1 8>&- &
fresh_pid=$!
set +m
trap '[ -z "$fresh_pid" ] || kill -INT -- "-$fresh_pid" 2>/dev/null; [ -z "$lab_pid" ] || kill -- "-$lab_pid" 2>/dev/null
      rm -f "$phase_lock" "$fresh_log" "$lab_log"' EXIT
# The wheels (tests/integration/wheels.py): pip work, no testbed, its own process group
# too. If this fails, the tests that need them build them.
wheelhouse=$(mktemp -d "${TMPDIR:-/tmp}/vsbench-test-wheels.XXXXXX")
wheel_log=$wheelhouse.log
set -m
.venv/bin/python tests/integration/wheels.py "$wheelhouse" </dev/null >"$wheel_log" 2>&1 8>&- &
wheel_pid=$!
set +m
trap '[ -z "$fresh_pid" ] || kill -INT -- "-$fresh_pid" 2>/dev/null; [ -z "$wheel_pid" ] || kill -- "-$wheel_pid" 2>/dev/null
      [ -z "$lab_pid" ] || kill -- "-$lab_pid" 2>/dev/null
      rm -rf "$phase_lock" "$fresh_log" "$lab_log" "$wheelhouse" "$wheel_log"' EXIT

start=$SECONDS
"${pytest[@]}" "${workers[@]}" -m "not integration or integration_parallel" tests || status=$?
echo "tools/test.sh: tests on several workers took $((SECONDS - start)) s"
wait "$wheel_pid" || { echo "tools/test.sh: building the wheels in the background failed (the tests build them):"; cat "$wheel_log"; }
wheel_pid=
start=$SECONDS
# --durations: the slowest tests and their phases in every CI log, to see what the phase's
# time is made of (issue 10: the whole command within 15 minutes on 2 cores).
VSBENCH_TEST_WHEELHOUSE=$wheelhouse "${pytest[@]}" -m "integration and not integration_parallel and not long" --ignore "$fresh_test" --durations=30 tests || status=$?
echo "tools/test.sh: testbed integration tests took $((SECONDS - start)) s"
flock -u 8
start=$SECONDS
wait "$fresh_pid" || status=$?
fresh_pid=
cat "$fresh_log"
echo "tools/test.sh: fresh-machine check took $((SECONDS - begin)) s from the start, $((SECONDS - start)) s after the integration tests"
if [ -n "$lab_pid" ]; then
  start=$SECONDS
  wait "$lab_pid" || status=$?
  lab_pid=
  cat "$lab_log"
  echo "tools/test.sh: kernel lab (from the start, beside the others) ended $((SECONDS - start)) s after the fresh-machine check"
fi
exit "$status"
