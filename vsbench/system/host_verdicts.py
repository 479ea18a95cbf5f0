"""The host's lab settings judged for a configuration: one ``ok``/``warn``/``fail`` line each.

Pure over the facts (:mod:`host_nic`, :mod:`host_cpu_tuning`, :mod:`host_platform`) and
the configuration's targets (:mod:`host_targets`), so every verdict is unit-tested on
made-up hosts. The settings are those of seed report 000's Tables 3-3 and 3-5 (boot, BIOS
and OS settings) plus the NUMA placement a lab gets wrong most often:

- ``fail``: the configuration cannot run here as written (a PCI address that is not a
  device, a core that is not online, no hugetlb at all);
- ``warn``: it runs, but its figures are not a lab's (cross-NUMA PMD, cores not isolated,
  powersave governor, turbo on, irqbalance running, a NIC no DPDK driver owns);
- ``ok``: as a lab sets it -- or a fact the OS does not expose, said so with the reason
  (no cpufreq driver in a VM: nothing on this host scales the frequency).

Every non-ok line carries the command or setting that fixes it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

from vsbench.system.cpu import format_cpu_list
from vsbench.system.host_cpu_tuning import ISOLATION_PARAMETERS, CpuTuning
from vsbench.system.host_nic import BIFURCATED_DRIVERS, PCI_ADDRESS, USERSPACE_DRIVERS, NicFacts
from vsbench.system.host_platform import PlatformFacts
from vsbench.system.host_targets import ConfiguredCores, ConfiguredNic, HostTargets

OK, WARN, FAIL = "ok", "warn", "fail"
VIRTIO_VENDOR = "0x1af4"
GRUB = "GRUB_CMDLINE_LINUX in /etc/default/grub, then update-grub and reboot"


@dataclass(frozen=True)
class SettingLine:
    """One setting: its ``status``, what the host has (``value``) and, unless ok, the ``fix``."""

    status: str
    setting: str
    value: str
    fix: str = ""

    def text(self) -> str:
        line = f"{self.status:<5} {self.setting}: {self.value}"
        return f"{line} -- fix: {self.fix}" if self.fix else line

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def _cpus(cpus: Iterable[int]) -> str:
    text = format_cpu_list(cpus)
    return f"CPU{'s' if ',' in text or '-' in text else ''} {text}"


# --------------------------------------------------------------------------- NICs


def nic_lines(nic: NicFacts, want: ConfiguredNic, link_gbps: float | None, nodes: int) -> list[SettingLine]:
    """Presence, NUMA node, driver, firmware and link speed of one configured NIC."""
    label = f"NIC {want.pci} ({want.owner})"
    if not PCI_ADDRESS.match(want.pci):
        return [SettingLine(FAIL, label, "not a PCI address (DDDD:BB:SS.F, e.g. 0000:3b:00.0)",
                            f"correct {want.source}")]
    if not nic.present:
        return [SettingLine(FAIL, label, "no such PCI device on this host",
                            f"correct {want.source} (lspci -D -d ::0200 lists this host's Ethernet devices)")]
    return [_nic_numa(nic, label, nodes), _nic_driver(nic, want, label), _nic_firmware(nic, label),
            _nic_speed(nic, label, link_gbps)]


def _nic_numa(nic: NicFacts, label: str, nodes: int) -> SettingLine:
    if nic.numa_node is not None:
        return SettingLine(OK, f"{label} NUMA node", str(nic.numa_node))
    if nodes > 1:
        return SettingLine(WARN, f"{label} NUMA node", f"not reported (numa_node -1) on a {nodes}-node host",
                           "find the slot's socket in the board manual and pin the PMDs there; enable ACPI "
                           "SRAT/NUMA in the BIOS so the kernel knows it")
    return SettingLine(OK, f"{label} NUMA node", "not reported (numa_node -1): a single-node host, so every core "
                       "is local")


def _nic_driver(nic: NicFacts, want: ConfiguredNic, label: str) -> SettingLine:
    driver = nic.driver
    if driver in USERSPACE_DRIVERS:
        return SettingLine(OK, f"{label} driver", f"{driver} (a DPDK port)")
    if driver in BIFURCATED_DRIVERS:
        return SettingLine(OK, f"{label} driver", f"{driver} (bifurcated: DPDK drives it in place)")
    bind = f"modprobe vfio-pci; dpdk-devbind.py -b vfio-pci {want.pci}"
    if driver is None:
        return SettingLine(WARN if want.dpdk else OK, f"{label} driver", "no driver bound",
                           bind if want.dpdk else "")
    if not want.dpdk:
        return SettingLine(OK, f"{label} driver", f"{driver} (kernel netdev {nic.iface or '-'})")
    return SettingLine(WARN, f"{label} driver",
                       f"{driver} (kernel netdev {nic.iface or '-'}): DPDK cannot open it until it is rebound",
                       f"ip link set {nic.iface or 'IFACE'} down; {bind} (never the host's management NIC)")


def _nic_firmware(nic: NicFacts, label: str) -> SettingLine:
    if nic.firmware:
        driver = f"driver {nic.driver_version}, " if nic.driver_version else ""
        return SettingLine(OK, f"{label} firmware", f"{driver}firmware {nic.firmware}")
    if nic.vendor_id == VIRTIO_VENDOR:
        return SettingLine(OK, f"{label} firmware", "none (a virtio NIC has no firmware)")
    return SettingLine(WARN, f"{label} firmware", f"unknown: {nic.firmware_note or 'not reported'}",
                       "read it with ethtool -i IFACE while a kernel driver owns the NIC and record it on the "
                       "run (--tag nic_fw=VERSION)")


def _nic_speed(nic: NicFacts, label: str, link_gbps: float | None) -> SettingLine:
    setting = f"{label} link speed"
    if nic.iface is None:
        return SettingLine(OK, setting, f"not readable while {nic.driver or 'no driver'} owns it (DPDK reads "
                           "it at run time: ovs-vsctl get interface PORT link_speed)")
    if nic.speed_mbps is None:
        return SettingLine(WARN, setting, f"unknown ({nic.iface}: link down, or a virtual NIC without one)",
                           f"ip link set {nic.iface} up; ethtool {nic.iface} (cable, transceiver, peer)")
    if link_gbps and nic.speed_mbps < link_gbps * 1000:
        return SettingLine(WARN, setting, f"{nic.speed_mbps} Mb/s, below testbed.link_gbps = {link_gbps:g}: "
                           "'% of line rate' would be computed against the wrong rate",
                           f"set testbed.link_gbps: {nic.speed_mbps / 1000:g}, or find why the link "
                           f"negotiated lower (ethtool {nic.iface})")
    return SettingLine(OK, setting, f"{nic.speed_mbps} Mb/s")


def shared_nic_lines(wanted: Iterable[ConfiguredNic]) -> list[SettingLine]:
    """A PCI address two owners claim (the switch's port and the generator's): only one
    DPDK process can own a device, so the second would fail at start or steal the first's."""
    owners: dict[str, list[ConfiguredNic]] = {}
    for nic in wanted:
        owners.setdefault(nic.pci.lower(), []).append(nic)
    return [SettingLine(FAIL, f"NIC {pci}", f"configured {len(claims)} times ({', '.join(c.owner for c in claims)}): "
                        "a PCI device has one owner", f"give each its own NIC: {', '.join(c.source for c in claims)}")
            for pci, claims in owners.items() if len(claims) > 1]


