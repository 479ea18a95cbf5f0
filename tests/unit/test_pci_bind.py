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
