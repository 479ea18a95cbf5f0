"""VNFs in VMs (vsbench/system/vm), for plugins: a plugin with a ``vm`` mode embeds
:data:`VM_SETTINGS_SCHEMA` as its ``vm`` setting, builds its guest image with
:func:`ensure_image` (its program and the DPDK libraries it needs), boots a
:class:`VirtualMachine` on the switch's vhost-user sockets and drives its program over
``vm.console`` (a pexpect session on the guest's serial port). See docs/vnfs.rst.
"""

from vsbench.system.vm.console import ConsoleError, SerialConsole
from vsbench.system.vm.domain import nic_pci_address
from vsbench.system.vm.image import PROMPT, GuestImage, GuestImageError, ensure_image
from vsbench.system.vm.runner import (
    VM_SETTINGS_SCHEMA,
    VirtualMachine,
    VmError,
    cleanup_dead_run,
    missing_prerequisites,
    vm_defaults,
)

#: The values of a VNF plugin's ``mode`` setting.
VNF_MODES = ("process", "vm")

__all__ = [
    "ConsoleError", "GuestImage", "GuestImageError", "PROMPT", "SerialConsole", "VM_SETTINGS_SCHEMA",
    "VNF_MODES", "VirtualMachine", "VmError", "cleanup_dead_run", "ensure_image", "missing_prerequisites",
    "nic_pci_address", "vm_defaults",
]
