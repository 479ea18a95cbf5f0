"""What the kernel says about one PCI NIC a lab configured: NUMA node, driver, firmware, link.

A DPDK port's figures depend on facts no benchmark setting shows: the socket the NIC hangs
off (a PMD on the other socket pays a QPI/UPI crossing per packet), the driver it is bound
to (vfio-pci, uio_pci_generic or a bifurcated kernel driver), its firmware (vendors change
performance between firmware releases) and the speed its link came up at. Each is read
from sysfs under ``root`` (a fake tree in unit tests); only the firmware needs a command
(``ethtool -i``), and only while a kernel driver owns the NIC -- once it is bound to
vfio-pci the kernel no longer knows it, and the fact says so instead of guessing.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from vsbench.system import commands, link_speed
from vsbench.system.sysfs import read_int, read_text

#: ``0000:3b:00.0``: domain, bus, slot, function (the form sysfs and DPDK use).
PCI_ADDRESS = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")

#: Drivers that hand a NIC to a userspace (DPDK) driver.
USERSPACE_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio")
#: Kernel drivers DPDK drives in place (bifurcated: no rebinding, the netdev stays).
BIFURCATED_DRIVERS = ("mlx4_core", "mlx5_core")

#: ``ethtool -i IFACE`` as ``{key: value}`` (``firmware-version``, ``version``, ...).
EthtoolInfo = Callable[[str], dict[str, str]]


@dataclass(frozen=True)
class NicFacts:
    """One configured PCI address as the host sees it. ``present`` False: no such device
    (every other field None). ``numa_node`` None: the firmware does not say (sysfs -1: a
    single-node machine or a VM). ``iface``: its netdev while a kernel driver owns it.
    ``speed_mbps`` None: link down, a virtual NIC, or no netdev. ``firmware`` None with
    ``firmware_note`` saying why."""

    pci: str
    present: bool
    numa_node: int | None = None
    vendor_id: str | None = None
    device_id: str | None = None
    driver: str | None = None
    iface: str | None = None
    speed_mbps: int | None = None
    firmware: str | None = None
    driver_version: str | None = None
    firmware_note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pci_dir(pci: str, root: Path = Path("/")) -> Path:
    return root / "sys" / "bus" / "pci" / "devices" / pci.lower()


def driver_of(device: Path) -> str | None:
    """Name of the driver bound to the device (the ``driver`` symlink's last part)."""
    try:
        return Path(os.readlink(device / "driver")).name
    except OSError:
        return None


def ifaces_of(device: Path) -> list[str]:
    """The device's netdevs: ``net/<iface>`` directly or under a virtio child (virtio-net);
    none while a DPDK driver has it."""
    for pattern in ("net/*", "virtio*/net/*"):
        names = sorted(p.name for p in device.glob(pattern))
        if names:
            return names
    return []


def iface_of(device: Path) -> str | None:
    """The device's first netdev (:func:`ifaces_of`), None when it has none."""
    return next(iter(ifaces_of(device)), None)


def link_speed_mbps(iface: str, root: Path = Path("/")) -> int | None:
    """``/sys/class/net/IFACE/speed``; None when the kernel does not know (-1, or EINVAL on a
    link that is down)."""
    speed = read_int(root / "sys" / "class" / "net" / iface / "speed")
    return speed if speed is not None and speed > 0 else None


def ethtool_info(iface: str, timeout_s: float = 5.0) -> dict[str, str]:
    """``ethtool -i IFACE`` parsed; {} when ethtool is missing or fails (said by the caller)."""
    binary = commands.which("ethtool")
    if binary is None:
        return {}
    try:
        done = subprocess.run([binary, "-i", iface], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    return link_speed.parse_driver_info(done.stdout)


def _firmware(iface: str | None, driver: str | None, ethtool: EthtoolInfo) -> tuple[str | None, str | None, str | None]:
    """``(firmware, driver_version, note)``."""
    if iface is None:
        why = f"bound to {driver}" if driver else "no driver bound"
        return None, None, f"{why}: the kernel has no netdev to ask (read it with ethtool -i before binding)"
    info = ethtool(iface)
    if not info:
        return None, None, f"ethtool -i {iface} gave nothing (ethtool missing? apt-get install ethtool)"
    firmware = info.get("firmware-version") or None
    note = None if firmware and firmware.upper() != "N/A" else f"driver {driver or '?'} reports no firmware version"
    return (firmware if note is None else None), info.get("version") or None, note


def ethernet_devices(root: Path = Path("/")) -> list[str]:
    """PCI addresses of the host's Ethernet controllers (class 0x0200), configured or not."""
    devices = root / "sys" / "bus" / "pci" / "devices"
    if not devices.is_dir():
        return []
    return sorted(d.name for d in devices.iterdir() if (read_text(d / "class") or "").startswith("0x0200"))


def read_nic(pci: str, root: Path = Path("/"), ethtool: EthtoolInfo = ethtool_info) -> NicFacts:
    """Everything above about ``pci``; a device that is not there is ``present=False``."""
    device = pci_dir(pci, root)
    if not PCI_ADDRESS.match(pci) or not device.is_dir():
        return NicFacts(pci=pci, present=False)
    node = read_int(device / "numa_node")
    driver = driver_of(device)
    iface = iface_of(device)
    firmware, version, note = _firmware(iface, driver, ethtool)
    return NicFacts(pci=pci, present=True, numa_node=node if node is not None and node >= 0 else None,
                    vendor_id=read_text(device / "vendor"), device_id=read_text(device / "device"),
                    driver=driver, iface=iface, speed_mbps=link_speed_mbps(iface, root) if iface else None,
                    firmware=firmware, driver_version=version, firmware_note=note)
