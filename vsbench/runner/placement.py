"""The run's CPU plan: where every busy-polling thread runs, and whether they fit.

On a small machine a busy-polling thread sharing a core with another measures the
scheduler, not the DUT. Plugins that busy-poll expose ``busy_poll_cpus() -> {owner: set of
CPUs}`` (the ovs_dpdk PMDs, each VNF's forwarding lcores -- :meth:`Vnf.busy_poll_cpus` --, a
DPDK generator) and a generator may expose ``generator_cpus() -> set of CPUs``; both are
optional duck-typed methods beside the contracts. :func:`cpu_plan` gathers them into one
plan the run prints at the start of each test and records in results.json; the verdict is
:func:`vsbench.system.cpu.check_oversubscription`; :func:`warnings` words it as notes.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from vsbench.system import cpu

log = logging.getLogger(__name__)

OVERSUBSCRIBED_PREFIX = "CPU oversubscribed"


@dataclass(frozen=True)
class PlacedThreads:
    """Busy threads of one owner (``ovs_dpdk pmd``, ``testpmd0 lcores``, ``generator
    trafgen``) and the CPUs they may run on."""

    owner: str
    cpus: tuple[int, ...]
    role: str  # "vswitch" | "vnf" | "generator"


@dataclass
class CpuPlan:
    """Every busy poller and its CPUs; ``oversubscribed`` when they compete for CPUs."""

    online_cpus: tuple[int, ...]
    threads: list[PlacedThreads] = field(default_factory=list)
    warnings: list[cpu.CpuPlacementWarning] = field(default_factory=list)

    @property
    def busy_pollers(self) -> int:
        return len(self.threads)

    @property
    def oversubscribed(self) -> bool:
        return cpu.is_oversubscribed(self.warnings) or self.busy_pollers > len(self.online_cpus)

    def to_dict(self) -> dict[str, Any]:
        return {
            "online_cpus": list(self.online_cpus),
            "threads": [asdict(t) | {"cpus": list(t.cpus)} for t in self.threads],
            "busy_pollers": self.busy_pollers,
            "oversubscribed": self.oversubscribed,
            "warnings": [w.to_dict() for w in self.warnings],
        }

    def text(self) -> str:
        """``CPU plan: cpu0 generator trafgen; cpu1 ovs_dpdk pmd, testpmd0 lcores`` and, when
        there are more busy pollers than CPUs, the one line that says so."""
        by_cpu: dict[int, list[str]] = {c: [] for c in self.online_cpus}
        for t in self.threads:
            for c in t.cpus:
                by_cpu.setdefault(c, []).append(t.owner)
        placed = "; ".join(f"cpu{c} {', '.join(owners) or 'idle'}" for c, owners in sorted(by_cpu.items()))
        line = f"CPU plan: {placed}"
        if self.oversubscribed:
            line += (f" -- {OVERSUBSCRIBED_PREFIX}: {self.busy_pollers} busy pollers on {len(self.online_cpus)} "
                     "CPUs; every figure of this test measures CPU contention, not the DUT's capacity")
        return line


def _collect(plugins: Iterable[tuple[str, Any]]) -> tuple[list[PlacedThreads], set[int]]:
    threads: list[PlacedThreads] = []
    generator_cpus: set[int] = set()
    for role, plugin in plugins:
        if plugin is None:
            continue
        try:
            if hasattr(plugin, "busy_poll_cpus"):
                for owner, cpus in (plugin.busy_poll_cpus() or {}).items():
                    if cpus:
                        threads.append(PlacedThreads(str(owner), tuple(sorted(cpus)), role))
            if hasattr(plugin, "generator_cpus"):
                gen = set(plugin.generator_cpus() or ())
                if gen:
                    generator_cpus |= gen
                    threads.append(PlacedThreads(f"generator {getattr(plugin, 'name', '') or 'traffic'}",
                                                 tuple(sorted(gen)), "generator"))
        except Exception as exc:  # noqa: BLE001 - a placement probe must not fail the run
            log.warning("could not read CPU placement of %s: %s", getattr(plugin, "name", plugin), exc)
    return threads, generator_cpus


def cpu_plan(vswitch: Any, generator: Any, vnfs: Iterable[Any] = (), online: Iterable[int] | None = None) -> CpuPlan:
    """The plan of a test: the switch's, each VNF's and the generator's busy threads."""
    online_cpus = tuple(sorted(online if online is not None else cpu.online_cpus()))
    threads, generator_cpus = _collect([("vswitch", vswitch), *(("vnf", v) for v in vnfs), ("generator", generator)])
    busy = {}
    for t in threads:
        if t.role != "generator":
            busy.setdefault(t.owner, set()).update(t.cpus)
    found = cpu.check_oversubscription(busy, generator_cpus, online_cpus) if busy else []
    return CpuPlan(online_cpus, threads, sorted(found, key=lambda w: not w.oversubscribed))


def warning_lines(plan: CpuPlan) -> list[str]:
    """One line per placement warning of ``plan`` (oversubscribed ones first)."""
    return [
        (f"{OVERSUBSCRIBED_PREFIX} ({w.code}): {w.message}; figures measure CPU contention, not the DUT"
         if w.oversubscribed else f"CPU placement ({w.code}): {w.message}")
        for w in plan.warnings
    ]