# --------------------------------------------------------------------------- cores


def core_lines(group: ConfiguredCores, cpus: CpuTuning, nic_nodes: dict[int, list[str]]) -> list[SettingLine]:
    """The group's CPUs are online and on the NUMA node of the NICs they serve."""
    label = f"cores {group.owner} ({_cpus(group.cpus)})"
    offline = sorted(set(group.cpus) - set(cpus.online))
    if not group.cpus:
        return [SettingLine(FAIL, label, "no CPU", f"set {group.source}")]
    if offline:
        return [SettingLine(FAIL, label, f"{_cpus(offline)} not online (online: {format_cpu_list(cpus.online)})",
                            f"pin them to online CPUs: {group.source}")]
    if not cpus.cpu_nodes:
        return [SettingLine(OK, f"{label} NUMA node", "no NUMA information (one node)")]
    nodes = sorted({cpus.cpu_nodes.get(c, -1) for c in group.cpus})
    if len(nodes) > 1:
        return [SettingLine(WARN, f"{label} NUMA node", f"spans nodes {', '.join(map(str, nodes))}: each poller "
                            "reaches half its memory over the interconnect",
                            f"pin {group.source} to one node's CPUs ({_node_cpus(cpus)})")]
    node = nodes[0]
    remote = {n: owners for n, owners in nic_nodes.items() if n != node}
    if remote:
        where = "; ".join(f"{', '.join(owners)} on node {n}" for n, owners in remote.items())
        return [SettingLine(WARN, f"{label} NUMA node", f"node {node}, but {where}: every packet crosses "
                            "the interconnect (cross-NUMA)",
                            f"pin {group.source} to the NIC's node ({_node_cpus(cpus)})")]
    peers = f", as the NICs ({', '.join(o for owners in nic_nodes.values() for o in owners)})" if nic_nodes \
        else " (no configured NIC with a known node to compare)"
    return [SettingLine(OK, f"{label} NUMA node", f"node {node}{peers}")]


