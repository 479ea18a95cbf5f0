"""The host's lab settings, read and judged once: what ``vsbench doctor --host`` prints and
what ``sysinfo.json`` records under ``host_settings`` (and report.html shows).

One record serves both so the run's bill of materials and the doctor never disagree: the
facts (:mod:`host_nic`, :mod:`host_cpu_tuning`, :mod:`host_platform`), the targets they
were judged against, and the verdict lines (:mod:`host_verdicts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vsbench.system import host_cpu_tuning, host_nic, host_platform, host_verdicts
from vsbench.system.host_targets import HostTargets

FAIL = host_verdicts.FAIL


@dataclass(frozen=True)
class HostSettings:
    targets: HostTargets
    nics: tuple[host_nic.NicFacts, ...]
    cpus: host_cpu_tuning.CpuTuning
    platform: host_platform.PlatformFacts
    lines: tuple[host_verdicts.SettingLine, ...]
    #: The host's PCI NICs that no configuration key names.
    others: tuple[host_nic.NicFacts, ...] = ()

    @property
    def failed(self) -> bool:
        return any(line.status == FAIL for line in self.lines)

    def to_json(self) -> dict[str, Any]:
        return {"targets": self.targets.to_json(), "nics": [n.to_json() for n in self.nics],
                "other_nics": [n.to_json() for n in self.others],
                "cpus": self.cpus.to_json(), **self.platform.to_json(),
                "checks": [line.to_json() for line in self.lines]}


def collect(targets: HostTargets, root: Path = Path("/"),
            ethtool: host_nic.EthtoolInfo = host_nic.ethtool_info) -> HostSettings:
    """Read every fact under ``root`` and judge it for ``targets``."""
    nics = tuple(host_nic.read_nic(n.pci, root, ethtool) for n in targets.nics)
    named = {n.pci.lower() for n in targets.nics}
    others = tuple(host_nic.read_nic(pci, root, ethtool) for pci in host_nic.ethernet_devices(root)
                   if pci not in named)
    cpus = host_cpu_tuning.read(root)
    platform = host_platform.read(root)
    lines = tuple(host_verdicts.judge(targets, nics, cpus, platform, others))
    return HostSettings(targets, nics, cpus, platform, lines, others)
