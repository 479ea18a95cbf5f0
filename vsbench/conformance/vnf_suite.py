"""The checks every VNF plugin must pass, on the kit's own embedded testbed.

Subclass :class:`VnfConformance` next to a fixture ``conformance_vnf`` returning a
:class:`~vsbench.conformance.VnfTarget` (or run ``vsbench conformance --vnf NAME``). Each
check builds two veth pairs into a fresh DUT namespace and starts the VNF between their DUT
ends (ports 0 and 1, the pair it forwards between), created as the runner creates it --
its settings, a :class:`PluginContext` with its own teardown stack and the DUT namespace,
every call under the runner's deadlines -- then, as a deployment does, calls its
``configure`` with the traffic profile of the kit's frames (a VNF whose forwarding depends
on the flows, l3fwd, builds its routes from it), and judges:

* it forwards frames both ways between its two ports;
* version and statistics are well-formed and JSON-able;
* a port that does not exist is a one-line ``PluginError``, and leaves nothing behind;
* ``stop()`` (twice), or the run's teardown alone, leaves no process, open file, socket,
  interface or mount behind.

Needs root (network namespaces). A VNF that needs more than its settings and the profile
to forward (a router: routes to the testbed's addresses) gets it from the target's
``prepare``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vsbench.conformance.contract import PluginContractChecks, assert_jsonable, one_line, skip_unless_ready
from vsbench.conformance.harness import KitHarness, cause_of, target_from
from vsbench.conformance.target import VnfTarget
from vsbench.interfaces.plugin import PluginError
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.runner import guard
from vsbench.system import naming

FIXTURE_NAME = "conformance_vnf"


class VnfHarness(KitHarness):
    kind = "vnf"
    # a VNF in a VM boots slowly under TCG
    policy = guard.DeadlinePolicy(start_s=600, configure_s=120, stop_s=120, call_s=60)

    def vnf(self):
        return self.create()

    def started(self, *, register_stop: bool = True):
        vnf, stack = self.vnf()
        if register_stop:
            stack.register("the VNF (as a deployment registers it)", vnf.stop)
        vnf.start(self.kit.vnf_ports())
        self.observe()
        self.prepare(vnf)
        return vnf, stack

    @property
    def to(self) -> str:
        """Whom the kit's frames are addressed to (:meth:`KitTestbed.send`)."""
        return "port" if self.target.to_port_mac else "peer"

    def prepare(self, vnf) -> None:
        """What a deployment does after ``start()``: the profile of the kit's frames to
        ``configure``, then the target's own ``prepare``."""
        vnf.configure(self.kit.profile(self.target.fields, to=self.to))
        self.observe()
        if self.target.prepare is not None:
            self.target.prepare(guard.unwrap(vnf), self.kit)
            self.observe()


class VnfConformance(PluginContractChecks):
    """Subclass me (``class TestMyVnf(VnfConformance): pass``) next to a ``conformance_vnf``
    fixture."""

    kind = "vnf"

    @pytest.fixture
    def target(self, request: pytest.FixtureRequest) -> VnfTarget:
        return target_from(request, FIXTURE_NAME, VnfTarget)

    @pytest.fixture
    def harness(self, target: VnfTarget, tmp_path: Path):
        skip_unless_ready(target)
        h = VnfHarness(target, tmp_path)
        try:
            yield h
        finally:
            h.close()

    def test_forwards_both_ways_between_its_ports(self, harness: VnfHarness) -> None:
        """Started between two ports, it forwards frames from each to the other."""
        if not harness.target.forwards:
            pytest.skip("the target declares a VNF that does not forward")
        harness.started()
        for direction in (0, 1):
            sent, received = harness.kit.send(direction, harness.target.fields, to=harness.to)
            harness.observe()
            assert sent > 0, "the kit could not send"
            assert received >= harness.target.min_delivery * sent, (
                f"port {direction} -> {1 - direction}: {received} of {sent} frames came out")

    def test_reports_version_and_statistics(self, harness: VnfHarness) -> None:
        """version() and stats() are well-formed and JSON-able (sysinfo.json, trials.jsonl)."""
        vnf, _ = harness.started()
        version = vnf.version()
        assert isinstance(version, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in version.items()), f"version() -> {version!r}"
        stats = vnf.stats()
        assert isinstance(stats, dict), f"stats() returned {type(stats).__name__}"
        assert_jsonable(stats, "stats()")

    def test_stops_and_leaves_nothing(self, harness: VnfHarness) -> None:
        """stop() ends what start() started; a second stop() does no harm."""
        vnf, _ = harness.started()
        vnf.stop()
        vnf.stop()
        leaks = harness.leaks(close=False)  # stop() itself, before the run's teardown
        assert not leaks, "left behind after stop(): " + "; ".join(leaks)

    def test_the_run_teardown_alone_releases_everything(self, harness: VnfHarness) -> None:
        """Closing the run's teardown stack without calling stop() (Ctrl-C, a failed run)
        leaves nothing behind: start() registered its own undo."""
        harness.started(register_stop=False)
        leaks = harness.leaks()
        assert not leaks, "left behind after the run's teardown: " + "; ".join(leaks)

    def test_a_port_that_does_not_exist_is_a_one_line_error(self, harness: VnfHarness) -> None:
        """start() on an interface that is not there raises PluginError in one line and
        leaves nothing behind."""
        if not harness.target.forwards:
            pytest.skip("the target declares a VNF that does not forward (it opens no port)")
        vnf, stack = harness.vnf()
        stack.register("the VNF", vnf.stop)
        missing = naming.iface_name(harness.kit.run_id, "nx", 0)
        ports = harness.kit.vnf_ports()
        ports[1] = SwitchPort(name=missing, number=1, spec=PortSpec(kind="physical", name=missing, iface=missing))
        with pytest.raises(PluginError) as info:
            vnf.start(ports)
            harness.prepare(vnf)
        cause = cause_of(info.value)
        assert isinstance(cause, PluginError), f"raised {type(cause).__name__}: {cause}, not PluginError"
        assert one_line(str(cause)), f"not one line: {str(cause)!r}"
        leaks = harness.leaks()
        assert not leaks, "left behind: " + "; ".join(leaks)
