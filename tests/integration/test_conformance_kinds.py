"""The vSwitch and VNF conformance suites fail for the defects they promise to catch, pass
the example plugins, and run as documented: ``pytest -p <fixtures> --pyargs
vsbench.conformance.test_vswitch_conformance`` and ``vsbench conformance --vswitch NAME``.
They build the kit's netns testbed and push a few thousand frames: root, and the lock.
The checks that need no testbed (the class checks and their mutants, the CLI's refusals)
are unit tests: tests/unit/test_example_conformance.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# the kits check frame counts, life cycle and leftovers of plugins that forward in the kernel
# (tcswitch) or in a Python process (pyfwd), and time nothing: beside the unit tests
pytestmark = [pytest.mark.integration, pytest.mark.integration_parallel]

HERE = Path(__file__).resolve().parent
EXAMPLE_SOURCES = [HERE.parents[1] / "examples" / name / "src" for name in
                   ("vsbench-example-vswitch", "vsbench-example-vnf")]

if os.geteuid() != 0:
    pytest.skip("the kit's testbed needs root", allow_module_level=True)


def run_kit(tmp_path: Path, kind: str, mutant: str, select: str | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pytest", "-p", "kit_kind_mutants", "-p", "vsbench.conformance.report",
            "--pyargs", f"vsbench.conformance.test_{kind}_conformance", "-q", "-p", "no:cacheprovider",
            "--basetemp", str(tmp_path / "inner")]
    if select:
        argv += ["-k", select]
    # the examples' sources on the path of the kit and of what the plugins start (pyfwd's
    # forwarder is "python -m vsbench_example_vnf.forwarder"), as an installed package is
    env = {**os.environ, "KIT_MUTANT": mutant,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), *map(str, EXAMPLE_SOURCES),
                                                       os.environ.get("PYTHONPATH")]))}
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)


@pytest.mark.parametrize("kind, plugin", [("vswitch", "TcSwitch"), ("vnf", "PyFwd")])
def test_the_example_plugins_pass_and_the_report_says_so(tmp_path, kind, plugin):
    done = run_kit(tmp_path, kind, plugin)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "vsbench conformance report" in done.stdout
    assert "0 failed" in done.stdout and "FAIL " not in done.stdout, done.stdout[-3000:]


@pytest.mark.parametrize("mutant, check, says", [
    ("DoesNotForward", "forwards_both_ways", "0 of 1000 frames came out"),
    ("LeavesAnInterface", "starts_and_stops", "interface vsbkitleak0 in the DUT namespace"),
    ("LeavesAProcess", "run_teardown_alone", "sleep 300"),
    ("BugOnMissingPort", "port_that_does_not_exist", "raised KeyError"),
    ("MultiLineError", "port_that_does_not_exist", "not one line"),
])
def test_the_switch_kit_catches(tmp_path, mutant, check, says):
    done = run_kit(tmp_path, "vswitch", mutant, check)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 failed" in done.stdout, done.stdout[-3000:]
    assert says in done.stdout, done.stdout[-3000:]


@pytest.mark.parametrize("mutant, check, says", [
    ("VnfDoesNotForward", "forwards_both_ways", "frames came out"),
    ("VnfLeavesAProcess", "stops_and_leaves_nothing", "vsbench_example_vnf.forwarder"),
])
def test_the_vnf_kit_catches(tmp_path, mutant, check, says):
    done = run_kit(tmp_path, "vnf", mutant, check)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 failed" in done.stdout and says in done.stdout, done.stdout[-3000:]


def test_the_cli_checks_a_builtin_switch_by_name(tmp_path):
    done = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "conformance", "--vswitch", "linux_bridge"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    report = done.stdout[done.stdout.index("vsbench conformance report: vswitch linux_bridge"):]
    assert "PASS  A bridge with the two DUT ports, once connected, forwards frames both ways." in report
    assert "0 failed" in report