def _node_cpus(cpus: CpuTuning) -> str:
    by_node: dict[int, list[int]] = {}
    for cpu, node in cpus.cpu_nodes.items():
        by_node.setdefault(node, []).append(cpu)
    return "; ".join(f"node {n}: {format_cpu_list(c)}" for n, c in sorted(by_node.items()))


def isolation_lines(targets: HostTargets, cpus: CpuTuning) -> list[SettingLine]:
    """isolcpus, nohz_full and rcu_nocbs cover every busy-polling CPU (seed 000: isolcpus=1-17)."""
    busy = targets.busy_cpus & set(cpus.online)
    lines = []
    why = {"isolcpus": "the scheduler may put other tasks on them",
           "nohz_full": "the timer tick interrupts the pollers (1000/s)",
           "rcu_nocbs": "RCU callbacks run on them"}
    for name in ISOLATION_PARAMETERS:
        isolated = set(cpus.isolation.get(name) or ())
        setting = f"{name} (busy-polling CPUs)"
        if not busy:
            state = format_cpu_list(isolated) or "none"
            lines.append(SettingLine(OK, setting, f"{state}; no busy-polling core configured to check"))
            continue
        missing = busy - isolated
        if not missing:
            lines.append(SettingLine(OK, setting, f"{format_cpu_list(isolated)} covers {_cpus(busy)}"))
            continue
        have = format_cpu_list(isolated) or "not set"
        lines.append(SettingLine(WARN, setting, f"{have}; {_cpus(missing)} not in it: {why[name]}",
                                 f"add {name}={format_cpu_list(busy | isolated)} to {GRUB}"))
    return lines


def frequency_lines(targets: HostTargets, cpus: CpuTuning) -> list[SettingLine]:
    """The governor of the busy-polling CPUs (all online CPUs when none is configured) and turbo."""
    where = " (a VM: the hypervisor host's setting is what counts)" if cpus.hypervisor else \
        " (P-states off in the BIOS, as seed 000 ran, or no driver loaded)"
    if not cpus.governors:
        governor = SettingLine(OK, "CPU frequency governor", f"no cpufreq driver{where}: the OS does not scale "
                               "the frequency here")
    else:
        wanted = (targets.busy_cpus & set(cpus.online)) or set(cpus.online)
        slow = {c: g for c, g in cpus.governors.items() if c in wanted and g != "performance"}
        if slow:
            kinds = ", ".join(sorted(set(slow.values())))
            governor = SettingLine(WARN, "CPU frequency governor", f"{kinds} on {_cpus(slow)} "
                                   f"(driver {cpus.cpufreq_driver or '?'}): the clock follows the load",
                                   "cpupower frequency-set -g performance (package linux-cpupower)")
        else:
            governor = SettingLine(OK, "CPU frequency governor",
                                   f"performance on {_cpus(wanted)} (driver {cpus.cpufreq_driver or '?'})")
    if cpus.boost is None:
        turbo = SettingLine(WARN, "turbo/boost", f"not visible to the OS{where}: no intel_pstate/no_turbo, "
                            "no cpufreq/boost",
                            "check it is off in the BIOS (or on the hypervisor host): seed 000 disabled Turbo "
                            "Boost so figures do not depend on how many cores are busy")
    elif cpus.boost:
        off = "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo" if cpus.boost_source == \
            "intel_pstate/no_turbo" else "echo 0 > /sys/devices/system/cpu/cpufreq/boost"
        turbo = SettingLine(WARN, "turbo/boost", f"on ({cpus.boost_source}): the clock depends on how many "
                            "cores are busy", f"{off}, or disable it in the BIOS (seed 000)")
    else:
        turbo = SettingLine(OK, "turbo/boost", f"off ({cpus.boost_source})")
    return [governor, turbo, _cstate_line(cpus)]


