"""A fake /sys and /proc under tmp_path, shaped like a lab host's, for the host-fact readers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    return path


def make_host(root: Path, *, nodes: Mapping[int, Sequence[int]] = {0: (0, 1, 2, 3)},
              cmdline: str = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet", hypervisor: bool = False,
              governor: str | None = None, no_turbo: int | None = None,
              pages: Mapping[tuple[int, int], int] = {}) -> Path:
    """CPUs by NUMA node, a kernel command line, optional cpufreq and hugepage pools
    (``{(node, size_kb): total}``); hugetlb is always there (the global pool directory)."""
    cpus = sorted(c for group in nodes.values() for c in group)
    sys_cpu = root / "sys" / "devices" / "system" / "cpu"
    write(sys_cpu / "online", f"{cpus[0]}-{cpus[-1]}")
    write(sys_cpu / "isolated", "")
    for node, group in nodes.items():
        write(root / "sys" / "devices" / "system" / "node" / f"node{node}" / "cpulist",
              ",".join(map(str, group)))
        for size_kb in (2048, 1048576):
            pool = root / "sys" / "devices" / "system" / "node" / f"node{node}" / "hugepages" / f"hugepages-{size_kb}kB"
            write(pool / "nr_hugepages", str(pages.get((node, size_kb), 0)))
            write(pool / "free_hugepages", str(pages.get((node, size_kb), 0)))
    (root / "sys" / "kernel" / "mm" / "hugepages" / "hugepages-2048kB").mkdir(parents=True, exist_ok=True)
    for cpu in cpus:
        if governor:
            write(sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_governor", governor)
            write(sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_driver", "intel_pstate")
    if no_turbo is not None:
        write(sys_cpu / "intel_pstate" / "no_turbo", str(no_turbo))
    write(root / "proc" / "cmdline", cmdline)
    flags = "fpu vme de pse" + (" hypervisor" if hypervisor else "")
    write(root / "proc" / "cpuinfo", f"processor\t: 0\nflags\t\t: {flags}\n")
    return root


def add_nic(root: Path, pci: str, *, node: int = 0, driver: str | None = "i40e", iface: str | None = "ens1f0",
            speed_mbps: int = 10000, vendor: str = "0x8086") -> Path:
    """A PCI Ethernet device; a netdev (with its speed) only when ``iface`` is given."""
    device = root / "sys" / "bus" / "pci" / "devices" / pci
    write(device / "numa_node", str(node))
    write(device / "vendor", vendor)
    write(device / "device", "0x1572")
    write(device / "class", "0x020000")
    if driver:
        os.symlink(f"../../../bus/pci/drivers/{driver}", device / "driver")
    if iface:
        (device / "net" / iface).mkdir(parents=True)
        write(root / "sys" / "class" / "net" / iface / "speed", str(speed_mbps))
    return device
