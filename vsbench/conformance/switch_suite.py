"""The checks every vSwitch plugin must pass, on the kit's own embedded testbed.

Subclass :class:`VSwitchConformance` in a test module and provide a fixture
``conformance_vswitch`` returning a :class:`~vsbench.conformance.VSwitchTarget` (or run
``vsbench conformance --vswitch NAME``). Each check builds two veth pairs into a fresh DUT
namespace, creates the switch exactly as the runner does -- its settings, a
:class:`PluginContext` with its own teardown stack and the DUT namespace, every call under
the runner's deadlines -- and judges only what the contract promises:

* it starts a private instance and stops it, twice without harm;
* a bridge with the two DUT ports, once connected, forwards frames both ways;
* version, statistics, threads and per-trial figures are well-formed and JSON-able;
* a switch declaring ``supports_rule_sets`` installs a large rule set in one bulk
  transaction, and with the run's rule set as its forwarding path forwards what matches
  and drops what does not; one that does not declare it refuses in one line;
* a switch declaring ``supports_meters`` really limits the rate;
* a port that does not exist is a one-line ``PluginError``;
* ``stop()``, or the run's teardown alone, leaves no process, namespace link, open file,
  socket or mount behind.

Needs root (network namespaces); without it every check that starts the switch is skipped.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

from vsbench.conformance.contract import PluginContractChecks, assert_jsonable, one_line, skip_unless_ready
from vsbench.conformance.harness import KitHarness, cause_of, target_from
from vsbench.conformance.target import VSwitchTarget
from vsbench.interfaces.plugin import PluginError, RunParameters
from vsbench.interfaces.rules import Direction, RuleSetSpec, write_rule_file
from vsbench.interfaces.vswitch import PortSpec, SwitchPort, SwitchThread
from vsbench.runner import guard
from vsbench.system import naming
from vsbench.system.resources import ResourceStack

FIXTURE_NAME = "conformance_vswitch"
METER_PPS = 1000


class SwitchHarness(KitHarness):
    """One check's testbed, switch instances and what to look for afterwards."""

    kind = "vswitch"
    # generous: a first start may build a database
    policy = guard.DeadlinePolicy(start_s=300, configure_s=120, install_rules_s=600, stop_s=120, call_s=60)

    def __init__(self, target: VSwitchTarget, tmp_path: Path) -> None:
        super().__init__(target, tmp_path)
        self.bridge = naming.iface_name(self.kit.run_id, "br", 0)

    def switch(self, run: RunParameters | None = None):
        return self.create(run)

    def started(self, run: RunParameters | None = None):
        sw, stack = self.switch(run)
        stack.register("the switch (as a deployment registers it)", sw.stop)
        sw.start()
        self.observe()
        return sw, stack

    def wired(self, run: RunParameters | None = None) -> tuple[Any, ResourceStack, list[SwitchPort]]:
        sw, stack = self.started(run)
        sw.add_bridge(self.bridge)
        ports = [sw.add_port(self.bridge, spec) for spec in self.kit.port_specs()]
        sw.connect(self.bridge, ports[0], ports[1])
        self.observe()
        return sw, stack, ports

    def delivery(self, direction: int) -> tuple[int, int]:
        sent, received = self.kit.send(direction, self.target.fields)
        self.observe()
        return sent, received


