"""What the host must offer before a run starts, each checked for real and in well under a second.

Used by ``vsbench doctor`` (all of it) and by every run's preflight (the parts the selected
plugins need; see :mod:`vsbench.runner.preflight`). Each check returns :class:`Finding`
lines: what is missing and the one command that fixes it. Nothing here is inferred from
a version number or a file name when it can be tried: the network namespace and veth
checks create a namespace with a veth pair in it and delete it again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from vsbench.system import commands, hugepages, naming, runstate

INSTALL = "apt-get install --no-install-recommends"
#: CPUs the embedded testbed needs: one for the switch's datapath, one for the generator.
MIN_CPUS = 2


@dataclass(frozen=True)
class Finding:
    """One problem: ``what`` is missing and ``remedy`` is the command that fixes it.
    ``blocking`` False: a run works but its figures are weaker (the line says how)."""

    what: str
    remedy: str
    blocking: bool = True

    def __str__(self) -> str:
        return f"{self.what}: {self.remedy}"


#: Link types the embedded testbed and the kernel switches create, with their kernel option.
LINK_KERNEL_OPTIONS = {"veth": "CONFIG_VETH", "bridge": "CONFIG_BRIDGE",
                       "bridge vlan_filtering 1": "CONFIG_BRIDGE_VLAN_FILTERING"}


def check_testbed_kernel(timeout_s: float = 10.0) -> list[Finding]:
    """Network namespaces and veth pairs, tried (see :func:`check_link_types`)."""
    return check_link_types(("veth",), timeout_s)


def check_link_types(kinds: Sequence[str], timeout_s: float = 10.0,
                     options: Sequence[str] = ()) -> list[Finding]:
    """Network namespaces and each link type of ``kinds`` (``veth``, ``bridge``), tried:
    ``ip netns add``, one link of each type inside it (with ``options`` after the type,
    e.g. ``("vlan_filtering", "1")`` for a feature of the type), ``ip netns del``. The namespace name
    carries a fresh run id (``vsb-<id>-chk``) and the run is claimed while it exists, so
    ``vsbench cleanup`` neither touches it meanwhile nor misses it if this process is killed."""
    ip = commands.which("ip")
    if ip is None:
        return [Finding("the ip command (network namespaces, veth)", f"{INSTALL} iproute2")]
    run_id = naming.new_run_id()
    ns = naming.netns_name(run_id, "chk")

    def ip_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ip, *args], capture_output=True, text=True, timeout=timeout_s)

    def last_line(done: subprocess.CompletedProcess[str]) -> str:
        return (done.stderr.strip().splitlines() or ["no message"])[-1]

    with runstate.claim(run_id):
        made = ip_run("netns", "add", ns)
        if made.returncode != 0:
            return [Finding(f"network namespaces ({last_line(made)})",
                            "run as root on a kernel with CONFIG_NET_NS (and /run writable)")]
        found = []
        try:
            for index, kind in enumerate(kinds):
                name = naming.iface_name(run_id, "ck", 2 * index)
                extra = ["peer", "name", naming.iface_name(run_id, "ck", 2 * index + 1)] if kind == "veth" else []
                added = ip_run("-n", ns, "link", "add", name, "type", kind, *extra, *options)
                if added.returncode != 0:
                    option = LINK_KERNEL_OPTIONS.get(" ".join((kind, *options)),
                                                     LINK_KERNEL_OPTIONS.get(kind, "its kernel option"))
                    found.append(Finding(f"{kind} interfaces ({last_line(added)})",
                                         f"modprobe {kind}, or boot a kernel with {option} "
                                         "(e.g. Debian's linux-image-amd64)"))
        finally:
            ip_run("netns", "del", ns)  # deletes the links with it
        return found


def check_cpus(online: Iterable[int] | None = None, minimum: int = MIN_CPUS) -> list[Finding]:
    """Fewer than ``minimum`` usable CPUs: the switch and the generator would share one and
    the figure would be a measure of that sharing (not blocking: a run still works)."""
    cpus = sorted(online if online is not None else os.sched_getaffinity(0))
    if len(cpus) >= minimum:
        return []
    return [Finding(f"only {len(cpus)} CPU(s) usable ({cpus}); the embedded testbed wants {minimum}: "
                    "switch and generator share a CPU", "run on a machine (or VM) with 2 or more CPUs",
                    blocking=False)]


def read_package_list(path: Path) -> list[str]:
    """The packages of a ``tools/packages/*.txt`` list ('#' comments, blank lines)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def missing_packages(packages: Sequence[str]) -> list[str]:
    """Those of ``packages`` dpkg does not report as installed (empty without dpkg)."""
    dpkg_query = shutil.which("dpkg-query")
    if dpkg_query is None or not packages:
        return []
    done = subprocess.run([dpkg_query, "-W", "-f", "${Package} ${Status}\n", *packages],
                          capture_output=True, text=True, timeout=30)
    installed = {line.split()[0] for line in done.stdout.splitlines()
                 if line.endswith("install ok installed")}
    return [p for p in packages if p not in installed]


def check_packages(list_files: Sequence[Path]) -> list[Finding]:
    """One finding naming every Debian package of ``list_files`` that is not installed."""
    packages: list[str] = []
    for path in list_files:
        if path.is_file():
            packages += [p for p in read_package_list(path) if p not in packages]
    missing = missing_packages(packages)
    if not missing:
        return []
    return [Finding(f"not installed: {', '.join(missing)}", f"{INSTALL} {' '.join(missing)} "
                    "(or tools/setup.sh)")]


def check_hugepages(page_size_kb: int = 2048) -> list[Finding]:
    """Hugepages of ``page_size_kb`` can be reserved (DPDK switches and VNFs need them;
    :mod:`vsbench.system.hugepages` raises ``nr_hugepages`` by what a run needs)."""
    why = hugepages.hugetlb_available(page_size_kb)
    if why is None and "hugetlbfs" not in Path("/proc/filesystems").read_text():
        why = "no hugetlbfs in /proc/filesystems"
    return [Finding(f"hugepages: {why}", "run as root on a kernel with CONFIG_HUGETLBFS")] if why else []
