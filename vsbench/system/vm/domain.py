"""The libvirt domain XML of a VNF VM (pure: no libvirt, no I/O).

One guest: Debian's kernel booted directly (no disk), its console on a serial port bound
to a UNIX socket the runner connects to, and one virtio NIC per vhost-user socket of the
switch (libvirt's ``<interface type='vhostuser'>``, QEMU as the client of the switch's
server socket). vhost-user needs the guest's RAM shared with the switch: it is backed by
hugepages (``memory_backing: hugepages``) or by a memfd (``memfd``), both ``access
mode='shared'``. Under TCG (``domain type='qemu'``, this host has no usable KVM) each vCPU
is a host thread, pinned to a host CPU when ``vcpu_cpus`` says so.

NICs sit at fixed PCI addresses (bus 0, slot :data:`FIRST_NIC_SLOT` + i), so the VNF in the
guest names them with ``-a 0000:00:1X.0`` whatever else the machine has.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

FIRST_NIC_SLOT = 0x10


@dataclass(frozen=True)
class DomainSpec:
    """Everything the domain XML says."""

    name: str
    kernel: Path
    initramfs: Path
    cmdline: str
    console_socket: Path
    vhost_sockets: tuple[Path, ...]
    macs: tuple[str, ...]
    memory_mib: int = 1024
    vcpus: int = 2
    #: host CPUs each vCPU may run on (index = vCPU); empty: not pinned
    vcpu_cpus: tuple[frozenset[int], ...] = ()
    memory_backing: str = "memfd"  # memfd | hugepages
    hugepage_size_kb: int = 2048
    emulator: str = "/usr/bin/qemu-system-x86_64"
    machine: str = "pc"
    queues: int = 1
    #: offer the virtio 1.1 packed virtqueue on every NIC (QEMU ``packed=on``; libvirt
    #: ``<driver packed="on">``); the guest driver and the switch's vhost side negotiate it
    packed_ring: bool = False
    extra_cmdline: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if len(self.macs) != len(self.vhost_sockets):
            raise ValueError("one MAC per vhost-user socket")
        if self.memory_backing not in ("memfd", "hugepages"):
            raise ValueError(f"memory_backing must be memfd or hugepages, not {self.memory_backing!r}")
        if self.vcpu_cpus and len(self.vcpu_cpus) != self.vcpus:
            raise ValueError("vcpu_cpus needs one CPU set per vCPU")


def nic_pci_address(index: int) -> str:
    """The guest PCI address of NIC ``index`` (``0000:00:10.0`` for the first)."""
    return f"0000:00:{FIRST_NIC_SLOT + index:02x}.0"


def guest_mac(run_id: str, vm_index: int, nic: int) -> str:
    """A locally administered MAC naming the run: ``52:54:<run id>:<vm><nic>``
    would overflow, so ``52:<run id in 3 bytes>:<vm>:<nic>``."""
    rid = bytes.fromhex(run_id)
    return ":".join(f"{b:02x}" for b in (0x52, *rid, vm_index & 0xFF, nic & 0xFF))


def cpuset_text(cpus: frozenset[int] | set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def domain_xml(spec: DomainSpec) -> str:
    """The ``<domain>`` document for :class:`DomainSpec`."""
    dom = ET.Element("domain", type="qemu")
    ET.SubElement(dom, "name").text = spec.name
    ET.SubElement(dom, "memory", unit="MiB").text = str(spec.memory_mib)
    ET.SubElement(dom, "currentMemory", unit="MiB").text = str(spec.memory_mib)
    backing = ET.SubElement(dom, "memoryBacking")
    if spec.memory_backing == "hugepages":
        pages = ET.SubElement(backing, "hugepages")
        ET.SubElement(pages, "page", size=str(spec.hugepage_size_kb), unit="KiB")
    else:
        ET.SubElement(backing, "source", type="memfd")
    ET.SubElement(backing, "access", mode="shared")
    ET.SubElement(dom, "vcpu", placement="static").text = str(spec.vcpus)
    if spec.vcpu_cpus:
        tune = ET.SubElement(dom, "cputune")
        for vcpu, cpus in enumerate(spec.vcpu_cpus):
            ET.SubElement(tune, "vcpupin", vcpu=str(vcpu), cpuset=cpuset_text(cpus))
    os_el = ET.SubElement(dom, "os")
    ET.SubElement(os_el, "type", arch="x86_64", machine=spec.machine).text = "hvm"
    ET.SubElement(os_el, "kernel").text = str(spec.kernel)
    ET.SubElement(os_el, "initrd").text = str(spec.initramfs)
    ET.SubElement(os_el, "cmdline").text = " ".join([spec.cmdline, *spec.extra_cmdline]).strip()
    features = ET.SubElement(dom, "features")
    ET.SubElement(features, "acpi")
    cpu = ET.SubElement(dom, "cpu", mode="maximum", check="none")
    # one NUMA cell holding all memory, shared: what vhost-user needs from the guest RAM
    numa = ET.SubElement(cpu, "numa")
    ET.SubElement(numa, "cell", id="0", cpus=f"0-{spec.vcpus - 1}", memory=str(spec.memory_mib),
                  unit="MiB", memAccess="shared")
    ET.SubElement(dom, "clock", offset="utc")
    ET.SubElement(dom, "on_poweroff").text = "destroy"
    ET.SubElement(dom, "on_reboot").text = "destroy"
    ET.SubElement(dom, "on_crash").text = "destroy"
    devices = ET.SubElement(dom, "devices")
    ET.SubElement(devices, "emulator").text = spec.emulator
    for index, (socket, mac) in enumerate(zip(spec.vhost_sockets, spec.macs)):
        nic = ET.SubElement(devices, "interface", type="vhostuser")
        ET.SubElement(nic, "mac", address=mac)
        ET.SubElement(nic, "source", type="unix", path=str(socket), mode="client")
        ET.SubElement(nic, "model", type="virtio")
        driver = {"queues": str(spec.queues), "rx_queue_size": "256", "tx_queue_size": "256"}
        if spec.packed_ring:
            driver["packed"] = "on"
        ET.SubElement(nic, "driver", driver)
        ET.SubElement(nic, "address", type="pci", domain="0x0000", bus="0x00",
                      slot=f"0x{FIRST_NIC_SLOT + index:02x}", function="0x0")
    serial = ET.SubElement(devices, "serial", type="unix")
    ET.SubElement(serial, "source", mode="bind", path=str(spec.console_socket))
    ET.SubElement(serial, "target", port="0")
    ET.SubElement(devices, "memballoon", model="none")
    ET.indent(dom)
    return ET.tostring(dom, encoding="unicode")


def vcpu_placement(vcpus: int, host_cpus: Sequence[int] | None) -> tuple[frozenset[int], ...]:
    """vCPU i -> host CPU ``host_cpus[i]`` (cycled when fewer), or no pinning when ``host_cpus``
    is empty/None."""
    if not host_cpus:
        return ()
    return tuple(frozenset({host_cpus[i % len(host_cpus)]}) for i in range(vcpus))
