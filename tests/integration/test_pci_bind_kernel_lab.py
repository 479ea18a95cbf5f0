"""PCI NICs handed to DPDK's kernel drivers and back, on emulated devices: run inside the
kernel lab, whose guest gets pairs of e1000e NICs (``tools/kernel-lab/run --nic-pairs 1``,
as ``tools/kernel-lab/run-tests`` boots it).

What a lab does by hand with dpdk-devbind, done by :mod:`vsbench.system.pci_bind`: bind to
uio_pci_generic, see DPDK's e1000 PMD probe the device, get the e1000e driver and its
interface back when the run's resources close; refuse, leaving the device alone, a device
whose interface carries a route, and vfio-pci where this kernel can give VFIO no IOMMU
(Debian 12's kernel has no VFIO no-IOMMU mode, and the lab's guest no IOMMU).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from vsbench.system import commands, pci_bind
from vsbench.system.resources import ResourceStack

pytestmark = [pytest.mark.integration, pytest.mark.kernel_lab]


def _e1000e_devices() -> list[str]:
    drivers = Path("/sys/bus/pci/drivers/e1000e")
    return sorted(p.name for p in drivers.iterdir() if pci_bind.PCI_ADDRESS.match(p.name)) if drivers.is_dir() else []


if os.geteuid() != 0:
    pytestmark.append(pytest.mark.skip(reason="needs root"))
elif len(_e1000e_devices()) < 2:
    pytestmark.append(pytest.mark.skip(reason="no pair of e1000e NICs: run inside tools/kernel-lab/run --nic-pairs 1"))


@pytest.fixture
def device():
    """The second NIC of the first pair, on e1000e and down, as the lab boots it."""
    address = _e1000e_devices()[1]
    yield address
    assert pci_bind.driver_of(address) == "e1000e"  # whatever the test did, it is back


def _dpdk_probe(address: str, tmp_path: Path) -> str:
    """What DPDK's EAL says probing ``address``: testpmd on 64 hugepages of 2 MB (a device
    on uio_pci_generic needs physical addresses, so --no-huge would skip it), exiting at once."""
    nr = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
    before = nr.read_text()
    huge = tmp_path / "huge"
    huge.mkdir()
    nr.write_text(str(int(before) + 64))
    commands.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "none", str(huge)])
    try:
        proc = subprocess.run(["dpdk-testpmd", "-l", "0", "-m", "96", "--huge-dir", str(huge), "--no-telemetry",
                               "--file-prefix", "vsbpcilab", "-a", address, "--", "--total-num-mbufs=2048"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    finally:
        commands.run(["umount", str(huge)], check=False)
        nr.write_text(before)
    return proc.stdout + proc.stderr


def test_bind_to_uio_pci_generic_is_undone_when_the_run_closes(device, tmp_path):
    netdev = pci_bind.netdevs_of(device)
    assert netdev, "an e1000e device has its interface"
    with ResourceStack() as resources:
        binding = pci_bind.bind(device, "uio_pci_generic", resources)
        assert binding.previous_driver == "e1000e"
        assert pci_bind.driver_of(device) == "uio_pci_generic" and pci_bind.netdevs_of(device) == []
        if commands.which("dpdk-testpmd"):
            out = _dpdk_probe(device, tmp_path)
            assert f"Probe PCI driver: net_e1000_em (8086:10d3) device: {device}" in out, out[-2000:]
    assert pci_bind.driver_of(device) == "e1000e" and pci_bind.netdevs_of(device)


def test_vfio_without_an_iommu_or_noiommu_mode_is_refused_in_one_line(device):
    if any(Path("/sys/kernel/iommu_groups").glob("*")) or Path(
            "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode").exists():
        pytest.skip("this kernel can give VFIO an IOMMU or no-IOMMU mode")
    with ResourceStack() as resources, pytest.raises(pci_bind.PciBindError) as err:
        pci_bind.bind(device, "vfio-pci", resources)
    assert "\n" not in str(err.value) and "uio_pci_generic" in str(err.value) and device in str(err.value)


def test_a_device_whose_interface_carries_a_route_is_left_alone(device):
    (iface,) = pci_bind.netdevs_of(device)
    commands.run(["ip", "addr", "add", "10.99.0.1/24", "dev", iface])
    commands.run(["ip", "link", "set", iface, "up"])
    try:
        with ResourceStack() as resources, pytest.raises(pci_bind.PciBindError) as err:
            pci_bind.bind(device, "uio_pci_generic", resources)
        assert "refusing" in str(err.value) and iface in str(err.value) and "\n" not in str(err.value)
        assert pci_bind.netdevs_of(device) == [iface]
    finally:
        commands.run(["ip", "addr", "flush", "dev", iface], check=False)
        commands.run(["ip", "link", "set", iface, "down"], check=False)
