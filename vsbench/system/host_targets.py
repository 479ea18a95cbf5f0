"""What a run's configuration asks of the host: the PCI NICs it drives and the cores it busy-polls.

The host checks (:mod:`vsbench.system.host_verdicts`) judge the host *for this
configuration* -- a PMD on the wrong NUMA node is only wrong relative to the NIC it
serves -- so they take this plain record, filled by the runner from the resolved config
(:mod:`vsbench.runner.host_targets`), rather than reading the config themselves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ConfiguredNic:
    """A PCI address from the configuration. ``source``: the key it came from (named in a
    fix); ``dpdk``: a userspace driver must own it (OvS-DPDK and DPDK generator ports)."""

    owner: str
    pci: str
    source: str
    dpdk: bool = True


@dataclass(frozen=True)
class ConfiguredCores:
    """CPUs of one owner's busy-polling threads (``ovs_dpdk PMD``, ``testpmd forwarding
    lcores``) and the configuration key that pins them."""

    owner: str
    cpus: tuple[int, ...]
    source: str


@dataclass(frozen=True)
class HostTargets:
    """``remote``: ``(owner, host)`` of plugins whose NICs and cores are another host's
    (checked by ``vsbench doctor --host`` there). ``problems``: configuration values that
    could not be read as NICs or CPUs, one line each. ``link_gbps``: testbed.link_gbps."""

    nics: tuple[ConfiguredNic, ...] = ()
    cores: tuple[ConfiguredCores, ...] = ()
    remote: tuple[tuple[str, str], ...] = ()
    problems: tuple[str, ...] = ()
    link_gbps: float | None = None

    @property
    def busy_cpus(self) -> set[int]:
        return {c for group in self.cores for c in group.cpus}

    def to_json(self) -> dict[str, Any]:
        return {"nics": [asdict(n) for n in self.nics],
                "cores": [asdict(c) | {"cpus": list(c.cpus)} for c in self.cores],
                "remote": [{"owner": o, "host": h} for o, h in self.remote],
                "problems": list(self.problems), "link_gbps": self.link_gbps}

    def merged(self, other: "HostTargets") -> "HostTargets":
        """Both, without repeats (a run's plans mostly share their NICs and cores)."""
        def union(a: tuple, b: tuple) -> tuple:
            return tuple(dict.fromkeys((*a, *b)))
        return HostTargets(union(self.nics, other.nics), union(self.cores, other.cores),
                           union(self.remote, other.remote), union(self.problems, other.problems),
                           self.link_gbps if self.link_gbps is not None else other.link_gbps)

