"""Host-wide settings a lab fixes at boot: hugepages per NUMA node, the IOMMU, irqbalance.

DPDK takes its memory from the NUMA node of the lcore that allocates it: pages reserved on
node 0 only leave a PMD on node 1 fetching every mbuf across the interconnect, so pools are
read per node and per size (the global counters hide this). The IOMMU mode decides which
driver can own a NIC (vfio-pci needs an IOMMU or vfio's unsafe no-IOMMU mode; igb_uio and
uio_pci_generic need none -- seed 000 ran with ``intel_iommu=off``), and irqbalance moves
NIC interrupts onto whatever core looks idle, an isolated PMD core included (seed 000
stopped it, Table 3-5). Everything is read under ``root``, so unit tests use a fake tree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vsbench.system import sysinfo
from vsbench.system.host_cpu_tuning import cmdline_parameters
from vsbench.system.sysfs import read_text

#: Kernel parameters that choose the IOMMU's mode.
IOMMU_PARAMETERS = ("intel_iommu", "amd_iommu", "iommu")


@dataclass(frozen=True)
class NodePages:
    """Hugepages of one size on one NUMA node."""

    node: int
    size_kb: int
    total: int
    free: int


@dataclass(frozen=True)
class Iommu:
    """``mode``: ``translated`` (an IOMMU with DMA remapping), ``passthrough`` (an IOMMU,
    ``iommu=pt``), ``no-iommu`` (none, but vfio's unsafe no-IOMMU mode is on) or ``off``.
    ``units``: the IOMMUs the kernel registered (``dmar0``, ``ivhd0``, ...)."""

    mode: str
    units: tuple[str, ...] = ()
    groups: int = 0
    parameters: dict[str, str] = field(default_factory=dict)
    vfio_noiommu: bool | None = None


@dataclass(frozen=True)
class PlatformFacts:
    hugetlb: bool
    pages: tuple[NodePages, ...]
    iommu: Iommu
    irqbalance_running: bool

    def to_json(self) -> dict[str, Any]:
        return {"hugetlb": self.hugetlb, "hugepages_by_node": [asdict(p) for p in self.pages],
                "iommu": asdict(self.iommu) | {"units": list(self.iommu.units)},
                "irqbalance_running": self.irqbalance_running}


def node_pages(sys_root: Path) -> tuple[NodePages, ...]:
    """Every (node, size) pool of ``devices/system/node/node*/hugepages``."""
    found = []
    for node in sysinfo.numa_nodes(sys_root / "devices" / "system" / "node"):
        pools = sysinfo.hugepages(sys_root / "devices" / "system" / "node" / f"node{node['node']}" / "hugepages")
        found += [NodePages(node["node"], p["size_bytes"] // 1024, p["total"], p["free"]) for p in pools]
    return tuple(found)


def iommu(root: Path) -> Iommu:
    sys_root = root / "sys"
    units_dir = sys_root / "class" / "iommu"
    units = tuple(sorted(p.name for p in units_dir.iterdir())) if units_dir.is_dir() else ()
    groups_dir = sys_root / "kernel" / "iommu_groups"
    groups = sum(1 for _ in groups_dir.iterdir()) if groups_dir.is_dir() else 0
    params = {k: v for k, v in cmdline_parameters(read_text(root / "proc" / "cmdline")).items()
              if k in IOMMU_PARAMETERS}
    noiommu_text = read_text(sys_root / "module" / "vfio" / "parameters" / "enable_unsafe_noiommu_mode")
    noiommu = None if noiommu_text is None else noiommu_text.upper() in ("Y", "1")
    if units:
        mode = "passthrough" if params.get("iommu") == "pt" else "translated"
    else:
        mode = "no-iommu" if noiommu else "off"
    return Iommu(mode=mode, units=units, groups=groups, parameters=params, vfio_noiommu=noiommu)


def process_running(comm: str, proc: Path) -> bool:
    """Whether a process named ``comm`` runs (its ``/proc/PID/comm``): no systemd needed."""
    for entry in proc.glob("[0-9]*/comm"):
        if read_text(entry) == comm:
            return True
    return False


def read(root: Path = Path("/")) -> PlatformFacts:
    sys_root = root / "sys"
    return PlatformFacts(hugetlb=(sys_root / "kernel" / "mm" / "hugepages").is_dir(),
                         pages=node_pages(sys_root), iommu=iommu(root),
                         irqbalance_running=process_running("irqbalance", root / "proc"))