def _cstate_line(cpus: CpuTuning) -> SettingLine:
    driver = cpus.cpuidle_driver
    if driver in (None, "", "none"):
        return SettingLine(OK, "C-states", "no cpuidle driver: the CPUs do not enter deep C-states")
    if driver == "haltpoll":
        return SettingLine(OK, "C-states", "haltpoll (a VM guest polls before halting; the host's C-states count)")
    if cpus.cmdline_max_cstate is not None and cpus.cmdline_max_cstate in ("0", "1"):
        return SettingLine(OK, "C-states", f"{driver}, limited to C{cpus.cmdline_max_cstate} on the command line")
    return SettingLine(WARN, "C-states", f"{driver} with deep C-states allowed: an idle core wakes up slowly "
                       "(latency of the first packets after a pause)",
                       f"add intel_idle.max_cstate=0 processor.max_cstate=1 to {GRUB}, or disable C-states in "
                       "the BIOS (seed 000)")


# --------------------------------------------------------------------------- platform


def hugepage_lines(platform: PlatformFacts, busy_nodes: set[int]) -> list[SettingLine]:
    """One line per NUMA node and page size. A node where pollers or NICs live with no page
    at all warns on a multi-node host: a run raises the global count, which the kernel
    spreads over the nodes, so that node may get too few."""
    if not platform.hugetlb:
        return [SettingLine(FAIL, "hugepages", "no hugetlb support in this kernel (DPDK cannot start)",
                            "boot a kernel with CONFIG_HUGETLBFS (Debian's linux-image-amd64 has it)")]
    if not platform.pages:
        return [SettingLine(OK, "hugepages", "no per-node counters (no NUMA sysfs); see the global pools "
                            "in sysinfo.json")]
    nodes = sorted({p.node for p in platform.pages})
    lines = []
    for pool in platform.pages:
        setting = f"hugepages node {pool.node} {_size(pool.size_kb)}"
        if pool.total:
            lines.append(SettingLine(OK, setting, f"{pool.total} reserved, {pool.free} free"))
            continue
        empty_node = not any(p.total for p in platform.pages if p.node == pool.node)
        if empty_node and pool.node in busy_nodes and len(nodes) > 1:
            lines.append(SettingLine(WARN, setting, f"none reserved on node {pool.node}, where the configured "
                                     "NICs or pollers are", f"echo N > /sys/devices/system/node/node{pool.node}/"
                                     f"hugepages/hugepages-{pool.size_kb}kB/nr_hugepages, or at boot: "
                                     f"hugepagesz={_size(pool.size_kb, boot=True)} hugepages=N in {GRUB}"))
            continue
        reason = "1 GB pages are reserved at boot: default_hugepagesz=1G hugepagesz=1G hugepages=N" \
            if pool.size_kb >= 1048576 else "a DPDK run reserves the 2 MB pages it needs and gives them back"
        lines.append(SettingLine(OK, setting, f"none reserved ({reason})"))
    return lines


def _size(size_kb: int, boot: bool = False) -> str:
    if size_kb >= 1048576:
        return "1G" if boot else "1 GB"
    return f"{size_kb // 1024}M" if boot else f"{size_kb // 1024} MB"


def unconfigured_nic_line(nic: NicFacts) -> SettingLine:
    """A PCI NIC of the host that no configuration key names: its facts, for choosing one."""
    node = "unknown" if nic.numa_node is None else str(nic.numa_node)
    speed = f"{nic.speed_mbps} Mb/s" if nic.speed_mbps else "speed unknown"
    firmware = nic.firmware or ("none (virtio)" if nic.vendor_id == VIRTIO_VENDOR else "unknown")
    return SettingLine(OK, f"PCI NIC {nic.pci} (not configured)",
                       f"netdev {nic.iface or '-'}, driver {nic.driver or 'none'}, NUMA node {node}, "
                       f"firmware {firmware}, {speed}; vsbench leaves it alone unless a configuration names it")


