"""How the host's CPUs are tuned for busy polling: NUMA nodes, isolation, frequency, C-states.

The boot and BIOS settings of seed report 000 (Table 3-3: isolcpus, turbo boost, SpeedStep
and C-states off) are what keeps a PMD's figures repeatable: an isolated core is not
shared with the scheduler's other work, ``nohz_full`` stops its timer tick, ``rcu_nocbs``
moves RCU callbacks off it, and a fixed frequency (performance governor, no turbo) keeps
the cycle budget per packet constant. Each fact is read from ``root`` (``/`` on the host, a
fake tree in unit tests); a file the kernel does not offer -- no cpufreq driver in a VM,
no ``nohz_full`` without CONFIG_NO_HZ_FULL -- is ``None``, never a guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vsbench.system.cpu import parse_cpu_list
from vsbench.system.sysfs import read_int, read_text
from vsbench.system.sysinfo import numa_nodes

#: Kernel parameters that take a CPU list, possibly after flags (``isolcpus=domain,1-3``).
ISOLATION_PARAMETERS = ("isolcpus", "nohz_full", "rcu_nocbs")


@dataclass(frozen=True)
class CpuTuning:
    """``cpu_nodes``: NUMA node of each online CPU ({} when the kernel has no NUMA view).
    ``isolation``: the CPUs of each of :data:`ISOLATION_PARAMETERS` in force (None: the
    parameter was not given). ``governors``: each CPU's cpufreq governor ({}: no cpufreq
    driver). ``boost``: turbo/boost on (True), off (False), unknown (None)."""

    online: tuple[int, ...]
    cpu_nodes: dict[int, int] = field(default_factory=dict)
    isolation: dict[str, tuple[int, ...] | None] = field(default_factory=dict)
    cpufreq_driver: str | None = None
    governors: dict[int, str] = field(default_factory=dict)
    boost: bool | None = None
    boost_source: str | None = None
    cpuidle_driver: str | None = None
    cmdline_max_cstate: str | None = None
    hypervisor: bool = False

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["online"] = list(self.online)
        doc["cpu_nodes"] = {str(c): n for c, n in self.cpu_nodes.items()}
        doc["governors"] = {str(c): g for c, g in self.governors.items()}
        doc["isolation"] = {k: (list(v) if v is not None else None) for k, v in self.isolation.items()}
        return doc


def cmdline_parameters(cmdline: str | None) -> dict[str, str]:
    """``{name: value}`` of the kernel command line before any ``--`` (last one wins)."""
    params: dict[str, str] = {}
    for token in (cmdline or "").split():
        if token == "--":
            break
        name, _, value = token.partition("=")
        params[name] = value
    return params


def cpus_of_parameter(value: str) -> tuple[int, ...]:
    """The CPUs of ``isolcpus=domain,managed_irq,2-5`` (flags skipped), ``nohz_full=2-5``."""
    parts = [p for p in value.split(",") if p and (p[0].isdigit())]
    try:
        return tuple(sorted(parse_cpu_list(",".join(parts))))
    except ValueError:
        return ()


def cpu_nodes(sys_root: Path) -> dict[int, int]:
    """NUMA node of each CPU, from ``devices/system/node/node*/cpulist``."""
    nodes: dict[int, int] = {}
    for node in numa_nodes(sys_root / "devices" / "system" / "node"):
        for cpu in parse_cpu_list(node["cpus"]):
            nodes[cpu] = node["node"]
    return nodes


def isolation(sys_cpu: Path, params: dict[str, str]) -> dict[str, tuple[int, ...] | None]:
    """The CPUs of each isolation parameter: the kernel's own view where it publishes one
    (``isolated``, ``nohz_full``), else the command line."""
    found: dict[str, tuple[int, ...] | None] = {}
    published = {"isolcpus": "isolated", "nohz_full": "nohz_full"}
    for name in ISOLATION_PARAMETERS:
        text = read_text(sys_cpu / published[name]) if name in published else None
        if text and text[0].isdigit():  # nohz_full reads "(null)" on some kernels when unset
            found[name] = cpus_of_parameter(text)
        elif name in params:
            found[name] = cpus_of_parameter(params[name])
        else:
            found[name] = None
    return found


def boost(sys_cpu: Path) -> tuple[bool | None, str | None]:
    """Turbo on/off and the file that says it: intel_pstate's ``no_turbo`` (1: off), else
    the cpufreq ``boost`` switch of acpi-cpufreq and amd-pstate (1: on)."""
    no_turbo = read_int(sys_cpu / "intel_pstate" / "no_turbo")
    if no_turbo is not None:
        return no_turbo == 0, "intel_pstate/no_turbo"
    switch = read_int(sys_cpu / "cpufreq" / "boost")
    if switch is not None:
        return switch == 1, "cpufreq/boost"
    return None, None


def read(root: Path = Path("/")) -> CpuTuning:
    sys_cpu = root / "sys" / "devices" / "system" / "cpu"
    online_text = read_text(sys_cpu / "online")
    online = tuple(sorted(parse_cpu_list(online_text))) if online_text else ()
    params = cmdline_parameters(read_text(root / "proc" / "cmdline"))
    governors = {}
    for cpu in online:
        governor = read_text(sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_governor")
        if governor:
            governors[cpu] = governor
    on, source = boost(sys_cpu)
    cpuinfo = read_text(root / "proc" / "cpuinfo") or ""
    max_cstate = params.get("intel_idle.max_cstate") or params.get("processor.max_cstate")
    return CpuTuning(
        online=online, cpu_nodes=cpu_nodes(root / "sys"), isolation=isolation(sys_cpu, params),
        cpufreq_driver=read_text(sys_cpu / f"cpu{online[0] if online else 0}" / "cpufreq" / "scaling_driver"),
        governors=governors, boost=on, boost_source=source,
        cpuidle_driver=read_text(sys_cpu / "cpuidle" / "current_driver"),
        cmdline_max_cstate=max_cstate,
        hypervisor=any(line.startswith("flags") and " hypervisor" in line for line in cpuinfo.splitlines()))
