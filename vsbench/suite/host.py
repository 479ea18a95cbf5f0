"""What this host can measure: its facts (read once from /proc and /sys) and, for a suite
run's ``requires``, the reason the host cannot do it (:func:`unmet`, pure over the facts).

A row is *not runnable* here only for a reason of the host -- fewer CPUs than the report
used, no hyper-threading, no KVM, no SR-IOV, no SmartNIC, a kernel without a module, one
socket, one host where the report compares two -- and the reason names the fact and what
would measure the row.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

SYS = Path("/sys")
PROC = Path("/proc")


@dataclass(frozen=True)
class HostFacts:
    cpus: int
    threads_per_core: int
    sockets: int
    kvm: bool
    kernel: str
    #: Modules the running kernel has (loaded, built in, or installed for it).
    kernel_modules: frozenset[str] = field(default_factory=frozenset)
    sriov: bool = False
    pci_drivers: frozenset[str] = field(default_factory=frozenset)
    pci_vendors: frozenset[str] = field(default_factory=frozenset)
    cpu_flags: frozenset[str] = field(default_factory=frozenset)
    cpufreq_driver: str | None = None
    sst_bf: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "threads_per_core": self.threads_per_core, "sockets": self.sockets,
                "kvm": self.kvm, "kernel": self.kernel, "sriov": self.sriov,
                "pci_drivers": sorted(self.pci_drivers), "cpufreq_driver": self.cpufreq_driver,
                "sst_bf": self.sst_bf, "avx512f": "avx512f" in self.cpu_flags}


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _threads_per_core(sys_root: Path) -> int:
    widest = 1
    for siblings in (sys_root / "devices/system/cpu").glob("cpu[0-9]*/topology/thread_siblings_list"):
        text = _read(siblings)
        count = 0
        for part in text.split(","):
            if "-" in part:
                lo, hi = part.split("-")
                count += int(hi) - int(lo) + 1
            elif part:
                count += 1
        widest = max(widest, count)
    return widest


def _sockets(sys_root: Path) -> int:
    packages = {_read(p) for p in (sys_root / "devices/system/cpu").glob("cpu[0-9]*/topology/physical_package_id")}
    return max(1, len(packages - {""}))


def _kvm_usable() -> bool:
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError:
        return False
    os.close(fd)
    return True


def _kernel_modules(release: str, sys_root: Path) -> frozenset[str]:
    names = {p.name for p in (sys_root / "module").iterdir()} if (sys_root / "module").is_dir() else set()
    base = Path("/lib/modules") / release
    for listing in ("modules.dep", "modules.builtin"):
        for line in _read(base / listing).splitlines():
            path = line.split(":", 1)[0]
            name = Path(path).name.split(".ko", 1)[0]
            if name:
                names.add(name.replace("-", "_"))
    return frozenset(names)


def _pci(sys_root: Path) -> tuple[bool, frozenset[str], frozenset[str]]:
    sriov, drivers, vendors = False, set(), set()
    for device in (sys_root / "bus/pci/devices").glob("*"):
        vendors.add(_read(device / "vendor"))
        driver = device / "driver"
        if driver.exists():
            drivers.add(driver.resolve().name)
        total = _read(device / "sriov_totalvfs")
        if total.isdigit() and int(total) > 0:
            sriov = True
    return sriov, frozenset(drivers), frozenset(vendors - {""})


def _cpu_flags(proc_root: Path) -> frozenset[str]:
    for line in _read(proc_root / "cpuinfo").splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def _sst_bf(sys_root: Path) -> tuple[str | None, bool]:
    """Intel SST-BF shows as intel_pstate with per-core base frequencies that differ."""
    cpu = sys_root / "devices/system/cpu"
    driver = _read(cpu / "cpu0/cpufreq/scaling_driver") or None
    bases = {_read(p) for p in cpu.glob("cpu[0-9]*/cpufreq/base_frequency")} - {""}
    return driver, driver == "intel_pstate" and len(bases) > 1


def collect(sys_root: Path = SYS, proc_root: Path = PROC) -> HostFacts:
    release = platform.release()
    sriov, drivers, vendors = _pci(sys_root)
    driver, sst_bf = _sst_bf(sys_root)
    return HostFacts(cpus=len(os.sched_getaffinity(0)), threads_per_core=_threads_per_core(sys_root),
                     sockets=_sockets(sys_root), kvm=_kvm_usable(), kernel=release,
                     kernel_modules=_kernel_modules(release, sys_root), sriov=sriov, pci_drivers=drivers,
                     pci_vendors=vendors, cpu_flags=_cpu_flags(proc_root), cpufreq_driver=driver, sst_bf=sst_bf)


def unmet(requires: Mapping[str, Any], host: HostFacts) -> str | None:
    """Why ``host`` cannot run what ``requires`` describes (one line), None when it can."""
    reasons = []
    cpus = requires.get("cpus")
    if cpus and host.cpus < cpus:
        reasons.append(f"this host has {host.cpus} CPUs, the row needs {cpus}")
    if requires.get("hyperthreading") and host.threads_per_core < 2:
        reasons.append("this host has no hyper-threading (one thread per core)")
    sockets = requires.get("sockets")
    if sockets and host.sockets < sockets:
        reasons.append(f"this host has {host.sockets} CPU socket(s), the row needs {sockets}")
    if requires.get("kvm") and not host.kvm:
        reasons.append("no usable KVM here (/dev/kvm): a VM would run under TCG emulation")
    missing = [m for m in requires.get("kernel_modules") or () if m not in host.kernel_modules]
    if missing:
        reasons.append(f"the running kernel ({host.kernel}) has no {', '.join(missing)} module "
                       "(tools/kernel-lab runs such a kernel under QEMU)")
    if requires.get("sriov") and not host.sriov:
        reasons.append("no NIC with SR-IOV virtual functions")
    drivers = requires.get("pci_drivers") or ()
    if drivers and not host.pci_drivers.intersection(drivers):
        reasons.append(f"no NIC bound to {' or '.join(drivers)}")
    vendors = requires.get("pci_vendors") or ()
    if vendors and not host.pci_vendors.intersection(vendors):
        reasons.append(f"no PCI device of vendor {' or '.join(vendors)} (a SmartNIC)")
    flags = [f for f in requires.get("cpu_flags") or () if f not in host.cpu_flags]
    if flags:
        reasons.append(f"the CPU lacks {', '.join(flags)}")
    if requires.get("sst_bf") and not host.sst_bf:
        reasons.append(f"no Intel SST-BF (cpufreq driver {host.cpufreq_driver or 'none'}, "
                       "no per-core base frequencies)")
    absent = [f for f in requires.get("files") or () if not Path(f).exists()]
    if absent:
        reasons.append(f"no {', '.join(absent)} on this host")
    hosts = requires.get("hosts")
    if hosts and hosts > 1:
        reasons.append(f"the report compares {hosts} hosts: run this suite on each and compare the runs "
                       "(vsbench compare RUN_A RUN_B)")
    if not reasons:
        return None
    text = "; ".join(reasons)
    if requires.get("reason"):
        text += f" ({requires['reason']})"
    return text