class VSwitchConformance(PluginContractChecks):
    """Subclass me (``class TestMySwitch(VSwitchConformance): pass``) next to a
    ``conformance_vswitch`` fixture."""

    kind = "vswitch"

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture
    def target(self, request: pytest.FixtureRequest) -> VSwitchTarget:
        return target_from(request, FIXTURE_NAME, VSwitchTarget)

    @pytest.fixture
    def harness(self, target: VSwitchTarget, tmp_path: Path):
        skip_unless_ready(target)
        h = SwitchHarness(target, tmp_path)
        try:
            yield h
        finally:
            h.close()

    def _forwards(self, h: SwitchHarness, direction: int) -> tuple[int, int]:
        sent, received = h.delivery(direction)
        assert sent > 0, "the kit could not send"
        assert received >= h.target.min_delivery * sent, (
            f"port {direction} -> {1 - direction}: {received} of {sent} frames came out")
        return sent, received

    # ------------------------------------------------------------------ life cycle

    def test_starts_and_stops_its_own_instance(self, harness: SwitchHarness) -> None:
        """start() brings up a private instance in the DUT namespace; stop() ends it and
        removes what it created (bridge, ports, forwarding), and a second stop() does no harm."""
        sw, stack = harness.started()
        sw.add_bridge(harness.bridge)
        ports = [sw.add_port(harness.bridge, spec) for spec in harness.kit.port_specs()]
        sw.connect(harness.bridge, ports[0], ports[1])
        sw.stop()
        sw.stop()
        leaks = harness.leaks(close=False)  # stop() itself, before the run's teardown
        assert not leaks, "left behind after stop(): " + "; ".join(leaks)

    def test_forwards_both_ways_between_two_ports(self, harness: SwitchHarness) -> None:
        """A bridge with the two DUT ports, once connected, forwards frames both ways."""
        sw, _, ports = harness.wired()
        for port in ports:
            assert isinstance(port, SwitchPort) and isinstance(port.name, str) and isinstance(port.number, int), (
                f"add_port returned {port!r}, not a SwitchPort(name, number, spec)")
        assert ports[0].number != ports[1].number, "both ports got the same number"
        self._forwards(harness, 0)
        self._forwards(harness, 1)

    def test_reports_version_statistics_and_threads(self, harness: SwitchHarness) -> None:
        """version(), stats(), threads() and max_frame_bytes() are well-formed (they go into
        sysinfo.json and the report)."""
        sw, _, _ = harness.wired()
        version = sw.version()
        assert isinstance(version, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in version.items()), f"version() -> {version!r}"
        stats = sw.stats()
        assert isinstance(stats, dict), f"stats() returned {type(stats).__name__}"
        assert_jsonable(stats, "stats()")
        threads = sw.threads()
        assert isinstance(threads, list)
        for t in threads:
            assert isinstance(t, SwitchThread) and isinstance(t.pid, int) and isinstance(t.tid, int), t
            assert Path(f"/proc/{t.pid}/task/{t.tid}").exists(), f"thread {t} does not exist"
        largest = sw.max_frame_bytes()
        assert largest is None or (isinstance(largest, int) and largest >= 64), f"max_frame_bytes() -> {largest!r}"

    def test_measures_what_a_trial_cost_it(self, harness: SwitchHarness) -> None:
        """trial_begin()/trial_end() around traffic return JSON-able figures (cpu_s >= 0)."""
        sw, _, _ = harness.wired()
        sw.trial_begin()
        self._forwards(harness, 0)
        figures = sw.trial_end()
        assert isinstance(figures, dict), f"trial_end() returned {type(figures).__name__}"
        assert_jsonable(figures, "trial_end()")
        if "cpu_s" in figures and figures["cpu_s"] is not None:
            assert figures["cpu_s"] >= 0, f"cpu_s {figures['cpu_s']}"

    # ------------------------------------------------------------------ rules and meters

    def test_installs_rule_sets_in_bulk_or_refuses(self, harness: SwitchHarness) -> None:
        """A switch declaring supports_rule_sets installs a large rule set in one
        transaction (timed) and still forwards; one that does not refuses in one line."""
        target = harness.target
        sw, _, ports = harness.wired()
        path = harness.tmp_path / "rules.txt"
        spec = RuleSetSpec(template="src_dst_ip", rules=target.rules, fields=target.fields)
        lines = write_rule_file(path, spec, [Direction(ports[0].number, ports[1].number),
                                             Direction(ports[1].number, ports[0].number, reverse=True)])
        if not getattr(target.plugin, "supports_rule_sets", False):
            with pytest.raises(PluginError) as info:
                sw.install_rules(harness.bridge, path)
            cause = cause_of(info.value)
            assert isinstance(cause, PluginError), f"raised {type(cause).__name__}, not PluginError"
            assert one_line(str(cause)), f"not one line: {str(cause)!r}"
            return
        t0 = time.monotonic()
        installed = sw.install_rules(harness.bridge, path)
        took = time.monotonic() - t0
        assert installed == lines, f"install_rules returned {installed}, the file has {lines} rules"
        assert took <= target.max_install_s, (
            f"{lines} rules took {took:.1f} s (> {target.max_install_s:g} s): install them in one "
            "bulk transaction, not one process per rule")
        self._forwards(harness, 0)

    def test_forwards_only_what_the_run_rule_set_matches(self, harness: SwitchHarness) -> None:
        """With the run's rule set (context.run.rule_set) as its forwarding path, frames of
        a flow a rule matches go through and frames no rule matches are dropped."""
        target = harness.target
        if not getattr(target.plugin, "supports_rule_sets", False):
            pytest.skip("does not declare supports_rule_sets")
        spec = RuleSetSpec(template="src_dst_ip", rules=100, fields=target.fields)
        harness.wired(RunParameters(rule_set=spec))
        self._forwards(harness, 0)
        self._forwards(harness, 1)
        stranger = dataclasses.replace(target.fields, src_ip="192.0.2.1")
        sent, received = harness.kit.send(0, stranger)
        assert received == 0, f"{received} of {sent} frames no rule matches came out"

    def test_meters_limit_the_rate(self, harness: SwitchHarness) -> None:
        """A switch declaring supports_meters forwards about context.run.meter_pps, not more."""
        if not getattr(harness.target.plugin, "supports_meters", False):
            pytest.skip("does not declare supports_meters")
        harness.wired(RunParameters(meter_pps=METER_PPS, rule_set=harness.target.run.rule_set))
        sent, received = harness.delivery(0)
        # 1000 frames at 5000 pps last 0.2 s: a 1000 pps meter passes ~200 (+ its bucket)
        assert 0 < received < 0.6 * sent, f"{received} of {sent} frames passed a {METER_PPS} pps meter"

    # ------------------------------------------------------------------ errors and teardown

    def test_a_port_that_does_not_exist_is_a_one_line_error(self, harness: SwitchHarness) -> None:
        """add_port for an interface that is not there raises PluginError in one line, and
        the failed attempt leaves nothing behind."""
        sw, _ = harness.started()
        sw.add_bridge(harness.bridge)
        missing = naming.iface_name(harness.kit.run_id, "nx", 0)
        with pytest.raises(PluginError) as info:
            sw.add_port(harness.bridge, PortSpec(kind="physical", name=missing, iface=missing))
        cause = cause_of(info.value)
        assert isinstance(cause, PluginError), f"raised {type(cause).__name__}: {cause}, not PluginError"
        assert one_line(str(cause)), f"not one line: {str(cause)!r}"
        leaks = harness.leaks()
        assert not leaks, "left behind: " + "; ".join(leaks)

    def test_the_run_teardown_alone_releases_everything(self, harness: SwitchHarness) -> None:
        """Closing the run's teardown stack (what Ctrl-C or a failed run does, without
        calling stop()) leaves nothing behind: start() registered its own undo."""
        sw, stack = harness.switch()
        sw.start()
        harness.observe()
        sw.add_bridge(harness.bridge)
        ports = [sw.add_port(harness.bridge, spec) for spec in harness.kit.port_specs()]
        sw.connect(harness.bridge, ports[0], ports[1])
        harness.delivery(0)
        leaks = harness.leaks()
        assert not leaks, "left behind after the run's teardown: " + "; ".join(leaks)
