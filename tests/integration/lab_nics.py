"""The kernel lab's emulated PCI NICs (``tools/kernel-lab/run --nic-pairs N``), found by
the MACs the lab gives them: pair k's two ends are 52:54:00:00:0k:01 and :02, cabled to
each other through a QEMU hub. A test takes end 1 of each pair as a generator port and
end 2 as the device under test's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SYS_NET = Path("/sys/class/net")
#: What each emulated model's kernel driver, DPDK PMD and ethtool speed are.
MODELS = {"e1000e": ("e1000e", "net_e1000_em", 1e9), "virtio-pci": ("virtio-pci", "net_virtio", 10e9)}


@dataclass(frozen=True)
class LabNic:
    iface: str
    pci: str
    driver: str
    pair: int
    end: int

    @property
    def pmd(self) -> str:
        return MODELS[self.driver][1]

    @property
    def speed_bps(self) -> float:
        return MODELS[self.driver][2]


def _pci_of(iface: str) -> tuple[str, str] | None:
    device = SYS_NET / iface / "device"
    if not device.exists():
        return None
    path = device.resolve()
    if path.name.startswith("virtio"):  # virtio-net's netdev hangs off its virtio device
        path = path.parent
    driver = path / "driver"
    return path.name, driver.resolve().name if driver.exists() else ""


def lab_nics() -> list[LabNic]:
    """Every lab NIC still on its kernel driver, by pair and end."""
    nics = []
    for net in sorted(SYS_NET.iterdir()):
        mac = (net / "address").read_text().strip() if (net / "address").exists() else ""
        if not mac.startswith("52:54:00:00:"):
            continue
        found = _pci_of(net.name)
        if found and found[1] in MODELS:
            pci, driver = found
            nics.append(LabNic(net.name, pci, driver, int(mac.split(":")[4], 16), int(mac.split(":")[5], 16)))
    return sorted(nics, key=lambda n: (n.pair, n.end))


def lab_pairs() -> list[tuple[LabNic, LabNic]]:
    """(generator end, DUT end) of each complete pair."""
    by_pair: dict[int, dict[int, LabNic]] = {}
    for nic in lab_nics():
        by_pair.setdefault(nic.pair, {})[nic.end] = nic
    return [(ends[1], ends[2]) for _, ends in sorted(by_pair.items()) if 1 in ends and 2 in ends]


def lab_skips(pairs: int = 1) -> list:
    """The skip a lab-NIC test module adds to its marks (with the way to run it) unless
    root and ``pairs`` complete pairs are here. The module names ``pytest.mark.kernel_lab``
    itself: tools/kernel-lab/run-tests finds the modules to run by that text."""
    import os

    import pytest

    if os.geteuid() != 0:
        return [pytest.mark.skip(reason="needs root")]
    if len(lab_pairs()) < pairs:
        return [pytest.mark.skip(reason=f"needs {pairs} lab NIC pair(s): run inside tools/kernel-lab/run "
                                        f"--nic-pairs {pairs} --nic-model virtio-net-pci")]
    return []