def iommu_line(platform: PlatformFacts, nics: Iterable[NicFacts], targets: HostTargets) -> SettingLine:
    """Whether the configured DPDK NICs can be bound the way they need (vfio-pci wants an IOMMU)."""
    mmu = platform.iommu
    mode = mmu.mode + (f" ({', '.join(mmu.units)}; {mmu.groups} groups)" if mmu.units else "")
    params = " ".join(f"{k}={v}" for k, v in mmu.parameters.items())
    mode += f", command line {params}" if params else ""
    dpdk = [n for n, want in zip(nics, targets.nics) if want.dpdk and n.present]
    if not dpdk:
        return SettingLine(OK, "IOMMU", f"{mode} (no PCI NIC configured for DPDK: a run does not use it)")
    if any(n.driver in ("igb_uio", "uio_pci_generic") for n in dpdk) or mmu.mode == "passthrough":
        return SettingLine(OK, "IOMMU", mode)
    if mmu.mode == "translated":
        return SettingLine(OK, "IOMMU", f"{mode} (iommu=pt would spare DMA translation for the kernel's own "
                           "devices)")
    if mmu.mode == "no-iommu":
        return SettingLine(WARN, "IOMMU", f"{mode}: vfio-pci works without DMA isolation (a lab host only)",
                           "intel_iommu=on iommu=pt (amd_iommu=on on AMD) in " + GRUB)
    return SettingLine(WARN, "IOMMU", f"{mode}: vfio-pci cannot take the NICs",
                       f"intel_iommu=on iommu=pt (amd_iommu=on on AMD) in {GRUB}; or, without one, "
                       "modprobe vfio enable_unsafe_noiommu_mode=1, or bind uio_pci_generic")


def irqbalance_line(platform: PlatformFacts) -> SettingLine:
    if platform.irqbalance_running:
        return SettingLine(WARN, "irqbalance", "running: it moves NIC interrupts onto whichever core looks idle, "
                           "isolated pollers included", "systemctl disable --now irqbalance (seed 000, Table 3-5)")
    return SettingLine(OK, "irqbalance", "not running")


# --------------------------------------------------------------------------- all


def judge(targets: HostTargets, nics: Iterable[NicFacts], cpus: CpuTuning,
          platform: PlatformFacts, others: Iterable[NicFacts] = ()) -> list[SettingLine]:
    """Every line, in the order ``vsbench doctor --host`` prints them. ``nics`` pairs with
    ``targets.nics``; ``others`` are the host's PCI NICs no key names (one line each)."""
    nics = list(nics)
    lines = [SettingLine(FAIL, "configuration", problem, "correct the value in the --conf-file")
             for problem in targets.problems]
    lines += [SettingLine(OK, f"{owner} on {host}", "its NICs and cores are that host's",
                          "")
              for owner, host in targets.remote]
    if not targets.nics:
        lines.append(SettingLine(OK, "NICs", "no PCI NIC configured (vswitch.*.ports pci, testbed.dut_ports pci, "
                                 "trafficgen.*.pci_devices): the embedded testbed's veth ports"))
    lines += [unconfigured_nic_line(nic) for nic in others]
    lines += shared_nic_lines(targets.nics)
    nodes = len(set(cpus.cpu_nodes.values())) or 1
    nic_nodes: dict[int, list[str]] = {}
    for nic, want in zip(nics, targets.nics):
        lines += nic_lines(nic, want, targets.link_gbps, nodes)
        if nic.present and nic.numa_node is not None:
            nic_nodes.setdefault(nic.numa_node, []).append(nic.pci)
    if not targets.cores:
        lines.append(SettingLine(OK, "cores", "no busy-polling core pinned in the configuration"))
    for group in targets.cores:
        lines += core_lines(group, cpus, nic_nodes)
    lines += isolation_lines(targets, cpus)
    lines += frequency_lines(targets, cpus)
    busy_nodes = set(nic_nodes) | {cpus.cpu_nodes[c] for c in targets.busy_cpus if c in cpus.cpu_nodes}
    lines += hugepage_lines(platform, busy_nodes)
    lines.append(iommu_line(platform, nics, targets))
    lines.append(irqbalance_line(platform))
    return lines
