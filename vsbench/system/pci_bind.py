"""Hand a PCI NIC to a DPDK driver for a run, and give it back as it was found.

A lab binds the NICs a DPDK switch or VNF drives to ``vfio-pci`` (with an IOMMU, or in
VFIO's no-IOMMU mode where the kernel has it) or ``uio_pci_generic``, and a careless
binding takes the host's own link away: the ssh session, the route to the generator. So
:func:`bind` refuses, in one line, a device whose network interface is up with an address
or a route, and one VFIO cannot take on this kernel (no IOMMU group and no no-IOMMU mode:
Debian 12's kernel is built without ``CONFIG_VFIO_NOIOMMU``); it binds through
``driver_override`` (the kernel's way to pick one driver for one device) and registers
the undo at once, so the device goes back to the driver it had even if the run fails.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from vsbench.system import commands, host_nic
from vsbench.system.resources import ResourceStack

SYS_PCI = Path("/sys/bus/pci")
PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
#: DPDK's kernel-side drivers and the module that provides each.
DPDK_DRIVERS = {"vfio-pci": "vfio-pci", "uio_pci_generic": "uio_pci_generic"}
_PROBE_WAIT_S = 5.0


class PciBindError(Exception):
    """A device cannot (or must not) be bound; the message is one line naming it."""


@dataclass(frozen=True)
class PciBinding:
    """A device bound for a run: ``driver`` now, ``previous_driver`` to go back to."""

    address: str
    driver: str
    previous_driver: str | None


def _device(address: str) -> Path:
    if not PCI_ADDRESS.match(address):
        raise PciBindError(f"{address!r} is not a PCI address (DDDD:BB:DD.F, e.g. 0000:3b:00.0)")
    path = host_nic.pci_dir(address)
    if not path.exists():
        raise PciBindError(f"no PCI device {address} on this host (lspci -D lists them)")
    return path


def driver_of(address: str) -> str | None:
    """The driver ``address`` is bound to now, None when none is."""
    return host_nic.driver_of(_device(address))


def netdevs_of(address: str) -> list[str]:
    """The network interfaces of ``address`` (none while a DPDK driver has it)."""
    return host_nic.ifaces_of(_device(address))


def in_use(address: str) -> str | None:
    """Why binding ``address`` away from its kernel driver would cut a link in use: an
    interface of it carries a route or is up with an address; None when none does."""
    for iface in netdevs_of(address):
        reason = iface_in_use(iface)
        if reason:
            return reason
    return None


def iface_in_use(iface: str) -> str | None:
    """Why ``iface`` (in the caller's namespace) carries the host's traffic: a route, or
    up with an address; None when it does not. Also what a cabled testbed refuses to lend."""
    routes = json.loads(commands.run(["ip", "-j", "route", "show", "dev", iface], check=False).stdout or "[]")
    routes += json.loads(commands.run(["ip", "-j", "-6", "route", "show", "dev", iface], check=False).stdout or "[]")
    routes = [r for r in routes if not str(r.get("dst", "")).startswith("fe80:")]
    if routes:
        return f"its interface {iface} carries route {routes[0].get('dst', '?')} (the host's own traffic)"
    addrs = json.loads(commands.run(["ip", "-j", "addr", "show", "dev", iface], check=False).stdout or "[]")
    for link in addrs:
        used = [a for a in link.get("addr_info", []) if a.get("scope") != "link"]
        if "UP" in link.get("flags", []) and used:
            return f"its interface {iface} is up with address {used[0].get('local')}"
    return None


def vfio_possible(sys_root: Path = Path("/sys")) -> str | None:
    """Why vfio-pci cannot drive a device here, or None. A check only: VFIO's no-IOMMU mode
    lets any device DMA anywhere in memory, so turning it on is the lab's own decision
    (the reason says how), never a side effect of asking."""
    groups = sys_root / "kernel/iommu_groups"
    if groups.is_dir() and any(groups.iterdir()):
        return None
    noiommu = sys_root / "module/vfio/parameters/enable_unsafe_noiommu_mode"
    if noiommu.exists():
        if noiommu.read_text().strip() in ("Y", "1"):
            return None
        return (f"no IOMMU is enabled and VFIO's no-IOMMU mode is off: a lab that accepts "
                f"unrestricted DMA turns it on (echo 1 > {noiommu}), or use uio_pci_generic")
    return ("no IOMMU is enabled (no /sys/kernel/iommu_groups) and this kernel has no VFIO "
            "no-IOMMU mode (CONFIG_VFIO_NOIOMMU): enable the IOMMU (intel_iommu=on / "
            "amd_iommu=on) or use uio_pci_generic")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as exc:
        raise PciBindError(f"cannot write {path}: {exc.strerror or exc}") from None


def _probe(address: str, expected: str | None) -> str | None:
    """Ask the kernel to probe ``address`` and wait until ``expected`` has it."""
    _write(SYS_PCI / "drivers_probe", address)
    deadline = time.monotonic() + _PROBE_WAIT_S
    while driver_of(address) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return driver_of(address)


def bind(address: str, driver: str, resources: ResourceStack) -> PciBinding:
    """Bind ``address`` to DPDK driver ``driver`` for as long as ``resources`` lives; the
    undo (back to the previous driver) is registered before anything changes."""
    if driver not in DPDK_DRIVERS:
        raise PciBindError(f"cannot bind to {driver!r}: choose one of {', '.join(DPDK_DRIVERS)}")
    _device(address)
    previous = driver_of(address)
    if previous == driver:
        return PciBinding(address, driver, previous)  # a lab bound it already: leave it so
    reason = in_use(address)
    if reason:
        raise PciBindError(f"refusing to bind {address} to {driver}: {reason}")
    try:
        commands.run(["modprobe", DPDK_DRIVERS[driver]])
    except commands.CommandError as exc:
        raise PciBindError(f"cannot load {driver} for {address}: {exc}") from None
    if driver == "vfio-pci":
        why_not = vfio_possible()
        if why_not:
            raise PciBindError(f"cannot bind {address} to vfio-pci: {why_not}")
    binding = PciBinding(address, driver, previous)
    resources.register(f"PCI device {address} back to {previous or 'no driver'}", lambda: restore(binding))
    device = _device(address)
    _write(device / "driver_override", driver)
    if previous is not None:
        _write(device / "driver" / "unbind", address)
    got = _probe(address, driver)
    if got != driver:
        raise PciBindError(f"{driver} did not take {address} (it has {got or 'no driver'}; see dmesg)")
    return binding


def restore(binding: PciBinding) -> None:
    """Give the device back to the driver it had before :func:`bind` (or to none)."""
    device = _device(binding.address)
    if driver_of(binding.address) is not None:
        _write(device / "driver" / "unbind", binding.address)
    _write(device / "driver_override", "\n")
    if binding.previous_driver is not None:
        got = _probe(binding.address, binding.previous_driver)
        if got != binding.previous_driver:
            raise PciBindError(f"{binding.address} did not return to {binding.previous_driver} "
                               f"(it has {got or 'no driver'})")
