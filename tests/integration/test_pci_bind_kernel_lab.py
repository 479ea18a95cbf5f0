"""PCI NICs handed to DPDK's kernel drivers and back, on emulated devices: run inside the
kernel lab, whose guest gets pairs of emulated NICs (``tools/kernel-lab/run --nic-pairs 2
--nic-model virtio-net-pci`` as ``tools/kernel-lab/run-tests`` boots it; e1000e too).

What a lab does by hand with dpdk-devbind, done by :mod:`vsbench.system.pci_bind`: bind to
uio_pci_generic, see DPDK's PMD (net_virtio, net_e1000_em) probe the device, get the kernel
driver and its interface back when the run's resources close; refuse, leaving the device alone, a device
whose interface carries a route, and vfio-pci where this kernel can give VFIO no IOMMU
(Debian 12's kernel has no VFIO no-IOMMU mode, and the lab's guest no IOMMU).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vsbench.system import commands, pci_bind
from vsbench.system.resources import ResourceStack

from lab_nics import lab_pairs, lab_skips

pytestmark = [pytest.mark.integration, pytest.mark.kernel_lab, *lab_skips(pairs=1)]


@pytest.fixture
def nic():
    """The DUT end of the first pair, on its kernel driver and down, as the lab boots it."""
    nic = lab_pairs()[0][1]
    yield nic
    assert pci_bind.driver_of(nic.pci) == nic.driver  # whatever the test did, it is back


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


def test_bind_to_uio_pci_generic_is_undone_when_the_run_closes(nic, tmp_path):
    assert pci_bind.netdevs_of(nic.pci) == [nic.iface]
    with ResourceStack() as resources:
        binding = pci_bind.bind(nic.pci, "uio_pci_generic", resources)
        assert binding.previous_driver == nic.driver
        assert pci_bind.driver_of(nic.pci) == "uio_pci_generic" and pci_bind.netdevs_of(nic.pci) == []
        if commands.which("dpdk-testpmd"):
            out = _dpdk_probe(nic.pci, tmp_path)
            assert f"Probe PCI driver: {nic.pmd}" in out and nic.pci in out, out[-2000:]
    assert pci_bind.driver_of(nic.pci) == nic.driver and pci_bind.netdevs_of(nic.pci) == [nic.iface]


def test_vfio_without_an_iommu_or_noiommu_mode_is_refused_in_one_line(nic):
    if any(Path("/sys/kernel/iommu_groups").glob("*")) or Path(
            "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode").exists():
        pytest.skip("this kernel can give VFIO an IOMMU or no-IOMMU mode")
    with ResourceStack() as resources, pytest.raises(pci_bind.PciBindError) as err:
        pci_bind.bind(nic.pci, "vfio-pci", resources)
    assert "\n" not in str(err.value) and "uio_pci_generic" in str(err.value) and nic.pci in str(err.value)


def test_a_device_whose_interface_carries_a_route_is_left_alone(nic):
    iface = nic.iface
    commands.run(["ip", "addr", "add", "10.99.0.1/24", "dev", iface])
    commands.run(["ip", "link", "set", iface, "up"])
    try:
        with ResourceStack() as resources, pytest.raises(pci_bind.PciBindError) as err:
            pci_bind.bind(nic.pci, "uio_pci_generic", resources)
        assert "refusing" in str(err.value) and iface in str(err.value) and "\n" not in str(err.value)
        assert pci_bind.netdevs_of(nic.pci) == [iface]
    finally:
        commands.run(["ip", "addr", "flush", "dev", iface], check=False)
        commands.run(["ip", "link", "set", iface, "down"], check=False)
