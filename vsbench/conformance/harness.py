"""What the vSwitch and VNF suites share: one check's testbed, the plugin instances it
creates the way the runner does, and what to look for once they are gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vsbench.conformance.bench import KitTestbed, KitUnavailable, mounts_under
from vsbench.conformance.contract import missing_fixture
from vsbench.conformance.leaks import ResourceSnapshot, still_alive
from vsbench.interfaces.plugin import PluginContext, RunParameters
from vsbench.runner import guard
from vsbench.system.resources import ResourceStack


def cause_of(exc: BaseException) -> BaseException:
    """What the plugin itself raised (the guard wraps it in a PluginFault)."""
    return exc.cause if isinstance(exc, guard.PluginFault) else exc


def target_from(request: pytest.FixtureRequest, fixture: str, target_type: type) -> Any:
    """The suite's target, from the fixture a vendor (or the kit's plugin) provides."""
    try:
        value = request.getfixturevalue(fixture)
    except pytest.FixtureLookupError:
        missing_fixture(request, fixture, target_type.__name__)
    if not isinstance(value, target_type):
        pytest.fail(f"{fixture} must return a {target_type.__name__}, got {type(value).__name__}", pytrace=False)
    return value


class KitHarness:
    """The kit's testbed for one check, plugins created on it, and their leftovers."""

    kind = ""
    #: Deadlines the kit calls the plugin under (as generous as a first start needs).
    policy = guard.DeadlinePolicy()

    def __init__(self, target: Any, tmp_path: Path) -> None:
        self.target = target
        self.tmp_path = tmp_path
        try:
            self.kit = KitTestbed.create()
        except KitUnavailable as exc:
            pytest.skip(f"the kit's testbed: {exc}")
        self.before = ResourceSnapshot.take()
        self.links_before = self.kit.dut_links()
        self.stacks: list[ResourceStack] = []
        self.plugins: list[Any] = []  # kept alive: a leak must not be hidden by garbage collection
        self.seen: dict[int, str] = {}

    def create(self, run: RunParameters | None = None) -> tuple[Any, ResourceStack]:
        """A plugin instance as the runner makes it: its settings, its own teardown stack,
        the DUT namespace, a log and a work directory; every call under the guard."""
        n = len(self.stacks)
        stack = ResourceStack()
        self.stacks.append(stack)
        log_dir, work_dir = self.tmp_path / f"{self.kind}{n}" / "logs", self.tmp_path / f"{self.kind}{n}" / "work"
        log_dir.mkdir(parents=True)
        work_dir.mkdir(parents=True)
        context = PluginContext(run_id=self.kit.run_id, settings=dict(self.target.settings or {}),
                                log_dir=log_dir, resources=stack, run=run or self.target.run,
                                dut_netns=self.kit.dut_netns, work_dir=work_dir)
        plugin = guard.construct(self.target.plugin, context, self.policy, self.kind,
                                 f"{self.kind} {self.target.name}")
        self.plugins.append(plugin)
        return plugin, stack

    def observe(self) -> None:
        """Remember the processes started since the check began (not those before, e.g. a
        fake the vendor's fixture started)."""
        for pid, start in ResourceSnapshot.take().descendants.items():
            if self.before.descendants.get(pid) != start:
                self.seen[pid] = start

    def leaks(self, *, close: bool = True) -> list[str]:
        """What is left: after every plugin's teardown ran (``close``), or as it is (after
        ``stop()``, before the run's teardown)."""
        if close:
            for stack in reversed(self.stacks):
                stack.close()
        found = still_alive(self.seen)
        found += ResourceSnapshot.take().new_open_fds(self.before, [self.tmp_path])
        found += [f"process in the testbed's namespaces: {p}" for p in self.kit.processes_in_namespaces()]
        found += [f"interface {name} in the DUT namespace" for name in sorted(self.kit.dut_links() - self.links_before)]
        found += [f"mount {m}" for m in mounts_under([self.tmp_path])]
        if self.target.leak_check is not None:
            found += list(self.target.leak_check())
        return found

    def close(self) -> None:
        for stack in reversed(self.stacks):
            stack.close()
        self.kit.close()
