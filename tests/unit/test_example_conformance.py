"""The conformance kit's checks that need no testbed, run here (parallel, no root, no lock)
rather than in the serial integration tests: every example package's class checks, the
defects they catch, toygen against its own fake (a separate process modelling a DUT), and
``vsbench conformance`` refusing what it cannot check.

The examples are imported from their ``src/`` trees, not installed: the class is what the
checks read, and toygen's server is started as ``python -m`` with the same path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "examples" / name / "src" for name in
           ("vsbench-example-vswitch", "vsbench-example-vnf", "vsbench-example-trafficgen")]
for source in SOURCES:
    if str(source) not in sys.path:
        sys.path.insert(0, str(source))

from vsbench.conformance import ConformanceTarget, VnfTarget, VSwitchTarget  # noqa: E402
from vsbench.conformance.contract import PluginContractChecks  # noqa: E402
from vsbench.conformance.suite import TrafficGeneratorConformance  # noqa: E402
from vsbench_example_trafficgen.plugin import ToyGen  # noqa: E402
from vsbench_example_vnf.plugin import PyFwd  # noqa: E402
from vsbench_example_vswitch.plugin import TcSwitch  # noqa: E402

MODEL_CAPACITY_FPS = 200_000


class TestTcSwitchClass(PluginContractChecks):
    kind = "vswitch"

    @pytest.fixture
    def target(self):
        return VSwitchTarget(name="tcswitch", plugin=TcSwitch, settings={"egress_limit_bps": 1_000_000})


class TestPyFwdClass(PluginContractChecks):
    kind = "vnf"

    @pytest.fixture
    def target(self):
        return VnfTarget(name="pyfwd", plugin=PyFwd, settings={})


@pytest.fixture
def server_importable(monkeypatch):
    """toygen launches its server with ``python -m``: the child needs the example's path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SOURCES[2]), os.environ.get("PYTHONPATH", "")]))


class TestToygenAgainstItsModel(TrafficGeneratorConformance):
    """Every check of the generator contract, toygen-server modelling a 200 kfps DUT."""

    @pytest.fixture
    def conformance_generator(self, server_importable):
        return ConformanceTarget(
            name="toygen",
            plugin=ToyGen,
            settings={"model_capacity_fps": MODEL_CAPACITY_FPS, "drain_s": 0},
            dut_capacity_fps=MODEL_CAPACITY_FPS,
            trial_duration_s=0.25,
            unreachable_settings={"server": {"host": "127.0.0.1", "port": 1}, "connect_timeout_s": 1},
            unreachable_address="127.0.0.1:1",
        )


# --- the class checks fail, in words, for the defects they promise to catch ---------------

class NoSchema(TcSwitch):
    settings_schema = None


class OpenSchema(TcSwitch):
    settings_schema = {"type": "object"}


class OldApi(TcSwitch):
    api_version = "0.9"


class TwoLineDescription(TcSwitch):
    description = "a switch\nthat says too much"


class PrerequisitesNotAList(TcSwitch):
    @classmethod
    def check_prerequisites(cls, settings):
        return "tc is missing"


class NotASwitch(PyFwd):
    pass


@pytest.mark.parametrize("plugin, check, says", [
    (NoSchema, "test_settings_schema_is_present_and_valid", "no settings_schema"),
    (OpenSchema, "test_settings_schema_refuses_a_misspelt_setting", "additionalProperties"),
    (OldApi, "test_declares_the_plugin_api_it_was_written_for", "0.9"),
    (TwoLineDescription, "test_describes_itself_in_one_line", "one-line `description`"),
    (PrerequisitesNotAList, "test_prerequisites_are_answered_in_words", "not a list"),
    (NotASwitch, "test_is_a_plugin_of_its_kind", "is a vnf plugin, not a vswitch plugin"),
])
def test_the_class_checks_catch(plugin, check, says):
    checks = PluginContractChecks()
    checks.kind = "vswitch"
    target = VSwitchTarget(name="broken", plugin=plugin, settings={})
    with pytest.raises((AssertionError, pytest.fail.Exception)) as caught:
        getattr(checks, check)(target)
    message = str(caught.value)
    assert says in message, message
    # and the correct class passes the same check
    getattr(checks, check)(VSwitchTarget(name="tcswitch", plugin=TcSwitch, settings={}))


def conformance_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vsbench.cli.main", "conformance", *args],
                          capture_output=True, text=True, timeout=120, cwd="/")


@pytest.mark.parametrize("args, says", [
    (["--vnf", "no_such_vnf"], "vsbench: error: unknown vnf plugin 'no_such_vnf'"),
    ([], "vsbench: error: one of the arguments --vswitch --vnf --trafficgen is required"),
    (["--vswitch", "linux_bridge", "--conf-file", "/nonexistent.yaml"],
     "vsbench: error: no such configuration file: /nonexistent.yaml"),
])
def test_the_cli_refuses_what_it_cannot_check_in_one_line(args, says):
    done = conformance_cli(*args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(says), done.stderr
    assert "Traceback" not in done.stderr
