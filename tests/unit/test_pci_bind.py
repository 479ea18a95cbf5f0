"""What vsbench.system.pci_bind refuses before touching anything (the binding itself is
tested on emulated NICs in the kernel lab: tests/integration/test_pci_bind_kernel_lab.py)."""

from __future__ import annotations

import pytest

from vsbench.system import pci_bind
from vsbench.system.resources import ResourceStack


@pytest.mark.parametrize("address, message", [
    ("bogus", "is not a PCI address"),
    ("0000:ff:1f.7", "no PCI device 0000:ff:1f.7"),
])
def test_a_wrong_address_is_one_line(address, message):
    with ResourceStack() as resources, pytest.raises(pci_bind.PciBindError, match=message) as err:
        pci_bind.bind(address, "uio_pci_generic", resources)
    assert "\n" not in str(err.value)


def test_only_dpdk_drivers_are_bound_to():
    with ResourceStack() as resources, pytest.raises(pci_bind.PciBindError, match="choose one of vfio-pci"):
        pci_bind.bind("0000:00:00.0", "e1000e", resources)


def _sysfs(tmp_path, noiommu=None, groups=0):
    (tmp_path / "kernel/iommu_groups").mkdir(parents=True)
    for g in range(groups):
        (tmp_path / f"kernel/iommu_groups/{g}").mkdir()
    if noiommu is not None:
        knob = tmp_path / "module/vfio/parameters/enable_unsafe_noiommu_mode"
        knob.parent.mkdir(parents=True)
        knob.write_text(noiommu + "\n")
    return tmp_path


def test_vfio_is_possible_with_iommu_groups(tmp_path):
    assert pci_bind.vfio_possible(_sysfs(tmp_path, groups=2)) is None


def test_vfio_noiommu_mode_off_is_a_reason_and_is_left_off(tmp_path):
    root = _sysfs(tmp_path, noiommu="N")
    why = pci_bind.vfio_possible(root)
    assert why and "no-IOMMU mode is off" in why and "\n" not in why
    # asking must not turn on unrestricted DMA: that is the lab's decision
    assert (root / "module/vfio/parameters/enable_unsafe_noiommu_mode").read_text().strip() == "N"


def test_vfio_noiommu_mode_on_is_enough(tmp_path):
    assert pci_bind.vfio_possible(_sysfs(tmp_path, noiommu="Y")) is None


def test_vfio_without_iommu_or_noiommu_support_names_the_kernel_option(tmp_path):
    why = pci_bind.vfio_possible(_sysfs(tmp_path))
    assert "CONFIG_VFIO_NOIOMMU" in why and "uio_pci_generic" in why
