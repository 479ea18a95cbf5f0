"""A pytest plugin module (``-p kit_kind_mutants``) giving the vSwitch and VNF suites a
target that is either correct (the example packages' tcswitch and pyfwd) or deliberately
broken (``KIT_MUTANT``), so test_conformance_kinds.py can prove the kit fails for the
defects it promises to catch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for example in ("vsbench-example-vswitch", "vsbench-example-vnf"):
    sys.path.insert(0, str(ROOT / "examples" / example / "src"))

from vsbench.conformance import VnfTarget, VSwitchTarget  # noqa: E402
from vsbench.interfaces import PluginError  # noqa: E402
from vsbench.interfaces.commands import run, spawn  # noqa: E402
from vsbench_example_vnf.plugin import PyFwd  # noqa: E402
from vsbench_example_vswitch.plugin import TcSwitch  # noqa: E402


class DoesNotForward(TcSwitch):
    def connect(self, bridge, a, b):
        pass


class LeavesAnInterface(TcSwitch):
    def start(self):
        super().start()
        run(["ip", "link", "add", "vsbkitleak0", "type", "veth", "peer", "name", "vsbkitleak1"],
            netns=self.context.dut_netns)


class LeavesAProcess(TcSwitch):
    def start(self):
        super().start()
        self.orphan = spawn(["sleep", "300"])  # started, never registered, never stopped


class BugOnMissingPort(TcSwitch):
    def add_port(self, bridge, spec):
        return {}["no such port " + spec.name]


class MultiLineError(TcSwitch):
    def add_port(self, bridge, spec):
        if spec.iface.startswith(self.context.run_id.join(("vsb", "nx"))):
            raise PluginError("tcswitch: port failed\nTraceback (most recent call last): ...")
        return super().add_port(bridge, spec)


class VnfDoesNotForward(PyFwd):
    def start(self, ports):
        super().start(ports)
        self._proc.stop()  # the process goes at once: nothing forwards


class VnfLeavesAProcess(PyFwd):
    def stop(self):
        self._proc = None  # forgets its process instead of ending it


SWITCHES = {c.__name__: c for c in (TcSwitch, DoesNotForward, LeavesAnInterface, LeavesAProcess, BugOnMissingPort,
                                    MultiLineError)}
VNFS = {c.__name__: c for c in (PyFwd, VnfDoesNotForward, VnfLeavesAProcess)}


@pytest.fixture
def conformance_vswitch():
    cls = SWITCHES.get(os.environ.get("KIT_MUTANT", "TcSwitch"))
    if cls is None:
        pytest.skip("a VNF mutant")
    return VSwitchTarget(name="tcswitch", plugin=cls, settings={})


@pytest.fixture
def conformance_vnf():
    cls = VNFS.get(os.environ.get("KIT_MUTANT", "PyFwd"))
    if cls is None:
        pytest.skip("a switch mutant")
    return VnfTarget(name="pyfwd", plugin=cls, settings={}, to_port_mac=False)
